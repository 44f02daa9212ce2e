/*
 * Page provider: buddy allocation of naturally aligned page runs inside
 * 4 MiB segments; segments carved from 64 MiB mmap reservations (one
 * segment at a time when that much address space is not to be had); free
 * memory returned to the OS after USLUB_DECAY_MS: a segment that stayed
 * empty that long is unmapped (memory and address space), the free
 * blocks inside segments still in use are purged with MADV_DONTNEED (so a
 * few live objects do not pin the pages freed around them).
 *
 * Who purges (the contract). A thread, "uslub-purge", while the program
 * sleeps; or the allocator's own calls, against a deadline. The thread
 * makes a process multi-threaded, and a single-threaded process may
 * depend on being one (unshare(CLONE_NEWUSER) and setns() into a user
 * namespace fail with EINVAL otherwise; sandboxes check it before they
 * fork and exec), so USLUB_BACKGROUND_THREAD=2 (auto, the default) starts
 * it only once the program has a thread of its own: the first slow path
 * of a thread whose tid is not the pid (_uslub_purge_note_thread(), from
 * the slub layer's thread init) says so; 1 starts it in any program, 0
 * never. In auto mode it goes with the program's last thread of its own
 * (_uslub_purge_note_thread_exit(): stopped and joined from that thread's
 * key destructor, so the program's join returns to one thread). Once allowed, it is wanted once a free left something purgeable
 * (dirty free pages, an empty segment, a kept kmalloc mapping:
 * _uslub_purge_notify()) or a node has BIG_NODE_SEGMENTS segments
 * (16 MiB), and created by the next allocation that refills from the
 * page layer's side (a cache's refill rung, a kmalloc page run or
 * mapping: _uslub_purge_poll()) with no uslub lock held and no cpu slot
 * halfway through a change, outside uslub's initialization
 * (pthread_create may call malloc), never by a free (glibc frees a dead
 * thread's TLS holding the stack cache lock that pthread_create takes:
 * see purge_start()). It has every signal blocked, never allocates (so
 * it has no per-thread caches), waits on a CLOCK_MONOTONIC condition
 * variable without a deadline while nothing is dirty and with the
 * earliest decay deadline otherwise, and then makes one pass (purge_pass:
 * every node, then the layers' purge callbacks). While it runs, the page
 * calls leave the purging to it.
 *
 * Without it (a single-threaded program in auto mode, option 0, decay 0,
 * pthread_create failed, or a fork child in the sanitized builds) the
 * calls purge: a page allocation or free purges its own node's pages
 * freed more than USLUB_DECAY_MS ago, and purge_due_ns holds the earliest
 * decay deadline of everything (set by _uslub_purge_notify(), lowered to
 * what a pass leaves): the allocation slow paths (_uslub_purge_poll())
 * that find it past make one whole pass, kept kmalloc mappings and other
 * nodes included (mimalloc's purge delay, checked on its slow paths). So
 * a single-threaded program that frees everything and then sleeps keeps
 * what it freed within the last USLUB_DECAY_MS (and what its frees did
 * not reach the deadline for) until its next allocation that refills, or
 * malloc_trim(); with USLUB_BACKGROUND_THREAD=1 it gets it back while it
 * sleeps, at the price of the thread. A fork child has no thread (and
 * one thread of its own): it starts one again on its first allocation
 * once the thread is wanted and allowed. uslub_trim() / malloc_trim()
 * purge and unmap everything at once, with the rest of the current
 * reservation.
 *
 * Unmapping: an empty segment's blocks leave the free lists and its
 * ownership bit is cleared under the node lock, then it is unmapped with
 * no lock held. No valid pointer points into an empty segment, so only an
 * invalid free can race with it: a free() that read the bit just before
 * it was cleared reads the descriptor of an unmapped segment and faults
 * (SIGSEGV) instead of being reported; one that comes later is reported
 * as "a pointer uslub did not allocate" (or, if the address space was
 * mapped again as a new segment, as whatever it finds there). If the
 * kernel refuses the munmap (a seccomp filter; ENOMEM splitting the
 * reservation's mapping at vm.max_map_count), the segment is attached
 * again (reattach_segment()): owned, reusable, tried again after the
 * decay; a refused MADV_DONTNEED leaves its blocks dirty. Nothing is
 * forgotten while still mapped (base/sys.c counts and reports).
 *
 * Out of address space (RLIMIT_AS): a node that cannot grow gives back
 * what uslub keeps unused (_uslub_page_trim()) and tries once more.
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
#include <signal.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SEGMENT_MAGIC      0x55534c42u   /* "USLB" */
#define RESERVE_SEGMENTS   16            /* 64 MiB per mmap reservation */

uint8_t _uslub_owned_segments[OWNED_SEGMENTS];

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
	unsigned long segments_kept;     /* munmap refused: back on their node */
} pstats;

static long fail_countdown = -1;

static pthread_once_t page_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
	return monotonic_ns(CLOCK_MONOTONIC_COARSE);
}

static uint64_t as_asked_ns;             /* atomic: the coarse tick last asked */
static bool as_limit;                    /* atomic: what it said */

bool _uslub_as_limited(void)
{
	uint64_t now = now_ns();
	if (__atomic_load_n(&as_asked_ns, __ATOMIC_RELAXED) != now) {
		struct rlimit rl;
		__atomic_store_n(&as_limit, !getrlimit(RLIMIT_AS, &rl) &&
				 rl.rlim_cur != RLIM_INFINITY, __ATOMIC_RELAXED);
		__atomic_store_n(&as_asked_ns, now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&as_limit, __ATOMIC_RELAXED);
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

static const struct uslub_lifecycle page_node_lifecycle, reserve_lifecycle, purge_lifecycle;
static void purge_cond_init(void);

static void page_init_once(void)
{
	long fake = _uslub_option(USLUB_OPT_FAKE_NODES);
	_uslub_lifecycle_register(&page_node_lifecycle);
	_uslub_lifecycle_register(&reserve_lifecycle);
	_uslub_lifecycle_register(&purge_lifecycle);
	purge_cond_init();
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
		/* 64 MiB at once; near an address-space limit, one segment */
		size_t nseg = RESERVE_SEGMENTS;
		size_t len = nseg * SEGMENT_SIZE + SEGMENT_SIZE;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			nseg = 1;
			len = 2 * SEGMENT_SIZE;
			p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		}
		if (p == MAP_FAILED)
			goto out;
		if ((uintptr_t)p + len > (OWNED_SEGMENTS << SEGMENT_SHIFT)) {
			/* above the ownership map (never without a hint) */
			_uslub_sys_munmap_or_park(p, len);
			goto out;
		}
		char *start = (char *)ALIGN_UP((uintptr_t)p, SEGMENT_SIZE);
		char *end = start + nseg * SEGMENT_SIZE;
		/* the alignment slack; if refused it is parked (base/sys.c)
		 * and unmapped again by a later purge pass */
		if (start > p)
			_uslub_sys_munmap_or_park(p, (size_t)(start - p));
		if (p + len > end)
			_uslub_sys_munmap_or_park(end, (size_t)(p + len - end));
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
bool _uslub_thp_mapping(size_t len)
{
	return _uslub_option(USLUB_OPT_THP) > 0 && len >= THP_SIZE;
}

void _uslub_thp_advise(void *addr, size_t len)
{
	madvise(addr, len, MADV_HUGEPAGE);
}

static bool purge_wanted;                /* atomic: something waits for the thread */

/* Put the empty segment @seg (header set) on @n: its usable pages on the
 * free lists (@clean: PG_clean, their pages returned), owned (node lock
 * held). The reverse of detach_segment(). */
static void attach_segment(struct page_node *n, struct segment *seg, unsigned long clean)
{
	list_add_tail(&seg->hdr.seg_link, &n->segments);
	n->nr_segments++;
	if (n->nr_segments >= BIG_NODE_SEGMENTS)
		__atomic_store_n(&purge_wanted, true, __ATOMIC_RELAXED);
	/* [16, 1024) decomposes into aligned blocks of orders 4..9. */
	for (unsigned int idx = SEGMENT_META_PAGES; idx < SEGMENT_PAGES;) {
		unsigned int order = (unsigned int)__builtin_ctz(idx);
		if (order > MAX_PAGE_ORDER)
			order = MAX_PAGE_ORDER;
		set_free_block(n, &seg->pages[idx], order, clean);
		idx += 1u << order;
	}
	if (clean)
		ATOMIC_ADD(pstats.bytes_purged, SEGMENT_USABLE_PAGES * PAGE_SIZE);
	__atomic_store_n(&_uslub_owned_segments[(uintptr_t)seg >> SEGMENT_SHIFT], 1, __ATOMIC_RELEASE);
	ATOMIC_ADD(pstats.segments, 1);
}

static bool grow_node(struct page_node *n, int node)
{
	char *base = reserve_segment();
	if (!base)
		return false;
	struct segment *seg = (struct segment *)base;
	bind_to_node(base, SEGMENT_SIZE, node);
	long thp = _uslub_option(USLUB_OPT_THP);
	if (thp == 2 || (thp == 1 && n->nr_segments >= BIG_NODE_SEGMENTS))
		_uslub_thp_advise(base, SEGMENT_SIZE);
	seg->hdr.magic = SEGMENT_MAGIC;
	seg->hdr.node = node;
	seg->hdr.free_pages = SEGMENT_USABLE_PAGES;
	INIT_LIST_HEAD(&seg->hdr.empty_link);
	attach_segment(n, seg, 0);      /* untouched: dirty, harmlessly */
	return true;
}

/* MADV_DONTNEED; false when the kernel refused it (the pages stay). */
static bool purge_range(void *addr, size_t len)
{
	if (_uslub_sys_madvise_dontneed(addr, len))
		return false;
	ATOMIC_ADD(pstats.purges, 1);
	return true;
}

/* Mark the free block at @page clean (its pages were just purged). */
static void mark_clean(struct page *page)
{
	if (!(page->flags & PG_clean)) {
		page->flags |= PG_clean;
		ATOMIC_ADD(pstats.bytes_purged, PAGE_SIZE << page_order(page));
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
	unsigned long refused = 0;
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		struct page *page;
		list_for_each_entry(page, &n->free_area[o], lru) {
			if (page->flags & PG_clean)
				continue;
			if (!purge_range(page_address(page), PAGE_SIZE << o)) {
				refused += 1ul << o;     /* stays dirty */
				continue;
			}
			mark_clean(page);
			bytes += PAGE_SIZE << o;
		}
	}
	/* what the kernel refused is tried again after another decay */
	n->dirty_pages = refused;
	if (refused)
		n->dirty_since_ns = now_ns();
	return bytes;
}

/* Take the empty segment @seg off @n (node lock held): its free blocks
 * (the canonical decomposition of [16, 1024)) leave the free lists, its
 * ownership bit is cleared; the caller unmaps it once the lock is dropped.
 * From here on a pointer into it is no longer ours (an invalid free of one
 * that read the bit before the clear may fault on the descriptor: see
 * "Unmapping" at the top of the file). */
static void detach_segment(struct page_node *n, struct segment *seg)
{
	for (unsigned int idx = SEGMENT_META_PAGES; idx < SEGMENT_PAGES;) {
		struct page *page = &seg->pages[idx];
		unsigned int o = page_order(page);
		if (page->flags & PG_clean)
			ATOMIC_SUB(pstats.bytes_purged, PAGE_SIZE << o);
		del_free_block(n, page, o);
		idx += 1u << o;
	}
	list_del(&seg->hdr.seg_link);
	n->nr_segments--;
	__atomic_store_n(&_uslub_owned_segments[(uintptr_t)seg >> SEGMENT_SHIFT], 0, __ATOMIC_RELEASE);
	ATOMIC_SUB(pstats.segments, 1);
}

/* Detach the empty segments older than the decay delay (all with @force)
 * onto @out, linked by their empty_link (node lock held); unmap_segments()
 * counts what goes. */
static void purge_expired(struct page_node *n, bool force, struct list_head *out)
{
	if (list_empty(&n->empty))
		return;
	uint64_t now = now_ns();
	uint64_t delay = (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
	struct list_head *pos, *tmp;
	list_for_each_safe(pos, tmp, &n->empty) {
		struct segment_hdr *h = list_entry(pos, struct segment_hdr, empty_link);
		if (!force && now - h->empty_since_ns < delay)
			break;               /* the list is oldest first */
		list_del(&h->empty_link);
		detach_segment(n, (struct segment *)h);
		list_add_tail(&h->empty_link, out);
	}
}

/* A detached segment whose munmap the kernel refused (a seccomp filter;
 * ENOMEM splitting the reservation's mapping at vm.max_map_count): it
 * goes back on its node, owned and reusable, its pages returned with
 * MADV_DONTNEED where that is allowed, and on the empty list from now,
 * so the munmap is tried again after another decay (no lock held). */
static void reattach_segment(struct segment *seg)
{
	struct page_node *n = &page_nodes[seg->hdr.node];
	unsigned long clean = purge_range((char *)seg + SEGMENT_META_PAGES * PAGE_SIZE,
					  SEGMENT_USABLE_PAGES * PAGE_SIZE) ? PG_clean : 0;
	uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
	attach_segment(n, seg, clean);
	if (!clean) {
		if (!n->dirty_pages)
			n->dirty_since_ns = now_ns();
		n->dirty_pages += SEGMENT_USABLE_PAGES;
	}
	seg->hdr.empty_since_ns = now_ns();
	list_add_tail(&seg->hdr.empty_link, &n->empty);
	uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
	ATOMIC_ADD(pstats.segments_kept, 1);
	_uslub_purge_notify();           /* its next try has a deadline */
}

/* Unmap the segments purge_expired() detached (no lock held): the bytes
 * unmapped (a segment whose munmap is refused goes back on its node). */
static size_t unmap_segments(struct list_head *list)
{
	size_t bytes = 0;
	struct list_head *pos, *tmp;
	list_for_each_safe(pos, tmp, list) {
		struct segment_hdr *h = list_entry(pos, struct segment_hdr, empty_link);
		list_del(&h->empty_link);
		if (_uslub_sys_munmap(h, SEGMENT_SIZE)) {
			reattach_segment((struct segment *)h);
			continue;
		}
		ATOMIC_ADD(pstats.purges, 1);
		bytes += SEGMENT_SIZE;
	}
	INIT_LIST_HEAD(list);
	return bytes;
}

/* The earliest time something of @n becomes due for purging (node lock
 * held): lowers *@next (0: nothing). */
static void node_deadline(struct page_node *n, uint64_t delay, uint64_t *next)
{
	uint64_t t = 0;
	if (n->dirty_pages)
		t = n->dirty_since_ns + delay;
	if (!list_empty(&n->empty)) {
		struct segment_hdr *h = list_entry(n->empty.next, struct segment_hdr, empty_link);
		if (!t || h->empty_since_ns + delay < t)
			t = h->empty_since_ns + delay;
	}
	if (t && (!*next || t < *next))
		*next = t;
}

/* ------------------------------------------------------------------------
 * The background purge thread ("uslub-purge")
 * ---------------------------------------------------------------------- */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PURGE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define PURGE_SANITIZED 1
#endif
#endif

enum { PURGE_UNSTARTED, PURGE_STARTING, PURGE_RUNNING, PURGE_NEVER, PURGE_STOPPING };
static int purge_state;                  /* atomic */
static int program_threads;              /* atomic: live threads other than the main one that allocated */
static pthread_t purge_tid;              /* the thread while RUNNING (joinable: purge_stop_thread) */
static uint64_t purge_due_ns;            /* atomic: without the thread, the next deadline (0: none) */
static bool (*purge_may_start)(void);    /* set by _uslub_init() when it is done */

static pthread_mutex_t purge_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t purge_cond;        /* on CLOCK_MONOTONIC (page_init_once) */
static bool purge_pending;               /* purge_lock: new work since the last pass */
static bool purge_idle;                  /* purge_lock: the thread waits without a deadline */
static bool purge_stop;                  /* purge_lock: the thread is asked to exit */
static uint64_t purge_restart_ns;        /* atomic: after a stop, no start before this time */

#define PURGE_MAX_CALLBACKS 4
static size_t (*purge_cbs[PURGE_MAX_CALLBACKS])(bool force, uint64_t *next);
static unsigned int nr_purge_cbs;        /* release-stored; purge_lock to add */

/* A jiffy and a bit: deadlines are CLOCK_MONOTONIC_COARSE times, which lag
 * CLOCK_MONOTONIC (the wait's clock) by up to a tick. */
#define PURGE_SLACK_NS (11ull * 1000000)

static void purge_due_lower(uint64_t t);

static bool purge_thread_running(void)
{
	return __atomic_load_n(&purge_state, __ATOMIC_ACQUIRE) == PURGE_RUNNING;
}

void _uslub_purge_register(size_t (*fn)(bool force, uint64_t *next))
{
	_uslub_page_init();
	uslub_mutex_lock(&purge_lock, RANK_PURGE);
	unsigned int k = nr_purge_cbs;
	if (k < PURGE_MAX_CALLBACKS) {
		purge_cbs[k] = fn;
		__atomic_store_n(&nr_purge_cbs, k + 1, __ATOMIC_RELEASE);
	}
	uslub_mutex_unlock(&purge_lock, RANK_PURGE);
	if (k >= PURGE_MAX_CALLBACKS) {
		_uslub_report("uslub: too many purge callbacks\n");
		abort();
	}
}

void _uslub_purge_set_start_check(bool (*may_start)(void))
{
	__atomic_store_n(&purge_may_start, may_start, __ATOMIC_RELEASE);
	/* 1: the thread in any program, so wanted at once: a program that
	 * only maps large blocks, frees them and sleeps gets them back too */
	if (_uslub_option(USLUB_OPT_BACKGROUND_THREAD) == USLUB_BG_ALWAYS)
		__atomic_store_n(&purge_wanted, true, __ATOMIC_RELAXED);
}

/*
 * One pass: every registered callback (kmalloc's kept mappings, the
 * barns and kept empty slabs of the sheaf and slub layers), then every
 * node's expired empty segments unmapped and dirty free blocks purged;
 * all of it with @force. Ranges parked after a refused
 * munmap (base/sys.c) are tried again, and while some wait the next pass
 * is due after another decay. Returns the bytes given back; *@next
 * (when not NULL) the earliest CLOCK_MONOTONIC_COARSE time something left
 * becomes due, 0 when nothing is left to purge. Takes each node lock in
 * turn, with no uslub lock ranked at or above RANK_PAGE_NODE held (the
 * thread and uslub_trim() hold none; _uslub_page_map() and a page
 * allocation out of address space may hold lower ones).
 */
static size_t purge_pass(bool force, uint64_t *next)
{
	size_t bytes = 0;
	uint64_t delay = (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
	uint64_t dummy = 0;
	if (!next)
		next = &dummy;
	*next = 0;
	/* the layers first, the highest first (the order they registered in,
	 * reversed): what one gives back goes to the layer below it, which
	 * returns it in the same pass (sheaves flushed from a barn empty
	 * slabs the node pass then discards); then the pages they freed are
	 * purged with the rest when forced */
	unsigned int k = __atomic_load_n(&nr_purge_cbs, __ATOMIC_ACQUIRE);
	for (unsigned int i = k; i-- > 0;) {
		uint64_t t = 0;
		bytes += purge_cbs[i](force, &t);
		if (t && (!*next || t < *next))
			*next = t;
	}
	for (int i = 0; i < nr_nodes; i++) {
		struct page_node *n = &page_nodes[i];
		struct list_head unmap = LIST_HEAD_INIT(unmap);
		uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
		purge_expired(n, force, &unmap);
		bytes += purge_dirty(n, force);
		node_deadline(n, delay, next);
		uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
		bytes += unmap_segments(&unmap);
	}
	bytes += _uslub_sys_retry_parked();
	if (_uslub_sys_parked_bytes()) {
		uint64_t t = now_ns() + (delay ? delay : 1000000000ull);
		if (!*next || t < *next)
			*next = t;
	}
	return bytes;
}

static void *purge_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "uslub-purge");
	uslub_mutex_lock(&purge_lock, RANK_PURGE);
	for (;;) {
		if (purge_stop)
			break;               /* the program's last thread exited */
		purge_pending = false;
		uslub_mutex_unlock(&purge_lock, RANK_PURGE);
		uint64_t next;
		purge_pass(false, &next);
		uslub_mutex_lock(&purge_lock, RANK_PURGE);
		/* new work during the pass: look again; a stop during the
		 * pass: its signal found nobody waiting, so look before the
		 * wait (the timed one slept to the next deadline, ~a decay,
		 * and the program's pthread_join() of its last thread with it) */
		if (purge_pending || purge_stop)
			continue;
		if (!next) {                 /* nothing dirty: no tick until there is */
			purge_idle = true;
			while (!purge_pending && !purge_stop)
				pthread_cond_wait(&purge_cond, &purge_lock);
			purge_idle = false;
		} else {
			uint64_t t = next + PURGE_SLACK_NS;
			struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
					       .tv_nsec = (long)(t % 1000000000ull) };
			pthread_cond_timedwait(&purge_cond, &purge_lock, &ts);
		}
	}
	uslub_mutex_unlock(&purge_lock, RANK_PURGE);
	return NULL;
}

/* May the thread exist in this process (USLUB_BACKGROUND_THREAD)? In
 * auto mode only once the program has a thread of its own: until then
 * one thread more is something the program can see (Threads: in
 * /proc/self/status, unshare(CLONE_NEWUSER) failing with EINVAL). */
static bool purge_thread_allowed(void)
{
	long opt = _uslub_option(USLUB_OPT_BACKGROUND_THREAD);
	return opt == USLUB_BG_ALWAYS ||
	       (opt == USLUB_BG_AUTO && __atomic_load_n(&program_threads, __ATOMIC_RELAXED) > 0);
}

/* the main thread's tid is the pid (a fork child's only thread too) */
static bool main_thread(void)
{
	return (pid_t)syscall(SYS_gettid) == getpid();
}

void _uslub_purge_note_thread(void)
{
	if (main_thread())
		return;
	/* allowed now: wanted at once, so a program that frees and then
	 * sleeps without another allocation still gets it back */
	if (__atomic_fetch_add(&program_threads, 1, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&purge_wanted, true, __ATOMIC_RELAXED);
}

/* The program's last thread of its own exits (auto): the process is about
 * to be single-threaded again, so uslub's thread goes first. Joined here,
 * in the exiting thread's key destructor (no uslub lock held), so by the
 * time the program's pthread_join() returns the process has one thread
 * and unshare(CLONE_NEWUSER) works as with glibc. The calls purge from
 * here on (a deadline now: they look at their next slow path); a thread
 * started later allocates and so starts it again, but not before
 * USLUB_DECAY_MS after this stop: a program that creates and joins one
 * worker after another would otherwise pay a pthread_create and a join of
 * uslub's thread per worker (measured: 80 -> 130 us a cycle), and the
 * calls purge meanwhile. */
static void purge_stop_thread(void)
{
	/* A start or a stop under way finishes first: either way the
	 * program's pthread_join() must not return while the thread lives.
	 * Sequentially consistent with purge_start()'s store of RUNNING and
	 * its second look at program_threads: one of the two sees the other. */
	for (;;) {
		int s = __atomic_load_n(&purge_state, __ATOMIC_SEQ_CST);
		if (s == PURGE_STARTING || s == PURGE_STOPPING) {
			sched_yield();
			continue;
		}
		if (s != PURGE_RUNNING)
			return;
		if (__atomic_compare_exchange_n(&purge_state, &s, PURGE_STOPPING, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			break;
	}
	uslub_mutex_lock(&purge_lock, RANK_PURGE);
	purge_stop = true;
	pthread_cond_signal(&purge_cond);
	uslub_mutex_unlock(&purge_lock, RANK_PURGE);
	/* pthread_join is a cancellation point: a thread with a cancel
	 * pending that returned normally must not be cancelled in here */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_join(purge_tid, NULL);
	pthread_setcancelstate(cancel, NULL);
	uslub_mutex_lock(&purge_lock, RANK_PURGE);
	purge_stop = false;
	purge_idle = false;
	purge_pending = true;
	uslub_mutex_unlock(&purge_lock, RANK_PURGE);
	uint64_t now = now_ns();
	purge_due_lower(now);
	__atomic_store_n(&purge_restart_ns,
			 now + (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull, __ATOMIC_RELAXED);
	/* not wanted again until a thread of the program's allocates
	 * (_uslub_purge_note_thread()) */
	__atomic_store_n(&purge_wanted, false, __ATOMIC_RELAXED);
	__atomic_store_n(&purge_state, PURGE_UNSTARTED, __ATOMIC_RELEASE);
}

void _uslub_purge_note_thread_exit(void)
{
	if (main_thread())
		return;
	if (__atomic_sub_fetch(&program_threads, 1, __ATOMIC_SEQ_CST) > 0)
		return;
	if (_uslub_option(USLUB_OPT_BACKGROUND_THREAD) == USLUB_BG_AUTO && !_uslub_locks_held)
		purge_stop_thread();
}

/* Start the thread if it is wanted and may be started here: with no uslub
 * lock held, outside uslub's initialization (pthread_create may call
 * malloc, which is uslub), never from the page allocation itself (its
 * caller may be a sheaf refill that read the main sheaf's size before
 * and adds to it after: pthread_create's calloc() of the DTV refilled
 * that same sheaf in between and the size went past the capacity; or a
 * free that needs a new sheaf), and only from an allocation, never from
 * a free:
 * glibc frees a dead thread's TLS holding its stack cache lock
 * (pthread_join -> __nptl_free_stacks -> free), which pthread_create takes,
 * so a start from free() deadlocked (B9, 512 threads joined). No glibc
 * path allocates with that lock held. The thread is wanted once something
 * became purgeable (a free notified) or the node has BIG_NODE_SEGMENTS
 * segments (a big program: it may free everything and go idle without
 * another allocation). */
static __noinline void purge_start(void)
{
	bool (*may)(void) = __atomic_load_n(&purge_may_start, __ATOMIC_ACQUIRE);
	if (_uslub_locks_held || !may || !may() || !purge_thread_allowed())
		return;
	uint64_t after = __atomic_load_n(&purge_restart_ns, __ATOMIC_RELAXED);
	if (after && now_ns() < after)
		return;                      /* stopped less than a decay ago */
	int expect = PURGE_UNSTARTED;
	if (!__atomic_compare_exchange_n(&purge_state, &expect, PURGE_STARTING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;                      /* another thread starts it (or did) */
	/* joinable: purge_stop_thread() waits for its exit; a few frames
	 * deep */
	pthread_t t;
	int rc = _uslub_thread_start(&t, purge_thread, 256 * 1024);
	if (!rc)
		purge_tid = t;
	/* a thread that cannot be made: purging stays on the calls, as with
	 * USLUB_BACKGROUND_THREAD=0 */
	__atomic_store_n(&purge_state, rc ? PURGE_NEVER : PURGE_RUNNING, __ATOMIC_SEQ_CST);
	/* the program's last thread may have exited while this one started
	 * it (its exit found no running thread to stop): stop it here */
	if (!rc && _uslub_option(USLUB_OPT_BACKGROUND_THREAD) == USLUB_BG_AUTO &&
	    !__atomic_load_n(&program_threads, __ATOMIC_SEQ_CST))
		purge_stop_thread();
}

static __always_inline void purge_maybe_start(void)
{
	if (unlikely(__atomic_load_n(&purge_wanted, __ATOMIC_RELAXED)) &&
	    __atomic_load_n(&purge_state, __ATOMIC_RELAXED) == PURGE_UNSTARTED)
		purge_start();
}

/* Lower purge_due_ns to @t (lock-free: any lock may be held). */
static void purge_due_lower(uint64_t t)
{
	uint64_t cur = __atomic_load_n(&purge_due_ns, __ATOMIC_RELAXED);
	while (!cur || t < cur)
		if (__atomic_compare_exchange_n(&purge_due_ns, &cur, t, true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
}

/* Without the thread: one pass once the earliest deadline is past (an
 * allocation slow path, no uslub lock held). Whoever takes the deadline
 * makes the pass (a poll nested in it, from a signal handler's malloc,
 * finds none); a notify during the pass lowers it again, and the pass
 * puts back what it left. */
static __noinline void purge_due_check(void)
{
	uint64_t due = __atomic_load_n(&purge_due_ns, __ATOMIC_RELAXED);
	if (purge_thread_running()) {    /* a deadline from before it started */
		__atomic_store_n(&purge_due_ns, 0, __ATOMIC_RELAXED);
		return;
	}
	if (!due || _uslub_locks_held || now_ns() < due)
		return;
	if (!__atomic_compare_exchange_n(&purge_due_ns, &due, 0, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;
	uint64_t next;
	purge_pass(false, &next);
	if (next)
		purge_due_lower(next);
}

void _uslub_purge_notify(void)
{
	long decay = _uslub_option(USLUB_OPT_DECAY_MS);
	if (!decay)
		return;                      /* purged by the free itself */
	if (!purge_thread_running())
		purge_due_lower(now_ns() + (uint64_t)decay * 1000000ull);
	if (!purge_thread_allowed())
		return;                      /* the calls purge: no thread to wake */
	_uslub_page_init();
	uslub_mutex_lock(&purge_lock, RANK_PURGE);
	purge_pending = true;
	if (purge_idle)
		pthread_cond_signal(&purge_cond);
	uslub_mutex_unlock(&purge_lock, RANK_PURGE);
	if (__atomic_load_n(&purge_state, __ATOMIC_RELAXED) == PURGE_UNSTARTED)
		__atomic_store_n(&purge_wanted, true, __ATOMIC_RELAXED);
}

void _uslub_purge_poll(void)
{
	purge_maybe_start();
	if (unlikely(__atomic_load_n(&purge_due_ns, __ATOMIC_RELAXED)))
		purge_due_check();
}

static void purge_cond_init(void)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&purge_cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* fork: purge_lock (the innermost rank); the child has no thread: it is
 * started again by the child's first allocation once wanted and allowed
 * (auto: once the child starts a thread of its own; not in the sanitized
 * builds, whose runtimes refuse or deadlock on a thread created in the
 * child of a multi-threaded parent: there the child purges on its calls) */
static void purge_prefork(void)
{
	uslub_mutex_lock(&purge_lock, RANK_PURGE);
}

static void purge_postfork_parent(void)
{
	uslub_mutex_unlock(&purge_lock, RANK_PURGE);
}

static void purge_postfork_child(void)
{
	uslub_mutex_reset(&purge_lock, RANK_PURGE);
	purge_cond_init();
	purge_idle = false;
	purge_stop = false;
	purge_pending = true;
	__atomic_store_n(&purge_restart_ns, 0, __ATOMIC_RELAXED);
	/* the child has one thread: the forking one, its tid the child's pid */
	__atomic_store_n(&program_threads, 0, __ATOMIC_RELAXED);
	int state = __atomic_load_n(&purge_state, __ATOMIC_RELAXED);
	/* the parent's thread kept no deadline: the child's calls look at once */
	if (state == PURGE_RUNNING || state == PURGE_STARTING || state == PURGE_STOPPING)
		__atomic_store_n(&purge_due_ns, now_ns(), __ATOMIC_RELAXED);
#ifdef PURGE_SANITIZED
	__atomic_store_n(&purge_state, PURGE_NEVER, __ATOMIC_RELAXED);
#else
	if (state != PURGE_NEVER) {
		/* the parent's thread (or its start) is not the child's */
		__atomic_store_n(&purge_state, PURGE_UNSTARTED, __ATOMIC_RELAXED);
		if (state != PURGE_UNSTARTED)
			__atomic_store_n(&purge_wanted, true, __ATOMIC_RELAXED);
	}
#endif
}

static const struct uslub_lifecycle purge_lifecycle = {
	.name = "purge_lock",
	.rank = RANK_PURGE,
	.prefork = purge_prefork,
	.postfork_parent = purge_postfork_parent,
	.postfork_child = purge_postfork_child,
};

/* @nolock (_uslub_alloc_pages_nolock): the node lock is only tried, the
 * node never grows (grow_node() takes reserve_lock and mmaps) and nothing
 * is purged. Neither starts the purge thread: the allocation paths above
 * poll for it where no cpu slot is halfway through a change
 * (_uslub_purge_poll()). */
static __always_inline struct page *alloc_pages(unsigned int order, int node, bool nolock)
{
	if (order > MAX_PAGE_ORDER)
		return NULL;
	if (!nolock)
		_uslub_page_init();
	if (node < 0 || node >= nr_nodes)
		node = 0;
	struct page_node *n = &page_nodes[node];
	struct page *page = NULL;
	unsigned int o;

	bool retried = false;

	if (!nolock)
		uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
	else if (!uslub_mutex_trylock(&n->lock, RANK_PAGE_NODE))
		return NULL;
	if (unlikely(fail_countdown >= 0) && fail_countdown-- == 0)
		goto out;
	for (;;) {
		for (o = order; o <= MAX_PAGE_ORDER; o++)
			if (!list_empty(&n->free_area[o]))
				break;
		if (o <= MAX_PAGE_ORDER)
			break;
		if (nolock)
			goto out;
		if (grow_node(n, node))
			continue;
		if (retried)
			goto out;
		/*
		 * No address space (RLIMIT_AS) or memory for a segment: give
		 * back what uslub keeps but does not use (kept huge mappings,
		 * other nodes' empty segments, the rest of the reservation),
		 * as the huge-mapping path does, and try once more. The
		 * callers hold no lock ranked above this one, so the node lock
		 * is dropped for it and every lock _uslub_page_trim() takes
		 * ranks above those still held.
		 */
		retried = true;
		uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
		_uslub_page_trim();
		uslub_mutex_lock(&n->lock, RANK_PAGE_NODE);
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
	if (!nolock && !purge_thread_running())
		purge_dirty(n, false);       /* pages freed long enough ago */
out:
	uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
	return page;
}

struct page *_uslub_alloc_pages(unsigned int order, int node)
{
	return alloc_pages(order, node, false);
}

struct page *_uslub_alloc_pages_nolock(unsigned int order, int node)
{
	return alloc_pages(order, node, true);   /* callers run after the init */
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
	bool became_purgeable = !n->dirty_pages;
	if (!n->dirty_pages)
		n->dirty_since_ns = now_ns();
	n->dirty_pages += freed;
	bool now = _uslub_option(USLUB_OPT_DECAY_MS) == 0, limited = false;
	if (seg->hdr.free_pages == SEGMENT_USABLE_PAGES) {
		seg->hdr.empty_since_ns = now_ns();
		list_add_tail(&seg->hdr.empty_link, &n->empty);
		became_purgeable = true;
		/* under an address-space limit an empty segment goes at once:
		 * kept, it is taken from the program's own mmaps and thread
		 * stacks, which cannot give it back (320 MiB of small objects
		 * freed under a 400 MiB budget: the program could map 74 MiB,
		 * glibc 397) */
		limited = _uslub_as_limited();
	}
	struct list_head unmap = LIST_HEAD_INIT(unmap);
	if (limited)
		purge_expired(n, true, &unmap);
	if (now || !purge_thread_running()) {    /* else the thread's work */
		purge_expired(n, now, &unmap);
		purge_dirty(n, now);
	}
	uslub_mutex_unlock(&n->lock, RANK_PAGE_NODE);
	unmap_segments(&unmap);
	if (became_purgeable)
		_uslub_purge_notify();       /* never starts the thread: see purge_start() */
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
	_uslub_page_init();
	size_t bytes = purge_pass(true, NULL);
	/* the unused rest of the current reservation: address space */
	uslub_mutex_lock(&reserve_lock, RANK_RESERVE);
	char *cur = reserve_cur, *end = reserve_end;
	reserve_cur = reserve_end = NULL;
	uslub_mutex_unlock(&reserve_lock, RANK_RESERVE);
	if (end > cur && _uslub_sys_munmap(cur, (size_t)(end - cur))) {
		/* refused: it stays the reservation, unless a new one was made */
		uslub_mutex_lock(&reserve_lock, RANK_RESERVE);
		if (reserve_cur == reserve_end) {
			reserve_cur = cur;
			reserve_end = end;
		}
		uslub_mutex_unlock(&reserve_lock, RANK_RESERVE);
	}
	return bytes;
}

void *_uslub_page_map(size_t len)
{
	/* the order a trim would take its locks in, checked on every call
	 * (a failure is rare, and its caller's locks are not) */
	_uslub_lockdep_acquire(RANK_PAGE_NODE);
	_uslub_lockdep_release(RANK_PAGE_NODE);
	for (int retried = 0;; retried++) {
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED)
			return p;
		if (retried || errno != ENOMEM)
			return NULL;
		_uslub_page_trim();
	}
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
	out->segments_kept = READ_ONCE(pstats.segments_kept);
	out->release_failures = _uslub_release_failures();
	out->bytes_unreleased = _uslub_sys_parked_bytes();
}
