/*
 * partial.c — node partial lists (list_lock) and cpu partial lists,
 * and __slab_free(): the lockless remote free with its list moves; the
 * reports of invalid and double frees.
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

/* ------------------------------------------------------------------------
 * Node partial lists (list_lock held)
 * ---------------------------------------------------------------------- */
void _uslub_add_partial(struct kmem_cache_node *n, struct slab *slab, int pos)
{
	if (pos == DEACTIVATE_TO_TAIL_POS)
		list_add_tail(&slab->slab_list, &n->partial);
	else
		list_add(&slab->slab_list, &n->partial);
	WRITE_ONCE(n->nr_partial, n->nr_partial + 1);
	slab_set_node_partial(slab);
}

void _uslub_remove_partial(struct kmem_cache_node *n, struct slab *slab)
{
	list_del(&slab->slab_list);
	slab_clear_node_partial(slab);
	WRITE_ONCE(n->nr_partial, n->nr_partial - 1);
}

/* ------------------------------------------------------------------------
 * Empty slabs kept for the next swing
 *
 * SLUB keeps min_partial slabs on a node's partial list and discards an
 * empty slab beyond that. A program that frees a wave of objects and
 * allocates it again then makes and discards its slabs on every swing:
 * each new slab costs the page layer, its descriptor and its freelist.
 * So a new slab made less than USLUB_DECAY_MS after the node discarded an
 * empty one raises the node's keep by one (up to keep_cap(): SLAB_KEEP_BYTES
 * of slabs): after a swing or two the node keeps what its trough leaves
 * empty, and the next wave takes those slabs back from the partial list.
 * The purge pass (the page layer's thread, or the slow paths past its
 * deadline) puts keep back to 0 once no raise happened for a decay (at
 * once for uslub_trim()) and discards the empty slabs above min_partial,
 * whose pages then decay like any freed memory. A burst (allocate once,
 * free once) never raises it: its new slabs came before its discards.
 * ---------------------------------------------------------------------- */
#define SLAB_KEEP_BYTES (16ul << 20)

/* The swing primitives (slub.h), shared with the barn (sheaf/sheaf.c). */
static inline uint64_t coarse_ns(void)
{
	return monotonic_ns(CLOCK_MONOTONIC_COARSE);
}

static inline uint64_t decay_ns(void)
{
	return (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
}

void _uslub_swing_mark(uint64_t *event_ns)
{
	WRITE_ONCE(*event_ns, coarse_ns());
}

void _uslub_swing_raise(unsigned long *level, uint64_t *raised_ns, const uint64_t *event_ns,
			unsigned long base, unsigned long cap)
{
	uint64_t event = READ_ONCE(*event_ns);
	if (likely(!event))
		return;
	uint64_t now = coarse_ns();
	if (now - event >= decay_ns())
		return;
	unsigned long lvl = MAX(READ_ONCE(*level), base);
	if (lvl >= cap)
		return;
	WRITE_ONCE(*level, lvl + 1);
	WRITE_ONCE(*raised_ns, now);
	if (lvl == base)
		_uslub_purge_notify();          /* the first raise: a deadline */
}

bool _uslub_swing_due(struct swing_pass *p, uint64_t raised_ns)
{
	uint64_t due = raised_ns + p->decay;
	if (p->force || p->now >= due)
		return true;
	if (!*p->next || due < *p->next)
		*p->next = due;
	return false;
}

size_t _uslub_swing_purge(bool force, uint64_t *next,
			  void (*lower)(struct kmem_cache *s, struct kmem_cache_cpu *c,
					struct swing_pass *p))
{
	struct swing_pass p = { .force = force, .now = coarse_ns(), .decay = decay_ns(),
				.next = next };
	*next = 0;
	if (_uslub_locks_held) {
		*next = p.now + (p.decay ? p.decay : 1000000000ull);
		return 0;
	}
	struct kmem_cache *s;
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		struct kmem_cache_cpu c;
		memset(&c, 0, sizeof(c));
		lower(s, &c, &p);
		_uslub_fold_stats(s, &c);
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	return 0;
}

unsigned long _uslub_discard_slabs(struct kmem_cache *s, struct slab *list,
				   struct kmem_cache_cpu *c)
{
	unsigned long k = 0;
	while (list) {
		struct slab *slab = list;
		list = slab->next;
		_uslub_discard_slab(s, slab);
		if (c)
			stat(c, FREE_SLAB);
		k++;
	}
	return k;
}

static unsigned long keep_cap(const struct kmem_cache *s)
{
	return MAX((unsigned long)s->min_partial, SLAB_KEEP_BYTES / (PAGE_SIZE << s->order));
}

bool _uslub_node_keep_empty(const struct kmem_cache *s, struct kmem_cache_node *n)
{
	if (READ_ONCE(n->nr_partial) < MAX((unsigned long)s->min_partial, READ_ONCE(n->keep)))
		return true;
	_uslub_swing_mark(&n->discard_ns);
	return false;
}

void _uslub_node_new_slab(const struct kmem_cache *s, struct kmem_cache_node *n)
{
	_uslub_swing_raise(&n->keep, &n->raised_ns, &n->discard_ns, s->min_partial, keep_cap(s));
}

/* The purge pass's lower: each raised node of @s, when due, gets keep 0
 * back and its empty slabs above min_partial discarded. A forced pass
 * (uslub_trim()) discards every empty slab, min_partial's too, as
 * kmem_cache_shrink() does: a kept empty slab keeps its segment mapped. */
static void nodes_lower(struct kmem_cache *s, struct kmem_cache_cpu *c, struct swing_pass *p)
{
	unsigned long min_partial = p->force ? 0 : s->min_partial;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		struct kmem_cache_node *n = get_node(s, i);
		if (p->force ? !READ_ONCE(n->nr_partial)
			     : !READ_ONCE(n->keep) || !_uslub_swing_due(p, READ_ONCE(n->raised_ns)))
			continue;
		struct slab *discard = NULL;
		struct list_head *pos, *tmp;
		node_lock(n);
		WRITE_ONCE(n->keep, 0);
		WRITE_ONCE(n->discard_ns, 0);
		list_for_each_safe(pos, tmp, &n->partial) {
			if (n->nr_partial <= min_partial)
				break;
			struct slab *slab = list_entry(pos, struct slab, slab_list);
			if (FC_INUSE(slab_counters(slab)))
				continue;
			/* empty: no object of it is anyone's, so no free can race */
			_uslub_remove_partial(n, slab);
			stat(c, FREE_REMOVE_PARTIAL);
			slab->next = discard;
			discard = slab;
		}
		node_unlock(n);
		_uslub_discard_slabs(s, discard, c);
	}
}

/* The page layer's purge callback: every raised node lowered when due
 * (nothing under a uslub lock: _uslub_swing_purge()). Returns 0: the
 * pages of the slabs discarded are counted by the page layer when it
 * returns them to the OS. */
static size_t partial_purge(bool force, uint64_t *next)
{
	return _uslub_swing_purge(force, next, nodes_lower);
}

void _uslub_partial_init(void)
{
	_uslub_purge_register(partial_purge);
}

/* ------------------------------------------------------------------------
 * cpu partial lists
 * ---------------------------------------------------------------------- */

/* Put unfrozen slabs (a list linked by ->next) on their node partial lists,
 * discarding the empty ones the nodes do not need. */
void _uslub_put_partials_node(struct kmem_cache *s, struct slab *list, struct kmem_cache_cpu *c)
{
	struct kmem_cache_node *n = NULL;
	struct slab *discard = NULL;

	while (list) {
		struct slab *slab = list;
		list = slab->next;
		struct kmem_cache_node *n2 = get_node(s, slab_nid(slab));
		if (n2 != n) {
			if (n)
				node_unlock(n);
			n = n2;
			node_lock(n);
		}
		if (!FC_INUSE(slab_counters(slab)) && !_uslub_node_keep_empty(s, n)) {
			slab->next = discard;
			discard = slab;
		} else {
			_uslub_add_partial(n, slab, DEACTIVATE_TO_TAIL_POS);
			stat(c, FREE_ADD_PARTIAL);
		}
	}
	if (n)
		node_unlock(n);
	_uslub_discard_slabs(s, discard, c);
}

/* Put an unfrozen slab on the cpu partial list; with @drain, a full list is
 * first moved to the node lists. */
static void put_cpu_partial(struct kmem_cache *s, struct kmem_cache_cpu *c,
			    struct slab *slab, bool drain)
{
	struct slab *to_put = NULL;

	if (drain && c->partial_slabs >= s->cpu_partial_slabs) {
		to_put = c->partial;
		WRITE_ONCE(c->partial, NULL);
		c->partial_slabs = 0;
	}
	slab->next = c->partial;
	WRITE_ONCE(c->partial, slab);
	c->partial_slabs++;
	if (to_put) {
		_uslub_put_partials_node(s, to_put, c);
		stat(c, CPU_PARTIAL_DRAIN);
	}
}

/* Take one slab off a node partial list for the cpu slab and, when the
 * cpu can cache them, up to half its cpu partial capacity more. */
static struct slab *get_partial_node(struct kmem_cache *s, struct kmem_cache_node *n,
				     struct kmem_cache_cpu *c, bool cache_partials)
{
	struct slab *partial = NULL;
	unsigned long taken = 0;
	struct list_head *pos, *tmp;

	if (!READ_ONCE(n->nr_partial))
		return NULL;
	node_lock(n);
	list_for_each_safe(pos, tmp, &n->partial) {
		struct slab *slab = list_entry(pos, struct slab, slab_list);
		_uslub_remove_partial(n, slab);
		if (!partial) {
			partial = slab;
			stat(c, ALLOC_FROM_PARTIAL);
		} else {
			/* c->partial is empty here: no drain under list_lock */
			put_cpu_partial(s, c, slab, false);
			stat(c, CPU_PARTIAL_NODE);
			taken++;
		}
		if (!cache_partials || taken > s->cpu_partial_slabs / 2)
			break;
	}
	node_unlock(n);
	return partial;
}

struct slab *_uslub_get_partial(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
				bool cache_partials, int home)
{
	int search = node == USLUB_NUMA_NO_NODE ? home : node;
	struct slab *slab = get_partial_node(s, get_node(s, search), c, cache_partials);
	if (slab || node != USLUB_NUMA_NO_NODE)
		return slab;
	/* Any node: only take from nodes keeping more than min_partial. */
	int nodes = _uslub_nr_nodes();
	for (int i = 0; i < nodes; i++) {
		struct kmem_cache_node *n = get_node(s, i);
		if (i == search || READ_ONCE(n->nr_partial) <= s->min_partial)
			continue;
		slab = get_partial_node(s, n, c, cache_partials);
		if (slab)
			return slab;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * The free slow path: lockless remote free
 * ---------------------------------------------------------------------- */
/* Returns SLAB_FREE_DONE, SLAB_FREE_BAD (nothing freed, reported: a
 * detected double free) or, with @nolock only, SLAB_FREE_BUSY (nothing
 * freed: the list move it needs found list_lock taken). @nolock: the
 * any-context free (kfree_nolock): list_lock only tried, and an empty
 * slab stays on the node partial list instead of going back to the page
 * layer (whose lock it would have to wait for); no cpu partial list. */
enum { SLAB_FREE_DONE, SLAB_FREE_BAD, SLAB_FREE_BUSY };

static __always_inline int do_slab_free(struct kmem_cache *s, struct slab *slab, void *head,
					void *tail, unsigned int cnt, struct kmem_cache_cpu *c,
					bool cpu_partial, bool nolock)
{
	struct kmem_cache_node *n = NULL;
	bool on_node_partial = false, was_frozen;
	uint64_t old = slab_counters(slab), new;
	unsigned int prior, inuse;

	do {
		if (unlikely(n)) {
			node_unlock(n);
			n = NULL;
		}
		prior = FC_FREELIST(old);
		if (unlikely(prior != SLAB_FL_NONE && prior == obj_to_index(s, slab, head))) {
			_uslub_report_error("uslub: %s: double free of %p (it is the first free "
					    "object of its slab); left alone\n", s->name, head);
			return SLAB_FREE_BAD;
		}
		if (unlikely(FC_INUSE(old) < cnt)) {
			_uslub_report_error("uslub: %s: free of %p: slab %p has %u objects in use, "
					    "freeing %u (double free?); object left alone\n",
					    s->name, head, slab_address(slab), FC_INUSE(old), cnt);
			return SLAB_FREE_BAD;
		}
		set_freepointer(s, tail, fl_ptr(s, slab, prior));
		inuse = FC_INUSE(old) - cnt;
		was_frozen = FC_FROZEN(old);
		new = fc_make(fl_idx(s, slab, head), inuse, FC_OBJECTS(old), was_frozen);
		if ((!inuse || prior == SLAB_FL_NONE) && !was_frozen) {
			/* A list move may be needed: full -> node partial when no
			 * cpu partial list takes it, or maybe partial -> empty. */
			if (!cpu_partial || prior != SLAB_FL_NONE) {
				n = get_node(s, slab_nid(slab));
				if (!nolock) {
					node_lock(n);
				} else if (uslub_mutex_trylock(&n->list_lock, RANK_LIST)) {
					WRITE_ONCE(n->lock_taken, n->lock_taken + 1);
				} else {
					return SLAB_FREE_BUSY;   /* nothing changed yet */
				}
				on_node_partial = slab_test_node_partial(slab);
			}
		}
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);

	if (likely(!n)) {
		if (was_frozen) {
			stat(c, FREE_FROZEN);
		} else if (cpu_partial && prior == SLAB_FL_NONE) {
			/* full -> cpu partial of the freeing thread, unfrozen */
			put_cpu_partial(s, c, slab, true);
			stat(c, CPU_PARTIAL_FREE);
		}
		return SLAB_FREE_DONE;
	}

	/* Partially empty but off the node list: a cpu partial slab. Its
	 * owner handles it; we must not touch its list. */
	if (prior != SLAB_FL_NONE && !on_node_partial) {
		node_unlock(n);
		return SLAB_FREE_DONE;
	}
	if (unlikely(!inuse) && !nolock && !_uslub_node_keep_empty(s, n)) {
		if (prior != SLAB_FL_NONE) {
			_uslub_remove_partial(n, slab);
			stat(c, FREE_REMOVE_PARTIAL);
		}
		node_unlock(n);
		stat(c, FREE_SLAB);
		_uslub_discard_slab(s, slab);
		return SLAB_FREE_DONE;
	}
	if (prior == SLAB_FL_NONE) {
		_uslub_add_partial(n, slab, DEACTIVATE_TO_TAIL_POS);
		stat(c, FREE_ADD_PARTIAL);
	}
	node_unlock(n);
	return SLAB_FREE_DONE;
}

bool _uslub___slab_free(struct kmem_cache *s, struct slab *slab, void *head, void *tail,
			unsigned int cnt, struct kmem_cache_cpu *c, bool cpu_partial)
{
	return do_slab_free(s, slab, head, tail, cnt, c, cpu_partial, false) == SLAB_FREE_DONE;
}

/* The any-context free of one object @x of @slab (kfree_nolock): true
 * when freed (or a double free reported), false when list_lock was taken
 * and the caller must defer it. @c: a slot of the caller's (on its stack),
 * for the counters. */
bool _uslub_slab_free_nolock(struct kmem_cache *s, struct slab *slab, void *x,
			     struct kmem_cache_cpu *c)
{
	return do_slab_free(s, slab, x, x, 1, c, false, true) != SLAB_FREE_BUSY;
}

/* A cache whose errors end the process (the malloc front end's kmalloc
 * caches: a bad free() in a program is fatal, as in glibc). */
static __cold void abort_if_fatal(const struct kmem_cache *s)
{
	if (s->flags & SLAB_ABORT_ON_ERROR) {
		_uslub_report("uslub: aborting (USLUB_MALLOC_ABORT=0 reports and goes on)\n");
		abort();
	}
}

__cold void _uslub_report_invalid_free(struct kmem_cache *s, void *x, struct slab *slab)
{
	if (READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD)
		_uslub_report_error("uslub: %s: free of %p into a cache that was destroyed; "
				    "left alone\n", s->name, x);
	else if (!_uslub_owns_segment(x))
		_uslub_report_error("uslub: %s: free of %p, a pointer uslub does not own; "
				    "left alone\n", s->name, x);
	else if (!slab)
		_uslub_report_error("uslub: %s: free of %p, which is not inside a live slab; "
				    "left alone\n", s->name, x);
	else if (slab->slab_cache != s)
		_uslub_report_error("uslub: %s: free of %p, an object of cache %s; left alone\n",
				    s->name, x, slab->slab_cache ? slab->slab_cache->name : "?");
	else
		_uslub_report_error("uslub: %s: free of %p, %zu bytes into object %u of slab %p "
				    "(not an object start); left alone\n", s->name, x,
				    (size_t)(((uintptr_t)x - (uintptr_t)slab_obj_base(s, slab)) % s->size),
				    (unsigned int)(((uintptr_t)x - (uintptr_t)slab_obj_base(s, slab)) / s->size),
				    slab_address(slab));
	abort_if_fatal(s);
}

static bool sheaf_holds(const struct slab_sheaf *sheaf, const void *x)
{
	for (unsigned int i = 0; sheaf && i < sheaf->size; i++)
		if (sheaf->objects[i] == x)
			return true;
	return false;
}

/* Where the first free of @x (an object of @slab holding the free mark)
 * put it, as far as this thread can see without locks: its own cpu
 * freelist and sheaves. Elsewhere (another thread's cache, the barn, the
 * slab's freelist) it is just as free, and no less a double free. */
static __cold const char *already_free_where(struct kmem_cache *s, struct slab *slab, void *x)
{
	if (!this_cpu_is_real())
		return "freed earlier";
	struct kmem_cache_cpu *c = this_cpu(s);
	if (c->slab == slab) {
		unsigned int k = 0;
		for (void *p = c->freelist; p && k <= s->objects; p = get_freepointer(s, p), k++) {
			if (p == x)
				return "on this thread's cpu freelist";
			if (!walk_ok(s, slab, p))
				break;
		}
	}
	if (sheaf_holds(c->main, x) || sheaf_holds(c->spare, x))
		return "in this thread's per-CPU sheaf";
	return "freed earlier, now cached by another thread, the barn or its slab";
}

/* A user frees @x (an object of @slab) that holds the free mark. */
__cold void _uslub_report_double_free(struct kmem_cache *s, struct slab *slab, void *x)
{
	_uslub_report_error("uslub: %s: double free of %p: the object is already free (%s); "
			    "left alone\n", s->name, x, already_free_where(s, slab, x));
	abort_if_fatal(s);
}
