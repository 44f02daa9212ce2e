/*
 * account_switch: the current accounting group switched with objects in
 * flight (issue 17).
 * NTHREADS workers (USLUB_TEST_THREADS, default 4; deterministic seeds)
 * switch their current group among four groups and the root (NULL) at
 * random points, also between an allocation and its free, and allocate:
 * from an ACCOUNT cache with per-CPU sheaves (sheaf_capacity asked for,
 * so it has them in both per-CPU models), from an ACCOUNT cpu-slab cache
 * without sheaves (USLUB_CPU_SLAB, sheaf_capacity 0, through
 * uslub_cache_create_args), singly and in bulk; kmalloc of two sizes with
 * USLUB_GFP_ACCOUNT; and plain objects of a cache without ACCOUNT that
 * they charge later with uslub_cache_charge() (kmem_cache_charge) under
 * whatever group is current then (again: a no-op). Objects go through a
 * shared exchange array: most are freed by another thread than the one
 * that charged them, singly, with uslub_cache_free_bulk() per cache and
 * with uslub_kfree_bulk() mixed, or adopted (and maybe charged) there.
 * Each object's header records the group it was charged to (or none);
 * the model counts live objects per group and cache.
 *
 * Groups: A and C at the top, B and D children of A. D is the doomed one:
 * used in phase 1 only, deleted by the main thread in the middle of phase
 * 2 while its objects are held and freed by the workers (its handle moves
 * to A: A's usage already counts them, later uncharges go to A).
 *
 * A sampler thread reads every live group's usage and info all along (an
 * uncharge ahead of its charge shows as a wrapped, huge value).
 *
 * At the end of each phase the workers free their objects charged to A
 * (so their stocks hold A's handle, as full as they may be), stop at a
 * barrier (quiescent, the stocks NOT drained) and the main thread checks,
 * for every group g,
 *     model(g) <= usage(g) <= model(g) + NTHREADS * STOCK_CAP
 * where model(g) is the charges of live objects charged to g's subtree
 * and STOCK_CAP the most bytes one thread's stock holds (ext.h:
 * "stock bytes kept on free: 2 x batch", so 2 * USLUB_ACCOUNT_BATCH): a
 * stock's bytes are prepaid (in usage, on no object), never negative;
 * and the sum over the top-level groups of usage - model <= NTHREADS *
 * STOCK_CAP (each thread's stock holds one handle's bytes, which count in
 * exactly one top-level group); uslub_group_cache_usage() is exact per
 * group and cache (it walks the objects, stocks are not in it). After
 * phase 1 the workers then drain their stocks and usage == model exactly.
 * After joining (each thread's stock drained at its exit): usage ==
 * model exactly, per group and cache too; then everything is freed (half
 * by a helper thread), every usage is 0, the groups delete, the handle
 * count is back to the start, no slab is left after a shrink.
 * Variants (test/CMakeLists.txt): USLUB_CPU_SLABS=1, USLUB_PROFILING=1,
 * USLUB_PROFILING=sample, USLUB_ACCOUNT_BATCH=256.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define MAX_THREADS 16
#define LOCAL_MAX 1024
#define XSLOTS 256
#define STASH 256

/* groups: indexes into groups[]; ROOT: charged to nobody */
enum { GA = 0, GB = 1, GC = 2, GD = 3, NG = 4, ROOT = NG };
static const int parent_idx[NG] = { -1, GA, -1, GA };
static const char *const gname[NG] = { "sw-A", "sw-B", "sw-C", "sw-D" };
static uslub_group_t *groups[NG];

/* caches: SHEAF and NOSHEAF are ACCOUNT caches, PLAIN is charged late,
 * KM1 / KM2 are the kmalloc buckets of two sizes (USLUB_GFP_ACCOUNT) */
enum { SHEAF = 0, NOSHEAF = 1, PLAIN = 2, KM1 = 3, KM2 = 4, NC = 5 };
static const size_t km_size[2] = { 40, 300 };
static uslub_cache_t *caches[NC];
static const char *cname[NC];

static int nthreads;
static size_t batch, stock_cap;

/* model */
static _Atomic long live[NG + 1][NC];
static atomic_int d_dead;       /* D deleted: its objects are A's own now */
static atomic_int d_readers;    /* the sampler is reading D               */
static _Atomic(void *) xslots[XSLOTS];
static atomic_long progress;    /* worker iterations in the current phase */
static atomic_int done;         /* the sampler stops                      */
static pthread_barrier_t phase; /* workers + main                          */

struct hdr {
	uint8_t grp;   /* group index, or ROOT: not charged */
	uint8_t cache;
	uint16_t owner;
	uint32_t seq;
	uint64_t check;
};

static uint64_t hdr_hash(const void *p, const struct hdr *h)
{
	uint64_t x = (uint64_t)(uintptr_t)p ^ ((uint64_t)h->grp << 56) ^ ((uint64_t)h->cache << 48) ^
		     ((uint64_t)h->owner << 32) ^ h->seq;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static void hdr_check(const void *p, int line)
{
	const struct hdr *h = p;
	if (h->cache >= NC || h->grp > ROOT || h->check != hdr_hash(p, h))
		test_fail(__FILE__, line, "object %p: header corrupted (grp %u cache %u)", p, h->grp,
			  h->cache);
}

struct worker {
	pthread_t th;
	int id;
	int cur;                 /* the current group's index, ROOT for NULL */
	struct rng rng;
	void *local[LOCAL_MAX];
	int nlocal;
	void *stash[STASH];      /* charged to D at the end of phase 1 */
	int nstash;
	uint32_t seq;
	long allocs, remote_frees, switches, late_charges, recharges, bulk_frees, adopted;
};
static struct worker workers[MAX_THREADS];

static void set_cur(struct worker *w, int g)
{
	uslub_group_t *want = g == ROOT ? NULL : groups[g];
	uslub_group_t *prev = uslub_group_set_current(want);
	uslub_group_t *was = w->cur == ROOT ? NULL : groups[w->cur];
	CHECK_MSG(prev == was, "thread %d: set_current returned %p, the current group was %p",
		  w->id, (void *)prev, (void *)was);
	CHECK(uslub_group_current() == want);
	w->cur = g;
	w->switches++;
}

/* A random current group: phase 1 may pick D, phase 2 not (it is deleted). */
static void switch_random(struct worker *w, int with_d)
{
	int g = (int)rng_below(&w->rng, with_d ? NG + 1 : NG);
	if (!with_d && g == GD)
		g = ROOT;
	set_cur(w, g);
}

static void born(struct worker *w, void *p, int c, int grp)
{
	struct hdr *h = p;
	h->grp = (uint8_t)grp;
	h->cache = (uint8_t)c;
	h->owner = (uint16_t)w->id;
	h->seq = w->seq++;
	h->check = hdr_hash(p, h);
	atomic_fetch_add_explicit(&live[grp][c], 1, memory_order_relaxed);
	w->allocs++;
}

/* Check the header and take the object off the model; returns its cache. */
static int dying(void *p, int line)
{
	hdr_check(p, line);
	struct hdr *h = p;
	atomic_fetch_sub_explicit(&live[h->grp][h->cache], 1, memory_order_relaxed);
	h->check = ~h->check;
	return h->cache;
}

static void free_one(void *p, int c)
{
	if (c >= KM1)
		uslub_kfree(p);
	else
		uslub_cache_free(caches[c], p);
}

static void kill_obj(void *p, int line)
{
	free_one(p, dying(p, line));
}

/* The current group charges ACCOUNT allocations (the root: nobody). */
static void *alloc_one(struct worker *w, int c)
{
	void *p;
	if (c >= KM1)
		p = uslub_kmalloc(km_size[c - KM1], USLUB_GFP_ACCOUNT);
	else
		p = uslub_cache_alloc(caches[c], 0);
	CHECK_MSG(p, "thread %d: allocation from %s failed (errno %d)", w->id, cname[c], errno);
	born(w, p, c, c == PLAIN ? ROOT : w->cur);
	return p;
}

/* kmem_cache_charge a held object under the current group: one not
 * charged yet (a plain object, or any taken at the root) takes the
 * current group's charge; a charged one, or any at the root, stays as
 * it is (a no-op that must return true). */
static void late_charge(struct worker *w, void *p)
{
	hdr_check(p, __LINE__);
	struct hdr *h = p;
	errno = 0;
	CHECK_MSG(uslub_cache_charge(p, 0), "thread %d: uslub_cache_charge refused (errno %d)",
		  w->id, errno);
	if (h->grp != ROOT || w->cur == ROOT) {
		w->recharges++;
		return;
	}
	atomic_fetch_sub_explicit(&live[ROOT][h->cache], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&live[w->cur][h->cache], 1, memory_order_relaxed);
	h->grp = (uint8_t)w->cur;
	h->check = hdr_hash(p, h);
	w->late_charges++;
}

static void keep_local(struct worker *w, void *p)
{
	if (w->nlocal == LOCAL_MAX) {
		kill_obj(p, __LINE__);
		return;
	}
	w->local[w->nlocal++] = p;
}

static void keep(struct worker *w, void *p)
{
	if (rng_below(&w->rng, 3) == 0) {
		/* through the exchange: whoever finds it frees or adopts it */
		void *old = atomic_exchange(&xslots[rng_below(&w->rng, XSLOTS)], p);
		if (old) {
			kill_obj(old, __LINE__);
			w->remote_frees++;
		}
		return;
	}
	keep_local(w, p);
}

static void *take_local(struct worker *w)
{
	int i = (int)rng_below(&w->rng, (uint64_t)w->nlocal);
	void *p = w->local[i];
	w->local[i] = w->local[--w->nlocal];
	return p;
}

/* Empty up to 24 exchange slots; free what was there with one
 * uslub_cache_free_bulk() per cache, or all at once with kfree_bulk. */
static void bulk_from_exchange(struct worker *w)
{
	void *p[24], *per[NC][24];
	size_t n = 0, nper[NC] = { 0 };
	size_t start = (size_t)rng_below(&w->rng, XSLOTS);
	for (size_t k = 0; k < 24; k++) {
		void *o = atomic_exchange(&xslots[(start + k * 7) % XSLOTS], NULL);
		if (!o)
			continue;
		int c = dying(o, __LINE__);
		p[n++] = o;
		per[c][nper[c]++] = o;
	}
	if (!n)
		return;
	if (rng_below(&w->rng, 2)) {
		uslub_kfree_bulk(n, p);
	} else {
		for (int c = 0; c < NC; c++) {
			if (!nper[c])
				continue;
			if (c >= KM1)
				uslub_kfree_bulk(nper[c], per[c]);
			else
				uslub_cache_free_bulk(caches[c], nper[c], per[c]);
		}
	}
	w->remote_frees += (long)n;
	w->bulk_frees++;
}

static void run_phase(struct worker *w, long iters, int with_d)
{
	long stash_step = iters / STASH + 1;
	for (long it = 0; it < iters; it++) {
		/* phase 2: D's stash goes, one object every stash_step
		 * iterations (through the exchange or here), the last tenth
		 * to the local set; so D is deleted with objects in flight */
		if (!with_d && w->nstash && it % stash_step == 0) {
			void *p = w->stash[--w->nstash];
			if (w->nstash < STASH / 10)
				keep_local(w, p);
			else
				keep(w, p);
		}
		unsigned op = (unsigned)rng_below(&w->rng, 100);
		if (op < 6) {
			switch_random(w, with_d);
		} else if (op < 32) {
			static const int pick[10] = { SHEAF, SHEAF, SHEAF, NOSHEAF, NOSHEAF, NOSHEAF,
						      PLAIN, PLAIN, KM1, KM2 };
			keep(w, alloc_one(w, pick[rng_below(&w->rng, 10)]));
		} else if (op < 36) {
			/* an allocation, a switch, its free: charged to one group,
			 * uncharged from it while another one is current */
			int c = (int)rng_below(&w->rng, NC);
			void *p = alloc_one(w, c);
			switch_random(w, with_d);
			if (rng_below(&w->rng, 2))
				keep_local(w, p);
			else
				kill_obj(p, __LINE__);
		} else if (op < 40) {
			void *p[20];
			int c = rng_below(&w->rng, 2) ? SHEAF : NOSHEAF;
			size_t n = 1 + (size_t)rng_below(&w->rng, 20);
			int got = uslub_cache_alloc_bulk(caches[c], 0, n, p);
			CHECK_MSG(got == (int)n, "thread %d: bulk of %zu from %s gave %d (errno %d)",
				  w->id, n, cname[c], got, errno);
			for (size_t i = 0; i < n; i++)
				born(w, p[i], c, w->cur);
			size_t half = n / 2;
			for (size_t i = 0; i < half; i++)
				dying(p[i], __LINE__);
			uslub_cache_free_bulk(caches[c], half, p);
			for (size_t i = half; i < n; i++)
				keep(w, p[i]);
		} else if (op < 48) {
			if (w->nlocal)
				late_charge(w, w->local[rng_below(&w->rng, (uint64_t)w->nlocal)]);
		} else if (op < 62) {
			if (w->nlocal)
				kill_obj(take_local(w), __LINE__);
		} else if (op < 64) {
			void *p[16];
			size_t n = 0, want = 1 + (size_t)rng_below(&w->rng, 16);
			while (n < want && w->nlocal) {
				p[n] = take_local(w);
				dying(p[n], __LINE__);
				n++;
			}
			uslub_kfree_bulk(n, p);
		} else if (op < 68) {
			bulk_from_exchange(w);
		} else {
			void *p = atomic_exchange(&xslots[rng_below(&w->rng, XSLOTS)], NULL);
			if (!p)
				continue;
			if (rng_below(&w->rng, 2)) {
				kill_obj(p, __LINE__);
				w->remote_frees++;
			} else {
				hdr_check(p, __LINE__);
				keep_local(w, p);    /* adopted: maybe charged here */
				w->adopted++;
			}
		}
		if ((it & 255) == 255)
			atomic_fetch_add_explicit(&progress, 256, memory_order_relaxed);
	}
}

static long iters_per_phase;

/* Before a quiescent point: free every local object charged to A, so
 * each thread's stock ends up holding A's handle and as many bytes as it
 * may keep (the cap is what the bound at the barrier tests). */
static void fill_stock(struct worker *w)
{
	for (int i = 0; i < w->nlocal;) {
		const struct hdr *h = w->local[i];
		if (h->grp == GA) {
			kill_obj(w->local[i], __LINE__);
			w->local[i] = w->local[--w->nlocal];
		} else {
			i++;
		}
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	w->cur = ROOT;
	set_cur(w, (int)rng_below(&w->rng, NG));
	pthread_barrier_wait(&phase);           /* start */
	run_phase(w, iters_per_phase, 1);
	/* objects charged to D that live into phase 2, then leave D (it
	 * gets deleted in phase 2); the stock keeps its bytes */
	set_cur(w, GD);
	for (int i = 0; i < STASH; i++) {
		int c = (int)rng_below(&w->rng, NC);
		if (c == PLAIN)
			c = SHEAF;
		w->stash[w->nstash++] = alloc_one(w, c);
	}
	set_cur(w, rng_below(&w->rng, 2) ? GA : ROOT);
	fill_stock(w);
	pthread_barrier_wait(&phase);           /* end of phase 1: checked */
	pthread_barrier_wait(&phase);
	uslub_group_drain_stock();
	pthread_barrier_wait(&phase);           /* checked again, drained */
	pthread_barrier_wait(&phase);           /* phase 2 */
	run_phase(w, iters_per_phase, 0);
	fill_stock(w);
	pthread_barrier_wait(&phase);           /* end of phase 2: checked */
	pthread_barrier_wait(&phase);
	set_cur(w, ROOT);
	return NULL; /* local objects stay live; thread exit drains the stock */
}

/* The group D's objects count as: itself while alive, A's own after. */
static int own_group(int g)
{
	return g == GD && atomic_load(&d_dead) ? GA : g;
}

static bool in_subtree(int h, int g)
{
	for (int a = h; a >= 0; a = parent_idx[a])
		if (a == g)
			return true;
	return false;
}

static size_t charge[NC];
static bool workers_gone;

static void read_charges(void)
{
	for (int c = 0; c < NC; c++) {
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		charge[c] = si.obj_ext_charge;
	}
}

static size_t model_usage(int g)
{
	size_t sum = 0;
	for (int h = 0; h < NG; h++)
		if (in_subtree(h, g))
			for (int c = 0; c < NC; c++)
				sum += (size_t)atomic_load(&live[h][c]) * charge[c];
	return sum;
}

/* A quiescent point (no thread allocates or frees). @exact: the stocks
 * are drained (usage == model), else within the stock bound above. */
static void check_model(const char *when, bool exact)
{
	read_charges();
	size_t excess_top = 0;
	for (int g = 0; g < NG; g++) {
		if (g == GD && atomic_load(&d_dead))
			continue;
		size_t u = uslub_group_usage(groups[g]), want = model_usage(g);
		if (exact)
			CHECK_MSG(u == want, "%s: group %s usage %zu, the model says %zu", when,
				  gname[g], u, want);
		else
			CHECK_MSG(u >= want && u - want <= (size_t)nthreads * stock_cap,
				  "%s: group %s usage %zu, the model says %zu: outside [model, model "
				  "+ %d threads x %zu stock]", when, gname[g], u, want, nthreads,
				  stock_cap);
		if (parent_idx[g] < 0)
			excess_top += u - want;
		for (int c = 0; c < NC; c++) {
			unsigned long objs = 0;
			size_t bytes = 0;
			CHECK_EQ(uslub_group_cache_usage(groups[g], caches[c], &objs, &bytes), 0);
			long m = 0;
			for (int h = 0; h < NG; h++)
				if (own_group(h) == g)
					m += atomic_load(&live[h][c]);
			CHECK_MSG(objs == (unsigned long)m && bytes == (size_t)m * charge[c],
				  "%s: group %s cache %s: %lu objects %zu bytes, the model %ld objects "
				  "of %zu bytes", when, gname[g], cname[c], objs, bytes, m, charge[c]);
		}
	}
	CHECK_MSG(excess_top <= (size_t)nthreads * stock_cap,
		  "%s: the top-level groups hold %zu bytes more than their objects' charges, "
		  "more than %d threads' stocks (%zu each)", when, excess_top, nthreads, stock_cap);
	for (int c = 0; c < NC; c++) {
		/* the buckets are shared with the library's own users; the
		 * counters behind live_objs are exact once the workers are gone
		 * (another live thread's ALLOC_FASTPATH is as of its last empty
		 * cpu freelist: slub/cpu_slab.c) */
		if (c >= KM1 || !workers_gone)
			continue;
		long total = 0;
		for (int g = 0; g <= NG; g++)
			total += atomic_load(&live[g][c]);
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		CHECK_MSG(si.live_objs == (unsigned long)total, "%s: cache %s live_objs %lu, model %ld",
			  when, si.name, si.live_objs, total);
		long v = uslub_cache_validate(caches[c]);
		CHECK_MSG(v == 0, "%s: cache %s: validate found %ld inconsistencies", when, si.name, v);
	}
	printf("%s: usage within the model%s (top-level excess %zu bytes)\n", when,
	       exact ? " exactly" : " + stocks", excess_top);
	fflush(stdout);
}

static void *sampler_fn(void *arg)
{
	unsigned long *samples = arg;
	while (!atomic_load(&done)) {
		for (int g = 0; g < NG; g++) {
			if (g == GD) {
				atomic_fetch_add(&d_readers, 1);
				if (atomic_load(&d_dead)) {
					atomic_fetch_sub(&d_readers, 1);
					continue;
				}
			}
			size_t u = uslub_group_usage(groups[g]);
			CHECK_MSG(u < ((size_t)1 << 40), "group %s: usage %zu while running (wrapped?)",
				  gname[g], u);
			struct uslub_group_info gi;
			CHECK_EQ(uslub_group_info(groups[g], &gi), 0);
			CHECK(gi.usage < ((size_t)1 << 40));
			if (g == GD)
				atomic_fetch_sub(&d_readers, 1);
		}
		(*samples)++;
		usleep(500);
	}
	return NULL;
}

struct bag {
	void **p;
	size_t n;
};

static void *free_bag(void *arg)
{
	struct bag *b = arg;
	for (size_t i = 0; i < b->n; i++)
		kill_obj(b->p[i], __LINE__);
	return NULL;
}

int main(void)
{
	uint64_t seed = test_seed(0x5eed5a17);
	const char *e = getenv("USLUB_TEST_THREADS");
	nthreads = e ? atoi(e) : 4;
	CHECK(nthreads >= 2 && nthreads <= MAX_THREADS);
	e = getenv("USLUB_ACCOUNT_BATCH");
	batch = e && *e ? (size_t)strtoull(e, NULL, 10) : 8192;
	stock_cap = 2 * batch;
	iters_per_phase = scaled(400000);
	double t0 = now_s();
	unsigned long err0 = uslub_error_count();
	unsigned long groups0 = uslub_group_count(), objcg0 = uslub_objcg_count();

	struct uslub_cache_args sa = { .sheaf_capacity = 32 }, na = { .sheaf_capacity = 0 };
	caches[SHEAF] = uslub_cache_create_args("acct-sw-sheaf", 96, &sa, USLUB_ACCOUNT);
	caches[NOSHEAF] = uslub_cache_create_args("acct-sw-nosheaf", 200, &na,
						  USLUB_ACCOUNT | USLUB_CPU_SLAB);
	caches[PLAIN] = uslub_cache_create("sw-plain", 64, 0, 0, NULL);
	caches[KM1] = uslub_kmalloc_cache(km_size[0]);
	caches[KM2] = uslub_kmalloc_cache(km_size[1]);
	for (int c = 0; c < NC; c++) {
		CHECK(caches[c]);
		cname[c] = uslub_cache_name(caches[c]);
	}
	CHECK(caches[KM1] != caches[KM2]);
	struct uslub_slabinfo si = slabinfo_get(caches[SHEAF]);
	bool debug = si.debug[0] != 0;
	if (!debug)
		CHECK_MSG(si.sheaf_capacity >= 32, "acct-sw-sheaf: sheaf capacity %u (%s)",
			  si.sheaf_capacity, si.percpu);
	CHECK_EQU(slabinfo_get(caches[NOSHEAF]).sheaf_capacity, 0);

	for (int g = 0; g < NG; g++) {
		groups[g] = uslub_group_create(parent_idx[g] >= 0 ? groups[parent_idx[g]] : NULL,
					       gname[g], USLUB_GROUP_NO_LIMIT);
		CHECK(groups[g]);
	}
	/* a current group cannot be deleted */
	uslub_group_set_current(groups[GD]);
	CHECK(uslub_group_delete(groups[GD]) == -1 && errno == EBUSY);
	uslub_group_set_current(NULL);
	/* uslub_cache_charge() switches the plain cache's accounting on;
	 * do it before any worker has a cpu slab of it (the cpu-slab model's
	 * limit, see uslub_cache_charge() in uslub/types.h) */
	{
		void *p = uslub_cache_alloc(caches[PLAIN], 0);
		CHECK(p);
		uslub_group_set_current(groups[GC]);
		CHECK(uslub_cache_charge(p, 0));
		uslub_group_drain_stock();
		unsigned long objs = 0;
		size_t bytes = 0;
		CHECK_EQ(uslub_group_cache_usage(groups[GC], caches[PLAIN], &objs, &bytes), 0);
		CHECK_EQU(objs, 1);
		read_charges();
		CHECK_EQU(bytes, charge[PLAIN]);
		CHECK_EQU(uslub_group_usage(groups[GC]), charge[PLAIN]);
		uslub_group_set_current(NULL);
		uslub_cache_free(caches[PLAIN], p);
		uslub_group_drain_stock();
		CHECK_EQU(uslub_group_usage(groups[GC]), 0);
	}

	for (int i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].rng.s = seed + 0x1000ull * (uint64_t)(i + 1);
	}
	CHECK(pthread_barrier_init(&phase, NULL, (unsigned)nthreads + 1) == 0);
	unsigned long samples = 0;
	pthread_t sampler;
	CHECK(pthread_create(&sampler, NULL, sampler_fn, &samples) == 0);
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_create(&workers[i].th, NULL, worker_fn, &workers[i]) == 0);

	pthread_barrier_wait(&phase);           /* start */
	pthread_barrier_wait(&phase);           /* end of phase 1 */
	check_model("after phase 1 (stocks held)", false);
	pthread_barrier_wait(&phase);
	pthread_barrier_wait(&phase);
	check_model("after phase 1 (stocks drained)", true);
	long d_live = 0;
	for (int c = 0; c < NC; c++)
		d_live += atomic_load(&live[GD][c]);
	CHECK_MSG(d_live > 0, "no object charged to D at the end of phase 1");
	atomic_store(&progress, 0);
	pthread_barrier_wait(&phase);           /* phase 2 */
	/* delete D in the middle of phase 2, with its objects in flight */
	while (atomic_load(&progress) < (long)nthreads * iters_per_phase / 3)
		sched_yield();
	long d_live_at_delete = 0;
	for (int c = 0; c < NC; c++)
		d_live_at_delete += atomic_load(&live[GD][c]);
	atomic_store(&d_dead, 1);
	while (atomic_load(&d_readers))
		sched_yield();
	CHECK_MSG(uslub_group_delete(groups[GD]) == 0, "delete D: errno %d", errno);
	CHECK_MSG(d_live_at_delete > 0, "no object of D in flight when it was deleted");
	pthread_barrier_wait(&phase);           /* end of phase 2 */
	check_model("after phase 2 (D deleted, stocks held)", false);
	pthread_barrier_wait(&phase);
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_join(workers[i].th, NULL) == 0);
	atomic_store(&done, 1);
	CHECK(pthread_join(sampler, NULL) == 0);
	workers_gone = true;
	uslub_group_drain_stock();
	check_model("after join", true);

	/* free the rest: exchange slots and half of the local sets here, the
	 * other half from a helper thread */
	struct bag bag = { malloc(sizeof(void *) * (size_t)nthreads * LOCAL_MAX), 0 };
	CHECK(bag.p);
	long allocs = 0, remote = 0, switches = 0, late = 0, re = 0, bulkf = 0, adopted = 0;
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];
		for (int k = 0; k < w->nlocal; k++) {
			if (k % 2)
				bag.p[bag.n++] = w->local[k];
			else
				kill_obj(w->local[k], __LINE__);
		}
		w->nlocal = 0;
		allocs += w->allocs;
		remote += w->remote_frees;
		switches += w->switches;
		late += w->late_charges;
		re += w->recharges;
		bulkf += w->bulk_frees;
		adopted += w->adopted;
	}
	for (int i = 0; i < XSLOTS; i++) {
		void *p = atomic_exchange(&xslots[i], NULL);
		if (p)
			kill_obj(p, __LINE__);
	}
	pthread_t th;
	CHECK(pthread_create(&th, NULL, free_bag, &bag) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	free(bag.p);
	uslub_group_drain_stock();
	check_model("after freeing everything", true);
	for (int g = 0; g < NG; g++)
		if (g != GD)
			CHECK_EQU(uslub_group_usage(groups[g]), 0);
	CHECK(remote > 0 && switches > 0 && late > 0 && re > 0 && bulkf > 0 && adopted > 0);

	for (int g = NG - 1; g >= 0; g--)
		if (g != GD)
			CHECK_MSG(uslub_group_delete(groups[g]) == 0, "delete group %s: errno %d",
				  gname[g], errno);
	CHECK_EQU(uslub_group_count(), groups0);
	CHECK_MSG(uslub_objcg_count() == objcg0, "objcg count %lu at the end, %lu at the start",
		  uslub_objcg_count(), objcg0);
	uslub_flush_thread();
	for (int c = 0; c < KM1; c++) {
		uslub_cache_shrink(caches[c]);
		struct uslub_slabinfo s2 = slabinfo_get(caches[c]);
		CHECK_EQU(s2.live_objs, 0);
		CHECK_EQU(s2.num_slabs, 0);
		CHECK_EQ(uslub_cache_validate(caches[c]), 0);
		CHECK_EQ(uslub_cache_destroy(caches[c]), 0);
	}
	CHECK_EQU(uslub_error_count(), err0);
	printf("account_switch: ok: %d threads, %ld objects, %ld switches, %ld late charges (%ld "
	       "no-ops), %ld freed remotely (%ld bulks), %ld adopted, %ld objects of D in flight "
	       "at its deletion, %lu usage samples, batch %zu, profiling %d, %.2f s\n",
	       nthreads, allocs, switches, late, re, remote, bulkf, adopted, d_live_at_delete,
	       samples, batch, uslub_profiling_enabled(), now_s() - t0);
	return 0;
}
