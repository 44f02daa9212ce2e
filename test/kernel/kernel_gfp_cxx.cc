/* The kernel-gfp co-include test, C++: the stand-in kernel headers first. */
#define KGFP_NAME "kernel_gfp_cxx"
#include "gfp_kernel_first.h"
#include "kernel_gfp_body.h"
