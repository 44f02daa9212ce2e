/*
 * thread_churn: many short-lived threads (waves of WAVE at a time). Each
 * allocates a batch from two shared caches, frees half of it itself, takes
 * objects other (often dead) threads left in a global pool and frees those,
 * and leaves the other half of its batch in the pool. Thread exit must flush
 * the thread's per-CPU slabs: after every thread is joined and the pool is
 * drained, with the main thread flushed, no object is active, no more than
 * min_partial empty slabs per node are kept, and shrink + destroy succeed
 * with validate == 0 and live_objs == 0. Every fourth thread also
 * allocates and frees in a TLS destructor that runs after uslub's own
 * thread-exit hook, and leaves one object from there in the pool.
 */
#include "../integration/check.h"

#include <pthread.h>

#define NCACHES 2
#define WAVE 8

struct hdr {
	uint32_t tid;
	uint32_t cache;
	uint64_t idx;
	uint64_t check;
};

static const size_t sizes[NCACHES] = { 64, 700 };
static uslub_cache_t *caches[NCACHES];

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hdr **pool;
static size_t pool_len, pool_cap;

static uint64_t total_allocs[NCACHES], total_frees[NCACHES];
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seed;
static long batch;

static uint64_t hdr_hash(const struct hdr *h)
{
	uint64_t x = ((uint64_t)h->tid << 32 | h->cache) ^ (h->idx * 0x9e3779b97f4a7c15ull) ^
		     (uint64_t)(uintptr_t)h;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 31);
}

static void stamp(struct hdr *h, uint32_t tid, uint32_t cache, uint64_t idx)
{
	h->tid = tid;
	h->cache = cache;
	h->idx = idx;
	h->check = hdr_hash(h);
	memset(h + 1, (int)(tid ^ idx), sizes[cache] - sizeof(*h));
}

static void check_and_free(struct hdr *h, uint64_t *frees)
{
	CHECK_MSG(h->cache < NCACHES, "object %p: bad cache %u", (void *)h, h->cache);
	CHECK_MSG(h->check == hdr_hash(h), "object %p: stamp corrupted (tid %u idx %" PRIu64 ")",
		  (void *)h, h->tid, h->idx);
	const unsigned char *c = (const unsigned char *)(h + 1);
	for (size_t i = 0; i < sizes[h->cache] - sizeof(*h); i++)
		CHECK_MSG(c[i] == (unsigned char)(h->tid ^ h->idx),
			  "object %p (tid %u idx %" PRIu64 ") byte %zu corrupted", (void *)h, h->tid,
			  h->idx, sizeof(*h) + i);
	uint32_t cache = h->cache;
	h->check = ~h->check;
	uslub_cache_free(caches[cache], h);
	frees[cache]++;
}

/*
 * A TLS destructor that runs after uslub's own thread-exit hook (its key is
 * created later, so glibc runs it later): allocation and free still work
 * once the thread's per-CPU state is gone, and what it leaves is counted.
 */
static pthread_key_t late_key;

static void late_destructor(void *arg)
{
	uint32_t tid = (uint32_t)(uintptr_t)arg - 1;
	uint64_t allocs[NCACHES] = { 0 }, frees[NCACHES] = { 0 };
	struct hdr *h[3];
	for (int i = 0; i < 3; i++) {
		uint32_t c = (uint32_t)(i % NCACHES);
		h[i] = uslub_cache_alloc(caches[c], 0);
		CHECK_MSG(h[i], "thread %u: alloc in a late TLS destructor failed", tid);
		stamp(h[i], tid, c, 1000000 + (uint64_t)i);
		allocs[c]++;
	}
	check_and_free(h[0], frees);
	check_and_free(h[1], frees);
	pthread_mutex_lock(&pool_lock);
	if (pool_len == pool_cap) {
		pool_cap = pool_cap ? pool_cap * 2 : 64;
		pool = realloc(pool, pool_cap * sizeof(*pool));
		CHECK(pool);
	}
	pool[pool_len++] = h[2];
	pthread_mutex_unlock(&pool_lock);
	pthread_mutex_lock(&count_lock);
	for (int c = 0; c < NCACHES; c++) {
		total_allocs[c] += allocs[c];
		total_frees[c] += frees[c];
	}
	pthread_mutex_unlock(&count_lock);
}

static void *thread_fn(void *arg)
{
	uint32_t tid = (uint32_t)(uintptr_t)arg;
	if (tid % 4 == 0)
		CHECK(pthread_setspecific(late_key, (void *)(uintptr_t)(tid + 1)) == 0);
	struct rng rng = { seed ^ ((uint64_t)tid * 0x2545f4914f6cdd1dull) };
	uint64_t allocs[NCACHES] = { 0 }, frees[NCACHES] = { 0 };
	size_t n = (size_t)batch + rng_below(&rng, (uint64_t)batch);
	struct hdr **v = malloc(n * sizeof(*v));
	CHECK(v);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = (uint32_t)rng_below(&rng, NCACHES);
		v[i] = uslub_cache_alloc(caches[c], 0);
		CHECK_MSG(v[i], "thread %u: alloc failed", tid);
		stamp(v[i], tid, c, i);
		allocs[c]++;
	}
	/* free half locally, in random order */
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = rng_below(&rng, i + 1);
		struct hdr *t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	size_t half = n / 2;
	for (size_t i = 0; i < half; i++)
		check_and_free(v[i], frees);

	/* free some of what earlier threads left, then leave ours */
	pthread_mutex_lock(&pool_lock);
	size_t take = pool_len < n ? pool_len : n;
	struct hdr **got = malloc((take ? take : 1) * sizeof(*got));
	CHECK(got);
	for (size_t i = 0; i < take; i++) {
		size_t j = rng_below(&rng, pool_len);
		got[i] = pool[j];
		pool[j] = pool[--pool_len];
	}
	if (pool_len + (n - half) > pool_cap) {
		pool_cap = (pool_len + (n - half)) * 2;
		pool = realloc(pool, pool_cap * sizeof(*pool));
		CHECK(pool);
	}
	for (size_t i = half; i < n; i++)
		pool[pool_len++] = v[i];
	pthread_mutex_unlock(&pool_lock);
	for (size_t i = 0; i < take; i++)
		check_and_free(got[i], frees);
	free(got);
	free(v);

	pthread_mutex_lock(&count_lock);
	for (int c = 0; c < NCACHES; c++) {
		total_allocs[c] += allocs[c];
		total_frees[c] += frees[c];
	}
	pthread_mutex_unlock(&count_lock);
	return NULL;
}

int main(void)
{
	seed = test_seed(0xc4a2);
	long nthreads = scaled(200);
	batch = 300;
	unsigned long err0 = uslub_error_count();
	for (int c = 0; c < NCACHES; c++) {
		char name[32];
		snprintf(name, sizeof(name), "churn-%zu", sizes[c]);
		caches[c] = uslub_cache_create(name, sizes[c], 0, 0, NULL);
		CHECK(caches[c]);
	}
	/* created after uslub's own key (made at library init) */
	CHECK(pthread_key_create(&late_key, late_destructor) == 0);
	long started = 0;
	while (started < nthreads) {
		pthread_t th[WAVE];
		int k = 0;
		for (; k < WAVE && started < nthreads; k++, started++)
			CHECK(pthread_create(&th[k], NULL, thread_fn, (void *)(uintptr_t)started) == 0);
		for (int i = 0; i < k; i++)
			CHECK(pthread_join(th[i], NULL) == 0);
		/* between waves: the counters see every exited thread */
		for (int c = 0; c < NCACHES; c++) {
			uint64_t st[USLUB_NR_STATS];
			uslub_cache_stats(caches[c], st);
			CHECK_MSG(stat_allocs(st) == total_allocs[c] && stat_frees(st) == total_frees[c],
				  "cache %zu after %ld threads: counters %" PRIu64 "/%" PRIu64
				  " allocs/frees, test %" PRIu64 "/%" PRIu64,
				  sizes[c], started, stat_allocs(st), stat_frees(st), total_allocs[c],
				  total_frees[c]);
			CHECK_EQU(slabinfo_get(caches[c]).live_objs, total_allocs[c] - total_frees[c]);
		}
	}
	/* every worker has exited; objects in the pool still live */
	uint64_t pooled[NCACHES] = { 0 };
	for (size_t i = 0; i < pool_len; i++)
		pooled[pool[i]->cache]++;
	for (int c = 0; c < NCACHES; c++) {
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		CHECK_EQU(si.live_objs, pooled[c]);
		CHECK_EQ(uslub_cache_validate(caches[c]), 0);
	}
	uint64_t frees[NCACHES] = { 0 };
	for (size_t i = 0; i < pool_len; i++)
		check_and_free(pool[i], frees);
	for (int c = 0; c < NCACHES; c++)
		total_frees[c] += frees[c];
	free(pool);
	pool = NULL;
	uslub_flush_thread();

	for (int c = 0; c < NCACHES; c++) {
		uslub_cache_t *s = caches[c];
		uint64_t st[USLUB_NR_STATS];
		uslub_cache_stats(s, st);
		CHECK_EQU(total_frees[c], total_allocs[c]);
		CHECK_EQU(stat_allocs(st), total_allocs[c]);
		CHECK_EQU(stat_frees(st), total_frees[c]);
		struct uslub_slabinfo si = slabinfo_get(s);
		CHECK_EQU(si.live_objs, 0);
		/* exited threads' cpu slabs and sheaves were flushed: nothing is
		 * still held but the barn's full sheaves (none: USLUB_CPU_SLABS=1) */
		CHECK_MSG(si.active_objs == si.barn_full * si.sheaf_capacity,
			  "cache %zu: %lu objects still active (held by exited threads' cpu slabs?), "
			  "barn %lu full sheaves of %u", sizes[c], si.active_objs, si.barn_full,
			  si.sheaf_capacity);
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK(uslub_cache_shrink(s) >= 0);
		si = slabinfo_get(s);
		CHECK_EQU(si.num_slabs, 0);
		CHECK_EQU(st[USLUB_ALLOC_SLAB], stat_get(s, USLUB_FREE_SLAB));
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	CHECK_EQU(uslub_error_count(), err0);
	printf("thread_churn: ok: %ld threads, %" PRIu64 " + %" PRIu64 " objects\n", nthreads,
	       total_allocs[0], total_allocs[1]);
	return 0;
}
