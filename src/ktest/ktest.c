/*
 * ktest.c — libuslub-ktest: what the kernel's userspace test harness
 * (tools/testing/shared) adds to the slab API, on uslub's real caches.
 * The contract is <uslub/ktest.h>; docs/design.md §"The kernel's test
 * harness" says how it is built.
 *
 * A front end like malloc (layer 7), but a separate library that calls
 * only uslub's public API (test/layering checks it): the budget is a
 * per-cache fault-injection hook (uslub_cache_set_fail_hook(), asked by
 * failslab() in the cache's allocation path), the per-cache counters come
 * from uslub_cache_stats(), and the harness state of a cache is the hook's
 * argument. Nothing here runs with a uslub lock held: the hook is asked
 * before the allocation takes anything, and the callback runs in the
 * harness's entry point before uslub is called.
 */
#include <uslub/ktest.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define __public __attribute__((visibility("default")))

__public int nr_allocated;
__public int kmalloc_nr_allocated;
__public int kmalloc_verbose;
__public int test_verbose;
__public int preempt_count;

/* One harness cache's state: the hook's argument. */
struct ktest_cache {
	unsigned int non_kernel;         /* budget of allocations without
	                                    direct reclaim (atomic)          */
	int exec_callback;               /* a budget failure happened: run
	                                    the callback on the next call     */
	void (*callback)(void *);
	void *priv;
	uint64_t tallocated_base;        /* allocation count at the last zeroing */
	int rules_7x;                    /* created with kmem_cache_args: a
	                                    refused bulk call or prefill arms
	                                    the callback too                  */
	struct kmem_cache *cache;
	struct ktest_cache *next;        /* the harness caches (attach_lock)  */
	unsigned long prefills, refills, sheaf_allocs;   /* harness calls (atomic) */
};

static struct ktest_cache *harness_caches;   /* attach_lock */

static int ktest_gfp_nowait(uslub_gfp_t gfp)
{
	return (gfp & USLUB_GFP_NOWAIT) != 0;    /* ATOMIC has the bit too */
}

/* The budget (asked by uslub's failslab() for every allocation call). */
static int ktest_budget_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t nr, void *arg)
{
	struct ktest_cache *k = arg;
	unsigned int left;

	if (!ktest_gfp_nowait(gfp))
		return 0;
	left = __atomic_load_n(&k->non_kernel, __ATOMIC_RELAXED);
	for (;;) {
		unsigned int next = left >= nr ? left - (unsigned int)nr : 0;
		if (__atomic_compare_exchange_n(&k->non_kernel, &left, next, 0,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	if (left >= nr)
		return 0;
	/* The 6.12 shim arms the callback after a single allocation's
	 * failure only; the 7.x one after a bulk call's (and so a prefill's)
	 * too. */
	if (nr == 1 || k->rules_7x)
		__atomic_store_n(&k->exec_callback, 1, __ATOMIC_RELEASE);
	return 1;
}

/* kmalloc: no budget, nothing without direct reclaim. */
static int ktest_kmalloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t nr, void *arg)
{
	return ktest_gfp_nowait(gfp);
}

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static int kmalloc_hooked;

/* The hook on every kmalloc cache (once; the classes share caches). */
static void hook_kmalloc_caches(void)
{
	if (__atomic_load_n(&kmalloc_hooked, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&attach_lock);
	if (!kmalloc_hooked) {
		for (size_t size = 8; size <= USLUB_KMALLOC_MAX_CACHE_SIZE; size += 8) {
			struct kmem_cache *c = uslub_kmalloc_cache(size);
			if (c && !uslub_cache_fail_hook_arg(c))
				uslub_cache_set_fail_hook(c, ktest_kmalloc_hook, &kmalloc_hooked);
		}
		__atomic_store_n(&kmalloc_hooked, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&attach_lock);
}

/* @s's harness state if it has one (not for a kmalloc cache, whose hook
 * argument is kmalloc_hooked), without attaching it. */
static struct ktest_cache *harness_state(struct kmem_cache *s)
{
	void *arg = s ? uslub_cache_fail_hook_arg(s) : NULL;
	return arg == (void *)&kmalloc_hooked ? NULL : arg;
}

/* Whatever the program allocates first, kmalloc refuses GFP_NOWAIT from
 * the start (the shim's rule). */
__attribute__((constructor)) static void ktest_init(void)
{
	hook_kmalloc_caches();
}

static uint64_t cache_allocs(struct kmem_cache *s, uint64_t *frees)
{
	uint64_t st[USLUB_NR_STATS];

	uslub_cache_stats(s, st);
	if (frees)
		*frees = st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS];
	return st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS];
}

/* @s's harness state, attaching it on first use; NULL (errno) if @s is
 * not a cache or out of memory. */
static struct ktest_cache *ktest_of(struct kmem_cache *s)
{
	struct ktest_cache *k;

	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	k = uslub_cache_fail_hook_arg(s);
	if (k)
		return k;
	pthread_mutex_lock(&attach_lock);
	k = uslub_cache_fail_hook_arg(s);
	if (!k) {
		k = uslub_kmalloc_noprof(sizeof(*k), USLUB_GFP_ZERO);
		if (k && uslub_cache_set_fail_hook(s, ktest_budget_hook, k) != 0) {
			uslub_kfree(k);
			k = NULL;
		}
		if (k) {
			k->cache = s;
			k->next = harness_caches;
			harness_caches = k;
		}
	}
	pthread_mutex_unlock(&attach_lock);
	return k;
}

__public int uslub_ktest_cache_attach(struct kmem_cache *s)
{
	return ktest_of(s) ? 0 : -1;
}

__public struct kmem_cache *uslub_ktest_cache_create(const char *name, size_t size, size_t align,
						     unsigned int flags, void (*ctor)(void *),
						     int panic)
{
	struct kmem_cache *s = uslub_cache_create(name, size, align, flags, ctor);

	if (s && !ktest_of(s)) {
		int err = errno;
		uslub_cache_destroy(s);
		errno = err;
		s = NULL;
	}
	if (!s && panic) {
		fprintf(stderr, "uslub-ktest: kmem_cache_create(\"%s\", %zu) failed with "
			"SLAB_PANIC (errno %d)\n", name ? name : "(null)", size, errno);
		abort();
	}
	return s;
}

__public struct kmem_cache *uslub_ktest_cache_create_args(const char *name, size_t size,
							  const struct uslub_cache_args *args,
							  unsigned int flags, int panic)
{
	struct kmem_cache *s = uslub_cache_create_args(name, size, args, flags);
	struct ktest_cache *k = s ? ktest_of(s) : NULL;

	if (s && !k) {
		int err = errno;
		uslub_cache_destroy(s);
		errno = err;
		s = NULL;
	}
	if (k)
		k->rules_7x = 1;
	if (!s && panic) {
		fprintf(stderr, "uslub-ktest: kmem_cache_create(\"%s\", %zu) failed with "
			"SLAB_PANIC (errno %d)\n", name ? name : "(null)", size, errno);
		abort();
	}
	return s;
}

__public bool slab_is_available(void)
{
	return true;
}

__public int uslub_ktest_cache_destroy(struct kmem_cache *s)
{
	struct ktest_cache *k;
	int ret;

	if (!s)
		return 0;
	pthread_mutex_lock(&attach_lock);
	k = uslub_cache_fail_hook_arg(s);
	ret = uslub_cache_destroy(s);
	if (ret == 0 && k) {
		for (struct ktest_cache **pp = &harness_caches; *pp; pp = &(*pp)->next) {
			if (*pp == k) {
				*pp = k->next;
				break;
			}
		}
		uslub_kfree(k);
	}
	pthread_mutex_unlock(&attach_lock);
	return ret;
}

/*
 * At exit, every harness cache still alive is validated (its slabs'
 * counters against their freelists, the lists against the flags), and one
 * line says what was checked and how many errors uslub reported during
 * the run (invalid frees, corrupted freelists: uslub_error_count()). The
 * kernel's tests end with their own leak line; this is the allocator's.
 */
__attribute__((destructor)) static void ktest_exit_check(void)
{
	long bad = 0;
	int n = 0;

	fflush(stdout);          /* the program's last lines before ours */
	pthread_mutex_lock(&attach_lock);
	for (struct ktest_cache *k = harness_caches; k; k = k->next) {
		bad += uslub_cache_validate(k->cache);
		n++;
		if (!k->prefills)
			continue;
		/* the sheaf calls, and how uslub's sheaf layer served them */
		uint64_t st[USLUB_NR_STATS];
		uslub_cache_stats(k->cache, st);
		fprintf(stderr, "uslub-ktest: %s: %lu prefilled sheaves (uslub: %llu from a "
			"ready sheaf, %llu refilled, %llu oversize), %lu refills, %lu objects "
			"taken from sheaves\n", uslub_cache_name(k->cache), k->prefills,
			(unsigned long long)st[USLUB_SHEAF_PREFILL_FAST],
			(unsigned long long)st[USLUB_SHEAF_PREFILL_SLOW],
			(unsigned long long)st[USLUB_SHEAF_PREFILL_OVERSIZE], k->refills,
			k->sheaf_allocs);
	}
	pthread_mutex_unlock(&attach_lock);
	if (n)
		fprintf(stderr, "uslub-ktest: at exit: %d harness caches validated, %ld "
			"inconsistencies; %lu uslub errors reported\n", n, bad,
			uslub_error_count());
}

/* The shim runs the callback, then disarms it. */
static void run_callback(struct ktest_cache *k)
{
	if (!__atomic_load_n(&k->exec_callback, __ATOMIC_ACQUIRE))
		return;
	void (*fn)(void *) = __atomic_load_n(&k->callback, __ATOMIC_ACQUIRE);
	if (fn)
		fn(__atomic_load_n(&k->priv, __ATOMIC_ACQUIRE));
	__atomic_store_n(&k->exec_callback, 0, __ATOMIC_RELEASE);
}

static void count_alloc(void *p, const char *from)
{
	__atomic_add_fetch(&nr_allocated, 1, __ATOMIC_RELAXED);
	if (kmalloc_verbose)
		printf("Allocating %p from %s\n", p, from);
}

__public void *uslub_ktest_cache_alloc_node(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	struct ktest_cache *k = ktest_of(s);
	void *p;

	if (!k)
		return NULL;
	run_callback(k);
	p = uslub_cache_alloc_node_noprof(s, gfp, node);
	if (p)
		count_alloc(p, "slab");
	return p;
}

__public void *uslub_ktest_cache_alloc(struct kmem_cache *s, uslub_gfp_t gfp)
{
	return uslub_ktest_cache_alloc_node(s, gfp, USLUB_NUMA_NO_NODE);
}

__public void uslub_ktest_cache_free(struct kmem_cache *s, void *obj)
{
	if (!obj)
		return;
	__atomic_sub_fetch(&nr_allocated, 1, __ATOMIC_RELAXED);
	if (kmalloc_verbose)
		printf("Freeing %p to slab\n", obj);
	uslub_cache_free(s, obj);
}

__public int uslub_ktest_cache_alloc_bulk(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
					  void **p)
{
	struct ktest_cache *k = ktest_of(s);
	int got;

	if (!k)
		return 0;
	if (kmalloc_verbose)
		printf("Bulk alloc %zu\n", n);
	got = uslub_cache_alloc_bulk_noprof(s, gfp, n, p);
	if (got <= 0)
		return 0;
	__atomic_add_fetch(&nr_allocated, got, __ATOMIC_RELAXED);
	if (kmalloc_verbose)
		for (int i = 0; i < got; i++)
			printf("Allocating %p from slab\n", p[i]);
	return got;
}

__public void uslub_ktest_cache_free_bulk(struct kmem_cache *s, size_t n, void **p)
{
	struct ktest_cache *k = harness_state(s);
	int freed = 0;

	if (k && k->rules_7x)
		run_callback(k);

	if (kmalloc_verbose && n)
		printf("Bulk free %p[0-%zu]\n", (void *)p, n - 1);
	for (size_t i = 0; i < n; i++) {
		if (!p[i])
			continue;
		freed++;
		if (kmalloc_verbose)
			printf("Freeing %p to slab\n", p[i]);
	}
	__atomic_sub_fetch(&nr_allocated, freed, __ATOMIC_RELAXED);
	uslub_cache_free_bulk(s, n, p);
}

__public void uslub_ktest_cache_shrink(struct kmem_cache *s)
{
	(void)uslub_cache_shrink(s);
}

/* ---- prefilled sheaves --------------------------------------------------- */

/*
 * The shim's sheaves hold exactly what was asked (the 7.x tests count a
 * maple state's nodes by its sheaf's size), where uslub's, as the
 * kernel's, hold at least that: a spare or a barn's full sheaf, or one
 * refilled to its capacity. So the harness gives the surplus back to the
 * cache at once (to the thread's sheaves, as any free), and keeps it out
 * of the cache's allocation count it took on the way.
 */
static void sheaf_trim(struct kmem_cache *s, struct ktest_cache *k, struct uslub_sheaf *sheaf,
		       unsigned int size)
{
	void *extra[32];
	unsigned int n;

	while ((n = uslub_cache_sheaf_size(sheaf)) > size) {
		unsigned int take = n - size < 32 ? n - size : 32, got = 0;

		while (got < take)
			extra[got++] = uslub_cache_alloc_from_sheaf_noprof(s, 0, sheaf);
		uslub_cache_free_bulk(s, got, extra);
		__atomic_add_fetch(&k->tallocated_base, got, __ATOMIC_RELAXED);
	}
}

__public struct uslub_sheaf *uslub_ktest_prefill_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
						       unsigned int size)
{
	struct ktest_cache *k = ktest_of(s);
	struct uslub_sheaf *sheaf;

	if (!k)
		return NULL;
	run_callback(k);
	if (!size) {                 /* the kernel's rule: nothing to prefill */
		errno = EINVAL;
		return NULL;
	}
	sheaf = uslub_cache_prefill_sheaf(s, gfp, size);
	if (sheaf) {
		sheaf_trim(s, k, sheaf, size);
		__atomic_add_fetch(&k->prefills, 1, __ATOMIC_RELAXED);
	}
	return sheaf;
}

__public void *uslub_ktest_alloc_from_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
					    struct uslub_sheaf *sheaf)
{
	struct ktest_cache *k = harness_state(s);
	void *p = uslub_cache_alloc_from_sheaf_noprof(s, gfp, sheaf);

	if (p) {
		count_alloc(p, "sheaf");
		if (k)
			__atomic_add_fetch(&k->sheaf_allocs, 1, __ATOMIC_RELAXED);
	}
	return p;
}

__public int uslub_ktest_refill_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
				      struct uslub_sheaf **sheafp, unsigned int size)
{
	struct ktest_cache *k = ktest_of(s);

	if (!k) {
		errno = EINVAL;
		return -EINVAL;
	}
	if (sheafp && *sheafp && uslub_cache_sheaf_size(*sheafp) >= size)
		return 0;            /* enough already: left as it is */
	if (uslub_cache_refill_sheaf(s, gfp, sheafp, size) != 0)
		return -ENOMEM;
	sheaf_trim(s, k, *sheafp, size);
	__atomic_add_fetch(&k->refills, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The shim gives what is left in the sheaf back with a bulk free, which
 * runs an armed callback first: so does this. */
__public void uslub_ktest_return_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
				       struct uslub_sheaf *sheaf)
{
	struct ktest_cache *k = harness_state(s);

	if (k && k->rules_7x && uslub_cache_sheaf_size(sheaf))
		run_callback(k);
	uslub_cache_return_sheaf(s, gfp, sheaf);
}

static void *kmalloc_done(void *p)
{
	if (!USLUB_ZERO_OR_NULL_PTR(p)) {
		__atomic_add_fetch(&kmalloc_nr_allocated, 1, __ATOMIC_RELAXED);
		if (kmalloc_verbose)
			printf("Allocating %p from malloc\n", p);
	}
	return p;
}

__public void *uslub_ktest_kmalloc(size_t size, uslub_gfp_t gfp)
{
	hook_kmalloc_caches();
	/* Above the kmalloc caches there is no cache to hook: refuse here. */
	if (size > USLUB_KMALLOC_MAX_CACHE_SIZE && ktest_gfp_nowait(gfp)) {
		errno = ENOMEM;
		return NULL;
	}
	return kmalloc_done(uslub_kmalloc_noprof(size, gfp));
}

__public void *uslub_ktest_kmalloc_array(size_t n, size_t size, uslub_gfp_t gfp)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return uslub_ktest_kmalloc(bytes, gfp);
}

/* kfree() of any slab object (the kernel's rule since 6.x; the 7.x maple
 * tree frees its nodes so): an object of a harness cache is counted out
 * of nr_allocated, as kmem_cache_free() would, not out of the kmalloc
 * count. */
__public void uslub_ktest_kfree(const void *p)
{
	if (USLUB_ZERO_OR_NULL_PTR(p))
		return;
	if (harness_state(uslub_object_cache(p))) {
		__atomic_sub_fetch(&nr_allocated, 1, __ATOMIC_RELAXED);
		if (kmalloc_verbose)
			printf("Freeing %p to slab\n", p);
	} else {
		__atomic_sub_fetch(&kmalloc_nr_allocated, 1, __ATOMIC_RELAXED);
		if (kmalloc_verbose)
			printf("Freeing %p to malloc\n", p);
	}
	uslub_kfree(p);
}

/* ---- the per-cache hooks ------------------------------------------------ */

__public void kmem_cache_set_non_kernel(struct kmem_cache *cachep, unsigned int val)
{
	struct ktest_cache *k = ktest_of(cachep);

	if (k)
		__atomic_store_n(&k->non_kernel, val, __ATOMIC_RELAXED);
}

__public void kmem_cache_set_callback(struct kmem_cache *cachep, void (*callback)(void *))
{
	struct ktest_cache *k = ktest_of(cachep);

	if (k)
		__atomic_store_n(&k->callback, callback, __ATOMIC_RELEASE);
}

__public void kmem_cache_set_private(struct kmem_cache *cachep, void *priv)
{
	struct ktest_cache *k = ktest_of(cachep);

	if (k)
		__atomic_store_n(&k->priv, priv, __ATOMIC_RELEASE);
}

__public unsigned long kmem_cache_nr_allocated(struct kmem_cache *cachep)
{
	uint64_t frees, allocs;

	if (!ktest_of(cachep))
		return 0;
	allocs = cache_allocs(cachep, &frees);
	return allocs > frees ? (unsigned long)(allocs - frees) : 0;
}

__public unsigned long kmem_cache_nr_tallocated(struct kmem_cache *cachep)
{
	struct ktest_cache *k = ktest_of(cachep);
	uint64_t allocs;

	if (!k)
		return 0;
	allocs = cache_allocs(cachep, NULL);
	return (unsigned long)(allocs - __atomic_load_n(&k->tallocated_base, __ATOMIC_RELAXED));
}

__public void kmem_cache_zero_nr_tallocated(struct kmem_cache *cachep)
{
	struct ktest_cache *k = ktest_of(cachep);

	if (k)
		__atomic_store_n(&k->tallocated_base, cache_allocs(cachep, NULL),
				 __ATOMIC_RELAXED);
}

__public unsigned long kmem_cache_get_alloc(struct kmem_cache *cachep)
{
	if (!cachep)
		return 0;
	return uslub_cache_object_size(cachep) * kmem_cache_nr_allocated(cachep);
}

/* ---- the shim's self-test ----------------------------------------------- */

/* The kernel's test checks its shim's free-object list; this one checks
 * what this library promises: the counters follow alloc/free and bulk,
 * the budget refuses a bulk call it cannot cover (and takes nothing), the
 * callback runs once after a failure, an aligned cache's objects are
 * aligned. Everything allocated is freed and both caches destroyed.
 * (nr_allocated is not compared: the maple test runs this while RCU
 * callbacks may still be freeing its nodes on another thread.) Aborts on
 * a failure. */
#define CHECK(cond) do {                                                      \
	if (!(cond)) {                                                        \
		fprintf(stderr, "test_kmem_cache_bulk: %s:%d: %s failed\n",   \
			__FILE__, __LINE__, #cond);                           \
		abort();                                                      \
	}                                                                     \
} while (0)

static int bulk_test_called;
static void bulk_test_callback(void *p)
{
	CHECK(p == &bulk_test_called);
	bulk_test_called++;
}

__public void test_kmem_cache_bulk(void)
{
	void *list[12];
	struct kmem_cache *c = uslub_ktest_cache_create("ktest_bulk", 256, 0, 0, NULL, 1);
	struct kmem_cache *a;
	int i;

	for (i = 0; i < 5; i++)
		CHECK((list[i] = uslub_ktest_cache_alloc(c, USLUB_GFP_KERNEL)) != NULL);
	CHECK(kmem_cache_nr_allocated(c) == 5 && kmem_cache_nr_tallocated(c) == 5);
	CHECK(kmem_cache_get_alloc(c) == 5 * 256);
	for (i = 0; i < 5; i++)
		uslub_ktest_cache_free(c, list[i]);
	CHECK(kmem_cache_nr_allocated(c) == 0 && kmem_cache_nr_tallocated(c) == 5);

	CHECK(uslub_ktest_cache_alloc_bulk(c, USLUB_GFP_KERNEL, 5, list) == 5);
	CHECK(kmem_cache_nr_allocated(c) == 5 && kmem_cache_nr_tallocated(c) == 10);
	uslub_ktest_cache_free_bulk(c, 5, list);
	CHECK(kmem_cache_nr_allocated(c) == 0);
	kmem_cache_zero_nr_tallocated(c);
	CHECK(kmem_cache_nr_tallocated(c) == 0);

	/* the budget: 3 units do not cover a bulk of 5 (nothing taken, the
	 * units used up), then a single allocation fails and arms the
	 * callback, which the next call runs once */
	kmem_cache_set_non_kernel(c, 3);
	CHECK(uslub_ktest_cache_alloc_bulk(c, USLUB_GFP_NOWAIT, 5, list) == 0);
	CHECK(kmem_cache_nr_allocated(c) == 0);
	kmem_cache_set_callback(c, bulk_test_callback);
	kmem_cache_set_private(c, &bulk_test_called);
	bulk_test_called = 0;
	CHECK(uslub_ktest_cache_alloc(c, USLUB_GFP_NOWAIT) == NULL);
	CHECK(bulk_test_called == 0);
	kmem_cache_set_non_kernel(c, 12);
	for (i = 0; i < 12; i++)
		CHECK((list[i] = uslub_ktest_cache_alloc(c, USLUB_GFP_ATOMIC)) != NULL);
	CHECK(bulk_test_called == 1);
	CHECK(kmem_cache_nr_allocated(c) == 12 && kmem_cache_nr_tallocated(c) == 12);
	for (i = 0; i < 12; i++)
		uslub_ktest_cache_free(c, list[i]);
	kmem_cache_set_callback(c, NULL);
	CHECK(uslub_ktest_cache_destroy(c) == 0);

	/* an aligned cache */
	a = uslub_ktest_cache_create("ktest_bulk_aligned", 128, 128, 0, NULL, 1);
	CHECK(uslub_ktest_cache_alloc_bulk(a, USLUB_GFP_KERNEL, 10, list) == 10);
	for (i = 0; i < 10; i++)
		CHECK(((uintptr_t)list[i] & 127) == 0);
	CHECK(kmem_cache_nr_allocated(a) == 10);
	uslub_ktest_cache_free_bulk(a, 10, list);
	CHECK(kmem_cache_nr_allocated(a) == 0);
	CHECK(uslub_ktest_cache_destroy(a) == 0);
}
