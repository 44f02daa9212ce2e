/*
 * Objects of a slab: free pointers (plain and hardened), the free mark
 * (the double-free check), and index <-> object arithmetic. Included by
 * slub/slub.h; the types are there.
 */
#ifndef USLUB_SLUB_OBJECT_H
#define USLUB_SLUB_OBJECT_H

#include "slub/slub.h"

/* ------------------------------------------------------------------------
 * Objects and free pointers
 *
 * Freelist hardening (CONFIG_SLAB_FREELIST_HARDENED; per cache with
 * USLUB_HARDENED_FREELIST, for every cache with USLUB_FREELIST_HARDENED=1):
 * the free pointer stored in a free object is  fp ^ s->fp_secret ^
 * bswap(&slot).  A stray write or an
 * attacker without the per-cache secret cannot plant a chosen pointer, and
 * a corrupted value decodes to an address outside the slab. Every pointer
 * taken from a chain is checked (object start of the expected slab) before
 * it is handed out or followed: see cpu_freelist_ok() and walk_ok().
 * ---------------------------------------------------------------------- */
static __always_inline bool cache_hardened(const struct kmem_cache *s)
{
	return unlikely(s->flags & SLAB_HARDENED);
}

/*
 * Words of uslub's metadata inside objects (free pointers, the free mark):
 * read and written while the object is free, so under AddressSanitizer
 * while it is poisoned (kasan.c). In a library built with ASan these go
 * through two uninstrumented functions (the kernel's kasan_reset_tag /
 * metadata_access_enable spots); otherwise they are plain accesses.
 */
#ifdef USLUB_ASAN_BUILD
__internal uintptr_t _uslub_meta_load(const void *p);
__internal void _uslub_meta_store(void *p, uintptr_t v);
#define meta_load(p)     _uslub_meta_load(p)
#define meta_store(p, v) _uslub_meta_store((p), (uintptr_t)(v))
#else
#define meta_load(p)     (*(const uintptr_t *)(p))
#define meta_store(p, v) (*(uintptr_t *)(p) = (uintptr_t)(v))
#endif

static __always_inline uintptr_t fp_mask(const struct kmem_cache *s, const void *slot)
{
	return s->fp_secret ^ __builtin_bswap64((uint64_t)(uintptr_t)slot);
}

/* A cache without hardening pays one predicted branch (off the load's
 * dependency chain) and no arithmetic. */
/* The fast paths' accessors: only for caches without hardening (their
 * fast paths are off otherwise). */
static __always_inline void *get_freepointer_raw(const struct kmem_cache *s, void *obj)
{
	return (void *)meta_load((char *)obj + s->offset);
}

static __always_inline void set_freepointer_raw(const struct kmem_cache *s, void *obj, void *fp)
{
	meta_store((char *)obj + s->offset, fp);
}

static __always_inline void *get_freepointer(const struct kmem_cache *s, void *obj)
{
	uintptr_t *slot = (uintptr_t *)((char *)obj + s->offset);
	if (cache_hardened(s))
		return (void *)(meta_load(slot) ^ fp_mask(s, slot));
	return (void *)meta_load(slot);
}

/* get_freepointer() with the cache's fields passed in (see below). */
static __always_inline void *get_freepointer_as(uintptr_t offset, bool hardened, uintptr_t secret,
						void *obj)
{
	uintptr_t *slot = (uintptr_t *)((char *)obj + offset);
	uintptr_t v = meta_load(slot);
	if (hardened)
		v ^= secret ^ __builtin_bswap64((uint64_t)(uintptr_t)slot);
	return (void *)v;
}

/* set_freepointer() with the cache's fields passed in (a loop whose
 * stores may alias the cache keeps them in registers): @secret is
 * s->fp_secret, @hardened cache_hardened(s). */
static __always_inline void set_freepointer_as(uintptr_t offset, bool hardened, uintptr_t secret,
					       void *obj, void *fp)
{
	uintptr_t *slot = (uintptr_t *)((char *)obj + offset);
	if (hardened)
		meta_store(slot, (uintptr_t)fp ^ secret ^ __builtin_bswap64((uint64_t)(uintptr_t)slot));
	else
		meta_store(slot, fp);
}

static __always_inline void set_freepointer(const struct kmem_cache *s, void *obj, void *fp)
{
	uintptr_t *slot = (uintptr_t *)((char *)obj + s->offset);
	if (cache_hardened(s))
		meta_store(slot, (uintptr_t)fp ^ fp_mask(s, slot));
	else
		meta_store(slot, fp);
}

/* ------------------------------------------------------------------------
 * The free mark: double frees caught wherever they land
 *
 * Every free by a user (single, bulk, kfree, free) of an object of a cache
 * without slub_debug tests the word at free_mark_offset against its slab's
 * mark, then writes the mark; every path that hands an object to a user
 * clears it, except for objects of a slab that never handed them out. So
 *
 *   object holds slab_free_mark(s, slab)  <=>  it was freed by a user and
 *       not handed out since (or the program wrote the secret there
 *       itself, which it can only read out of freed memory)
 *
 * and a second free of an object wherever the first one put it (a cpu
 * freelist, any sheaf, the barn, a slab's freelist, a remote thread's
 * cache) is refused before it could be handed out twice. The word never
 * overlaps the free pointer; internal moves between the per-CPU layer,
 * the barn and the slabs leave it alone.
 *
 * The mark is the cache's secret mixed with the slab's generation (a
 * global 32-bit count of slabs made, in the slab descriptor): a new slab's
 * objects may hold anything, marks of an earlier slab on the same pages
 * included, and none of it matches the new slab's mark. So objects a new
 * slab hands to a user directly (deferred freelist construction, seed 000)
 * need no clearing and stay untouched: bulk allocation from new slabs
 * writes nothing into them. The objects it links into a freelist or hands
 * to a sheaf are free, and get the mark (with their free pointer): every
 * free object holds its slab's mark. A cpu slot caches its cpu slab's.
 * ---------------------------------------------------------------------- */
#ifdef USLUB_NO_FREE_MARK
/* Only for `make bench`'s measure of what the check costs (B-dfree): the
 * same core without it. Never installed. */
#define USLUB_FREE_MARK 0
#else
#define USLUB_FREE_MARK 1
#endif

/* slab->__unused[0]: objects * size of this slab (low 32 bits) and its
 * generation (high 32 bits); immutable while it lives. */
#define slab_objects_bytes(slab) ((uint32_t)(slab)->__unused[0])

/* The free mark of @slab's objects: never 0, a live object's value. The
 * descriptor word holds the generation in its high half, so two slabs'
 * marks differ there (one load and an xor: no multiply on the free path).
 * Bit 0 is 1: s->free_mark has it, and the descriptor's low half
 * (objects * size, size a multiple of 8: geometry.c checks) never does. */
static __always_inline uintptr_t slab_free_mark(const struct kmem_cache *s,
						 const struct slab *slab)
{
	return s->free_mark ^ (uintptr_t)slab->__unused[0];
}

static __always_inline uintptr_t *free_mark_slot(const struct kmem_cache *s, void *obj)
{
	return (uintptr_t *)((char *)obj + s->free_mark_offset);
}

/* Handing @obj out: it is live from now on. */
static __always_inline void free_mark_clear(const struct kmem_cache *s, void *obj)
{
	if (USLUB_FREE_MARK)
		meta_store(free_mark_slot(s, obj), 0);
}

/* Is @obj (a valid object of a slab whose mark is @mark) already free? */
static __always_inline bool free_mark_test(const struct kmem_cache *s, void *obj, uintptr_t mark)
{
	return USLUB_FREE_MARK && unlikely(meta_load(free_mark_slot(s, obj)) == mark);
}

/* A user frees @obj (checked with free_mark_test()). */
static __always_inline void free_mark_set(const struct kmem_cache *s, void *obj, uintptr_t mark)
{
	if (USLUB_FREE_MARK)
		meta_store(free_mark_slot(s, obj), mark);
}

/*
 * The inline fast paths' versions: the mark at word 0, a constant (a cache
 * whose mark is elsewhere has FASTPATH_OFF_MARK, so it never gets here),
 * and the cpu slot's c->free_mark. Measured on B1 (AMD EPYC VM), an offset
 * loaded from the cache made the check cost three times as much: the
 * store's address then waits for that load as well as for the object's.
 */
static __always_inline void free_mark_clear0(void *obj)
{
	if (USLUB_FREE_MARK)
		meta_store(obj, 0);
}

static __always_inline bool free_mark_test0(void *obj, uintptr_t mark)
{
	return USLUB_FREE_MARK && unlikely(meta_load(obj) == mark);
}

static __always_inline void free_mark_set0(void *obj, uintptr_t mark)
{
	if (USLUB_FREE_MARK)
		meta_store(obj, mark);
}

/* Object 0 of @slab: the slab's first byte, after a left red zone when the
 * cache has one (red_left_pad; the stride includes it, so object i's left
 * red zone is the tail of stride i-1). */
static __always_inline char *slab_obj_base(const struct kmem_cache *s, const struct slab *slab)
{
	return (char *)slab_address(slab) + s->red_left_pad;
}

static __always_inline unsigned int obj_to_index(const struct kmem_cache *s,
						 const struct slab *slab, const void *obj)
{
	return slab_offset_to_index((uintptr_t)obj - (uintptr_t)slab_obj_base(s, slab),
				    s->reciprocal_size);
}

static __always_inline void *index_to_obj(const struct kmem_cache *s,
					  const struct slab *slab, unsigned int idx)
{
	return slab_obj_base(s, slab) + (size_t)idx * s->size;
}

static __always_inline void *fl_ptr(const struct kmem_cache *s, const struct slab *slab,
				    unsigned int idx)
{
	return idx == SLAB_FL_NONE ? NULL : index_to_obj(s, slab, idx);
}

static __always_inline unsigned int fl_idx(const struct kmem_cache *s,
					   const struct slab *slab, const void *obj)
{
	return obj ? obj_to_index(s, slab, obj) : SLAB_FL_NONE;
}


/* Is @x the start of an object of @slab? Two multiplies, no division. */
static __always_inline bool obj_is_valid(const struct kmem_cache *s,
					 const struct slab *slab, const void *x)
{
	uintptr_t off = (uintptr_t)x - (uintptr_t)slab_obj_base(s, slab);
	if (unlikely(off >= slab_objects_bytes(slab)))
		return false;
	return (uintptr_t)obj_to_index(s, slab, x) * s->size == off;
}

/*
 * The accessors of the per-object extension (struct slabobj_ext and the
 * layouts in slub.h): every read and write of an objcg or a tag goes
 * through one of them, which alone know the stride, the word offsets and
 * a widened slab's extra words.
 *
 * struct obj_ext: where one object's two fields are, NULL for a field its
 * slab has no word for (the cache's layout lacks it and the slab is not
 * widened with it, or the slab has no extensions at all).
 */
struct obj_ext {
	struct obj_cgroup **objcg;
	struct uslub_alloc_tag **tag;
};

/* A widened slab's extension storage (slab->obj_exts = OBJ_EXTS_WIDENED |
 * its address; from the bucket caches, obj_ext.c): where the slab's own
 * extensions are (the cache's layout, unmoved: a writer that loaded the
 * old obj_exts still writes the right word), then one word per object
 * for the field the cache's layout lacks (a tag where the layout is
 * objcg-only, an objcg where it is tag-only). */
struct obj_ext_wide {
	unsigned long primary;       /* extension 0 of the cache's layout     */
	void *extra[];               /* extra[i]: object i's missing field    */
};

/* Object @idx's fields from obj_exts value @v (0: none). */
static __always_inline struct obj_ext obj_ext_of(const struct kmem_cache *s, unsigned long v,
						 unsigned int idx)
{
	struct obj_ext e = { NULL, NULL };
	unsigned int layout = s->ext_layout;
	if (!v)
		return e;
	if (unlikely(v & OBJ_EXTS_WIDENED)) {
		struct obj_ext_wide *w = (struct obj_ext_wide *)(v & ~OBJ_EXTS_WIDENED);
		void **extra = &w->extra[idx];
		if (layout & OBJ_EXT_OBJCG)
			e.tag = (struct uslub_alloc_tag **)extra;
		else
			e.objcg = (struct obj_cgroup **)extra;
		v = w->primary;
	}
	char *p = (char *)v + (uintptr_t)idx * s->ext_stride;
	if (layout & OBJ_EXT_OBJCG)
		e.objcg = (struct obj_cgroup **)p;
	if (layout & OBJ_EXT_TAG)
		e.tag = (struct uslub_alloc_tag **)(p + s->ext_tag_off);
	return e;
}

static __always_inline struct obj_ext slab_obj_ext_idx(const struct kmem_cache *s,
						       const struct slab *slab, unsigned int idx)
{
	return obj_ext_of(s, __atomic_load_n(&slab->obj_exts, __ATOMIC_ACQUIRE), idx);
}

static __always_inline struct obj_ext slab_obj_ext(const struct kmem_cache *s,
						   const struct slab *slab, const void *obj)
{
	return slab_obj_ext_idx(s, slab, obj_to_index(s, slab, obj));
}

/* The fields' values (NULL where there is no word). */
static __always_inline struct obj_cgroup *obj_ext_objcg(struct obj_ext e)
{
	return e.objcg ? READ_ONCE(*e.objcg) : NULL;
}

static __always_inline struct uslub_alloc_tag *obj_ext_tag(struct obj_ext e)
{
	return e.tag ? READ_ONCE(*e.tag) : NULL;
}

/*
 * The lean hooked paths' accessor (cache/internal.h): the extension of
 * the object at @off from @slab's first object (an object start, index
 * @idx), from obj_exts @base > 0 (not widened), for a cache whose layout
 * is the compile-time @layout (_uslub_set_pcs_hooks() gives a lean path
 * only to such a cache): by shift where the cache allows
 * (kmem_cache.ext_shift), else index * stride; the words at the layout's
 * constant offsets, so no offset is loaded.
 */
static __always_inline char *obj_ext_at(const struct kmem_cache *s, unsigned long base,
					uintptr_t off, unsigned int idx)
{
	int sh = s->ext_shift;
	if (likely(sh >= 0))
		return (char *)(base + (off >> sh));
	return (char *)(base + (uintptr_t)idx * s->ext_stride);
}

static __always_inline struct obj_cgroup **obj_ext_at_objcg(char *ext, const unsigned int layout)
{
	(void)layout;           /* objcg is the first word of every layout having it */
	return (struct obj_cgroup **)ext;
}

static __always_inline struct uslub_alloc_tag **obj_ext_at_tag(char *ext, const unsigned int layout)
{
	return (struct uslub_alloc_tag **)(ext + OBJ_EXT_TAG_OFF(layout));
}

/* Every chain walk checks each pointer before following it: an object
 * start of @slab, or NULL. */
static __always_inline bool walk_ok(const struct kmem_cache *s, const struct slab *slab,
				    const void *p)
{
	return !p || obj_is_valid(s, slab, p);
}

#endif /* USLUB_SLUB_OBJECT_H */
