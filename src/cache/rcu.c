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

/* The rcu_free sheaves of @s (NULL: every cache) handed to the provider;
 * false when there is no provider or @s is not a cache. */
static bool gp_flush(const struct kmem_cache *s)
{
	if (!gp_available())
		return false;
	if (s && cache_bad(s, "kvfree_rcu_barrier_on_cache"))
		return false;
	flush_rcu_sheaves(s);
	return true;
}

__public void uslub_gp_flush(const struct kmem_cache *s)
{
	gp_flush(s);
}

__public void uslub_gp_barrier(const struct kmem_cache *s)
{
	if (!gp_flush(s))
		return;
	/* the callbacks run: sheaves flushed to slabs may have discarded
	 * TYPESAFE_BY_RCU slabs, whose own grace period follows */
	_uslub_gp_wait();
	_uslub_gp_wait();
}
