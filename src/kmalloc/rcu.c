/*
 * rcu.c — RCU-deferred freeing in the core (layer kmalloc): the entries
 * behind kfree_rcu(), kfree_rcu_mightsleep() and the kvfree_rcu barriers
 * of <uslub/rcu.h>, which libuslub-rcu exports with liburcu as the
 * grace-period provider (include/uslub/types.h, "grace-period provider").
 *
 * Paths of uslub_gp_kvfree(ptr, head):
 *
 *   a slab object of a cache with per-CPU sheaves and no hooks or
 *   slub_debug, on the local node, not free:   the thread's rcu_free sheaf
 *                                              (sheaf/sheaf.c); one call
 *                                              per full sheaf
 *   anything else (debug, hooked, cpu-slab caches, another node, page
 *   runs, huge mappings; no sheaf to be had):  a call per object through
 *                                              @head, whose callback kfree()s
 *                                              the object (FREE_RCU_SHEAF_FAIL)
 *   ... with @head NULL (kfree_rcu_mightsleep): synchronize, then kfree()
 *   a pointer kfree() would refuse (not uslub's, inside a page run, freed):
 *   reported at once, naming the pointer as passed; never queued
 *
 * uslub_gp_kvfree_nolock(ptr, head) (kfree_rcu_nolock: any context, a
 * signal handler too): the pointer checked from its page descriptor
 * alone (no lock), @head pushed on the core's deferred list (one CAS),
 * handed to the provider by the next drain in an ordinary context, to be
 * freed like the per-object path's; never a provider call, an allocation
 * or a lock here, errno kept.
 *
 * The object's memory is not written before its grace period (readers
 * may still read it): the free mark is set by the sheaf's callback. The
 * barriers (uslub_gp_flush/barrier) are the cache layer's (cache/rcu.c):
 * kmem_cache_destroy() uses them.
 */
#include "kmalloc/kmalloc.h"
#include <errno.h>
#include <string.h>

#define home_node _uslub_home_node

static __cold void no_provider(const char *what, const void *p)
{
	_uslub_report_error("uslub: %s(%p): needs libuslub-rcu (liburcu) for RCU grace periods; "
			    "the object is never freed\n", what, p);
}

/* The start of the allocation @head lies in (at offset < 4096, as the
 * kernel requires of an rcu_head): a slab object, a page run, or a huge
 * mapping (page aligned). */
static void *object_start(void *head)
{
	struct page *page = _uslub_virt_to_head_page(head);
	if (page) {
		unsigned long f = __atomic_load_n(&page->flags, __ATOMIC_ACQUIRE);
		if (f & PG_slab) {
			struct slab *slab = page_slab(page);
			struct kmem_cache *s = slab->slab_cache;
			return index_to_obj(s, slab, obj_to_index(s, slab, head));
		}
		return page_address(page);
	}
	return (void *)((uintptr_t)head & ~(uintptr_t)(PAGE_SIZE - 1));
}

static void kvfree_rcu_cb(struct uslub_rcu_head *head)
{
	gp_callback_begin();
	uslub_kfree(object_start(head));
	gp_callback_end();
}

/* The rcu_free sheaf for @ptr if it can take it. */
static bool free_to_rcu_sheaf(void *ptr)
{
	struct slab *slab = virt_to_slab(ptr);
	if (!slab)
		return false;
	struct kmem_cache *s = slab->slab_cache;
	if (!READ_ONCE(s->rcu_used))
		WRITE_ONCE(s->rcu_used, 1);
	if (!obj_is_valid(s, slab, ptr)) {
		_uslub_report_invalid_free(s, ptr, slab);
		return true;    /* not an object start: never freed */
	}
	if (!s->sheaf_capacity || READ_ONCE(s->hooks) ||
	    (READ_ONCE(s->fastpath_off) & (FASTPATH_OFF_SLUB_DEBUG | FASTPATH_OFF_DEAD)) ||
	    slab_nid(slab) != home_node())
		return false;
	/* a sampled object (cache/sample.c) must be untagged when it is freed,
	 * after its grace period: the per-object path's kfree does that */
	if (sample_free_needed(ptr))
		return false;
	/* no free-mark test here: the object is not touched before its
	 * grace period (a cache miss per object; readers may be reading it);
	 * the sheaf's callback tests and sets the mark (a kfree_rcu of a free
	 * object is reported there) */
	if (unlikely(!this_cpu_is_real()) && !_uslub_thread_init())
		return false;
	return _uslub_sheaf_free_rcu(s, this_cpu(s), ptr);
}

static void count_fail(void *ptr)
{
	struct slab *slab = virt_to_slab(ptr);
	if (!slab)
		return;
	struct kmem_cache *s = slab->slab_cache;
	if (this_cpu_is_real())
		stat(this_cpu(s), FREE_RCU_SHEAF_FAIL);
	else
		ATOMIC_ADD(s->stat_exited[USLUB_FREE_RCU_SHEAF_FAIL], 1);
}

__public void uslub_gp_kvfree(void *ptr, struct uslub_rcu_head *head)
{
	if (USLUB_ZERO_OR_NULL_PTR(ptr))
		return;
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	if (unlikely(!ops)) {
		no_provider(head ? "kfree_rcu" : "kfree_rcu_mightsleep", ptr);
		return;
	}
	/* checked now, while the pointer is known: the callback gets only
	 * @head, and would name the page it lies in (a global's address
	 * rounded down) or free the start of a page run it lies inside */
	if (unlikely(_uslub_kfree_refused(ptr, head ? "kfree_rcu" : "kfree_rcu_mightsleep")))
		return;
	_uslub_gp_drain();
	if (free_to_rcu_sheaf(ptr))
		return;
	count_fail(ptr);
	if (head) {
		gp_call(ops, head, kvfree_rcu_cb);
		return;
	}
	ops->synchronize();
	(void)__atomic_load_n(&_uslub_gp_done, __ATOMIC_ACQUIRE);
	uslub_kfree(ptr);
}

/*
 * kfree_rcu_nolock: what kfree_rcu_nolock can check without a lock. A slab
 * object (its cache's rcu_used set, so destroy waits for it; a free one
 * reported), a page run's start: queued. No page descriptor: a huge
 * mapping is page aligned and has its entry under huge_lock, which a
 * signal handler may not take, so a page-aligned pointer is queued and
 * the callback's kfree() checks it (reporting it there if it is not
 * uslub's), anything else is reported now. Reports name the pointer.
 */
static bool nolock_refused(void *ptr)
{
	struct page *page = _uslub_virt_to_head_page(ptr);
	if (!page) {
		if (!((uintptr_t)ptr & (PAGE_SIZE - 1)))
			return false;
		_uslub_report_error("uslub: kfree_rcu_nolock(%p): not a uslub allocation; "
				    "left alone\n", ptr);
		return true;
	}
	unsigned long f = __atomic_load_n(&page->flags, __ATOMIC_ACQUIRE);
	if ((f & PG_large) && page_address(page) == ptr)
		return false;
	struct slab *slab = page_slab(page);
	struct kmem_cache *s = (f & PG_slab) ? READ_ONCE(slab->slab_cache) : NULL;
	if (!s) {
		_uslub_report_error("uslub: kfree_rcu_nolock(%p): not in a live slab or at the "
				    "start of a page run; left alone\n", ptr);
		return true;
	}
	if (!obj_is_valid(s, slab, ptr)) {
		_uslub_report_error("uslub: %s: kfree_rcu_nolock(%p): not an object start; left "
				    "alone\n", s->name, ptr);
		return true;
	}
	if (!kmem_cache_debug(s) && free_mark_test(s, ptr, slab_free_mark(s, slab))) {
		_uslub_report_error("uslub: %s: kfree_rcu_nolock(%p): the object is already "
				    "free; left alone\n", s->name, ptr);
		return true;
	}
	if (!READ_ONCE(s->rcu_used))
		WRITE_ONCE(s->rcu_used, 1);
	/* counted as the per-object path's, atomically (no cpu slot here) */
	ATOMIC_ADD(s->stat_exited[USLUB_FREE_RCU_SHEAF_FAIL], 1);
	return false;
}

__public void uslub_gp_kvfree_nolock(void *ptr, struct uslub_rcu_head *head)
{
	if (USLUB_ZERO_OR_NULL_PTR(ptr))
		return;
	int saved_errno = errno;
	_uslub_lockdep_nolock_enter();
	if (unlikely(!gp_available()))
		no_provider("kfree_rcu_nolock", ptr);
	else if (!nolock_refused(ptr))
		_uslub_gp_defer_nolock(head, kvfree_rcu_cb);
	_uslub_lockdep_nolock_exit();
	errno = saved_errno;
}
