/*
 * kmalloc layer: the kernel's kmalloc family on top of the object caches.
 *
 *   size            served by                             usable size
 *   0               USLUB_ZERO_SIZE_PTR (kmalloc only)    0
 *   1 .. 8 KiB      kmalloc-<class>: a kmem_cache per      the class
 *                   size class 8 16 32 64 96 128 192 256
 *                   512 1k 2k 4k 8k
 *   .. 2 MiB        one page run of 2^order pages from     PAGE_SIZE << order
 *                   the page provider (PG_large)
 *   larger          its own mmap (a "huge" allocation),    the mapping
 *                   found through the huge table
 *
 * The class of a size (the kernel's kmalloc_index()): sizes up to 192 through
 * a table in 8-byte steps, so 65..96 -> 96 and 129..192 -> 192; larger
 * sizes round up to a power of two. The caches are indexed like the
 * kernel's: 1 -> 96, 2 -> 192, i >= 3 -> 2^i.
 *
 * Alignment: a power-of-two class is created with align = its size, so its
 * objects are naturally aligned, red zones or not (as the kernel promises
 * since 5.4); kmalloc-96 and kmalloc-192 are aligned to 32 and 64. A page
 * run is aligned to its own size. An aligned request takes the smallest
 * class or run whose natural alignment is enough.
 *
 * Telling them apart on free: the page descriptor of the pointer (one
 * bitmap test, one load) says PG_slab (an object: its slab's cache frees
 * it) or PG_large (a page run: the pointer must be the run's start);
 * otherwise the huge table (huge_lock) is asked; anything else is an
 * invalid free.
 *
 * Partitions (USLUB_KMALLOC_PARTITIONS=1, Linux 7.2): the kmalloc API's
 * allocations of the normal type come from one of 16 sets of these caches
 * (kmalloc-<size>, kmalloc-part-NN-<size>), one per call site; see the top
 * of kmalloc.c. _uslub_kmalloc_caches[] is always the normal set.
 *
 * Locks: huge_lock (rank RANK_HUGE) protects the huge table; nothing else
 * is taken while it is held, and no mmap/munmap runs under it.
 */
#ifndef USLUB_KMALLOC_H
#define USLUB_KMALLOC_H

#include "ext/ext.h"
#include "sheaf/sheaf.h"
#include "cache/cache.h"

#define KMALLOC_SHIFT_LOW   3                   /* kmalloc-8                 */
#define KMALLOC_SHIFT_HIGH  13                  /* kmalloc-8k                */
#define KMALLOC_MAX_CACHE_SIZE (1ul << KMALLOC_SHIFT_HIGH)
#define KMALLOC_LARGE_MAX   (PAGE_SIZE << MAX_PAGE_ORDER)   /* 2 MiB         */

/* The kmalloc caches by index (NULL until _uslub_kmalloc_init() ran). */
__internal extern struct kmem_cache *_uslub_kmalloc_caches[KMALLOC_SHIFT_HIGH + 1];
/* Index of the class for sizes 0..192, by (size + 7) / 8. */
__internal extern const unsigned char _uslub_kmalloc_size_index[25];

static __always_inline unsigned int kmalloc_index(size_t size)
{
	if (size <= 192)
		return _uslub_kmalloc_size_index[(size + 7) / 8];
	return fls_u(size - 1);
}

static __always_inline size_t kmalloc_index_size(unsigned int idx)
{
	return idx == 1 ? 96 : idx == 2 ? 192 : (size_t)1 << idx;
}


/* Create the kmalloc caches (once; idempotent, thread safe). Returns
 * false if they could not be created. */
__internal bool _uslub_kmalloc_init(void);
/* Whether the kmalloc caches abort on a bad free: a weak function (a weak
 * const variable would be folded by the compiler) returning false, which
 * the malloc front end overrides (true unless USLUB_MALLOC_ABORT=0). */
__internal bool _uslub_kmalloc_fatal_errors(void);

/* Everything but a kmalloc cache hit: sizes above 8 KiB, @align above what
 * the class gives, caches not created yet. @size > 0, @align a power of
 * two. NULL with errno = ENOMEM on failure. */
__internal void *_uslub_kmalloc_slow(size_t size, size_t align, uslub_gfp_t gfp, int node);

/* kfree of anything that is not an object in a slab: NULL and
 * ZERO_SIZE_PTR (nothing), page runs, huge mappings, invalid pointers
 * (reported; abort() with @fatal). */
__internal void _uslub_kfree_cold(const void *p, bool fatal);
/* false when kfree() could take @p (a slab page's address: the slab layer
 * checks the object; a page run's or a huge mapping's start); else true,
 * after reporting why not as "@op of @p: <the cause kfree() names>". */
__internal bool _uslub_kfree_refused(const void *p, const char *op);

/* The usable size of @p; 0 for NULL/ZERO_SIZE_PTR. An invalid pointer is
 * reported (abort with @fatal) and gives 0. A slub_debug kmalloc cache
 * with red zones then lets the caller use the whole object (the kernel's
 * ksize() turns the kmalloc tail check off for it). */
__internal size_t _uslub_ksize(const void *p, bool fatal);

/* Resize for krealloc (@malloc_alloc NULL: a move takes a kmalloc class)
 * or realloc (@malloc_alloc: the malloc front end's allocation, which a
 * move takes; a shrink below half the usable size moves, to give memory
 * back). @p is valid and not ZERO_OR_NULL, @new_size > 0. NULL on
 * failure, p intact. */
__internal void *_uslub_krealloc(void *p, size_t new_size, uslub_gfp_t gfp,
				 void *(*malloc_alloc)(size_t));

/* fork: huge_lock is taken in its rank's place (RANK_HUGE: after the
 * core's reserve_lock) by its lifecycle entry (base/lifecycle.h),
 * registered when the kmalloc caches are created. */

/* Totals of the page runs and huge mappings handed out. */
struct kmalloc_large_stats {
	unsigned long large_allocs, large_frees, large_bytes;   /* page runs   */
	unsigned long huge_allocs, huge_frees, huge_bytes;      /* mmaps       */
};
__internal void _uslub_kmalloc_large_stats(struct kmalloc_large_stats *out);

#endif /* USLUB_KMALLOC_H */
