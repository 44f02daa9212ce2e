/*
 * Slab: the descriptor of one slab, overlaid on the page provider's head
 * page descriptor (as the kernel's struct slab overlays struct page), and
 * the one-word lock-free state it is updated through.
 *
 * The state word ("counters") packs what SLUB updates with one
 * cmpxchg_double {freelist, counters} into 64 bits, so every update is a
 * plain inline `lock cmpxchg` (no libatomic, no 16-byte atomics):
 *
 *   63        48 47   46      32 31      16 15       0
 *   +-----------+------+---------+----------+---------+
 *   |    tag    |frozen| objects |  inuse   | freelist|
 *   +-----------+------+---------+----------+---------+
 *
 *   freelist  index of the first free object (SLAB_FL_NONE: none); the rest
 *             of the chain is stored inside the free objects
 *   inuse     objects not on this freelist (allocated, or cached on a cpu
 *             freelist): inuse + |freelist chain| == objects
 *   objects   objects in the slab (<= 32767, the kernel's MAX_OBJS_PER_PAGE)
 *   frozen    the slab is some thread's cpu slab
 *   tag       incremented by every successful update (ABA guard)
 */
#ifndef USLUB_SLAB_H
#define USLUB_SLAB_H

#include "page/page.h"

struct kmem_cache;

struct slab {
	unsigned long __page_flags;          /* page.flags: PG_slab, PG_workingset */
	union {
		struct list_head slab_list;  /* node partial list (list_lock)     */
		struct slab *next;           /* cpu partial list (owner thread)   */
	};
	struct slab *__compound_head;
	uint64_t counters;                   /* the state word above (CAS only)   */
	struct kmem_cache *slab_cache;
	unsigned long obj_exts;              /* extension of object 0, or 0 (see
	                                        slub/object.h slab_obj_ext())     */
	unsigned long __unused[1];           /* slub: objects * size, generation */
};

#define SLAB_MATCH(pg, sl) \
	static_assert(offsetof(struct page, pg) == offsetof(struct slab, sl), #pg " overlays " #sl)
SLAB_MATCH(flags, __page_flags);
SLAB_MATCH(lru, slab_list);
SLAB_MATCH(compound_head, __compound_head);
#undef SLAB_MATCH
static_assert(sizeof(struct slab) == sizeof(struct page), "struct slab overlays struct page");

#define MAX_OBJS_PER_SLAB  32767u
#define SLAB_FL_NONE       0xffffu

#define FC_FREELIST(c) ((unsigned int)((c) & 0xffff))
#define FC_INUSE(c)    ((unsigned int)(((c) >> 16) & 0xffff))
#define FC_OBJECTS(c)  ((unsigned int)(((c) >> 32) & 0x7fff))
#define FC_FROZEN(c)   ((bool)(((c) >> 47) & 1))
#define FC_TAG(c)      ((uint64_t)(c) >> 48)

static __always_inline uint64_t fc_make(unsigned int freelist, unsigned int inuse,
					unsigned int objects, bool frozen)
{
	return (uint64_t)freelist | ((uint64_t)inuse << 16) |
	       ((uint64_t)objects << 32) | ((uint64_t)frozen << 47);
}

static __always_inline uint64_t slab_counters(const struct slab *slab)
{
	return __atomic_load_n(&slab->counters, __ATOMIC_ACQUIRE);
}

/*
 * Replace the state word @*old (as read) with @new (tag is filled in).
 * On failure *old holds the current word. Release orders the free pointer
 * written into the objects before the word publishes them; acquire lets the
 * taker of a freelist read the chain.
 */
static __always_inline bool slab_update(struct slab *slab, uint64_t *old, uint64_t new)
{
	new = (new & ((1ull << 48) - 1)) | ((FC_TAG(*old) + 1) << 48);
	return __atomic_compare_exchange_n(&slab->counters, old, new, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/*
 * Object index without a division: idx = (off * ceil(2^42 / size)) >> 42.
 * Exact for off < 2^21 (a 2 MiB slab) and size < 2^21: the error of the
 * reciprocal is below size, so off * error < 2^42.
 */
#define SLAB_RECIPROCAL_SHIFT 42
static __always_inline uint64_t slab_reciprocal(size_t size)
{
	return ((1ull << SLAB_RECIPROCAL_SHIFT) + size - 1) / size;
}
static __always_inline unsigned int slab_offset_to_index(uintptr_t off, uint64_t reciprocal)
{
	return (unsigned int)((off * reciprocal) >> SLAB_RECIPROCAL_SHIFT);
}

/*
 * Is @off (< 2^32) a multiple of @size? With magic = 2^64 / size rounded
 * up (slab_div_magic), off % size == 0 exactly when off * magic, modulo
 * 2^64, is below magic (Lemire, Kaser and Kurz, "Faster remainder by
 * direct computation", 2019: exact for 32-bit off and size). One multiply
 * and one compare, where the index and back take two multiplies.
 */
static __always_inline uint64_t slab_div_magic(size_t size)
{
	return UINT64_MAX / size + 1;
}
static __always_inline bool slab_offset_is_start(uint64_t off, uint64_t magic)
{
	return off * magic < magic;
}

static __always_inline struct page *slab_page(struct slab *slab)
{
	return (struct page *)slab;
}

static __always_inline struct slab *page_slab(struct page *page)
{
	return (struct slab *)page;
}

/* First byte of the slab's memory, computed from where its descriptor
 * sits in the segment's descriptor array (page.h): no load. */
static __always_inline void *slab_address(const struct slab *slab)
{
	uintptr_t d = (uintptr_t)slab;
	return (void *)((d & ~(SEGMENT_SIZE - 1)) +
			((d & (SEGMENT_SIZE - 1)) << (PAGE_SHIFT - 6)));
}
static_assert(sizeof(struct page) == 1u << 6, "slab_address(): 64-byte descriptors");

/* @p - slab_address(@slab) for @p inside the slab, in 32-bit arithmetic:
 * both lie in one segment, and the descriptor's offset in it times 64 is
 * the slab's, so the difference modulo the segment size is exact (and a
 * 32-bit result compares with the slab word's objects bytes without an
 * extension). */
static __always_inline uint32_t slab_offset32(const struct slab *slab, const void *p)
{
	return ((uint32_t)(uintptr_t)p - ((uint32_t)(uintptr_t)slab << (PAGE_SHIFT - 6))) &
	       (uint32_t)(SEGMENT_SIZE - 1);
}

static __always_inline int slab_nid(const struct slab *slab)
{
	return page_to_nid((const struct page *)slab);
}

static __always_inline unsigned int slab_order(const struct slab *slab)
{
	return page_order((const struct page *)slab);
}

/* The slab holding @p, or NULL when p is not inside any live slab. */
static __always_inline struct slab *virt_to_slab(const void *p)
{
	struct page *page = _uslub_virt_to_head_page(p);
	if (unlikely(!page) || unlikely(!(READ_ONCE(page->flags) & PG_slab)))
		return NULL;
	return page_slab(page);
}

/*
 * The free fast word: every page descriptor of a live slab (head and
 * tails) has PG_slab_page, and holds the slab's cache and its
 * objects-bytes-and-generation word (slub's __unused[0]: object.h
 * slab_objects_bytes(), slab_free_mark()) at the same offsets: the head
 * in struct slab, each tail a copy in owner[] (unused by a slab's tails).
 * So free(), kfree() and the lookups read the one descriptor line of the
 * object's page for "a page of a live slab", the slab (compound_head),
 * its cache and its mark, with no hop to the head's line:
 *   page->flags & PG_slab_page  =>  page_slab_cache(page) ==
 *       slab_of(page)->slab_cache  and  page_slab_word(page) ==
 *       slab_of(page)->__unused[0]
 * Set (copies first) before the head's PG_slab is published (new_slab),
 * cleared before the pages go back (discard_slab; the page layer zeroes
 * every flags word of a freed run too). Sampled profiling clears and sets
 * PG_slab_page alone (cache/sample.c): the copies stay.
 */
#define PAGE_OWNER_CACHE 1
#define PAGE_OWNER_WORD  3
static_assert(offsetof(struct page, owner[PAGE_OWNER_CACHE]) == offsetof(struct slab, slab_cache),
	      "a tail's copy of slab_cache overlays the head's");
static_assert(offsetof(struct page, owner[PAGE_OWNER_WORD]) == offsetof(struct slab, __unused[0]),
	      "a tail's copy of the slab word overlays the head's");

static __always_inline struct kmem_cache *page_slab_cache(const struct page *page)
{
	return (struct kmem_cache *)page->owner[PAGE_OWNER_CACHE];
}

static __always_inline uint64_t page_slab_word(const struct page *page)
{
	return page->owner[PAGE_OWNER_WORD];
}

static __always_inline void slab_set_fast_word(struct slab *slab)
{
	struct page *page = slab_page(slab);
	for (unsigned int i = 1; i < (1u << page_order(page)); i++) {
		WRITE_ONCE(page[i].owner[PAGE_OWNER_CACHE], (unsigned long)slab->slab_cache);
		WRITE_ONCE(page[i].owner[PAGE_OWNER_WORD], slab->__unused[0]);
		WRITE_ONCE(page[i].flags, page[i].flags | PG_slab_page);
	}
	WRITE_ONCE(page->flags, page->flags | PG_slab_page);
}

static __always_inline void slab_clear_fast_word(struct slab *slab)
{
	struct page *page = slab_page(slab);
	WRITE_ONCE(page->flags, page->flags & ~PG_slab_page);
	for (unsigned int i = 1; i < (1u << page_order(page)); i++)
		WRITE_ONCE(page[i].flags, page[i].flags & ~PG_slab_page);
}

/* The node-partial flag (seed 002's PG_workingset role); list_lock held. */
static __always_inline bool slab_test_node_partial(const struct slab *slab)
{
	return READ_ONCE(slab->__page_flags) & PG_workingset;
}
static __always_inline void slab_set_node_partial(struct slab *slab)
{
	WRITE_ONCE(slab->__page_flags, slab->__page_flags | PG_workingset);
}
static __always_inline void slab_clear_node_partial(struct slab *slab)
{
	WRITE_ONCE(slab->__page_flags, slab->__page_flags & ~PG_workingset);
}

#endif /* USLUB_SLAB_H */
