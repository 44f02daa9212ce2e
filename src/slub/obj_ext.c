/*
 * obj_ext.c — per-object extension storage (seed 003): a new slab's
 * extensions in its leftover, its objects' padding or a separate array,
 * on-demand arrays (both from the bucket caches), and the accessor for
 * the reports.
 */
#include "slub/slub.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Per-object extensions (seed 003): one stride-based accessor for all three
 * placements (see struct slabobj_ext in slub.h), and the inline parts of
 * the accounting stock and the tag counters. The slow parts are in ext/.
 * ---------------------------------------------------------------------- */

static_assert((size_t)MAX_OBJS_PER_SLAB * sizeof(struct slabobj_ext) <= USLUB_BUCKET_MAX,
	      "the largest slab's array fits a bucket");

/* A separate zeroed array for @objects extensions (as an unsigned long,
 * for slab->obj_exts), or 0 if out of memory: from the internal bucket
 * caches (buckets.c), which never have extensions themselves. */
static unsigned long obj_exts_alloc(unsigned int objects)
{
	size_t bytes = (size_t)objects * sizeof(struct slabobj_ext);
	void *p = _uslub_bucket_alloc(bytes, 0);
	if (p)
		memset(p, 0, bytes);
	return (unsigned long)p;
}

static void obj_exts_free(unsigned long obj_exts, unsigned int objects)
{
	/* may run with thread_lock held (destroy, a fork child's flush) */
	_uslub_bucket_free_locked((void *)obj_exts, (size_t)objects * sizeof(struct slabobj_ext));
}

/* Does @slab keep its extensions inside its own memory? */
static bool slab_obj_exts_in_slab(const struct slab *slab, unsigned long obj_exts)
{
	uintptr_t a = (uintptr_t)slab_address(slab);
	return obj_exts >= a && obj_exts < a + (PAGE_SIZE << slab_order(slab));
}

/* A new slab's extensions, all zero: in its leftover or its objects'
 * padding when the cache's placement says so and this slab (maybe of the
 * fallback order) has the room, else a separate array (none if that
 * cannot be allocated: the slab's objects then go unaccounted). */
void _uslub_slab_init_obj_exts(struct kmem_cache *s, struct slab *slab, unsigned int objects,
			       bool nolock)
{
	char *base = slab_obj_base(s, slab);
	unsigned long exts = 0;
	switch (READ_ONCE(s->ext_placement)) {
	case USLUB_OBJ_EXT_PADDING:
		for (unsigned int i = 0; i < objects; i++)
			memset(base + (size_t)i * s->size + s->ext_offset, 0, sizeof(struct slabobj_ext));
		exts = (unsigned long)(base + s->ext_offset);
		break;
	case USLUB_OBJ_EXT_LEFTOVER: {
		size_t off = ALIGN_UP((size_t)objects * s->size, sizeof(void *));
		size_t len = (size_t)objects * sizeof(struct slabobj_ext);
		if (s->red_left_pad + off + len <= (PAGE_SIZE << slab_order(slab))) {
			memset(base + off, 0, len);
			exts = (unsigned long)(base + off);
			break;
		}
		/* a fallback-order slab without the room: an array */
		exts = nolock ? 0 : obj_exts_alloc(objects);
		break;
	}
	case USLUB_OBJ_EXT_ARRAY:
		/* any context (kmalloc_nolock): none, as when the allocation
		 * fails; the hooks take that (an on-demand array later) */
		exts = nolock ? 0 : obj_exts_alloc(objects);
		break;
	default:
		break;                  /* none, or on demand */
	}
	__atomic_store_n(&slab->obj_exts, exts, __ATOMIC_RELEASE);
}

/* On-demand caches: give @slab an array on its first accounted object. */
__cold struct slabobj_ext *_uslub_slab_obj_ext_alloc(struct kmem_cache *s, struct slab *slab,
						      const void *obj)
{
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	unsigned long exts = obj_exts_alloc(objects), old = 0;
	if (!exts)
		return NULL;
	if (!__atomic_compare_exchange_n(&slab->obj_exts, &old, exts, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		obj_exts_free(exts, objects);    /* another thread was first */
	return slab_obj_ext(s, slab, obj);
}

void _uslub_slab_free_obj_exts(struct kmem_cache *s, struct slab *slab)
{
	unsigned long exts = slab->obj_exts;
	if (exts && !slab_obj_exts_in_slab(slab, exts))
		obj_exts_free(exts, FC_OBJECTS(slab_counters(slab)));
	slab->obj_exts = 0;
}

/* The extension of object @idx of @slab, or NULL (for the reports). */
struct slabobj_ext *_uslub_slab_obj_ext_idx(struct kmem_cache *s, struct slab *slab,
					    unsigned int idx)
{
	return slab_obj_ext_idx(s, slab, idx);
}
