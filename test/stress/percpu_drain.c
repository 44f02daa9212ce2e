/*
 * percpu_drain: per-CPU mode's idle drain (sheaf/pcpu.c pcpu_purge(), a
 * purge callback of the page layer's pass). Run with USLUB_PERCPU=cpu,
 * USLUB_DECAY_MS=50 and USLUB_BACKGROUND_THREAD=0 (every purge pass is
 * then one this thread's own calls make, at points the test chooses).
 *
 * What pcpu_purge() does: each pass looks at every id's area; an area
 * whose use count (bumped by every slow path's release) changed since
 * the last pass is marked busy as of now; one marked idle_ns at least
 * USLUB_DECAY_MS ago (and not drained since) has its sheaves taken
 * (remote takes: a stop marker, the rseq fence) and given back as a
 * thread's exit gives them: a full sheaf to its barn (BARN_PUT) while the
 * barn takes it, any other flushed to its slabs (SHEAF_FLUSH counts the
 * objects). A forced pass (uslub_trim()) drains every id at once.
 * Without the purge thread a pass runs from an allocation slow path
 * (_uslub_purge_poll()) once the earliest decay deadline is past; the
 * deadline is set by a free that leaves something purgeable, e.g. the
 * pages of a kmalloc page run (kfree of 64 KiB), and lowered to what a
 * pass leaves (an area marked, not yet idle long enough).
 *
 *   1. fill: NTHREADS threads allocate and then free 3 sheaves' worth of
 *      a cache each, together (a barrier between the phases), so the ids
 *      they ran on keep full and partial sheaves after the threads exit:
 *      active_objs > barn_full * capacity (the ids hold the difference),
 *      live_objs == 0, percpu_ids > 0.
 *   2. idle: three times (sleep 100 ms; kmalloc(64 KiB) -- a page run:
 *      the poll, no sheaf of any cache touched -- and kfree it, which
 *      sets the next deadline). The first pass at the latest marks the
 *      areas, a later one finds them idle for more than the decay and
 *      drains them. Then: active_objs == barn_full * capacity (no id
 *      holds an object), the barns got the full sheaves (BARN_PUT rose
 *      by barn_full's growth) and the rest reached the slabs (SHEAF_FLUSH
 *      rose by exactly the objects the ids held less those now in the
 *      barns); validate == 0.
 *   3. fill again, then uslub_trim() at once (no idle period): the
 *      forced pass drains every id and empties the barns and the empty
 *      slabs: active_objs == 0, no barn sheaf, no slab.
 * Skipped (77) where the process has no per-CPU mode (no rseq).
 *
 * `stress_percpu_drain thread-idle` (ctest stress_percpu_drain_thread,
 * USLUB_PERCPU=cpu USLUB_DECAY_MS=50 USLUB_BACKGROUND_THREAD=1): the purge
 * thread has made its passes and waits without a deadline (nothing
 * dirty) before the ids get their sheaves; the ids then stay idle for
 * 1 s, far more than the decay, and must be empty by then: the first
 * release after a drain asks for a pass (sheaf/pcpu.c). Before that it
 * failed in 10 of 10 runs (no pass came).
 */
#define _GNU_SOURCE
#include "../integration/check.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#define NTHREADS  4
#define OBJ_SIZE  128
#define MAX_OBJS  4096

/* A cache with sheaves in every pass of the suite: a sheaf_capacity asked
 * for keeps them with USLUB_CPU_SLABS=1 too (60: the default for these
 * sizes, 123 once rounded to fill the sheaf's allocation). */
static uslub_cache_t *sheaf_cache_create(const char *name, size_t size)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 60;
	return uslub_cache_create_args(name, size, &args, 0);
}

static uslub_cache_t *cache;
static unsigned int cap;
static pthread_barrier_t barrier;

static void *fill_fn(void *arg)
{
	long id = (long)(intptr_t)arg;
	size_t n = 2 * (size_t)cap;
	if (n > MAX_OBJS)
		n = MAX_OBJS;
	void **v = calloc(n, sizeof(void *));
	CHECK(v);
	pthread_barrier_wait(&barrier);
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(cache, 0);
		CHECK_MSG(v[i], "thread %ld: allocation %zu failed", id, i);
		memset(v[i], (int)(id + i), OBJ_SIZE);
	}
	pthread_barrier_wait(&barrier);  /* all allocated: the frees fill the ids */
	for (size_t i = 0; i < n; i++) {
		CHECK_MSG(((unsigned char *)v[i])[OBJ_SIZE - 1] == (unsigned char)(id + i),
			  "thread %ld: object %zu corrupted", id, i);
		uslub_cache_free(cache, v[i]);
	}
	free(v);
	return NULL;
}

static void fill(void)
{
	pthread_t th[NTHREADS];
	CHECK(pthread_barrier_init(&barrier, NULL, NTHREADS) == 0);
	for (long i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], NULL, fill_fn, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	CHECK(pthread_barrier_destroy(&barrier) == 0);
}

/* One poll of the page layer from an allocation that touches no sheaf:
 * a kmalloc page run; its kfree leaves dirty pages (the next deadline). */
static void poll_purge(void)
{
	void *p = uslub_kmalloc(64 << 10, 0);
	CHECK(p);
	memset(p, 0x5a, 64 << 10);
	uslub_kfree(p);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The purge thread idle before the ids are filled (see the header). */
static int thread_idle(void)
{
	uslub_cache_t *other = uslub_cache_create("drain-other", 512, 0, 0, NULL);
	CHECK(other);
	void *v[64];
	for (int i = 0; i < 64; i++)     /* refills: the thread starts */
		CHECK((v[i] = uslub_cache_alloc(other, 0)) != NULL);
	poll_purge();                    /* dirty pages: a pass, then no deadline */
	sleep_ms(300);
	fill();
	struct uslub_slabinfo s1 = slabinfo_get(cache);
	sleep_ms(1000);
	struct uslub_slabinfo s2 = slabinfo_get(cache);
	printf("thread-idle: filled: ids hold %lu objects; after 1 s: %lu\n",
	       s1.active_objs - s1.barn_full * cap, s2.active_objs - s2.barn_full * cap);
	CHECK(s1.active_objs > s1.barn_full * cap);
	CHECK_MSG(s2.active_objs == s2.barn_full * cap,
		  "the ids still hold %lu objects after 1 s idle (decay 50 ms): no pass came",
		  s2.active_objs - s2.barn_full * cap);
	for (int i = 0; i < 64; i++)
		uslub_cache_free(other, v[i]);
	printf("percpu_drain thread-idle: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = test_seed(0xd2a1);
	(void)seed;                      /* nothing random: the phases are fixed */
	unsigned long err0 = uslub_error_count();
	cache = sheaf_cache_create("drain-128", OBJ_SIZE);
	CHECK(cache);
	struct uslub_slabinfo si = slabinfo_get(cache);
	if (strcmp(si.percpu_mode, "cpu")) {
		printf("SKIP: percpu_mode is \"%s\", not \"cpu\" (USLUB_PERCPU=cpu without rseq "
		       "or with USLUB_PERCPU unset)\n", si.percpu_mode);
		CHECK_EQ(uslub_cache_destroy(cache), 0);
		return 77;
	}
	bool idle_mode = argc > 1 && !strcmp(argv[1], "thread-idle");
	const char *decay = getenv("USLUB_DECAY_MS"), *bg = getenv("USLUB_BACKGROUND_THREAD");
	if (!decay || strcmp(decay, "50") || !bg || strcmp(bg, idle_mode ? "1" : "0")) {
		printf("SKIP: needs USLUB_DECAY_MS=50 and USLUB_BACKGROUND_THREAD=%s (ctest sets "
		       "them)\n", idle_mode ? "1" : "0");
		CHECK_EQ(uslub_cache_destroy(cache), 0);
		return 77;
	}
	cap = si.sheaf_capacity;
	CHECK(cap > 0);
	if (idle_mode)
		return thread_idle();

	/* 1. the ids hold sheaves */
	fill();
	struct uslub_slabinfo s1 = slabinfo_get(cache);
	uint64_t st1[USLUB_NR_STATS];
	uslub_cache_stats(cache, st1);
	unsigned long held = s1.active_objs - s1.barn_full * cap;
	printf("filled: %u ids, capacity %u, active_objs %lu, barn_full %lu (limit %lu): the ids "
	       "hold %lu objects\n", s1.percpu_ids, cap, s1.active_objs, s1.barn_full,
	       s1.barn_limit, held);
	CHECK_EQU(s1.live_objs, 0);
	CHECK(s1.percpu_ids > 0);
	CHECK_MSG(s1.active_objs > s1.barn_full * cap,
		  "after the fill the ids hold nothing: active_objs %lu, barn_full %lu x %u",
		  s1.active_objs, s1.barn_full, cap);
	CHECK_EQ(uslub_cache_validate(cache), 0);

	/* 2. idle: passes of the calls, not forced */
	poll_purge();                    /* a deadline: now + the decay */
	for (int k = 0; k < 3; k++) {
		sleep_ms(100);
		poll_purge();
	}
	struct uslub_slabinfo s2 = slabinfo_get(cache);
	uint64_t st2[USLUB_NR_STATS];
	uslub_cache_stats(cache, st2);
	uint64_t puts = st2[USLUB_BARN_PUT] - st1[USLUB_BARN_PUT];
	uint64_t flushed = st2[USLUB_SHEAF_FLUSH] - st1[USLUB_SHEAF_FLUSH];
	printf("idle: active_objs %lu, barn_full %lu (+%" PRIu64 " BARN_PUT), %" PRIu64
	       " objects flushed to the slabs\n", s2.active_objs, s2.barn_full, puts, flushed);
	CHECK_MSG(s2.active_objs == s2.barn_full * cap,
		  "after %d ms idle the ids still hold %lu objects (active_objs %lu, barn_full "
		  "%lu x %u): no idle drain", 400, s2.active_objs - s2.barn_full * cap,
		  s2.active_objs, s2.barn_full, cap);
	CHECK(s2.barn_full >= s1.barn_full);
	CHECK_EQU(puts, s2.barn_full - s1.barn_full);
	CHECK_EQU(flushed, held - (s2.barn_full - s1.barn_full) * cap);
	CHECK_EQU(s2.live_objs, 0);
	CHECK_EQ(uslub_cache_validate(cache), 0);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(cache, st);
	CHECK_EQU(stat_allocs(st), stat_frees(st));

	/* 3. the forced pass: every id, at once */
	fill();
	struct uslub_slabinfo s3 = slabinfo_get(cache);
	CHECK_MSG(s3.active_objs > s3.barn_full * cap,
		  "after the second fill the ids hold nothing: active_objs %lu, barn_full %lu",
		  s3.active_objs, s3.barn_full);
	size_t bytes = uslub_trim();
	struct uslub_slabinfo s4 = slabinfo_get(cache);
	printf("trim: %zu bytes back; before: active_objs %lu barn_full %lu slabs %lu; after: "
	       "active_objs %lu barn_full %lu barn_empty %lu slabs %lu\n", bytes,
	       s3.active_objs, s3.barn_full, s3.num_slabs, s4.active_objs, s4.barn_full,
	       s4.barn_empty, s4.num_slabs);
	CHECK_MSG(s4.active_objs == 0 && s4.barn_full == 0 && s4.num_slabs == 0,
		  "after uslub_trim(): active_objs %lu barn_full %lu slabs %lu", s4.active_objs,
		  s4.barn_full, s4.num_slabs);
	CHECK_EQU(s4.live_objs, 0);
	CHECK_EQ(uslub_cache_validate(cache), 0);
	uslub_cache_stats(cache, st);
	CHECK_EQU(stat_allocs(st), stat_frees(st));
	CHECK_EQU(stat_allocs(st), 2ull * NTHREADS * (2 * cap < MAX_OBJS ? 2 * cap : MAX_OBJS));
	CHECK_EQ(uslub_cache_destroy(cache), 0);
	CHECK_EQU(uslub_error_count(), err0);
	printf("percpu_drain: ok\n");
	return 0;
}
