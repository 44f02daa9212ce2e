/*
 * rcu.c — the kvfree_rcu barriers in the cache layer (kmem_cache_destroy
 * waits with them): every thread's rcu_free sheaf of a cache (or of all)
 * handed to the grace-period provider, then the provider's barrier. The
 * kfree_rcu entry itself is kmalloc/rcu.c's (its fallback frees with
 * kfree()).
 */
#include "cache/internal.h"

/* Every thread's rcu_free sheaf of @s (NULL: of every cache) to the
 * provider: taken under thread_lock (and slab_mutex for the cache list),
 * so deferred, and handed over once both are dropped. */
static void flush_rcu_sheaves(const struct kmem_cache *cs)
{
	struct kmem_cache *s = (struct kmem_cache *)cs;
	struct uslub_thread *t;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	list_for_each_entry(t, &_uslub_threads, link) {
		if (s) {
			if (s->sheaf_capacity)
				_uslub_sheaf_rcu_flush(s, _uslub_thread_cpu(t, s), true);
			continue;
		}
		struct kmem_cache *k;
		list_for_each_entry(k, &_uslub_slab_caches, list)
			if (k->sheaf_capacity && READ_ONCE(k->rcu_used))
				_uslub_sheaf_rcu_flush(k, _uslub_thread_cpu(t, k), true);
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	_uslub_gp_drain();
}

__public void uslub_gp_flush(const struct kmem_cache *s)
{
	if (!gp_available())
		return;
	if (s && cache_bad(s, "kvfree_rcu_barrier_on_cache"))
		return;
	flush_rcu_sheaves(s);
}

__public void uslub_gp_barrier(const struct kmem_cache *s)
{
	if (!gp_available())
		return;
	if (s && cache_bad(s, "kvfree_rcu_barrier_on_cache"))
		return;
	flush_rcu_sheaves(s);
	/* the callbacks run: sheaves flushed to slabs may have discarded
	 * TYPESAFE_BY_RCU slabs, whose own grace period follows */
	_uslub_gp_wait();
	_uslub_gp_wait();
}
