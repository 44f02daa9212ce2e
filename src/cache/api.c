/*
 * api.c — the kmem_cache API entry points: allocation and free, cache
 * creation (composing slub, sheaves and fault injection), shrink and
 * destroy (with the destroyed-cache quarantine).
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

/* ------------------------------------------------------------------------
 * Public allocation API
 * ---------------------------------------------------------------------- */
static __cold void *alloc_null_cache(void)
{
	uslub_alloc_tag_cur = NULL;
	_uslub_bad_cache(NULL, "allocation");
	return NULL;
}

__public void *uslub_cache_alloc_noprof(struct kmem_cache *s, uslub_gfp_t gfp)
{
	if (unlikely(!s))
		return alloc_null_cache();
	return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, 0);
}
/* The plain names, as functions (untagged: no tag is left in the slot),
 * for callers without macros. */
__public void *(uslub_cache_alloc)(struct kmem_cache *s, uslub_gfp_t gfp)
{
	uslub_alloc_tag_cur = NULL;
	if (unlikely(!s))
		return alloc_null_cache();
	return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, 0);
}

__public void *uslub_cache_alloc_node_noprof(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	if (unlikely(!s))
		return alloc_null_cache();
	if (node != USLUB_NUMA_NO_NODE && (node < 0 || node >= _uslub_nr_nodes())) {
		uslub_alloc_tag_cur = NULL;      /* nothing allocated: nothing tagged */
		_uslub_report("uslub: %s: alloc on node %d, but there are %d nodes\n",
			      s->name, node, _uslub_nr_nodes());
		errno = EINVAL;
		return NULL;
	}
	return slab_alloc_node(s, gfp, node, 0);
}
__public void *(uslub_cache_alloc_node)(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_cache_alloc_node_noprof(s, gfp, node);
}

__public void *uslub_kmalloc_trace(struct kmem_cache *s, uslub_gfp_t gfp, size_t size)
{
	uslub_alloc_tag_cur = NULL;
	if (unlikely(!s))
		return alloc_null_cache();
	if (unlikely(size > s->object_size)) {
		_uslub_report("uslub: %s: kmalloc_trace of %zu bytes, objects have %u\n", s->name,
			      size, s->object_size);
		errno = EINVAL;
		return NULL;
	}
	return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, size ? size : 1);
}

/* The prefill API's allocation (the sheaf itself is the sheaf layer's):
 * pop the sheaf, then the post-allocation hook. */
__public void *uslub_cache_alloc_from_sheaf_noprof(struct kmem_cache *s, uslub_gfp_t gfp,
						   struct uslub_sheaf *usheaf)
{
	void *obj = _uslub_sheaf_pop_prefilled(s, (struct slab_sheaf *)usheaf, __func__);
	if (!obj) {
		uslub_alloc_tag_cur = NULL;     /* no allocation takes the tag */
		return NULL;
	}
	/* never fails while the sheaf holds objects: the charge may go
	 * past the group's limit (the kernel passes __GFP_NOFAIL here too) */
	_uslub_post_alloc_hook(s, gfp | USLUB_GFP_NOFAIL, 1, &obj);
	if (unlikely(cache_kasan(s)))
		_uslub_kasan_alloc(s, obj, 0, gfp & USLUB_GFP_ZERO);
	else if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, uslub_cache_object_size(s));
	/* never the slab layer, never set up a cpu area here */
	if (this_cpu_is_real())
		stat_pcs_slow(this_cpu(s), 1);
	else
		ATOMIC_ADD(s->stat_exited[USLUB_ALLOC_PCS], 1);
	return obj;
}
__public void *(uslub_cache_alloc_from_sheaf)(struct kmem_cache *s, uslub_gfp_t gfp,
					     struct uslub_sheaf *usheaf)
{
	uslub_alloc_tag_cur = NULL;     /* untagged */
	return uslub_cache_alloc_from_sheaf_noprof(s, gfp, usheaf);
}

static __cold void free_null_cache(void)
{
	_uslub_bad_cache(NULL, "uslub_cache_free");
}

/* The lookup (cache.h slab_free_lookup()), out of line: the record's hit
 * keeps no callee-saved register. */
static __noinline void cache_free_lookup(struct kmem_cache *s, void *x, uintptr_t addr)
{
	slab_free_lookup(s, x, addr);
}

__public void uslub_cache_free(struct kmem_cache *s, void *x)
{
	if (unlikely(!s))
		return free_null_cache();
	if (likely(cache_free_to_pcs_record(this_cpu_fast(s), x, s)))
		return;
	/* NULL is never inside a slab: the miss path */
	cache_free_lookup(s, x, USLUB_CALLER());
}

/* Creation: the slab-level steps (slub/slab_common.c), with the cache's
 * sheaves (and hardening by default for a sheaf cache) between them. */
struct kmem_cache *_uslub_cache_create(const char *name, size_t size,
				       const struct uslub_cache_args *args, unsigned int flags)
{
	struct kmem_cache *s = _uslub_cache_prepare(name, size, args, flags);
	if (!s)
		return NULL;
	if (_uslub_sheaf_cache_init(s, args ? args->sheaf_capacity : 0))
		goto fail;
	if (s->sheaf_capacity && _uslub_option(USLUB_OPT_FREELIST_HARDENED) == 2) {
		/* hardening by default where it is nearly free: the inline
		 * sheaf paths never read a free pointer */
		s->flags |= SLAB_HARDENED;
		s->fastpath_off |= FASTPATH_OFF_HARDENED;
	}
	_uslub_set_pcs_hooks(s);
	if (_uslub_cache_publish(s)) {
		_uslub_sheaf_cache_destroy(s);
		goto fail;
	}
	return s;
fail:
	_uslub_cache_free_unpublished(s);
	errno = ENOMEM;
	return NULL;
}

__public struct kmem_cache *uslub_cache_create_args(const char *name, size_t size,
						    const struct uslub_cache_args *args,
						    unsigned int flags)
{
	if (flags & ~USLUB_CACHE_FLAGS_VALID)
		return _uslub_cache_create_error(name, "unknown flags");
	/* The kernel's rule (create_cache(), 7.0): a free pointer inside the
	 * object would overwrite live data unless a constructor (objects are
	 * freed constructed, and the ctor's fields stay apart from it) or
	 * SLAB_TYPESAFE_BY_RCU (readers may still look at it) says the
	 * object's contents outlive the free. */
	if (args && args->use_freeptr_offset && !args->ctor
#ifdef USLUB_TYPESAFE_BY_RCU
	    && !(flags & USLUB_TYPESAFE_BY_RCU)
#endif
	    )
		return _uslub_cache_create_error(name, "use_freeptr_offset without a ctor or "
						 "SLAB_TYPESAFE_BY_RCU");
	_uslub_init();
	return _uslub_cache_create(name, size, args, flags);
}

__public struct kmem_cache *uslub_cache_create(const char *name, size_t size, size_t align,
					       unsigned int flags, void (*ctor)(void *))
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.align = align;
	args.ctor = ctor;
	return uslub_cache_create_args(name, size, &args, flags);
}

__public int uslub_cache_shrink(struct kmem_cache *s)
{
	if (cache_bad(s, "uslub_cache_shrink"))
		return -1;
	nolock_drain();
	struct kmem_cache_cpu tmp, *c = &tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (this_cpu_is_real()) {
		/* folding moves counters between places readers sum under
		 * thread_lock: hold it so no reader sees them twice or never */
		c = this_cpu(s);
		uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
		_uslub_flush_cpu(s, c);
		uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	}
	if (s->sheaf_capacity) {
		/* per-CPU mode: the ids' sheaves first (remote takes, which
		 * slab_mutex serializes) */
		if (_uslub_pcpu) {
			uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
			_uslub_pcpu_drain_cache(s, c);
			uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
		}
		_uslub_sheaf_cache_shrink(s, c);
	}
	int freed = 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		freed += _uslub_shrink_node(s, get_node(s, i), c);
	if (c == &tmp)
		_uslub_fold_stats(s, c);
	_uslub_gp_drain();      /* the rcu_free sheaf, TYPESAFE slabs, to the provider */
	return freed;
}

struct count_live {
	struct kmem_cache *s;
	unsigned long slabs, objects;
};

static void count_live_cb(struct page *head, void *arg)
{
	struct count_live *cl = arg;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != cl->s)
		return;
	cl->slabs++;
	cl->objects += FC_INUSE(slab_counters(slab));
}

/* Debug caches at destroy: isolated slabs with no object in use go. */
static void discard_isolated(struct kmem_cache *s)
{
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		struct kmem_cache_node *n = get_node(s, i);
		struct slab *discard = NULL;
		struct list_head *pos, *tmp;
		node_lock(n);
		list_for_each_safe(pos, tmp, &n->isolated) {
			struct slab *slab = list_entry(pos, struct slab, slab_list);
			if (FC_INUSE(slab_counters(slab)))
				continue;
			list_del(&slab->slab_list);
			n->nr_isolated--;
			slab->next = discard;
			discard = slab;
		}
		node_unlock(n);
		_uslub_discard_slabs(s, discard, NULL);
	}
}

/* Debug caches: the objects left at destroy, with their alloc owners (the
 * first LEAKS_LISTED of them). */
#define LEAKS_LISTED 32
struct list_leaks {
	struct kmem_cache *s;
	unsigned long seen;
};

static void list_leaks_cb(struct page *head, void *arg)
{
	struct list_leaks *ll = arg;
	struct kmem_cache *s = ll->s;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != s)
		return;
	uint64_t cnt = slab_counters(slab);
	unsigned int objects = FC_OBJECTS(cnt), k = 0;
	uint64_t seen[(MAX_OBJS_PER_SLAB + 64) / 64];
	memset(seen, 0, sizeof(uint64_t) * ((objects + 63) / 64));
	for (void *p = fl_ptr(s, slab, FC_FREELIST(cnt)); p && k++ < objects; p = get_freepointer(s, p)) {
		if (!obj_is_valid(s, slab, p))
			break;
		unsigned int idx = obj_to_index(s, slab, p);
		seen[idx / 64] |= 1ull << (idx % 64);
	}
	for (unsigned int i = 0; i < objects; i++)
		if (!(seen[i / 64] & (1ull << (i % 64))) && ll->seen++ < LEAKS_LISTED)
			_uslub_debug_print_leak(s, slab, index_to_obj(s, slab, i));
}

/*
 * Destroyed caches: the struct stays allocated in a FIFO of the last
 * QUARANTINE destroyed ones, marked FASTPATH_OFF_DEAD, its cpu slot the
 * dead one (always empty) and its nodes freed, so that an allocation,
 * free, validate, shrink or second destroy through a stale pointer is
 * reported instead of reaching freed memory; older ones are freed.
 */
#define QUARANTINE 64
static struct kmem_cache *quarantine[QUARANTINE];   /* slab_mutex */
static unsigned int quarantine_next;                 /* slab_mutex */

static void kill_cache(struct kmem_cache *s)
{
	for (int i = 0; i < MAX_NUMNODES; i++)
		if (s->node[i]) {
			pthread_mutex_destroy(&s->node[i]->list_lock);
			uslub_cache_free(&_uslub_boot_kmem_cache_node, s->node[i]);
			s->node[i] = NULL;
		}
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	fastpath_off_set(s, FASTPATH_OFF_DEAD);
	WRITE_ONCE(s->cpu_offset, (unsigned int)CACHE_SLOT_DEAD * CPU_SLOT_SIZE);
	struct kmem_cache *old = quarantine[quarantine_next % QUARANTINE];
	quarantine[quarantine_next++ % QUARANTINE] = s;
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (old)
		uslub_cache_free(&_uslub_boot_kmem_cache, old);
}

__public int uslub_cache_destroy(struct kmem_cache *s)
{
	if (!s)
		return 0;
	if (s == &_uslub_boot_kmem_cache || s == &_uslub_boot_kmem_cache_node) {
		errno = EINVAL;
		return -1;
	}
	if (cache_bad(s, "uslub_cache_destroy"))
		return -1;
	/* As the kernel's: objects given to kfree_rcu wait out their grace
	 * period first (kvfree_rcu_barrier_on_cache); no uslub lock held. */
	bool typesafe = s->flags & USLUB_TYPESAFE_BY_RCU;
	if (READ_ONCE(s->rcu_used) || typesafe)
		uslub_gp_barrier(s);
	nolock_drain();      /* the kernel's defer_free_barrier() */
	/* Quiescence is the caller's promise: flush every thread's cpu state. */
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	struct uslub_thread *t;
	list_for_each_entry(t, &_uslub_threads, link) {
		_uslub_flush_cpu(s, _uslub_thread_cpu(t, s));
	}
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (s->sheaf_capacity) {
		_uslub_pcpu_drain_cache(s, &tmp);   /* every id's words left empty */
		_uslub_sheaf_cache_shrink(s, &tmp);
	}
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		_uslub_shrink_node(s, get_node(s, i), &tmp);
	_uslub_fold_stats(s, &tmp);
	if (kmem_cache_debug(s))
		discard_isolated(s);

	unsigned long slabs = 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		slabs += READ_ONCE(get_node(s, i)->nr_slabs);
	if (slabs) {
		struct count_live cl = { s, 0, 0 };
		_uslub_for_each_run(count_live_cb, &cl);
		uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
		uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
		_uslub_gp_drain();
		_uslub_report_error("uslub: cache %s: %lu objects remaining in %lu slabs on destroy; "
				    "cache left intact\n", s->name, cl.objects, cl.slabs);
		if (kmem_cache_debug(s)) {
			struct list_leaks ll = { s, 0 };
			_uslub_for_each_run(list_leaks_cb, &ll);
			if (ll.seen > LEAKS_LISTED)
				_uslub_debug_emit("INFO: %s: ... and %lu more objects\n", s->name,
						  ll.seen - LEAKS_LISTED);
			_uslub_debug_flush();
		}
		errno = EBUSY;
		return -1;
	}
	list_del(&s->list);
	_uslub_release_slot(s->index);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	/* TYPESAFE_BY_RCU: the slabs discarded above go back to the page
	 * level after their grace period; wait for it, as the kernel does */
	if (typesafe)
		_uslub_gp_wait();
	_uslub_sheaf_cache_destroy(s);
	_uslub_free_random_seq(s);
	kill_cache(s);
	return 0;
}
