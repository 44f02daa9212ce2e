/*
 * rcu.c — grace periods for the core (layer slub): the provider a
 * grace-period library registers (libuslub-rcu: liburcu), the list of what
 * was deferred while a uslub lock was held, and SLAB_TYPESAFE_BY_RCU's
 * delayed slab release.
 *
 * The core stays libc-only: it never calls liburcu, only the provider's
 * three functions, and only with no uslub lock held (liburcu's call_rcu
 * may allocate, and its worker thread runs our callbacks, which take
 * uslub locks). A head that must go to the provider while a lock is held
 * (a slab discarded by a flush under thread_lock, an rcu_free sheaf taken
 * from a thread that exits) is pushed on gp_deferred, a lock-free stack,
 * and handed over by the next _uslub_gp_drain() made with no lock held:
 * the next kfree_rcu, barrier, shrink or destroy, a thread's exit, or the
 * next such discard. Objects wait longer then; nothing is freed early.
 */
#include "slub/slub.h"
#include <errno.h>

const struct uslub_gp_ops *_uslub_gp_ops;
unsigned long _uslub_gp_seq;
unsigned long _uslub_gp_done;

/* Heads waiting for a lock-free moment, linked through ->next. Pushed
 * with a CAS, taken whole with an exchange (so no ABA). */
static struct uslub_rcu_head *gp_deferred;

__public int uslub_gp_register(const struct uslub_gp_ops *ops)
{
	if (!ops || !ops->call || !ops->rcu_barrier || !ops->synchronize) {
		errno = EINVAL;
		return -1;
	}
	/* the core first: its fork handlers are registered before the
	 * provider's, so the provider's prepare handler (liburcu pauses its
	 * call_rcu workers) runs before uslub takes its locks */
	_uslub_init();
	const struct uslub_gp_ops *none = NULL;
	if (!__atomic_compare_exchange_n(&_uslub_gp_ops, &none, ops, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) && none != ops) {
		errno = EBUSY;
		return -1;
	}
	return 0;
}

__public const char *uslub_gp_provider(void)
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	return ops ? ops->name : NULL;
}

void _uslub_gp_defer(struct uslub_rcu_head *head, void (*func)(struct uslub_rcu_head *head))
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	head->func = func;
	if (ops && !_uslub_locks_held) {
		gp_call(ops, head, func);
		return;
	}
	struct uslub_rcu_head *old = __atomic_load_n(&gp_deferred, __ATOMIC_RELAXED);
	do {
		head->next = old;
	} while (!__atomic_compare_exchange_n(&gp_deferred, &old, head, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

void _uslub_gp_drain(void)
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	if (!ops || _uslub_locks_held || !__atomic_load_n(&gp_deferred, __ATOMIC_RELAXED))
		return;
	struct uslub_rcu_head *head = __atomic_exchange_n(&gp_deferred, NULL, __ATOMIC_ACQUIRE);
	while (head) {
		struct uslub_rcu_head *next = head->next;
		gp_call(ops, head, head->func);
		head = next;
	}
}

bool _uslub_gp_wait(void)
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	if (!ops || _uslub_locks_held)
		return false;
	_uslub_gp_drain();
	unsigned long seq = __atomic_load_n(&_uslub_gp_seq, __ATOMIC_RELAXED);
	ops->rcu_barrier();
	(void)__atomic_load_n(&_uslub_gp_done, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&_uslub_gp_seq, __ATOMIC_RELAXED) != seq ||
	       __atomic_load_n(&gp_deferred, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------
 * SLAB_TYPESAFE_BY_RCU: the second half of discard_slab (new_slab.c),
 * after a grace period. The slab left every list and count at discard;
 * until here its pages stay a slab of its cache (PG_slab, slab_cache), so
 * a reader's stale pointer still points into an object of that cache.
 * Its rcu_head overlays slab_list (free since the slab is on no list).
 * ---------------------------------------------------------------------- */
static_assert(sizeof(struct uslub_rcu_head) == sizeof(struct list_head),
	      "a slab's rcu_head overlays its slab_list");

static void rcu_free_slab(struct uslub_rcu_head *head)
{
	struct slab *slab = (struct slab *)((char *)head - offsetof(struct slab, slab_list));
	gp_callback_begin();
	struct kmem_cache *s = slab->slab_cache;
	__atomic_store_n(&slab->__page_flags, slab->__page_flags & ~PG_slab, __ATOMIC_RELAXED);
	slab_clear_fast_word(slab);
	if (cache_kasan(s))     /* the never-allocated slots and the tail */
		_uslub_kasan_discard_slab(s, slab);
	slab->slab_cache = NULL;
	_uslub_free_pages(slab_page(slab));
	gp_callback_end();
}

void _uslub_discard_slab_rcu(struct slab *slab)
{
	_uslub_gp_defer((struct uslub_rcu_head *)&slab->slab_list, rcu_free_slab);
}
