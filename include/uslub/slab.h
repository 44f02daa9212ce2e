/*
 * <uslub/slab.h> — the Linux kernel's slab API (<linux/slab.h>, with the
 * pieces of <linux/gfp_types.h> it needs) on top of uslub.
 *
 * Code written against the kernel's kmem_cache_* / kmalloc interface
 * compiles unchanged against this header and behaves as it does in the
 * kernel, within what userspace can mean:
 *
 *   - gfp_t and the __GFP_/GFP_ names are the kernel's, with the bit
 *     values of <linux/gfp_types.h>, each defined only where a kernel
 *     header has not (so the kernel's gfp headers may be included first).
 *     Whether an allocation may block is decided as in the kernel: by
 *     __GFP_DIRECT_RECLAIM. GFP_KERNEL (and GFP_NOFS, GFP_NOIO, GFP_USER,
 *     ...) may wait and reclaim (uslub calls the accounting group's
 *     reclaim callback); GFP_NOWAIT, GFP_ATOMIC, and any mask without
 *     __GFP_DIRECT_RECLAIM (0 included) never block and may fail.
 *     __GFP_ZERO, __GFP_NOFAIL, __GFP_ACCOUNT and __GFP_NOWARN keep their
 *     meaning; every other bit is accepted and ignored. See "Allocation
 *     flags" below.
 *   - SLAB_ flags that uslub implements map onto its USLUB_ flags; the
 *     kernel's other SLAB_ flags are accepted and ignored, except
 *     SLAB_PANIC (implemented here: a failed creation aborts).
 *     SLAB_TYPESAFE_BY_RCU is uslub's USLUB_TYPESAFE_BY_RCU (it needs
 *     libuslub-rcu: see <uslub/rcu.h>). uslub's own USLUB_ cache flags may be
 *     OR-ed in as well; they pass through, and so does any other bit,
 *     which uslub refuses (EINVAL): stray bits are not silently dropped.
 *   - kvmalloc() and friends are kmalloc(): userspace has no vmalloc
 *     distinction, and kmalloc serves any size up to
 *     USLUB_KMALLOC_MAX_SIZE.
 *   - Every allocating entry point is a macro that expands to one of
 *     uslub.h's entry macros, so each call site of kmalloc(), kzalloc(),
 *     kmem_cache_alloc(), kstrdup(), ... gets its own allocation profiling
 *     tag (the kernel's alloc_hooks()). The names of the most common ones
 *     are also functions (untagged), so `kmalloc` and `kfree` can be
 *     taken as function pointers.
 *
 * The header is self-contained: include it instead of <linux/slab.h>
 * (it includes uslub.h). It compiles as C11 (GNU extensions: statement
 * expressions, __typeof__, as the kernel and uslub.h use) and as C++
 * (g++ -std=c++17). It is an independent implementation of the kernel's
 * interface; none of the kernel's text is reused.
 *
 *   - The 7.x additions are here: the typed allocators (kmalloc_obj() &
 *     co., gfp optional), krealloc_node[_align](), kvrealloc[_node[_align]](),
 *     kvmalloc_node_align(), kvfree_atomic(), kmem_buckets_create() and
 *     kmem_buckets_alloc() (a bucket set is a real private copy of the
 *     kmalloc caches), __free(kfree_sensitive), gfpflags_allow_spinning(),
 *     slab_is_available(); kmem_cache_alloc_bulk() returns int (6.12 to
 *     7.1) or bool (7.2; define USLUB_BULK_RETURNS_BOOL), with any gfp;
 *     kmalloc_nolock() takes __GFP_NOWARN and __GFP_NOMEMALLOC (7.2);
 *     kfree_rcu_nolock() (7.3, in <uslub/rcu.h>).
 *   - Where the kernel's semantics changed, this header follows them:
 *     use_freeptr_offset without a ctor (or SLAB_TYPESAFE_BY_RCU) fails
 *     creation with EINVAL; a usercopy window outside the object is
 *     reported and dropped, the cache is created ("fail closed");
 *     kmem_cache_prefill_sheaf() of 0 objects returns NULL.
 *
 * kfree_rcu() and the rest of RCU-deferred freeing: <uslub/rcu.h>,
 * included below (link -luslub-rcu -lurcu to use them).
 *
 * Not provided (no meaning without the kernel): the kmalloc_caches[]
 * array and kmalloc_index().
 */
#ifndef USLUB_SLAB_H
#define USLUB_SLAB_H

#include "../uslub.h"
#include "rcu.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
#define USLUB_COMPAT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define USLUB_COMPAT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* ========================================================================
 * Allocation flags (gfp_t): the kernel's names and bit values
 *
 * gfp_t and every __GFP_/GFP_ name are the kernel's, with the values
 * <linux/gfp_types.h> gives them (Linux 6.12's layout: ___GFP_*_BIT,
 * __GFP_BITS_SHIFT, __GFP_BITS_MASK, GFP_ZONEMASK; the bits that depend on
 * CONFIG_KASAN_HW_TAGS, CONFIG_LOCKDEP and CONFIG_SLAB_OBJ_EXT are 0 unless
 * the includer defines those CONFIG_ macros, as in the kernel). They are
 * written here, not copied, and each is defined only if not defined yet,
 * so this header can be included beside the kernel's own headers:
 *
 *   - gfp_t is `unsigned int` (the kernel's type; its __bitwise means
 *     nothing to a compiler). It is not typedef'd again when a kernel
 *     header already did (the kernel's <linux/types.h>, guard
 *     _LINUX_TYPES_H with its __EXPORTED_HEADERS__; tools/include's
 *     <linux/types.h>, guard _TOOLS_LINUX_TYPES_H_, whose gfp_t is an
 *     enum), nor when the includer defines USLUB_GFP_T_DEFINED (for a
 *     gfp_t of its own); this header defines USLUB_GFP_T_DEFINED after
 *     its typedef.
 *   - The bit numbers (the ___GFP_*_BIT enum) and __GFP_BITS_SHIFT come
 *     with <linux/gfp_types.h>'s guard __LINUX_GFP_TYPES_H: when it is
 *     already defined they are not declared again; when it is not, this
 *     header declares them and defines the guard, so a later
 *     #include <linux/gfp_types.h> adds nothing (everything it defines is
 *     here, with its values).
 *   - gfpflags_allow_blocking() is left to <linux/gfp.h> (guard
 *     __LINUX_GFP_H) or tools/include's (guard _TOOLS_INCLUDE_LINUX_GFP_H)
 *     when either came first. gfpflags_allow_spinning() (Linux 6.15+) is a
 *     macro here (unless one of that name exists), which takes the place
 *     of a kernel function of that name declared before.
 *
 * Include the kernel's headers *before* this one: tools/include's
 * <linux/types.h> typedefs gfp_t as an enum, which cannot be redeclared as
 * unsigned int after this header did (the other way round works).
 *
 * What uslub does with each bit (uslub_compat_gfp() translates them to
 * uslub_gfp_t by name, so it is right whatever values the names have):
 *   __GFP_ZERO, __GFP_NOFAIL, __GFP_ACCOUNT, __GFP_NOWARN  what they mean
 *   __GFP_DIRECT_RECLAIM  may block: without it uslub never waits
 *       (USLUB_GFP_NOWAIT, or USLUB_GFP_ATOMIC with __GFP_HIGH): an
 *       accounting group over its limit fails the allocation instead of
 *       calling its reclaim callback, and fault injection's
 *       ignore-gfp-wait applies
 *   __GFP_KSWAPD_RECLAIM  with __GFP_DIRECT_RECLAIM, __GFP_RECLAIM: a mask
 *       with neither (0, __GFP_NOWARN, ...) may not even spin
 *       (gfpflags_allow_spinning() false: the kernel's kmalloc_nolock()
 *       context). uslub treats it as non-blocking (above); its locks are
 *       short critical sections it still takes, so such a mask does not
 *       make an allocation safe from a signal handler
 *   everything else (zones, mobility, __GFP_IO/FS, __GFP_COMP, retry
 *       policies, __GFP_THISNODE, ...)  accepted and ignored
 * For a constant mask uslub_compat_gfp() folds to a constant (GFP_KERNEL
 * becomes uslub's 0, its fast path). Pass these GFP_ flags, not uslub's
 * USLUB_GFP_ values: USLUB_GFP_KERNEL is 0, which here means "must not
 * block" (and not spin).
 * ====================================================================== */
#if !defined(USLUB_GFP_T_DEFINED) && !defined(_TOOLS_LINUX_TYPES_H_) &&      \
	!(defined(_LINUX_TYPES_H) && (defined(__EXPORTED_HEADERS__) || defined(DECLARE_BITMAP)))
typedef unsigned int gfp_t;
#endif
#ifndef USLUB_GFP_T_DEFINED
#define USLUB_GFP_T_DEFINED 1
#endif
#ifndef __force
#define __force
#endif

/* The kernel's bit numbers, under names of uslub's own (always there). */
enum uslub_compat_gfp_bit {
	USLUB_COMPAT_GFP_DMA_BIT,
	USLUB_COMPAT_GFP_HIGHMEM_BIT,
	USLUB_COMPAT_GFP_DMA32_BIT,
	USLUB_COMPAT_GFP_MOVABLE_BIT,
	USLUB_COMPAT_GFP_RECLAIMABLE_BIT,
	USLUB_COMPAT_GFP_HIGH_BIT,
	USLUB_COMPAT_GFP_IO_BIT,
	USLUB_COMPAT_GFP_FS_BIT,
	USLUB_COMPAT_GFP_ZERO_BIT,
	USLUB_COMPAT_GFP_UNUSED_BIT,          /* 0x200: no flag */
	USLUB_COMPAT_GFP_DIRECT_RECLAIM_BIT,
	USLUB_COMPAT_GFP_KSWAPD_RECLAIM_BIT,
	USLUB_COMPAT_GFP_WRITE_BIT,
	USLUB_COMPAT_GFP_NOWARN_BIT,
	USLUB_COMPAT_GFP_RETRY_MAYFAIL_BIT,
	USLUB_COMPAT_GFP_NOFAIL_BIT,
	USLUB_COMPAT_GFP_NORETRY_BIT,
	USLUB_COMPAT_GFP_MEMALLOC_BIT,
	USLUB_COMPAT_GFP_COMP_BIT,
	USLUB_COMPAT_GFP_NOMEMALLOC_BIT,
	USLUB_COMPAT_GFP_HARDWALL_BIT,
	USLUB_COMPAT_GFP_THISNODE_BIT,
	USLUB_COMPAT_GFP_ACCOUNT_BIT,
	USLUB_COMPAT_GFP_ZEROTAGS_BIT,
#ifdef CONFIG_KASAN_HW_TAGS
	USLUB_COMPAT_GFP_SKIP_ZERO_BIT,
	USLUB_COMPAT_GFP_SKIP_KASAN_BIT,
#endif
#ifdef CONFIG_LOCKDEP
	USLUB_COMPAT_GFP_NOLOCKDEP_BIT,
#endif
#ifdef CONFIG_SLAB_OBJ_EXT
	USLUB_COMPAT_GFP_NO_OBJ_EXT_BIT,
#endif
	USLUB_COMPAT_GFP_LAST_BIT
};

/* <linux/gfp_types.h>'s enum and the names that go with its guard. */
#ifndef __LINUX_GFP_TYPES_H
#define __LINUX_GFP_TYPES_H
enum {
	___GFP_DMA_BIT = USLUB_COMPAT_GFP_DMA_BIT,
	___GFP_HIGHMEM_BIT = USLUB_COMPAT_GFP_HIGHMEM_BIT,
	___GFP_DMA32_BIT = USLUB_COMPAT_GFP_DMA32_BIT,
	___GFP_MOVABLE_BIT = USLUB_COMPAT_GFP_MOVABLE_BIT,
	___GFP_RECLAIMABLE_BIT = USLUB_COMPAT_GFP_RECLAIMABLE_BIT,
	___GFP_HIGH_BIT = USLUB_COMPAT_GFP_HIGH_BIT,
	___GFP_IO_BIT = USLUB_COMPAT_GFP_IO_BIT,
	___GFP_FS_BIT = USLUB_COMPAT_GFP_FS_BIT,
	___GFP_ZERO_BIT = USLUB_COMPAT_GFP_ZERO_BIT,
	___GFP_UNUSED_BIT = USLUB_COMPAT_GFP_UNUSED_BIT,
	___GFP_DIRECT_RECLAIM_BIT = USLUB_COMPAT_GFP_DIRECT_RECLAIM_BIT,
	___GFP_KSWAPD_RECLAIM_BIT = USLUB_COMPAT_GFP_KSWAPD_RECLAIM_BIT,
	___GFP_WRITE_BIT = USLUB_COMPAT_GFP_WRITE_BIT,
	___GFP_NOWARN_BIT = USLUB_COMPAT_GFP_NOWARN_BIT,
	___GFP_RETRY_MAYFAIL_BIT = USLUB_COMPAT_GFP_RETRY_MAYFAIL_BIT,
	___GFP_NOFAIL_BIT = USLUB_COMPAT_GFP_NOFAIL_BIT,
	___GFP_NORETRY_BIT = USLUB_COMPAT_GFP_NORETRY_BIT,
	___GFP_MEMALLOC_BIT = USLUB_COMPAT_GFP_MEMALLOC_BIT,
	___GFP_COMP_BIT = USLUB_COMPAT_GFP_COMP_BIT,
	___GFP_NOMEMALLOC_BIT = USLUB_COMPAT_GFP_NOMEMALLOC_BIT,
	___GFP_HARDWALL_BIT = USLUB_COMPAT_GFP_HARDWALL_BIT,
	___GFP_THISNODE_BIT = USLUB_COMPAT_GFP_THISNODE_BIT,
	___GFP_ACCOUNT_BIT = USLUB_COMPAT_GFP_ACCOUNT_BIT,
	___GFP_ZEROTAGS_BIT = USLUB_COMPAT_GFP_ZEROTAGS_BIT,
#ifdef CONFIG_KASAN_HW_TAGS
	___GFP_SKIP_ZERO_BIT = USLUB_COMPAT_GFP_SKIP_ZERO_BIT,
	___GFP_SKIP_KASAN_BIT = USLUB_COMPAT_GFP_SKIP_KASAN_BIT,
#endif
#ifdef CONFIG_LOCKDEP
	___GFP_NOLOCKDEP_BIT = USLUB_COMPAT_GFP_NOLOCKDEP_BIT,
#endif
#ifdef CONFIG_SLAB_OBJ_EXT
	___GFP_NO_OBJ_EXT_BIT = USLUB_COMPAT_GFP_NO_OBJ_EXT_BIT,
#endif
	___GFP_LAST_BIT = USLUB_COMPAT_GFP_LAST_BIT
};
#endif /* __LINUX_GFP_TYPES_H */

#define USLUB_COMPAT_GFP_BIT(name) (1u << USLUB_COMPAT_GFP_##name##_BIT)

/* The plain masks (the kernel's "do not use directly" ___GFP_ names). */
#ifndef ___GFP_DMA
#define ___GFP_DMA              USLUB_COMPAT_GFP_BIT(DMA)
#endif
#ifndef ___GFP_HIGHMEM
#define ___GFP_HIGHMEM          USLUB_COMPAT_GFP_BIT(HIGHMEM)
#endif
#ifndef ___GFP_DMA32
#define ___GFP_DMA32            USLUB_COMPAT_GFP_BIT(DMA32)
#endif
#ifndef ___GFP_MOVABLE
#define ___GFP_MOVABLE          USLUB_COMPAT_GFP_BIT(MOVABLE)
#endif
#ifndef ___GFP_RECLAIMABLE
#define ___GFP_RECLAIMABLE      USLUB_COMPAT_GFP_BIT(RECLAIMABLE)
#endif
#ifndef ___GFP_HIGH
#define ___GFP_HIGH             USLUB_COMPAT_GFP_BIT(HIGH)
#endif
#ifndef ___GFP_IO
#define ___GFP_IO               USLUB_COMPAT_GFP_BIT(IO)
#endif
#ifndef ___GFP_FS
#define ___GFP_FS               USLUB_COMPAT_GFP_BIT(FS)
#endif
#ifndef ___GFP_ZERO
#define ___GFP_ZERO             USLUB_COMPAT_GFP_BIT(ZERO)
#endif
#ifndef ___GFP_DIRECT_RECLAIM
#define ___GFP_DIRECT_RECLAIM   USLUB_COMPAT_GFP_BIT(DIRECT_RECLAIM)
#endif
#ifndef ___GFP_KSWAPD_RECLAIM
#define ___GFP_KSWAPD_RECLAIM   USLUB_COMPAT_GFP_BIT(KSWAPD_RECLAIM)
#endif
#ifndef ___GFP_WRITE
#define ___GFP_WRITE            USLUB_COMPAT_GFP_BIT(WRITE)
#endif
#ifndef ___GFP_NOWARN
#define ___GFP_NOWARN           USLUB_COMPAT_GFP_BIT(NOWARN)
#endif
#ifndef ___GFP_RETRY_MAYFAIL
#define ___GFP_RETRY_MAYFAIL    USLUB_COMPAT_GFP_BIT(RETRY_MAYFAIL)
#endif
#ifndef ___GFP_NOFAIL
#define ___GFP_NOFAIL           USLUB_COMPAT_GFP_BIT(NOFAIL)
#endif
#ifndef ___GFP_NORETRY
#define ___GFP_NORETRY          USLUB_COMPAT_GFP_BIT(NORETRY)
#endif
#ifndef ___GFP_MEMALLOC
#define ___GFP_MEMALLOC         USLUB_COMPAT_GFP_BIT(MEMALLOC)
#endif
#ifndef ___GFP_COMP
#define ___GFP_COMP             USLUB_COMPAT_GFP_BIT(COMP)
#endif
#ifndef ___GFP_NOMEMALLOC
#define ___GFP_NOMEMALLOC       USLUB_COMPAT_GFP_BIT(NOMEMALLOC)
#endif
#ifndef ___GFP_HARDWALL
#define ___GFP_HARDWALL         USLUB_COMPAT_GFP_BIT(HARDWALL)
#endif
#ifndef ___GFP_THISNODE
#define ___GFP_THISNODE         USLUB_COMPAT_GFP_BIT(THISNODE)
#endif
#ifndef ___GFP_ACCOUNT
#define ___GFP_ACCOUNT          USLUB_COMPAT_GFP_BIT(ACCOUNT)
#endif
#ifndef ___GFP_ZEROTAGS
#define ___GFP_ZEROTAGS         USLUB_COMPAT_GFP_BIT(ZEROTAGS)
#endif
#ifndef ___GFP_SKIP_ZERO
#ifdef CONFIG_KASAN_HW_TAGS
#define ___GFP_SKIP_ZERO        USLUB_COMPAT_GFP_BIT(SKIP_ZERO)
#define ___GFP_SKIP_KASAN       USLUB_COMPAT_GFP_BIT(SKIP_KASAN)
#else
#define ___GFP_SKIP_ZERO        0u
#define ___GFP_SKIP_KASAN       0u
#endif
#endif
#ifndef ___GFP_NOLOCKDEP
#ifdef CONFIG_LOCKDEP
#define ___GFP_NOLOCKDEP        USLUB_COMPAT_GFP_BIT(NOLOCKDEP)
#else
#define ___GFP_NOLOCKDEP        0u
#endif
#endif
#ifndef ___GFP_NO_OBJ_EXT
#ifdef CONFIG_SLAB_OBJ_EXT
#define ___GFP_NO_OBJ_EXT       USLUB_COMPAT_GFP_BIT(NO_OBJ_EXT)
#else
#define ___GFP_NO_OBJ_EXT       0u
#endif
#endif

/* The modifiers, as gfp_t. */
#ifndef __GFP_DMA
#define __GFP_DMA            ((__force gfp_t)___GFP_DMA)
#endif
#ifndef __GFP_HIGHMEM
#define __GFP_HIGHMEM        ((__force gfp_t)___GFP_HIGHMEM)
#endif
#ifndef __GFP_DMA32
#define __GFP_DMA32          ((__force gfp_t)___GFP_DMA32)
#endif
#ifndef __GFP_MOVABLE
#define __GFP_MOVABLE        ((__force gfp_t)___GFP_MOVABLE)
#endif
#ifndef GFP_ZONEMASK
#define GFP_ZONEMASK         (__GFP_DMA | __GFP_HIGHMEM | __GFP_DMA32 | __GFP_MOVABLE)
#endif
#ifndef __GFP_RECLAIMABLE
#define __GFP_RECLAIMABLE    ((__force gfp_t)___GFP_RECLAIMABLE)
#endif
#ifndef __GFP_WRITE
#define __GFP_WRITE          ((__force gfp_t)___GFP_WRITE)
#endif
#ifndef __GFP_HARDWALL
#define __GFP_HARDWALL       ((__force gfp_t)___GFP_HARDWALL)
#endif
#ifndef __GFP_THISNODE
#define __GFP_THISNODE       ((__force gfp_t)___GFP_THISNODE)
#endif
#ifndef __GFP_ACCOUNT
#define __GFP_ACCOUNT        ((__force gfp_t)___GFP_ACCOUNT)
#endif
#ifndef __GFP_NO_OBJ_EXT
#define __GFP_NO_OBJ_EXT     ((__force gfp_t)___GFP_NO_OBJ_EXT)
#endif
#ifndef __GFP_HIGH
#define __GFP_HIGH           ((__force gfp_t)___GFP_HIGH)
#endif
#ifndef __GFP_MEMALLOC
#define __GFP_MEMALLOC       ((__force gfp_t)___GFP_MEMALLOC)
#endif
#ifndef __GFP_NOMEMALLOC
#define __GFP_NOMEMALLOC     ((__force gfp_t)___GFP_NOMEMALLOC)
#endif
#ifndef __GFP_IO
#define __GFP_IO             ((__force gfp_t)___GFP_IO)
#endif
#ifndef __GFP_FS
#define __GFP_FS             ((__force gfp_t)___GFP_FS)
#endif
#ifndef __GFP_DIRECT_RECLAIM
#define __GFP_DIRECT_RECLAIM ((__force gfp_t)___GFP_DIRECT_RECLAIM)
#endif
#ifndef __GFP_KSWAPD_RECLAIM
#define __GFP_KSWAPD_RECLAIM ((__force gfp_t)___GFP_KSWAPD_RECLAIM)
#endif
#ifndef __GFP_RECLAIM
#define __GFP_RECLAIM        ((__force gfp_t)(___GFP_DIRECT_RECLAIM | ___GFP_KSWAPD_RECLAIM))
#endif
#ifndef __GFP_RETRY_MAYFAIL
#define __GFP_RETRY_MAYFAIL  ((__force gfp_t)___GFP_RETRY_MAYFAIL)
#endif
#ifndef __GFP_NOFAIL
#define __GFP_NOFAIL         ((__force gfp_t)___GFP_NOFAIL)
#endif
#ifndef __GFP_NORETRY
#define __GFP_NORETRY        ((__force gfp_t)___GFP_NORETRY)
#endif
#ifndef __GFP_NOWARN
#define __GFP_NOWARN         ((__force gfp_t)___GFP_NOWARN)
#endif
#ifndef __GFP_COMP
#define __GFP_COMP           ((__force gfp_t)___GFP_COMP)
#endif
#ifndef __GFP_ZERO
#define __GFP_ZERO           ((__force gfp_t)___GFP_ZERO)
#endif
#ifndef __GFP_ZEROTAGS
#define __GFP_ZEROTAGS       ((__force gfp_t)___GFP_ZEROTAGS)
#endif
#ifndef __GFP_SKIP_ZERO
#define __GFP_SKIP_ZERO      ((__force gfp_t)___GFP_SKIP_ZERO)
#endif
#ifndef __GFP_SKIP_KASAN
#define __GFP_SKIP_KASAN     ((__force gfp_t)___GFP_SKIP_KASAN)
#endif
#ifndef __GFP_NOLOCKDEP
#define __GFP_NOLOCKDEP      ((__force gfp_t)___GFP_NOLOCKDEP)
#endif

/* How many bits the flags take, and all of them. */
#ifndef __GFP_BITS_SHIFT
#define __GFP_BITS_SHIFT     USLUB_COMPAT_GFP_LAST_BIT
#endif
#ifndef __GFP_BITS_MASK
#define __GFP_BITS_MASK      ((__force gfp_t)((1 << __GFP_BITS_SHIFT) - 1))
#endif

/* The usual combinations, with the kernel's values. */
#ifndef GFP_ATOMIC
#define GFP_ATOMIC           (__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#endif
#ifndef GFP_KERNEL
#define GFP_KERNEL           (__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#endif
#ifndef GFP_KERNEL_ACCOUNT
#define GFP_KERNEL_ACCOUNT   (GFP_KERNEL | __GFP_ACCOUNT)
#endif
#ifndef GFP_NOWAIT
#define GFP_NOWAIT           (__GFP_KSWAPD_RECLAIM | __GFP_NOWARN)
#endif
#ifndef GFP_NOIO
#define GFP_NOIO             (__GFP_RECLAIM)
#endif
#ifndef GFP_NOFS
#define GFP_NOFS             (__GFP_RECLAIM | __GFP_IO)
#endif
#ifndef GFP_USER
#define GFP_USER             (__GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL)
#endif
#ifndef GFP_DMA
#define GFP_DMA              __GFP_DMA
#endif
#ifndef GFP_DMA32
#define GFP_DMA32            __GFP_DMA32
#endif
#ifndef GFP_HIGHUSER
#define GFP_HIGHUSER         (GFP_USER | __GFP_HIGHMEM)
#endif
#ifndef GFP_HIGHUSER_MOVABLE
#define GFP_HIGHUSER_MOVABLE (GFP_HIGHUSER | __GFP_MOVABLE | __GFP_SKIP_KASAN)
#endif
#ifndef GFP_TRANSHUGE_LIGHT
#define GFP_TRANSHUGE_LIGHT  ((GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOMEMALLOC | \
			       __GFP_NOWARN) & ~__GFP_RECLAIM)
#endif
#ifndef GFP_TRANSHUGE
#define GFP_TRANSHUGE        (GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM)
#endif

/* <linux/gfp.h>'s default_gfp(): its argument, or GFP_KERNEL when there is
 * none (GNU comma elision: gnu11/gnu++17; the typed allocators below do
 * not depend on it). */
#ifndef default_gfp
#define __default_gfp(a, b, ...) b
#define default_gfp(...) __default_gfp(, ##__VA_ARGS__, GFP_KERNEL)
#endif

/* The uslub_gfp_t for a kernel gfp_t (see above): one test per bit, so a
 * constant mask folds to a constant. */
static inline uslub_gfp_t uslub_compat_gfp(gfp_t gfp)
{
	unsigned int g = (unsigned int)gfp;

	return ((g & (unsigned int)__GFP_ZERO) ? USLUB_GFP_ZERO : 0u) |
	       ((g & (unsigned int)__GFP_NOFAIL) ? USLUB_GFP_NOFAIL : 0u) |
	       ((g & (unsigned int)__GFP_ACCOUNT) ? USLUB_GFP_ACCOUNT : 0u) |
	       ((g & (unsigned int)__GFP_NOWARN) ? USLUB_GFP_NOWARN : 0u) |
	       ((g & (unsigned int)__GFP_DIRECT_RECLAIM) ? 0u :
		(g & (unsigned int)__GFP_HIGH) ? USLUB_GFP_ATOMIC : USLUB_GFP_NOWAIT);
}

/* <linux/gfp.h>: may an allocation with @gfp sleep? */
#if !defined(__LINUX_GFP_H) && !defined(_TOOLS_INCLUDE_LINUX_GFP_H)
static inline bool gfpflags_allow_blocking(const gfp_t gfp)
{
	return ((unsigned int)gfp & (unsigned int)__GFP_DIRECT_RECLAIM) != 0;
}
#endif

/* <linux/gfp.h> (6.15+): may an allocation with @gfp spin on a lock? Not
 * without either reclaim bit (the kmalloc_nolock() context). */
static inline bool uslub_compat_gfpflags_allow_spinning(const gfp_t gfp)
{
	return ((unsigned int)gfp & (unsigned int)__GFP_RECLAIM) != 0;
}
#ifndef gfpflags_allow_spinning
#define gfpflags_allow_spinning(gfp) uslub_compat_gfpflags_allow_spinning(gfp)
#endif

#ifndef NUMA_NO_NODE
#define NUMA_NO_NODE USLUB_NUMA_NO_NODE
#endif

/* ========================================================================
 * Cache flags (slab_flags_t)
 * ====================================================================== */
typedef unsigned int slab_flags_t;

/* Implemented by uslub (see uslub.h for what each does). */
#define SLAB_HWCACHE_ALIGN      ((slab_flags_t)USLUB_HWCACHE_ALIGN)
#define SLAB_NO_MERGE           ((slab_flags_t)USLUB_NO_MERGE)
#define SLAB_ACCOUNT            ((slab_flags_t)USLUB_ACCOUNT)
#define SLAB_CONSISTENCY_CHECKS ((slab_flags_t)USLUB_CONSISTENCY_CHECKS)
#define SLAB_RED_ZONE           ((slab_flags_t)USLUB_RED_ZONE)
#define SLAB_POISON             ((slab_flags_t)USLUB_POISON)
#define SLAB_STORE_USER         ((slab_flags_t)USLUB_STORE_USER)
#define SLAB_TRACE              ((slab_flags_t)USLUB_TRACE)
#define SLAB_FAILSLAB           ((slab_flags_t)USLUB_FAILSLAB)

/* Implemented in this header: abort() when the creation fails. */
#define SLAB_PANIC              ((slab_flags_t)0x00040000u)

/*
 * SLAB_TYPESAFE_BY_RCU: an empty slab's memory goes back to the page level
 * only after an RCU grace period (liburcu's, through libuslub-rcu; see
 * <uslub/rcu.h>); without libuslub-rcu the creation fails (EINVAL).
 */
#define SLAB_TYPESAFE_BY_RCU    ((slab_flags_t)USLUB_TYPESAFE_BY_RCU)

/* Accepted and ignored: they steer the page allocator, kmemleak, KASAN,
 * KFENCE, cpusets or debugobjects, none of which exist here. */
#define SLAB_CACHE_DMA          ((slab_flags_t)0x00004000u)
#define SLAB_CACHE_DMA32        ((slab_flags_t)0x00008000u)
#define SLAB_RECLAIM_ACCOUNT    ((slab_flags_t)0x00020000u)
#define SLAB_TEMPORARY          SLAB_RECLAIM_ACCOUNT
#define SLAB_DEBUG_OBJECTS      ((slab_flags_t)0x00400000u)
#define SLAB_NOLEAKTRACE        ((slab_flags_t)0x00800000u)
#define SLAB_KASAN              ((slab_flags_t)0x08000000u)
#define SLAB_NO_USER_FLAGS      ((slab_flags_t)0x10000000u)
#define SLAB_SKIP_KFENCE        ((slab_flags_t)0x20000000u)
#define SLAB_NO_OBJ_EXT         ((slab_flags_t)0x40000000u)

#define USLUB_COMPAT_SLAB_IGNORED                                              \
	(SLAB_CACHE_DMA | SLAB_CACHE_DMA32 | SLAB_RECLAIM_ACCOUNT |            \
	 SLAB_DEBUG_OBJECTS | SLAB_NOLEAKTRACE | SLAB_KASAN |                  \
	 SLAB_NO_USER_FLAGS | SLAB_SKIP_KFENCE | SLAB_NO_OBJ_EXT)
/* uslub rejects unknown cache flags (EINVAL), so the bits handled here
 * must stay clear of its own; a new USLUB_ flag on one of them fails the
 * build here rather than changing a cache's behaviour. */
USLUB_COMPAT_STATIC_ASSERT(((USLUB_COMPAT_SLAB_IGNORED | SLAB_PANIC) &
			    USLUB_CACHE_FLAGS_VALID) == 0,
			   "a SLAB_ flag handled by <uslub/slab.h> collides with a USLUB_ flag");

/* ========================================================================
 * Creating and destroying caches
 * ====================================================================== */

/*
 * The kernel's struct kmem_cache_args: the less common parameters of a
 * cache. Zero-initialize (or use designated initializers) and set what
 * you need; each field means what the kernel documents for it, as
 * implemented by uslub (see struct uslub_cache_args in uslub.h).
 */
struct kmem_cache_args {
	unsigned int align;          /* 0: natural word alignment              */
	unsigned int useroffset;     /* usercopy window: recorded, reported    */
	unsigned int usersize;       /*   (0: none)                            */
	unsigned int freeptr_offset; /* with use_freeptr_offset: where a free
	                                object keeps its free pointer          */
	bool use_freeptr_offset;
	void (*ctor)(void *);        /* runs once per object, when its slab is
	                                made; objects are freed constructed    */
	unsigned int sheaf_capacity; /* > 0: per-CPU sheaves of this size      */
};

/* Create a cache of @size-byte objects; NULL (errno set) on failure. The
 * common path of every kmem_cache_create form. */
static inline struct kmem_cache *
uslub_compat_cache_create(const char *name, unsigned int size,
			  const struct kmem_cache_args *args, slab_flags_t flags)
{
	struct uslub_cache_args ua;
	struct kmem_cache *s = NULL;

	memset(&ua, 0, sizeof(ua));
	if (args) {
		ua.align = args->align;
		ua.ctor = args->ctor;
		ua.sheaf_capacity = args->sheaf_capacity;
		ua.freeptr_offset = args->freeptr_offset;
		ua.use_freeptr_offset = args->use_freeptr_offset;
		ua.useroffset = args->useroffset;
		ua.usersize = args->usersize;
		/* The kernel's rule: a window outside the object is a WARN and
		 * no window at all ("fail closed"); the cache is still made.
		 * (uslub's own uslub_cache_create_args() refuses it: EINVAL.) */
		if (ua.usersize && ((unsigned long long)ua.useroffset + ua.usersize > size)) {
			fprintf(stderr, "uslub: WARNING: kmem_cache_create(\"%s\"): usercopy "
				"window [%u, +%u) outside the %u-byte object: no window\n",
				name ? name : "(null)", ua.useroffset, ua.usersize, size);
			ua.useroffset = ua.usersize = 0;
		}
	}
	s = uslub_cache_create_args(name, size, &ua,
				    flags & ~(USLUB_COMPAT_SLAB_IGNORED | SLAB_PANIC));
	if (!s && (flags & SLAB_PANIC)) {
		int err = errno;

		fprintf(stderr, "uslub: kmem_cache_create(\"%s\", %u) failed with "
			"SLAB_PANIC: %s\n", name ? name : "(null)", size, strerror(err));
		fflush(stderr);
		abort();
	}
	return s;
}

/* kmem_cache_create(name, size, &args, flags) */
static inline struct kmem_cache *
uslub_compat_create_args(const char *name, unsigned int size,
			 const struct kmem_cache_args *args, slab_flags_t flags)
{
	return uslub_compat_cache_create(name, size, args, flags);
}

/* kmem_cache_create(name, size, NULL, flags): the defaults. Any other
 * pointer that is not a struct kmem_cache_args * is refused (the kernel
 * warns and fails too). */
static inline struct kmem_cache *
uslub_compat_create_null(const char *name, unsigned int size, void *args,
			 slab_flags_t flags)
{
	if (args) {
		fprintf(stderr, "uslub: kmem_cache_create(\"%s\"): third argument is "
			"a void * other than NULL, not a struct kmem_cache_args *\n",
			name ? name : "(null)");
		errno = EINVAL;
		if (flags & SLAB_PANIC)
			abort();
		return NULL;
	}
	return uslub_compat_cache_create(name, size, NULL, flags);
}

/* The legacy kmem_cache_create(name, size, align, flags, ctor). */
static inline struct kmem_cache *
uslub_compat_create_legacy(const char *name, unsigned int size, unsigned int align,
			   slab_flags_t flags, void (*ctor)(void *))
{
	struct kmem_cache_args a;

	memset(&a, 0, sizeof(a));
	a.align = align;
	a.ctor = ctor;
	return uslub_compat_cache_create(name, size, &a, flags);
}

/*
 * kmem_cache_create() has two forms, told apart by the third argument:
 *
 *   kmem_cache_create(name, size, &args, flags)        args: struct
 *                                                      kmem_cache_args *
 *                                                      (or NULL: defaults)
 *   kmem_cache_create(name, size, align, flags, ctor)  the legacy form
 *
 * In C a _Generic on the third argument picks the function (a pointer to
 * the arguments structure, a void * that must be NULL, anything else: the
 * alignment of the legacy form); in C++ the two forms are overloads.
 * Returns the cache, or NULL with errno set (see uslub_cache_create());
 * with SLAB_PANIC it never returns NULL.
 *
 * As with the kernel's macro, a compound literal with more than one field
 * must be parenthesized, or its commas split the macro's arguments:
 *   kmem_cache_create("x", sz, (&(struct kmem_cache_args){ .align = 64,
 *                                   .ctor = x_ctor }), 0)
 */
#ifndef __cplusplus
#define kmem_cache_create(name, size, args, ...)                               \
	_Generic((args),                                                       \
		 struct kmem_cache_args *: uslub_compat_create_args,           \
		 const struct kmem_cache_args *: uslub_compat_create_args,     \
		 void *: uslub_compat_create_null,                             \
		 default: uslub_compat_create_legacy)((name), (size), (args), __VA_ARGS__)
#else
static inline struct kmem_cache *
kmem_cache_create(const char *name, unsigned int size,
		  const struct kmem_cache_args *args, slab_flags_t flags)
{
	return uslub_compat_cache_create(name, size, args, flags);
}

static inline struct kmem_cache *
kmem_cache_create(const char *name, unsigned int size, unsigned int align,
		  slab_flags_t flags, void (*ctor)(void *))
{
	return uslub_compat_create_legacy(name, size, align, flags, ctor);
}
#endif

/* A cache whose objects have a usercopy window [useroffset, +usersize). */
static inline struct kmem_cache *
kmem_cache_create_usercopy(const char *name, unsigned int size, unsigned int align,
			   slab_flags_t flags, unsigned int useroffset,
			   unsigned int usersize, void (*ctor)(void *))
{
	struct kmem_cache_args a;

	memset(&a, 0, sizeof(a));
	a.align = align;
	a.ctor = ctor;
	a.useroffset = useroffset;
	a.usersize = usersize;
	return uslub_compat_cache_create(name, size, &a, flags);
}

#ifndef sizeof_field
#define sizeof_field(type, member) sizeof(((type *)0)->member)
#endif

/* A cache for struct @type, named after it, aligned as the type is. */
#define KMEM_CACHE(type, flags)                                                \
	uslub_compat_create_legacy(#type, sizeof(struct type),                 \
				   __alignof__(struct type), (flags), NULL)

/* The same, with @field as the usercopy window. */
#define KMEM_CACHE_USERCOPY(type, flags, field)                                \
	kmem_cache_create_usercopy(#type, sizeof(struct type),                 \
				   __alignof__(struct type), (flags),          \
				   offsetof(struct type, field),               \
				   sizeof_field(struct type, field), NULL)

/* Destroy @s (NULL: nothing). As in the kernel, live objects are reported
 * (uslub leaves the cache in place then; see uslub_cache_destroy()). */
static inline void kmem_cache_destroy(struct kmem_cache *s)
{
	if (s)
		(void)uslub_cache_destroy(s);
}

/* Give back the cache's empty slabs (and the calling thread's cached ones).
 * Returns 0 when the cache has no slab left, 1 otherwise (the kernel's
 * convention; other threads' per-CPU slabs are theirs and stay). */
static inline int kmem_cache_shrink(struct kmem_cache *s)
{
	struct uslub_slabinfo info;

	(void)uslub_cache_shrink(s);
	if (uslub_cache_slabinfo(s, &info) != 0)
		return 1;
	return info.num_slabs != 0;
}

/* The object size the cache was created with. */
static inline unsigned int kmem_cache_size(struct kmem_cache *s)
{
	return (unsigned int)uslub_cache_object_size(s);
}

/* ========================================================================
 * Cache objects
 *
 * Each allocating name is a macro (its call site gets its own profiling
 * tag); the most used are also functions of the same name, untagged, for
 * callers that take their address: (kmem_cache_alloc)(s, gfp) calls the
 * function.
 * ====================================================================== */
struct list_lru;

static inline void *(kmem_cache_alloc)(struct kmem_cache *s, gfp_t gfp)
{
	return uslub_cache_alloc_noprof(s, uslub_compat_gfp(gfp));
}
static inline void *(kmem_cache_zalloc)(struct kmem_cache *s, gfp_t gfp)
{
	return uslub_cache_alloc_noprof(s, uslub_compat_gfp(gfp | __GFP_ZERO));
}
static inline void *kmem_cache_alloc_noprof(struct kmem_cache *s, gfp_t gfp)
{
	return uslub_cache_alloc_noprof(s, uslub_compat_gfp(gfp));
}
static inline void *kmem_cache_alloc_node_noprof(struct kmem_cache *s, gfp_t gfp, int node)
{
	return uslub_cache_alloc_node_noprof(s, uslub_compat_gfp(gfp), node);
}

/* One object; NULL (errno = ENOMEM) when memory, the accounting limit or
 * fault injection says no and @gfp has no __GFP_NOFAIL. */
#define kmem_cache_alloc(s, gfp) uslub_cache_alloc((s), uslub_compat_gfp(gfp))
/* Same, zeroed. */
#define kmem_cache_zalloc(s, gfp) kmem_cache_alloc((s), (gfp) | __GFP_ZERO)
/* From NUMA node @node (NUMA_NO_NODE: any); a node outside
 * [0, uslub_nr_nodes()) gives NULL with EINVAL. */
#define kmem_cache_alloc_node(s, gfp, node)                                    \
	uslub_cache_alloc_node((s), uslub_compat_gfp(gfp), (node))
/* The list_lru of the kernel's variant has nothing to do here: ignored. */
#define kmem_cache_alloc_lru(s, lru, gfp)                                      \
	({ (void)(lru); kmem_cache_alloc((s), (gfp)); })

/* Free an object of @s (NULL: nothing). */
static inline void kmem_cache_free(struct kmem_cache *s, void *obj)
{
	uslub_cache_free(s, obj);
}

/*
 * Allocate @size objects into @p, all or nothing. The kernel changed the
 * return type in 7.2: through 7.1 (and in 6.12's tools/include/linux/
 * slab.h) it is int, @size or 0; from 7.2 bool, true or false. This header
 * returns int, unless the includer defines USLUB_BULK_RETURNS_BOOL (before
 * including it; one choice per translation unit). `if (!kmem_cache_alloc_
 * bulk(...))` works with either. @size 0 gives 0 (false), as the kernel.
 */
#ifdef USLUB_BULK_RETURNS_BOOL
typedef bool uslub_compat_bulk_ret_t;
#else
typedef int uslub_compat_bulk_ret_t;
#endif
#define kmem_cache_alloc_bulk(s, gfp, size, p)                                 \
	((uslub_compat_bulk_ret_t)uslub_cache_alloc_bulk((s), uslub_compat_gfp(gfp), \
							 (size), (p)))
static inline uslub_compat_bulk_ret_t
kmem_cache_alloc_bulk_noprof(struct kmem_cache *s, gfp_t gfp, size_t size, void **p)
{
	return (uslub_compat_bulk_ret_t)uslub_cache_alloc_bulk_noprof(s, uslub_compat_gfp(gfp),
								      size, p);
}

/* Free @size objects of @s (NULL: each to its own cache, as kfree_bulk);
 * NULL entries are skipped. @p's contents are clobbered. */
static inline void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p)
{
	uslub_cache_free_bulk(s, size, p);
}

/* ========================================================================
 * Sheaves (Linux 6.18): prefill, then allocate where failing is not an
 * option. struct slab_sheaf is opaque here; it is uslub's struct
 * uslub_sheaf under the kernel's name.
 * ====================================================================== */
struct slab_sheaf;

/* A sheaf holding at least @size objects of @s; NULL with nothing taken,
 * and NULL (EINVAL) for @size 0, as in the kernel. */
static inline struct slab_sheaf *
kmem_cache_prefill_sheaf(struct kmem_cache *s, gfp_t gfp, unsigned int size)
{
	if (!size) {                 /* as the kernel: nothing to prefill, NULL */
		errno = EINVAL;
		return NULL;
	}
	return (struct slab_sheaf *)uslub_cache_prefill_sheaf(s, uslub_compat_gfp(gfp), size);
}

/* One object from the sheaf: never fails while it holds objects, with any
 * @gfp (__GFP_ZERO zeroes); NULL once it is empty. */
#define kmem_cache_alloc_from_sheaf(s, gfp, sheaf)                             \
	uslub_cache_alloc_from_sheaf((s), uslub_compat_gfp(gfp),               \
				     (struct uslub_sheaf *)(sheaf))
static inline void *kmem_cache_alloc_from_sheaf_noprof(struct kmem_cache *s, gfp_t gfp,
							struct slab_sheaf *sheaf)
{
	return uslub_cache_alloc_from_sheaf_noprof(s, uslub_compat_gfp(gfp),
						   (struct uslub_sheaf *)sheaf);
}

/* Make *@sheafp hold at least @size objects (it may be replaced). Returns
 * 0, or -ENOMEM with *@sheafp unchanged and still usable. */
static inline int kmem_cache_refill_sheaf(struct kmem_cache *s, gfp_t gfp,
					  struct slab_sheaf **sheafp, unsigned int size)
{
	struct uslub_sheaf *us = (struct uslub_sheaf *)*sheafp;
	int ret = uslub_cache_refill_sheaf(s, uslub_compat_gfp(gfp), &us, size);

	*sheafp = (struct slab_sheaf *)us;
	return ret;
}

/* Give the sheaf and the objects left in it back to the cache. */
static inline void kmem_cache_return_sheaf(struct kmem_cache *s, gfp_t gfp,
					   struct slab_sheaf *sheaf)
{
	uslub_cache_return_sheaf(s, uslub_compat_gfp(gfp), (struct uslub_sheaf *)sheaf);
}

/* Objects left in the sheaf. */
static inline unsigned int kmem_cache_sheaf_size(const struct slab_sheaf *sheaf)
{
	return uslub_cache_sheaf_size((const struct uslub_sheaf *)sheaf);
}

/* ========================================================================
 * kmalloc
 *
 * kmalloc(0) returns ZERO_SIZE_PTR, which kfree() and ksize() accept and
 * which must not be dereferenced. kfree() takes anything kmalloc or any
 * cache returned. Size classes and limits: see the kmalloc section of
 * uslub.h.
 * ====================================================================== */
#define ZERO_SIZE_PTR USLUB_ZERO_SIZE_PTR
#define ZERO_OR_NULL_PTR(x) USLUB_ZERO_OR_NULL_PTR(x)

#define KMALLOC_MIN_SIZE       USLUB_KMALLOC_MIN_SIZE
#define KMALLOC_MAX_CACHE_SIZE USLUB_KMALLOC_MAX_CACHE_SIZE
#define KMALLOC_MAX_SIZE       USLUB_KMALLOC_MAX_SIZE
#ifndef ARCH_KMALLOC_MINALIGN
#define ARCH_KMALLOC_MINALIGN  __alignof__(unsigned long long)
#endif
#ifndef ARCH_SLAB_MINALIGN
#define ARCH_SLAB_MINALIGN     __alignof__(unsigned long long)
#endif

/* Untagged functions under the macros' names (see above), and the
 * kernel's _noprof names for wrappers written with alloc_hooks(). */
static inline void *(kmalloc)(size_t size, gfp_t gfp)
{
	return uslub_kmalloc_noprof(size, uslub_compat_gfp(gfp));
}
static inline void *(kzalloc)(size_t size, gfp_t gfp)
{
	return uslub_kmalloc_noprof(size, uslub_compat_gfp(gfp | __GFP_ZERO));
}
static inline void *(kmalloc_array)(size_t n, size_t size, gfp_t gfp)
{
	return uslub_kmalloc_array_noprof(n, size, uslub_compat_gfp(gfp));
}
static inline void *(kcalloc)(size_t n, size_t size, gfp_t gfp)
{
	return uslub_kmalloc_array_noprof(n, size, uslub_compat_gfp(gfp | __GFP_ZERO));
}
static inline void *(krealloc)(const void *p, size_t new_size, gfp_t gfp)
{
	return uslub_krealloc_noprof(p, new_size, uslub_compat_gfp(gfp));
}
static inline void *kmalloc_noprof(size_t size, gfp_t gfp)
{
	return uslub_kmalloc_noprof(size, uslub_compat_gfp(gfp));
}
static inline void *kzalloc_noprof(size_t size, gfp_t gfp)
{
	return uslub_kmalloc_noprof(size, uslub_compat_gfp(gfp | __GFP_ZERO));
}
static inline void *kmalloc_node_noprof(size_t size, gfp_t gfp, int node)
{
	return uslub_kmalloc_node_noprof(size, uslub_compat_gfp(gfp), node);
}
static inline void *kmalloc_array_noprof(size_t n, size_t size, gfp_t gfp)
{
	return uslub_kmalloc_array_noprof(n, size, uslub_compat_gfp(gfp));
}
static inline void *krealloc_noprof(const void *p, size_t new_size, gfp_t gfp)
{
	return uslub_krealloc_noprof(p, new_size, uslub_compat_gfp(gfp));
}

/* The kernel's alloc_hooks(): tag @call (a _noprof call whose arguments
 * do not allocate) with this call site. */
#define alloc_hooks(call) USLUB_ALLOC_HOOKS(call)

/* @size bytes; NULL (errno = ENOMEM) on failure. */
#define kmalloc(size, gfp) uslub_kmalloc((size), uslub_compat_gfp(gfp))
#define kzalloc(size, gfp) kmalloc((size), (gfp) | __GFP_ZERO)
#define kmalloc_node(size, gfp, node)                                          \
	uslub_kmalloc_node((size), uslub_compat_gfp(gfp), (node))
#define kzalloc_node(size, gfp, node) kmalloc_node((size), (gfp) | __GFP_ZERO, (node))
/* kmalloc_track_caller: the caller is this call site here. */
#define kmalloc_track_caller(size, gfp) kmalloc((size), (gfp))
#define kmalloc_node_track_caller(size, gfp, node) kmalloc_node((size), (gfp), (node))

/* @n elements of @size bytes; NULL (errno = ENOMEM) if n * size overflows. */
#define kmalloc_array(n, size, gfp)                                            \
	uslub_kmalloc_array((n), (size), uslub_compat_gfp(gfp))
#define kcalloc(n, size, gfp) kmalloc_array((n), (size), (gfp) | __GFP_ZERO)
#define kmalloc_array_node(n, size, gfp, node) ({                              \
	size_t __kc_an_n = (n), __kc_an_s = (size), __kc_an_b = 0;             \
	gfp_t __kc_an_g = (gfp);                                               \
	int __kc_an_d = (node);                                                \
	void *__kc_an_p = NULL;                                                \
	if (__builtin_mul_overflow(__kc_an_n, __kc_an_s, &__kc_an_b))          \
		errno = ENOMEM;                                                \
	else                                                                   \
		__kc_an_p = kmalloc_node(__kc_an_b, __kc_an_g, __kc_an_d);     \
	__kc_an_p; })
#define kcalloc_node(n, size, gfp, node)                                       \
	kmalloc_array_node((n), (size), (gfp) | __GFP_ZERO, (node))

/* Resize (see uslub_krealloc): in place when the size class allows, else
 * moved; new_size 0 frees and returns ZERO_SIZE_PTR; on failure NULL with
 * @p untouched. Pass __GFP_ZERO on every call if you rely on zeroing. */
#define krealloc(p, new_size, gfp)                                             \
	uslub_krealloc((p), (new_size), uslub_compat_gfp(gfp))
#define krealloc_array(p, new_n, new_size, gfp) ({                             \
	const void *__kc_ra_p = (p);                                           \
	size_t __kc_ra_n = (new_n), __kc_ra_s = (new_size), __kc_ra_b = 0;     \
	gfp_t __kc_ra_g = (gfp);                                               \
	void *__kc_ra_r = NULL;                                                \
	if (__builtin_mul_overflow(__kc_ra_n, __kc_ra_s, &__kc_ra_b))          \
		errno = ENOMEM;                                                \
	else                                                                   \
		__kc_ra_r = krealloc(__kc_ra_p, __kc_ra_b, __kc_ra_g);         \
	__kc_ra_r; })

/* krealloc that also moves @p when it is not aligned to @align (a power
 * of two) or, @node other than NUMA_NO_NODE, not on @node (Linux 6.17);
 * NULL with EINVAL for a bad alignment or node, @p untouched. */
#define krealloc_node_align(p, new_size, align, gfp, node)                     \
	uslub_krealloc_node_align((p), (new_size), (align), uslub_compat_gfp(gfp), (node))
#define krealloc_node(p, new_size, gfp, node)                                  \
	krealloc_node_align((p), (new_size), 1, (gfp), (node))
static inline void *krealloc_node_align_noprof(const void *p, size_t new_size,
					       unsigned long align, gfp_t gfp, int node)
{
	return uslub_krealloc_node_align_noprof(p, new_size, align, uslub_compat_gfp(gfp), node);
}

/* Free what kmalloc or any cache returned; NULL and ZERO_SIZE_PTR: nothing. */
static inline void kfree(const void *p)
{
	uslub_kfree(p);
}
/* kfree() after clearing the whole allocation. */
static inline void kfree_sensitive(const void *p)
{
	uslub_kfree_sensitive(p);
}
/* Free @size objects of any caches (kmalloc'd or not); NULL entries skipped. */
static inline void kfree_bulk(size_t size, void **p)
{
	uslub_kfree_bulk(size, p);
}
/* The usable size of an allocation (>= what was asked); 0 for NULL and
 * ZERO_SIZE_PTR. */
static inline size_t ksize(const void *p)
{
	return uslub_ksize(p);
}
/* What kmalloc(@size) really allocates. */
static inline size_t kmalloc_size_roundup(size_t size)
{
	return uslub_kmalloc_size_roundup(size);
}

/* ------------------------------------------------------------------------
 * Copies (the kernel has these in <linux/string.h>; slab users expect them)
 * ---------------------------------------------------------------------- */

/* @len bytes of @src in a new allocation (kmalloc(0) rules for len 0). */
#define kmemdup(src, len, gfp) ({                                              \
	const void *__kc_md_s = (src);                                         \
	size_t __kc_md_l = (len);                                              \
	gfp_t __kc_md_g = (gfp);                                               \
	void *__kc_md_p = kmalloc(__kc_md_l, __kc_md_g);                       \
	if (!ZERO_OR_NULL_PTR(__kc_md_p))                                      \
		memcpy(__kc_md_p, __kc_md_s, __kc_md_l);                       \
	__kc_md_p; })
/* @count elements of @elem_size bytes; NULL (ENOMEM) on overflow. */
#define kmemdup_array(src, count, elem_size, gfp) ({                           \
	const void *__kc_ma_s = (src);                                         \
	size_t __kc_ma_n = (count), __kc_ma_e = (elem_size), __kc_ma_b = 0;    \
	gfp_t __kc_ma_g = (gfp);                                               \
	void *__kc_ma_p = NULL;                                                \
	if (__builtin_mul_overflow(__kc_ma_n, __kc_ma_e, &__kc_ma_b))          \
		errno = ENOMEM;                                                \
	else                                                                   \
		__kc_ma_p = kmemdup(__kc_ma_s, __kc_ma_b, __kc_ma_g);          \
	__kc_ma_p; })
/* @len bytes of @s and a terminating NUL. */
#define kmemdup_nul(s, len, gfp) ({                                            \
	const char *__kc_mn_s = (s);                                           \
	size_t __kc_mn_l = (len);                                              \
	gfp_t __kc_mn_g = (gfp);                                               \
	char *__kc_mn_p = NULL;                                                \
	if (__kc_mn_s && __kc_mn_l < SIZE_MAX) {                               \
		__kc_mn_p = (char *)kmalloc(__kc_mn_l + 1, __kc_mn_g);         \
		if (__kc_mn_p) {                                               \
			memcpy(__kc_mn_p, __kc_mn_s, __kc_mn_l);               \
			__kc_mn_p[__kc_mn_l] = '\0';                           \
		}                                                              \
	}                                                                      \
	__kc_mn_p; })
/* A copy of the string @s (NULL: NULL). */
#define kstrdup(s, gfp) ({                                                     \
	const char *__kc_sd_s = (s);                                           \
	gfp_t __kc_sd_g = (gfp);                                               \
	char *__kc_sd_p = NULL;                                                \
	if (__kc_sd_s) {                                                       \
		size_t __kc_sd_l = strlen(__kc_sd_s) + 1;                      \
		__kc_sd_p = (char *)kmalloc(__kc_sd_l, __kc_sd_g);             \
		if (__kc_sd_p)                                                 \
			memcpy(__kc_sd_p, __kc_sd_s, __kc_sd_l);               \
	}                                                                      \
	__kc_sd_p; })
/* strnlen() without needing POSIX from <string.h>. */
static inline size_t uslub_compat_strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}
/* At most @max bytes of @s, NUL-terminated (NULL: NULL). */
#define kstrndup(s, max, gfp) ({                                               \
	const char *__kc_sn_s = (s);                                           \
	size_t __kc_sn_m = (max);                                              \
	gfp_t __kc_sn_g = (gfp);                                               \
	char *__kc_sn_p = NULL;                                                \
	if (__kc_sn_s) {                                                       \
		size_t __kc_sn_l = uslub_compat_strnlen(__kc_sn_s, __kc_sn_m); \
		__kc_sn_p = kmemdup_nul(__kc_sn_s, __kc_sn_l, __kc_sn_g);      \
	}                                                                      \
	__kc_sn_p; })
/* The kernel returns read-only data as is; here it is always a copy, and
 * kfree_const() is kfree(). */
#define kstrdup_const(s, gfp) ((const char *)kstrdup((s), (gfp)))
static inline void kfree_const(const void *p)
{
	uslub_kfree(p);
}

static inline void *(kmemdup)(const void *src, size_t len, gfp_t gfp)
{
	void *p = uslub_kmalloc_noprof(len, uslub_compat_gfp(gfp));

	if (!ZERO_OR_NULL_PTR(p))
		memcpy(p, src, len);
	return p;
}
static inline char *(kstrdup)(const char *s, gfp_t gfp)
{
	char *p;

	if (!s)
		return NULL;
	p = (char *)(kmemdup)(s, strlen(s) + 1, gfp);
	return p;
}

/* ------------------------------------------------------------------------
 * kvmalloc: no vmalloc here; kmalloc serves every size.
 * ---------------------------------------------------------------------- */
#define kvmalloc(size, gfp) kmalloc((size), (gfp))
#define kvzalloc(size, gfp) kzalloc((size), (gfp))
#define kvmalloc_node(size, gfp, node) kmalloc_node((size), (gfp), (node))
#define kvzalloc_node(size, gfp, node) kzalloc_node((size), (gfp), (node))
#define kvmalloc_array(n, size, gfp) kmalloc_array((n), (size), (gfp))
#define kvcalloc(n, size, gfp) kcalloc((n), (size), (gfp))
#define kvcalloc_node(n, size, gfp, node) kcalloc_node((n), (size), (gfp), (node))
#define kvmemdup(src, len, gfp) kmemdup((src), (len), (gfp))
/* @size bytes aligned to @align (a power of two) on @node (Linux 6.17). */
#define kvmalloc_node_align(size, align, gfp, node)                            \
	uslub_kmalloc_node_align((size), (align), uslub_compat_gfp(gfp), (node))
static inline void *kvmalloc_node_align_noprof(size_t size, unsigned long align, gfp_t gfp,
					       int node)
{
	return uslub_kmalloc_node_align_noprof(size, align, uslub_compat_gfp(gfp), node);
}
/* The three-argument kvrealloc (6.12: the old size is no longer passed),
 * and its node and alignment forms: krealloc's. */
#define kvrealloc(p, size, gfp) krealloc((p), (size), (gfp))
#define kvrealloc_node(p, size, gfp, node) krealloc_node((p), (size), (gfp), (node))
#define kvrealloc_node_align(p, size, align, gfp, node)                        \
	krealloc_node_align((p), (size), (align), (gfp), (node))
static inline void kvfree(const void *p)
{
	uslub_kfree(p);
}
/* vfree_atomic()'s kvfree: a kfree here (it never sleeps). */
static inline void kvfree_atomic(const void *p)
{
	uslub_kfree(p);
}
static inline void kvfree_sensitive(const void *p, size_t len)
{
	(void)len;
	uslub_kfree_sensitive(p);
}

/* ------------------------------------------------------------------------
 * Scope-based freeing (<linux/cleanup.h>'s __free(kfree) and friends),
 * for code that declares `struct foo *p __free(kfree) = kmalloc(...)`.
 * __free, no_free_ptr and return_ptr are defined only if not already
 * (a cleanup.h of your own wins); __free_kfree, __free_kvfree and
 * __free_kfree_sensitive are the cleanup functions __free(kfree),
 * __free(kvfree) and __free(kfree_sensitive) name.
 * ---------------------------------------------------------------------- */
static inline bool uslub_compat_is_err_or_null(const void *p)
{
	return !p || (uintptr_t)p >= (uintptr_t)-4095;   /* NULL or ERR_PTR() */
}
static inline void __free_kfree(void *pp)
{
	void *p = *(void **)pp;

	if (!uslub_compat_is_err_or_null(p))
		uslub_kfree(p);
}
static inline void __free_kvfree(void *pp)
{
	__free_kfree(pp);
}
static inline void __free_kfree_sensitive(void *pp)
{
	void *p = *(void **)pp;

	if (!uslub_compat_is_err_or_null(p))
		uslub_kfree_sensitive(p);
}
#ifndef __free
#define __free(name) __attribute__((__cleanup__(__free_##name)))
#endif
#ifndef no_free_ptr
#define no_free_ptr(p) ({ __typeof__(p) __kc_nf = (p); (p) = NULL; __kc_nf; })
#endif
#ifndef return_ptr
#define return_ptr(p) return no_free_ptr(p)
#endif

/* ------------------------------------------------------------------------
 * Saturating size arithmetic (<linux/overflow.h>, which the kernel's
 * slab.h includes): a result that overflows is SIZE_MAX, which kmalloc
 * refuses. Each short name is defined only if not already; define
 * USLUB_SLAB_NO_OVERFLOW_HELPERS to leave them all out (their names,
 * array_size especially, may clash with your own). The typed allocators
 * below use the uslub_compat_ functions, not the names.
 * ---------------------------------------------------------------------- */
static inline size_t uslub_compat_size_mul(size_t a, size_t b)
{
	size_t r;

	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t uslub_compat_size_add(size_t a, size_t b)
{
	size_t r;

	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t uslub_compat_size_sub(size_t a, size_t b)
{
	size_t r;

	if (a == SIZE_MAX || b == SIZE_MAX || __builtin_sub_overflow(a, b, &r))
		return SIZE_MAX;
	return r;
}
/* Bytes of *@p with @count elements in its flexible array @member. */
#define uslub_compat_struct_size(p, member, count)                             \
	uslub_compat_size_add(sizeof(*(p)),                                    \
			      uslub_compat_size_mul((count), sizeof(*(p)->member)))
#ifndef USLUB_SLAB_NO_OVERFLOW_HELPERS
#ifndef size_mul
#define size_mul(a, b) uslub_compat_size_mul((a), (b))
#endif
#ifndef size_add
#define size_add(a, b) uslub_compat_size_add((a), (b))
#endif
#ifndef size_sub
#define size_sub(a, b) uslub_compat_size_sub((a), (b))
#endif
#ifndef array_size
#define array_size(a, b) uslub_compat_size_mul((a), (b))
#endif
#ifndef array3_size
#define array3_size(a, b, c) uslub_compat_size_mul(uslub_compat_size_mul((a), (b)), (c))
#endif
/* Bytes of @count elements of the flexible array @member of *@p. */
#ifndef flex_array_size
#define flex_array_size(p, member, count)                                      \
	uslub_compat_size_mul((count), sizeof(*(p)->member))
#endif
/* Bytes of *@p with @count elements in its flexible array @member. */
#ifndef struct_size
#define struct_size(p, member, count) uslub_compat_struct_size(p, member, count)
#endif
/* The same for a type: struct_size_t(struct foo, member, count). */
#ifndef struct_size_t
#define struct_size_t(type, member, count)                                     \
	uslub_compat_struct_size((type *)NULL, member, count)
#endif
#endif /* USLUB_SLAB_NO_OVERFLOW_HELPERS */

/* ------------------------------------------------------------------------
 * Any-context allocation, object dump, late charge
 *
 * kmalloc_nolock()/kfree_nolock() (6.18): "any context" is, in userspace,
 * a signal handler -- also one that interrupted this thread inside uslub
 * -- and re-entrant calls: they only try locks, never touch the thread's
 * per-CPU sheaves, never allocate, and leave errno alone (what is and is
 * not guaranteed: uslub_kmalloc_nolock() in uslub/types.h). @gfp may hold
 * only __GFP_ACCOUNT, __GFP_ZERO, __GFP_NOWARN and __GFP_NOMEMALLOC
 * (anything else: NULL); sizes above KMALLOC_MAX_CACHE_SIZE give NULL, 0
 * gives ZERO_SIZE_PTR. kfree() frees such objects too (as since 7.0).
 * Untagged: in a signal handler the call site's tag slot may be the
 * interrupted call's. kfree_rcu_nolock() (7.3, <uslub/rcu.h>) frees them
 * (or any kmalloc or cache object) after a grace period from the same
 * contexts.
 *
 * kmem_dump_obj() prints the object's cache, start, offset and size, and
 * its owners when the cache tracks them (SLAB_STORE_USER), to stderr;
 * false when @object is not a slab object.
 *
 * kmem_cache_charge() (6.12) charges an object already allocated to the
 * thread's current accounting group (uslub_group_set_current()); true
 * when charged or when there is nothing to do, false over the limit
 * unless __GFP_NOFAIL.
 * ---------------------------------------------------------------------- */
#define USLUB_COMPAT_NOLOCK_GFP (__GFP_ACCOUNT | __GFP_ZERO | __GFP_NOWARN | __GFP_NOMEMALLOC)

static inline void *kmalloc_nolock_noprof(size_t size, gfp_t gfp, int node)
{
	if (gfp & ~(gfp_t)USLUB_COMPAT_NOLOCK_GFP)
		return NULL;
	return uslub_kmalloc_nolock(size, uslub_compat_gfp(gfp), node);
}
static inline void *(kmalloc_nolock)(size_t size, gfp_t gfp, int node)
{
	return kmalloc_nolock_noprof(size, gfp, node);
}
#define kmalloc_nolock(size, gfp, node) kmalloc_nolock_noprof((size), (gfp), (node))

static inline void kfree_nolock(void *objp)
{
	uslub_kfree_nolock(objp);
}

static inline bool kmem_dump_obj(void *object)
{
	return uslub_kmem_dump_obj(object);
}

static inline bool kmem_cache_charge(void *objp, gfp_t gfpflags)
{
	return uslub_cache_charge(objp, uslub_compat_gfp(gfpflags));
}

/* ------------------------------------------------------------------------
 * Typed allocators (Linux 7.0): allocate for a type, get a pointer to it.
 *
 *   kmalloc_obj(VAR_OR_TYPE[, gfp])           one object
 *   kmalloc_objs(VAR_OR_TYPE, COUNT[, gfp])   an array of COUNT
 *   kmalloc_flex(VAR_OR_TYPE, FAM, COUNT[, gfp])
 *                                             a struct with COUNT elements
 *                                             in its flexible array FAM
 *
 * VAR_OR_TYPE is a type (struct foo) or an expression of that type
 * (p = kmalloc_obj(*p)); the result is a TYPE *. gfp is optional:
 * GFP_KERNEL when left out (the kernel's default_gfp()). Sizes saturate
 * (size_mul, struct_size_t), so an overflowing COUNT gets NULL (ENOMEM).
 * kmalloc_flex sets FAM's counter to COUNT when the struct has one
 * (__counted_by(field), seen through __builtin_counted_by_ref, GCC 15 and
 * clang 20) and then fails (NULL, ENOMEM, nothing allocated) when COUNT
 * does not fit the counter's type; with a compiler that cannot see the
 * counter, the counter is left for the caller to set, as the kernel's
 * fallback does. The kzalloc_, kvmalloc_ and kvzalloc_ forms are the same
 * over kzalloc, kvmalloc, kvzalloc. Each is a macro over kmalloc() & co.,
 * so each call site has its own profiling tag. They work in C (gnu11) and
 * C++ (g++ -std=c++17 or gnu++17).
 * ---------------------------------------------------------------------- */
#if defined(__has_builtin) && !defined(__cplusplus)
#if __has_builtin(__builtin_counted_by_ref)
#define USLUB_COMPAT_HAVE_COUNTED_BY_REF 1
#endif
#endif

#ifdef USLUB_COMPAT_HAVE_COUNTED_BY_REF
/* FAM's counter, or @none when the struct has no __counted_by for it. */
#define uslub_compat_flex_counter(obj, FAM, none)                              \
	__builtin_choose_expr(                                                 \
		__builtin_types_compatible_p(__typeof__(__builtin_counted_by_ref((obj)->FAM)), \
					     void *),                          \
		(none), __builtin_counted_by_ref((obj)->FAM))
/* Does @count fit FAM's counter (true without one)? (Negative or
 * truncated: no.) */
#define uslub_compat_flex_fits(obj, FAM, count)                                \
	((size_t)(__typeof__(*uslub_compat_flex_counter(obj, FAM, (size_t *)NULL)))(count) == \
		 (count) &&                                                    \
	 !((__typeof__(*uslub_compat_flex_counter(obj, FAM, (size_t *)NULL)))(count) < 1 && \
	   (count) != 0))
#define uslub_compat_flex_set(obj, FAM, count)                                 \
	((void)(*uslub_compat_flex_counter(obj, FAM, &(size_t){ 0 }) =        \
		(__typeof__(*uslub_compat_flex_counter(obj, FAM, (size_t *)NULL)))(count)))
#else
#define uslub_compat_flex_fits(obj, FAM, count) ((void)(obj), true)
#define uslub_compat_flex_set(obj, FAM, count) ((void)(obj), (void)(count))
#endif

#define uslub_compat_alloc_objs(ALLOC, gfp, TYPE, count)                       \
	((TYPE *)ALLOC(uslub_compat_size_mul(sizeof(TYPE), (count)), (gfp)))
#define uslub_compat_alloc_flex(ALLOC, gfp, TYPE, FAM, count) ({               \
	const size_t __kc_fx_n = (count);                                      \
	TYPE *__kc_fx_p = NULL;                                                \
	if (!uslub_compat_flex_fits(__kc_fx_p, FAM, __kc_fx_n))                \
		errno = ENOMEM;                                                \
	else                                                                   \
		__kc_fx_p = (TYPE *)ALLOC(uslub_compat_struct_size(__kc_fx_p, FAM, \
								   __kc_fx_n), (gfp)); \
	if (__kc_fx_p)                                                         \
		uslub_compat_flex_set(__kc_fx_p, FAM, __kc_fx_n);              \
	__kc_fx_p; })

/* Pick by argument count: the optional gfp is the last argument. */
#define uslub_compat_pick2(_1, _2, name, ...) name
#define uslub_compat_pick3(_1, _2, _3, name, ...) name
#define uslub_compat_pick4(_1, _2, _3, _4, name, ...) name

#define uslub_compat_obj_1(ALLOC, V) uslub_compat_alloc_objs(ALLOC, GFP_KERNEL, __typeof__(V), 1)
#define uslub_compat_obj_2(ALLOC, V, gfp) uslub_compat_alloc_objs(ALLOC, (gfp), __typeof__(V), 1)
#define uslub_compat_objs_2(ALLOC, V, n)                                       \
	uslub_compat_alloc_objs(ALLOC, GFP_KERNEL, __typeof__(V), (n))
#define uslub_compat_objs_3(ALLOC, V, n, gfp)                                  \
	uslub_compat_alloc_objs(ALLOC, (gfp), __typeof__(V), (n))
#define uslub_compat_flex_3(ALLOC, V, FAM, n)                                  \
	uslub_compat_alloc_flex(ALLOC, GFP_KERNEL, __typeof__(V), FAM, (n))
#define uslub_compat_flex_4(ALLOC, V, FAM, n, gfp)                             \
	uslub_compat_alloc_flex(ALLOC, (gfp), __typeof__(V), FAM, (n))

#define uslub_compat_obj(ALLOC, ...)                                           \
	uslub_compat_pick2(__VA_ARGS__, uslub_compat_obj_2, uslub_compat_obj_1, 0) \
		(ALLOC, __VA_ARGS__)
#define uslub_compat_objs(ALLOC, ...)                                          \
	uslub_compat_pick3(__VA_ARGS__, uslub_compat_objs_3, uslub_compat_objs_2, 0, 0) \
		(ALLOC, __VA_ARGS__)
#define uslub_compat_flex(ALLOC, ...)                                          \
	uslub_compat_pick4(__VA_ARGS__, uslub_compat_flex_4, uslub_compat_flex_3, 0, 0, 0) \
		(ALLOC, __VA_ARGS__)

#define kmalloc_obj(...)   uslub_compat_obj(kmalloc, __VA_ARGS__)
#define kmalloc_objs(...)  uslub_compat_objs(kmalloc, __VA_ARGS__)
#define kmalloc_flex(...)  uslub_compat_flex(kmalloc, __VA_ARGS__)
#define kzalloc_obj(...)   uslub_compat_obj(kzalloc, __VA_ARGS__)
#define kzalloc_objs(...)  uslub_compat_objs(kzalloc, __VA_ARGS__)
#define kzalloc_flex(...)  uslub_compat_flex(kzalloc, __VA_ARGS__)
#define kvmalloc_obj(...)  uslub_compat_obj(kvmalloc, __VA_ARGS__)
#define kvmalloc_objs(...) uslub_compat_objs(kvmalloc, __VA_ARGS__)
#define kvmalloc_flex(...) uslub_compat_flex(kvmalloc, __VA_ARGS__)
#define kvzalloc_obj(...)  uslub_compat_obj(kvzalloc, __VA_ARGS__)
#define kvzalloc_objs(...) uslub_compat_objs(kvzalloc, __VA_ARGS__)
#define kvzalloc_flex(...) uslub_compat_flex(kvzalloc, __VA_ARGS__)

/* ------------------------------------------------------------------------
 * Bucket sets (kmem_buckets, Linux 6.11): a private copy of every kmalloc
 * size class, for one kind of allocation (the kernel uses them for
 * memdup_user() and msg_msg). Each class is a real uslub cache named
 * "<name>-<class>" (so slabinfo lists "<name>-64", "<name>-1k", ...),
 * never merged, created when the set is. Above 8 KiB kmem_buckets_alloc()
 * serves as kmalloc() does. kfree() frees the objects. A NULL set means
 * the kmalloc caches. As in the kernel, a set is never destroyed.
 * ---------------------------------------------------------------------- */
typedef uslub_kmem_buckets kmem_buckets;

/* NULL (errno set) on failure, or abort() with SLAB_PANIC. @flags: SLAB_
 * flags as for kmem_cache_create(); the usercopy window is clipped to
 * each class. */
static inline kmem_buckets *kmem_buckets_create(const char *name, slab_flags_t flags,
						unsigned int useroffset, unsigned int usersize,
						void (*ctor)(void *))
{
	kmem_buckets *b = uslub_kmem_buckets_create(name, flags & ~(USLUB_COMPAT_SLAB_IGNORED |
								 SLAB_PANIC),
						    useroffset, usersize, ctor);
	if (!b && (flags & SLAB_PANIC)) {
		fprintf(stderr, "uslub: kmem_buckets_create(\"%s\") failed with SLAB_PANIC: "
			"%s\n", name ? name : "(null)", strerror(errno));
		fflush(stderr);
		abort();
	}
	return b;
}

/* @size bytes from the set @b; NULL (errno = ENOMEM) on failure. */
#define kmem_buckets_alloc(b, size, gfp)                                       \
	uslub_kmem_buckets_alloc((b), (size), uslub_compat_gfp(gfp), NUMA_NO_NODE)
#define kmem_buckets_alloc_track_caller(b, size, gfp) kmem_buckets_alloc((b), (size), (gfp))
/* kvmalloc from the set (no vmalloc here: the same). */
#define kmem_buckets_valloc(b, size, gfp) kmem_buckets_alloc((b), (size), (gfp))
static inline void *kmem_buckets_alloc_noprof(kmem_buckets *b, size_t size, gfp_t gfp)
{
	return uslub_kmem_buckets_alloc_noprof(b, size, uslub_compat_gfp(gfp), NUMA_NO_NODE);
}

/* ------------------------------------------------------------------------
 * kmalloc partitions (Linux 7.2, CONFIG_KMALLOC_PARTITION_CACHES): the
 * token plumbing. uslub switches partitions on at run time
 * (USLUB_KMALLOC_PARTITIONS=1), so this is the kernel's header with the
 * option built in: kmalloc_token_t carries a value and the DECL_/PASS_
 * macros add the token parameter. __kmalloc_token() is the call site's
 * (random mode: the address of a static at the site, the kernel's
 * _CODE_LOCATION_ where _THIS_IP_ is not trusted) or, where the compiler
 * has __builtin_infer_alloc_token (Clang 22), the allocated type's (typed
 * mode, mod 16: the partition itself). The kernel's names that take a
 * token hand it to uslub_kmalloc_token_noprof() and
 * uslub_krealloc_token_noprof(); kmalloc(), krealloc() and the rest need
 * none (each site's profiling tag stands for it). krealloc_node_align_noprof()
 * takes both forms: 7.2's (p, size, token, align, gfp, node) and the
 * five arguments without the token (6.17 - 7.1). Not provided, as before:
 * kmalloc_type() and kmalloc_caches[]. A kmalloc_nolock() token is not
 * used (the call's return address picks its partition).
 * ---------------------------------------------------------------------- */
#ifndef KMALLOC_PARTITION_CACHES_NR
#define KMALLOC_PARTITION_CACHES_NR (USLUB_KMALLOC_PARTITIONS - 1)
#endif
typedef struct { unsigned long v; } kmalloc_token_t;
static inline kmalloc_token_t uslub_compat_kmalloc_token(unsigned long v)
{
	kmalloc_token_t t;
	t.v = v;
	return t;
}
#ifdef USLUB_KMALLOC_TYPED
#define __kmalloc_token(...)                                                   \
	uslub_compat_kmalloc_token((unsigned long)(__builtin_infer_alloc_token(__VA_ARGS__) % \
						   USLUB_KMALLOC_PARTITIONS))
#else
#define __kmalloc_token(...)                                                   \
	uslub_compat_kmalloc_token(__extension__({                             \
		static const char __uslub_here = 0;                            \
		(unsigned long)&__uslub_here; }))
#endif
#define DECL_TOKEN_PARAM(_token)         , kmalloc_token_t (_token)
#define _PASS_TOKEN_PARAM(_token)        , (_token)
#define PASS_TOKEN_PARAM(_token)         (_token)
#define DECL_TOKEN_PARAMS(_size, _token) size_t (_size), kmalloc_token_t (_token)
#define PASS_TOKEN_PARAMS(_size, _token) (_size), (_token)
#define DECL_BUCKET_PARAMS(_size, _b)    size_t (_size), kmem_buckets *(_b)
#define PASS_BUCKET_PARAMS(_size, _b)    (_size), (_b)
#define PASS_BUCKET_PARAM(_b)            (_b)
#define DECL_KMALLOC_PARAMS(_size, _b, _token)                                 \
	DECL_BUCKET_PARAMS(_size, _b) DECL_TOKEN_PARAM(_token)
#define PASS_KMALLOC_PARAMS(_size, _b, _token)                                 \
	PASS_BUCKET_PARAMS(_size, _b) _PASS_TOKEN_PARAM(_token)

static inline void *__kmalloc_node_noprof(size_t size, kmem_buckets *b, kmalloc_token_t token,
					  gfp_t gfp, int node)
{
	if (b)
		return uslub_kmem_buckets_alloc_noprof(b, size, uslub_compat_gfp(gfp), node);
	return uslub_kmalloc_token_noprof(size, 1, uslub_compat_gfp(gfp), node, token.v);
}
static inline void *__kmalloc_noprof(size_t size, kmalloc_token_t token, gfp_t gfp)
{
	return __kmalloc_node_noprof(size, NULL, token, gfp, NUMA_NO_NODE);
}
static inline void *__kmalloc_node_track_caller_noprof(size_t size, kmem_buckets *b,
						       kmalloc_token_t token, gfp_t gfp,
						       int node, unsigned long caller)
{
	(void)caller;
	return __kmalloc_node_noprof(size, b, token, gfp, node);
}
static inline void *__kvmalloc_node_noprof(size_t size, kmem_buckets *b, kmalloc_token_t token,
					   unsigned long align, gfp_t gfp, int node)
{
	if (b && align <= ARCH_KMALLOC_MINALIGN)
		return uslub_kmem_buckets_alloc_noprof(b, size, uslub_compat_gfp(gfp), node);
	return uslub_kmalloc_token_noprof(size, align, uslub_compat_gfp(gfp), node, token.v);
}
static inline void *_kmalloc_noprof(size_t size, gfp_t gfp, kmalloc_token_t token)
{
	return __kmalloc_node_noprof(size, NULL, token, gfp, NUMA_NO_NODE);
}
static inline void *_kmalloc_node_noprof(size_t size, gfp_t gfp, int node, kmalloc_token_t token)
{
	return __kmalloc_node_noprof(size, NULL, token, gfp, node);
}
static inline void *_kmalloc_array_noprof(size_t n, size_t size, gfp_t gfp,
					  kmalloc_token_t token)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return __kmalloc_node_noprof(bytes, NULL, token, gfp, NUMA_NO_NODE);
}
static inline void *uslub_compat_krealloc_token(const void *p, size_t new_size,
						kmalloc_token_t token, unsigned long align,
						gfp_t gfp, int node)
{
	return uslub_krealloc_token_noprof(p, new_size, align, uslub_compat_gfp(gfp), node,
					   token.v);
}
static inline void *_krealloc_array_noprof(const void *p, size_t new_n, size_t new_size,
					   gfp_t gfp, kmalloc_token_t token)
{
	size_t bytes;
	if (__builtin_mul_overflow(new_n, new_size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return uslub_compat_krealloc_token(p, bytes, token, 1, gfp, NUMA_NO_NODE);
}
static inline void *_kmalloc_nolock_noprof(size_t size, kmalloc_token_t token, gfp_t gfp,
					   int node)
{
	(void)token;
	return kmalloc_nolock_noprof(size, gfp, node);
}
/* krealloc_node_align_noprof(p, size, [token,] align, gfp, node) */
#define USLUB_COMPAT_PICK6(a, b, c, d, e, f, name, ...) name
#define krealloc_node_align_noprof(...)                                        \
	USLUB_COMPAT_PICK6(__VA_ARGS__, uslub_compat_krealloc_token,           \
			   (krealloc_node_align_noprof), _)(__VA_ARGS__)

/* ------------------------------------------------------------------------
 * The rest of 7.x's _noprof names (what a wrapper written with
 * alloc_hooks() calls) and small helpers kernel code calls. The caller
 * argument of the track_caller forms is ignored: the tag is the call
 * site's, as kmalloc_track_caller() above.
 * ---------------------------------------------------------------------- */
static inline void *kmalloc_node_track_caller_noprof(size_t size, gfp_t gfp, int node,
						     unsigned long caller)
{
	(void)caller;
	return uslub_kmalloc_node_noprof(size, uslub_compat_gfp(gfp), node);
}
static inline void *kmalloc_track_caller_noprof(size_t size, gfp_t gfp, unsigned long caller)
{
	return kmalloc_node_track_caller_noprof(size, gfp, NUMA_NO_NODE, caller);
}
static inline void *kmalloc_array_node_noprof(size_t n, size_t size, gfp_t gfp, int node)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return uslub_kmalloc_node_noprof(bytes, uslub_compat_gfp(gfp), node);
}
static inline void *krealloc_array_noprof(const void *p, size_t new_n, size_t new_size, gfp_t gfp)
{
	size_t bytes;
	if (__builtin_mul_overflow(new_n, new_size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return uslub_krealloc_noprof(p, bytes, uslub_compat_gfp(gfp));
}
static inline void *kvmalloc_node_noprof(size_t size, gfp_t gfp, int node)
{
	return uslub_kmalloc_node_noprof(size, uslub_compat_gfp(gfp), node);
}
static inline void *kvmalloc_noprof(size_t size, gfp_t gfp)
{
	return kvmalloc_node_noprof(size, gfp, NUMA_NO_NODE);
}
static inline void *kvmalloc_array_node_noprof(size_t n, size_t size, gfp_t gfp, int node)
{
	return kmalloc_array_node_noprof(n, size, gfp, node);
}
static inline void *kvmalloc_array_noprof(size_t n, size_t size, gfp_t gfp)
{
	return kmalloc_array_node_noprof(n, size, gfp, NUMA_NO_NODE);
}
static inline void *kvcalloc_node_noprof(size_t n, size_t size, gfp_t gfp, int node)
{
	return kmalloc_array_node_noprof(n, size, gfp | __GFP_ZERO, node);
}
static inline void *kvcalloc_noprof(size_t n, size_t size, gfp_t gfp)
{
	return kvcalloc_node_noprof(n, size, gfp, NUMA_NO_NODE);
}
static inline void *kvrealloc_node_align_noprof(const void *p, size_t size, unsigned long align,
						gfp_t gfp, int node)
{
	return uslub_krealloc_node_align_noprof(p, size, align, uslub_compat_gfp(gfp), node);
}
static inline void *kmem_cache_alloc_lru_noprof(struct kmem_cache *s, struct list_lru *lru,
						gfp_t gfp)
{
	(void)lru;
	return kmem_cache_alloc_noprof(s, gfp);
}
#define kmem_buckets_alloc_node_track_caller(b, size, gfp, node)               \
	uslub_kmem_buckets_alloc((b), (size), uslub_compat_gfp(gfp), (node))
/* The 7.x creation entry point that kmem_cache_create()'s forms call. */
#define __kmem_cache_create_args(name, size, args, flags)                      \
	uslub_compat_create_args((name), (size), (args), (flags))
/* The minimum alignment of @s's objects: the architecture's here. */
static inline unsigned int arch_slab_minalign(void)
{
	return ARCH_SLAB_MINALIGN;
}

/* ------------------------------------------------------------------------
 * slab_is_available(): the kernel's "may slab allocations be made yet"
 * (false early in boot). uslub initialises itself on first use, from any
 * thread and before main(), so there is no moment where a call could not
 * allocate: always true.
 * ---------------------------------------------------------------------- */
static inline bool slab_is_available(void)
{
	return true;
}

#endif /* USLUB_SLAB_H */
