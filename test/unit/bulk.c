/*
 * Bulk allocation and prefilled sheaves under injected page-allocation
 * failure (_uslub_page_fail_after: the (k+1)-th page allocation from now
 * fails, once), white box.
 *   - on a cache without sheaves (USLUB_CPU_SLAB): alloc_bulk of more
 *     objects than fit in k new slabs (plus the free objects already
 *     there), for several k: returns 0 with errno ENOMEM;
 *     live_objs, the alloc/free counters and validate are as before; after a
 *     flush and a shrink no slab more than before is left and the page
 *     provider holds no byte more (every object taken was given back, every
 *     slab made for it released); with the injection off the same call
 *     succeeds and every object can be freed;
 *   - n = 0 with a failure armed takes nothing and makes no page
 *     allocation (the armed failure is still there afterwards); n = 1 on a
 *     cache with no free object fails cleanly; GFP_NOFAIL retries through
 *     the failure; a cache with an order fallback succeeds through one
 *     failure (ORDER_FALLBACK); GFP_ZERO after a failure zeroes every byte;
 *     the same on a cache with per-CPU sheaves, where a one-shot failure
 *     may be absorbed (then the call succeeds whole);
 *   - prefill N, then with the next page allocation failing: N NOWAIT
 *     alloc_from_sheaf succeed, the (N+1)-th is NULL, and no page
 *     allocation was attempted (the armed failure then hits a probe
 *     cache); a prefill or refill that needs a slab while pages fail
 *     returns NULL / -ENOMEM with nothing taken and the old sheaf intact.
 */
#include "slub/slub.h"
#include "unit.h"
#include <errno.h>
#include <string.h>

static uint64_t allocs_of(struct kmem_cache *s)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	return st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS];
}

static uint64_t frees_of(struct kmem_cache *s)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	return st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS];
}

static struct uslub_slabinfo info(struct kmem_cache *s)
{
	struct uslub_slabinfo si;
	CHECK(uslub_cache_slabinfo(s, &si) == 0);
	return si;
}

static unsigned long in_slabs(void)
{
	struct uslub_page_stats ps;
	uslub_page_stats(&ps);
	return ps.bytes_in_slabs;
}

/* A cache kept without any slab: its next allocation needs a page. Used
 * to see whether an armed failure is still pending (was not consumed).
 * No sheaves: its first allocation's only page allocation is its slab. */
static struct kmem_cache *probe;

static bool armed_failure_pending(void)
{
	CHECK(info(probe).num_slabs == 0);
	errno = 0;
	void *x = uslub_cache_alloc(probe, USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN);
	bool pending = x == NULL;
	if (x)
		uslub_cache_free(probe, x);
	else
		CHECK_EQ(errno, ENOMEM);
	uslub_flush_thread();
	uslub_cache_shrink(probe);
	CHECK(info(probe).num_slabs == 0);
	return pending;
}

/*
 * Without sheaves (@flags USLUB_CPU_SLAB, or USLUB_CPU_SLABS=1): every
 * page allocation is one of this cache's slabs, so the (k+1)-th failing
 * fails the call, exactly. With per-CPU sheaves (the default): a sheaf
 * comes from a bucket cache, whose slabs take page allocations too, and a
 * refill that fails falls back to slabs directly, which asks for a page
 * again, so a one-shot failure is absorbed (today always): the call must
 * then succeed whole, and nothing may leak either way.
 */
static void test_bulk_fail(unsigned int flags)
{
	struct kmem_cache *s = uslub_cache_create("bulk-fail", 64, 0, flags, NULL);
	CHECK(s && s->min_order == s->order);  /* no fallback: one failure fails a slab */
	CHECK(!(flags & USLUB_CPU_SLAB) || !s->sheaf_capacity);
	const bool exact = !s->sheaf_capacity;  /* (USLUB_CPU_SLABS=1: both) */
	unsigned int ops = s->objects;
	void **p = calloc((size_t)ops * 12, sizeof(void *));
	CHECK(p);

	/* three live objects, so there is a partial slab to take from first */
	void *keep[3];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 3, keep), 3);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	unsigned long bytes0 = in_slabs();
	struct uslub_slabinfo base = info(s);
	CHECK_EQ(base.num_slabs, 1);
	CHECK_EQ(base.live_objs, 3);

	/* n = 0 with a failure armed: nothing taken, no page asked for */
	_uslub_page_fail_after(0);
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 0, p), 0);
	CHECK(armed_failure_pending());
	_uslub_page_fail_after(-1);

	const long ks[] = { 0, 1, 2, 5, 9 };
	for (unsigned int i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		long k = ks[i];
		size_t n = (size_t)(k + 2) * ops + 1;  /* more than k new slabs + the partial one */
		uslub_flush_thread();
		uslub_cache_shrink(s);          /* no free object but the partial slab's */
		CHECK_EQ(info(s).num_slabs, 1);
		uint64_t a0 = allocs_of(s), f0 = frees_of(s);
		memset(p, 0, n * sizeof(void *));
		_uslub_page_fail_after(k);
		errno = 0;
		int got = uslub_cache_alloc_bulk(s, USLUB_GFP_NOWARN, n, p);
		int err = errno;
		_uslub_page_fail_after(-1);
		if (!exact && got == (int)n) {
			/* the failure hit a sheaf or a retry absorbed it */
			CHECK_EQ(allocs_of(s), a0 + n);
			uslub_cache_free_bulk(s, n, p);
			f0 += n;
			a0 += n;
		} else if (got != 0 || err != ENOMEM) {
			fprintf(stderr, "k=%ld n=%zu: alloc_bulk returned %d errno %d\n", k, n, got,
				err);
			CHECK(0);
		}
		struct uslub_slabinfo si = info(s);
		CHECK_EQ(si.live_objs, 3);
		CHECK_EQ(uslub_cache_validate(s), 0);
		uslub_flush_thread();
		uslub_cache_shrink(s);
		si = info(s);
		CHECK_EQ(si.num_slabs, 1);        /* only the slab of keep[] */
		CHECK_EQ(si.active_objs, 3);
		if (exact)                         /* (sheaves: the buckets' slabs too) */
			CHECK_EQ(in_slabs(), bytes0);  /* no slab leaked */
		CHECK_EQ(uslub_cache_validate(s), 0);
		/* a failed bulk allocation is no allocation */
		if (allocs_of(s) != a0 || frees_of(s) != f0) {
			fprintf(stderr, "k=%ld: failed alloc_bulk moved the counters: allocs +%llu "
				"frees +%llu\n", k, (unsigned long long)(allocs_of(s) - a0),
				(unsigned long long)(frees_of(s) - f0));
			CHECK(0);
		}
		a0 = allocs_of(s);
		f0 = frees_of(s);

		/* injection off: the same call succeeds, objects are usable */
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, n, p), (int)n);
		for (size_t j = 0; j < n; j++)
			memset(p[j], (int)j, 64);
		for (size_t j = 0; j < n; j++)
			CHECK(((unsigned char *)p[j])[63] == (unsigned char)j);
		CHECK_EQ(allocs_of(s), a0 + n);
		uslub_cache_free_bulk(s, n, p);
		CHECK_EQ(frees_of(s), f0 + n);
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK_EQ(info(s).live_objs, 3);
	}

	/* n = 1 with no free object anywhere: fails cleanly */
	uslub_flush_thread();
	uslub_cache_shrink(s);
	size_t fill = ops - 3;           /* fill the partial slab completely */
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, fill, p), (int)fill);
	_uslub_page_fail_after(0);
	errno = 0;
	int got = uslub_cache_alloc_bulk(s, USLUB_GFP_NOWARN, 1, p + fill);
	_uslub_page_fail_after(-1);
	if (!exact && got == 1) {
		uslub_cache_free(s, p[fill]);
	} else {
		CHECK_EQ(got, 0);
		CHECK_EQ(errno, ENOMEM);
	}
	CHECK_EQ(info(s).live_objs, 3 + fill);
	CHECK_EQ(uslub_cache_validate(s), 0);
	/* NOFAIL goes through a (one-shot) failure */
	_uslub_page_fail_after(0);
	CHECK_EQ(uslub_cache_alloc_bulk(s, USLUB_GFP_NOFAIL, 2 * ops, p + fill), (int)(2 * ops));
	_uslub_page_fail_after(-1);
	uslub_cache_free_bulk(s, fill + 2 * ops, p);

	/* GFP_ZERO after a failure: dirty objects come back zeroed */
	size_t n = 4 * ops;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, n, p), (int)n);
	for (size_t j = 0; j < n; j++)
		memset(p[j], 0xff, 64);
	uslub_cache_free_bulk(s, n, p);
	_uslub_page_fail_after(0);
	got = uslub_cache_alloc_bulk(s, USLUB_GFP_ZERO | USLUB_GFP_NOWARN, n + 3 * ops, p);
	_uslub_page_fail_after(-1);
	if (!exact && got)
		uslub_cache_free_bulk(s, (size_t)got, p);
	else
		CHECK_EQ(got, 0);
	CHECK_EQ(uslub_cache_alloc_bulk(s, USLUB_GFP_ZERO, n + 3 * ops, p), (int)(n + 3 * ops));
	for (size_t j = 0; j < n + 3 * ops; j++)
		for (int b = 0; b < 64; b++)
			CHECK(((unsigned char *)p[j])[b] == 0);
	uslub_cache_free_bulk(s, n + 3 * ops, p);

	uslub_cache_free_bulk(s, 3, keep);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	CHECK_EQ(info(s).num_slabs, 0);
	CHECK_EQ(info(s).live_objs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);

	/* a cache with an order fallback: one failure is absorbed */
	struct kmem_cache *fb = uslub_cache_create("bulk-fallback", 512, 0, flags, NULL);
	CHECK(fb && fb->min_order < fb->order);
	n = 3 * (size_t)fb->objects;
	_uslub_page_fail_after(1);
	CHECK_EQ(uslub_cache_alloc_bulk(fb, 0, n, p), (int)n);
	_uslub_page_fail_after(-1);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(fb, st);
	CHECK_EQ(st[USLUB_ORDER_FALLBACK], 1);
	CHECK_EQ(uslub_cache_validate(fb), 0);
	uslub_cache_free_bulk(fb, n, p);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(fb), 0);
	free(p);
}

static void test_prefill_scarce(void)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 16;
	struct kmem_cache *s = uslub_cache_create_args("prefill-scarce", 128, &args, 0);
	struct kmem_cache *plain = uslub_cache_create("prefill-scarce-plain", 64, 0, 0, NULL);
	CHECK(s && plain && plain->min_order == plain->order);
	unsigned int cap = uslub_cache_sheaf_capacity(s);
	CHECK(cap >= 16);
	void *objs[4096];

	const unsigned int sizes[] = { 1, 5, cap, cap + 1, 3 * cap, 200 };
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int c = 0; c < 2; c++) {
			struct kmem_cache *t = c ? plain : s;
			unsigned int want = sizes[i];
			struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(t, 0, want);
			CHECK(sh);
			unsigned int have = uslub_cache_sheaf_size(sh);
			CHECK(have >= want && have < 4096);
			uint64_t a0 = allocs_of(t);
			_uslub_page_fail_after(0);
			for (unsigned int j = 0; j < have; j++) {
				objs[j] = uslub_cache_alloc_from_sheaf(t, USLUB_GFP_NOWAIT, sh);
				CHECK(objs[j]);
				memset(objs[j], (int)j, t->object_size);
			}
			CHECK(uslub_cache_alloc_from_sheaf(t, USLUB_GFP_NOWAIT, sh) == NULL);
			/* none of that touched the page provider */
			CHECK(armed_failure_pending());
			_uslub_page_fail_after(-1);
			CHECK_EQ(allocs_of(t), a0 + have);
			uslub_cache_return_sheaf(t, 0, sh);
			for (unsigned int j = 0; j < have; j++)
				CHECK(((unsigned char *)objs[j])[0] == (unsigned char)j);
			uslub_cache_free_bulk(t, have, objs);
			CHECK_EQ(uslub_cache_validate(t), 0);
		}
	}

	/* prefill that needs a new slab while pages fail: NULL, nothing taken */
	for (int c = 0; c < 2; c++) {
		struct kmem_cache *t = c ? plain : s;
		uslub_flush_thread();
		uslub_cache_shrink(t);
		CHECK_EQ(info(t).num_slabs, 0);
		unsigned int want = 3 * t->objects + 1;   /* needs several slabs */
		_uslub_page_fail_after(1);
		errno = 0;
		struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(t, USLUB_GFP_NOWAIT, want);
		_uslub_page_fail_after(-1);
		CHECK(sh == NULL && errno == ENOMEM);
		CHECK_EQ(uslub_cache_validate(t), 0);
		uslub_flush_thread();
		uslub_cache_shrink(t);
		CHECK_EQ(info(t).num_slabs, 0);
		CHECK_EQ(info(t).active_objs, 0);

		/* refill of a held sheaf beyond what is free: -ENOMEM, sheaf intact */
		sh = uslub_cache_prefill_sheaf(t, 0, 3);
		CHECK(sh);
		unsigned int have = uslub_cache_sheaf_size(sh);
		struct uslub_sheaf *orig = sh;
		_uslub_page_fail_after(0);
		errno = 0;
		CHECK_EQ(uslub_cache_refill_sheaf(t, USLUB_GFP_NOWAIT, &sh, want), -ENOMEM);
		_uslub_page_fail_after(-1);
		CHECK_EQ(errno, ENOMEM);
		CHECK(sh == orig);
		CHECK_EQ(uslub_cache_sheaf_size(sh), have);
		CHECK_EQ(uslub_cache_validate(t), 0);
		for (unsigned int j = 0; j < have; j++)
			CHECK((objs[j] = uslub_cache_alloc_from_sheaf(t, 0, sh)) != NULL);
		uslub_cache_free_bulk(t, have, objs);
		/* and now it works */
		CHECK_EQ(uslub_cache_refill_sheaf(t, 0, &sh, want), 0);
		CHECK(uslub_cache_sheaf_size(sh) >= want);
		uslub_cache_return_sheaf(t, 0, sh);
		uslub_flush_thread();
		uslub_cache_shrink(t);
		CHECK_EQ(info(t).num_slabs, 0);
		CHECK_EQ(info(t).live_objs, 0);
	}
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(plain), 0);
}

int main(void)
{
	probe = uslub_cache_create("bulk-probe", 64, 0, USLUB_CPU_SLAB, NULL);
	CHECK(probe && probe->min_order == probe->order);
	test_bulk_fail(0);
	test_bulk_fail(USLUB_CPU_SLAB);
	test_prefill_scarce();
	printf("bulk: ok\n");
	return 0;
}
