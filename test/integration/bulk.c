/*
 * bulk: uslub_cache_alloc_bulk / uslub_cache_free_bulk / uslub_kfree_bulk.
 *   - n = 0 returns 0 and takes nothing; n = 1; n = many slabs' worth; n
 *     larger than INT_MAX returns 0 with errno EINVAL and takes nothing;
 *   - every object handed out is distinct, aligned, owned, not live
 *     already, and usable: each gets its own byte pattern, checked after
 *     all were written (an overlap shows up);
 *   - USLUB_GFP_ZERO zeroes every byte of every object (the memory was
 *     dirtied first);
 *   - free_bulk of objects from ~20 slabs, shuffled, in chunks of random
 *     sizes with NULL entries: validate == 0 and, after a flush and a
 *     shrink, no live or active object and no slab;
 *   - kfree_bulk of objects of 3 caches mixed;
 *   - invalid pointers in a free_bulk/kfree_bulk array (foreign, interior,
 *     another cache's object) are counted exactly once each in
 *     uslub_error_count() and left alone; the valid ones are freed;
 *   - bad pointers (interior, another cache's, foreign, twice in one
 *     array) first, in the middle and last of a slab run, and alone, in
 *     a default and a USLUB_CPU_SLAB cache: each reported once;
 *   - sheaf caches (power-of-two size and not): free_bulk of several
 *     sheaves' worth, slab runs interleaved or shuffled; bad pointers in
 *     the middle of long valid runs (interior, foreign, another cache's,
 *     twice in one batch, already in a sheaf, in a slab's slack past its
 *     last object) reported once each;
 *   - the counter invariant: allocs (ALLOC_FASTPATH + ALLOC_SLOWPATH +
 *     ALLOC_PCS) and frees (FREE_FASTPATH + FREE_SLOWPATH + FREE_PCS)
 *     count one per object;
 *   - all or nothing when memory runs out: with RLIMIT_AS set just above
 *     the current address space, a bulk allocation of 200 MiB returns 0
 *     with errno ENOMEM and live_objs unchanged, validate == 0; after the
 *     limit is lifted the same call succeeds (skipped in sanitizer builds,
 *     whose shadow memory makes RLIMIT_AS meaningless).
 */
#include "check.h"

#include <limits.h>
#include <sys/resource.h>

static struct rng rng;
static unsigned long err_expected;


/* ---- helpers ------------------------------------------------------------ */
static unsigned char pat(uintptr_t p, size_t i)
{
	return (unsigned char)((p >> 4) * 31 + i * 7 + 1);
}

static void fill(void *p, size_t size)
{
	unsigned char *c = p;
	for (size_t i = 0; i < size; i++)
		c[i] = pat((uintptr_t)p, i);
}

static void verify(const void *p, size_t size, int line)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < size; i++)
		if (c[i] != pat((uintptr_t)p, i))
			test_fail(__FILE__, line, "object %p byte %zu is %#x, expected %#x "
				  "(overlap or corruption)", p, i, c[i], pat((uintptr_t)p, i));
}

/* Objects just handed out: non-NULL, owned, aligned, not already live;
 * then filled with their pattern and, once all are written, verified. */
static void accept_objs(void **p, size_t n, size_t size, size_t align, int line)
{
	for (size_t i = 0; i < n; i++) {
		if (!p[i])
			test_fail(__FILE__, line, "bulk object %zu of %zu is NULL", i, n);
		if (!uslub_owns(p[i]))
			test_fail(__FILE__, line, "bulk object %p not owned by uslub", p[i]);
		if ((uintptr_t)p[i] % align)
			test_fail(__FILE__, line, "bulk object %p not aligned to %zu", p[i], align);
		if (!set_insert((uintptr_t)p[i]))
			test_fail(__FILE__, line, "bulk object %p (%zu of %zu) handed out twice",
				  p[i], i, n);
	}
	for (size_t i = 0; i < n; i++)
		fill(p[i], size);
	for (size_t i = 0; i < n; i++)
		verify(p[i], size, line);
}

static void forget_objs(void **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			set_remove((uintptr_t)p[i]);
}

static void shuffle(void **v, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rng_below(&rng, i);
		void *t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

static void check_counts(uslub_cache_t *s, uint64_t allocs, uint64_t frees, int line)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	if (stat_allocs(st) != allocs)
		test_fail(__FILE__, line,
			  "%s: ALLOC_FASTPATH %" PRIu64 " + ALLOC_SLOWPATH %" PRIu64
			  " + ALLOC_PCS %" PRIu64 " != %" PRIu64 " allocs",
			  uslub_cache_name(s), st[USLUB_ALLOC_FASTPATH], st[USLUB_ALLOC_SLOWPATH],
			  st[USLUB_ALLOC_PCS], allocs);
	if (stat_frees(st) != frees)
		test_fail(__FILE__, line,
			  "%s: FREE_FASTPATH %" PRIu64 " + FREE_SLOWPATH %" PRIu64
			  " + FREE_PCS %" PRIu64 " != %" PRIu64 " frees",
			  uslub_cache_name(s), st[USLUB_FREE_FASTPATH], st[USLUB_FREE_SLOWPATH],
			  st[USLUB_FREE_PCS], frees);
	struct uslub_slabinfo si = slabinfo_get(s);
	if (si.live_objs != allocs - frees)
		test_fail(__FILE__, line, "%s: live_objs %lu, expected %" PRIu64,
			  uslub_cache_name(s), si.live_objs, allocs - frees);
	long v = uslub_cache_validate(s);
	if (v != 0)
		test_fail(__FILE__, line, "%s: validate found %ld inconsistencies",
			  uslub_cache_name(s), v);
	if (uslub_error_count() != err_expected)
		test_fail(__FILE__, line, "error count %lu, expected %lu", uslub_error_count(),
			  err_expected);
}

/* Everything freed: after a flush and a shrink no object is active and
 * no slab is left. */
static void check_empty(uslub_cache_t *s, int line)
{
	uslub_flush_thread();
	uslub_cache_shrink(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	if (si.live_objs || si.active_objs || si.num_slabs)
		test_fail(__FILE__, line, "%s: after freeing everything, flush and shrink: "
			  "live %lu active %lu slabs %lu", uslub_cache_name(s), si.live_objs,
			  si.active_objs, si.num_slabs);
	long v = uslub_cache_validate(s);
	if (v != 0)
		test_fail(__FILE__, line, "%s: validate found %ld inconsistencies",
			  uslub_cache_name(s), v);
}

/* ---- tests -------------------------------------------------------------- */

/* n = 0, 1, many; EINVAL; GFP_ZERO. */
static void test_sizes(void)
{
	const size_t size = 200;
	uslub_cache_t *s = uslub_cache_create("bulk-sizes", size, 0, 0, NULL);
	CHECK(s);
	uint64_t allocs = 0, frees = 0;
	struct uslub_slabinfo si = slabinfo_get(s);
	const size_t ops = si.objs_per_slab;
	size_t cap = ops * 12 + 3;
	void **p = calloc(cap, sizeof(*p));
	CHECK(p);

	/* n = 0: nothing taken */
	p[0] = (void *)0x1;
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 0, p), 0);
	CHECK(p[0] == (void *)0x1);
	check_counts(s, allocs, frees, __LINE__);
	uslub_cache_free_bulk(s, 0, p);      /* n = 0 free: nothing happens */
	uslub_kfree_bulk(0, p);
	check_counts(s, allocs, frees, __LINE__);

	/* n > INT_MAX: EINVAL, nothing taken, p untouched */
	void *small[4] = { (void *)0x11, (void *)0x22, (void *)0x33, (void *)0x44 };
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, (size_t)INT_MAX + 1, small), 0);
	CHECK_MSG(errno == EINVAL, "alloc_bulk(n = INT_MAX + 1): errno %d, expected EINVAL", errno);
	CHECK(small[0] == (void *)0x11 && small[3] == (void *)0x44);
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, SIZE_MAX, small), 0);
	CHECK_MSG(errno == EINVAL, "alloc_bulk(n = SIZE_MAX): errno %d, expected EINVAL", errno);
	check_counts(s, allocs, frees, __LINE__);

	/* n = 1 */
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 1, p), 1);
	allocs++;
	accept_objs(p, 1, size, sizeof(void *), __LINE__);
	check_counts(s, allocs, frees, __LINE__);
	forget_objs(p, 1);
	uslub_cache_free_bulk(s, 1, p);
	frees++;
	check_counts(s, allocs, frees, __LINE__);

	/* growing n, up to 12 slabs' worth, with single allocs in between so
	 * the cpu freelist, partial slabs and new slabs are all sources */
	size_t ns[] = { 2, 7, ops - 1, ops, ops + 1, 3 * ops + 5, 12 * ops + 3 };
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];
		void *single[3];
		for (int i = 0; i < 3; i++) {
			single[i] = uslub_cache_alloc(s, 0);
			CHECK(single[i]);
			allocs++;
		}
		accept_objs(single, 3, size, sizeof(void *), __LINE__);
		uslub_cache_free(s, single[1]);  /* a hole on the cpu freelist */
		frees++;
		set_remove((uintptr_t)single[1]);
		int got = uslub_cache_alloc_bulk(s, 0, n, p);
		CHECK_MSG(got == (int)n, "alloc_bulk(%zu) returned %d (%s)", n, got, strerror(errno));
		allocs += n;
		accept_objs(p, n, size, sizeof(void *), __LINE__);
		verify(single[0], size, __LINE__);
		verify(single[2], size, __LINE__);
		check_counts(s, allocs, frees, __LINE__);
		forget_objs(p, n);
		uslub_cache_free_bulk(s, n, p);
		frees += n;
		set_remove((uintptr_t)single[0]);
		set_remove((uintptr_t)single[2]);
		uslub_cache_free(s, single[0]);
		uslub_cache_free(s, single[2]);
		frees += 2;
		check_counts(s, allocs, frees, __LINE__);
	}
	check_empty(s, __LINE__);

	/* GFP_ZERO: dirty many slabs' worth, free, then bulk-zero them back */
	size_t n = 5 * ops + 9;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, n, p), (int)n);
	allocs += n;
	for (size_t i = 0; i < n; i++)
		memset(p[i], 0xee, size);
	uslub_cache_free_bulk(s, n, p);
	frees += n;
	for (int round = 0; round < 2; round++) {
		CHECK_EQ(uslub_cache_alloc_bulk(s, USLUB_GFP_ZERO, n, p), (int)n);
		allocs += n;
		for (size_t i = 0; i < n; i++) {
			const unsigned char *c = p[i];
			for (size_t b = 0; b < size; b++)
				CHECK_MSG(c[b] == 0, "GFP_ZERO bulk object %zu (%p) byte %zu is %#x", i,
					  p[i], b, c[b]);
		}
		accept_objs(p, n, size, sizeof(void *), __LINE__);
		check_counts(s, allocs, frees, __LINE__);
		forget_objs(p, n);
		uslub_cache_free_bulk(s, n, p);
		frees += n;
	}
	check_counts(s, allocs, frees, __LINE__);
	check_empty(s, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
}

/* Alignment and a ctor: bulk objects are constructed and aligned. */
#define CTOR_MAGIC 0xb01cc7012345678full
static void ctor(void *p)
{
	uint64_t m = CTOR_MAGIC;
	memcpy(p, &m, sizeof(m));
}

static void test_align_ctor(void)
{
	const size_t sizes[] = { 8, 24, 100, 1000, 5000 };
	const size_t aligns[] = { 0, 16, 64, 256, 512 };
	for (size_t k = 0; k < 5; k++) {
		size_t size = sizes[k], align = aligns[k];
		uslub_cache_t *s = uslub_cache_create("bulk-align", size, align, 0,
						      size >= 16 ? ctor : NULL);
		CHECK(s);
		size_t ops = slabinfo_get(s).objs_per_slab;
		size_t n = 3 * ops + 1;
		void **p = calloc(n, sizeof(*p));
		CHECK(p);
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, n, p), (int)n);
		for (size_t i = 0; i < n; i++) {
			if (size >= 16) {
				uint64_t m;
				memcpy(&m, p[i], sizeof(m));
				CHECK_MSG(m == CTOR_MAGIC, "bulk object %p of a ctor cache not "
					  "constructed", p[i]);
			}
		}
		/* keep the constructed word intact: pattern from byte 8 on */
		for (size_t i = 0; i < n; i++)
			CHECK(set_insert((uintptr_t)p[i]));
		for (size_t i = 0; i < n; i++) {
			CHECK_MSG((uintptr_t)p[i] % (align ? align : sizeof(void *)) == 0,
				  "object %p of size %zu not aligned to %zu", p[i], size, align);
			if (size > 8)
				fill((char *)p[i] + 8, size - 8);
		}
		for (size_t i = 0; i < n; i++)
			if (size > 8)
				verify((char *)p[i] + 8, size - 8, __LINE__);
		forget_objs(p, n);
		uslub_cache_free_bulk(s, n, p);
		check_counts(s, n, n, __LINE__);
		check_empty(s, __LINE__);
		CHECK_EQ(uslub_cache_destroy(s), 0);
		free(p);
	}
}

/* ~20 slabs' worth, shuffled, freed in random chunks with NULL entries. */
static void test_free_interleaved(void)
{
	const size_t size = 96;
	uslub_cache_t *s = uslub_cache_create("bulk-interleaved", size, 0, 0, NULL);
	CHECK(s);
	size_t ops = slabinfo_get(s).objs_per_slab;
	uint64_t allocs = 0, frees = 0;
	for (int round = 0; round < 4; round++) {
		size_t n = 20 * ops + (size_t)round * 7;
		void **v = calloc(n, sizeof(*v));
		void **chunk = calloc(n * 2 + 1, sizeof(*chunk));
		CHECK(v && chunk);
		/* half by single allocs, half by bulk, in random pieces */
		size_t have = 0;
		while (have < n) {
			if (rng_below(&rng, 2)) {
				v[have] = uslub_cache_alloc(s, 0);
				CHECK(v[have]);
				accept_objs(&v[have], 1, size, sizeof(void *), __LINE__);
				have++;
				allocs++;
			} else {
				size_t k = 1 + rng_below(&rng, 3 * ops);
				if (k > n - have)
					k = n - have;
				CHECK_EQ(uslub_cache_alloc_bulk(s, 0, k, &v[have]), (int)k);
				accept_objs(&v[have], k, size, sizeof(void *), __LINE__);
				have += k;
				allocs += k;
			}
		}
		for (size_t i = 0; i < n; i++)
			verify(v[i], size, __LINE__);
		check_counts(s, allocs, frees, __LINE__);
		CHECK(slabinfo_get(s).num_slabs >= 20);
		shuffle(v, n);
		size_t done = 0;
		while (done < n) {
			size_t k = 1 + rng_below(&rng, round == 3 ? 2 * ops : 40);
			if (k > n - done)
				k = n - done;
			/* copy with NULLs sprinkled in */
			size_t m = 0;
			for (size_t i = 0; i < k; i++) {
				if (rng_below(&rng, 4) == 0)
					chunk[m++] = NULL;
				chunk[m++] = v[done + i];
			}
			if (rng_below(&rng, 3) == 0)
				chunk[m++] = NULL;
			for (size_t i = 0; i < m; i++)
				if (chunk[i])
					verify(chunk[i], size, __LINE__);
			forget_objs(chunk, m);
			if (rng_below(&rng, 4) == 0)
				uslub_kfree_bulk(m, chunk);
			else
				uslub_cache_free_bulk(s, m, chunk);
			done += k;
			frees += k;
			/* the objects not yet freed are intact */
			if (rng_below(&rng, 8) == 0) {
				for (size_t i = done; i < n; i++)
					verify(v[i], size, __LINE__);
				check_counts(s, allocs, frees, __LINE__);
			}
		}
		check_counts(s, allocs, frees, __LINE__);
		check_empty(s, __LINE__);
		free(v);
		free(chunk);
	}
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* kfree_bulk over 3 caches mixed; free_bulk(NULL, ...) the same. */
static void test_kfree_bulk_mixed(void)
{
	const size_t sizes[3] = { 32, 512, 3000 };
	uslub_cache_t *c[3];
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bulk-mixed-%zu", sizes[i]);
		c[i] = uslub_cache_create(name, sizes[i], 0, 0, NULL);
		CHECK(c[i]);
	}
	uint64_t allocs[3] = { 0 }, frees[3] = { 0 };
	for (int round = 0; round < 6; round++) {
		size_t n = 3000;
		void **v = calloc(n, sizeof(*v));
		int *which = calloc(n, sizeof(*which));
		CHECK(v && which);
		for (size_t i = 0; i < n;) {
			int k = (int)rng_below(&rng, 3);
			size_t m = 1 + rng_below(&rng, 50);
			if (m > n - i)
				m = n - i;
			CHECK_EQ(uslub_cache_alloc_bulk(c[k], 0, m, &v[i]), (int)m);
			accept_objs(&v[i], m, sizes[k], sizeof(void *), __LINE__);
			for (size_t j = 0; j < m; j++)
				which[i + j] = k;
			allocs[k] += m;
			i += m;
		}
		/* shuffle objects and their cache tags together */
		for (size_t i = n; i > 1; i--) {
			size_t j = rng_below(&rng, i);
			void *t = v[i - 1];
			v[i - 1] = v[j];
			v[j] = t;
			int w = which[i - 1];
			which[i - 1] = which[j];
			which[j] = w;
		}
		for (size_t i = 0; i < n; i++)
			verify(v[i], sizes[which[i]], __LINE__);
		for (size_t i = 0; i < n; i++)
			frees[which[i]]++;
		forget_objs(v, n);
		if (round % 2)
			uslub_kfree_bulk(n, v);
		else
			uslub_cache_free_bulk(NULL, n, v);
		for (int k = 0; k < 3; k++)
			check_counts(c[k], allocs[k], frees[k], __LINE__);
		free(v);
		free(which);
	}
	for (int k = 0; k < 3; k++) {
		CHECK(allocs[k] > 0);
		check_empty(c[k], __LINE__);
		CHECK_EQ(uslub_cache_destroy(c[k]), 0);
	}
}

/* Invalid pointers among valid ones: each counted once, left alone. */
static void test_invalid_in_array(void)
{
	const size_t size = 128;
	uslub_cache_t *s = uslub_cache_create("bulk-invalid-a", size, 0, 0, NULL);
	uslub_cache_t *t = uslub_cache_create("bulk-invalid-b", size, 0, 0, NULL);
	CHECK(s && t);
	enum { N = 300 };
	void *v[N], *w[8];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, N, v), N);
	CHECK_EQ(uslub_cache_alloc_bulk(t, 0, 8, w), 8);
	accept_objs(v, N, size, sizeof(void *), __LINE__);
	accept_objs(w, 8, size, sizeof(void *), __LINE__);
	uint64_t sa = N, sf = 0, ta = 8, tf = 0;
	void *heap = malloc(size);
	int stack_obj[8];
	CHECK(heap);

	for (int api = 0; api < 2; api++) {
		/* v[0..99] (api 0) or v[100..199] (api 1) valid, mixed with:
		 * malloc'd, stack, interior (obj+1, obj+size/2 of objects that
		 * stay live), and for free_bulk(s) an object of cache t */
		size_t base = (size_t)api * 100;
		void *arr[130];
		size_t m = 0, bad = 0;
		void *interior_owner[2] = { v[250 + api * 2], v[251 + api * 2] };
		for (size_t i = 0; i < 100; i++) {
			arr[m++] = v[base + i];
			if (i == 10) {
				arr[m++] = heap;
				bad++;
			} else if (i == 20) {
				arr[m++] = stack_obj;
				bad++;
			} else if (i == 30) {
				arr[m++] = (char *)interior_owner[0] + 1;
				bad++;
			} else if (i == 40) {
				arr[m++] = (char *)interior_owner[1] + size / 2;
				bad++;
			} else if (i == 50) {
				arr[m++] = NULL;             /* skipped, not an error */
			} else if (i == 60 && api == 0) {
				arr[m++] = w[0];             /* t's object freed into s */
				bad++;
			} else if (i == 99) {
				arr[m++] = (char *)interior_owner[0] + size - 1;
				bad++;
			}
		}
		unsigned long e0 = uslub_error_count();
		struct uslub_slabinfo ti0 = slabinfo_get(t);
		forget_objs(&v[base], 100);
		if (api == 0)
			uslub_cache_free_bulk(s, m, arr);
		else
			uslub_kfree_bulk(m, arr);
		unsigned long e1 = uslub_error_count();
		CHECK_MSG(e1 - e0 == bad, "%s with %zu invalid pointers: error count +%lu",
			  api ? "kfree_bulk" : "free_bulk", bad, e1 - e0);
		err_expected = e1;
		sf += 100;
		check_counts(s, sa, sf, __LINE__);
		struct uslub_slabinfo ti1 = slabinfo_get(t);
		CHECK_EQU(ti1.live_objs, ti0.live_objs);   /* t's object not freed */
		check_counts(t, ta, tf, __LINE__);
		/* the objects behind the interior pointers are intact and live */
		verify(interior_owner[0], size, __LINE__);
		verify(interior_owner[1], size, __LINE__);
		verify(w[0], size, __LINE__);
	}
	/* an array of nothing but invalid pointers and NULLs */
	void *junk[5] = { heap, NULL, stack_obj, (char *)v[299] + 8, NULL };
	unsigned long e0 = uslub_error_count();
	uslub_cache_free_bulk(s, 5, junk);
	CHECK_EQU(uslub_error_count() - e0, 3);
	err_expected += 3;
	check_counts(s, sa, sf, __LINE__);

	for (size_t i = 200; i < N; i++)
		verify(v[i], size, __LINE__);
	forget_objs(&v[200], N - 200);
	uslub_cache_free_bulk(s, N - 200, &v[200]);
	sf += N - 200;
	forget_objs(w, 8);
	uslub_kfree_bulk(8, w);
	tf += 8;
	check_counts(s, sa, sf, __LINE__);
	check_counts(t, ta, tf, __LINE__);
	check_empty(s, __LINE__);
	check_empty(t, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(t), 0);
	free(heap);
}

/*
 * Sheaf caches (a power-of-two size and one that is not): bulk frees of
 * many sheaves' worth, in slab runs interleaved, with bad pointers in the
 * middle of long runs of valid ones; each bad one is reported exactly
 * once and every valid one is freed.
 */
static void test_sheaf_runs(size_t size)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 30;
	char name[32];
	snprintf(name, sizeof(name), "bulk-sheaf-%zu", size);
	uslub_cache_t *s = uslub_cache_create_args(name, size, &args, 0);
	uslub_cache_t *t = uslub_cache_create("bulk-sheaf-other", size, 0, 0, NULL);
	CHECK(s && t);
	size_t cap = uslub_cache_sheaf_capacity(s), ops = slabinfo_get(s).objs_per_slab;
	size_t n = 6 * (cap ? cap : 30) + 7;
	enum { M = 300 };
	if (n < 6 * ops)
		n = 6 * ops;
	void **v = calloc(n + M, sizeof(*v)), **w = calloc(n, sizeof(*w));
	void *arr[400];
	CHECK(v && w);
	uint64_t allocs = 0, frees = 0;

	for (int round = 0; round < 3; round++) {
		/* n > capacity: several sheaves each way, then everything
		 * back in one call, in slab order, reversed or interleaved */
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, n, v), (int)n);
		accept_objs(v, n, size, sizeof(void *), __LINE__);
		allocs += n;
		check_counts(s, allocs, frees, __LINE__);
		if (round == 1) {
			for (size_t i = 0; i < n; i++)
				w[i] = v[n - 1 - i];
		} else {
			/* two halves interleaved: runs of one object, slab
			 * to slab */
			size_t h = n / 2, k = 0;
			for (size_t i = 0; i < h; i++) {
				w[k++] = v[i];
				w[k++] = v[h + i];
			}
			while (k < n) {
				w[k] = v[k];
				k++;
			}
			if (round == 2)
				shuffle(w, n);
		}
		forget_objs(w, n);
		uslub_cache_free_bulk(s, n, w);
		frees += n;
		check_counts(s, allocs, frees, __LINE__);
	}

	/* bad pointers in the middle of long runs of valid ones */
	void *tw[2], *heap = malloc(size);
	CHECK(heap);
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, M, v), M);
	CHECK_EQ(uslub_cache_alloc_bulk(t, 0, 2, tw), 2);
	accept_objs(v, M, size, sizeof(void *), __LINE__);
	accept_objs(tw, 2, size, sizeof(void *), __LINE__);
	allocs += M;
	void *live = v[M - 1];                    /* stays live: its interior is freed */
	void *early = v[M - 2];                   /* freed alone first: in a sheaf */
	set_remove((uintptr_t)early);
	uslub_cache_free(s, early);
	frees++;
	check_counts(s, allocs, frees, __LINE__);
	size_t m = 0, bad = 0, good = 0;
	/* the slack after the last object of v[0]'s slab, when there is
	 * some (sizes that do not divide the slab): inside the slab, in no
	 * object */
	struct uslub_slabinfo si = slabinfo_get(s);
	size_t slab_bytes = (size_t)si.pages_per_slab * 4096;
	uintptr_t slab0 = (uintptr_t)v[0] & ~(uintptr_t)(slab_bytes - 1);
	void *tail = si.objs_per_slab * size < slab_bytes ?
		(void *)(slab0 + si.objs_per_slab * size) : NULL;
	for (size_t i = 0; i < M - 2; i++) {
		arr[m++] = v[i];
		good++;
		if (i == 40) {
			arr[m++] = (char *)live + 8;      /* interior */
			bad++;
		} else if (i == 80) {
			arr[m++] = heap;                  /* foreign */
			bad++;
		} else if (i == 120) {
			arr[m++] = tw[0];                 /* another cache's object */
			bad++;
		} else if (i == 160) {
			arr[m++] = v[100];                /* twice in this batch */
			bad++;
		} else if (i == 200) {
			arr[m++] = early;                 /* already in a sheaf */
			bad++;
		} else if (i == 240) {
			arr[m++] = NULL;                  /* skipped */
		} else if (i == 260 && tail) {
			arr[m++] = tail;                  /* past a slab's last object */
			bad++;
		}
	}
	unsigned long e0 = uslub_error_count();
	forget_objs(v, M - 2);
	uslub_cache_free_bulk(s, m, arr);
	unsigned long e1 = uslub_error_count();
	CHECK_MSG(e1 - e0 == bad, "%zu bad pointers among %zu valid: error count +%lu", bad, good,
		  e1 - e0);
	err_expected = e1;
	frees += good;
	check_counts(s, allocs, frees, __LINE__);
	verify(live, size, __LINE__);
	verify(tw[0], size, __LINE__);
	forget_objs(&live, 1);
	uslub_cache_free(s, live);
	frees++;
	forget_objs(tw, 2);
	uslub_cache_free_bulk(t, 2, tw);
	check_counts(s, allocs, frees, __LINE__);
	check_counts(t, 2, 2, __LINE__);
	check_empty(s, __LINE__);
	check_empty(t, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(t), 0);
	free(heap);
	free(v);
	free(w);
}

/* Bulk allocations and frees interleaved with single ones, several caches
 * kept live at once: nothing overlaps. */
static void test_mixed_live(void)
{
	uslub_cache_t *s = uslub_cache_create("bulk-live", 56, 0, 0, NULL);
	CHECK(s);
	enum { CAP = 6000 };
	void **live = calloc(CAP, sizeof(*live));
	void **tmp = calloc(CAP, sizeof(*tmp));
	CHECK(live && tmp);
	size_t n = 0;
	uint64_t allocs = 0, frees = 0;
	long rounds = scaled(2000);
	for (long r = 0; r < rounds; r++) {
		uint64_t op = rng_below(&rng, 6);
		if (op == 0 && n < CAP) {
			live[n] = uslub_cache_alloc(s, 0);
			accept_objs(&live[n], 1, 56, sizeof(void *), __LINE__);
			n++;
			allocs++;
		} else if (op <= 2 && n < CAP) {
			size_t k = 1 + rng_below(&rng, 200);
			if (k > CAP - n)
				k = CAP - n;
			CHECK_EQ(uslub_cache_alloc_bulk(s, rng_below(&rng, 2) ? USLUB_GFP_ZERO : 0, k,
							 &live[n]), (int)k);
			accept_objs(&live[n], k, 56, sizeof(void *), __LINE__);
			n += k;
			allocs += k;
		} else if (op == 3 && n) {
			size_t i = rng_below(&rng, n);
			verify(live[i], 56, __LINE__);
			set_remove((uintptr_t)live[i]);
			uslub_cache_free(s, live[i]);
			live[i] = live[--n];
			frees++;
		} else if (n) {
			/* free a random subset in one call */
			size_t k = 1 + rng_below(&rng, n < 300 ? n : 300);
			for (size_t j = 0; j < k; j++) {
				size_t i = rng_below(&rng, n);
				tmp[j] = live[i];
				live[i] = live[--n];
				verify(tmp[j], 56, __LINE__);
			}
			forget_objs(tmp, k);
			uslub_cache_free_bulk(s, k, tmp);
			frees += k;
		}
		if (r % 250 == 0) {
			for (size_t i = 0; i < n; i++)
				verify(live[i], 56, __LINE__);
			check_counts(s, allocs, frees, __LINE__);
		}
		if (r % 700 == 0)
			uslub_flush_thread();
	}
	for (size_t i = 0; i < n; i++)
		verify(live[i], 56, __LINE__);
	forget_objs(live, n);
	uslub_cache_free_bulk(s, n, live);
	frees += n;
	check_counts(s, allocs, frees, __LINE__);
	check_empty(s, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(live);
	free(tmp);
}

/* All or nothing when the address space runs out (RLIMIT_AS). */
static void test_rlimit_all_or_nothing(void)
{
#ifdef SANITIZER_BUILD
	printf("rlimit: skipped (sanitizer build)\n");
	return;
#else
	const size_t size = 64 * 1024;
	const size_t n = (200u << 20) / size;   /* 200 MiB, more than the 64 MiB
						 * reservation uslub grows by */
	uslub_cache_t *s = uslub_cache_create("bulk-rlimit", size, 0, 0, NULL);
	CHECK(s);
	void **p = calloc(n, sizeof(*p));
	CHECK(p);
	/* a few objects live before, so there is a partially used slab */
	void *pre[3];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 3, pre), 3);
	struct rlimit old;
	CHECK(getrlimit(RLIMIT_AS, &old) == 0);
	long vm = vm_size_kib();
	if (vm <= 0) {
		printf("rlimit: skipped (no VmSize)\n");
		uslub_cache_free_bulk(s, 3, pre);
		CHECK_EQ(uslub_cache_destroy(s), 0);
		free(p);
		return;
	}
	struct rlimit lim = old;
	lim.rlim_cur = (rlim_t)vm * 1024 + (24u << 20);
	if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur)
		lim.rlim_cur = old.rlim_cur;
	CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
	struct uslub_slabinfo a = slabinfo_get(s);
	uint64_t st0[USLUB_NR_STATS];
	uslub_cache_stats(s, st0);
	errno = 0;
	int got = uslub_cache_alloc_bulk(s, USLUB_GFP_NOWARN, n, p);
	int e = errno;
	struct uslub_slabinfo b = slabinfo_get(s);
	long v = uslub_cache_validate(s);
	uint64_t st1[USLUB_NR_STATS];
	uslub_cache_stats(s, st1);
	CHECK(setrlimit(RLIMIT_AS, &old) == 0);
	CHECK_MSG(got == 0, "alloc_bulk of 200 MiB under RLIMIT_AS +24 MiB returned %d", got);
	CHECK_MSG(e == ENOMEM, "failed alloc_bulk: errno %d, expected ENOMEM", e);
	CHECK_MSG(b.live_objs == a.live_objs, "failed alloc_bulk changed live_objs %lu -> %lu",
		  a.live_objs, b.live_objs);
	CHECK_MSG(stat_allocs(st1) == stat_allocs(st0) && stat_frees(st1) == stat_frees(st0),
		  "failed alloc_bulk moved the alloc/free counters: allocs %" PRIu64 " -> %" PRIu64
		  ", frees %" PRIu64 " -> %" PRIu64, stat_allocs(st0), stat_allocs(st1),
		  stat_frees(st0), stat_frees(st1));
	CHECK_EQ(v, 0);
	/* it did take objects (new slabs were made) before running out */
	CHECK_MSG(st1[USLUB_ALLOC_SLAB] > st0[USLUB_ALLOC_SLAB],
		  "the failed alloc_bulk made no slab at all (ALLOC_SLAB %" PRIu64 ")",
		  st1[USLUB_ALLOC_SLAB]);
	/* every object taken was given back: after flush + shrink only the
	 * slabs of the 3 live objects are left */
	uslub_flush_thread();
	uslub_cache_shrink(s);
	b = slabinfo_get(s);
	CHECK_EQU(b.active_objs, 3);
	CHECK_EQU(b.partial_free, b.num_objs - 3);
	CHECK_MSG(b.num_slabs >= 1 && b.num_slabs <= 3,
		  "%lu slabs left after a failed bulk allocation (3 objects live, %u per slab)",
		  b.num_slabs, b.objs_per_slab);
	/* limit lifted: the same call succeeds */
	got = uslub_cache_alloc_bulk(s, 0, n, p);
	CHECK_MSG(got == (int)n, "alloc_bulk after the limit was lifted returned %d (%s)", got,
		  strerror(errno));
	for (size_t i = 0; i < n; i++)
		((volatile char *)p[i])[i % size] = 1;
	uslub_cache_free_bulk(s, n, p);
	uslub_cache_free_bulk(s, 3, pre);
	check_counts(s, n + 3, n + 3, __LINE__);
	check_empty(s, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	uslub_trim();
	free(p);
	printf("rlimit: ok\n");
#endif
}

/*
 * Bad pointers at every position of a slab run (first, middle, last) and
 * alone, in free_bulk arrays: an interior pointer of a live object,
 * another cache's object, a pointer uslub does not own, and an object
 * twice in the array (the second is the double free). Each is reported
 * exactly once, nothing is stored for it, and every valid object of the
 * array is freed: counts, validate and the live objects' bytes checked
 * after each call. A USLUB_CPU_SLAB cache sends what its cpu slab does
 * not hold through the slab runs of the detached path; a default cache
 * through the sheaves' bulk push first.
 */
static void test_bad_positions(unsigned int flags)
{
	const size_t size = 64;
	uslub_cache_t *s = uslub_cache_create(flags ? "bulk-pos-cpu" : "bulk-pos", size, 0,
					      flags, NULL);
	uslub_cache_t *t = uslub_cache_create("bulk-pos-other", size, 0, 0, NULL);
	CHECK(s && t);
	struct uslub_slabinfo si = slabinfo_get(s);
	const uintptr_t slab_bytes = (uintptr_t)si.pages_per_slab * USLUB_PAGE_SIZE;
	void *keep[2], *other[1];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 2, keep), 2);
	CHECK_EQ(uslub_cache_alloc_bulk(t, 0, 1, other), 1);
	accept_objs(keep, 2, size, sizeof(void *), __LINE__);
	accept_objs(other, 1, size, sizeof(void *), __LINE__);
	uint64_t sa = 2, sf = 0;
	int stack_obj[4];
	enum { K = 24, RUN = 5 };
	static const char *const where[] = { "first", "middle", "last", "alone" };
	static const char *const what[] = { "interior", "other cache", "foreign", "twice" };

	for (int kind = 0; kind < 4; kind++) {
		for (int pos = 0; pos < 4; pos++) {
			void *v[K], *run[K], *rest[K];
			CHECK_EQ(uslub_cache_alloc_bulk(s, 0, K, v), K);
			accept_objs(v, K, size, sizeof(void *), __LINE__);
			sa += K;
			/* the largest group of one slab is the run */
			size_t best = 0, nbest = 0;
			for (size_t i = 0; i < K; i++) {
				size_t c = 0;
				for (size_t j = 0; j < K; j++)
					c += ((uintptr_t)v[i] & ~(slab_bytes - 1)) ==
					     ((uintptr_t)v[j] & ~(slab_bytes - 1));
				if (c > nbest) {
					nbest = c;
					best = i;
				}
			}
			CHECK(nbest >= 2);
			size_t nr = 0, nrest = 0;
			uintptr_t key = (uintptr_t)v[best] & ~(slab_bytes - 1);
			for (size_t i = 0; i < K; i++) {
				if (((uintptr_t)v[i] & ~(slab_bytes - 1)) == key && nr < RUN)
					run[nr++] = v[i];
				else
					rest[nrest++] = v[i];
			}
			void *bad = kind == 0 ? (char *)keep[0] + 8 :
				    kind == 1 ? other[0] :
				    kind == 2 ? (void *)stack_obj :
				    run[pos == 0 ? nr - 1 : 0];     /* twice: its other copy */
			void *arr[K + 2];
			size_t m = 0;
			if (pos == 3) {
				/* alone: the bad pointer, then the run elsewhere */
				if (kind == 3) {
					/* an object freed before, alone */
					uslub_cache_free(s, run[0]);
					sf++;
					forget_objs(run, 1);
					memmove(run, run + 1, --nr * sizeof(void *));
				}
				arr[m++] = bad;
				unsigned long e0 = uslub_error_count();
				uslub_cache_free_bulk(s, 1, arr);
				CHECK_MSG(uslub_error_count() == e0 + 1, "%s alone: error count +%lu",
					  what[kind], uslub_error_count() - e0);
				err_expected = e0 + 1;
				m = 0;
				for (size_t i = 0; i < nr; i++)
					arr[m++] = run[i];
				for (size_t i = 0; i < nrest; i++)
					arr[m++] = rest[i];
				forget_objs(arr, m);
				uslub_cache_free_bulk(s, m, arr);
				sf += m;
				check_counts(s, sa, sf, __LINE__);
				continue;
			}
			size_t at = pos == 0 ? 0 : pos == 1 ? nr / 2 : nr;
			for (size_t i = 0; i < nr; i++) {
				if (i == at)
					arr[m++] = bad;
				arr[m++] = run[i];
			}
			if (at == nr)
				arr[m++] = bad;
			for (size_t i = 0; i < nrest; i++)
				arr[m++] = rest[i];
			forget_objs(run, nr);
			forget_objs(rest, nrest);
			unsigned long e0 = uslub_error_count();
			uslub_cache_free_bulk(s, m, arr);
			CHECK_MSG(uslub_error_count() == e0 + 1, "%s %s in a run of %zu: error count +%lu",
				  what[kind], where[pos], nr, uslub_error_count() - e0);
			err_expected = e0 + 1;
			sf += K;
			check_counts(s, sa, sf, __LINE__);
			verify(keep[0], size, __LINE__);
			verify(other[0], size, __LINE__);
		}
	}
	forget_objs(keep, 2);
	uslub_cache_free_bulk(s, 2, keep);
	sf += 2;
	check_counts(s, sa, sf, __LINE__);
	forget_objs(other, 1);
	uslub_cache_free(t, other[0]);
	check_empty(s, __LINE__);
	check_empty(t, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(t), 0);
}

int main(void)
{
	rng.s = test_seed(0xb01c);
	err_expected = uslub_error_count();
	/* first, while the process is small: the address-space limit test */
	test_rlimit_all_or_nothing();
	test_sizes();
	test_align_ctor();
	test_free_interleaved();
	test_kfree_bulk_mixed();
	test_invalid_in_array();
	test_bad_positions(0);
	test_bad_positions(USLUB_CPU_SLAB);
	test_sheaf_runs(64);
	test_sheaf_runs(96);
	test_mixed_live();
	CHECK_EQU(set_count, 0);
	CHECK_EQU(uslub_error_count(), err_expected);
	printf("bulk: ok\n");
	return 0;
}
