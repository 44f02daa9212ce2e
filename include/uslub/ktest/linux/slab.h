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
 *     gfp_t and __GFP_ bits), this header first includes the tree's own
 *     tools/include/linux/slab.h (#include_next), so that the tree's flag
 *     values, struct kmem_cache_args, struct slab_sheaf, enum slab_state
 *     and its other declarations are exactly the tree's. Then it puts
 *     uslub under the tree's names, following the API the tree declares:
 *       - the 6.12 form: kmem_cache_create(name, size, align, flags, ctor)
 *         a function, kmem_cache_alloc_bulk() returning int (the count);
 *       - the 7.x form (6.18 on), recognized by the tree defining
 *         kmem_cache_create as a macro: kmem_cache_args with align, ctor,
 *         sheaf_capacity and the free pointer offset, the generic-selection
 *         kmem_cache_create forms (args, NULL, the old five arguments),
 *         __kmem_cache_create_args(), the prefilled-sheaf calls
 *         (kmem_cache_prefill_sheaf/alloc_from_sheaf/refill_sheaf/
 *         return_sheaf/sheaf_size) on uslub's real sheaves and barn, and
 *         the 7.x shim's rules for the callback (armed by a failed bulk
 *         call too, run by prefill and bulk free: see <uslub/ktest.h>);
 *       - kmem_cache_alloc_bulk() returns what the tree declares it to
 *         return (int: the count or 0; bool, since 7.2: all or nothing).
 *     The kernel's gfp bits are translated to uslub's inline.
 *   - Elsewhere (a program of one's own), <uslub/slab.h> provides the
 *     kernel's whole slab API and gfp names, and this header routes the
 *     allocating and freeing calls through the harness.
 */
#ifndef USLUB_KTEST_LINUX_SLAB_H
#define USLUB_KTEST_LINUX_SLAB_H

#if defined(_TOOLS_INCLUDE_LINUX_GFP_H) || __has_include(<linux/gfp_types.h>)
#define USLUB_KTEST_KERNEL_GFP 1
#endif

#ifdef USLUB_KTEST_KERNEL_GFP
/* ------------------------------------------------------------------------
 * The kernel's harness: the tree's own header, then uslub under its names.
 * ---------------------------------------------------------------------- */
#include <linux/types.h>
#include <linux/gfp.h>
#include <stdbool.h>
#include <stddef.h>
#include <uslub/types.h>
/* lib/maple_tree.c declares kmem_cache_nr_allocated/nr_tallocated itself */
#define USLUB_KTEST_KERNEL_DECLS 1
#include <uslub/ktest.h>

#if !__has_include_next(<linux/slab.h>)
#error "uslub-ktest: the kernel harness's tools/include/linux/slab.h is not on the include path"
#endif
/* The tree's inline that reads its own struct slab_sheaf: renamed out of
 * the way (never called); kmem_cache_sheaf_size() is uslub's below. */
#define kmem_cache_sheaf_size uslub_ktest_tree_sheaf_size
#include_next <linux/slab.h>
#undef kmem_cache_sheaf_size

/* What uslub takes of the tree's cache flags (whatever bits the tree
 * gives them; SLAB_ACCOUNT may be 0 there, SLAB_PANIC is the harness's). */
static inline unsigned int uslub_ktest_slab_flags(unsigned long flags)
{
	unsigned int u = 0;
#ifdef SLAB_HWCACHE_ALIGN
	if (flags & (unsigned long)SLAB_HWCACHE_ALIGN)
		u |= USLUB_HWCACHE_ALIGN;
#endif
#ifdef SLAB_ACCOUNT
	if (flags & (unsigned long)SLAB_ACCOUNT)
		u |= USLUB_ACCOUNT;
#endif
#ifdef SLAB_TYPESAFE_BY_RCU
	if (flags & (unsigned long)SLAB_TYPESAFE_BY_RCU)
		u |= USLUB_TYPESAFE_BY_RCU;
#endif
	return u;
}
#define USLUB_KTEST_PANIC(flags) (((unsigned long)(flags) & (unsigned long)SLAB_PANIC) != 0)

#ifdef kmem_cache_create
/* The 7.x form: the tree's struct kmem_cache_args. */
#define USLUB_KTEST_ARGS_API 1
static inline struct kmem_cache *
uslub_ktest_tree_create_args(const char *name, unsigned int size,
			     const struct kmem_cache_args *args, unsigned long flags)
{
	struct uslub_cache_args ua = { 0 };

	if (args) {
		ua.align = args->align;
		ua.ctor = args->ctor;
		ua.sheaf_capacity = args->sheaf_capacity;
		ua.freeptr_offset = args->freeptr_offset;
		ua.use_freeptr_offset = args->use_freeptr_offset;
	}
	return uslub_ktest_cache_create_args(name, size, &ua, uslub_ktest_slab_flags(flags),
					     USLUB_KTEST_PANIC(flags));
}
static inline struct kmem_cache *
uslub_ktest_tree_create_default(const char *name, unsigned int size, void *args,
				unsigned long flags)
{
	(void)args;
	return uslub_ktest_tree_create_args(name, size, NULL, flags);
}
static inline struct kmem_cache *
uslub_ktest_tree_create_legacy(const char *name, unsigned int size, unsigned int align,
			       unsigned long flags, void (*ctor)(void *))
{
	struct uslub_cache_args ua = { 0 };

	ua.align = align;
	ua.ctor = ctor;
	return uslub_ktest_cache_create_args(name, size, &ua, uslub_ktest_slab_flags(flags),
					     USLUB_KTEST_PANIC(flags));
}
#undef kmem_cache_create
#define kmem_cache_create(name, size, args, ...)                                \
	_Generic((args),                                                        \
		 struct kmem_cache_args *: uslub_ktest_tree_create_args,        \
		 const struct kmem_cache_args *: uslub_ktest_tree_create_args,  \
		 void *: uslub_ktest_tree_create_default,                       \
		 default: uslub_ktest_tree_create_legacy)((name), (size), (args), __VA_ARGS__)
#define __kmem_cache_create_args uslub_ktest_tree_create_args
#else
/* The 6.12 form. */
#define kmem_cache_create(name, size, align, flags, ctor)                     \
	uslub_ktest_cache_create((name), (size), (align), uslub_ktest_slab_flags(flags), \
				 (ctor), USLUB_KTEST_PANIC(flags))
#endif

/* kmem_cache_alloc_bulk() returns what the tree declares: the count (int)
 * or all-or-nothing (bool). (The name inside the macro is the tree's
 * declaration, not this macro; _Generic does not evaluate it.) */
#define kmem_cache_alloc_bulk(s, gfp, size, list) ({                            \
	size_t __uslub_kn = (size);                                             \
	int __uslub_kgot = uslub_ktest_cache_alloc_bulk((s), uslub_ktest_gfp(gfp), \
							__uslub_kn, (void **)(list)); \
	_Generic(kmem_cache_alloc_bulk((s), (gfp), __uslub_kn, (list)),         \
		 bool: (bool)((size_t)__uslub_kgot == __uslub_kn),              \
		 default: __uslub_kgot); })

/* The 7.x typed allocators that kernel code calls (lib/rbtree_test.c
 * of 7.2 calls kmalloc_objs) and the tree's header may lack; the gfp
 * argument is optional (GFP_KERNEL). */
#define USLUB_KTEST_GFP_PICK(_0, g, ...) g
#define USLUB_KTEST_DEFAULT_GFP(...) USLUB_KTEST_GFP_PICK(0, ##__VA_ARGS__, GFP_KERNEL)
#ifndef kmalloc_obj
#define kmalloc_obj(T, ...)                                                   \
	((__typeof__(T) *)kmalloc(sizeof(T), USLUB_KTEST_DEFAULT_GFP(__VA_ARGS__)))
#endif
#ifndef kmalloc_objs
#define kmalloc_objs(T, n, ...)                                               \
	((__typeof__(T) *)kmalloc_array((n), sizeof(T), USLUB_KTEST_DEFAULT_GFP(__VA_ARGS__)))
#endif
#ifndef kzalloc_obj
#define kzalloc_obj(T, ...)                                                   \
	((__typeof__(T) *)kzalloc(sizeof(T), USLUB_KTEST_DEFAULT_GFP(__VA_ARGS__)))
#endif
#ifndef kzalloc_objs
#define kzalloc_objs(T, n, ...)                                               \
	((__typeof__(T) *)kcalloc((n), sizeof(T), USLUB_KTEST_DEFAULT_GFP(__VA_ARGS__)))
#endif

#undef kzalloc_node
#define kmem_cache_destroy(s) ((void)uslub_ktest_cache_destroy(s))

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
#undef kmem_cache_alloc_from_sheaf
#undef kmalloc
#undef kzalloc
#undef kzalloc_node
#undef kmalloc_array
#undef kcalloc
#define kmem_cache_destroy(s) ((void)uslub_ktest_cache_destroy(s))
/* All or nothing: @size, or 0. */
#define kmem_cache_alloc_bulk(s, gfp, size, list)                             \
	uslub_ktest_cache_alloc_bulk((s), uslub_ktest_gfp(gfp), (size), (void **)(list))
#endif

/* ------------------------------------------------------------------------
 * Both modes: the calls, with the kernel's gfp translated.
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

#define kmem_cache_free(s, obj) uslub_ktest_cache_free((s), (obj))
#define kmem_cache_free_bulk(s, size, list) uslub_ktest_cache_free_bulk((s), (size), (list))
#define kmem_cache_shrink(s) uslub_ktest_cache_shrink(s)
#define kfree(p) uslub_ktest_kfree(p)

/* The harness's kmem_cache_alloc_lru(cachep, lru, int flags): the list_lru
 * has no meaning here. */
#define kmem_cache_alloc_lru(s, lru, gfp)                                     \
	((void)(lru), uslub_ktest_cache_alloc((s), uslub_ktest_gfp(gfp)))
#define kmem_cache_alloc(s, gfp) uslub_ktest_cache_alloc((s), uslub_ktest_gfp(gfp))
#define kmem_cache_zalloc(s, gfp)                                             \
	uslub_ktest_cache_alloc((s), uslub_ktest_gfp(gfp) | USLUB_GFP_ZERO)
#define kmem_cache_alloc_node(s, gfp, node)                                   \
	uslub_ktest_cache_alloc_node((s), uslub_ktest_gfp(gfp), (node))

#define kmalloc(size, gfp) uslub_ktest_kmalloc((size), uslub_ktest_gfp(gfp))
#define kzalloc(size, gfp) uslub_ktest_kmalloc((size), uslub_ktest_gfp(gfp) | USLUB_GFP_ZERO)
#define kzalloc_node(size, gfp, node) kzalloc((size), (gfp))
#define kmalloc_array(n, size, gfp)                                           \
	uslub_ktest_kmalloc_array((n), (size), uslub_ktest_gfp(gfp))
#define kcalloc(n, size, gfp)                                                 \
	uslub_ktest_kmalloc_array((n), (size), uslub_ktest_gfp(gfp) | USLUB_GFP_ZERO)

/* Prefilled sheaves (the 7.x harness; <uslub/slab.h>'s calls otherwise
 * bypass the harness's counters). A sheaf's objects are not allocated
 * until kmem_cache_alloc_from_sheaf() takes one (the kernel's rule):
 * nr_allocated and the cache's counters move then, and return gives the
 * rest back without counting them freed. */
#undef kmem_cache_prefill_sheaf
#undef kmem_cache_refill_sheaf
#undef kmem_cache_return_sheaf
#undef kmem_cache_sheaf_size
#define kmem_cache_prefill_sheaf(s, gfp, size)                                \
	((struct slab_sheaf *)uslub_ktest_prefill_sheaf((s), uslub_ktest_gfp(gfp), (size)))
#define kmem_cache_alloc_from_sheaf(s, gfp, sheaf)                            \
	uslub_ktest_alloc_from_sheaf((s), uslub_ktest_gfp(gfp), (struct uslub_sheaf *)(sheaf))
#define kmem_cache_refill_sheaf(s, gfp, sheafp, size)                         \
	uslub_ktest_refill_sheaf((s), uslub_ktest_gfp(gfp),                   \
				 (struct uslub_sheaf **)(void *)(sheafp), (size))
#define kmem_cache_return_sheaf(s, gfp, sheaf)                                \
	uslub_ktest_return_sheaf((s), uslub_ktest_gfp(gfp), (struct uslub_sheaf *)(sheaf))
#define kmem_cache_sheaf_size(sheaf)                                          \
	uslub_cache_sheaf_size((const struct uslub_sheaf *)(sheaf))

#endif /* USLUB_KTEST_LINUX_SLAB_H */
