/*
 * Cache layer internals: struct kmem_cache, its per-node and per-CPU state,
 * and the per-thread "cpu" areas. The locking contract is at the top of
 * slub.c.
 */
#ifndef USLUB_CACHE_SLUB_H
#define USLUB_CACHE_SLUB_H

#include "slab/slab.h"
#include "uslub.h"
#include <pthread.h>

#define USLUB_MAX_CACHES   2048
#define CPU_SLOT_SIZE      512     /* one kmem_cache_cpu per cache per thread */
#define CPU_AREA_SIZE      ((size_t)USLUB_MAX_CACHES * CPU_SLOT_SIZE)
#define CACHE_NAME_MAX     64

/*
 * Per-CPU (per-thread by default) state of one cache. Only its owner
 * thread reads or writes freelist/slab/partial, except when the owner is
 * known to be gone or quiescent (fork child, destroy; see slub.c).
 *
 * Invariants (owner's view):
 *   slab == NULL  <=> slab_bytes == 0, and then freelist == NULL
 *   slab != NULL  => FC_FROZEN(slab->counters), slab_addr == slab->addr,
 *                    slab_bytes == objects * size of the slab, and every
 *                    object on freelist belongs to slab
 *   partial: unfrozen slabs off every node list, linked by slab->next;
 *            |partial| == partial_slabs <= s->cpu_partial_slabs
 *   stat[i] has one writer (the owner); readers load it relaxed.
 *   loaded = objects the slow paths put on freelist - objects flushed
 *            back; so at every instant
 *            ALLOC_FASTPATH == loaded + stat[FREE_FASTPATH] - |freelist|
 *            (the fast alloc path stores no counter; stat[ALLOC_FASTPATH]
 *            holds that value as of the last time freelist was empty).
 * The free fast path needs only the first cache line: "x - slab_addr <
 * slab_bytes" proves x is inside this cache's cpu slab without touching
 * the slab descriptor.
 */
struct kmem_cache_cpu {
	void *freelist;
	struct slab *slab;
	char *slab_addr;
	unsigned long slab_bytes;
	uint64_t stat[USLUB_NR_STATS];
	struct slab *partial;
	unsigned long partial_slabs;
	unsigned long loaded;
};
static_assert(sizeof(struct kmem_cache_cpu) <= CPU_SLOT_SIZE, "cpu slot size");
static_assert(offsetof(struct kmem_cache_cpu, stat) + 3 * 8 <= USLUB_CACHELINE,
	      "fast-path fields and fast-path counters share one cache line");
static_assert(USLUB_FREE_FASTPATH < 3, "the fast-path counter is in the first line");

/*
 * Per-node state. list_lock protects partial, nr_partial, and every
 * slab's slab_list and PG_workingset flag. nr_slabs/total_objects are
 * atomics (changed on slab alloc/free, outside list_lock).
 *   nr_partial == |partial|, slab on partial <=> slab_test_node_partial(slab)
 */
struct kmem_cache_node {
	pthread_mutex_t list_lock;
	unsigned long nr_partial;
	struct list_head partial;
	unsigned long nr_slabs;
	unsigned long total_objects;
	unsigned long total_pages;
	unsigned long lock_taken;    /* list_lock acquisitions (under list_lock) */
} __attribute__((aligned(USLUB_CACHELINE)));

struct kmem_cache {
	/* read-only after creation; the fast paths read the first line */
	unsigned int cpu_offset;     /* byte offset of this cache's slot in a cpu area */
	unsigned int offset;         /* free pointer offset within an object           */
	unsigned int size;           /* stride: object + free pointer (if outside) + padding */
	unsigned int object_size;    /* what the user asked for                        */
	uint64_t reciprocal_size;    /* slab_reciprocal(size), for obj_to_index        */
	unsigned int objects;        /* objects per slab at the preferred order        */
	unsigned int order;          /* preferred slab order                           */
	unsigned int min_objects_fallback; /* objects per slab at the fallback order   */
	unsigned int min_order;      /* fallback order (one object fits)               */
	unsigned int align;
	unsigned int flags;
	unsigned int min_partial;    /* empty slabs kept on a node partial list        */
	unsigned int cpu_partial;    /* objects kept on cpu partial lists (target)     */
	unsigned int cpu_partial_slabs; /* ... as slabs; 0 = no cpu partial            */
	void (*ctor)(void *);
	int index;                   /* slot number; cpu_offset = index * CPU_SLOT_SIZE */

	struct list_head list;       /* slab_caches (slab_mutex)                       */
	uint64_t stat_exited[USLUB_NR_STATS]; /* counters of exited threads (atomic)   */
	char name[CACHE_NAME_MAX];
	struct kmem_cache_node *node[MAX_NUMNODES];
};

/* ------------------------------------------------------------------------
 * Per-thread cpu areas (cpu.c)
 * ---------------------------------------------------------------------- */
enum thread_state { THREAD_NEW = 0, THREAD_ACTIVE, THREAD_DEAD };

/* Header page of every cpu area; the slots follow it. */
struct uslub_thread {
	struct list_head link;       /* threads or free_areas (thread_lock) */
	char *cpu_base;              /* first cpu slot                     */
	int node;                    /* NUMA node this "cpu" allocates on  */
};

struct uslub_tls {
	intptr_t cpu_delta;          /* cpu_base - _uslub_cpu_empty (0 = none) */
	struct uslub_thread *thread;
	int state;
};
__internal extern __thread struct uslub_tls _uslub_tls __tls_ie;
__internal extern char _uslub_cpu_empty[CPU_AREA_SIZE];

/* The calling thread's slot for @s: the all-zero sentinel until the thread's
 * first slow path gives it an area, so the fast paths need no init test. */
static __always_inline struct kmem_cache_cpu *this_cpu(const struct kmem_cache *s)
{
	return (struct kmem_cache_cpu *)(_uslub_cpu_empty + _uslub_tls.cpu_delta + s->cpu_offset);
}

static __always_inline bool this_cpu_is_real(void)
{
	return _uslub_tls.cpu_delta != 0;
}

/* stat(c, ALLOC_FASTPATH): count one event on the owner's slot. */
#define stat(c, item) SINGLE_WRITER_INC((c)->stat[USLUB_##item], 1)

__internal extern pthread_mutex_t _uslub_slab_mutex;  /* slab_caches, cache slots */
__internal extern struct list_head _uslub_slab_caches;
__internal extern pthread_mutex_t _uslub_thread_lock; /* threads, free areas      */
__internal extern struct list_head _uslub_threads;

/* cpu.c */
__internal bool _uslub_thread_init(void);
__internal void _uslub_init(void);
__internal struct kmem_cache_cpu *_uslub_thread_cpu(struct uslub_thread *t,
						     const struct kmem_cache *s);

/* slub.c */
/* Flush a cpu slot of @s (slab, partials) and fold its counters. */
__internal void _uslub_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal uint64_t _uslub_cpu_alloc_fastpath(const struct kmem_cache *s,
					       const struct kmem_cache_cpu *c);
__internal void _uslub_slub_prefork(void);
__internal void _uslub_slub_postfork_parent(void);
__internal void _uslub_slub_postfork_child(void);
__internal void _uslub_slub_recount(void);

#endif /* USLUB_CACHE_SLUB_H */
