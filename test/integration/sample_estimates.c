/*
 * Sampled profiling (USLUB_PROFILING=sample[:BYTES]): the estimates are
 * unbiased and exact where they must be. The test re-executes itself with
 * the mode in its environment (the mode is fixed at startup).
 *
 * Unbiasedness: NSEEDS children, each with USLUB_PROFILING=sample:65536 and
 * its own USLUB_PROFILING_SEED (so the test is deterministic), run one
 * synthetic workload with known per-site live bytes: six call sites over
 * caches of stride 8 B to 64 KiB (the 64 KiB site: objects as large as the
 * interval, sampled with p = 1 - 1/e), different counts, a bulk site,
 * long-lived objects, and half of two sites' objects freed from another
 * thread. Each child reports every site's estimated bytes and calls
 * (uslub_allocinfo()); the parent checks, per site, that the mean over the
 * seeds is within 4 standard deviations of the known value (the variance
 * of one run's estimate is n * S^2 * (1 - p) / p for n live objects of
 * stride S, p = 1 - exp(-S / interval), plus the weights' rounding, up or
 * down at random: n p f (1 - f) for the fraction f of 1/p or S/p) and
 * within 10% (the issue's
 * accuracy target for sites of more than 1% of the bytes). A biased
 * sampler (say, never sampling a slot's first allocation, or weighing by
 * the object size instead of the stride) fails it.
 *
 * Exactness, in every child: after everything is freed (kmem_cache_free,
 * bulk free, kfree, from this thread and another), no site of this file is
 * listed: each sample's weight was added and subtracted alike. Also a
 * kmalloc site, freed the same way.
 *
 * Reports: allocinfo_print's JSON says "mode":"sample" and the interval,
 * the table "sampled every 65536 bytes; figures are estimates".
 *
 * The option: sample:4k is a 4096-byte interval, exact and 1 are mode 1,
 * sample is 512 KiB; sample:0, sample:2g and junk are reported once,
 * naming USLUB_PROFILING, and the default (off) is used.
 */
#include "check.h"

#include <math.h>
#include <pthread.h>

#define INTERVAL 65536
#define NSEEDS 40
#define NSITES 6

static const size_t obj_size[NSITES] = { 8, 64, 1000, 65536, 64, 200 };
static const long count[NSITES] = { 200000, 40000, 4000, 300, 20000, 6000 };
/* sites 1 and 5 lose their odd-indexed objects to another thread */
static const int halved[NSITES] = { 0, 1, 0, 0, 0, 1 };

static uslub_cache_t *cache[NSITES];
static void **objs[NSITES];
/* The sites' tags (registered on first use, as C++'s are): "lines" 1-6
 * of this file, which no allocation of its own has. */
static struct uslub_alloc_tag site_tag[NSITES] = {
	{ __FILE__, "site", 1, 0, 0, 0, 0 }, { __FILE__, "site", 2, 0, 0, 0, 0 },
	{ __FILE__, "site", 3, 0, 0, 0, 0 }, { __FILE__, "site", 4, 0, 0, 0, 0 },
	{ __FILE__, "site", 5, 0, 0, 0, 0 }, { __FILE__, "site", 6, 0, 0, 0, 0 },
};

static void *free_odd(void *arg)
{
	int i = (int)(intptr_t)arg;
	for (long k = 1; k < count[i]; k += 2) {
		uslub_cache_free(cache[i], objs[i][k]);
		objs[i][k] = NULL;
	}
	return NULL;
}

static void find_site(int line, int64_t *bytes, int64_t *calls)
{
	static struct uslub_allocinfo info[512];
	size_t n = uslub_allocinfo(info, 512);
	CHECK(n <= 512);
	*bytes = *calls = 0;
	for (size_t i = 0; i < n; i++)
		if ((int)info[i].line == line && strstr(info[i].file, "sample_estimates.c")) {
			*bytes += info[i].bytes;
			*calls += info[i].calls;
		}
}

/* One run of the workload (a child): print "site I STRIDE LIVE BYTES CALLS". */
static int child_run(void)
{
	CHECK_EQ(uslub_profiling_enabled(), 2);
	CHECK_EQ(uslub_profiling_sample_interval(), INTERVAL);
	char name[32];
	for (int i = 0; i < NSITES; i++) {
		snprintf(name, sizeof(name), "est%d_%zu", i, obj_size[i]);
		cache[i] = uslub_cache_create(name, obj_size[i], 0, 0, NULL);
		CHECK(cache[i]);
		objs[i] = calloc((size_t)count[i], sizeof(void *));
		CHECK(objs[i]);
	}
	/* interleaved: each round allocates a slice of every site */
	for (int r = 0; r < 100; r++) {
		for (int i = 0; i < NSITES; i++) {
			long lo = count[i] * r / 100, hi = count[i] * (r + 1) / 100;
			/* each site its own tag, handed to the _noprof call as the
			 * entry macros do (site 4 in bulk, 50 at a time) */
			for (long k = lo; k < hi; k += i == 4 ? 50 : 1) {
				uslub_alloc_tag_cur = &site_tag[i];
				if (i != 4) {
					objs[i][k] = uslub_cache_alloc_noprof(cache[i], 0);
					continue;
				}
				int n = (int)(hi - k < 50 ? hi - k : 50);
				CHECK_EQ(uslub_cache_alloc_bulk_noprof(cache[4], 0, (size_t)n, &objs[4][k]), n);
			}
			for (long k = lo; k < hi; k++)
				CHECK(objs[i][k]);
		}
	}
	for (int i = 0; i < NSITES; i++) {
		if (!halved[i])
			continue;
		pthread_t t;
		CHECK(pthread_create(&t, NULL, free_odd, (void *)(intptr_t)i) == 0);
		CHECK(pthread_join(t, NULL) == 0);
	}
	for (int i = 0; i < NSITES; i++) {
		struct uslub_slabinfo si;
		CHECK(uslub_cache_slabinfo(cache[i], &si) == 0);
		long live = halved[i] ? (count[i] + 1) / 2 : count[i];
		int64_t bytes, calls;
		find_site((int)site_tag[i].line, &bytes, &calls);
		printf("site %d %u %ld %lld %lld\n", i, (unsigned)si.size, live, (long long)bytes,
		       (long long)calls);
	}
	/* a kmalloc site, freed from this thread */
	void *km[3000];
	int km_line = 0;
	for (int k = 0; k < 3000; k++) {
		km_line = __LINE__ + 1;
		km[k] = uslub_kmalloc(100 + (size_t)(k % 7) * 100, 0);
		CHECK(km[k]);
	}
	char *json = print_to_string(uslub_allocinfo_print, USLUB_FMT_JSON);
	CHECK_MSG(strstr(json, "\"mode\":\"sample\",\"sample_interval\":65536"), "json: %.200s", json);
	free(json);
	char *tab = print_to_string(uslub_allocinfo_print, USLUB_FMT_TABLE);
	CHECK_MSG(strstr(tab, "sampled every 65536 bytes; figures are estimates"), "table: %.200s", tab);
	free(tab);
	/* everything freed: every site of this file at exactly 0 */
	for (int k = 0; k < 3000; k++)
		uslub_kfree(km[k]);
	for (int i = 0; i < NSITES; i++) {
		if (i == 4) {
			uslub_cache_free_bulk(cache[4], (size_t)count[4], objs[4]);
			continue;
		}
		for (long k = 0; k < count[i]; k++)
			if (objs[i][k])
				uslub_cache_free(cache[i], objs[i][k]);
	}
	for (int i = 0; i < NSITES; i++) {
		int64_t bytes, calls;
		find_site((int)site_tag[i].line, &bytes, &calls);
		CHECK_MSG(bytes == 0 && calls == 0, "site %d after free: %lld bytes %lld calls", i,
			  (long long)bytes, (long long)calls);
	}
	int64_t bytes, calls;
	find_site(km_line, &bytes, &calls);
	CHECK_MSG(bytes == 0 && calls == 0, "kmalloc site after free: %lld bytes %lld calls",
		  (long long)bytes, (long long)calls);
	for (int i = 0; i < NSITES; i++) {
		uslub_cache_destroy(cache[i]);
		free(objs[i]);
	}
	printf("zero ok\n");
	return 0;
}

/* Run this program with @env (NAME=VALUE, NULL-terminated) and @arg; its
 * stdout and stderr in *@out and *@err (malloc'd); the exit status. */
static int run_child(const char *const *env, const char *arg, char **out, char **err)
{
	int po[2], pe[2];
	CHECK(pipe(po) == 0 && pipe(pe) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		unsetenv("USLUB_PROFILING");
		unsetenv("USLUB_PROFILING_SEED");
		for (int i = 0; env[i]; i++)
			putenv((char *)env[i]);
		execl("/proc/self/exe", "sample_estimates", arg, (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 };
	FILE *fs[2] = { open_memstream(&bufs[0], &lens[0]), open_memstream(&bufs[1], &lens[1]) };
	int fds[2] = { po[0], pe[0] };
	for (int k = 0; k < 2; k++) {   /* the child's output is small: stdout, then stderr */
		char b[4096];
		ssize_t n;
		while ((n = read(fds[k], b, sizeof(b))) > 0)
			fwrite(b, 1, (size_t)n, fs[k]);
		close(fds[k]);
		fclose(fs[k]);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	*out = bufs[0];
	*err = bufs[1];
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int child_info(void)
{
	printf("mode %d interval %zu\n", uslub_profiling_enabled(), uslub_profiling_sample_interval());
	return 0;
}

/* What the library chose with USLUB_PROFILING unset (its default), as
 * the child prints it. */
static int default_mode;
static size_t default_interval;

static void read_default(void)
{
	const char *env[] = { NULL };
	char *out, *err;
	CHECK_EQ(run_child(env, "info", &out, &err), 0);
	CHECK_MSG(sscanf(out, "mode %d interval %zu", &default_mode, &default_interval) == 2,
		  "info child: %s", out);
	CHECK_MSG(!*err, "USLUB_PROFILING unset: stderr %s", err);
	/* the default is one of the modes, with its interval */
	CHECK((default_mode == 2) == (default_interval != 0) && default_mode >= 0 &&
	      default_mode <= 2);
	free(out);
	free(err);
}

static void check_option(const char *value, int mode, size_t interval, bool reported)
{
	char envv[64];
	snprintf(envv, sizeof(envv), "USLUB_PROFILING=%s", value);
	const char *env[] = { envv, NULL };
	char *out, *err;
	CHECK_EQ(run_child(env, "info", &out, &err), 0);
	char want[64];
	snprintf(want, sizeof(want), "mode %d interval %zu\n", mode, interval);
	CHECK_MSG(!strcmp(out, want), "USLUB_PROFILING=%s: %s, want %s", value, out, want);
	if (reported) {
		char *m = strstr(err, "USLUB_PROFILING");
		CHECK_MSG(m && !strstr(m + 1, "USLUB_PROFILING=\""), "USLUB_PROFILING=%s: stderr %s",
			  value, err);
	} else {
		CHECK_MSG(!*err, "USLUB_PROFILING=%s: stderr %s", value, err);
	}
	free(out);
	free(err);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child_run();
	if (argc > 1 && !strcmp(argv[1], "info"))
		return child_info();

	check_option("sample:4k", 2, 4096, false);
	check_option("sample:1", 2, 1, false);
	check_option("SAMPLE:1g", 2, (size_t)1 << 30, false);
	check_option("sample", 2, 512 << 10, false);
	check_option("exact", 1, 0, false);
	check_option("1", 1, 0, false);
	check_option("off", 0, 0, false);
	/* bad text: reported, and the default used */
	read_default();
	check_option("sample:0", default_mode, default_interval, true);
	check_option("sample:2g", default_mode, default_interval, true);
	check_option("sample:12q", default_mode, default_interval, true);
	check_option("sample:", default_mode, default_interval, true);
	check_option("2", default_mode, default_interval, true);

	int nseeds = (int)scaled(NSEEDS);
	if (nseeds < 10)
		nseeds = 10;
	double sum_b[NSITES] = { 0 }, sum_c[NSITES] = { 0 };
	unsigned stride[NSITES] = { 0 };
	long live[NSITES] = { 0 };
	for (int seed = 1; seed <= nseeds; seed++) {
		char envs[32];
		snprintf(envs, sizeof(envs), "USLUB_PROFILING_SEED=%d", seed);
		const char *env[] = { "USLUB_PROFILING=sample:65536", envs, NULL };
		char *out, *err;
		int rc = run_child(env, "child", &out, &err);
		CHECK_MSG(rc == 0, "seed %d: child exit %d: %s%s", seed, rc, out, err);
		CHECK_MSG(strstr(out, "zero ok\n"), "seed %d: %s", seed, out);
		char *p = out;
		for (int i = 0; i < NSITES; i++) {
			int idx;
			unsigned sz;
			long lv;
			long long b, c;
			p = strstr(p, "site ");
			CHECK(p && sscanf(p, "site %d %u %ld %lld %lld", &idx, &sz, &lv, &b, &c) == 5);
			CHECK_EQ(idx, i);
			stride[i] = sz;
			live[i] = lv;
			sum_b[i] += (double)b;
			sum_c[i] += (double)c;
			p++;
		}
		free(out);
		free(err);
	}
	for (int i = 0; i < NSITES; i++) {
		double S = stride[i], n = (double)live[i];
		double prob = 1.0 - exp(-S / INTERVAL);
		double want_b = n * S, want_c = n;
		double mean_b = sum_b[i] / nseeds, mean_c = sum_c[i] / nseeds;
		/* plus the weights' random rounding (up with probability
		 * frac(w)): n p frac (1 - frac) per run */
		double fb = S / prob - floor(S / prob), fc = 1 / prob - floor(1 / prob);
		double sd_b = sqrt((n * S * S * (1 - prob) / prob + n * prob * fb * (1 - fb)) / nseeds);
		double sd_c = sqrt((n * (1 - prob) / prob + n * prob * fc * (1 - fc)) / nseeds);
		double round_b = 1, round_c = 1;
		printf("site %d: stride %u, %ld live: bytes %.0f (mean of %d) vs %.0f, sd %.0f; "
		       "calls %.1f vs %.0f, sd %.1f\n", i, stride[i], live[i], mean_b, nseeds, want_b,
		       sd_b, mean_c, want_c, sd_c);
		CHECK_MSG(fabs(mean_b - want_b) <= 4 * sd_b + round_b,
			  "site %d: mean estimated bytes %.0f, known %.0f (sd of the mean %.0f)", i,
			  mean_b, want_b, sd_b);
		CHECK_MSG(fabs(mean_c - want_c) <= 4 * sd_c + round_c,
			  "site %d: mean estimated calls %.1f, known %.0f (sd of the mean %.1f)", i,
			  mean_c, want_c, sd_c);
		CHECK_MSG(fabs(mean_b - want_b) <= 0.10 * want_b,
			  "site %d: mean estimated bytes %.0f more than 10%% off %.0f", i, mean_b,
			  want_b);
	}
	printf("sample estimates: ok over %d seeds\n", nseeds);
	return 0;
}
