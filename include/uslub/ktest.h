/*
 * <uslub/ktest.h> — the kernel's userspace test harness on uslub
 * (libuslub-ktest: -luslub-ktest -luslub).
 *
 * The kernel tests its radix tree, xarray, IDA/IDR, maple tree and VMA
 * code in userspace (tools/testing/radix-tree, tools/testing/vma). Those
 * programs link a small allocation shim (tools/testing/shared/linux.c and
 * tools/lib/slab.c) that adds, beside the kernel's slab API, a few test
 * hooks the tests call. This library provides the same hooks on uslub's
 * real caches, so the tests run on SLUB itself (with slub_debug, failslab,
 * validate, statistics and accounting available):
 *
 *   - The non-kernel budget. An allocation from a harness cache whose gfp
 *     lacks __GFP_DIRECT_RECLAIM (GFP_NOWAIT, GFP_ATOMIC, ...) fails unless
 *     the cache's budget (kmem_cache_set_non_kernel(), 0 at first) still
 *     covers it; each such allocation uses one unit (a bulk call one per
 *     object; a bulk call the budget cannot cover fails as a whole and uses
 *     up what was left). kmalloc() without __GFP_DIRECT_RECLAIM always
 *     fails, as in the kernel's shim ("in userspace, GFP_NOWAIT will always
 *     fail an allocation"). Both are uslub fault injection: a per-cache
 *     hook (uslub_cache_set_fail_hook()) on each harness cache and on every
 *     kmalloc cache of the process, so the failure happens where
 *     USLUB_FAILSLAB's would (NULL with ENOMEM, nothing taken, counted in
 *     uslub_failslab_injected()). kmalloc above
 *     USLUB_KMALLOC_MAX_CACHE_SIZE has no cache: its refusal is made here.
 *   - The failure callback: kmem_cache_set_callback(c, fn) and
 *     kmem_cache_set_private(c, p); after an allocation of c failed for the
 *     budget, the next allocation call of c first runs fn(p).
 *   - Counters: kmem_cache_nr_allocated() (live objects) and
 *     kmem_cache_nr_tallocated() (allocations since creation or the last
 *     kmem_cache_zero_nr_tallocated()) come from the cache's own statistics
 *     (uslub_cache_stats(): the allocation and free counters); so they see
 *     every allocation of the cache, harness call or not.
 *     kmem_cache_get_alloc() is the live objects' bytes (object size).
 *   - Globals: nr_allocated (objects allocated and not freed through the
 *     harness's kmem_cache calls, every cache), kmalloc_nr_allocated (the
 *     same for kmalloc/kzalloc/kmalloc_array/kcalloc against kfree),
 *     kmalloc_verbose (print each allocation and free, as the shim does),
 *     test_verbose and preempt_count (the tests' own variables, defined
 *     here because the shim defines them).
 *
 * A cache becomes a harness cache when it is created through the harness's
 * kmem_cache_create(), or on its first allocation or hook call through
 * this header's entry points. The kernel's tests reach these through
 * <linux/slab.h>: include/uslub/ktest/linux/slab.h replaces the harness's
 * one (add -I<prefix>/include/uslub/ktest before the harness's -I paths;
 * README "Running the kernel's test harness").
 *
 * The hook names are the kernel shim's (they are what the tests call);
 * everything else is uslub_ktest_*. In a program that also links the
 * kernel's own tools/testing/shared/linux.c or tools/lib/slab.c the names
 * clash: link one or the other.
 */
#ifndef USLUB_KTEST_H
#define USLUB_KTEST_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the harness's globals -------------------------------------------- */
extern int nr_allocated;          /* cache objects live (harness calls)    */
extern int kmalloc_nr_allocated;  /* kmalloc'd blocks live (harness calls) */
extern int kmalloc_verbose;       /* != 0: print every allocation and free */
extern int test_verbose;          /* the tests' verbosity level            */
extern int preempt_count;         /* preempt_disable() nesting (the tests') */

/* ---- per-cache test hooks (the kernel shim's names and types) --------- */
/* Let the next @val allocations without __GFP_DIRECT_RECLAIM succeed. */
void kmem_cache_set_non_kernel(struct kmem_cache *cachep, unsigned int val);
/* After an allocation failed for the budget, the next allocation call of
 * @cachep runs @callback(private) first (NULL: nothing). */
void kmem_cache_set_callback(struct kmem_cache *cachep, void (*callback)(void *));
void kmem_cache_set_private(struct kmem_cache *cachep, void *priv);
/* Bytes of the live objects (object size times kmem_cache_nr_allocated). */
unsigned long kmem_cache_get_alloc(struct kmem_cache *cachep);
/* Reset kmem_cache_nr_tallocated() to 0. */
void kmem_cache_zero_nr_tallocated(struct kmem_cache *cachep);
/* Live objects, and objects allocated since the last zeroing. (The
 * kernel's lib/maple_tree.c declares these two itself, as returning
 * unsigned int, which is ABI-compatible on every 64-bit target; the
 * harness's <linux/slab.h> defines USLUB_KTEST_KERNEL_DECLS so that they
 * are not declared twice with different types.) */
#ifndef USLUB_KTEST_KERNEL_DECLS
unsigned long kmem_cache_nr_allocated(struct kmem_cache *cachep);
unsigned long kmem_cache_nr_tallocated(struct kmem_cache *cachep);
#endif
/* The shim's self-test, which the maple test runs: alloc/free and bulk
 * alloc/free through the harness, with the counters, the budget and an
 * aligned cache checked; aborts with a message on a failure. */
void test_kmem_cache_bulk(void);

/* The library also defines slab_is_available() (true: uslub allocates
 * from the start), which the harness's header declares and nothing of
 * the harness defines. */

/* ---- the entry points behind <linux/slab.h> ---------------------------- */
/* gfp here is uslub's (USLUB_GFP_NOWAIT/ATOMIC: no __GFP_DIRECT_RECLAIM);
 * the header translates the kernel's. */

/* uslub_cache_create() (flags: USLUB_ cache flags), then made a harness
 * cache; with @panic a failure aborts (SLAB_PANIC). */
struct kmem_cache *uslub_ktest_cache_create(const char *name, size_t size, size_t align,
					    unsigned int flags, void (*ctor)(void *), int panic);
/* Make @s a harness cache (its budget hook installed) if it is not one
 * yet; 0, or -1 with errno. Every call below does it. */
int uslub_ktest_cache_attach(struct kmem_cache *s);
/* The same with the kernel's argument structure (the 7.x harness's
 * __kmem_cache_create_args(); @args may be NULL). A cache created so
 * follows the 7.x shim's rules for the failure callback: a bulk call or a
 * prefill the budget refused arms it too, and a prefill or bulk free runs
 * it first, as an allocation does. */
struct kmem_cache *uslub_ktest_cache_create_args(const char *name, size_t size,
						 const struct uslub_cache_args *args,
						 unsigned int flags, int panic);
/* Destroy a harness cache (uslub_cache_destroy()); its harness state goes
 * with it. Returns what uslub_cache_destroy() returned. */
int uslub_ktest_cache_destroy(struct kmem_cache *s);
void *uslub_ktest_cache_alloc(struct kmem_cache *s, uslub_gfp_t gfp);
void *uslub_ktest_cache_alloc_node(struct kmem_cache *s, uslub_gfp_t gfp, int node);
void uslub_ktest_cache_free(struct kmem_cache *s, void *obj);
/* All or nothing: @n or 0. */
int uslub_ktest_cache_alloc_bulk(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p);
void uslub_ktest_cache_free_bulk(struct kmem_cache *s, size_t n, void **p);
void uslub_ktest_cache_shrink(struct kmem_cache *s);
/* Prefilled sheaves (uslub_cache_prefill_sheaf() and friends) with the
 * harness's hooks: the budget is asked for the objects a prefill or
 * refill must get (uslub's fault injection, as for a bulk call); a
 * sheaf's objects count as allocated (nr_allocated, the cache's counters)
 * only once uslub_ktest_alloc_from_sheaf() takes them, and returning a
 * sheaf frees nothing that was counted. A prefill of 0 objects returns
 * NULL (EINVAL), as the kernel's. */
struct uslub_sheaf *uslub_ktest_prefill_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
					      unsigned int size);
void *uslub_ktest_alloc_from_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
				   struct uslub_sheaf *sheaf);
int uslub_ktest_refill_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
			     struct uslub_sheaf **sheafp, unsigned int size);
void uslub_ktest_return_sheaf(struct kmem_cache *s, uslub_gfp_t gfp, struct uslub_sheaf *sheaf);
void *uslub_ktest_kmalloc(size_t size, uslub_gfp_t gfp);
void *uslub_ktest_kmalloc_array(size_t n, size_t size, uslub_gfp_t gfp);
void uslub_ktest_kfree(const void *p);

#ifdef __cplusplus
}
#endif
#endif /* USLUB_KTEST_H */
