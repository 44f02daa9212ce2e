/*
 * Separate extension arrays (seed 003's fallback, and on-demand arrays):
 * one zeroed array of slabobj_ext per slab, from the internal bucket
 * caches (slub/buckets.c), which never have extensions themselves.
 */
#include "ext/ext.h"
#include <string.h>

static_assert((size_t)MAX_OBJS_PER_SLAB * sizeof(struct slabobj_ext) <= USLUB_BUCKET_MAX,
	      "the largest slab's array fits a bucket");

/* A zeroed array for @objects extensions (as an unsigned long, for
 * slab->obj_exts), or 0 if out of memory. */
unsigned long _uslub_obj_exts_alloc(struct kmem_cache *s, unsigned int objects)
{
	(void)s;
	size_t bytes = (size_t)objects * sizeof(struct slabobj_ext);
	void *p = _uslub_bucket_alloc(bytes, 0);
	if (p)
		memset(p, 0, bytes);
	return (unsigned long)p;
}

void _uslub_obj_exts_free(struct kmem_cache *s, unsigned long obj_exts, unsigned int objects)
{
	(void)s;
	/* may run with thread_lock held (destroy, a fork child's flush) */
	_uslub_bucket_free_locked((void *)obj_exts, (size_t)objects * sizeof(struct slabobj_ext));
}
