/*
 * kmalloc partitions (USLUB_KMALLOC_PARTITIONS=1, Linux 7.2's
 * CONFIG_KMALLOC_PARTITION_CACHES; kmalloc/kmalloc.c):
 *   off_by_default   without the variable no kmalloc-part cache exists and
 *                    every kmalloc object is a kmalloc-<size> cache's
 *   sites            (re-executed with the option on) each of 64 call
 *                    sites lands in the same partition every time, at
 *                    every size, and they spread over at least 8 of the
 *                    16; an accounted kmalloc stays in the normal caches
 *   tokens           an explicit token below 16 is the partition (typed
 *                    mode), for kmalloc and krealloc
 *   across           kfree, ksize, krealloc, kfree_bulk and kmalloc_nolock
 *                    on objects of many partitions
 *   names            slabinfo (JSON) lists kmalloc-part-01-8 ..
 *                    kmalloc-part-15-8k, 195 caches
 *   fork             a fork child keeps its parent's site -> partition map
 *   seed             two processes map the same 64 tokens differently (the
 *                    seed is per process: 16^-64 to be equal by chance)
 */
#define _GNU_SOURCE
#include "kmalloc/kmalloc.h"
#include "unit.h"
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSITES 64


/* The partition of a kmalloc object, from its cache's name: kmalloc-<size>
 * is 0, kmalloc-part-NN-<size> is NN. */
static int part_of(const void *p)
{
	struct slab *slab = virt_to_slab(p);
	CHECK(slab);
	const char *name = slab->slab_cache->name;
	if (!strncmp(name, "kmalloc-part-", 13)) {
		int nn = (name[13] - '0') * 10 + (name[14] - '0');
		CHECK(nn >= 1 && nn <= 15 && name[15] == '-');
		return nn;
	}
	CHECK(!strncmp(name, "kmalloc-", 8));
	return 0;
}

/* 64 call sites, each a tagged uslub_kmalloc() of its own */
#define SITE(i) static void *site##i(size_t n) { return uslub_kmalloc(n, USLUB_GFP_KERNEL); }
#define SITE4(i) SITE(i##0) SITE(i##1) SITE(i##2) SITE(i##3)
#define SITE16(i) SITE4(i##0) SITE4(i##1) SITE4(i##2) SITE4(i##3)
SITE16(0) SITE16(1) SITE16(2) SITE16(3)
#define REF(i) site##i,
#define REF4(i) REF(i##0) REF(i##1) REF(i##2) REF(i##3)
#define REF16(i) REF4(i##0) REF4(i##1) REF4(i##2) REF4(i##3)
static void *(*const sites[NSITES])(size_t) = { REF16(0) REF16(1) REF16(2) REF16(3) };

static char *slabinfo_json(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f);
	uslub_slabinfo_print(f, USLUB_FMT_JSON);
	fclose(f);
	return buf;
}

static unsigned int count(const char *hay, const char *needle)
{
	unsigned int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void off_by_default(void)
{
	void *p[NSITES];
	for (int i = 0; i < NSITES; i++) {
		p[i] = sites[i](64);
		CHECK(p[i]);
		CHECK_EQ(part_of(p[i]), 0);
	}
	for (int i = 0; i < NSITES; i++)
		uslub_kfree(p[i]);
	char *json = slabinfo_json();
	CHECK(strstr(json, "\"kmalloc-64\""));
	CHECK(!strstr(json, "kmalloc-part-"));
	free(json);
}

/* The partition of each site, as a string of hex digits. */
static void site_map(char out[NSITES + 1])
{
	for (int i = 0; i < NSITES; i++) {
		void *p = sites[i](64);
		out[i] = "0123456789abcdef"[part_of(p)];
		uslub_kfree(p);
	}
	out[NSITES] = 0;
}

/* The partition of 64 fixed tokens (independent of where the program is
 * loaded: only the seed decides). */
static void token_map(char out[NSITES + 1])
{
	for (int i = 0; i < NSITES; i++) {
		void *p = uslub_kmalloc_token_noprof(64, 1, 0, USLUB_NUMA_NO_NODE,
						     0x100000ul + 64ul * (unsigned long)i);
		out[i] = "0123456789abcdef"[part_of(p)];
		uslub_kfree(p);
	}
	out[NSITES] = 0;
}

static void sites_check(void)
{
	static const size_t sizes[] = { 8, 64, 100, 192, 1000, 3000, 8192 };
	unsigned int seen = 0;
	for (int i = 0; i < NSITES; i++) {
		int part = -1;
		for (unsigned int k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			void *p = sites[i](sizes[k]);
			CHECK(p);
			if (part < 0)
				part = part_of(p);
			CHECK_EQ(part_of(p), part);
			CHECK_EQ(uslub_ksize(p), uslub_kmalloc_size_roundup(sizes[k]));
			uslub_kfree(p);
		}
		seen |= 1u << part;
		/* accounted: the kernel's KMALLOC_CGROUP type, never partitioned */
		void *a = uslub_kmalloc(64, USLUB_GFP_ACCOUNT);
		CHECK(a);
		CHECK_EQ(part_of(a), 0);
		uslub_kfree(a);
	}
	if (__builtin_popcount(seen) < 8) {  /* seen once, under TSan on a loaded machine */
		char m[NSITES + 1];
		site_map(m);
		fprintf(stderr, "kmalloc_partitions: partitions seen %#x, site map %s\n", seen, m);
	}
	CHECK(__builtin_popcount(seen) >= 8);
	printf("sites: 64 call sites in %d of 16 partitions\n", __builtin_popcount(seen));
}

static void tokens_check(void)
{
	for (unsigned long t = 0; t < USLUB_KMALLOC_PARTITIONS; t++) {
		void *p = uslub_kmalloc_token_noprof(64, 1, 0, USLUB_NUMA_NO_NODE, t);
		CHECK_EQ(part_of(p), t);
		void *q = uslub_krealloc_token_noprof(p, 500, 1, 0, USLUB_NUMA_NO_NODE,
						      (t + 1) % USLUB_KMALLOC_PARTITIONS);
		CHECK(q && q != p);
		CHECK_EQ(part_of(q), (t + 1) % USLUB_KMALLOC_PARTITIONS);
		CHECK_EQ(uslub_ksize(q), 512);
		uslub_kfree(q);
	}
	/* aligned beyond 8: the partition's naturally aligned class */
	void *p = uslub_kmalloc_token_noprof(40, 64, 0, USLUB_NUMA_NO_NODE, 3);
	CHECK(p && !((uintptr_t)p & 63));
	CHECK_EQ(part_of(p), 3);
	uslub_kfree(p);
}

static void across_check(void)
{
	void *p[NSITES];
	char *prev = NULL;
	for (int i = 0; i < NSITES; i++) {
		p[i] = sites[i](24);
		memset(p[i], i, 24);
	}
	/* krealloc from each site's partition: in place within the class,
	 * moved (to the krealloc site's partition) beyond it, contents kept */
	for (int i = 0; i < NSITES; i++) {
		int from = part_of(p[i]);
		void *q = uslub_krealloc(p[i], 30, USLUB_GFP_KERNEL);
		CHECK(q == p[i]);
		CHECK_EQ(part_of(q), from);
		q = uslub_krealloc(q, 700, USLUB_GFP_KERNEL);
		CHECK(q);
		for (int k = 0; k < 24; k++)
			CHECK_EQ(((unsigned char *)q)[k], i);
		CHECK_EQ(uslub_ksize(q), 1024);
		if (prev)      /* one krealloc site: one partition */
			CHECK_EQ(part_of(q), part_of(prev));
		prev = q;
		p[i] = q;
	}
	uslub_kfree_bulk(NSITES, p);
	/* kmalloc_nolock: the same sets, freed by kfree */
	void *n = uslub_kmalloc_nolock(64, 0, USLUB_NUMA_NO_NODE);
	CHECK(n);
	part_of(n);
	uslub_kfree(n);
	/* untagged calls and the array form work too */
	void *u = uslub_kmalloc_noprof(64, 0);
	void *v = (uslub_kcalloc)(4, 16, 0);
	CHECK(u && v && !((char *)v)[63]);
	part_of(u);
	part_of(v);
	uslub_kfree(u);
	uslub_kfree(v);
}

static void names_check(void)
{
	char *json = slabinfo_json();
	CHECK(strstr(json, "\"kmalloc-part-01-8\""));
	CHECK(strstr(json, "\"kmalloc-part-07-96\""));
	CHECK(strstr(json, "\"kmalloc-part-15-8k\""));
	CHECK(strstr(json, "\"kmalloc-64\""));
	CHECK_EQ(count(json, "\"kmalloc-part-"), 15 * 13);
	free(json);
}

static void fork_check(void)
{
	char mine[NSITES + 1], theirs[NSITES + 1] = { 0 };
	token_map(mine);
	int fd[2];
	CHECK(!pipe(fd));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		char m[NSITES + 1];
		token_map(m);
		ssize_t w = write(fd[1], m, NSITES);
		_exit(w == NSITES ? 0 : 1);
	}
	close(fd[1]);
	CHECK_EQ(read(fd[0], theirs, NSITES), NSITES);
	close(fd[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st));
	CHECK(!strcmp(mine, theirs));
}

/* Run this program again with @mode and the option on; its stdout in
 * @out (up to @len bytes). Returns its exit status. */
static int rerun(const char *mode, char *out, size_t len)
{
	int fd[2];
	CHECK(!pipe(fd));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		setenv("USLUB_KMALLOC_PARTITIONS", "1", 1);
#ifdef USLUB_TSAN           /* base/base.h */
		/* fork takes every barn lock at once (base/lifecycle.h), one
		 * per sheaf cache: with 195 more caches that is beyond the 64
		 * locks TSan's deadlock detector can hold per thread (its
		 * CHECK fails in barn_prefork); TSan's race checks stay on */
		char opts[512];
		const char *old = getenv("TSAN_OPTIONS");
		snprintf(opts, sizeof(opts), "%s%sdetect_deadlocks=0", old ? old : "",
			 old && *old ? ":" : "");
		setenv("TSAN_OPTIONS", opts, 1);
#endif
		execl("/proc/self/exe", "kmalloc_partitions", mode, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < len && (r = read(fd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(fd[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "map")) {
		char m[NSITES + 1];
		token_map(m);
		printf("%s\n", m);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "on")) {
		char m[NSITES + 1];
		site_map(m);       /* a site's first call is partitioned too */
		sites_check();
		char again[NSITES + 1];
		site_map(again);
		CHECK(!strcmp(m, again));
		tokens_check();
		across_check();
		names_check();
		fork_check();
		return 0;
	}
	if (getenv("USLUB_KMALLOC_PARTITIONS")) {
		printf("USLUB_KMALLOC_PARTITIONS set: skipped\n");
		return 77;
	}
	off_by_default();
	char out[4096];
	CHECK_EQ(rerun("on", out, sizeof(out)), 0);
	fputs(out, stdout);
	char a[256], b[256];
	CHECK_EQ(rerun("map", a, sizeof(a)), 0);
	CHECK_EQ(rerun("map", b, sizeof(b)), 0);
	CHECK_EQ(strlen(a), NSITES + 1);
	CHECK(strcmp(a, b));
	printf("seed: token maps %.16s... and %.16s... differ\n", a, b);
	printf("kmalloc_partitions: ok\n");
	return 0;
}
