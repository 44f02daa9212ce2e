/*
 * stats: SLUB's counters and the slabinfo views.
 *   - every alloc is counted once as ALLOC_FASTPATH, ALLOC_SLOWPATH or
 *     ALLOC_PCS, every free once as FREE_FASTPATH, FREE_SLOWPATH or FREE_PCS
 *     (with sheaves, the default, and with USLUB_CPU_SLABS=1, where a cache
 *     has them only when it asks for a sheaf_capacity);
 *   - bulk calls count one per object: objects popped from the cpu
 *     freelist as ALLOC_FASTPATH, objects taken from slabs as
 *     ALLOC_SLOWPATH; a sheaf cache counts pops as ALLOC_PCS, pushes as
 *     FREE_PCS, and sheaf refills/flushes (SHEAF_REFILL/SHEAF_FLUSH, in
 *     objects) as neither; alloc_from_sheaf counts ALLOC_PCS;
 *   - ALLOC_SLAB >= 1 after the first alloc; after freeing everything,
 *     flushing and shrinking no slab is left, FREE_SLAB > 0 and every slab
 *     made was returned;
 *   - counters of exited threads are kept;
 *   - uslub_slabinfo_print: JSON parses and names the cache and the
 *     counters (the sheaf and freelist ones too) and the new slabinfo
 *     fields; the table names the cache.
 */
#include "check.h"

#include <pthread.h>

static void check_counts(uslub_cache_t *s, uint64_t allocs, uint64_t frees, int line)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	if (stat_allocs(st) != allocs)
		test_fail(__FILE__, line,
			  "ALLOC_FASTPATH %" PRIu64 " + ALLOC_SLOWPATH %" PRIu64 " + ALLOC_PCS %" PRIu64
			  " != %" PRIu64 " allocs",
			  st[USLUB_ALLOC_FASTPATH], st[USLUB_ALLOC_SLOWPATH], st[USLUB_ALLOC_PCS],
			  allocs);
	if (stat_frees(st) != frees)
		test_fail(__FILE__, line,
			  "FREE_FASTPATH %" PRIu64 " + FREE_SLOWPATH %" PRIu64 " + FREE_PCS %" PRIu64
			  " != %" PRIu64 " frees",
			  st[USLUB_FREE_FASTPATH], st[USLUB_FREE_SLOWPATH], st[USLUB_FREE_PCS], frees);
	struct uslub_slabinfo si = slabinfo_get(s);
	if (si.live_objs != allocs - frees)
		test_fail(__FILE__, line, "live_objs %lu, expected %" PRIu64, si.live_objs,
			  allocs - frees);
}

struct thr_arg {
	uslub_cache_t *s;
	size_t n;
};

static void *thread_allocs(void *arg)
{
	struct thr_arg *a = arg;
	void **v = calloc(a->n, sizeof(*v));
	CHECK(v);
	for (size_t i = 0; i < a->n; i++) {
		v[i] = uslub_cache_alloc(a->s, 0);
		CHECK(v[i]);
	}
	/* free only the first half; the rest stay live past this thread */
	for (size_t i = 0; i < a->n / 2; i++)
		uslub_cache_free(a->s, v[i]);
	/* hand the rest back through the arg for the main thread to free */
	void **keep = malloc((a->n - a->n / 2) * sizeof(*keep));
	CHECK(keep);
	memcpy(keep, v + a->n / 2, (a->n - a->n / 2) * sizeof(*keep));
	free(v);
	return keep;
}

static void test_counters(void)
{
	uslub_cache_t *s = uslub_cache_create("stats-cache-96", 96, 0, 0, NULL);
	CHECK(s);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	for (int i = 0; i < USLUB_NR_STATS; i++)
		CHECK_MSG(st[i] == 0, "fresh cache: counter %s is %" PRIu64,
			  uslub_stat_name((enum uslub_stat_item)i), st[i]);
	for (int i = 0; i < USLUB_NR_STATS; i++) {
		const char *n = uslub_stat_name((enum uslub_stat_item)i);
		CHECK(n && *n);
	}
	CHECK(strcmp(uslub_stat_name(USLUB_ALLOC_FASTPATH), "ALLOC_FASTPATH") == 0);
	CHECK(strcmp(uslub_stat_name(USLUB_FREE_SLAB), "FREE_SLAB") == 0);
	CHECK(strcmp(uslub_stat_name(USLUB_CPU_PARTIAL_DRAIN), "CPU_PARTIAL_DRAIN") == 0);
	CHECK(strcmp(uslub_stat_name(USLUB_ALLOC_PCS), "ALLOC_PCS") == 0);
	CHECK(strcmp(uslub_stat_name(USLUB_FREE_PCS), "FREE_PCS") == 0);
	CHECK(strcmp(uslub_stat_name(USLUB_FREELIST_CORRUPT), "FREELIST_CORRUPT") == 0);

	struct uslub_slabinfo si = slabinfo_get(s);
	unsigned int ops = si.objs_per_slab;
	unsigned int minp = si.min_partial;
	unsigned int cap = si.sheaf_capacity;   /* 0 with USLUB_CPU_SLABS=1 */
	CHECK_EQU(cap, uslub_cache_sheaf_capacity(s));
	CHECK(ops >= 1);

	uint64_t allocs = 0, frees = 0;
	void *first = uslub_cache_alloc(s, 0);
	CHECK(first);
	allocs++;
	CHECK(stat_get(s, USLUB_ALLOC_SLAB) >= 1);
	/* the first alloc has no cpu slab (or an empty sheaf) */
	CHECK(stat_get(s, cap ? USLUB_ALLOC_PCS : USLUB_ALLOC_SLOWPATH) >= 1);
	check_counts(s, allocs, frees, __LINE__);
	uslub_cache_free(s, first);
	frees++;
	check_counts(s, allocs, frees, __LINE__);

	/* many slabs' worth, so the cpu, cpu partial and node partial lists all fill */
	size_t n = (size_t)ops * (minp + 20) + 7;
	void **v = calloc(n, sizeof(*v));
	CHECK(v);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < n; i++) {
			v[i] = uslub_cache_alloc(s, 0);
			CHECK(v[i]);
			memset(v[i], (int)i, 96);
			allocs++;
		}
		check_counts(s, allocs, frees, __LINE__);
		CHECK(stat_get(s, USLUB_ALLOC_SLAB) >= n / ops);
		si = slabinfo_get(s);
		CHECK(si.num_slabs >= n / ops);
		CHECK_EQU(si.memory_used, si.num_slabs * si.pages_per_slab * USLUB_PAGE_SIZE);
		CHECK_EQU(si.memory_requested, (allocs - frees) * 96);
		/* free in a scattered order: every other object, then the rest */
		for (size_t i = 0; i < n; i += 2, frees++)
			uslub_cache_free(s, v[i]);
		check_counts(s, allocs, frees, __LINE__);
		for (size_t i = 1; i < n; i += 2, frees++)
			uslub_cache_free(s, v[i]);
		check_counts(s, allocs, frees, __LINE__);
	}
	CHECK(stat_get(s, cap ? USLUB_ALLOC_PCS : USLUB_ALLOC_FASTPATH) > 0);
	uslub_cache_stats(s, st);
	CHECK(stat_frees(st) == frees);

	uslub_flush_thread();
	if (cap) {
		/* the barn keeps full sheaves until a shrink: their objects are
		 * active; after the barn is flushed the checks below apply */
		si = slabinfo_get(s);
		CHECK_EQU(si.active_objs, si.barn_full * cap);
		uslub_cache_shrink(s);
		CHECK_EQU(slabinfo_get(s).barn_full, 0);
		CHECK_EQU(slabinfo_get(s).active_objs, 0);
	}
	si = slabinfo_get(s);
	/* empty slabs kept: MAX(min_partial, keep) per node (keep: raised
	 * while the cache swings, slub/partial.c) */
	CHECK_MSG(si.num_slabs <= (unsigned long)minp * (unsigned)uslub_nr_nodes() + si.keep_empty,
		  "after freeing all and flushing: %lu slabs, min_partial %u, keep %lu",
		  si.num_slabs, minp, si.keep_empty);
	CHECK_EQU(si.active_objs, 0);
	CHECK_EQU(si.live_objs, 0);
	CHECK_EQU(si.nr_partial, si.num_slabs);
	CHECK_EQU(si.partial_free, si.num_objs);
	unsigned long before_shrink = si.num_slabs;
	int released = uslub_cache_shrink(s);
	CHECK_MSG(released >= 0 && (unsigned long)released == before_shrink,
		  "shrink released %d slabs, %lu were empty", released, before_shrink);
	si = slabinfo_get(s);
	CHECK_EQU(si.num_slabs, 0);
	CHECK_EQU(si.num_objs, 0);
	CHECK_EQU(si.nr_partial, 0);
	CHECK_EQU(si.memory_used, 0);
	uslub_cache_stats(s, st);
	CHECK(st[USLUB_FREE_SLAB] > 0);
	CHECK_MSG(st[USLUB_FREE_SLAB] == st[USLUB_ALLOC_SLAB],
		  "ALLOC_SLAB %" PRIu64 " but FREE_SLAB %" PRIu64 " with no slab left",
		  st[USLUB_ALLOC_SLAB], st[USLUB_FREE_SLAB]);
	check_counts(s, allocs, frees, __LINE__);

	/* counters of threads that exited stay in the sums */
	const int nthr = 3;
	pthread_t th[3];
	struct thr_arg args[3];
	for (int i = 0; i < nthr; i++) {
		/* one at a time, so the sums are exact at each check */
		args[i].s = s;
		args[i].n = 500 + 100 * (size_t)i;
		CHECK(pthread_create(&th[i], NULL, thread_allocs, &args[i]) == 0);
		void *ret;
		CHECK(pthread_join(th[i], &ret) == 0);
		allocs += args[i].n;
		frees += args[i].n / 2;
		check_counts(s, allocs, frees, __LINE__);
		void **keep = ret;
		for (size_t k = 0; k < args[i].n - args[i].n / 2; k++, frees++)
			uslub_cache_free(s, keep[k]);
		free(keep);
	}
	check_counts(s, allocs, frees, __LINE__);
	uslub_flush_thread();
	si = slabinfo_get(s);
	CHECK_EQU(si.active_objs, si.barn_full * cap);   /* only the barn's full sheaves */
	uslub_cache_shrink(s);
	CHECK_EQU(slabinfo_get(s).num_slabs, 0);
	uslub_cache_stats(s, st);
	CHECK_EQU(st[USLUB_FREE_SLAB], st[USLUB_ALLOC_SLAB]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(v);
}

/*
 * Destroy flushes the per-CPU state of every thread, not only the caller's:
 * a live thread keeps a cpu slab of cache A (all its objects freed); A's
 * destroy must succeed, and a new cache (which may reuse A's per-CPU slot)
 * starts with zero counters and never hands out A's memory to that thread.
 */
static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t step_cond = PTHREAD_COND_INITIALIZER;
static int step;
static uslub_cache_t *cache_a, *cache_b;
static void *a_objs[64];

static void wait_step(int want)
{
	pthread_mutex_lock(&step_lock);
	while (step < want)
		pthread_cond_wait(&step_cond, &step_lock);
	pthread_mutex_unlock(&step_lock);
}

static void set_step(int v)
{
	pthread_mutex_lock(&step_lock);
	step = v;
	pthread_cond_broadcast(&step_cond);
	pthread_mutex_unlock(&step_lock);
}

static void *holder_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 64; i++) {
		a_objs[i] = uslub_cache_alloc(cache_a, 0);
		CHECK(a_objs[i]);
	}
	for (int i = 0; i < 64; i++)
		uslub_cache_free(cache_a, a_objs[i]);
	set_step(1); /* A has no live object, but this thread holds its cpu slab */
	wait_step(2);
	/* A is gone, B exists: B's objects must not be A's old memory unless
	 * A's slabs went back to the page provider first */
	void *b[64];
	for (int i = 0; i < 64; i++) {
		b[i] = uslub_cache_alloc(cache_b, 0);
		CHECK(b[i]);
		memset(b[i], 0x42, 96);
	}
	for (int i = 0; i < 64; i++)
		uslub_cache_free(cache_b, b[i]);
	CHECK_EQ(uslub_cache_validate(cache_b), 0);
	return NULL;
}

static void test_destroy_other_thread(void)
{
	cache_a = uslub_cache_create("stats-destroy-a", 96, 0, 0, NULL);
	CHECK(cache_a);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, holder_thread, NULL) == 0);
	wait_step(1);
	struct uslub_slabinfo si = slabinfo_get(cache_a);
	CHECK_EQU(si.live_objs, 0);
	CHECK(si.num_slabs >= 1);
	/* the other thread's cpu slab counts as active although nothing is live */
	CHECK_MSG(si.active_objs >= si.objs_per_slab, "active_objs %lu, objs_per_slab %u",
		  si.active_objs, si.objs_per_slab);
	errno = 0;
	int rc = uslub_cache_destroy(cache_a);
	CHECK_MSG(rc == 0, "destroy of a cache with no live objects but another thread's cpu "
			   "slab returned %d (errno %d)", rc, errno);
	struct uslub_page_stats ps;
	uslub_page_stats(&ps);
	cache_b = uslub_cache_create("stats-destroy-b", 96, 0, 0, NULL);
	CHECK(cache_b);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(cache_b, st);
	for (int i = 0; i < USLUB_NR_STATS; i++)
		CHECK_MSG(st[i] == 0, "new cache inherits counter %s = %" PRIu64,
			  uslub_stat_name((enum uslub_stat_item)i), st[i]);
	si = slabinfo_get(cache_b);
	CHECK_EQU(si.num_slabs, 0);
	set_step(2);
	CHECK(pthread_join(th, NULL) == 0);
	uslub_cache_stats(cache_b, st);
	CHECK_EQU(stat_allocs(st), 64);
	CHECK_EQU(stat_frees(st), 64);
	CHECK_EQ(uslub_cache_validate(cache_b), 0);
	si = slabinfo_get(cache_b);
	if (!strcmp(si.percpu_mode, "cpu")) {
		/* per-CPU sheaves outlive the thread (they are its id's): a
		 * shrink takes them, with the barns' */
		uslub_cache_shrink(cache_b);
		si = slabinfo_get(cache_b);
	}
	CHECK_EQU(si.active_objs, si.barn_full * si.sheaf_capacity);
	CHECK_EQ(uslub_cache_destroy(cache_b), 0);
}

/* Bulk calls count one per object, split by where the objects came from. */
static void test_bulk_counts(void)
{
	uslub_cache_t *s = uslub_cache_create("stats-bulk", 128, 0, 0, NULL);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	unsigned int ops = si.objs_per_slab, cap = si.sheaf_capacity;
	CHECK(ops >= 4);
	size_t max = 4 * (size_t)ops + (cap ? 4 * (size_t)cap : 0);
	void **p = calloc(max, sizeof(*p));
	CHECK(p);
	uint64_t st0[USLUB_NR_STATS], st1[USLUB_NR_STATS];
	uint64_t allocs = 0, frees = 0;

	if (!cap) {
		/* one object loads the cpu slab: the rest of it is the cpu freelist */
		void *first = uslub_cache_alloc(s, 0);
		CHECK(first);
		allocs++;
		uslub_cache_stats(s, st0);
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, ops - 1, p), (int)(ops - 1));
		allocs += ops - 1;
		uslub_cache_stats(s, st1);
		CHECK_MSG(st1[USLUB_ALLOC_FASTPATH] - st0[USLUB_ALLOC_FASTPATH] == ops - 1,
			  "bulk of the cpu freelist's %u objects: ALLOC_FASTPATH +%" PRIu64, ops - 1,
			  st1[USLUB_ALLOC_FASTPATH] - st0[USLUB_ALLOC_FASTPATH]);
		CHECK_EQU(st1[USLUB_ALLOC_SLOWPATH], st0[USLUB_ALLOC_SLOWPATH]);
		/* the cpu slab is used up: 2 slabs' worth come from new slabs */
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 2 * ops, p + ops - 1), (int)(2 * ops));
		allocs += 2 * ops;
		uslub_cache_stats(s, st0);
		CHECK_MSG(st0[USLUB_ALLOC_SLOWPATH] - st1[USLUB_ALLOC_SLOWPATH] +
				  st0[USLUB_ALLOC_FASTPATH] - st1[USLUB_ALLOC_FASTPATH] == 2 * ops,
			  "bulk of 2 slabs' worth counted %" PRIu64 " allocs",
			  stat_allocs(st0) - stat_allocs(st1));
		CHECK_MSG(st0[USLUB_ALLOC_SLOWPATH] - st1[USLUB_ALLOC_SLOWPATH] >= ops,
			  "objects of new slabs are ALLOC_SLOWPATH: +%" PRIu64,
			  st0[USLUB_ALLOC_SLOWPATH] - st1[USLUB_ALLOC_SLOWPATH]);
		CHECK(st0[USLUB_ALLOC_SLAB] - st1[USLUB_ALLOC_SLAB] >= 2);
		check_counts(s, allocs, frees, __LINE__);
		/* free_bulk: one per object, NULLs not counted */
		p[3 * ops - 1] = first;
		size_t n = 3 * (size_t)ops;
		p[n] = NULL;
		uslub_cache_stats(s, st0);
		uslub_cache_free_bulk(s, n + 1, p);
		frees += n;
		uslub_cache_stats(s, st1);
		CHECK_EQU(stat_frees(st1) - stat_frees(st0), n);
		check_counts(s, allocs, frees, __LINE__);
	}
	/* any cache: counts match through a mixed sequence */
	for (int round = 0; round < 5; round++) {
		size_t n = 1 + (size_t)round * (max - 1) / 4;
		CHECK_EQ(uslub_cache_alloc_bulk(s, round & 1 ? USLUB_GFP_ZERO : 0, n, p), (int)n);
		allocs += n;
		check_counts(s, allocs, frees, __LINE__);
		uslub_kfree_bulk(n / 2, p);
		uslub_cache_free_bulk(s, n - n / 2, p + n / 2);
		frees += n;
		check_counts(s, allocs, frees, __LINE__);
	}
	uslub_flush_thread();
	uslub_cache_shrink(s);
	si = slabinfo_get(s);
	CHECK_EQU(si.num_slabs, 0);
	check_counts(s, allocs, frees, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
}

/* A cache with sheaves: pops and pushes are ALLOC_PCS / FREE_PCS; refills
 * and flushes move objects without counting allocations or frees. */
static void test_sheaf_counts(void)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 20;
	uslub_cache_t *s = uslub_cache_create_args("stats-sheaves", 96, &args, 0);
	CHECK(s);
	unsigned int cap = uslub_cache_sheaf_capacity(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(cap >= 20);
	CHECK_EQU(si.sheaf_capacity, cap);
	CHECK_EQU(si.barn_full, 0);
	CHECK_EQU(si.barn_empty, 0);
	uint64_t st[USLUB_NR_STATS];
	uint64_t allocs = 0, frees = 0;
	size_t n = 10 * (size_t)cap;
	void **p = calloc(n, sizeof(*p));
	CHECK(p);

	p[0] = uslub_cache_alloc(s, 0);
	CHECK(p[0]);
	allocs++;
	uslub_cache_stats(s, st);
	CHECK_EQU(st[USLUB_ALLOC_PCS], 1);        /* main sheaf refilled, then popped */
	CHECK(st[USLUB_SHEAF_REFILL] >= 1);
	CHECK_EQU(st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH], 0);
	CHECK_EQU(st[USLUB_SHEAF_ALLOC], 1);
	check_counts(s, allocs, frees, __LINE__);
	for (size_t i = 1; i < n; i++) {
		p[i] = uslub_cache_alloc(s, 0);
		CHECK(p[i]);
		allocs++;
	}
	check_counts(s, allocs, frees, __LINE__);
	uslub_cache_stats(s, st);
	CHECK(st[USLUB_ALLOC_PCS] >= n - 1);
	uint64_t refilled = st[USLUB_SHEAF_REFILL];
	CHECK_MSG(refilled >= st[USLUB_ALLOC_PCS], "SHEAF_REFILL %" PRIu64 " < ALLOC_PCS %" PRIu64
		  " with no free in between", refilled, st[USLUB_ALLOC_PCS]);
	for (size_t i = 0; i < n; i++)
		uslub_cache_free(s, p[i]);
	frees += n;
	check_counts(s, allocs, frees, __LINE__);
	uslub_cache_stats(s, st);
	CHECK(st[USLUB_FREE_PCS] > 0);
	CHECK_MSG(st[USLUB_BARN_PUT] > 0, "freeing %zu objects (capacity %u) put no full sheaf in "
		  "the barn", n, cap);
	si = slabinfo_get(s);
	CHECK(si.barn_full >= 1);
	/* a prefilled sheaf: alloc_from_sheaf is ALLOC_PCS */
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 5);
	CHECK(sh);
	uint64_t pcs0 = stat_get(s, USLUB_ALLOC_PCS);
	for (int i = 0; i < 5; i++) {
		p[i] = uslub_cache_alloc_from_sheaf(s, 0, sh);
		CHECK(p[i]);
		allocs++;
	}
	CHECK_EQU(stat_get(s, USLUB_ALLOC_PCS), pcs0 + 5);
	uslub_cache_return_sheaf(s, 0, sh);
	check_counts(s, allocs, frees, __LINE__);
	uslub_kfree_bulk(5, p);
	frees += 5;
	check_counts(s, allocs, frees, __LINE__);

	/* flush: the thread's sheaves go; the barn's full sheaves stay until
	 * a shrink, which flushes them (SHEAF_FLUSH in objects) */
	uslub_flush_thread();
	si = slabinfo_get(s);
	CHECK_EQU(si.active_objs, si.barn_full * cap);
	uint64_t flushed0 = stat_get(s, USLUB_SHEAF_FLUSH);
	unsigned long in_barn = si.barn_full * cap;
	uslub_cache_shrink(s);
	si = slabinfo_get(s);
	CHECK_EQU(si.barn_full, 0);
	CHECK_EQU(si.barn_empty, 0);
	CHECK_EQU(si.active_objs, 0);
	CHECK_EQU(si.num_slabs, 0);
	CHECK_MSG(stat_get(s, USLUB_SHEAF_FLUSH) - flushed0 == in_barn,
		  "shrink flushed %" PRIu64 " objects from the barn, it held %lu",
		  stat_get(s, USLUB_SHEAF_FLUSH) - flushed0, in_barn);
	uslub_cache_stats(s, st);
	CHECK_EQU(st[USLUB_SHEAF_ALLOC], st[USLUB_SHEAF_FREE]);
	/* every object refilled into a sheaf was allocated or flushed back */
	CHECK_EQU(st[USLUB_SHEAF_REFILL] + st[USLUB_FREE_PCS],
		  st[USLUB_ALLOC_PCS] + st[USLUB_SHEAF_FLUSH]);
	check_counts(s, allocs, frees, __LINE__);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
}

static void test_print(void)
{
	uslub_cache_t *s = uslub_cache_create("stats-print-cache", 200, 0, 0, NULL);
	uslub_cache_t *t = uslub_cache_create("stats-print-other", 24, 0, 0, NULL);
	CHECK(s && t);
	void *p[100];
	for (int i = 0; i < 100; i++) {
		p[i] = uslub_cache_alloc(i & 1 ? s : t, 0);
		CHECK(p[i]);
	}
	size_t len;
	char *j = slabinfo_string(USLUB_FMT_JSON, &len);
	CHECK(len > 0);
	CHECK_EQU(strlen(j), len); /* no NUL bytes inside */
	CHECK_MSG(json_valid(j), "slabinfo JSON does not parse:\n%s", j);
	CHECK(strstr(j, "\"stats-print-cache\""));
	CHECK(strstr(j, "\"stats-print-other\""));
	CHECK(strstr(j, "\"ALLOC_FASTPATH\""));
	CHECK(strstr(j, "\"FREE_SLAB\""));
	static const char *const keys[] = {
		"\"ALLOC_PCS\"", "\"FREE_PCS\"", "\"SHEAF_REFILL\"", "\"BARN_PUT\"",
		"\"SHEAF_PREFILL_OVERSIZE\"", "\"FREELIST_CORRUPT\"", "\"sheaf_capacity\"",
		"\"barn_full\"", "\"barn_empty\"", "\"random_freelist\"",
		"\"hardened_freelist\"",
	};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		CHECK_MSG(strstr(j, keys[k]), "slabinfo JSON lacks %s", keys[k]);
	CHECK_MSG(count_substr(j, "\"ALLOC_FASTPATH\"") >= 2,
		  "JSON has fewer ALLOC_FASTPATH keys than caches");
	free(j);

	char *tab = slabinfo_string(USLUB_FMT_TABLE, &len);
	CHECK(len > 0);
	CHECK(strstr(tab, "stats-print-cache"));
	CHECK(strstr(tab, "stats-print-other"));
	free(tab);

	/* a sheaf cache's table entry names its capacity and freelist flags */
	struct uslub_cache_args sa;
	memset(&sa, 0, sizeof(sa));
	sa.sheaf_capacity = 30;
	uslub_cache_t *sh = uslub_cache_create_args("stats-print-sheaf", 64, &sa,
						    USLUB_RANDOM_FREELIST | USLUB_HARDENED_FREELIST);
	CHECK(sh);
	uslub_cache_free(sh, uslub_cache_alloc(sh, 0));   /* a row, not "empty" */
	tab = slabinfo_string(USLUB_FMT_TABLE, NULL);
	char *row = strstr(tab, "\nstats-print-sheaf ");
	CHECK(row);
	char line[256];
	CHECK(sscanf(strchr(row + 1, '\n') + 1, " %255[^\n]", line) == 1);
	char want[64];
	snprintf(want, sizeof(want), "sheaf_capacity=%u ", uslub_cache_sheaf_capacity(sh));
	CHECK_MSG(strstr(line, want) && strstr(line, "random_freelist") &&
		  strstr(line, "hardened_freelist"), "sheaf line: %s", line);
	free(tab);
	CHECK_EQ(uslub_cache_destroy(sh), 0);

	for (int i = 0; i < 100; i++)
		uslub_cache_free(i & 1 ? s : t, p[i]);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(t), 0);

	j = slabinfo_string(USLUB_FMT_JSON, NULL);
	CHECK_MSG(json_valid(j), "slabinfo JSON (no user caches) does not parse:\n%s", j);
	CHECK(!strstr(j, "stats-print-cache"));
	free(j);
	tab = slabinfo_string(USLUB_FMT_TABLE, NULL);
	CHECK(!strstr(tab, "stats-print-cache"));
	free(tab);
}

/* slabinfo prints a sheaf cache's counters by Linux 7.0's names (its
 * sheaves' pops and pushes are ALLOC_FASTPATH and FREE_FASTPATH, no
 * ALLOC_PCS/FREE_PCS) and a cpu-slab cache's by 6.x's, while
 * uslub_cache_stats() keeps every counter apart. */
static const char *json_cache_stats(const char *j, const char *name, char *out, size_t len)
{
	char key[96];
	snprintf(key, sizeof(key), "{\"name\":\"%s\"", name);
	const char *c = strstr(j, key);
	CHECK_MSG(c, "slabinfo JSON lacks cache %s", name);
	const char *st = strstr(c, "\"stats\":{");
	CHECK(st);
	const char *end = strstr(st, "}}");
	CHECK(end);
	size_t n = (size_t)(end - st);
	CHECK(n < len);
	memcpy(out, st, n);
	out[n] = 0;
	return out;
}

static void test_print_names(void)
{
	uslub_cache_t *sh = uslub_cache_create("stats-names-sheaf", 64, 0, 0, NULL);
	uslub_cache_t *cs = uslub_cache_create("stats-names-cpuslab", 64, 0, USLUB_CPU_SLAB, NULL);
	CHECK(sh && cs);
	bool sheaves = uslub_cache_sheaf_capacity(sh) != 0;   /* USLUB_CPU_SLABS=1: none */
	void *p[10];
	for (int k = 0; k < 2; k++) {
		uslub_cache_t *s = k ? cs : sh;
		for (int i = 0; i < 10; i++)
			CHECK((p[i] = uslub_cache_alloc(s, 0)) != NULL);
		for (int i = 0; i < 10; i++)
			uslub_cache_free(s, p[i]);
	}
	uint64_t raw[USLUB_NR_STATS];
	uslub_cache_stats(sh, raw);
	char *j = slabinfo_string(USLUB_FMT_JSON, NULL);
	char buf[4096], want[64];
	const char *st = json_cache_stats(j, "stats-names-sheaf", buf, sizeof(buf));
	if (sheaves) {
		CHECK_MSG(!strstr(st, "\"ALLOC_PCS\"") && !strstr(st, "\"FREE_PCS\""),
			  "a sheaf cache prints 6.18's PCS names: %s", st);
		snprintf(want, sizeof(want), "\"ALLOC_FASTPATH\":%llu",
			 (unsigned long long)(raw[USLUB_ALLOC_PCS] + raw[USLUB_ALLOC_FASTPATH]));
		CHECK_MSG(strstr(st, want), "want %s in %s", want, st);
		CHECK(raw[USLUB_ALLOC_PCS] >= 9);      /* the raw counters stay apart */
	}
	st = json_cache_stats(j, "stats-names-cpuslab", buf, sizeof(buf));
	CHECK_MSG(strstr(st, "\"ALLOC_PCS\":0") && strstr(st, "\"FREE_FASTPATH\":10"),
		  "a cpu-slab cache prints the 6.x counters as counted: %s", st);
	free(j);
	CHECK_EQ(uslub_cache_destroy(sh), 0);
	CHECK_EQ(uslub_cache_destroy(cs), 0);
}

/* The start of the line of @text that starts with @prefix, or NULL. */
static const char *line_starting(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, prefix, n))
			return l;
	return NULL;
}

/*
 * The table is for people: one header; the caches with nothing in them
 * (no slab, no live object, no counter) on one line "N empty caches
 * (...): a, b", not as rows of zeros; a legend for every column, once,
 * under the table. The JSON has every cache, on one line (JSON Lines);
 * USLUB_FMT_JSON_VALUE is the same document without the newline.
 */
static void test_print_layout(void)
{
	uslub_cache_t *u = uslub_cache_create("stats-unused-cache", 72, 0, 0, NULL);
	CHECK(u);
	char *tab = slabinfo_string(USLUB_FMT_TABLE, NULL);
	CHECK_MSG(!line_starting(tab, "stats-unused-cache "), "an unused cache has a row:\n%s", tab);
	const char *fold = strstr(tab, " empty cache");
	CHECK_MSG(fold, "no line of empty caches:\n%s", tab);
	if (fold) {
		while (fold > tab && fold[-1] != '\n')
			fold--;
		unsigned long n = 0;
		char names[4096];
		const char *colon = strstr(fold, "(no slabs, no objects, no activity): ");
		CHECK(sscanf(fold, "%lu empty cache", &n) == 1 && colon &&
		      sscanf(colon + 37, "%4095[^\n]", names) == 1);
		CHECK_MSG(strstr(names, "stats-unused-cache"), "not among the empty caches: %s", names);
		/* N is the number of names */
		unsigned long commas = (unsigned long)count_substr(names, ", ");
		CHECK_MSG(n == commas + 1, "%lu empty caches, %lu names: %s", n, commas + 1, names);
	}
	CHECK_EQ(count_substr(tab, "# name "), 1);
	static const char *const legend[] = {
		"\n# <active> ", "\n# <num_objs> ", "\n# <live> ", "\n# <objsz> ",
		"\n# <perslab> ", "\n# <partial> ", "\n# <mem_used> ",
	};
	for (size_t k = 0; k < sizeof(legend) / sizeof(legend[0]); k++)
		CHECK_MSG(count_substr(tab, legend[k]) == 1, "legend line%s: %zu times", legend[k],
			  count_substr(tab, legend[k]));
	/* every column of the header is explained */
	CHECK(strstr(tab, "<size>: ") && strstr(tab, "<pages>: ") && strstr(tab, "<slabs>: "));
	/* the legend is under the rows */
	CHECK(strstr(tab, "\n# <active> ") > strstr(tab, " empty cache"));
	free(tab);

	size_t len;
	char *j = slabinfo_string(USLUB_FMT_JSON, &len);
	CHECK(strstr(j, "{\"name\":\"stats-unused-cache\""));
	CHECK_MSG(len > 0 && strchr(j, '\n') == j + len - 1, "JSON is not one line");
	CHECK(!strstr(j, "<active>"));
	free(j);
	FILE *f = tmpfile();
	CHECK(f);
	uslub_slabinfo_print(f, USLUB_FMT_JSON_VALUE);
	long vlen = ftell(f);
	CHECK(vlen > 1);
	char *v = calloc(1, (size_t)vlen + 1);
	rewind(f);
	CHECK(v && fread(v, 1, (size_t)vlen, f) == (size_t)vlen);
	fclose(f);
	CHECK_MSG(!strchr(v, '\n') && json_valid(v), "JSON_VALUE: not one value without a newline");
	free(v);

	/* used once, it has a row (its counters), even with no slab left */
	uslub_cache_free(u, uslub_cache_alloc(u, 0));
	uslub_cache_shrink(u);
	tab = slabinfo_string(USLUB_FMT_TABLE, NULL);
	CHECK_MSG(line_starting(tab, "stats-unused-cache "), "a used cache has no row:\n%s", tab);
	free(tab);
	CHECK_EQ(uslub_cache_destroy(u), 0);
}

int main(void)
{
	/* the validator itself must reject broken JSON */
	CHECK(json_valid("{\"a\": [1, 2.5e3, -0, \"x\\n\", true, null, {}]}"));
	CHECK(!json_valid("{\"a\": 1,}"));
	CHECK(!json_valid("{\"a\" 1}"));
	CHECK(!json_valid("{\"a\": 1"));
	CHECK(!json_valid("[1 2]"));
	CHECK(!json_valid("{\"a\": 01}"));
	CHECK(!json_valid("{\"a\": \"x}"));

	test_counters();
	test_bulk_counts();
	test_sheaf_counts();
	test_destroy_other_thread();
	test_print();
	test_print_layout();
	test_print_names();
	printf("stats: ok\n");
	return 0;
}
