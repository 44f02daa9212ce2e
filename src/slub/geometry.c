/*
 * geometry.c — cache geometry (SLUB's calculate_sizes /
 * calculate_order): object layout, slab order, and where the per-object
 * extensions go.
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

bool _uslub_profiling;
bool _uslub_sampling;
size_t _uslub_sample_interval;

/* ------------------------------------------------------------------------
 * Cache geometry (SLUB's calculate_sizes / calculate_order)
 * ---------------------------------------------------------------------- */
static unsigned int calculate_alignment(unsigned int flags, size_t align, size_t size)
{
	size_t a = MAX(align, sizeof(void *));
	if (flags & USLUB_HWCACHE_ALIGN) {
		size_t ralign = USLUB_CACHELINE;
		while (size <= ralign / 2)
			ralign /= 2;
		a = MAX(a, ralign);
	}
	return (unsigned int)ALIGN_UP(a, sizeof(void *));
}

/* Lowest order in [min_order, max_order] wasting at most 1/fract of the
 * slab; max_order + 1 if none does. */
static unsigned int calc_slab_order(size_t size, unsigned int min_order,
				    unsigned int max_order, unsigned int fract)
{
	unsigned int order;
	for (order = min_order; order <= max_order; order++) {
		size_t bytes = PAGE_SIZE << order;
		if (bytes % size <= bytes / fract)
			break;
	}
	return order;
}

static int calculate_order(size_t size, unsigned int flags)
{
	unsigned int max_order = (unsigned int)MIN(_uslub_option(USLUB_OPT_MAX_ORDER), MAX_PAGE_ORDER);
	if (flags & SLAB_HIGH_ORDER)     /* mid-size classes: several objects per slab */
		max_order = MAX(max_order, SLAB_HIGH_ORDER_MAX);
	unsigned int min_order = (unsigned int)MIN(_uslub_option(USLUB_OPT_MIN_ORDER), max_order);
	size_t min_objects = (size_t)_uslub_option(USLUB_OPT_MIN_OBJECTS);

	if (!min_objects) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		min_objects = 4 * (fls_u((unsigned long)(cpus > 0 ? cpus : 1)) + 1);
	}
	size_t max_objects = (PAGE_SIZE << max_order) / size;
	min_objects = MAX(MIN(min_objects, max_objects), 1);
	min_order = MAX(min_order, get_order(min_objects * size));
	if ((PAGE_SIZE << min_order) / size > MAX_OBJS_PER_SLAB)
		return (int)get_order(size * MAX_OBJS_PER_SLAB) - 1;
	for (unsigned int fract = 16; fract > 1; fract /= 2) {
		unsigned int order = calc_slab_order(size, min_order, max_order, fract);
		if (order <= max_order)
			return (int)order;
	}
	unsigned int order = get_order(size);
	return order <= MAX_PAGE_ORDER ? (int)order : -1;
}

/* Objects of @size in a slab of @order. A left red zone (red_left_pad) is
 * part of each stride: object i's is the tail of stride i-1, object 0's
 * the slab's first bytes, so n objects still need n * size bytes. */
unsigned int _uslub_order_objects(unsigned int order, size_t size)
{
	return (unsigned int)MIN((PAGE_SIZE << order) / size, MAX_OBJS_PER_SLAB);
}

/* Fill in the layout of @s; false if the object cannot fit a slab. */
bool _uslub_calculate_sizes(struct kmem_cache *s, size_t object_size, size_t align,
			    const struct uslub_cache_args *args)
{
	size_t size = ALIGN_UP(object_size, sizeof(void *));
	unsigned int dbg = s->debug & USLUB_DBG_PATHS ? s->debug : 0;
	s->align = calculate_alignment(s->flags, align, object_size);
	s->red_left_pad = s->track_offset = s->orig_size_offset = 0;
	if ((dbg & USLUB_DBG_Z) && size == object_size)
		size += sizeof(void *);      /* a right red zone of at least a word */
	if (dbg & (USLUB_DBG_Z | USLUB_DBG_P)) {
		/* poison fills the object and red zones frame it: the free
		 * pointer goes after the right red zone */
		s->offset = (unsigned int)size;
		size += sizeof(void *);
	} else if (args && args->use_freeptr_offset) {
		/* the caller keeps the free pointer inside the object */
		s->offset = args->freeptr_offset;
	} else if (s->ctor || (s->flags & USLUB_TYPESAFE_BY_RCU)) {
		/* the constructed state must survive, or (TYPESAFE_BY_RCU) a
		 * reader may still read a freed object: free pointer after it */
		s->offset = (unsigned int)size;
		size += sizeof(void *);
	} else {
		/* mid-object, away from the ends overflows tend to hit; never
		 * word 0, which holds the free mark (8-byte objects: the free
		 * pointer goes after the object) */
		s->offset = (unsigned int)ALIGN_DOWN(object_size / 2, sizeof(void *));
		if (!dbg && USLUB_FREE_MARK && !s->offset) {
			s->offset = sizeof(void *);
			size = MAX(size, 2 * sizeof(void *));
		}
	}
	s->free_mark_offset = 0;
	if (!dbg && USLUB_FREE_MARK && (s->ctor || (args && args->use_freeptr_offset) ||
					(s->flags & USLUB_TYPESAFE_BY_RCU))) {
		/* the free mark: word 0, or after the object where its
		 * contents must survive a free (ctor, a caller-placed free
		 * pointer); those caches' inline fast paths are off */
		s->free_mark_offset = (unsigned int)size;
		size += sizeof(void *);
	}
	if (dbg & USLUB_DBG_U) {
		s->track_offset = (unsigned int)size;
		size += 2 * sizeof(struct track);
	}
	if (dbg & USLUB_DBG_Z) {
		s->orig_size_offset = (unsigned int)size;
		size += sizeof(void *);
	}
	s->inuse = (unsigned int)size;
	size = ALIGN_UP(size, s->align);
	if (dbg & USLUB_DBG_Z) {
		/* the left red zone: the tail of the previous stride (of the
		 * slab's head for object 0), keeping objects aligned */
		s->red_left_pad = (unsigned int)ALIGN_UP(sizeof(void *), s->align);
		size += s->red_left_pad;
	}
	if (size > (PAGE_SIZE << MAX_PAGE_ORDER))
		return false;
	/* every alignment is a multiple of a word, so the stride is too:
	 * slab_free_mark() counts on objects * size being even */
	if (size % sizeof(void *))
		return false;
	int order = calculate_order(size, s->flags);
	if (order < 0)
		return false;
	s->size = (unsigned int)size;
	s->object_size = (unsigned int)object_size;
	s->order = (unsigned int)order;
	s->objects = _uslub_order_objects(s->order, size);
	s->min_order = get_order(size);
	if (s->min_order > s->order)
		s->min_order = s->order;
	s->min_objects_fallback = _uslub_order_objects(s->min_order, size);
	s->reciprocal_size = slab_reciprocal(size);
	s->div_magic = slab_div_magic(size);

	unsigned int lg = fls_u(size) - 1;
	s->min_partial = MIN(10u, MAX(5u, lg / 2));
	if (s->flags & SLAB_HIGH_ORDER)  /* big slabs: keep few empty ones */
		s->min_partial = 1;
	if (!_uslub_option(USLUB_OPT_CPU_PARTIAL))
		s->cpu_partial = 0;
	else if (size >= PAGE_SIZE)
		s->cpu_partial = 2;
	else if (size >= 1024)
		s->cpu_partial = 6;
	else if (size >= 256)
		s->cpu_partial = 13;
	else
		s->cpu_partial = 30;
	s->cpu_partial_slabs = (s->cpu_partial * 2 + s->objects - 1) / s->objects;
	return true;
}

/*
 * What one extension of a cache created with @flags holds (Linux 7.3's
 * smaller slabobj_ext): the words the cache can need, known at creation.
 * An objcg where the cache is accounted; a tag where profiling is exact
 * (every object tagged). Not a tag for sampled profiling in an accounted
 * cache: a sample is one object in hundreds of slabs, so an objcg-only
 * slab that gets one is widened (slub.h) rather than every object paying
 * a word. A cache with no vector at creation gets on-demand arrays, whose
 * layout is fixed here as well, for what can reach a plain cache: an
 * objcg (a USLUB_GFP_ACCOUNT allocation, in any mode) and, under sampled
 * profiling, a tag. SLAB_NO_OBJ_EXT: nothing.
 */
static unsigned int obj_ext_layout(unsigned int flags)
{
	if (flags & SLAB_NO_OBJ_EXT)
		return 0;
	unsigned int layout = 0;
	if (flags & USLUB_ACCOUNT)
		layout |= OBJ_EXT_OBJCG;
	if (_uslub_profiling)
		layout |= OBJ_EXT_TAG;
	if (!layout)            /* on demand */
		layout = OBJ_EXT_OBJCG | (_uslub_sampling ? OBJ_EXT_TAG : 0);
	return layout;
}

/*
 * Where the per-object extensions of @s go (seed 003), decided once for
 * its preferred slab order: the slab's leftover when an array of them fits
 * there (case 1), else each object's alignment padding when an extension
 * fits after the object's used bytes (case 2), else a separate array per
 * slab. A cache needs them when it is accounted or profiling is exact;
 * otherwise it has none until a USLUB_GFP_ACCOUNT allocation or a sample
 * asks (then arrays, on demand). Each has the words obj_ext_layout()
 * gives. One object charges its stride plus the extension bytes that live
 * outside the slab, and a word more where the layout has no objcg (a
 * widened slab keeps its objcg in an array: obj_ext.c).
 */
void _uslub_calculate_obj_ext(struct kmem_cache *s, unsigned int flags)
{
	const unsigned int layout = obj_ext_layout(flags);
	const unsigned int ext = OBJ_EXT_SIZE(layout);
	s->ext_layout = layout;
	s->ext_size = ext;
	s->ext_tag_off = OBJ_EXT_TAG_OFF(layout);
	s->ext_stride = ext;
	s->ext_offset = 0;
	s->ext_bytes = ext;
	s->hooks = 0;
	s->ext_placement = USLUB_OBJ_EXT_NONE;
	if (!(flags & SLAB_NO_OBJ_EXT)) {
		if (flags & USLUB_ACCOUNT)
			s->hooks |= HOOK_ACCOUNT;
		if (_uslub_profiling)
			s->hooks |= HOOK_PROFILE;
	}
	if (s->hooks) {
		size_t slab_bytes = PAGE_SIZE << s->order;
		size_t used = ALIGN_UP((size_t)s->objects * s->size, sizeof(void *));
		size_t pad_at = ALIGN_UP((size_t)s->inuse, sizeof(void *));
		if (s->red_left_pad + used + (size_t)s->objects * ext <= slab_bytes) {
			s->ext_placement = USLUB_OBJ_EXT_LEFTOVER;
			s->ext_bytes = 0;
		} else if (!(s->debug & USLUB_DBG_P) && pad_at + ext <= s->size - s->red_left_pad) {
			s->ext_placement = USLUB_OBJ_EXT_PADDING;
			s->ext_stride = s->size;
			s->ext_offset = (unsigned int)pad_at;
			s->ext_bytes = 0;
		} else {
			s->ext_placement = USLUB_OBJ_EXT_ARRAY;
		}
		s->fastpath_off |= FASTPATH_OFF_HOOKS;
	}
	s->charge = s->size + s->ext_bytes + (layout && !(layout & OBJ_EXT_OBJCG) ? sizeof(void *) : 0);
	/* the extension's address without a multiply where the layout
	 * allows: the lean hooked paths' free then loads it without waiting
	 * on the index's multiply chain */
	s->ext_shift = -1;
	if (s->ext_stride == s->size)
		s->ext_shift = 0;
	else if (ext && !(s->size & (s->size - 1)) && s->size >= ext)
		s->ext_shift = (int)(fls_u(s->size) - fls_u(ext));
}
