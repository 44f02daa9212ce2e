/*
 * kernel_style: a small "driver" written the way kernel code uses
 * <linux/slab.h>, built against <uslub/slab.h> instead. Every step checks
 * something that can fail and exits 1 with a message when it does.
 *
 *   - gfp_t: GFP_KERNEL may block (uslub's 0, the fast path), GFP_NOWAIT
 *     and GFP_ATOMIC (and any mask without __GFP_DIRECT_RECLAIM) may not;
 *     __GFP_ZERO/NOFAIL/ACCOUNT/NOWARN pass through; the harmless bits
 *     (__GFP_COMP, __GFP_NORETRY, GFP_DMA, ...) are dropped and accepted;
 *   - caches: KMEM_CACHE (named after the struct, aligned as it is, with
 *     SLAB_HWCACHE_ALIGN on cache lines, with ignored SLAB_ flags), the
 *     args form with a ctor, sheaf capacity and a free pointer offset, the
 *     NULL-args form, the legacy 5-argument form, KMEM_CACHE_USERCOPY;
 *     bad ones: size 0 (EINVAL), SLAB_TYPESAFE_BY_RCU without libuslub-rcu (EINVAL and a
 *     message), an unknown flag bit (refused by uslub, not swallowed);
 *     SLAB_PANIC aborts a failing creation (in a forked child);
 *   - ctor: objects come constructed, and stay so across free/alloc; the
 *     ctor runs once per object of each slab made (ALLOC_SLAB *
 *     objs_per_slab calls), never on reuse, through plain, sheaf and
 *     accounted allocations;
 *   - GFP_KERNEL / GFP_ATOMIC / zalloc / _node / _lru allocations;
 *   - kzalloc'd control structures, kcalloc'd arrays, overflowing
 *     kcalloc / kmalloc_array / kcalloc_node / krealloc_array fail with
 *     NULL (and leave the old array alone);
 *   - krealloc growth of an array (contents kept), krealloc(NULL) and
 *     krealloc(p, 0);
 *   - kmalloc(0) == ZERO_SIZE_PTR, ksize() >= the request (and all of it
 *     writable), kmalloc_size_roundup();
 *   - kfree() of a kmem_cache object (the cache's live count drops);
 *   - kmem_cache_alloc_bulk / kmem_cache_free_bulk, kfree_bulk of mixed
 *     objects (slab objects of several caches, NULL; last of all, large
 *     kmalloc objects: page runs and mappings);
 *   - a prefilled sheaf, allocated from under a lock with GFP_NOWAIT;
 *     refill; empty sheaf gives NULL; return;
 *   - accounting: with the group at its limit, GFP_NOWAIT and GFP_ATOMIC
 *     fail without calling the reclaim callback, GFP_KERNEL reclaims and
 *     succeeds; GFP_KERNEL_ACCOUNT charges a kmalloc object;
 *   - kstrdup / kstrndup / kmemdup / kmemdup_nul / kmemdup_array,
 *     kvmalloc family, struct_size, __free(kfree), alloc_hooks(), kmalloc
 *     and kfree as function pointers;
 *   - profiling (USLUB_PROFILING=1, the kernel_style_profiling test): each
 *     call site of kmalloc/kzalloc/kmem_cache_alloc/kstrdup/kcalloc has
 *     its own tag, with this file, line and function;
 *   - kmem_cache_shrink (0 once empty, 1 with live objects),
 *     kmem_cache_destroy, and no uslub error reported in the whole run.
 */
#include <uslub/slab.h>

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef uint32_t u32;
typedef uint8_t u8;

#define KCHECK_PROG "kernel_style"
#include "kcheck.h"

/* ------------------------------------------------------------------------
 * The driver's types
 * ---------------------------------------------------------------------- */
#define MYDEV_BUF_MAGIC 0x5ab1e5edu

struct mydev_request {
	unsigned long id;
	unsigned int state;
	struct mydev_request *next;
	char payload[48];
};

struct mydev_buf {                       /* constructed objects */
	unsigned int magic;
	unsigned int refs;
	struct mydev_buf *next;          /* free pointer lives here */
	unsigned char data[200];
};

struct mydev_queue {
	unsigned int head, tail;
	unsigned long submitted;
};

struct mydev_msg {
	size_t len;
	u8 data[];
};

struct mydev {
	struct kmem_cache *req_cache;    /* KMEM_CACHE                 */
	struct kmem_cache *buf_cache;    /* args form, ctor, sheaves   */
	struct kmem_cache *fp_cache;     /* args form, freeptr_offset  */
	struct kmem_cache *small_cache;  /* legacy 5-argument form     */
	struct kmem_cache *plain_cache;  /* NULL args                  */
	struct kmem_cache *uc_cache;     /* KMEM_CACHE_USERCOPY        */
	struct mydev_queue *queues;      /* kcalloc                    */
	unsigned int nr_queues;
	u32 *counters;                   /* grown with krealloc        */
	size_t nr_counters;
	char *name;                      /* kstrdup                    */
	pthread_mutex_t lock;
};

static unsigned long buf_ctor_calls;

static void mydev_buf_ctor(void *obj)
{
	struct mydev_buf *b = (struct mydev_buf *)obj;

	b->magic = MYDEV_BUF_MAGIC;
	b->refs = 0;
	buf_ctor_calls++;
}

static unsigned long fp_ctor_calls;

static void mydev_buf_fp_ctor(void *obj)
{
	struct mydev_buf *b = (struct mydev_buf *)obj;

	b->magic = MYDEV_BUF_MAGIC;
	b->refs = 0;
	fp_ctor_calls++;
}

/* The ctor ran once for each object of each slab the cache made, never on
 * reuse: calls == slabs made * objects per slab (fewer with order
 * fallback slabs). */
static void check_ctor_calls(struct kmem_cache *s, unsigned long calls)
{
	uint64_t st[USLUB_NR_STATS];
	struct uslub_slabinfo info;

	uslub_cache_stats(s, st);
	CHECK(uslub_cache_slabinfo(s, &info) == 0);
	unsigned long made = (unsigned long)st[USLUB_ALLOC_SLAB] * info.objs_per_slab;
	if (st[USLUB_ORDER_FALLBACK] ? calls > made : calls != made)
		fail(__FILE__, __LINE__, "%s: %lu ctor calls for %llu slabs of %u objects",
		     uslub_cache_name(s), calls, (unsigned long long)st[USLUB_ALLOC_SLAB],
		     info.objs_per_slab);
}

/* ------------------------------------------------------------------------
 * gfp_t
 * ---------------------------------------------------------------------- */
static void test_gfp(void)
{
	CHECK_EQ(uslub_compat_gfp(GFP_KERNEL), USLUB_GFP_KERNEL);
	CHECK_EQ(uslub_compat_gfp(GFP_NOFS), USLUB_GFP_KERNEL);
	CHECK_EQ(uslub_compat_gfp(GFP_NOIO), USLUB_GFP_KERNEL);
	CHECK_EQ(uslub_compat_gfp(GFP_USER), USLUB_GFP_KERNEL);
	CHECK_EQ(uslub_compat_gfp(GFP_KERNEL_ACCOUNT), USLUB_GFP_ACCOUNT);
	CHECK_EQ(uslub_compat_gfp(GFP_ATOMIC), USLUB_GFP_ATOMIC);
	CHECK_EQ(uslub_compat_gfp(GFP_NOWAIT), USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN);
	CHECK_EQ(uslub_compat_gfp(0), USLUB_GFP_NOWAIT);
	CHECK_EQ(uslub_compat_gfp(GFP_KERNEL & ~__GFP_DIRECT_RECLAIM), USLUB_GFP_NOWAIT);
	CHECK_EQ(uslub_compat_gfp(GFP_KERNEL | __GFP_ZERO | __GFP_NOFAIL | __GFP_NOWARN),
		 USLUB_GFP_ZERO | USLUB_GFP_NOFAIL | USLUB_GFP_NOWARN);
	CHECK_EQ(uslub_compat_gfp(GFP_KERNEL | __GFP_COMP | __GFP_NORETRY | __GFP_RETRY_MAYFAIL |
				  __GFP_HIGH | __GFP_DMA | __GFP_DMA32 | __GFP_MOVABLE |
				  __GFP_RECLAIMABLE | __GFP_HARDWALL | __GFP_THISNODE |
				  __GFP_NOMEMALLOC | __GFP_MEMALLOC | __GFP_WRITE),
		 USLUB_GFP_KERNEL);
	CHECK(gfpflags_allow_blocking(GFP_KERNEL));
	CHECK(gfpflags_allow_blocking(GFP_NOFS));
	CHECK(!gfpflags_allow_blocking(GFP_ATOMIC));
	CHECK(!gfpflags_allow_blocking(GFP_NOWAIT));
	CHECK((GFP_KERNEL_ACCOUNT & __GFP_ACCOUNT) && (GFP_NOWAIT & __GFP_NOWARN));

	/* The harmless bits on real allocations. */
	void *p = kmalloc(100, GFP_KERNEL | __GFP_COMP | __GFP_NORETRY | __GFP_RETRY_MAYFAIL);
	void *q = kmalloc(100, GFP_DMA | GFP_KERNEL | __GFP_HIGH);
	void *r = kzalloc(300, GFP_HIGHUSER_MOVABLE);
	void *n = kmalloc(64, GFP_KERNEL | __GFP_NOFAIL);
	CHECK(p && q && r && n && p != q);
	CHECK(all_zero(r, 300));
	kfree(p);
	kfree(q);
	kfree(r);
	kfree(n);
}

/* ------------------------------------------------------------------------
 * probe: caches and control structures
 * ---------------------------------------------------------------------- */
static struct mydev *mydev_probe(void)
{
	struct mydev *dev = (struct mydev *)kzalloc(sizeof(*dev), GFP_KERNEL);

	CHECK(dev != NULL);
	CHECK(all_zero(dev, sizeof(*dev)));
	CHECK(ksize(dev) >= sizeof(*dev));
	pthread_mutex_init(&dev->lock, NULL);

	/* KMEM_CACHE with flags the kernel has and uslub ignores. */
	dev->req_cache = KMEM_CACHE(mydev_request, SLAB_HWCACHE_ALIGN | SLAB_RECLAIM_ACCOUNT |
				    SLAB_NOLEAKTRACE | SLAB_NO_MERGE);
	CHECK(dev->req_cache != NULL);
	CHECK(strcmp(uslub_cache_name(dev->req_cache), "mydev_request") == 0);
	CHECK_EQ(kmem_cache_size(dev->req_cache), sizeof(struct mydev_request));

	/* The args form: ctor, sheaves, explicit alignment. */
	struct kmem_cache_args buf_args = {
		.align = 16,
		.ctor = mydev_buf_ctor,
		.sheaf_capacity = 32,
	};
	dev->buf_cache = kmem_cache_create("mydev_buf", sizeof(struct mydev_buf), &buf_args,
					   SLAB_ACCOUNT | SLAB_PANIC);
	CHECK(dev->buf_cache != NULL);
	{
		/* Debug caches (USLUB_DEBUG=...) get no sheaves, as in the kernel. */
		struct uslub_slabinfo info;
		CHECK(uslub_cache_slabinfo(dev->buf_cache, &info) == 0);
		CHECK(info.debug[0] || uslub_cache_sheaf_capacity(dev->buf_cache) >= 32);
	}

	/* A compound literal with freeptr_offset: with more than one field
	 * it needs parentheses (its commas would split the macro's
	 * arguments; the same holds for the kernel's macro). */
	dev->fp_cache = kmem_cache_create("mydev_buf_fp", sizeof(struct mydev_buf),
					  (&(struct kmem_cache_args){
						  .ctor = mydev_buf_fp_ctor,
						  .freeptr_offset = offsetof(struct mydev_buf, next),
						  .use_freeptr_offset = true,
					  }), 0);
	CHECK(dev->fp_cache != NULL);
	{
		struct uslub_slabinfo info;
		CHECK(uslub_cache_slabinfo(dev->fp_cache, &info) == 0);
		/* (slub_debug poisoning moves it out, as in the kernel) */
		if (!info.debug[0])
			CHECK_EQ(info.offset, offsetof(struct mydev_buf, next));
	}

	/* The legacy form, and the args form with NULL. */
	dev->small_cache = kmem_cache_create("mydev_small", 40, 8, SLAB_NO_MERGE | SLAB_TEMPORARY,
					     NULL);
	CHECK(dev->small_cache != NULL);
	CHECK_EQ(kmem_cache_size(dev->small_cache), 40);
	dev->plain_cache = kmem_cache_create("mydev_plain", 24, NULL, 0);
	CHECK(dev->plain_cache != NULL);
	kmem_cache_destroy(dev->plain_cache);
	/* A one-field compound literal needs no parentheses. */
	dev->plain_cache = kmem_cache_create("mydev_plain", 24,
					     &(struct kmem_cache_args){ .align = 8 }, 0);
	CHECK(dev->plain_cache != NULL);
	dev->uc_cache = KMEM_CACHE_USERCOPY(mydev_request, SLAB_ACCOUNT, payload);
	CHECK(dev->uc_cache != NULL);

	/* Alignment: the struct's own (KMEM_CACHE), 16 (args), cache lines
	 * (SLAB_HWCACHE_ALIGN on a 72-byte object). */
	{
		struct mydev_request *rq = (struct mydev_request *)kmem_cache_alloc(dev->req_cache,
										   GFP_KERNEL);
		struct mydev_buf *b = (struct mydev_buf *)kmem_cache_alloc(dev->buf_cache,
									  GFP_KERNEL);
		CHECK(rq && b);
		CHECK((uintptr_t)rq % __alignof__(struct mydev_request) == 0);
		CHECK((uintptr_t)rq % 64 == 0);
		CHECK((uintptr_t)b % 16 == 0);
		kmem_cache_free(dev->req_cache, rq);
		kmem_cache_free(dev->buf_cache, b);
	}

	/* Control structures: an array of queues, zeroed. */
	dev->nr_queues = 16;
	dev->queues = (struct mydev_queue *)kcalloc(dev->nr_queues, sizeof(*dev->queues),
						    GFP_KERNEL);
	CHECK(dev->queues != NULL);
	CHECK(all_zero(dev->queues, dev->nr_queues * sizeof(*dev->queues)));
	dev->name = kstrdup("mydev0", GFP_KERNEL);
	CHECK(dev->name && strcmp(dev->name, "mydev0") == 0);
	return dev;
}

/* ------------------------------------------------------------------------
 * creation failures
 * ---------------------------------------------------------------------- */
static void test_create_failures(void)
{
	struct kmem_cache *s;

	errno = 0;
	s = kmem_cache_create("bad_zero", 0, 0, 0, NULL);
	CHECK(s == NULL);
	CHECK_EQ(errno, EINVAL);

	errno = 0;
	s = kmem_cache_create("bad_rcu", 64, NULL, SLAB_TYPESAFE_BY_RCU);
	CHECK(s == NULL);
	CHECK_EQ(errno, EINVAL);

	/* A bit no kernel flag uses: uslub refuses it, it is not dropped. */
	errno = 0;
	s = kmem_cache_create("bad_bit", 64, 0, (slab_flags_t)0x80000000u, NULL);
	CHECK(s == NULL);
	CHECK_EQ(errno, EINVAL);

	/* SLAB_PANIC: a failing creation aborts (in children). */
	for (int which = 0; which < 2; which++) {
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (which == 0)
				kmem_cache_create("panic_zero", 0, 0, SLAB_PANIC, NULL);
			else
				kmem_cache_create("panic_rcu", 64, NULL,
						  SLAB_PANIC | SLAB_TYPESAFE_BY_RCU);
			_exit(0);        /* not reached if SLAB_PANIC works */
		}
		int status = 0;
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	}
}

/* ------------------------------------------------------------------------
 * cache objects
 * ---------------------------------------------------------------------- */
static void test_cache_objects(struct mydev *dev)
{
	/* ctor: constructed on arrival, returned constructed, still so. */
	struct mydev_buf *bufs[100];
	for (int i = 0; i < 100; i++) {
		bufs[i] = (struct mydev_buf *)kmem_cache_alloc(dev->buf_cache, GFP_KERNEL);
		CHECK(bufs[i] != NULL);
		CHECK_EQ(bufs[i]->magic, MYDEV_BUF_MAGIC);
		CHECK_EQ(bufs[i]->refs, 0);
		bufs[i]->refs = 1;
		memset(bufs[i]->data, 0xa5, sizeof(bufs[i]->data));
	}
	CHECK(buf_ctor_calls >= 100);
	check_ctor_calls(dev->buf_cache, buf_ctor_calls);
	for (int i = 0; i < 100; i++) {
		bufs[i]->refs = 0;                         /* back to constructed */
		kmem_cache_free(dev->buf_cache, bufs[i]);
	}
	for (int i = 0; i < 100; i++) {
		bufs[i] = (struct mydev_buf *)kmem_cache_alloc(dev->buf_cache, GFP_KERNEL);
		CHECK(bufs[i] && bufs[i]->magic == MYDEV_BUF_MAGIC && bufs[i]->refs == 0);
	}
	check_ctor_calls(dev->buf_cache, buf_ctor_calls);  /* no ctor on reuse */
	for (int i = 0; i < 100; i++)
		kmem_cache_free(dev->buf_cache, bufs[i]);

	/* The free pointer inside the object (freeptr_offset) spares magic. */
	struct mydev_buf *fb = (struct mydev_buf *)kmem_cache_alloc(dev->fp_cache, GFP_KERNEL);
	CHECK(fb && fb->magic == MYDEV_BUF_MAGIC);
	kmem_cache_free(dev->fp_cache, fb);
	fb = (struct mydev_buf *)kmem_cache_alloc(dev->fp_cache, GFP_KERNEL);
	CHECK(fb && fb->magic == MYDEV_BUF_MAGIC && fb->refs == 0);
	kmem_cache_free(dev->fp_cache, fb);
	CHECK(fp_ctor_calls > 0);
	check_ctor_calls(dev->fp_cache, fp_ctor_calls);

	/* "Interrupt context": GFP_ATOMIC, and the zeroing variants. */
	struct mydev_request *rq = (struct mydev_request *)kmem_cache_alloc(dev->req_cache,
									   GFP_ATOMIC);
	CHECK(rq != NULL);
	memset(rq, 0xff, sizeof(*rq));
	kmem_cache_free(dev->req_cache, rq);
	rq = (struct mydev_request *)kmem_cache_zalloc(dev->req_cache, GFP_ATOMIC);
	CHECK(rq && all_zero(rq, sizeof(*rq)));
	struct mydev_request *rq2 = (struct mydev_request *)kmem_cache_alloc_node(
		dev->req_cache, GFP_KERNEL | __GFP_ZERO, NUMA_NO_NODE);
	struct mydev_request *rq3 = (struct mydev_request *)kmem_cache_alloc_node(
		dev->req_cache, GFP_KERNEL, 0);
	struct mydev_request *rq4 = (struct mydev_request *)kmem_cache_alloc_lru(
		dev->req_cache, (struct list_lru *)NULL, GFP_NOWAIT);
	CHECK(rq2 && rq3 && rq4 && all_zero(rq2, sizeof(*rq2)));
	CHECK(rq != rq2 && rq2 != rq3 && rq3 != rq4);
	errno = 0;
	CHECK(kmem_cache_alloc_node(dev->req_cache, GFP_KERNEL | __GFP_NOWARN,
				    uslub_nr_nodes()) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* kfree() of a cache object: the cache's live count drops. */
	unsigned long before = live_objs(dev->req_cache);
	kfree(rq);
	kfree(rq2);
	CHECK_EQ(live_objs(dev->req_cache), before - 2);
	kmem_cache_free(dev->req_cache, rq3);
	kmem_cache_free(dev->req_cache, rq4);
	CHECK_EQ(live_objs(dev->req_cache), 0);

	/* Legacy and NULL-args caches work too. */
	void *s1 = kmem_cache_alloc(dev->small_cache, GFP_KERNEL);
	void *s2 = kmem_cache_zalloc(dev->plain_cache, GFP_KERNEL);
	void *s3 = kmem_cache_alloc(dev->uc_cache, GFP_KERNEL);
	CHECK(s1 && s2 && s3 && all_zero(s2, 24));
	CHECK((uintptr_t)s1 % 8 == 0);
	kmem_cache_free(dev->small_cache, s1);
	kmem_cache_free(dev->plain_cache, s2);
	kfree(s3);
}

/* ------------------------------------------------------------------------
 * kmalloc family
 * ---------------------------------------------------------------------- */
static void test_kmalloc(struct mydev *dev)
{
	/* kmalloc(0) */
	void *z = kmalloc(0, GFP_KERNEL);
	CHECK(z == ZERO_SIZE_PTR);
	CHECK(ZERO_OR_NULL_PTR(z) && ZERO_OR_NULL_PTR(NULL));
	CHECK_EQ(ksize(z), 0);
	kfree(z);
	kfree(NULL);
	CHECK(kzalloc(0, GFP_KERNEL) == ZERO_SIZE_PTR);

	/* ksize: at least the request, and all of it usable. */
	static const size_t sizes[] = { 1, 7, 8, 9, 24, 65, 96, 100, 129, 192, 200, 500,
					1000, 3000, 4096, 5000, 8192, 8193, 20000, 100000,
					1u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		unsigned char *p = (unsigned char *)kmalloc(n, GFP_KERNEL);
		CHECK(p != NULL);
		size_t k = ksize(p);
		if (k < n)
			fail(__FILE__, __LINE__, "ksize(kmalloc(%zu)) = %zu", n, k);
		CHECK(kmalloc_size_roundup(n) >= n);
		if (n <= KMALLOC_MAX_CACHE_SIZE)
			CHECK_EQ(kmalloc_size_roundup(n), k);
		memset(p, 0x5a, k);
		kfree(p);
	}

	/* kcalloc / kmalloc_array, and their overflow. */
	u32 *arr = (u32 *)kmalloc_array(64, sizeof(u32), GFP_KERNEL);
	CHECK(arr != NULL);
	for (int i = 0; i < 64; i++)
		arr[i] = (u32)i;
	errno = 0;
	CHECK(kcalloc(SIZE_MAX / 2, sizeof(struct mydev_queue), GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(kmalloc_array(SIZE_MAX / 4, 8, GFP_KERNEL) == NULL);
	CHECK(kcalloc_node(SIZE_MAX / 4, 8, GFP_KERNEL, NUMA_NO_NODE) == NULL);
	CHECK(kmalloc_array_node((size_t)1 << 40, (size_t)1 << 40, GFP_KERNEL, 0) == NULL);
	errno = 0;
	CHECK(krealloc_array(arr, SIZE_MAX / 2, sizeof(u32), GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);
	for (int i = 0; i < 64; i++)                 /* untouched by the failure */
		CHECK_EQ(arr[i], (u32)i);
	u32 *arr2 = (u32 *)krealloc_array(arr, 128, sizeof(u32), GFP_KERNEL);
	CHECK(arr2 != NULL);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(arr2[i], (u32)i);
	kfree(arr2);
	void *cn = kcalloc_node(10, 10, GFP_KERNEL, 0);
	CHECK(cn && all_zero(cn, 100));
	kfree(cn);
	void *zn = kzalloc_node(300, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(zn && all_zero(zn, 300));
	kfree(zn);

	/* krealloc growth of the driver's counters, doubling each time. */
	CHECK(dev->counters == NULL);
	dev->counters = (u32 *)krealloc(NULL, sizeof(u32), GFP_KERNEL);  /* = kmalloc */
	CHECK(dev->counters != NULL);
	dev->counters[0] = 0xc0ffee;
	dev->nr_counters = 1;
	while (dev->nr_counters < 8192) {
		size_t n = dev->nr_counters * 2;
		u32 *c = (u32 *)krealloc(dev->counters, n * sizeof(u32), GFP_KERNEL);
		CHECK(c != NULL);
		CHECK(ksize(c) >= n * sizeof(u32));
		CHECK_EQ(c[0], 0xc0ffee);
		for (size_t i = 1; i < dev->nr_counters; i++)
			if (c[i] != (u32)(i * 2654435761u))
				fail(__FILE__, __LINE__, "counter %zu lost growing to %zu", i, n);
		for (size_t i = dev->nr_counters; i < n; i++)
			c[i] = (u32)(i * 2654435761u);
		dev->counters = c;
		dev->nr_counters = n;
	}
	/* krealloc with __GFP_ZERO: the new part is zero. */
	u8 *zb = (u8 *)kzalloc(16, GFP_KERNEL);
	CHECK(zb != NULL);
	memset(zb, 1, 16);
	u8 *zb2 = (u8 *)krealloc(zb, 5000, GFP_KERNEL | __GFP_ZERO);
	CHECK(zb2 != NULL);
	for (int i = 0; i < 16; i++)
		CHECK_EQ(zb2[i], 1);
	CHECK(all_zero(zb2 + 16, 5000 - 16));
	/* krealloc to 0 frees and gives ZERO_SIZE_PTR. */
	CHECK(krealloc(zb2, 0, GFP_KERNEL) == ZERO_SIZE_PTR);

	/* Copies. */
	char *s = kstrdup("hello, slab", GFP_KERNEL);
	CHECK(s && strcmp(s, "hello, slab") == 0);
	CHECK(kstrdup(NULL, GFP_KERNEL) == NULL);
	char *sn = kstrndup("abcdefgh", 3, GFP_KERNEL);
	CHECK(sn && strcmp(sn, "abc") == 0);
	char *sn2 = kstrndup("ab", 100, GFP_KERNEL);
	CHECK(sn2 && strcmp(sn2, "ab") == 0);
	static const u32 table[5] = { 1, 2, 3, 4, 5 };
	u32 *t = (u32 *)kmemdup(table, sizeof(table), GFP_KERNEL);
	CHECK(t && memcmp(t, table, sizeof(table)) == 0);
	u32 *ta = (u32 *)kmemdup_array(table, 5, sizeof(u32), GFP_KERNEL);
	CHECK(ta && memcmp(ta, table, sizeof(table)) == 0);
	CHECK(kmemdup_array(table, SIZE_MAX / 2, 4, GFP_KERNEL) == NULL);
	char *mn = kmemdup_nul("xyz123", 3, GFP_KERNEL);
	CHECK(mn && strcmp(mn, "xyz") == 0);
	const char *cs = kstrdup_const("const", GFP_KERNEL);
	CHECK(cs && strcmp(cs, "const") == 0);
	CHECK(kmemdup(table, 0, GFP_KERNEL) == ZERO_SIZE_PTR);
	kfree(s);
	kfree(sn);
	kfree(sn2);
	kfree(t);
	kfree(ta);
	kfree(mn);
	kfree_const(cs);

	/* kvmalloc family: kmalloc underneath, any size. */
	u8 *big = (u8 *)kvmalloc(3u << 20, GFP_KERNEL);
	CHECK(big != NULL && ksize(big) >= (3u << 20));
	big[0] = 1;
	big[(3u << 20) - 1] = 2;
	u8 *bigz = (u8 *)kvzalloc(1u << 20, GFP_KERNEL);
	CHECK(bigz && all_zero(bigz, 1u << 20));
	void *kva = kvmalloc_array(1000, 16, GFP_KERNEL);
	void *kvc = kvcalloc(1000, 16, GFP_KERNEL);
	CHECK(kva && kvc && all_zero(kvc, 16000));
	CHECK(kvmalloc_array(SIZE_MAX / 8, 16, GFP_KERNEL) == NULL);
	u8 *bigr = (u8 *)kvrealloc(big, 4u << 20, GFP_KERNEL);
	CHECK(bigr && bigr[0] == 1 && bigr[(3u << 20) - 1] == 2);
	void *kvn = kvmalloc_node(100, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(kvn != NULL);
	kvfree(bigr);
	kvfree(bigz);
	kvfree(kva);
	kvfree_sensitive(kvc, 16000);
	kvfree(kvn);

	/* kfree_sensitive, and the flexible-array helpers. */
	struct mydev_msg *m = (struct mydev_msg *)kzalloc(struct_size(m, data, 100), GFP_KERNEL);
	CHECK(m && ksize(m) >= sizeof(*m) + 100 && all_zero(m, sizeof(*m) + 100));
	CHECK_EQ(struct_size(m, data, 100), sizeof(*m) + 100);
	CHECK_EQ(flex_array_size(m, data, 100), 100);
	CHECK_EQ(struct_size(m, data, SIZE_MAX), SIZE_MAX);
	CHECK_EQ(array_size(SIZE_MAX / 2, 4), SIZE_MAX);
	CHECK(kmalloc(struct_size(m, data, SIZE_MAX), GFP_KERNEL | __GFP_NOWARN) == NULL);
	m->len = 100;
	memset(m->data, 0x42, m->len);
	kfree_sensitive(m);
}

/* ------------------------------------------------------------------------
 * bulk
 * ---------------------------------------------------------------------- */
static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

static void test_bulk(struct mydev *dev)
{
	void *objs[64], *sorted[64];

	CHECK_EQ(kmem_cache_alloc_bulk(dev->req_cache, GFP_KERNEL, 64, objs), 64);
	memcpy(sorted, objs, sizeof(objs));
	qsort(sorted, 64, sizeof(void *), cmp_ptr);
	for (int i = 0; i < 64; i++) {
		CHECK(sorted[i] != NULL);
		CHECK(i == 0 || sorted[i] != sorted[i - 1]);
		memset(sorted[i], i, sizeof(struct mydev_request));
	}
	CHECK_EQ(live_objs(dev->req_cache), 64);
	kmem_cache_free_bulk(dev->req_cache, 64, objs);
	CHECK_EQ(live_objs(dev->req_cache), 0);

	/* Zeroed bulk from a ctor cache keeps working. */
	CHECK_EQ(kmem_cache_alloc_bulk(dev->small_cache, GFP_KERNEL | __GFP_ZERO, 10, objs), 10);
	for (int i = 0; i < 10; i++)
		CHECK(all_zero(objs[i], 40));
	kmem_cache_free_bulk(dev->small_cache, 10, objs);

	/* kfree_bulk: objects of several kmalloc sizes and a cache, and NULL. */
	void *mixed[8];
	mixed[0] = kmalloc(8, GFP_KERNEL);
	mixed[1] = kmalloc(100, GFP_KERNEL);
	mixed[2] = kmalloc(1000, GFP_KERNEL);
	mixed[3] = kmalloc(2000, GFP_KERNEL);
	mixed[4] = kmem_cache_alloc(dev->req_cache, GFP_KERNEL);
	mixed[5] = NULL;
	mixed[6] = kzalloc(64, GFP_KERNEL);
	mixed[7] = kmem_cache_alloc(dev->req_cache, GFP_KERNEL);
	for (int i = 0; i < 8; i++)
		CHECK(i == 5 || mixed[i] != NULL);
	CHECK_EQ(live_objs(dev->req_cache), 2);
	kfree_bulk(8, mixed);
	CHECK_EQ(live_objs(dev->req_cache), 0);
}

/* kfree_bulk of kmalloc objects that are no slab objects (page runs above
 * KMALLOC_MAX_CACHE_SIZE, direct mappings), which the kernel's kfree_bulk
 * frees. Run last: a failure here leaves the objects behind. */
static void test_kfree_bulk_large(void)
{
	void *big[4];
	unsigned long errs = uslub_error_count();

	big[0] = kmalloc(64, GFP_KERNEL);
	big[1] = kmalloc(KMALLOC_MAX_CACHE_SIZE + 1, GFP_KERNEL);
	big[2] = kmalloc(3u << 20, GFP_KERNEL);
	big[3] = kvmalloc(100000, GFP_KERNEL);
	for (int i = 0; i < 4; i++)
		CHECK(big[i] != NULL);
	kfree_bulk(4, big);
	if (uslub_error_count() != errs)
		fail(__FILE__, __LINE__, "kfree_bulk() refused %lu kmalloc object(s) above "
		     "KMALLOC_MAX_CACHE_SIZE (the kernel frees them)",
		     uslub_error_count() - errs);
}

/* ------------------------------------------------------------------------
 * sheaves: prefill outside the lock, allocate under it without failing
 * ---------------------------------------------------------------------- */
static void test_sheaf(struct mydev *dev)
{
	struct mydev_buf *got[512];
	struct slab_sheaf *sheaf = kmem_cache_prefill_sheaf(dev->buf_cache, GFP_KERNEL, 16);

	CHECK(sheaf != NULL);
	CHECK(kmem_cache_sheaf_size(sheaf) >= 16);
	unsigned int n = kmem_cache_sheaf_size(sheaf);

	pthread_mutex_lock(&dev->lock);
	for (unsigned int i = 0; i < 16; i++) {
		got[i] = (struct mydev_buf *)kmem_cache_alloc_from_sheaf(dev->buf_cache,
									GFP_NOWAIT, sheaf);
		CHECK(got[i] != NULL);
		CHECK_EQ(got[i]->magic, MYDEV_BUF_MAGIC);
		CHECK_EQ(kmem_cache_sheaf_size(sheaf), n - i - 1);
	}
	pthread_mutex_unlock(&dev->lock);

	/* Refill (may replace the sheaf), then drain it to empty. */
	CHECK_EQ(kmem_cache_refill_sheaf(dev->buf_cache, GFP_KERNEL, &sheaf, 24), 0);
	CHECK(sheaf != NULL && kmem_cache_sheaf_size(sheaf) >= 24);
	unsigned int have = kmem_cache_sheaf_size(sheaf);
	CHECK(16 + have <= 512);
	pthread_mutex_lock(&dev->lock);
	for (unsigned int i = 0; i < have; i++) {
		got[16 + i] = (struct mydev_buf *)kmem_cache_alloc_from_sheaf(
			dev->buf_cache, GFP_ATOMIC, sheaf);
		CHECK(got[16 + i] && got[16 + i]->magic == MYDEV_BUF_MAGIC);
	}
	CHECK_EQ(kmem_cache_sheaf_size(sheaf), 0);
	CHECK(kmem_cache_alloc_from_sheaf(dev->buf_cache, GFP_NOWAIT, sheaf) == NULL);
	pthread_mutex_unlock(&dev->lock);
	kmem_cache_return_sheaf(dev->buf_cache, GFP_KERNEL, sheaf);
	for (unsigned int i = 0; i < 16 + have; i++)
		kmem_cache_free(dev->buf_cache, got[i]);

	/* A sheaf of a cache without sheaves, returned with objects left. */
	sheaf = kmem_cache_prefill_sheaf(dev->req_cache, GFP_KERNEL, 8);
	CHECK(sheaf && kmem_cache_sheaf_size(sheaf) >= 8);
	void *o = kmem_cache_alloc_from_sheaf(dev->req_cache, GFP_NOWAIT | __GFP_ZERO, sheaf);
	CHECK(o && all_zero(o, sizeof(struct mydev_request)));
	kmem_cache_return_sheaf(dev->req_cache, GFP_KERNEL, sheaf);
	kmem_cache_free(dev->req_cache, o);
	CHECK_EQ(live_objs(dev->req_cache), 0);
}

/* ------------------------------------------------------------------------
 * accounting: GFP_KERNEL may reclaim; GFP_NOWAIT/GFP_ATOMIC may not
 * ---------------------------------------------------------------------- */
#define STASH_MAX 4096
static struct mydev_buf *stash[STASH_MAX];
static size_t nstash;
static unsigned long reclaim_calls;
static struct kmem_cache *stash_cache;

static size_t mydev_reclaim(uslub_group_t *g, size_t need, void *arg)
{
	size_t freed = 0;

	(void)g;
	(void)arg;
	reclaim_calls++;
	while (freed < need && nstash) {
		kmem_cache_free(stash_cache, stash[--nstash]);
		freed += sizeof(struct mydev_buf);
	}
	return freed;
}

static void test_account(struct mydev *dev)
{
	uslub_group_t *g = uslub_group_create(NULL, "mydev", 64 * 1024);
	CHECK(g != NULL);
	uslub_group_t *prev = uslub_group_set_current(g);
	stash_cache = dev->buf_cache;                      /* SLAB_ACCOUNT */

	/* Fill to the limit (no reclaim callback yet). */
	while (nstash < STASH_MAX) {
		struct mydev_buf *b = (struct mydev_buf *)kmem_cache_alloc(stash_cache,
									  GFP_KERNEL | __GFP_NOWARN);
		if (!b)
			break;
		stash[nstash++] = b;
	}
	CHECK(nstash > 0 && nstash < STASH_MAX);
	CHECK(uslub_group_usage(g) > 32 * 1024);
	uslub_group_set_reclaim(g, mydev_reclaim, NULL);

	/* Non-blocking masks fail, never reclaiming. */
	errno = 0;
	CHECK(kmem_cache_alloc(stash_cache, GFP_NOWAIT) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(kmem_cache_alloc(stash_cache, GFP_ATOMIC | __GFP_NOWARN) == NULL);
	CHECK(kmem_cache_alloc(stash_cache, (GFP_KERNEL & ~__GFP_DIRECT_RECLAIM) |
			       __GFP_NOWARN) == NULL);
	CHECK_EQ(reclaim_calls, 0);

	/* GFP_KERNEL waits and reclaims: the callback frees, it succeeds. */
	size_t before = nstash;
	struct mydev_buf *b = (struct mydev_buf *)kmem_cache_alloc(stash_cache, GFP_KERNEL);
	CHECK(b != NULL);
	CHECK(reclaim_calls > 0);
	CHECK(nstash < before);
	CHECK_EQ(b->magic, MYDEV_BUF_MAGIC);
	kmem_cache_free(stash_cache, b);
	uslub_group_set_reclaim(g, NULL, NULL);
	while (nstash)
		kmem_cache_free(stash_cache, stash[--nstash]);

	/* GFP_KERNEL_ACCOUNT charges a kmalloc object; GFP_KERNEL does not. */
	struct kmem_cache *k512 = uslub_kmalloc_cache(512);
	CHECK(k512 != NULL);
	unsigned long objs = 0;
	size_t bytes = 0;
	CHECK(uslub_group_cache_usage(g, k512, &objs, &bytes) == 0);
	CHECK_EQ(objs, 0);
	void *acc = kmalloc(500, GFP_KERNEL_ACCOUNT);
	void *unacc = kmalloc(500, GFP_KERNEL);
	CHECK(acc && unacc);
	CHECK(uslub_group_cache_usage(g, k512, &objs, &bytes) == 0);
	CHECK_EQ(objs, 1);
	kfree(acc);
	kfree(unacc);
	CHECK(uslub_group_cache_usage(g, k512, &objs, &bytes) == 0);
	CHECK_EQ(objs, 0);

	uslub_group_set_current(prev);
	uslub_group_drain_stock();
	CHECK(uslub_group_delete(g) == 0);
}

/* ------------------------------------------------------------------------
 * function pointers, alloc_hooks, __free
 * ---------------------------------------------------------------------- */
#define mydev_alloc_msg(len) alloc_hooks(kmalloc_noprof((len), GFP_KERNEL))

static char *mydev_make_label(int id)
{
	char *label __free(kfree) = (char *)kmalloc(32, GFP_KERNEL);

	if (!label)
		return NULL;
	snprintf(label, 32, "mydev-%d", id);
	if (id < 0)
		return NULL;                    /* freed on the way out */
	return_ptr(label);
}

static void test_misc(void)
{
	void *(*alloc_fn)(size_t, gfp_t) = kmalloc;
	void (*free_fn)(const void *) = kfree;
	void *(*cache_alloc_fn)(struct kmem_cache *, gfp_t) = kmem_cache_alloc;
	void (*cache_free_fn)(struct kmem_cache *, void *) = kmem_cache_free;
	char *(*dup_fn)(const char *, gfp_t) = kstrdup;

	void *p = alloc_fn(128, GFP_KERNEL);
	CHECK(p != NULL && ksize(p) >= 128);
	free_fn(p);
	char *d = dup_fn("fp", GFP_KERNEL);
	CHECK(d && strcmp(d, "fp") == 0);
	free_fn(d);
	struct kmem_cache *c = kmem_cache_create("mydev_fnptr", 32, 0, 0, NULL);
	CHECK(c != NULL);
	void *o = cache_alloc_fn(c, GFP_KERNEL);
	CHECK(o != NULL);
	cache_free_fn(c, o);
	CHECK_EQ(kmem_cache_shrink(c), 0);
	kmem_cache_destroy(c);

	void *m = mydev_alloc_msg(100);
	CHECK(m != NULL && ksize(m) >= 100);
	kfree(m);

	/* __free(kfree): freed at scope exit unless handed on. */
	struct kmem_cache *k32 = uslub_kmalloc_cache(32);
	CHECK(k32 != NULL);
	unsigned long before = live_objs(k32);
	char *l = mydev_make_label(7);
	CHECK(l && strcmp(l, "mydev-7") == 0);
	CHECK_EQ(live_objs(k32), before + 1);
	CHECK(mydev_make_label(-1) == NULL);
	CHECK_EQ(live_objs(k32), before + 1);
	{
		void *tmp __free(kfree) = kmalloc(20, GFP_KERNEL);
		CHECK(tmp != NULL);
		CHECK_EQ(live_objs(k32), before + 2);
	}
	CHECK_EQ(live_objs(k32), before + 1);
	kfree(l);
	CHECK_EQ(live_objs(k32), before);
}

/* ------------------------------------------------------------------------
 * profiling: one tag per call site
 * ---------------------------------------------------------------------- */
static int find_site(const struct uslub_allocinfo *info, size_t n, int line, int64_t *calls)
{
	for (size_t i = 0; i < n; i++) {
		if (info[i].line != (unsigned int)line || !info[i].file)
			continue;
		if (!strstr(info[i].file, "kernel_style.c"))
			continue;
		if (strcmp(info[i].func, "test_tags") != 0)
			fail(__FILE__, __LINE__, "site at line %d has func %s", line, info[i].func);
		*calls = info[i].calls;
		return 1;
	}
	return 0;
}

static void test_tags(struct mydev *dev)
{
	if (uslub_profiling_enabled() != 1) {   /* exact counts: exact mode only */
		printf("kernel_style: profiling not exact (USLUB_PROFILING=1 checks call-site tags)\n");
		return;
	}
	void *a[3], *b[2], *c, *d, *e;
	int la, lb, lc, ld, le;
	for (int i = 0; i < 3; i++) {
		la = __LINE__; a[i] = kmalloc(200, GFP_KERNEL);
	}
	for (int i = 0; i < 2; i++) {
		lb = __LINE__; b[i] = kzalloc(200, GFP_KERNEL);
	}
	lc = __LINE__; c = kmem_cache_alloc(dev->req_cache, GFP_ATOMIC);
	ld = __LINE__; d = kstrdup("tagged", GFP_KERNEL);
	le = __LINE__; e = kcalloc(4, 50, GFP_KERNEL);
	CHECK(a[0] && a[1] && a[2] && b[0] && b[1] && c && d && e);

	size_t cap = 4096;
	struct uslub_allocinfo *info =
		(struct uslub_allocinfo *)malloc(cap * sizeof(*info));
	CHECK(info != NULL);
	size_t n = uslub_allocinfo(info, cap);
	CHECK(n <= cap);
	int64_t calls = 0;
	CHECK(find_site(info, n, la, &calls) && calls == 3);
	CHECK(find_site(info, n, lb, &calls) && calls == 2);
	CHECK(find_site(info, n, lc, &calls) && calls == 1);
	CHECK(find_site(info, n, ld, &calls) && calls == 1);
	CHECK(find_site(info, n, le, &calls) && calls == 1);
	free(info);

	for (int i = 0; i < 3; i++)
		kfree(a[i]);
	kfree(b[0]);
	kfree(b[1]);
	kmem_cache_free(dev->req_cache, c);
	kfree(d);
	kfree(e);
}

/* ------------------------------------------------------------------------
 * remove: shrink and destroy
 * ---------------------------------------------------------------------- */
static void mydev_remove(struct mydev *dev)
{
	/* A cache with a live object keeps a slab. */
	void *keep = kmem_cache_alloc(dev->small_cache, GFP_KERNEL);
	CHECK(keep != NULL);
	CHECK_EQ(kmem_cache_shrink(dev->small_cache), 1);
	kmem_cache_free(dev->small_cache, keep);

	check_ctor_calls(dev->buf_cache, buf_ctor_calls);
	check_ctor_calls(dev->fp_cache, fp_ctor_calls);

	struct kmem_cache *caches[] = { dev->req_cache, dev->buf_cache, dev->fp_cache,
					dev->small_cache, dev->plain_cache, dev->uc_cache };
	for (size_t i = 0; i < sizeof(caches) / sizeof(caches[0]); i++) {
		CHECK_EQ(live_objs(caches[i]), 0);
		int r = kmem_cache_shrink(caches[i]);
		if (r != 0)
			fail(__FILE__, __LINE__, "kmem_cache_shrink(%s) = %d with no object live",
			     uslub_cache_name(caches[i]), r);
	}
	unsigned long errs = uslub_error_count();
	for (size_t i = 0; i < sizeof(caches) / sizeof(caches[0]); i++)
		kmem_cache_destroy(caches[i]);
	kmem_cache_destroy(NULL);
	CHECK_EQ(uslub_error_count(), errs);            /* every destroy succeeded */

	kfree(dev->counters);
	kfree(dev->queues);
	kfree(dev->name);
	pthread_mutex_destroy(&dev->lock);
	kfree(dev);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_gfp();
	test_create_failures();
	struct mydev *dev = mydev_probe();
	test_cache_objects(dev);
	test_kmalloc(dev);
	test_bulk(dev);
	test_sheaf(dev);
	test_account(dev);
	test_misc();
	test_tags(dev);
	mydev_remove(dev);
	CHECK_EQ(uslub_error_count(), 0);
	test_kfree_bulk_large();
	CHECK_EQ(uslub_error_count(), 0);
	printf("kernel_style: ok\n");
	return 0;
}
