/*
 * KASAN's role under AddressSanitizer (src/slub/kasan.c): this program is
 * built with -fsanitize=address in every flavour and links the shared
 * libuslub, built without ASan in the normal flavour (the weak references
 * must resolve to the program's runtime) and with it in test-asan (uslub's
 * own accesses to poisoned metadata must not be reported).
 *
 * Each bad access runs in a forked child whose stderr is captured: ASan
 * must report "use-after-poison" (manual poisoning's shadow value) on the
 * exact address the child touched, and end the child with a nonzero
 * status. The clean case exercises every allocation and free path with
 * full use of each object and must end with no report. USLUB_ASAN=0 must
 * turn the detection off (the same use after free then goes unreported).
 */
#include "uslub.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c)                                                                  \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "FAIL %s:%d: CHECK(%s)\n", __FILE__, __LINE__, #c); \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

static volatile char sink;

/* The bad access of a child: read (or write) one byte at @p. */
static void touch(volatile char *p, bool write)
{
	if (write)
		*p = 1;
	else
		sink = *p;
}

/* ------------------------------------------------------------------------
 * The children: each makes one bad access at an address it prints first
 * (on fd 3, the parent's pipe), then would exit 0 if ASan said nothing.
 * ---------------------------------------------------------------------- */
static void say(const volatile void *p)
{
	dprintf(3, "%" PRIxPTR "\n", (uintptr_t)p);
}

static void bad_cache_uaf_read(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-uaf", 48, 0, 0, NULL);
	CHECK(s);
	char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 7, 48);
	uslub_cache_free(s, p);
	say(p + 24);
	touch(p + 24, false);
}

static void bad_cache_uaf_write(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-uafw", 64, 0, 0, NULL);
	CHECK(s);
	char *keep[100];
	for (int i = 0; i < 100; i++)          /* past the main sheaf, onto slabs */
		CHECK(keep[i] = uslub_cache_alloc(s, 0));
	for (int i = 0; i < 100; i++)
		uslub_cache_free(s, keep[i]);
	say(keep[50]);                          /* word 0: the free mark's */
	touch(keep[50], true);
}

/* past object_size, into the slot's padding (size 28, aligned to 32: too
 * little padding for even a one-word extension, which with profiling
 * would stay addressable after the object's last granule, and ASan then
 * names a partial granule's overflow "unknown-crash") */
static void bad_cache_overflow(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-pad", 28, 32, 0, NULL);
	CHECK(s);
	char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 1, 28);
	say(p + 28);
	touch(p + 28, false);
}

/* size 40 aligned to 64: with profiling (the asan_kasan_profiling test),
 * the object's extension lives in its padding (bytes 40..55) and stays
 * addressable; the bytes after it are poisoned either way */
static void bad_cache_overflow_ext(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-pad64", 40, 64, 0, NULL);
	CHECK(s);
	char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 1, 40);
	say(p + 60);
	touch(p + 60, true);
}

/* kmalloc(10): the requested size, not the 16 of its class */
static void bad_kmalloc_overflow(void)
{
	char *p = uslub_kmalloc(10, 0);
	CHECK(p);
	memset(p, 1, 10);
	say(p + 10);
	touch(p + 10, true);
}

static void bad_kfree_uaf(void)
{
	char *p = uslub_kmalloc(100, USLUB_GFP_ZERO);
	CHECK(p);
	uslub_kfree(p);
	say(p + 99);
	touch(p + 99, false);
}

static void bad_bulk_uaf(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-bulk", 128, 0, 0, NULL);
	CHECK(s);
	void *v[64];
	CHECK(uslub_cache_alloc_bulk(s, 0, 64, v) == 64);
	for (int i = 0; i < 64; i++)
		memset(v[i], 2, 128);
	char *p = v[33];
	uslub_cache_free_bulk(s, 64, v);
	say(p + 127);
	touch(p + 127, false);
}

/* a constructed object's cache: free pointer and mark after the object */
static void ctor_fn(void *p)
{
	memset(p, 0x5c, 24);
}

static void bad_ctor_uaf(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-ctor", 24, 0, 0, ctor_fn);
	CHECK(s);
	char *p = uslub_cache_alloc(s, 0);
	CHECK(p && p[23] == 0x5c);
	uslub_cache_free(s, p);
	say(p);
	touch(p, false);
}

/* krealloc shrinking inside the object: the bytes after the new size */
static void bad_krealloc_shrink(void)
{
	char *p = uslub_kmalloc(60, 0);
	CHECK(p);
	memset(p, 3, 60);
	char *q = uslub_krealloc(p, 40, 0);
	CHECK(q == p);
	say(q + 40);
	touch(q + 40, false);
}

/* ------------------------------------------------------------------------
 * The clean run: every path, every byte of every object used, no report.
 * ---------------------------------------------------------------------- */
static void clean(void)
{
	uslub_cache_t *s = uslub_cache_create("asan-clean", 72, 0, 0, NULL);
	uslub_cache_t *cs = uslub_cache_create("asan-clean-ctor", 40, 0, 0, ctor_fn);
	/* with profiling: extensions in each padding, and in the slab's tail */
	uslub_cache_t *ps = uslub_cache_create("asan-clean-pad", 40, 64, 0, NULL);
	uslub_cache_t *bs = uslub_cache_create("asan-clean-big", 1000, 0, 0, NULL);
	CHECK(s && cs && ps && bs);
	for (int round = 0; round < 20; round++) {
		char *v[300];
		for (int i = 0; i < 300; i++) {
			v[i] = uslub_cache_alloc(s, i % 3 ? 0 : USLUB_GFP_ZERO);
			CHECK(v[i]);
			if (i % 3 == 0)
				for (int j = 0; j < 72; j++)
					CHECK(v[i][j] == 0);
			memset(v[i], i, 72);
		}
		for (int i = 0; i < 300; i += 2)
			uslub_cache_free(s, v[i]);
		for (int i = 1; i < 300; i += 2)
			CHECK(v[i][71] == (char)i);
		for (int i = 1; i < 300; i += 2)
			uslub_cache_free(s, v[i]);

		void *b[100];
		CHECK(uslub_cache_alloc_bulk(s, USLUB_GFP_ZERO, 100, b) == 100);
		for (int i = 0; i < 100; i++) {
			CHECK(((char *)b[i])[71] == 0);
			memset(b[i], 9, 72);
		}
		uslub_cache_free_bulk(s, 100, b);

		struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 16);
		CHECK(sh);
		for (int i = 0; i < 8; i++) {
			char *p = uslub_cache_alloc_from_sheaf(s, USLUB_GFP_ZERO, sh);
			CHECK(p && p[0] == 0 && p[71] == 0);
			memset(p, 4, 72);
			uslub_cache_free(s, p);
		}
		uslub_cache_return_sheaf(s, 0, sh);

		char *pv[200], *bv[40];
		for (int i = 0; i < 200; i++) {
			CHECK(pv[i] = uslub_cache_alloc(ps, 0));
			memset(pv[i], i, 40);
		}
		for (int i = 0; i < 40; i++) {
			CHECK(bv[i] = uslub_cache_alloc(bs, USLUB_GFP_ZERO));
			CHECK(bv[i][999] == 0);
			memset(bv[i], i, 1000);
		}
		for (int i = 0; i < 200; i++)
			uslub_cache_free(ps, pv[i]);
		for (int i = 0; i < 40; i++)
			uslub_cache_free(bs, bv[i]);
		uslub_cache_shrink(ps);
		uslub_cache_shrink(bs);

		char *c = uslub_cache_alloc(cs, 0);
		CHECK(c && c[0] == 0x5c && c[23] == 0x5c);
		memset(c, 0x5c, 40);       /* its constructed state back */
		uslub_cache_free(cs, c);

		for (size_t n = 1; n <= 5000; n = n * 3 + 1) {
			char *k = uslub_kmalloc(n, round & 1 ? USLUB_GFP_ZERO : 0);
			CHECK(k);
			memset(k, 5, n);
			size_t ks = uslub_ksize(k);       /* all of it usable now */
			CHECK(ks >= n);
			memset(k, 6, ks);
			char *r = uslub_krealloc(k, n * 2 + 3, 0);
			CHECK(r && r[n - 1] == 6);
			memset(r, 7, n * 2 + 3);
			r = uslub_krealloc(r, n / 2 + 1, USLUB_GFP_ZERO);
			CHECK(r);
			memset(r, 8, n / 2 + 1);
			uslub_kfree(r);
		}
		char *z = uslub_kzalloc(33, 0);
		CHECK(z && z[32] == 0);
		uslub_kfree_sensitive(z);

		void *kb[40];
		for (int i = 0; i < 40; i++) {
			CHECK(kb[i] = uslub_kmalloc((size_t)(i * 13 + 1), 0));
			memset(kb[i], 1, (size_t)(i * 13 + 1));
		}
		uslub_kfree_bulk(40, kb);
		uslub_cache_shrink(s);
	}
	CHECK(uslub_cache_validate(s) == 0);
	uslub_cache_destroy(bs);
	uslub_cache_destroy(ps);
	uslub_cache_destroy(cs);
	uslub_cache_destroy(s);
	printf("clean: no report\n");
}

/* ------------------------------------------------------------------------
 * The parent
 * ---------------------------------------------------------------------- */
struct bad_case {
	const char *name;
	void (*fn)(void);
};

static const struct bad_case bad_cases[] = {
	{ "cache use after free (read)", bad_cache_uaf_read },
	{ "cache use after free (write, free mark word)", bad_cache_uaf_write },
	{ "cache overflow into padding", bad_cache_overflow },
	{ "cache overflow past a padding extension", bad_cache_overflow_ext },
	{ "kmalloc(10) overflow", bad_kmalloc_overflow },
	{ "kfree use after free", bad_kfree_uaf },
	{ "bulk free use after free", bad_bulk_uaf },
	{ "ctor cache use after free", bad_ctor_uaf },
	{ "krealloc shrink", bad_krealloc_shrink },
};

/* Run @fn in a child; its stderr into @err (NUL-terminated), the address
 * it printed into *@addr; returns its wait status. */
static int run_child(void (*fn)(void), char *err, size_t cap, uintptr_t *addr)
{
	int e[2], a[2];
	CHECK(pipe(e) == 0 && pipe(a) == 0);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(e[0]);
		close(a[0]);
		dup2(e[1], 2);
		dup2(a[1], 3);
		fn();
		_exit(0);
	}
	close(e[1]);
	close(a[1]);
	size_t len = 0;
	ssize_t r;
	while (len + 1 < cap && (r = read(e[0], err + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	err[len] = 0;
	char buf[64] = { 0 };
	len = 0;
	while (len + 1 < sizeof(buf) && (r = read(a[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	*addr = (uintptr_t)strtoull(buf, NULL, 16);
	close(e[0]);
	close(a[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return st;
}

/* Does @err hold ASan's "use-after-poison on address <addr>"? */
static bool reported(const char *err, uintptr_t addr)
{
	const char *p = strstr(err, "AddressSanitizer: use-after-poison on address ");
	if (!p)
		return false;
	p += strlen("AddressSanitizer: use-after-poison on address ");
	return (uintptr_t)strtoull(p, NULL, 16) == addr;
}

int main(void)
{
	static char err[1 << 16];
	uintptr_t addr;
	int failed = 0;
	bool sub = getenv("USLUB_ASAN") != NULL;  /* the USLUB_ASAN=0 run: counts only */

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		int st = run_child(bad_cases[i].fn, err, sizeof(err), &addr);
		bool ok = addr && WIFEXITED(st) && WEXITSTATUS(st) != 0 && reported(err, addr);
		if (sub) {
			failed += !ok;
			continue;
		}
		printf("%-48s %s (address %#" PRIxPTR ", status %d)\n", bad_cases[i].name,
		       ok ? "reported" : "NOT REPORTED", addr, st);
		if (!ok) {
			fprintf(stderr, "--- child's stderr ---\n%s\n---\n", err);
			failed++;
		}
	}

	/* the clean run, in a child too: its stderr must stay empty of ASan */
	int st = run_child(clean, err, sizeof(err), &addr);
	bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strstr(err, "AddressSanitizer");
	if (!sub)
		printf("%-48s %s (status %d)\n", "clean run", ok ? "no report" : "FAILED", st);
	if (!ok) {
		fprintf(stderr, "--- clean run's stderr ---\n%s\n---\n", err);
		failed++;
	}

	/* USLUB_ASAN=0: nothing poisoned, the same use after free unreported
	 * (a read of freed memory uslub owns: harmless to the child) */
	if (!getenv("USLUB_ASAN")) {
		setenv("USLUB_ASAN", "0", 1);
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			execl("/proc/self/exe", "asan", (char *)NULL);
			_exit(127);
		}
		CHECK(waitpid(pid, &st, 0) == pid);
		/* that run found every bad case unreported: it exits 1 */
		ok = WIFEXITED(st) && WEXITSTATUS(st) == 1;
		printf("%-48s %s (status %d)\n", "USLUB_ASAN=0: off", ok ? "ok" : "FAILED", st);
		if (!ok)
			failed++;
	} else {
		return failed == (int)(sizeof(bad_cases) / sizeof(bad_cases[0])) ? 1 : 2;
	}
	return failed ? 1 : 0;
}
