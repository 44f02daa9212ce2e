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
	if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, uslub_cache_object_size(s));
	/* never the slab layer, never set up a cpu area here */
	if (this_cpu_is_real())
		stat(this_cpu(s), ALLOC_PCS);
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

__public void uslub_cache_free(struct kmem_cache *s, void *x)
{
	if (unlikely(!s))
		return free_null_cache();
	slab_free(s, x);      /* NULL is never inside a cpu slab: slow path */
}

static __cold struct kmem_cache *create_error(const char *name, const char *why)
{
	_uslub_report("uslub: cannot create cache \"%s\": %s\n", name ? name : "(null)", why);
	errno = EINVAL;
	return NULL;
}

static void free_cache_struct(struct kmem_cache *s)
{
	for (int i = 0; i < MAX_NUMNODES; i++)
		if (s->node[i]) {
			pthread_mutex_destroy(&s->node[i]->list_lock);
			uslub_cache_free(&_uslub_boot_kmem_cache_node, s->node[i]);
		}
	uslub_cache_free(&_uslub_boot_kmem_cache, s);
}

/* The slub_debug letters of a new cache: its debug flags, plus what
 * USLUB_DEBUG says for its name. Poisoning is off for a cache with a
 * constructor (the constructed state must survive a free), as in SLUB. */
static unsigned int cache_debug_flags(const char *name, unsigned int flags, bool ctor)
{
	unsigned int d = _uslub_debug_flags(_uslub_option_str(USLUB_OPT_DEBUG), name);
	if (flags & USLUB_CONSISTENCY_CHECKS)
		d |= USLUB_DBG_F;
	if (flags & USLUB_RED_ZONE)
		d |= USLUB_DBG_Z;
	if (flags & USLUB_POISON)
		d |= USLUB_DBG_P;
	if (flags & USLUB_STORE_USER)
		d |= USLUB_DBG_U;
	if (flags & USLUB_TRACE)
		d |= USLUB_DBG_T;
	if (flags & USLUB_FAILSLAB)
		d |= USLUB_DBG_A;
	if (ctor)
		d &= ~USLUB_DBG_P;
	return d;
}

static bool want_hardened(unsigned int flags)
{
	return (flags & USLUB_HARDENED_FREELIST) || _uslub_option(USLUB_OPT_FREELIST_HARDENED) == 1;
}

static bool want_random(unsigned int flags)
{
	if (flags & USLUB_NO_RANDOM_FREELIST)
		return false;
	return (flags & USLUB_RANDOM_FREELIST) || _uslub_option(USLUB_OPT_FREELIST_RANDOM);
}

struct kmem_cache *_uslub_cache_create(const char *name, size_t size,
				       const struct uslub_cache_args *args, unsigned int flags)
{
	static const struct uslub_cache_args none;
	if (!args)
		args = &none;
	size_t align = args->align;
	if (!name || !*name)
		return create_error(name, "name is NULL or empty");
	if (!size)
		return create_error(name, "size is 0");
	if (align && !IS_POW2(align))
		return create_error(name, "align is not a power of two");
	if (align > (PAGE_SIZE << MAX_PAGE_ORDER))
		return create_error(name, "align is larger than the largest slab (2 MiB)");
	if (size > (PAGE_SIZE << MAX_PAGE_ORDER))
		return create_error(name, "size is larger than the largest slab (2 MiB)");
	if ((flags & USLUB_RANDOM_FREELIST) && (flags & USLUB_NO_RANDOM_FREELIST))
		return create_error(name, "both RANDOM_FREELIST and NO_RANDOM_FREELIST");
	if (args->use_freeptr_offset &&
	    (args->freeptr_offset % sizeof(void *) || size < sizeof(void *) ||
	     args->freeptr_offset > size - sizeof(void *)))
		return create_error(name, "freeptr_offset is not word aligned inside the object");
	if ((size_t)args->useroffset + args->usersize > size)
		return create_error(name, "usercopy window (useroffset + usersize) exceeds the object");

	struct kmem_cache tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (want_hardened(flags))
		flags |= SLAB_HARDENED;
	_uslub_init_cache(&tmp, name, flags, args->ctor, 0);
	tmp.fastpath_off = (flags & SLAB_HARDENED) ? FASTPATH_OFF_HARDENED : 0;
	if (!(flags & SLAB_NO_OBJ_EXT))
		tmp.debug = cache_debug_flags(name, flags, args->ctor != NULL);
	if (!_uslub_calculate_sizes(&tmp, size, align, args))
		return create_error(name, "object (with alignment) is larger than the largest slab");
	if ((tmp.debug & USLUB_DBG_O) && (tmp.debug & (USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U)) &&
	    get_order(tmp.size) > get_order(size)) {
		/* O, as SLUB's rule: no metadata (red zones, poison, owners)
		 * where it raises the minimum slab order; F and T stay */
		tmp.debug &= ~(USLUB_DBG_Z | USLUB_DBG_P | USLUB_DBG_U);
		_uslub_calculate_sizes(&tmp, size, align, args);
	}
	if (tmp.free_mark_offset)
		tmp.fastpath_off |= FASTPATH_OFF_MARK;
	if (tmp.debug & USLUB_DBG_PATHS) {
		/* every alloc and free on the checked paths: no cpu slabs,
		 * no cpu partial slabs, no sheaves */
		tmp.fastpath_off |= FASTPATH_OFF_SLUB_DEBUG;
		tmp.cpu_partial = tmp.cpu_partial_slabs = 0;
		flags |= SLAB_NO_SHEAVES;
		tmp.flags = flags;
	}
	_uslub_calculate_obj_ext(&tmp, flags);
	if (!(flags & SLAB_NO_OBJ_EXT))
		tmp.fastpath_off |= _uslub_failslab_cache_fastpath_off(&tmp);
	tmp.useroffset = args->useroffset;
	tmp.usersize = args->usersize;

	/* Allocate outside slab_mutex: the allocation slow path may take
	 * thread_lock, which ranks before slab_mutex. */
	struct kmem_cache *s = uslub_cache_alloc_noprof(&_uslub_boot_kmem_cache, USLUB_GFP_ZERO);
	if (!s)
		goto fail;
	*s = tmp;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		s->node[i] = uslub_cache_alloc_noprof(&_uslub_boot_kmem_cache_node, 0);
		if (!s->node[i])
			goto fail;
		_uslub_init_node(s->node[i]);
	}
	if (want_random(flags) && s->objects > 1 && !_uslub_init_random_seq(s))
		goto fail;
	if (_uslub_sheaf_cache_init(s, args->sheaf_capacity))
		goto fail;
	if (s->sheaf_capacity && _uslub_option(USLUB_OPT_FREELIST_HARDENED) == 2) {
		/* hardening by default where it is nearly free: the inline
		 * sheaf paths never read a free pointer */
		flags |= SLAB_HARDENED;
		s->fastpath_off |= FASTPATH_OFF_HARDENED;
	}
	/* thread_lock first (its rank): the new slot's main is set in every
	 * cpu area before any thread can use the cache */
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	int slot = _uslub_take_slot();
	if (slot >= 0)
		_uslub_for_each_cpu_area(_uslub_slot_init_main, &slot);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);   /* out of order: fine */
	if (slot < 0) {
		uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
		_uslub_report("uslub: cannot create cache \"%s\": all %d cache slots in use\n",
			      name, USLUB_MAX_CACHES - 1);
		_uslub_sheaf_cache_destroy(s);
		goto fail;
	}
	uintptr_t secret = s->fp_secret, mark = s->free_mark;
	_uslub_init_cache(s, name, flags, args->ctor, slot);
	s->fp_secret = secret;
	s->free_mark = mark;
	list_add_tail(&s->list, &_uslub_slab_caches);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (_uslub_option(USLUB_OPT_VERBOSE))
		_uslub_report("uslub: cache %s: object %u size %u align %u offset %u order %u "
			      "objects %u min_partial %u cpu_partial_slabs %u sheaf_capacity %u "
			      "random %d\n", s->name, s->object_size, s->size, s->align, s->offset,
			      s->order, s->objects, s->min_partial, s->cpu_partial_slabs,
			      s->sheaf_capacity, s->random_seq != NULL);
	return s;
fail:
	if (s) {
		_uslub_free_random_seq(s);
		free_cache_struct(s);
	}
	errno = ENOMEM;
	return NULL;
}

__public struct kmem_cache *uslub_cache_create_args(const char *name, size_t size,
						    const struct uslub_cache_args *args,
						    unsigned int flags)
{
	if (flags & ~USLUB_CACHE_FLAGS_VALID)
		return create_error(name, "unknown flags");
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
	if (s->sheaf_capacity)
		_uslub_sheaf_cache_shrink(s, c);
	int freed = 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		freed += _uslub_shrink_node(s, get_node(s, i), c);
	if (c == &tmp)
		_uslub_fold_stats(s, c);
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
		while (discard) {
			struct slab *slab = discard;
			discard = slab->next;
			_uslub_discard_slab(s, slab);
		}
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
	WRITE_ONCE(s->fastpath_off, s->fastpath_off | FASTPATH_OFF_DEAD);
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
	/* Quiescence is the caller's promise: flush every thread's cpu state. */
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	struct list_head *pos;
	for (pos = _uslub_threads.next; pos != &_uslub_threads; pos = pos->next) {
		struct uslub_thread *t = list_entry(pos, struct uslub_thread, link);
		_uslub_flush_cpu(s, _uslub_thread_cpu(t, s));
	}
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (s->sheaf_capacity)
		_uslub_sheaf_cache_shrink(s, &tmp);
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
	_uslub_sheaf_cache_destroy(s);
	_uslub_free_random_seq(s);
	kill_cache(s);
	return 0;
}
