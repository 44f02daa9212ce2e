/*
 * bulk.c — uslub_cache_alloc_bulk() and uslub_cache_free_bulk(): their
 * cpu-slab and sheaf fronts and the extension hooks; the slab halves are
 * in slub/bulk.c.
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

#define home_node _uslub_home_node

/*
 * Bulk from the cpu layer (caches without sheaves): pop the cpu freelist,
 * refill it the way the single slow path does, and take a new slab's
 * objects directly. Returns how many of @n were put in p[].
 */
static size_t alloc_bulk_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n, void **p,
			     bool cache_partials, size_t *popped)
{
	size_t i = 0;
	while (i < n) {
		void *obj = c->freelist;
		if (likely(obj) && likely(!cache_hardened(s))) {
			/* the fast path's pop, in a register */
			size_t start = i;
			do {
				p[i++] = obj;
				void *next = get_freepointer_raw(s, obj);
				free_mark_clear(s, obj);
				obj = next;
			} while (obj && i < n);
			c->freelist = obj;          /* ALLOC_FASTPATH, derived */
			*popped += i - start;
			continue;
		}
		if (likely(obj)) {
			/* checked like the fast path: hardened caches only */
			if (unlikely(cache_hardened(s)) && unlikely(!cpu_freelist_ok(s, c, obj))) {
				_uslub_cpu_freelist_corrupt(s, c);
				continue;
			}
			c->freelist = get_freepointer(s, obj);   /* ALLOC_FASTPATH, derived */
			free_mark_clear(s, obj);
			p[i++] = obj;
			(*popped)++;
			continue;
		}
		/* k > 0: objects a new slab hands out directly, never handed out
		 * before: no mark to clear (slab_free_mark()), left untouched */
		unsigned int want = (unsigned int)MIN(n - i, (size_t)MAX_OBJS_PER_SLAB);
		int k = _uslub_refill_cpu(s, USLUB_NUMA_NO_NODE, c, cache_partials, home_node(), p + i, want);
		if (k < 0)
			break;
		stat_add(c, ALLOC_SLOWPATH, (unsigned int)k);
		i += (unsigned int)k;
	}
	return i;
}

/*
 * Hand out the top @k objects of @main (k <= size) into p[]: from 8 on, one
 * memcpy of the pointers, then a pass over p[] that clears each free mark (four at
 * a time: loads first, then stores). The size goes down first, so a fork
 * child never flushes an object already handed out.
 */
static __always_inline void sheaf_pop_bulk(const struct kmem_cache *s, struct slab_sheaf *main,
					   unsigned int k, void **p)
{
	unsigned int size = main->size - k;
	const uintptr_t fmo = s->free_mark_offset;   /* a local: the stores below may alias s */
	void **const end = p + k;
	void **src = main->objects + size;
	WRITE_ONCE(main->size, size);
	barrier();
	if (k < 8) {
		/* a few: not worth memcpy's call */
		for (; p < end; p++, src++) {
			*p = *src;
			if (USLUB_FREE_MARK)
				meta_store((char *)*src + fmo, 0);
		}
		return;
	}
	memcpy(p, src, (size_t)k * sizeof(void *));
	if (!USLUB_FREE_MARK)
		return;
	for (; p + 4 <= end; p += 4) {
		char *x0 = p[0], *x1 = p[1], *x2 = p[2], *x3 = p[3];
		meta_store(x0 + fmo, 0);
		meta_store(x1 + fmo, 0);
		meta_store(x2 + fmo, 0);
		meta_store(x3 + fmo, 0);
	}
	for (; p < end; p++)
		meta_store((char *)*p + fmo, 0);
}

/*
 * Bulk for sheaf caches: copy out of the main sheaf; when it is empty the
 * sheaf layer swaps in the spare or a full sheaf of the barn (whole
 * sheaves, one barn lock each), else refills main from slabs and hands
 * over one object; if it cannot, the rest comes straight from slabs.
 */
static size_t alloc_bulk_sheaves(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp,
				 size_t n, void **p)
{
	size_t i = 0;
	while (i < n) {
		struct slab_sheaf *main = c->main;
		if (likely(main && main->size)) {
			unsigned int k = (unsigned int)MIN(n - i, (size_t)main->size);
			sheaf_pop_bulk(s, main, k, p + i);
			stat_pcs_slow(c, k);
			i += k;
			continue;
		}
		if (_uslub_pcs_replace_empty_main(s, c))
			continue;
		void *obj = _uslub_sheaf_alloc_slow(s, c, gfp);   /* counts ALLOC_PCS */
		if (obj) {
			free_mark_clear(s, obj);
			p[i++] = obj;
			continue;
		}
		unsigned int want = (unsigned int)MIN(n - i, (size_t)MAX_OBJS_PER_SLAB);
		unsigned int k = _uslub___refill_objects(s, c, p + i, want, want, USLUB_NUMA_NO_NODE, true);
		if (!k)
			break;
		stat_add(c, ALLOC_SLOWPATH, k);
		i += k;
	}
	return i;
}

/*
 * One all-or-nothing attempt on slot @c. On failure, what was taken goes
 * back to the slabs uncounted and the slot's counters are restored, so a
 * failed call counts no allocation and no free: the objects popped from
 * the cpu freelist leave it the way a flush does (loaded -= popped keeps
 * the derived ALLOC_FASTPATH where it was).
 */
static bool alloc_bulk_once(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp,
			    size_t n, void **p, bool cache_partials)
{
	uint64_t slow0 = c->stat[USLUB_ALLOC_SLOWPATH];
	int64_t pcs0 = c->pcs_adjust;
	size_t popped = 0, got;
	if (s->sheaf_capacity && cache_partials)
		got = alloc_bulk_sheaves(s, c, gfp, n, p);
	else
		got = alloc_bulk_cpu(s, c, n, p, cache_partials && s->cpu_partial_slabs, &popped);
	if (likely(got == n))
		return true;
	WRITE_ONCE(c->loaded, c->loaded - popped);
	WRITE_ONCE(c->stat[USLUB_ALLOC_SLOWPATH], slow0);
	WRITE_ONCE(c->pcs_adjust, pcs0);
	if (!c->freelist)
		publish_alloc_fastpath(c);   /* exact again for other readers */
	_uslub_free_to_slabs(s, c, got, p);
	return false;
}

static __always_inline void free_bulk(struct kmem_cache *s, size_t n, void **p);

static __noinline int alloc_bulk_slow(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p)
{
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	if (tag)
		uslub_alloc_tag_cur = NULL;
	if (unlikely(cache_bad(s, "uslub_cache_alloc_bulk")))
		return 0;
	if (unlikely(!p && n)) {
		_uslub_report("uslub: %s: alloc_bulk: the array is NULL\n", s->name);
		errno = EINVAL;
		return 0;
	}
	if (unlikely(n > INT_MAX)) {
		_uslub_report("uslub: %s: alloc_bulk of %zu objects (more than INT_MAX)\n", s->name, n);
		errno = EINVAL;
		return 0;
	}
	if (!n)
		return 0;
	if (unlikely(failslab(s, gfp, n)))
		return 0;
	if (unlikely(kmem_cache_debug(s))) {
		/* one at a time through the checked path; all or nothing, and
		 * a failure counts nothing */
		uintptr_t addr = (uintptr_t)__builtin_return_address(0);
		for (size_t i = 0; i < n; i++)
			if (!(p[i] = _uslub___debug_slab_alloc(s, gfp & ~USLUB_GFP_ZERO,
							USLUB_NUMA_NO_NODE, addr, false))) {
				while (i--)
					_uslub___debug_slab_free(s, virt_to_slab(p[i]), p[i], addr, false);
				errno = ENOMEM;
				return 0;
			}
		struct kmem_cache_cpu tmp, *c = _uslub_debug_cpu(s, &tmp);
		stat_add(c, ALLOC_SLOWPATH, n);
		_uslub_debug_cpu_done(s, c, &tmp);
	} else for (;;) {
		bool ok;
		if (likely(this_cpu_is_real() || _uslub_thread_init())) {
			ok = alloc_bulk_once(s, this_cpu(s), gfp, n, p, true);
		} else {
			struct kmem_cache_cpu tmp;
			memset(&tmp, 0, sizeof(tmp));
			ok = alloc_bulk_once(s, &tmp, gfp, n, p, false);
			_uslub_flush_cpu(s, &tmp);
		}
		if (likely(ok))
			break;
		if (!(gfp & USLUB_GFP_NOFAIL)) {
			errno = ENOMEM;
			if (!(gfp & USLUB_GFP_NOWARN) && _uslub_option(USLUB_OPT_VERBOSE))
				_uslub_report("uslub: %s: bulk allocation of %zu failed (out of "
					      "memory)\n", s->name, n);
			return 0;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (unlikely(READ_ONCE(s->hooks) | (gfp & USLUB_GFP_ACCOUNT)) &&
	    unlikely(!post_alloc_hook(s, gfp, n, p, NULL, tag))) {
		free_bulk(s, n, p);                      /* untouched by the hook */
		errno = ENOMEM;
		return 0;
	}
	if (unlikely(cache_kasan(s))) {          /* unpoisoned (and zeroed): kasan.c */
		for (size_t i = 0; i < n; i++)
			_uslub_kasan_alloc(s, p[i], 0, gfp & USLUB_GFP_ZERO);
		return _uslub_sampling ? _uslub_sample_bulk(s, n, p, tag, true) : (int)n;
	}
	if (gfp & USLUB_GFP_ZERO)
		for (size_t i = 0; i < n; i++)
			memset(p[i], 0, s->object_size);
	if (unlikely(_uslub_sampling))
		return _uslub_sample_bulk(s, n, p, tag, true);
	return (int)n;
}
/*
 * The common case without a stack frame: a live sheaf cache without hooks
 * or fault injection, whose main sheaf holds all n (n >= 1, so never a
 * stub of capacity 0). Everything else, checks and reports included, is
 * alloc_bulk_slow()'s.
 */
__public int uslub_cache_alloc_bulk_noprof(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
					   void **p)
{
	const unsigned int off = FASTPATH_OFF_DEAD | FASTPATH_OFF_DEBUG | FASTPATH_OFF_SLUB_DEBUG |
				 FASTPATH_OFF_ASAN;
	if (likely(s && p && n) && likely(!(READ_ONCE(s->fastpath_off) & off)) &&
	    likely(!(READ_ONCE(s->hooks) | (gfp & (USLUB_GFP_ACCOUNT | USLUB_GFP_ZERO)))) &&
	    likely(this_cpu_is_real())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		struct slab_sheaf *main = c->main;
		if (likely(main && main->size >= n)) {
			sheaf_pop_bulk(s, main, (unsigned int)n, p);
			stat_pcs_slow(c, n);
			/* the sampled countdown (sample.c): never armed, it
			 * only counts up */
			uint64_t left = (uint64_t)c->sample_left + n;
			WRITE_ONCE(c->sample_left, (int64_t)left);
			if (unlikely((int64_t)left < 0))
				return _uslub_sample_bulk(s, n, p, uslub_alloc_tag_cur, false);
			if (unlikely(uslub_alloc_tag_cur))
				uslub_alloc_tag_cur = NULL;     /* no hook takes it */
			return (int)n;
		}
	}
	return alloc_bulk_slow(s, gfp, n, p);
}
__public int (uslub_cache_alloc_bulk)(struct kmem_cache *s, uslub_gfp_t gfp, size_t n, void **p)
{
	uslub_alloc_tag_cur = NULL;
	return uslub_cache_alloc_bulk_noprof(s, gfp, n, p);
}

/*
 * Sheaf caches: p[] goes to the main sheaf, validated per slab. The
 * current slab's range, object count and free mark are kept in registers:
 * a pointer into it costs a range and object-start test (one rotate and
 * compare for power-of-two sizes, the reciprocal otherwise) and the free
 * mark's test and set before it is stored. Any other pointer goes to
 * bulk_run_find(): a table of the slabs seen in this call, else (out of
 * line, so that the loop keeps its registers) a descriptor lookup (ours,
 * this cache's, the local node). A full main is exchanged for the spare
 * or, whole, for an empty sheaf of the barn (_uslub_pcs_replace_full_main(),
 * once per sheaf). Double frees are reported here; the rest (NULLs
 * dropped) is moved to the front of p[] and counted in the return value:
 * other nodes, invalid pointers (reported by the detached freelists) and,
 * once the barn is full, everything not yet stored. Objects are stored
 * before the size that covers them is published (fork safety, as in
 * sheaf_push()).
 */
struct bulk_run {
	uintptr_t base, bytes, objects, mark;   /* objects: power-of-two sizes */
};
#define BULK_RUNS 16

struct bulk_runs {
	unsigned int valid;                     /* bit k: run[k] holds a slab */
	struct bulk_run run[BULK_RUNS];         /* by slab address */
};

static __always_inline struct bulk_run *bulk_run_slot(const struct kmem_cache *s,
						      struct bulk_runs *t, const void *x,
						      unsigned int *k)
{
	*k = ((uintptr_t)x >> (PAGE_SHIFT + s->order)) % BULK_RUNS;
	return &t->run[*k];
}

/* Sampled mode: untag the sampled objects in p[] (sample.c), before any
 * of them can be freed. */
static __noinline void free_bulk_sampled(struct kmem_cache *s, size_t n, void **p)
{
	for (size_t i = 0; i < n; i++) {
		struct slab *slab;
		if (!p[i] || !(slab = virt_to_slab(p[i])))
			continue;
		struct kmem_cache *cs = READ_ONCE(slab->slab_cache);
		if (cs && (!s || cs == s) && sample_free_needed(p[i]))
			_uslub_sample_free(cs, slab, p[i]);
	}
}

/* What the inline bulk push left (other nodes, invalid pointers, slabs
 * holding sampled objects): untagged, then the detached freelists. */
static void free_bulk_rest(struct kmem_cache *s, size_t left, void **p)
{
	if (unlikely(_uslub_sampling))
		free_bulk_sampled(s, left, p);
	_uslub_free_bulk_detached(s, left, p);
}

/* The descriptor lookup, out of line: the caller's loop keeps its registers. */
static __noinline const struct bulk_run *bulk_run_lookup(struct kmem_cache *s, struct bulk_runs *t,
							 const void *x, unsigned int shift)
{
	unsigned int k;
	struct bulk_run *r = bulk_run_slot(s, t, x, &k);
	struct slab *slab = virt_to_slab(x);
	struct uslub_thread *th = _uslub_tls.thread;    /* home_node(), inline */
	if (unlikely(!slab || slab->slab_cache != s || slab_nid(slab) != (th ? th->node : 0)))
		return NULL;                            /* foreign, another cache's or node's */
	if (unlikely(!(READ_ONCE(virt_to_page(x)->flags) & PG_slab_page)))
		return NULL;    /* holds sampled objects (sample.c): the rest, untagged */
	r->base = (uintptr_t)slab_obj_base(s, slab);
	r->bytes = slab_objects_bytes(slab);
	r->objects = r->bytes >> shift;
	r->mark = slab_free_mark(s, slab);
	t->valid |= 1u << k;
	if ((uintptr_t)x - r->base >= r->bytes)
		return NULL;                            /* in no object's range */
	return r;
}

/*
 * The slab of @x (not in the caller's current run) as a run of @t, or NULL
 * when @x is not an object of a local slab of @s: the table entry of its
 * address (slabs are naturally aligned: one entry per slab of the cache's
 * order), else a descriptor lookup that fills that entry. The table is
 * valid-masked, so a call that never leaves its first slab initializes
 * nothing. A pointer in a slab's range but outside its objects (the tail
 * past the last one) is NULL too: the detached path reports it.
 */
static __always_inline const struct bulk_run *bulk_run_find(struct kmem_cache *s,
							    struct bulk_runs *t, const void *x,
							    unsigned int shift)
{
	unsigned int k;
	const struct bulk_run *r = bulk_run_slot(s, t, x, &k);
	if (likely((t->valid >> k) & 1) && likely((uintptr_t)x - r->base < r->bytes))
		return r;
	return bulk_run_lookup(s, t, x, shift);
}

static __always_inline size_t free_to_pcs_bulk(struct kmem_cache *s, struct kmem_cache_cpu *c,
					       size_t n, void **p, const bool pow2)
{
	/* locals: the stores into objects and sheaves may alias s and c */
	const uintptr_t fmo = pow2 ? 0 : s->free_mark_offset;   /* pow2: the mark at word 0 */
	const unsigned int shift = pow2 ? (unsigned int)__builtin_ctz(s->size) : 0;
	const uintptr_t stride = s->size;
	const uint64_t recip = s->reciprocal_size;
	struct slab_sheaf *main = c->main;
	unsigned long pushed = 0;
	void **q = p, **const qend = p + n;     /* the next pointer to take */
	void **out = p;                         /* where the next one left goes */
	struct bulk_runs runs;
	/* the current run's slab: an empty range until the first lookup */
	uintptr_t base = 0, objects = 0, bytes = 0, mark = 0;

	runs.valid = 0;
	for (;;) {
		if (unlikely(!main || main->size == main->capacity)) {
			/* main is full (or there is none): the spare, or a
			 * whole-sheaf exchange at the barn */
			main = _uslub_pcs_replace_full_main(s, c);
			if (!main)
				goto rest;
		}
		void **const dst = main->objects;
		void **d = dst + main->size, **const first = d;
		/* d advances with q except for what is not stored: stop at
		 * whichever of p[] and main ends first */
		void **const stop = q + MIN((size_t)(qend - q), (size_t)(main->capacity - main->size));
		while (q < stop) {
			void *x = *q;
			uintptr_t off = (uintptr_t)x - base;
			if (pow2 ? unlikely(((off >> shift) | (off << (64 - shift))) >= objects) :
				   unlikely(off >= bytes ||
					    slab_offset_to_index(off, recip) * stride != off)) {
				/* not an object start of the current slab */
				if (off < bytes || !x) {
					if (x)
						*out++ = x;     /* interior: the detached path reports it */
					q++;
					continue;
				}
				const struct bulk_run *r = bulk_run_find(s, &runs, x, shift);
				if (unlikely(!r)) {
					*out++ = x;             /* foreign, another cache's or node's */
					q++;
					continue;
				}
				base = r->base;
				bytes = r->bytes;
				objects = r->objects;
				mark = r->mark;
				continue;                       /* x again, in its slab */
			}
			uintptr_t *m = (uintptr_t *)((char *)x + fmo);
			q++;
			if (USLUB_FREE_MARK) {
				if (unlikely(meta_load(m) == mark)) {
					barrier();
					WRITE_ONCE(main->size, (unsigned int)(d - dst));   /* where the report looks */
					_uslub_report_double_free(s, virt_to_slab(x), x);
					continue;
				}
				meta_store(m, mark);
			}
			*d++ = x;
		}
		barrier();                              /* a fork child flushes objects[0, size) */
		WRITE_ONCE(main->size, (unsigned int)(d - dst));
		pushed += (unsigned long)(d - first);
		if (q == qend)
			break;
	}
	stat_add(c, FREE_PCS, pushed);
	return (size_t)(out - p);
rest:
	/* no room without the slabs: the rest goes to the detached path */
	memmove(out, q, (size_t)(qend - q) * sizeof(void *));
	stat_add(c, FREE_PCS, pushed);
	return (size_t)(out - p) + (size_t)(qend - q);
}

/* The two instances of free_to_pcs_bulk(), each with the detached path
 * for what it left: entered by a tail call from uslub_cache_free_bulk().
 * The first is for power-of-two sizes with the free mark at word 0. */
static __noinline void free_bulk_pcs_pow2(struct kmem_cache *s, struct kmem_cache_cpu *c,
					  size_t n, void **p)
{
	size_t left = free_to_pcs_bulk(s, c, n, p, true);
	if (unlikely(left))
		free_bulk_rest(s, left, p);
}

static __noinline void free_bulk_pcs(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n,
				     void **p)
{
	size_t left = free_to_pcs_bulk(s, c, n, p, false);
	if (unlikely(left))
		free_bulk_rest(s, left, p);
}

static size_t free_bulk_to_sheaves(struct kmem_cache *s, size_t n, void **p)
{
	if (!(this_cpu_is_real() || _uslub_thread_init()))
		return n;
	return free_to_pcs_bulk(s, this_cpu(s), n, p, false);
}

/*
 * The objects of the calling thread's cpu slab go straight onto the cpu
 * freelist, checked the way the free fast path checks one (range, object
 * start, the free mark), with two stores each; the rest (NULLs dropped) is
 * moved to the front of p[] for the detached freelists, and counted in
 * the return value. A cache whose fast paths are off has an empty range
 * here, so nothing is taken.
 */
static size_t free_bulk_to_cpu(struct kmem_cache *s, size_t n, void **p)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	uintptr_t lo = (uintptr_t)c->slab_addr, bytes = c->slab_bytes;
	void *head = c->freelist;
	unsigned long k = 0;
	size_t left = 0;
	if (!bytes)
		return n;
	for (size_t i = 0; i < n; i++) {
		void *x = p[i];
		uintptr_t off = (uintptr_t)x - lo;
		if (off < bytes &&
		    slab_offset_to_index(off, s->reciprocal_size) * (uintptr_t)s->size == off &&
		    !free_mark_test(s, x, c->free_mark)) {
			free_mark_set(s, x, c->free_mark);
			set_freepointer_raw(s, x, head);
			head = x;
			k++;
		} else if (x) {
			p[left++] = x;
		}
	}
	c->freelist = head;
	stat_add(c, FREE_FASTPATH, k);
	return left;
}

/* The free hook of every valid object in p[] that has one (invalid ones
 * are reported later, by the paths that free). */
static void free_bulk_hooks(struct kmem_cache *s, size_t n, void **p)
{
	for (size_t i = 0; i < n; i++) {
		void *x = p[i];
		struct slab *slab;
		if (!x || !(slab = virt_to_slab(x)))
			continue;
		struct kmem_cache *cs = READ_ONCE(slab->slab_cache);
		if (cs && (!s || cs == s) && READ_ONCE(cs->hooks) && obj_is_valid(cs, slab, x))
			free_hook(cs, slab, x);
	}
}

static void free_bulk_slow(struct kmem_cache *s, size_t n, void **p);

/* The common case: a live sheaf cache without hooks, on a thread with a
 * cpu area, straight to its instance of free_to_pcs_bulk(). */
__public void uslub_cache_free_bulk(struct kmem_cache *s, size_t n, void **p)
{
	if (likely(s && p && n) &&
	    likely(!(READ_ONCE(s->fastpath_off) & (FASTPATH_OFF_DEAD | FASTPATH_OFF_ASAN))) &&
	    likely(!READ_ONCE(s->hooks)) && likely(s->sheaf_capacity) &&
	    likely(this_cpu_is_real())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if ((s->size & (s->size - 1)) == 0 && !s->free_mark_offset)
			free_bulk_pcs_pow2(s, c, n, p);
		else
			free_bulk_pcs(s, c, n, p);
		return;
	}
	free_bulk_slow(s, n, p);
}

static __noinline void free_bulk_slow(struct kmem_cache *s, size_t n, void **p)
{
	if (unlikely(!p) || !n)
		return;
	if (s && cache_bad(s, "uslub_cache_free_bulk"))   /* NULL: each object's cache */
		return;
	if (unlikely(_uslub_sampling))
		free_bulk_sampled(s, n, p);
	if (!s || READ_ONCE(s->hooks))
		free_bulk_hooks(s, n, p);
	if (s ? cache_kasan(s) : _uslub_kasan)         /* poisoned before published */
		for (size_t i = 0; i < n; i++)
			_uslub_kasan_slab_free(s, p[i]);
	free_bulk(s, n, p);
}

static __always_inline void free_bulk(struct kmem_cache *s, size_t n, void **p)
{
	size_t left = n;
	if (s && s->sheaf_capacity)
		left = free_bulk_to_sheaves(s, n, p);
	else if (s && this_cpu_is_real())
		left = free_bulk_to_cpu(s, n, p);
	if (left)
		_uslub_free_bulk_detached(s, left, p);
}
