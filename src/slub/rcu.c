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
 * the next kfree_rcu, barrier, shrink or destroy, a thread's exit, the
 * next such discard, or the end of one of our callbacks (in the
 * provider's worker). Objects wait longer then; nothing is freed early.
 *
 * kfree_rcu_nolock() (any context: a signal handler too) only ever
 * pushes here (_uslub_gp_defer_nolock): liburcu's call_rcu is not
 * async-signal-safe (design.md §12 says what it does), the push is one
 * CAS on a word of the object's own rcu_head. A head given twice would
 * close the list into a cycle; the drain finds one before handing
 * anything over (the heads' links are the provider's once handed over).
 */
#include "slub/slub.h"
#include "base/lifecycle.h"
#include <errno.h>
#include <sched.h>

const struct uslub_gp_ops *_uslub_gp_ops;
unsigned long _uslub_gp_seq;
unsigned long _uslub_gp_done;

/* Heads waiting for a lock-free moment, linked through ->next. Pushed
 * with a CAS, taken whole with an exchange (so no ABA). Every push counts
 * in gp_pushed first, every hand-over in gp_handed after: a list taken
 * whole has at most gp_pushed - gp_handed heads, unless it is a cycle. */
struct uslub_rcu_head *_uslub_gp_deferred;
#define gp_deferred _uslub_gp_deferred
static unsigned long gp_pushed;         /* atomic */
static unsigned long gp_handed;         /* atomic */
/* Drains between their exchange and their last hand-over: a barrier
 * waits them out, so what was deferred before it (a kfree_rcu_nolock that
 * returned) is with the provider before it waits there. */
static unsigned long gp_draining;       /* atomic */

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

/* Signal-safe: a handler's push between this one's load and its CAS
 * makes the CAS fail and retry; no lock, no call. */
void _uslub_gp_defer_nolock(struct uslub_rcu_head *head,
			    void (*func)(struct uslub_rcu_head *head))
{
	head->func = func;
	ATOMIC_ADD(gp_pushed, 1);            /* before: a drain's bound covers it */
	struct uslub_rcu_head *old = __atomic_load_n(&gp_deferred, __ATOMIC_RELAXED);
	do {
		head->next = old;
	} while (!__atomic_compare_exchange_n(&gp_deferred, &old, head, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

void _uslub_gp_defer(struct uslub_rcu_head *head, void (*func)(struct uslub_rcu_head *head))
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	if (ops && !_uslub_locks_held) {
		head->func = func;
		gp_call(ops, head, func);
		return;
	}
	_uslub_gp_defer_nolock(head, func);
}

/* How many distinct heads the list at @head has. A list longer than
 * @bound is a cycle, from a head pushed twice: then the count of its
 * distinct heads, by Brent's cycle finding, and *@cycle. Reads only. */
static unsigned long distinct_heads(struct uslub_rcu_head *head, unsigned long bound, bool *cycle)
{
	unsigned long n = 0;
	struct uslub_rcu_head *h = head;
	while (h && n <= bound) {
		h = h->next;
		n++;
	}
	*cycle = h != NULL;
	if (!*cycle)
		return n;
	/* Brent: the cycle's length lam, then its first head mu steps in */
	unsigned long power = 1, lam = 1;
	struct uslub_rcu_head *tortoise = head, *hare = head->next;
	while (tortoise != hare) {
		if (!hare) {            /* no cycle after all: the bound was low */
			*cycle = false;
			for (h = head, n = 0; h; h = h->next)
				n++;
			return n;
		}
		if (power == lam) {
			tortoise = hare;
			power *= 2;
			lam = 0;
		}
		hare = hare->next;
		lam++;
	}
	unsigned long mu = 0;
	tortoise = hare = head;
	for (unsigned long i = 0; i < lam; i++)
		hare = hare->next;
	while (tortoise != hare) {
		tortoise = tortoise->next;
		hare = hare->next;
		mu++;
	}
	return mu + lam;
}

void _uslub_gp_drain_slow(void)
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	if (!ops || _uslub_locks_held)
		return;
	__atomic_add_fetch(&gp_draining, 1, __ATOMIC_SEQ_CST);
	struct uslub_rcu_head *head = __atomic_exchange_n(&gp_deferred, NULL, __ATOMIC_SEQ_CST);
	if (!head) {
		__atomic_sub_fetch(&gp_draining, 1, __ATOMIC_RELEASE);
		return;
	}
	/* handed first: whatever it counts was pushed before, so pushed
	 * (read after, and after the exchange) counts it and this list */
	unsigned long handed = __atomic_load_n(&gp_handed, __ATOMIC_ACQUIRE);
	unsigned long bound = __atomic_load_n(&gp_pushed, __ATOMIC_ACQUIRE) - handed;
	bool cycle;
	unsigned long n = distinct_heads(head, bound, &cycle);
	if (unlikely(cycle))
		_uslub_report_error("uslub: kfree_rcu_nolock: a head was given twice (an object "
				    "freed twice?); each of the %lu heads waiting is freed once\n", n);
	for (unsigned long i = 0; i < n; i++) {
		struct uslub_rcu_head *next = head->next;
		gp_call(ops, head, head->func);
		head = next;
	}
	__atomic_add_fetch(&gp_handed, n, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&gp_draining, 1, __ATOMIC_RELEASE);
}

bool _uslub_gp_wait(void)
{
	const struct uslub_gp_ops *ops = __atomic_load_n(&_uslub_gp_ops, __ATOMIC_ACQUIRE);
	if (!ops || _uslub_locks_held)
		return false;
	/* the exchange even when the list looks empty (it orders the load of
	 * gp_draining after any drain that emptied it), then wait out the
	 * drains in flight: another thread's, or the provider's worker at the
	 * end of a callback (neither waits for this thread) */
	_uslub_gp_drain_slow();
	while (__atomic_load_n(&gp_draining, __ATOMIC_SEQ_CST))
		sched_yield();
	unsigned long seq = __atomic_load_n(&_uslub_gp_seq, __ATOMIC_RELAXED);
	ops->rcu_barrier();
	(void)__atomic_load_n(&_uslub_gp_done, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&_uslub_gp_seq, __ATOMIC_RELAXED) != seq ||
	       __atomic_load_n(&gp_deferred, __ATOMIC_RELAXED);
}

/* A fork child has none of the drains other threads had in flight (their
 * heads are lost to it, never freed early): none to wait out. */
static void gp_postfork_child(void)
{
	__atomic_store_n(&gp_draining, 0, __ATOMIC_RELAXED);
}

void _uslub_gp_lifecycle_init(void)
{
	static const struct uslub_lifecycle gp_entry = {
		.name = "gp_deferred",
		.rank = LIFECYCLE_UNLOCKED,
		.postfork_child = gp_postfork_child,
	};
	_uslub_lifecycle_register(&gp_entry);
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
