/*
 * Cache layer internals: struct kmem_cache, its per-node and per-CPU state,
 * and the per-thread "cpu" areas. The locking contract is at the top of
 * slub.c.
 */
#ifndef USLUB_SLUB_SLUB_H
#define USLUB_SLUB_SLUB_H

#include "slab/slab.h"
#include "base/lifecycle.h"
#include "uslub/types.h"
#include <errno.h>
#include <pthread.h>

#define USLUB_MAX_CACHES   2048
#define CPU_SLOT_SIZE      512     /* one kmem_cache_cpu per cache per thread */
#define CPU_AREA_SIZE      ((size_t)USLUB_MAX_CACHES * CPU_SLOT_SIZE)
#define CACHE_NAME_MAX     64

struct slab_sheaf;
struct node_barn;                    /* sheaf/sheaf.h */
struct obj_cgroup;                   /* ext/ext.h     */

/*
 * Per-object extension (the kernel's struct slabobj_ext, seed 003): the
 * accounting group handle an object is charged to and the allocation tag
 * of its call site. Only caches that need it have one (cache->ext_stride
 * != 0, or on demand); both fields are NULL while the object is free.
 * Extension i of a slab is at slab->obj_exts + i * cache->ext_stride:
 *   leftover  obj_exts = slab_address + ALIGN_UP(objects * size, 8),
 *             stride 16 (an array in the slab's unused tail)
 *   padding   obj_exts = slab_address + ext_offset, stride size (inside
 *             each object's alignment padding, after its used bytes)
 *   array     obj_exts = a separate zeroed array, stride 16
 */
struct slabobj_ext {
	struct obj_cgroup *objcg;
	struct uslub_alloc_tag *ref;
};
static_assert(sizeof(struct slabobj_ext) == 16, "slabobj_ext is two words");

/*
 * The per-thread byte stock (the kernel's obj_stock_pcp): bytes charged to
 * cached's group in a batch and not yet used by objects. Owner only.
 *   cached == NULL => nr_bytes == 0; cached != NULL holds one reference.
 */
struct obj_stock {
	struct obj_cgroup *cached;
	long nr_bytes;
};

/* Per-thread counts of one allocation tag (its index in the registry). */
struct tag_counter {
	int64_t bytes;
	int64_t calls;
};

/*
 * Per-CPU (per-thread by default) state of one cache. Only its owner
 * thread reads or writes it, except when the owner is known to be gone
 * or quiescent (fork child, destroy; see slub.c).
 *
 * Sheaf mode (Linux 7.0, every cache by default): main and spare.
 *   main != NULL always: a real sheaf, or the static empty sheaf
 *   (_uslub_empty_sheaf: size 0, capacity 0) standing in before the first
 *   refill and after a flush, so the inline paths test only main->size;
 *   spare == NULL or a real sheaf (any fill); main != spare.
 *   freelist == NULL, slab == NULL, slab_bytes == 0.
 *
 * Cpu-slab mode (the 6.x model: USLUB_CPU_SLABS=1, USLUB_CPU_SLAB caches,
 * debug caches, the boot caches): main == the empty sheaf unless the
 * cache asked for sheaves, and (owner's view):
 *   slab == NULL  <=> slab_bytes == 0, and then freelist == NULL
 *   slab != NULL  => FC_FROZEN(slab->counters), slab_addr == slab_address(slab),
 *                    slab_span == objects * size of the slab, slab_bytes ==
 *                    (fast paths on ? slab_span : 0), free_mark ==
 *                    slab_free_mark(s, slab), and every
 *                    object on freelist belongs to slab
 *   partial: unfrozen slabs off every node list, linked by slab->next;
 *            |partial| == partial_slabs <= s->cpu_partial_slabs
 *   loaded = objects the slow paths put on freelist - objects flushed
 *            back; so at every instant
 *            ALLOC_FASTPATH == loaded + stat[FREE_FASTPATH] - |freelist|
 *            (the cpu-slab alloc path stores no counter; stat[ALLOC_FASTPATH]
 *            holds that value as of the last time freelist was empty).
 * stat[i] has one writer (the owner); readers load it relaxed.
 *
 * Everything the inline paths of both modes touch is in the slot's first
 * cache line: main, the cpu-slab fields, and the counters ALLOC_PCS,
 * FREE_PCS and FREE_FASTPATH (stat[0..2]). The cpu-slab free path needs
 * no descriptor: "x - slab_addr < slab_bytes" proves x is inside this
 * cache's cpu slab.
 */
struct kmem_cache_cpu {
	struct slab_sheaf *main;     /* never NULL (see above)                */
	void *freelist;
	char *slab_addr;
	unsigned long slab_bytes;
	uintptr_t free_mark;         /* slab_free_mark() of slab (0: none)     */
	uint64_t stat[USLUB_NR_STATS];
	struct slab *slab;
	unsigned long slab_span;     /* objects * size of slab (0: none), whatever
	                                the fast paths say: the hooked paths'
	                                range check                            */
	struct slab *partial;
	unsigned long partial_slabs;
	unsigned long loaded;
	struct slab_sheaf *spare;    /* NULL or a second sheaf (any fill)  */
};
static_assert(sizeof(struct kmem_cache_cpu) <= CPU_SLOT_SIZE, "cpu slot size");
static_assert(offsetof(struct kmem_cache_cpu, stat) + 3 * 8 <= USLUB_CACHELINE,
	      "fast-path fields and fast-path counters share one cache line");
static_assert(USLUB_ALLOC_PCS == 0 && USLUB_FREE_PCS == 1 && USLUB_FREE_FASTPATH == 2,
	      "the inline paths' counters are in the first line");

/*
 * A sheaf (Linux 6.18): an array of free objects of one cache, owned by one
 * cpu slot (main/spare), a barn list, or a prefill user.
 *   0 <= size <= capacity; objects[0..size) are free objects of cache,
 *   each counted in its slab's inuse (a sheaf holds them like a cpu
 *   freelist does). capacity == cache->sheaf_capacity unless oversize.
 */
struct slab_sheaf {
	struct list_head barn_list;  /* on a barn's full/empty list (barn lock) */
	struct kmem_cache *cache;
	unsigned int size;
	unsigned int capacity;
	int node;                    /* node its objects came from (barn)       */
	unsigned int oversize;       /* prefill above capacity: freed on return */
	void *objects[];
};
#define SHEAF_HEADER_SIZE offsetof(struct slab_sheaf, objects)

/* Install @spare as main and @main as spare of a cpu slot (owner only;
 * @spare may be a sheaf not yet in the slot). No instant has one sheaf in
 * both slots, so a fork child flushing the slot never flushes one twice. */
static inline void cpu_sheaves_swap(struct kmem_cache_cpu *c, struct slab_sheaf *main,
				    struct slab_sheaf *spare)
{
	WRITE_ONCE(c->spare, NULL);
	barrier();
	WRITE_ONCE(c->main, spare);
	barrier();
	WRITE_ONCE(c->spare, main);
}
static_assert(SHEAF_HEADER_SIZE == 40, "sheaf header layout");

/* The stand-in for a missing main sheaf: size 0 and capacity 0, so the
 * inline alloc and free paths miss on it without a NULL test. Never
 * written (read-only). */
__internal extern const struct slab_sheaf _uslub_empty_sheaf;
#define EMPTY_SHEAF ((struct slab_sheaf *)&_uslub_empty_sheaf)

/* Is @sheaf (a cpu slot's main or spare) a real sheaf? */
static __always_inline bool sheaf_real(const struct slab_sheaf *sheaf)
{
	return sheaf && sheaf != EMPTY_SHEAF;
}

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
	struct list_head isolated;   /* debug caches: slabs isolated after a
	                                detected corruption (list_lock); each has
	                                PG_isolated, is never on partial, and is
	                                never discarded while the cache lives   */
	unsigned long nr_isolated;   /* == |isolated|                            */
} __attribute__((aligned(USLUB_CACHELINE)));

struct kmem_cache {
	/* read-only after creation; the fast paths read the first line */
	unsigned int cpu_offset;     /* byte offset of this cache's slot in a cpu area */
	unsigned int offset;         /* free pointer offset within an object           */
	unsigned int size;           /* stride: object + free pointer (if outside) + padding */
	unsigned int object_size;    /* what the user asked for                        */
	uint64_t reciprocal_size;    /* slab_reciprocal(size), for obj_to_index        */
	uintptr_t fp_secret;         /* freelist hardening: stored = fp ^ secret ^ swab(&slot) */
	unsigned int fastpath_off;   /* != 0: every alloc/free takes the checked slow path
	                                (hardened; later debug caches)                   */
	unsigned int free_mark_offset; /* where a free object holds free_mark (a word
	                                never overlapping the free pointer; outside
	                                the object for ctor caches and 8-byte objects) */
	uintptr_t free_mark;         /* per-cache secret written into every object a
	                                user frees and cleared when one is handed
	                                out: the double-free check (see free_mark_*) */
	unsigned int objects;        /* objects per slab at the preferred order        */
	unsigned int order;          /* preferred slab order                           */
	unsigned int inuse;          /* object + free pointer (if outside): the bytes
	                                of a stride in use before alignment padding   */
	unsigned int red_left_pad;   /* bytes before object 0 of a slab (a left red
	                                zone; 0 without red zones): objects start at
	                                slab_address + red_left_pad                 */
	/* -- end of the fast paths' first line -- */
	unsigned int min_objects_fallback; /* objects per slab at the fallback order   */
	unsigned int min_order;      /* fallback order (one object fits)               */
	unsigned int align;
	unsigned int flags;
	unsigned int min_partial;    /* empty slabs kept on a node partial list        */
	unsigned int cpu_partial;    /* objects kept on cpu partial lists (target)     */
	unsigned int cpu_partial_slabs; /* ... as slabs; 0 = no cpu partial            */
	void (*ctor)(void *);
	int index;                   /* slot number; cpu_offset = index * CPU_SLOT_SIZE */
	unsigned int sheaf_capacity; /* 0: no sheaves                                  */
	uint16_t *random_seq;        /* RANDOM_FREELIST: a permutation of [0, objects)  */
	unsigned int useroffset, usersize;
	/* per-object extensions (seed 003); all 0 for a cache without them */
	unsigned int ext_stride;     /* 16 (leftover, array) or size (padding)     */
	unsigned int ext_offset;     /* padding: the extension's offset in objects */
	int ext_placement;           /* USLUB_OBJ_EXT_*                            */
	unsigned int ext_bytes;      /* extension bytes outside the slab per object */
	unsigned int charge;         /* bytes one object charges: size + ext_bytes */
	unsigned int hooks;          /* HOOK_*: allocs and frees run the extension
	                                hooks (written once, under slab_mutex)     */
	unsigned int debug;          /* USLUB_DBG_* letters (USLUB_DEBUG and the
	                                cache flags); A may change at run time
	                                (atomic)                                   */
	/* slub_debug layout (debug.c), offsets from the object start; 0: none.
	 * A debug cache's stride k is [base + k*size - red_left_pad, ...):
	 *   [-red_left_pad, 0)        left red zone            (Z)
	 *   [0, object_size)          the object
	 *   [object_size, offset)     right red zone           (Z)
	 *   [offset, offset + 8)      free pointer (outside the object with Z or P)
	 *   [track_offset, +2 tracks) alloc and free owners     (U)
	 *   [orig_size_offset, +4)    requested size (kmalloc)  (Z)
	 *   [inuse, size - red_left_pad) padding (POISON_INUSE with P)       */
	unsigned int track_offset;
	unsigned int orig_size_offset;
	struct node_barn *barn[MAX_NUMNODES]; /* sheaf layer's, per node (sheaf caches) */

	struct list_head list;       /* slab_caches (slab_mutex)                       */
	uint64_t stat_exited[USLUB_NR_STATS]; /* counters of exited threads (atomic)   */
	char name[CACHE_NAME_MAX];
	struct kmem_cache_node *node[MAX_NUMNODES];
};
static_assert(offsetof(struct kmem_cache, red_left_pad) + sizeof(unsigned int) <=
	      USLUB_CACHELINE, "the fast paths read one line of struct kmem_cache");

/* ------------------------------------------------------------------------
 * Per-thread cpu areas (cpu.c)
 * ---------------------------------------------------------------------- */
enum thread_state { THREAD_NEW = 0, THREAD_ACTIVE, THREAD_DEAD };

/* Header page of every cpu area; the slots follow it. */
struct uslub_thread {
	struct list_head link;       /* threads or free_areas (thread_lock) */
	char *cpu_base;              /* first cpu slot                     */
	int node;                    /* NUMA node this "cpu" allocates on  */
	struct obj_stock stock;      /* accounting byte stock (owner only;
	                                drained at thread exit, and by a fork
	                                child for the threads it lost)       */
	struct tag_counter *tagc;    /* profiling: counts by tag index (owner
	                                writes, reports read; NULL until the
	                                thread's first profiled allocation)  */
};

struct uslub_tls {
	intptr_t cpu_delta;          /* cpu_base - _uslub_cpu_empty (0 = none) */
	struct uslub_thread *thread;
	int state;
	uint64_t rnd;                /* per-thread random state (0: unseeded)  */
	struct obj_cgroup *cur_objcg; /* accounting: current group's handle    */
	struct uslub_group *cur_group; /* (NULL: root, nothing is charged)     */
	int init_depth;              /* > 0 while this thread initializes uslub:
	                                a malloc from inside (libc's) is served
	                                from the malloc layer's boot arena      */
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

/* stat(c, ALLOC_FASTPATH): count one event on the owner's slot. On
 * x86-64 one `add` to memory (the compiler does not fuse an atomic load
 * and store into it: three instructions on every inline path otherwise);
 * readers still see whole values. The TSan build keeps the atomics, which
 * it understands. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define USLUB_TSAN 1
#endif
#endif
#ifdef __SANITIZE_THREAD__
#define USLUB_TSAN 1
#endif
#if defined(__x86_64__) && !defined(USLUB_TSAN)
static __always_inline void stat_inc(uint64_t *ctr, uint64_t n)
{
	__asm__("addq %1, %0" : "+m"(*ctr) : "er"(n));
}
#define stat(c, item) stat_inc(&(c)->stat[USLUB_##item], 1)
#define stat_add(c, item, n) stat_inc(&(c)->stat[USLUB_##item], (uint64_t)(n))
#else
#define stat(c, item) SINGLE_WRITER_INC((c)->stat[USLUB_##item], 1)
#define stat_add(c, item, n) SINGLE_WRITER_INC((c)->stat[USLUB_##item], (n))
#endif

__internal extern pthread_mutex_t _uslub_slab_mutex;  /* slab_caches, cache slots */
__internal extern struct list_head _uslub_slab_caches;
__internal extern pthread_mutex_t _uslub_thread_lock; /* threads, free areas      */
__internal extern struct list_head _uslub_threads;

/* init.c: the process init order, once (init on first use: every layer
 * may call it). */
__internal void _uslub_init(void);

/* thread.c */
__internal bool _uslub_thread_init(void);
/* thread_lock's lifecycle entry, and the thread-exit key (init.c). */
__internal void _uslub_thread_lifecycle_init(void);
__internal void _uslub_thread_key_init(void);
/* The boot caches and the dead slot (slab_common.c; init.c). */
__internal void _uslub_slub_init(void);
__internal struct kmem_cache_cpu *_uslub_thread_cpu(struct uslub_thread *t,
						     const struct kmem_cache *s);
/* @fn on every cpu area: the sentinel, live threads', parked ones
 * (thread_lock held). */
__internal void _uslub_for_each_cpu_area(void (*fn)(char *cpu_base, void *arg), void *arg);
/* A cpu area a thread takes: every used slot's main made the empty sheaf
 * (thread_lock held; takes slab_mutex). */
__internal void _uslub_cpu_area_init(char *cpu_base);

/* slub.c */
#define SLAB_NO_SHEAVES 0x80000000u  /* internal flag: never give this cache sheaves */
#define SLAB_HARDENED   0x40000000u  /* internal flag: free pointers obfuscated     */
#define SLAB_NO_OBJ_EXT 0x20000000u  /* internal flag: never per-object extensions */
#define SLAB_ABORT_ON_ERROR 0x10000000u /* internal flag: abort() after reporting an
                                           invalid or double free, or a corruption
                                           (the malloc front end's kmalloc caches) */

/* kmem_cache.hooks bits */
#define HOOK_ACCOUNT 1u              /* objects may be charged (ACCOUNT cache, or
                                        on demand after a GFP_ACCOUNT alloc) */
#define HOOK_PROFILE 2u              /* objects are tagged (profiling on)    */

/* fastpath_off bits */
#define FASTPATH_OFF_HARDENED 1u
#define FASTPATH_OFF_HOOKS    2u
#define FASTPATH_OFF_DEBUG    4u     /* fault injection armed                    */
#define FASTPATH_OFF_SLUB_DEBUG 8u   /* slub_debug: every alloc and free of the
                                        cache takes the debug paths, under
                                        list_lock (debug.c; slub.c's contract) */
#define FASTPATH_OFF_DEAD    16u     /* destroyed: the struct is kept a while
                                        (quarantine) so that a use is reported */
#define FASTPATH_OFF_MARK    32u     /* the free mark is not at word 0 (a ctor
                                        or caller-placed free pointer keeps it
                                        outside the object): the inline fast
                                        paths, which use word 0, are off    */
/* The cpu slot no cache owns: always empty in every cpu area, so a
 * destroyed cache pointed at it takes the slow paths. */
#define CACHE_SLOT_DEAD (USLUB_MAX_CACHES - 1)
/* The USLUB_DEBUG letters that put a cache on the debug paths. */
#define USLUB_DBG_PATHS (USLUB_DBG_F | USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U | USLUB_DBG_T)

static __always_inline bool kmem_cache_debug(const struct kmem_cache *s)
{
	return unlikely(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_SLUB_DEBUG);
}
/* uslub_cache_create_args() without _uslub_init() (usable while it runs)
 * and accepting the internal flags. Call with no uslub lock held. */
__internal struct kmem_cache *_uslub_cache_create(const char *name, size_t size,
						  const struct uslub_cache_args *args,
						  unsigned int flags);
/* Flush a cpu slot of @s (slab, partials) and fold its counters. */
__internal void _uslub_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal uint64_t _uslub_cpu_alloc_fastpath(const struct kmem_cache *s,
					       const struct kmem_cache_cpu *c);
/* Lifecycle entries (base/lifecycle.h) of slub.c (slab_mutex,
 * list_lock), sheaf.c (barn locks) and debug.c (flush_lock), registered
 * from _uslub_init(). */
__internal void _uslub_slub_lifecycle_init(void);
__internal void _uslub_sheaf_lifecycle_init(void);
__internal void _uslub_debug_lifecycle_init(void);
__internal void _uslub_slub_recount(void);
__internal int _uslub_home_node(void);

/*
 * Slab-level bulk primitives for the layer above (sheaf/sheaf.c):
 *
 * _uslub_refill_objects: fill p[] with between @min and @max objects of @s
 * from @c's cpu partial slabs, then node partial slabs, then new slabs
 * (objects handed out directly, a freelist built only for the rest), on
 * @node (USLUB_NUMA_NO_NODE: the caller's, then any). Returns the count,
 * or 0 with nothing taken if @min could not be reached. Counts no
 * ALLOC_* event (the caller knows whether these are allocations).
 *
 * _uslub_free_to_slabs: give @n objects of @s (valid objects, checked by
 * the caller; s == NULL: each object's own cache) back to their slabs,
 * objects of one slab as one detached freelist pushed with one CAS.
 * Clobbers p[]. Counts no FREE_* event.
 */
__internal unsigned int _uslub_refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c,
					      void **p, unsigned int min, unsigned int max,
					      int node);
__internal void _uslub_free_to_slabs(struct kmem_cache *s, struct kmem_cache_cpu *c,
				     size_t n, void **p);

/*
 * Hooks into the sheaf layer (sheaf/sheaf.c), the one layer above that the
 * cache layer calls: each is a no-op (or returns "not handled") for a
 * cache without sheaves. The inline pop/push on c->main are in slub.c;
 * these take over when main is empty/full or missing.
 */
__internal int _uslub_sheaf_cache_init(struct kmem_cache *s, unsigned int capacity);
__internal void *_uslub_sheaf_alloc_slow(struct kmem_cache *s, struct kmem_cache_cpu *c,
					 uslub_gfp_t gfp);
__internal bool _uslub_sheaf_free_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x);
__internal void _uslub_sheaf_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal int _uslub_sheaf_cache_shrink(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal void _uslub_sheaf_cache_destroy(struct kmem_cache *s);
__internal void _uslub_sheaf_barn_counts(const struct kmem_cache *s, unsigned long *full,
					 unsigned long *empty);
/* The bulk paths' whole-sheaf exchanges (sheaf.c): make c->main hold
 * objects (alloc_bulk) or have room (free_bulk) through the spare and the
 * barn; NULL when that cannot be done without the slabs. */
__internal struct slab_sheaf *_uslub_pcs_replace_empty_main(struct kmem_cache *s,
							    struct kmem_cache_cpu *c);
__internal struct slab_sheaf *_uslub_pcs_replace_full_main(struct kmem_cache *s,
							   struct kmem_cache_cpu *c);

/*
 * Extension hooks, for the layers above: run the post-allocation hook on
 * @n objects just taken from @s (charge, record the tag). false: the
 * charge was refused (errno ENOMEM); the objects are untouched and still
 * the caller's to give back. _uslub_free_hook: the pre-free hook of one
 * object (uncharge, untag), before it goes back.
 */
__internal bool _uslub_post_alloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
				       void **p);
__internal void _uslub_free_hook(struct kmem_cache *s, void *x);
__internal void _uslub_free_noinit(struct kmem_cache *s, void *x);

/*
 * Hooks into the extension layer (ext/): accounting charges through the
 * thread's stock (the inline part is in slub.c), on-demand extension
 * arrays, tag counters, thread exit and fork.
 */
__internal bool _uslub_charge_slow(struct obj_cgroup *objcg, size_t bytes, uslub_gfp_t gfp);
__internal void _uslub_uncharge_slow(struct obj_cgroup *objcg, size_t bytes);
__internal void _uslub_tag_add_slow(struct uslub_alloc_tag *tag, int64_t bytes, int64_t calls);
__internal unsigned long _uslub_obj_exts_alloc(struct kmem_cache *s, unsigned int objects);
__internal void _uslub_obj_exts_free(struct kmem_cache *s, unsigned long obj_exts,
				     unsigned int objects);
__internal extern bool _uslub_profiling;     /* USLUB_PROFILING, set at init       */
__internal extern long _uslub_stock_max;     /* stock bytes kept on free: 2 x batch */
__internal void _uslub_ext_init(void);
__internal void _uslub_ext_thread_fold_locked(struct uslub_thread *t); /* thread_lock */
__internal void _uslub_ext_drain_area(struct uslub_thread *t);        /* any (fork child) */

__internal struct slabobj_ext *_uslub_slab_obj_ext_idx(struct kmem_cache *s, struct slab *slab,
							unsigned int idx);

/* Fault injection (failslab.c): should this allocation call of @size
 * bytes fail? Only asked when fastpath_off has FASTPATH_OFF_DEBUG. */
__internal bool _uslub_should_failslab(struct kmem_cache *s, uslub_gfp_t gfp, size_t size);
__internal void _uslub_failslab_init(void);
__internal unsigned int _uslub_failslab_cache_fastpath_off(const struct kmem_cache *s);

/* A use of a destroyed (quarantined) cache, or of NULL: reported, errno
 * EINVAL (slub.c). */
__internal void _uslub_bad_cache(const struct kmem_cache *s, const char *call);

/* The checked slow paths' gate (inline: one bit test): fault injection,
 * and a destroyed cache (its fastpath_off sends everything here). */
static __always_inline bool failslab(struct kmem_cache *s, uslub_gfp_t gfp, size_t n)
{
	unsigned int off = READ_ONCE(s->fastpath_off);
	if (likely(!(off & (FASTPATH_OFF_DEBUG | FASTPATH_OFF_DEAD))))
		return false;
	if (unlikely(off & FASTPATH_OFF_DEAD)) {
		_uslub_bad_cache(s, "allocation");
		return true;
	}
	if (!_uslub_should_failslab(s, gfp, n * s->object_size))
		return false;
	errno = ENOMEM;
	return true;
}

/* NULL or destroyed: report for @call (errno EINVAL) and say so. */
static inline bool cache_bad(const struct kmem_cache *s, const char *call)
{
	if (likely(s && !(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD)))
		return false;
	_uslub_bad_cache(s, call);
	return true;
}

/*
 * slub_debug (debug.c): object layout values, per-object checks and
 * reports. The debug alloc and free paths themselves are in slub.c.
 */
#define SLUB_RED_INACTIVE 0xbb       /* red zones of a free object        */
#define SLUB_RED_ACTIVE   0xcc       /* red zones of an allocated object  */
#define POISON_INUSE      0x5a       /* padding and never-used slab bytes */
#define POISON_FREE       0x6b       /* a free object's bytes ...         */
#define POISON_END        0xa5       /* ... and its last byte             */

enum track_item { TRACK_ALLOC, TRACK_FREE };
struct track {                       /* an owner: who, when, where        */
	uintptr_t addr;              /* caller's return address (0: none) */
	uint64_t when_ns;            /* CLOCK_MONOTONIC                   */
	int tid;
	int cpu;
};
static_assert(sizeof(struct track) == 24, "track layout");

/* A new slab (private): fill paddings and put every object in the free
 * state (red zones inactive, poison, no owners). Before any ctor. */
__internal void _uslub_debug_init_slab(struct kmem_cache *s, struct slab *slab,
				       unsigned int objects);
/* Red zones to @val; with P and SLUB_RED_INACTIVE also the poison. */
__internal void _uslub_debug_init_object(struct kmem_cache *s, void *obj, uint8_t val);
/* Check @obj of @slab in state @val: red zones, poison (free objects),
 * padding, the free pointer (free objects). Each damaged region is
 * reported (one error each) and restored; returns how many were damaged. */
__internal unsigned int _uslub_debug_check_object(struct kmem_cache *s, struct slab *slab,
						  void *obj, uint8_t val);
__internal void _uslub_debug_set_track(struct kmem_cache *s, void *obj, enum track_item item,
				       uintptr_t addr);
/* A kmalloc request of @size bytes in @obj: recorded, and the tail
 * [size, object_size) set to SLUB_RED_ACTIVE (Z caches only). */
__internal void _uslub_debug_set_orig_size(struct kmem_cache *s, void *obj, unsigned int size);
/* A report about @obj (the object's dump and owners follow); counted. */
__internal void _uslub_debug_object_err(struct kmem_cache *s, struct slab *slab, void *obj,
					const char *bug, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A report about a whole slab (an inconsistent freelist); counted. */
__internal void _uslub_debug_slab_err(struct kmem_cache *s, struct slab *slab, const char *bug,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A report line (buffered per thread: see debug.c). */
__internal void _uslub_debug_emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write the thread's buffered report lines, symbolized. Call with no
 * uslub lock held. */
__internal void _uslub_debug_flush(void);
/* The FIX line for a slab taken out of use. */
__internal void _uslub_debug_isolated(struct kmem_cache *s, struct slab *slab);
/* T: one line per alloc/free. */
__internal void _uslub_debug_trace(struct kmem_cache *s, struct slab *slab, void *obj,
				   bool alloc);
/* "func+0x1a/0x40 (file)" for @addr, into buf. */
__internal void _uslub_debug_symbolize(uintptr_t addr, char *buf, size_t len);
/* One line about a live object left at destroy (its alloc owner). */
__internal void _uslub_debug_print_leak(struct kmem_cache *s, struct slab *slab, void *obj);

/* publish.c */
__internal void _uslub_publish_init(void);


/* Every slab of @s, with the node's page lock held (no other uslub lock
 * may be taken by @fn). */
__internal void _uslub_for_each_slab(struct kmem_cache *s,
				     void (*fn)(struct kmem_cache *s, struct slab *slab, void *arg),
				     void *arg);

#include "slub/object.h"

#endif /* USLUB_SLUB_SLUB_H */
