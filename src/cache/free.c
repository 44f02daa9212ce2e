/*
 * free.c — the free miss path of the cache API: the hooked leaf and
 * its slow path, the paths without hooks, the checked free onto the main
 * sheaf or the slab; frees of internal caches without a cpu area.
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

#define home_node _uslub_home_node

void _uslub_free_hook(struct kmem_cache *s, void *x)
{
	if (!READ_ONCE(s->hooks))
		return;
	struct slab *slab = virt_to_slab(x);
	if (slab && slab->slab_cache == s && obj_is_valid(s, slab, x))
		free_hook(s, slab, x);
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

void _uslub_slab_free_nohooks(struct kmem_cache *s, void *x, uintptr_t addr)
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
			if ((objcg && unlikely(!stock_can_uncharge(t, objcg, s->charge))) ||
			    (tag && unlikely(!tag_counters_ready(t, tidx))))
				return slab_free_hooked_slow(s, x, addr);
			if (objcg) {
				WRITE_ONCE(ext->objcg, NULL);
				stock_uncharge(t, s->charge);
			}
			if (tag) {
				WRITE_ONCE(ext->ref, NULL);
				tag_counters_add(t, tidx, -(int64_t)s->size, -1);
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
		_uslub_report_double_free(s, slab, x);
		return;
	}
	free_hook(s, slab, x);
	if (unlikely(cache_hardened(s)) && !s->sheaf_capacity) {
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
		_uslub_report_invalid_free(s, x, slab);
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
		_uslub_debug_slab_free(s, slab, x, addr);
		return;
	}
	if (free_mark_test(s, x, slab_free_mark(s, slab))) {
		_uslub_report_double_free(s, slab, x);
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
		if (_uslub___slab_free(s, slab, x, x, 1, c, s->cpu_partial_slabs != 0))
			stat(c, FREE_SLOWPATH);
		return;
	}
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (_uslub___slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	_uslub_fold_stats(s, &tmp);
}

/*
 * The free miss path (cache.h's inline paths missed), with the public
 * caller's address @addr: a hooked cache's paths (sheaf mode: checks,
 * the free hook, the sheaf push; cpu-slab mode: the leaf, entered by a
 * tail call, which takes its own return address), or the slow path: checks and reports, the sheaf's spare, barn and flush,
 * the slabs.
 */
__noinline void _uslub_slab_free_miss(struct kmem_cache *s, void *x, uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu(s);

	if (READ_ONCE(s->hooks)) {
		if (s->sheaf_capacity)          /* checks, the hook, the sheaf push */
			slab_free_hooked_slow(s, x, addr);
		else                            /* the cpu-slab leaf */
			slab_free_hooked(s, x, c, (uintptr_t)x - (uintptr_t)c->slab_addr,
					 c->freelist);
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
		_uslub_report_invalid_free(s, x, slab);
		return;
	}
	if (free_mark_test(s, x, slab_free_mark(s, slab))) {
		_uslub_report_double_free(s, slab, x);
		return;
	}
	free_mark_set(s, x, slab_free_mark(s, slab));
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (_uslub___slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	_uslub_fold_stats(s, &tmp);
}
