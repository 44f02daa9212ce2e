/*
 * uslub — the Linux kernel's SLUB slab allocator as a userspace C library.
 *
 * Public API. The declarations are in <uslub/types.h>; this header adds
 * what a user of the library needs besides: the constructor (and the
 * destructor) that registers the allocation tags of the includer's shared
 * object, so allocation profiling reports its call sites (see
 * USLUB_ALLOC_TAGS_REGISTRATION in <uslub/types.h>). Each translation unit
 * that includes it gets one copy; registering a section again does
 * nothing. See docs/design.md for how each call maps onto SLUB.
 */
#ifndef USLUB_H
#define USLUB_H

#include "uslub/types.h"

#ifdef __cplusplus
extern "C" {
#endif

USLUB_ALLOC_TAGS_REGISTRATION();

#ifdef __cplusplus
}
#endif
#endif /* USLUB_H */
