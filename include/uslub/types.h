/*
 * uslub — the Linux kernel's SLUB slab allocator as a userspace C library.
 *
 * The public API without side effects: flags, gfp, structures, the
 * statistics X-macro, the function declarations and the allocation entry
 * macros. Including it defines no function and runs nothing; <uslub.h>
 * (what programs include) adds the constructor that registers the
 * includer's allocation tags. uslub's own sources include this header
 * only, so the library carries no copy of that constructor; a user that
 * must not register (the `uslub` tool) includes it too.
 *
 * Everything here is safe to call from any thread unless the comment says
 * otherwise. Names follow the kernel's where one exists (kmem_cache_create
 * -> uslub_cache_create, ...); see docs/design.md for how each call maps
 * onto SLUB.
 */
#ifndef USLUB_TYPES_H
#define USLUB_TYPES_H

#include <stdbool.h>
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
#define USLUB_ACCOUNT        0x04000000u /* charge every object to the
                                            allocating thread's accounting
                                            group (see uslub_group_*)      */
#define USLUB_RANDOM_FREELIST   0x00000100u /* shuffle each new slab's object
                                            order (CONFIG_SLAB_FREELIST_RANDOM),
                                            whatever USLUB_FREELIST_RANDOM says */
#define USLUB_NO_RANDOM_FREELIST 0x00000200u /* never shuffle this cache      */
#define USLUB_HARDENED_FREELIST 0x00000800u /* store free pointers obfuscated and
                                            check every pointer taken from a
                                            freelist (CONFIG_SLAB_FREELIST_
                                            HARDENED), whatever the option
                                            USLUB_FREELIST_HARDENED says    */
#define USLUB_CPU_SLAB          0x00000010u /* the 6.x per-CPU layer for this
                                            cache: a cpu slab, cpu partial
                                            slabs, lockless remote frees; no
                                            sheaves unless sheaf_capacity is
                                            asked for (as in Linux 6.18).
                                            Without it a cache has per-CPU
                                            sheaves (Linux 7.0), unless
                                            USLUB_CPU_SLABS=1              */
#define USLUB_EAGER_FREELIST    0x00000400u /* build a new slab's whole
                                            freelist when the slab is made
                                            (the kernel before 7.2), not
                                            deferred; for comparison only   */
/* slub_debug per cache (the same as the USLUB_DEBUG letters F Z P U T A;
 * OR-ed with what USLUB_DEBUG says for the cache). A cache with any of the
 * first five takes the checked debug paths on every alloc and free. */
#define USLUB_CONSISTENCY_CHECKS 0x00000001u /* F: check objects on alloc/free */
#define USLUB_RED_ZONE        0x00000002u /* Z: red zones left and right of
                                             each object, and kmalloc tails */
#define USLUB_POISON          0x00000004u /* P: fill free objects with 0x6b */
#define USLUB_STORE_USER      0x00010000u /* U: record alloc/free owners    */
#define USLUB_TRACE           0x00200000u /* T: print every alloc and free  */
#define USLUB_FAILSLAB        0x02000000u /* A: fault injection may fail it */
/* SLAB_TYPESAFE_BY_RCU (the kernel's value): an object may be reused at
 * once, but a slab's memory goes back to the page level only after an RCU
 * grace period, so a reader inside rcu_read_lock() that holds a pointer to
 * a freed object still reads an object of this cache (revalidate it). The
 * free pointer and the free mark stay outside the object (or at
 * freeptr_offset), and slub_debug never poisons its objects. Needs a
 * grace-period provider: libuslub-rcu (liburcu; <uslub/rcu.h>); without
 * one the creation fails (EINVAL, reported). */
#define USLUB_TYPESAFE_BY_RCU 0x00080000u
#define USLUB_CACHE_FLAGS_VALID \
	(USLUB_HWCACHE_ALIGN | USLUB_NO_MERGE | USLUB_ACCOUNT | USLUB_RANDOM_FREELIST | \
	 USLUB_NO_RANDOM_FREELIST | USLUB_EAGER_FREELIST | USLUB_HARDENED_FREELIST | \
	 USLUB_CONSISTENCY_CHECKS | USLUB_RED_ZONE | USLUB_POISON | USLUB_STORE_USER | \
	 USLUB_TRACE | USLUB_FAILSLAB | USLUB_CPU_SLAB | USLUB_TYPESAFE_BY_RCU)

/* ------------------------------------------------------------------------
 * Allocation flags (gfp)
 * ---------------------------------------------------------------------- */
typedef unsigned int uslub_gfp_t;
#define USLUB_GFP_KERNEL  0x0000u /* may wait and reclaim                   */
#define USLUB_GFP_NOWAIT  0x0001u /* never block; may fail                  */
#define USLUB_GFP_ATOMIC  0x0003u /* never block; may fail                  */
#define USLUB_GFP_ZERO    0x0100u /* zero the object                        */
#define USLUB_GFP_NOFAIL  0x0200u /* retry until it succeeds                */
#define USLUB_GFP_ACCOUNT 0x0400u /* charge this object to the thread's group */
#define USLUB_GFP_NOWARN  0x0800u /* no message on failure                  */

#define USLUB_NUMA_NO_NODE (-1)

/* The largest slab is 2^USLUB_MAX_PAGE_ORDER pages of 4 KiB (2 MiB);
 * an object must fit in one. */
#define USLUB_PAGE_SHIFT 12
#define USLUB_PAGE_SIZE (1ul << USLUB_PAGE_SHIFT)
#define USLUB_MAX_PAGE_ORDER 9

typedef struct kmem_cache uslub_cache_t;

/* ------------------------------------------------------------------------
 * Allocation profiling (the kernel's alloc_hooks(), CONFIG_MEM_ALLOC_PROFILING)
 *
 * Every allocation entry below is a macro that declares one static tag per
 * call site, in the ELF section "uslub_alloc_tags", makes it the thread's
 * current tag for the duration of the call and calls the non-profiling
 * function (name_noprof). When profiling is on (the option
 * USLUB_PROFILING), the tag is stored in the object's extension, so a free
 * from anywhere takes the object's bytes off the right call site. Calling
 * a _noprof function directly allocates without a tag. The plain names are
 * also exported as functions (untagged), for callers that cannot expand C
 * macros (other languages' FFI); a C caller gets them with (name)(args).
 * ---------------------------------------------------------------------- */
struct uslub_alloc_tag {
	const char *file;
	const char *func;
	unsigned int line;
	unsigned int index;          /* set when registered (0: not registered) */
	uint64_t bytes;              /* folded counts (exited threads,          */
	uint64_t calls;              /*  unregistered tags); see uslub_allocinfo */
	unsigned int kmalloc_part;   /* kmalloc partitions: 1 + the partition the
	                                compiler's type token chose (typed mode,
	                                USLUB_KMALLOC_PART_OF below); 0: none,
	                                the tag's address picks it (random mode).
	                                In the padding: the size stays 48 */
} __attribute__((aligned(16)));

extern __thread struct uslub_alloc_tag *uslub_alloc_tag_cur
	__attribute__((tls_model("initial-exec")));

/*
 * Hand the call site's tag to the call through the thread's slot, which
 * the allocator takes (and clears) before it allocates anything, so an
 * allocation nested inside (a constructor, a reclaim callback) has its own
 * tag: one store, nothing to restore. The entry macros below evaluate
 * their arguments first, so an argument that allocates cannot take the
 * tag. In C++ the tags are not put in the section (g++ refuses a section
 * shared by statics of inline functions); they register on first use.
 */
#ifdef __cplusplus
#define USLUB_TAG_SECTION
#else
#define USLUB_TAG_SECTION __attribute__((section("uslub_alloc_tags")))
#endif
#define USLUB_TAG_HERE() do {                                                   \
	static struct uslub_alloc_tag __uslub_tag USLUB_TAG_SECTION            \
		__attribute__((used, aligned(16))) =                            \
		{ __FILE__, __func__, __LINE__, 0, 0, 0, 0 };                    \
	uslub_alloc_tag_cur = &__uslub_tag;                                      \
} while (0)

/*
 * kmalloc partitions (the kernel's CONFIG_KMALLOC_PARTITION_CACHES, 7.2;
 * off unless USLUB_KMALLOC_PARTITIONS=1): kmalloc of the normal type (not
 * USLUB_GFP_ACCOUNT) takes one of USLUB_KMALLOC_PARTITIONS copies of the
 * kmalloc caches, chosen per call site. The kmalloc family's entry macros
 * tag their site with USLUB_TAG_HERE_KMALLOC(args), which also records the
 * site's partition where the compiler infers the allocated type (Clang's
 * __builtin_infer_alloc_token, the kernel's typed mode: the token mod 16,
 * a compile-time constant in the tag); elsewhere the tag's address, hashed
 * with a per-process random seed, picks it (the random mode).
 */
#define USLUB_KMALLOC_PARTITIONS 16
#if defined(__has_builtin)
#if __has_builtin(__builtin_infer_alloc_token)
#define USLUB_KMALLOC_TYPED 1
#endif
#endif
#ifdef USLUB_KMALLOC_TYPED
#define USLUB_KMALLOC_PART_OF(...)                                               \
	(__builtin_constant_p(__builtin_infer_alloc_token(__VA_ARGS__)) ?       \
	 1u + (unsigned int)(__builtin_infer_alloc_token(__VA_ARGS__) %         \
			     USLUB_KMALLOC_PARTITIONS) : 0u)
#else
#define USLUB_KMALLOC_PART_OF(...) 0u
#endif
#define USLUB_TAG_HERE_KMALLOC(...) do {                                        \
	static struct uslub_alloc_tag __uslub_tag USLUB_TAG_SECTION            \
		__attribute__((used, aligned(16))) =                            \
		{ __FILE__, __func__, __LINE__, 0, 0, 0,                         \
		  USLUB_KMALLOC_PART_OF(__VA_ARGS__) };                          \
	uslub_alloc_tag_cur = &__uslub_tag;                                      \
} while (0)

/* The kernel's alloc_hooks(): tag @call's allocation with this call site
 * (for wrappers of your own; @call's arguments must not allocate). */
#define USLUB_ALLOC_HOOKS(call) ({ USLUB_TAG_HERE(); (call); })
/* Register the tags of one shared object (its "uslub_alloc_tags" section)
 * so reports can walk them. Every translation unit that includes <uslub.h>
 * registers its shared object's section from a constructor
 * (USLUB_ALLOC_TAGS_REGISTRATION below); calling it again for the same
 * section does nothing. */
void uslub_alloc_tags_register(struct uslub_alloc_tag *start, struct uslub_alloc_tag *stop);
/* A shared object unloaded with dlclose() takes its tags with it: live
 * objects tagged there lose their tag (and are no longer counted). */
void uslub_alloc_tags_unregister(struct uslub_alloc_tag *start, struct uslub_alloc_tag *stop);

/* The includer's own shared object's section (NULL when it has no tag). */
extern struct uslub_alloc_tag __start_uslub_alloc_tags[]
	__attribute__((weak, visibility("hidden")));
extern struct uslub_alloc_tag __stop_uslub_alloc_tags[]
	__attribute__((weak, visibility("hidden")));

/*
 * Define, in the translation unit that expands it (at file scope), the
 * constructor that registers its shared object's tags and the destructor
 * that unregisters them. <uslub.h> expands it once per includer; code
 * that includes only this header and has tags of its own (the malloc
 * front end) expands it itself, once.
 */
#define USLUB_ALLOC_TAGS_REGISTRATION()                                          \
__attribute__((constructor, used)) static void uslub_alloc_tags_register_here(void) \
{                                                                                \
	if (__start_uslub_alloc_tags)                                            \
		uslub_alloc_tags_register(__start_uslub_alloc_tags, __stop_uslub_alloc_tags); \
}                                                                                \
__attribute__((destructor, used)) static void uslub_alloc_tags_unregister_here(void) \
{                                                                                \
	if (__start_uslub_alloc_tags)                                            \
		uslub_alloc_tags_unregister(__start_uslub_alloc_tags, __stop_uslub_alloc_tags); \
}                                                                                \
struct uslub_alloc_tags_registration_semicolon

/* The allocation profiling mode (USLUB_PROFILING), fixed at startup: 0
 * off, 1 exact (every object tagged; allocinfo's figures are exact), 2
 * sampled (USLUB_PROFILING=sample[:BYTES]: a sample of the allocations is
 * tagged, each standing for 1/p objects of its size, and allocinfo's
 * figures are estimates). */
int uslub_profiling_enabled(void);
/* Sampled mode: the mean number of bytes allocated between two samples
 * (512 KiB unless USLUB_PROFILING=sample:BYTES says); 0 in the other
 * modes. */
size_t uslub_profiling_sample_interval(void);

/* One call site's live allocations: bytes (each object counts its cache's
 * full object stride, as the kernel's allocinfo does) and objects. */
struct uslub_allocinfo {
	const char *file;
	const char *func;
	unsigned int line;
	int64_t bytes;
	int64_t calls;               /* live objects allocated here            */
};

/* Fill @out with up to @max call sites that have live objects, sorted by
 * bytes (largest first). Returns the number of such sites (may exceed
 * @max). Exact when no other thread allocates or frees meanwhile. */
size_t uslub_allocinfo(struct uslub_allocinfo *out, size_t max);

/* The allocinfo report (the kernel's /proc/allocinfo), sorted by bytes, as a
 * table or JSON (enum uslub_format). */
void uslub_allocinfo_print(FILE *f, int fmt);

/*
 * The heap profile (sampled mode, USLUB_PROFILING=sample): one line per
 * allocation stack, "root;frame;...;leaf BYTES" (the folded format of
 * flamegraph.pl and speedscope), BYTES the estimate of the sampled
 * allocations of that stack: in use now (USLUB_HEAP_INUSE: allocated and
 * not freed; at exit, the leak profile) or allocated in all
 * (USLUB_HEAP_ALLOC). A frame is "SYMBOL (MODULE+0xOFFSET)" (the dynamic
 * symbol, when there is one, and the return address less the module's
 * load bias), which `uslub resolve` and `uslub run --heap-profile` turn
 * into function names; "[unloaded] (MODULE+0xOFFSET)" in a module unloaded
 * since. Lines starting with '#' are comments.
 * USLUB_HEAP_DUMP: uslub's own dump instead, every count of every stack
 * (objects and bytes, allocated and in use) with the modules its frames
 * are in (paths, load addresses, build ids, unloaded or not), which
 * `uslub heap FILE` turns into folded stacks, a flame graph or a pprof
 * profile with all four sample types.
 */
enum uslub_heap_view { USLUB_HEAP_INUSE = 0, USLUB_HEAP_ALLOC = 1, USLUB_HEAP_DUMP = 2 };
void uslub_heap_profile_print(FILE *f, int view);

/* ------------------------------------------------------------------------
 * Accounting groups (a userspace obj_cgroup; seed 004)
 *
 * Groups form a tree under the root group. A thread allocates on behalf of
 * its current group (uslub_group_set_current(), like set_active_memcg()).
 * Objects of USLUB_ACCOUNT caches, and objects allocated with
 * USLUB_GFP_ACCOUNT, are charged their cache's object stride plus their
 * extension's bytes outside the slab (uslub_slabinfo.obj_ext_bytes) to the
 * current group and to each of its ancestors, and remember it: a free from
 * any thread uncharges the same group. The root group (current group NULL)
 * is never charged. Charges go through a per-thread byte stock, so usage
 * includes up to USLUB_ACCOUNT_BATCH bytes per thread prepaid but not yet
 * used. All groups share the same caches and slabs.
 * ---------------------------------------------------------------------- */
typedef struct uslub_group uslub_group_t;
#define USLUB_GROUP_NO_LIMIT SIZE_MAX

/* The root group: parent of every top-level group; never charged. */
uslub_group_t *uslub_group_root(void);

/* A new group under @parent (NULL: the root) with a byte limit (on its
 * usage including its descendants'). NULL with errno EINVAL (NULL/empty
 * name, a deleted parent) or ENOMEM. Names are truncated to 63 bytes. */
uslub_group_t *uslub_group_create(uslub_group_t *parent, const char *name, size_t limit);

/*
 * Delete a group. Its live objects stay charged: their charges move to the
 * parent (which already counts them in its usage), and the group itself
 * is freed at once (nothing pins it; the object-level handles its objects
 * point to are reparented and freed when their last object goes).
 * Returns 0, or -1 with errno EBUSY (it has children, or it is some
 * thread's current group) or EINVAL (the root, NULL).
 */
int uslub_group_delete(uslub_group_t *g);

/* Set the calling thread's current group (NULL: the root); returns the
 * previous one so it can be restored. */
uslub_group_t *uslub_group_set_current(uslub_group_t *g);
uslub_group_t *uslub_group_current(void);

/* Change the byte limit (USLUB_GROUP_NO_LIMIT: none). A limit below the
 * current usage makes later charges fail until usage drops. */
int uslub_group_set_limit(uslub_group_t *g, size_t limit);

/*
 * Reclaim callback of @g: when a charge would take @g over its limit, it
 * is called (on the allocating thread, no uslub lock held) with the
 * number of bytes missing; it may free objects and returns how many bytes
 * it believes it freed. The charge is retried while the callback makes
 * progress (at most 16 times); then the allocation fails with NULL (0
 * from bulk), errno = ENOMEM, and nothing is taken or leaked.
 */
typedef size_t (*uslub_reclaim_fn)(uslub_group_t *g, size_t need, void *arg);
void uslub_group_set_reclaim(uslub_group_t *g, uslub_reclaim_fn fn, void *arg);

struct uslub_group_info {
	const char *name;
	size_t usage;                /* bytes charged (with descendants, stocks) */
	size_t limit;
	unsigned long failcnt;       /* charges refused at this group's limit    */
	unsigned long reclaims;      /* reclaim callback calls                   */
	unsigned long children;
	int depth;                   /* 0: root                                  */
};
int uslub_group_info(const uslub_group_t *g, struct uslub_group_info *out);
size_t uslub_group_usage(const uslub_group_t *g);

/* Give back the calling thread's prepaid stock (its bytes leave usage). */
void uslub_group_drain_stock(void);

/* Live groups (with the root), and live object-level handles (a deleted
 * group's handle lives on while its objects do). */
unsigned long uslub_group_count(void);
unsigned long uslub_objcg_count(void);

/* Objects of @s charged to @g (itself, not its descendants) and their
 * charged bytes, found by walking the cache's slabs (memcg_slabinfo.py).
 * Exact when no thread allocates or frees @s meanwhile. */
int uslub_group_cache_usage(const uslub_group_t *g, const uslub_cache_t *s,
			    unsigned long *objects, size_t *bytes);

/* Per-group, per-cache usage of every accounted object, as a table or
 * JSON (enum uslub_format). */
void uslub_group_report_print(FILE *f, int fmt);

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

/*
 * The kernel's struct kmem_cache_args: the optional parameters of a cache.
 * Zero-initialize and set what you need.
 */
struct uslub_cache_args {
	size_t align;                /* 0: natural word alignment                 */
	void (*ctor)(void *);        /* see uslub_cache_create()                  */
	unsigned int sheaf_capacity; /* > 0: per-CPU sheaves of at least this many
	                                objects (rounded up so a sheaf fills its
	                                allocation); 0: the default capacity
	                                (calculate_sheaf_capacity), or none for
	                                a USLUB_CPU_SLAB cache or with
	                                USLUB_CPU_SLABS=1 (the 6.x model)      */
	unsigned int freeptr_offset; /* with use_freeptr_offset: where the free
	                                pointer lives inside a free object (word
	                                aligned, inside the object); lets a ctor
	                                cache keep its size. Only with a ctor
	                                (or SLAB_TYPESAFE_BY_RCU): EINVAL
	                                otherwise                                */
	int use_freeptr_offset;
	unsigned int useroffset;     /* usercopy window (recorded, reported)      */
	unsigned int usersize;
};

/* uslub_cache_create() with the kernel's argument structure (the 6.12+
 * kmem_cache_create(name, size, args, flags) form). @args may be NULL.
 * Same errors as uslub_cache_create(); also EINVAL for a free pointer
 * offset that is not word aligned or does not fit inside the object, for
 * use_freeptr_offset without a ctor (the kernel's rule since 7.0: only a
 * ctor cache, or a SLAB_TYPESAFE_BY_RCU one, may keep its free pointer
 * inside the object), or for a usercopy window outside the object (here
 * uslub is stricter than the kernel, which warns and drops the window:
 * <uslub/slab.h> does that). */
uslub_cache_t *uslub_cache_create_args(const char *name, size_t size,
				       const struct uslub_cache_args *args, unsigned int flags);

/* Allocate one object; NULL (errno = ENOMEM) if memory is exhausted and
 * gfp does not contain USLUB_GFP_NOFAIL. */
void *uslub_cache_alloc_noprof(uslub_cache_t *s, uslub_gfp_t gfp);
void *(uslub_cache_alloc)(uslub_cache_t *s, uslub_gfp_t gfp);
#define uslub_cache_alloc(s, gfp) ({                                             \
	uslub_cache_t *__uslub_s = (s); uslub_gfp_t __uslub_g = (gfp);           \
	USLUB_TAG_HERE(); uslub_cache_alloc_noprof(__uslub_s, __uslub_g); })

/* Same, from slabs of NUMA node @node (USLUB_NUMA_NO_NODE: any); a node
 * outside [0, uslub_nr_nodes()) gives NULL with errno = EINVAL. */
void *uslub_cache_alloc_node_noprof(uslub_cache_t *s, uslub_gfp_t gfp, int node);
void *(uslub_cache_alloc_node)(uslub_cache_t *s, uslub_gfp_t gfp, int node);
#define uslub_cache_alloc_node(s, gfp, node) ({                                \
	uslub_cache_t *__uslub_s = (s); uslub_gfp_t __uslub_g = (gfp);           \
	int __uslub_n = (node);                                                  \
	USLUB_TAG_HERE(); uslub_cache_alloc_node_noprof(__uslub_s, __uslub_g, __uslub_n); })

/* Allocate from @s for a request of @size bytes (<= the object size), as
 * kmalloc does from a kmalloc cache: a slub_debug cache with red zones
 * records @size and guards the object's unused tail [size, object size)
 * like a red zone (a write there is reported as "kmalloc Redzone
 * overwritten"). NULL with EINVAL for a size larger than the objects. */
void *uslub_kmalloc_trace(uslub_cache_t *s, uslub_gfp_t gfp, size_t size);

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

/* ------------------------------------------------------------------------
 * Bulk allocation and freeing (seed 001)
 * ---------------------------------------------------------------------- */

/*
 * Allocate @n objects into @p[0..n-1], all or nothing: returns n, or 0 with
 * every object it had taken given back (errno = ENOMEM; EINVAL for n larger
 * than INT_MAX). Objects come from the calling thread's sheaves or cpu
 * freelist first, then from partial slabs, then from new slabs, whose
 * objects are handed out directly (no freelist is built for them).
 * USLUB_GFP_ZERO zeroes each object; USLUB_GFP_NOFAIL retries.
 */
int uslub_cache_alloc_bulk_noprof(uslub_cache_t *s, uslub_gfp_t gfp, size_t n, void **p);
int (uslub_cache_alloc_bulk)(uslub_cache_t *s, uslub_gfp_t gfp, size_t n, void **p);
#define uslub_cache_alloc_bulk(s, gfp, n, p) ({                                \
	uslub_cache_t *__uslub_s = (s); uslub_gfp_t __uslub_g = (gfp);           \
	size_t __uslub_n = (n); void **__uslub_p = (p);                          \
	USLUB_TAG_HERE();                                                        \
	uslub_cache_alloc_bulk_noprof(__uslub_s, __uslub_g, __uslub_n, __uslub_p); })

/*
 * Free @n objects of @s. Objects of one slab are chained into a detached
 * freelist (looking a few entries ahead for more of the same slab) and
 * given back with one compare-and-swap per group. NULL entries are
 * skipped; invalid pointers are reported and left alone, as with
 * uslub_cache_free(). With @s == NULL each object goes to its own cache
 * (the kernel's kfree_bulk). The array's contents are clobbered.
 */
void uslub_cache_free_bulk(uslub_cache_t *s, size_t n, void **p);

/* uslub_cache_free_bulk(NULL, n, p): objects of any caches, mixed. */
void uslub_kfree_bulk(size_t n, void **p);

/* ------------------------------------------------------------------------
 * kmalloc (the kernel's kmalloc family)
 *
 * Requests up to USLUB_KMALLOC_MAX_CACHE_SIZE (8 KiB) come from the kmalloc
 * caches, whose object sizes are SLUB's size classes: 8, 16, 32, 64, 96,
 * 128, 192, 256, 512, 1k, 2k, 4k, 8k ("kmalloc-<size>" in slabinfo).
 * Larger requests up to 2 MiB are whole runs of 2^order pages from the page
 * provider; larger still are mapped directly (one mmap each). Every
 * allocation of a power-of-two size is naturally aligned (to its size, up
 * to the page size; page runs to their own size).
 *
 * kmalloc(0) returns USLUB_ZERO_SIZE_PTR, which kfree and ksize accept
 * (and which must not be dereferenced), as in the kernel. kfree takes any
 * pointer kmalloc or uslub_cache_alloc returned (any cache's object).
 * Failures: NULL with errno = ENOMEM (no memory, an accounting limit, an
 * injected failure); kcalloc and kmalloc_array: NULL with errno = ENOMEM
 * when n * size overflows.
 * ---------------------------------------------------------------------- */
#define USLUB_ZERO_SIZE_PTR ((void *)16)
#define USLUB_ZERO_OR_NULL_PTR(x) ((unsigned long)(x) <= (unsigned long)USLUB_ZERO_SIZE_PTR)
#define USLUB_KMALLOC_MIN_SIZE 8
#define USLUB_KMALLOC_MAX_CACHE_SIZE 8192ul
#define USLUB_KMALLOC_MAX_SIZE (1ul << 40)   /* larger requests fail (ENOMEM) */

void *uslub_kmalloc_noprof(size_t size, uslub_gfp_t gfp);
void *uslub_kmalloc_node_noprof(size_t size, uslub_gfp_t gfp, int node);
void *uslub_kmalloc_array_noprof(size_t n, size_t size, uslub_gfp_t gfp);
void *uslub_krealloc_noprof(const void *p, size_t new_size, uslub_gfp_t gfp);
void *(uslub_kmalloc)(size_t size, uslub_gfp_t gfp);
void *(uslub_kmalloc_node)(size_t size, uslub_gfp_t gfp, int node);
void *(uslub_kzalloc)(size_t size, uslub_gfp_t gfp);
void *(uslub_kmalloc_array)(size_t n, size_t size, uslub_gfp_t gfp);
void *(uslub_kcalloc)(size_t n, size_t size, uslub_gfp_t gfp);
void *(uslub_krealloc)(const void *p, size_t new_size, uslub_gfp_t gfp);
#define uslub_kmalloc(size, gfp) ({                                              \
	size_t __uslub_z = (size); uslub_gfp_t __uslub_g = (gfp);                \
	USLUB_TAG_HERE_KMALLOC(size); uslub_kmalloc_noprof(__uslub_z, __uslub_g); })
#define uslub_kmalloc_node(size, gfp, node) ({                                   \
	size_t __uslub_z = (size); uslub_gfp_t __uslub_g = (gfp);                \
	int __uslub_n = (node);                                                  \
	USLUB_TAG_HERE_KMALLOC(size); uslub_kmalloc_node_noprof(__uslub_z, __uslub_g, __uslub_n); })
#define uslub_kzalloc(size, gfp) uslub_kmalloc((size), (gfp) | USLUB_GFP_ZERO)
#define uslub_kmalloc_array(n, size, gfp) ({                                     \
	size_t __uslub_k = (n), __uslub_z = (size); uslub_gfp_t __uslub_g = (gfp); \
	USLUB_TAG_HERE_KMALLOC(n, size); uslub_kmalloc_array_noprof(__uslub_k, __uslub_z, __uslub_g); })
#define uslub_kcalloc(n, size, gfp) uslub_kmalloc_array((n), (size), (gfp) | USLUB_GFP_ZERO)
/* Resize: in place when the new size fits the allocation's size class (the
 * bytes past the old size are zeroed with USLUB_GFP_ZERO, as far as the
 * old allocation was zeroed: give __GFP_ZERO to every call, as in the
 * kernel); else a new allocation, the old contents copied and the old one
 * freed. new_size 0 frees @p and returns USLUB_ZERO_SIZE_PTR; on failure
 * @p is untouched and NULL is returned. */
#define uslub_krealloc(p, new_size, gfp) ({                                      \
	const void *__uslub_p = (p); size_t __uslub_z = (new_size);              \
	uslub_gfp_t __uslub_g = (gfp);                                           \
	USLUB_TAG_HERE_KMALLOC(new_size); uslub_krealloc_noprof(__uslub_p, __uslub_z, __uslub_g); })

/* Free what kmalloc (any size) or any cache returned; NULL and
 * USLUB_ZERO_SIZE_PTR are ignored. Invalid pointers are reported as
 * uslub_cache_free() reports them. */
void uslub_kfree(const void *p);
/* kfree() after zeroing the whole allocation (kfree_sensitive). */
void uslub_kfree_sensitive(const void *p);
/* The usable size of an allocation (its size class, or its page run):
 * all of it may be written. 0 for NULL and USLUB_ZERO_SIZE_PTR. */
size_t uslub_ksize(const void *p);
/* The size kmalloc(@size) really allocates (SIZE_MAX bytes: 0 on
 * overflow, as kmalloc would fail). */
size_t uslub_kmalloc_size_roundup(size_t size);
/* The kmalloc cache that serves @size bytes (NULL above 8 KiB). */
uslub_cache_t *uslub_kmalloc_cache(size_t size);

/* Aligned kmalloc, for the malloc family: @align a power of two; NULL with
 * EINVAL otherwise. Every alignment is served (above 2 MiB by mmap). */
void *uslub_kmalloc_aligned(size_t size, size_t align, uslub_gfp_t gfp);

/*
 * Any-context allocation (the kernel's kmalloc_nolock()/kfree_nolock(),
 * 6.18). In userspace "any context" means: from a signal handler, also
 * one that interrupted this very thread inside uslub (malloc, kmalloc, a
 * cache's alloc or free, holding a uslub lock), and re-entrantly. What is
 * guaranteed there: no deadlock (every lock is only tried), no damage to
 * the interrupted call's state (the thread's per-CPU sheaves and cpu
 * freelist are not touched; slabs change only by their lock-free CAS or
 * under a lock this call got), nothing allocated or mapped, errno left as
 * it was. The price: either call may find what it needs locked.
 *
 * uslub_kmalloc_nolock: @size up to USLUB_KMALLOC_MAX_CACHE_SIZE (8 KiB;
 * above: NULL), 0 gives USLUB_ZERO_SIZE_PTR; @gfp only USLUB_GFP_ZERO,
 * USLUB_GFP_ACCOUNT, USLUB_GFP_NOWARN and USLUB_GFP_NOWAIT/ATOMIC (what
 * it does anyway; other bits, NOFAIL: NULL); @node a node
 * or USLUB_NUMA_NO_NODE. The object comes from a node partial slab of its
 * kmalloc cache or from a new slab made of pages the node already has,
 * else the next kmalloc size is tried once; else NULL (counted as
 * ALLOC_NOLOCK_FAIL). Limits: NULL before the first ordinary kmalloc or
 * malloc made the kmalloc caches, and from a slub_debug kmalloc cache.
 * USLUB_GFP_ACCOUNT charges the thread's current group directly (not
 * through the thread's stock); when that group's lock is taken or its
 * limit refuses, the call returns NULL. The object is not tagged for
 * profiling. It is an ordinary kmalloc object: uslub_kfree() frees it too.
 *
 * uslub_kfree_nolock: frees any cache's object (not page runs or
 * mappings: reported and left alone). When the free needs a lock that is
 * taken, or the object is charged or tagged, or its cache is a slub_debug
 * one, the object is deferred (counted as FREE_NOLOCK_DEFER) and freed by
 * the next ordinary allocation or free slow path, uslub_cache_shrink() or
 * uslub_cache_destroy() of any cache.
 */
void *uslub_kmalloc_nolock(size_t size, uslub_gfp_t gfp, int node);
void uslub_kfree_nolock(const void *p);

/*
 * Print where @object points (the kernel's kmem_dump_obj()): its cache,
 * the object's start, the offset of @object into it, the object size,
 * and with owner tracking (slub_debug U, SLAB_STORE_USER) who allocated
 * and last freed it. One report on stderr, written without allocating.
 * Returns false (printing nothing) when @object is not in a slab.
 */
bool uslub_kmem_dump_obj(const void *object);

/*
 * Charge @objp, an object the caller holds, to the thread's current
 * accounting group now (the kernel's kmem_cache_charge(), 6.12), as if it
 * had been allocated with USLUB_GFP_ACCOUNT; freeing it uncharges it.
 * Returns true when charged or when there is nothing to do (no current
 * group, already charged, not a slab object, a cache without extensions),
 * false when the group's limit refuses the charge (errno ENOMEM); with
 * USLUB_GFP_NOFAIL the limit is overstepped instead. Limit: in the 6.x
 * cpu-slab model (USLUB_CPU_SLAB, USLUB_CPU_SLABS=1), an object sitting in
 * another thread's cpu slab installed before the cache's accounting hooks
 * were switched on may be freed by that thread's inline path without
 * being uncharged; sheaf caches (the default) are not affected.
 */
bool uslub_cache_charge(void *objp, uslub_gfp_t gfp);

/* kmalloc on NUMA node @node (USLUB_NUMA_NO_NODE: any) aligned to @align,
 * a power of two (the kernel's kvmalloc_node_align). NULL with EINVAL for
 * a bad alignment or node, ENOMEM when out of memory. Size 0 gives
 * USLUB_ZERO_SIZE_PTR. */
void *uslub_kmalloc_node_align_noprof(size_t size, size_t align, uslub_gfp_t gfp, int node);
#define uslub_kmalloc_node_align(size, align, gfp, node) ({                     \
	size_t __uslub_z = (size), __uslub_a = (align);                          \
	uslub_gfp_t __uslub_g = (gfp); int __uslub_n = (node);                   \
	USLUB_TAG_HERE_KMALLOC(size);                                            \
	uslub_kmalloc_node_align_noprof(__uslub_z, __uslub_a, __uslub_g, __uslub_n); })

/*
 * krealloc with placement (the kernel's krealloc_node_align): as
 * uslub_krealloc, and the allocation also moves when @p is not aligned to
 * @align (a power of two; 1: any) or, with a @node other than
 * USLUB_NUMA_NO_NODE, when @p's memory is on another node (the new one
 * is then taken from @node). NULL with EINVAL for a bad alignment or node
 * (@p untouched), ENOMEM when out of memory (@p untouched).
 */
void *uslub_krealloc_node_align_noprof(const void *p, size_t new_size, size_t align,
				       uslub_gfp_t gfp, int node);
#define uslub_krealloc_node_align(p, new_size, align, gfp, node) ({              \
	const void *__uslub_p = (p); size_t __uslub_z = (new_size);              \
	size_t __uslub_a = (align); uslub_gfp_t __uslub_g = (gfp);               \
	int __uslub_n = (node);                                                  \
	USLUB_TAG_HERE_KMALLOC(new_size);                                        \
	uslub_krealloc_node_align_noprof(__uslub_p, __uslub_z, __uslub_a, __uslub_g, \
					 __uslub_n); })

/*
 * kmalloc with the kernel's partition token (kmalloc_token_t, 7.2: what
 * <uslub/slab.h>'s token-taking names pass): as
 * uslub_kmalloc_node_align_noprof and uslub_krealloc_node_align_noprof,
 * the partition (with USLUB_KMALLOC_PARTITIONS=1) chosen by @token instead
 * of the call site: a @token below USLUB_KMALLOC_PARTITIONS is the
 * partition itself (typed mode, 0 the normal caches), any other value
 * stands for a call site and is hashed with the process's seed (random
 * mode). The uslub_kmalloc* macros need no token: their tag is the site.
 */
void *uslub_kmalloc_token_noprof(size_t size, size_t align, uslub_gfp_t gfp, int node,
				 unsigned long token);
void *uslub_krealloc_token_noprof(const void *p, size_t new_size, size_t align,
				  uslub_gfp_t gfp, int node, unsigned long token);

/*
 * Bucket sets (the kernel's kmem_buckets, CONFIG_SLAB_BUCKETS): a private
 * copy of every kmalloc size class, so that one kind of allocation (say,
 * buffers whose size a user chooses) never shares slabs with the rest.
 * The set is an array of caches indexed like the kmalloc caches (1: 96
 * bytes, 2: 192, i >= 3: 2^i, up to USLUB_KMALLOC_SHIFT_HIGH), each a real
 * uslub cache named "<name>-<class>" ("<name>-96", "<name>-1k", ...),
 * never merged, with @flags (USLUB_ cache flags), @ctor, and the usercopy
 * window [@useroffset, +@usersize) clipped to each class (none for a
 * class it does not fit). All of them are created here. As in the kernel
 * a set is never destroyed. Returns NULL with errno (EINVAL: a bad name
 * or flags; ENOMEM) and nothing created on failure.
 */
#define USLUB_KMALLOC_SHIFT_HIGH 13
typedef uslub_cache_t *uslub_kmem_buckets[USLUB_KMALLOC_SHIFT_HIGH + 1];
uslub_kmem_buckets *uslub_kmem_buckets_create(const char *name, unsigned int flags,
					      unsigned int useroffset, unsigned int usersize,
					      void (*ctor)(void *));
/* kmalloc from the set @b (NULL: the kmalloc caches): sizes up to
 * USLUB_KMALLOC_MAX_CACHE_SIZE from the set's class caches, larger ones as
 * kmalloc serves them (page runs, mappings). kfree() frees the objects. */
void *uslub_kmem_buckets_alloc_noprof(uslub_kmem_buckets *b, size_t size, uslub_gfp_t gfp,
				      int node);
#define uslub_kmem_buckets_alloc(b, size, gfp, node) ({                          \
	uslub_kmem_buckets *__uslub_b = (b); size_t __uslub_z = (size);          \
	uslub_gfp_t __uslub_g = (gfp); int __uslub_n = (node);                   \
	USLUB_TAG_HERE_KMALLOC(size);                                            \
	uslub_kmem_buckets_alloc_noprof(__uslub_b, __uslub_z, __uslub_g, __uslub_n); })

/* ------------------------------------------------------------------------
 * Sheaves and prefilling (Linux 6.18)
 * ---------------------------------------------------------------------- */
struct uslub_sheaf;

/* Objects per sheaf of @s (0: the cache has no per-CPU sheaves). */
unsigned int uslub_cache_sheaf_capacity(const uslub_cache_t *s);

/*
 * A sheaf holding at least @size objects, for allocations that must not
 * fail later (the maple tree's use: prefill, then allocate under a lock
 * with a non-blocking gfp). Works for any cache; a @size above the cache's
 * sheaf capacity gets an "oversize" sheaf of exactly that capacity.
 * Returns NULL (errno = ENOMEM, or EINVAL for a size too large for any
 * sheaf) with nothing taken.
 */
struct uslub_sheaf *uslub_cache_prefill_sheaf(uslub_cache_t *s, uslub_gfp_t gfp,
					      unsigned int size);

/* One object from @sheaf. Never fails while the sheaf holds objects, with
 * any gfp (USLUB_GFP_ZERO zeroes it); NULL when it is empty. An accounted
 * object is charged even past the group's limit (the prefill was the
 * point where failing was allowed). */
void *uslub_cache_alloc_from_sheaf_noprof(uslub_cache_t *s, uslub_gfp_t gfp,
					  struct uslub_sheaf *sheaf);
void *(uslub_cache_alloc_from_sheaf)(uslub_cache_t *s, uslub_gfp_t gfp,
					     struct uslub_sheaf *sheaf);
#define uslub_cache_alloc_from_sheaf(s, gfp, sheaf) ({                         \
	uslub_cache_t *__uslub_s = (s); uslub_gfp_t __uslub_g = (gfp);           \
	struct uslub_sheaf *__uslub_h = (sheaf);                                 \
	USLUB_TAG_HERE();                                                        \
	uslub_cache_alloc_from_sheaf_noprof(__uslub_s, __uslub_g, __uslub_h); })

/*
 * Make *@sheafp hold at least @size objects. It may be refilled in place
 * or replaced by another sheaf (the old one is returned), hence the
 * double pointer. Returns 0, or -ENOMEM (errno too) with *sheafp unchanged
 * and still usable. Fault injection (USLUB_FAILSLAB, a cache's fail hook)
 * is asked as for a prefill of the objects the call must get: those
 * missing when refilled in place, @size when the sheaf is replaced.
 */
int uslub_cache_refill_sheaf(uslub_cache_t *s, uslub_gfp_t gfp,
			     struct uslub_sheaf **sheafp, unsigned int size);

/* Give a sheaf back; its objects return to the cache (kept for the calling
 * thread when possible). */
void uslub_cache_return_sheaf(uslub_cache_t *s, uslub_gfp_t gfp, struct uslub_sheaf *sheaf);

/* Objects left in @sheaf. */
unsigned int uslub_cache_sheaf_size(const struct uslub_sheaf *sheaf);

const char *uslub_cache_name(const uslub_cache_t *s);
size_t uslub_cache_object_size(const uslub_cache_t *s);

/* Flush all of the calling thread's per-CPU slabs (every cache), as a CPU
 * going offline does. Thread exit does this automatically. With
 * USLUB_PERCPU=cpu a thread's sheaves are its rseq ids': this drains the
 * sheaves of every id (thread exit leaves them to the ids). */
void uslub_flush_thread(void);

/* Is @p inside memory uslub manages? (lock-free, O(1)) */
int uslub_owns(const void *p);

/* The cache of the slab @p points into (the kernel's virt_to_cache()), or
 * NULL when @p is not inside a live slab (not uslub's memory, a kmalloc
 * or malloc block above the caches). Lock-free, O(1). */
uslub_cache_t *uslub_object_cache(const void *p);

/* Return every empty region to the OS now, whatever the decay delay
 * (USLUB_DECAY_MS) and without waiting for the background purge thread:
 * the barns' sheaves are flushed to their slabs and every empty slab is
 * discarded (kmem_cache_shrink() of every cache, less the threads' own
 * sheaves and cpu slabs), then dirty free pages are purged
 * (MADV_DONTNEED), empty 4 MiB segments, kept kmalloc/malloc mappings
 * above 2 MiB and the unused rest of the current reservation are
 * unmapped. Returns the number of bytes returned. */
size_t uslub_trim(void);

/* Number of misuse reports so far: invalid frees (each counts one) and
 * destroys refused because objects were live (each counts one). */
unsigned long uslub_error_count(void);

/* ------------------------------------------------------------------------
 * Fault injection (the kernel's failslab)
 * ---------------------------------------------------------------------- */
/*
 * Configure fault injection with the syntax of USLUB_FAILSLAB:
 * "probability=<percent>,interval=<n>,times=<n|-1>,space=<bytes>,seed=<n>,
 * ignore-gfp-wait=<0|1>,cache-filter=<0|1>,verbose=<0|1>" (missing keys
 * take their defaults: probability 0 = off, interval 1, times -1 =
 * unlimited, space 0). A failed call returns NULL (0 from bulk, NULL from
 * prefill) with ENOMEM and takes nothing. Returns 0, or -1 with EINVAL
 * (nothing changed) for a malformed spec.
 */
int uslub_failslab_configure(const char *spec);
/* Failures injected so far. */
unsigned long uslub_failslab_injected(void);
/* Allow (or stop) failures of @s when cache-filter=1 (the 'A' flag of
 * USLUB_DEBUG). */
void uslub_cache_set_failslab(uslub_cache_t *s, int on);
/*
 * A per-cache injection hook, beside USLUB_FAILSLAB's policy (the kernel's
 * userspace test harness builds its non-kernel allocation budget on it:
 * <uslub/ktest.h>). @fn is asked once per allocation call of @s (one per
 * bulk or prefill call, @nr the objects asked for), before anything is
 * taken and with no uslub lock held, with the call's @gfp; nonzero fails
 * the call as fault injection does (NULL, 0 from bulk, NULL from prefill,
 * errno ENOMEM; counted in uslub_failslab_injected()). It must not
 * allocate from @s. The hook is asked whatever USLUB_FAILSLAB says (the
 * cache filter does not apply), then the global policy is. While a hook is
 * set every allocation of @s takes the checked slow path. NULL @fn
 * removes it. Set it before other threads use @s. Returns 0, or -1 with
 * EINVAL for a NULL or destroyed cache.
 */
typedef int (*uslub_fail_hook_fn)(uslub_cache_t *s, uslub_gfp_t gfp, size_t nr, void *arg);
int uslub_cache_set_fail_hook(uslub_cache_t *s, uslub_fail_hook_fn fn, void *arg);
/* The @arg given with @s's hook (NULL without one). */
void *uslub_cache_fail_hook_arg(const uslub_cache_t *s);

/* Print every USLUB_* environment option, its default and meaning, to
 * stderr. */
void uslub_options_print(void);
/* The same list on @f (for `uslub --help`). */
void uslub_options_fprint(FILE *f);

/* Number of NUMA nodes (real, or faked with USLUB_FAKE_NODES). */
int uslub_nr_nodes(void);

/* ------------------------------------------------------------------------
 * Statistics (SLUB's CONFIG_SLUB_STATS counters, always on)
 * ---------------------------------------------------------------------- */
#define USLUB_STAT_ITEMS(X)                                                  \
	X(ALLOC_PCS,             "allocation from a per-CPU sheaf")          \
	X(FREE_PCS,              "free to a per-CPU sheaf")                  \
	X(FREE_FASTPATH,         "free to the cpu slab's freelist")          \
	X(ALLOC_FASTPATH,        "allocation from the cpu freelist")         \
	X(ALLOC_SLOWPATH,        "allocation through the slow path")         \
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
	X(CMPXCHG_DOUBLE_FAIL,   "slab freelist CAS failed and retried")     \
	X(CPU_PARTIAL_ALLOC,     "cpu slab taken from the cpu partial list") \
	X(CPU_PARTIAL_FREE,      "slab put on the cpu partial list by free") \
	X(CPU_PARTIAL_NODE,      "slab moved node partial -> cpu partial")   \
	X(CPU_PARTIAL_DRAIN,     "cpu partial list drained to the node")    \
	X(SHEAF_FLUSH,           "objects flushed from a sheaf to slabs")    \
	X(SHEAF_REFILL,          "objects refilled into a sheaf from slabs") \
	X(SHEAF_ALLOC,           "empty sheaf allocated")                    \
	X(SHEAF_FREE,            "empty sheaf freed")                        \
	X(BARN_GET,              "full sheaf taken from the barn")           \
	X(BARN_GET_FAIL,         "barn had no full sheaf")                   \
	X(BARN_PUT,              "full sheaf put in the barn")               \
	X(BARN_PUT_FAIL,         "barn full: sheaf flushed to slabs")        \
	X(SHEAF_PREFILL_FAST,    "prefill served by a ready sheaf")          \
	X(SHEAF_PREFILL_SLOW,    "prefill had to refill a sheaf")            \
	X(SHEAF_PREFILL_OVERSIZE, "prefill above capacity: oversize sheaf")  \
	X(SHEAF_RETURN_FAST,     "returned sheaf kept (spare or barn)")      \
	X(SHEAF_RETURN_SLOW,     "returned sheaf flushed and freed")         \
	X(FREELIST_CORRUPT,      "corrupted free pointer caught, dropped")   \
	X(ALLOC_NOLOCK_FAIL,     "kmalloc_nolock failed (lock taken, no memory)") \
	X(FREE_NOLOCK_DEFER,     "kfree_nolock deferred to a later slow path") \
	X(FREE_RCU_SHEAF,        "kfree_rcu object freed through an rcu_free sheaf") \
	X(FREE_RCU_SHEAF_FAIL,   "kfree_rcu object given its own grace period") \
	X(FLUSH_RUN,             "slab run given back by a flush (one CAS)")  \
	X(REFILL_RUN,            "slab freelist or new slab taken by a refill")

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
	size_t free_mark_offset; /* the free mark's word (double-free check);
	                            >= object_size: outside the object        */
	unsigned int objs_per_slab;
	unsigned int order;      /* slab = 2^order pages                      */
	unsigned int pages_per_slab;
	unsigned int min_partial;
	unsigned int cpu_partial_slabs;
	unsigned int sheaf_capacity; /* 0: no per-CPU sheaves                 */
	int random_freelist;         /* new slabs' object order is shuffled   */
	int hardened_freelist;       /* free pointers stored obfuscated       */
	int obj_ext;                 /* per-object extension placement:
	                                USLUB_OBJ_EXT_*                        */
	unsigned int obj_ext_size;   /* bytes of one extension (0: none)      */
	unsigned int obj_ext_bytes;  /* extension bytes per object outside the
	                                slab's objects and leftover (array: the
	                                extension size; in-slab: 0)           */
	unsigned long barn_full;     /* full sheaves in the barns, all nodes  */
	unsigned long barn_empty;    /* empty sheaves in the barns            */
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
	char debug[12];              /* slub_debug letters in effect ("FZPU";
	                                "" for none; A = fault injection)      */
	unsigned long isolated_slabs; /* slabs isolated after a detected
	                                corruption (never used again)         */
	const char *percpu;          /* the cache's per-CPU layer: "sheaves"
	                                (Linux 7.0, the default), "cpu_slab"
	                                (the 6.x model: USLUB_CPU_SLABS=1 or
	                                USLUB_CPU_SLAB) or "none" (slub_debug:
	                                every object through the node lists) */
	unsigned int useroffset;     /* the usercopy window [useroffset,     */
	unsigned int usersize;       /*   +usersize); 0, 0: none             */
	unsigned long barn_limit;    /* full sheaves the barns take now, all
	                                nodes: above their base while the
	                                cache swings (a wave freed comes back) */
	unsigned long keep_empty;    /* slabs the node partial lists may hold
	                                before an empty one is discarded, above
	                                min_partial while the cache swings (0:
	                                min_partial), all nodes                */
	const char *obj_ext_fields;  /* the words of one extension (Linux
	                                7.3's smaller slabobj_ext): "objcg",
	                                "tag", "objcg+tag"; "" with none (with
	                                obj_ext on_demand: what its arrays hold) */
	unsigned int obj_ext_charge; /* bytes one accounted object charges its
	                                group: size + obj_ext_bytes, + a word
	                                for the objcg where obj_ext_fields has
	                                none (0: never accounted)             */
	const char *percpu_mode;     /* whose sheaves (USLUB_PERCPU, one mode
	                                per process): "thread" (each thread's
	                                own) or "cpu" (per rseq concurrency id
	                                or CPU: cached memory bounded by CPUs) */
	unsigned int percpu_ids;     /* "cpu": the ids that have had sheaves
	                                (at most the possible CPUs); else 0   */
};

/* Where a cache keeps its per-object extensions (seed 003). */
enum uslub_obj_ext_placement {
	USLUB_OBJ_EXT_NONE = 0,      /* no accounting or profiling: none       */
	USLUB_OBJ_EXT_LEFTOVER = 1,  /* an array in the slab's unused tail     */
	USLUB_OBJ_EXT_PADDING = 2,   /* inside each object's alignment padding */
	USLUB_OBJ_EXT_ARRAY = 3,     /* a separate array per slab              */
	USLUB_OBJ_EXT_ON_DEMAND = 4, /* none, but USLUB_GFP_ACCOUNT gives a slab
	                                a separate array on first use          */
};
const char *uslub_obj_ext_placement_name(int placement);

int uslub_cache_slabinfo(const uslub_cache_t *s, struct uslub_slabinfo *out);

/*
 * How the reports (uslub_slabinfo_print, uslub_allocinfo_print,
 * uslub_group_report_print) are written:
 *   TABLE       for people: columns, a legend under each table, and (in
 *               slabinfo) the caches with nothing in them on one line;
 *   JSON        for programs: one document on one line, ending with a
 *               newline (so a stream of reports is JSON Lines), every
 *               cache included;
 *   JSON_VALUE  the same document without the final newline, to be the
 *               value of a member of a larger document (the published
 *               snapshot, src/observe/publish.c, is built this way).
 */
enum uslub_format { USLUB_FMT_TABLE = 0, USLUB_FMT_JSON = 1, USLUB_FMT_JSON_VALUE = 2 };

/* slabinfo of every cache, with statistics, as a table or JSON. */
void uslub_slabinfo_print(FILE *f, enum uslub_format fmt);

/* Page provider totals. */
struct uslub_page_stats {
	unsigned long segments;        /* 4 MiB segments mapped now (empty ones
	                                  are unmapped after the decay)       */
	unsigned long bytes_reserved;  /* their address space                 */
	unsigned long bytes_in_slabs;  /* pages handed out to slabs           */
	unsigned long bytes_purged;    /* free pages returned to the OS and not
	                                  reused since (a current amount)     */
	unsigned long purges;          /* madvise calls made                  */
	unsigned long segments_kept;   /* times the kernel refused to unmap an
	                                  empty segment (a seccomp filter,
	                                  vm.max_map_count): it was kept, owned
	                                  and reused, tried again after the
	                                  decay                               */
	unsigned long release_failures;/* every munmap/madvise(MADV_DONTNEED)
	                                  the kernel refused (segments, kept
	                                  mappings, purges); 0 normally        */
	unsigned long bytes_unreleased;/* address space whose munmap was
	                                  refused and that nothing reuses (an
	                                  alignment slack, a mapping no keep
	                                  slot took): its pages returned where
	                                  allowed, its munmap tried again by
	                                  each purge pass; 0 normally          */
};
void uslub_page_stats(struct uslub_page_stats *out);

/* ------------------------------------------------------------------------
 * The grace-period provider (RCU-deferred freeing; see <uslub/rcu.h>)
 *
 * The core has no RCU of its own: a provider fills these in, once per
 * process. libuslub-rcu registers liburcu's (default memb flavour) from its
 * constructor; applications use <uslub/rcu.h> (kfree_rcu and friends), not
 * these. @call may be made from any thread with no uslub lock held (the
 * core defers what it would have to call under a lock, and hands it over
 * at the next point where it holds none); @rcu_barrier waits for every
 * callback given to @call before it; @synchronize waits for a grace
 * period. struct uslub_rcu_head has the layout of liburcu's and the
 * kernel's struct rcu_head (two words).
 * ---------------------------------------------------------------------- */
struct uslub_rcu_head {
	struct uslub_rcu_head *next;
	void (*func)(struct uslub_rcu_head *head);
};
struct uslub_gp_ops {
	const char *name;
	void (*call)(struct uslub_rcu_head *head, void (*func)(struct uslub_rcu_head *head));
	void (*synchronize)(void);
	void (*rcu_barrier)(void);
};
/* 0, or -1 with errno EBUSY when another provider is registered. */
int uslub_gp_register(const struct uslub_gp_ops *ops);
/* The registered provider's name, or NULL. */
const char *uslub_gp_provider(void);
/*
 * Free @ptr (an object of any uslub cache, a kmalloc page run) after a
 * grace period: a slab object of a cache with per-CPU sheaves goes to the
 * thread's rcu_free sheaf (one @call per full sheaf); anything else gets
 * its own @call through @head (a two-word struct inside the object at
 * offset < 4096), or, with @head NULL, a @synchronize and a free now.
 * No provider: reported, and the object is never freed. A pointer kfree()
 * would refuse (not uslub's, inside a page run, freed) is reported at
 * once, by the address given and with kfree()'s cause, and never queued.
 */
void uslub_gp_kvfree(void *ptr, struct uslub_rcu_head *head);
/*
 * The same from any context (kfree_rcu_nolock(); also a signal handler,
 * one that interrupted this thread inside uslub or inside the provider):
 * @head is pushed on a lock-free list (one CAS; no lock, no allocation, no
 * provider call, errno kept) and handed to @call by the next drain in an
 * ordinary context: the next kfree_rcu(), barrier, kmem_cache_shrink() or
 * destroy, a thread's exit, or the end of one of uslub's callbacks; each
 * object then has its own @call. @head is required. @ptr is checked from
 * its page descriptor: a slab object or a page run's start; a page-aligned
 * pointer outside uslub's pages (a huge mapping) is checked by the
 * callback's free; anything else is reported and left alone.
 */
void uslub_gp_kvfree_nolock(void *ptr, struct uslub_rcu_head *head);
/* Hand every partly filled rcu_free sheaf (of @s, or of every cache when
 * @s is NULL; every thread's) and everything deferred to the provider.
 * Does not wait. */
void uslub_gp_flush(const uslub_cache_t *s);
/* uslub_gp_flush(@s), then wait until every callback queued before it has
 * run (kvfree_rcu_barrier(), kvfree_rcu_barrier_on_cache()). Never call
 * it from an RCU callback or inside rcu_read_lock(). */
void uslub_gp_barrier(const uslub_cache_t *s);

#ifdef __cplusplus
}
#endif
#endif /* USLUB_TYPES_H */
