/*
 * base: compiler attributes, atomics, lists, options and reports shared by
 * every layer. Depends on libc only.
 */
#ifndef USLUB_BASE_H
#define USLUB_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <assert.h>
#include <time.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define __noinline __attribute__((noinline))
#define __cold __attribute__((cold, noinline))
#define __public __attribute__((visibility("default")))
#define __internal __attribute__((visibility("hidden")))
#define __tls_ie __attribute__((tls_model("initial-exec")))
#define barrier() __asm__ __volatile__("" ::: "memory")

#define USLUB_CACHELINE 64
#define ALIGN_UP(x, a)   (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define IS_POW2(x)       ((x) != 0 && ((x) & ((x) - 1)) == 0)
#define MIN(a, b)        ((a) < (b) ? (a) : (b))
#define MAX(a, b)        ((a) > (b) ? (a) : (b))
#define ARRAY_SIZE(a)    (sizeof(a) / sizeof((a)[0]))
#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* Relaxed and ordered atomics on plain words (no libatomic calls). */
#define READ_ONCE(x)      __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ATOMIC_ADD(x, v)  __atomic_add_fetch(&(x), (v), __ATOMIC_RELAXED)
#define ATOMIC_SUB(x, v)  __atomic_sub_fetch(&(x), (v), __ATOMIC_RELAXED)
/* A counter with a single writer: no locked instruction, no torn reads. */
#define SINGLE_WRITER_INC(x, v) WRITE_ONCE(x, READ_ONCE(x) + (v))

static inline unsigned int fls_u(unsigned long x)
{
	return x ? (unsigned int)(64 - __builtin_clzl(x)) : 0;
}

/* CLOCK_MONOTONIC (or its cheap _COARSE variant, tick resolution) in ns. */
static inline uint64_t monotonic_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Smallest order with (PAGE_SIZE << order) >= size. */
static inline unsigned int get_order(unsigned long size)
{
	if (size <= 4096)
		return 0;
	return fls_u((size - 1) >> 12);
}

/* ------------------------------------------------------------------------
 * Doubly linked list (the kernel's list_head shape)
 * ---------------------------------------------------------------------- */
struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
static inline void INIT_LIST_HEAD(struct list_head *l) { l->next = l->prev = l; }
static inline bool list_empty(const struct list_head *l) { return l->next == l; }
static inline void __list_add(struct list_head *n, struct list_head *prev,
			      struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}
static inline void list_add(struct list_head *n, struct list_head *head)
{
	__list_add(n, head, head->next);
}
static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	__list_add(n, head->prev, head);
}
static inline void list_del(struct list_head *e)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
	e->next = e->prev = NULL;
}
#define list_entry(p, type, member) container_of(p, type, member)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)
/* Walk the entries of @head: @pos is a pointer to the entry type, linked
 * through its list_head @member (the kernel's list_for_each_entry). The
 * loop body must not remove @pos. */
#define list_for_each_entry(pos, head, member)                                 \
	for (pos = list_entry((head)->next, __typeof__(*(pos)), member);       \
	     &(pos)->member != (head);                                         \
	     pos = list_entry((pos)->member.next, __typeof__(*(pos)), member))
/* ... from the last entry to the first. */
#define list_for_each_entry_reverse(pos, head, member)                         \
	for (pos = list_entry((head)->prev, __typeof__(*(pos)), member);       \
	     &(pos)->member != (head);                                         \
	     pos = list_entry((pos)->member.prev, __typeof__(*(pos)), member))

/* ------------------------------------------------------------------------
 * Options: one table, one prefix (USLUB_), read once without allocating.
 * X(name, default, max, doc): numeric options take 0..max (decimal digits,
 * or on/yes/true = 1, off/no/false = 0); a value outside that, or any other
 * text, is reported and the default used. Options whose default is
 * USLUB_OPT_STRING keep their text (max unused). In a secure-execution
 * program (getauxval(AT_SECURE): set-uid, set-gid, file capabilities) no
 * USLUB_ variable is read at all: every option keeps its default.
 * ---------------------------------------------------------------------- */
#define USLUB_OPTIONS(X)                                                     \
	X(DECAY_MS,      1000, 86400000, "ms freed memory waits before it goes back to the OS: free pages are purged (MADV_DONTNEED), empty 4 MiB segments and kept huge mappings unmapped; 0 = at once") \
	X(THP,           1, 2,        "transparent huge pages (MADV_HUGEPAGE, where the system's THP mode is madvise or always): 1 = for 4 MiB segments once 16 MiB of them are mapped on the node, and for mappings of 2 MiB and more (fewer page faults for big programs, small ones keep 4 KiB pages); 2 = every segment and mapping; 0 = never ask") \
	X(BACKGROUND_THREAD, 2, 2,   "who returns freed memory after USLUB_DECAY_MS: 2 (or auto) = a background thread (uslub-purge, started by the first allocation after something became purgeable, or once 16 MiB of segments are mapped) once the program has started a thread of its own, its allocator calls (the slow paths, past the deadline) while it has one thread; 1 = the thread in any program, so memory goes back even while a single-threaded program sleeps (it is then multi-threaded: unshare(CLONE_NEWUSER) fails); 0 = never a thread, always the calls") \
	X(FAKE_NODES,       0, 64,   "pretend the machine has this many NUMA nodes (testing); 0 = what /sys reports") \
	X(CPU_PARTIAL,      1, 1,    "keep per-CPU partial slabs (CONFIG_SLUB_CPU_PARTIAL); 0 = off") \
	X(MAX_ORDER,        3, 9,    "slub_max_order: largest slab order preferred by calculate_order") \
	X(MIN_ORDER,        0, 9,    "slub_min_order: smallest slab order") \
	X(MIN_OBJECTS,      0, 32767, "slub_min_objects; 0 = 4 * (fls(nr_cpus) + 1)") \
	X(FREELIST_RANDOM,  0, 1,    "shuffle the object order of new slabs of every cache (CONFIG_SLAB_FREELIST_RANDOM); per cache: USLUB_RANDOM_FREELIST / USLUB_NO_RANDOM_FREELIST flags") \
	X(FREELIST_HARDENED, 2, 2,   "obfuscate free pointers and check every pointer taken from a freelist (CONFIG_SLAB_FREELIST_HARDENED): 1 = every cache; 2 = every cache with sheaves (the default: their freelists are touched only on refill and flush); 0 = none; per cache: USLUB_HARDENED_FREELIST flag") \
	X(CPU_SLABS,        0, 1,    "1 = the 6.x per-CPU layer (cpu slab, cpu partial slabs, lockless remote free) for every cache, with sheaves only where a cache asks for a sheaf_capacity (Linux 6.18); 0 = per-CPU sheaves on every cache (Linux 7.0); per cache: USLUB_CPU_SLAB flag") \
	X(PERCPU, USLUB_OPT_STRING, 0, "whose sheaves: thread (the default) = each thread's own slots; cpu = the CPU's (Linux 7.0's per-CPU sheaves: slots per rseq concurrency id, mm_cid, else per CPU number), so cached memory is bounded by CPUs, not threads; where the C library registers no rseq (glibc < 2.35, GLIBC_TUNABLES=glibc.pthread.rseq=0, seccomp), on several NUMA nodes or another architecture, per thread with a one-line note; auto = cpu where available, silently") \
	X(KMALLOC_SHEAVES,  1, 1,    "1 = the kmalloc caches (and so malloc) have per-CPU sheaves in both modes; 0 = cpu slabs for them") \
	X(KMALLOC_PARTITIONS, 0, 1,  "kmalloc partitions (Linux 7.2's CONFIG_KMALLOC_PARTITION_CACHES): 1 = kmalloc of the normal type (not USLUB_GFP_ACCOUNT or USLUB_GFP_RECLAIMABLE) takes one of 16 copies of the kmalloc caches (kmalloc-<size> and kmalloc-part-01-<size> .. kmalloc-part-15-<size>), chosen per call site: the compiler's type token where <uslub/types.h> was built with __builtin_infer_alloc_token, else a hash of the site with a per-process random seed; 0 = one set (the malloc front end is never partitioned)") \
	X(PROFILING, USLUB_OPT_STRING, 0, "allocation profiling (allocinfo), fixed at startup: 0/off = none; 1/on/exact = tag every object with its call site (the kernel's semantics); sample (the default: USLUB_PROFILING_DEFAULT in ext/alloc_tag.c) = tag a sample of the allocations, one every 512 KiB allocated on average, and report estimates; sample:BYTES = the same with that mean interval (k/m/g suffixes, 1 .. 1g)") \
	X(PROFILING_SEED,   0, 4294967295, "sampled profiling's random seed (tests: a fixed seed makes the sample depend only on the order of the allocations); 0 = from the clock") \
	X(STACK_DEPTH,     64, 64,   "sampled profiling: return addresses kept per sampled allocation (its stack, interned; the heap profile's folded stacks, USLUB_HEAP_PROFILE); 0 = none (allocinfo's one call site only)") \
	X(HEAP_PROFILE, USLUB_OPT_STRING, 0, "malloc front end, sampled mode: at exit, write the heap profile as folded stacks (root;...;leaf BYTES, estimated) to this file (bytes in use: the leak profile) and to FILE.alloc (bytes allocated in all); a FILE ending in .heap gets uslub's dump instead (every count, the modules: `uslub heap FILE` turns it into folded stacks, a flame graph or pprof); %p in it is replaced by the pid; created 0600, no symbolic link followed, as USLUB_REPORT (`uslub run --heap-profile` sets it and names the frames)") \
	X(ACCOUNT_BATCH, 8192, 1073741824, "bytes an accounting group is charged at once into a thread's stock (the kernel's obj_stock); 0 = charge every object directly") \
	X(DEBUG,  USLUB_OPT_STRING, 0, "slub_debug syntax: <flags>[,<cache>[,<cache>...]][;...]; flags F sanity checks, Z red zones, P poisoning, U owner tracking, T trace, A failslab filter, O off where it would raise the order, X abort after a report (uslub's), - none; a cache name may end in *; unset or empty = no debugging; an empty flag field (\",cache\", \";\") = FZPU") \
	X(FAILSLAB, USLUB_OPT_STRING, 0, "fault injection (the kernel's failslab): probability=<percent>,interval=<n>,times=<n|-1>,space=<bytes>,seed=<n>,ignore-gfp-wait=<0|1>,cache-filter=<0|1>,verbose=<0|1>") \
	X(PUBLISH_MS,       0, 86400000, "publish slabinfo and group tables to /dev/shm/uslub-<euid>/<pid>.{txt,json} (0600, in a private 0700 directory) every N ms for `uslub slabinfo|top PID`; 0 = off") \
	X(PUBLISH_ROOT, USLUB_OPT_STRING, 0, "absolute directory holding the per-user snapshot directories instead of /dev/shm (tests)") \
	X(ABORT_ON_ERROR,   0, 1,    "abort() after reporting an invalid free or a corrupted freelist") \
	X(VERBOSE,          0, 1,    "print every option and the layout of each new cache to stderr") \
	X(REPORT, USLUB_OPT_STRING, 0, "at exit, write slabinfo (and allocinfo with USLUB_PROFILING=1) to this file; %p in it is replaced by the pid; - is stderr (the one it started with if it has closed its own; `uslub run --report` sets it)") \
	X(ASAN,             1, 1,    "in a process with AddressSanitizer's runtime (a program built with -fsanitize=address), poison free objects and slab padding and unpoison on allocation, so ASan reports a use after free or an overflow of a slab object (KASAN's role); 0 = off") \
	X(MALLOC_ABORT,     1, 1,    "malloc front end: abort() after reporting a free() of a pointer uslub does not own, an interior pointer or a double free (0: report and leave it alone)")

#define USLUB_OPT_STRING (-1)          /* default of an option whose value is text */

enum uslub_option {
#define USLUB_OPT_X(name, def, max, doc) USLUB_OPT_##name,
	USLUB_OPTIONS(USLUB_OPT_X)
#undef USLUB_OPT_X
	USLUB_NR_OPTIONS
};

/* USLUB_BACKGROUND_THREAD's values (page.c: who purges) */
enum { USLUB_BG_NEVER, USLUB_BG_ALWAYS, USLUB_BG_AUTO };

__internal void _uslub_options_init(void);
__internal long _uslub_option(enum uslub_option o);
__internal long _uslub_option_default(enum uslub_option o);
__internal long _uslub_option_max(enum uslub_option o);
__internal const char *_uslub_option_name(enum uslub_option o);
/* Is this a secure-execution program (getauxval(AT_SECURE))? */
__internal bool _uslub_secure_exec(void);
/* Parse @text as the value of numeric option @o: true with *@out set, or
 * false with a reason in @why (e.g. "out of range (0..9)"). No allocation,
 * no stdio. */
__internal bool _uslub_parse_option(enum uslub_option o, const char *text, long *out,
				    char *why, size_t whylen);
/* The option values an environment @env gives (*@v, *@str: one per option;
 * every default when @secure); each rejected value reported when @report.
 * _uslub_options_init() calls it with environ and _uslub_secure_exec(). */
__internal void _uslub_options_from_env(char *const *env, bool secure, bool report,
					long *v, const char **str);
/* Strict decimal for option values: [@s, @s + @len) must be digits only,
 * at most @max. 0, or one of these: */
enum { USLUB_NUM_EMPTY = 1, USLUB_NUM_JUNK, USLUB_NUM_RANGE };
__internal int _uslub_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);
/* Append to a NUL-terminated @buf of @len bytes (truncating): text, or an
 * unsigned or signed decimal; no stdio. Return @buf. */
__internal char *_uslub_str_append(char *buf, size_t len, const char *s);
__internal char *_uslub_str_append_u64(char *buf, size_t len, uint64_t v);
__internal char *_uslub_str_append_long(char *buf, size_t len, long v);

/* slub_debug letters (debug_opts.c) */
#define USLUB_DBG_F 0x01u        /* consistency checks                     */
#define USLUB_DBG_Z 0x02u        /* red zones                              */
#define USLUB_DBG_P 0x04u        /* poisoning                              */
#define USLUB_DBG_U 0x08u        /* alloc/free owner tracking              */
#define USLUB_DBG_T 0x10u        /* trace                                  */
#define USLUB_DBG_A 0x20u        /* failslab filter: this cache may fail   */
#define USLUB_DBG_O 0x40u        /* off where debugging raises the order   */
#define USLUB_DBG_X 0x80u        /* abort() after a detected corruption
                                    (uslub's letter; not in the kernel)    */
#define USLUB_DBG_DEFAULT (USLUB_DBG_F | USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U)
/* The flags slub_debug-syntax @spec gives the cache @name (debug_opts.c). */
__internal unsigned int _uslub_debug_flags(const char *spec, const char *name);
/* Is slub_debug-syntax @spec well formed? false with the first problem in
 * @why (unknown flag, empty cache name, ...); the problem is ignored by
 * _uslub_debug_flags. */
__internal bool _uslub_debug_check(const char *spec, char *why, size_t whylen);
/* The text of a string option (USLUB_OPT_STRING), "" when unset; points
 * into a static copy made at initialization (or, for a value too long to
 * copy, into environ), never allocated. */
__internal const char *_uslub_option_str(enum uslub_option o);

/* ------------------------------------------------------------------------
 * Locks, ranked in the contract's order (top of src/slub/slub.h). With
 * USLUB_LOCKDEP (defined in the sanitizer test builds) every acquire checks
 * that no lock of the same or a later rank is held, and aborts with a
 * report otherwise. Every lock of the library has a rank; the fork
 * handlers (base/lifecycle.h) take them all through these wrappers too.
 * ---------------------------------------------------------------------- */
#include <pthread.h>

enum uslub_lock_rank {
	RANK_LIFECYCLE,     /* lifecycle_lock (base/lifecycle.c): registration; fork takes it first */
	RANK_PUB,           /* pub_lock (observe/publish.c): taken with no other lock held */
	RANK_FLUSH,         /* flush_lock (slub/debug.c): taken with no other lock held */
	RANK_THREAD,        /* _uslub_thread_lock   */
	RANK_SLAB_MUTEX,    /* _uslub_slab_mutex    */
	RANK_GROUPS,        /* groups_lock (ext/memcg.c) */
	RANK_TAGS,          /* tags_lock (ext/alloc_tag.c) */
	RANK_BARN,          /* node_barn.lock (never held with a list_lock) */
	RANK_LIST,          /* kmem_cache_node.list_lock */
	RANK_PAGE_NODE,     /* page_node.lock       */
	RANK_RESERVE,       /* reserve_lock         */
	RANK_HUGE,          /* huge_lock (kmalloc/kmalloc.c; takes nothing else) */
	RANK_FAILSLAB,      /* failslab_lock (slub/failslab.c; takes nothing else) */
	RANK_PURGE,         /* purge_lock (page/page.c: the background purge thread's
	                       condition; taken under any other lock, takes nothing) */
	RANK_NR
};

#ifdef USLUB_LOCKDEP
__internal void _uslub_lockdep_acquire(enum uslub_lock_rank r);
__internal void _uslub_lockdep_acquire_nest(enum uslub_lock_rank r, enum uslub_lock_rank nest);
__internal void _uslub_lockdep_release(enum uslub_lock_rank r);
__internal void _uslub_lockdep_release_nest(enum uslub_lock_rank r);
__internal void _uslub_lockdep_try_acquired(enum uslub_lock_rank r);
__internal void _uslub_lockdep_nolock_enter(void);
__internal void _uslub_lockdep_nolock_exit(void);
#else
static inline void _uslub_lockdep_try_acquired(enum uslub_lock_rank r) { (void)r; }
static inline void _uslub_lockdep_nolock_enter(void) { }
static inline void _uslub_lockdep_nolock_exit(void) { }
static inline void _uslub_lockdep_acquire(enum uslub_lock_rank r) { (void)r; }
static inline void _uslub_lockdep_acquire_nest(enum uslub_lock_rank r, enum uslub_lock_rank nest)
{
	(void)r;
	(void)nest;
}
static inline void _uslub_lockdep_release(enum uslub_lock_rank r) { (void)r; }
static inline void _uslub_lockdep_release_nest(enum uslub_lock_rank r) { (void)r; }
#endif

/* How many ranked locks the calling thread holds (kept by the wrappers
 * below in every build). Code that must not run under a uslub lock
 * (dladdr, user callbacks) checks it: see "What may be called with a
 * uslub lock held" in the contract. Initial-exec like every thread-local
 * variable of the library: a dynamic-TLS access calls __tls_get_addr,
 * which may free(). */
__internal extern __thread unsigned int _uslub_locks_held __tls_ie;

static inline void uslub_mutex_lock(pthread_mutex_t *m, enum uslub_lock_rank r)
{
	_uslub_lockdep_acquire(r);
	pthread_mutex_lock(m);
	_uslub_locks_held++;
}

static inline void uslub_mutex_unlock(pthread_mutex_t *m, enum uslub_lock_rank r)
{
	_uslub_locks_held--;
	pthread_mutex_unlock(m);
	_uslub_lockdep_release(r);
}

/*
 * Try to take @m (the any-context paths: kmalloc_nolock, kfree_nolock).
 * A trylock cannot wait, so it may be tried whatever the thread holds --
 * even from a signal handler that interrupted this thread while it held
 * @m itself (pthread_mutex_trylock() then fails with EBUSY, like a lock
 * another thread holds). lockdep counts it as held, so every lock taken
 * under it is checked against its rank as usual; and between
 * _uslub_lockdep_nolock_enter() and _exit() (an any-context call) lockdep
 * aborts on any blocking uslub_mutex_lock*(): such a call takes trylocks
 * only.
 */
static inline bool uslub_mutex_trylock(pthread_mutex_t *m, enum uslub_lock_rank r)
{
	if (pthread_mutex_trylock(m))
		return false;
	_uslub_lockdep_try_acquired(r);
	_uslub_locks_held++;
	return true;
}

/*
 * One of many locks of rank @r held at once (the kernel's
 * mutex_lock_nest_lock()): the fork handlers hold every list_lock, barn
 * lock and page node lock together. The caller holds a lock of rank @nest
 * that every such batch holds, so two batches never interleave. lockdep
 * accepts it while the locks of rank @r already held were all taken this
 * way; ordinary code taking a second lock of one rank still aborts.
 */
static inline void uslub_mutex_lock_nest(pthread_mutex_t *m, enum uslub_lock_rank r,
					 enum uslub_lock_rank nest)
{
	_uslub_lockdep_acquire_nest(r, nest);
	pthread_mutex_lock(m);
	_uslub_locks_held++;
}

static inline void uslub_mutex_unlock_nest(pthread_mutex_t *m, enum uslub_lock_rank r)
{
	_uslub_locks_held--;
	pthread_mutex_unlock(m);
	_uslub_lockdep_release_nest(r);
}

/* In a fork child: a lock the forking thread (this one) took in prefork,
 * re-initialized unlocked (the threads that may have waited on it are
 * gone) and counted as released, like uslub_mutex_unlock*(). */
static inline void uslub_mutex_reset(pthread_mutex_t *m, enum uslub_lock_rank r)
{
	_uslub_locks_held--;
	pthread_mutex_init(m, NULL);
	_uslub_lockdep_release(r);
}

static inline void uslub_mutex_reset_nest(pthread_mutex_t *m, enum uslub_lock_rank r)
{
	_uslub_locks_held--;
	pthread_mutex_init(m, NULL);
	_uslub_lockdep_release_nest(r);
}

/* In the lock-checking builds: abort with a report when the caller holds
 * a uslub lock where the contract says it holds none (before dladdr(),
 * a user callback, formatting into a FILE). No-op otherwise. */
#ifdef USLUB_LOCKDEP
__internal void _uslub_lockdep_assert_unlocked(const char *what);
#else
static inline void _uslub_lockdep_assert_unlocked(const char *what) { (void)what; }
#endif

/* The text of errno @e for a report: glibc's untranslated description
 * (a static string, no locale, no allocation), so it may run with a
 * uslub lock held, where strerror() may not (a translated message is
 * loaded with malloc). */
__internal const char *_uslub_errstr(int e);

/* Reports: formatted on the stack, written with write(2); never allocate. */
__internal void _uslub_report(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
__internal void _uslub_report_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/*
 * The library's own releases of memory (base/sys.c): munmap(@addr, @len)
 * and madvise(@addr, @len, MADV_DONTNEED). 0 when done; else the errno
 * (a seccomp filter, vm.max_map_count), the refusal counted and the first
 * one reported. The caller keeps what was not released, owned and
 * reusable, and tries again later. errno is left as it was. Any lock may
 * be held.
 */
__internal int _uslub_sys_munmap(void *addr, size_t len);
__internal int _uslub_sys_madvise_dontneed(void *addr, size_t len);
/* For a range nobody would keep (a slack, a mapping no slot keeps): when
 * its munmap is refused, its pages are given back where allowed and it
 * is parked (linked through its own first bytes: mapped read-write), its
 * munmap tried again by _uslub_sys_retry_parked(), which returns the
 * bytes that went. Any lock may be held. */
__internal int _uslub_sys_munmap_or_park(void *addr, size_t len);
/* Park a range whose munmap was refused already (its pages returned). */
__internal void _uslub_sys_park(void *addr, size_t len);
__internal size_t _uslub_sys_retry_parked(void);
/* Address space parked now (uslub_page_stats().bytes_unreleased). */
__internal size_t _uslub_sys_parked_bytes(void);
/* Tests: the next @n releases (munmap, madvise) are refused as if by the
 * kernel, without the call. */
__internal void _uslub_sys_refuse_next(long n);
/* Whether @fd, a descriptor uslub made close-on-exec, is still that open
 * file: still close-on-exec (dup2 clears the flag), the same device and
 * inode (@dev, @ino: what fstat said when it was made); *@st its fstat.
 * The program may have closed the number and taken it for its own. */
struct stat;
__internal bool _uslub_fd_is(int fd, unsigned long dev, unsigned long ino, struct stat *st);
/* A thread of uslub's own (the purge thread, the publisher), created with
 * every signal blocked: a process-directed signal goes to a thread that
 * does not block it, and must never run the program's handler on one of
 * uslub's. Joinable into *@t, or detached when @t is NULL; @stack 0: the
 * default size. 0, or pthread_create's error. No uslub lock held. */
__internal int _uslub_thread_start(pthread_t *t, void *(*fn)(void *), size_t stack);
/* How many releases the kernel refused so far. */
__internal unsigned long _uslub_release_failures(void);
/* Count one error already reported line by line; abort() when
 * USLUB_ABORT_ON_ERROR is set or @abort_too. */
__internal void _uslub_count_error(bool abort_too);

/*
 * Text built with a uslub lock held, written to a FILE after the locks
 * are dropped: a FILE may malloc() its buffer on first use (or grow it:
 * open_memstream), which re-enters the allocator. The buffer is mmap'ed
 * and grown with mremap; the formats are plain (%s %d %u %lu %zu %x %p,
 * small widths), for which vsnprintf does not allocate. If memory runs
 * out the text is cut short. _uslub_buf_write() writes it and unmaps it.
 */
#include <stdio.h>
struct uslub_buf {
	char *p;
	size_t len, cap;
	bool cut;                  /* memory ran out: the text is cut short */
};
__internal void _uslub_buf_printf(struct uslub_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
__internal void _uslub_buf_json_string(struct uslub_buf *b, const char *str);
__internal void _uslub_buf_write(struct uslub_buf *b, FILE *f);
/*
 * Names the program chose, written as data (report.c): the bytes at @s
 * (@n left) that may be printed as they are (printable ASCII, UTF-8 from
 * U+00A0 on), or 0; every other byte is escaped (\n \t \r \\ \xHH).
 * _uslub_escape(): at most @n bytes of @str (to its NUL) escaped into
 * @out (@len bytes with the NUL, cut at a character): the length.
 * _uslub_buf_text(): @str escaped, padded with blanks to @width bytes.
 */
__internal size_t _uslub_text_char(const unsigned char *s, size_t n);
__internal size_t _uslub_escape(char *out, size_t len, const char *str, size_t n);
__internal void _uslub_buf_text(struct uslub_buf *b, const char *str, unsigned int width);

/* ------------------------------------------------------------------------
 * AddressSanitizer (KASAN's role, slub/kasan.c)
 *
 * USLUB_ASAN_BUILD: this file is compiled with -fsanitize=address (the
 * test-asan flavour): uslub's own reads and writes of metadata inside free
 * objects go through uninstrumented accessors (slub/object.h).
 *
 * The runtime's manual poisoning interface (sanitizer/asan_interface.h),
 * referenced weakly: the library is usually built without ASan, and these
 * resolve only in a process whose program was (the runtime exports them).
 * Both NULL: no ASan, nothing is poisoned.
 * ---------------------------------------------------------------------- */
#if defined(__SANITIZE_ADDRESS__)
#define USLUB_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define USLUB_ASAN_BUILD 1
#endif
#endif
/* ThreadSanitizer: the fast paths' plain loads of words other threads
 * change (benign races, each explained where it is read) become atomic
 * loads it understands. */
#if defined(__SANITIZE_THREAD__)
#define USLUB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define USLUB_TSAN 1
#endif
#endif
#ifdef USLUB_ASAN_BUILD
#define __no_sanitize_address __attribute__((no_sanitize_address))
#else
#define __no_sanitize_address
#endif
extern void __asan_poison_memory_region(void const volatile *addr, size_t size)
	__attribute__((weak));
extern void __asan_unpoison_memory_region(void const volatile *addr, size_t size)
	__attribute__((weak));

#endif /* USLUB_BASE_H */
