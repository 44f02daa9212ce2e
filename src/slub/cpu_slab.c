/*
 * cpu_slab.c — the 6.x per-CPU model: corrupted cpu freelists,
 * freezing (taking a slab's freelist onto the cpu), deactivation and
 * flushing of cpu slots, and the allocation slow path (refill_cpu(),
 * ___slab_alloc(), __slab_alloc()).
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
 * Corrupted freelists
 * ---------------------------------------------------------------------- */

__cold void _uslub_report_corrupt(struct kmem_cache *s, const struct slab *slab, const void *bad,
				  const void *after, struct kmem_cache_cpu *c)
{
	stat(c, FREELIST_CORRUPT);
	if (after)
		_uslub_report_error("uslub: %s: freelist pointer corrupted in slab %p: %p (stored "
				    "in the free object %p) is not an object of the slab; the rest "
				    "of this freelist is dropped (its objects leak)\n", s->name,
				    slab ? slab_address(slab) : NULL, bad, after);
	else
		_uslub_report_error("uslub: %s: freelist pointer corrupted in slab %p: the cpu "
				    "freelist leads to %p, not an object of the slab (the free "
				    "pointer of the object allocated last was overwritten); the rest "
				    "of this freelist is dropped (its objects leak)\n", s->name,
				    slab ? slab_address(slab) : NULL, bad);
}

/* ------------------------------------------------------------------------
 * Freezing and taking freelists
 * ---------------------------------------------------------------------- */

/*
 * Take a slab's whole freelist onto the cpu (inuse = objects) with one CAS.
 * The slab ends frozen, except that with @unfreeze_if_empty a slab with
 * nothing to take ends unfrozen: a full slab, on no list.
 */
static void *take_freelist(struct kmem_cache *s, struct slab *slab, struct kmem_cache_cpu *c,
			   bool unfreeze_if_empty)
{
	uint64_t old = slab_counters(slab), new;
	do {
		bool frozen = !unfreeze_if_empty || FC_FREELIST(old) != SLAB_FL_NONE;
		new = fc_make(SLAB_FL_NONE, FC_OBJECTS(old), FC_OBJECTS(old), frozen);
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);
	WRITE_ONCE(c->loaded, c->loaded + FC_OBJECTS(old) - FC_INUSE(old));
	return fl_ptr(s, slab, FC_FREELIST(old));
}

/* Refill from our frozen cpu slab: what other threads freed into it. */
static inline void *get_freelist(struct kmem_cache *s, struct slab *slab, struct kmem_cache_cpu *c)
{
	return take_freelist(s, slab, c, true);
}

/* Delayed freezing: a partial slab (never frozen while on a partial list)
 * is frozen only now, as it becomes the cpu slab. */
static inline void *freeze_slab(struct kmem_cache *s, struct slab *slab, struct kmem_cache_cpu *c)
{
	return take_freelist(s, slab, c, false);
}

static __always_inline bool c_fastpath_off(const struct kmem_cache *s)
{
	return READ_ONCE(s->fastpath_off) != 0;
}

/* Install @slab (or NULL) as the cpu slab, with the range the free fast
 * path checks against: empty for a cache whose fast paths are off, so
 * every free of it takes the checked slow path, and for a sheaf cache,
 * whose frees go to its sheaves (a sheaf can hold objects of another
 * thread's cpu slab, so no cpu slab's range may let a free skip the hooks
 * a cache may switch on later: see obj_ext_enable_on_demand()). */
static __always_inline void set_cpu_slab(struct kmem_cache_cpu *c, struct slab *slab)
{
	WRITE_ONCE(c->slab, slab);
	WRITE_ONCE(c->slab_addr, slab ? slab_obj_base(slab->slab_cache, slab) : NULL);
	/* a slab holding a sampled object (cache/sample.c) has no
	 * PG_slab_page: its frees must take the slow path, which untags */
	WRITE_ONCE(c->slab_bytes, slab && !c_fastpath_off(slab->slab_cache) &&
				  !slab->slab_cache->sheaf_capacity &&
				  (READ_ONCE(slab_page(slab)->flags) & PG_slab_page) ?
				  slab_objects_bytes(slab) : 0);
	WRITE_ONCE(c->slab_span, slab ? slab_objects_bytes(slab) : 0);
	WRITE_ONCE(c->free_mark, slab ? slab_free_mark(slab->slab_cache, slab) : 0);
}

void _uslub_cpu_slab_reopen(struct kmem_cache *s, struct slab *slab)
{
	if (!this_cpu_is_real())
		return;
	struct kmem_cache_cpu *c = this_cpu(s);
	if (READ_ONCE(c->slab) == slab && !READ_ONCE(c->slab_bytes))
		set_cpu_slab(c, slab);  /* the range again where it qualifies */
}

/* ------------------------------------------------------------------------
 * Deactivation and flushing
 * ---------------------------------------------------------------------- */

/* Return a cpu slab (and the objects left on its cpu freelist) to the
 * node: unfreeze with one CAS, then take list_lock only to list it. */
static void deactivate_slab(struct kmem_cache *s, struct slab *slab, void *freelist,
			    struct kmem_cache_cpu *c)
{
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	int pos = DEACTIVATE_TO_HEAD_POS;
	unsigned int free_delta = 0;
	void *tail = NULL;
	uint64_t old = slab_counters(slab), new;

	if (FC_FREELIST(old) != SLAB_FL_NONE) {
		stat(c, DEACTIVATE_REMOTE_FREES);
		pos = DEACTIVATE_TO_TAIL_POS;
	}
	for (void *p = freelist; p; ) {
		void *next = get_freepointer(s, p);
		free_delta++;
		tail = p;
		if (unlikely(!walk_ok(s, slab, next))) {
			_uslub_report_corrupt(s, slab, next, p, c);
			set_freepointer(s, p, NULL);
			break;
		}
		p = next;
	}
	WRITE_ONCE(c->loaded, c->loaded - free_delta);
	do {
		unsigned int prior = FC_FREELIST(old);
		unsigned int head = prior;
		if (tail) {
			set_freepointer(s, tail, fl_ptr(s, slab, prior));
			head = fl_idx(s, slab, freelist);
		}
		new = fc_make(head, FC_INUSE(old) - free_delta, FC_OBJECTS(old), false);
		if (slab_update(slab, &old, new))
			break;
		stat(c, CMPXCHG_DOUBLE_FAIL);
	} while (1);

	if (!FC_INUSE(new) && !_uslub_node_keep_empty(s, n)) {
		stat(c, DEACTIVATE_EMPTY);
		_uslub_discard_slab(s, slab);
		stat(c, FREE_SLAB);
	} else if (FC_FREELIST(new) != SLAB_FL_NONE) {
		node_lock(n);
		_uslub_add_partial(n, slab, pos);
		node_unlock(n);
		if (pos == DEACTIVATE_TO_TAIL_POS)
			stat(c, DEACTIVATE_TO_TAIL);
		else
			stat(c, DEACTIVATE_TO_HEAD);
	} else {
		stat(c, DEACTIVATE_FULL);
	}
}

/* c->freelist for a walk: its head is checked like every other pointer
 * of a chain (deactivate_slab() checks the rest). */
static void *checked_cpu_freelist(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	void *head = c->freelist;
	if (unlikely(head && !(c->slab && obj_is_valid(s, c->slab, head)))) {
		_uslub_report_corrupt(s, c->slab, head, NULL, c);
		return NULL;
	}
	return head;
}

/* Flush one cpu's slab and partial slabs of @s and fold its counters into
 * the cache. The slot is cleared before the slabs are handed back, so a
 * fork child finding it half-done leaks at worst, never double-frees. */
static bool slot_is_clean(const struct kmem_cache_cpu *c)
{
	if (c->slab || c->freelist || c->partial || c->loaded || sheaf_real(c->main) || c->spare ||
	    __atomic_load_n(&c->rcu_free, __ATOMIC_RELAXED) || c->pcs_adjust || c->sample_left ||
	    c->sample_armed)
		return false;
	for (int i = 0; i < USLUB_NR_STATS; i++)
		if (c->stat[i])
			return false;
	return true;
}

/* The sheaf layer's slot flush (sheaf/sheaf.c): set once at init, before
 * any cache (so before any sheaf) exists. */
static void (*sheaf_flush)(struct kmem_cache *s, struct kmem_cache_cpu *c, bool exiting);

void _uslub_register_sheaf_flush(void (*flush)(struct kmem_cache *s, struct kmem_cache_cpu *c,
					       bool exiting))
{
	sheaf_flush = flush;
}

static void flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c, bool exiting);

static void (*pcpu_drain)(struct kmem_cache *s, struct kmem_cache_cpu *c);

void _uslub_register_pcpu_drain(void (*drain)(struct kmem_cache *s, struct kmem_cache_cpu *c))
{
	pcpu_drain = drain;
}

void _uslub_pcpu_drain_ids(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	if (pcpu_drain && _uslub_pcpu)
		pcpu_drain(s, c);
}

void _uslub_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	flush_cpu(s, c, false);
}

void _uslub_flush_cpu_exit(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	flush_cpu(s, c, true);
}

static void flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c, bool exiting)
{
	/* Reads only: a slot never used stays on the zero page, uncommitted,
	 * when a thread exits or a cache is destroyed. */
	if (slot_is_clean(c))
		return;
	if (sheaf_real(c->main) || c->spare || __atomic_load_n(&c->rcu_free, __ATOMIC_RELAXED))
		sheaf_flush(s, c, exiting);
	struct slab *slab = c->slab;
	void *freelist = checked_cpu_freelist(s, c);
	set_cpu_slab(c, NULL);
	WRITE_ONCE(c->freelist, NULL);
	barrier();
	if (slab) {
		deactivate_slab(s, slab, freelist, c);
		stat(c, CPUSLAB_FLUSH);
	}
	struct slab *partial = c->partial;
	WRITE_ONCE(c->partial, NULL);
	c->partial_slabs = 0;
	barrier();
	if (partial)
		_uslub_put_partials_node(s, partial, c);
	_uslub_fold_stats(s, c);
}

/* ALLOC_FASTPATH of a slot: exact for the owner (it walks its own cpu
 * freelist); for another live thread, as of its last empty freelist. */
uint64_t _uslub_cpu_alloc_fastpath(const struct kmem_cache *s, const struct kmem_cache_cpu *c)
{
	if (this_cpu_is_real() && c == this_cpu(s)) {
		uint64_t len = 0;
		for (void *p = c->freelist; p && c->slab && obj_is_valid(s, c->slab, p) &&
		     len < slab_objects_bytes(c->slab) / s->size; p = get_freepointer(s, p))
			len++;
		return c->loaded + c->stat[USLUB_FREE_FASTPATH] - len;
	}
	return READ_ONCE(c->stat[USLUB_ALLOC_FASTPATH]);
}

/* Move a flushed cpu slot's counters into the cache's totals and zero
 * them. */
void _uslub_fold_stats(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	publish_alloc_fastpath(c);          /* freelist is empty after a flush */
	WRITE_ONCE(c->loaded, 0);
	/* ALLOC_PCS is derived (kmem_cache_cpu.pcs_adjust); the countdowns
	 * start over (the slot's next miss arms them again) */
	uint64_t pcs = cpu_alloc_pcs(c);
	unsigned long seq = c->sample_seq | 1;     /* odd (a lost thread's may be) */
	__atomic_store_n(&c->sample_seq, seq, __ATOMIC_RELAXED);
	__atomic_store_n(&c->stat[USLUB_ALLOC_PCS], pcs, __ATOMIC_RELEASE);
	__atomic_store_n(&c->pcs_adjust, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->sample_seq, seq + 1, __ATOMIC_RELEASE);
	WRITE_ONCE(c->sample_left, 0);
	WRITE_ONCE(c->sample_armed, 0);
	for (int i = 0; i < USLUB_NR_STATS; i++) {
		uint64_t v = READ_ONCE(c->stat[i]);
		if (v) {
			ATOMIC_ADD(s->stat_exited[i], v);
			WRITE_ONCE(c->stat[i], 0);
		}
	}
}

/* ------------------------------------------------------------------------
 * The allocation slow path
 * ---------------------------------------------------------------------- */

/* c->freelist holds a pointer that is not an object of the cpu slab: a
 * free pointer was overwritten. Drop the rest of the chain. */
__cold void _uslub_cpu_freelist_corrupt(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	_uslub_report_corrupt(s, c->slab, c->freelist, NULL, c);
	WRITE_ONCE(c->freelist, NULL);
}

/*
 * Give the cpu a non-empty freelist (SLUB's ___slab_alloc without the
 * final pop): remote frees into the cpu slab, else a cpu partial slab,
 * else node partial slabs, else a new slab. A new slab hands up to @want
 * objects straight into p[] (deferred freelist construction) and only the
 * rest becomes the cpu freelist.
 * Returns k > 0 objects put in p[] (the cpu freelist may be empty), 0 with
 * c->freelist non-empty, or -1 when out of memory.
 */
int _uslub_refill_cpu(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
		      bool cache_partials, int home, void **p, unsigned int want)
{
	struct slab *slab = c->slab;
	void *freelist;

	if (!c->freelist)
		publish_alloc_fastpath(c);
	if (!slab)
		goto new_slab;
	if (unlikely(node != USLUB_NUMA_NO_NODE && slab_nid(slab) != node)) {
		stat(c, ALLOC_NODE_MISMATCH);
		freelist = checked_cpu_freelist(s, c);
		set_cpu_slab(c, NULL);
		WRITE_ONCE(c->freelist, NULL);
		deactivate_slab(s, slab, freelist, c);
		goto new_slab;
	}
	if (c->freelist)
		return 0;
	/* Out of the slot before the CAS that may give the slab up: a fork
	 * child flushing this slot must never find a slab that is no longer
	 * ours (another thread may own it by then). */
	set_cpu_slab(c, NULL);
	freelist = get_freelist(s, slab, c);
	if (!freelist) {
		stat(c, DEACTIVATE_BYPASS);
		goto new_slab;
	}
	stat(c, ALLOC_REFILL);
	goto load_slab;

new_slab:
	while ((slab = c->partial)) {
		WRITE_ONCE(c->partial, slab->next);
		c->partial_slabs--;
		stat(c, CPU_PARTIAL_ALLOC);
		if (unlikely(node != USLUB_NUMA_NO_NODE && slab_nid(slab) != node)) {
			slab->next = NULL;
			_uslub_put_partials_node(s, slab, c);
			continue;
		}
		freelist = freeze_slab(s, slab, c);
		goto load_slab;
	}

	slab = _uslub_get_partial(s, node, c, cache_partials, home);
	if (slab) {
		freelist = freeze_slab(s, slab, c);
		goto load_slab;
	}

	slab = _uslub_allocate_slab(s, node == USLUB_NUMA_NO_NODE ? home : node, c);
	if (unlikely(!slab))
		return -1;
	stat(c, ALLOC_SLAB);
	unsigned int objects = FC_OBJECTS(slab->counters);
	unsigned int k = _uslub_new_slab_objects(s, slab, p, want, &freelist, false);
	if (!freelist) {
		/* every object handed out: a full slab, on no list */
		__atomic_store_n(&slab->counters, fc_make(SLAB_FL_NONE, objects, objects, false),
				 __ATOMIC_RELEASE);
		return (int)k;
	}
	/* Still private: freeze it with the rest as the cpu freelist, no CAS. */
	__atomic_store_n(&slab->counters, fc_make(SLAB_FL_NONE, objects, objects, true),
			 __ATOMIC_RELEASE);
	WRITE_ONCE(c->loaded, c->loaded + objects - k);
	set_cpu_slab(c, slab);
	WRITE_ONCE(c->freelist, freelist);
	return (int)k;

load_slab:
	set_cpu_slab(c, slab);
	WRITE_ONCE(c->freelist, freelist);
	return 0;
}

static void *___slab_alloc(struct kmem_cache *s, int node, struct kmem_cache_cpu *c,
			   bool cache_partials, int home)
{
	void *obj;

	int k = _uslub_refill_cpu(s, node, c, cache_partials, home, &obj, 1);
	if (unlikely(k < 0))
		return NULL;             /* a failed allocation counts nothing */
	stat(c, ALLOC_SLOWPATH);
	if (k)
		return obj;
	/* the first object is returned, the rest stay on the cpu freelist */
	obj = c->freelist;
	WRITE_ONCE(c->loaded, c->loaded - 1);
	WRITE_ONCE(c->freelist, get_freepointer(s, obj));
	return obj;
}

int _uslub_home_node(void)
{
	struct uslub_thread *t = _uslub_tls.thread;
	return t ? t->node : 0;
}

/* The slow path for a thread without a cpu area (its cache was torn down
 * at exit, or it could not get one): a cpu slot on the stack, flushed
 * before returning, counters folded into the cache. */
static __cold void *slab_alloc_nocpu(struct kmem_cache *s, int node)
{
	struct kmem_cache_cpu c;
	memset(&c, 0, sizeof(c));
	void *obj = ___slab_alloc(s, node, &c, false, 0);
	_uslub_flush_cpu(s, &c);
	return obj;
}

__noinline void *_uslub___slab_alloc(struct kmem_cache *s, uslub_gfp_t gfp, int node)
{
	void *obj;
	for (;;) {
		if (likely(this_cpu_is_real() || _uslub_thread_init()))
			obj = ___slab_alloc(s, node, this_cpu(s), s->cpu_partial_slabs != 0,
					    home_node());
		else
			obj = slab_alloc_nocpu(s, node);
		if (likely(obj) || !(gfp & USLUB_GFP_NOFAIL))
			break;
		struct timespec ts = { 0, 1000000 };   /* __GFP_NOFAIL: wait, retry */
		nanosleep(&ts, NULL);
	}
	if (unlikely(!obj)) {
		errno = ENOMEM;
		if (!(gfp & USLUB_GFP_NOWARN) && _uslub_option(USLUB_OPT_VERBOSE))
			_uslub_report("uslub: %s: allocation failed (out of memory)\n", s->name);
	}
	return obj;
}

/* ------------------------------------------------------------------------
 * Internal caches (slub.h): the cpu-slab paths without the cache API
 * ---------------------------------------------------------------------- */

/* The cache API's paths for a cache without sheaves, hooks, slub_debug
 * or fault injection, taken directly: a checked pop of the cpu freelist,
 * else the slow path (a thread without a cpu area gets one, or a slot on
 * the stack once it has exited). */
void *_uslub_internal_alloc(struct kmem_cache *s, uslub_gfp_t gfp)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	void *obj = c->freelist;

	if (unlikely(obj && !cpu_freelist_ok(s, c, obj))) {
		_uslub_cpu_freelist_corrupt(s, c);
		obj = NULL;
	}
	if (likely(obj)) {
		c->freelist = get_freepointer(s, obj);   /* ALLOC_FASTPATH, derived */
	} else {
		obj = _uslub___slab_alloc(s, gfp, USLUB_NUMA_NO_NODE);
		if (unlikely(!obj))
			return NULL;
	}
	free_mark_clear(s, obj);
	if (gfp & USLUB_GFP_ZERO)
		memset(obj, 0, s->object_size);
	return obj;
}

/* Checked like any user free (an invalid or double free is reported and
 * ignored), then onto the cpu freelist when @x is in this thread's cpu
 * slab, else onto its slab (__slab_free). */
void _uslub_internal_free(struct kmem_cache *s, void *x, bool may_init)
{
	if (unlikely(!x))
		return;
	struct slab *slab = virt_to_slab(x);
	if (unlikely(!slab || slab->slab_cache != s || !obj_is_valid(s, slab, x))) {
		_uslub_report_invalid_free(s, x, slab);
		return;
	}
	uintptr_t mark = slab_free_mark(s, slab);
	if (unlikely(free_mark_test(s, x, mark))) {
		_uslub_report_double_free(s, slab, x);
		return;
	}
	free_mark_set(s, x, mark);      /* before anyone else can take it */
	if (likely(this_cpu_is_real() || (may_init && _uslub_thread_init()))) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if (c->slab == slab) {
			set_freepointer(s, x, c->freelist);
			c->freelist = x;
			stat(c, FREE_FASTPATH);
			return;
		}
		if (_uslub___slab_free(s, slab, x, x, 1, c, s->cpu_partial_slabs != 0))
			stat(c, FREE_SLOWPATH);
		return;
	}
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (_uslub___slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	_uslub_fold_stats(s, &tmp);
}
