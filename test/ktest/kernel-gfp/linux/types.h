/* Stand-in for the harness's tools/include/linux/types.h (this test's own):
 * the kernel's gfp_t. */
#ifndef USLUB_TEST_FAKE_TYPES_H
#define USLUB_TEST_FAKE_TYPES_H
typedef unsigned int gfp_t;
#endif
