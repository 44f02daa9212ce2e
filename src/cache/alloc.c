/*
 * alloc.c — the alloc miss path of the cache API (cache.h's inline
 * paths missed), and the post-allocation hook for the layers above.
 *
 * One rung per thing it adds:
 *
 *   _uslub_slab_alloc_miss          a cache's lean hooked path (pcs_hooks), else the ladder
 *    ├─ alloc_pcs_account, _profile, _account_profile
 *    │                              the lean hooked sheaf paths: a main-sheaf pop, its
 *    │                              extension, the stock, the tag; misses to the ladder
 *   alloc_miss_ladder               the cpu freelist (malloc pops the main sheaf only)
 *    ├─ alloc_kasan                 under ASan: the rungs below, then the object unpoisoned
 *    ├─ alloc_kmalloc_debug         kmalloc from a debug cache: its size recorded
 *    ├─ alloc_hooked_pcs            hooks, sheaf mode: a main-sheaf pop, the hook's inline
 *    │                              case; misses to alloc_hooked too
 *    ├─ alloc_hooked_cpu_slab       hooks, cpu-slab mode (or an ACCOUNT call): a frameless
 *    │    │                         leaf; a cpu-freelist pop, the stock, the tag counters
 *    │    └─ alloc_hooked           any hooked call: failslab, the tag, post_alloc_hook(),
 *    │         │                    a refused charge given back
 *    └─ alloc_checked               failslab
 *              └─ alloc_checked_pops   (inline in both) the hardened cpu-freelist pop, the
 *                   │                  main-sheaf pop with the free mark anywhere; slub_debug
 *                   └─ alloc_refill    gfp bits, a node, a corrupt cpu freelist; zeroing
 *                        ├─ alloc_from_sheaves_slow   the spare, the barn, a refill (sheaf/)
 *                        └─ _uslub___slab_alloc       the cpu slab's refill, a new slab (slub/)
 *
 * Every rung takes the public caller's address @addr (slub_debug's owner)
 * from the one above, but the leaf alloc_hooked_cpu_slab(), entered by a
 * tail call, which takes its own return address.
 */
#include "cache/internal.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

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
static __always_inline void enable_on_demand_locked(struct kmem_cache *s)
{
	if (!(s->hooks & HOOK_ACCOUNT)) {
		if (s->ext_placement == USLUB_OBJ_EXT_NONE)
			WRITE_ONCE(s->ext_placement, USLUB_OBJ_EXT_ON_DEMAND);
		/* charged only with USLUB_GFP_ACCOUNT: the generic rungs (before
		 * the hooks go on, so no lean path sees HOOK_ACCOUNT) */
		__atomic_store_n(&s->pcs_hooks, 0, __ATOMIC_SEQ_CST);
		fastpath_off_set(s, FASTPATH_OFF_HOOKS);
		__atomic_fetch_or(&s->hooks, HOOK_ACCOUNT, __ATOMIC_SEQ_CST);
	}
}

/* Choose @s's lean hooked sheaf path, once, at creation (before the cache
 * is published): a sheaf cache whose every allocation runs the same hooks
 * (a USLUB_ACCOUNT cache, exact profiling, or both) with extensions that
 * every slab has (leftover, padding or array, not on demand). */
void _uslub_set_pcs_hooks(struct kmem_cache *s)
{
	unsigned int ph = 0;
	/* not under ASan or slub_debug: their rungs need a kmalloc's size,
	 * which the lean leaves do not carry */
	if (s->sheaf_capacity && !(s->flags & SLAB_NO_OBJ_EXT) &&
	    !(s->fastpath_off & ~PCS_LEAN_OFF_OK) &&
	    s->ext_placement != USLUB_OBJ_EXT_NONE &&
	    s->ext_placement != USLUB_OBJ_EXT_ON_DEMAND) {
		if ((s->hooks & HOOK_ACCOUNT) && (s->flags & USLUB_ACCOUNT))
			ph |= PCS_HOOKS_ACCOUNT;
		if (s->hooks & HOOK_PROFILE)
			ph |= PCS_HOOKS_PROFILE;
		/* the lean accessors assume the layout from ph (slub.h) */
		if (s->ext_layout != ph)
			ph = 0;
	}
	s->pcs_hooks = ph;
}

__cold void _uslub_obj_ext_enable_on_demand(struct kmem_cache *s)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	enable_on_demand_locked(s);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

/* The same from any context (kmalloc_nolock): slab_mutex only tried. */
__cold bool _uslub_obj_ext_enable_on_demand_try(struct kmem_cache *s)
{
	if (!uslub_mutex_trylock(&_uslub_slab_mutex, RANK_SLAB_MUTEX))
		return false;
	enable_on_demand_locked(s);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	return true;
}

bool _uslub_post_alloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p)
{
	unsigned int hooks = READ_ONCE(s->hooks);
	if (!(hooks | (gfp & USLUB_GFP_ACCOUNT)))
		return true;
	return post_alloc_hook(s, gfp, n, p, NULL, take_alloc_tag(hooks));
}

/* The group's limit refused the charge of @obj: give it back the plain
 * way (the reclaim callback may have flushed or shrunk this thread's cpu
 * slot meanwhile) and fail. */
static __cold __noinline void *alloc_refused(struct kmem_cache *s, void *obj, uintptr_t addr)
{
	_uslub_free_checked(s, obj, addr);
	errno = ENOMEM;
	return NULL;
}

/* A sheaf cache's main sheaf is empty: a thread's first call sets up its
 * cpu area, then the sheaf layer swaps in the spare, trades at the barn
 * or refills from slabs (and pops). */
static __always_inline void *alloc_from_sheaves_slow(struct kmem_cache *s, uslub_gfp_t gfp)
{
	if (unlikely(!this_cpu_is_real()) && !_uslub_thread_init())
		return NULL;
	struct kmem_cache_cpu *c = this_cpu(s);
	void *obj = _uslub_sheaf_alloc_slow(s, c, gfp);
	if (likely(obj))
		_uslub_free_record_obj(s, c, obj);
	return obj;
}

/* The checked pops missed, or the call has gfp bits (zeroing, NOFAIL) or
 * a node to match: the cpu freelist once more (a corrupt head reported,
 * the node matched), else the sheaves' or the cpu slab's slow path, after
 * which the page layer polls (_uslub_purge_poll(): its purge thread is
 * started if it is wanted and allowed; without it, a purge pass once the
 * decay deadline is past): here,
 * with the object taken and the cpu slot whole again, not in the page
 * allocation, whose caller (a refill) may be halfway through a change of
 * the slot that pthread_create's own malloc would enter (page.c). */
static __noinline void *alloc_refill(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	void *obj = c->freelist;

	if (unlikely(obj && !cpu_freelist_ok(s, c, obj))) {
		_uslub_cpu_freelist_corrupt(s, c);
		obj = NULL;
	}
	if (obj && (node == USLUB_NUMA_NO_NODE || slab_nid(c->slab) == node)) {
		c->freelist = get_freepointer(s, obj);   /* ALLOC_FASTPATH, derived */
	} else {
		obj = NULL;
		if (s->sheaf_capacity && node == USLUB_NUMA_NO_NODE)
			obj = alloc_from_sheaves_slow(s, gfp);
		if (!obj)
			obj = _uslub___slab_alloc(s, gfp, node);
		if (unlikely(!obj))
			return NULL;
		_uslub_purge_poll();
	}
	free_mark_clear(s, obj);
	if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, s->object_size);
	return obj;
}

/* The checked versions of the inline pops, no hooks: a hardened cache's
 * cpu freelist (its head checked, the next pointer decoded) first and
 * small, so hardening costs a few instructions, not the whole slow path;
 * then the main sheaf with the free mark anywhere (a cache the inline
 * paths skip: failslab armed, hooks, the mark off word 0). A debug cache
 * has neither: slub_debug's path. */
static __always_inline void *alloc_checked_pops(struct kmem_cache *s, uslub_gfp_t gfp, int node,
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
	struct slab_sheaf *main = c->main;
	if (likely(!obj && main && main->size && !gfp && node == USLUB_NUMA_NO_NODE)) {
		stat_pcs_slow(c, 1);
		obj = main->objects[--main->size];
		free_mark_clear(s, obj);
		return obj;
	}
	if (kmem_cache_debug(s)) {
		obj = _uslub_debug_slab_alloc(s, gfp, node, addr);
		_uslub_purge_poll();            /* as alloc_refill() does */
		return obj;
	}
	return alloc_refill(s, gfp, node);
}

/* A cache without hooks: fault injection, then the checked pops. */
static __noinline void *alloc_checked(struct kmem_cache *s, uslub_gfp_t gfp, int node,
				      uintptr_t addr)
{
	if (unlikely(failslab(s, gfp, 1)))
		return NULL;
	return alloc_checked_pops(s, gfp, node, addr);
}

/* Any allocation from a cache with extension hooks (accounting or
 * profiling), or with USLUB_GFP_ACCOUNT: fault injection, the call
 * site's tag, an object as alloc_checked() takes it, then the
 * post-allocation hook; a refused charge gives the object back and fails.
 * The cpu slot's free range is closed, so every free of such a cache runs
 * the free hook (free.c's hooked rungs). */
static __noinline void *alloc_hooked(struct kmem_cache *s, uslub_gfp_t gfp, int node,
				     uintptr_t addr)
{
	if (unlikely(failslab(s, gfp, 1))) {
		uslub_alloc_tag_cur = NULL;         /* nothing allocated: nothing tagged */
		return NULL;
	}
	struct uslub_alloc_tag *tag = take_alloc_tag(READ_ONCE(s->hooks));
	void *obj = alloc_checked_pops(s, gfp & ~USLUB_GFP_ACCOUNT, node, addr);
	if (unlikely(!obj))
		return NULL;
	if (likely(post_alloc_hook(s, gfp, 1, &obj, NULL, tag)))
		return obj;
	return alloc_refused(s, obj, addr);
}

/*
 * Hooks in cpu-slab mode: a leaf that only tail-calls (no frame), with
 * the cpu slot @c and its freelist head @obj. An object of the cpu
 * freelist, charged from the thread's stock and tagged in the thread's
 * counters (the inline steps of internal.h), with every condition checked
 * before anything changes; anything else goes to alloc_hooked() untouched.
 */
static __noinline void *alloc_hooked_cpu_slab(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					      struct kmem_cache_cpu *c, void *obj)
{
	/* entered by a tail call: the return address is the public caller's */
#define addr ((uintptr_t)__builtin_return_address(0))
	if (unlikely(!obj || (gfp & ~USLUB_GFP_ACCOUNT) || node != USLUB_NUMA_NO_NODE ||
		     (s->flags & (SLAB_HARDENED | SLAB_NO_OBJ_EXT)) ||
		     (READ_ONCE(s->fastpath_off) & (FASTPATH_OFF_DEBUG | FASTPATH_OFF_SLUB_DEBUG))))
		return alloc_hooked(s, gfp, node, addr);
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
	uintptr_t off = (uintptr_t)obj - (uintptr_t)c->slab_addr;
	struct obj_ext ext = slab_obj_ext_idx(s, c->slab, slab_offset_to_index(off, s->reciprocal_size));
	unsigned int tidx = tag ? READ_ONCE(tag->index) : 0;
	if ((objcg && unlikely(!ext.objcg || !(hooks & HOOK_ACCOUNT) ||
			       !stock_can_charge(t, objcg, s->charge) || c->slab_bytes)) ||
	    (tag && unlikely(!ext.tag || !tag_counters_ready(t, tidx))))
		return alloc_hooked(s, gfp, node, addr);

	c->freelist = get_freepointer_raw(s, obj);
	free_mark_clear(s, obj);
	if (objcg) {
		stock_charge(t, s->charge);
		WRITE_ONCE(*ext.objcg, objcg);
	}
	if (tag) {
		WRITE_ONCE(*ext.tag, tag);
		uslub_alloc_tag_cur = NULL;              /* taken */
		tag_counters_add(t, tidx, (int64_t)s->size, 1);
	}
	return obj;
#undef addr
}

/*
 * Hooks in sheaf mode: pop the main sheaf, then run the post-allocation
 * hook on the object (the charge from the thread's stock, the tag in the
 * thread's counters: its inline common case). Anything else (gfp bits
 * but ACCOUNT, a node, an empty main, failslab, slub_debug, destroyed)
 * goes to alloc_hooked() untouched.
 */
static __noinline void *alloc_hooked_pcs(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					 struct kmem_cache_cpu *c, uintptr_t addr)
{
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;
	if (unlikely(!n || (gfp & ~USLUB_GFP_ACCOUNT) || node != USLUB_NUMA_NO_NODE ||
		     (READ_ONCE(s->fastpath_off) &
		      ~(FASTPATH_OFF_HOOKS | FASTPATH_OFF_HARDENED | FASTPATH_OFF_MARK))))
		return alloc_hooked(s, gfp, node, addr);
	struct uslub_alloc_tag *tag = take_alloc_tag(READ_ONCE(s->hooks));
	void *obj = main->objects[n - 1];
	main->size = n - 1;
	stat_pcs_slow(c, 1);
	free_mark_clear(s, obj);
	if (likely(post_alloc_hook(s, gfp, 1, &obj, NULL, tag)))
		return obj;
	return alloc_refused(s, obj, addr);
}

static __noinline void *alloc_miss_ladder(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					  size_t orig_size, uintptr_t addr);

/* The lean hooked sheaf paths (internal.h's alloc_pcs_lean()) as leaves
 * of the miss path, for the callers that do not inline them (kmalloc,
 * malloc, the node and bulk-less entries). Entered by tail calls: the
 * return address is the public caller's. */
static __always_inline void *alloc_pcs_leaf(struct kmem_cache *s, struct kmem_cache_cpu *c,
					    uslub_gfp_t gfp, int node, size_t orig_size,
					    const unsigned int ph, const bool api)
{
#define addr ((uintptr_t)__builtin_return_address(0))
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;
	/* gfp bits (USLUB_GFP_ACCOUNT but in an ACCOUNT cache: a charge the
	 * generic rungs make, on demand), a node, an empty main, failslab,
	 * slub_debug, ASan, destroyed: the whole ladder */
	const uslub_gfp_t ok = (ph & PCS_HOOKS_ACCOUNT) ? USLUB_GFP_ACCOUNT : 0;
	if (likely(n && !(gfp & ~ok) && node == USLUB_NUMA_NO_NODE &&
		   !(READ_ONCE(s->fastpath_off) & ~PCS_LEAN_OFF_OK))) {
		void *obj = alloc_pcs_lean(s, c, main, n, ph, api);
		if (likely(obj))
			return obj;
		/* the API's call (which no miss path has seen yet) goes
		 * through the miss path, the sampler's in sampled mode */
		if (!api)
			return alloc_hooked_pcs(s, gfp, node, c, addr);
	}
	if (api)
		return _uslub_slab_alloc_miss(s, gfp, node, orig_size, addr);
	return alloc_miss_ladder(s, gfp, node, orig_size, addr);
#undef addr
}

/* Per-CPU mode's pop (cache.h), by a tail call from the inline path: the
 * return address is the public caller's. */
__noinline void *_uslub_alloc_pcpu(struct kmem_cache *s, struct kmem_cache_cpu *c,
				   size_t orig_size)
{
	bool fired = false;
	void *obj = alloc_from_pcpu(s, c, &fired);
	if (likely(obj))
		return unlikely(fired) ? _uslub_sample_popped(s, c, obj) : obj;
	return _uslub_slab_alloc_miss(s, 0, USLUB_NUMA_NO_NODE, orig_size,
				      (uintptr_t)__builtin_return_address(0));
}

/* The API's leaves (api.c cache_alloc(), by tail calls: the return
 * address is the public caller's), with the caller's slot. */
__noinline void *_uslub_alloc_pcs_account(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	return alloc_pcs_leaf(s, c, 0, USLUB_NUMA_NO_NODE, 0, PCS_HOOKS_ACCOUNT, true);
}

__noinline void *_uslub_alloc_pcs_profile(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	return alloc_pcs_leaf(s, c, 0, USLUB_NUMA_NO_NODE, 0, PCS_HOOKS_PROFILE, true);
}

__noinline void *_uslub_alloc_pcs_account_profile(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	return alloc_pcs_leaf(s, c, 0, USLUB_NUMA_NO_NODE, 0,
			      PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE, true);
}

static __noinline void *alloc_pcs_account(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					  size_t orig_size)
{
	return alloc_pcs_leaf(s, this_cpu(s), gfp, node, orig_size, PCS_HOOKS_ACCOUNT, false);
}

static __noinline void *alloc_pcs_profile(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					  size_t orig_size)
{
	return alloc_pcs_leaf(s, this_cpu(s), gfp, node, orig_size, PCS_HOOKS_PROFILE, false);
}

static __noinline void *alloc_pcs_account_profile(struct kmem_cache *s, uslub_gfp_t gfp,
						  int node, size_t orig_size)
{
	return alloc_pcs_leaf(s, this_cpu(s), gfp, node, orig_size,
			      PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE, false);
}

/* A kmalloc of @orig_size bytes from a debug cache: recorded (Z caches
 * fill the tail). */
static __noinline void *alloc_kmalloc_debug(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					    size_t orig_size, uintptr_t addr)
{
	void *p = (READ_ONCE(s->hooks) || (gfp & USLUB_GFP_ACCOUNT)) ?
		  alloc_hooked(s, gfp, node, addr) : alloc_checked(s, gfp, node, addr);
	if (p)
		_uslub_debug_set_orig_size(s, p, (unsigned int)orig_size);
	return p;
}

/* The rungs under the miss path's first step. */
static __always_inline void *alloc_rungs(struct kmem_cache *s, struct kmem_cache_cpu *c,
					 uslub_gfp_t gfp, int node, size_t orig_size,
					 uintptr_t addr)
{
	if (unlikely(orig_size) && kmem_cache_debug(s))
		return alloc_kmalloc_debug(s, gfp, node, orig_size, addr);
	unsigned int hooks = READ_ONCE(s->hooks);
	if (hooks && s->sheaf_capacity)
		return alloc_hooked_pcs(s, gfp, node, c, addr);
	/* an ACCOUNT call without hooks may switch them on */
	if (hooks || unlikely(gfp & USLUB_GFP_ACCOUNT))
		return alloc_hooked_cpu_slab(s, gfp, node, c, c->freelist);
	return alloc_checked(s, gfp, node, addr);
}

/* A cache under ASan (kasan.c): every allocation comes here; the object is
 * taken without zeroing (its bytes are poisoned: libc's memset is ASan's),
 * then @orig_size bytes (a kmalloc's or malloc's request; 0: the object)
 * are unpoisoned, zeroed for __GFP_ZERO. */
static __noinline void *alloc_kasan(struct kmem_cache *s, struct kmem_cache_cpu *c,
				    uslub_gfp_t gfp, int node, size_t orig_size, uintptr_t addr)
{
	void *obj = alloc_rungs(s, c, gfp & ~USLUB_GFP_ZERO, node, orig_size, addr);
	if (obj)
		_uslub_kasan_alloc(s, obj, orig_size, gfp & USLUB_GFP_ZERO);
	return obj;
}

/* The miss path's rungs (the ladder at the top of this file) after the
 * lean hooked paths: the cpu freelist when the caller did not try it
 * (malloc pops the main sheaf only), then the rung for what the call
 * needs. */
static __noinline void *alloc_miss_ladder(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					  size_t orig_size, uintptr_t addr)
{
	nolock_drain();                          /* kfree_nolock's deferred frees */
	struct kmem_cache_cpu *c = this_cpu(s);

	if (likely(!gfp && node == USLUB_NUMA_NO_NODE)) {
		void *obj = cpu_slab_pop(s, c);          /* malloc's pop misses to here */
		if (likely(obj))
			return obj;
	}
	if (unlikely(cache_kasan(s)))
		return alloc_kasan(s, c, gfp, node, orig_size, addr);
	return alloc_rungs(s, c, gfp, node, orig_size, addr);
}

/* A cache with a lean hooked path takes it, any other the ladder. The
 * lean paths leave kfree_nolock's deferred frees to the next ladder (any
 * cache's), thread exit, shrink or destroy. */
static __always_inline void *alloc_lean_or_ladder(struct kmem_cache *s, uslub_gfp_t gfp, int node,
						  size_t orig_size, uintptr_t addr)
{
	switch (READ_ONCE(s->pcs_hooks)) {
	case PCS_HOOKS_ACCOUNT:
		return alloc_pcs_account(s, gfp, node, orig_size);
	case PCS_HOOKS_PROFILE:
		return alloc_pcs_profile(s, gfp, node, orig_size);
	case PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE:
		return alloc_pcs_account_profile(s, gfp, node, orig_size);
	}
	return alloc_miss_ladder(s, gfp, node, orig_size, addr);
}

/*
 * The alloc miss path (cache.h's inline paths missed), with the public
 * caller's address @addr (slub_debug's owner): in sampled mode the
 * sampler's (sample.c), which ticks the countdown and calls the plain one
 * below; else a cache's lean hooked path or the ladder.
 */
__noinline void *_uslub_slab_alloc_miss(struct kmem_cache *s, uslub_gfp_t gfp, int node,
				       size_t orig_size, uintptr_t addr)
{
	if (unlikely(_uslub_sampling))           /* USLUB_PROFILING=sample (sample.c) */
		return _uslub_sample_alloc_miss(s, gfp, node, orig_size, addr);
	return alloc_lean_or_ladder(s, gfp, node, orig_size, addr);
}

/* The same without the sampler, called by the sampled miss path. */
__noinline void *_uslub_slab_alloc_miss_plain(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					      size_t orig_size, uintptr_t addr)
{
	return alloc_lean_or_ladder(s, gfp, node, orig_size, addr);
}

/*
 * A late charge (the kernel's kmem_cache_charge, 6.12): charge @objp, an
 * object the caller holds, to the thread's current group, as a
 * USLUB_GFP_ACCOUNT allocation would have; its free uncharges it like
 * any charged object (free_hook()). true when charged or when there is
 * nothing to do: no current group (the root), not a slab object (page
 * runs and mappings are never charged), a cache that never has
 * extensions (SLAB_NO_OBJ_EXT), already charged, or no extension storage
 * to be had. false when the group's limit refuses it (errno ENOMEM);
 * with USLUB_GFP_NOFAIL the limit is overstepped instead.
 */
__public bool uslub_cache_charge(void *objp, uslub_gfp_t gfp)
{
	struct obj_cgroup *objcg = _uslub_tls.cur_objcg;
	if (!objcg || USLUB_ZERO_OR_NULL_PTR(objp))
		return true;
	struct slab *slab = virt_to_slab(objp);
	struct kmem_cache *s = slab ? READ_ONCE(slab->slab_cache) : NULL;
	if (!s || (s->flags & SLAB_NO_OBJ_EXT) || !obj_is_valid(s, slab, objp))
		return true;
	if (unlikely(!(READ_ONCE(s->hooks) & HOOK_ACCOUNT)))
		_uslub_obj_ext_enable_on_demand(s);
	struct obj_ext ext = slab_obj_ext(s, slab, objp);
	if (!ext.objcg)
		ext = _uslub_slab_obj_ext_alloc(s, slab, objp, OBJ_EXT_OBJCG);
	if (!ext.objcg || READ_ONCE(*ext.objcg))
		return true;
	if (!memcg_charge(objcg, s->charge, gfp)) {
		errno = ENOMEM;
		return false;
	}
	WRITE_ONCE(*ext.objcg, objcg);
	/* as post_alloc_hook(): this thread's cpu slab may still have an
	 * open free range from before the cache's hooks were on */
	struct kmem_cache_cpu *c = this_cpu(s);
	if (unlikely(READ_ONCE(c->slab_bytes)))
		WRITE_ONCE(c->slab_bytes, 0);
	return true;
}
