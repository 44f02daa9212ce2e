/*
 * prefill: the prefilled-sheaf API (kmem_cache_prefill_sheaf and friends),
 * on a cache that asks for a sheaf capacity (args.sheaf_capacity), one
 * with the default sheaves (none with USLUB_CPU_SLABS=1 or USLUB_DEBUG)
 * and one without (USLUB_CPU_SLAB): prefill works on any cache.
 *   - prefill(N) gives a sheaf of >= N objects; prefilling is not an
 *     allocation (alloc counters and live_objs unchanged);
 *   - with the address space capped at its current size (RLIMIT_AS; not in
 *     sanitizer builds), N alloc_from_sheaf with USLUB_GFP_NOWAIT all
 *     succeed and give distinct, usable objects; the next one is NULL;
 *   - each alloc_from_sheaf counts one ALLOC_PCS and one live object;
 *     USLUB_GFP_ZERO zeroes (objects were dirtied before);
 *   - a size above the capacity gives an oversize sheaf
 *     (SHEAF_PREFILL_OVERSIZE), of at least that many objects;
 *   - refill: in place up to the capacity, possibly a new sheaf above it,
 *     no-op when the sheaf already holds enough; the sheaf stays usable;
 *   - return: the objects go back (after freeing every allocated object,
 *     a flush and a shrink leave no slab, and every sheaf struct made was
 *     freed: SHEAF_ALLOC == SHEAF_FREE); a returned sheaf is handed out
 *     again by the next prefill (SHEAF_RETURN_FAST, SHEAF_PREFILL_FAST);
 *   - bad input: NULL cache or sheaf, a sheaf of another cache, a size too
 *     large for any sheaf: NULL / -EINVAL with errno EINVAL, nothing
 *     changes, each misuse counted once in uslub_error_count() (the size
 *     check is not misuse and counts none).
 */
#include "check.h"

#include <limits.h>
#include <sys/resource.h>

static struct rng rng;

struct tcache {
	uslub_cache_t *s;
	size_t size;
	unsigned int cap;        /* sheaf capacity, 0: none */
	void **live;
	size_t n, max;
	uint64_t allocs, frees;
};

static void stats(struct tcache *t, uint64_t st[USLUB_NR_STATS])
{
	uslub_cache_stats(t->s, st);
}

static void check_counts(struct tcache *t, int line)
{
	uint64_t st[USLUB_NR_STATS];
	stats(t, st);
	if (stat_allocs(st) != t->allocs || stat_frees(st) != t->frees)
		test_fail(__FILE__, line, "%s: counters say %" PRIu64 " allocs %" PRIu64
			  " frees, the test made %" PRIu64 " and %" PRIu64 " (ALLOC_PCS %" PRIu64 ")",
			  uslub_cache_name(t->s), stat_allocs(st), stat_frees(st), t->allocs,
			  t->frees, st[USLUB_ALLOC_PCS]);
	struct uslub_slabinfo si = slabinfo_get(t->s);
	if (si.live_objs != t->n)
		test_fail(__FILE__, line, "%s: live_objs %lu, %zu live", uslub_cache_name(t->s),
			  si.live_objs, t->n);
	long v = uslub_cache_validate(t->s);
	if (v)
		test_fail(__FILE__, line, "%s: validate found %ld inconsistencies",
			  uslub_cache_name(t->s), v);
}

static unsigned char pat(const void *p, size_t i)
{
	return (unsigned char)(((uintptr_t)p >> 3) + i * 13);
}

/* An object from a sheaf: owned, aligned, not live already; patterned. */
static void take(struct tcache *t, void *p, int line)
{
	if (!p)
		test_fail(__FILE__, line, "alloc_from_sheaf returned NULL");
	if (!uslub_owns(p) || (uintptr_t)p % sizeof(void *))
		test_fail(__FILE__, line, "bad object %p", p);
	for (size_t i = 0; i < t->n; i++)
		if (t->live[i] == p)
			test_fail(__FILE__, line, "object %p handed out twice", p);
	CHECK(t->n < t->max);
	t->live[t->n++] = p;
	t->allocs++;
	unsigned char *c = p;
	for (size_t i = 0; i < t->size; i++)
		c[i] = pat(p, i);
}

static void verify_all(struct tcache *t)
{
	for (size_t k = 0; k < t->n; k++) {
		const unsigned char *c = t->live[k];
		for (size_t i = 0; i < t->size; i++)
			CHECK_MSG(c[i] == pat(c, i), "object %p byte %zu corrupted", (void *)c, i);
	}
}

static void free_all(struct tcache *t)
{
	verify_all(t);
	if (t->n)
		uslub_cache_free_bulk(t->s, t->n, t->live);
	t->frees += t->n;
	t->n = 0;
}

/* Pop everything from @sh (expecting at least @want objects), then NULL. */
static unsigned int drain(struct tcache *t, struct uslub_sheaf *sh, unsigned int want,
			  uslub_gfp_t gfp, int line)
{
	unsigned int have = uslub_cache_sheaf_size(sh), got = 0;
	if (have < want)
		test_fail(__FILE__, line, "sheaf holds %u objects, %u were asked for", have, want);
	uint64_t pcs0 = stat_get(t->s, USLUB_ALLOC_PCS);
	while (got < have) {
		void *p = uslub_cache_alloc_from_sheaf(t->s, gfp, sh);
		if (!p)
			test_fail(__FILE__, line, "alloc_from_sheaf failed after %u of %u", got, have);
		if (gfp & USLUB_GFP_ZERO)
			for (size_t i = 0; i < t->size; i++)
				if (((unsigned char *)p)[i])
					test_fail(__FILE__, line, "GFP_ZERO sheaf object %p byte %zu "
						  "is %#x", p, i, ((unsigned char *)p)[i]);
		take(t, p, line);
		got++;
		if (uslub_cache_sheaf_size(sh) != have - got)
			test_fail(__FILE__, line, "sheaf size %u after %u of %u taken",
				  uslub_cache_sheaf_size(sh), got, have);
	}
	if (uslub_cache_alloc_from_sheaf(t->s, gfp, sh) != NULL)
		test_fail(__FILE__, line, "alloc_from_sheaf of an empty sheaf returned an object");
	uint64_t pcs1 = stat_get(t->s, USLUB_ALLOC_PCS);
	if (pcs1 - pcs0 != got)
		test_fail(__FILE__, line, "ALLOC_PCS +%" PRIu64 " for %u objects from a sheaf",
			  pcs1 - pcs0, got);
	return got;
}

static struct uslub_sheaf *prefill(struct tcache *t, uslub_gfp_t gfp, unsigned int size,
				   int line)
{
	uint64_t st0[USLUB_NR_STATS], st1[USLUB_NR_STATS];
	stats(t, st0);
	struct uslub_slabinfo a = slabinfo_get(t->s);
	errno = 0;
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(t->s, gfp, size);
	if (!sh)
		test_fail(__FILE__, line, "prefill(%u) failed: %s", size, strerror(errno));
	if (uslub_cache_sheaf_size(sh) < size)
		test_fail(__FILE__, line, "prefill(%u) gave a sheaf of %u", size,
			  uslub_cache_sheaf_size(sh));
	stats(t, st1);
	struct uslub_slabinfo b = slabinfo_get(t->s);
	if (stat_allocs(st1) != stat_allocs(st0) || b.live_objs != a.live_objs)
		test_fail(__FILE__, line, "prefill counted as allocations (allocs +%" PRIu64
			  ", live %lu -> %lu)", stat_allocs(st1) - stat_allocs(st0), a.live_objs,
			  b.live_objs);
	uint64_t kinds = (st1[USLUB_SHEAF_PREFILL_FAST] - st0[USLUB_SHEAF_PREFILL_FAST]) +
			 (st1[USLUB_SHEAF_PREFILL_SLOW] - st0[USLUB_SHEAF_PREFILL_SLOW]) +
			 (st1[USLUB_SHEAF_PREFILL_OVERSIZE] - st0[USLUB_SHEAF_PREFILL_OVERSIZE]);
	if (kinds != 1)
		test_fail(__FILE__, line, "one prefill counted %" PRIu64 " times in "
			  "SHEAF_PREFILL_FAST/SLOW/OVERSIZE", kinds);
	bool oversize = st1[USLUB_SHEAF_PREFILL_OVERSIZE] != st0[USLUB_SHEAF_PREFILL_OVERSIZE];
	/* a cache without sheaves serves every prefill, even of 0, oversize */
	if (oversize != (size > t->cap || !t->cap))
		test_fail(__FILE__, line, "prefill(%u) with capacity %u: oversize %d", size, t->cap,
			  oversize);
	return sh;
}

static void ret(struct tcache *t, struct uslub_sheaf *sh, int line)
{
	uint64_t st0[USLUB_NR_STATS], st1[USLUB_NR_STATS];
	stats(t, st0);
	unsigned long live0 = slabinfo_get(t->s).live_objs;
	uslub_cache_return_sheaf(t->s, 0, sh);
	stats(t, st1);
	uint64_t kinds = (st1[USLUB_SHEAF_RETURN_FAST] - st0[USLUB_SHEAF_RETURN_FAST]) +
			 (st1[USLUB_SHEAF_RETURN_SLOW] - st0[USLUB_SHEAF_RETURN_SLOW]);
	if (kinds != 1)
		test_fail(__FILE__, line, "one return counted %" PRIu64 " times", kinds);
	if (stat_frees(st1) != stat_frees(st0) || stat_allocs(st1) != stat_allocs(st0))
		test_fail(__FILE__, line, "returning a sheaf counted allocs/frees");
	if (slabinfo_get(t->s).live_objs != live0)
		test_fail(__FILE__, line, "returning a sheaf changed live_objs");
}

/* After everything was freed and returned: flush, shrink, nothing left. */
static void check_all_back(struct tcache *t, int line)
{
	check_counts(t, line);
	uslub_flush_thread();
	uslub_cache_shrink(t->s);
	struct uslub_slabinfo si = slabinfo_get(t->s);
	if (si.live_objs || si.active_objs || si.num_slabs || si.barn_full || si.barn_empty)
		test_fail(__FILE__, line, "%s: after return, free, flush and shrink: live %lu "
			  "active %lu slabs %lu barn full %lu empty %lu", uslub_cache_name(t->s),
			  si.live_objs, si.active_objs, si.num_slabs, si.barn_full, si.barn_empty);
	uint64_t st[USLUB_NR_STATS];
	stats(t, st);
	if (st[USLUB_SHEAF_ALLOC] != st[USLUB_SHEAF_FREE])
		test_fail(__FILE__, line, "%s: SHEAF_ALLOC %" PRIu64 " != SHEAF_FREE %" PRIu64
			  " with no sheaf in use", uslub_cache_name(t->s), st[USLUB_SHEAF_ALLOC],
			  st[USLUB_SHEAF_FREE]);
	check_counts(t, line);
}


/* Cap the address space at (about) its current size; false if not done. */
static bool scarce_begin(struct rlimit *old)
{
#ifdef SANITIZER_BUILD
	(void)old;
	return false;
#else
	long vm = vm_size_kib();
	if (vm <= 0 || getrlimit(RLIMIT_AS, old) != 0)
		return false;
	struct rlimit lim = *old;
	lim.rlim_cur = (rlim_t)vm * 1024 + (1u << 20);
	if (old->rlim_cur != RLIM_INFINITY && old->rlim_cur < lim.rlim_cur)
		return false;
	return setrlimit(RLIMIT_AS, &lim) == 0;
#endif
}

static void scarce_end(struct rlimit *old)
{
	CHECK(setrlimit(RLIMIT_AS, old) == 0);
}

static void run(struct tcache *t)
{
	unsigned int cap = t->cap;
	unsigned int small = cap ? (cap > 3 ? cap / 3 : 1) : 10;
	printf("%s: sheaf capacity %u\n", uslub_cache_name(t->s), cap);
	CHECK_EQU(slabinfo_get(t->s).sheaf_capacity, cap);

	/* dirty a few slabs' worth, give it back to the slabs */
	size_t ops = slabinfo_get(t->s).objs_per_slab, m = 3 * ops;
	void **tmp = calloc(m, sizeof(*tmp));
	CHECK(tmp);
	CHECK_EQ(uslub_cache_alloc_bulk(t->s, 0, m, tmp), (int)m);
	for (size_t i = 0; i < m; i++)
		memset(tmp[i], 0xdb, t->size);
	uslub_cache_free_bulk(t->s, m, tmp);
	t->allocs += m;
	t->frees += m;
	free(tmp);
	uslub_flush_thread();
	check_counts(t, __LINE__);

	/* 1. prefill N, then N NOWAIT allocations with memory capped */
	unsigned int sizes[] = { 1, small, cap ? cap : 40 };
	for (int k = 0; k < 3; k++) {
		unsigned int want = sizes[k];
		struct uslub_sheaf *sh = prefill(t, 0, want, __LINE__);
		check_counts(t, __LINE__);
		struct rlimit old;
		bool capped = scarce_begin(&old);
		unsigned int got = drain(t, sh, want, USLUB_GFP_NOWAIT, __LINE__);
		if (capped)
			scarce_end(&old);
		CHECK(got >= want);
		check_counts(t, __LINE__);
		ret(t, sh, __LINE__);
		check_counts(t, __LINE__);
		if (k == 0)
			printf("memory capped during alloc_from_sheaf: %s\n", capped ? "yes" : "no "
			       "(sanitizer build or no limit possible)");
	}
	free_all(t);
	check_all_back(t, __LINE__);

	/* 2. GFP_ZERO from a sheaf */
	struct uslub_sheaf *sh = prefill(t, 0, small, __LINE__);
	drain(t, sh, small, USLUB_GFP_ZERO | USLUB_GFP_NOWAIT, __LINE__);
	ret(t, sh, __LINE__);
	free_all(t);
	check_all_back(t, __LINE__);

	/* 3. oversize */
	unsigned int big = cap ? 3 * cap + 1 : 100;
	sh = prefill(t, 0, big, __LINE__);
	CHECK(uslub_cache_sheaf_size(sh) >= big);
	check_counts(t, __LINE__);
	drain(t, sh, big, USLUB_GFP_ATOMIC, __LINE__);
	ret(t, sh, __LINE__);
	check_counts(t, __LINE__);
	/* an oversize sheaf returned with objects still in it */
	sh = prefill(t, 0, big + 5, __LINE__);
	for (int i = 0; i < 7; i++)
		take(t, uslub_cache_alloc_from_sheaf(t->s, 0, sh), __LINE__);
	ret(t, sh, __LINE__);
	free_all(t);
	check_all_back(t, __LINE__);

	/* 4. refill: no-op, in place, above capacity (may swap) */
	sh = prefill(t, 0, small, __LINE__);
	unsigned int before = uslub_cache_sheaf_size(sh);
	struct uslub_sheaf *orig = sh;
	CHECK_EQ(uslub_cache_refill_sheaf(t->s, 0, &sh, before), 0);
	CHECK(sh == orig);
	CHECK_EQU(uslub_cache_sheaf_size(sh), before);
	for (unsigned int i = 0; i < before; i++)
		take(t, uslub_cache_alloc_from_sheaf(t->s, 0, sh), __LINE__);
	CHECK_EQU(uslub_cache_sheaf_size(sh), 0);
	check_counts(t, __LINE__);
	if (cap) {
		/* in place up to the capacity: the same sheaf */
		CHECK_EQ(uslub_cache_refill_sheaf(t->s, 0, &sh, cap), 0);
		CHECK_MSG(sh == orig, "refill within the capacity replaced the sheaf");
		CHECK(uslub_cache_sheaf_size(sh) >= cap);
		check_counts(t, __LINE__);
		drain(t, sh, cap, USLUB_GFP_NOWAIT, __LINE__);
	}
	for (int round = 0; round < 3; round++) {
		unsigned int want = (cap ? cap : 30) * (unsigned)(round + 1) + 3;
		uint64_t e0 = uslub_error_count();
		CHECK_EQ(uslub_cache_refill_sheaf(t->s, 0, &sh, want), 0);
		CHECK(sh);
		CHECK_EQU(uslub_error_count(), e0);
		CHECK_MSG(uslub_cache_sheaf_size(sh) >= want, "refill(%u): sheaf of %u", want,
			  uslub_cache_sheaf_size(sh));
		check_counts(t, __LINE__);
		/* take some, refill again later with the rest still inside */
		for (unsigned int i = 0; i < want / 2; i++)
			take(t, uslub_cache_alloc_from_sheaf(t->s, USLUB_GFP_NOWAIT, sh), __LINE__);
		check_counts(t, __LINE__);
	}
	drain(t, sh, 0, 0, __LINE__);
	ret(t, sh, __LINE__);
	verify_all(t);
	free_all(t);
	check_all_back(t, __LINE__);

	/* 5. a returned sheaf comes back to the next prefill (sheaf caches) */
	if (cap) {
		uint64_t st0[USLUB_NR_STATS], st1[USLUB_NR_STATS];
		sh = prefill(t, 0, cap, __LINE__);
		stats(t, st0);
		ret(t, sh, __LINE__);
		struct uslub_sheaf *again = prefill(t, 0, cap, __LINE__);
		stats(t, st1);
		CHECK_MSG(st1[USLUB_SHEAF_RETURN_FAST] == st0[USLUB_SHEAF_RETURN_FAST] + 1,
			  "a full sheaf returned with no spare held was not kept");
		CHECK_MSG(st1[USLUB_SHEAF_PREFILL_FAST] == st0[USLUB_SHEAF_PREFILL_FAST] + 1,
			  "prefill after a return did not reuse the kept sheaf");
		CHECK(uslub_cache_sheaf_size(again) >= cap);
		ret(t, again, __LINE__);
		check_all_back(t, __LINE__);
	}

	/* 6. random prefill/alloc/refill/return cycles, several sheaves held */
	struct uslub_sheaf *held[4] = { 0 };
	long rounds = scaled(600);
	for (long r = 0; r < rounds; r++) {
		int i = (int)rng_below(&rng, 4);
		unsigned int lim = cap ? 3 * cap : 90;
		switch (rng_below(&rng, 5)) {
		case 0:
			if (!held[i])
				held[i] = prefill(t, rng_below(&rng, 2) ? USLUB_GFP_NOWAIT : 0,
						  (unsigned)rng_below(&rng, lim + 1), __LINE__);
			break;
		case 1:
		case 2:
			if (held[i]) {
				unsigned int k = (unsigned)rng_below(&rng, 20);
				for (unsigned int j = 0; j < k; j++) {
					void *p = uslub_cache_alloc_from_sheaf(t->s, 0, held[i]);
					if (!p)
						break;
					take(t, p, __LINE__);
				}
			}
			break;
		case 3:
			if (held[i]) {
				unsigned int want = (unsigned)rng_below(&rng, lim + 1);
				CHECK_EQ(uslub_cache_refill_sheaf(t->s, 0, &held[i], want), 0);
				CHECK(uslub_cache_sheaf_size(held[i]) >= want);
			}
			break;
		default:
			if (held[i]) {
				ret(t, held[i], __LINE__);
				held[i] = NULL;
			}
			if (t->n > 500 || rng_below(&rng, 10) == 0)
				free_all(t);
			break;
		}
		if (r % 50 == 0)
			check_counts(t, __LINE__);
	}
	for (int i = 0; i < 4; i++)
		if (held[i])
			ret(t, held[i], __LINE__);
	free_all(t);
	check_all_back(t, __LINE__);
}

static void test_bad_input(struct tcache *a, struct tcache *b)
{
	struct uslub_sheaf *sa = prefill(a, 0, 5, __LINE__);
	unsigned int n = uslub_cache_sheaf_size(sa);
	struct uslub_slabinfo ia = slabinfo_get(a->s), ib = slabinfo_get(b->s);
	unsigned long e0 = uslub_error_count();

	CHECK(uslub_cache_alloc_from_sheaf(a->s, 0, NULL) == NULL);
	CHECK_EQU(uslub_error_count(), e0 + 1);
	CHECK(uslub_cache_alloc_from_sheaf(b->s, 0, sa) == NULL);  /* a's sheaf */
	CHECK_EQU(uslub_error_count(), e0 + 2);
	CHECK(uslub_cache_alloc_from_sheaf(NULL, 0, sa) == NULL);
	CHECK_EQU(uslub_error_count(), e0 + 3);
	CHECK_EQU(uslub_cache_sheaf_size(sa), n);

	uslub_cache_return_sheaf(a->s, 0, NULL);
	CHECK_EQU(uslub_error_count(), e0 + 4);
	uslub_cache_return_sheaf(b->s, 0, sa);                    /* ignored */
	CHECK_EQU(uslub_error_count(), e0 + 5);
	CHECK_EQU(uslub_cache_sheaf_size(sa), n);

	struct uslub_sheaf *none = NULL, *cp = sa;
	errno = 0;
	CHECK_EQ(uslub_cache_refill_sheaf(a->s, 0, &none, 3), -EINVAL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQU(uslub_error_count(), e0 + 6);
	errno = 0;
	CHECK_EQ(uslub_cache_refill_sheaf(a->s, 0, NULL, 3), -EINVAL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQU(uslub_error_count(), e0 + 7);
	errno = 0;
	CHECK_EQ(uslub_cache_refill_sheaf(b->s, 0, &cp, n + 10), -EINVAL);
	CHECK_EQ(errno, EINVAL);
	CHECK(cp == sa);
	CHECK_EQU(uslub_error_count(), e0 + 8);
	CHECK_EQU(uslub_cache_sheaf_size(sa), n);
	CHECK_EQU(uslub_cache_sheaf_size(NULL), 0);

	/* sizes too large for any sheaf: EINVAL, nothing taken, no misuse */
	errno = 0;
	CHECK(uslub_cache_prefill_sheaf(a->s, 0, UINT_MAX) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(uslub_cache_prefill_sheaf(b->s, 0, UINT_MAX / 2) == NULL);
	CHECK_EQ(errno, EINVAL);
	cp = sa;
	errno = 0;
	CHECK_EQ(uslub_cache_refill_sheaf(a->s, 0, &cp, UINT_MAX), -EINVAL);
	CHECK_EQ(errno, EINVAL);
	CHECK(cp == sa);
	CHECK_EQU(uslub_error_count(), e0 + 8);
	errno = 0;
	CHECK(uslub_cache_prefill_sheaf(NULL, 0, 4) == NULL);
	CHECK_EQ(errno, EINVAL);
	e0 = uslub_error_count();

	struct uslub_slabinfo ja = slabinfo_get(a->s), jb = slabinfo_get(b->s);
	CHECK_EQU(ja.live_objs, ia.live_objs);
	CHECK_EQU(ja.active_objs, ia.active_objs);
	CHECK_EQU(jb.live_objs, ib.live_objs);
	CHECK_EQU(jb.active_objs, ib.active_objs);
	check_counts(a, __LINE__);
	check_counts(b, __LINE__);

	/* the sheaf is still fine */
	drain(a, sa, n, 0, __LINE__);
	ret(a, sa, __LINE__);
	free_all(a);
	check_all_back(a, __LINE__);
	check_all_back(b, __LINE__);
	CHECK_EQU(uslub_error_count(), e0);
}

int main(void)
{
	rng.s = test_seed(0x5eaf);
	unsigned long e0 = uslub_error_count();
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 30;
	struct tcache a = { .size = 120, .max = 4096 }, b = { .size = 72, .max = 4096 };
	struct tcache c = { .size = 88, .max = 4096 };
	a.s = uslub_cache_create_args("prefill-sheaves", a.size, &args, 0);
	b.s = uslub_cache_create_args("prefill-default", b.size, NULL, 0);
	c.s = uslub_cache_create_args("prefill-plain", c.size, NULL, USLUB_CPU_SLAB);
	CHECK(a.s && b.s && c.s);
	a.cap = uslub_cache_sheaf_capacity(a.s);
	b.cap = uslub_cache_sheaf_capacity(b.s);
	c.cap = uslub_cache_sheaf_capacity(c.s);
	/* slub_debug caches (USLUB_DEBUG) have no sheaves, as in SLUB */
	const char *dbg = getenv("USLUB_DEBUG");
	bool debug = dbg && *dbg;
	CHECK_MSG(debug ? a.cap == 0 : a.cap >= 30, "sheaf_capacity 30 asked, %u given", a.cap);
	const char *e = getenv("USLUB_CPU_SLABS");
	bool all = !(e && *e && strcmp(e, "0") != 0) && !debug;
	CHECK_MSG(all ? b.cap > 0 : b.cap == 0, "cache without sheaf_capacity: capacity %u "
		  "(USLUB_CPU_SLABS %s)", b.cap, e ? e : "unset");
	CHECK_MSG(c.cap == 0, "USLUB_CPU_SLAB cache: capacity %u", c.cap);
	a.live = calloc(a.max, sizeof(void *));
	b.live = calloc(b.max, sizeof(void *));
	c.live = calloc(c.max, sizeof(void *));
	CHECK(a.live && b.live && c.live);

	run(&a);
	run(&b);
	run(&c);
	CHECK_EQU(uslub_error_count(), e0);
	test_bad_input(&a, &b);
	CHECK_EQ(uslub_cache_destroy(a.s), 0);
	CHECK_EQ(uslub_cache_destroy(b.s), 0);
	CHECK_EQ(uslub_cache_destroy(c.s), 0);
	free(a.live);
	free(b.live);
	free(c.live);
	printf("prefill: ok\n");
	return 0;
}
