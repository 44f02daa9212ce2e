/* Stand-in for the harness's tools/include/linux/gfp.h (this test's own). */
#ifndef _TOOLS_INCLUDE_LINUX_GFP_H
#define _TOOLS_INCLUDE_LINUX_GFP_H
#include <linux/types.h>
#include <linux/gfp_types.h>
#endif
