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
 * Per-object extensions (seed 003): their storage for all three
 * placements and the on-demand arrays, each extension of the cache's
 * layout (struct slabobj_ext in slub.h), and the widening of a slab whose
 * layout lacks a word (struct obj_ext_wide, slub/object.h). The
 * accessors are in slub/object.h; the slow parts of the hooks in ext/.
 * ---------------------------------------------------------------------- */

static_assert((size_t)MAX_OBJS_PER_SLAB * sizeof(struct slabobj_ext) <= USLUB_BUCKET_MAX,
	      "the largest slab's array fits a bucket");
static_assert(sizeof(struct obj_ext_wide) + (size_t)MAX_OBJS_PER_SLAB * sizeof(void *) <=
	      USLUB_BUCKET_MAX, "the largest slab's widening fits a bucket");

/* @bytes zeroed bytes from the internal bucket caches (buckets.c), which
 * never have extensions themselves, as an unsigned long for
 * slab->obj_exts; 0 if out of memory. */
static unsigned long obj_exts_alloc(size_t bytes)
{
	void *p = _uslub_bucket_alloc(bytes, 0);
	if (p)
		memset(p, 0, bytes);
	return (unsigned long)p;
}

static void obj_exts_free(unsigned long p, size_t bytes)
{
	/* may run with thread_lock held (destroy, a fork child's flush) */
	_uslub_bucket_free_locked((void *)p, bytes);
}

static size_t wide_bytes(unsigned int objects)
{
	return sizeof(struct obj_ext_wide) + (size_t)objects * sizeof(void *);
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
	const size_t ext = s->ext_size;
	unsigned long exts = 0;
	switch (READ_ONCE(s->ext_placement)) {
	case USLUB_OBJ_EXT_PADDING:
		for (unsigned int i = 0; i < objects; i++)
			memset(base + (size_t)i * s->size + s->ext_offset, 0, ext);
		exts = (unsigned long)(base + s->ext_offset);
		break;
	case USLUB_OBJ_EXT_LEFTOVER: {
		size_t off = ALIGN_UP((size_t)objects * s->size, sizeof(void *));
		size_t len = (size_t)objects * ext;
		if (s->red_left_pad + off + len <= (PAGE_SIZE << slab_order(slab))) {
			memset(base + off, 0, len);
			exts = (unsigned long)(base + off);
			break;
		}
		/* a fallback-order slab without the room: an array */
		exts = nolock ? 0 : obj_exts_alloc((size_t)objects * ext);
		break;
	}
	case USLUB_OBJ_EXT_ARRAY:
		/* any context (kmalloc_nolock): none, as when the allocation
		 * fails; the hooks take that (an on-demand array later) */
		exts = nolock ? 0 : obj_exts_alloc((size_t)objects * ext);
		break;
	default:
		break;                  /* none, or on demand */
	}
	__atomic_store_n(&slab->obj_exts, exts, __ATOMIC_RELEASE);
}

/*
 * The fields of @obj of @slab, with a word for each field of @need
 * (OBJ_EXT_*) where memory allows: @slab's array of the cache's layout
 * if it has no extensions yet (an on-demand cache's first charged or
 * sampled object in the slab, or an array that could not be allocated
 * with the slab), then, where the layout lacks a field of @need, the
 * slab widened with a word per object for it. Racing threads: the first
 * CAS wins, the others free theirs. Not from any context (it allocates).
 */
__cold struct obj_ext _uslub_slab_obj_ext_alloc(struct kmem_cache *s, struct slab *slab,
						const void *obj, unsigned int need)
{
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	unsigned long old = __atomic_load_n(&slab->obj_exts, __ATOMIC_ACQUIRE);
	if (!old) {
		/* stride ext_size: never the padding placement, whose slabs
		 * always have their extensions */
		size_t bytes = (size_t)objects * s->ext_size;
		unsigned long exts = obj_exts_alloc(bytes);
		if (!exts)
			return slab_obj_ext(s, slab, obj);
		if (__atomic_compare_exchange_n(&slab->obj_exts, &old, exts, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			old = exts;
		else
			obj_exts_free(exts, bytes);    /* another thread was first */
	}
	if ((need & ~s->ext_layout) && !(old & OBJ_EXTS_WIDENED)) {
		unsigned long w = obj_exts_alloc(wide_bytes(objects));
		if (w) {
			((struct obj_ext_wide *)w)->primary = old;
			if (!__atomic_compare_exchange_n(&slab->obj_exts, &old, w | OBJ_EXTS_WIDENED,
							 false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				obj_exts_free(w, wide_bytes(objects));
		}
	}
	return slab_obj_ext(s, slab, obj);
}

void _uslub_slab_free_obj_exts(struct kmem_cache *s, struct slab *slab)
{
	unsigned long exts = slab->obj_exts;
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	if (exts & OBJ_EXTS_WIDENED) {
		struct obj_ext_wide *w = (struct obj_ext_wide *)(exts & ~OBJ_EXTS_WIDENED);
		exts = w->primary;
		obj_exts_free((unsigned long)w, wide_bytes(objects));
	}
	if (exts && !slab_obj_exts_in_slab(slab, exts))
		obj_exts_free(exts, (size_t)objects * s->ext_size);
	slab->obj_exts = 0;
}

/* The fields of object @idx of @slab (for the reports). */
struct obj_ext _uslub_slab_obj_ext_idx(struct kmem_cache *s, struct slab *slab, unsigned int idx)
{
	return slab_obj_ext_idx(s, slab, idx);
}
