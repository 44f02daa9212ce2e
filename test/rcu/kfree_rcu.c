/*
 * kfree_rcu.c — RCU-deferred freeing through libuslub-rcu (liburcu's
 * default flavour, as <uslub/rcu.h> documents), written like kernel code
 * against <uslub/slab.h>:
 *
 *   - grace: an object given to kfree_rcu() while a registered reader is
 *     inside rcu_read_lock() is neither freed nor reused, and its contents
 *     stay intact, until the reader leaves; kvfree_rcu_barrier() meanwhile
 *     blocks; after it, the object is free (stats) and is reused;
 *   - barrier: objects of a sheaf cache (a partly filled rcu_free sheaf), a
 *     slub_debug cache (a grace period per object), kmalloc objects, a
 *     page run and kfree_rcu_mightsleep() are all freed when
 *     kvfree_rcu_barrier() / _on_cache() returns (live_objs == 0);
 *   - full sheaves: many objects take one call per sheaf (FREE_RCU_SHEAF),
 *     and go back to the barn;
 *   - destroy: kmem_cache_destroy() of a cache with objects still waiting
 *     succeeds, with no leak report;
 *   - thread exit: a thread that leaves a partly filled rcu_free sheaf;
 *     a thread that never registered with liburcu;
 *   - fork: the child frees what a thread it lost had queued, and frees
 *     its own.
 */
#include <uslub/slab.h>
#include <urcu.h>

#include "../integration/check.h"
#include "tsan_rcu.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

struct item {
	unsigned long key;
	struct rcu_head rcu;
	unsigned long payload[6];
};

static unsigned long live(struct kmem_cache *s)
{
	return slabinfo_get(s).live_objs;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* ---- grace: a reader pins an object ------------------------------------ */
static atomic_int reader_state;     /* 0 start, 1 inside, 2 leave, 3 left */
static struct item *_Atomic pinned;
static atomic_int reader_bad;

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	struct item *it = atomic_load(&pinned);
	atomic_store(&reader_state, 1);
	while (atomic_load(&reader_state) != 2) {
		bool ok = true;
		tsan_ignore_reads_begin();
		for (int i = 0; i < 6; i++)
			if (__atomic_load_n(&it->payload[i], __ATOMIC_RELAXED) != 0xfeed0000ul + (unsigned long)i)
				ok = false;
		tsan_ignore_reads_end();
		if (!ok)
			atomic_store(&reader_bad, 1);
		sleep_ms(1);
	}
	rcu_read_unlock();
	atomic_store(&reader_state, 3);
	rcu_unregister_thread();
	return NULL;
}

static atomic_int barrier_done;
static void *barrier_thread(void *arg)
{
	(void)arg;
	kvfree_rcu_barrier();
	atomic_store(&barrier_done, 1);
	return NULL;
}

static void test_grace(void)
{
	struct kmem_cache *s = kmem_cache_create("rcu_grace", sizeof(struct item), NULL, 0);
	CHECK(s);
	struct item *it = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(it);
	for (int i = 0; i < 6; i++)
		it->payload[i] = 0xfeed0000ul + (unsigned long)i;
	atomic_store(&pinned, it);
	pthread_t r, b;
	CHECK(pthread_create(&r, NULL, reader, NULL) == 0);
	while (atomic_load(&reader_state) != 1)
		sleep_ms(1);

	kfree_rcu(it, rcu);
	/* enough more to fill several rcu_free sheaves (each a call_rcu) */
	unsigned int cap = uslub_cache_sheaf_capacity(s);
	bool sheaves = cap > 0;      /* USLUB_CPU_SLABS=1: none, a call each */
	if (!sheaves)
		cap = 60;
	for (unsigned int i = 0; i < 4 * cap; i++) {
		struct item *x = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(x && x != it);
		kfree_rcu(x, rcu);
	}
	/* allocations meanwhile never get the pinned object back */
	void *held[512];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 512; i++) {
			held[i] = kmem_cache_alloc(s, GFP_KERNEL);
			CHECK(held[i] && held[i] != (void *)it);
		}
		for (int i = 0; i < 512; i++)
			kmem_cache_free(s, held[i]);
		sleep_ms(2);
	}
	CHECK(pthread_create(&b, NULL, barrier_thread, NULL) == 0);
	sleep_ms(100);
	CHECK_MSG(!atomic_load(&barrier_done), "kvfree_rcu_barrier returned inside a grace period");
	CHECK(live(s) >= 4 * cap + 1);
	CHECK_EQ(atomic_load(&reader_bad), 0);

	atomic_store(&reader_state, 2);
	CHECK(pthread_join(r, NULL) == 0);
	CHECK(pthread_join(b, NULL) == 0);
	CHECK(atomic_load(&barrier_done));
	CHECK_EQ(atomic_load(&reader_bad), 0);
	CHECK_EQ(live(s), 0);
	if (sheaves)
		CHECK(stat_get(s, USLUB_FREE_RCU_SHEAF) >= 4 * cap + 1);
	else
		CHECK(stat_get(s, USLUB_FREE_RCU_SHEAF_FAIL) >= 4 * cap + 1);
	/* and it is reused now (after what the sheaves and the barn hold) */
	static void *again[1 << 14];
	int n = 0;
	bool back = false;
	while (n < (1 << 14) && !back) {
		again[n] = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(again[n]);
		back = again[n++] == (void *)it;
	}
	CHECK_MSG(back, "the object was never handed out again after its grace period");
	while (n)
		kmem_cache_free(s, again[--n]);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ---- barrier: every path ----------------------------------------------- */
static void test_barrier(void)
{
	struct kmem_cache *sheaf = kmem_cache_create("rcu_sheaf", sizeof(struct item), NULL, 0);
	struct kmem_cache *dbg = kmem_cache_create("rcu_debug", sizeof(struct item), NULL,
						   SLAB_RED_ZONE);
	CHECK(sheaf && dbg);
	for (int i = 0; i < 3; i++) {       /* a partly filled rcu_free sheaf */
		struct item *x = kmem_cache_alloc(sheaf, GFP_KERNEL);
		x->key = 1;
		kfree_rcu(x, rcu);
	}
	uint64_t fail0 = stat_get(dbg, USLUB_FREE_RCU_SHEAF_FAIL);
	for (int i = 0; i < 3; i++) {       /* no sheaves: a call_rcu each */
		struct item *x = kmem_cache_alloc(dbg, GFP_KERNEL);
		kfree_rcu(x, rcu);
	}
	CHECK_EQ(stat_get(dbg, USLUB_FREE_RCU_SHEAF_FAIL) - fail0, 3);
	/* in a sheaf the three wait for the barrier; without sheaves
	 * (USLUB_CPU_SLABS=1) each has its own grace period, which may end
	 * any time (it did, under load) */
	if (uslub_cache_sheaf_capacity(sheaf))
		CHECK_EQ(live(sheaf), 3);
	else
		CHECK(live(sheaf) <= 3);
	kvfree_rcu_barrier_on_cache(sheaf);
	CHECK_EQ(live(sheaf), 0);
	kvfree_rcu_barrier();
	CHECK_EQ(live(dbg), 0);

	/* kmalloc objects, a page run, a NULL, and the one-argument form */
	struct item *k = kmalloc(sizeof(*k), GFP_KERNEL);
	struct item *big = kmalloc(64 * 1024, GFP_KERNEL);
	char *ms = kmalloc(200, GFP_KERNEL);
	CHECK(k && big && ms);
	kfree_rcu(k, rcu);
	kvfree_rcu(big, rcu);
	struct item *none = NULL;
	kfree_rcu(none, rcu);
	kfree_rcu_mightsleep(ms);
	kvfree_rcu_barrier();
	/* the kmalloc objects are free: a kfree now is a double free, which
	 * uslub reports (and ignores) */
	capture_begin();
	kfree(k);
	const char *out = capture_end();
	CHECK_HAS(out, "double free");

	CHECK_EQ(uslub_cache_destroy(sheaf), 0);
	CHECK_EQ(uslub_cache_destroy(dbg), 0);
}

/* ---- full sheaves go to the barn ---------------------------------------- */
static void test_full_sheaves(void)
{
	struct kmem_cache *s = kmem_cache_create("rcu_full", sizeof(struct item), NULL, 0);
	CHECK(s);
	unsigned int cap = uslub_cache_sheaf_capacity(s);
	if (!cap) {                 /* USLUB_CPU_SLABS=1: no sheaves */
		CHECK_EQ(uslub_cache_destroy(s), 0);
		return;
	}
	long n = 8L * cap;
	for (long i = 0; i < n; i++) {
		struct item *x = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(x);
		kfree_rcu(x, rcu);
	}
	kvfree_rcu_barrier();
	CHECK_EQ(live(s), 0);
	CHECK_EQ(stat_get(s, USLUB_FREE_RCU_SHEAF), n);
	CHECK(slabinfo_get(s).barn_full >= 1);
	/* the barn's sheaves serve allocations */
	uint64_t get0 = stat_get(s, USLUB_BARN_GET);
	void **p = calloc(2 * cap, sizeof(void *));
	for (long i = 0; i < 2L * cap; i++)
		CHECK((p[i] = kmem_cache_alloc(s, GFP_KERNEL)));
	CHECK(stat_get(s, USLUB_BARN_GET) > get0);
	for (long i = 0; i < 2L * cap; i++)
		kmem_cache_free(s, p[i]);
	free(p);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ---- destroy with objects still waiting --------------------------------- */
static void test_destroy(void)
{
	struct kmem_cache *s = kmem_cache_create("rcu_destroy", sizeof(struct item), NULL, 0);
	CHECK(s);
	for (int i = 0; i < 1000; i++)
		kfree_rcu((struct item *)kmem_cache_alloc(s, GFP_KERNEL), rcu);
	capture_begin();
	int rc = uslub_cache_destroy(s);
	const char *out = capture_end();
	CHECK_EQ(rc, 0);
	CHECK_MSG(!strstr(out, "remaining"), "destroy reported leftovers:\n%s", out);
}

/* ---- thread exit --------------------------------------------------------- */
static struct kmem_cache *exit_cache;

static void *partial_then_exit(void *arg)
{
	bool registered = arg != NULL;
	if (registered)
		rcu_register_thread();
	for (int i = 0; i < 5; i++)
		kfree_rcu((struct item *)kmem_cache_alloc(exit_cache, GFP_KERNEL), rcu);
	if (registered)
		rcu_unregister_thread();
	return NULL;
}

static void test_thread_exit(void)
{
	exit_cache = kmem_cache_create("rcu_exit", sizeof(struct item), NULL, 0);
	CHECK(exit_cache);
	for (int reg = 0; reg < 2; reg++) {
		pthread_t t;
		CHECK(pthread_create(&t, NULL, partial_then_exit, reg ? (void *)1 : NULL) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		kvfree_rcu_barrier();
		CHECK_EQ(live(exit_cache), 0);
	}
	CHECK_EQ(uslub_cache_destroy(exit_cache), 0);
}

/* ---- fork ---------------------------------------------------------------- */
static struct kmem_cache *fork_cache;
static atomic_int parked;

static void *park(void *arg)
{
	(void)arg;
	for (int i = 0; i < 7; i++)
		kfree_rcu((struct item *)kmem_cache_alloc(fork_cache, GFP_KERNEL), rcu);
	atomic_store(&parked, 1);
	while (atomic_load(&parked) != 2)
		sleep_ms(1);
	return NULL;
}

static void test_fork(void)
{
	fork_cache = kmem_cache_create("rcu_fork", sizeof(struct item), NULL, 0);
	CHECK(fork_cache);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, park, NULL) == 0);
	while (atomic_load(&parked) != 1)
		sleep_ms(1);
	for (int i = 0; i < 3; i++)
		kfree_rcu((struct item *)kmem_cache_alloc(fork_cache, GFP_KERNEL), rcu);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* the lost thread's 7 and this thread's 3 */
		kvfree_rcu_barrier();
		if (live(fork_cache) != 0) {
			fprintf(stderr, "child: %lu objects still live\n", live(fork_cache));
			_exit(1);
		}
		for (int i = 0; i < 100; i++)
			kfree_rcu((struct item *)kmem_cache_alloc(fork_cache, GFP_KERNEL), rcu);
		kvfree_rcu_barrier();
		_exit(live(fork_cache) == 0 ? 0 : 2);
	}
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	atomic_store(&parked, 2);
	CHECK(pthread_join(t, NULL) == 0);
	kvfree_rcu_barrier();
	CHECK_EQ(live(fork_cache), 0);
	CHECK_EQ(uslub_cache_destroy(fork_cache), 0);
}

/* Site @line of this file in allocinfo: calls (0: not listed). */
static long long site_calls(int line)
{
	struct uslub_allocinfo ai[256];
	size_t n = uslub_allocinfo(ai, 256);
	long long calls = 0;
	for (size_t i = 0; i < n && i < 256; i++)
		if ((int)ai[i].line == line && strstr(ai[i].file, "kfree_rcu.c"))
			calls += ai[i].calls;
	return calls;
}

/*
 * Sampled profiling with every object sampled (rcu_kfree_rcu_sampled:
 * USLUB_PROFILING=sample:1): a sampled object given to kfree_rcu() stays
 * counted at its site until its grace period ends, and is untagged then
 * (it skips the rcu_free sheaf: its slab lacks PG_slab_page), so after the
 * barrier the site is at 0; a kmalloc object the same.
 */
static void test_sampled(void)
{
	struct kmem_cache *s = kmem_cache_create("rcu_sampled", sizeof(struct item), NULL, 0);
	CHECK(s);
	int line = 0, kline = 0;
	for (int i = 0; i < 200; i++) {
		line = __LINE__ + 1;
		struct item *x = kmem_cache_alloc(s, GFP_KERNEL);
		CHECK(x);
		kfree_rcu(x, rcu);
	}
	for (int i = 0; i < 50; i++) {
		kline = __LINE__ + 1;
		struct item *k = kmalloc(sizeof(*k), GFP_KERNEL);
		CHECK(k);
		kfree_rcu(k, rcu);
	}
	kvfree_rcu_barrier();
	CHECK_EQ(site_calls(line), 0);
	CHECK_EQ(site_calls(kline), 0);
	CHECK_EQ(live(s), 0);
	/* held across a grace period: still counted while a reader is in */
	line = __LINE__ + 1;
	struct item *x = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(x);
	CHECK_EQ(site_calls(line), 1);
	rcu_read_lock();
	kfree_rcu(x, rcu);
	CHECK_EQ(site_calls(line), 1);
	rcu_read_unlock();
	kvfree_rcu_barrier();
	CHECK_EQ(site_calls(line), 0);
	kmem_cache_destroy(s);
}

int main(void)
{
	rcu_register_thread();
	CHECK(uslub_gp_provider() != NULL);
	if (uslub_profiling_enabled() == 2 && uslub_profiling_sample_interval() == 1) {
		test_sampled();
		rcu_unregister_thread();
		printf("kfree_rcu: sampled profiling ok\n");
		return 0;
	}
	test_barrier();
	test_full_sheaves();
	test_destroy();
	test_thread_exit();
	test_fork();
	rcu_unregister_thread();
	test_grace();                  /* the main thread unregistered */
	printf("kfree_rcu: ok (provider %s)\n", uslub_gp_provider());
	return 0;
}
