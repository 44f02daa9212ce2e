/*
 * malloc's size classes: kmem_caches of their own, made for malloc's size
 * mix, apart from the kernel's kmalloc classes (which stay as they are for
 * the kmalloc API; kfree and free accept each other's objects, since both
 * free an object to its slab's cache).
 *
 *   sizes            classes (bytes)                          cache names
 *   1 .. 8           8                                        malloc-8
 *   9 .. 128         16-byte steps: 16 32 48 .. 128           malloc-16 ..
 *   129 .. 64 KiB    four per power of two: 2^k * 5/4, 6/4,   malloc-160 ..
 *                    7/4, 8/4 (160 192 224 256 320 .. 64k)    malloc-64k
 *   above 64 KiB     kmalloc's page runs (to 2 MiB), then mappings
 *
 * 45 classes. A request takes the smallest class that holds it (the
 * malloc_classes test checks every size from 0 to 64 KiB against its own
 * formula). The step is 16 from 16 bytes on, so every block of 16 bytes or
 * more is 16-byte aligned (what glibc and jemalloc give; malloc(1..8) is
 * 8-byte aligned, as jemalloc's and mimalloc's). A request aligned to more
 * than 16 takes kmalloc's naturally aligned power-of-two classes.
 *
 * Lookup: sizes up to 1 KiB through one table in 8-byte steps (entry
 * (size + 7) / 8, 129 entries, each the cache itself); above, the class
 * index from the position of the highest bit and the two bits under it.
 * Both tables are NULL until the caches exist (malloc's slow path creates
 * them once the kmalloc caches are up) and never change afterwards.
 */
#ifndef USLUB_MALLOC_CLASSES_H
#define USLUB_MALLOC_CLASSES_H

#include "kmalloc/kmalloc.h"

#define MALLOC_DIRECT_MAX   1024u              /* table-served sizes       */
#define MALLOC_CLASS_MAX    (64u << 10)        /* largest malloc class     */
#define MALLOC_SMALL_CLASSES 21                /* classes up to 1 KiB      */
#define MALLOC_MID_CLASSES  24                 /* 1280 .. 64 KiB: 6 x 4    */
#define MALLOC_CLASSES      (MALLOC_SMALL_CLASSES + MALLOC_MID_CLASSES)

__internal extern struct kmem_cache *_uslub_malloc_direct[MALLOC_DIRECT_MAX / 8 + 1];
__internal extern struct kmem_cache *_uslub_malloc_mid[MALLOC_MID_CLASSES];

/* Index into _uslub_malloc_mid of a size in (1 KiB, 64 KiB]: with
 * 2^k < size <= 2^(k+1) (10 <= k <= 15), the classes of that doubling are
 * 2^k + j * 2^(k-2), j = 1..4, and (size - 1) >> (k - 2) & 3 is j - 1. */
static __always_inline unsigned int malloc_mid_index(size_t size)
{
	size_t s1 = size - 1;
	unsigned int k = (unsigned int)(63 - __builtin_clzl(s1));
	return (k - 10) * 4 + (unsigned int)((s1 >> (k - 2)) & 3);
}

/* The @j-th class of the four-per-power-of-two range (0: 160 B, the first
 * above 128): 2^k + (j % 4 + 1) * 2^(k-2) with k = 7 + j / 4. The mid
 * table's index i is j - 12 (its first class, 1280, is 2^10 * 5/4). */
static __always_inline size_t malloc_quarter_size(unsigned int j)
{
	unsigned int k = 7 + j / 4;
	return ((size_t)1 << k) + (size_t)(j % 4 + 1) * ((size_t)1 << (k - 2));
}

/* The cache for @size, or NULL (above 64 KiB, or the caches do not exist
 * yet). */
static __always_inline struct kmem_cache *malloc_cache(size_t size)
{
	if (likely(size <= MALLOC_DIRECT_MAX))
		return _uslub_malloc_direct[(size + 7) >> 3];
	if (likely(size <= MALLOC_CLASS_MAX))
		return _uslub_malloc_mid[malloc_mid_index(size)];
	return NULL;
}

/* Create the malloc caches once the kmalloc caches exist (idempotent,
 * thread safe; no lock held by the caller). false: they could not be
 * created (malloc then serves every size from kmalloc). */
__internal bool _uslub_malloc_classes_init(void);

#endif /* USLUB_MALLOC_CLASSES_H */
