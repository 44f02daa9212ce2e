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
 * The object's memory is not written before its grace period (readers
 * may still read it): the free mark is set by the sheaf's callback. The
 * barriers (uslub_gp_flush/barrier) are the cache layer's (cache/rcu.c):
 * kmem_cache_destroy() uses them.
 */
#include "kmalloc/kmalloc.h"
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
