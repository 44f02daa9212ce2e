/*
 * slub.c — SLUB object caches in userspace: kmem_cache, the per-CPU
 * (per-thread) layer in its two models, cpu and node partial lists,
 * lockless remote frees, bulk allocation and freeing with deferred
 * freelist construction, freelist randomization and hardening, and the
 * per-object extension hooks (accounting, profiling).
 *
 * The per-CPU layer (Linux 7.0's, the default): every cache has per-CPU
 * sheaves (main, spare), a barn per node, and an inline pop/push in
 * cache/cache.h; sheaf/sheaf.c refills and flushes them. The 6.x model
 * (USLUB_CPU_SLABS=1, or a USLUB_CPU_SLAB cache; debug and boot caches)
 * keeps a cpu slab with its freelist and cpu partial slabs here. The
 * hooks the sheaf and extension layers implement are declared in
 * cache/slub.h.
 *
 * THE CONTRACT (keep it true; change it in the same commit as the code)
 * =====================================================================
 *
 * Lock order (outermost first; never take an earlier one while holding a
 * later one). Every lock has a rank (enum uslub_lock_rank, base/base.h)
 * and is taken through uslub_mutex_lock(); the lockdep builds check the
 * order at every acquire, fork included.
 *
 *   0. lifecycle_lock (base/lifecycle.c)  the lifecycle table: taken to
 *                                     register an entry, and held across
 *                                     fork() by the fork handlers
 *   0a. pub_lock (publish.c)          the publisher's files and state;
 *                                     taken with no other uslub lock held,
 *                                     holds only system calls
 *   0b. flush_lock (debug.c)          writing a thread's report lines;
 *                                     taken with no other uslub lock held
 *                                     (after symbolizing), holds only
 *                                     write(2)
 *   1. _uslub_thread_lock   (cpu.c)   the thread list and free cpu areas;
 *                                     serializes flushes of *other* threads'
 *                                     cpu state (thread exit, destroy, fork)
 *   2. _uslub_slab_mutex              slab_caches list, cache slot bitmap,
 *                                     kmem_cache creation and destruction,
 *                                     a cache's switch to on-demand hooks
 *   2a. groups_lock (ext/memcg.c)     the accounting group tree, every
 *                                     handle's group; taken per stock batch,
 *                                     never per object; nothing allocates
 *                                     or frees under it
 *   2b. tags_lock (ext/alloc_tag.c)   the allocation tag registry
 *   3. node_barn.lock (sheaf.c)       one per sheaf cache per node: the
 *                                     barn's full/empty sheaf lists. Never
 *                                     held while calling into this file.
 *   4. kmem_cache_node.list_lock      one per cache per node: the node's
 *                                     partial list, nr_partial, and every
 *                                     slab's slab_list links and its
 *                                     node-partial flag (PG_workingset).
 *                                     At most one list_lock is held at once
 *                                     (except by the fork handlers).
 *   5. page_node.lock (page.c)        buddy free lists of one node, the
 *                                     node's dirty-page count and the
 *                                     PG_clean marks of its free blocks
 *   6. reserve_lock (page.c)          the mmap reservation cursor
 *   7. huge_lock (kmalloc/kmalloc.c)  the table of huge kmalloc mappings;
 *                                     nothing is taken under it
 *   8. failslab_lock (failslab.c)     fault injection state; taken under
 *                                     slab_mutex (configuration) and by any
 *                                     allocation; nothing is taken or
 *                                     reported under it
 *   (slub_debug reports made under list_lock and the page lock are
 *   buffered per thread and written by _uslub_debug_flush() with no uslub
 *   lock held: dladdr() takes the dynamic loader's lock.)
 *
 * fork (base/lifecycle.h): one pthread_atfork() registration runs the
 * lifecycle table: lifecycle_lock, then each layer's entry in the order
 * above takes its locks (the barn locks, list_locks and page node locks
 * as batches nested in slab_mutex: uslub_mutex_lock_nest()); the parent
 * releases them in reverse; the child resets them in reverse
 * (uslub_mutex_reset*), thread_lock's entry then flushes the vanished
 * threads' cpu state, and the publisher restarts with no lock held.
 *
 * What may be called with a uslub lock held (any lock above, pub_lock,
 * failslab_lock and flush_lock included): nothing that can enter the
 * libc allocator or the dynamic loader. malloc may be uslub (LD_PRELOAD),
 * so that is a self-deadlock or an out-of-order lock, and the loader's
 * lock is held by dlopen()/dlclose() while they allocate. Allowed: system
 * calls (mmap, mremap, munmap, madvise, mbind, getrandom, write,
 * nanosleep, sched_yield, getcpu), clock_gettime, sched_getcpu, sysconf
 * (_SC_NPROCESSORS_ONLN: sysfs read into a stack buffer), mem and str
 * functions, snprintf/vsnprintf with plain conversions (%s %c %d %u %lu
 * %zu %x %p, small widths; no %ls, no %f, no positional arguments: those
 * may malloc), _uslub_report*(), _uslub_debug_emit(), abort(). Not
 * allowed: malloc and friends; stdio on a FILE (fprintf, fputs, fwrite: a
 * FILE mallocs its buffer on first use, open_memstream reallocs), so the
 * uslub_*_print() reports build their text in a struct uslub_buf (mmap)
 * under the locks and write it to the FILE after; dladdr, dlopen, dlsym,
 * dlerror; qsort, strdup, strerror, localtime, backtrace, syslog;
 * pthread_create, pthread_key_create, pthread_setspecific, pthread_atfork,
 * atexit; user callbacks (ctor, reclaim: _uslub_lockdep_assert_unlocked()
 * in the lockdep builds); and dynamic TLS: every thread-local variable is
 * initial-exec (__tls_ie, and -ftls-model=initial-exec for the library;
 * test/tls/tls_model.sh checks the built libraries), because
 * __tls_get_addr, after a dlclose() of a module with TLS, free()s that
 * module's blocks. _uslub_locks_held (base.h) counts the ranked locks the
 * thread holds: _uslub_debug_flush() symbolizes only when it is 0 (a
 * debug free nested under thread_lock or slab_mutex writes raw addresses).
 *
 * Slab states (seed 002's final scheme; "flag" = slab_test_node_partial):
 *
 *   | state             | on node partial list (flag) | frozen |
 *   |-------------------|-----------------------------|--------|
 *   | node partial slab | yes                         | no     |
 *   | cpu partial slab  | no                          | no     |
 *   | cpu slab          | no                          | yes    |
 *   | full slab         | no                          | no     |
 *
 *   - A slab is frozen only when it becomes a cpu slab (freeze_slab(), or a
 *     new slab), and unfrozen only when it stops being one
 *     (deactivate_slab(), or get_freelist() finding it full).
 *   - Slabs move node partial -> cpu partial *unfrozen*, under list_lock,
 *     by clearing the flag (get_partial_node()); no CAS is needed.
 *   - Only the thread owning a cpu slab takes objects from its freelist;
 *     only the thread owning a cpu partial slab freezes it; only list_lock
 *     holders take node partial slabs. So a slab's freelist has exactly one
 *     taker at any time, and every other update is a push: the state word
 *     is ABA-safe even before its tag.
 *
 * Lockless paths and why they are safe:
 *
 *   - Fast alloc/free (cache.h: slab_alloc_node(), slab_free()): plain
 *     loads and stores on the calling thread's own kmem_cache_cpu. Sheaf
 *     mode pops and pushes c->main (never NULL: the empty sheaf stands
 *     in); its free path looks the pointer up (virt_to_slab: ours, a slab,
 *     this cache) and checks object start, node and free mark before the
 *     push. Cpu-slab mode pops the cpu freelist; its free path accepts only
 *     an object start inside the thread's cpu slab of this cache (an
 *     address-range test on the cpu slot, which is also what proves the
 *     pointer is uslub's and of this cache). Every other free is looked up
 *     and checked in slab_free_slow(). Per-thread mode needs no
 *     tid/cmpxchg: nothing else touches that slot while the thread lives
 *     (other threads touch it only after it exited, in a fork child where
 *     it no longer exists, or under destroy's quiescence rule). A push
 *     stores the object before the size that covers it (a fork child
 *     flushes objects[0, size) of the threads it lost).
 *   - Slab state: {freelist, inuse, objects, frozen} is one 64-bit word
 *     (slab/slab.h) updated only by CAS. Remote frees push onto it.
 *   - __slab_free() takes list_lock only when a list move may be needed:
 *     the slab was full and there is no cpu partial list to put it on
 *     (full -> node partial), or it becomes empty while unfrozen (maybe
 *     node partial -> discarded). It decides *before* its CAS, takes the
 *     lock, reads the flag, and the CAS then confirms the state it decided
 *     on. It never touches the list of a frozen slab, and if the flag says
 *     the slab is off the node list (a cpu partial slab) it leaves it to its
 *     owner.
 *   - deactivate_slab() unfreezes first, with one CAS, and takes list_lock
 *     only to add the slab to the node partial list; a racing __slab_free()
 *     sees an unfrozen slab without the flag and leaves its list alone.
 *   - A new slab is private to its creator until it is published (made
 *     the cpu slab, listed, or handed out full): deferred freelist
 *     construction (seed 000) writes its state word with a plain store and
 *     links only the objects not handed out.
 *   - Bulk takes (take_objects(), refill_objects) are the "one taker" of
 *     a node partial slab, under its list_lock. They walk the chain, then
 *     CAS {rest, inuse + k}; remote frees only prepend, so a failed CAS
 *     means walk again. A take that would empty the freelist unlinks the
 *     slab *before* its CAS (a racing __slab_free may then hand the full
 *     slab to a cpu partial list) and relinks it if the CAS found more.
 *   - Bulk free (detached freelists, seed 001): a group of objects of one
 *     slab is linked privately and pushed with one __slab_free() CAS, or
 *     spliced onto the cpu freelist when it is the caller's cpu slab.
 *   - Sheaves hold objects that count as "in use" in their slabs, like a
 *     cpu freelist does; a sheaf belongs to one cpu slot, one barn list,
 *     or one prefill user at a time.
 *   - Extension hooks (caches with extensions: fastpath_off has
 *     FASTPATH_OFF_HOOKS, so both inline fast paths fall through): an
 *     object's extension is written only by whoever holds the object
 *     (allocator after taking it, freer before giving it back), and the
 *     accounting stock and tag counters belong to the calling thread, so
 *     slab_alloc_hooked()/slab_free_hooked() need no atomics. Every free
 *     of a hooked cache runs the free hook: its cpu slots keep
 *     slab_bytes == 0. A cache switched to on-demand extensions (its first
 *     USLUB_GFP_ACCOUNT allocation) sets fastpath_off before any object is
 *     charged; an object charged later comes from the charging thread's
 *     own cpu slab, whose range it closes, or from a slab that was not a
 *     cpu slab when taken, whose later installs (a CAS ordered after the
 *     taking one) read the new fastpath_off. Sheaves could break that (a
 *     sheaf holds objects of any slab, other threads' cpu slabs included),
 *     so a sheaf cache's cpu slots never open a free range. On-demand
 *     arrays are installed in slab->obj_exts with a CAS (release) and read
 *     with acquire.
 *
 * Freelist checks: c->freelist and every chain may hold a corrupted
 * pointer. The slow paths never follow or hand out a pointer from a chain
 * without checking that it is an object start of the expected slab. The
 * cpu-slab fast paths (and the bulk pops that mirror them) trust the cpu
 * freelist, as the kernel does without CONFIG_SLAB_FREELIST_HARDENED; a
 * hardened cache has FASTPATH_OFF_HARDENED set, so all of its pops are
 * checked. Sheaves hold plain pointers (no free pointer is read or written
 * on their inline paths), so the sheaf paths ignore that bit: hardening
 * costs a sheaf cache only on refill and flush. A bad
 * pointer is reported (FREELIST_CORRUPT) and the chain is cut there; the
 * objects behind it stay counted as in use, so they leak instead of being
 * handed out twice.
 *
 * Double frees (the free mark, slub.h): a user's free of an object of a
 * cache without slub_debug tests the object's mark word against its
 * slab's mark (slab_free_mark(): the cache's secret and the slab's
 * generation) and writes it *before* the object is published (pushed on a
 * cpu freelist or sheaf, or CASed onto its slab), so no other thread can
 * have taken it yet; every hand-out to a user clears it after the object
 * is taken. A new slab marks the objects it links into its freelist or
 * hands to a sheaf, and leaves those it hands to a user untouched. Other
 * internal moves (sheaf refill and flush, barn, thread exit, fork child,
 * failed bulk) neither test nor touch it. Invariant:
 *   object holds its slab's mark <=> it is free
 * (up to a program storing the mark, which it can only read out of freed
 * memory, and the 32-bit generation wrapping). A match is refused,
 * reported (naming this thread's cpu freelist or sheaf when the first
 * free is there) and the object left alone, so it is never handed out
 * twice wherever the first free put it.
 *
 * Destroyed caches: the struct stays in a quarantine of 64 with
 * FASTPATH_OFF_DEAD and cpu_offset pointing at CACHE_SLOT_DEAD, a slot no
 * cache owns and nothing writes, so every fast path misses into a slow
 * path that reports the use; its nodes are freed.
 *
 * Debug caches (slub_debug; FASTPATH_OFF_SLUB_DEBUG): none of the lockless
 * paths above. They have no cpu slab, no cpu partial slabs and no sheaves;
 * every allocation and free (single, bulk, prefill, sheaf return) goes
 * through debug_slab_alloc()/debug_slab_free(), which take list_lock of
 * the slab's node and do the checks, the state change and the object's
 * state bytes (red zones, poison, owner) under it. So a validate holding
 * list_lock, and a fork child, always see each object wholly free or
 * wholly allocated. Their slabs: partial (free objects, on the node
 * partial list), full (on no list), isolated (PG_isolated, on n->isolated
 * after a detected corruption: never allocated from, never discarded
 * while the cache lives, skipped by validate).
 *
 * Thread exit flushes the thread's cpu slabs and cpu partial slabs of every
 * cache, as SLUB does for a CPU going offline (cpu.c). fork(): every lock is
 * taken in the order above before fork and reset in the child, which then
 * flushes the cpu state of the threads it did not inherit (see "fork"
 * under the lock order). For that to be
 * safe, a slab leaves a cpu slot (c->slab, c->partial) *before* any CAS or
 * list operation that can hand it to someone else, never after: a thread
 * caught by fork mid-way leaks a slab in the child, never shares one.
 */
#include "slub/slub.h"
#include "cache/cache.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t _uslub_slab_mutex = PTHREAD_MUTEX_INITIALIZER;
struct list_head _uslub_slab_caches = LIST_HEAD_INIT(_uslub_slab_caches);
static uint64_t cache_slots[USLUB_MAX_CACHES / 64];   /* slab_mutex */

/* The caches that hold struct kmem_cache and struct kmem_cache_node. */
static struct kmem_cache boot_kmem_cache, boot_kmem_cache_node;
static uint32_t slab_generation;    /* slabs made (wraps): each one's free mark */
static struct kmem_cache_node boot_nodes[2][MAX_NUMNODES];

#define DEACTIVATE_TO_HEAD_POS 0
#define DEACTIVATE_TO_TAIL_POS 1

/* ------------------------------------------------------------------------
 * Per-object extensions (seed 003): one stride-based accessor for all three
 * placements (see struct slabobj_ext in slub.h), and the inline parts of
 * the accounting stock and the tag counters. The slow parts are in ext/.
 * ---------------------------------------------------------------------- */
static __always_inline struct slabobj_ext *slab_obj_ext_idx(const struct kmem_cache *s,
							     const struct slab *slab, unsigned int idx)
{
	unsigned long base = __atomic_load_n(&slab->obj_exts, __ATOMIC_ACQUIRE);
	if (!base)
		return NULL;
	return (struct slabobj_ext *)(base + (uintptr_t)idx * s->ext_stride);
}

static __always_inline struct slabobj_ext *slab_obj_ext(const struct kmem_cache *s,
							 const struct slab *slab, const void *obj)
{
	return slab_obj_ext_idx(s, slab, obj_to_index(s, slab, obj));
}

/* Does @slab keep its extensions inside its own memory? */
static bool slab_obj_exts_in_slab(const struct slab *slab, unsigned long obj_exts)
{
	uintptr_t a = (uintptr_t)slab_address(slab);
	return obj_exts >= a && obj_exts < a + (PAGE_SIZE << slab_order(slab));
}

/* A new slab's extensions, all zero: in its leftover or its objects'
 * padding when the cache's placement says so and this slab (maybe of the
 * fallback order) has the room, else a separate array (none if that
 * cannot be allocated: the slab's objects then go unaccounted). */
static void slab_init_obj_exts(struct kmem_cache *s, struct slab *slab, unsigned int objects)
{
	char *base = slab_obj_base(s, slab);
	unsigned long exts = 0;
	switch (READ_ONCE(s->ext_placement)) {
	case USLUB_OBJ_EXT_PADDING:
		for (unsigned int i = 0; i < objects; i++)
			memset(base + (size_t)i * s->size + s->ext_offset, 0, sizeof(struct slabobj_ext));
		exts = (unsigned long)(base + s->ext_offset);
		break;
	case USLUB_OBJ_EXT_LEFTOVER: {
		size_t off = ALIGN_UP((size_t)objects * s->size, sizeof(void *));
		size_t len = (size_t)objects * sizeof(struct slabobj_ext);
		if (s->red_left_pad + off + len <= (PAGE_SIZE << slab_order(slab))) {
			memset(base + off, 0, len);
			exts = (unsigned long)(base + off);
			break;
		}
		/* a fallback-order slab without the room: an array */
		exts = _uslub_obj_exts_alloc(s, objects);
		break;
	}
	case USLUB_OBJ_EXT_ARRAY:
		exts = _uslub_obj_exts_alloc(s, objects);
		break;
	default:
		break;                  /* none, or on demand */
	}
	__atomic_store_n(&slab->obj_exts, exts, __ATOMIC_RELEASE);
}

/* On-demand caches: give @slab an array on its first accounted object. */
static __cold struct slabobj_ext *slab_obj_ext_alloc(struct kmem_cache *s, struct slab *slab,
						      const void *obj)
{
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	unsigned long exts = _uslub_obj_exts_alloc(s, objects), old = 0;
	if (!exts)
		return NULL;
	if (!__atomic_compare_exchange_n(&slab->obj_exts, &old, exts, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		_uslub_obj_exts_free(s, exts, objects);    /* another thread was first */
	return slab_obj_ext(s, slab, obj);
}

static void slab_free_obj_exts(struct kmem_cache *s, struct slab *slab)
{
	unsigned long exts = slab->obj_exts;
	if (exts && !slab_obj_exts_in_slab(slab, exts))
		_uslub_obj_exts_free(s, exts, FC_OBJECTS(slab_counters(slab)));
	slab->obj_exts = 0;
}

/* Charge @bytes to @objcg from the thread's stock (the kernel's
 * consume_obj_stock), else through ext/. */
static __always_inline bool memcg_charge(struct obj_cgroup *objcg, size_t bytes, uslub_gfp_t gfp)
{
	struct uslub_thread *t = _uslub_tls.thread;
	if (likely(t && t->stock.cached == objcg && t->stock.nr_bytes >= (long)bytes)) {
		t->stock.nr_bytes -= (long)bytes;
		return true;
	}
	return _uslub_charge_slow(objcg, bytes, gfp);
}

/* Uncharge into the thread's stock when it holds @objcg's bytes and stays
 * under its cap (the kernel's refill_obj_stock), else through ext/. */
static __always_inline void memcg_uncharge(struct obj_cgroup *objcg, size_t bytes)
{
	struct uslub_thread *t = _uslub_tls.thread;
	if (likely(t && t->stock.cached == objcg &&
		   t->stock.nr_bytes + (long)bytes <= _uslub_stock_max)) {
		t->stock.nr_bytes += (long)bytes;
		return;
	}
	_uslub_uncharge_slow(objcg, bytes);
}

static __always_inline void tag_add(struct uslub_alloc_tag *tag, int64_t bytes, int64_t calls)
{
	struct uslub_thread *t = _uslub_tls.thread;
	unsigned int idx = READ_ONCE(tag->index);
	if (likely(t && t->tagc && idx)) {
		SINGLE_WRITER_INC(t->tagc[idx].bytes, bytes);
		SINGLE_WRITER_INC(t->tagc[idx].calls, calls);
		return;
	}
	_uslub_tag_add_slow(tag, bytes, calls);
}

static __cold void obj_ext_enable_on_demand(struct kmem_cache *s);

/* The call site's tag the macro left in the thread's slot (uslub.h),
 * taken once per allocation call, before anything can nest. */
static __always_inline struct uslub_alloc_tag *take_alloc_tag(unsigned int hooks)
{
	if (!(hooks & HOOK_PROFILE))
		return NULL;
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	if (tag)
		uslub_alloc_tag_cur = NULL;
	return tag;
}

/*
 * The post-allocation hook (slab_post_alloc_hook: memcg, then alloc tag)
 * for @n objects in p[] (@slab: their slab if known, else NULL). Charges
 * all of them at once; false (nothing charged or recorded) if the group's
 * limit refuses it.
 */
static __always_inline bool post_alloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
					    void **p, struct slab *slab, struct uslub_alloc_tag *tag)
{
	struct obj_cgroup *objcg = NULL;
	unsigned int hooks = READ_ONCE(s->hooks);
	if (((gfp & USLUB_GFP_ACCOUNT) || (s->flags & USLUB_ACCOUNT)) &&
	    !(s->flags & SLAB_NO_OBJ_EXT) && (objcg = _uslub_tls.cur_objcg)) {
		if (unlikely(!(hooks & HOOK_ACCOUNT)))
			obj_ext_enable_on_demand(s);
		if (unlikely(!memcg_charge(objcg, n * s->charge, gfp)))
			return false;
	}
	if (!(hooks & HOOK_PROFILE))
		tag = NULL;
	if (likely(!objcg && !tag))
		return true;
	size_t missed = 0;
	for (size_t i = 0; i < n; i++) {
		struct slab *sl = slab ? slab : virt_to_slab(p[i]);
		struct slabobj_ext *ext = slab_obj_ext(s, sl, p[i]);
		if (unlikely(!ext) && objcg)
			ext = slab_obj_ext_alloc(s, sl, p[i]);
		if (unlikely(!ext)) {
			missed++;
			continue;
		}
		WRITE_ONCE(ext->objcg, objcg);
		WRITE_ONCE(ext->ref, tag);
	}
	if (objcg) {
		if (unlikely(missed))
			memcg_uncharge(objcg, missed * s->charge);
		/* an on-demand cache's hooks may have been switched on after
		 * this thread's cpu slab was installed: close its free range */
		struct kmem_cache_cpu *c = this_cpu(s);
		if (unlikely(READ_ONCE(c->slab_bytes)))
			WRITE_ONCE(c->slab_bytes, 0);
	}
	if (tag && n > missed)
		tag_add(tag, (int64_t)((n - missed) * s->size), (int64_t)(n - missed));
	return true;
}

/* The pre-free hook of object @idx of @slab (valid): uncharge, untag. */
static __always_inline void free_hook(struct kmem_cache *s, struct slab *slab, void *x)
{
	struct slabobj_ext *ext = slab_obj_ext(s, slab, x);
	if (!ext)
		return;
	struct obj_cgroup *objcg = READ_ONCE(ext->objcg);
	struct uslub_alloc_tag *tag = READ_ONCE(ext->ref);
	if (objcg) {
		WRITE_ONCE(ext->objcg, NULL);
		memcg_uncharge(objcg, s->charge);
	}
	if (tag) {
		WRITE_ONCE(ext->ref, NULL);
		tag_add(tag, -(int64_t)s->size, -1);
	}
}


/* The first USLUB_GFP_ACCOUNT allocation of a cache created without
 * extensions: switch its hooks on for good. Its existing slabs get arrays
 * on demand (slab_obj_ext_alloc()). Other threads' cpu slots may still
 * have an open free range, which is safe: an object charged from now on
 * comes from the charging thread's own cpu slab (whose range
 * post_alloc_hook() closes), or from a slab that was not a cpu slab when
 * it was taken, whose every later install as a cpu slab (a CAS on the
 * slab ordered after the one that took the object) reads the new
 * fastpath_off in set_cpu_slab(). Sheaves, which can hold objects of
 * another thread's cpu slab, exist only in caches whose cpu slots never
 * open a free range. */
static __cold void obj_ext_enable_on_demand(struct kmem_cache *s)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (!(s->hooks & HOOK_ACCOUNT)) {
		if (s->ext_placement == USLUB_OBJ_EXT_NONE)
			WRITE_ONCE(s->ext_placement, USLUB_OBJ_EXT_ON_DEMAND);
		__atomic_fetch_or(&s->fastpath_off, FASTPATH_OFF_HOOKS, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&s->hooks, HOOK_ACCOUNT, __ATOMIC_SEQ_CST);
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

bool _uslub_post_alloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p)
{
	unsigned int hooks = READ_ONCE(s->hooks);
	if (!(hooks | (gfp & USLUB_GFP_ACCOUNT)))
		return true;
	return post_alloc_hook(s, gfp, n, p, NULL, take_alloc_tag(hooks));
}

void _uslub_free_hook(struct kmem_cache *s, void *x)
{
	if (!READ_ONCE(s->hooks))
		return;
	struct slab *slab = virt_to_slab(x);
	if (slab && slab->slab_cache == s && obj_is_valid(s, slab, x))
		free_hook(s, slab, x);
}

static inline struct kmem_cache_node *get_node(const struct kmem_cache *s, int node)
{
	return s->node[node];
}

/* list_lock, counted: the tests assert which paths take it. */
static inline void node_lock(struct kmem_cache_node *n)
{
	uslub_mutex_lock(&n->list_lock, RANK_LIST);
	WRITE_ONCE(n->lock_taken, n->lock_taken + 1);
}

static inline void node_unlock(struct kmem_cache_node *n)
{
	uslub_mutex_unlock(&n->list_lock, RANK_LIST);
}

/* ------------------------------------------------------------------------
 * Randomness: per-cache secrets and sequences, per-thread slab offsets
 * ---------------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 64 random bits from the kernel (getrandom), or a clock/address mix. */
static uint64_t seed64(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&v ^
	    ((uint64_t)getpid() << 16);
	return splitmix64(&v);
}

/* Cheap per-thread random numbers for slab start offsets (not secrets). */
static uint64_t thread_random(void)
{
	if (unlikely(!_uslub_tls.rnd))
		_uslub_tls.rnd = seed64() | 1;
	return splitmix64(&_uslub_tls.rnd);
}

/* CONFIG_SLAB_FREELIST_RANDOM: a random permutation of [0, s->objects),
 * in pages from the page provider (freed with the cache). */
static bool init_random_seq(struct kmem_cache *s)
{
	size_t bytes = (size_t)s->objects * sizeof(uint16_t);
	struct page *page = _uslub_alloc_pages(get_order(bytes), 0);
	if (!page)
		return false;
	uint16_t *seq = page_address(page);
	uint64_t st = seed64();
	for (unsigned int i = 0; i < s->objects; i++)
		seq[i] = (uint16_t)i;
	for (unsigned int i = s->objects - 1; i > 0; i--) {        /* Fisher-Yates */
		unsigned int j = (unsigned int)(splitmix64(&st) % (i + 1));
		uint16_t t = seq[i];
		seq[i] = seq[j];
		seq[j] = t;
	}
	s->random_seq = seq;
	return true;
}

static void free_random_seq(struct kmem_cache *s)
{
	if (s->random_seq)
		_uslub_free_pages(_uslub_virt_to_head_page(s->random_seq));
	s->random_seq = NULL;
}

/* ------------------------------------------------------------------------
 * Free objects of a new slab in allocation order (seed 000): one iterator
 * for the plain order (0, 1, 2, ...) and the random one. A random slab
 * starts at a random position of the cache's sequence and wraps; a slab of
 * the fallback order (fewer objects) skips the indices it does not have.
 * ---------------------------------------------------------------------- */
struct slab_obj_iter {
	char *start;
	size_t size;
	const uint16_t *seq;         /* NULL: plain order */
	unsigned int pos, seq_len, objects;
};

static __always_inline void slab_obj_iter_init(struct slab_obj_iter *it, const struct kmem_cache *s,
					       const struct slab *slab, unsigned int objects)
{
	it->start = slab_obj_base(s, slab);
	it->size = s->size;
	it->seq = s->random_seq;
	it->seq_len = s->objects;
	it->objects = objects;
	it->pos = it->seq ? (unsigned int)(thread_random() % it->seq_len) : 0;
}

static __always_inline void *slab_obj_iter_next(struct slab_obj_iter *it)
{
	unsigned int idx;
	if (likely(!it->seq)) {
		idx = it->pos++;
	} else {
		do {
			idx = it->seq[it->pos];
			if (++it->pos == it->seq_len)
				it->pos = 0;
		} while (unlikely(idx >= it->objects));
	}
	return it->start + (size_t)idx * it->size;
}

/* Chain the next @cnt objects of @it (of @slab) into a freelist; returns
 * its head (NULL for cnt == 0). The objects linked are free, so they get
 * the slab's free mark with their free pointer (their lines are written
 * anyway): a free of a stale pointer into an earlier slab on these pages
 * is then refused like any double free. Debug caches check their
 * freelists instead. */
static void *slab_obj_iter_chain(const struct kmem_cache *s, const struct slab *slab,
				 struct slab_obj_iter *it, unsigned int cnt)
{
	if (!cnt)
		return NULL;
	bool mark = !kmem_cache_debug(s);
	uintptr_t m = slab_free_mark(s, slab);
	void *head = slab_obj_iter_next(it), *prev = head;
	for (unsigned int i = 1; i < cnt; i++) {
		void *obj = slab_obj_iter_next(it);
		set_freepointer(s, prev, obj);
		if (mark)
			free_mark_set(s, prev, m);
		prev = obj;
	}
	set_freepointer(s, prev, NULL);
	if (mark)
		free_mark_set(s, prev, m);
	return head;
}

/* ------------------------------------------------------------------------
 * Corrupted freelists
 * ---------------------------------------------------------------------- */

/* Every chain walk checks each pointer before following it: an object
 * start of @slab, or NULL. */
static __always_inline bool walk_ok(const struct kmem_cache *s, const struct slab *slab,
				    const void *p)
{
	return !p || obj_is_valid(s, slab, p);
}

static __cold void report_corrupt(struct kmem_cache *s, const struct slab *slab, const void *bad,
				  const void *after, struct kmem_cache_cpu *c)
{
	stat(c, FREELIST_CORRUPT);
	if (after)
		_uslub_report_error("uslub: %s: freelist pointer corrupted in slab %p: %p (stored "
				    "in the free object %p) is not an object of the slab; the rest "
				    "of this freelist is dropped (its objects leak)\n", s->name,
				    slab ? slab_address(slab) : NULL, bad, after);
	else
		_uslub_report_error("uslub: %s: freelist pointer corrupted in slab %p: the cpu "
				    "freelist leads to %p, not an object of the slab (the free "
				    "pointer of the object allocated last was overwritten); the rest "
				    "of this freelist is dropped (its objects leak)\n", s->name,
				    slab ? slab_address(slab) : NULL, bad);
}

/* ------------------------------------------------------------------------
 * Slab creation and destruction
 * ---------------------------------------------------------------------- */

/*
 * A new slab, private to the caller. Deferred freelist construction
 * (seed 000): no freelist is built; the state word says every object is
 * taken (freelist none, inuse == objects) and the caller hands objects out
 * with new_slab_objects(). With USLUB_EAGER_FREELIST (the kernel before
 * 7.1, kept for comparison) the whole freelist is built here, in the same
 * iterator order, and inuse == 0.
 */
static struct slab *allocate_slab(struct kmem_cache *s, int node, struct kmem_cache_cpu *c)
{
	unsigned int objects = s->objects;
	struct page *page = _uslub_alloc_pages(s->order, node);

	if (unlikely(!page) && s->min_order < s->order) {
		page = _uslub_alloc_pages(s->min_order, node);
		objects = s->min_objects_fallback;
		if (page)
			stat(c, ORDER_FALLBACK);
	}
	if (unlikely(!page))
		return NULL;

	struct slab *slab = page_slab(page);
	slab->slab_cache = s;
	slab->__unused[0] = (uint64_t)__atomic_add_fetch(&slab_generation, 1, __ATOMIC_RELAXED) << 32 |
			    (uint32_t)((unsigned long)objects * s->size);   /* see slab_free_mark() */
	slab->next = NULL;
	if (kmem_cache_debug(s))
		_uslub_debug_init_slab(s, slab, objects);   /* before extensions and ctor */
	slab_init_obj_exts(s, slab, objects);

	char *p = slab_obj_base(s, slab);
	if (s->ctor)     /* user code: may malloc, so no uslub lock is held */
		_uslub_lockdep_assert_unlocked("a constructor");
	if (s->ctor)
		for (unsigned int i = 0; i < objects; i++)
			s->ctor(p + (size_t)i * s->size);

	uint64_t counters = fc_make(SLAB_FL_NONE, objects, objects, false);
	/* a debug cache's slab is visible to validate (and a fork child) from
	 * here on: it must already be wholly free, so its freelist is eager */
	if (unlikely((s->flags & USLUB_EAGER_FREELIST) || kmem_cache_debug(s))) {
		struct slab_obj_iter it;
		slab_obj_iter_init(&it, s, slab, objects);
		void *head = slab_obj_iter_chain(s, slab, &it, objects);
		counters = fc_make(obj_to_index(s, slab, head), 0, objects, false);
	}
	__atomic_store_n(&slab->counters, counters, __ATOMIC_RELAXED);
	__atomic_store_n(&slab->__page_flags, slab->__page_flags | PG_slab, __ATOMIC_RELEASE);

	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	ATOMIC_ADD(n->nr_slabs, 1);
	ATOMIC_ADD(n->total_objects, objects);
	ATOMIC_ADD(n->total_pages, 1ul << slab_order(slab));
	return slab;
}

/*
 * Hand out up to @n objects of a slab fresh from allocate_slab() directly
 * into p[], and return the rest as a freelist in *@rest (NULL if none).
 * Deferred: the objects come straight from the iterator, and links are
 * written only for the rest. Eager: they are popped off the prebuilt
 * freelist. Returns the count handed out; the caller sets the state word.
 */
static unsigned int new_slab_objects(struct kmem_cache *s, struct slab *slab, void **p,
				     unsigned int n, void **rest)
{
	uint64_t cnt = slab_counters(slab);
	unsigned int objects = FC_OBJECTS(cnt);
	unsigned int k = MIN(n, objects);

	if (unlikely(FC_FREELIST(cnt) != SLAB_FL_NONE)) {        /* eager */
		void *obj = fl_ptr(s, slab, FC_FREELIST(cnt));
		for (unsigned int i = 0; i < k; i++) {
			p[i] = obj;
			obj = get_freepointer(s, obj);
			if (!kmem_cache_debug(s))
				free_mark_clear(s, p[i]);   /* marked by the chain */
		}
		*rest = obj;
		return k;
	}
	struct slab_obj_iter it;
	slab_obj_iter_init(&it, s, slab, objects);
	for (unsigned int i = 0; i < k; i++)
		p[i] = slab_obj_iter_next(&it);
	*rest = slab_obj_iter_chain(s, slab, &it, objects - k);
	return k;
}

static void discard_slab(struct kmem_cache *s, struct slab *slab)
{
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	ATOMIC_SUB(n->nr_slabs, 1);
	ATOMIC_SUB(n->total_objects, FC_OBJECTS(slab_counters(slab)));
	ATOMIC_SUB(n->total_pages, 1ul << slab_order(slab));
	__atomic_store_n(&slab->__page_flags,
			 slab->__page_flags & ~(PG_slab | PG_workingset | PG_isolated),
			 __ATOMIC_RELAXED);
	slab_free_obj_exts(s, slab);
	slab->slab_cache = NULL;
	_uslub_free_pages(slab_page(slab));
}

/* ------------------------------------------------------------------------
 * Node partial lists (list_lock held)
 * ---------------------------------------------------------------------- */
static void add_partial(struct kmem_cache_node *n, struct slab *slab, int pos)
{
	if (pos == DEACTIVATE_TO_TAIL_POS)
		list_add_tail(&slab->slab_list, &n->partial);
	else
		list_add(&slab->slab_list, &n->partial);
	WRITE_ONCE(n->nr_partial, n->nr_partial + 1);
	slab_set_node_partial(slab);
}

static void remove_partial(struct kmem_cache_node *n, struct slab *slab)
{
	list_del(&slab->slab_list);
	slab_clear_node_partial(slab);
	WRITE_ONCE(n->nr_partial, n->nr_partial - 1);
}

/* ------------------------------------------------------------------------
 * Freezing and taking freelists
 * ---------------------------------------------------------------------- */

/*
 * Take a slab's whole freelist onto the cpu (inuse = objects) with one CAS.
 * The slab ends frozen, except that with @unfreeze_if_empty a slab with
 * nothing to take ends unfrozen: a full slab, on no list.
 */
static void *take_freelist(struct kmem_cache *s, struct slab *slab, struct kmem_cache_cpu *c,
			   bool unfreeze_if_empty)
{
	uint64_t old = slab_counters(slab), new;
	do {
		bool frozen = !unfreeze_if_empty || FC_FREELIST(old) != SLAB_FL_NONE;
		new = fc_make(SLAB_FL_NONE, FC_OBJECTS(old), FC_OBJECTS(old), frozen);
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);
	WRITE_ONCE(c->loaded, c->loaded + FC_OBJECTS(old) - FC_INUSE(old));
	return fl_ptr(s, slab, FC_FREELIST(old));
}

/* Refill from our frozen cpu slab: what other threads freed into it. */
static inline void *get_freelist(struct kmem_cache *s, struct slab *slab, struct kmem_cache_cpu *c)
{
	return take_freelist(s, slab, c, true);
}

/* Delayed freezing: a partial slab (never frozen while on a partial list)
 * is frozen only now, as it becomes the cpu slab. */
static inline void *freeze_slab(struct kmem_cache *s, struct slab *slab, struct kmem_cache_cpu *c)
{
	return take_freelist(s, slab, c, false);
}

/* ------------------------------------------------------------------------
 * cpu partial lists
 * ---------------------------------------------------------------------- */

/* Put unfrozen slabs (a list linked by ->next) on their node partial lists,
 * discarding the empty ones the nodes do not need. */
static void put_partials_node(struct kmem_cache *s, struct slab *list, struct kmem_cache_cpu *c)
{
	struct kmem_cache_node *n = NULL;
	struct slab *discard = NULL;

	while (list) {
		struct slab *slab = list;
		list = slab->next;
		struct kmem_cache_node *n2 = get_node(s, slab_nid(slab));
		if (n2 != n) {
			if (n)
				node_unlock(n);
			n = n2;
			node_lock(n);
		}
		if (!FC_INUSE(slab_counters(slab)) && n->nr_partial >= s->min_partial) {
			slab->next = discard;
			discard = slab;
		} else {
			add_partial(n, slab, DEACTIVATE_TO_TAIL_POS);
			stat(c, FREE_ADD_PARTIAL);
		}
	}
	if (n)
		node_unlock(n);
	while (discard) {
		struct slab *slab = discard;
		discard = slab->next;
		discard_slab(s, slab);
		stat(c, FREE_SLAB);
	}
}

/* Put an unfrozen slab on the cpu partial list; with @drain, a full list is
 * first moved to the node lists. */
static void put_cpu_partial(struct kmem_cache *s, struct kmem_cache_cpu *c,
			    struct slab *slab, bool drain)
{
	struct slab *to_put = NULL;

	if (drain && c->partial_slabs >= s->cpu_partial_slabs) {
		to_put = c->partial;
		WRITE_ONCE(c->partial, NULL);
		c->partial_slabs = 0;
	}
	slab->next = c->partial;
	WRITE_ONCE(c->partial, slab);
	c->partial_slabs++;
	if (to_put) {
		put_partials_node(s, to_put, c);
		stat(c, CPU_PARTIAL_DRAIN);
	}
}

/* Take one slab off a node partial list for the cpu slab and, when the
 * cpu can cache them, up to half its cpu partial capacity more. */
static struct slab *get_partial_node(struct kmem_cache *s, struct kmem_cache_node *n,
				     struct kmem_cache_cpu *c, bool cache_partials)
{
	struct slab *partial = NULL;
	unsigned long taken = 0;
	struct list_head *pos, *tmp;

	if (!READ_ONCE(n->nr_partial))
		return NULL;
	node_lock(n);
	list_for_each_safe(pos, tmp, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		remove_partial(n, slab);
		if (!partial) {
			partial = slab;
			stat(c, ALLOC_FROM_PARTIAL);
		} else {
			/* c->partial is empty here: no drain under list_lock */
			put_cpu_partial(s, c, slab, false);
			stat(c, CPU_PARTIAL_NODE);
			taken++;
		}
		if (!cache_partials || taken > s->cpu_partial_slabs / 2)
			break;
	}
	node_unlock(n);
	return partial;
}

static struct slab *get_partial(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
				bool cache_partials, int home)
{
	int search = node == USLUB_NUMA_NO_NODE ? home : node;
	struct slab *slab = get_partial_node(s, get_node(s, search), c, cache_partials);
	if (slab || node != USLUB_NUMA_NO_NODE)
		return slab;
	/* Any node: only take from nodes keeping more than min_partial. */
	int nodes = _uslub_nr_nodes();
	for (int i = 0; i < nodes; i++) {
		struct kmem_cache_node *n = get_node(s, i);
		if (i == search || READ_ONCE(n->nr_partial) <= s->min_partial)
			continue;
		slab = get_partial_node(s, n, c, cache_partials);
		if (slab)
			return slab;
	}
	return NULL;
}

/* Record ALLOC_FASTPATH while the cpu freelist is empty (exact then). */
static __always_inline void publish_alloc_fastpath(struct kmem_cache_cpu *c)
{
	WRITE_ONCE(c->stat[USLUB_ALLOC_FASTPATH], c->loaded + c->stat[USLUB_FREE_FASTPATH]);
}

static void fold_stats(struct kmem_cache *s, struct kmem_cache_cpu *c);

static __always_inline bool c_fastpath_off(const struct kmem_cache *s)
{
	return READ_ONCE(s->fastpath_off) != 0;
}

/* Install @slab (or NULL) as the cpu slab, with the range the free fast
 * path checks against: empty for a cache whose fast paths are off, so
 * every free of it takes the checked slow path, and for a sheaf cache,
 * whose frees go to its sheaves (a sheaf can hold objects of another
 * thread's cpu slab, so no cpu slab's range may let a free skip the hooks
 * a cache may switch on later: see obj_ext_enable_on_demand()). */
static __always_inline void set_cpu_slab(struct kmem_cache_cpu *c, struct slab *slab)
{
	WRITE_ONCE(c->slab, slab);
	WRITE_ONCE(c->slab_addr, slab ? slab_obj_base(slab->slab_cache, slab) : NULL);
	WRITE_ONCE(c->slab_bytes, slab && !c_fastpath_off(slab->slab_cache) &&
				  !slab->slab_cache->sheaf_capacity ?
				  slab_objects_bytes(slab) : 0);
	WRITE_ONCE(c->slab_span, slab ? slab_objects_bytes(slab) : 0);
	WRITE_ONCE(c->free_mark, slab ? slab_free_mark(slab->slab_cache, slab) : 0);
}

/* ------------------------------------------------------------------------
 * Deactivation and flushing
 * ---------------------------------------------------------------------- */

/* Return a cpu slab (and the objects left on its cpu freelist) to the
 * node: unfreeze with one CAS, then take list_lock only to list it. */
static void deactivate_slab(struct kmem_cache *s, struct slab *slab, void *freelist,
			    struct kmem_cache_cpu *c)
{
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	int pos = DEACTIVATE_TO_HEAD_POS;
	unsigned int free_delta = 0;
	void *tail = NULL;
	uint64_t old = slab_counters(slab), new;

	if (FC_FREELIST(old) != SLAB_FL_NONE) {
		stat(c, DEACTIVATE_REMOTE_FREES);
		pos = DEACTIVATE_TO_TAIL_POS;
	}
	for (void *p = freelist; p; ) {
		void *next = get_freepointer(s, p);
		free_delta++;
		tail = p;
		if (unlikely(!walk_ok(s, slab, next))) {
			report_corrupt(s, slab, next, p, c);
			set_freepointer(s, p, NULL);
			break;
		}
		p = next;
	}
	WRITE_ONCE(c->loaded, c->loaded - free_delta);
	do {
		unsigned int prior = FC_FREELIST(old);
		unsigned int head = prior;
		if (tail) {
			set_freepointer(s, tail, fl_ptr(s, slab, prior));
			head = fl_idx(s, slab, freelist);
		}
		new = fc_make(head, FC_INUSE(old) - free_delta, FC_OBJECTS(old), false);
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);

	if (!FC_INUSE(new) && READ_ONCE(n->nr_partial) >= s->min_partial) {
		stat(c, DEACTIVATE_EMPTY);
		discard_slab(s, slab);
		stat(c, FREE_SLAB);
	} else if (FC_FREELIST(new) != SLAB_FL_NONE) {
		node_lock(n);
		add_partial(n, slab, pos);
		node_unlock(n);
		if (pos == DEACTIVATE_TO_TAIL_POS)
			stat(c, DEACTIVATE_TO_TAIL);
		else
			stat(c, DEACTIVATE_TO_HEAD);
	} else {
		stat(c, DEACTIVATE_FULL);
	}
}

/* c->freelist for a walk: its head is checked like every other pointer
 * of a chain (deactivate_slab() checks the rest). */
static void *checked_cpu_freelist(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	void *head = c->freelist;
	if (unlikely(head && !(c->slab && obj_is_valid(s, c->slab, head)))) {
		report_corrupt(s, c->slab, head, NULL, c);
		return NULL;
	}
	return head;
}

/* Flush one cpu's slab and partial slabs of @s and fold its counters into
 * the cache. The slot is cleared before the slabs are handed back, so a
 * fork child finding it half-done leaks at worst, never double-frees. */
static bool slot_is_clean(const struct kmem_cache_cpu *c)
{
	if (c->slab || c->freelist || c->partial || c->loaded || sheaf_real(c->main) || c->spare)
		return false;
	for (int i = 0; i < USLUB_NR_STATS; i++)
		if (c->stat[i])
			return false;
	return true;
}

void _uslub_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	/* Reads only: a slot never used stays on the zero page, uncommitted,
	 * when a thread exits or a cache is destroyed. */
	if (slot_is_clean(c))
		return;
	if (sheaf_real(c->main) || c->spare)
		_uslub_sheaf_flush_cpu(s, c);
	struct slab *slab = c->slab;
	void *freelist = checked_cpu_freelist(s, c);
	set_cpu_slab(c, NULL);
	WRITE_ONCE(c->freelist, NULL);
	barrier();
	if (slab) {
		deactivate_slab(s, slab, freelist, c);
		stat(c, CPUSLAB_FLUSH);
	}
	struct slab *partial = c->partial;
	WRITE_ONCE(c->partial, NULL);
	c->partial_slabs = 0;
	barrier();
	if (partial)
		put_partials_node(s, partial, c);
	fold_stats(s, c);
}

/* ALLOC_FASTPATH of a slot: exact for the owner (it walks its own cpu
 * freelist); for another live thread, as of its last empty freelist. */
uint64_t _uslub_cpu_alloc_fastpath(const struct kmem_cache *s, const struct kmem_cache_cpu *c)
{
	if (this_cpu_is_real() && c == this_cpu(s)) {
		uint64_t len = 0;
		for (void *p = c->freelist; p && c->slab && obj_is_valid(s, c->slab, p) &&
		     len < slab_objects_bytes(c->slab) / s->size; p = get_freepointer(s, p))
			len++;
		return c->loaded + c->stat[USLUB_FREE_FASTPATH] - len;
	}
	return READ_ONCE(c->stat[USLUB_ALLOC_FASTPATH]);
}

/* Move a flushed cpu slot's counters into the cache's totals and zero
 * them. */
static void fold_stats(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	publish_alloc_fastpath(c);          /* freelist is empty after a flush */
	WRITE_ONCE(c->loaded, 0);
	for (int i = 0; i < USLUB_NR_STATS; i++) {
		uint64_t v = READ_ONCE(c->stat[i]);
		if (v) {
			ATOMIC_ADD(s->stat_exited[i], v);
			WRITE_ONCE(c->stat[i], 0);
		}
	}
}

/* ------------------------------------------------------------------------
 * The allocation slow path
 * ---------------------------------------------------------------------- */

/* Is @obj (the head of c->freelist) an object start of the cpu slab? The
 * slow paths check before they pop; NULL fails too. */
static __always_inline bool cpu_freelist_ok(const struct kmem_cache *s,
					    const struct kmem_cache_cpu *c, const void *obj)
{
	return c->slab && obj_is_valid(s, c->slab, obj);
}

/* c->freelist holds a pointer that is not an object of the cpu slab: a
 * free pointer was overwritten. Drop the rest of the chain. */
static __cold void cpu_freelist_corrupt(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	report_corrupt(s, c->slab, c->freelist, NULL, c);
	WRITE_ONCE(c->freelist, NULL);
}

/*
 * Give the cpu a non-empty freelist (SLUB's ___slab_alloc without the
 * final pop): remote frees into the cpu slab, else a cpu partial slab,
 * else node partial slabs, else a new slab. A new slab hands up to @want
 * objects straight into p[] (deferred freelist construction) and only the
 * rest becomes the cpu freelist.
 * Returns k > 0 objects put in p[] (the cpu freelist may be empty), 0 with
 * c->freelist non-empty, or -1 when out of memory.
 */
static int refill_cpu(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
		      bool cache_partials, int home, void **p, unsigned int want)
{
	struct slab *slab = c->slab;
	void *freelist;

	if (!c->freelist)
		publish_alloc_fastpath(c);
	if (!slab)
		goto new_slab;
	if (unlikely(node != USLUB_NUMA_NO_NODE && slab_nid(slab) != node)) {
		stat(c, ALLOC_NODE_MISMATCH);
		freelist = checked_cpu_freelist(s, c);
		set_cpu_slab(c, NULL);
		WRITE_ONCE(c->freelist, NULL);
		deactivate_slab(s, slab, freelist, c);
		goto new_slab;
	}
	if (c->freelist)
		return 0;
	/* Out of the slot before the CAS that may give the slab up: a fork
	 * child flushing this slot must never find a slab that is no longer
	 * ours (another thread may own it by then). */
	set_cpu_slab(c, NULL);
	freelist = get_freelist(s, slab, c);
	if (!freelist) {
		stat(c, DEACTIVATE_BYPASS);
		goto new_slab;
	}
	stat(c, ALLOC_REFILL);
	goto load_slab;

new_slab:
	while ((slab = c->partial)) {
		WRITE_ONCE(c->partial, slab->next);
		c->partial_slabs--;
		stat(c, CPU_PARTIAL_ALLOC);
		if (unlikely(node != USLUB_NUMA_NO_NODE && slab_nid(slab) != node)) {
			slab->next = NULL;
			put_partials_node(s, slab, c);
			continue;
		}
		freelist = freeze_slab(s, slab, c);
		goto load_slab;
	}

	slab = get_partial(s, node, c, cache_partials, home);
	if (slab) {
		freelist = freeze_slab(s, slab, c);
		goto load_slab;
	}

	slab = allocate_slab(s, node == USLUB_NUMA_NO_NODE ? home : node, c);
	if (unlikely(!slab))
		return -1;
	stat(c, ALLOC_SLAB);
	unsigned int objects = FC_OBJECTS(slab->counters);
	unsigned int k = new_slab_objects(s, slab, p, want, &freelist);
	if (!freelist) {
		/* every object handed out: a full slab, on no list */
		__atomic_store_n(&slab->counters, fc_make(SLAB_FL_NONE, objects, objects, false),
				 __ATOMIC_RELEASE);
		return (int)k;
	}
	/* Still private: freeze it with the rest as the cpu freelist, no CAS. */
	__atomic_store_n(&slab->counters, fc_make(SLAB_FL_NONE, objects, objects, true),
			 __ATOMIC_RELEASE);
	WRITE_ONCE(c->loaded, c->loaded + objects - k);
	set_cpu_slab(c, slab);
	WRITE_ONCE(c->freelist, freelist);
	return (int)k;

load_slab:
	set_cpu_slab(c, slab);
	WRITE_ONCE(c->freelist, freelist);
	return 0;
}

static void *___slab_alloc(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
			   bool cache_partials, int home)
{
	void *obj;

	int k = refill_cpu(s, node, c, cache_partials, home, &obj, 1);
	if (unlikely(k < 0))
		return NULL;             /* a failed allocation counts nothing */
	stat(c, ALLOC_SLOWPATH);
	if (k)
		return obj;
	/* the first object is returned, the rest stay on the cpu freelist */
	obj = c->freelist;
	WRITE_ONCE(c->loaded, c->loaded - 1);
	WRITE_ONCE(c->freelist, get_freepointer(s, obj));
	return obj;
}

int _uslub_home_node(void)
{
	struct uslub_thread *t = _uslub_tls.thread;
	return t ? t->node : 0;
}
#define home_node _uslub_home_node

/* The slow path for a thread without a cpu area (its cache was torn down
 * at exit, or it could not get one): a cpu slot on the stack, flushed
 * before returning, counters folded into the cache. */
static __cold void *slab_alloc_nocpu(struct kmem_cache *s, int node)
{
	struct kmem_cache_cpu c;
	memset(&c, 0, sizeof(c));
	void *obj = ___slab_alloc(s, node, &c, false, 0);
	_uslub_flush_cpu(s, &c);
	return obj;
}

static __noinline void *__slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	void *obj;
	for (;;) {
		if (likely(this_cpu_is_real() || _uslub_thread_init()))
			obj = ___slab_alloc(s, node, this_cpu(s), s->cpu_partial_slabs != 0,
					    home_node());
		else
			obj = slab_alloc_nocpu(s, node);
		if (likely(obj) || !(gfp & USLUB_GFP_NOFAIL))
			break;
		struct timespec ts = { 0, 1000000 };   /* __GFP_NOFAIL: wait, retry */
		nanosleep(&ts, NULL);
	}
	if (unlikely(!obj)) {
		errno = ENOMEM;
		if (!(gfp & USLUB_GFP_NOWARN) && _uslub_option(USLUB_OPT_VERBOSE))
			_uslub_report("uslub: %s: allocation failed (out of memory)\n", s->name);
	}
	return obj;
}

/* A sheaf cache without a cpu freelist: pop the main sheaf (the inline
 * step), else let the sheaf layer swap, exchange at the barn or refill. */
static __always_inline void *sheaf_alloc(struct kmem_cache *s, uslub_gfp_t gfp)
{
	if (unlikely(!this_cpu_is_real()) && !_uslub_thread_init())
		return NULL;
	struct kmem_cache_cpu *c = this_cpu(s);
	struct slab_sheaf *main = c->main;
	if (likely(main && main->size)) {
		stat(c, ALLOC_PCS);
		return main->objects[--main->size];
	}
	return _uslub_sheaf_alloc_slow(s, c, gfp);
}

static __noinline void *slab_alloc_slow_path(struct kmem_cache *s, uslub_gfp_t gfp, int node);
static void slab_free_nohooks(struct kmem_cache *s, void *x, uintptr_t addr);

/* ------------------------------------------------------------------------
 * slub_debug: the debug paths
 *
 * A debug cache (USLUB_DEBUG letters F Z P U T, or the matching cache
 * flags) has FASTPATH_OFF_SLUB_DEBUG: no cpu slab, no cpu partial slabs, no
 * sheaves. Every allocation and free takes list_lock of the slab's node,
 * as SLUB's alloc_single_from_partial()/free_to_partial_list() do, so the
 * checks see a slab nobody else changes: the state word is still updated
 * with slab_update(), but only under list_lock. Slabs with free objects
 * are on the node partial list; full ones are on no list; an isolated one
 * (a corruption was found in it) is on n->isolated and is never allocated
 * from or discarded again while the cache lives. Frees into an isolated
 * slab still go through the checks and are counted (inuse stays exact).
 * ---------------------------------------------------------------------- */

/* A cpu slot for the debug paths' counters: the thread's own, or @tmp
 * (the caller folds it) for a thread without a cpu area. */
static struct kmem_cache_cpu *debug_cpu(struct kmem_cache *s, struct kmem_cache_cpu *tmp)
{
	if (likely(this_cpu_is_real() || _uslub_thread_init()))
		return this_cpu(s);
	memset(tmp, 0, sizeof(*tmp));
	return tmp;
}

static void debug_cpu_done(struct kmem_cache *s, struct kmem_cache_cpu *c,
			   struct kmem_cache_cpu *tmp)
{
	if (c == tmp)
		fold_stats(s, tmp);
}

/* list_lock held. */
static void slab_isolate(struct kmem_cache *s, struct kmem_cache_node *n, struct slab *slab)
{
	if (slab->__page_flags & PG_isolated)
		return;
	if (slab_test_node_partial(slab))
		remove_partial(n, slab);
	WRITE_ONCE(slab->__page_flags, slab->__page_flags | PG_isolated);
	list_add(&slab->slab_list, &n->isolated);
	n->nr_isolated++;
	_uslub_debug_isolated(s, slab);
}

/* Is @x on @slab's freelist? (list_lock held; each link checked.) */
static bool on_freelist(struct kmem_cache *s, struct slab *slab, const void *x)
{
	uint64_t cnt = slab_counters(slab);
	unsigned int k = 0;
	for (void *p = fl_ptr(s, slab, FC_FREELIST(cnt)); p && k <= FC_OBJECTS(cnt);
	     p = get_freepointer(s, p), k++) {
		if (p == x)
			return true;
		if (!walk_ok(s, slab, get_freepointer(s, p)))
			break;
	}
	return false;
}

/* The first object of @n's partial slabs that passes the checks (list_lock
 * held); a slab failing them is isolated. NULL: none. The object is made
 * allocated (red zones active, owner recorded) before the lock is dropped,
 * so no validate and no fork child sees it half way. */
static void *debug_take(struct kmem_cache *s, struct kmem_cache_node *n, struct slab **slabp,
			uintptr_t addr)
{
	while (!list_empty(&n->partial)) {
		struct slab *slab = list_entry(n->partial.next, struct slab, slab_list);
		uint64_t old = slab_counters(slab);
		void *obj = fl_ptr(s, slab, FC_FREELIST(old));
		bool ok;
		if (unlikely(!obj))
			ok = false;                 /* a partial slab always has one */
		else if (s->debug & USLUB_DBG_F)
			ok = !_uslub_debug_check_object(s, slab, obj, SLUB_RED_INACTIVE);
		else if (!(ok = walk_ok(s, slab, get_freepointer(s, obj))))
			_uslub_debug_object_err(s, slab, obj, "Freepointer corrupt",
						"free pointer of free object %p is %p, not an "
						"object of the slab", obj, get_freepointer(s, obj));
		if (!ok) {
			slab_isolate(s, n, slab);
			continue;
		}
		void *next = get_freepointer(s, obj);
		uint64_t new = fc_make(fl_idx(s, slab, next), FC_INUSE(old) + 1, FC_OBJECTS(old),
				       false);
		if (!slab_update(slab, &old, new))
			continue;               /* nobody else writes it: cannot happen */
		if (!next)
			remove_partial(n, slab);    /* now full: on no list */
		_uslub_debug_init_object(s, obj, SLUB_RED_ACTIVE);
		_uslub_debug_set_orig_size(s, obj, s->object_size);
		_uslub_debug_set_track(s, obj, TRACK_ALLOC, addr);
		*slabp = slab;
		return obj;
	}
	return NULL;
}

static void *debug_alloc_once(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
			      struct slab **slabp, uintptr_t addr)
{
	int search = node == USLUB_NUMA_NO_NODE ? home_node() : node;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		int nid = (search + i) % _uslub_nr_nodes();
		if (i && node != USLUB_NUMA_NO_NODE)
			break;
		struct kmem_cache_node *n = get_node(s, nid);
		if (i && !READ_ONCE(n->nr_partial))
			continue;
		node_lock(n);
		void *obj = debug_take(s, n, slabp, addr);
		node_unlock(n);
		if (obj)
			return obj;
	}
	struct slab *slab = allocate_slab(s, search, c);
	if (!slab)
		return NULL;
	stat(c, ALLOC_SLAB);
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	node_lock(n);
	if (!(slab->__page_flags & PG_isolated))     /* (validate found it damaged) */
		add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
	void *obj = debug_take(s, n, slabp, addr);
	node_unlock(n);
	return obj;
}

/* One object of debug cache @s for the caller at @addr: checked, red zones
 * made active, owner recorded, counted when @count. No hooks (the callers
 * run them). */
static __noinline void *__debug_slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					   uintptr_t addr, bool count)
{
	struct kmem_cache_cpu tmp, *c = debug_cpu(s, &tmp);
	struct slab *slab = NULL;
	void *obj;
	while (!(obj = debug_alloc_once(s, node, c, &slab, addr)) && (gfp & USLUB_GFP_NOFAIL)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	_uslub_debug_flush();
	if (unlikely(!obj)) {
		debug_cpu_done(s, c, &tmp);
		errno = ENOMEM;
		return NULL;
	}
	if (count)
		stat(c, ALLOC_SLOWPATH);
	debug_cpu_done(s, c, &tmp);
	if (unlikely(s->debug & USLUB_DBG_T))
		_uslub_debug_trace(s, slab, obj, true);
	if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, s->object_size);
	return obj;
}

static void *debug_slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node, uintptr_t addr)
{
	return __debug_slab_alloc(s, gfp, node, addr, true);
}

/* Free @x, an object start of @slab of debug cache @s (checked by the
 * caller), for the caller at @addr; counted when @count. No hooks (the
 * callers run them). */
static __noinline void __debug_slab_free(struct kmem_cache *s, struct slab *slab, void *x,
					 uintptr_t addr, bool count)
{
	struct kmem_cache_cpu tmp, *c = debug_cpu(s, &tmp);
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	struct slab *discard = NULL;
	node_lock(n);
	if (unlikely(on_freelist(s, slab, x))) {
		_uslub_debug_object_err(s, slab, x, "Object already free",
					"double free of %p", x);
		_uslub_debug_emit("FIX %s: Object %p left alone\n\n", s->name, x);
		node_unlock(n);
		debug_cpu_done(s, c, &tmp);
		_uslub_debug_flush();
		return;
	}
	if ((s->debug & USLUB_DBG_F) && _uslub_debug_check_object(s, slab, x, SLUB_RED_ACTIVE))
		slab_isolate(s, n, slab);
	_uslub_debug_set_track(s, x, TRACK_FREE, addr);
	if (unlikely(s->debug & USLUB_DBG_T))
		_uslub_debug_trace(s, slab, x, false);
	_uslub_debug_init_object(s, x, SLUB_RED_INACTIVE);

	uint64_t old = slab_counters(slab), new;
	do {
		set_freepointer(s, x, fl_ptr(s, slab, FC_FREELIST(old)));
		new = fc_make(obj_to_index(s, slab, x), FC_INUSE(old) - 1, FC_OBJECTS(old), false);
	} while (!slab_update(slab, &old, new));
	if (!(slab->__page_flags & PG_isolated)) {
		if (FC_FREELIST(old) == SLAB_FL_NONE)
			add_partial(n, slab, DEACTIVATE_TO_TAIL_POS);    /* was full */
		if (!FC_INUSE(new) && n->nr_partial > s->min_partial) {
			remove_partial(n, slab);
			discard = slab;
		}
	}
	node_unlock(n);
	if (count)
		stat(c, FREE_SLOWPATH);
	if (discard) {
		stat(c, FREE_SLAB);
		discard_slab(s, discard);
	}
	debug_cpu_done(s, c, &tmp);
	_uslub_debug_flush();
}

static void debug_slab_free(struct kmem_cache *s, struct slab *slab, void *x, uintptr_t addr)
{
	__debug_slab_free(s, slab, x, addr, true);
}

/* The checked pop of a hardened cache comes first and stays small, so
 * hardening costs a few instructions, not the whole slow path; then a
 * sheaf cache's main sheaf; then everything else. No hooks. */
static __always_inline void *slab_alloc_nohooks(struct kmem_cache *s, uslub_gfp_t gfp, int node,
						 uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	void *obj = c->freelist;
	struct slab *slab = c->slab;

	if (likely(obj && slab && !gfp && node == USLUB_NUMA_NO_NODE) &&
	    likely(obj_is_valid(s, slab, obj))) {
		c->freelist = get_freepointer(s, obj);
		free_mark_clear(s, obj);
		return obj;
	}
	/* a sheaf cache's common case: pop the main sheaf */
	struct slab_sheaf *main = c->main;
	if (likely(!obj && main && main->size && !gfp && node == USLUB_NUMA_NO_NODE)) {
		stat(c, ALLOC_PCS);
		obj = main->objects[--main->size];
		free_mark_clear(s, obj);
		return obj;
	}
	if (kmem_cache_debug(s))      /* it has neither a cpu freelist nor sheaves */
		return debug_slab_alloc(s, gfp, node, addr);
	return slab_alloc_slow_path(s, gfp, node);
}

/* A cache with extension hooks (accounting or profiling), or a
 * USLUB_GFP_ACCOUNT allocation: take an object as the paths without hooks
 * do, then run the post-allocation hook; a refused charge gives the
 * object back and fails. The cpu slot's free-path range is closed, so
 * every free of such a cache runs the free hook (slab_free_hooked()). */
static __noinline void *slab_alloc_hooked_slow(struct kmem_cache *s, uslub_gfp_t gfp, int node,
						uintptr_t addr)
{
	if (unlikely(failslab(s, gfp, 1))) {
		uslub_alloc_tag_cur = NULL;         /* nothing allocated: nothing tagged */
		return NULL;
	}
	struct uslub_alloc_tag *tag = take_alloc_tag(READ_ONCE(s->hooks));
	void *obj = slab_alloc_nohooks(s, gfp & ~USLUB_GFP_ACCOUNT, node, addr);
	if (unlikely(!obj))
		return NULL;
	if (likely(post_alloc_hook(s, gfp, 1, &obj, NULL, tag)))
		return obj;
	/* refused (the reclaim callback may have flushed or shrunk this
	 * thread's cpu slot meanwhile): free it the plain way */
	slab_free_nohooks(s, obj, addr);
	errno = ENOMEM;
	return NULL;
}

/*
 * The hooked fast path: a leaf that only tail-calls (no frame), entered
 * from the inline fast path with its cpu slot @c and freelist head @obj.
 * An object of the cpu freelist, charged from the thread's stock and
 * tagged in the thread's counters, with every condition checked before
 * anything changes; any miss goes to slab_alloc_hooked_slow() untouched.
 */
static __noinline void *slab_alloc_hooked(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					  struct kmem_cache_cpu *c, void *obj)
{
	/* entered by a tail call: the return address is the public caller's */
#define addr ((uintptr_t)__builtin_return_address(0))
	if (unlikely(!obj || (gfp & ~USLUB_GFP_ACCOUNT) || node != USLUB_NUMA_NO_NODE ||
		     (s->flags & (SLAB_HARDENED | SLAB_NO_OBJ_EXT)) ||
		     (READ_ONCE(s->fastpath_off) & (FASTPATH_OFF_DEBUG | FASTPATH_OFF_SLUB_DEBUG))))
		return slab_alloc_hooked_slow(s, gfp, node, addr);
	unsigned int hooks = READ_ONCE(s->hooks);
	struct obj_cgroup *objcg = ((gfp & USLUB_GFP_ACCOUNT) || (s->flags & USLUB_ACCOUNT)) ?
				   _uslub_tls.cur_objcg : NULL;
	struct uslub_alloc_tag *tag = (hooks & HOOK_PROFILE) ? uslub_alloc_tag_cur : NULL;
	if (!objcg && !tag) {
		c->freelist = get_freepointer_raw(s, obj);
		free_mark_clear(s, obj);
		return obj;
	}
	/* a cpu freelist means a real cpu area: t != NULL */
	struct uslub_thread *t = _uslub_tls.thread;
	unsigned long base = __atomic_load_n(&c->slab->obj_exts, __ATOMIC_ACQUIRE);
	unsigned int tidx = tag ? READ_ONCE(tag->index) : 0;
	if (unlikely(!base) ||
	    (objcg && unlikely(!(hooks & HOOK_ACCOUNT) || t->stock.cached != objcg ||
			       t->stock.nr_bytes < (long)s->charge || c->slab_bytes)) ||
	    (tag && unlikely(!tidx || !t->tagc)))
		return slab_alloc_hooked_slow(s, gfp, node, addr);

	c->freelist = get_freepointer_raw(s, obj);
	free_mark_clear(s, obj);
	uintptr_t off = (uintptr_t)obj - (uintptr_t)c->slab_addr;
	struct slabobj_ext *ext = (struct slabobj_ext *)
		(base + (uintptr_t)slab_offset_to_index(off, s->reciprocal_size) * s->ext_stride);
	if (objcg)
		t->stock.nr_bytes -= (long)s->charge;
	WRITE_ONCE(ext->objcg, objcg);
	WRITE_ONCE(ext->ref, tag);
	if (tag) {
		uslub_alloc_tag_cur = NULL;              /* taken */
		SINGLE_WRITER_INC(t->tagc[tidx].bytes, (int64_t)s->size);
		SINGLE_WRITER_INC(t->tagc[tidx].calls, 1);
	}
	return obj;
#undef addr
}

/* Entered from the fast path: hooks, or the paths without them. */
static __noinline void *slab_alloc_slow(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					uintptr_t addr)
{
	if (unlikely(gfp & USLUB_GFP_ACCOUNT)) {   /* its slow path asks failslab */
		struct kmem_cache_cpu *c = this_cpu(s);
		return slab_alloc_hooked(s, gfp, node, c, c->freelist);
	}
	if (unlikely(failslab(s, gfp, 1)))
		return NULL;
	return slab_alloc_nohooks(s, gfp, node, addr);
}

/* Everything else: an empty (or corrupted) cpu freelist, sheaves, a node
 * to match, or gfp bits (zeroing, NOFAIL). */
static __noinline void *slab_alloc_slow_path(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	void *obj = c->freelist;

	if (unlikely(obj && !cpu_freelist_ok(s, c, obj))) {
		cpu_freelist_corrupt(s, c);
		obj = NULL;
	}
	if (obj && (node == USLUB_NUMA_NO_NODE || slab_nid(c->slab) == node)) {
		c->freelist = get_freepointer(s, obj);   /* ALLOC_FASTPATH, derived */
	} else {
		obj = NULL;
		if (s->sheaf_capacity && node == USLUB_NUMA_NO_NODE)
			obj = sheaf_alloc(s, gfp);
		if (!obj)
			obj = __slab_alloc(s, gfp, node);
		if (unlikely(!obj))
			return NULL;
	}
	free_mark_clear(s, obj);
	if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, s->object_size);
	return obj;
}

/* A kmalloc of @orig_size bytes from a debug cache: recorded (Z caches
 * fill the tail). @addr is the caller's, for owner tracking. */
static __noinline void *kmalloc_debug_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					    size_t orig_size, uintptr_t addr)
{
	void *p = READ_ONCE(s->hooks) ? slab_alloc_hooked_slow(s, gfp, node, addr) :
					slab_alloc_slow(s, gfp, node, addr);
	if (p)
		_uslub_debug_set_orig_size(s, p, (unsigned int)orig_size);
	return p;
}

/*
 * The alloc miss path (cache.h's inline paths missed), with the public
 * caller's address @addr (slub_debug's owner). The cpu freelist
 * first when the caller did not try it (malloc pops the main sheaf only);
 * then a kmalloc from a debug cache (its size recorded), the hooked leaf,
 * or the slow path: failslab, the main sheaf's refill (spare, barn,
 * slabs), a new slab, the debug paths.
 */
__noinline void *_uslub_slab_alloc_miss(struct kmem_cache *s, uslub_gfp_t gfp, int node,
				       size_t orig_size, uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu(s);

	if (likely(!gfp && node == USLUB_NUMA_NO_NODE)) {
		void *obj = alloc_from_cpu_slab(s, c);   /* malloc's pop misses to here */
		if (likely(obj))
			return obj;
	}
	if (unlikely(orig_size) && kmem_cache_debug(s))
		return kmalloc_debug_alloc(s, gfp, node, orig_size, addr);
	/* a cache with hooks goes straight to its leaf; the caller's address
	 * is for slub_debug's owners */
	if (READ_ONCE(s->hooks))
		return slab_alloc_hooked(s, gfp, node, c, c->freelist);
	return slab_alloc_slow(s, gfp, node, addr);
}

/* ------------------------------------------------------------------------
 * The free slow path: lockless remote free
 * ---------------------------------------------------------------------- */
/* Returns false (nothing freed, reported) for a detected double free. */
static bool __slab_free(struct kmem_cache *s, struct slab *slab, void *head, void *tail,
			unsigned int cnt, struct kmem_cache_cpu *c, bool cpu_partial)
{
	struct kmem_cache_node *n = NULL;
	bool on_node_partial = false, was_frozen;
	uint64_t old = slab_counters(slab), new;
	unsigned int prior, inuse;

	do {
		if (unlikely(n)) {
			node_unlock(n);
			n = NULL;
		}
		prior = FC_FREELIST(old);
		if (unlikely(prior != SLAB_FL_NONE && prior == obj_to_index(s, slab, head))) {
			_uslub_report_error("uslub: %s: double free of %p (it is the first free "
					    "object of its slab); left alone\n", s->name, head);
			return false;
		}
		if (unlikely(FC_INUSE(old) < cnt)) {
			_uslub_report_error("uslub: %s: free of %p: slab %p has %u objects in use, "
					    "freeing %u (double free?); object left alone\n",
					    s->name, head, slab_address(slab), FC_INUSE(old), cnt);
			return false;
		}
		set_freepointer(s, tail, fl_ptr(s, slab, prior));
		inuse = FC_INUSE(old) - cnt;
		was_frozen = FC_FROZEN(old);
		new = fc_make(fl_idx(s, slab, head), inuse, FC_OBJECTS(old), was_frozen);
		if ((!inuse || prior == SLAB_FL_NONE) && !was_frozen) {
			/* A list move may be needed: full -> node partial when no
			 * cpu partial list takes it, or maybe partial -> empty. */
			if (!cpu_partial || prior != SLAB_FL_NONE) {
				n = get_node(s, slab_nid(slab));
				node_lock(n);
				on_node_partial = slab_test_node_partial(slab);
			}
		}
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);

	if (likely(!n)) {
		if (was_frozen) {
			stat(c, FREE_FROZEN);
		} else if (cpu_partial && prior == SLAB_FL_NONE) {
			/* full -> cpu partial of the freeing thread, unfrozen */
			put_cpu_partial(s, c, slab, true);
			stat(c, CPU_PARTIAL_FREE);
		}
		return true;
	}

	/* Partially empty but off the node list: a cpu partial slab. Its
	 * owner handles it; we must not touch its list. */
	if (prior != SLAB_FL_NONE && !on_node_partial) {
		node_unlock(n);
		return true;
	}
	if (unlikely(!inuse && n->nr_partial >= s->min_partial)) {
		if (prior != SLAB_FL_NONE) {
			remove_partial(n, slab);
			stat(c, FREE_REMOVE_PARTIAL);
		}
		node_unlock(n);
		stat(c, FREE_SLAB);
		discard_slab(s, slab);
		return true;
	}
	if (prior == SLAB_FL_NONE) {
		add_partial(n, slab, DEACTIVATE_TO_TAIL_POS);
		stat(c, FREE_ADD_PARTIAL);
	}
	node_unlock(n);
	return true;
}

/* A cache whose errors end the process (the malloc front end's kmalloc
 * caches: a bad free() in a program is fatal, as in glibc). */
static __cold void abort_if_fatal(const struct kmem_cache *s)
{
	if (s->flags & SLAB_ABORT_ON_ERROR) {
		_uslub_report("uslub: aborting (USLUB_MALLOC_ABORT=0 reports and goes on)\n");
		abort();
	}
}

static __cold void report_invalid_free(struct kmem_cache *s, void *x, struct slab *slab)
{
	if (READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD)
		_uslub_report_error("uslub: %s: free of %p into a cache that was destroyed; "
				    "left alone\n", s->name, x);
	else if (!_uslub_owns_segment(x))
		_uslub_report_error("uslub: %s: free of %p, a pointer uslub does not own; "
				    "left alone\n", s->name, x);
	else if (!slab)
		_uslub_report_error("uslub: %s: free of %p, which is not inside a live slab; "
				    "left alone\n", s->name, x);
	else if (slab->slab_cache != s)
		_uslub_report_error("uslub: %s: free of %p, an object of cache %s; left alone\n",
				    s->name, x, slab->slab_cache ? slab->slab_cache->name : "?");
	else
		_uslub_report_error("uslub: %s: free of %p, %zu bytes into object %u of slab %p "
				    "(not an object start); left alone\n", s->name, x,
				    (size_t)(((uintptr_t)x - (uintptr_t)slab_obj_base(s, slab)) % s->size),
				    (unsigned int)(((uintptr_t)x - (uintptr_t)slab_obj_base(s, slab)) / s->size),
				    slab_address(slab));
	abort_if_fatal(s);
}

static bool sheaf_holds(const struct slab_sheaf *sheaf, const void *x)
{
	for (unsigned int i = 0; sheaf && i < sheaf->size; i++)
		if (sheaf->objects[i] == x)
			return true;
	return false;
}

/* Where the first free of @x (an object of @slab holding the free mark)
 * put it, as far as this thread can see without locks: its own cpu
 * freelist and sheaves. Elsewhere (another thread's cache, the barn, the
 * slab's freelist) it is just as free, and no less a double free. */
static __cold const char *already_free_where(struct kmem_cache *s, struct slab *slab, void *x)
{
	if (!this_cpu_is_real())
		return "freed earlier";
	struct kmem_cache_cpu *c = this_cpu(s);
	if (c->slab == slab) {
		unsigned int k = 0;
		for (void *p = c->freelist; p && k <= s->objects; p = get_freepointer(s, p), k++) {
			if (p == x)
				return "on this thread's cpu freelist";
			if (!walk_ok(s, slab, p))
				break;
		}
	}
	if (sheaf_holds(c->main, x) || sheaf_holds(c->spare, x))
		return "in this thread's per-CPU sheaf";
	return "freed earlier, now cached by another thread, the barn or its slab";
}

/* A user frees @x (an object of @slab) that holds the free mark. */
static __cold void report_double_free(struct kmem_cache *s, struct slab *slab, void *x)
{
	_uslub_report_error("uslub: %s: double free of %p: the object is already free (%s); "
			    "left alone\n", s->name, x, already_free_where(s, slab, x));
	abort_if_fatal(s);
}

/* Every free that is not into the calling thread's cpu slab: look the
 * slab up through the page provider, check it, then push it onto the main
 * sheaf (sheaf caches, local node) or onto the slab with the CAS. */
static __noinline void slab_free_slow_path(struct kmem_cache *s, void *x, uintptr_t addr);
static __always_inline void slab_free_checked(struct kmem_cache *s, void *x, struct slab *slab,
					      uintptr_t addr);

static __noinline void slab_free_hooked(struct kmem_cache *s, void *x, struct kmem_cache_cpu *c,
				       uintptr_t off, void *head);
static __noinline void slab_free_hooked_slow(struct kmem_cache *s, void *x, uintptr_t addr);

/* The free paths below the fast one, without hooks: the checked push of a
 * hardened cache first (small), like slab_alloc_nohooks(), then a sheaf
 * cache's main sheaf, then everything else. */
static __always_inline void slab_free_nohooks_inline(struct kmem_cache *s, void *x, uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	struct slab *cpu_slab = c->slab;
	void *head = c->freelist;
	if (likely(cpu_slab) && likely(obj_is_valid(s, cpu_slab, x)) &&
	    likely(!free_mark_test(s, x, c->free_mark))) {
		free_mark_set(s, x, c->free_mark);
		set_freepointer(s, x, head);
		c->freelist = x;
		stat(c, FREE_FASTPATH);
		return;
	}
	/* a sheaf cache's common case: a checked object of the local node
	 * onto a main sheaf with room */
	struct slab_sheaf *main = c->main;
	struct slab *slab;
	if (likely(main && main->size < main->capacity) && (slab = virt_to_slab(x)) &&
	    likely(slab->slab_cache == s && obj_is_valid(s, slab, x)) &&
	    likely(slab_nid(slab) == home_node()) &&
	    likely(!free_mark_test(s, x, slab_free_mark(s, slab)))) {
		free_mark_set(s, x, slab_free_mark(s, slab));
		main->objects[main->size] = x;
		barrier();      /* a fork child flushes objects[0, size) */
		main->size++;
		stat(c, FREE_PCS);
		return;
	}
	slab_free_slow_path(s, x, addr);
}

static void slab_free_nohooks(struct kmem_cache *s, void *x, uintptr_t addr)
{
	slab_free_nohooks_inline(s, x, addr);
}

/* Entered from the fast path. */
static __noinline void slab_free_slow(struct kmem_cache *s, void *x, uintptr_t addr)
{
	if (unlikely(READ_ONCE(s->hooks))) {
		slab_free_hooked_slow(s, x, addr);
		return;
	}
	slab_free_nohooks_inline(s, x, addr);
}

/*
 * The hooked free fast path, a leaf like slab_alloc_hooked(): an object of
 * the cpu slab, uncharged into the thread's stock and untagged in the
 * thread's counters, pushed onto the cpu freelist; any miss goes to
 * slab_free_hooked_slow() untouched.
 */
static __noinline void slab_free_hooked(struct kmem_cache *s, void *x, struct kmem_cache_cpu *c,
				       uintptr_t off, void *head)
{
	/* entered by a tail call: the return address is the public caller's */
#define addr ((uintptr_t)__builtin_return_address(0))
	unsigned int idx = slab_offset_to_index(off, s->reciprocal_size);
	if (unlikely(off >= c->slab_span || (uintptr_t)idx * s->size != off ||
		     free_mark_test(s, x, c->free_mark) || cache_hardened(s)))
		return slab_free_hooked_slow(s, x, addr);
	struct slabobj_ext *ext = slab_obj_ext_idx(s, c->slab, idx);
	if (ext) {
		struct obj_cgroup *objcg = READ_ONCE(ext->objcg);
		struct uslub_alloc_tag *tag = READ_ONCE(ext->ref);
		if (objcg || tag) {
			/* inside a cpu slab's range: a real cpu area, t != NULL */
			struct uslub_thread *t = _uslub_tls.thread;
			unsigned int tidx = tag ? READ_ONCE(tag->index) : 0;
			if ((objcg && unlikely(t->stock.cached != objcg ||
					       t->stock.nr_bytes + (long)s->charge > _uslub_stock_max)) ||
			    (tag && unlikely(!tidx || !t->tagc)))
				return slab_free_hooked_slow(s, x, addr);
			if (objcg) {
				WRITE_ONCE(ext->objcg, NULL);
				t->stock.nr_bytes += (long)s->charge;
			}
			if (tag) {
				WRITE_ONCE(ext->ref, NULL);
				SINGLE_WRITER_INC(t->tagc[tidx].bytes, -(int64_t)s->size);
				SINGLE_WRITER_INC(t->tagc[tidx].calls, -1);
			}
		}
	}
	free_mark_set(s, x, c->free_mark);
	set_freepointer_raw(s, x, head);
	c->freelist = x;
	stat(c, FREE_FASTPATH);
#undef addr
}

/* The rest of a hooked cache's frees: check the object, run the free
 * hook, then free it as the paths without hooks do. */
static __noinline void slab_free_hooked_slow(struct kmem_cache *s, void *x, uintptr_t addr)
{
	struct slab *slab = virt_to_slab(x);
	if (unlikely(!x || !slab || slab->slab_cache != s || !obj_is_valid(s, slab, x))) {
		slab_free_slow_path(s, x, addr);     /* reports it (NULL: nothing) */
		return;
	}
	if (!kmem_cache_debug(s) && free_mark_test(s, x, slab_free_mark(s, slab))) {
		/* before any uncharge */
		report_double_free(s, slab, x);
		return;
	}
	free_hook(s, slab, x);
	if (unlikely(cache_hardened(s))) {
		slab_free_nohooks_inline(s, x, addr);      /* its checked cpu-slab push */
		return;
	}
	slab_free_checked(s, x, slab, addr);            /* no second lookup */
}

static __noinline void slab_free_slow_path(struct kmem_cache *s, void *x, uintptr_t addr)
{
	if (unlikely(!x))
		return;
	struct slab *slab = virt_to_slab(x);
	if (unlikely(!slab || slab->slab_cache != s || !obj_is_valid(s, slab, x))) {
		report_invalid_free(s, x, slab);
		return;
	}
	slab_free_checked(s, x, slab, addr);
}

/* @x is an object of @slab of @s (checked): a debug cache's checked free,
 * or the free-mark check, then the main sheaf or the slab with the CAS. */
static __always_inline void slab_free_checked(struct kmem_cache *s, void *x, struct slab *slab,
					      uintptr_t addr)
{
	struct kmem_cache_cpu *c;
	if (kmem_cache_debug(s)) {
		debug_slab_free(s, slab, x, addr);
		return;
	}
	if (free_mark_test(s, x, slab_free_mark(s, slab))) {
		report_double_free(s, slab, x);
		return;
	}
	free_mark_set(s, x, slab_free_mark(s, slab));   /* before anyone else can take it */
	if (likely(this_cpu_is_real() || _uslub_thread_init())) {
		c = this_cpu(s);
		if (s->sheaf_capacity && slab_nid(slab) == home_node()) {
			struct slab_sheaf *main = c->main;
			if (likely(main && main->size < main->capacity)) {
				main->objects[main->size] = x;
				barrier();      /* a fork child flushes objects[0, size) */
				main->size++;
				stat(c, FREE_PCS);
				return;
			}
			if (_uslub_sheaf_free_slow(s, c, x))
				return;
		}
		if (__slab_free(s, slab, x, x, 1, c, s->cpu_partial_slabs != 0))
			stat(c, FREE_SLOWPATH);
		return;
	}
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (__slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	fold_stats(s, &tmp);
}

/*
 * The free miss path (cache.h's inline paths missed), with the public
 * caller's address @addr: the hooked leaf (entered by a tail call, it
 * takes its own return address), or
 * the slow path: checks and reports, the sheaf's spare, barn and flush,
 * the slabs.
 */
__noinline void _uslub_slab_free_miss(struct kmem_cache *s, void *x, uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu(s);

	if (READ_ONCE(s->hooks)) {      /* straight to the leaf */
		slab_free_hooked(s, x, c, (uintptr_t)x - (uintptr_t)c->slab_addr, c->freelist);
		return;
	}
	slab_free_slow(s, x, addr);
}

/* Free @x of @s (an internal cache without hooks) without ever setting up
 * a cpu area: safe with thread_lock held (destroy, fork child). */
void _uslub_free_noinit(struct kmem_cache *s, void *x)
{
	if (likely(this_cpu_is_real())) {
		slab_free(s, x);
		return;
	}
	struct slab *slab = virt_to_slab(x);
	if (unlikely(!slab || slab->slab_cache != s || !obj_is_valid(s, slab, x))) {
		report_invalid_free(s, x, slab);
		return;
	}
	if (free_mark_test(s, x, slab_free_mark(s, slab))) {
		report_double_free(s, slab, x);
		return;
	}
	free_mark_set(s, x, slab_free_mark(s, slab));
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (__slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	fold_stats(s, &tmp);
}

/* ------------------------------------------------------------------------
 * Public allocation API
 * ---------------------------------------------------------------------- */
static __cold void *alloc_null_cache(void)
{
	uslub_alloc_tag_cur = NULL;
	_uslub_bad_cache(NULL, "allocation");
	return NULL;
}

__public void *uslub_cache_alloc_noprof(struct kmem_cache *s, uslub_gfp_t gfp)
{
	if (unlikely(!s))
		return alloc_null_cache();
	return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, 0);
}
/* The plain names, as functions (untagged: no tag is left in the slot),
 * for callers without macros. */
__public void *(uslub_cache_alloc)(struct kmem_cache *s, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	if (unlikely(!s))
		return alloc_null_cache();
	return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, 0);
}

__public void *uslub_cache_alloc_node_noprof(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	if (unlikely(!s))
		return alloc_null_cache();
	if (node != USLUB_NUMA_NO_NODE && (node < 0 || node >= _uslub_nr_nodes())) {
		uslub_alloc_tag_cur = NULL;      /* nothing allocated: nothing tagged */
		_uslub_report("uslub: %s: alloc on node %d, but there are %d nodes\n",
			      s->name, node, _uslub_nr_nodes());
		errno = EINVAL;
		return NULL;
	}
	return slab_alloc_node(s, gfp, node, 0);
}
__public void *(uslub_cache_alloc_node)(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_cache_alloc_node_noprof(s, gfp, node);
}

__public void *uslub_kmalloc_trace(struct kmem_cache *s, uslub_gfp_t gfp, size_t size)
{
	uslub_alloc_tag_cur = NULL;
	if (unlikely(!s))
		return alloc_null_cache();
	if (unlikely(size > s->object_size)) {
		_uslub_report("uslub: %s: kmalloc_trace of %zu bytes, objects have %u\n", s->name,
			      size, s->object_size);
		errno = EINVAL;
		return NULL;
	}
	return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, size ? size : 1);
}

static __cold void free_null_cache(void)
{
	_uslub_bad_cache(NULL, "uslub_cache_free");
}

__public void uslub_cache_free(struct kmem_cache *s, void *x)
{
	if (unlikely(!s))
		return free_null_cache();
	slab_free(s, x);      /* NULL is never inside a cpu slab: slow path */
}

/* ------------------------------------------------------------------------
 * Bulk allocation (seed 001) and refill_objects (seed 000)
 * ---------------------------------------------------------------------- */

/*
 * Take up to @want objects off the freelist of a node partial slab (we are
 * its one taker: list_lock held): walk the chain, then one CAS {freelist:
 * the rest, inuse += taken}. Remote frees only prepend, so a failed CAS
 * just walks again. A take that empties the freelist makes the slab full,
 * and a racing __slab_free() may then give it to a cpu partial list
 * (through slab->next, which overlays slab_list): so the slab leaves the
 * node list *before* such a CAS, and goes back on if the CAS found more
 * objects than we take. A corrupted pointer ends the walk: the objects
 * behind it stay counted as in use (leaked).
 */
static unsigned int take_objects(struct kmem_cache *s, struct kmem_cache_node *n,
				 struct slab *slab, void **p, unsigned int want,
				 struct kmem_cache_cpu *c)
{
	uint64_t old = slab_counters(slab), new;
	bool listed = true;
	unsigned int k;
	do {
		void *obj = fl_ptr(s, slab, FC_FREELIST(old));
		unsigned int inuse = FC_INUSE(old);
		for (k = 0; k < want && obj; k++) {
			p[k] = obj;
			void *next = get_freepointer(s, obj);
			if (unlikely(!walk_ok(s, slab, next))) {
				report_corrupt(s, slab, next, obj, c);
				next = NULL;
				inuse = FC_OBJECTS(old) - k - 1;   /* the lost ones stay "in use" */
			}
			obj = next;
		}
		new = fc_make(fl_idx(s, slab, obj), inuse + k, FC_OBJECTS(old), false);
		if (!obj && listed) {
			remove_partial(n, slab);          /* before the CAS that fills it */
			listed = false;
		}
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);
	if (!listed && FC_FREELIST(new) != SLAB_FL_NONE)
		add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
	return k;
}

/* Objects from one node's partial slabs, in list order; a slab emptied of
 * free objects leaves the list (it is full now). */
static unsigned int take_from_node_partial(struct kmem_cache *s, struct kmem_cache_node *n,
					   struct kmem_cache_cpu *c, void **p, unsigned int want)
{
	unsigned int got = 0;
	if (!READ_ONCE(n->nr_partial))
		return 0;
	node_lock(n);
	while (got < want && !list_empty(&n->partial)) {
		struct slab *slab = list_entry(n->partial.next, struct slab, slab_list);
		got += take_objects(s, n, slab, p + got, want - got, c);
	}
	node_unlock(n);
	return got;
}

/* New slabs for refill_objects: objects handed out directly; a slab with
 * objects left goes on the node partial list with a freelist of just those. */
static unsigned int take_from_new_slabs(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
					void **p, unsigned int want)
{
	unsigned int got = 0;
	while (got < want) {
		struct slab *slab = allocate_slab(s, node, c);
		if (!slab)
			break;
		stat(c, ALLOC_SLAB);
		unsigned int objects = FC_OBJECTS(slab->counters);
		void *rest;
		unsigned int k = new_slab_objects(s, slab, p + got, want - got, &rest);
		got += k;
		__atomic_store_n(&slab->counters,
				 fc_make(fl_idx(s, slab, rest), rest ? k : objects, objects, false),
				 __ATOMIC_RELEASE);
		if (rest) {
			struct kmem_cache_node *n = get_node(s, slab_nid(slab));
			node_lock(n);
			add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
			node_unlock(n);
		}
	}
	return got;
}

/* _uslub_refill_objects(), for a user (@user: the objects are handed out,
 * and those of partial slabs, which hold the free mark, are cleared) or
 * for the allocator's own caches (sheaves: free objects, so those a new
 * slab handed out directly get its mark). Objects a new slab hands to a
 * user stay untouched: nothing in them can match its mark. */
static unsigned int refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c, void **p,
				   unsigned int min, unsigned int max, int node, bool user)
{
	if (unlikely(kmem_cache_debug(s))) {
		uintptr_t addr = (uintptr_t)__builtin_return_address(0);
		unsigned int got = 0;
		while (got < max && (p[got] = __debug_slab_alloc(s, 0, node, addr, false)))
			got++;
		if (got < min) {
			_uslub_free_to_slabs(s, c, got, p);
			return 0;
		}
		return got;
	}
	int home = home_node();
	int search = node == USLUB_NUMA_NO_NODE ? home : node;
	unsigned int got = take_from_node_partial(s, get_node(s, search), c, p, max);

	if (got < max && node == USLUB_NUMA_NO_NODE) {
		for (int i = 0; i < _uslub_nr_nodes() && got < max; i++) {
			struct kmem_cache_node *n = get_node(s, i);
			if (i != search && READ_ONCE(n->nr_partial) > s->min_partial)
				got += take_from_node_partial(s, n, c, p + got, max - got);
		}
	}
	unsigned int partial = got;
	if (got < max)
		got += take_from_new_slabs(s, search, c, p + got, max - got);
	if (got < min) {
		_uslub_free_to_slabs(s, c, got, p);
		return 0;
	}
	if (user) {
		for (unsigned int i = 0; i < partial; i++)
			free_mark_clear(s, p[i]);
	} else {
		uintptr_t lo = 0, span = 0, mark = 0;     /* the last slab seen */
		for (unsigned int i = partial; i < got; i++) {
			if ((uintptr_t)p[i] - lo >= span) {
				struct slab *slab = virt_to_slab(p[i]);
				lo = (uintptr_t)slab_obj_base(s, slab);
				span = slab_objects_bytes(slab);
				mark = slab_free_mark(s, slab);
			}
			free_mark_set(s, p[i], mark);
		}
	}
	return got;
}

unsigned int _uslub_refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c, void **p,
				   unsigned int min, unsigned int max, int node)
{
	return refill_objects(s, c, p, min, max, node, false);
}

/*
 * Bulk from the cpu layer (caches without sheaves): pop the cpu freelist,
 * refill it the way the single slow path does, and take a new slab's
 * objects directly. Returns how many of @n were put in p[].
 */
static size_t alloc_bulk_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n, void **p,
			     bool cache_partials, size_t *popped)
{
	size_t i = 0;
	while (i < n) {
		void *obj = c->freelist;
		if (likely(obj) && likely(!cache_hardened(s))) {
			/* the fast path's pop, in a register */
			size_t start = i;
			do {
				p[i++] = obj;
				void *next = get_freepointer_raw(s, obj);
				free_mark_clear(s, obj);
				obj = next;
			} while (obj && i < n);
			c->freelist = obj;          /* ALLOC_FASTPATH, derived */
			*popped += i - start;
			continue;
		}
		if (likely(obj)) {
			/* checked like the fast path: hardened caches only */
			if (unlikely(cache_hardened(s)) && unlikely(!cpu_freelist_ok(s, c, obj))) {
				cpu_freelist_corrupt(s, c);
				continue;
			}
			c->freelist = get_freepointer(s, obj);   /* ALLOC_FASTPATH, derived */
			free_mark_clear(s, obj);
			p[i++] = obj;
			(*popped)++;
			continue;
		}
		/* k > 0: objects a new slab hands out directly, never handed out
		 * before: no mark to clear (slab_free_mark()), left untouched */
		unsigned int want = (unsigned int)MIN(n - i, (size_t)MAX_OBJS_PER_SLAB);
		int k = refill_cpu(s, USLUB_NUMA_NO_NODE, c, cache_partials, home_node(), p + i, want);
		if (k < 0)
			break;
		stat_add(c, ALLOC_SLOWPATH, (unsigned int)k);
		i += (unsigned int)k;
	}
	return i;
}

/*
 * Hand out the top @k objects of @main (k <= size) into p[]: one pass that
 * copies each pointer and clears its free mark. The size goes down first,
 * so a fork child never flushes an object already handed out.
 */
static __always_inline void sheaf_pop_bulk(const struct kmem_cache *s, struct slab_sheaf *main,
					   unsigned int k, void **p)
{
	unsigned int size = main->size - k;
	void **src = main->objects + size;
	const uintptr_t fmo = s->free_mark_offset;   /* a local: the stores below may alias s */
	unsigned int j = 0;
	WRITE_ONCE(main->size, size);
	barrier();
	for (; j + 4 <= k; j += 4) {        /* unrolled: loads first, then stores */
		void *x0 = src[j], *x1 = src[j + 1], *x2 = src[j + 2], *x3 = src[j + 3];
		p[j] = x0;
		p[j + 1] = x1;
		p[j + 2] = x2;
		p[j + 3] = x3;
		if (USLUB_FREE_MARK) {
			*(uintptr_t *)((char *)x0 + fmo) = 0;
			*(uintptr_t *)((char *)x1 + fmo) = 0;
			*(uintptr_t *)((char *)x2 + fmo) = 0;
			*(uintptr_t *)((char *)x3 + fmo) = 0;
		}
	}
	for (; j < k; j++) {
		void *x = src[j];
		p[j] = x;
		if (USLUB_FREE_MARK)
			*(uintptr_t *)((char *)x + fmo) = 0;
	}
}

/*
 * Bulk for sheaf caches: copy out of the main sheaf; when it is empty the
 * sheaf layer swaps in the spare or a full sheaf of the barn (whole
 * sheaves, one barn lock each), else refills main from slabs and hands
 * over one object; if it cannot, the rest comes straight from slabs.
 */
static size_t alloc_bulk_sheaves(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp,
				 size_t n, void **p)
{
	size_t i = 0;
	while (i < n) {
		struct slab_sheaf *main = c->main;
		if (likely(main && main->size)) {
			unsigned int k = (unsigned int)MIN(n - i, (size_t)main->size);
			sheaf_pop_bulk(s, main, k, p + i);
			stat_add(c, ALLOC_PCS, k);
			i += k;
			continue;
		}
		if (_uslub_pcs_replace_empty_main(s, c))
			continue;
		void *obj = _uslub_sheaf_alloc_slow(s, c, gfp);   /* counts ALLOC_PCS */
		if (obj) {
			free_mark_clear(s, obj);
			p[i++] = obj;
			continue;
		}
		unsigned int want = (unsigned int)MIN(n - i, (size_t)MAX_OBJS_PER_SLAB);
		unsigned int k = refill_objects(s, c, p + i, want, want, USLUB_NUMA_NO_NODE, true);
		if (!k)
			break;
		stat_add(c, ALLOC_SLOWPATH, k);
		i += k;
	}
	return i;
}

/*
 * One all-or-nothing attempt on slot @c. On failure, what was taken goes
 * back to the slabs uncounted and the slot's counters are restored, so a
 * failed call counts no allocation and no free: the objects popped from
 * the cpu freelist leave it the way a flush does (loaded -= popped keeps
 * the derived ALLOC_FASTPATH where it was).
 */
static bool alloc_bulk_once(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp,
			    size_t n, void **p, bool cache_partials)
{
	uint64_t slow0 = c->stat[USLUB_ALLOC_SLOWPATH], pcs0 = c->stat[USLUB_ALLOC_PCS];
	size_t popped = 0, got;
	if (s->sheaf_capacity && cache_partials)
		got = alloc_bulk_sheaves(s, c, gfp, n, p);
	else
		got = alloc_bulk_cpu(s, c, n, p, cache_partials && s->cpu_partial_slabs, &popped);
	if (likely(got == n))
		return true;
	WRITE_ONCE(c->loaded, c->loaded - popped);
	WRITE_ONCE(c->stat[USLUB_ALLOC_SLOWPATH], slow0);
	WRITE_ONCE(c->stat[USLUB_ALLOC_PCS], pcs0);
	if (!c->freelist)
		publish_alloc_fastpath(c);   /* exact again for other readers */
	_uslub_free_to_slabs(s, c, got, p);
	return false;
}

static __always_inline void free_bulk(struct kmem_cache *s, size_t n, void **p);

static __noinline int alloc_bulk_slow(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p)
{
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	if (tag)
		uslub_alloc_tag_cur = NULL;
	if (unlikely(cache_bad(s, "uslub_cache_alloc_bulk")))
		return 0;
	if (unlikely(!p && n)) {
		_uslub_report("uslub: %s: alloc_bulk: the array is NULL\n", s->name);
		errno = EINVAL;
		return 0;
	}
	if (unlikely(n > INT_MAX)) {
		_uslub_report("uslub: %s: alloc_bulk of %zu objects (more than INT_MAX)\n", s->name, n);
		errno = EINVAL;
		return 0;
	}
	if (!n)
		return 0;
	if (unlikely(failslab(s, gfp, n)))
		return 0;
	if (unlikely(kmem_cache_debug(s))) {
		/* one at a time through the checked path; all or nothing, and
		 * a failure counts nothing */
		uintptr_t addr = (uintptr_t)__builtin_return_address(0);
		for (size_t i = 0; i < n; i++)
			if (!(p[i] = __debug_slab_alloc(s, gfp & ~USLUB_GFP_ZERO,
							USLUB_NUMA_NO_NODE, addr, false))) {
				while (i--)
					__debug_slab_free(s, virt_to_slab(p[i]), p[i], addr, false);
				errno = ENOMEM;
				return 0;
			}
		struct kmem_cache_cpu tmp, *c = debug_cpu(s, &tmp);
		stat_add(c, ALLOC_SLOWPATH, n);
		debug_cpu_done(s, c, &tmp);
	} else for (;;) {
		bool ok;
		if (likely(this_cpu_is_real() || _uslub_thread_init())) {
			ok = alloc_bulk_once(s, this_cpu(s), gfp, n, p, true);
		} else {
			struct kmem_cache_cpu tmp;
			memset(&tmp, 0, sizeof(tmp));
			ok = alloc_bulk_once(s, &tmp, gfp, n, p, false);
			_uslub_flush_cpu(s, &tmp);
		}
		if (likely(ok))
			break;
		if (!(gfp & USLUB_GFP_NOFAIL)) {
			errno = ENOMEM;
			if (!(gfp & USLUB_GFP_NOWARN) && _uslub_option(USLUB_OPT_VERBOSE))
				_uslub_report("uslub: %s: bulk allocation of %zu failed (out of "
					      "memory)\n", s->name, n);
			return 0;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (unlikely(READ_ONCE(s->hooks) | (gfp & USLUB_GFP_ACCOUNT)) &&
	    unlikely(!post_alloc_hook(s, gfp, n, p, NULL, tag))) {
		free_bulk(s, n, p);                      /* untouched by the hook */
		errno = ENOMEM;
		return 0;
	}
	if (gfp & USLUB_GFP_ZERO)
		for (size_t i = 0; i < n; i++)
			memset(p[i], 0, s->object_size);
	return (int)n;
}
/*
 * The common case without a stack frame: a live sheaf cache without hooks
 * or fault injection, whose main sheaf holds all n (n >= 1, so never a
 * stub of capacity 0). Everything else, checks and reports included, is
 * alloc_bulk_slow()'s.
 */
__public int uslub_cache_alloc_bulk_noprof(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
					   void **p)
{
	const unsigned int off = FASTPATH_OFF_DEAD | FASTPATH_OFF_DEBUG | FASTPATH_OFF_SLUB_DEBUG;
	if (likely(s && p && n) && likely(!(READ_ONCE(s->fastpath_off) & off)) &&
	    likely(!(READ_ONCE(s->hooks) | (gfp & (USLUB_GFP_ACCOUNT | USLUB_GFP_ZERO)))) &&
	    likely(this_cpu_is_real())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		struct slab_sheaf *main = c->main;
		if (likely(main && main->size >= n)) {
			if (unlikely(uslub_alloc_tag_cur))
				uslub_alloc_tag_cur = NULL;     /* no hook takes it */
			sheaf_pop_bulk(s, main, (unsigned int)n, p);
			stat_add(c, ALLOC_PCS, n);
			return (int)n;
		}
	}
	return alloc_bulk_slow(s, gfp, n, p);
}
__public int (uslub_cache_alloc_bulk)(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_cache_alloc_bulk_noprof(s, gfp, n, p);
}

/* ------------------------------------------------------------------------
 * Bulk free: detached freelists
 * ---------------------------------------------------------------------- */
struct detached_freelist {
	struct kmem_cache *s;
	struct slab *slab;
	void *head, *tail;
	unsigned int cnt;
};

#define BULK_LOOKAHEAD 3

/* An object of @s (NULL: of its own slab's cache)? Reports it if not. */
static __always_inline struct slab *bulk_object_slab(struct kmem_cache *s, void *x,
						      struct kmem_cache **cs)
{
	struct slab *slab = virt_to_slab(x);
	struct kmem_cache *k = s ? s : slab ? slab->slab_cache : NULL;
	if (unlikely(!slab || !k || slab->slab_cache != k || !obj_is_valid(k, slab, x))) {
		if (k)
			report_invalid_free(k, x, slab);
		else
			_uslub_report_error("uslub: kfree_bulk: %p is not an object of any cache; "
					    "left alone\n", x);
		return NULL;
	}
	*cs = k;
	return slab;
}

/*
 * Take the last object of p[0..size) and every other object of its slab
 * (scanning down, giving up after BULK_LOOKAHEAD objects of other slabs)
 * into one detached freelist, clearing the entries taken. Returns the
 * length of p[] still to scan. @user: the objects are a user's (counted,
 * and each one's free mark checked and set, so a double free, within p[]
 * or of an object freed before, is refused before any free pointer is
 * written); otherwise they come from the allocator's own caches.
 */
static size_t build_detached_freelist(struct kmem_cache *s, size_t size, void **p,
				      struct detached_freelist *df, bool user)
{
	df->slab = NULL;
	while (size && !df->slab) {
		void *x = p[--size];
		p[size] = NULL;
		if (!x || !(df->slab = bulk_object_slab(s, x, &df->s)))
			continue;
		if (unlikely(kmem_cache_debug(df->s))) {
			__debug_slab_free(df->s, df->slab, x, 0, user);  /* checked, one by one */
			df->slab = NULL;
			continue;
		}
		if (user) {
			if (free_mark_test(df->s, x, slab_free_mark(df->s, df->slab))) {
				report_double_free(df->s, df->slab, x);
				df->slab = NULL;
				continue;
			}
			free_mark_set(df->s, x, slab_free_mark(df->s, df->slab));
		}
		/* the tail's free pointer is written by whoever frees the group */
		df->head = df->tail = x;
		df->cnt = 1;
	}
	if (!df->slab)
		return 0;

	char *base = slab_obj_base(df->s, df->slab);
	unsigned long bytes = slab_objects_bytes(df->slab);
	uintptr_t mark = slab_free_mark(df->s, df->slab);
	unsigned int lookahead = BULK_LOOKAHEAD;
	size_t first_skipped = 0;
	for (size_t i = size; i-- > 0;) {
		void *x = p[i];
		if (!x)
			continue;
		uintptr_t off = (uintptr_t)x - (uintptr_t)base;
		if (off < bytes) {
			p[i] = NULL;
			if (unlikely(!obj_is_valid(df->s, df->slab, x))) {
				report_invalid_free(df->s, x, df->slab);
			} else if (user && free_mark_test(df->s, x, mark)) {
				report_double_free(df->s, df->slab, x);
			} else {
				if (user)
					free_mark_set(df->s, x, mark);
				set_freepointer(df->s, x, df->head);
				df->head = x;
				df->cnt++;
			}
			continue;
		}
		if (!first_skipped)
			first_skipped = i + 1;
		if (!--lookahead)
			break;
	}
	return first_skipped;
}

/* Free one detached freelist of user objects: onto the cpu freelist when
 * it is the cpu slab's, else to the slab with one CAS. */
static void free_detached_user(struct detached_freelist *df)
{
	struct kmem_cache *s = df->s;
	if (likely(this_cpu_is_real() || _uslub_thread_init())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if (df->slab == c->slab) {
			/* build_detached_freelist() already refused objects
			 * that were free (their free mark) */
			set_freepointer(s, df->tail, c->freelist);
			c->freelist = df->head;
			stat_add(c, FREE_FASTPATH, df->cnt);
			return;
		}
		if (__slab_free(s, df->slab, df->head, df->tail, df->cnt, c,
				s->cpu_partial_slabs != 0))
			stat_add(c, FREE_SLOWPATH, df->cnt);
		return;
	}
	struct kmem_cache_cpu c;
	memset(&c, 0, sizeof(c));
	if (__slab_free(s, df->slab, df->head, df->tail, df->cnt, &c, false))
		stat_add(&c, FREE_SLOWPATH, df->cnt);
	fold_stats(s, &c);
}

void _uslub_free_to_slabs(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n, void **p)
{
	struct detached_freelist df;
	while (n) {
		n = build_detached_freelist(s, n, p, &df, false);
		if (df.slab)
				__slab_free(df.s, df.slab, df.head, df.tail, df.cnt, c, false);
	}
}

/*
 * Sheaf caches: p[] goes to the main sheaf, validated per slab. The slabs
 * of the last few runs (stretches of pointers into one slab) are kept in
 * locals: a pointer into the current one costs a range and object-start
 * test (one rotate and compare for power-of-two sizes, the reciprocal
 * otherwise) and the free mark's test and set before it is stored; one
 * into another recent slab switches to it; only a slab not seen lately
 * costs a descriptor lookup (ours, this cache's, the local node). A full
 * main is exchanged for the spare or, whole, for an empty sheaf of the
 * barn (_uslub_pcs_replace_full_main(), once per sheaf). Double frees are
 * reported here; the rest (NULLs dropped) is moved to the front of p[] and
 * counted in the return value: other nodes, invalid pointers (reported by
 * the detached freelists) and, once the barn is full, everything not yet
 * stored. Objects are stored before the size that covers them is
 * published (fork safety, as in sheaf_push()).
 */
struct bulk_run {
	uintptr_t base, bytes, objects, mark;   /* objects: power-of-two sizes */
};
#define BULK_RUNS 4

static __always_inline size_t free_to_pcs_bulk(struct kmem_cache *s, struct kmem_cache_cpu *c,
					       size_t n, void **p, const bool pow2)
{
	/* locals: the stores into objects and sheaves may alias s and c */
	const uintptr_t fmo = pow2 ? 0 : s->free_mark_offset;   /* pow2: the mark at word 0 */
	const unsigned int shift = pow2 ? (unsigned int)__builtin_ctz(s->size) : 0;
	const uintptr_t stride = s->size;
	const uint64_t recip = s->reciprocal_size;
	struct slab_sheaf *main = c->main;
	size_t size = main ? main->size : 0, cap = main ? main->capacity : 0;
	size_t first = size;                   /* FREE_PCS: size - first per sheaf */
	unsigned long pushed = 0;
	size_t i = 0, left = 0;
	struct bulk_run runs[BULK_RUNS];       /* recent slabs, by address */
	const unsigned int run_shift = PAGE_SHIFT + s->order;
	for (int k = 0; k < BULK_RUNS; k++)
		runs[k].base = runs[k].bytes = 0;     /* empty ranges */
	/* the current run's slab: an empty range until the first lookup */
	uintptr_t base = 0, objects = 0, bytes = 0, mark = 0;

	while (i < n) {
		if (unlikely(size == cap)) {
			/* main is full (or there is none): publish it, then the
			 * spare, or a whole-sheaf exchange at the barn */
			if (cap) {                      /* never a stub's (capacity 0) */
				barrier();              /* a fork child flushes objects[0, size) */
				WRITE_ONCE(main->size, (unsigned int)size);
				pushed += size - first;
			}
			main = _uslub_pcs_replace_full_main(s, c);
			if (!main)
				goto rest;
			first = size = main->size;
			cap = main->capacity;
		}
		size_t end = i + MIN(n - i, cap - size);
		void **dst = main->objects;
		while (i < end) {
			void *x = p[i];
			uintptr_t off = (uintptr_t)x - base;
			if (pow2 ? unlikely(((off >> shift) | (off << (64 - shift))) >= objects) :
				   unlikely(off >= bytes ||
					    slab_offset_to_index(off, recip) * stride != off)) {
				/* not an object start of the current slab */
				if (off < bytes) {
					p[left++] = x;          /* interior: the detached path reports it */
					i++;
					continue;
				}
				if (!x) {
					i++;
					continue;
				}
				/* a recent slab (slabs are naturally aligned: one
				 * entry per slab of the preferred order), else a
				 * descriptor lookup */
				struct bulk_run *r = &runs[((uintptr_t)x >> run_shift) % BULK_RUNS];
				if ((uintptr_t)x - r->base >= r->bytes) {
					struct slab *slab = virt_to_slab(x);
					if (unlikely(!slab || slab->slab_cache != s ||
						     slab_nid(slab) != home_node())) {
						p[left++] = x;  /* foreign, another cache's or node's */
						i++;
						continue;
					}
					r->base = (uintptr_t)slab_obj_base(s, slab);
					r->bytes = slab_objects_bytes(slab);
					r->objects = r->bytes >> shift;
					r->mark = slab_free_mark(s, slab);
				}
				base = r->base;
				bytes = r->bytes;
				objects = r->objects;
				mark = r->mark;
				continue;                       /* x again, in its slab */
			}
			uintptr_t *m = (uintptr_t *)((char *)x + fmo);
			if (USLUB_FREE_MARK) {
				if (unlikely(*m == mark)) {
					barrier();
					WRITE_ONCE(main->size, (unsigned int)size);   /* where the report looks */
					report_double_free(s, virt_to_slab(x), x);
					i++;
					continue;
				}
				*m = mark;
			}
			dst[size++] = x;
			i++;
		}
	}
	if (cap) {
		barrier();
		WRITE_ONCE(main->size, (unsigned int)size);
		pushed += size - first;
	}
	stat_add(c, FREE_PCS, pushed);
	return left;
rest:
	/* no room without the slabs: the rest goes to the detached path */
	memmove(p + left, p + i, (n - i) * sizeof(void *));
	stat_add(c, FREE_PCS, pushed);
	return left + (n - i);
}

static __noinline void free_bulk_detached(struct kmem_cache *s, size_t n, void **p);

/* The two instances of free_to_pcs_bulk(), each with the detached path
 * for what it left: entered by a tail call from uslub_cache_free_bulk().
 * The first is for power-of-two sizes with the free mark at word 0. */
static __noinline void free_bulk_pcs_pow2(struct kmem_cache *s, struct kmem_cache_cpu *c,
					  size_t n, void **p)
{
	size_t left = free_to_pcs_bulk(s, c, n, p, true);
	if (unlikely(left))
		free_bulk_detached(s, left, p);
}

static __noinline void free_bulk_pcs(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n,
				     void **p)
{
	size_t left = free_to_pcs_bulk(s, c, n, p, false);
	if (unlikely(left))
		free_bulk_detached(s, left, p);
}

static size_t free_bulk_to_sheaves(struct kmem_cache *s, size_t n, void **p)
{
	if (!(this_cpu_is_real() || _uslub_thread_init()))
		return n;
	return free_to_pcs_bulk(s, this_cpu(s), n, p, false);
}

/*
 * The objects of the calling thread's cpu slab go straight onto the cpu
 * freelist, checked the way the free fast path checks one (range, object
 * start, the free mark), with two stores each; the rest (NULLs dropped) is
 * moved to the front of p[] for the detached freelists, and counted in
 * the return value. A cache whose fast paths are off has an empty range
 * here, so nothing is taken.
 */
static size_t free_bulk_to_cpu(struct kmem_cache *s, size_t n, void **p)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	uintptr_t lo = (uintptr_t)c->slab_addr, bytes = c->slab_bytes;
	void *head = c->freelist;
	unsigned long k = 0;
	size_t left = 0;
	if (!bytes)
		return n;
	for (size_t i = 0; i < n; i++) {
		void *x = p[i];
		uintptr_t off = (uintptr_t)x - lo;
		if (off < bytes &&
		    slab_offset_to_index(off, s->reciprocal_size) * (uintptr_t)s->size == off &&
		    !free_mark_test(s, x, c->free_mark)) {
			free_mark_set(s, x, c->free_mark);
			set_freepointer_raw(s, x, head);
			head = x;
			k++;
		} else if (x) {
			p[left++] = x;
		}
	}
	c->freelist = head;
	stat_add(c, FREE_FASTPATH, k);
	return left;
}

/* The free hook of every valid object in p[] that has one (invalid ones
 * are reported later, by the paths that free). */
static void free_bulk_hooks(struct kmem_cache *s, size_t n, void **p)
{
	for (size_t i = 0; i < n; i++) {
		void *x = p[i];
		struct slab *slab;
		if (!x || !(slab = virt_to_slab(x)))
			continue;
		struct kmem_cache *cs = READ_ONCE(slab->slab_cache);
		if (cs && (!s || cs == s) && READ_ONCE(cs->hooks) && obj_is_valid(cs, slab, x))
			free_hook(cs, slab, x);
	}
}

static void free_bulk_slow(struct kmem_cache *s, size_t n, void **p);

/* The common case: a live sheaf cache without hooks, on a thread with a
 * cpu area, straight to its instance of free_to_pcs_bulk(). */
__public void uslub_cache_free_bulk(struct kmem_cache *s, size_t n, void **p)
{
	if (likely(s && p && n) && likely(!(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD)) &&
	    likely(!READ_ONCE(s->hooks)) && likely(s->sheaf_capacity) &&
	    likely(this_cpu_is_real())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if ((s->size & (s->size - 1)) == 0 && !s->free_mark_offset)
			free_bulk_pcs_pow2(s, c, n, p);
		else
			free_bulk_pcs(s, c, n, p);
		return;
	}
	free_bulk_slow(s, n, p);
}

static __noinline void free_bulk_slow(struct kmem_cache *s, size_t n, void **p)
{
	if (unlikely(!p) || !n)
		return;
	if (s && cache_bad(s, "uslub_cache_free_bulk"))   /* NULL: each object's cache */
		return;
	if (!s || READ_ONCE(s->hooks))
		free_bulk_hooks(s, n, p);
	free_bulk(s, n, p);
}

/* What the per-CPU layer did not take: detached freelists, which free
 * each group of one slab with one CAS, or report the invalid pointers. */
static __noinline void free_bulk_detached(struct kmem_cache *s, size_t n, void **p)
{
	struct detached_freelist df;
	while (n) {
		n = build_detached_freelist(s, n, p, &df, true);
		if (df.slab)
			free_detached_user(&df);
	}
}

static __always_inline void free_bulk(struct kmem_cache *s, size_t n, void **p)
{
	size_t left = n;
	if (s && s->sheaf_capacity)
		left = free_bulk_to_sheaves(s, n, p);
	else if (s && this_cpu_is_real())
		left = free_bulk_to_cpu(s, n, p);
	if (left)
		free_bulk_detached(s, left, p);
}

/* ------------------------------------------------------------------------
 * Cache geometry (SLUB's calculate_sizes / calculate_order)
 * ---------------------------------------------------------------------- */
static unsigned int calculate_alignment(unsigned int flags, size_t align, size_t size)
{
	size_t a = MAX(align, sizeof(void *));
	if (flags & USLUB_HWCACHE_ALIGN) {
		size_t ralign = USLUB_CACHELINE;
		while (size <= ralign / 2)
			ralign /= 2;
		a = MAX(a, ralign);
	}
	return (unsigned int)ALIGN_UP(a, sizeof(void *));
}

/* Lowest order in [min_order, max_order] wasting at most 1/fract of the
 * slab; max_order + 1 if none does. */
static unsigned int calc_slab_order(size_t size, unsigned int min_order,
				    unsigned int max_order, unsigned int fract)
{
	unsigned int order;
	for (order = min_order; order <= max_order; order++) {
		size_t bytes = PAGE_SIZE << order;
		if (bytes % size <= bytes / fract)
			break;
	}
	return order;
}

static int calculate_order(size_t size)
{
	unsigned int max_order = (unsigned int)MIN(_uslub_option(USLUB_OPT_MAX_ORDER), MAX_PAGE_ORDER);
	unsigned int min_order = (unsigned int)MIN(_uslub_option(USLUB_OPT_MIN_ORDER), max_order);
	size_t min_objects = (size_t)_uslub_option(USLUB_OPT_MIN_OBJECTS);

	if (!min_objects) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		min_objects = 4 * (fls_u((unsigned long)(cpus > 0 ? cpus : 1)) + 1);
	}
	size_t max_objects = (PAGE_SIZE << max_order) / size;
	min_objects = MAX(MIN(min_objects, max_objects), 1);
	min_order = MAX(min_order, get_order(min_objects * size));
	if ((PAGE_SIZE << min_order) / size > MAX_OBJS_PER_SLAB)
		return (int)get_order(size * MAX_OBJS_PER_SLAB) - 1;
	for (unsigned int fract = 16; fract > 1; fract /= 2) {
		unsigned int order = calc_slab_order(size, min_order, max_order, fract);
		if (order <= max_order)
			return (int)order;
	}
	unsigned int order = get_order(size);
	return order <= MAX_PAGE_ORDER ? (int)order : -1;
}

/* Objects of @size in a slab of @order. A left red zone (red_left_pad) is
 * part of each stride: object i's is the tail of stride i-1, object 0's
 * the slab's first bytes, so n objects still need n * size bytes. */
static unsigned int order_objects(unsigned int order, size_t size)
{
	return (unsigned int)MIN((PAGE_SIZE << order) / size, MAX_OBJS_PER_SLAB);
}

/* Fill in the layout of @s; false if the object cannot fit a slab. */
static bool calculate_sizes(struct kmem_cache *s, size_t object_size, size_t align,
			    const struct uslub_cache_args *args)
{
	size_t size = ALIGN_UP(object_size, sizeof(void *));
	unsigned int dbg = s->debug & USLUB_DBG_PATHS ? s->debug : 0;
	s->align = calculate_alignment(s->flags, align, object_size);
	s->red_left_pad = s->track_offset = s->orig_size_offset = 0;
	if ((dbg & USLUB_DBG_Z) && size == object_size)
		size += sizeof(void *);      /* a right red zone of at least a word */
	if (dbg & (USLUB_DBG_Z | USLUB_DBG_P)) {
		/* poison fills the object and red zones frame it: the free
		 * pointer goes after the right red zone */
		s->offset = (unsigned int)size;
		size += sizeof(void *);
	} else if (args && args->use_freeptr_offset) {
		/* the caller keeps the free pointer inside the object */
		s->offset = args->freeptr_offset;
	} else if (s->ctor) {
		/* the constructed state must survive: free pointer after it */
		s->offset = (unsigned int)size;
		size += sizeof(void *);
	} else {
		/* mid-object, away from the ends overflows tend to hit; never
		 * word 0, which holds the free mark (8-byte objects: the free
		 * pointer goes after the object) */
		s->offset = (unsigned int)ALIGN_DOWN(object_size / 2, sizeof(void *));
		if (!dbg && USLUB_FREE_MARK && !s->offset) {
			s->offset = sizeof(void *);
			size = MAX(size, 2 * sizeof(void *));
		}
	}
	s->free_mark_offset = 0;
	if (!dbg && USLUB_FREE_MARK && (s->ctor || (args && args->use_freeptr_offset))) {
		/* the free mark: word 0, or after the object where its
		 * contents must survive a free (ctor, a caller-placed free
		 * pointer); those caches' inline fast paths are off */
		s->free_mark_offset = (unsigned int)size;
		size += sizeof(void *);
	}
	if (dbg & USLUB_DBG_U) {
		s->track_offset = (unsigned int)size;
		size += 2 * sizeof(struct track);
	}
	if (dbg & USLUB_DBG_Z) {
		s->orig_size_offset = (unsigned int)size;
		size += sizeof(void *);
	}
	s->inuse = (unsigned int)size;
	size = ALIGN_UP(size, s->align);
	if (dbg & USLUB_DBG_Z) {
		/* the left red zone: the tail of the previous stride (of the
		 * slab's head for object 0), keeping objects aligned */
		s->red_left_pad = (unsigned int)ALIGN_UP(sizeof(void *), s->align);
		size += s->red_left_pad;
	}
	if (size > (PAGE_SIZE << MAX_PAGE_ORDER))
		return false;
	int order = calculate_order(size);
	if (order < 0)
		return false;
	s->size = (unsigned int)size;
	s->object_size = (unsigned int)object_size;
	s->order = (unsigned int)order;
	s->objects = order_objects(s->order, size);
	s->min_order = get_order(size);
	if (s->min_order > s->order)
		s->min_order = s->order;
	s->min_objects_fallback = order_objects(s->min_order, size);
	s->reciprocal_size = slab_reciprocal(size);

	unsigned int lg = fls_u(size) - 1;
	s->min_partial = MIN(10u, MAX(5u, lg / 2));
	if (!_uslub_option(USLUB_OPT_CPU_PARTIAL))
		s->cpu_partial = 0;
	else if (size >= PAGE_SIZE)
		s->cpu_partial = 2;
	else if (size >= 1024)
		s->cpu_partial = 6;
	else if (size >= 256)
		s->cpu_partial = 13;
	else
		s->cpu_partial = 30;
	s->cpu_partial_slabs = (s->cpu_partial * 2 + s->objects - 1) / s->objects;
	return true;
}

/*
 * Where the per-object extensions of @s go (seed 003), decided once for
 * its preferred slab order: the slab's leftover when an array of them fits
 * there (case 1), else each object's alignment padding when an extension
 * fits after the object's used bytes (case 2), else a separate array per
 * slab. A cache needs them when it is accounted or profiling is on;
 * otherwise it has none until a USLUB_GFP_ACCOUNT allocation asks (then
 * arrays, on demand). One object charges its stride plus the extension
 * bytes that live outside the slab.
 */
static void calculate_obj_ext(struct kmem_cache *s, unsigned int flags)
{
	const unsigned int ext = sizeof(struct slabobj_ext);
	s->ext_stride = ext;
	s->ext_offset = 0;
	s->ext_bytes = ext;
	s->hooks = 0;
	s->ext_placement = USLUB_OBJ_EXT_NONE;
	if (!(flags & SLAB_NO_OBJ_EXT)) {
		if (flags & USLUB_ACCOUNT)
			s->hooks |= HOOK_ACCOUNT;
		if (_uslub_profiling)
			s->hooks |= HOOK_PROFILE;
	}
	if (s->hooks) {
		size_t slab_bytes = PAGE_SIZE << s->order;
		size_t used = ALIGN_UP((size_t)s->objects * s->size, sizeof(void *));
		size_t pad_at = ALIGN_UP((size_t)s->inuse, sizeof(void *));
		if (s->red_left_pad + used + (size_t)s->objects * ext <= slab_bytes) {
			s->ext_placement = USLUB_OBJ_EXT_LEFTOVER;
			s->ext_bytes = 0;
		} else if (!(s->debug & USLUB_DBG_P) && pad_at + ext <= s->size - s->red_left_pad) {
			s->ext_placement = USLUB_OBJ_EXT_PADDING;
			s->ext_stride = s->size;
			s->ext_offset = (unsigned int)pad_at;
			s->ext_bytes = 0;
		} else {
			s->ext_placement = USLUB_OBJ_EXT_ARRAY;
		}
		s->fastpath_off |= FASTPATH_OFF_HOOKS;
	}
	s->charge = s->size + s->ext_bytes;
}

/* ------------------------------------------------------------------------
 * Cache creation and destruction
 * ---------------------------------------------------------------------- */
static int take_slot(void)
{
	for (int i = 0; i < USLUB_MAX_CACHES; i++)
		if (i != CACHE_SLOT_DEAD && !(cache_slots[i / 64] & (1ull << (i % 64)))) {
			cache_slots[i / 64] |= 1ull << (i % 64);
			return i;
		}
	return -1;
}

static void release_slot(int i)
{
	cache_slots[i / 64] &= ~(1ull << (i % 64));
}

/* Point slot @arg of the cpu area at @base at the empty sheaf (its first
 * use: a flushed slot already does). */
static void slot_init_main(char *base, void *arg)
{
	struct kmem_cache_cpu *c = (struct kmem_cache_cpu *)(base + *(int *)arg * CPU_SLOT_SIZE);
	if (!c->main)
		WRITE_ONCE(c->main, EMPTY_SHEAF);
}

void _uslub_cpu_area_init(char *base)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	for (int i = 0; i < USLUB_MAX_CACHES; i++)
		if (i == CACHE_SLOT_DEAD || (cache_slots[i / 64] & (1ull << (i % 64))))
			slot_init_main(base, &i);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void init_node(struct kmem_cache_node *n)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->list_lock, NULL);
	INIT_LIST_HEAD(&n->partial);
	INIT_LIST_HEAD(&n->isolated);
}

static void init_cache(struct kmem_cache *s, const char *name, unsigned int flags,
		       void (*ctor)(void *), int slot)
{
	s->flags = flags;
	s->ctor = ctor;
	s->index = slot;
	s->fp_secret = (uintptr_t)seed64() | 1;
	s->free_mark = (uintptr_t)seed64() | 1;      /* never 0: a live object's */
	s->cpu_offset = (unsigned int)slot * CPU_SLOT_SIZE;
	snprintf(s->name, sizeof(s->name), "%s", name);
	INIT_LIST_HEAD(&s->list);
}

static void create_boot_cache(struct kmem_cache *s, const char *name, size_t size,
			      struct kmem_cache_node *nodes)
{
	int slot = take_slot();
	slot_init_main(_uslub_cpu_empty, &slot);      /* no thread has an area yet */
	init_cache(s, name, USLUB_HWCACHE_ALIGN | SLAB_NO_OBJ_EXT, NULL, slot);
	calculate_sizes(s, size, 0, NULL);
	calculate_obj_ext(s, s->flags);
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		init_node(&nodes[i]);
		s->node[i] = &nodes[i];
	}
	list_add_tail(&s->list, &_uslub_slab_caches);
}

/* Called once from _uslub_init(). */
__internal void _uslub_slub_init(void);
void _uslub_slub_init(void)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	int dead = CACHE_SLOT_DEAD;
	slot_init_main(_uslub_cpu_empty, &dead);
	create_boot_cache(&boot_kmem_cache, "kmem_cache", sizeof(struct kmem_cache), boot_nodes[0]);
	create_boot_cache(&boot_kmem_cache_node, "kmem_cache_node",
			  sizeof(struct kmem_cache_node), boot_nodes[1]);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static __cold struct kmem_cache *create_error(const char *name, const char *why)
{
	_uslub_report("uslub: cannot create cache \"%s\": %s\n", name ? name : "(null)", why);
	errno = EINVAL;
	return NULL;
}

static void free_cache_struct(struct kmem_cache *s)
{
	for (int i = 0; i < MAX_NUMNODES; i++)
		if (s->node[i]) {
			pthread_mutex_destroy(&s->node[i]->list_lock);
			uslub_cache_free(&boot_kmem_cache_node, s->node[i]);
		}
	uslub_cache_free(&boot_kmem_cache, s);
}

/* The slub_debug letters of a new cache: its debug flags, plus what
 * USLUB_DEBUG says for its name. Poisoning is off for a cache with a
 * constructor (the constructed state must survive a free), as in SLUB. */
static unsigned int cache_debug_flags(const char *name, unsigned int flags, bool ctor)
{
	unsigned int d = _uslub_debug_flags(_uslub_option_str(USLUB_OPT_DEBUG), name);
	if (flags & USLUB_CONSISTENCY_CHECKS)
		d |= USLUB_DBG_F;
	if (flags & USLUB_RED_ZONE)
		d |= USLUB_DBG_Z;
	if (flags & USLUB_POISON)
		d |= USLUB_DBG_P;
	if (flags & USLUB_STORE_USER)
		d |= USLUB_DBG_U;
	if (flags & USLUB_TRACE)
		d |= USLUB_DBG_T;
	if (flags & USLUB_FAILSLAB)
		d |= USLUB_DBG_A;
	if (ctor)
		d &= ~USLUB_DBG_P;
	return d;
}

static bool want_hardened(unsigned int flags)
{
	return (flags & USLUB_HARDENED_FREELIST) || _uslub_option(USLUB_OPT_FREELIST_HARDENED) == 1;
}

static bool want_random(unsigned int flags)
{
	if (flags & USLUB_NO_RANDOM_FREELIST)
		return false;
	return (flags & USLUB_RANDOM_FREELIST) || _uslub_option(USLUB_OPT_FREELIST_RANDOM);
}

struct kmem_cache *_uslub_cache_create(const char *name, size_t size,
				       const struct uslub_cache_args *args, unsigned int flags)
{
	static const struct uslub_cache_args none;
	if (!args)
		args = &none;
	size_t align = args->align;
	if (!name || !*name)
		return create_error(name, "name is NULL or empty");
	if (!size)
		return create_error(name, "size is 0");
	if (align && !IS_POW2(align))
		return create_error(name, "align is not a power of two");
	if (align > (PAGE_SIZE << MAX_PAGE_ORDER))
		return create_error(name, "align is larger than the largest slab (2 MiB)");
	if (size > (PAGE_SIZE << MAX_PAGE_ORDER))
		return create_error(name, "size is larger than the largest slab (2 MiB)");
	if ((flags & USLUB_RANDOM_FREELIST) && (flags & USLUB_NO_RANDOM_FREELIST))
		return create_error(name, "both RANDOM_FREELIST and NO_RANDOM_FREELIST");
	if (args->use_freeptr_offset &&
	    (args->freeptr_offset % sizeof(void *) || size < sizeof(void *) ||
	     args->freeptr_offset > size - sizeof(void *)))
		return create_error(name, "freeptr_offset is not word aligned inside the object");
	if ((size_t)args->useroffset + args->usersize > size)
		return create_error(name, "usercopy window (useroffset + usersize) exceeds the object");

	struct kmem_cache tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (want_hardened(flags))
		flags |= SLAB_HARDENED;
	init_cache(&tmp, name, flags, args->ctor, 0);
	tmp.fastpath_off = (flags & SLAB_HARDENED) ? FASTPATH_OFF_HARDENED : 0;
	if (!(flags & SLAB_NO_OBJ_EXT))
		tmp.debug = cache_debug_flags(name, flags, args->ctor != NULL);
	if (!calculate_sizes(&tmp, size, align, args))
		return create_error(name, "object (with alignment) is larger than the largest slab");
	if ((tmp.debug & USLUB_DBG_O) && (tmp.debug & (USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U)) &&
	    get_order(tmp.size) > get_order(size)) {
		/* O, as SLUB's rule: no metadata (red zones, poison, owners)
		 * where it raises the minimum slab order; F and T stay */
		tmp.debug &= ~(USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U);
		calculate_sizes(&tmp, size, align, args);
	}
	if (tmp.free_mark_offset)
		tmp.fastpath_off |= FASTPATH_OFF_MARK;
	if (tmp.debug & USLUB_DBG_PATHS) {
		/* every alloc and free on the checked paths: no cpu slabs,
		 * no cpu partial slabs, no sheaves */
		tmp.fastpath_off |= FASTPATH_OFF_SLUB_DEBUG;
		tmp.cpu_partial = tmp.cpu_partial_slabs = 0;
		flags |= SLAB_NO_SHEAVES;
		tmp.flags = flags;
	}
	calculate_obj_ext(&tmp, flags);
	if (!(flags & SLAB_NO_OBJ_EXT))
		tmp.fastpath_off |= _uslub_failslab_cache_fastpath_off(&tmp);
	tmp.useroffset = args->useroffset;
	tmp.usersize = args->usersize;

	/* Allocate outside slab_mutex: the allocation slow path may take
	 * thread_lock, which ranks before slab_mutex. */
	struct kmem_cache *s = uslub_cache_alloc_noprof(&boot_kmem_cache, USLUB_GFP_ZERO);
	if (!s)
		goto fail;
	*s = tmp;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		s->node[i] = uslub_cache_alloc_noprof(&boot_kmem_cache_node, 0);
		if (!s->node[i])
			goto fail;
		init_node(s->node[i]);
	}
	if (want_random(flags) && s->objects > 1 && !init_random_seq(s))
		goto fail;
	if (_uslub_sheaf_cache_init(s, args->sheaf_capacity))
		goto fail;
	if (s->sheaf_capacity && _uslub_option(USLUB_OPT_FREELIST_HARDENED) == 2) {
		/* hardening by default where it is nearly free: the inline
		 * sheaf paths never read a free pointer */
		flags |= SLAB_HARDENED;
		s->fastpath_off |= FASTPATH_OFF_HARDENED;
	}
	/* thread_lock first (its rank): the new slot's main is set in every
	 * cpu area before any thread can use the cache */
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	int slot = take_slot();
	if (slot >= 0)
		_uslub_for_each_cpu_area(slot_init_main, &slot);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);   /* out of order: fine */
	if (slot < 0) {
		uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
		_uslub_report("uslub: cannot create cache \"%s\": all %d cache slots in use\n",
			      name, USLUB_MAX_CACHES - 1);
		_uslub_sheaf_cache_destroy(s);
		goto fail;
	}
	uintptr_t secret = s->fp_secret, mark = s->free_mark;
	init_cache(s, name, flags, args->ctor, slot);
	s->fp_secret = secret;
	s->free_mark = mark;
	list_add_tail(&s->list, &_uslub_slab_caches);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (_uslub_option(USLUB_OPT_VERBOSE))
		_uslub_report("uslub: cache %s: object %u size %u align %u offset %u order %u "
			      "objects %u min_partial %u cpu_partial_slabs %u sheaf_capacity %u "
			      "random %d\n", s->name, s->object_size, s->size, s->align, s->offset,
			      s->order, s->objects, s->min_partial, s->cpu_partial_slabs,
			      s->sheaf_capacity, s->random_seq != NULL);
	return s;
fail:
	if (s) {
		free_random_seq(s);
		free_cache_struct(s);
	}
	errno = ENOMEM;
	return NULL;
}

__public struct kmem_cache *uslub_cache_create_args(const char *name, size_t size,
						    const struct uslub_cache_args *args,
						    unsigned int flags)
{
	if (flags & ~USLUB_CACHE_FLAGS_VALID)
		return create_error(name, "unknown flags");
	_uslub_init();
	return _uslub_cache_create(name, size, args, flags);
}

__public struct kmem_cache *uslub_cache_create(const char *name, size_t size, size_t align,
					       unsigned int flags, void (*ctor)(void *))
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.align = align;
	args.ctor = ctor;
	return uslub_cache_create_args(name, size, &args, flags);
}

/* Release the empty slabs of a node partial list (all of them) and sort
 * the rest fullest first, so allocations fill them and the emptiest drain. */
static int shrink_node(struct kmem_cache *s, struct kmem_cache_node *n, struct kmem_cache_cpu *c)
{
	enum { BUCKETS = 32 };
	struct list_head buckets[BUCKETS];
	struct slab *discard = NULL;
	struct list_head *pos, *tmp;
	int freed = 0;

	for (int i = 0; i < BUCKETS; i++)
		INIT_LIST_HEAD(&buckets[i]);
	node_lock(n);
	list_for_each_safe(pos, tmp, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		uint64_t cnt = slab_counters(slab);
		unsigned int free = FC_OBJECTS(cnt) - FC_INUSE(cnt);
		if (!FC_INUSE(cnt)) {
			remove_partial(n, slab);
			slab->next = discard;
			discard = slab;
		} else {
			list_del(&slab->slab_list);
			list_add_tail(&slab->slab_list, &buckets[MIN(free, BUCKETS) - 1]);
		}
	}
	for (int i = 0; i < BUCKETS; i++)
		while (!list_empty(&buckets[i])) {
			struct list_head *e = buckets[i].next;
			list_del(e);
			list_add_tail(e, &n->partial);
		}
	node_unlock(n);
	while (discard) {
		struct slab *slab = discard;
		discard = slab->next;
		discard_slab(s, slab);
		stat(c, FREE_SLAB);
		freed++;
	}
	return freed;
}

__public int uslub_cache_shrink(struct kmem_cache *s)
{
	if (cache_bad(s, "uslub_cache_shrink"))
		return -1;
	struct kmem_cache_cpu tmp, *c = &tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (this_cpu_is_real()) {
		/* folding moves counters between places readers sum under
		 * thread_lock: hold it so no reader sees them twice or never */
		c = this_cpu(s);
		uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
		_uslub_flush_cpu(s, c);
		uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	}
	if (s->sheaf_capacity)
		_uslub_sheaf_cache_shrink(s, c);
	int freed = 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		freed += shrink_node(s, get_node(s, i), c);
	if (c == &tmp)
		fold_stats(s, c);
	return freed;
}

struct count_live {
	struct kmem_cache *s;
	unsigned long slabs, objects;
};

static void count_live_cb(struct page *head, void *arg)
{
	struct count_live *cl = arg;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != cl->s)
		return;
	cl->slabs++;
	cl->objects += FC_INUSE(slab_counters(slab));
}

/* Debug caches at destroy: isolated slabs with no object in use go. */
static void discard_isolated(struct kmem_cache *s)
{
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		struct kmem_cache_node *n = get_node(s, i);
		struct slab *discard = NULL;
		struct list_head *pos, *tmp;
		node_lock(n);
		list_for_each_safe(pos, tmp, &n->isolated) {
			struct slab *slab = list_entry(pos, struct slab, slab_list);
			if (FC_INUSE(slab_counters(slab)))
				continue;
			list_del(&slab->slab_list);
			n->nr_isolated--;
			slab->next = discard;
			discard = slab;
		}
		node_unlock(n);
		while (discard) {
			struct slab *slab = discard;
			discard = slab->next;
			discard_slab(s, slab);
		}
	}
}

/* Debug caches: the objects left at destroy, with their alloc owners (the
 * first LEAKS_LISTED of them). */
#define LEAKS_LISTED 32
struct list_leaks {
	struct kmem_cache *s;
	unsigned long seen;
};

static void list_leaks_cb(struct page *head, void *arg)
{
	struct list_leaks *ll = arg;
	struct kmem_cache *s = ll->s;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != s)
		return;
	uint64_t cnt = slab_counters(slab);
	unsigned int objects = FC_OBJECTS(cnt), k = 0;
	uint64_t seen[(MAX_OBJS_PER_SLAB + 64) / 64];
	memset(seen, 0, sizeof(uint64_t) * ((objects + 63) / 64));
	for (void *p = fl_ptr(s, slab, FC_FREELIST(cnt)); p && k++ < objects; p = get_freepointer(s, p)) {
		if (!obj_is_valid(s, slab, p))
			break;
		unsigned int idx = obj_to_index(s, slab, p);
		seen[idx / 64] |= 1ull << (idx % 64);
	}
	for (unsigned int i = 0; i < objects; i++)
		if (!(seen[i / 64] & (1ull << (i % 64))) && ll->seen++ < LEAKS_LISTED)
			_uslub_debug_print_leak(s, slab, index_to_obj(s, slab, i));
}

/*
 * Destroyed caches: the struct stays allocated in a FIFO of the last
 * QUARANTINE destroyed ones, marked FASTPATH_OFF_DEAD, its cpu slot the
 * dead one (always empty) and its nodes freed, so that an allocation,
 * free, validate, shrink or second destroy through a stale pointer is
 * reported instead of reaching freed memory; older ones are freed.
 */
#define QUARANTINE 64
static struct kmem_cache *quarantine[QUARANTINE];   /* slab_mutex */
static unsigned int quarantine_next;                 /* slab_mutex */

static void kill_cache(struct kmem_cache *s)
{
	for (int i = 0; i < MAX_NUMNODES; i++)
		if (s->node[i]) {
			pthread_mutex_destroy(&s->node[i]->list_lock);
			uslub_cache_free(&boot_kmem_cache_node, s->node[i]);
			s->node[i] = NULL;
		}
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	WRITE_ONCE(s->fastpath_off, s->fastpath_off | FASTPATH_OFF_DEAD);
	WRITE_ONCE(s->cpu_offset, (unsigned int)CACHE_SLOT_DEAD * CPU_SLOT_SIZE);
	struct kmem_cache *old = quarantine[quarantine_next % QUARANTINE];
	quarantine[quarantine_next++ % QUARANTINE] = s;
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (old)
		uslub_cache_free(&boot_kmem_cache, old);
}

void _uslub_bad_cache(const struct kmem_cache *s, const char *call)
{
	if (!s)
		_uslub_report_error("uslub: %s with a NULL cache\n", call);
	else
		_uslub_report_error("uslub: %s on cache %s (%p), which was destroyed\n", call,
				    s->name, (const void *)s);
	errno = EINVAL;
}

__public int uslub_cache_destroy(struct kmem_cache *s)
{
	if (!s)
		return 0;
	if (s == &boot_kmem_cache || s == &boot_kmem_cache_node) {
		errno = EINVAL;
		return -1;
	}
	if (cache_bad(s, "uslub_cache_destroy"))
		return -1;
	/* Quiescence is the caller's promise: flush every thread's cpu state. */
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	struct list_head *pos;
	for (pos = _uslub_threads.next; pos != &_uslub_threads; pos = pos->next) {
		struct uslub_thread *t = list_entry(pos, struct uslub_thread, link);
		_uslub_flush_cpu(s, _uslub_thread_cpu(t, s));
	}
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (s->sheaf_capacity)
		_uslub_sheaf_cache_shrink(s, &tmp);
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		shrink_node(s, get_node(s, i), &tmp);
	fold_stats(s, &tmp);
	if (kmem_cache_debug(s))
		discard_isolated(s);

	unsigned long slabs = 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		slabs += READ_ONCE(get_node(s, i)->nr_slabs);
	if (slabs) {
		struct count_live cl = { s, 0, 0 };
		_uslub_for_each_run(count_live_cb, &cl);
		uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
		uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
		_uslub_report_error("uslub: cache %s: %lu objects remaining in %lu slabs on destroy; "
				    "cache left intact\n", s->name, cl.objects, cl.slabs);
		if (kmem_cache_debug(s)) {
			struct list_leaks ll = { s, 0 };
			_uslub_for_each_run(list_leaks_cb, &ll);
			if (ll.seen > LEAKS_LISTED)
				_uslub_debug_emit("INFO: %s: ... and %lu more objects\n", s->name,
						  ll.seen - LEAKS_LISTED);
			_uslub_debug_flush();
		}
		errno = EBUSY;
		return -1;
	}
	list_del(&s->list);
	release_slot(s->index);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	_uslub_sheaf_cache_destroy(s);
	free_random_seq(s);
	kill_cache(s);
	return 0;
}

__public const char *uslub_cache_name(const struct kmem_cache *s)
{
	if (!s) {
		_uslub_bad_cache(s, "uslub_cache_name");
		return NULL;
	}
	return s->name;
}

__public size_t uslub_cache_object_size(const struct kmem_cache *s)
{
	return s->object_size;
}

/* ------------------------------------------------------------------------
 * validate: walk every slab and check it against its counters
 * ---------------------------------------------------------------------- */
struct validate_ctx {
	struct kmem_cache *s;
	long errors;
	int node;                    /* debug caches: the node whose list_lock is
	                                held (only its slabs); -1: every slab */
	struct kmem_cache_node *n;
	unsigned long slabs[MAX_NUMNODES], objects[MAX_NUMNODES], flagged[MAX_NUMNODES];
	unsigned long frozen;
};

/* Isolate a slab validate found damaged (list_lock of its node held). */
static void validate_isolate(struct validate_ctx *v, struct slab *slab)
{
	if (slab_test_node_partial(slab))
		v->flagged[slab_nid(slab)]--;       /* it leaves the partial list */
	slab_isolate(v->s, v->n, slab);
}

static void validate_slab_cb(struct page *head, void *arg)
{
	struct validate_ctx *v = arg;
	struct kmem_cache *s = v->s;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != s)
		return;
	uint64_t cnt = slab_counters(slab);
	unsigned int objects = FC_OBJECTS(cnt), inuse = FC_INUSE(cnt);
	int nid = slab_nid(slab);

	if (v->node >= 0 && nid != v->node)
		return;
	v->slabs[nid]++;
	v->objects[nid] += objects;
	if (READ_ONCE(head->flags) & PG_isolated)
		return;                 /* reported when isolated; never checked again */
	if (kmem_cache_debug(s) && !slab_test_node_partial(slab) && inuse < objects)
		return;                 /* in transit under no list_lock: new, or
		                           taken off its list to be discarded */
	if (slab_test_node_partial(slab))
		v->flagged[nid]++;
	if (FC_FROZEN(cnt))
		v->frozen++;
	if (objects != order_objects(slab_order(slab), s->size) ||
	    (unsigned long)objects * s->size != slab_objects_bytes(slab)) {
		_uslub_report("uslub: validate %s: slab %p: %u objects, order %u expects %u\n",
			      s->name, slab_address(slab), objects, slab_order(slab),
			      order_objects(slab_order(slab), s->size));
		v->errors++;
		return;
	}
	if (inuse > objects) {
		_uslub_report("uslub: validate %s: slab %p: inuse %u > objects %u\n",
			      s->name, slab_address(slab), inuse, objects);
		v->errors++;
		return;
	}
	if (slab_test_node_partial(slab) && (FC_FROZEN(cnt) || FC_FREELIST(cnt) == SLAB_FL_NONE)) {
		_uslub_report("uslub: validate %s: slab %p on a node partial list is %s\n",
			      s->name, slab_address(slab), FC_FROZEN(cnt) ? "frozen" : "full");
		v->errors++;
	}
	uint64_t seen[(MAX_OBJS_PER_SLAB + 64) / 64];
	memset(seen, 0, sizeof(uint64_t) * ((objects + 63) / 64));
	unsigned int nfree = 0;
	bool debug = kmem_cache_debug(s);
	void *prev = NULL;
	for (void *p = fl_ptr(s, slab, FC_FREELIST(cnt)); p; prev = p, p = get_freepointer(s, p)) {
		if (!obj_is_valid(s, slab, p)) {
			v->errors++;
			if (debug && prev) {
				_uslub_debug_object_err(s, slab, prev, "Freepointer corrupt",
							"free pointer of free object %p is %p, not "
							"an object of the slab", prev, p);
				set_freepointer(s, prev, NULL);
				_uslub_debug_emit("FIX %s: freelist cut at %p\n", s->name, prev);
				validate_isolate(v, slab);
				return;
			}
			_uslub_report("uslub: validate %s: slab %p: freelist pointer %p is not an "
				      "object of the slab (after %u objects)\n",
				      s->name, slab_address(slab), p, nfree);
			return;
		}
		unsigned int idx = obj_to_index(s, slab, p);
		if (seen[idx / 64] & (1ull << (idx % 64))) {
			v->errors++;
			if (debug) {
				_uslub_debug_slab_err(s, slab, "Freelist corrupt",
						      "the freelist loops at object %u", idx);
				validate_isolate(v, slab);
				return;
			}
			_uslub_report("uslub: validate %s: slab %p: freelist loops at object %u\n",
				      s->name, slab_address(slab), idx);
			return;
		}
		seen[idx / 64] |= 1ull << (idx % 64);
		nfree++;
	}
	if (nfree != objects - inuse) {
		v->errors++;
		if (debug) {
			/* which objects are free is unknown: check none of them
			 * (a restore could overwrite a live one) */
			_uslub_debug_slab_err(s, slab, "Wrong number of objects",
					      "%u objects on the freelist, the counters say %u "
					      "(objects %u, inuse %u)", nfree, objects - inuse,
					      objects, inuse);
			validate_isolate(v, slab);
			return;
		}
		_uslub_report("uslub: validate %s: slab %p: %u objects on the freelist, "
			      "counters say %u (objects %u, inuse %u)\n", s->name, slab_address(slab),
			      nfree, objects - inuse, objects, inuse);
	}
	if (!debug)
		return;
	/* slub_debug: every object in its state (free: on the freelist) */
	unsigned int bad = 0;
	for (unsigned int i = 0; i < objects; i++) {
		bool is_free = seen[i / 64] & (1ull << (i % 64));
		bad += _uslub_debug_check_object(s, slab, index_to_obj(s, slab, i),
						 is_free ? SLUB_RED_INACTIVE : SLUB_RED_ACTIVE);
	}
	if (bad) {
		v->errors += bad;
		validate_isolate(v, slab);
	}
}

static void validate_node_counts(struct validate_ctx *v, int i);
static long validate_cpu(struct kmem_cache *s, struct validate_ctx *v);

__public long uslub_cache_validate(struct kmem_cache *s)
{
	if (cache_bad(s, "uslub_cache_validate"))
		return -1;
	struct validate_ctx local, *v = &local;
	memset(v, 0, sizeof(*v));
	v->s = s;
	int nodes = _uslub_nr_nodes();

	/* node partial lists: flag set, unfrozen, not full, count matches */
	for (int i = 0; i < nodes; i++) {
		struct kmem_cache_node *n = get_node(s, i);
		unsigned long count = 0;
		struct list_head *pos;
		node_lock(n);
		for (pos = n->partial.next; pos != &n->partial; pos = pos->next) {
			struct slab *slab = list_entry(pos, struct slab, slab_list);
			count++;
			if (!slab_test_node_partial(slab) || slab->slab_cache != s ||
			    slab_nid(slab) != i) {
				_uslub_report("uslub: validate %s: slab %p on node %d partial list: "
					      "flag %d, cache %s, node %d\n", s->name, slab_address(slab), i,
					      slab_test_node_partial(slab),
					      slab->slab_cache ? slab->slab_cache->name : "none",
					      slab_nid(slab));
				v->errors++;
			}
			if (count > READ_ONCE(n->nr_slabs) + 1)
				break;
		}
		if (count != n->nr_partial) {
			_uslub_report("uslub: validate %s: node %d: nr_partial %lu, list has %lu\n",
				      s->name, i, n->nr_partial, count);
			v->errors++;
		}
		node_unlock(n);
	}

	if (kmem_cache_debug(s)) {
		/* the debug paths change slabs only under list_lock: hold it
		 * for the node whose slabs are checked (and maybe isolated) */
		for (int i = 0; i < nodes; i++) {
			v->node = i;
			v->n = get_node(s, i);
			node_lock(v->n);
			_uslub_for_each_run(validate_slab_cb, v);
			validate_node_counts(v, i);
			node_unlock(v->n);
		}
		_uslub_debug_flush();
	} else {
		v->node = -1;
		_uslub_for_each_run(validate_slab_cb, v);
		for (int i = 0; i < nodes; i++)
			validate_node_counts(v, i);
	}
	return validate_cpu(s, v);
}

/* A node's counters against what the walk found (exact for a debug cache:
 * its caller holds the node's list_lock across the walk and this). */
static void validate_node_counts(struct validate_ctx *v, int i)
{
	struct kmem_cache *s = v->s;
	{
		struct kmem_cache_node *n = get_node(s, i);
		if (v->slabs[i] != READ_ONCE(n->nr_slabs) ||
		    v->objects[i] != READ_ONCE(n->total_objects)) {
			_uslub_report("uslub: validate %s: node %d counts %lu slabs / %lu objects, "
				      "found %lu / %lu\n", s->name, i, READ_ONCE(n->nr_slabs),
				      READ_ONCE(n->total_objects), v->slabs[i], v->objects[i]);
			v->errors++;
		}
		if (v->flagged[i] != READ_ONCE(n->nr_partial)) {
			_uslub_report("uslub: validate %s: node %d: %lu slabs flagged node-partial, "
				      "nr_partial %lu\n", s->name, i, v->flagged[i],
				      READ_ONCE(n->nr_partial));
			v->errors++;
		}
	}
}

/* The calling thread's cpu slab: its cpu freelist holds its objects. */
static long validate_cpu(struct kmem_cache *s, struct validate_ctx *v)
{
	if (this_cpu_is_real()) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if (c->slab) {
			uint64_t cnt = slab_counters(c->slab);
			unsigned int k = 0;
			if (!FC_FROZEN(cnt) || c->slab->slab_cache != s) {
				_uslub_report("uslub: validate %s: cpu slab %p is not frozen\n",
					      s->name, slab_address(c->slab));
				v->errors++;
			}
			for (void *p = c->freelist; p && k <= FC_OBJECTS(cnt); p = get_freepointer(s, p), k++)
				if (!obj_is_valid(s, c->slab, p)) {
					_uslub_report("uslub: validate %s: cpu freelist pointer %p "
						      "outside the cpu slab\n", s->name, p);
					v->errors++;
					break;
				}
			if (k > FC_INUSE(cnt)) {
				_uslub_report("uslub: validate %s: cpu freelist has %u objects, "
					      "slab inuse %u\n", s->name, k, FC_INUSE(cnt));
				v->errors++;
			}
		} else if (c->freelist) {
			_uslub_report("uslub: validate %s: cpu freelist without a cpu slab\n", s->name);
			v->errors++;
		}
		unsigned long k = 0;
		for (struct slab *p = c->partial; p && k <= c->partial_slabs; p = p->next, k++) {
			uint64_t cnt = slab_counters(p);
			if (FC_FROZEN(cnt) || slab_test_node_partial(p) || p->slab_cache != s) {
				_uslub_report("uslub: validate %s: cpu partial slab %p is frozen "
					      "or on a node list\n", s->name, slab_address(p));
				v->errors++;
			}
		}
		if (k != c->partial_slabs) {
			_uslub_report("uslub: validate %s: cpu partial list has %lu slabs, "
				      "count says %lu\n", s->name, k, c->partial_slabs);
			v->errors++;
		}
	}
	return v->errors;
}

/* ------------------------------------------------------------------------
 * fork
 * ---------------------------------------------------------------------- */
/* fork: slab_mutex, then (after the groups, tags and barn locks: their
 * layers' entries) every cache's list_lock per node, a batch nested in
 * slab_mutex. */
static void slab_mutex_prefork(void)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void slab_mutex_postfork_parent(void)
{
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void slab_mutex_postfork_child(void)
{
	uslub_mutex_reset(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void list_lock_prefork(void)
{
	struct list_head *pos;
	for (pos = _uslub_slab_caches.next; pos != &_uslub_slab_caches; pos = pos->next) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		for (int i = 0; i < _uslub_nr_nodes(); i++)
			uslub_mutex_lock_nest(&get_node(s, i)->list_lock, RANK_LIST,
					      RANK_SLAB_MUTEX);
	}
}

static void list_lock_postfork_parent(void)
{
	struct list_head *pos;
	for (pos = _uslub_slab_caches.prev; pos != &_uslub_slab_caches; pos = pos->prev) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		for (int i = _uslub_nr_nodes() - 1; i >= 0; i--)
			uslub_mutex_unlock_nest(&get_node(s, i)->list_lock, RANK_LIST);
	}
}

/* Counters of one slab, for _uslub_slub_recount(). */
static void recount_cb(struct page *head, void *arg)
{
	(void)arg;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || !slab->slab_cache)
		return;
	struct kmem_cache_node *n = get_node(slab->slab_cache, slab_nid(slab));
	n->nr_slabs++;
	n->total_objects += FC_OBJECTS(slab_counters(slab));
	n->total_pages += 1ul << slab_order(slab);
}

/*
 * In a fork child: rebuild every node's slab counters from the slabs
 * themselves. A thread stopped by fork between creating (or discarding) a
 * slab and updating the counters leaves them torn; the slab may leak, the
 * counters must not lie. Single-threaded caller, slab_mutex held.
 */
void _uslub_slub_recount(void)
{
	struct list_head *pos;
	for (pos = _uslub_slab_caches.next; pos != &_uslub_slab_caches; pos = pos->next) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		for (int i = 0; i < _uslub_nr_nodes(); i++) {
			struct kmem_cache_node *n = get_node(s, i);
			n->nr_slabs = n->total_objects = n->total_pages = 0;
		}
	}
	_uslub_for_each_run(recount_cb, NULL);
}

static void list_lock_postfork_child(void)
{
	struct list_head *pos;
	for (pos = _uslub_slab_caches.next; pos != &_uslub_slab_caches; pos = pos->next) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		for (int i = 0; i < _uslub_nr_nodes(); i++)
			uslub_mutex_reset_nest(&get_node(s, i)->list_lock, RANK_LIST);
	}
}

/* From _uslub_init(): this file's lifecycle entries (base/lifecycle.h). */
void _uslub_slub_lifecycle_init(void)
{
	static const struct uslub_lifecycle slab_mutex_entry = {
		.name = "slab_mutex",
		.rank = RANK_SLAB_MUTEX,
		.prefork = slab_mutex_prefork,
		.postfork_parent = slab_mutex_postfork_parent,
		.postfork_child = slab_mutex_postfork_child,
	};
	static const struct uslub_lifecycle list_lock_entry = {
		.name = "list_lock",
		.rank = RANK_LIST,
		.prefork = list_lock_prefork,
		.postfork_parent = list_lock_postfork_parent,
		.postfork_child = list_lock_postfork_child,
	};
	_uslub_lifecycle_register(&slab_mutex_entry);
	_uslub_lifecycle_register(&list_lock_entry);
}

/* ------------------------------------------------------------------------
 * Slab walks for the layers above (ext/ reports)
 * ---------------------------------------------------------------------- */
struct for_each_slab_arg {
	struct kmem_cache *s;
	void (*fn)(struct kmem_cache *s, struct slab *slab, void *arg);
	void *arg;
};

static void for_each_slab_cb(struct page *head, void *arg)
{
	struct for_each_slab_arg *a = arg;
	if (!(READ_ONCE(head->flags) & PG_slab))
		return;
	struct slab *slab = page_slab(head);
	if (READ_ONCE(slab->slab_cache) == a->s)
		a->fn(a->s, slab, a->arg);
}

void _uslub_for_each_slab(struct kmem_cache *s,
			  void (*fn)(struct kmem_cache *s, struct slab *slab, void *arg), void *arg)
{
	struct for_each_slab_arg a = { s, fn, arg };
	_uslub_for_each_run(for_each_slab_cb, &a);
}

/* The extension of object @idx of @slab, or NULL (for the reports). */
struct slabobj_ext *_uslub_slab_obj_ext_idx(struct kmem_cache *s, struct slab *slab,
					    unsigned int idx)
{
	return slab_obj_ext_idx(s, slab, idx);
}
