/*
 * The kernel-gfp co-include test against a kernel tree's own headers
 * (built only when one is found: USLUB_KERNEL_SRC, or /usr/src/linux*),
 * through tools/include as the kernel's userspace test harnesses use it:
 * <linux/types.h> (its gfp_t is an enum there), <linux/gfp_types.h>
 * (the real include/linux/gfp_types.h) and <linux/gfp.h>, then
 * <uslub/slab.h>.
 */
#define KGFP_NAME "kernel_gfp_tree"
#include <linux/types.h>
#include <linux/gfp_types.h>
#include <linux/gfp.h>
#include <uslub/slab.h>
#include "kernel_gfp_body.h"
