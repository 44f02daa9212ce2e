/*
 * sheaves: cross-thread traffic on caches with per-CPU sheaves.
 * NTHREADS threads allocate from three caches (two with an explicit
 * sheaf_capacity, one with the default: sheaves, none with
 * USLUB_CPU_SLABS=1) singly, with alloc_bulk, and from prefilled sheaves
 * (prefill / alloc_from_sheaf / refill / return), stamp every object
 * (owner, sequence, cache, address hash, fill pattern) and hand most of
 * them to another thread through per-thread rings. The receiver checks
 * each stamp and frees the objects singly, with free_bulk (per cache) or
 * with kfree_bulk (caches mixed), so most frees are remote and land in the
 * receiver's sheaves, the barn and other threads' slabs. Now and then a
 * thread flushes itself or shrinks a cache (flushing the barns under the
 * others' feet).
 * Each (owner, seq) must be freed exactly once. At the end (every worker
 * flushed itself with uslub_flush_thread before exiting; the main thread
 * frees what is left in the rings and flushes): the counter invariant
 * holds (ALLOC_FASTPATH + ALLOC_SLOWPATH + ALLOC_PCS == objects the test
 * allocated == FREE_FASTPATH + FREE_SLOWPATH + FREE_PCS), live_objs == 0,
 * validate == 0, the sheaves were used (ALLOC_PCS, FREE_PCS, BARN_PUT and
 * BARN_GET > 0 on the sheaf caches), and after a shrink no object is
 * active, no slab and no barn sheaf is left, every sheaf struct made was
 * freed (SHEAF_ALLOC == SHEAF_FREE), and destroy succeeds.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define NCACHES 3
#define MAX_THREADS 16
#define RING 1024
#define BATCH 64
#define MAX_SEQ (1u << 22)

struct stamp {
	uint32_t owner;
	uint32_t cache;
	uint64_t seq;
	uint64_t check;
};

struct ring {
	pthread_mutex_t lock;
	struct stamp *slot[RING];
	size_t head, len;
} __attribute__((aligned(64)));

struct worker {
	pthread_t th;
	int id;
	struct rng rng;
	uint64_t allocated[NCACHES];
	uint64_t freed[NCACHES];
	uint64_t seq;
	uint64_t bulk_allocs, sheaf_allocs, bulk_frees, kfree_bulks, shrinks;
	_Atomic uint64_t *seen;
};

static const size_t sizes[NCACHES] = { 64, 512, 200 };
static const unsigned int caps[NCACHES] = { 32, 12, 0 };
static uslub_cache_t *caches[NCACHES];
static struct ring rings[MAX_THREADS];
static struct worker workers[MAX_THREADS];
static int nthreads;
static atomic_int stop;

static uint64_t stamp_hash(const struct stamp *st)
{
	uint64_t h = (uint64_t)(uintptr_t)st * 0x9e3779b97f4a7c15ull;
	h ^= ((uint64_t)st->owner << 48) ^ ((uint64_t)st->cache << 40) ^ st->seq;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static unsigned char fill_byte(const struct stamp *st, size_t i)
{
	return (unsigned char)(st->seq * 7 + st->owner * 31 + i);
}

static void stamp_obj(struct worker *w, void *p, uint32_t cache)
{
	CHECK_MSG(p, "thread %d: allocation from cache %u failed", w->id, cache);
	CHECK(uslub_owns(p));
	CHECK(w->seq < MAX_SEQ);
	struct stamp *st = p;
	st->owner = (uint32_t)w->id;
	st->cache = cache;
	st->seq = w->seq++;
	st->check = stamp_hash(st);
	unsigned char *c = p;
	for (size_t i = sizeof(*st); i < sizes[cache]; i++)
		c[i] = fill_byte(st, i);
	w->allocated[cache]++;
}

/* Verify and mark freed; returns the cache index. The caller frees. */
static uint32_t check_obj(struct stamp *st, int line)
{
	if (st->owner >= (uint32_t)nthreads || st->cache >= NCACHES)
		test_fail(__FILE__, line, "object %p: bad stamp owner %u cache %u", (void *)st,
			  st->owner, st->cache);
	if (st->check != stamp_hash(st))
		test_fail(__FILE__, line, "object %p: stamp hash mismatch (owner %u seq %" PRIu64 ")",
			  (void *)st, st->owner, st->seq);
	const unsigned char *c = (const unsigned char *)st;
	for (size_t i = sizeof(*st); i < sizes[st->cache]; i++)
		if (c[i] != fill_byte(st, i))
			test_fail(__FILE__, line, "object %p (cache %u owner %u seq %" PRIu64
				  ") byte %zu corrupted", (void *)st, st->cache, st->owner, st->seq, i);
	uint64_t bit = 1ull << (st->seq % 64);
	uint64_t old = atomic_fetch_or(&workers[st->owner].seen[st->seq / 64], bit);
	if (old & bit)
		test_fail(__FILE__, line, "object owner %u seq %" PRIu64 " freed twice", st->owner,
			  st->seq);
	st->check = ~st->check;
	return st->cache;
}

/* Hand @p to thread @dest; false if its ring is full (caller frees). */
static bool send(int dest, void *p)
{
	struct ring *r = &rings[dest];
	bool ok = false;
	pthread_mutex_lock(&r->lock);
	if (r->len < RING) {
		r->slot[(r->head + r->len) % RING] = p;
		r->len++;
		ok = true;
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

static size_t receive(int id, void **out, size_t max)
{
	struct ring *r = &rings[id];
	size_t n = 0;
	pthread_mutex_lock(&r->lock);
	while (r->len && n < max) {
		out[n++] = r->slot[r->head];
		r->head = (r->head + 1) % RING;
		r->len--;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* Free @n checked objects in one of three ways. */
static void free_objs(struct worker *w, void **v, size_t n)
{
	if (!n)
		return;
	uint32_t which[RING];
	for (size_t i = 0; i < n; i++) {
		which[i] = check_obj(v[i], __LINE__);
		w->freed[which[i]]++;
	}
	uint64_t how = rng_below(&w->rng, 3);
	if (how == 0) {
		for (size_t i = 0; i < n; i++)
			uslub_cache_free(caches[which[i]], v[i]);
	} else if (how == 1) {
		/* per cache, with a NULL here and there */
		void *g[2 * RING];
		for (uint32_t c = 0; c < NCACHES; c++) {
			size_t m = 0;
			for (size_t i = 0; i < n; i++)
				if (which[i] == c) {
					if (rng_below(&w->rng, 16) == 0)
						g[m++] = NULL;
					g[m++] = v[i];
				}
			if (m)
				uslub_cache_free_bulk(caches[c], m, g);
		}
		w->bulk_frees++;
	} else {
		uslub_kfree_bulk(n, v);
		w->kfree_bulks++;
	}
}

static void dispatch(struct worker *w, void *p, void **local, size_t *nlocal)
{
	int dest = (int)rng_below(&w->rng, (uint64_t)nthreads);
	if (dest == w->id || !send(dest, p))
		local[(*nlocal)++] = p;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	void *batch[BATCH], *local[4 * BATCH + RING], *in[RING];
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t nlocal = 0;
		uint32_t c = (uint32_t)rng_below(&w->rng, NCACHES);
		uint64_t how = rng_below(&w->rng, 10);
		if (w->seq + 4 * BATCH >= MAX_SEQ) {
			/* out of sequence numbers: only free from now on */
		} else if (how < 4) {
			size_t k = 1 + rng_below(&w->rng, BATCH);
			for (size_t i = 0; i < k; i++) {
				void *p = uslub_cache_alloc(caches[c], 0);
				stamp_obj(w, p, c);
				dispatch(w, p, local, &nlocal);
			}
		} else if (how < 8) {
			size_t k = 1 + rng_below(&w->rng, BATCH);
			int got = uslub_cache_alloc_bulk(caches[c], rng_below(&w->rng, 4) ? 0 :
							 USLUB_GFP_ZERO, k, batch);
			CHECK_MSG(got == (int)k, "thread %d: alloc_bulk(%zu) returned %d", w->id, k,
				  got);
			w->bulk_allocs++;
			for (size_t i = 0; i < k; i++) {
				stamp_obj(w, batch[i], c);
				dispatch(w, batch[i], local, &nlocal);
			}
		} else {
			/* a prefilled sheaf: prefill, take some, refill, take, return */
			unsigned int want = 1 + (unsigned int)rng_below(&w->rng, BATCH);
			struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(caches[c], 0, want);
			CHECK_MSG(sh, "thread %d: prefill(%u) failed", w->id, want);
			CHECK(uslub_cache_sheaf_size(sh) >= want);
			for (unsigned int i = 0; i < want; i++) {
				void *p = uslub_cache_alloc_from_sheaf(caches[c], USLUB_GFP_NOWAIT, sh);
				stamp_obj(w, p, c);
				dispatch(w, p, local, &nlocal);
			}
			unsigned int more = (unsigned int)rng_below(&w->rng, BATCH);
			CHECK_EQ(uslub_cache_refill_sheaf(caches[c], 0, &sh, more), 0);
			CHECK(uslub_cache_sheaf_size(sh) >= more);
			for (unsigned int i = 0; i < more / 2; i++) {
				void *p = uslub_cache_alloc_from_sheaf(caches[c], USLUB_GFP_ATOMIC, sh);
				stamp_obj(w, p, c);
				dispatch(w, p, local, &nlocal);
			}
			uslub_cache_return_sheaf(caches[c], 0, sh);
			w->sheaf_allocs++;
		}
		size_t nin = receive(w->id, in, RING);
		if (nin)
			free_objs(w, in, nin);
		free_objs(w, local, nlocal);
		uint64_t r = rng_below(&w->rng, 1000);
		if (r < 3) {
			uslub_flush_thread();
		} else if (r < 5) {
			CHECK(uslub_cache_shrink(caches[rng_below(&w->rng, NCACHES)]) >= 0);
			w->shrinks++;
		}
		if (!nin && !nlocal)
			sched_yield();
	}
	/* drain what others sent until the ring stays empty a while */
	for (int idle = 0; idle < 3;) {
		size_t nin = receive(w->id, in, RING);
		free_objs(w, in, nin);
		idle = nin ? 0 : idle + 1;
		sched_yield();
	}
	uslub_flush_thread();
	return NULL;
}

int main(void)
{
	uint64_t seed = test_seed(0x5eaf0001);
	const char *e = getenv("USLUB_TEST_THREADS");
	nthreads = e ? atoi(e) : 4;
	CHECK(nthreads >= 2 && nthreads <= MAX_THREADS);
	double duration = test_sanitized() ? 1.0 : 1.5;
	unsigned long err0 = uslub_error_count();

	for (int c = 0; c < NCACHES; c++) {
		char name[32];
		snprintf(name, sizeof(name), "sheaves-%zu", sizes[c]);
		struct uslub_cache_args args;
		memset(&args, 0, sizeof(args));
		args.sheaf_capacity = caps[c];
		caches[c] = uslub_cache_create_args(name, sizes[c], &args, 0);
		CHECK(caches[c]);
		CHECK(uslub_cache_sheaf_capacity(caches[c]) >= caps[c]);
	}
	for (int i = 0; i < nthreads; i++) {
		CHECK(pthread_mutex_init(&rings[i].lock, NULL) == 0);
		workers[i].id = i;
		workers[i].rng.s = seed + 0x1000ull * (uint64_t)(i + 1);
		workers[i].seen = calloc(MAX_SEQ / 64, sizeof(uint64_t));
		CHECK(workers[i].seen);
	}
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_create(&workers[i].th, NULL, worker_fn, &workers[i]) == 0);
	double t0 = now_s();
	while (now_s() - t0 < duration)
		usleep(20000);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_join(workers[i].th, NULL) == 0);

	/* objects sent after their receiver stopped draining */
	uint64_t main_frees[NCACHES] = { 0 };
	for (int i = 0; i < nthreads; i++) {
		void *in[RING];
		size_t n = receive(i, in, RING);
		for (size_t k = 0; k < n; k++) {
			uint32_t c = check_obj(in[k], __LINE__);
			uslub_cache_free(caches[c], in[k]);
			main_frees[c]++;
		}
	}
	uslub_flush_thread();

	uint64_t grand = 0, bulk = 0, sheaf = 0, fb = 0, kb = 0, shr = 0;
	for (int i = 0; i < nthreads; i++) {
		bulk += workers[i].bulk_allocs;
		sheaf += workers[i].sheaf_allocs;
		fb += workers[i].bulk_frees;
		kb += workers[i].kfree_bulks;
		shr += workers[i].shrinks;
	}
	for (int c = 0; c < NCACHES; c++) {
		uint64_t allocated = 0, freed = main_frees[c];
		for (int i = 0; i < nthreads; i++) {
			allocated += workers[i].allocated[c];
			freed += workers[i].freed[c];
		}
		grand += allocated;
		CHECK_MSG(allocated > 0, "cache %d: no allocations", c);
		CHECK_EQU(freed, allocated);
		uint64_t st[USLUB_NR_STATS];
		uslub_cache_stats(caches[c], st);
		unsigned int cap = uslub_cache_sheaf_capacity(caches[c]);
		printf("cache %-4zu cap %3u allocs %8" PRIu64 " (fast %" PRIu64 " slow %" PRIu64
		       " pcs %" PRIu64 ") frees fast %" PRIu64 " slow %" PRIu64 " pcs %" PRIu64
		       " barn put %" PRIu64 " get %" PRIu64 " sheaf refill %" PRIu64 " flush %" PRIu64
		       "\n", sizes[c], cap, allocated, st[USLUB_ALLOC_FASTPATH],
		       st[USLUB_ALLOC_SLOWPATH], st[USLUB_ALLOC_PCS], st[USLUB_FREE_FASTPATH],
		       st[USLUB_FREE_SLOWPATH], st[USLUB_FREE_PCS], st[USLUB_BARN_PUT],
		       st[USLUB_BARN_GET], st[USLUB_SHEAF_REFILL], st[USLUB_SHEAF_FLUSH]);
		CHECK_MSG(stat_allocs(st) == allocated,
			  "cache %zu: counters say %" PRIu64 " allocs, the test made %" PRIu64,
			  sizes[c], stat_allocs(st), allocated);
		CHECK_MSG(stat_frees(st) == allocated,
			  "cache %zu: counters say %" PRIu64 " frees, the test made %" PRIu64,
			  sizes[c], stat_frees(st), allocated);
		if (cap) {
			CHECK_MSG(st[USLUB_ALLOC_PCS] > 0 && st[USLUB_FREE_PCS] > 0,
				  "cache %zu: sheaves unused", sizes[c]);
			CHECK_MSG(st[USLUB_BARN_PUT] > 0 && st[USLUB_BARN_GET] > 0,
				  "cache %zu: the barn was never used (put %" PRIu64 " get %" PRIu64 ")",
				  sizes[c], st[USLUB_BARN_PUT], st[USLUB_BARN_GET]);
		}
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		CHECK_MSG(si.live_objs == 0, "cache %zu: live_objs %lu", sizes[c], si.live_objs);
		long v = uslub_cache_validate(caches[c]);
		CHECK_MSG(v == 0, "cache %zu: validate found %ld inconsistencies", sizes[c], v);
		/* the barns still hold full sheaves: objects counted active */
		CHECK_MSG(si.active_objs == si.barn_full * cap,
			  "cache %zu: active_objs %lu with %lu full barn sheaves of %u and no thread "
			  "holding any", sizes[c], si.active_objs, si.barn_full, cap);
		uslub_cache_shrink(caches[c]);
		si = slabinfo_get(caches[c]);
		CHECK_MSG(si.active_objs == 0 && si.num_slabs == 0 && si.barn_full == 0 &&
			  si.barn_empty == 0,
			  "cache %zu after shrink: active %lu slabs %lu barn full %lu empty %lu",
			  sizes[c], si.active_objs, si.num_slabs, si.barn_full, si.barn_empty);
		uslub_cache_stats(caches[c], st);
		CHECK_MSG(st[USLUB_SHEAF_ALLOC] == st[USLUB_SHEAF_FREE],
			  "cache %zu: SHEAF_ALLOC %" PRIu64 " != SHEAF_FREE %" PRIu64, sizes[c],
			  st[USLUB_SHEAF_ALLOC], st[USLUB_SHEAF_FREE]);
		CHECK_EQ(uslub_cache_validate(caches[c]), 0);
		CHECK_EQ(uslub_cache_destroy(caches[c]), 0);
	}
	for (int i = 0; i < nthreads; i++) {
		for (uint64_t q = 0; q < workers[i].seq; q++)
			CHECK_MSG(atomic_load(&workers[i].seen[q / 64]) >> (q % 64) & 1,
				  "object owner %d seq %" PRIu64 " never came back", i, q);
		free(workers[i].seen);
	}
	CHECK(bulk > 0 && sheaf > 0 && fb > 0 && kb > 0);
	CHECK_EQU(uslub_error_count(), err0);
	printf("sheaves: ok: %d threads, %" PRIu64 " objects; %" PRIu64 " bulk allocs, %" PRIu64
	       " prefilled sheaves, %" PRIu64 " free_bulk, %" PRIu64 " kfree_bulk, %" PRIu64
	       " shrinks\n", nthreads, grand, bulk, sheaf, fb, kb, shr);
	return 0;
}
