/*
 * <linux/slab.h> for the kernel's userspace test harness on uslub
 * (tools/testing/radix-tree, tools/testing/vma, and programs written in
 * their style). Put -I<prefix>/include/uslub/ktest first on the compiler's
 * include path so that `#include <linux/slab.h>` finds this file instead
 * of the harness's tools/include/linux/slab.h, and link -luslub-ktest
 * -luslub instead of the harness's linux.o and slab.o (README, "Running
 * the kernel's test harness").
 *
 * Every allocation and free named here goes to uslub's caches through
 * libuslub-ktest (<uslub/ktest.h>), which adds the harness's test hooks
 * and counters. Two modes, chosen by what is on the include path:
 *
 *   - In the kernel's harness (its <linux/gfp.h> is there: the kernel's
 *     gfp_t and __GFP_ bits), this header declares what the harness's own
 *     <linux/slab.h> declares (the 6.12 tools header: kmem_cache_create's
 *     five-argument form, kmem_cache_alloc_lru with an int gfp,
 *     kmem_cache_shrink returning nothing, bulk with an int return,
 *     kmalloc/kzalloc/kfree, SLAB_PANIC), plus the usual neighbours
 *     (kmem_cache_zalloc, kmem_cache_destroy, kmalloc_array, kcalloc),
 *     and translates the kernel's gfp bits to uslub's inline.
 *   - Elsewhere (a program of one's own), <uslub/slab.h> provides the
 *     kernel's whole slab API and gfp names, and this header routes the
 *     allocating and freeing calls through the harness.
 *
 * Limit: the kernel mode declares only what the 6.12 tools header
 * declares, which is all the 6.12 harness uses. <uslub/slab.h> compiles
 * after the tools headers (it defines nothing a kernel gfp header
 * defined), so a later harness that wants more of the slab API can have
 * this mode include it; that has not been needed or tested yet.
 */
#ifndef USLUB_KTEST_LINUX_SLAB_H
#define USLUB_KTEST_LINUX_SLAB_H

#if defined(_TOOLS_INCLUDE_LINUX_GFP_H) || __has_include(<linux/gfp_types.h>)
#define USLUB_KTEST_KERNEL_GFP 1
#endif

#ifdef USLUB_KTEST_KERNEL_GFP
/* ------------------------------------------------------------------------
 * The kernel's harness: its gfp, the tools header's declarations.
 * ---------------------------------------------------------------------- */
#include <linux/types.h>
#include <linux/gfp.h>
#include <stdbool.h>
#include <stddef.h>
#include <uslub/types.h>
/* lib/maple_tree.c declares kmem_cache_nr_allocated/nr_tallocated itself */
#define USLUB_KTEST_KERNEL_DECLS 1
#include <uslub/ktest.h>

#define SLAB_PANIC           2
#define SLAB_RECLAIM_ACCOUNT 0x00020000UL
#define SLAB_HWCACHE_ALIGN   0x00002000UL
#define SLAB_ACCOUNT         0x04000000UL
/* what uslub takes of the flags: SLAB_HWCACHE_ALIGN and SLAB_ACCOUNT (the
 * same bits as USLUB_HWCACHE_ALIGN and USLUB_ACCOUNT) */
#define USLUB_KTEST_SLAB_PASSED (SLAB_HWCACHE_ALIGN | SLAB_ACCOUNT)
_Static_assert(SLAB_HWCACHE_ALIGN == USLUB_HWCACHE_ALIGN && SLAB_ACCOUNT == USLUB_ACCOUNT,
	       "the harness's SLAB_ bits and uslub's moved apart");

enum slab_state {
	DOWN,
	PARTIAL,
	UP,
	FULL
};

/* uslub can allocate from the start. */
static inline bool slab_is_available(void)
{
	return true;
}

struct list_lru;

#define kmem_cache_create(name, size, align, flags, ctor)                     \
	uslub_ktest_cache_create((name), (size), (align),                     \
				 (unsigned int)((flags) & USLUB_KTEST_SLAB_PASSED), \
				 (ctor), ((flags) & SLAB_PANIC) != 0)
#define kmem_cache_destroy(s) ((void)uslub_ktest_cache_destroy(s))
#define kmem_cache_free(s, obj) uslub_ktest_cache_free((s), (obj))
#define kmem_cache_free_bulk(s, size, list) uslub_ktest_cache_free_bulk((s), (size), (list))
#define kmem_cache_shrink(s) uslub_ktest_cache_shrink(s)
#define kfree(p) uslub_ktest_kfree(p)

#else
/* ------------------------------------------------------------------------
 * A program of one's own: <uslub/slab.h>, routed through the harness.
 * ---------------------------------------------------------------------- */
#include <uslub/slab.h>
#include <uslub/ktest.h>

#undef kmem_cache_alloc
#undef kmem_cache_zalloc
#undef kmem_cache_alloc_node
#undef kmem_cache_alloc_lru
#undef kmem_cache_alloc_bulk
#undef kmalloc
#undef kzalloc
#undef kzalloc_node
#undef kmalloc_array
#undef kcalloc
#define kmem_cache_destroy(s) ((void)uslub_ktest_cache_destroy(s))
#define kmem_cache_free(s, obj) uslub_ktest_cache_free((s), (obj))
#define kmem_cache_free_bulk(s, size, list) uslub_ktest_cache_free_bulk((s), (size), (list))
#define kmem_cache_shrink(s) uslub_ktest_cache_shrink(s)
#define kfree(p) uslub_ktest_kfree(p)
#endif

/* ------------------------------------------------------------------------
 * Both modes: the allocating calls, with the kernel's gfp translated.
 * ---------------------------------------------------------------------- */

/* uslub's gfp for a kernel gfp mask: blocking is decided by
 * __GFP_DIRECT_RECLAIM, as in the kernel and in the harness's shim. */
static inline uslub_gfp_t uslub_ktest_gfp(unsigned int gfp)
{
	uslub_gfp_t u = 0;

	if (gfp & (unsigned int)__GFP_ZERO)
		u |= USLUB_GFP_ZERO;
	if (gfp & (unsigned int)__GFP_NOFAIL)
		u |= USLUB_GFP_NOFAIL;
	if (gfp & (unsigned int)__GFP_ACCOUNT)
		u |= USLUB_GFP_ACCOUNT;
	if (gfp & (unsigned int)__GFP_NOWARN)
		u |= USLUB_GFP_NOWARN;
	if (!(gfp & (unsigned int)__GFP_DIRECT_RECLAIM))
		u |= (gfp & (unsigned int)__GFP_HIGH) ? USLUB_GFP_ATOMIC : USLUB_GFP_NOWAIT;
	return u;
}

/* The harness's kmem_cache_alloc_lru(cachep, lru, int flags): the list_lru
 * has no meaning here. */
#define kmem_cache_alloc_lru(s, lru, gfp)                                     \
	((void)(lru), uslub_ktest_cache_alloc((s), uslub_ktest_gfp(gfp)))
#define kmem_cache_alloc(s, gfp) uslub_ktest_cache_alloc((s), uslub_ktest_gfp(gfp))
#define kmem_cache_zalloc(s, gfp)                                             \
	uslub_ktest_cache_alloc((s), uslub_ktest_gfp(gfp) | USLUB_GFP_ZERO)
#define kmem_cache_alloc_node(s, gfp, node)                                   \
	uslub_ktest_cache_alloc_node((s), uslub_ktest_gfp(gfp), (node))
/* All or nothing: @size, or 0. */
#define kmem_cache_alloc_bulk(s, gfp, size, list)                             \
	uslub_ktest_cache_alloc_bulk((s), uslub_ktest_gfp(gfp), (size), (list))

#define kmalloc(size, gfp) uslub_ktest_kmalloc((size), uslub_ktest_gfp(gfp))
#define kzalloc(size, gfp) uslub_ktest_kmalloc((size), uslub_ktest_gfp(gfp) | USLUB_GFP_ZERO)
#define kzalloc_node(size, gfp, node) kzalloc((size), (gfp))
#define kmalloc_array(n, size, gfp)                                           \
	uslub_ktest_kmalloc_array((n), (size), uslub_ktest_gfp(gfp))
#define kcalloc(n, size, gfp)                                                 \
	uslub_ktest_kmalloc_array((n), (size), uslub_ktest_gfp(gfp) | USLUB_GFP_ZERO)

#endif /* USLUB_KTEST_LINUX_SLAB_H */
