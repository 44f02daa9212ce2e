/*
 * huge_reuse: freed blocks above 2 MiB are kept mapped and reused
 * (src/kmalloc/kmalloc.c, "Kept mappings"), and given back after
 * USLUB_DECAY_MS (ctest sets 200) or at malloc_trim().
 *   - a smaller request reuses a kept mapping (its start), and calloc of
 *     reused memory is zero; the freed parts merge again;
 *   - a larger request grows a kept mapping (mremap): calloc still zero;
 *   - realloc of a block split off a kept mapping keeps its contents;
 *   - a loop of malloc(3..32 MiB), memset, free faults in a fraction of
 *     the pages it writes (every page, each time, before);
 *   - kept memory leaves the resident set after the decay with no call
 *     made (the purge thread: ctest sets USLUB_BACKGROUND_THREAD=1, this
 *     program being single-threaded), and at once with malloc_trim(0).
 * The uslub-specific checks run only when uslub is the malloc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "rss.h"

#define MiB (1ul << 20)

static int failures;
#define CHECK(c, ...) do { if (!(c)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); failures++; } } while (0)

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* memset that the compiler cannot drop before a free() */
static void fill(void *p, int c, size_t n)
{
	memset(p, c, n);
	__asm__ volatile("" : : "r"(p) : "memory");
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	if (!dlsym(RTLD_DEFAULT, "uslub_trim")) {
		printf("SKIP: uslub is not the malloc\n");
		return 77;
	}
	/* a smaller request takes the kept mapping's start; calloc zeroes */
	unsigned char *p = malloc(20 * MiB);
	CHECK(p, "malloc 20 MiB");
	fill(p, 0xab, 20 * MiB);
	uintptr_t pa = (uintptr_t)p;
	free(p);
	unsigned char *q = calloc(1, 12 * MiB);
	CHECK((uintptr_t)q == pa, "12 MiB did not reuse the kept 20 MiB mapping (%p, %#lx)",
	      (void *)q, (unsigned long)pa);
	CHECK(q && all_zero(q, 12 * MiB), "calloc of a reused mapping is not zero");
	/* the split-off tail is kept too */
	unsigned char *t = malloc(8 * MiB);
	CHECK((uintptr_t)t == pa + 12 * MiB, "8 MiB did not take the kept tail (%p, %#lx)",
	      (void *)t, (unsigned long)(pa + 12 * MiB));
	free(t);
	/* realloc of a block split off a mapping keeps its contents */
	fill(q, 0x3c, 12 * MiB);
	q = realloc(q, 16 * MiB);
	CHECK(q && q[0] == 0x3c && q[12 * MiB - 1] == 0x3c, "realloc lost the contents");
	q = realloc(q, 6 * MiB);
	CHECK(q && q[0] == 0x3c && q[6 * MiB - 1] == 0x3c, "realloc (shrink) lost the contents");
	free(q);
	/* a larger request grows a kept mapping: calloc still zero */
	unsigned char *g = calloc(1, 48 * MiB);
	CHECK(g && all_zero(g, 48 * MiB), "calloc of a grown kept mapping is not zero");
	fill(g, 0x11, 48 * MiB);
	free(g);

	/* the malloc-large loop: reuse instead of faulting every page in */
	unsigned long long x = 88172645463325252ull;
	long f0 = minflt();
	size_t written = 0;
	for (int i = 0; i < 100; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t sz = 3 * MiB + x % (29 * MiB);
		char *b = malloc(sz);
		CHECK(b, "malloc %zu", sz);
		if (!b)
			break;
		fill(b, i, sz);
		written += sz;
		free(b);
	}
	long faults = minflt() - f0;
	printf("huge_reuse: %ld minor faults writing %zu MiB in 100 blocks of 3-32 MiB\n",
	       faults, written >> 20);
	CHECK(faults * 4096l * 8 < (long)written, "%ld faults: more than 1/8 of the %zu pages "
	      "written", faults, written / 4096);

	/* kept memory goes back after the decay, with no call made */
	long r0 = rss_kib();
	p = malloc(24 * MiB);
	fill(p, 1, 24 * MiB);
	free(p);
	long r1 = rss_kib(), waited = 0;
	while (waited < 1500 && r1 - rss_kib() < 16 * 1024) {
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL);
		waited += 20;
	}
	long r2 = rss_kib();
	printf("huge_reuse: resident %ld KiB, %ld after a freed 24 MiB block, %ld after %ld ms idle\n",
	       r0, r1, r2, waited);
	CHECK(r1 - r2 >= 16 * 1024, "kept mappings still resident after %ld ms idle", waited);

	/* and at once with malloc_trim */
	p = malloc(24 * MiB);
	fill(p, 1, 24 * MiB);
	free(p);
	r1 = rss_kib();
	malloc_trim(0);
	r2 = rss_kib();
	printf("huge_reuse: %ld KiB resident before malloc_trim, %ld after\n", r1, r2);
	CHECK(r1 - r2 >= 16 * 1024, "malloc_trim left the kept mapping resident");
	if (!failures)
		printf("huge_reuse: ok\n");
	return failures != 0;
}
