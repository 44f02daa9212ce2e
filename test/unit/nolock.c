/*
 * kmalloc_nolock()/kfree_nolock(), white box: the size and gfp limits,
 * the next-bucket retry, a lock held by the thread itself (as a signal
 * handler that interrupted uslub finds it: the call fails or defers, it
 * never waits), the deferred free and its drain (shrink, destroy, the
 * ordinary slow paths, a thread's exit), slub_debug caches (never allocated from, frees
 * deferred), USLUB_GFP_ACCOUNT (charged straight, refused at the limit),
 * bad and double frees, and objects crossing between kfree() and
 * kfree_nolock().
 */
#include "cache/internal.h"
#include "unit.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

static uint64_t stat_of(struct kmem_cache *s, enum uslub_stat_item it)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	return st[it];
}

static unsigned int inuse_of(void *obj)
{
	return FC_INUSE(slab_counters(virt_to_slab(obj)));
}

/* Another party (another thread, or the code a signal interrupted) holds
 * @s's list_lock on node 0: taken raw, outside lockdep's view. */
static void hold_list_lock(struct kmem_cache *s)
{
	CHECK(pthread_mutex_lock(&get_node(s, 0)->list_lock) == 0);
}

static void drop_list_lock(struct kmem_cache *s)
{
	CHECK(pthread_mutex_unlock(&get_node(s, 0)->list_lock) == 0);
}

static void test_limits(void)
{
	CHECK(uslub_kmalloc_nolock(0, 0, USLUB_NUMA_NO_NODE) == USLUB_ZERO_SIZE_PTR);
	uslub_kfree_nolock(USLUB_ZERO_SIZE_PTR);
	uslub_kfree_nolock(NULL);
	CHECK(uslub_kmalloc_nolock(8193, 0, USLUB_NUMA_NO_NODE) == NULL);
	CHECK(uslub_kmalloc_nolock(1 << 20, 0, USLUB_NUMA_NO_NODE) == NULL);
	CHECK(uslub_kmalloc_nolock(64, USLUB_GFP_NOFAIL, USLUB_NUMA_NO_NODE) == NULL);
	errno = 1234;
	void *p = uslub_kmalloc_nolock(8192, USLUB_GFP_ZERO | USLUB_GFP_ATOMIC | USLUB_GFP_NOWARN,
				       USLUB_NUMA_NO_NODE);
	CHECK(p);
	CHECK_EQ(errno, 1234);                  /* left alone */
	CHECK_EQ(uslub_ksize(p), 8192);
	for (size_t i = 0; i < 8192; i++)
		CHECK(((unsigned char *)p)[i] == 0);
	uslub_kfree_nolock(p);
	CHECK_EQ(errno, 1234);
	/* node 0, and a node out of range (taken as the thread's) */
	p = uslub_kmalloc_nolock(100, 0, 0);
	CHECK(p && uslub_ksize(p) == 128);
	uslub_kfree_nolock(p);
	p = uslub_kmalloc_nolock(100, 0, 1 << 20);
	CHECK(p);
	uslub_kfree_nolock(p);
}

/* kfree() of a nolock object, kfree_nolock() of a kmalloc object: each
 * counted once as a free, the slab's inuse back where it was. */
static void test_cross(void)
{
	struct kmem_cache *s = uslub_kmalloc_cache(512);
	uint64_t a0 = stat_of(s, USLUB_ALLOC_SLOWPATH);
	void *p = uslub_kmalloc_nolock(500, 0, USLUB_NUMA_NO_NODE);
	CHECK(p && uslub_ksize(p) == 512);
	CHECK_EQ(stat_of(s, USLUB_ALLOC_SLOWPATH), a0 + 1);
	memset(p, 0x5a, 500);
	uslub_kfree(p);
	void *q = uslub_kmalloc(500, 0);
	CHECK(q);
	uint64_t f0 = stat_of(s, USLUB_FREE_SLOWPATH);
	unsigned int in0 = inuse_of(q);
	uslub_kfree_nolock(q);
	CHECK_EQ(stat_of(s, USLUB_FREE_SLOWPATH), f0 + 1);
	CHECK_EQ(inuse_of(q), in0 - 1);
	/* kfree_nolock of any cache's object */
	struct kmem_cache *c = uslub_cache_create("nolock_any", 72, 0, 0, NULL);
	void *o = uslub_cache_alloc(c, 0);
	CHECK(o);
	uslub_kfree_nolock(o);
	CHECK_EQ(uslub_cache_destroy(c), 0);
}

static volatile sig_atomic_t in_handler;
static void *volatile handler_got;
static void *volatile handler_frees;

static void handler(int sig)
{
	(void)sig;
	in_handler = 1;
	handler_got = uslub_kmalloc_nolock(64, 0, USLUB_NUMA_NO_NODE);
	if (handler_frees)
		uslub_kfree_nolock(handler_frees);
}

/* The thread itself holds the list_locks (as the code a signal handler
 * interrupted may): the allocation fails in both buckets, never waits. */
static void test_lock_held(void)
{
	struct kmem_cache *s64 = uslub_kmalloc_cache(64), *s96 = uslub_kmalloc_cache(96);
	CHECK(s64 != s96);
	uint64_t f64 = stat_of(s64, USLUB_ALLOC_NOLOCK_FAIL);
	uint64_t f96 = stat_of(s96, USLUB_ALLOC_NOLOCK_FAIL);
	/* (no uslub call that takes a lock while these are held: the stats
	 * take thread_lock, which ranks before list_lock) */
	hold_list_lock(s64);
	hold_list_lock(s96);
	CHECK(uslub_kmalloc_nolock(64, 0, USLUB_NUMA_NO_NODE) == NULL);
	/* the same from a signal handler */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	handler_got = (void *)1;
	raise(SIGUSR1);
	CHECK(in_handler && handler_got == NULL);
	/* the next bucket free again: the retry finds it */
	drop_list_lock(s96);
	void *p = uslub_kmalloc_nolock(64, 0, USLUB_NUMA_NO_NODE);
	CHECK(p && uslub_ksize(p) == 96);
	drop_list_lock(s64);
	CHECK_EQ(stat_of(s64, USLUB_ALLOC_NOLOCK_FAIL), f64 + 3);
	CHECK_EQ(stat_of(s96, USLUB_ALLOC_NOLOCK_FAIL), f96 + 2);
	uslub_kfree(p);
}

/*
 * A deferred free: a full slab's first free must put it on the node
 * partial list (list_lock); with the lock held it is deferred -- nothing
 * changes until a later ordinary call drains it.
 */
static void test_defer(void)
{
	struct kmem_cache *s = uslub_cache_create("nolock_defer", 256, 0, 0, NULL);
	CHECK(s);
	unsigned int n = s->objects;
	void **p = calloc(n, sizeof(void *));
	CHECK(p);
	for (unsigned int i = 0; i < n; i++) {
		p[i] = _uslub_cache_alloc_nolock(s, 0, 0);
		CHECK(p[i]);
		CHECK(virt_to_slab(p[i]) == virt_to_slab(p[0]));   /* one new slab */
	}
	CHECK_EQ(inuse_of(p[0]), n);
	CHECK_EQ(get_node(s, 0)->nr_partial, 0);                  /* full: on no list */
	uint64_t d0 = stat_of(s, USLUB_FREE_NOLOCK_DEFER), f0 = stat_of(s, USLUB_FREE_SLOWPATH);
	hold_list_lock(s);
	uslub_kfree_nolock(p[0]);
	CHECK_EQ(inuse_of(p[1]), n);                              /* not freed yet */
	/* from a signal handler too */
	handler_frees = p[1];
	raise(SIGUSR1);
	handler_frees = NULL;
	CHECK_EQ(inuse_of(p[1]), n);
	drop_list_lock(s);
	CHECK_EQ(stat_of(s, USLUB_FREE_NOLOCK_DEFER), d0 + 2);
	CHECK_EQ(stat_of(s, USLUB_FREE_SLOWPATH), f0);
	/* a double free of a deferred object is caught (its free mark) */
	unsigned long e0 = uslub_error_count();
	uslub_kfree_nolock(p[0]);
	CHECK_EQ(uslub_error_count(), e0 + 1);
	uslub_cache_shrink(s);                                    /* drains */
	CHECK_EQ(stat_of(s, USLUB_FREE_SLOWPATH), f0 + 2);
	CHECK_EQ(inuse_of(p[2]), n - 2);
	CHECK_EQ(get_node(s, 0)->nr_partial, 1);
	/* the rest, uncontended: straight onto the slab; the last leaves it
	 * empty on the partial list (no page lock waited for) */
	for (unsigned int i = 2; i < n; i++)
		uslub_kfree_nolock(p[i]);
	CHECK_EQ(stat_of(s, USLUB_FREE_SLOWPATH), f0 + n);
	CHECK_EQ(stat_of(s, USLUB_FREE_NOLOCK_DEFER), d0 + 2);
	if (handler_got)
		uslub_kfree(handler_got);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
}

/* Deferred objects drained by an ordinary slow path, and by destroy. */
static void test_drain(void)
{
	struct kmem_cache *s = uslub_cache_create("nolock_drain", 128, 0, 0, NULL);
	unsigned int n = s->objects;
	void **p = calloc(n, sizeof(void *));
	for (unsigned int i = 0; i < n; i++)
		CHECK((p[i] = _uslub_cache_alloc_nolock(s, 0, 0)));
	hold_list_lock(s);
	uslub_kfree_nolock(p[0]);
	drop_list_lock(s);
	CHECK(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED) == p[0]);
	/* any cache's allocation slow path drains it: a NOFAIL call misses
	 * the inline pop */
	struct kmem_cache *o = uslub_cache_create("nolock_other", 40, 0, 0, NULL);
	void *x = uslub_cache_alloc(o, USLUB_GFP_ZERO);
	CHECK(x);
	CHECK(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED) == NULL);
	CHECK_EQ(inuse_of(p[1]), n - 1);
	uslub_cache_free(o, x);
	CHECK_EQ(uslub_cache_destroy(o), 0);
	/* and destroy drains before it looks for live objects: the last
	 * object's free (the slab becomes empty) needs list_lock */
	for (unsigned int i = 2; i < n; i++)
		uslub_kfree_nolock(p[i]);
	hold_list_lock(s);
	uslub_kfree_nolock(p[1]);
	drop_list_lock(s);
	CHECK(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED) != NULL);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED) == NULL);
	free(p);
}

/* A thread's exit drains what it (or anyone) deferred. */
static volatile int exit_stage;

static void *exit_thread(void *arg)
{
	/* an ordinary call first: the thread gets its cpu area, whose exit
	 * runs the lifecycle table's thread_exit entries */
	uslub_kfree(uslub_kmalloc(16, 0));
	uslub_kfree_nolock(arg);                 /* main holds list_lock: deferred */
	__atomic_store_n(&exit_stage, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&exit_stage, __ATOMIC_ACQUIRE) != 2)
		;
	return NULL;
}

static void test_thread_exit_drains(void)
{
	struct kmem_cache *s = uslub_cache_create("nolock_exit", 64, 0, 0, NULL);
	unsigned int n = s->objects;
	void **p = calloc(n, sizeof(void *));
	for (unsigned int i = 0; i < n; i++)
		CHECK((p[i] = _uslub_cache_alloc_nolock(s, 0, 0)));
	hold_list_lock(s);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, exit_thread, p[0]) == 0);
	while (__atomic_load_n(&exit_stage, __ATOMIC_ACQUIRE) != 1)
		;
	CHECK(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED) == p[0]);
	drop_list_lock(s);
	__atomic_store_n(&exit_stage, 2, __ATOMIC_RELEASE);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED) == NULL);
	CHECK_EQ(inuse_of(p[1]), n - 1);
	for (unsigned int i = 1; i < n; i++)
		uslub_kfree_nolock(p[i]);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
}

/* slub_debug caches: no nolock allocation (NULL, counted); a free is
 * always deferred (its checks are the debug free's), then done. */
static void test_debug_cache(void)
{
	struct kmem_cache *s = uslub_cache_create("nolock_debug", 100, 0,
						  USLUB_RED_ZONE | USLUB_POISON | USLUB_STORE_USER,
						  NULL);
	CHECK(s && kmem_cache_debug(s));
	uint64_t f0 = stat_of(s, USLUB_ALLOC_NOLOCK_FAIL);
	CHECK(_uslub_cache_alloc_nolock(s, 0, USLUB_NUMA_NO_NODE) == NULL);
	CHECK_EQ(stat_of(s, USLUB_ALLOC_NOLOCK_FAIL), f0 + 1);
	void *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 1, 100);
	uslub_kfree_nolock(p);
	CHECK_EQ(stat_of(s, USLUB_FREE_NOLOCK_DEFER), 1);
	CHECK_EQ(uslub_cache_shrink(s) >= 0, 1);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* USLUB_GFP_ACCOUNT: charged to the current group straight (exactly the
 * object's charge, no stock), refused over the limit (NULL, the object
 * given back); a charged object's kfree_nolock is deferred and its drain
 * uncharges it. */
static void test_account(void)
{
	/* 100 bytes in 128-byte strides: the extension in the padding */
	struct kmem_cache *s = uslub_cache_create("nolock_acct", 100, 64, USLUB_ACCOUNT, NULL);
	CHECK(s && (s->hooks & HOOK_ACCOUNT) && s->ext_placement == USLUB_OBJ_EXT_PADDING);
	uslub_group_t *g = uslub_group_create(NULL, "nolock-acct", USLUB_GROUP_NO_LIMIT);
	CHECK(g);
	/* no current group: nothing charged */
	void *p = _uslub_cache_alloc_nolock(s, USLUB_GFP_ACCOUNT, 0);
	CHECK(p);
	struct obj_ext ext = slab_obj_ext(s, virt_to_slab(p), p);
	CHECK(ext.objcg && !*ext.objcg && !ext.tag == !_uslub_profiling);
	uslub_kfree_nolock(p);

	uslub_group_set_current(g);
	uslub_group_drain_stock();
	size_t u0 = uslub_group_usage(g);
	p = _uslub_cache_alloc_nolock(s, USLUB_GFP_ACCOUNT, 0);
	CHECK(p);
	ext = slab_obj_ext(s, virt_to_slab(p), p);
	CHECK(ext.objcg && *ext.objcg);
	CHECK_EQ(uslub_group_usage(g), u0 + s->charge);   /* straight, no stock */
	uint64_t d0 = stat_of(s, USLUB_FREE_NOLOCK_DEFER);
	uslub_kfree_nolock(p);                              /* charged: deferred */
	CHECK_EQ(stat_of(s, USLUB_FREE_NOLOCK_DEFER), d0 + 1);
	uslub_cache_shrink(s);                              /* drained, uncharged */
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_usage(g), u0);
	CHECK(!*ext.objcg);

	/* over the limit: NULL, counted, nothing charged, the object back */
	CHECK_EQ(uslub_group_set_limit(g, u0 + s->charge - 1), 0);
	uint64_t f0 = stat_of(s, USLUB_ALLOC_NOLOCK_FAIL);
	CHECK(_uslub_cache_alloc_nolock(s, USLUB_GFP_ACCOUNT, 0) == NULL);
	CHECK_EQ(stat_of(s, USLUB_ALLOC_NOLOCK_FAIL), f0 + 1);
	CHECK_EQ(uslub_group_usage(g), u0);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	CHECK_EQ(st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS] + st[USLUB_ALLOC_FASTPATH],
		 st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS] + st[USLUB_FREE_FASTPATH]);
	/* a cache accounted only on demand: switched on here; its first
	 * slab has no array yet, so that object is handed out uncharged */
	struct kmem_cache *d = uslub_cache_create("nolock_ondemand", 100, 0, 0, NULL);
	CHECK(!(d->hooks & HOOK_ACCOUNT));
	CHECK_EQ(uslub_group_set_limit(g, USLUB_GROUP_NO_LIMIT), 0);
	p = _uslub_cache_alloc_nolock(d, USLUB_GFP_ACCOUNT, 0);
	CHECK(p && (d->hooks & HOOK_ACCOUNT));
	CHECK(!slab_obj_ext(d, virt_to_slab(p), p).objcg);
	uslub_kfree_nolock(p);
	CHECK_EQ(uslub_cache_destroy(d), 0);
	/* a cache whose extensions are a separate array: a nolock slab gets
	 * none (nothing allocated), and its objects are handed out uncharged */
	struct kmem_cache *a = uslub_cache_create("nolock_array", 4096, 0, USLUB_ACCOUNT, NULL);
	CHECK(a && a->ext_placement == USLUB_OBJ_EXT_ARRAY);
	p = _uslub_cache_alloc_nolock(a, USLUB_GFP_ACCOUNT, 0);
	CHECK(p && !virt_to_slab(p)->obj_exts);
	uslub_kfree(p);
	CHECK_EQ(uslub_cache_destroy(a), 0);
	uslub_group_set_current(NULL);
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_usage(g), u0);
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

static void test_bad_free(void)
{
	unsigned long e0 = uslub_error_count();
	int local;
	uslub_kfree_nolock(&local);
	CHECK_EQ(uslub_error_count(), e0 + 1);
	char *p = uslub_kmalloc_nolock(64, 0, USLUB_NUMA_NO_NODE);
	uslub_kfree_nolock(p + 8);                  /* not an object start */
	CHECK_EQ(uslub_error_count(), e0 + 2);
	uslub_kfree_nolock(p);
	uslub_kfree_nolock(p);                      /* double free */
	CHECK_EQ(uslub_error_count(), e0 + 3);
	void *big = uslub_kmalloc(100000, 0);       /* a page run: not for nolock */
	uslub_kfree_nolock(big);
	CHECK_EQ(uslub_error_count(), e0 + 4);
	uslub_kfree(big);
}

int main(void)
{
	/* before the kmalloc caches exist: NULL, nothing initialized */
	CHECK(uslub_kmalloc_nolock(32, 0, USLUB_NUMA_NO_NODE) == NULL);
	uslub_kfree(uslub_kmalloc(32, 0));
	test_limits();
	test_cross();
	test_lock_held();
	test_defer();
	test_drain();
	test_thread_exit_drains();
	test_debug_cache();
	test_account();
	test_bad_free();
	printf("ok\n");
	return 0;
}
