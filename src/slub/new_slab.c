/*
 * new_slab.c — a new slab and its end: per-cache secrets and random
 * sequences, per-thread slab offsets, the allocation-order iterator
 * (deferred freelist construction, seed 000), allocate_slab() and
 * discard_slab().
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

static uint32_t slab_generation;    /* slabs made (wraps): each one's free mark */

/* ------------------------------------------------------------------------
 * Randomness: per-cache secrets and sequences, per-thread slab offsets
 * ---------------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 64 random bits from the kernel (getrandom), or a clock/address mix. */
uint64_t _uslub_seed64(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&v ^
	    ((uint64_t)getpid() << 16);
	return splitmix64(&v);
}

/* Cheap per-thread random numbers for slab start offsets (not secrets). */
static uint64_t thread_random(void)
{
	if (unlikely(!_uslub_tls.rnd))
		_uslub_tls.rnd = _uslub_seed64() | 1;
	return splitmix64(&_uslub_tls.rnd);
}

/* CONFIG_SLAB_FREELIST_RANDOM: a random permutation of [0, s->objects),
 * in pages from the page provider (freed with the cache). */
bool _uslub_init_random_seq(struct kmem_cache *s)
{
	size_t bytes = (size_t)s->objects * sizeof(uint16_t);
	struct page *page = _uslub_alloc_pages(get_order(bytes), 0);
	if (!page)
		return false;
	uint16_t *seq = page_address(page);
	uint64_t st = _uslub_seed64();
	for (unsigned int i = 0; i < s->objects; i++)
		seq[i] = (uint16_t)i;
	for (unsigned int i = s->objects - 1; i > 0; i--) {        /* Fisher-Yates */
		unsigned int j = (unsigned int)(splitmix64(&st) % (i + 1));
		uint16_t t = seq[i];
		seq[i] = seq[j];
		seq[j] = t;
	}
	s->random_seq = seq;
	return true;
}

void _uslub_free_random_seq(struct kmem_cache *s)
{
	if (s->random_seq)
		_uslub_free_pages(_uslub_virt_to_head_page(s->random_seq));
	s->random_seq = NULL;
}

/* ------------------------------------------------------------------------
 * Free objects of a new slab in allocation order (seed 000): one iterator
 * for the plain order (0, 1, 2, ...) and the random one. A random slab
 * starts at a random position of the cache's sequence and wraps; a slab of
 * the fallback order (fewer objects) skips the indices it does not have.
 * ---------------------------------------------------------------------- */
struct slab_obj_iter {
	char *start;
	size_t size;
	const uint16_t *seq;         /* NULL: plain order */
	unsigned int pos, seq_len, objects;
};

static __always_inline void slab_obj_iter_init(struct slab_obj_iter *it, const struct kmem_cache *s,
					       const struct slab *slab, unsigned int objects)
{
	it->start = slab_obj_base(s, slab);
	it->size = s->size;
	it->seq = s->random_seq;
	it->seq_len = s->objects;
	it->objects = objects;
	it->pos = it->seq ? (unsigned int)(thread_random() % it->seq_len) : 0;
}

static __always_inline void *slab_obj_iter_next(struct slab_obj_iter *it)
{
	unsigned int idx;
	if (likely(!it->seq)) {
		idx = it->pos++;
	} else {
		do {
			idx = it->seq[it->pos];
			if (++it->pos == it->seq_len)
				it->pos = 0;
		} while (unlikely(idx >= it->objects));
	}
	return it->start + (size_t)idx * it->size;
}

/* Chain the next @cnt objects of @it (of @slab) into a freelist; returns
 * its head (NULL for cnt == 0). The objects linked are free, so they get
 * the slab's free mark with their free pointer (their lines are written
 * anyway): a free of a stale pointer into an earlier slab on these pages
 * is then refused like any double free. Debug caches check their
 * freelists instead. */
static void *slab_obj_iter_chain(const struct kmem_cache *s, const struct slab *slab,
				 struct slab_obj_iter *it, unsigned int cnt)
{
	if (!cnt)
		return NULL;
	bool mark = !kmem_cache_debug(s);
	uintptr_t m = slab_free_mark(s, slab);
	void *head = slab_obj_iter_next(it), *prev = head;
	for (unsigned int i = 1; i < cnt; i++) {
		void *obj = slab_obj_iter_next(it);
		set_freepointer(s, prev, obj);
		if (mark)
			free_mark_set(s, prev, m);
		prev = obj;
	}
	set_freepointer(s, prev, NULL);
	if (mark)
		free_mark_set(s, prev, m);
	return head;
}

/* ------------------------------------------------------------------------
 * Slab creation and destruction
 * ---------------------------------------------------------------------- */

/*
 * A new slab, private to the caller. Deferred freelist construction
 * (seed 000): no freelist is built; the state word says every object is
 * taken (freelist none, inuse == objects) and the caller hands objects out
 * with new_slab_objects(). With USLUB_EAGER_FREELIST (the kernel before
 * 7.1, kept for comparison) the whole freelist is built here, in the same
 * iterator order, and inuse == 0.
 */
static __always_inline struct slab *allocate_slab(struct kmem_cache *s, int node,
						  struct kmem_cache_cpu *c, bool nolock)
{
	unsigned int objects = s->objects;
	struct page *page = nolock ? _uslub_alloc_pages_nolock(s->order, node) :
				     _uslub_alloc_pages(s->order, node);

	if (unlikely(!page) && s->min_order < s->order) {
		page = nolock ? _uslub_alloc_pages_nolock(s->min_order, node) :
				_uslub_alloc_pages(s->min_order, node);
		objects = s->min_objects_fallback;
		if (page)
			stat(c, ORDER_FALLBACK);
	}
	if (unlikely(!page))
		return NULL;

	struct slab *slab = page_slab(page);
	slab->slab_cache = s;
	slab->__unused[0] = (uint64_t)__atomic_add_fetch(&slab_generation, 1, __ATOMIC_RELAXED) << 32 |
			    (uint32_t)((unsigned long)objects * s->size);   /* see slab_free_mark() */
	slab->next = NULL;
	if (kmem_cache_debug(s))
		_uslub_debug_init_slab(s, slab, objects);   /* before extensions and ctor */
	_uslub_slab_init_obj_exts(s, slab, objects, nolock);
	if (cache_kasan(s))
		_uslub_kasan_new_slab(s, slab, objects);

	char *p = slab_obj_base(s, slab);
	if (s->ctor)     /* user code: may malloc, so no uslub lock is held */
		_uslub_lockdep_assert_unlocked("a constructor");
	if (s->ctor && unlikely(cache_kasan(s)))
		for (unsigned int i = 0; i < objects; i++)
			_uslub_kasan_ctor(s, p + (size_t)i * s->size);
	else if (s->ctor)
		for (unsigned int i = 0; i < objects; i++)
			s->ctor(p + (size_t)i * s->size);

	uint64_t counters = fc_make(SLAB_FL_NONE, objects, objects, false);
	/* a debug cache's slab is visible to validate (and a fork child) from
	 * here on: it must already be wholly free, so its freelist is eager */
	if (unlikely((s->flags & USLUB_EAGER_FREELIST) || kmem_cache_debug(s))) {
		struct slab_obj_iter it;
		slab_obj_iter_init(&it, s, slab, objects);
		void *head = slab_obj_iter_chain(s, slab, &it, objects);
		counters = fc_make(obj_to_index(s, slab, head), 0, objects, false);
	}
	__atomic_store_n(&slab->counters, counters, __ATOMIC_RELAXED);
	slab_set_fast_word(slab);
	__atomic_store_n(&slab->__page_flags, slab->__page_flags | PG_slab, __ATOMIC_RELEASE);

	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	if (!nolock)
		_uslub_node_new_slab(s, n);
	ATOMIC_ADD(n->nr_slabs, 1);
	ATOMIC_ADD(n->total_objects, objects);
	ATOMIC_ADD(n->total_pages, 1ul << slab_order(slab));
	return slab;
}

struct slab *_uslub_allocate_slab(struct kmem_cache *s, int node, struct kmem_cache_cpu *c)
{
	return allocate_slab(s, node, c, false);
}

/* Could _uslub_allocate_slab_nolock() make a slab of @s without anything
 * that waits or allocates? No ctor (user code), no slub_debug. (A slab
 * whose extensions would need a separate array gets none: the hooks take
 * a slab without, as when that allocation fails.) */
bool _uslub_slab_nolock_ok(const struct kmem_cache *s)
{
	return !s->ctor && !kmem_cache_debug(s);
}

struct slab *_uslub_allocate_slab_nolock(struct kmem_cache *s, int node, struct kmem_cache_cpu *c)
{
	return allocate_slab(s, node, c, true);
}

/*
 * Hand out up to @n objects of a slab fresh from allocate_slab() directly
 * into p[], and return the rest as a freelist in *@rest (NULL if none).
 * Deferred: the objects come straight from the iterator, and links are
 * written only for the rest. Eager: they are popped off the prebuilt
 * freelist. @free_objs: they go to a sheaf, still free, so they get the
 * slab's free mark (eager: they keep the chain's); otherwise to a user,
 * untouched (deferred) or cleared (eager). Returns the count handed out;
 * the caller sets the state word.
 */
unsigned int _uslub_new_slab_objects(struct kmem_cache *s, struct slab *slab, void **p,
				     unsigned int n, void **rest, bool free_objs)
{
	uint64_t cnt = slab_counters(slab);
	unsigned int objects = FC_OBJECTS(cnt);
	unsigned int k = MIN(n, objects);

	if (unlikely(FC_FREELIST(cnt) != SLAB_FL_NONE)) {        /* eager */
		void *obj = fl_ptr(s, slab, FC_FREELIST(cnt));
		for (unsigned int i = 0; i < k; i++) {
			p[i] = obj;
			obj = get_freepointer(s, obj);
			if (!kmem_cache_debug(s) && !free_objs)
				free_mark_clear(s, p[i]);   /* marked by the chain */
		}
		*rest = obj;
		return k;
	}
	struct slab_obj_iter it;
	slab_obj_iter_init(&it, s, slab, objects);
	if (free_objs && !kmem_cache_debug(s)) {
		uintptr_t m = slab_free_mark(s, slab);
		for (unsigned int i = 0; i < k; i++) {
			void *obj = slab_obj_iter_next(&it);
			free_mark_set(s, obj, m);
			p[i] = obj;
		}
	} else {
		for (unsigned int i = 0; i < k; i++)
			p[i] = slab_obj_iter_next(&it);
	}
	*rest = slab_obj_iter_chain(s, slab, &it, objects - k);
	return k;
}

void _uslub_discard_slab(struct kmem_cache *s, struct slab *slab)
{
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	slab_epoch_bump(s);             /* no free record may name it now */
	ATOMIC_SUB(n->nr_slabs, 1);
	ATOMIC_SUB(n->total_objects, FC_OBJECTS(slab_counters(slab)));
	ATOMIC_SUB(n->total_pages, 1ul << slab_order(slab));
	if (s->flags & USLUB_TYPESAFE_BY_RCU) {
		/* off every list and count now; the memory stays a slab of
		 * @s until a grace period has passed (rcu.c) */
		__atomic_store_n(&slab->__page_flags,
				 slab->__page_flags & ~(PG_workingset | PG_isolated),
				 __ATOMIC_RELAXED);
		_uslub_slab_free_obj_exts(s, slab);
		_uslub_discard_slab_rcu(slab);
		return;
	}
	__atomic_store_n(&slab->__page_flags,
			 slab->__page_flags & ~(PG_slab | PG_workingset | PG_isolated),
			 __ATOMIC_RELAXED);
	slab_clear_fast_word(slab);
	_uslub_slab_free_obj_exts(s, slab);
	if (cache_kasan(s))
		_uslub_kasan_discard_slab(s, slab);
	slab->slab_cache = NULL;
	_uslub_free_pages(slab_page(slab));
}
