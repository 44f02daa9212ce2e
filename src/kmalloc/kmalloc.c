/*
 * The kmalloc family: kmalloc caches, page runs and huge mappings.
 * See kmalloc.h for the size table, alignment and how a free finds its
 * allocation.
 */
#define _GNU_SOURCE
#include "kmalloc/kmalloc.h"
#include "cache/internal.h"
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct kmem_cache *_uslub_kmalloc_caches[KMALLOC_SHIFT_HIGH + 1];

/*
 * kmalloc partitions (Linux 7.2's CONFIG_KMALLOC_PARTITION_CACHES, the
 * successor of RANDOM_KMALLOC_CACHES; USLUB_KMALLOC_PARTITIONS=1). An
 * allocation of the normal type (not USLUB_GFP_ACCOUNT: the kernel's
 * kmalloc_type(), whose accounted objects have a set of their own) of up
 * to 8 KiB takes one of KMALLOC_PARTS sets of the kmalloc caches, the
 * normal caches (partition 0) or the copies kmalloc-part-01-<size> ..
 * kmalloc-part-15-<size> (bucket sets made at kmalloc's initialization),
 * chosen by the call site's token (kmalloc_site_token()):
 *
 *   token                                 partition
 *   below KMALLOC_PARTS (typed mode)      the token
 *   any other value: a tag's address,     hash_64(token ^ kmalloc_seed), top
 *   or a return address (random mode)     4 bits (a multiplicative hash)
 *
 * kmalloc_seed comes from getrandom() at initialization, so the map from
 * sites to partitions differs from process to process and a fork child
 * keeps its parent's, as a boot keeps the kernel's.
 *
 * The cost when off is nothing: kmalloc's inline path takes its cache
 * from kmalloc_inline[], the normal caches when partitions are off and
 * all NULL when they are on, so every kmalloc then misses into
 * kmalloc_miss(), which picks the set. The malloc front end has caches
 * of its own and is not partitioned.
 */
#define KMALLOC_PARTS USLUB_KMALLOC_PARTITIONS
static struct kmem_cache *kmalloc_inline[KMALLOC_SHIFT_HIGH + 1];
static uslub_kmem_buckets kmalloc_part_sets[KMALLOC_PARTS - 1];
static uslub_kmem_buckets *kmalloc_parts[KMALLOC_PARTS];   /* [0]: _uslub_kmalloc_caches */
static uint64_t kmalloc_seed;
static bool kmalloc_partitioned;         /* set once, when the sets are made */

/* (size + 7) / 8 -> cache index, for sizes 0..192 (0 is never asked by
 * kmalloc; malloc(0) gets the smallest class). */
const unsigned char _uslub_kmalloc_size_index[25] = {
	3,                              /*   0        -> 8   */
	3, 4, 5, 5,                     /*   8 16 24 32      */
	6, 6, 6, 6,                     /*  40 .. 64  -> 64  */
	1, 1, 1, 1,                     /*  72 .. 96  -> 96  */
	7, 7, 7, 7,                     /* 104 .. 128 -> 128 */
	2, 2, 2, 2, 2, 2, 2, 2,         /* 136 .. 192 -> 192 */
};

/* Overridden by the malloc front end. */
__attribute__((weak)) bool _uslub_kmalloc_fatal_errors(void)
{
	return false;
}

static struct uslub_once kmalloc_once = USLUB_ONCE_INIT;   /* fork-safe (base/lifecycle.h) */
static bool kmalloc_ok;

static struct kmalloc_large_stats kstats;   /* atomics, relaxed */
#define KSTAT_ADD(f, v) __atomic_add_fetch(&kstats.f, (v), __ATOMIC_RELAXED)

static const struct uslub_lifecycle huge_lifecycle;

static bool buckets_fill(uslub_kmem_buckets *b, const char *name, unsigned int flags,
			 unsigned int useroffset, unsigned int usersize, void (*ctor)(void *),
			 bool part);

/* The partitions' sets (kmalloc's initialization, with
 * USLUB_KMALLOC_PARTITIONS=1): kmalloc caches in all but the name, never
 * merged (the kernel's SLAB_NO_MERGE for them), in static storage. false
 * (reported; kmalloc stays one set) when one cannot be made. */
static bool kmalloc_parts_init(void)
{
	kmalloc_parts[0] = &_uslub_kmalloc_caches;
	for (unsigned int i = 1; i < KMALLOC_PARTS; i++) {
		char name[24] = "kmalloc-part-";
		name[13] = (char)('0' + i / 10);
		name[14] = (char)('0' + i % 10);
		if (!buckets_fill(&kmalloc_part_sets[i - 1], name, 0, 0, 0, NULL, true)) {
			_uslub_report("uslub: cannot create the kmalloc partitions; "
				      "kmalloc stays one set\n");
			return false;
		}
		kmalloc_parts[i] = &kmalloc_part_sets[i - 1];
	}
	kmalloc_seed = _uslub_seed64();
	return true;
}

static void kmalloc_init_once(void)
{
	static const char *const names[KMALLOC_SHIFT_HIGH + 1] = {
		[1] = "kmalloc-96", [2] = "kmalloc-192", [3] = "kmalloc-8", [4] = "kmalloc-16",
		[5] = "kmalloc-32", [6] = "kmalloc-64", [7] = "kmalloc-128", [8] = "kmalloc-256",
		[9] = "kmalloc-512", [10] = "kmalloc-1k", [11] = "kmalloc-2k", [12] = "kmalloc-4k",
		[13] = "kmalloc-8k",
	};
	_uslub_tls.init_depth++;
	_uslub_init();
	_uslub_lifecycle_register(&huge_lifecycle);   /* before huge_lock can be used */
	bool fatal = _uslub_kmalloc_fatal_errors();
	for (unsigned int i = 1; i <= KMALLOC_SHIFT_HIGH; i++) {
		size_t size = kmalloc_index_size(i);
		struct uslub_cache_args args = {
			.align = i == 1 ? 32 : i == 2 ? 64 : size,
			.sheaf_capacity = _uslub_option(USLUB_OPT_KMALLOC_SHEAVES) ?
					  sheaf_default_capacity(size) : 0,
		};
		struct kmem_cache *s = uslub_cache_create_args(names[i], size, &args,
				args.sheaf_capacity ? 0 : USLUB_CPU_SLAB);
		if (!s) {
			_uslub_report("uslub: cannot create the kmalloc caches\n");
			goto out;
		}
		if (fatal)
			s->flags |= SLAB_ABORT_ON_ERROR;
		cache_set_rec_thread(s);
		__atomic_store_n(&_uslub_kmalloc_caches[i], s, __ATOMIC_RELEASE);
	}
	if (_uslub_option(USLUB_OPT_KMALLOC_PARTITIONS) && kmalloc_parts_init())
		__atomic_store_n(&kmalloc_partitioned, true, __ATOMIC_RELEASE);
	if (!kmalloc_partitioned)
		for (unsigned int i = 1; i <= KMALLOC_SHIFT_HIGH; i++)
			__atomic_store_n(&kmalloc_inline[i], _uslub_kmalloc_caches[i],
					 __ATOMIC_RELEASE);
	__atomic_store_n(&kmalloc_ok, true, __ATOMIC_RELEASE);
out:
	_uslub_tls.init_depth--;
}

bool _uslub_kmalloc_init(void)
{
	_uslub_once(&kmalloc_once, kmalloc_init_once);
	return kmalloc_ok;
}

/* ------------------------------------------------------------------------
 * Profiling of page runs and mappings. A block allocated with a caller
 * tag (the malloc front end's call sites, ext/caller_tag.c: never
 * unregistered, so the pointer stays good until the free) counts on it:
 * its length in bytes, one call, exactly in sampled mode too (blocks this
 * large are few, and a weight of 1 is an unbiased estimate). A page run
 * keeps its tag in the head page's owner[1], a mapping in its table
 * entry. A kernel-API call site's static tag lives in a module that may
 * be unloaded (its objects' references are cleared then, alloc_tag.c),
 * so such a block stays untagged. In sampled mode a sample of the blocks
 * records a stack (ext/stack.c) and keeps its tag instead, which passes
 * the exact counts on to the call site's: each block is sampled with
 * p = 1 - exp(-len / (16 interval)) (8 MiB at the default: a walk per
 * 8 MiB of large blocks on average) by the thread's countdown of large bytes
 * (cache/internal.h sample_large()), its stack weighing len / p bytes and
 * 1 / p blocks. A page run is sampled for its run's length before it is
 * allocated, a mapping for the length it gets (a kept one may be longer
 * than asked), after it is found and before it is recorded: the length
 * its free finds, so that the weights taken off are those added.
 * ---------------------------------------------------------------------- */
static struct uslub_alloc_tag *large_tag(uintptr_t *caller)
{
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	uslub_alloc_tag_cur = NULL;
	*caller = 0;
	if (!tag || !(_uslub_profiling | _uslub_sampling))
		return NULL;
	if ((uintptr_t)tag & USLUB_CALLER_DEFERRED)
		*caller = (uintptr_t)tag & ~USLUB_CALLER_DEFERRED;
	tag = _uslub_tag_resolve(tag);          /* malloc's deferred caller (ext.h) */
	return _uslub_caller_tag_slot(tag) == -1 ? NULL : tag;
}

/* A block that records a stack's tag has this bit set in it (owner[1],
 * the mapping's entry): its free knows it without asking ext/stack.c. */
#define LARGE_STACKED 1ul

static __noinline struct uslub_alloc_tag *large_stack(struct uslub_alloc_tag *tag,
						      uintptr_t caller)
{
	struct uslub_alloc_tag *stag = _uslub_stack_tag(tag, caller, true);
	return stag ? (struct uslub_alloc_tag *)((uintptr_t)stag | LARGE_STACKED) : tag;
}

/* Sampled mode: is the block of @len bytes (at most KMALLOC_MAX_SIZE; its
 * length from allocation to free: the weights are drawn for it), about to
 * be recorded with call site tag @tag, one of the sample? Then it records
 * its stack (ext/stack.c; no lock may be held here): the stack's tag,
 * which stands for the call site's, with LARGE_STACKED. */
static __always_inline struct uslub_alloc_tag *large_sample(struct uslub_alloc_tag *tag,
							    uintptr_t caller, size_t len)
{
	if (tag && _uslub_sampling && unlikely(sample_large(len)))
		return large_stack(tag, caller);
	return tag;
}

/* The stack (@stag, LARGE_STACKED cleared) of the block at @addr gets its
 * weights for @bytes (negative: a free) and @calls; returns the call
 * site's tag. */
static __noinline struct uslub_alloc_tag *large_stack_add(struct uslub_alloc_tag *stag,
							  const void *addr, int64_t bytes,
							  int64_t calls)
{
	int64_t b, c;
	_uslub_sample_large_weights((size_t)(bytes < 0 ? -bytes : bytes), (uintptr_t)addr, &b, &c);
	_uslub_stack_add(stag, bytes < 0 ? -b : b, calls < 0 ? -c : c);
	return _uslub_stack_caller(stag);
}

/* Count @bytes and @calls of the block at @addr on its @tag: a caller
 * tag, or a stack's tag (sampled, LARGE_STACKED), whose stack gets the
 * block's weights (a block or its free: never a resize,
 * large_tag_unstack()) and passes the exact count on to its call site's
 * tag. */
static __always_inline void large_tag_add(struct uslub_alloc_tag *tag, const void *addr,
					  int64_t bytes, int64_t calls)
{
	if (!tag)
		return;
	if (unlikely((uintptr_t)tag & LARGE_STACKED))
		tag = large_stack_add((struct uslub_alloc_tag *)((uintptr_t)tag & ~LARGE_STACKED),
				      addr, bytes, calls);
	_uslub_tag_add_slow(tag, bytes, calls);
}

/* A mapping of @len bytes at @addr on a stack's tag @tag resized in
 * place: the stack gives it up (its weights were drawn for @len), its
 * call site's tag keeps it; the tag it records from now on. */
static struct uslub_alloc_tag *large_tag_unstack(struct uslub_alloc_tag *tag, const void *addr,
						 size_t len)
{
	if (!((uintptr_t)tag & LARGE_STACKED))
		return tag;
	struct uslub_alloc_tag *stag = (struct uslub_alloc_tag *)((uintptr_t)tag & ~LARGE_STACKED);
	int64_t b, c;
	_uslub_sample_large_weights(len, (uintptr_t)addr, &b, &c);
	_uslub_stack_add(stag, -b, -c);
	return _uslub_stack_caller(stag);
}

/* ------------------------------------------------------------------------
 * Page runs: 8 KiB < size <= 2 MiB
 * ---------------------------------------------------------------------- */
static void *kmalloc_large(size_t size, size_t align, uslub_gfp_t gfp, int node,
			   struct uslub_alloc_tag *tag)
{
	unsigned int order = get_order(MAX(size, align));
	if (node == USLUB_NUMA_NO_NODE)
		node = _uslub_home_node();
	for (;;) {
		struct page *page = _uslub_alloc_pages(order, node);
		if (likely(page)) {
			_uslub_purge_poll();  /* an allocation: the purge thread may start (or, without it, a due purge run) here */
			page->owner[0] = size;
			page->owner[1] = (unsigned long)tag;
			__atomic_store_n(&page->flags, page->flags | PG_large, __ATOMIC_RELEASE);
			KSTAT_ADD(large_allocs, 1);
			KSTAT_ADD(large_bytes, PAGE_SIZE << order);
			void *p = page_address(page);
			large_tag_add(tag, p, (int64_t)(PAGE_SIZE << order), 1);
			if (gfp & USLUB_GFP_ZERO)
				memset(p, 0, size);
			return p;
		}
		if (!(gfp & USLUB_GFP_NOFAIL)) {
			errno = ENOMEM;
			return NULL;
		}
		sched_yield();
	}
}

static void free_large(struct page *head)
{
	KSTAT_ADD(large_frees, 1);
	KSTAT_ADD(large_bytes, -(PAGE_SIZE << page_order(head)));
	large_tag_add((struct uslub_alloc_tag *)head->owner[1], page_address(head),
		      -(int64_t)(PAGE_SIZE << page_order(head)), -1);
	head->owner[1] = 0;
	__atomic_store_n(&head->flags, head->flags & ~PG_large, __ATOMIC_RELAXED);
	_uslub_free_pages(head);
}

/* ------------------------------------------------------------------------
 * Huge mappings: an open-addressing table of {start, length, alignment}
 * keyed by the start address, in its own mapping. Tombstones are dropped
 * when the table is rebuilt (at 3/4 full, counting them).
 * ---------------------------------------------------------------------- */
struct huge_entry {
	uintptr_t ptr;                   /* 0: empty, 1: tombstone */
	size_t len;                      /* mapped bytes (a page multiple) */
	size_t align;
	struct uslub_alloc_tag *tag;     /* profiling: the caller tag, or NULL */
};
#define HUGE_EMPTY 0
#define HUGE_TOMB  1

static pthread_mutex_t huge_lock = PTHREAD_MUTEX_INITIALIZER;
static struct huge_entry *htab;          /* huge_lock */
static size_t hcap, hused, htomb;        /* huge_lock */

static size_t hslot(uintptr_t p, size_t cap)
{
	uint64_t h = (uint64_t)(p >> PAGE_SHIFT) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (cap - 1);
}

static struct huge_entry *huge_find_locked(uintptr_t p)
{
	if (!hcap)
		return NULL;
	for (size_t i = hslot(p, hcap);; i = (i + 1) & (hcap - 1)) {
		if (htab[i].ptr == p)
			return &htab[i];
		if (htab[i].ptr == HUGE_EMPTY)
			return NULL;
	}
}

static void huge_put_locked(struct huge_entry *tab, size_t cap, const struct huge_entry *e)
{
	size_t i = hslot(e->ptr, cap);
	while (tab[i].ptr > HUGE_TOMB)
		i = (i + 1) & (cap - 1);
	tab[i] = *e;
}

/* Insert; false when the table cannot grow (no memory). */
static bool huge_insert_locked(uintptr_t p, size_t len, size_t align,
			       struct uslub_alloc_tag *tag)
{
	if ((hused + htomb + 1) * 4 > hcap * 3) {
		size_t ncap = hcap ? hcap : 256;
		while ((hused + 1) * 2 > ncap)
			ncap *= 2;
		struct huge_entry *ntab = mmap(NULL, ncap * sizeof(*ntab), PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ntab == MAP_FAILED)
			return false;
		for (size_t i = 0; i < hcap; i++)
			if (htab[i].ptr > HUGE_TOMB)
				huge_put_locked(ntab, ncap, &htab[i]);
		if (htab)       /* refused: parked, unmapped again later */
			_uslub_sys_munmap_or_park(htab, hcap * sizeof(*htab));
		htab = ntab;
		hcap = ncap;
		htomb = 0;
	}
	struct huge_entry e = { p, len, align, tag };
	huge_put_locked(htab, hcap, &e);
	hused++;
	return true;
}

static void huge_remove_locked(struct huge_entry *e)
{
	e->ptr = HUGE_TOMB;
	hused--;
	htomb++;
}

/* The length of the huge mapping starting at @p; 0 when there is none. */
static size_t huge_len(const void *p)
{
	if ((uintptr_t)p & (PAGE_SIZE - 1))
		return 0;
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	struct huge_entry *e = huge_find_locked((uintptr_t)p);
	size_t len = e ? e->len : 0;
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	return len;
}

/*
 * Kept mappings. A program that allocates, fills and frees large buffers
 * in a loop would otherwise pay an mmap, a munmap and a page fault per
 * page every time; so freed page-aligned mappings are kept (still mapped,
 * their pages resident) and reused:
 *   - a request takes the smallest kept mapping at least its size; a tail
 *     of 2 MiB or more beyond it is split off and stays kept (no syscall:
 *     the table only records ranges), a smaller one stays with the block;
 *   - failing that, the largest kept mapping below the size is grown with
 *     mremap (its resident pages move with it, only the new part faults);
 *   - the kept bytes are bounded by what the program uses: at most
 *     max(HUGE_KEEP_MIN, huge_peak), huge_peak being the most bytes of
 *     huge mappings live at once since kept mappings last expired (a
 *     high-water mark that decays), in at most HUGE_KEEP_SLOTS pieces;
 *     the oldest goes first to make room;
 *   - a kept mapping unused for USLUB_DECAY_MS is unmapped by the page
 *     layer's background thread (huge_purge, registered on the first
 *     keep) or by the next huge call; uslub_trim() unmaps all of them, and
 *     so does an mmap that fails (then retried once).
 */
#define HUGE_KEEP_SLOTS 64
#define HUGE_KEEP_MIN   (32ul << 20)
static struct { void *p; size_t len; uint64_t since_ns; } hcache[HUGE_KEEP_SLOTS]; /* huge_lock */
static unsigned int hc_n;                /* huge_lock */
static size_t hc_bytes;                  /* huge_lock */
static size_t huge_live, huge_peak;      /* huge_lock: bytes of live mappings, their high-water mark */
static struct uslub_once huge_purge_once = USLUB_ONCE_INIT;   /* fork-safe (base/lifecycle.h) */

static void hcache_del_locked(unsigned int i)
{
	hc_bytes -= hcache[i].len;
	hcache[i] = hcache[--hc_n];
}

/* Keep [@p, @p + @len), merged with the kept ranges right before and
 * after it (a block split off a kept mapping comes back whole). A slot
 * must be free. */
static void hcache_add_locked(void *p, size_t len, uint64_t since)
{
	for (unsigned int i = 0; i < hc_n;) {
		char *q = hcache[i].p;
		if (q + hcache[i].len == (char *)p || (char *)p + len == q) {
			if (q < (char *)p)
				p = q;
			len += hcache[i].len;
			if (hcache[i].since_ns > since)
				since = hcache[i].since_ns;
			hcache_del_locked(i);
			continue;
		}
		i++;
	}
	hcache[hc_n].p = p;
	hcache[hc_n].len = len;
	hcache[hc_n].since_ns = since;
	hc_n++;
	hc_bytes += len;
}

static void huge_live_add_locked(size_t len)
{
	huge_live += len;
	if (huge_live > huge_peak)
		huge_peak = huge_live;
}

/* Move the kept mappings that waited long enough (all with @all) to
 * @out (unmapped by the caller, outside the lock); returns how many. The
 * high-water mark decays to what is left. *@next: when the oldest left
 * expires (0: none). */
static unsigned int hcache_expire_locked(bool all, void **out, size_t *lens, uint64_t *next)
{
	uint64_t delay = (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
	uint64_t now = hc_n ? monotonic_ns(CLOCK_MONOTONIC_COARSE) : 0;
	unsigned int k = 0;
	uint64_t oldest = 0;
	for (unsigned int i = 0; i < hc_n;)
		if (all || now - hcache[i].since_ns >= delay) {
			out[k] = hcache[i].p;
			lens[k++] = hcache[i].len;
			hcache_del_locked(i);
		} else {
			if (!oldest || hcache[i].since_ns < oldest)
				oldest = hcache[i].since_ns;
			i++;
		}
	if (k)
		huge_peak = huge_live + hc_bytes;
	if (next)
		*next = oldest ? oldest + delay : 0;
	return k;
}

static void huge_purge_register(void);


/*
 * Unmap [@p, @p + @len) (no lock held). When the kernel refuses
 * (base/sys.c: a seccomp filter, vm.max_map_count), the range stays
 * uslub's: kept like a freed mapping (its pages returned with
 * MADV_DONTNEED where that is allowed), reused by a later request and
 * unmapped again once it expires. With every keep slot taken it is
 * parked (base/sys.c): its pages returned, its munmap tried again by
 * the next purge pass.
 */
enum huge_unmapped { HUGE_UNMAPPED, HUGE_KEPT, HUGE_PARKED };

static enum huge_unmapped huge_unmap(void *p, size_t len)
{
	if (!_uslub_sys_munmap(p, len))
		return HUGE_UNMAPPED;
	_uslub_sys_madvise_dontneed(p, len);
	bool kept = false;
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	if (hc_n < HUGE_KEEP_SLOTS) {
		hcache_add_locked(p, len, monotonic_ns(CLOCK_MONOTONIC_COARSE));
		kept = true;
	}
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	if (kept)
		_uslub_once(&huge_purge_once, huge_purge_register);
	else
		_uslub_sys_park(p, len);
	_uslub_purge_notify();           /* tried again after the decay */
	return kept ? HUGE_KEPT : HUGE_PARKED;
}

/* Unmap them all; returns how many the kernel refused and were kept,
 * and adds the bytes it did unmap to *@bytes (when not NULL). */
static unsigned int unmap_all(void **p, size_t *lens, unsigned int n, size_t *bytes)
{
	unsigned int kept = 0;
	for (unsigned int i = 0; i < n; i++) {
		enum huge_unmapped r = huge_unmap(p[i], lens[i]);
		kept += r == HUGE_KEPT;
		if (bytes && r == HUGE_UNMAPPED)
			*bytes += lens[i];
	}
	return kept;
}

/* The page layer's purge callback (background thread, trim). */
static size_t huge_purge(bool force, uint64_t *next)
{
	void *old[HUGE_KEEP_SLOTS];
	size_t lens[HUGE_KEEP_SLOTS], bytes = 0;
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	unsigned int k = hcache_expire_locked(force, old, lens, next);
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	unmap_all(old, lens, k, &bytes);
	return bytes;
}

static void huge_purge_register(void)
{
	_uslub_purge_register(huge_purge);
}

/* A kept mapping for @len bytes (page aligned), or NULL; its length in
 * *@got, and in *@resident how much of it may hold old data. */
static void *hcache_take(size_t len, size_t *got, size_t *resident)
{
	void *old[HUGE_KEEP_SLOTS];
	size_t lens[HUGE_KEEP_SLOTS];
	void *p = NULL;
	bool expire = true;
again:
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	unsigned int k = expire ? hcache_expire_locked(false, old, lens, NULL) : 0;
	int best = -1, below = -1;
	for (unsigned int i = 0; i < hc_n; i++) {
		if (hcache[i].len >= len) {
			if (best < 0 || hcache[i].len < hcache[best].len)
				best = (int)i;
		} else if (below < 0 || hcache[i].len > hcache[below].len) {
			below = (int)i;
		}
	}
	size_t grow_from = 0;
	if (best >= 0) {
		p = hcache[best].p;
		*got = hcache[best].len;
		uint64_t since = hcache[best].since_ns;
		hcache_del_locked((unsigned int)best);
		if (*got - len >= KMALLOC_LARGE_MAX) {   /* the tail stays kept */
			hcache_add_locked((char *)p + len, *got - len, since);
			*got = len;
		}
		*resident = *got;
		huge_live_add_locked(*got);
	} else if (below >= 0) {
		p = hcache[below].p;
		grow_from = hcache[below].len;
		hcache_del_locked((unsigned int)below);
	}
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	if (unmap_all(old, lens, k, NULL) && !p && expire) {
		/* the kernel refused to unmap an expired one, kept again
		 * (with USLUB_DECAY_MS=0 all of them expire at once): look
		 * once more, so what it keeps is reused, not mapped anew */
		expire = false;
		goto again;
	}
	if (grow_from) {
		/* outside the lock: the pages move, the new part is fresh */
		void *q = mremap(p, grow_from, len, MREMAP_MAYMOVE);
		if (q == MAP_FAILED) {
			/* e.g. merged ranges of two mappings the kernel kept apart */
			uslub_mutex_lock(&huge_lock, RANK_HUGE);
			if (hc_n < HUGE_KEEP_SLOTS) {
				hcache_add_locked(p, grow_from, monotonic_ns(CLOCK_MONOTONIC_COARSE));
				p = NULL;
			}
			uslub_mutex_unlock(&huge_lock, RANK_HUGE);
			if (p)
				huge_unmap(p, grow_from);
			return NULL;
		}
		p = q;
		*got = len;
		*resident = grow_from;
		uslub_mutex_lock(&huge_lock, RANK_HUGE);
		huge_live_add_locked(len);
		uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	}
	return p;
}

static void *huge_alloc(size_t size, size_t align, uslub_gfp_t gfp, struct uslub_alloc_tag *ctag,
			uintptr_t caller)
{
	_uslub_purge_poll();         /* an allocation: the purge thread may start (or, without it, a due purge run) here */
	if (size > USLUB_KMALLOC_MAX_SIZE || align > USLUB_KMALLOC_MAX_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	size_t len = ALIGN_UP(size, PAGE_SIZE);
	size_t extra = align > PAGE_SIZE ? align - PAGE_SIZE : 0;
	if (!extra) {
		size_t got, resident;
		void *p = hcache_take(len, &got, &resident);
		if (p) {
			struct uslub_alloc_tag *tag = large_sample(ctag, caller, got);
			uslub_mutex_lock(&huge_lock, RANK_HUGE);
			bool ok = huge_insert_locked((uintptr_t)p, got, align, tag);
			if (!ok)
				huge_live -= got;
			uslub_mutex_unlock(&huge_lock, RANK_HUGE);
			if (ok) {
				KSTAT_ADD(huge_allocs, 1);
				KSTAT_ADD(huge_bytes, got);
				large_tag_add(tag, p, (int64_t)got, 1);
				if (gfp & USLUB_GFP_ZERO)
					memset(p, 0, MIN(size, resident));
				return p;
			}
			huge_unmap(p, got);
		}
	}
	bool retried = false;
	struct uslub_alloc_tag *tag = large_sample(ctag, caller, len);
	/* huge pages (USLUB_THP): mapped 2 MiB aligned, so all of it can be */
	bool thp = _uslub_thp_mapping(len);
	size_t map_align = MAX(MAX(align, PAGE_SIZE), thp ? THP_SIZE : 0);
	extra = map_align - PAGE_SIZE;
	for (;;) {
		char *base = mmap(NULL, len + extra, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base != MAP_FAILED) {
			char *p = (char *)ALIGN_UP((uintptr_t)base, map_align);
			if (thp)
				_uslub_thp_advise(p, len);
			/* the alignment slack; if refused it is parked
			 * (base/sys.c) and unmapped again later */
			if (p > base)
				_uslub_sys_munmap_or_park(base, (size_t)(p - base));
			if (base + len + extra > p + len)
				_uslub_sys_munmap_or_park(p + len,
							  (size_t)(base + len + extra - (p + len)));
			uslub_mutex_lock(&huge_lock, RANK_HUGE);
			bool ok = huge_insert_locked((uintptr_t)p, len, align, tag);
			if (ok)
				huge_live_add_locked(len);
			uslub_mutex_unlock(&huge_lock, RANK_HUGE);
			if (ok) {
				KSTAT_ADD(huge_allocs, 1);
				KSTAT_ADD(huge_bytes, len);
				large_tag_add(tag, p, (int64_t)len, 1);
				return p;          /* fresh anonymous memory: zeroed */
			}
			huge_unmap(p, len);        /* no memory for the table */
		}
		if (!retried) {
			/* out of address space (RLIMIT_AS) or memory: give back
			 * what is kept (mappings, empty segments) and try again */
			retried = true;
			if (_uslub_page_trim())
				continue;
		}
		if (!(gfp & USLUB_GFP_NOFAIL)) {
			errno = ENOMEM;
			return NULL;
		}
		sched_yield();
	}
}

/* The starts of the last HUGE_FREED_RING mappings freed (huge_lock), so
 * that a second free of one (or a realloc, a malloc_usable_size) is named
 * a use of a freed block; so is the start of a page in a kept mapping. */
#define HUGE_FREED_RING 64
static uintptr_t hfreed[HUGE_FREED_RING];
static unsigned int hfreed_next;

static bool huge_freed_before(const void *p)
{
	bool found = false;
	if ((uintptr_t)p & (PAGE_SIZE - 1))
		return false;
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	for (unsigned int i = 0; i < HUGE_FREED_RING && !found; i++)
		found = hfreed[i] == (uintptr_t)p;
	for (unsigned int i = 0; i < hc_n && !found; i++)
		found = (char *)p >= (char *)hcache[i].p &&
			(char *)p < (char *)hcache[i].p + hcache[i].len;
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	return found;
}

/* Where @p lies among the huge mappings when it starts none: 1 inside a
 * live one, 2 inside a kept one (freed before), else 0. A scan of the
 * tables: only for a message. */
static int huge_inside(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	int where = 0;
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	for (size_t i = 0; i < hcap && !where; i++)
		if (htab[i].ptr > HUGE_TOMB && a > htab[i].ptr && a - htab[i].ptr < htab[i].len)
			where = 1;
	for (unsigned int i = 0; i < hc_n && !where; i++)
		if (a >= (uintptr_t)hcache[i].p && a - (uintptr_t)hcache[i].p < hcache[i].len)
			where = 2;
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	return where;
}

static bool huge_free(const void *p)
{
	if ((uintptr_t)p & (PAGE_SIZE - 1))
		return false;
	void *old[HUGE_KEEP_SLOTS + 1];
	size_t lens[HUGE_KEEP_SLOTS + 1];
	unsigned int k = 0;
	size_t len = 0;
	bool kept = false;
	struct uslub_alloc_tag *tag = NULL;
	/* under an address-space limit nothing is kept: what uslub keeps is
	 * taken from the program's own mmaps and thread stacks, which cannot
	 * give it back (after freeing 320 of a 400 MiB budget in 64 MiB
	 * blocks a program could map 77 MiB, glibc 400; 8 threads, glibc 33) */
	bool limited = _uslub_as_limited();
	bool may_keep = _uslub_option(USLUB_OPT_DECAY_MS) != 0 && !limited;
	if (may_keep)
		_uslub_once(&huge_purge_once, huge_purge_register);
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	struct huge_entry *e = huge_find_locked((uintptr_t)p);
	if (e) {
		len = e->len;
		tag = e->tag;
		bool keep = may_keep && e->align <= PAGE_SIZE;
		huge_remove_locked(e);
		huge_live -= len;
		hfreed[hfreed_next++ % HUGE_FREED_RING] = (uintptr_t)p;
		k = hcache_expire_locked(limited, old, lens, NULL);
		size_t limit = MAX(HUGE_KEEP_MIN, huge_peak);
		keep = keep && len <= limit;
		while (keep && (hc_n == HUGE_KEEP_SLOTS || hc_bytes + len > limit)) {
			unsigned int oldest = 0;     /* make room: the oldest goes */
			for (unsigned int i = 1; i < hc_n; i++)
				if (hcache[i].since_ns < hcache[oldest].since_ns)
					oldest = i;
			old[k] = hcache[oldest].p;
			lens[k++] = hcache[oldest].len;
			hcache_del_locked(oldest);
		}
		if (keep) {
			hcache_add_locked((void *)p, len, monotonic_ns(CLOCK_MONOTONIC_COARSE));
			kept = true;
		}
	}
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	if (!e)
		return false;
	unmap_all(old, lens, k, NULL);
	if (!kept)
		huge_unmap((void *)p, len);
	KSTAT_ADD(huge_frees, 1);
	KSTAT_ADD(huge_bytes, -len);
	large_tag_add(tag, p, -(int64_t)len, -1);
	if (kept)
		_uslub_purge_notify();
	return true;
}

/* Resize the huge mapping at @p in place or by mremap; NULL when that is
 * not possible (the caller copies). */
static void *huge_resize(void *p, size_t new_size)
{
	size_t nlen = ALIGN_UP(new_size, PAGE_SIZE);
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	struct huge_entry *e = huge_find_locked((uintptr_t)p);
	size_t len = e->len, align = e->align;
	struct uslub_alloc_tag *tag = e->tag = large_tag_unstack(e->tag, p, len);
	if (nlen <= len) {                       /* shrink: drop the tail */
		e->len = nlen;
		huge_live -= len - nlen;
		uslub_mutex_unlock(&huge_lock, RANK_HUGE);
		if (nlen < len) {
			huge_unmap((char *)p + nlen, len - nlen);
			KSTAT_ADD(huge_bytes, -(len - nlen));
			large_tag_add(tag, p, -(int64_t)(len - nlen), 0);
		}
		return p;
	}
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	if (align > PAGE_SIZE)
		return NULL;                     /* mremap keeps only page alignment */
	void *q = mremap(p, len, nlen, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return NULL;
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
	e = huge_find_locked((uintptr_t)p);
	huge_remove_locked(e);
	bool ok = huge_insert_locked((uintptr_t)q, nlen, align, tag);
	if (ok)
		huge_live_add_locked(nlen - len);
	else
		huge_live -= len;
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
	if (!ok) {              /* no room to record it: undo as far as we can */
		huge_unmap(q, nlen);
		large_tag_add(tag, q, -(int64_t)len, -1);   /* the block is gone */
		return NULL;
	}
	KSTAT_ADD(huge_bytes, nlen - len);
	large_tag_add(tag, q, (int64_t)(nlen - len), 0);
	return q;
}

/* fork: huge_lock in rank order (base/lifecycle.h) */
static void huge_prefork(void)
{
	uslub_mutex_lock(&huge_lock, RANK_HUGE);
}
static void huge_postfork_parent(void)
{
	uslub_mutex_unlock(&huge_lock, RANK_HUGE);
}
static void huge_postfork_child(void)
{
	uslub_mutex_reset(&huge_lock, RANK_HUGE);
}
static const struct uslub_lifecycle huge_lifecycle = {
	.name = "huge_lock",
	.rank = RANK_HUGE,
	.prefork = huge_prefork,
	.postfork_parent = huge_postfork_parent,
	.postfork_child = huge_postfork_child,
};

/* ------------------------------------------------------------------------
 * The slow paths
 * ---------------------------------------------------------------------- */

/* The class index for @need bytes (up to 8 KiB) aligned to @align: 96 and
 * 192 are aligned to 32 and 64 only. */
static __always_inline unsigned int kmalloc_class(size_t need, size_t align)
{
	unsigned int idx = kmalloc_index(need);
	if (idx == 1 && align > 32)
		idx = 7;
	else if (idx == 2 && align > 64)
		idx = 8;
	return idx;
}

/* The partition of @token (see the top of the file). */
static __always_inline unsigned int kmalloc_part_of(unsigned long token)
{
	if (token < KMALLOC_PARTS)
		return (unsigned int)token;
	return (unsigned int)(((token ^ kmalloc_seed) * 0x61c8864680b583ebull) >> 60);
}

/* The token of the kmalloc call being served: the site's tag (the entry
 * macros', <uslub/types.h>: its typed partition, or its address), else
 * @ret, the public entry point's return address. A tag of the malloc
 * front end's deferred kind is never looked into. */
static __always_inline unsigned long kmalloc_site_token(unsigned long ret)
{
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	if (!tag)
		return ret;
	if (!((uintptr_t)tag & USLUB_CALLER_DEFERRED) && tag->kmalloc_part)
		return tag->kmalloc_part - 1;
	return (unsigned long)tag;
}

/* Before kmalloc's first use: make the caches (or wait for the thread
 * that makes them), unless this thread is inside an initialization;
 * then whether kmalloc is partitioned. */
static __cold bool kmalloc_parts_wait(void)
{
	if (!__atomic_load_n(&kmalloc_ok, __ATOMIC_ACQUIRE) && !_uslub_tls.init_depth)
		(void)_uslub_kmalloc_init();
	return __atomic_load_n(&kmalloc_partitioned, __ATOMIC_ACQUIRE);
}

/*
 * The kmalloc API's miss (malloc never comes here): the caches not made
 * yet, sizes above 8 KiB or aligned beyond their class, and, with
 * partitions, every allocation of up to 8 KiB (kmalloc_inline[] is empty
 * then): one of the normal type takes the class cache of @token's
 * partition. Before the first use it waits for kmalloc's initialization
 * when another thread runs it, so no allocation slips into the normal
 * caches before the partitions are there.
 */
static __noinline void *kmalloc_miss(size_t size, size_t align, uslub_gfp_t gfp, int node,
				     unsigned long token)
{
	size_t need = MAX(size, align);
	if (need - 1 < KMALLOC_MAX_CACHE_SIZE && !(gfp & USLUB_GFP_ACCOUNT) &&
	    (likely(__atomic_load_n(&kmalloc_partitioned, __ATOMIC_ACQUIRE)) ||
	     (unlikely(!__atomic_load_n(&kmalloc_ok, __ATOMIC_RELAXED)) && kmalloc_parts_wait()))) {
		unsigned int idx = kmalloc_class(need, align);
		return slab_alloc_node((*kmalloc_parts[kmalloc_part_of(token)])[idx], gfp, node,
				       size ? size : 1);
	}
	return _uslub_kmalloc_slow(size, align, gfp, node);
}

/* kmalloc_inline[] had no cache for @size (1 .. 8 KiB): with partitions
 * (the usual reason) an allocation of the normal type takes its
 * partition's cache here, with nothing to save (every other way out is a
 * tail call); anything else is kmalloc_miss()'s. The class index is
 * worked out again: kept from the inline path, it cost the hit a
 * register move. */
static __noinline void *kmalloc_part_miss(size_t size, uslub_gfp_t gfp, int node,
					  unsigned long token)
{
	if (likely(__atomic_load_n(&kmalloc_partitioned, __ATOMIC_ACQUIRE)) &&
	    likely(!(gfp & USLUB_GFP_ACCOUNT)))
		return slab_alloc_node((*kmalloc_parts[kmalloc_part_of(token)])[kmalloc_index(size)],
				       gfp, node, size);
	return kmalloc_miss(size, 1, gfp, node, token);
}

/* The public entry point's return address, for kmalloc_site_token() (an
 * always-inline helper's is its caller's). */
#define KMALLOC_RET_IP ((unsigned long)__builtin_return_address(0))
void *_uslub_kmalloc_slow(size_t size, size_t align, uslub_gfp_t gfp, int node)
{
	if (unlikely(!__atomic_load_n(&_uslub_kmalloc_caches[KMALLOC_SHIFT_HIGH], __ATOMIC_ACQUIRE)) &&
	    !_uslub_kmalloc_init()) {
		uslub_alloc_tag_cur = NULL;
		errno = ENOMEM;
		return NULL;
	}
	size_t need = MAX(size, align);
	if (need <= KMALLOC_MAX_CACHE_SIZE)
		return slab_alloc_node(_uslub_kmalloc_caches[kmalloc_class(need, align)], gfp,
				       node, size ? size : 1);
	uintptr_t caller;
	struct uslub_alloc_tag *tag = large_tag(&caller);   /* before anything nests */
	if (need <= KMALLOC_LARGE_MAX)
		return kmalloc_large(size, align, gfp, node,
				     large_sample(tag, caller, (size_t)PAGE_SIZE << get_order(need)));
	return huge_alloc(size, align, gfp, tag, caller);
}

/*
 * Why @p, the start of no live block, cannot be freed, resized or sized:
 * the same cause from every entry point (free, realloc, malloc_usable_size
 * and ksize), so a freed huge block is not a double free to free() and "a
 * pointer uslub did not allocate" to realloc(). Printed as pre, then
 * (when the block was freed) the entry point's name for using it again,
 * then post.
 */
struct invalid_cause {
	const char *pre, *post;
	bool freed;
};

static struct invalid_cause invalid_cause(const void *p)
{
	bool page_start = !((uintptr_t)p & (PAGE_SIZE - 1));
	struct page *head = _uslub_virt_to_head_page(p);
	if (head) {
		unsigned long f = __atomic_load_n(&head->flags, __ATOMIC_ACQUIRE);
		if (f & PG_slab)
			return (struct invalid_cause){ "inside a slab object, not its start", "", false };
		if (f & PG_large)
			return (struct invalid_cause){ "inside a kmalloc page run, not its start", "",
						       false };
	} else if (huge_freed_before(p)) {
		return (struct invalid_cause){ "", " of a huge block (a mapping above 2 MiB freed "
					       "before)", true };
	} else {
		int where = huge_inside(p);
		if (where == 1)
			return (struct invalid_cause){ "inside a huge block (a mapping above 2 MiB), "
						       "not its start", "", false };
		if (where == 2)
			return (struct invalid_cause){ "not inside any allocation (a pointer into a "
						       "huge block freed before)", "", false };
	}
	if (_uslub_owns_segment(p) && page_start)
		return (struct invalid_cause){ "nothing is allocated there: ", " of a kmalloc page "
					       "run (8 KiB - 2 MiB), or a pointer into freed memory",
					       true };
	if (_uslub_owns_segment(p))
		return (struct invalid_cause){ "not inside any allocation (a pointer into freed "
					       "memory)", "", false };
	return (struct invalid_cause){ "a pointer uslub did not allocate", "", false };
}

/* A free (or a realloc: @op) of @p that cannot be done, named by its
 * cause; @again: what a use of a freed block is called there ("a double
 * free", "a realloc after free"). */
static __cold void invalid_report(const char *op, const void *p, const char *pre,
				  const char *mid, const char *post, bool fatal)
{
	_uslub_report_error("uslub: %s of %p: %s%s%s; left alone\n", op, p, pre, mid, post);
	if (fatal) {
		_uslub_report("uslub: aborting (USLUB_MALLOC_ABORT=0 reports and goes on)\n");
		abort();
	}
}

static __cold void invalid_op(const char *op, const char *again, const void *p, bool fatal)
{
	struct invalid_cause c = invalid_cause(p);
	invalid_report(op, p, c.pre, c.freed ? again : "", c.post, fatal);
}

void _uslub_kfree_cold(const void *p, bool fatal)
{
	if (USLUB_ZERO_OR_NULL_PTR(p))
		return;
	struct page *head = _uslub_virt_to_head_page(p);
	if (head) {
		unsigned long f = __atomic_load_n(&head->flags, __ATOMIC_ACQUIRE);
		if (f & PG_slab) {
			struct kmem_cache *s = page_slab(head)->slab_cache;
			if (sample_free_needed(p))   /* sampled profiling (cache/sample.c) */
				_uslub_sample_free(s, page_slab(head), (void *)p);
			slab_free_to_pcs(s, page_slab(head), (void *)p);
			return;
		}
		if ((f & PG_large) && page_address(head) == p) {
			free_large(head);
			return;
		}
	} else if (huge_free(p)) {
		return;
	}
	invalid_op("free", "a double free", p, fatal);
}

bool _uslub_kfree_refused(const void *p, const char *op)
{
	struct page *head = _uslub_virt_to_head_page(p);
	if (head) {
		unsigned long f = __atomic_load_n(&head->flags, __ATOMIC_ACQUIRE);
		if ((f & PG_slab) || ((f & PG_large) && page_address(head) == p))
			return false;
	} else if (huge_len(p)) {
		return false;
	}
	invalid_op(op, "a double free", p, false);
	return true;
}

enum kind { K_INVALID, K_FREED, K_SLAB, K_LARGE, K_HUGE };

/* The end of a krealloc that moves: copy what fits from @p (of kind @k,
 * @usable bytes; its cache @s) to @q, free @p, return @q. */
static void *krealloc_move(void *q, const void *p, enum kind k, struct kmem_cache *s,
			   size_t usable, size_t new_size)
{
	if (k == K_SLAB && cache_kasan(s))       /* all of it is read (freed next) */
		_uslub_kasan_unpoison(p, usable);
	memcpy(q, p, MIN(usable, new_size));
	_uslub_kfree_cold(p, false);
	return q;
}

/* What @p is and its usable size, without side effects. */
static enum kind classify(const void *p, size_t *usable, struct kmem_cache **sp)
{
	struct page *head = _uslub_virt_to_head_page(p);
	if (head) {
		unsigned long f = __atomic_load_n(&head->flags, __ATOMIC_ACQUIRE);
		if (f & PG_slab) {
			struct slab *slab = page_slab(head);
			struct kmem_cache *s = slab->slab_cache;
			if (!obj_is_valid(s, slab, p))
				return K_INVALID;
			*sp = s;
			*usable = s->object_size;
			if (!kmem_cache_debug(s) && free_mark_test(s, (void *)p, slab_free_mark(s, slab)))
				return K_FREED;   /* a user freed it (the free mark) */
			return K_SLAB;
		}
		if ((f & PG_large) && page_address(head) == p) {
			*usable = PAGE_SIZE << page_order(head);
			return K_LARGE;
		}
		return K_INVALID;
	}
	*usable = huge_len(p);
	return *usable ? K_HUGE : K_INVALID;
}

size_t _uslub_ksize(const void *p, bool fatal)
{
	if (USLUB_ZERO_OR_NULL_PTR(p))
		return 0;
	size_t usable = 0;
	struct kmem_cache *s = NULL;
	switch (classify(p, &usable, &s)) {
	case K_SLAB:
		if (kmem_cache_debug(s))         /* the caller may use all of it */
			_uslub_debug_set_orig_size(s, (void *)p, s->object_size);
		else if (cache_kasan(s))         /* so may it under ASan (kasan.c) */
			_uslub_kasan_unpoison(p, usable);
		return usable;
	case K_LARGE:
	case K_HUGE:
		return usable;
	case K_FREED:
		_uslub_report_error("uslub: %s: size of %p asked, which is already free (use "
				    "after free)\n", s->name, p);
		if (fatal)
			abort();
		return 0;
	default: {
		struct invalid_cause c = invalid_cause(p);
		_uslub_report_error("uslub: size of %p: %s%s%s\n", p, c.pre,
				    c.freed ? "a use after free" : "", c.post);
		if (fatal)
			abort();
		return 0;
	}
	}
}

/* _uslub_krealloc(); a move of the kmalloc API's (@malloc_alloc NULL)
 * takes @token's partition. */
static void *krealloc_token(void *p, size_t new_size, uslub_gfp_t gfp,
			    void *(*malloc_alloc)(size_t), unsigned long token)
{
	bool malloc_semantics = malloc_alloc != NULL;
	if (unlikely(new_size > USLUB_KMALLOC_MAX_SIZE)) {   /* p stays as it was */
		errno = ENOMEM;
		return NULL;
	}
	size_t usable = 0;
	struct kmem_cache *s = NULL;
	enum kind k = classify(p, &usable, &s);
	if (k == K_INVALID || k == K_FREED) {
		bool fatal = malloc_semantics && _uslub_option(USLUB_OPT_MALLOC_ABORT);
		if (k == K_FREED) {
			invalid_report("realloc", p, "the object is already free (a realloc after "
				       "free)", "", "", fatal);
		} else {
			invalid_op("realloc", "a realloc after free", p, fatal);
		}
		errno = EINVAL;
		return NULL;
	}
	/* a shrink below half moves (malloc), to give the memory back */
	bool fits = new_size <= usable &&
		    (!malloc_semantics || new_size > usable / 2 || usable <= 16);
	if (k == K_HUGE && (new_size > KMALLOC_LARGE_MAX || new_size > usable)) {
		void *q = huge_resize(p, new_size);
		if (q)
			return q;
	} else if (fits) {
		bool kasan = k == K_SLAB && cache_kasan(s);
		if (k == K_SLAB && kmem_cache_debug(s)) {
			_uslub_debug_set_orig_size(s, p, (unsigned int)new_size);
		} else {
			if (kasan)      /* under ASan: new_size bytes usable (kasan.c) */
				_uslub_kasan_unpoison(p, usable);
			if (gfp & USLUB_GFP_ZERO)   /* a later growth finds zeroes */
				memset((char *)p + new_size, 0, usable - new_size);
			if (kasan)
				_uslub_kasan_poison((char *)p + new_size, usable - new_size);
		}
		return p;
	}
	/* realloc growing a slab object by a little: ask for half as much
	 * again, so a buffer grown step by step moves O(log) times through
	 * malloc's fine classes, not once per class (B8 realloc: memcpy
	 * bytes 3.3x those of power-of-two classes without this) */
	size_t ask = new_size;
	if (malloc_semantics && k == K_SLAB && new_size > usable && new_size < usable + usable / 2)
		ask = usable + usable / 2;
	void *q = malloc_alloc ? malloc_alloc(ask) :
		  kmalloc_miss(new_size, 1, gfp, USLUB_NUMA_NO_NODE, token);
	if (!q)
		return NULL;
	return krealloc_move(q, p, k, s, usable, new_size);
}

void *_uslub_krealloc(void *p, size_t new_size, uslub_gfp_t gfp, void *(*malloc_alloc)(size_t))
{
	return krealloc_token(p, new_size, gfp, malloc_alloc, KMALLOC_RET_IP);
}

void _uslub_kmalloc_large_stats(struct kmalloc_large_stats *out)
{
	out->large_allocs = __atomic_load_n(&kstats.large_allocs, __ATOMIC_RELAXED);
	out->large_frees = __atomic_load_n(&kstats.large_frees, __ATOMIC_RELAXED);
	out->large_bytes = __atomic_load_n(&kstats.large_bytes, __ATOMIC_RELAXED);
	out->huge_allocs = __atomic_load_n(&kstats.huge_allocs, __ATOMIC_RELAXED);
	out->huge_frees = __atomic_load_n(&kstats.huge_frees, __ATOMIC_RELAXED);
	out->huge_bytes = __atomic_load_n(&kstats.huge_bytes, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------
 * The public kmalloc API
 * ---------------------------------------------------------------------- */
/* kmalloc's inline path: a class cache hit. Everything else (and, with
 * partitions, everything) goes to kmalloc_miss(), with @token, or with
 * @site the token of the call site: the tag the entry macro set, or the
 * return address of the public function this is inlined into (worked
 * out on the miss only). */
static __always_inline void *kmalloc_inline_token(size_t size, uslub_gfp_t gfp, int node,
						  bool site, unsigned long token)
{
	if (likely(size - 1 < KMALLOC_MAX_CACHE_SIZE)) {        /* 1 .. 8 KiB */
#ifdef USLUB_TSAN
		/* published by a release store (kmalloc_init_once(), racing
		 * with a first kmalloc of another thread): TSan sees the pair */
		struct kmem_cache *s = __atomic_load_n(&kmalloc_inline[kmalloc_index(size)],
						       __ATOMIC_ACQUIRE);
#else
		/* a plain load, as malloc's class tables are read */
		struct kmem_cache *s = kmalloc_inline[kmalloc_index(size)];
#endif
		if (likely(s))
			return slab_alloc_node(s, gfp, node, size);
		return kmalloc_part_miss(size, gfp, node,
					 site ? kmalloc_site_token(KMALLOC_RET_IP) : token);
	}
	if (!size) {
		uslub_alloc_tag_cur = NULL;
		return USLUB_ZERO_SIZE_PTR;
	}
	return kmalloc_miss(size, 1, gfp, node, site ? kmalloc_site_token(KMALLOC_RET_IP) : token);
}

static __always_inline void *kmalloc_node_inline(size_t size, uslub_gfp_t gfp, int node)
{
	return kmalloc_inline_token(size, gfp, node, true, 0);
}

__public void *uslub_kmalloc_noprof(size_t size, uslub_gfp_t gfp)
{
	return kmalloc_node_inline(size, gfp, USLUB_NUMA_NO_NODE);
}

__public void *uslub_kmalloc_node_noprof(size_t size, uslub_gfp_t gfp, int node)
{
	if (node != USLUB_NUMA_NO_NODE && (node < 0 || node >= _uslub_nr_nodes())) {
		uslub_alloc_tag_cur = NULL;
		_uslub_report("uslub: kmalloc on node %d, but there are %d nodes\n", node,
			      _uslub_nr_nodes());
		errno = EINVAL;
		return NULL;
	}
	return kmalloc_node_inline(size, gfp, node);
}

__public void *uslub_kmalloc_array_noprof(size_t n, size_t size, uslub_gfp_t gfp)
{
	size_t bytes;
	if (unlikely(__builtin_mul_overflow(n, size, &bytes))) {
		uslub_alloc_tag_cur = NULL;
		errno = ENOMEM;
		return NULL;
	}
	return kmalloc_node_inline(bytes, gfp, USLUB_NUMA_NO_NODE);
}

__public void *uslub_krealloc_noprof(const void *p, size_t new_size, uslub_gfp_t gfp)
{
	if (unlikely(!new_size)) {
		uslub_alloc_tag_cur = NULL;
		uslub_kfree(p);
		return USLUB_ZERO_SIZE_PTR;
	}
	if (USLUB_ZERO_OR_NULL_PTR(p))
		return kmalloc_node_inline(new_size, gfp, USLUB_NUMA_NO_NODE);
	void *q = krealloc_token((void *)p, new_size, gfp, NULL,
				 kmalloc_site_token(KMALLOC_RET_IP));
	if (q == p)
		uslub_alloc_tag_cur = NULL;      /* nothing new was allocated */
	return q;
}

/* The plain names, as functions (untagged). */
__public void *(uslub_kmalloc)(size_t size, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	return kmalloc_node_inline(size, gfp, USLUB_NUMA_NO_NODE);
}
__public void *(uslub_kmalloc_node)(size_t size, uslub_gfp_t gfp, int node)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_kmalloc_node_noprof(size, gfp, node);
}
__public void *(uslub_kzalloc)(size_t size, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	return kmalloc_node_inline(size, gfp | USLUB_GFP_ZERO, USLUB_NUMA_NO_NODE);
}
__public void *(uslub_kmalloc_array)(size_t n, size_t size, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_kmalloc_array_noprof(n, size, gfp);
}
__public void *(uslub_kcalloc)(size_t n, size_t size, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_kmalloc_array_noprof(n, size, gfp | USLUB_GFP_ZERO);
}
__public void *(uslub_krealloc)(const void *p, size_t new_size, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_krealloc_noprof(p, new_size, gfp);
}

/* The record, then the lookup, both inline: the
 * compiler lays them out after the record's ret and saves its one
 * callee-saved register there, so the hit keeps none and a miss pays no
 * call. */
__public void uslub_kfree(const void *p)
{
	if (likely(free_object_record((void *)p)))
		return;
	if (likely(free_object_lookup((void *)p)))
		return;
	_uslub_kfree_cold(p, false);
}

/*
 * Any context (the kernel's kmalloc_nolock, 6.18): the cache layer's
 * trylock-only path (cache/nolock.c); if it finds a lock taken or no
 * memory without waiting, once more in the next bucket, as the kernel
 * does. Never initializes anything (NULL before the first ordinary
 * allocation made the kmalloc caches), never sets errno (a signal handler
 * must leave it as it found it). USLUB_GFP_NOWAIT/ATOMIC say what it
 * always does; USLUB_GFP_NOFAIL cannot be had here.
 */
#define NOLOCK_GFP (USLUB_GFP_ACCOUNT | USLUB_GFP_ZERO | USLUB_GFP_NOWARN | USLUB_GFP_ATOMIC)

__public void *uslub_kmalloc_nolock(size_t size, uslub_gfp_t gfp, int node)
{
	if (unlikely(gfp & ~NOLOCK_GFP) || size > KMALLOC_MAX_CACHE_SIZE)
		return NULL;
	if (unlikely(!size))
		return USLUB_ZERO_SIZE_PTR;
	if (unlikely(!__atomic_load_n(&kmalloc_ok, __ATOMIC_ACQUIRE)))
		return NULL;
	int saved = errno;
	/* partitioned by the return address only: the thread's tag may be
	 * the interrupted call's */
	uslub_kmem_buckets *set = &_uslub_kmalloc_caches;
	if (kmalloc_partitioned && !(gfp & USLUB_GFP_ACCOUNT))
		set = kmalloc_parts[kmalloc_part_of(KMALLOC_RET_IP)];
	struct kmem_cache *s = (*set)[kmalloc_index(size)];
	void *p = _uslub_cache_alloc_nolock(s, gfp, node);
	if (!p && s->object_size < KMALLOC_MAX_CACHE_SIZE)
		p = _uslub_cache_alloc_nolock((*set)[kmalloc_index(s->object_size + 1)], gfp, node);
	errno = saved;
	return p;
}

__public void uslub_kfree_nolock(const void *p)
{
	if (USLUB_ZERO_OR_NULL_PTR(p))
		return;
	int saved = errno;
	_uslub_cache_free_nolock((void *)p);
	errno = saved;
}

/* kfree_bulk: objects of any caches go to the cache layer's bulk free
 * (grouped by slab); page runs and mappings are freed here first. */
__public void uslub_kfree_bulk(size_t n, void **p)
{
	for (size_t i = 0; i < n; i++)
		if (!USLUB_ZERO_OR_NULL_PTR(p[i]) && !virt_to_slab(p[i])) {
			_uslub_kfree_cold(p[i], false);
			p[i] = NULL;
		} else if (p[i] == USLUB_ZERO_SIZE_PTR) {
			p[i] = NULL;
		}
	uslub_cache_free_bulk(NULL, n, p);
}

__public void uslub_kfree_sensitive(const void *p)
{
	size_t usable = 0;
	struct kmem_cache *s = NULL;
	enum kind k = USLUB_ZERO_OR_NULL_PTR(p) ? K_INVALID : classify(p, &usable, &s);
	if (k == K_SLAB || k == K_LARGE || k == K_HUGE) {
		if (k == K_SLAB && kmem_cache_debug(s))   /* all of it is written */
			_uslub_debug_set_orig_size(s, (void *)p, s->object_size);
		else if (k == K_SLAB && cache_kasan(s))
			_uslub_kasan_unpoison(p, usable);
		memset((void *)p, 0, usable);
	}
	uslub_kfree(p);         /* reports a pointer that is not live */
}

__public size_t uslub_ksize(const void *p)
{
	return _uslub_ksize(p, false);
}

__public size_t uslub_kmalloc_size_roundup(size_t size)
{
	if (!size)
		return 0;
	if (size <= KMALLOC_MAX_CACHE_SIZE)
		return kmalloc_index_size(kmalloc_index(size));
	if (size <= KMALLOC_LARGE_MAX)
		return PAGE_SIZE << get_order(size);
	if (size > USLUB_KMALLOC_MAX_SIZE)
		return size;                     /* kmalloc fails anyway */
	return ALIGN_UP(size, PAGE_SIZE);
}

__public struct kmem_cache *uslub_kmalloc_cache(size_t size)
{
	if (!size || size > KMALLOC_MAX_CACHE_SIZE || !_uslub_kmalloc_init())
		return NULL;
	return _uslub_kmalloc_caches[kmalloc_index(size)];
}

__public void *uslub_kmalloc_aligned(size_t size, size_t align, uslub_gfp_t gfp)
{
	return uslub_kmalloc_node_align_noprof(size, align, gfp, USLUB_NUMA_NO_NODE);
}

static __always_inline void *kmalloc_node_align(size_t size, size_t align, uslub_gfp_t gfp,
						 int node, bool site, unsigned long token)
{
	if (!align || (align & (align - 1)) ||
	    (node != USLUB_NUMA_NO_NODE && (node < 0 || node >= _uslub_nr_nodes()))) {
		uslub_alloc_tag_cur = NULL;
		errno = EINVAL;
		return NULL;
	}
	if (align <= 8)
		return kmalloc_inline_token(size, gfp, node, site, token);
	if (!size) {
		uslub_alloc_tag_cur = NULL;
		return USLUB_ZERO_SIZE_PTR;
	}
	return kmalloc_miss(size, align, gfp, node,
			    site ? kmalloc_site_token(KMALLOC_RET_IP) : token);
}

__public void *uslub_kmalloc_node_align_noprof(size_t size, size_t align, uslub_gfp_t gfp,
					       int node)
{
	return kmalloc_node_align(size, align, gfp, node, true, 0);
}

__public void *uslub_kmalloc_token_noprof(size_t size, size_t align, uslub_gfp_t gfp, int node,
					  unsigned long token)
{
	return kmalloc_node_align(size, align, gfp, node, false, token);
}

/* The node of @p's memory (USLUB_NUMA_NO_NODE: a mapping, on any node). */
static int object_nid(const void *p)
{
	struct page *head = _uslub_virt_to_head_page(p);
	return head ? page_to_nid(head) : USLUB_NUMA_NO_NODE;
}

static void *krealloc_node_align(const void *p, size_t new_size, size_t align, uslub_gfp_t gfp,
				 int node, unsigned long token)
{
	if (!align || (align & (align - 1)) ||
	    (node != USLUB_NUMA_NO_NODE && (node < 0 || node >= _uslub_nr_nodes()))) {
		uslub_alloc_tag_cur = NULL;
		errno = EINVAL;
		return NULL;
	}
	if (unlikely(!new_size) || USLUB_ZERO_OR_NULL_PTR(p)) {
		if (!new_size) {
			uslub_alloc_tag_cur = NULL;
			uslub_kfree(p);
			return USLUB_ZERO_SIZE_PTR;
		}
		return kmalloc_node_align(new_size, align, gfp, node, false, token);
	}
	size_t usable = 0;
	struct kmem_cache *s = NULL;
	enum kind k = classify(p, &usable, &s);
	bool placed = !((uintptr_t)p & (align - 1));
	if (placed && node != USLUB_NUMA_NO_NODE && k != K_HUGE)
		placed = object_nid(p) == node;
	/* in place (or an invalid pointer, which krealloc reports) */
	if ((placed && new_size <= usable) || k == K_INVALID || k == K_FREED) {
		void *q = krealloc_token((void *)p, new_size, gfp, NULL, token);
		if (q == p || !q)
			uslub_alloc_tag_cur = NULL;
		return q;
	}
	if (unlikely(new_size > USLUB_KMALLOC_MAX_SIZE)) {
		uslub_alloc_tag_cur = NULL;
		errno = ENOMEM;
		return NULL;
	}
	void *q = kmalloc_miss(new_size, align, gfp, node, token);
	if (!q)
		return NULL;
	return krealloc_move(q, p, k, s, usable, new_size);
}

__public void *uslub_krealloc_node_align_noprof(const void *p, size_t new_size, size_t align,
						uslub_gfp_t gfp, int node)
{
	return krealloc_node_align(p, new_size, align, gfp, node,
				   kmalloc_site_token(KMALLOC_RET_IP));
}

__public void *uslub_krealloc_token_noprof(const void *p, size_t new_size, size_t align,
					   uslub_gfp_t gfp, int node, unsigned long token)
{
	return krealloc_node_align(p, new_size, align, gfp, node, token);
}

/* ------------------------------------------------------------------------
 * Bucket sets (kmem_buckets): a private cache per kmalloc class
 * ---------------------------------------------------------------------- */
_Static_assert(USLUB_KMALLOC_SHIFT_HIGH == KMALLOC_SHIFT_HIGH,
	       "uslub_kmem_buckets is indexed like the kmalloc caches");

__public uslub_kmem_buckets *uslub_kmem_buckets_create(const char *name, unsigned int flags,
						       unsigned int useroffset,
						       unsigned int usersize,
						       void (*ctor)(void *))
{
	if (!name || !*name || (flags & ~USLUB_CACHE_FLAGS_VALID)) {
		_uslub_report("uslub: kmem_buckets_create(\"%s\"): %s\n", name ? name : "(null)",
			      !name || !*name ? "name is NULL or empty" : "unknown flags");
		errno = EINVAL;
		return NULL;
	}
	if (!_uslub_kmalloc_init()) {
		errno = ENOMEM;
		return NULL;
	}
	uslub_kmem_buckets *b = uslub_kmalloc_noprof(sizeof(*b), USLUB_GFP_ZERO);
	if (!b)
		return NULL;
	if (!buckets_fill(b, name, flags, useroffset, usersize, ctor, false)) {
		int err = errno;
		uslub_kfree(b);
		errno = err;
		return NULL;
	}
	return b;
}

/* Make @b's caches, <name>-<class>, never merged; @part: a kmalloc
 * partition's, which are kmalloc caches (the thread's free record, abort
 * on a bad free under the malloc front end). false with errno and
 * nothing left made on failure. */
static bool buckets_fill(uslub_kmem_buckets *b, const char *name, unsigned int flags,
			 unsigned int useroffset, unsigned int usersize, void (*ctor)(void *),
			 bool part)
{
	bool fatal = part && _uslub_kmalloc_fatal_errors();
	for (unsigned int i = 1; i <= KMALLOC_SHIFT_HIGH; i++) {
		size_t size = kmalloc_index_size(i);
		char cname[96];
		if (size < 1024)
			snprintf(cname, sizeof(cname), "%.80s-%zu", name, size);
		else
			snprintf(cname, sizeof(cname), "%.80s-%zuk", name, size >> 10);
		struct uslub_cache_args args = {
			.align = i == 1 ? 32 : i == 2 ? 64 : size,   /* as kmalloc's */
			.ctor = ctor,
			.sheaf_capacity = _uslub_option(USLUB_OPT_KMALLOC_SHEAVES) ?
					  sheaf_default_capacity(size) : 0,
		};
		if (useroffset < size) {     /* the window, clipped to the class */
			args.useroffset = useroffset;
			args.usersize = (unsigned int)MIN((size_t)usersize, size - useroffset);
		}
		unsigned int f = flags | USLUB_NO_MERGE |
				 (args.sheaf_capacity ? 0 : USLUB_CPU_SLAB);
		struct kmem_cache *s = uslub_cache_create_args(cname, size, &args, f);
		if (!s) {
			int err = errno;
			while (--i >= 1)
				(void)uslub_cache_destroy((*b)[i]);
			errno = err;
			return false;
		}
		if (part) {
			if (fatal)
				s->flags |= SLAB_ABORT_ON_ERROR;
			cache_set_rec_thread(s);
		}
		(*b)[i] = s;
	}
	return true;
}

/* Everything but a class cache hit on any node: a node to check, no set,
 * 0 or more than 8 KiB. Out of line, so the hit saves no register. */
static __attribute__((noinline)) void *buckets_alloc_slow(uslub_kmem_buckets *b, size_t size,
							  uslub_gfp_t gfp, int node)
{
	if (node != USLUB_NUMA_NO_NODE && (node < 0 || node >= _uslub_nr_nodes())) {
		uslub_alloc_tag_cur = NULL;
		errno = EINVAL;
		return NULL;
	}
	if (!b)
		return kmalloc_node_inline(size, gfp, node);
	if (size - 1 < KMALLOC_MAX_CACHE_SIZE)                   /* 1 .. 8 KiB */
		return slab_alloc_node((*b)[kmalloc_index(size)], gfp, node, size);
	if (!size) {
		uslub_alloc_tag_cur = NULL;
		return USLUB_ZERO_SIZE_PTR;
	}
	return _uslub_kmalloc_slow(size, 1, gfp, node);
}

__public void *uslub_kmem_buckets_alloc_noprof(uslub_kmem_buckets *b, size_t size,
					       uslub_gfp_t gfp, int node)
{
	if (likely(b && size - 1 < KMALLOC_MAX_CACHE_SIZE && node == USLUB_NUMA_NO_NODE))
		return slab_alloc_node((*b)[kmalloc_index(size)], gfp, USLUB_NUMA_NO_NODE, size);
	return buckets_alloc_slow(b, size, gfp, node);
}
