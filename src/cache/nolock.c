/*
 * nolock.c — the any-context allocation and free (the kernel's
 * kmalloc_nolock()/kfree_nolock(), 6.18), and the deferred frees they
 * leave behind.
 *
 * In userspace "any context" means: from a signal handler, including one
 * that interrupted uslub itself in the same thread (inside malloc,
 * kmalloc, a cache's alloc or free, holding a uslub lock), and
 * re-entrantly. So these paths never touch what the interrupted code may
 * be half-way through:
 *
 *   - no cpu slot: the inline sheaf pop/push and the cpu freelist are a
 *     few plain loads and stores on the thread's own slot, which a handler
 *     in the same thread would corrupt. Counters go to a slot on the
 *     stack, folded into the cache with atomics.
 *   - trylocks only (uslub_mutex_trylock: list_lock, then the page node
 *     lock under it, in rank order). A lock the interrupted code holds
 *     fails the trylock like one another thread holds. The lockdep builds
 *     abort on any blocking lock inside these calls.
 *   - lock-free steps only otherwise: the slab state word's CAS (a free
 *     pushes onto its slab like a remote free), the free mark.
 *   - nothing allocates: no new node memory (no mmap), no extension
 *     array, no sheaf; nothing that uses the thread's stock or tag
 *     counters (USLUB_GFP_ACCOUNT charges the group straight, under
 *     groups_lock tried; objects are not tagged); no failslab (the
 *     kernel skips slab_pre_alloc_hook too); no slub_debug (its reports
 *     are buffered per thread).
 *
 * kfree_nolock() of an object it cannot free that way (list_lock taken
 * for the list move the free needs; a slub_debug cache; an object charged
 * or tagged, whose uncharge needs the thread's stock) defers it: a
 * lock-free stack (a Treiber stack, pushed with a CAS and emptied with
 * one exchange, so no ABA) linked through each object's free pointer
 * word, drained by the next ordinary allocation or free slow path, by
 * kmem_cache_shrink() and by kmem_cache_destroy() -- the kernel's llist
 * and irq_work.
 */
#include "cache/internal.h"
#include "base/lifecycle.h"
#include <string.h>

void *_uslub_nolock_deferred;            /* atomic: the deferred stack */
static unsigned long deferred_pushed;    /* atomic: objects ever deferred */
static unsigned long deferred_drained;   /* atomic: objects ever drained */

/* The deferred stack's link: the object's free pointer word, stored
 * plain (not hardened: the stack never hands it to a user). The word
 * never overlaps the free mark, and a debug cache checks it only in free
 * objects. */
static inline void **deferred_link(const struct kmem_cache *s, void *x)
{
	return (void **)((char *)x + s->offset);
}

static void defer_free(struct kmem_cache *s, void *x);

/*
 * USLUB_GFP_ACCOUNT: charge @obj (just taken) to the thread's current
 * group straight (ext/: groups_lock tried, no stock), switching the cache
 * to on-demand extensions if it must (slab_mutex tried). Returns @obj, or
 * NULL with @obj given back when the charge is refused (a lock taken, the
 * limit). An object without a word for its objcg (an on-demand cache's
 * slab without its array, a tag-only slab not widened yet: making either
 * allocates) is handed out uncharged, as the kernel does when its
 * metadata allocation fails.
 */
static void *charge_nolock(struct kmem_cache *s, void *obj, struct kmem_cache_cpu *c)
{
	struct slab *slab = virt_to_slab(obj);
	if ((READ_ONCE(s->hooks) & HOOK_ACCOUNT) || _uslub_obj_ext_enable_on_demand_try(s)) {
		struct obj_ext ext = slab_obj_ext(s, slab, obj);
		if (!ext.objcg)
			return obj;      /* no array, or a tag-only slab: see above */
		bool refused;
		struct obj_cgroup *objcg = _uslub_charge_nolock(s->charge, &refused);
		if (!refused) {
			WRITE_ONCE(*ext.objcg, objcg);
			return obj;
		}
	}
	free_mark_set(s, obj, slab_free_mark(s, slab));
	if (!_uslub_slab_free_nolock(s, slab, obj, c)) {
		defer_free(s, obj);          /* counted as allocated: the drain counts its free */
		stat(c, ALLOC_SLOWPATH);
	}
	return NULL;
}

/* The lockdep builds check the whole call: trylocks only. */
void *_uslub_cache_alloc_nolock(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	struct kmem_cache_cpu tmp;
	void *obj = NULL;
	memset(&tmp, 0, sizeof(tmp));
	_uslub_lockdep_nolock_enter();
	if (!(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD) && !kmem_cache_debug(s))
		obj = _uslub_slab_alloc_nolock(s, node, &tmp);
	if (obj && (gfp & USLUB_GFP_ACCOUNT) && !(s->flags & SLAB_NO_OBJ_EXT) &&
	    READ_ONCE(_uslub_tls.cur_objcg))
		obj = charge_nolock(s, obj, &tmp);
	if (obj) {
		stat(&tmp, ALLOC_SLOWPATH);
		if (cache_kasan(s))          /* unpoisoned (and zeroed) under ASan */
			_uslub_kasan_alloc(s, obj, 0, gfp & USLUB_GFP_ZERO);
		else if (gfp & USLUB_GFP_ZERO)
			memset(obj, 0, s->object_size);
	} else {
		stat(&tmp, ALLOC_NOLOCK_FAIL);
	}
	_uslub_fold_stats(s, &tmp);
	_uslub_lockdep_nolock_exit();
	return obj;
}

/* Does freeing @x need what only a normal call may do? */
static bool free_needs_defer(struct kmem_cache *s, struct slab *slab, void *x)
{
	if (kmem_cache_debug(s))
		return true;
	if (sample_free_needed(x))
		return true;            /* maybe sampled: the untag takes list_lock */
	if (!READ_ONCE(s->hooks))
		return false;
	struct obj_ext ext = slab_obj_ext(s, slab, x);
	return obj_ext_objcg(ext) || obj_ext_tag(ext);
}

static void defer_free(struct kmem_cache *s, void *x)
{
	ATOMIC_ADD(deferred_pushed, 1);      /* before: a drain's bound covers it */
	void *old = __atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED);
	do {
		meta_store(deferred_link(s, x), old);
	} while (!__atomic_compare_exchange_n(&_uslub_nolock_deferred, &old, x, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static void free_nolock(void *x);

/* The lockdep builds check the whole call: trylocks only. */
void _uslub_cache_free_nolock(void *x)
{
	_uslub_lockdep_nolock_enter();
	free_nolock(x);
	_uslub_lockdep_nolock_exit();
}

static void free_nolock(void *x)
{
	struct slab *slab = virt_to_slab(x);
	struct kmem_cache *s = slab ? READ_ONCE(slab->slab_cache) : NULL;
	if (unlikely(!s)) {
		_uslub_report_error("uslub: kfree_nolock: %p is not in a live slab; left alone\n",
				    x);
		return;
	}
	if (unlikely(!obj_is_valid(s, slab, x))) {
		_uslub_report_error("uslub: %s: kfree_nolock: %p is not an object start; left "
				    "alone\n", s->name, x);
		return;
	}
	uintptr_t mark = slab_free_mark(s, slab);
	if (!kmem_cache_debug(s) && free_mark_test(s, x, mark)) {
		_uslub_report_error("uslub: %s: kfree_nolock: double free of %p: the object "
				    "is already free; left alone\n", s->name, x);
		return;
	}
	if (cache_kasan(s))                  /* poisoned before it is published */
		_uslub_kasan_slab_free(s, x);
	if (!kmem_cache_debug(s))
		free_mark_set(s, x, mark);   /* before anyone else can take it */
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	bool freed = false;
	if (!free_needs_defer(s, slab, x))
		freed = _uslub_slab_free_nolock(s, slab, x, &tmp);
	if (freed) {
		stat(&tmp, FREE_SLOWPATH);
	} else {
		defer_free(s, x);
		stat(&tmp, FREE_NOLOCK_DEFER);
	}
	_uslub_fold_stats(s, &tmp);
}

/* A deferred object, freed as an ordinary free would (its checks done
 * when it was deferred): slub_debug's free, or the hooks and its slab. */
static void free_deferred(void *x, struct kmem_cache *s, struct slab *slab)
{
	if (sample_free_needed(x))
		_uslub_sample_free(s, slab, x);
	if (kmem_cache_debug(s)) {
		_uslub_debug_slab_free(s, slab, x, 0);
		return;
	}
	if (READ_ONCE(s->hooks))
		free_hook(s, slab, x);
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (_uslub___slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	_uslub_fold_stats(s, &tmp);
}

__cold __noinline void _uslub_nolock_drain_slow(void)
{
	void *x = __atomic_exchange_n(&_uslub_nolock_deferred, NULL, __ATOMIC_ACQUIRE);
	/* a slub_debug object deferred twice (a double kfree_nolock, which
	 * only its debug free detects) makes the chain a cycle: walk no more
	 * than was ever deferred and not yet drained. Drained is read first:
	 * a drain that took a later chain and finished meanwhile added its
	 * objects to drained, and they are in pushed too only if pushed is
	 * read after (read the other way, the bound could fall below this
	 * chain's length, leaving objects unfreed behind a false "cycle") */
	unsigned long drained = __atomic_load_n(&deferred_drained, __ATOMIC_ACQUIRE);
	unsigned long bound = __atomic_load_n(&deferred_pushed, __ATOMIC_ACQUIRE) - drained;
	unsigned long n = 0;
	while (x && n < bound) {
		struct slab *slab = virt_to_slab(x);
		struct kmem_cache *s = slab->slab_cache;
		void *next = (void *)meta_load(deferred_link(s, x));
		free_deferred(x, s, slab);
		n++;
		x = next;
	}
	ATOMIC_ADD(deferred_drained, n);
	if (unlikely(x))
		_uslub_report_error("uslub: kfree_nolock: the deferred frees form a cycle (an "
				    "object freed twice?); %lu freed, the rest left alone\n", n);
}

static void nolock_thread_exit(void *area)
{
	(void)area;
	nolock_drain();
}

static const struct uslub_lifecycle nolock_lifecycle = {
	.name = "nolock_deferred",
	.rank = LIFECYCLE_UNLOCKED,
	.thread_exit = nolock_thread_exit,
};

void _uslub_nolock_lifecycle_init(void)
{
	_uslub_lifecycle_register(&nolock_lifecycle);
}
