/*
 * remote_free: cross-thread frees.
 * NTHREADS threads allocate from three shared caches and hand every object
 * to another thread through per-thread mutex-protected queues; the receiver
 * checks the object's stamp (owner, sequence, cache, address hash, fill
 * pattern) and frees it, so most frees are remote (into the freeing
 * thread's sheaves; with USLUB_CPU_SLABS=1 onto another thread's cpu
 * slab, cpu partial or full slabs). Each (owner, seq) must be freed
 * exactly once. At the end every object must have come back: the counters'
 * allocs (ALLOC_FASTPATH + ALLOC_SLOWPATH + ALLOC_PCS) == frees (FREE_* +
 * FREE_PCS) == objects the test allocated, live_objs == 0, active_objs ==
 * the objects in the barn's full sheaves (0 without sheaves: the
 * USLUB_CPU_SLABS=1 variant), 0 and no slab after a shrink,
 * validate == 0, destroy == 0.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define NCACHES 3
#define MAX_THREADS 16
#define OUTBOX 16
#define MAX_INFLIGHT 20000
#define MAX_SEQ (1u << 22) /* per-thread objects, bitmap bound */

struct stamp {
	struct stamp *next;
	uint32_t owner;
	uint32_t cache;
	uint64_t seq;
	uint64_t check;
};

struct queue {
	pthread_mutex_t lock;
	struct stamp *head;
	size_t len;
} __attribute__((aligned(64)));

struct worker {
	pthread_t th;
	int id;
	struct rng rng;
	uint64_t allocated[NCACHES];
	uint64_t freed[NCACHES];
	uint64_t local_frees;
	uint64_t seq;
	_Atomic uint64_t *seen; /* bitmap of this owner's freed seqs */
	struct stamp *outbox[MAX_THREADS];
	int outlen[MAX_THREADS];
};

static const size_t sizes[NCACHES] = { 48, 256, 1500 };
static const unsigned int cflags[NCACHES] = { 0, USLUB_HWCACHE_ALIGN, 0 };
static uslub_cache_t *caches[NCACHES];
static struct queue queues[MAX_THREADS];
static struct worker workers[MAX_THREADS];
static int nthreads;
static atomic_int stop;
static atomic_long inflight;

static uint64_t stamp_hash(const struct stamp *st)
{
	uint64_t h = (uint64_t)(uintptr_t)st * 0x9e3779b97f4a7c15ull;
	h ^= ((uint64_t)st->owner << 48) ^ ((uint64_t)st->cache << 40) ^ st->seq;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static unsigned char fill_byte(const struct stamp *st, size_t i)
{
	return (unsigned char)(st->seq * 13 + st->owner * 101 + i);
}

static void stamp_obj(struct stamp *st, uint32_t owner, uint32_t cache, uint64_t seq)
{
	st->next = NULL;
	st->owner = owner;
	st->cache = cache;
	st->seq = seq;
	st->check = stamp_hash(st);
	unsigned char *c = (unsigned char *)st;
	for (size_t i = sizeof(*st); i < sizes[cache]; i++)
		c[i] = fill_byte(st, i);
}

/* Verify the object and free it (from whichever thread calls). */
static void check_and_free(struct stamp *st, int line)
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
			test_fail(__FILE__, line,
				  "object %p (cache %u, owner %u, seq %" PRIu64 ") byte %zu corrupted",
				  (void *)st, st->cache, st->owner, st->seq, i);
	if (st->seq >= MAX_SEQ)
		test_fail(__FILE__, line, "seq %" PRIu64 " out of range", st->seq);
	uint64_t bit = 1ull << (st->seq % 64);
	uint64_t old = atomic_fetch_or(&workers[st->owner].seen[st->seq / 64], bit);
	if (old & bit)
		test_fail(__FILE__, line, "object owner %u seq %" PRIu64 " freed twice", st->owner,
			  st->seq);
	uint32_t cache = st->cache;
	st->check = ~st->check; /* a stale copy seen again must not verify */
	uslub_cache_free(caches[cache], st);
}

static void push_outbox(struct worker *w, int dest)
{
	struct stamp *first = w->outbox[dest], *last = first;
	int n = w->outlen[dest];
	if (!n)
		return;
	while (last->next)
		last = last->next;
	struct queue *q = &queues[dest];
	pthread_mutex_lock(&q->lock);
	last->next = q->head;
	q->head = first;
	q->len += (size_t)n;
	pthread_mutex_unlock(&q->lock);
	w->outbox[dest] = NULL;
	w->outlen[dest] = 0;
}

static size_t drain_own(struct worker *w)
{
	struct queue *q = &queues[w->id];
	pthread_mutex_lock(&q->lock);
	struct stamp *st = q->head;
	size_t n = q->len;
	q->head = NULL;
	q->len = 0;
	pthread_mutex_unlock(&q->lock);
	size_t k = 0;
	while (st) {
		struct stamp *next = st->next;
		uint32_t c = st->cache < NCACHES ? st->cache : 0;
		check_and_free(st, __LINE__);
		w->freed[c]++;
		k++;
		st = next;
	}
	CHECK_EQU(k, n);
	atomic_fetch_sub(&inflight, (long)k);
	return k;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&inflight, memory_order_relaxed) < MAX_INFLIGHT &&
		    w->seq + 64 < MAX_SEQ) {
			for (int b = 0; b < 32; b++) {
				uint32_t c = (uint32_t)rng_below(&w->rng, NCACHES);
				struct stamp *st = uslub_cache_alloc(caches[c], 0);
				CHECK_MSG(st, "thread %d: alloc from cache %u failed", w->id, c);
				CHECK(uslub_owns(st));
				stamp_obj(st, (uint32_t)w->id, c, w->seq++);
				w->allocated[c]++;
				if (rng_below(&w->rng, 10) == 0) {
					/* some local frees keep the fast path in the mix */
					check_and_free(st, __LINE__);
					w->freed[c]++;
					w->local_frees++;
					continue;
				}
				int dest = (int)rng_below(&w->rng, (uint64_t)nthreads - 1);
				if (dest >= w->id)
					dest++;
				st->next = w->outbox[dest];
				w->outbox[dest] = st;
				atomic_fetch_add(&inflight, 1);
				if (++w->outlen[dest] == OUTBOX)
					push_outbox(w, dest);
			}
		}
		if (!drain_own(w))
			sched_yield();
	}
	for (int d = 0; d < nthreads; d++)
		push_outbox(w, d);
	return NULL;
}

int main(void)
{
	uint64_t seed = test_seed(0x5eed0001);
	const char *e = getenv("USLUB_TEST_THREADS");
	nthreads = e ? atoi(e) : 4;
	CHECK(nthreads >= 2 && nthreads <= MAX_THREADS);
	double duration = test_sanitized() ? 1.0 : 1.5;
	unsigned long err0 = uslub_error_count();

	for (int c = 0; c < NCACHES; c++) {
		char name[32];
		snprintf(name, sizeof(name), "remote-free-%zu", sizes[c]);
		caches[c] = uslub_cache_create(name, sizes[c], 0, cflags[c], NULL);
		CHECK(caches[c]);
	}
	for (int i = 0; i < nthreads; i++) {
		CHECK(pthread_mutex_init(&queues[i].lock, NULL) == 0);
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

	/* what is left in the queues is freed here */
	uint64_t main_frees[NCACHES] = { 0 };
	for (int i = 0; i < nthreads; i++) {
		struct stamp *st = queues[i].head;
		queues[i].head = NULL;
		while (st) {
			struct stamp *next = st->next;
			uint32_t c = st->cache < NCACHES ? st->cache : 0;
			check_and_free(st, __LINE__);
			main_frees[c]++;
			st = next;
		}
	}
	uslub_flush_thread();

	uint64_t grand = 0, local = 0;
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
		printf("cache %-5zu allocs %8" PRIu64 " (fast %" PRIu64 " slow %" PRIu64
		       " pcs %" PRIu64 ") frees fast %" PRIu64 " slow %" PRIu64 " pcs %" PRIu64
		       " frozen %" PRIu64 " cpu_partial_free %" PRIu64 " slabs %" PRIu64 "\n",
		       sizes[c], allocated, st[USLUB_ALLOC_FASTPATH], st[USLUB_ALLOC_SLOWPATH],
		       st[USLUB_ALLOC_PCS], st[USLUB_FREE_FASTPATH], st[USLUB_FREE_SLOWPATH],
		       st[USLUB_FREE_PCS], st[USLUB_FREE_FROZEN], st[USLUB_CPU_PARTIAL_FREE],
		       st[USLUB_ALLOC_SLAB]);
		CHECK_MSG(stat_allocs(st) == allocated,
			  "cache %zu: counters say %" PRIu64 " allocs, the test made %" PRIu64,
			  sizes[c], stat_allocs(st), allocated);
		CHECK_MSG(stat_frees(st) == allocated,
			  "cache %zu: counters say %" PRIu64 " frees, the test made %" PRIu64,
			  sizes[c], stat_frees(st), allocated);
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		/* remote frees happened: to the freeing thread's sheaves, flushed
		 * to the slabs later, or (USLUB_CPU_SLABS=1) to slabs; per-CPU
		 * sheaves (USLUB_PERCPU=cpu), as few as the CPUs, may all go
		 * back whole through the barn */
		if (si.sheaf_capacity)
			CHECK(st[USLUB_FREE_PCS] > 0 &&
			      (st[USLUB_SHEAF_FLUSH] > 0 || !strcmp(si.percpu_mode, "cpu")));
		else
			CHECK(st[USLUB_FREE_SLOWPATH] > 0);
		CHECK_MSG(si.live_objs == 0, "cache %zu: live_objs %lu", sizes[c], si.live_objs);
		/* nothing held but the barn's full sheaves (none: USLUB_CPU_SLABS=1) */
		CHECK_MSG(si.active_objs == si.barn_full * si.sheaf_capacity,
			  "cache %zu: active_objs %lu after all threads exited and the main thread "
			  "flushed (barn %lu full sheaves of %u)", sizes[c], si.active_objs,
			  si.barn_full, si.sheaf_capacity);
		long v = uslub_cache_validate(caches[c]);
		CHECK_MSG(v == 0, "cache %zu: validate found %ld inconsistencies", sizes[c], v);
		uslub_cache_shrink(caches[c]);
		si = slabinfo_get(caches[c]);
		CHECK_EQU(si.active_objs, 0);
		CHECK_EQU(si.num_slabs, 0);
		CHECK_EQ(uslub_cache_validate(caches[c]), 0);
		CHECK_EQ(uslub_cache_destroy(caches[c]), 0);
	}
	/* every (owner, seq) was freed exactly once */
	for (int i = 0; i < nthreads; i++) {
		local += workers[i].local_frees;
		for (uint64_t q = 0; q < workers[i].seq; q++)
			CHECK_MSG(atomic_load(&workers[i].seen[q / 64]) >> (q % 64) & 1,
				  "object owner %d seq %" PRIu64 " never came back", i, q);
		free(workers[i].seen);
	}
	CHECK_EQU(uslub_error_count(), err0);
	printf("remote_free: ok: %d threads, %" PRIu64 " objects (%" PRIu64 " freed locally)\n",
	       nthreads, grand, local);
	return 0;
}
