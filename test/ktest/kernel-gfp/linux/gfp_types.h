/*
 * A stand-in for the kernel's <linux/gfp_types.h>, written for this test
 * (not the kernel's text): the bit positions Linux 6.12 gives the flags
 * the harness header reads, so that ktest_harness_kgfp builds the harness
 * header in its kernel mode (beside a kernel gfp layout, not
 * <uslub/slab.h>'s) on a machine without a kernel tree.
 */
#ifndef USLUB_TEST_FAKE_GFP_TYPES_H
#define USLUB_TEST_FAKE_GFP_TYPES_H

#define __GFP_HIGH           ((gfp_t)(1u << 5))
#define __GFP_IO             ((gfp_t)(1u << 6))
#define __GFP_FS             ((gfp_t)(1u << 7))
#define __GFP_ZERO           ((gfp_t)(1u << 8))
#define __GFP_DIRECT_RECLAIM ((gfp_t)(1u << 10))
#define __GFP_KSWAPD_RECLAIM ((gfp_t)(1u << 11))
#define __GFP_NOWARN         ((gfp_t)(1u << 13))
#define __GFP_NOFAIL         ((gfp_t)(1u << 15))
#define __GFP_ACCOUNT        ((gfp_t)(1u << 22))
#define __GFP_RECLAIM        ((gfp_t)(__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM))

#define GFP_ATOMIC (__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#define GFP_KERNEL (__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_NOWAIT (__GFP_KSWAPD_RECLAIM | __GFP_NOWARN)
#endif
