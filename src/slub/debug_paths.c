/*
 * debug_paths.c — slub_debug's alloc and free paths under list_lock,
 * and isolation of a damaged slab (the per-object checks and reports are
 * in debug.c).
 */
#include "slub/slub.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define home_node _uslub_home_node

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
struct kmem_cache_cpu *_uslub_debug_cpu(struct kmem_cache *s, struct kmem_cache_cpu *tmp)
{
	if (likely(this_cpu_is_real() || _uslub_thread_init()))
		return this_cpu(s);
	memset(tmp, 0, sizeof(*tmp));
	return tmp;
}

void _uslub_debug_cpu_done(struct kmem_cache *s, struct kmem_cache_cpu *c,
			   struct kmem_cache_cpu *tmp)
{
	if (c == tmp)
		_uslub_fold_stats(s, tmp);
}

/* list_lock held. */
void _uslub_slab_isolate(struct kmem_cache *s, struct kmem_cache_node *n, struct slab *slab)
{
	if (slab->__page_flags & PG_isolated)
		return;
	if (slab_test_node_partial(slab))
		_uslub_remove_partial(n, slab);
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
			_uslub_slab_isolate(s, n, slab);
			continue;
		}
		void *next = get_freepointer(s, obj);
		uint64_t new = fc_make(fl_idx(s, slab, next), FC_INUSE(old) + 1, FC_OBJECTS(old),
				       false);
		if (!slab_update(slab, &old, new))
			continue;               /* nobody else writes it: cannot happen */
		if (!next)
			_uslub_remove_partial(n, slab);    /* now full: on no list */
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
	struct slab *slab = _uslub_allocate_slab(s, search, c);
	if (!slab)
		return NULL;
	stat(c, ALLOC_SLAB);
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	node_lock(n);
	if (!(slab->__page_flags & PG_isolated))     /* (validate found it damaged) */
		_uslub_add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
	void *obj = debug_take(s, n, slabp, addr);
	node_unlock(n);
	return obj;
}

/* One object of debug cache @s for the caller at @addr: checked, red zones
 * made active, owner recorded, counted when @count. No hooks (the callers
 * run them). */
__noinline void *_uslub___debug_slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					   uintptr_t addr, bool count)
{
	struct kmem_cache_cpu tmp, *c = _uslub_debug_cpu(s, &tmp);
	struct slab *slab = NULL;
	void *obj;
	while (!(obj = debug_alloc_once(s, node, c, &slab, addr)) && (gfp & USLUB_GFP_NOFAIL)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	_uslub_debug_flush();
	if (unlikely(!obj)) {
		_uslub_debug_cpu_done(s, c, &tmp);
		errno = ENOMEM;
		return NULL;
	}
	if (count)
		stat(c, ALLOC_SLOWPATH);
	_uslub_debug_cpu_done(s, c, &tmp);
	if (unlikely(s->debug & USLUB_DBG_T))
		_uslub_debug_trace(s, slab, obj, true);
	if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, s->object_size);
	return obj;
}

void *_uslub_debug_slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node, uintptr_t addr)
{
	return _uslub___debug_slab_alloc(s, gfp, node, addr, true);
}

/* Free @x, an object start of @slab of debug cache @s (checked by the
 * caller), for the caller at @addr; counted when @count. No hooks (the
 * callers run them). */
__noinline void _uslub___debug_slab_free(struct kmem_cache *s, struct slab *slab, void *x,
					 uintptr_t addr, bool count)
{
	struct kmem_cache_cpu tmp, *c = _uslub_debug_cpu(s, &tmp);
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	struct slab *discard = NULL;
	node_lock(n);
	if (unlikely(on_freelist(s, slab, x))) {
		_uslub_debug_object_err(s, slab, x, "Object already free",
					"double free of %p", x);
		_uslub_debug_emit("FIX %s: Object %p left alone\n\n", s->name, x);
		node_unlock(n);
		_uslub_debug_cpu_done(s, c, &tmp);
		_uslub_debug_flush();
		return;
	}
	if ((s->debug & USLUB_DBG_F) && _uslub_debug_check_object(s, slab, x, SLUB_RED_ACTIVE))
		_uslub_slab_isolate(s, n, slab);
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
			_uslub_add_partial(n, slab, DEACTIVATE_TO_TAIL_POS);    /* was full */
		if (!FC_INUSE(new) && n->nr_partial > s->min_partial) {
			_uslub_remove_partial(n, slab);
			discard = slab;
		}
	}
	node_unlock(n);
	if (count)
		stat(c, FREE_SLOWPATH);
	if (discard) {
		stat(c, FREE_SLAB);
		_uslub_discard_slab(s, discard);
	}
	_uslub_debug_cpu_done(s, c, &tmp);
	_uslub_debug_flush();
}

void _uslub_debug_slab_free(struct kmem_cache *s, struct slab *slab, void *x, uintptr_t addr)
{
	_uslub___debug_slab_free(s, slab, x, addr, true);
}
