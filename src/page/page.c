/*
 * Page provider: buddy allocation of naturally aligned page runs inside
 * 4 MiB segments; segments carved from 64 MiB mmap reservations; free
 * memory returned to the OS with MADV_DONTNEED after USLUB_DECAY_MS:
 * whole empty segments, and the free blocks inside segments still in use
 * (so a few live objects do not pin the pages freed around them).
 *
 * Purge state: a free block is "clean" (PG_clean) when its pages were
 * returned since it was last used; freeing a run makes its (merged) block
 * dirty. bytes_purged = the bytes of clean free blocks (a current amount).
 * Per node, dirty_pages counts pages freed since the last purge and
 * dirty_since when the first of them was.
 * See page.h for the layout and the lock order.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "base/lifecycle.h"
#include "uslub/types.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SEGMENT_MAGIC      0x55534c42u   /* "USLB" */
#define RESERVE_SEGMENTS   16            /* 64 MiB per mmap reservation */

uint64_t _uslub_owned_segments[OWNED_BITS / 64];

struct page_node {
	pthread_mutex_t lock;
	struct list_head free_area[MAX_PAGE_ORDER + 1]; /* free blocks by order */
	unsigned long nr_free[MAX_PAGE_ORDER + 1];
	struct list_head segments;       /* every segment of this node       */
	struct list_head empty;          /* fully free, not yet purged; oldest first */
	unsigned long nr_segments;
	unsigned long dirty_pages;       /* pages freed since the last purge */
	uint64_t dirty_since_ns;         /* when the first of them was freed */
} __attribute__((aligned(USLUB_CACHELINE)));

static struct page_node page_nodes[MAX_NUMNODES];
static int nr_nodes = 1;
bool _uslub_multi_node;        /* nr_nodes > 1: written once, at init */
static bool real_numa;

static pthread_mutex_t reserve_lock = PTHREAD_MUTEX_INITIALIZER;
static char *reserve_cur, *reserve_end;

static struct {
	unsigned long segments, bytes_in_slabs, bytes_purged, purges;
} pstats;

static long fail_countdown = -1;

static pthread_once_t page_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
	return monotonic_ns(CLOCK_MONOTONIC_COARSE);
}

static int count_sys_nodes(void)
{
	int n = 0;
	char path[64];
	for (int i = 0; i < MAX_NUMNODES; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", i);
		if (access(path, F_OK) == 0)
			n = i + 1;
	}
	return n ? n : 1;
}

static const struct uslub_lifecycle page_node_lifecycle, reserve_lifecycle;

static void page_init_once(void)
{
	long fake = _uslub_option(USLUB_OPT_FAKE_NODES);
	_uslub_lifecycle_register(&page_node_lifecycle);
	_uslub_lifecycle_register(&reserve_lifecycle);
	if (fake > 0) {
		nr_nodes = (int)MIN(fake, MAX_NUMNODES);
	} else {
		nr_nodes = count_sys_nodes();
		real_numa = nr_nodes > 1;
	}
	_uslub_multi_node = nr_nodes > 1;
	for (int i = 0; i < MAX_NUMNODES; i++) {
		struct page_node *n = &page_nodes[i];
		pthread_mutex_init(&n->lock, NULL);
		for (int o = 0; o <= MAX_PAGE_ORDER; o++)
			INIT_LIST_HEAD(&n->free_area[o]);
		INIT_LIST_HEAD(&n->segments);
		INIT_LIST_HEAD(&n->empty);
	}
}

void _uslub_page_init(void)
{
	pthread_once(&page_once, page_init_once);
}

int _uslub_nr_nodes(void)
{
	_uslub_page_init();
	return nr_nodes;
}

int _uslub_numa_node_of_cpu(void)
{
	if (!real_numa)
		return 0;
	unsigned int cpu, node;
	if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0 || (int)node >= nr_nodes)
		return 0;
	return (int)node;
}

/* Take one 4 MiB aligned segment of address space (reserve_lock). */
static char *reserve_segment(void)
{
	char *seg = NULL;
	uslub_mutex_lock(&reserve_lock, RANK_RESERVE);
	if (reserve_cur == reserve_end) {
		size_t len = RESERVE_SEGMENTS * SEGMENT_SIZE + SEGMENT_SIZE;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			goto out;
		char *start = (char *)ALIGN_UP((uintptr_t)p, SEGMENT_SIZE);
		char *end = start + RESERVE_SEGMENTS * SEGMENT_SIZE;
		if (start > p)
			munmap(p, (size_t)(start - p));
		if (p + len > end)
			munmap(end, (size_t)(p + len - end));
		reserve_cur = start;
		reserve_end = end;
	}
	seg = reserve_cur;
	reserve_cur += SEGMENT_SIZE;
out:
	uslub_mutex_unlock(&reserve_lock, RANK_RESERVE);
	return seg;
}

static void bind_to_node(void *addr, size_t len, int node)
{
	if (!real_numa)
		return;
	unsigned long mask[MAX_NUMNODES / 64] = { 0 };
	mask[node / 64] = 1ul << (node % 64);
	/* MPOL_PREFERRED = 1: best effort, never fails an allocation. */
	syscall(SYS_mbind, addr, len, 1, mask, MAX_NUMNODES + 1, 0);
}

static void set_free_block(struct page_node *n, struct page *page, unsigned int order,
			   unsigned long clean)
{
	page->flags = PG_buddy | clean | ((unsigned long)order << PG_ORDER_SHIFT);
	list_add_tail(&page->lru, &n->free_area[order]);
	n->nr_free[order]++;
}

static void del_free_block(struct page_node *n, struct page *page, unsigned int order)
{
	list_del(&page->lru);
	page->flags = 0;
	n->nr_free[order]--;
}

/* Map a new segment for @n and put its usable pages on the free lists. */
static bool grow_node(struct page_node *n, int node)
{
	char *base = reserve_segment();
	if (!base)
		return false;
	struct segment *seg = (struct segment *)base;
	bind_to_node(base, SEGMENT_SIZE, node);
	seg->hdr.magic = SEGMENT_MAGIC;
	seg->hdr.node = node;
	seg->hdr.free_pages = SEGMENT_USABLE_PAGES;
	INIT_LIST_HEAD(&seg->hdr.empty_link);
	list_add_tail(&seg->hdr.seg_link, &n->segments);
	n->nr_segments++;
	/* [16, 1024) decomposes into aligned blocks of orders 4..9. */
	for (unsigned int idx = SEGMENT_META_PAGES; idx < SEGMENT_PAGES;) {
		unsigned int order = (unsigned int)__builtin_ctz(idx);
		if (order > MAX_PAGE_ORDER)
			order = MAX_PAGE_ORDER;
		set_free_block(n, &seg->pages[idx], order, 0);  /* untouched: dirty, harmlessly */
		idx += 1u << order;
	}
	uintptr_t bit = (uintptr_t)base >> SEGMENT_SHIFT;
	__atomic_fetch_or(&_uslub_owned_segments[bit / 64], 1ul << (bit % 64), __ATOMIC_RELEASE);
	ATOMIC_ADD(pstats.segments, 1);
	return true;
}

static void purge_range(void *addr, size_t len)
{
	madvise(addr, len, MADV_DONTNEED);
	ATOMIC_ADD(pstats.purges, 1);
}

/* Mark the free block at @page clean (its pages were just purged). */
static void mark_clean(struct page *page)
{
	if (!(page->flags & PG_clean)) {
		page->flags |= PG_clean;
		ATOMIC_ADD(pstats.bytes_purged, PAGE_SIZE << page_order(page));
	}
}

/* An empty segment: one madvise for all of it; its free blocks are the
 * canonical decomposition of [16, 1024) (orders 4..9). */
static void purge_segment(struct segment *seg)
{
	purge_range((char *)seg + SEGMENT_META_PAGES * PAGE_SIZE, SEGMENT_USABLE_PAGES * PAGE_SIZE);
	for (unsigned int idx = SEGMENT_META_PAGES; idx < SEGMENT_PAGES;) {
		mark_clean(&seg->pages[idx]);
		idx += 1u << page_order(&seg->pages[idx]);
	}
}

/* Purge every dirty free block of @n (node lock held): when pages were
 * freed more than the decay delay ago (or @force). */
static size_t purge_dirty(struct page_node *n, bool force)
{
	if (!n->dirty_pages)
		return 0;
	uint64_t delay = (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
	if (!force && delay && now_ns() - n->dirty_since_ns < delay)
		return 0;
	size_t bytes = 0;
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		struct page *page;
		list_for_each_entry(page, &n->free_area[o], lru) {
			if (page->flags & PG_clean)
				continue;
			purge_range(page_address(page), PAGE_SIZE << o);
			mark_clean(page);
			bytes += PAGE_SIZE << o;
		}
	}
	n->dirty_pages = 0;
	return bytes;
}

/* Purge empty segments older than the decay delay (all with force). */
static size_t purge_expired(struct page_node *n, bool force)
{
	size_t bytes = 0;
	if (list_empty(&n->empty))
		return 0;
	uint64_t now = now_ns();
	uint64_t delay = (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
	struct list_head *pos, *tmp;
	list_for_each_safe(pos, tmp, &n->empty) {
		struct segment_hdr *h = list_entry(pos, struct segment_hdr, empty_link);
		if (!force && now - h->empty_since_ns < delay)
			break;               /* the list is oldest first */
		list_del(&h->empty_link);
		INIT_LIST_HEAD(&h->empty_link);
		purge_segment((struct segment *)h);
		bytes += SEGMENT_USABLE_PAGES * PAGE_SIZE;
	}
	return bytes;
}

struct page *_uslub_alloc_pages(unsigned int order, int node)
{
	if (order > MAX_PAGE_ORDER)
		return NULL;
	_uslub_page_init();
	if (node < 0 || node >= nr_nodes)
		node = 0;
	struct page_node *n = &page_nodes[node];
	struct page *page = NULL;
	unsigned int o;

	uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
	if (unlikely(fail_countdown >= 0) && fail_countdown-- == 0)
		goto out;
	for (;;) {
		for (o = order; o <= MAX_PAGE_ORDER; o++)
			if (!list_empty(&n->free_area[o]))
				break;
		if (o <= MAX_PAGE_ORDER)
			break;
		if (!grow_node(n, node))
			goto out;
	}
	page = list_entry(n->free_area[o].next, struct page, lru);
	unsigned long clean = page->flags & PG_clean;
	del_free_block(n, page, o);
	while (o > order) {          /* split, keeping the lower half */
		o--;
		set_free_block(n, page + (1u << o), o, clean);
	}
	if (clean)                   /* the halves split off stay clean */
		ATOMIC_SUB(pstats.bytes_purged, PAGE_SIZE << order);
	struct segment *seg = ptr_segment(page);
	if (seg->hdr.free_pages == SEGMENT_USABLE_PAGES) {
		/* leaving the empty state */
		if (!list_empty(&seg->hdr.empty_link)) {
			list_del(&seg->hdr.empty_link);
			INIT_LIST_HEAD(&seg->hdr.empty_link);
		}
	}
	seg->hdr.free_pages -= 1u << order;
	page->flags = PG_head | ((unsigned long)order << PG_ORDER_SHIFT);
	for (unsigned int i = 1; i < (1u << order); i++) {
		page[i].flags = PG_tail;
		WRITE_ONCE(page[i].compound_head, page);
	}
	WRITE_ONCE(page->compound_head, page);
	ATOMIC_ADD(pstats.bytes_in_slabs, PAGE_SIZE << order);
	purge_dirty(n, false);       /* pages freed long enough ago */
out:
	uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
	return page;
}

void _uslub_free_pages(struct page *page)
{
	struct segment *seg = ptr_segment(page);
	struct page_node *n = &page_nodes[seg->hdr.node];
	unsigned int order = page_order(page);
	unsigned int freed = 1u << order;
	unsigned int idx = (unsigned int)(page - seg->pages);

	uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
	for (unsigned int i = 0; i < (1u << order); i++) {
		WRITE_ONCE(page[i].compound_head, NULL);
		page[i].flags = 0;
	}
	ATOMIC_SUB(pstats.bytes_in_slabs, PAGE_SIZE << order);
	seg->hdr.free_pages += 1u << order;
	while (order < MAX_PAGE_ORDER) {     /* merge with free buddies */
		unsigned int bidx = idx ^ (1u << order);
		struct page *buddy = &seg->pages[bidx];
		if (bidx < SEGMENT_META_PAGES)
			break;
		/* the buddy may be a live slab whose flags the slab layer
		 * updates under its own list_lock: one relaxed read */
		unsigned long bflags = READ_ONCE(buddy->flags);
		if (!(bflags & PG_buddy) ||
		    ((bflags & PG_ORDER_MASK) >> PG_ORDER_SHIFT) != order)
			break;
		if (bflags & PG_clean)       /* merged into a dirty block */
			ATOMIC_SUB(pstats.bytes_purged, PAGE_SIZE << order);
		del_free_block(n, buddy, order);
		idx &= ~(1u << order);
		order++;
	}
	set_free_block(n, &seg->pages[idx], order, 0);
	if (!n->dirty_pages)
		n->dirty_since_ns = now_ns();
	n->dirty_pages += freed;
	if (seg->hdr.free_pages == SEGMENT_USABLE_PAGES) {
		seg->hdr.empty_since_ns = now_ns();
		list_add_tail(&seg->hdr.empty_link, &n->empty);
	}
	bool now = _uslub_option(USLUB_OPT_DECAY_MS) == 0;
	purge_expired(n, now);
	purge_dirty(n, now);
	uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
}

void _uslub_for_each_run(void (*fn)(struct page *head, void *arg), void *arg)
{
	_uslub_page_init();
	for (int i = 0; i < nr_nodes; i++) {
		struct page_node *n = &page_nodes[i];
		uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
		struct list_head *pos, *tmp;
		list_for_each_safe(pos, tmp, &n->segments) {
			struct segment *seg = (struct segment *)list_entry(pos, struct segment_hdr, seg_link);
			for (unsigned int idx = SEGMENT_META_PAGES; idx < SEGMENT_PAGES;) {
				struct page *p = &seg->pages[idx];
				unsigned long flags = READ_ONCE(p->flags);
				unsigned int step = 1;
				if (flags & (PG_head | PG_buddy))
					step = 1u << ((flags & PG_ORDER_MASK) >> PG_ORDER_SHIFT);
				if (flags & PG_head)
					fn(p, arg);
				idx += step;
			}
		}
		uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
	}
}

size_t _uslub_page_trim(void)
{
	size_t bytes = 0;
	_uslub_page_init();
	for (int i = 0; i < nr_nodes; i++) {
		uslub_mutex_lock(&page_nodes[i].lock, RANK_PAGE_NODE);
		bytes += purge_expired(&page_nodes[i], true);
		bytes += purge_dirty(&page_nodes[i], true);
		uslub_mutex_unlock(&page_nodes[i].lock, RANK_PAGE_NODE);
	}
	return bytes;
}

void _uslub_page_fail_after(long cnt)
{
	_uslub_page_init();
	for (int i = 0; i < nr_nodes; i++)
		pthread_mutex_lock(&page_nodes[i].lock);
	fail_countdown = cnt;
	for (int i = nr_nodes - 1; i >= 0; i--)
		pthread_mutex_unlock(&page_nodes[i].lock);
}

/* fork: every node's lock (a batch nested in slab_mutex, which fork holds
 * by then), then reserve_lock. */
static void page_node_prefork(void)
{
	for (int i = 0; i < nr_nodes; i++)
		uslub_mutex_lock_nest(&page_nodes[i].lock, RANK_PAGE_NODE, RANK_SLAB_MUTEX);
}

static void page_node_postfork_parent(void)
{
	for (int i = nr_nodes - 1; i >= 0; i--)
		uslub_mutex_unlock_nest(&page_nodes[i].lock, RANK_PAGE_NODE);
}

static void page_node_postfork_child(void)
{
	for (int i = 0; i < nr_nodes; i++)
		uslub_mutex_reset_nest(&page_nodes[i].lock, RANK_PAGE_NODE);
}

static void reserve_prefork(void)
{
	uslub_mutex_lock(&reserve_lock, RANK_RESERVE);
}

static void reserve_postfork_parent(void)
{
	uslub_mutex_unlock(&reserve_lock, RANK_RESERVE);
}

static void reserve_postfork_child(void)
{
	uslub_mutex_reset(&reserve_lock, RANK_RESERVE);
}

static const struct uslub_lifecycle page_node_lifecycle = {
	.name = "page_node.lock",
	.rank = RANK_PAGE_NODE,
	.prefork = page_node_prefork,
	.postfork_parent = page_node_postfork_parent,
	.postfork_child = page_node_postfork_child,
};

static const struct uslub_lifecycle reserve_lifecycle = {
	.name = "reserve_lock",
	.rank = RANK_RESERVE,
	.prefork = reserve_prefork,
	.postfork_parent = reserve_postfork_parent,
	.postfork_child = reserve_postfork_child,
};

__public void uslub_page_stats(struct uslub_page_stats *out)
{
	out->segments = READ_ONCE(pstats.segments);
	out->bytes_reserved = out->segments * SEGMENT_SIZE;
	out->bytes_in_slabs = READ_ONCE(pstats.bytes_in_slabs);
	out->bytes_purged = READ_ONCE(pstats.bytes_purged);
	out->purges = READ_ONCE(pstats.purges);
}
