/*
 * Observers racing with the allocator: while worker threads allocate, free
 * remotely, flush and shrink, a reader takes statistics and slabinfo
 * snapshots. Every snapshot must be sane: counters never go backwards
 * (flushes move them between places the reader sums), active_objs never
 * exceeds num_objs, live_objs never exceeds allocations. Then: threads that
 * exit after touching one cache out of many must not commit memory for
 * the cpu slots of the others (slots never used stay on the zero page).
 */
#include "../integration/check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define WORKERS 2
static uslub_cache_t *cache;
static atomic_int stop;
static uint64_t seed;

static void *worker(void *arg)
{
	struct rng r = { (uint64_t)(uintptr_t)arg * 7919 + seed };
	void *held[256];
	int n = 0;
	while (!atomic_load(&stop)) {
		if (n < 256 && rng_below(&r, 3))
			held[n++] = uslub_cache_alloc(cache, 0);
		else if (n)
			uslub_cache_free(cache, held[--n]);
		if (rng_below(&r, 5000) == 0) {
			while (n)
				uslub_cache_free(cache, held[--n]);
			uslub_cache_shrink(cache);      /* flushes this thread's slot */
		}
		if (rng_below(&r, 7000) == 0)
			uslub_flush_thread();
	}
	while (n)
		uslub_cache_free(cache, held[--n]);
	return NULL;
}

static void observe(double seconds)
{
	uint64_t prev[USLUB_NR_STATS] = { 0 }, st[USLUB_NR_STATS];
	long snapshots = 0;
	double end = now_s() + seconds;
	while (now_s() < end) {
		uslub_cache_stats(cache, st);
		for (int i = 0; i < USLUB_NR_STATS; i++)
			CHECK_MSG(st[i] >= prev[i], "%s went backwards: %llu -> %llu",
				  uslub_stat_name((enum uslub_stat_item)i),
				  (unsigned long long)prev[i], (unsigned long long)st[i]);
		memcpy(prev, st, sizeof(st));
		struct uslub_slabinfo si = slabinfo_get(cache);
		CHECK_MSG(si.active_objs <= si.num_objs, "active_objs %lu > num_objs %lu",
			  si.active_objs, si.num_objs);
		CHECK_MSG(si.partial_free <= si.num_objs, "partial_free %lu > num_objs %lu",
			  si.partial_free, si.num_objs);
		snapshots++;
	}
	CHECK(snapshots > 100);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	CHECK(f);
	long size, resident;
	CHECK(fscanf(f, "%ld %ld", &size, &resident) == 2);
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#define MANY 1000
static uslub_cache_t *many[MANY];
static void *touch_one(void *arg)
{
	uslub_cache_t *s = arg;
	void *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	uslub_cache_free(s, p);
	return NULL;
}

int main(void)
{
	seed = test_seed(11);
	cache = uslub_cache_create("observed", 96, 0, 0, NULL);
	CHECK(cache);
	pthread_t th[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&th[i], NULL, worker, (void *)(i + 1)) == 0);
	observe(test_sanitized() ? 0.5 : 1.5);
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	uslub_flush_thread();
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(cache, st);
	CHECK_EQU(stat_allocs(st), stat_frees(st));
	CHECK_EQ(uslub_cache_validate(cache), 0);
	CHECK_EQ(uslub_cache_destroy(cache), 0);

	/* slot pages: 1000 caches, 32 threads each touching one of them */
	for (int i = 0; i < MANY; i++)
		CHECK((many[i] = uslub_cache_create("many", 32, 0, 0, NULL)));
	long before = rss_kib();
	for (int round = 0; round < 4; round++) {
		pthread_t t[8];
		for (int i = 0; i < 8; i++)
			CHECK(pthread_create(&t[i], NULL, touch_one, many[(round * 8 + i) * 31 % MANY]) == 0);
		for (int i = 0; i < 8; i++)
			CHECK(pthread_join(t[i], NULL) == 0);
	}
	long grown = rss_kib() - before;
	/* a flush that wrote every slot would commit 1000 * 512 B per thread;
	 * sanitizer runtimes grow RSS per thread by themselves: not measured */
	if (!test_sanitized())
		CHECK_MSG(grown < 4096, "RSS grew by %ld KiB over 32 thread exits", grown);
	for (int i = 0; i < MANY; i++)
		CHECK_EQ(uslub_cache_destroy(many[i]), 0);
	printf("observers: ok (RSS +%ld KiB over 32 thread exits with %d caches)\n", grown, MANY);
	return 0;
}
