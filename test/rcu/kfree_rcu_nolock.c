/*
 * kfree_rcu_nolock.c — the kernel's kfree_rcu_nolock() (7.3) through
 * <uslub/slab.h>, from the contexts it exists for:
 *
 *   - storm: two threads allocate, free, kfree_rcu() and call liburcu's
 *     call_rcu() in a loop while a third sends them signals
 *     (pthread_kill); each handler takes a kmalloc_nolock() object or one
 *     of a cache's (a pool filled beforehand), publishes it for RCU
 *     readers and gives the one it replaces to kfree_rcu_nolock(); readers
 *     inside rcu_read_lock() check the contents of what they find (freed
 *     before its grace period, an object would be poisoned, reused or
 *     refilled). After kvfree_rcu_barrier() every object is free exactly
 *     once: the cache and the kmalloc cache back to where they were, the
 *     cache's per-object count equal to the handlers' calls, no error;
 *     errno is what the handler left;
 *   - grace: an object given to kfree_rcu_nolock() from a handler while a
 *     reader holds it is not freed, nor reused, and a barrier blocks,
 *     until the reader leaves (a cache's object and a kmalloc one);
 *   - fork: heads still on the deferred list at fork() are freed once in
 *     the child and once in the parent;
 *   - misuse: NULL is nothing; a pointer given twice is freed once and
 *     reported; a pointer that is not uslub's is reported and left alone;
 *     a slub_debug cache and a page run go through it too.
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

static void fill(struct item *it, unsigned long key)
{
	it->key = key;
	for (int i = 0; i < 6; i++)
		it->payload[i] = key * 31 + (unsigned long)i;
}

/* The reader's check of an object it found inside rcu_read_lock(). */
static bool intact(const struct item *it)
{
	bool ok = true;
	tsan_ignore_reads_begin();
	unsigned long key = __atomic_load_n(&it->key, __ATOMIC_RELAXED);
	for (int i = 0; i < 6; i++)
		if (__atomic_load_n(&it->payload[i], __ATOMIC_RELAXED) != key * 31 + (unsigned long)i)
			ok = false;
	tsan_ignore_reads_end();
	return ok && key != 0;
}

/* ---- storm ------------------------------------------------------------- */
#define POOL 4096

static struct kmem_cache *pool_cache;      /* the handlers' cache objects */
static struct item *pool[POOL];
static atomic_int pool_next;
static struct item *_Atomic published;     /* what the readers look at */
static atomic_ulong next_key = 1;
static atomic_long h_cache, h_kmalloc, h_nomem, h_errno_bad, h_signals;
static atomic_int storm_stop, readers_stop, reader_bad;

static void on_signal(int sig)
{
	(void)sig;
	int e = errno;
	errno = 4242;
	atomic_fetch_add(&h_signals, 1);
	struct item *x;
	int i = atomic_fetch_add(&pool_next, 1);
	if (i < POOL && (i & 1)) {
		x = pool[i];
		atomic_fetch_add(&h_cache, 1);
	} else {
		x = kmalloc_nolock(sizeof(*x), __GFP_NOWARN, NUMA_NO_NODE);
		if (!x) {
			atomic_fetch_add(&h_nomem, 1);
			errno = e;
			return;
		}
		atomic_fetch_add(&h_kmalloc, 1);
	}
	fill(x, atomic_fetch_add(&next_key, 1));
	struct item *old = atomic_exchange(&published, x);
	kfree_rcu_nolock(old, rcu);     /* NULL the first time: nothing */
	if (errno != 4242)
		atomic_fetch_add(&h_errno_bad, 1);
	errno = e;
}

static struct kmem_cache *churn_cache;

/* Released before each call_rcu() below and acquired by its callback:
 * the order liburcu's queue gives, said so that TSan sees it (liburcu is
 * not instrumented; uslub says it the same way, _uslub_gp_seq). */
static atomic_ulong churn_seq;

static void churn_cb(struct rcu_head *h)
{
	(void)atomic_load_explicit(&churn_seq, memory_order_acquire);
	kfree(caa_container_of(h, struct item, rcu));
}

/* What an interrupted thread is doing: uslub's fast and slow paths,
 * kfree_rcu (its rcu_free sheaf and the drain of deferred heads) and
 * liburcu's own call_rcu. */
static void *churner(void *arg)
{
	(void)arg;
	rcu_register_thread();
	void *held[64];
	unsigned long round = 0;
	while (!atomic_load(&storm_stop)) {
		for (int i = 0; i < 64; i++) {
			held[i] = (i & 1) ? kmem_cache_alloc(churn_cache, GFP_KERNEL)
					  : kmalloc(300, GFP_KERNEL);
			CHECK(held[i]);
		}
		for (int i = 0; i < 64; i++) {
			struct item *it = held[i];
			switch ((i + round) % 4) {
			case 0:
				if (i & 1)
					kmem_cache_free(churn_cache, it);
				else
					kfree(it);
				break;
			case 1:
				kfree_rcu(it, rcu);
				break;
			case 2:
				if (i & 1)
					kmem_cache_free(churn_cache, it);
				else {
					atomic_fetch_add_explicit(&churn_seq, 1,
								  memory_order_release);
					call_rcu(&it->rcu, churn_cb);
				}
				break;
			default:
				kfree_rcu_nolock(it, rcu);
				break;
			}
		}
		round++;
	}
	rcu_unregister_thread();
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	while (!atomic_load(&readers_stop)) {
		rcu_read_lock();
		struct item *it = atomic_load(&published);
		for (int k = 0; it && k < 20; k++)
			if (!intact(it))
				atomic_store(&reader_bad, 1);
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	return NULL;
}

struct signaller_arg {
	pthread_t *targets;
	int n;
	long rounds;
};

static void *signaller(void *argp)
{
	struct signaller_arg *a = argp;
	struct timespec ts = { 0, 20000 };
	for (long r = 0; r < a->rounds; r++) {
		pthread_kill(a->targets[r % a->n], SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void test_storm(void)
{
	pool_cache = kmem_cache_create("nolock_pool", sizeof(struct item), NULL, 0);
	churn_cache = kmem_cache_create("nolock_churn", sizeof(struct item), NULL, 0);
	CHECK(pool_cache && churn_cache);
	struct kmem_cache *kc = (struct kmem_cache *)uslub_kmalloc_cache(sizeof(struct item));
	CHECK(kc);
	unsigned long k0 = live(kc);
	uint64_t fail0 = stat_get(pool_cache, USLUB_FREE_RCU_SHEAF_FAIL);
	unsigned long err0 = uslub_error_count();
	for (int i = 0; i < POOL; i++)
		CHECK((pool[i] = kmem_cache_alloc(pool_cache, GFP_KERNEL)));

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	pthread_t t[2], r[2], sig;
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&r[i], NULL, reader, NULL) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, churner, NULL) == 0);
	struct signaller_arg a = { t, 2, scaled(20000) };
	CHECK(pthread_create(&sig, NULL, signaller, &a) == 0);
	CHECK(pthread_join(sig, NULL) == 0);
	atomic_store(&storm_stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	atomic_store(&readers_stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(r[i], NULL) == 0);
	signal(SIGUSR1, SIG_IGN);

	/* the last one published, from an ordinary context */
	struct item *last = atomic_exchange(&published, NULL);
	kfree_rcu_nolock(last, rcu);
	/* the pool objects no handler took */
	int used = atomic_load(&pool_next);
	for (int i = 0; i < POOL; i++)
		if (i >= used || !(i & 1))
			kmem_cache_free(pool_cache, pool[i]);
	kvfree_rcu_barrier();

	long nc = atomic_load(&h_cache), nk = atomic_load(&h_kmalloc);
	printf("storm: %ld signals: %ld cache objects, %ld kmalloc_nolock objects (%ld refused)\n",
	       atomic_load(&h_signals), nc, nk, atomic_load(&h_nomem));
	CHECK(nc + nk > 0);
	CHECK_EQ(atomic_load(&reader_bad), 0);
	CHECK_EQ(atomic_load(&h_errno_bad), 0);
	CHECK_EQ(uslub_error_count() - err0, 0);
	CHECK_EQ(live(pool_cache), 0);
	CHECK_EQ(live(kc), k0);
	/* each handler's cache object (all but the one still published at
	 * the end, which the last call freed) went through kfree_rcu_nolock
	 * once */
	CHECK_EQ(stat_get(pool_cache, USLUB_FREE_RCU_SHEAF_FAIL) - fail0, (uint64_t)nc);
	CHECK_EQ(live(churn_cache), 0);
	kmem_cache_destroy(pool_cache);
	kmem_cache_destroy(churn_cache);
}

/* ---- grace: a reader pins an object freed from a handler --------------- */
static atomic_int reader_state;     /* 0 start, 1 inside, 2 leave, 3 left */
static struct item *_Atomic pinned;
static atomic_int pin_bad;

static void *pin_reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	struct item *it = atomic_load(&pinned);
	atomic_store(&reader_state, 1);
	while (atomic_load(&reader_state) != 2) {
		if (!intact(it))
			atomic_store(&pin_bad, 1);
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

static struct item *_Atomic to_free;
static void free_from_handler(int sig)
{
	(void)sig;
	struct item *it = atomic_exchange(&to_free, NULL);
	kfree_rcu_nolock(it, rcu);
}

static void grace_one(struct kmem_cache *s, bool from_kmalloc)
{
	struct item *it = from_kmalloc ? kmalloc(sizeof(*it), GFP_KERNEL)
				       : kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(it);
	fill(it, 0x5eed);
	atomic_store(&pinned, it);
	atomic_store(&reader_state, 0);
	atomic_store(&barrier_done, 0);
	pthread_t r, b;
	CHECK(pthread_create(&r, NULL, pin_reader, NULL) == 0);
	while (atomic_load(&reader_state) != 1)
		sleep_ms(1);

	atomic_store(&to_free, it);
	CHECK(raise(SIGUSR2) == 0);     /* the handler runs before raise returns */
	CHECK(atomic_load(&to_free) == NULL);
	/* an ordinary kfree_rcu hands the deferred head to liburcu */
	kfree_rcu((struct item *)kmem_cache_alloc(s, GFP_KERNEL), rcu);
	void *held[256];
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 256; i++) {
			held[i] = from_kmalloc ? kmalloc(sizeof(*it), GFP_KERNEL)
					       : kmem_cache_alloc(s, GFP_KERNEL);
			CHECK(held[i] && held[i] != (void *)it);
		}
		for (int i = 0; i < 256; i++)
			kfree(held[i]);
		sleep_ms(2);
	}
	CHECK(pthread_create(&b, NULL, barrier_thread, NULL) == 0);
	sleep_ms(100);
	CHECK_MSG(!atomic_load(&barrier_done), "kvfree_rcu_barrier returned inside a grace period");
	CHECK_EQ(atomic_load(&pin_bad), 0);
	atomic_store(&reader_state, 2);
	CHECK(pthread_join(r, NULL) == 0);
	CHECK(pthread_join(b, NULL) == 0);
	CHECK_EQ(atomic_load(&pin_bad), 0);
}

static void test_grace(void)
{
	struct kmem_cache *s = kmem_cache_create("nolock_grace", sizeof(struct item), NULL, 0);
	CHECK(s);
	struct kmem_cache *kc = (struct kmem_cache *)uslub_kmalloc_cache(sizeof(struct item));
	unsigned long k0 = live(kc);
	signal(SIGUSR2, free_from_handler);
	grace_one(s, false);
	CHECK_EQ(live(s), 0);
	grace_one(s, true);
	CHECK_EQ(live(kc), k0);
	CHECK_EQ(live(s), 0);
	signal(SIGUSR2, SIG_DFL);
	kmem_cache_destroy(s);
}

/* ---- fork with heads deferred ------------------------------------------- */
static void test_fork(void)
{
	struct kmem_cache *s = kmem_cache_create("nolock_fork", sizeof(struct item), NULL, 0);
	CHECK(s);
	kvfree_rcu_barrier();            /* nothing in flight: the heads stay deferred */
	for (int i = 0; i < 50; i++)
		kfree_rcu_nolock((struct item *)kmem_cache_alloc(s, GFP_KERNEL), rcu);
	CHECK_EQ(live(s), 50);
	unsigned long err0 = uslub_error_count();
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		kvfree_rcu_barrier();
		if (live(s) != 0) {
			fprintf(stderr, "child: %lu objects still live\n", live(s));
			_exit(1);
		}
		for (int i = 0; i < 20; i++)
			kfree_rcu_nolock((struct item *)kmem_cache_alloc(s, GFP_KERNEL), rcu);
		kvfree_rcu_barrier();
		_exit(live(s) == 0 && uslub_error_count() == err0 ? 0 : 2);
	}
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	kvfree_rcu_barrier();
	CHECK_EQ(live(s), 0);
	/* destroy waits for what is still deferred */
	for (int i = 0; i < 30; i++)
		kfree_rcu_nolock((struct item *)kmem_cache_alloc(s, GFP_KERNEL), rcu);
	capture_begin();
	int rc = uslub_cache_destroy(s);
	const char *out = capture_end();
	CHECK_EQ(rc, 0);
	CHECK_MSG(!strstr(out, "remaining"), "destroy reported leftovers:\n%s", out);
}

/* ---- misuse and the other kinds of object ------------------------------ */
static void test_misuse(void)
{
	struct kmem_cache *s = kmem_cache_create("nolock_misuse", sizeof(struct item), NULL, 0);
	struct kmem_cache *dbg = kmem_cache_create("nolock_debug", sizeof(struct item), NULL,
						   SLAB_RED_ZONE | SLAB_POISON);
	CHECK(s && dbg);
	struct item *none = NULL;
	kfree_rcu_nolock(none, rcu);

	/* a slub_debug cache, a page run, a kmalloc object */
	struct item *d = kmem_cache_alloc(dbg, GFP_KERNEL);
	struct item *big = kmalloc(64 * 1024, GFP_KERNEL);
	struct item *k = kmalloc(sizeof(*k), GFP_KERNEL);
	CHECK(d && big && k);
	kfree_rcu_nolock(d, rcu);
	kfree_rcu_nolock(big, rcu);
	kfree_rcu_nolock(k, rcu);
	kvfree_rcu_barrier();
	CHECK_EQ(live(dbg), 0);
	capture_begin();
	kfree(k);                        /* freed by now: a double free */
	const char *out = capture_end();
	CHECK_HAS(out, "double free");

	/* given twice before a drain: freed once, reported */
	unsigned long err0 = uslub_error_count();
	struct item *x = kmem_cache_alloc(s, GFP_KERNEL);
	struct item *y = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(x && y);
	capture_begin();
	kfree_rcu_nolock(x, rcu);
	kfree_rcu_nolock(y, rcu);
	kfree_rcu_nolock(x, rcu);
	kvfree_rcu_barrier();
	out = capture_end();
	CHECK_HAS(out, "given twice");
	CHECK_EQ(uslub_error_count() - err0, 1);
	CHECK_EQ(live(s), 0);

	/* not uslub's, not an object start, already free: reported now */
	static char global[64];
	struct item *z = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(z);
	kmem_cache_free(s, z);
	err0 = uslub_error_count();
	capture_begin();
	kfree_rcu_nolock((struct item *)(global + 8), rcu);
	kfree_rcu_nolock((struct item *)((char *)y + 8), rcu);
	kfree_rcu_nolock(z, rcu);
	kvfree_rcu_barrier();
	out = capture_end();
	CHECK_HAS(out, "not a uslub allocation");
	CHECK_HAS(out, "not an object start");
	CHECK_HAS(out, "already free");
	CHECK_EQ(uslub_error_count() - err0, 3);
	CHECK_EQ(live(s), 0);
	kmem_cache_destroy(s);
	kmem_cache_destroy(dbg);
}

int main(void)
{
	rcu_register_thread();
	CHECK(uslub_gp_provider() != NULL);
	test_misuse();
	test_fork();
	test_grace();
	test_storm();
	rcu_unregister_thread();
	printf("kfree_rcu_nolock: ok\n");
	return 0;
}
