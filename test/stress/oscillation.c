/*
 * oscillation: a working set that swings from zero to WAVE objects and back,
 * again and again, must not make and discard slabs on every swing.
 *
 * One cache of 32-byte objects per per-CPU model: the default (per-CPU
 * sheaves, or cpu slabs under USLUB_CPU_SLABS=1) and one made with
 * USLUB_CPU_SLAB (the 6.x cpu slab, cpu partial slabs). For each: N waves,
 * each allocating WAVE objects (every one stamped with its wave and index)
 * and then freeing them all, last allocated first (LIFO), each stamp
 * checked before its free; then N more waves the same. What the program
 * needs at its peak is the same in every wave, so once the first waves
 * have made the slabs for it, the next ones should find them: the test
 * reads the cache's counters (uslub_cache_stats) before, between and after
 * the two halves and fails when the slabs made in the second N waves
 * (ALLOC_SLAB, exact counts) exceed 20% of those made in the first N waves
 * plus SLACK slabs. It prints, per model, ALLOC_SLAB and FREE_SLAB of each
 * half, the flush and refill counters of the sheaves, and the slabs the
 * cache holds at the end.
 *
 * Today every wave's objects go back through the slab layer and the empty
 * slabs are given back to the page provider at once (beyond min_partial),
 * so each wave makes its slabs anew and this test fails; it is DISABLED in
 * test/CMakeLists.txt until the commit that keeps empty slabs. Run it by
 * hand: build/test/stress_oscillation (exit 0: pass, 1: fail).
 */
#include "../integration/check.h"

#define OBJ_SIZE 32
#define WAVE 20000
#define NWAVES 8
#define MAX_SECOND_PCT 20       /* second half's slabs <= 20% of the first's */
#define SLACK 4                 /* ... plus this many */

struct stamp {
	uint32_t wave;
	uint32_t index;
	uint64_t check;
};

static uint64_t stamp_check(const void *p, uint32_t wave, uint32_t index)
{
	uint64_t h = (uint64_t)(uintptr_t)p ^ ((uint64_t)wave << 32) ^ index;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

struct counts {
	uint64_t alloc_slab, free_slab, flush, refill;
};

static struct counts read_counts(uslub_cache_t *s)
{
	uint64_t st[USLUB_NR_STATS];
	memset(st, 0, sizeof(st));
	uslub_cache_stats(s, st);
	return (struct counts){ st[USLUB_ALLOC_SLAB], st[USLUB_FREE_SLAB],
				st[USLUB_SHEAF_FLUSH], st[USLUB_SHEAF_REFILL] };
}

static struct counts diff(struct counts a, struct counts b)
{
	return (struct counts){ b.alloc_slab - a.alloc_slab, b.free_slab - a.free_slab,
				b.flush - a.flush, b.refill - a.refill };
}

/* @waves waves of @n objects: allocate all, stamp each, free all LIFO. */
static void run_waves(uslub_cache_t *s, void **objs, long n, int waves, uint32_t *wave_no)
{
	for (int w = 0; w < waves; w++, (*wave_no)++) {
		for (long i = 0; i < n; i++) {
			struct stamp *p = uslub_cache_alloc(s, USLUB_GFP_KERNEL);
			CHECK_MSG(p, "wave %u: allocation %ld of %ld failed", *wave_no, i, n);
			p->wave = *wave_no;
			p->index = (uint32_t)i;
			p->check = stamp_check(p, *wave_no, (uint32_t)i);
			objs[i] = p;
		}
		for (long i = n - 1; i >= 0; i--) {
			struct stamp *p = objs[i];
			CHECK_MSG(p->wave == *wave_no && p->index == (uint32_t)i &&
				  p->check == stamp_check(p, *wave_no, (uint32_t)i),
				  "wave %u: object %ld (%p) overwritten while live", *wave_no, i,
				  (void *)p);
			uslub_cache_free(s, p);
		}
	}
}

/* One model; returns true when the second half made few enough slabs. */
static bool oscillate(const char *name, unsigned int flags)
{
	uslub_cache_t *s = uslub_cache_create(name, OBJ_SIZE, 0, flags, NULL);
	CHECK_MSG(s, "uslub_cache_create(%s): %s", name, strerror(errno));
	long n = scaled(WAVE);
	void **objs = calloc((size_t)n, sizeof(*objs));
	CHECK(objs);
	struct uslub_slabinfo si = slabinfo_get(s);
	const char *model = si.sheaf_capacity ? "sheaves" : "cpu slabs";

	uint32_t wave_no = 0;
	struct counts c0 = read_counts(s);
	run_waves(s, objs, n, NWAVES, &wave_no);
	struct counts c1 = read_counts(s);
	run_waves(s, objs, n, NWAVES, &wave_no);
	struct counts c2 = read_counts(s);
	struct counts first = diff(c0, c1), second = diff(c1, c2);
	si = slabinfo_get(s);
	uint64_t limit = first.alloc_slab * MAX_SECOND_PCT / 100 + SLACK;
	bool ok = second.alloc_slab <= limit;

	printf("%s (%s, percpu=%s, sheaf_capacity %u, %u objects of %zu B per slab, "
	       "min_partial %u): %d + %d waves of %ld objects, LIFO\n",
	       name, model, si.percpu, si.sheaf_capacity, si.objs_per_slab, si.size,
	       si.min_partial, NWAVES, NWAVES, n);
	printf("  first  %d waves: ALLOC_SLAB %" PRIu64 " FREE_SLAB %" PRIu64
	       " SHEAF_FLUSH %" PRIu64 " SHEAF_REFILL %" PRIu64 "\n", NWAVES,
	       first.alloc_slab, first.free_slab, first.flush, first.refill);
	printf("  second %d waves: ALLOC_SLAB %" PRIu64 " FREE_SLAB %" PRIu64
	       " SHEAF_FLUSH %" PRIu64 " SHEAF_REFILL %" PRIu64 "\n", NWAVES,
	       second.alloc_slab, second.free_slab, second.flush, second.refill);
	printf("  slabs held at the end: %lu (%lu on the partial lists); "
	       "second/first ALLOC_SLAB %.2f; limit %" PRIu64 " (%d%% + %d): %s\n",
	       si.num_slabs, si.nr_partial,
	       first.alloc_slab ? (double)second.alloc_slab / (double)first.alloc_slab : 0.0,
	       limit, MAX_SECOND_PCT, SLACK, ok ? "ok" : "FAIL");
	fflush(stdout);

	CHECK_EQU(si.live_objs, 0);
	/* the first waves made the slabs the peak needs: at least one wave's
	 * worth of objects, so the comparison compares something */
	CHECK_MSG(first.alloc_slab * si.objs_per_slab >= (uint64_t)n,
		  "%s: the first waves made %" PRIu64 " slabs of %u objects for %ld live objects",
		  name, first.alloc_slab, si.objs_per_slab, n);
	free(objs);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	return ok;
}

int main(void)
{
	unsigned long err0 = uslub_error_count();
	bool ok = oscillate("osc-default-32", 0);
	ok &= oscillate("osc-cpu-slab-32", USLUB_CPU_SLAB);
	CHECK_EQU(uslub_error_count(), err0);
	if (!ok) {
		fprintf(stderr, "FAIL %s: the second %d waves made more than %d%% + %d of the "
			"slabs the first %d made (see above)\n", __FILE__, NWAVES, MAX_SECOND_PCT,
			SLACK, NWAVES);
		return 1;
	}
	printf("ok\n");
	return 0;
}
