/*
 * Page provider: naturally aligned runs of 2^order 4 KiB pages carved out of
 * 4 MiB segments, which are carved out of large mmap reservations.
 *
 *   segment (4 MiB, 4 MiB aligned)
 *   +---------------------------+----------------------------------------+
 *   | pages 0..15: descriptors  | pages 16..1023: handed out in buddy    |
 *   | struct page[1024] (64 B)  | blocks of order 0..9                   |
 *   | (desc[0] is the segment   |                                        |
 *   |  header itself)           |                                        |
 *   +---------------------------+----------------------------------------+
 *
 * The descriptor of the page holding address p is
 *   ((struct segment *)(p & ~(SEGMENT_SIZE-1)))->pages[(p >> 12) & 1023]
 * — O(1), no lock, and outside the memory it describes (out of band, as the
 * kernel's struct page). "Is p ours" is one bit per segment in a static
 * bitmap, set before any page of the segment is handed out and cleared
 * before the segment is unmapped (after it stayed empty USLUB_DECAY_MS, or
 * at trim: see "Unmapping" in page.c for what a racing invalid free sees).
 *
 * Freed memory goes back to the OS after USLUB_DECAY_MS, by the background
 * purge thread "uslub-purge" (started lazily, also while the program makes
 * no call: USLUB_BACKGROUND_THREAD=1 in any program, 2 = auto, the
 * default, once the program has a thread of its own) or by the
 * allocator's own calls past a deadline (a single-threaded program in
 * auto mode, or 0); at once with uslub_trim(). The contract is at the top
 * of page.c.
 *
 * Locks: one mutex per node (buddy free lists, segment lists, the empty
 * list), reserve_lock (the reservation cursor), taken in that order, and
 * purge_lock (the thread's condition; innermost, taken under any lock).
 */
#ifndef USLUB_PAGE_H
#define USLUB_PAGE_H

#include "base/base.h"

#define PAGE_SHIFT        12
#define PAGE_SIZE         (1ul << PAGE_SHIFT)
#define SEGMENT_SHIFT     22
#define SEGMENT_SIZE      (1ul << SEGMENT_SHIFT)
#define SEGMENT_PAGES     (SEGMENT_SIZE >> PAGE_SHIFT)          /* 1024 */
#define SEGMENT_META_PAGES 16                                   /* 64 KiB of descriptors */
#define SEGMENT_USABLE_PAGES (SEGMENT_PAGES - SEGMENT_META_PAGES)
#define MAX_PAGE_ORDER    9      /* the largest aligned block in [16, 1024) */
#define MAX_NUMNODES      64

/* page->flags */
#define PG_head        (1ul << 0)   /* first page of an allocated run     */
#define PG_tail        (1ul << 1)   /* other pages of an allocated run    */
#define PG_buddy       (1ul << 2)   /* first page of a free buddy block   */
#define PG_slab        (1ul << 3)   /* run is a slab (set by the slab layer) */
#define PG_workingset  (1ul << 4)   /* slab is on a node partial list     */
#define PG_isolated    (1ul << 5)   /* slab isolated after a corruption
                                       (slub_debug; set by the slab layer) */
#define PG_large       (1ul << 6)   /* run is one kmalloc allocation (set by
                                       the kmalloc layer; cleared by free) */
#define PG_clean       (1ul << 7)   /* free block whose pages were returned to
                                       the OS (MADV_DONTNEED) since last used */
#define PG_ORDER_SHIFT 8
#define PG_ORDER_MASK  (0xfful << PG_ORDER_SHIFT)
#define PG_slab_page   (1ul << 16)  /* every page of a live slab, head and
                                       tails (set by the slab layer), whose
                                       descriptor holds its slab's cache and
                                       word (slab/slab.h: the fast word)   */

/*
 * One descriptor per 4 KiB page. The layer above overlays its own type on
 * the words marked "owner" (struct slab does; see slab/slab.h).
 * Invariants: for every page of an allocated run, compound_head == the run's
 * head descriptor; a free block's head has PG_buddy and its order.
 */
struct page {
	unsigned long flags;
	struct list_head lru;            /* buddy free list / owner's lists */
	struct page *compound_head;
	unsigned long owner[4];
};
static_assert(sizeof(struct page) == 64, "struct page is one cache line");

/* The segment header lives in pages[0], a descriptor no page ever uses.
 * Its word over compound_head is always 0, as is compound_head of the
 * other descriptors of the metadata pages (pages[1..15], never handed
 * out): so _uslub_virt_to_head_page() needs no "is it a descriptor page"
 * test, the NULL compound_head says it. */
struct segment_hdr {
	uint32_t magic;
	int node;
	unsigned int free_pages;         /* free usable pages               */
	uint64_t empty_since_ns;
	unsigned long no_head;           /* over pages[0].compound_head: 0  */
	struct list_head empty_link;     /* on node->empty when fully free  */
	struct list_head seg_link;       /* on node->segments               */
};
static_assert(sizeof(struct segment_hdr) <= sizeof(struct page), "header fits pages[0]");

static_assert(offsetof(struct segment_hdr, no_head) == offsetof(struct page, compound_head),
	      "the header's word over compound_head");

struct segment {
	union {
		struct segment_hdr hdr;
		struct page pages[SEGMENT_PAGES];
	};
};
static_assert(sizeof(struct segment) <= SEGMENT_META_PAGES * PAGE_SIZE, "descriptors fit the meta pages");

static __always_inline struct segment *ptr_segment(const void *p)
{
	return (struct segment *)((uintptr_t)p & ~(SEGMENT_SIZE - 1));
}

static __always_inline struct page *virt_to_page(const void *p)
{
	return &ptr_segment(p)->pages[((uintptr_t)p >> PAGE_SHIFT) & (SEGMENT_PAGES - 1)];
}

static __always_inline void *page_address(const struct page *page)
{
	struct segment *seg = ptr_segment(page);
	return (char *)seg + ((size_t)(page - seg->pages) << PAGE_SHIFT);
}

static __always_inline unsigned int page_order(const struct page *page)
{
	return (unsigned int)((page->flags & PG_ORDER_MASK) >> PG_ORDER_SHIFT);
}

static __always_inline int page_to_nid(const struct page *page)
{
	return ptr_segment(page)->hdr.node;
}

/* Ownership: one byte per possible 4 MiB segment of the 47-bit user
 * address space (Linux maps nothing above it without a hint, even with
 * 5-level tables; reserve_segment() refuses a reservation that ends above
 * it): 32 MiB of .bss, of which only the pages that cover segments are
 * ever touched. A byte, not a bit: the test is one compare of memory, and
 * the range test of the index is also the canonical-address test. */
#define OWNED_SEGMENTS (1ul << (47 - SEGMENT_SHIFT))
__internal extern uint8_t _uslub_owned_segments[OWNED_SEGMENTS];

static __always_inline bool _uslub_owns_segment(const void *p)
{
	uintptr_t i = (uintptr_t)p >> SEGMENT_SHIFT;
	if (unlikely(i >= OWNED_SEGMENTS))
		return false;
#ifdef USLUB_TSAN
	return READ_ONCE(_uslub_owned_segments[i]) != 0;
#else
	/* a plain load, folded into one compare of memory; a byte changes
	 * only while no object of its segment is live (a race with it is a
	 * free of a pointer that was never valid, refused either way) */
	return _uslub_owned_segments[i] != 0;
#endif
}

/*
 * The head page of the run holding p, or NULL if p is not inside a run
 * handed out by the provider (foreign, segment metadata, or a free block).
 */
static __always_inline struct page *_uslub_virt_to_head_page(const void *p)
{
	if (unlikely(!_uslub_owns_segment(p)))
		return NULL;
	/* the descriptors themselves: compound_head 0 (struct segment_hdr) */
	return READ_ONCE(virt_to_page(p)->compound_head);
}

/* Allocate 2^order pages on @node; NULL if out of memory. When no
 * segment can be mapped (RLIMIT_AS) it drops the node lock, gives back
 * what uslub keeps unused (_uslub_page_trim(): every node lock in turn,
 * the purge callbacks' locks, reserve_lock) and tries once more: the
 * caller holds no lock ranked at or above RANK_PAGE_NODE. */
__internal struct page *_uslub_alloc_pages(unsigned int order, int node);
/* Any context (kmalloc_nolock): the node lock only tried, the node never
 * grown, nothing purged; NULL when that finds no free block. */
__internal struct page *_uslub_alloc_pages_nolock(unsigned int order, int node);
__internal void _uslub_free_pages(struct page *head);

__internal int _uslub_nr_nodes(void);
/* More than one node (real or fake): set once at init, before any cache
 * exists, so the free fast path skips its node test on one node. */
__internal extern bool _uslub_multi_node;
__internal int _uslub_numa_node_of_cpu(void);
__internal void _uslub_page_init(void);

/* Call @fn on the head page of every allocated run (node lock held). */
__internal void _uslub_for_each_run(void (*fn)(struct page *head, void *arg), void *arg);

/* Give back everything free now: dirty free blocks purged, empty segments
 * and the rest of the current reservation unmapped, every purge callback
 * run with force (kmalloc's kept mappings); returns the bytes. No uslub
 * lock ranked at or above RANK_PAGE_NODE held: uslub_trim() holds none,
 * the page allocation and a new thread's cpu area (out of address space)
 * may hold lower ones. */
__internal size_t _uslub_page_trim(void);

/* @len bytes of anonymous memory for a layer's own tables (a thread's cpu
 * area, the profiling counters, a report's arrays), zeroed, mmap'd with
 * MAP_NORESERVE (munmap to free); NULL when none. Out of address space
 * (RLIMIT_AS) it gives back what uslub keeps unused (_uslub_page_trim())
 * and tries once more, so the caller holds no lock ranked at or above
 * RANK_PAGE_NODE: the lock-checking builds check that on every call. */
__internal void *_uslub_page_map(size_t len);

/* RLIMIT_AS is finite (`ulimit -v`): then nothing freed is kept (an empty
 * segment, a kmalloc mapping), so the program's own mmaps get the budget.
 * The program may set it at any time: asked again at most once per tick
 * of CLOCK_MONOTONIC_COARSE (a free of a mapping makes no system call
 * for it in a loop). */
__internal bool _uslub_as_limited(void);

/*
 * The background purge (page.c, "uslub-purge"). A layer above that keeps
 * memory of its own for reuse registers @fn: called by the thread (and by
 * trim, with @force) with no uslub lock ranked at or above RANK_PAGE_NODE
 * held (the thread holds none), it gives back what waited
 * USLUB_DECAY_MS (everything with @force), returns the bytes and sets
 * *@next to the CLOCK_MONOTONIC_COARSE time its next item becomes due (0:
 * none). At most 4 callbacks, called in the reverse order of registration
 * (layers register bottom up at init, so the highest runs first and what
 * it gives back reaches the layers below in the same pass).
 */
__internal void _uslub_purge_register(size_t (*fn)(bool force, uint64_t *next));
/* Something became purgeable (pages freed, a mapping kept): wakes the
 * thread, or marks it wanted (started by the next allocation, never by a
 * free); without the thread, lowers the deadline _uslub_purge_poll()
 * checks. Any lock may be held. */
__internal void _uslub_purge_notify(void);
/* An allocation path with no uslub lock held and no cpu slot halfway
 * through a change (pthread_create may call malloc): start the thread if
 * it is wanted and allowed (never called from a free path, nor from the
 * page allocation itself; see purge_start() in page.c); without the
 * thread, one purge pass once the earliest decay deadline is past. */
__internal void _uslub_purge_poll(void);
/* A thread's first slow path (slub/thread.c, once per thread): a thread
 * that is not the main one means the program has threads of its own, and
 * USLUB_BACKGROUND_THREAD=2 (auto) lets the purge thread start. */
__internal void _uslub_purge_note_thread(void);
/* That thread exits (its key destructor, no uslub lock held): when it was
 * the program's last one of its own, auto mode stops the purge thread and
 * waits for it, so the process is single-threaded again. */
__internal void _uslub_purge_note_thread_exit(void);
/* _uslub_init() says when a thread may be created: @may_start() is false
 * while the calling thread initializes uslub. No thread before it is set. */
__internal void _uslub_purge_set_start_check(bool (*may_start)(void));

/*
 * Transparent huge pages (USLUB_THP): with 1 (the default) a node's
 * segments are advised MADV_HUGEPAGE from its fifth on (16 MiB mapped:
 * a program that big faults in 2 MiB at a time, one that small keeps 4 KiB
 * pages and its small RSS), and so is every mapping of 2 MiB or more (the
 * kmalloc layer's huge mappings, which it then aligns to 2 MiB); with 2
 * every segment; with 0 nothing. Purging is unchanged: MADV_DONTNEED of
 * free blocks inside a huge page splits it and returns the blocks' pages.
 */
#define THP_SIZE          (2ul << 20)
/* A node with this many segments (16 MiB) belongs to a big program: its
 * new segments get huge pages (USLUB_THP=1) and the purge thread is wanted
 * (page.c, purge_start). */
#define BIG_NODE_SEGMENTS 4
/* Whether a mapping of @len bytes should be huge-page aligned and advised. */
__internal bool _uslub_thp_mapping(size_t len);
/* Advise [@addr, @addr + @len) MADV_HUGEPAGE. */
__internal void _uslub_thp_advise(void *addr, size_t len);

/* Testing: fail the next allocation after @n more succeed (-1: never). */
__internal void _uslub_page_fail_after(long n);

#endif /* USLUB_PAGE_H */
