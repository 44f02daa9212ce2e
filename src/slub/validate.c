/*
 * validate.c — uslub_cache_validate(): every slab checked against its
 * counters and lists; and slab walks for the layers above.
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
 * validate: walk every slab and check it against its counters
 * ---------------------------------------------------------------------- */
struct validate_ctx {
	struct kmem_cache *s;
	long errors;
	int node;                    /* debug caches: the node whose list_lock is
	                                held (only its slabs); -1: every slab */
	struct kmem_cache_node *n;
	unsigned long slabs[MAX_NUMNODES], objects[MAX_NUMNODES], flagged[MAX_NUMNODES];
	unsigned long frozen;
};

/* Isolate a slab validate found damaged (list_lock of its node held). */
static void validate_isolate(struct validate_ctx *v, struct slab *slab)
{
	if (slab_test_node_partial(slab))
		v->flagged[slab_nid(slab)]--;       /* it leaves the partial list */
	_uslub_slab_isolate(v->s, v->n, slab);
}

static void validate_slab_cb(struct page *head, void *arg)
{
	struct validate_ctx *v = arg;
	struct kmem_cache *s = v->s;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != s)
		return;
	uint64_t cnt = slab_counters(slab);
	unsigned int objects = FC_OBJECTS(cnt), inuse = FC_INUSE(cnt);
	int nid = slab_nid(slab);

	if (v->node >= 0 && nid != v->node)
		return;
	v->slabs[nid]++;
	v->objects[nid] += objects;
	if (READ_ONCE(head->flags) & PG_isolated)
		return;                 /* reported when isolated; never checked again */
	if (kmem_cache_debug(s) && !slab_test_node_partial(slab) && inuse < objects)
		return;                 /* in transit under no list_lock: new, or
		                           taken off its list to be discarded */
	if (slab_test_node_partial(slab))
		v->flagged[nid]++;
	if (FC_FROZEN(cnt))
		v->frozen++;
	if (objects != _uslub_order_objects(slab_order(slab), s->size) ||
	    (unsigned long)objects * s->size != slab_objects_bytes(slab)) {
		_uslub_report("uslub: validate %s: slab %p: %u objects, order %u expects %u\n",
			      s->name, slab_address(slab), objects, slab_order(slab),
			      _uslub_order_objects(slab_order(slab), s->size));
		v->errors++;
		return;
	}
	if (inuse > objects) {
		_uslub_report("uslub: validate %s: slab %p: inuse %u > objects %u\n",
			      s->name, slab_address(slab), inuse, objects);
		v->errors++;
		return;
	}
	if (slab_test_node_partial(slab) && (FC_FROZEN(cnt) || FC_FREELIST(cnt) == SLAB_FL_NONE)) {
		_uslub_report("uslub: validate %s: slab %p on a node partial list is %s\n",
			      s->name, slab_address(slab), FC_FROZEN(cnt) ? "frozen" : "full");
		v->errors++;
	}
	uint64_t seen[(MAX_OBJS_PER_SLAB + 64) / 64];
	memset(seen, 0, sizeof(uint64_t) * ((objects + 63) / 64));
	unsigned int nfree = 0;
	bool debug = kmem_cache_debug(s);
	void *prev = NULL;
	for (void *p = fl_ptr(s, slab, FC_FREELIST(cnt)); p; prev = p, p = get_freepointer(s, p)) {
		if (!obj_is_valid(s, slab, p)) {
			v->errors++;
			if (debug && prev) {
				_uslub_debug_object_err(s, slab, prev, "Freepointer corrupt",
							"free pointer of free object %p is %p, not "
							"an object of the slab", prev, p);
				set_freepointer(s, prev, NULL);
				_uslub_debug_emit("FIX %s: freelist cut at %p\n", s->name, prev);
				validate_isolate(v, slab);
				return;
			}
			_uslub_report("uslub: validate %s: slab %p: freelist pointer %p is not an "
				      "object of the slab (after %u objects)\n",
				      s->name, slab_address(slab), p, nfree);
			return;
		}
		unsigned int idx = obj_to_index(s, slab, p);
		if (seen[idx / 64] & (1ull << (idx % 64))) {
			v->errors++;
			if (debug) {
				_uslub_debug_slab_err(s, slab, "Freelist corrupt",
						      "the freelist loops at object %u", idx);
				validate_isolate(v, slab);
				return;
			}
			_uslub_report("uslub: validate %s: slab %p: freelist loops at object %u\n",
				      s->name, slab_address(slab), idx);
			return;
		}
		seen[idx / 64] |= 1ull << (idx % 64);
		nfree++;
	}
	if (nfree != objects - inuse) {
		v->errors++;
		if (debug) {
			/* which objects are free is unknown: check none of them
			 * (a restore could overwrite a live one) */
			_uslub_debug_slab_err(s, slab, "Wrong number of objects",
					      "%u objects on the freelist, the counters say %u "
					      "(objects %u, inuse %u)", nfree, objects - inuse,
					      objects, inuse);
			validate_isolate(v, slab);
			return;
		}
		_uslub_report("uslub: validate %s: slab %p: %u objects on the freelist, "
			      "counters say %u (objects %u, inuse %u)\n", s->name, slab_address(slab),
			      nfree, objects - inuse, objects, inuse);
	}
	if (!debug)
		return;
	/* slub_debug: every object in its state (free: on the freelist) */
	unsigned int bad = 0;
	for (unsigned int i = 0; i < objects; i++) {
		bool is_free = seen[i / 64] & (1ull << (i % 64));
		bad += _uslub_debug_check_object(s, slab, index_to_obj(s, slab, i),
						 is_free ? SLUB_RED_INACTIVE : SLUB_RED_ACTIVE);
	}
	if (bad) {
		v->errors += bad;
		validate_isolate(v, slab);
	}
}

static void validate_node_counts(struct validate_ctx *v, int i);
static long validate_cpu(struct kmem_cache *s, struct validate_ctx *v);

__public long uslub_cache_validate(struct kmem_cache *s)
{
	if (cache_bad(s, "uslub_cache_validate"))
		return -1;
	struct validate_ctx local, *v = &local;
	memset(v, 0, sizeof(*v));
	v->s = s;
	int nodes = _uslub_nr_nodes();

	/* node partial lists: flag set, unfrozen, not full, count matches */
	for (int i = 0; i < nodes; i++) {
		struct kmem_cache_node *n = get_node(s, i);
		unsigned long count = 0;
		node_lock(n);
		struct slab *slab;
		list_for_each_entry(slab, &n->partial, slab_list) {
			count++;
			if (!slab_test_node_partial(slab) || slab->slab_cache != s ||
			    slab_nid(slab) != i) {
				_uslub_report("uslub: validate %s: slab %p on node %d partial list: "
					      "flag %d, cache %s, node %d\n", s->name, slab_address(slab), i,
					      slab_test_node_partial(slab),
					      slab->slab_cache ? slab->slab_cache->name : "none",
					      slab_nid(slab));
				v->errors++;
			}
			if (count > READ_ONCE(n->nr_slabs) + 1)
				break;
		}
		if (count != n->nr_partial) {
			_uslub_report("uslub: validate %s: node %d: nr_partial %lu, list has %lu\n",
				      s->name, i, n->nr_partial, count);
			v->errors++;
		}
		node_unlock(n);
	}

	if (kmem_cache_debug(s)) {
		/* the debug paths change slabs only under list_lock: hold it
		 * for the node whose slabs are checked (and maybe isolated) */
		for (int i = 0; i < nodes; i++) {
			v->node = i;
			v->n = get_node(s, i);
			node_lock(v->n);
			_uslub_for_each_run(validate_slab_cb, v);
			validate_node_counts(v, i);
			node_unlock(v->n);
		}
		_uslub_debug_flush();
	} else {
		v->node = -1;
		_uslub_for_each_run(validate_slab_cb, v);
		for (int i = 0; i < nodes; i++)
			validate_node_counts(v, i);
	}
	return validate_cpu(s, v);
}

/* A node's counters against what the walk found (exact for a debug cache:
 * its caller holds the node's list_lock across the walk and this). */
static void validate_node_counts(struct validate_ctx *v, int i)
{
	struct kmem_cache *s = v->s;
	{
		struct kmem_cache_node *n = get_node(s, i);
		if (v->slabs[i] != READ_ONCE(n->nr_slabs) ||
		    v->objects[i] != READ_ONCE(n->total_objects)) {
			_uslub_report("uslub: validate %s: node %d counts %lu slabs / %lu objects, "
				      "found %lu / %lu\n", s->name, i, READ_ONCE(n->nr_slabs),
				      READ_ONCE(n->total_objects), v->slabs[i], v->objects[i]);
			v->errors++;
		}
		if (v->flagged[i] != READ_ONCE(n->nr_partial)) {
			_uslub_report("uslub: validate %s: node %d: %lu slabs flagged node-partial, "
				      "nr_partial %lu\n", s->name, i, v->flagged[i],
				      READ_ONCE(n->nr_partial));
			v->errors++;
		}
	}
}

/* The calling thread's cpu slab: its cpu freelist holds its objects. */
static long validate_cpu(struct kmem_cache *s, struct validate_ctx *v)
{
	if (this_cpu_is_real()) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if (c->slab) {
			uint64_t cnt = slab_counters(c->slab);
			unsigned int k = 0;
			if (!FC_FROZEN(cnt) || c->slab->slab_cache != s) {
				_uslub_report("uslub: validate %s: cpu slab %p is not frozen\n",
					      s->name, slab_address(c->slab));
				v->errors++;
			}
			for (void *p = c->freelist; p && k <= FC_OBJECTS(cnt); p = get_freepointer(s, p), k++)
				if (!obj_is_valid(s, c->slab, p)) {
					_uslub_report("uslub: validate %s: cpu freelist pointer %p "
						      "outside the cpu slab\n", s->name, p);
					v->errors++;
					break;
				}
			if (k > FC_INUSE(cnt)) {
				_uslub_report("uslub: validate %s: cpu freelist has %u objects, "
					      "slab inuse %u\n", s->name, k, FC_INUSE(cnt));
				v->errors++;
			}
		} else if (c->freelist) {
			_uslub_report("uslub: validate %s: cpu freelist without a cpu slab\n", s->name);
			v->errors++;
		}
		unsigned long k = 0;
		for (struct slab *p = c->partial; p && k <= c->partial_slabs; p = p->next, k++) {
			uint64_t cnt = slab_counters(p);
			if (FC_FROZEN(cnt) || slab_test_node_partial(p) || p->slab_cache != s) {
				_uslub_report("uslub: validate %s: cpu partial slab %p is frozen "
					      "or on a node list\n", s->name, slab_address(p));
				v->errors++;
			}
		}
		if (k != c->partial_slabs) {
			_uslub_report("uslub: validate %s: cpu partial list has %lu slabs, "
				      "count says %lu\n", s->name, k, c->partial_slabs);
			v->errors++;
		}
	}
	return v->errors;
}

/* ------------------------------------------------------------------------
 * Slab walks for the layers above (ext/ reports)
 * ---------------------------------------------------------------------- */
struct for_each_slab_arg {
	struct kmem_cache *s;
	void (*fn)(struct kmem_cache *s, struct slab *slab, void *arg);
	void *arg;
};

static void for_each_slab_cb(struct page *head, void *arg)
{
	struct for_each_slab_arg *a = arg;
	if (!(READ_ONCE(head->flags) & PG_slab))
		return;
	struct slab *slab = page_slab(head);
	if (READ_ONCE(slab->slab_cache) == a->s)
		a->fn(a->s, slab, a->arg);
}

void _uslub_for_each_slab(struct kmem_cache *s,
			  void (*fn)(struct kmem_cache *s, struct slab *slab, void *arg), void *arg)
{
	struct for_each_slab_arg a = { s, fn, arg };
	_uslub_for_each_run(for_each_slab_cb, &a);
}
