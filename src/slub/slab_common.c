/*
 * slab_common.c — the slab-level pieces of cache creation and
 * destruction (the kernel's slab_common.c): slab_mutex and the cache list,
 * the cache slot bitmap, the boot caches, shrinking a node, the use of a
 * destroyed cache, and slab_mutex's and list_lock's fork entries.
 */
#include "slub/slub.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t _uslub_slab_mutex = PTHREAD_MUTEX_INITIALIZER;
struct list_head _uslub_slab_caches = LIST_HEAD_INIT(_uslub_slab_caches);
static uint64_t cache_slots[USLUB_MAX_CACHES / 64];   /* slab_mutex */

/* The caches that hold struct kmem_cache and struct kmem_cache_node. */
struct kmem_cache _uslub_boot_kmem_cache, _uslub_boot_kmem_cache_node;

static struct kmem_cache_node boot_nodes[2][MAX_NUMNODES];

/* ------------------------------------------------------------------------
 * Cache creation and destruction
 * ---------------------------------------------------------------------- */
int _uslub_take_slot(void)
{
	for (int i = 0; i < USLUB_MAX_CACHES; i++)
		if (i != CACHE_SLOT_DEAD && !(cache_slots[i / 64] & (1ull << (i % 64)))) {
			cache_slots[i / 64] |= 1ull << (i % 64);
			return i;
		}
	return -1;
}

void _uslub_release_slot(int i)
{
	cache_slots[i / 64] &= ~(1ull << (i % 64));
}

/* Point slot @arg of the cpu area at @base at the empty sheaf (its first
 * use: a flushed slot already does). A per-CPU thread's slot left
 * PCPU_STANDIN, which would send the area's next owner, or the slot's
 * next cache, to the per-CPU leaves: the owner may be a thread without
 * rseq (one whose registration failed), and a per-CPU one stands its
 * slot in again at its first slow path (sheaf/pcpu.c). */
void _uslub_slot_init_main(char *base, void *arg)
{
	struct kmem_cache_cpu *c = (struct kmem_cache_cpu *)(base + *(int *)arg * CPU_SLOT_SIZE);
	if (!c->main || c->main == PCPU_STANDIN)
		WRITE_ONCE(c->main, EMPTY_SHEAF);
	if (c->rcu_free)                /* a slot a destroyed cache left */
		WRITE_ONCE(c->rcu_free, NULL);
	if (c->rec.bytes)               /* its free record too */
		WRITE_ONCE(c->rec.bytes, 0);
	if (c->pcpu_claimed)            /* a thread a fork child lost mid-claim */
		WRITE_ONCE(c->pcpu_claimed, 0);
}

void _uslub_for_each_used_slot(char *base, void (*fn)(char *base, void *slot))
{
	/* by the bitmap's set bits (a walk of all 2048 slots was ~16,000
	 * instructions of every new thread's start) */
	for (int w = 0; w < USLUB_MAX_CACHES / 64; w++)
		for (uint64_t bits = cache_slots[w]; bits; bits &= bits - 1) {
			int i = w * 64 + __builtin_ctzll(bits);
			fn(base, &i);
		}
}

void _uslub_cpu_area_init(char *base)
{
	int dead = CACHE_SLOT_DEAD;
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	_uslub_slot_init_main(base, &dead);
	_uslub_for_each_used_slot(base, _uslub_slot_init_main);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

void _uslub_init_node(struct kmem_cache_node *n)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->list_lock, NULL);
	INIT_LIST_HEAD(&n->partial);
	INIT_LIST_HEAD(&n->isolated);
}

void _uslub_init_cache(struct kmem_cache *s, const char *name, unsigned int flags,
		       void (*ctor)(void *), int slot)
{
	s->flags = flags;
	s->ctor = ctor;
	s->index = slot;
	s->fp_secret = (uintptr_t)_uslub_seed64() | 1;
	s->free_mark = (uintptr_t)_uslub_seed64() | 1;      /* never 0: a live object's */
	s->cpu_offset = (unsigned int)slot * CPU_SLOT_SIZE;
	s->fast_offset = fast_offset_of(s, s->fastpath_off);
	snprintf(s->name, sizeof(s->name), "%s", name);
	INIT_LIST_HEAD(&s->list);
}

__cold struct kmem_cache *_uslub_cache_create_error(const char *name, const char *why)
{
	_uslub_report("uslub: cannot create cache \"%s\": %s\n", name ? name : "(null)", why);
	errno = EINVAL;
	return NULL;
}

/* The slub_debug letters of a new cache: its debug flags, plus what
 * USLUB_DEBUG says for its name. Poisoning is off for a cache with a
 * constructor (the constructed state must survive a free) and for a
 * TYPESAFE_BY_RCU cache (readers may read a freed object), as in SLUB. */
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
	if (ctor || (flags & USLUB_TYPESAFE_BY_RCU))
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

struct kmem_cache *_uslub_cache_prepare(const char *name, size_t size,
					const struct uslub_cache_args *args, unsigned int flags)
{
	static const struct uslub_cache_args none;
	if (!args)
		args = &none;
	size_t align = args->align;
	if (!name || !*name)
		return _uslub_cache_create_error(name, "name is NULL or empty");
	if (!size)
		return _uslub_cache_create_error(name, "size is 0");
	if (align && !IS_POW2(align))
		return _uslub_cache_create_error(name, "align is not a power of two");
	if (align > (PAGE_SIZE << MAX_PAGE_ORDER))
		return _uslub_cache_create_error(name, "align is larger than the largest slab (2 MiB)");
	if (size > (PAGE_SIZE << MAX_PAGE_ORDER))
		return _uslub_cache_create_error(name, "size is larger than the largest slab (2 MiB)");
	if ((flags & USLUB_RANDOM_FREELIST) && (flags & USLUB_NO_RANDOM_FREELIST))
		return _uslub_cache_create_error(name, "both RANDOM_FREELIST and NO_RANDOM_FREELIST");
	if (args->use_freeptr_offset &&
	    (args->freeptr_offset % sizeof(void *) || size < sizeof(void *) ||
	     args->freeptr_offset > size - sizeof(void *)))
		return _uslub_cache_create_error(name, "freeptr_offset is not word aligned inside the object");
	if ((flags & USLUB_TYPESAFE_BY_RCU) && !gp_available())
		return _uslub_cache_create_error(name, "SLAB_TYPESAFE_BY_RCU needs libuslub-rcu "
						 "(liburcu): link -luslub-rcu, or call uslub_rcu_init()");
	if ((size_t)args->useroffset + args->usersize > size)
		return _uslub_cache_create_error(name, "usercopy window (useroffset + usersize) exceeds the object");

	struct kmem_cache tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (want_hardened(flags))
		flags |= SLAB_HARDENED;
	_uslub_init_cache(&tmp, name, flags, args->ctor, 0);
	tmp.fastpath_off = (flags & SLAB_HARDENED) ? FASTPATH_OFF_HARDENED : 0;
	/* a start no other cache's epoch has had (struct free_record): a
	 * record a slot kept from a destroyed cache can never match */
	static uint64_t epoch_base;
	tmp.slab_epoch = __atomic_add_fetch(&epoch_base, 1ull << 40, __ATOMIC_RELAXED);
	if (!(flags & SLAB_NO_OBJ_EXT))
		tmp.debug = cache_debug_flags(name, flags, args->ctor != NULL);
	if (!_uslub_calculate_sizes(&tmp, size, align, args))
		return _uslub_cache_create_error(name, "object (with alignment) is larger than the largest slab");
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
	/* a user cache under ASan: poisoned (kasan.c); slub_debug's own
	 * checks read and write its free objects' bytes instead */
	if (_uslub_kasan && !(flags & SLAB_NO_OBJ_EXT) && !(tmp.debug & USLUB_DBG_PATHS))
		tmp.fastpath_off |= FASTPATH_OFF_ASAN;
	tmp.useroffset = args->useroffset;
	tmp.usersize = args->usersize;

	/* Allocate outside slab_mutex: the allocation slow path may take
	 * thread_lock, which ranks before slab_mutex. */
	struct kmem_cache *s = _uslub_internal_alloc(&_uslub_boot_kmem_cache, USLUB_GFP_ZERO);
	if (!s)
		goto fail;
	*s = tmp;
	INIT_LIST_HEAD(&s->list);
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		s->node[i] = _uslub_internal_alloc(&_uslub_boot_kmem_cache_node, 0);
		if (!s->node[i])
			goto fail;
		_uslub_init_node(s->node[i]);
	}
	if (want_random(flags) && s->objects > 1 && !_uslub_init_random_seq(s))
		goto fail;
	return s;
fail:
	if (s)
		_uslub_cache_free_unpublished(s);
	errno = ENOMEM;
	return NULL;
}

int _uslub_cache_publish(struct kmem_cache *s)
{
	/* thread_lock first (its rank): the new slot's main is set in every
	 * cpu area before any thread can use the cache */
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	int slot = _uslub_take_slot();
	if (slot >= 0) {
		_uslub_for_each_cpu_area(_uslub_slot_init_main, &slot);
		_uslub_pcpu_slot_init(slot);
	}
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);   /* out of order: fine */
	if (slot < 0) {
		uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
		_uslub_report("uslub: cannot create cache \"%s\": all %d cache slots in use\n",
			      s->name, USLUB_MAX_CACHES - 1);
		return -1;
	}
	s->index = slot;
	s->cpu_offset = (unsigned int)slot * CPU_SLOT_SIZE;
	s->fast_offset = fast_offset_of(s, s->fastpath_off);
	list_add_tail(&s->list, &_uslub_slab_caches);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	if (_uslub_option(USLUB_OPT_VERBOSE))
		_uslub_report("uslub: cache %s: object %u size %u align %u offset %u order %u "
			      "objects %u min_partial %u cpu_partial_slabs %u sheaf_capacity %u "
			      "random %d\n", s->name, s->object_size, s->size, s->align, s->offset,
			      s->order, s->objects, s->min_partial, s->cpu_partial_slabs,
			      s->sheaf_capacity, s->random_seq != NULL);
	return 0;
}

void _uslub_cache_free_unpublished(struct kmem_cache *s)
{
	_uslub_free_random_seq(s);
	for (int i = 0; i < MAX_NUMNODES; i++)
		if (s->node[i]) {
			pthread_mutex_destroy(&s->node[i]->list_lock);
			_uslub_internal_free(&_uslub_boot_kmem_cache_node, s->node[i], true);
		}
	_uslub_internal_free(&_uslub_boot_kmem_cache, s, true);
}

struct kmem_cache *_uslub_internal_cache_create(const char *name, size_t size)
{
	struct kmem_cache *s = _uslub_cache_prepare(name, size, NULL, SLAB_INTERNAL);
	if (s && _uslub_cache_publish(s)) {
		_uslub_cache_free_unpublished(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

static void create_boot_cache(struct kmem_cache *s, const char *name, size_t size,
			      struct kmem_cache_node *nodes)
{
	int slot = _uslub_take_slot();
	_uslub_slot_init_main(_uslub_cpu_empty, &slot);      /* no thread has an area yet */
	_uslub_init_cache(s, name, USLUB_HWCACHE_ALIGN | SLAB_NO_OBJ_EXT, NULL, slot);
	_uslub_calculate_sizes(s, size, 0, NULL);
	_uslub_calculate_obj_ext(s, s->flags);
	s->fast_offset = fast_offset_of(s, s->fastpath_off);
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		_uslub_init_node(&nodes[i]);
		s->node[i] = &nodes[i];
	}
	list_add_tail(&s->list, &_uslub_slab_caches);
}

/* Called once from _uslub_init(). */

void _uslub_slub_init(void)
{
	_uslub_kasan_init();
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	int dead = CACHE_SLOT_DEAD;
	_uslub_slot_init_main(_uslub_cpu_empty, &dead);
	create_boot_cache(&_uslub_boot_kmem_cache, "kmem_cache", sizeof(struct kmem_cache), boot_nodes[0]);
	create_boot_cache(&_uslub_boot_kmem_cache_node, "kmem_cache_node",
			  sizeof(struct kmem_cache_node), boot_nodes[1]);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

/* Release the empty slabs of a node partial list (all of them) and sort
 * the rest fullest first, so allocations fill them and the emptiest drain. */
int _uslub_shrink_node(struct kmem_cache *s, struct kmem_cache_node *n, struct kmem_cache_cpu *c)
{
	enum { BUCKETS = 32 };
	struct list_head buckets[BUCKETS];
	struct slab *discard = NULL;
	struct list_head *pos, *tmp;

	for (int i = 0; i < BUCKETS; i++)
		INIT_LIST_HEAD(&buckets[i]);
	node_lock(n);
	list_for_each_safe(pos, tmp, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		uint64_t cnt = slab_counters(slab);
		unsigned int free = FC_OBJECTS(cnt) - FC_INUSE(cnt);
		if (!FC_INUSE(cnt)) {
			_uslub_remove_partial(n, slab);
			slab->next = discard;
			discard = slab;
		} else {
			list_del(&slab->slab_list);
			list_add_tail(&slab->slab_list, &buckets[MIN(free, BUCKETS) - 1]);
		}
	}
	for (int i = 0; i < BUCKETS; i++)
		while (!list_empty(&buckets[i])) {
			struct list_head *e = buckets[i].next;
			list_del(e);
			list_add_tail(e, &n->partial);
		}
	node_unlock(n);
	return (int)_uslub_discard_slabs(s, discard, c);
}

void _uslub_bad_cache(const struct kmem_cache *s, const char *call)
{
	if (!s)
		_uslub_report_error("uslub: %s with a NULL cache\n", call);
	else
		_uslub_report_error("uslub: %s on cache %s (%p), which was destroyed\n", call,
				    s->name, (const void *)s);
	errno = EINVAL;
}

__public const char *uslub_cache_name(const struct kmem_cache *s)
{
	if (!s) {
		_uslub_bad_cache(s, "uslub_cache_name");
		return NULL;
	}
	return s->name;
}

__public size_t uslub_cache_object_size(const struct kmem_cache *s)
{
	return s->object_size;
}

/* ------------------------------------------------------------------------
 * fork
 * ---------------------------------------------------------------------- */
/* fork: slab_mutex, then (after the groups, tags and barn locks: their
 * layers' entries) every cache's list_lock per node, a batch nested in
 * slab_mutex. */
static void slab_mutex_prefork(void)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void slab_mutex_postfork_parent(void)
{
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void slab_mutex_postfork_child(void)
{
	uslub_mutex_reset(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void list_lock_prefork(void)
{
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		for (int i = 0; i < _uslub_nr_nodes(); i++)
			uslub_mutex_lock_nest(&get_node(s, i)->list_lock, RANK_LIST,
					      RANK_SLAB_MUTEX);
	}
}

static void list_lock_postfork_parent(void)
{
	struct kmem_cache *s;
	list_for_each_entry_reverse(s, &_uslub_slab_caches, list) {
		for (int i = _uslub_nr_nodes() - 1; i >= 0; i--)
			uslub_mutex_unlock_nest(&get_node(s, i)->list_lock, RANK_LIST);
	}
}

/* Counters of one slab, for _uslub_slub_recount(). */
static void recount_cb(struct page *head, void *arg)
{
	(void)arg;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || !slab->slab_cache)
		return;
	struct kmem_cache_node *n = get_node(slab->slab_cache, slab_nid(slab));
	n->nr_slabs++;
	n->total_objects += FC_OBJECTS(slab_counters(slab));
	n->total_pages += 1ul << slab_order(slab);
}

/*
 * In a fork child: rebuild every node's slab counters from the slabs
 * themselves. A thread stopped by fork between creating (or discarding) a
 * slab and updating the counters leaves them torn; the slab may leak, the
 * counters must not lie. Single-threaded caller, slab_mutex held.
 */
void _uslub_slub_recount(void)
{
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		for (int i = 0; i < _uslub_nr_nodes(); i++) {
			struct kmem_cache_node *n = get_node(s, i);
			n->nr_slabs = n->total_objects = n->total_pages = 0;
		}
	}
	_uslub_for_each_run(recount_cb, NULL);
}

static void list_lock_postfork_child(void)
{
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		for (int i = 0; i < _uslub_nr_nodes(); i++)
			uslub_mutex_reset_nest(&get_node(s, i)->list_lock, RANK_LIST);
	}
}

/* From _uslub_init(): this file's lifecycle entries (base/lifecycle.h). */
void _uslub_slub_lifecycle_init(void)
{
	static const struct uslub_lifecycle slab_mutex_entry = {
		.name = "slab_mutex",
		.rank = RANK_SLAB_MUTEX,
		.prefork = slab_mutex_prefork,
		.postfork_parent = slab_mutex_postfork_parent,
		.postfork_child = slab_mutex_postfork_child,
	};
	static const struct uslub_lifecycle list_lock_entry = {
		.name = "list_lock",
		.rank = RANK_LIST,
		.prefork = list_lock_prefork,
		.postfork_parent = list_lock_postfork_parent,
		.postfork_child = list_lock_postfork_child,
	};
	_uslub_lifecycle_register(&slab_mutex_entry);
	_uslub_lifecycle_register(&list_lock_entry);
	_uslub_partial_init();                  /* kept empty slabs' purge */
	_uslub_gp_lifecycle_init();             /* rcu.c: drains in flight at fork */
}
