/*
 * malloc_api: the malloc family of libuslub-malloc (linked, so every call
 * below, and libc's own, goes to uslub) against C11, POSIX and glibc's
 * documented behaviour:
 *   - malloc(0) / calloc(0, n) / calloc(n, 0): unique, freeable, non-NULL;
 *     malloc(n) aligned to min(16, the largest power of two <= n);
 *   - impossible sizes: NULL with ENOMEM (malloc, calloc overflow, realloc,
 *     reallocarray overflow with the block untouched, aligned_alloc,
 *     memalign, valloc, pvalloc) and ENOMEM returned by posix_memalign;
 *     a 100 MiB block works and is writable end to end;
 *   - calloc zeroes (also memory that was dirty and freed, and big blocks);
 *   - realloc(NULL, n) = malloc, realloc(p, 0) frees p and returns NULL
 *     (glibc), realloc through every size class up and down keeps the
 *     contents, failed realloc leaves the block alone;
 *   - posix_memalign: EINVAL (errno untouched) for alignments that are not
 *     a power-of-two multiple of sizeof(void *); alignments 8 .. 16 MiB with
 *     sizes around them; aligned_alloc (EINVAL for a bad alignment, where
 *     the library implements C17: uslub, glibc >= 2.38), memalign (an
 *     alignment that is not a power of two rounds up, as in glibc), valloc,
 *     pvalloc (page rounded);
 *   - malloc_trim keeps live blocks intact;
 *   - malloc_usable_size: 0 for NULL, >= the request, all of it writable
 *     without touching neighbours;
 *   - free(NULL), free keeps errno;
 *   - cfree and the __libc_* aliases (found with dlsym) work, mixed with
 *     the plain names;
 *   - a random workload over every entry point (random sizes, alignments,
 *     frees, reallocs): every live block keeps its pattern over its whole
 *     usable size and no two live blocks overlap;
 *   - invalid frees (stack, interior pointers of small, page-run and mapped
 *     blocks, static data, a foreign mmap, a double free of a small, a
 *     page-run and a mapped block) and realloc of a stack or interior
 *     pointer abort with a message naming uslub and free (or realloc), in
 *     forked children; against glibc only the cases glibc itself detects
 *     are run (stack, small double free, realloc of the stack), and the
 *     message is not checked.
 * On uslub also: every malloc-family symbol resolves into libuslub-malloc,
 * uslub_ksize() agrees with malloc_usable_size(), slabinfo shows kmalloc
 * caches, uslub_error_count() stays 0.
 */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* Called through volatile pointers so the compiler can neither fold nor
 * elide any call (GCC knows malloc's semantics: two results never compare
 * equal, an unused malloc/free pair disappears). */
static void *(*volatile f_malloc)(size_t) = malloc;
static void (*volatile f_free)(void *) = free;
static void *(*volatile f_calloc)(size_t, size_t) = calloc;
static void *(*volatile f_realloc)(void *, size_t) = realloc;
static void *(*volatile f_reallocarray)(void *, size_t, size_t) = reallocarray;
static int (*volatile f_posix_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile f_aligned_alloc)(size_t, size_t) = aligned_alloc;
static void *(*volatile f_memalign)(size_t, size_t) = memalign;
static void *(*volatile f_valloc)(size_t) = valloc;
static void *(*volatile f_pvalloc)(size_t) = pvalloc;
static size_t (*volatile f_usable)(void *) = malloc_usable_size;

static bool on_uslub;
static size_t page_size;

static bool aligned(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

static size_t pow2_floor(size_t n)
{
	size_t p = 1;
	while (p <= n / 2)
		p <<= 1;
	return p;
}

/* ------------------------------------------------------------------------ */

static void test_symbols(void)
{
	static const char *names[] = {
		"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
		"aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
		"cfree", "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
		"__libc_memalign", "__libc_valloc", "__libc_pvalloc",
	};
	if (!on_uslub)
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *owner = mt_sym_owner(names[i]);
		CHECK_MSG(strstr(owner, "libuslub-malloc") != NULL,
			  "%s resolves to '%s', not libuslub-malloc", names[i], owner);
	}
	/* The addresses this program calls are the library's too. */
	Dl_info info;
	CHECK(dladdr((void *)f_malloc, &info) && info.dli_fname &&
	      strstr(info.dli_fname, "libuslub-malloc"));
	CHECK(dladdr((void *)f_free, &info) && info.dli_fname &&
	      strstr(info.dli_fname, "libuslub-malloc"));
}

static void test_malloc_zero_and_small(void)
{
	enum { N = 64 };
	void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = f_malloc(0);
		CHECK_MSG(p[i] != NULL, "malloc(0) returned NULL");
		/* Not the kernel's ZERO_SIZE_PTR or any other token. */
		CHECK_MSG((uintptr_t)p[i] >= 4096, "malloc(0) returned %p", p[i]);
		CHECK(aligned(p[i], 8));
		for (int j = 0; j < i; j++)
			CHECK_MSG(p[i] != p[j], "malloc(0) returned %p twice (live)", p[i]);
	}
	for (int i = 0; i < N; i++)
		f_free(p[i]);

	/* calloc with a zero count or size. */
	void *a = f_calloc(0, 16), *b = f_calloc(16, 0), *c = f_calloc(0, 0);
	CHECK(a && b && c);
	CHECK(a != b && b != c && a != c);
	f_free(a);
	f_free(b);
	f_free(c);

	/* Alignment of small requests: every object type that fits. */
	for (size_t n = 1; n <= 1024; n++) {
		void *q = f_malloc(n);
		size_t want = pow2_floor(n) < 16 ? pow2_floor(n) : 16;
		if (CHECK_MSG(q != NULL, "malloc(%zu) == NULL", n)) {
			CHECK_MSG(aligned(q, want), "malloc(%zu) = %p not %zu-aligned", n, q, want);
			memset(q, 0x5a, n);
			f_free(q);
		}
	}
	/* free(NULL) is a no-op. */
	f_free(NULL);
}

static void test_huge(void)
{
	volatile size_t sizes[] = { SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX / 2 + 1,
				    (size_t)PTRDIFF_MAX, (size_t)1 << 50 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		void *p = f_malloc(sizes[i]);
		CHECK_MSG(p == NULL && errno == ENOMEM,
			  "malloc(%#zx) = %p errno %d", sizes[i], p, errno);
		if (p)
			f_free(p);
	}

	/* 100 MiB: works, writable at every byte, usable size covers it. */
	size_t n = 100 * MiB;
	unsigned char *p = f_malloc(n);
	if (!CHECK_MSG(p != NULL, "malloc(100 MiB) failed: %s", strerror(errno)))
		return;
	CHECK(f_usable(p) >= n);
	CHECK(aligned(p, 16));
	memset(p, 0xc3, n);
	size_t bad = 0;
	for (size_t i = 0; i < n; i += 4093)
		bad += p[i] != 0xc3;
	CHECK(bad == 0 && p[n - 1] == 0xc3);
	/* Grow (a new mapping or in place), keep the contents. */
	for (size_t i = 0; i < n; i += page_size)
		p[i] = (unsigned char)(i / page_size);
	unsigned char *q = f_realloc(p, 150 * MiB);
	if (CHECK_MSG(q != NULL, "realloc to 150 MiB failed")) {
		p = q;
		bad = 0;
		for (size_t i = 0; i < n; i += page_size)
			bad += p[i] != (unsigned char)(i / page_size);
		CHECK_MSG(bad == 0, "realloc 100 -> 150 MiB lost %zu bytes", bad);
		memset(p + n, 0x11, 50 * MiB);
		CHECK(f_usable(p) >= 150 * MiB);
	}
	/* Shrink in steps down to a small object. */
	size_t shrink[] = { 3 * MiB, 1 * MiB, 100 * KiB, 5000, 100 };
	for (size_t k = 0; k < sizeof(shrink) / sizeof(shrink[0]); k++) {
		q = f_realloc(p, shrink[k]);
		if (!CHECK_MSG(q != NULL, "realloc shrink to %zu failed", shrink[k]))
			break;
		p = q;
		bad = 0;
		for (size_t i = 0; i < shrink[k]; i += page_size)
			bad += p[i] != (unsigned char)(i / page_size);
		CHECK_MSG(bad == 0, "realloc shrink to %zu lost contents", shrink[k]);
		CHECK(f_usable(p) >= shrink[k]);
	}
	f_free(p);
}

static void test_calloc(void)
{
	static const size_t sizes[] = { 1, 8, 24, 100, 128, 192, 500, 1000, 4096, 5000,
					8192, 10000, 65536, 100000, 1 << 20, (1 << 21) + 7,
					3 << 20, 9 << 20 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		for (int round = 0; round < 4; round++) {
			/* Dirty a few blocks of the size, free them, calloc. */
			void *d[4];
			for (int i = 0; i < 4; i++) {
				d[i] = f_malloc(n);
				if (d[i])
					memset(d[i], 0xa5, f_usable(d[i]));
			}
			for (int i = 3; i >= 0; i--)
				f_free(d[i]);
			unsigned char *c = round & 1 ? f_calloc(n, 1) : f_calloc(1, n);
			if (!CHECK_MSG(c != NULL, "calloc(%zu) failed", n))
				continue;
			size_t nz = 0;
			for (size_t i = 0; i < n; i++)
				nz += c[i] != 0;
			CHECK_MSG(nz == 0, "calloc(%zu) has %zu non-zero bytes", n, nz);
			CHECK(aligned(c, 16) || n < 16);
			f_free(c);
		}
	}
	/* Element count times size. */
	int *v = f_calloc(1000, sizeof(int));
	if (CHECK(v != NULL)) {
		int sum = 0;
		for (int i = 0; i < 1000; i++)
			sum |= v[i];
		CHECK(sum == 0);
		f_free(v);
	}
	/* Overflow of n * size: NULL + ENOMEM. */
	volatile size_t big = SIZE_MAX / 2 + 1, huge = SIZE_MAX;
	struct { size_t n, s; } ov[] = { { big, 2 }, { 2, big }, { huge, huge },
					 { (size_t)1 << 32, (size_t)1 << 32 },
					 { 1, huge }, { huge, 1 }, { 3, SIZE_MAX / 3 + 1 } };
	for (size_t i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
		errno = 0;
		void *p = f_calloc(ov[i].n, ov[i].s);
		CHECK_MSG(p == NULL && errno == ENOMEM, "calloc(%#zx, %#zx) = %p errno %d",
			  ov[i].n, ov[i].s, p, errno);
		if (p)
			f_free(p);
	}
}

/* Run fn(a, b) in a forked child; its checks report there and its exit
 * status (0: no failure) comes back as one check here. */
static void in_child(void (*fn)(size_t, size_t), size_t a, size_t b, const char *what)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(30);
		mt_failures = 0;
		fn(a, b);
		_exit(mt_failures ? 1 : 0);
	}
	int st = 0;
	if (!CHECK(pid > 0 && waitpid(pid, &st, 0) == pid))
		return;
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s(%#zx, %#zx): child %s %d", what, a,
		  b, WIFSIGNALED(st) ? "killed by signal" : "exited with",
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void failed_realloc_child(size_t old, size_t nn)
{
	unsigned char *p = f_malloc(old);
	if (!CHECK(p != NULL))
		return;
	mt_fill(p, old, 77 + old);
	errno = 0;
	void *q = f_realloc(p, nn);
	if (!CHECK_MSG(q == NULL && errno == ENOMEM,
		       "realloc(malloc(%zu), %#zx) = %p (p %p) errno %d", old, nn, q, (void *)p,
		       errno))
		return;   /* the block's state is unknown: leave it */
	CHECK(f_usable(p) >= old);
	CHECK(mt_verify(p, old, 77 + old) == (size_t)-1);
	/* Still a live block: it can grow normally and be freed. */
	q = f_realloc(p, old * 2);
	if (CHECK(q != NULL)) {
		CHECK(mt_verify(q, old, 77 + old) == (size_t)-1);
		p = q;
	}
	f_free(p);
	/* reallocarray: the same with an overflowing product. */
	p = f_malloc(old);
	if (!CHECK(p != NULL))
		return;
	mt_fill(p, old, 5 + old);
	errno = 0;
	q = f_reallocarray(p, nn, 2);
	CHECK_MSG(q == NULL && errno == ENOMEM, "reallocarray(malloc(%zu), %#zx, 2) = %p", old,
		  nn, q);
	if (!q) {
		CHECK(mt_verify(p, old, 5 + old) == (size_t)-1);
		f_free(p);
	}
}

static void test_realloc(void)
{
	/* realloc(NULL, n) is malloc(n). */
	unsigned char *p = f_realloc(NULL, 40);
	if (CHECK(p != NULL)) {
		CHECK(f_usable(p) >= 40);
		memset(p, 1, 40);
		f_free(p);
	}
	p = f_realloc(NULL, 0);
	CHECK_MSG(p != NULL, "realloc(NULL, 0) must be malloc(0): non-NULL");
	f_free(p);

	/* realloc(p, 0) frees p and returns NULL (glibc). */
	p = f_malloc(100);
	CHECK(p != NULL);
	void *r = f_realloc(p, 0);
	CHECK_MSG(r == NULL, "realloc(p, 0) returned %p, not NULL", r);
	if (r)
		f_free(r);

	/* ... and really frees: a million of them do not leak (RSS grows by
	 * far less than the 1 GiB a leak would take). */
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	for (int i = 0; i < 1000000; i++) {
		void *x = f_malloc(1000);
		if (x)
			*(volatile char *)x = 1;
		r = f_realloc(x, 0);
		if (r)
			f_free(r);
	}
	getrusage(RUSAGE_SELF, &ru1);
	CHECK_MSG(ru1.ru_maxrss - ru0.ru_maxrss < 256 * 1024,
		  "realloc(p, 0) x 1e6 grew max RSS by %ld KiB", ru1.ru_maxrss - ru0.ru_maxrss);

	/* Through every size class up then down: contents preserved. */
	static const size_t steps[] = { 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 64, 65,
					95, 96, 97, 128, 129, 191, 192, 193, 256, 257, 511,
					512, 513, 1000, 1024, 1025, 2047, 2048, 2049, 4095,
					4096, 4097, 8191, 8192, 8193, 12000, 16384, 65536,
					100000, 262144, 1048576, 2097151, 2097152, 2097153,
					4194304, 7000000 };
	size_t ns = sizeof(steps) / sizeof(steps[0]);
	for (int dir = 0; dir < 2; dir++) {
		size_t cur = dir ? steps[ns - 1] : steps[0];
		uint64_t seed = mt_seed ^ (0x1000u + (unsigned)dir);
		p = f_malloc(cur);
		if (!CHECK(p != NULL))
			return;
		mt_fill(p, cur, seed);
		for (size_t k = 1; k < ns; k++) {
			size_t nn = dir ? steps[ns - 1 - k] : steps[k];
			unsigned char *q = f_realloc(p, nn);
			if (!CHECK_MSG(q != NULL, "realloc(%zu -> %zu) failed", cur, nn))
				return;
			size_t keep = cur < nn ? cur : nn;
			size_t bad = mt_verify(q, keep, seed);
			CHECK_MSG(bad == (size_t)-1,
				  "realloc %zu -> %zu: byte %zu changed (%p -> %p)", cur, nn, bad,
				  (void *)p, (void *)q);
			CHECK_MSG(f_usable(q) >= nn, "usable %zu < %zu after realloc",
				  f_usable(q), nn);
			CHECK(aligned(q, nn >= 16 ? 16 : pow2_floor(nn)));
			p = q;
			cur = nn;
			seed = seed * 31 + k;
			mt_fill(p, cur, seed);
		}
		f_free(p);
	}

	/* Growing a block while other blocks sit next to it (a move). */
	void *blocks[32];
	for (int i = 0; i < 32; i++) {
		blocks[i] = f_malloc(64);
		if (blocks[i])
			mt_fill(blocks[i], 64, 500 + (unsigned)i);
	}
	for (int i = 0; i < 32; i += 2) {
		unsigned char *q = f_realloc(blocks[i], 64 + 64 * (size_t)i);
		if (CHECK(q != NULL)) {
			CHECK(mt_verify(q, 64, 500 + (unsigned)i) == (size_t)-1);
			mt_fill(q, 64 + 64 * (size_t)i, 900 + (unsigned)i);
			blocks[i] = q;
		}
	}
	for (int i = 0; i < 32; i++) {
		size_t n = i & 1 ? 64 : 64 + 64 * (size_t)i;
		CHECK(mt_verify(blocks[i], n, i & 1 ? 500 + (unsigned)i : 900 + (unsigned)i) ==
		      (size_t)-1);
		f_free(blocks[i]);
	}

	/* A failed realloc leaves the block alone (and sets ENOMEM): small,
	 * page-run and mapped blocks, sizes near SIZE_MAX (page rounding
	 * overflows there) and SIZE_MAX / 2 + 1. Each in a child, so that a
	 * block lost to a bug cannot take the rest of the test with it. */
	static const size_t olds[] = { 10, 3000, 50000, 3 * 1024 * 1024 };
	static const size_t news[] = { SIZE_MAX - 100, SIZE_MAX - 4196, SIZE_MAX / 2 + 1 };
	for (size_t k = 0; k < 4; k++)
		for (size_t j = 0; j < 3; j++)
			in_child(failed_realloc_child, olds[k], news[j], "failed realloc");
}

static void test_reallocarray(void)
{
	unsigned char *p = f_reallocarray(NULL, 10, 10);
	if (!CHECK(p != NULL))
		return;
	CHECK(f_usable(p) >= 100);
	mt_fill(p, 100, 42);
	unsigned char *q = f_reallocarray(p, 100, 100);
	if (CHECK(q != NULL)) {
		CHECK(mt_verify(q, 100, 42) == (size_t)-1);
		CHECK(f_usable(q) >= 10000);
		p = q;
	}
	/* Overflow: NULL + ENOMEM, p untouched. */
	volatile size_t big = SIZE_MAX / 4;
	struct { size_t n, s; } ov[] = { { big, 5 }, { 5, big }, { SIZE_MAX, SIZE_MAX },
					 { (size_t)1 << 33, (size_t)1 << 31 } };
	for (size_t i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
		errno = 0;
		q = f_reallocarray(p, ov[i].n, ov[i].s);
		CHECK_MSG(q == NULL && errno == ENOMEM, "reallocarray(p, %#zx, %#zx) = %p errno %d",
			  ov[i].n, ov[i].s, (void *)q, errno);
		CHECK(mt_verify(p, 100, 42) == (size_t)-1);
	}
	errno = 0;
	q = f_reallocarray(NULL, big, 8);
	CHECK(q == NULL && errno == ENOMEM);
	f_free(p);
}

static void check_aligned_block(void *p, size_t align, size_t size, const char *what)
{
	CHECK_MSG(aligned(p, align), "%s(align %zu, size %zu) = %p misaligned", what, align,
		  size, p);
	CHECK_MSG(f_usable(p) >= size, "%s(align %zu, size %zu): usable %zu", what, align,
		  size, f_usable(p));
	if (size) {
		mt_fill(p, size, align ^ size);
		CHECK(mt_verify(p, size, align ^ size) == (size_t)-1);
	}
}

static void test_aligned(void)
{
	/* posix_memalign: bad alignments are EINVAL, errno untouched. */
	static const size_t bad[] = { 0, 1, 2, 3, 4, 5, 6, 7, 12, 24, 40, 48, 96, 100,
				      4095, 4097, 3 * 4096, SIZE_MAX, SIZE_MAX / 2 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *p = (void *)0x1234;
		errno = 4321;
		int rc = f_posix_memalign(&p, bad[i], 64);
		CHECK_MSG(rc == EINVAL, "posix_memalign(align %#zx) = %d", bad[i], rc);
		CHECK_MSG(errno == 4321, "posix_memalign(align %#zx) set errno %d", bad[i], errno);
		CHECK_MSG(p == (void *)0x1234 || p == NULL,
			  "posix_memalign failure stored %p", p);
	}
	/* A valid but unsatisfiable alignment or size: ENOMEM. */
	{
		void *p = (void *)0x1234;
		int rc = f_posix_memalign(&p, SIZE_MAX / 2 + 1, 16);
		CHECK_MSG(rc == ENOMEM, "posix_memalign(align 2^63) = %d", rc);
		CHECK(p == (void *)0x1234 || p == NULL);
		p = (void *)0x1234;
		rc = f_posix_memalign(&p, 64, SIZE_MAX - 10);
		CHECK_MSG(rc == ENOMEM, "posix_memalign(64, huge) = %d", rc);
		CHECK(p == (void *)0x1234 || p == NULL);
		errno = 0;
		void *q = f_aligned_alloc(4096, SIZE_MAX - 10);
		CHECK(q == NULL && errno == ENOMEM);
		errno = 0;
		q = f_memalign(64, SIZE_MAX - 10);
		CHECK(q == NULL && errno == ENOMEM);
		errno = 0;
		q = f_valloc(SIZE_MAX - 10);
		CHECK(q == NULL && errno == ENOMEM);
		errno = 0;
		q = f_pvalloc(SIZE_MAX - 10);   /* the page rounding overflows */
		CHECK(q == NULL && errno == ENOMEM);
	}

	/* Every alignment 8 .. 16 MiB, sizes around it. */
	for (size_t align = 8; align <= 16 * MiB; align <<= 1) {
		size_t sizes[] = { 0, 1, align / 2 + 1, align - 1, align, align + 1, 3 * align,
				   100, 5000 };
		int nsizes = align >= 4 * MiB ? 6 : 9;
		void *keep[9];
		for (int k = 0; k < nsizes; k++) {
			size_t size = sizes[k];
			void *p = NULL;
			errno = 12345;
			int rc = f_posix_memalign(&p, align, size);
			CHECK_MSG(rc == 0, "posix_memalign(%zu, %zu) = %d", align, size, rc);
			CHECK(errno == 12345);
			keep[k] = NULL;
			if (rc == 0 && size == 0) {
				/* NULL or a unique freeable pointer. */
				if (p)
					CHECK(aligned(p, align));
				f_free(p);
			} else if (rc == 0 && CHECK(p != NULL)) {
				check_aligned_block(p, align, size, "posix_memalign");
				keep[k] = p;
			}
		}
		/* Blocks kept live together do not overlap: patterns intact. */
		for (int k = 0; k < nsizes; k++)
			if (keep[k]) {
				CHECK_MSG(mt_verify(keep[k], sizes[k], align ^ sizes[k]) == (size_t)-1,
					  "posix_memalign(%zu, %zu) block overwritten", align, sizes[k]);
				f_free(keep[k]);
			}

		size_t asz = align * 2;   /* a multiple, for the C11 reading */
		if (align >= 4 * MiB)
			asz = align;
		void *a = f_aligned_alloc(align, asz);
		if (CHECK_MSG(a != NULL, "aligned_alloc(%zu, %zu) failed", align, asz)) {
			check_aligned_block(a, align, asz, "aligned_alloc");
			f_free(a);
		}
		a = f_aligned_alloc(align, 100);  /* C17: any size */
		if (CHECK_MSG(a != NULL, "aligned_alloc(%zu, 100) failed", align)) {
			check_aligned_block(a, align, 100, "aligned_alloc");
			f_free(a);
		}
		a = f_memalign(align, 1000);
		if (CHECK_MSG(a != NULL, "memalign(%zu, 1000) failed", align)) {
			check_aligned_block(a, align, 1000, "memalign");
			f_free(a);
		}
		/* realloc of an aligned block keeps the contents. */
		void *r = f_memalign(align, 256);
		if (r) {
			mt_fill(r, 256, align);
			void *r2 = f_realloc(r, 20000);
			if (CHECK(r2 != NULL)) {
				CHECK(mt_verify(r2, 256, align) == (size_t)-1);
				r = r2;
			}
			f_free(r);
		}
	}
	/* memalign with an alignment that is not a power of two: glibc rounds
	 * it up to the next one. */
	static const size_t odd[] = { 24, 48, 100, 3000, 5000, 3 << 20 };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		size_t want = 1;
		while (want < odd[i])
			want <<= 1;
		void *p = f_memalign(odd[i], 200);
		if (CHECK_MSG(p != NULL, "memalign(%zu, 200) failed", odd[i])) {
			check_aligned_block(p, want, 200, "memalign");
			f_free(p);
		}
	}
	/* memalign with small alignments (1, 2, 4: at least that aligned). */
	for (size_t align = 1; align <= 4; align <<= 1) {
		void *p = f_memalign(align, 33);
		if (CHECK(p != NULL)) {
			CHECK(aligned(p, align));
			memset(p, 0, 33);
			f_free(p);
		}
	}

	/* aligned_alloc: a bad alignment is NULL + EINVAL (C17, glibc 2.38). */
	bool c17 = on_uslub;
	int maj = 0, min = 0;
	if (sscanf(gnu_get_libc_version(), "%d.%d", &maj, &min) == 2 &&
	    (maj > 2 || (maj == 2 && min >= 38)))
		c17 = true;
	if (c17) {
		static const size_t badal[] = { 0, 3, 24, 48, 100, 4097, 3 * 4096 };
		for (size_t i = 0; i < sizeof(badal) / sizeof(badal[0]); i++) {
			errno = 0;
			void *p = f_aligned_alloc(badal[i], 64);
			CHECK_MSG(p == NULL && errno == EINVAL, "aligned_alloc(%zu, 64) = %p errno %d",
				  badal[i], p, errno);
			if (p)
				f_free(p);
		}
	}

	/* valloc / pvalloc: page aligned; pvalloc rounds the size to pages. */
	size_t vs[] = { 0, 1, 100, 4095, 4096, 4097, 10000, 3 * MiB };
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		void *p = f_valloc(vs[i]);
		if (CHECK_MSG(p != NULL, "valloc(%zu) failed", vs[i])) {
			check_aligned_block(p, page_size, vs[i], "valloc");
			f_free(p);
		}
		size_t rounded = (vs[i] + page_size - 1) & ~(page_size - 1);
		p = f_pvalloc(vs[i]);
		if (CHECK_MSG(p != NULL, "pvalloc(%zu) failed", vs[i])) {
			/* The whole rounded size is the caller's. */
			check_aligned_block(p, page_size, rounded, "pvalloc");
			f_free(p);
		}
	}
}

static void test_usable_size(void)
{
	CHECK(f_usable(NULL) == 0);
	enum { N = 24 };
	void *blk[N];
	size_t use[N];
	for (size_t n = 1; n <= 20000; n += n < 1100 ? 1 : n < 9000 ? 61 : 997) {
		for (int i = 0; i < N; i++) {
			blk[i] = f_malloc(n);
			if (!CHECK_MSG(blk[i] != NULL, "malloc(%zu) failed", n)) {
				use[i] = 0;
				continue;
			}
			use[i] = f_usable(blk[i]);
			CHECK_MSG(use[i] >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, use[i]);
			/* Writing all of it leaves the neighbours alone. */
			mt_fill(blk[i], use[i], n * 131 + (unsigned)i);
		}
		for (int i = 0; i < N; i++) {
			if (!blk[i])
				continue;
			size_t bad = mt_verify(blk[i], use[i], n * 131 + (unsigned)i);
			CHECK_MSG(bad == (size_t)-1,
				  "malloc(%zu) block %d (usable %zu) overwritten at %zu", n, i,
				  use[i], bad);
			CHECK(f_usable(blk[i]) == use[i]);   /* stable */
			f_free(blk[i]);
		}
	}
}

static void test_errno_preserved(void)
{
	size_t sizes[] = { 8, 300, 5000, 70000, 3 * MiB, 40 * MiB };
	int codes[] = { EBADF, EINTR, EAGAIN, ENOENT, 9999 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++) {
			void *p = f_malloc(sizes[i]);
			if (!CHECK(p != NULL))
				continue;
			memset(p, 1, sizes[i] < 4096 ? sizes[i] : 4096);
			errno = codes[c];
			f_free(p);
			CHECK_MSG(errno == codes[c], "free(%zu bytes) changed errno %d -> %d",
				  sizes[i], codes[c], errno);
		}
	errno = EDOM;
	f_free(NULL);
	CHECK(errno == EDOM);
	/* A successful allocation leaves errno alone too (glibc does). */
	errno = EDOM;
	void *p = f_malloc(100);
	CHECK(errno == EDOM);
	f_free(p);
}

/* malloc_trim gives memory back; everything live stays intact. */
static void test_trim(void)
{
	enum { N = 2000 };
	static void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = f_malloc((size_t)(i % 40) * 100 + 1);
		if (p[i])
			mt_fill(p[i], (size_t)(i % 40) * 100 + 1, (uint64_t)i);
	}
	for (int i = 0; i < N; i++)
		if (i % 4) {
			f_free(p[i]);
			p[i] = NULL;
		}
	int rc = malloc_trim(0);
	CHECK_MSG(rc == 0 || rc == 1, "malloc_trim(0) = %d", rc);
	for (int i = 0; i < N; i++)
		if (p[i]) {
			CHECK(mt_verify(p[i], (size_t)(i % 40) * 100 + 1, (uint64_t)i) == (size_t)-1);
			f_free(p[i]);
		}
	void *q = f_malloc(1000);
	CHECK(q != NULL);
	f_free(q);
}

static void test_aliases(void)
{
	void *(*l_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_malloc");
	void (*l_free)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "__libc_free");
	void *(*l_calloc)(size_t, size_t) =
		(void *(*)(size_t, size_t))dlsym(RTLD_DEFAULT, "__libc_calloc");
	void *(*l_realloc)(void *, size_t) =
		(void *(*)(void *, size_t))dlsym(RTLD_DEFAULT, "__libc_realloc");
	void *(*l_memalign)(size_t, size_t) =
		(void *(*)(size_t, size_t))dlsym(RTLD_DEFAULT, "__libc_memalign");
	void *(*l_valloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_valloc");
	void *(*l_pvalloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_pvalloc");
	void (*l_cfree)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");

	if (on_uslub)
		CHECK(l_malloc && l_free && l_calloc && l_realloc && l_memalign && l_valloc &&
		      l_pvalloc && l_cfree);
	if (l_malloc && l_free) {
		/* __libc_malloc'd blocks freed by free, and the reverse. */
		void *a = l_malloc(123), *b = f_malloc(456);
		if (CHECK(a && b)) {
			CHECK(f_usable(a) >= 123);
			mt_fill(a, 123, 1);
			mt_fill(b, 456, 2);
			CHECK(mt_verify(a, 123, 1) == (size_t)-1);
			f_free(a);
			l_free(b);
		}
		a = l_malloc(0);
		CHECK(a != NULL);
		l_free(a);
		errno = 0;
		volatile size_t huge = SIZE_MAX;
		CHECK(l_malloc(huge) == NULL && errno == ENOMEM);
	}
	if (l_calloc && l_realloc) {
		unsigned char *c = l_calloc(100, 10);
		if (CHECK(c != NULL)) {
			size_t nz = 0;
			for (int i = 0; i < 1000; i++)
				nz += c[i];
			CHECK(nz == 0);
			mt_fill(c, 1000, 3);
			unsigned char *d = l_realloc(c, 50000);
			if (CHECK(d != NULL)) {
				CHECK(mt_verify(d, 1000, 3) == (size_t)-1);
				c = d;
			}
			f_free(c);
		}
		errno = 0;
		volatile size_t big = SIZE_MAX / 2 + 1;
		CHECK(l_calloc(big, 4) == NULL && errno == ENOMEM);
	}
	if (l_memalign) {
		void *m = l_memalign(4096, 100);
		if (CHECK(m != NULL)) {
			CHECK(aligned(m, 4096));
			memset(m, 7, 100);
			f_free(m);
		}
	}
	if (l_valloc && l_pvalloc) {
		void *v = l_valloc(10), *pv = l_pvalloc(10);
		if (CHECK(v && pv)) {
			CHECK(aligned(v, page_size) && aligned(pv, page_size));
			CHECK(f_usable(pv) >= page_size);
			memset(pv, 1, page_size);
		}
		f_free(v);
		f_free(pv);
	}
	if (l_cfree) {
		void *x = f_malloc(77);
		memset(x, 0, 77);
		l_cfree(x);
		l_cfree(NULL);
	}
}

/* ------------------------------------------------------------------------
 * Random workload over every entry point.
 * ---------------------------------------------------------------------- */
struct slot {
	unsigned char *p;
	size_t req, usable, align;
	uint64_t seed;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

static size_t random_size(struct mt_rng *r)
{
	unsigned d = (unsigned)mt_range(r, 0, 999);
	if (d < 600)
		return mt_range(r, 0, 256);
	if (d < 880)
		return mt_range(r, 257, 4096);
	if (d < 975)
		return mt_range(r, 4097, 65536);
	if (d < 997)
		return mt_range(r, 65537, 1 << 20);
	return mt_range(r, 1 << 20, 5 << 20);
}

static void check_no_overlap(struct slot *live, size_t n)
{
	qsort(live, n, sizeof(*live), cmp_slot);
	for (size_t i = 1; i < n; i++)
		CHECK_MSG(live[i - 1].p + live[i - 1].usable <= live[i].p,
			  "blocks overlap: %p+%zu and %p+%zu", (void *)live[i - 1].p,
			  live[i - 1].usable, (void *)live[i].p, live[i].usable);
}

static void test_random(void)
{
	enum { SLOTS = 3000, OPS = 250000 };
	static struct slot slots[SLOTS], live[SLOTS];
	struct mt_rng r = { mt_seed };
	mt_ksize_fn ksize = mt_uslub_ksize();
	uint64_t seq = 0;

	for (long op = 0; op < OPS; op++) {
		struct slot *s = &slots[mt_range(&r, 0, SLOTS - 1)];
		if (s->p) {
			size_t bad = mt_verify(s->p, s->usable, s->seed);
			if (!CHECK_MSG(bad == (size_t)-1,
				       "op %ld: block %p (req %zu usable %zu align %zu) corrupt at %zu",
				       op, (void *)s->p, s->req, s->usable, s->align, bad))
				return;
			if (mt_range(&r, 0, 9) < 4 && s->align <= 16) {
				/* realloc to a random size */
				size_t nn = random_size(&r);
				unsigned char *q = f_realloc(s->p, nn ? nn : 1);
				if (!CHECK_MSG(q != NULL, "realloc(%zu -> %zu) failed", s->req, nn))
					return;
				size_t keep = s->req < nn ? s->req : nn;
				bad = mt_verify(q, keep, s->seed);
				CHECK_MSG(bad == (size_t)-1, "realloc %zu -> %zu lost byte %zu",
					  s->req, nn, bad);
				s->p = q;
				s->req = nn ? nn : 1;
				s->align = s->req >= 16 ? 16 : pow2_floor(s->req);
				CHECK_MSG(aligned(q, s->align), "realloc(%zu) = %p not %zu-aligned",
					  s->req, (void *)q, s->align);
			} else {
				f_free(s->p);
				s->p = NULL;
				continue;
			}
		} else {
			size_t n = random_size(&r);
			unsigned how = (unsigned)mt_range(&r, 0, 99);
			s->align = 16;
			if (how < 50) {
				s->p = f_malloc(n);
			} else if (how < 62) {
				s->p = f_calloc(1 + n / 8, 8);
				n = (1 + n / 8) * 8;
				if (s->p) {
					size_t nz = 0;
					for (size_t i = 0; i < n; i++)
						nz += s->p[i] != 0;
					CHECK_MSG(nz == 0, "calloc(%zu) not zeroed", n);
				}
			} else if (how < 72) {
				s->p = f_realloc(NULL, n);
			} else {
				unsigned lg = (unsigned)mt_range(&r, 3, 13);
				if (mt_range(&r, 0, 99) == 0)
					lg = (unsigned)mt_range(&r, 14, 22);
				s->align = (size_t)1 << lg;
				if (how < 84) {
					void *q = NULL;
					int rc = f_posix_memalign(&q, s->align, n);
					CHECK_MSG(rc == 0, "posix_memalign(%zu, %zu) = %d", s->align,
						  n, rc);
					s->p = q;
				} else if (how < 94) {
					s->p = f_aligned_alloc(s->align, n);
				} else {
					s->p = f_memalign(s->align, n);
				}
			}
			if (!CHECK_MSG(s->p != NULL || n == 0, "allocation of %zu failed", n))
				return;
			if (!s->p) {   /* size-0 aligned allocation may be NULL */
				continue;
			}
			if (s->align == 16 && n < 16)   /* malloc, calloc, realloc */
				s->align = n ? pow2_floor(n) : 8;
			CHECK_MSG(aligned(s->p, s->align), "%p not %zu-aligned (how %u, size %zu)",
				  (void *)s->p, s->align, how, n);
			s->req = n;
		}
		s->usable = f_usable(s->p);
		CHECK_MSG(s->usable >= s->req, "usable %zu < request %zu", s->usable, s->req);
		if (ksize)
			CHECK_MSG(ksize(s->p) >= s->req, "uslub_ksize(%p) = %zu < request %zu",
				  (void *)s->p, ksize(s->p), s->req);
		s->seed = mt_seed ^ (++seq * 0x2545f4914f6cdd1dull);
		mt_fill(s->p, s->usable, s->seed);

		if (op % 25000 == 24999) {
			size_t n = 0;
			for (size_t i = 0; i < SLOTS; i++)
				if (slots[i].p)
					live[n++] = slots[i];
			check_no_overlap(live, n);
		}
	}
	for (size_t i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		if (!s->p)
			continue;
		CHECK(mt_verify(s->p, s->usable, s->seed) == (size_t)-1);
		f_free(s->p);
		s->p = NULL;
	}
}

/* ------------------------------------------------------------------------
 * uslub's own state.
 * ---------------------------------------------------------------------- */
static void test_uslub_state(void)
{
	mt_ksize_fn ksize = mt_uslub_ksize();
	mt_slabinfo_fn slabinfo = mt_uslub_slabinfo_print();
	if (!on_uslub)
		return;
	if (CHECK(ksize != NULL)) {
		size_t sz[] = { 1, 8, 100, 1000, 5000, 9000, 100000, 3 * MiB };
		for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
			void *p = f_malloc(sz[i]);
			if (!CHECK(p != NULL))
				continue;
			/* The memory is uslub's and both sizes agree. */
			CHECK_MSG(ksize(p) >= sz[i], "uslub_ksize(malloc(%zu)) = %zu", sz[i],
				  ksize(p));
			CHECK_MSG(ksize(p) == f_usable(p),
				  "uslub_ksize %zu != malloc_usable_size %zu (malloc(%zu))", ksize(p),
				  f_usable(p), sz[i]);
			f_free(p);
		}
	}
	if (CHECK(slabinfo != NULL)) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		void *keep = f_malloc(200);   /* a live malloc-224 object */
		if (f) {
			slabinfo(f, 0);
			fclose(f);
			CHECK_MSG(buf && strstr(buf, "malloc-224 ") != NULL,
				  "slabinfo has no malloc-224 cache");
		}
		free(buf);
		f_free(keep);
	}
	mt_errcount_fn errs = mt_uslub_error_count();
	if (CHECK(errs != NULL))
		CHECK_MSG(errs() == 0, "uslub_error_count() = %lu", errs());
}

/* ------------------------------------------------------------------------
 * Invalid frees, in forked children.
 * ---------------------------------------------------------------------- */
static char static_buf[256];

enum bad_kind { BAD_STACK, BAD_INTERIOR8, BAD_INTERIOR16, BAD_INTERIOR_PAGE,
		BAD_INTERIOR_MAP, BAD_STATIC, BAD_MMAP, BAD_DOUBLE_FREE,
		BAD_DOUBLE_FREE_RUN, BAD_DOUBLE_FREE_MAP, BAD_DOUBLE_FREE_APART,
		BAD_DOUBLE_FREE_LATER, BAD_DOUBLE_FREE_TINY, BAD_DOUBLE_FREE_THREAD,
		BAD_REALLOC_STACK, BAD_REALLOC_INTERIOR, BAD_REALLOC_FREED };

static const char *bad_name[] = { "free(stack)", "free(malloc(64) + 8)",
				  "free(malloc(64) + 16)", "free(malloc(64 KiB) + 4096)",
				  "free(malloc(8 MiB) + 4096)", "free(static data)",
				  "free(foreign mmap)", "free(p) twice in a row",
				  "free(malloc(64 KiB)) twice", "free(malloc(8 MiB)) twice",
				  "free(a) free(b) free(a)",
				  "free(a), 1000 mallocs and frees, free(a)",
				  "free(malloc(1)) free(b) free(a)",
				  "free(a) in a thread, then free(a)",
				  "realloc(stack)",
				  "realloc(malloc(100) + 16)",
				  "realloc(a) after free(a) free(b)" };

static void *free_in_thread(void *p)
{
	f_free(p);
	return NULL;
}

static __attribute__((noinline)) void do_bad(enum bad_kind k)
{
	char stackbuf[64];
	volatile char *vs = stackbuf;
	vs[0] = 1;
	unsigned char *p;
	switch (k) {
	case BAD_STACK:
		f_free((void *)vs);
		break;
	case BAD_INTERIOR8:
		p = f_malloc(64);
		f_free(p + 8);
		break;
	case BAD_INTERIOR16:
		p = f_malloc(64);
		f_free(p + 16);
		break;
	case BAD_INTERIOR_PAGE:
		p = f_malloc(64 * KiB);
		f_free(p + 4096);
		break;
	case BAD_INTERIOR_MAP:
		p = f_malloc(8 * MiB);
		f_free(p + 4096);
		break;
	case BAD_STATIC:
		f_free(static_buf + 64);
		break;
	case BAD_MMAP:
		p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			p[0] = 1;
			f_free(p + 4096);
		}
		break;
	case BAD_DOUBLE_FREE:
		p = f_malloc(64);
		f_free(p);
		f_free(p);
		break;
	case BAD_DOUBLE_FREE_RUN:
		p = f_malloc(64 * KiB);
		f_free(p);
		f_free(p);
		break;
	case BAD_DOUBLE_FREE_MAP:
		p = f_malloc(8 * MiB);
		f_free(p);
		f_free(p);
		break;
	case BAD_DOUBLE_FREE_APART: {
		unsigned char *b = f_malloc(64);
		p = f_malloc(64);
		f_free(p);
		f_free(b);
		f_free(p);
		break;
	}
	case BAD_DOUBLE_FREE_LATER: {
		void *keep[1000];
		p = f_malloc(48);
		f_free(p);
		for (int i = 0; i < 1000; i++)   /* other classes: p stays free */
			keep[i] = f_malloc(100 + (size_t)i % 900);
		for (int i = 0; i < 1000; i++)
			f_free(keep[i]);
		f_free(p);
		break;
	}
	case BAD_DOUBLE_FREE_TINY: {
		unsigned char *b = f_malloc(1);
		p = f_malloc(1);
		f_free(p);
		f_free(b);
		f_free(p);
		break;
	}
	case BAD_DOUBLE_FREE_THREAD: {
		pthread_t th;
		p = f_malloc(200);
		if (pthread_create(&th, NULL, free_in_thread, p) == 0 &&
		    pthread_join(th, NULL) == 0)
			f_free(p);
		else
			_exit(3);
		break;
	}
	case BAD_REALLOC_FREED: {
		unsigned char *b = f_malloc(100);
		p = f_malloc(100);
		f_free(p);
		f_free(b);
		(void)!f_realloc(p, 50);
		break;
	}
	case BAD_REALLOC_STACK:
		(void)!f_realloc((void *)vs, 100);
		break;
	case BAD_REALLOC_INTERIOR:
		p = f_malloc(100);
		(void)!f_realloc(p + 16, 200);
		break;
	}
}

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += !strncmp(l, prefix, strlen(prefix));
	return n;
}

static void expect_abort(enum bad_kind k, bool check_msg)
{
	int pfd[2];
	if (!CHECK(pipe(pfd) == 0))
		return;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		setrlimit(RLIMIT_CORE, &rl);   /* no core file for the abort */
		close(pfd[0]);
		dup2(pfd[1], 2);
		alarm(20);
		do_bad(k);
		_exit(0);   /* not detected */
	}
	close(pfd[1]);
	char msg[4096];
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], msg + len, sizeof(msg) - 1 - len)) > 0)
		len += (size_t)n;
	close(pfd[0]);
	msg[len] = 0;
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	bool is_free = strstr(bad_name[k], "free") == bad_name[k];
	CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
		  "%s: child %s %d (wanted SIGABRT); stderr: %s", bad_name[k],
		  WIFSIGNALED(st) ? "killed by signal" : "exited with",
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), msg);
	if (check_msg) {
		CHECK_MSG(strstr(msg, "uslub") != NULL, "%s: message does not name uslub: '%s'",
			  bad_name[k], msg);
		CHECK_MSG(!is_free || strstr(msg, "free") != NULL,
			  "%s: message does not mention free: '%s'", bad_name[k], msg);
		CHECK_MSG(is_free || strstr(msg, "realloc") != NULL,
			  "%s: message does not mention realloc: '%s'", bad_name[k], msg);
		bool twice = (k >= BAD_DOUBLE_FREE && k <= BAD_DOUBLE_FREE_THREAD) ||
			     k == BAD_REALLOC_FREED;
		CHECK_MSG(!twice || strstr(msg, "double free") || strstr(msg, "already free"),
			  "%s: message does not say double free: '%s'", bad_name[k], msg);
		CHECK_MSG(count_lines(msg, "uslub:") == 2,   /* the report, then "aborting" */
			  "%s: want exactly one report and the abort line: '%s'", bad_name[k], msg);
	}
}

static void test_invalid_free(void)
{
	if (on_uslub) {
		for (int k = BAD_STACK; k <= BAD_REALLOC_FREED; k++)
			expect_abort((enum bad_kind)k, true);
	} else {
		/* What glibc itself detects. */
		expect_abort(BAD_STACK, false);
		expect_abort(BAD_DOUBLE_FREE, false);
		expect_abort(BAD_DOUBLE_FREE_APART, false);
		expect_abort(BAD_REALLOC_STACK, false);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	mt_seed_init(20240611);
	on_uslub = mt_uslub_ksize() != NULL;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	printf("malloc_api: %s, seed %" PRIu64 "\n",
	       on_uslub ? "uslub" : "NOT uslub (glibc: uslub-only checks skipped)", mt_seed);

	struct { const char *name; void (*fn)(void); } tests[] = {
		{ "symbols", test_symbols },
		{ "malloc_zero_and_small", test_malloc_zero_and_small },
		{ "huge", test_huge },
		{ "calloc", test_calloc },
		{ "realloc", test_realloc },
		{ "reallocarray", test_reallocarray },
		{ "aligned", test_aligned },
		{ "usable_size", test_usable_size },
		{ "errno_preserved", test_errno_preserved },
		{ "trim", test_trim },
		{ "aliases", test_aliases },
		{ "random", test_random },
		{ "uslub_state", test_uslub_state },
		{ "invalid_free", test_invalid_free },
	};
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int before = mt_failures;
		tests[i].fn();
		printf("  %-24s %s\n", tests[i].name, mt_failures == before ? "ok" : "FAILED");
	}
	if (mt_failures) {
		printf("malloc_api: %d check(s) failed\n", mt_failures);
		return 1;
	}
	printf("malloc_api: all passed\n");
	return 0;
}
