/*
 * uslub — the Linux kernel's SLUB slab allocator as a userspace C library.
 *
 * Public API. Everything here is safe to call from any thread unless the
 * comment says otherwise. Names follow the kernel's where one exists
 * (kmem_cache_create -> uslub_cache_create, ...); see docs/design.md for how
 * each call maps onto SLUB.
 */
#ifndef USLUB_H
#define USLUB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Cache flags (the kernel's SLAB_* flags that apply in userspace)
 * ---------------------------------------------------------------------- */
#define USLUB_HWCACHE_ALIGN  0x00002000u /* align objects on cache lines      */
#define USLUB_NO_MERGE       0x01000000u /* never merge (uslub never merges)  */
#define USLUB_ACCOUNT        0x04000000u /* charge objects to the thread's
                                            accounting group (accepted; the
                                            accounting layer is not built yet) */
#define USLUB_CACHE_FLAGS_VALID \
	(USLUB_HWCACHE_ALIGN | USLUB_NO_MERGE | USLUB_ACCOUNT)

/* ------------------------------------------------------------------------
 * Allocation flags (gfp)
 * ---------------------------------------------------------------------- */
typedef unsigned int uslub_gfp_t;
#define USLUB_GFP_KERNEL  0x0000u /* may wait and reclaim                   */
#define USLUB_GFP_NOWAIT  0x0001u /* never block; may fail                  */
#define USLUB_GFP_ATOMIC  0x0003u /* never block; may fail                  */
#define USLUB_GFP_ZERO    0x0100u /* zero the object                        */
#define USLUB_GFP_NOFAIL  0x0200u /* retry until it succeeds                */
#define USLUB_GFP_ACCOUNT 0x0400u /* charge to the accounting group (later) */
#define USLUB_GFP_NOWARN  0x0800u /* no message on failure                  */

#define USLUB_NUMA_NO_NODE (-1)

/* The largest slab is 2^USLUB_MAX_PAGE_ORDER pages of 4 KiB (2 MiB);
 * an object must fit in one. */
#define USLUB_PAGE_SHIFT 12
#define USLUB_PAGE_SIZE (1ul << USLUB_PAGE_SHIFT)
#define USLUB_MAX_PAGE_ORDER 9

typedef struct kmem_cache uslub_cache_t;

/* ------------------------------------------------------------------------
 * Object caches
 * ---------------------------------------------------------------------- */

/*
 * Create a cache of objects of @size bytes aligned to @align (0: the
 * natural word alignment). @ctor, when given, runs once on each object when
 * its slab is created, never again on reuse (SLUB semantics: objects must be
 * returned in their constructed state).
 * Returns NULL with errno = EINVAL for a NULL or empty name, size 0, a size
 * larger than the largest slab (the object plus, with a ctor, the free
 * pointer stored after it, rounded up to the alignment, must fit 2 MiB), an
 * alignment that is not a power of two, or unknown flags (a message is
 * printed); errno = ENOMEM if out of memory or all cache slots are in use.
 * Names longer than 63 bytes are truncated in reports.
 * Nothing is half-created on failure.
 */
uslub_cache_t *uslub_cache_create(const char *name, size_t size, size_t align,
				  unsigned int flags, void (*ctor)(void *));

/* Allocate one object; NULL (errno = ENOMEM) if memory is exhausted and
 * gfp does not contain USLUB_GFP_NOFAIL. */
void *uslub_cache_alloc(uslub_cache_t *s, uslub_gfp_t gfp);

/* Same, from slabs of NUMA node @node (USLUB_NUMA_NO_NODE: any); a node
 * outside [0, uslub_nr_nodes()) gives NULL with errno = EINVAL. */
void *uslub_cache_alloc_node(uslub_cache_t *s, uslub_gfp_t gfp, int node);

/*
 * Free an object of @s; NULL is ignored. A pointer uslub does not own, an
 * interior pointer, or an object of another cache is reported on stderr,
 * counted in uslub_error_count(), and left alone: allocator state is never
 * touched.
 */
void uslub_cache_free(uslub_cache_t *s, void *obj);

/*
 * Flush the calling thread's cpu slab and cpu partial slabs of @s, release
 * every empty slab on the node partial lists and sort the partial lists
 * (fullest first). Returns the number of slabs released. Other threads'
 * per-CPU state is left alone (in per-thread mode it is theirs alone).
 */
int uslub_cache_shrink(uslub_cache_t *s);

/*
 * Destroy @s. The caller guarantees, as in the kernel, that no other thread
 * uses @s concurrently. Every thread's per-CPU state of @s is flushed; if
 * objects are still live, they are reported (count and slabs; counted once
 * in uslub_error_count()), the cache is left intact and usable, and -1 is
 * returned with errno = EBUSY.
 * Returns 0 when the cache was destroyed.
 */
int uslub_cache_destroy(uslub_cache_t *s);

/*
 * Walk every slab of @s and check its counters against its freelist, list
 * membership against the node-partial flag, and the node counters.
 * Returns the number of inconsistencies found (each is printed to stderr);
 * 0 means consistent. The result is exact when no other thread is
 * allocating from or freeing to @s at the time.
 */
long uslub_cache_validate(uslub_cache_t *s);

const char *uslub_cache_name(const uslub_cache_t *s);
size_t uslub_cache_object_size(const uslub_cache_t *s);

/* Flush all of the calling thread's per-CPU slabs (every cache), as a CPU
 * going offline does. Thread exit does this automatically. */
void uslub_flush_thread(void);

/* Is @p inside memory uslub manages? (lock-free, O(1)) */
int uslub_owns(const void *p);

/* Return every empty region to the OS now, whatever the decay delay.
 * Returns the number of bytes returned. */
size_t uslub_trim(void);

/* Number of misuse reports so far: invalid frees (each counts one) and
 * destroys refused because objects were live (each counts one). */
unsigned long uslub_error_count(void);

/* Print every USLUB_* environment option, its default and meaning, to
 * stderr. */
void uslub_options_print(void);

/* Number of NUMA nodes (real, or faked with USLUB_FAKE_NODES). */
int uslub_nr_nodes(void);

/* ------------------------------------------------------------------------
 * Statistics (SLUB's CONFIG_SLUB_STATS counters, always on)
 * ---------------------------------------------------------------------- */
#define USLUB_STAT_ITEMS(X)                                                  \
	X(ALLOC_FASTPATH,        "allocation from the cpu freelist")         \
	X(ALLOC_SLOWPATH,        "allocation through the slow path")         \
	X(FREE_FASTPATH,         "free to the cpu slab's freelist")          \
	X(FREE_SLOWPATH,         "free to a slab with the CAS")              \
	X(FREE_FROZEN,           "free to a frozen (someone's cpu) slab")    \
	X(FREE_ADD_PARTIAL,      "slab added to a node partial list")        \
	X(FREE_REMOVE_PARTIAL,   "empty slab taken off a node partial list") \
	X(ALLOC_FROM_PARTIAL,    "cpu slab taken from a node partial list")  \
	X(ALLOC_SLAB,            "new slab from the page provider")          \
	X(ALLOC_REFILL,          "cpu freelist refilled from remote frees")  \
	X(ALLOC_NODE_MISMATCH,   "cpu slab dropped: wrong node")             \
	X(FREE_SLAB,             "slab returned to the page provider")       \
	X(CPUSLAB_FLUSH,         "cpu slab flushed (thread exit, shrink)")   \
	X(DEACTIVATE_FULL,       "cpu slab deactivated full")                \
	X(DEACTIVATE_EMPTY,      "cpu slab deactivated empty and freed")     \
	X(DEACTIVATE_TO_HEAD,    "cpu slab deactivated to partial head")     \
	X(DEACTIVATE_TO_TAIL,    "cpu slab deactivated to partial tail")     \
	X(DEACTIVATE_REMOTE_FREES, "cpu slab deactivated with remote frees") \
	X(DEACTIVATE_BYPASS,     "cpu slab full, dropped without a flush")   \
	X(ORDER_FALLBACK,        "slab made at the minimum order")           \
	X(CMPXCHG_DOUBLE_CPU_FAIL, "cpu freelist CAS failed (unused: TLS)")  \
	X(CMPXCHG_DOUBLE_FAIL,   "slab freelist CAS failed and retried")     \
	X(CPU_PARTIAL_ALLOC,     "cpu slab taken from the cpu partial list") \
	X(CPU_PARTIAL_FREE,      "slab put on the cpu partial list by free") \
	X(CPU_PARTIAL_NODE,      "slab moved node partial -> cpu partial")   \
	X(CPU_PARTIAL_DRAIN,     "cpu partial list drained to the node")

enum uslub_stat_item {
#define USLUB_X(name, doc) USLUB_##name,
	USLUB_STAT_ITEMS(USLUB_X)
#undef USLUB_X
	USLUB_NR_STATS
};

const char *uslub_stat_name(enum uslub_stat_item item);

/* Sum of every thread's counters for @s (racy snapshot, like the kernel's). */
void uslub_cache_stats(const uslub_cache_t *s, uint64_t out[USLUB_NR_STATS]);

/* One cache's slabinfo line (the fields of /proc/slabinfo and more). */
struct uslub_slabinfo {
	const char *name;
	size_t object_size;      /* requested size                            */
	size_t size;             /* object + metadata + alignment padding     */
	size_t align;
	size_t offset;           /* free pointer offset inside the object     */
	unsigned int objs_per_slab;
	unsigned int order;      /* slab = 2^order pages                      */
	unsigned int pages_per_slab;
	unsigned int min_partial;
	unsigned int cpu_partial_slabs;
	unsigned long num_slabs;     /* slabs of this cache, all nodes        */
	unsigned long num_objs;      /* objects in those slabs (order-fallback
	                                slabs hold fewer than objs_per_slab)   */
	unsigned long active_objs;   /* allocated (incl. cpu-cached), as the
	                                kernel counts: num_objs - free objects
	                                on node partial slabs                 */
	unsigned long live_objs;     /* allocs - frees from the counters      */
	unsigned long nr_partial;    /* slabs on node partial lists           */
	unsigned long partial_free;  /* free objects on node partial slabs    */
	unsigned long memory_used;   /* bytes in slabs                        */
	unsigned long memory_requested; /* live_objs * object_size            */
};

int uslub_cache_slabinfo(const uslub_cache_t *s, struct uslub_slabinfo *out);

enum uslub_format { USLUB_FMT_TABLE = 0, USLUB_FMT_JSON = 1 };

/* slabinfo of every cache, with statistics, as a table or JSON. */
void uslub_slabinfo_print(FILE *f, enum uslub_format fmt);

/* Page provider totals. */
struct uslub_page_stats {
	unsigned long segments;        /* 4 MiB segments reserved             */
	unsigned long bytes_reserved;  /* address space reserved              */
	unsigned long bytes_in_slabs;  /* pages handed out to slabs           */
	unsigned long bytes_purged;    /* free pages returned to the OS and not
	                                  reused since (a current amount)     */
	unsigned long purges;          /* madvise calls made                  */
};
void uslub_page_stats(struct uslub_page_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* USLUB_H */
