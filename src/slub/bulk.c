/*
 * bulk.c — the slab halves of bulk allocation and freeing: taking
 * objects off node partial slabs and new slabs (refill_objects, seed 000),
 * and detached freelists (seed 001) that free a group of objects of one
 * slab with one CAS.
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

#define home_node _uslub_home_node

/* ------------------------------------------------------------------------
 * Bulk allocation (seed 001) and refill_objects (seed 000)
 * ---------------------------------------------------------------------- */

/*
 * Take up to @want objects off the freelist of a node partial slab (we are
 * its one taker: list_lock held): walk the chain, then one CAS {freelist:
 * the rest, inuse += taken}. Remote frees only prepend, so a failed CAS
 * just walks again. A take that empties the freelist makes the slab full,
 * and a racing __slab_free() may then give it to a cpu partial list
 * (through slab->next, which overlays slab_list): so the slab leaves the
 * node list *before* such a CAS, and goes back on if the CAS found more
 * objects than we take. A corrupted pointer ends the walk: the objects
 * behind it stay counted as in use (leaked).
 */
static unsigned int take_objects(struct kmem_cache *s, struct kmem_cache_node *n,
				 struct slab *slab, void **p, unsigned int want,
				 struct kmem_cache_cpu *c)
{
	uint64_t old = slab_counters(slab), new;
	bool listed = true;
	unsigned int k;
	/* the walk's fields in registers: the stores into p[] may alias them */
	const uintptr_t base = (uintptr_t)slab_obj_base(s, slab), bytes = slab_objects_bytes(slab);
	const uintptr_t fpo = s->offset, secret = s->fp_secret;
	const uint64_t magic = s->div_magic;
	const bool hardened = cache_hardened(s);
	do {
		void *obj = fl_ptr(s, slab, FC_FREELIST(old));
		unsigned int inuse = FC_INUSE(old);
		for (k = 0; k < want && obj; k++) {
			p[k] = obj;
			void *next = get_freepointer_as(fpo, hardened, secret, obj);
			uintptr_t off = (uintptr_t)next - base;
			if (unlikely(next && (off >= bytes || !slab_offset_is_start(off, magic)))) {
				_uslub_report_corrupt(s, slab, next, obj, c);
				next = NULL;
				inuse = FC_OBJECTS(old) - k - 1;   /* the lost ones stay "in use" */
			}
			obj = next;
		}
		new = fc_make(fl_idx(s, slab, obj), inuse + k, FC_OBJECTS(old), false);
		if (!obj && listed) {
			_uslub_remove_partial(n, slab);          /* before the CAS that fills it */
			listed = false;
		}
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);
	if (!listed && FC_FREELIST(new) != SLAB_FL_NONE)
		_uslub_add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
	if (k)
		stat(c, REFILL_RUN);
	return k;
}

/* Objects from one node's partial slabs, in list order; a slab emptied of
 * free objects leaves the list (it is full now). */
static unsigned int take_from_node_partial(struct kmem_cache *s, struct kmem_cache_node *n,
					   struct kmem_cache_cpu *c, void **p, unsigned int want)
{
	unsigned int got = 0;
	if (!READ_ONCE(n->nr_partial))
		return 0;
	node_lock(n);
	while (got < want && !list_empty(&n->partial)) {
		struct slab *slab = list_entry(n->partial.next, struct slab, slab_list);
		got += take_objects(s, n, slab, p + got, want - got, c);
	}
	node_unlock(n);
	return got;
}

/* New slabs for refill_objects: objects handed out directly; a slab with
 * objects left goes on the node partial list with a freelist of just those. */
static unsigned int take_from_new_slabs(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
					void **p, unsigned int want, bool user)
{
	unsigned int got = 0;
	while (got < want) {
		struct slab *slab = _uslub_allocate_slab(s, node, c);
		if (!slab)
			break;
		stat(c, ALLOC_SLAB);
		stat(c, REFILL_RUN);
		unsigned int objects = FC_OBJECTS(slab->counters);
		void *rest;
		unsigned int k = _uslub_new_slab_objects(s, slab, p + got, want - got, &rest, !user);
		got += k;
		__atomic_store_n(&slab->counters,
				 fc_make(fl_idx(s, slab, rest), rest ? k : objects, objects, false),
				 __ATOMIC_RELEASE);
		if (rest) {
			struct kmem_cache_node *n = get_node(s, slab_nid(slab));
			node_lock(n);
			_uslub_add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
			node_unlock(n);
		}
	}
	return got;
}

/* _uslub_refill_objects(), for a user (@user: the objects are handed out,
 * and those of partial slabs, which hold the free mark, are cleared) or
 * for the allocator's own caches (sheaves: free objects, so those a new
 * slab handed out directly get its mark). Objects a new slab hands to a
 * user stay untouched: nothing in them can match its mark. */
unsigned int _uslub___refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c, void **p,
				   unsigned int min, unsigned int max, int node, bool user)
{
	if (unlikely(kmem_cache_debug(s))) {
		uintptr_t addr = (uintptr_t)__builtin_return_address(0);
		unsigned int got = 0;
		while (got < max && (p[got] = _uslub___debug_slab_alloc(s, 0, node, addr, false)))
			got++;
		if (got < min) {
			_uslub_free_to_slabs(s, c, got, p);
			return 0;
		}
		return got;
	}
	int home = home_node();
	int search = node == USLUB_NUMA_NO_NODE ? home : node;
	unsigned int got = take_from_node_partial(s, get_node(s, search), c, p, max);

	if (got < max && node == USLUB_NUMA_NO_NODE) {
		for (int i = 0; i < _uslub_nr_nodes() && got < max; i++) {
			struct kmem_cache_node *n = get_node(s, i);
			if (i != search && READ_ONCE(n->nr_partial) > s->min_partial)
				got += take_from_node_partial(s, n, c, p + got, max - got);
		}
	}
	unsigned int partial = got;
	if (got < max)
		got += take_from_new_slabs(s, search, c, p + got, max - got, user);
	if (got < min) {
		_uslub_free_to_slabs(s, c, got, p);
		return 0;
	}
	if (user)
		for (unsigned int i = 0; i < partial; i++)
			free_mark_clear(s, p[i]);
	return got;
}

/*
 * The any-context allocation of one object of @s (kmalloc_nolock): from
 * a partial slab of @node (USLUB_NUMA_NO_NODE: the thread's), else from a
 * new slab that this call puts on that node's partial list with the rest
 * of its objects. list_lock and the page node lock (taken under it, in
 * rank order) are only tried; nothing else is locked, allocated or
 * called: no cpu slot is touched (@c is the caller's, on its stack, for
 * the counters). The object is handed out: its free mark cleared. NULL on
 * contention (a lock held, by another thread or by the code this call
 * interrupted), or when only a blocking call could find memory.
 */
void *_uslub_slab_alloc_nolock(struct kmem_cache *s, int node, struct kmem_cache_cpu *c)
{
	if (node == USLUB_NUMA_NO_NODE || node < 0 || node >= _uslub_nr_nodes())
		node = home_node();
	struct kmem_cache_node *n = get_node(s, node);
	void *obj = NULL;
	if (!uslub_mutex_trylock(&n->list_lock, RANK_LIST))
		return NULL;
	WRITE_ONCE(n->lock_taken, n->lock_taken + 1);
	while (!obj && !list_empty(&n->partial)) {
		struct slab *slab = list_entry(n->partial.next, struct slab, slab_list);
		if (!take_objects(s, n, slab, &obj, 1, c))
			obj = NULL;              /* a corrupted chain: its slab left */
		else
			free_mark_clear(s, obj);
	}
	if (!obj && _uslub_slab_nolock_ok(s)) {
		struct slab *slab = _uslub_allocate_slab_nolock(s, node, c);
		if (slab) {
			stat(c, ALLOC_SLAB);
			unsigned int objects = FC_OBJECTS(slab->counters);
			void *rest;
			unsigned int k = _uslub_new_slab_objects(s, slab, &obj, 1, &rest, false);
			__atomic_store_n(&slab->counters,
					 fc_make(fl_idx(s, slab, rest), rest ? k : objects,
						 objects, false),
					 __ATOMIC_RELEASE);
			if (rest)
				_uslub_add_partial(n, slab, DEACTIVATE_TO_HEAD_POS);
		}
	}
	node_unlock(n);
	return obj;
}

unsigned int _uslub_refill_objects(struct kmem_cache *s, struct kmem_cache_cpu *c, void **p,
				   unsigned int min, unsigned int max, int node)
{
	return _uslub___refill_objects(s, c, p, min, max, node, false);
}

/* ------------------------------------------------------------------------
 * Bulk free: detached freelists
 * ---------------------------------------------------------------------- */
struct detached_freelist {
	struct kmem_cache *s;
	struct slab *slab;
	void *head, *tail;
	unsigned int cnt;
};

#define BULK_LOOKAHEAD 3

/* An object of @s (NULL: of its own slab's cache)? Reports it if not. */
static __always_inline struct slab *bulk_object_slab(struct kmem_cache *s, void *x,
						      struct kmem_cache **cs)
{
	struct slab *slab = virt_to_slab(x);
	struct kmem_cache *k = s ? s : slab ? slab->slab_cache : NULL;
	if (unlikely(!slab || !k || slab->slab_cache != k || !obj_is_valid(k, slab, x))) {
		if (k)
			_uslub_report_invalid_free(k, x, slab);
		else
			_uslub_report_error("uslub: kfree_bulk: %p is not an object of any cache; "
					    "left alone\n", x);
		return NULL;
	}
	*cs = k;
	return slab;
}

/*
 * Take the last object of p[0..size) and every other object of its slab
 * (scanning down, giving up after BULK_LOOKAHEAD objects of other slabs)
 * into one detached freelist, clearing the entries taken. Returns the
 * length of p[] still to scan. @user: the objects are a user's (counted,
 * and each one's free mark checked and set, so a double free, within p[]
 * or of an object freed before, is refused before any free pointer is
 * written); otherwise they come from the allocator's own caches.
 */
static size_t build_detached_freelist(struct kmem_cache *s, size_t size, void **p,
				      struct detached_freelist *df, bool user)
{
	df->slab = NULL;
	while (size && !df->slab) {
		void *x = p[--size];
		p[size] = NULL;
		if (!x || !(df->slab = bulk_object_slab(s, x, &df->s)))
			continue;
		if (unlikely(kmem_cache_debug(df->s))) {
			_uslub___debug_slab_free(df->s, df->slab, x, 0, user);  /* checked, one by one */
			df->slab = NULL;
			continue;
		}
		if (user) {
			if (free_mark_test(df->s, x, slab_free_mark(df->s, df->slab))) {
				_uslub_report_double_free(df->s, df->slab, x);
				df->slab = NULL;
				continue;
			}
			free_mark_set(df->s, x, slab_free_mark(df->s, df->slab));
		}
		/* the tail's free pointer is written by whoever frees the group */
		df->head = df->tail = x;
		df->cnt = 1;
	}
	if (!df->slab)
		return 0;

	char *base = slab_obj_base(df->s, df->slab);
	unsigned long bytes = slab_objects_bytes(df->slab);
	uintptr_t mark = slab_free_mark(df->s, df->slab);
	unsigned int lookahead = BULK_LOOKAHEAD;
	size_t first_skipped = 0;
	for (size_t i = size; i-- > 0;) {
		void *x = p[i];
		if (!x)
			continue;
		uintptr_t off = (uintptr_t)x - (uintptr_t)base;
		if (off < bytes) {
			p[i] = NULL;
			if (unlikely(!obj_is_valid(df->s, df->slab, x))) {
				_uslub_report_invalid_free(df->s, x, df->slab);
			} else if (user && free_mark_test(df->s, x, mark)) {
				_uslub_report_double_free(df->s, df->slab, x);
			} else {
				if (user)
					free_mark_set(df->s, x, mark);
				set_freepointer(df->s, x, df->head);
				df->head = x;
				df->cnt++;
			}
			continue;
		}
		if (!first_skipped)
			first_skipped = i + 1;
		if (!--lookahead)
			break;
	}
	return first_skipped;
}

/* Free one detached freelist of user objects: onto the cpu freelist when
 * it is the cpu slab's, else to the slab with one CAS. */
static void free_detached_user(struct detached_freelist *df)
{
	struct kmem_cache *s = df->s;
	if (likely(this_cpu_is_real() || _uslub_thread_init())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if (df->slab == c->slab) {
			/* build_detached_freelist() already refused objects
			 * that were free (their free mark) */
			set_freepointer(s, df->tail, c->freelist);
			c->freelist = df->head;
			stat_add(c, FREE_FASTPATH, df->cnt);
			return;
		}
		if (_uslub___slab_free(s, df->slab, df->head, df->tail, df->cnt, c,
				s->cpu_partial_slabs != 0))
			stat_add(c, FREE_SLOWPATH, df->cnt);
		return;
	}
	struct kmem_cache_cpu c;
	memset(&c, 0, sizeof(c));
	if (_uslub___slab_free(s, df->slab, df->head, df->tail, df->cnt, &c, false))
		stat_add(&c, FREE_SLOWPATH, df->cnt);
	_uslub_fold_stats(s, &c);
}

/* ------------------------------------------------------------------------
 * Flush by slab runs: one pass over p[], one descriptor lookup and one
 * __slab_free() per run of objects of one slab
 *
 * Objects of one cache (not a debug cache's) go back to their slabs in one
 * pass. The open runs are a small direct-mapped table keyed by the slab's
 * address (slabs are naturally aligned at the cache's order, so
 * x >> (PAGE_SHIFT + order) names the slab; a fallback slab of a lower
 * order shares its key with its neighbours, and the range test below tells
 * them apart). An object inside its entry's range is linked onto that
 * run's private chain: a range and object-start test, and one free pointer
 * store (two more, the free mark's test and store, for a user's objects).
 * Any other object closes the run in its entry (one __slab_free(): one
 * CAS, list_lock only for a list move) and opens its own with one
 * descriptor lookup, which also checks that it is an object of @s. So
 * every object costs the same few instructions whatever the order of p[]
 * (LIFO, FIFO or shuffled), and a slab costs one CAS per flush in which
 * its objects were not crowded out of their entry.
 * ---------------------------------------------------------------------- */
#define FLUSH_RUNS 16

struct flush_run {
	uintptr_t base, bytes;          /* the run's slab's objects; bytes 0: no run */
	struct slab *slab;
	void *head, *tail;              /* its private chain: tail's pointer unwritten */
	uintptr_t mark;                 /* the slab's free mark (a user's objects) */
	unsigned int cnt;
};

/* Close a run: its chain to its slab (@cpu_partial: a slab it makes
 * partial may go on @c's cpu partial list), or onto the cpu freelist when
 * the slab is @c's cpu slab (a user's objects, cpu-slab mode: their free
 * marks were tested and set when they were linked). */
static void flush_run_close(struct kmem_cache *s, struct kmem_cache_cpu *c,
			    struct flush_run *r, bool user, bool cpu_partial)
{
	if (user && r->slab == c->slab) {
		set_freepointer(s, r->tail, c->freelist);
		c->freelist = r->head;
		stat_add(c, FREE_FASTPATH, r->cnt);
	} else if (_uslub___slab_free(s, r->slab, r->head, r->tail, r->cnt, c, cpu_partial) &&
		   user) {
		stat_add(c, FREE_SLOWPATH, r->cnt);
	}
	stat(c, FLUSH_RUN);
	r->bytes = 0;
}

/* Open a run for @x in @r (whose run, if any, was closed): NULL when @x is
 * not an object of @s, reported (and, for a user, when it is already free). */
static __noinline bool flush_run_open(struct kmem_cache *s, struct flush_run *r, void *x,
				      bool user)
{
	struct kmem_cache *cs;
	struct slab *slab = bulk_object_slab(s, x, &cs);
	if (!slab)
		return false;
	r->slab = slab;
	r->base = (uintptr_t)slab_obj_base(s, slab);
	r->bytes = slab_objects_bytes(slab);
	r->mark = slab_free_mark(s, slab);
	if (user) {
		if (free_mark_test(s, x, r->mark)) {
			_uslub_report_double_free(s, slab, x);
			r->bytes = 0;
			return false;
		}
		free_mark_set(s, x, r->mark);
	}
	r->head = r->tail = x;
	r->cnt = 1;
	return true;
}

static __always_inline void flush_runs(struct kmem_cache *s, struct kmem_cache_cpu *c,
				       size_t n, void **p, const bool user, bool cpu_partial)
{
	struct flush_run runs[FLUSH_RUNS];
	const unsigned int shift = PAGE_SHIFT + s->order;
	const uint64_t magic = s->div_magic;
	const uintptr_t fpo = s->offset, secret = s->fp_secret;
	const bool hardened = cache_hardened(s);
	/* the current run in registers (its entry is *cur, written back
	 * when another one becomes current): the first object opens one */
	struct flush_run *cur = &runs[0];
	uintptr_t base = 0, bytes = 0, mark = 0;
	void *head = NULL;
	unsigned int cnt = 0;
	for (unsigned int k = 0; k < FLUSH_RUNS; k++)
		runs[k].bytes = 0;
	for (size_t i = 0; i < n; i++) {
		void *x = p[i];
		uintptr_t off = (uintptr_t)x - base;
		if (unlikely(off >= bytes)) {
			/* another slab's (or nothing): its entry */
			if (!x)
				continue;
			struct flush_run *r = &runs[((uintptr_t)x >> shift) % FLUSH_RUNS];
			cur->head = head;
			cur->cnt = cnt;
			if (unlikely((uintptr_t)x - r->base >= r->bytes)) {
				if (r->bytes)
					flush_run_close(s, c, r, user, cpu_partial);
				cur = r;
				bytes = 0;              /* no current run while none opens */
				if (flush_run_open(s, r, x, user)) {
					base = r->base;
					bytes = r->bytes;
					mark = r->mark;
					head = x;
					cnt = 1;
				}
				continue;
			}
			cur = r;
			base = r->base;
			bytes = r->bytes;
			mark = r->mark;
			head = r->head;
			cnt = r->cnt;
			off = (uintptr_t)x - base;
		}
		if (unlikely(!slab_offset_is_start(off, magic))) {
			_uslub_report_invalid_free(s, x, cur->slab);    /* not an object start */
			continue;
		}
		if (user) {
			if (unlikely(free_mark_test(s, x, mark))) {
				_uslub_report_double_free(s, cur->slab, x);
				continue;
			}
			free_mark_set(s, x, mark);
		}
		set_freepointer_as(fpo, hardened, secret, x, head);
		head = x;
		cnt++;
	}
	cur->head = head;
	cur->cnt = cnt;
	for (unsigned int k = 0; k < FLUSH_RUNS; k++)
		if (runs[k].bytes)
			flush_run_close(s, c, &runs[k], user, cpu_partial);
}

/* Objects of the allocator's own (a sheaf's, a failed bulk allocation's):
 * by slab runs; a debug cache's (or s == NULL) one by one, checked. */
void _uslub_free_to_slabs(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n, void **p)
{
	if (likely(s && !kmem_cache_debug(s))) {
		flush_runs(s, c, n, p, false, false);
		return;
	}
	struct detached_freelist df;
	while (n) {
		n = build_detached_freelist(s, n, p, &df, false);
		if (df.slab)
			_uslub___slab_free(df.s, df.slab, df.head, df.tail, df.cnt, c, false);
	}
}

/* A user's objects the per-CPU layer did not take (other nodes, invalid
 * pointers, a full barn): by slab runs, each object checked (an object
 * start of @s, not already free) before any free pointer is written;
 * kfree_bulk's (s == NULL: each object's own cache) and a debug cache's
 * through the detached freelists. */
__noinline void _uslub_free_bulk_detached(struct kmem_cache *s, size_t n, void **p)
{
	if (likely(s && !kmem_cache_debug(s))) {
		if (likely(this_cpu_is_real() || _uslub_thread_init())) {
			flush_runs(s, this_cpu(s), n, p, true, s->cpu_partial_slabs != 0);
			return;
		}
		struct kmem_cache_cpu c;
		memset(&c, 0, sizeof(c));
		flush_runs(s, &c, n, p, true, false);
		_uslub_fold_stats(s, &c);
		return;
	}
	struct detached_freelist df;
	while (n) {
		n = build_detached_freelist(s, n, p, &df, true);
		if (df.slab)
			free_detached_user(&df);
	}
}
