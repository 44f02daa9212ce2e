/*
 * account_threads: accounting groups under concurrency.
 * NTHREADS threads (USLUB_TEST_THREADS, default 4), each in its own group
 * (odd threads' groups are children of the previous thread's group; the
 * last thread's group has a limit), allocate from an ACCOUNT cache and a
 * plain cache (with USLUB_GFP_ACCOUNT, and some without: not charged),
 * singly and in bulk, and free singly, with free_bulk and kfree_bulk;
 * objects also go through a shared exchange array, so most frees of an
 * object happen on another thread than its allocation (and charge). Each
 * object's header records the group it was charged to; the model counts
 * live charged objects per group and cache, and live objects per call
 * site. While the threads run, the main thread samples every group's
 * usage (an uncharge racing ahead of its charge would show as a huge
 * value). After joining (every thread's stock drained at exit):
 *   - each group's usage == the model's charges of its subtree exactly
 *     (size + obj_ext_bytes per object), uslub_group_cache_usage exact per
 *     group and cache, live_objs == the model, validate == 0;
 *   - the limited group refused only with ENOMEM, failcnt >= its refusals,
 *     usage within its limit;
 *   - with USLUB_PROFILING=1 (variant): uslub_allocinfo() for this file's
 *     call sites == the model;
 *   - halfway, at a quiescent point (the workers paused at a barrier,
 *     their stocks NOT drained): for each group g,
 *         model(g) <= usage(g) <= model(g) + NTHREADS * STOCK_CAP,
 *     and over the top-level groups, sum(usage - model) <= NTHREADS *
 *     STOCK_CAP, where model(g) is the charges of the live objects of g's
 *     subtree and STOCK_CAP = 2 * USLUB_ACCOUNT_BATCH the most one
 *     thread's stock holds (ext.h's "2 x batch"; memcg.c keeps at most
 *     _uslub_stock_max = one batch today). Why: usage = the objects'
 *     charges + the bytes prepaid in the stocks; a stock's bytes are
 *     never negative (usage never below the model: an uncharge that went
 *     to the wrong group, or twice, shows here), each stock holds one
 *     handle's bytes, which count in exactly one top-level group's usage.
 *     uslub_group_cache_usage() is exact then (it walks the objects).
 *     Then each worker drains its own stock, and usage == model exactly,
 *     before they go on;
 *   - after freeing the rest (half from a helper thread): every usage 0,
 *     the groups delete, group and objcg counts back to the start, no
 *     slab left after a shrink.
 * Variants: USLUB_CPU_SLABS=1, USLUB_PROFILING=1.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define MAX_THREADS 16
#define NCACHES 2
#define LOCAL_MAX 1500
#define XSLOTS 512
#define NSITES 4

enum { CA = 0, CB = 1 };
static const size_t sizes[NCACHES] = { 160, 56 };
static uslub_cache_t *caches[NCACHES];
static uslub_group_t *groups[MAX_THREADS];
static int nthreads, limited = -1;
static size_t limit_bytes;

/* model */
static _Atomic long live[MAX_THREADS + 1][NCACHES]; /* [nthreads]: not charged */
static _Atomic long site_live[NSITES][NCACHES];
static atomic_int site_line[NSITES];
static _Atomic(void *) xslots[XSLOTS];
static atomic_int finished, halfway;
static pthread_barrier_t start; /* every worker starts at once */
static pthread_barrier_t pause_b; /* the quiescent point: workers + main */
static size_t stock_cap;

struct hdr {
	uint16_t grp;   /* index, or nthreads: not charged */
	uint8_t cache;
	uint8_t site;
	uint32_t seq;
	uint64_t check;
};

static uint64_t hdr_hash(const void *p, const struct hdr *h)
{
	uint64_t x = (uint64_t)(uintptr_t)p ^ ((uint64_t)h->grp << 48) ^ ((uint64_t)h->cache << 40) ^
		     ((uint64_t)h->site << 32) ^ h->seq;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

struct worker {
	pthread_t th;
	int id;
	struct rng rng;
	void *local[LOCAL_MAX];
	int nlocal;
	uint32_t seq;
	long allocs, remote_frees, refused, bulks;
};
static struct worker workers[MAX_THREADS];

/* ---- call sites (the model needs their lines) --------------------------- */
static void *alloc_a(void)
{
	atomic_store_explicit(&site_line[0], __LINE__, memory_order_relaxed); return uslub_cache_alloc(caches[CA], 0);
}

static void *alloc_b_acct(void)
{
	atomic_store_explicit(&site_line[1], __LINE__, memory_order_relaxed); return uslub_cache_alloc(caches[CB], USLUB_GFP_ACCOUNT);
}

static void *alloc_b_plain(void)
{
	atomic_store_explicit(&site_line[2], __LINE__, memory_order_relaxed); return uslub_cache_alloc(caches[CB], 0);
}

static int alloc_bulk(int c, uslub_gfp_t gfp, size_t n, void **p)
{
	atomic_store_explicit(&site_line[3], __LINE__, memory_order_relaxed); return uslub_cache_alloc_bulk(caches[c], gfp, n, p);
}

static void born(struct worker *w, void *p, int c, int site, bool charged)
{
	struct hdr *h = p;
	h->grp = (uint16_t)(charged ? w->id : nthreads);
	h->cache = (uint8_t)c;
	h->site = (uint8_t)site;
	h->seq = w->seq++;
	h->check = hdr_hash(p, h);
	atomic_fetch_add_explicit(&live[h->grp][c], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&site_live[site][c], 1, memory_order_relaxed);
	w->allocs++;
}

/* Verify the header and take the object off the model; returns its cache. */
static int dying(void *p, int line)
{
	struct hdr *h = p;
	if (h->cache >= NCACHES || h->grp > nthreads || h->site >= NSITES ||
	    h->check != hdr_hash(p, h))
		test_fail(__FILE__, line, "object %p: header corrupted (grp %u cache %u site %u)", p,
			  h->grp, h->cache, h->site);
	atomic_fetch_sub_explicit(&live[h->grp][h->cache], 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&site_live[h->site][h->cache], 1, memory_order_relaxed);
	h->check = ~h->check;
	return h->cache;
}

static void kill_obj(void *p, int line)
{
	int c = dying(p, line);
	uslub_cache_free(caches[c], p);
}

static void keep(struct worker *w, void *p)
{
	if (rng_below(&w->rng, 3) == 0) {
		/* through the exchange: whoever finds it frees it */
		void *old = atomic_exchange(&xslots[rng_below(&w->rng, XSLOTS)], p);
		if (old) {
			kill_obj(old, __LINE__);
			w->remote_frees++;
		}
		return;
	}
	if (w->nlocal == LOCAL_MAX) {
		kill_obj(p, __LINE__);
		return;
	}
	w->local[w->nlocal++] = p;
}

static void *take_local(struct worker *w)
{
	int i = (int)rng_below(&w->rng, (uint64_t)w->nlocal);
	void *p = w->local[i];
	w->local[i] = w->local[--w->nlocal];
	return p;
}

static void refused(struct worker *w, bool charged, int line)
{
	if (!charged || w->id != limited || errno != ENOMEM)
		test_fail(__FILE__, line, "thread %d: %s allocation failed (errno %d), group %s",
			  w->id, charged ? "charged" : "uncharged", errno,
			  w->id == limited ? "limited" : "without a limit");
	w->refused++;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uslub_group_set_current(groups[w->id]);
	pthread_barrier_wait(&start);
	long iters = scaled(600000);
	for (long it = 0; it < iters; it++) {
		if (it == iters / 2) {
			atomic_fetch_add(&halfway, 1);
			pthread_barrier_wait(&pause_b); /* main checks, stocks held */
			pthread_barrier_wait(&pause_b);
			uslub_group_drain_stock();
			pthread_barrier_wait(&pause_b); /* main checks, drained */
			pthread_barrier_wait(&pause_b);
		}
		unsigned op = (unsigned)rng_below(&w->rng, 100);
		/* the limited thread mostly allocates: it runs into its limit */
		if (w->id == limited && op >= 45 && op < 75)
			op -= 45;
		if (op < 40) {
			unsigned k = (unsigned)rng_below(&w->rng, 20);
			int c = k < 10 ? CA : CB, site = k < 10 ? 0 : k < 17 ? 1 : 2;
			errno = 0;
			void *p = site == 0 ? alloc_a() : site == 1 ? alloc_b_acct() : alloc_b_plain();
			if (!p) {
				refused(w, site != 2, __LINE__);
				continue;
			}
			born(w, p, c, site, site != 2);
			keep(w, p);
		} else if (op < 45) {
			void *p[24];
			size_t n = 1 + (size_t)rng_below(&w->rng, 24);
			int c = rng_below(&w->rng, 2) ? CA : CB;
			errno = 0;
			int got = alloc_bulk(c, c == CB ? USLUB_GFP_ACCOUNT : 0, n, p);
			if (!got) {
				refused(w, true, __LINE__);
				continue;
			}
			CHECK_EQ(got, (long long)n);
			w->bulks++;
			for (size_t i = 0; i < n; i++)
				born(w, p[i], c, 3, true);
			/* half of them go back at once, with free_bulk */
			size_t half = n / 2;
			for (size_t i = 0; i < half; i++)
				dying(p[i], __LINE__);
			uslub_cache_free_bulk(caches[c], half, p);
			for (size_t i = half; i < n; i++)
				keep(w, p[i]);
		} else if (op < 80) {
			if (w->nlocal)
				kill_obj(take_local(w), __LINE__);
		} else if (op < 85) {
			/* kfree_bulk of up to 16 local objects, both caches mixed */
			void *p[16];
			size_t n = 0, want = 1 + (size_t)rng_below(&w->rng, 16);
			while (n < want && w->nlocal) {
				p[n] = take_local(w);
				dying(p[n], __LINE__);
				n++;
			}
			uslub_kfree_bulk(n, p);
		} else {
			void *p = atomic_exchange(&xslots[rng_below(&w->rng, XSLOTS)], NULL);
			if (p) {
				kill_obj(p, __LINE__);
				w->remote_frees++;
			}
		}
	}
	uslub_group_set_current(NULL);
	atomic_fetch_add(&finished, 1);
	return NULL; /* local objects stay live; thread exit drains the stock */
}

static int parent_of(int i)
{
	return i % 2 ? i - 1 : -1;
}

static size_t charge[NCACHES];

static size_t expected_usage(int g)
{
	size_t sum = 0;
	for (int h = 0; h < nthreads; h++) {
		bool in = false;
		for (int a = h; a >= 0; a = parent_of(a))
			if (a == g)
				in = true;
		if (in)
			for (int c = 0; c < NCACHES; c++)
				sum += (size_t)atomic_load(&live[h][c]) * charge[c];
	}
	return sum;
}

/* At a quiescent point: @exact, the stocks drained (usage == the model),
 * else usage within [model, model + the stocks] (the bound above). */
static void check_usage(const char *when, bool exact)
{
	for (int c = 0; c < NCACHES; c++) {
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		charge[c] = si.obj_ext_charge;
	}
	size_t excess_top = 0;
	for (int g = 0; g < nthreads; g++) {
		size_t u = uslub_group_usage(groups[g]), want = expected_usage(g);
		if (exact)
			CHECK_MSG(u == want, "%s: group %d usage %zu, the model says %zu (charges "
				  "%zu / %zu)", when, g, u, want, charge[CA], charge[CB]);
		else
			CHECK_MSG(u >= want && u - want <= (size_t)nthreads * stock_cap,
				  "%s: group %d usage %zu, the model says %zu: outside [model, model + "
				  "%d threads x %zu stock]", when, g, u, want, nthreads, stock_cap);
		if (parent_of(g) < 0)
			excess_top += u - want;
		for (int c = 0; c < NCACHES; c++) {
			unsigned long objs = 0;
			size_t bytes = 0;
			CHECK_EQ(uslub_group_cache_usage(groups[g], caches[c], &objs, &bytes), 0);
			long m = atomic_load(&live[g][c]);
			CHECK_MSG(objs == (unsigned long)m && bytes == (size_t)m * charge[c],
				  "%s: group %d cache %s: %lu objects %zu bytes, the model %ld objects",
				  when, g, uslub_cache_name(caches[c]), objs, bytes, m);
		}
	}
	CHECK_MSG(excess_top <= (size_t)nthreads * stock_cap,
		  "%s: the top-level groups hold %zu bytes more than their objects' charges, more "
		  "than %d threads' stocks (%zu each)", when, excess_top, nthreads, stock_cap);
}

static void check_model(const char *when)
{
	uslub_group_drain_stock();
	check_usage(when, true);
	for (int c = 0; c < NCACHES; c++) {
		long total = 0;
		for (int g = 0; g <= nthreads; g++)
			total += atomic_load(&live[g][c]);
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		CHECK_MSG(si.live_objs == (unsigned long)total, "%s: cache %s live_objs %lu, model %ld",
			  when, si.name, si.live_objs, total);
		long v = uslub_cache_validate(caches[c]);
		CHECK_MSG(v == 0, "%s: cache %s: validate found %ld inconsistencies", when, si.name, v);
	}
	int sampled = uslub_profiling_enabled() == 2;
	if (uslub_profiling_enabled()) {
		struct uslub_allocinfo out[256];
		size_t n = uslub_allocinfo(out, 256);
		CHECK(n <= 256);
		int found[NSITES] = { 0 };
		for (size_t i = 0; i < n; i++) {
			if (strcmp(out[i].file, __FILE__))
				continue;
			int s;
			for (s = 0; s < NSITES; s++)
				if ((int)out[i].line == atomic_load(&site_line[s]))
					break;
			CHECK_MSG(s < NSITES, "%s: allocinfo lists line %u, not a call site", when,
				  out[i].line);
			found[s]++;
			long calls = 0, bytes = 0;
			for (int c = 0; c < NCACHES; c++) {
				long m = atomic_load(&site_live[s][c]);
				calls += m;
				bytes += m * (long)slabinfo_get(caches[c]).size;
			}
			/* sampled mode: estimates, but a site without live
			 * objects is at exactly 0 (not listed) */
			CHECK_MSG(sampled ? calls > 0 && out[i].calls > 0 && out[i].bytes > 0 :
				  out[i].calls == calls && out[i].bytes == bytes,
				  "%s: site line %u: allocinfo %" PRId64 " objects %" PRId64
				  " bytes, the model %ld and %ld", when, out[i].line, out[i].calls,
				  out[i].bytes, calls, bytes);
		}
		for (int s = 0; s < NSITES; s++) {
			long m = atomic_load(&site_live[s][CA]) + atomic_load(&site_live[s][CB]);
			CHECK_MSG(sampled ? found[s] <= (m > 0) : found[s] == (m > 0),
				  "%s: site line %d (%ld live) listed %d times",
				  when, atomic_load(&site_line[s]), m, found[s]);
		}
	}
}

/* Sample usage while the workers run, until @count reaches them all:
 * never a wrapped (negative) value. */
static unsigned long sample_until(atomic_int *count)
{
	unsigned long samples = 0;
	while (atomic_load(count) < nthreads) {
		for (int g = 0; g < nthreads; g++) {
			size_t u = uslub_group_usage(groups[g]);
			CHECK_MSG(u < ((size_t)1 << 40), "group %d: usage %zu while running (wrapped?)",
				  g, u);
			struct uslub_group_info gi;
			CHECK_EQ(uslub_group_info(groups[g], &gi), 0);
			CHECK(gi.usage < ((size_t)1 << 40));
		}
		samples++;
		usleep(2000);
	}
	return samples;
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
	uint64_t seed = test_seed(0x5eed0a11);
	const char *e = getenv("USLUB_TEST_THREADS");
	nthreads = e ? atoi(e) : 4;
	CHECK(nthreads >= 2 && nthreads <= MAX_THREADS);
	double t0 = now_s();
	unsigned long err0 = uslub_error_count();
	unsigned long groups0 = uslub_group_count(), objcg0 = uslub_objcg_count();

	caches[CA] = uslub_cache_create("acct-thr-a", sizes[CA], 0, USLUB_ACCOUNT, NULL);
	caches[CB] = uslub_cache_create("acct-thr-b", sizes[CB], 0, 0, NULL);
	CHECK(caches[CA] && caches[CB]);
	limited = nthreads - 1;
	limit_bytes = 48 * 1024 + 8192;
	for (int i = 0; i < nthreads; i++) {
		char name[32];
		snprintf(name, sizeof(name), "thr-%d", i);
		int par = parent_of(i);
		groups[i] = uslub_group_create(par >= 0 ? groups[par] : NULL, name,
					       i == limited ? limit_bytes : USLUB_GROUP_NO_LIMIT);
		CHECK(groups[i]);
		workers[i].id = i;
		workers[i].rng.s = seed + 0x1000ull * (uint64_t)(i + 1);
	}
	CHECK(pthread_barrier_init(&start, NULL, (unsigned)nthreads) == 0);
	CHECK(pthread_barrier_init(&pause_b, NULL, (unsigned)nthreads + 1) == 0);
	e = getenv("USLUB_ACCOUNT_BATCH");
	stock_cap = 2 * (e && *e ? (size_t)strtoull(e, NULL, 10) : 8192);
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_create(&workers[i].th, NULL, worker_fn, &workers[i]) == 0);
	unsigned long samples = sample_until(&halfway);
	/* the quiescent point halfway */
	pthread_barrier_wait(&pause_b);
	check_usage("halfway (stocks held)", false);
	pthread_barrier_wait(&pause_b);
	pthread_barrier_wait(&pause_b);
	check_usage("halfway (stocks drained)", true);
	pthread_barrier_wait(&pause_b);
	samples += sample_until(&finished);
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_join(workers[i].th, NULL) == 0);

	check_model("after join");
	struct uslub_group_info li;
	CHECK_EQ(uslub_group_info(groups[limited], &li), 0);
	CHECK_MSG(li.failcnt >= (unsigned long)workers[limited].refused,
		  "limited group: failcnt %lu, %ld allocations refused", li.failcnt,
		  workers[limited].refused);
	CHECK(li.usage <= limit_bytes);
	CHECK_MSG(workers[limited].refused > 0, "the limited group never refused a charge");

	/* free the rest: exchange slots here, half of the local sets elsewhere */
	struct bag bag = { malloc(sizeof(void *) * (size_t)nthreads * LOCAL_MAX), 0 };
	CHECK(bag.p);
	long total_allocs = 0, remote = 0, refusals = 0, bulks = 0;
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];
		for (int k = 0; k < w->nlocal; k++) {
			if (k % 2)
				bag.p[bag.n++] = w->local[k];
			else
				kill_obj(w->local[k], __LINE__);
		}
		w->nlocal = 0;
		total_allocs += w->allocs;
		remote += w->remote_frees;
		refusals += w->refused;
		bulks += w->bulks;
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
	check_model("after freeing everything");
	for (int g = 0; g < nthreads; g++)
		CHECK_EQU(uslub_group_usage(groups[g]), 0);
	CHECK(remote > 0);
	CHECK(bulks > 0);

	for (int i = nthreads - 1; i >= 0; i--)
		CHECK_MSG(uslub_group_delete(groups[i]) == 0, "delete group %d: errno %d", i, errno);
	CHECK_EQU(uslub_group_count(), groups0);
	uslub_group_drain_stock();
	CHECK_MSG(uslub_objcg_count() == objcg0, "objcg count %lu at the end, %lu at the start",
		  uslub_objcg_count(), objcg0);
	uslub_flush_thread();
	for (int c = 0; c < NCACHES; c++) {
		uslub_cache_shrink(caches[c]);
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		CHECK_EQU(si.live_objs, 0);
		CHECK_EQU(si.num_slabs, 0);
		CHECK_EQ(uslub_cache_validate(caches[c]), 0);
		CHECK_EQ(uslub_cache_destroy(caches[c]), 0);
	}
	CHECK_EQU(uslub_error_count(), err0);
	printf("account_threads: ok: %d threads, %ld objects (%ld freed remotely, %ld bulks, %ld "
	       "refused at the limit), %lu usage samples, profiling %d, %.2f s\n",
	       nthreads, total_allocs, remote, bulks, refusals, samples,
	       uslub_profiling_enabled(), now_s() - t0);
	return 0;
}
