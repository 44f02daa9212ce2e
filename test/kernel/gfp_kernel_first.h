/*
 * gfp_kernel_first.h: what a translation unit looks like after the
 * kernel's <linux/types.h> and <linux/gfp_types.h> ran, without needing a
 * kernel tree: the kernel's include guards, its gfp_t typedef, and some of
 * its __GFP_ names, spelled as the kernel spells them (plain masks, then
 * the __force-cast gfp_t names) and with the kernel's 6.12 values
 * (gfp_types.h's bit numbers: DMA 0, HIGH 5, IO 6, FS 7, ZERO 8,
 * DIRECT_RECLAIM 10, KSWAPD_RECLAIM 11, NOWARN 13, NOFAIL 15, ACCOUNT 22;
 * 24 bits in all). Written for uslub's tests, not copied.
 *
 * <uslub/slab.h> must then define nothing that is already defined here
 * (any redefinition is a diagnostic, an error with -Werror) and still
 * supply the rest (the GFP_ combinations, the other __GFP_ names,
 * __GFP_BITS_MASK, GFP_ZONEMASK, gfpflags_allow_blocking()).
 */
#ifndef USLUB_TEST_GFP_KERNEL_FIRST_H
#define USLUB_TEST_GFP_KERNEL_FIRST_H

#include <stdbool.h>

/* <linux/types.h> (kernel): its guard, and gfp_t as the kernel has it. */
#define _LINUX_TYPES_H
#define __EXPORTED_HEADERS__
#define __bitwise
#define __force
typedef unsigned int __bitwise gfp_t;

/* <linux/gfp_types.h>: its guard and part of its names. */
#define __LINUX_GFP_TYPES_H
#define ___GFP_DMA            0x01u
#define ___GFP_HIGH           0x20u
#define ___GFP_IO             0x40u
#define ___GFP_FS             0x80u
#define ___GFP_ZERO           0x100u
#define ___GFP_DIRECT_RECLAIM 0x400u
#define ___GFP_KSWAPD_RECLAIM 0x800u
#define ___GFP_NOWARN         0x2000u
#define ___GFP_NOFAIL         0x8000u
#define ___GFP_ACCOUNT        0x400000u
#define __GFP_DMA            ((__force gfp_t)___GFP_DMA)
#define __GFP_HIGH           ((__force gfp_t)___GFP_HIGH)
#define __GFP_IO             ((__force gfp_t)___GFP_IO)
#define __GFP_FS             ((__force gfp_t)___GFP_FS)
#define __GFP_ZERO           ((__force gfp_t)___GFP_ZERO)
#define __GFP_DIRECT_RECLAIM ((__force gfp_t)___GFP_DIRECT_RECLAIM)
#define __GFP_KSWAPD_RECLAIM ((__force gfp_t)___GFP_KSWAPD_RECLAIM)
#define __GFP_RECLAIM        ((__force gfp_t)(___GFP_DIRECT_RECLAIM | ___GFP_KSWAPD_RECLAIM))
#define __GFP_NOWARN         ((__force gfp_t)___GFP_NOWARN)
#define __GFP_NOFAIL         ((__force gfp_t)___GFP_NOFAIL)
#define __GFP_ACCOUNT        ((__force gfp_t)___GFP_ACCOUNT)
#define __GFP_BITS_SHIFT     24
#define GFP_KERNEL           (__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_ATOMIC           (__GFP_HIGH | __GFP_KSWAPD_RECLAIM)

/* <linux/gfp.h> (tools/include's): its guard and its one function. */
#define _TOOLS_INCLUDE_LINUX_GFP_H
static inline bool gfpflags_allow_blocking(const gfp_t gfp_flags)
{
	return !!(gfp_flags & __GFP_DIRECT_RECLAIM);
}

#include <uslub/slab.h>

#endif
