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

/* sheaf_pop_bulk() from 32 on: one memcpy of the pointers, then a pass
 * over p[] that clears the marks (four at a time: loads first, then
 * stores). Out of line: the call keeps the small case's registers. */
static __noinline void sheaf_pop_many(uintptr_t fmo, void **p, void **src, unsigned int k)
{
	void **const end = p + k;
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
 * Hand out the top @k objects of @main (k <= size) into p[], clearing each
 * free mark: below 32, one pass that copies four pointers and clears
 * their marks (memcpy's call costs more than it saves there); from 32 on,
 * sheaf_pop_many(). The size goes down first, so a fork child never
 * flushes an object already handed out.
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
	if (k >= 32) {
		sheaf_pop_many(fmo, p, src, k);
		return;
	}
	for (; p + 4 <= end; p += 4, src += 4) {
		char *x0 = src[0], *x1 = src[1], *x2 = src[2], *x3 = src[3];
		p[0] = x0;
		p[1] = x1;
		p[2] = x2;
		p[3] = x3;
		if (USLUB_FREE_MARK) {
			meta_store(x0 + fmo, 0);
			meta_store(x1 + fmo, 0);
			meta_store(x2 + fmo, 0);
			meta_store(x3 + fmo, 0);
		}
	}
	for (; p < end; p++, src++) {
		*p = *src;
		if (USLUB_FREE_MARK)
			meta_store((char *)*src + fmo, 0);
	}
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
			struct kmem_cache_cpu *c = this_cpu(s);
			bool claimed = _uslub_pcpu_claim(s, c);  /* per-CPU mode */
			ok = alloc_bulk_once(s, c, gfp, n, p, true);
			if (claimed)
				_uslub_pcpu_release(s, c);
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
 * Sheaf caches: p[] goes to the main sheaf, each pointer validated against
 * its slab before it is stored: an object start of a live local slab of
 * this cache, and not free already (the free mark, tested and set).
 *
 * First the slab of the slot's free record (struct free_record), which
 * follows p[0]'s: bulk_rec_run() takes p[] while it stays there, four
 * pointers to a test, and nothing else is set up; a call whose objects sit
 * in one slab call after call ends there. From the first pointer it does
 * not place (free_bulk_pcs_more()), the slabs are in a direct-mapped
 * table on the stack (struct bulk_runs), filled by descriptor lookups:
 * inline for the common case (bulk_run_fast(): a live slab of this cache
 * without sampled objects, on one node), out of line for the rest
 * (bulk_push_cold(): NULL, another node's or cache's, invalid, a sampled
 * object's untag, a double free). bulk_mark_run() keeps the current slab
 * in registers while p[] stays in it, and bulk_table_run() looks every
 * pointer up once p[] switches slabs often: interleaved objects of many
 * slabs then cost a few instructions more, not a mispredicted branch each.
 *
 * A full main is exchanged for the spare or, whole, for an empty sheaf of
 * the barn (_uslub_pcs_replace_full_main(), once per sheaf). Double frees
 * are reported here; the rest (NULLs dropped) is moved to the front of
 * p[] and counted in the return value: other nodes, invalid pointers
 * (reported by the detached freelists) and, once the barn is full,
 * everything not yet stored. Objects are stored before the size that
 * covers them is published (fork safety, as in sheaf_push()).
 */
#define BULK_RUNS 32    /* slabs of one call rarely share an entry */

/*
 * Entry k: the address of a slab whose number (address >> kshift, kshift =
 * PAGE_SHIFT + s->order: slabs are naturally aligned) is k modulo
 * BULK_RUNS, and its free mark. Only slabs of the cache's order with its
 * full object count (bulk_fit_bytes()) and no left red zone get one, so
 * for a pointer x whose entry holds base, x - base below the slab size is
 * an offset in that slab's objects, or in the tail after them
 * (power-of-two sizes have none). Empty: the address of a block whose
 * number is not k, so that no x with key k is in it (0, and one slab size
 * for entry 0), set on the table's first use (256 bytes of stores, where a
 * valid mask would cost every pointer a bit test). An entry holds while
 * the cache's slab_epoch does (struct free_record's argument): read when
 * the table starts and after each sheaf given away.
 */
struct bulk_runs {
	/* the current run of bulk_mark_run() (run_base 0: none), kept from
	 * one call of it to the next; apart, so that the compiler makes no
	 * 16-byte load of the two 8-byte stores (a store-forwarding stall) */
	uintptr_t run_base;
	uintptr_t base[BULK_RUNS] __attribute__((aligned(16)));
	uintptr_t mark[BULK_RUNS];
	uintptr_t run_mark;
	struct slab *first;     /* the slab of the first entry a lookup filled */
	struct slab *scanned;   /* the last slab bulk_untag_ahead() went over */
	bool ready;             /* the entries are set: cleared on first use,
				   so that a call that never leaves the
				   free record's slab stores none */
	bool table;             /* p[] switched slabs too often for the run:
				   the rest of the call looks every pointer up */
};

static __always_inline unsigned int bulk_run_key(unsigned int kshift, uintptr_t x)
{
	return (unsigned int)(x >> kshift) % BULK_RUNS;
}

/* Power-of-two sizes with the free mark at word 0 and no left red zone:
 * an object start is a multiple of the size anywhere in a slab. */
static __always_inline bool bulk_pow2(const struct kmem_cache *s)
{
	return !(s->size & (s->size - 1)) && !(s->free_mark_offset | s->red_left_pad);
}

/* The objects bytes of a slab that may have an entry: the cache's order
 * and full object count; for bulk_pow2() caches also no tail after the
 * objects (their loop tests no range). 0: none may. */
static __always_inline uint32_t bulk_fit_bytes(const struct kmem_cache *s)
{
	uint32_t bytes = s->objects * s->size;
	if (bulk_pow2(s) && bytes != PAGE_SIZE << s->order)
		return 0;
	return bytes;
}

/* Does the slab at @base with objects bytes @bytes get an entry? */
static __always_inline bool bulk_run_fits(const struct kmem_cache *s, uintptr_t base,
					  uint32_t bytes)
{
	return !(base & ((PAGE_SIZE << s->order) - 1)) && bytes == bulk_fit_bytes(s);
}

static __always_inline void bulk_run_set(const struct kmem_cache *s, struct bulk_runs *t,
					 uintptr_t base, uintptr_t mark)
{
	unsigned int k = bulk_run_key(PAGE_SHIFT + s->order, base);
	t->base[k] = base;
	t->mark[k] = mark;
}

/* Set the entries up before their first use: all empty but the current
 * run's. 16-byte stores: a memset of 256 bytes is rep stosq, whose
 * start-up costs a small call more than the stores. */
static __noinline void bulk_runs_init(const struct kmem_cache *s, struct bulk_runs *t)
{
	typedef uint64_t v2u64 __attribute__((vector_size(16), may_alias));
	v2u64 *v = (v2u64 *)t->base;
#pragma GCC unroll 16
	for (unsigned int i = 0; i < BULK_RUNS / 2; i++)
		v[i] = (v2u64){ 0, 0 };
	t->base[0] = PAGE_SIZE << s->order;
	if (t->run_base)
		bulk_run_set(s, t, t->run_base, t->run_mark);
	t->ready = true;
}

static __always_inline void bulk_runs_ready(const struct kmem_cache *s, struct bulk_runs *t)
{
	if (unlikely(!t->ready))
		bulk_runs_init(s, t);
}

/* Enter the slab at @base (of @s's order and full object count) with its
 * free mark. */
static __always_inline void bulk_run_fill(const struct kmem_cache *s, struct bulk_runs *t,
					  uintptr_t base, uintptr_t mark)
{
	bulk_runs_ready(s, t);
	bulk_run_set(s, t, base, mark);
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

/* What the inline bulk push left (other nodes, invalid pointers, what the
 * barn had no room for): untagged, then the detached freelists. */
static void free_bulk_rest(struct kmem_cache *s, size_t left, void **p)
{
	if (unlikely(_uslub_sampling))
		free_bulk_sampled(s, left, p);
	_uslub_free_bulk_detached(s, left, p);
}

/*
 * The common miss, inline in the loop: @x on a page of a live slab of @s
 * without sampled objects (PG_slab_page, and the page's own line, as
 * free_object_lookup() reads it), on one node, at an object start, in a
 * slab that qualifies: its slab goes in the table, and true. Anything
 * else is bulk_push_cold()'s.
 */
static __always_inline bool bulk_run_fast(const struct kmem_cache *s, struct bulk_runs *t,
					  const void *x)
{
	if (unlikely(!_uslub_owns_segment(x)) || unlikely(_uslub_multi_node))
		return false;
	const struct page *page = virt_to_page(x);
	if (unlikely(!(READ_ONCE(page->flags) & PG_slab_page)) || unlikely(page_slab_cache(page) != s))
		return false;
	struct slab *slab = page_slab(READ_ONCE(page->compound_head));
	uint64_t word = page_slab_word(page);
	uintptr_t base = (uintptr_t)slab_obj_base(s, slab);
	uintptr_t off = (uintptr_t)x - base;
	if (unlikely(off >= (uint32_t)word) || unlikely(!obj_start(s, off)) ||
	    unlikely(!bulk_run_fits(s, base, (uint32_t)word)))
		return false;
	bulk_run_fill(s, t, base, s->free_mark ^ word);         /* slab_free_mark() */
	if (!t->first)
		t->first = slab;
	return true;
}

/* A power-of-two cache's pointer @x (its mark at word 0) stored at @dst
 * unless it holds @mark (already free: false, nothing stored); the mark
 * is set before the store, so the same pointer twice in p[] is caught. */
static __always_inline bool bulk_mark_store(uintptr_t x, uintptr_t mark, void **dst)
{
	if (USLUB_FREE_MARK) {
		if (unlikely(meta_load((uintptr_t *)x) == mark))
			return false;
		meta_store((uintptr_t *)x, mark);
	}
	*dst = (void *)x;
	return true;
}

/*
 * The table loop: like bulk_mark_run() below, with every pointer placed
 * by its entry: more work than the run's test, but no branch that
 * depends on the order of p[]. A function of its own: its few live
 * values all stay in registers.
 */
static __always_inline size_t bulk_table_run(const struct kmem_cache *s, struct bulk_runs *t,
					     void **q, void **d, size_t m, const bool pow2,
					     const bool order0)
{
	/* locals: the stores into objects and sheaves may alias s */
	const unsigned int order = order0 ? 0 : s->order;
	const unsigned int kshift = PAGE_SHIFT + order;
	const uintptr_t bad = ~((PAGE_SIZE << order) - 1) | (s->size - 1);
	const uintptr_t fmo = pow2 ? 0 : s->free_mark_offset;   /* pow2: the mark at word 0 */
	const uint32_t bytes = s->objects * s->size;
	const uint64_t magic = s->div_magic;
	void **r = q, **const qend = q + m, **const qlast = qend - 1;
	const uintptr_t doff = (uintptr_t)d - (uintptr_t)q;
#define BULK_D(r) ((void **)((char *)(r) + doff))
	for (;;) {
		while (pow2 && r < qlast) {
			uintptr_t x0 = (uintptr_t)r[0], x1 = (uintptr_t)r[1];
			unsigned int k0 = bulk_run_key(kshift, x0), k1 = bulk_run_key(kshift, x1);
			if (unlikely(((x0 - t->base[k0]) | (x1 - t->base[k1])) & bad))
				break;
			if (USLUB_FREE_MARK) {
				uintptr_t mark0 = t->mark[k0], mark1 = t->mark[k1];
				if (unlikely(meta_load((uintptr_t *)x0) == mark0))
					goto out;
				meta_store((uintptr_t *)x0, mark0);
				BULK_D(r)[0] = (void *)x0;
				if (unlikely(meta_load((uintptr_t *)x1) == mark1)) {
					r++;
					goto out;
				}
				meta_store((uintptr_t *)x1, mark1);
			} else {
				BULK_D(r)[0] = (void *)x0;
			}
			BULK_D(r)[1] = (void *)x1;
			r += 2;
		}
		if (r == qend)
			goto out;
		void *x = *r;
		unsigned int k = bulk_run_key(kshift, (uintptr_t)x);
		uintptr_t off = (uintptr_t)x - t->base[k];
		if (pow2 ? unlikely(off & bad) : unlikely(off >= bytes) || unlikely(off * magic >= magic)) {
			if (bulk_run_fast(s, t, x))
				continue;               /* x again, its slab in the table */
			goto out;
		}
		if (USLUB_FREE_MARK) {
			uintptr_t *mp = (uintptr_t *)((char *)x + fmo), m1 = t->mark[k];
			if (unlikely(meta_load(mp) == m1))
				goto out;
			meta_store(mp, m1);
		}
		*BULK_D(r) = x;
		r++;
	}
#undef BULK_D
out:
	return (size_t)(r - q);
}

static __noinline size_t bulk_table_pow2(const struct kmem_cache *s, struct bulk_runs *t,
					 void **q, void **d, size_t m)
{
	/* order 0 (the small sizes): the key's shift a constant */
	if (!s->order)
		return bulk_table_run(s, t, q, d, m, true, true);
	return bulk_table_run(s, t, q, d, m, true, false);
}

static __noinline size_t bulk_table_any(const struct kmem_cache *s, struct bulk_runs *t,
					void **q, void **d, size_t m)
{
	return bulk_table_run(s, t, q, d, m, false, false);
}

/*
 * The loop: q[i] to d[i] for i < m, each placed by the current run or the
 * table (after a lookup by bulk_run_fast() if need be) and marked free, up
 * to the first that is not (for bulk_push_cold()); returns how many went.
 * A function of its own, whose few live values all fit in registers.
 */
static __always_inline size_t bulk_mark_run(const struct kmem_cache *s, struct bulk_runs *t,
					    void **q, void **d, size_t m, const bool pow2)
{
	/* locals: the stores into objects and sheaves may alias s */
	const unsigned int kshift = PAGE_SHIFT + s->order;
	/* pow2: x - base of x's slab is an object start there exactly when
	 * no bit of this is set (slab and object sizes are powers of two) */
	const uintptr_t bad = ~((PAGE_SIZE << s->order) - 1) | (s->size - 1);
	const uintptr_t fmo = pow2 ? 0 : s->free_mark_offset;   /* pow2: the mark at word 0 */
	const uint32_t bytes = s->objects * s->size;
	const uint64_t magic = s->div_magic;
/* Is x at an object start of the slab at b (whose entry it has)? */
#define BULK_PLACED(x, b)                                                                \
	(pow2 ? likely(!(((uintptr_t)(x) - (b)) & bad)) :                                \
		likely((uintptr_t)(x) - (b) < bytes) &&                                  \
		likely(((uintptr_t)(x) - (b)) * magic < magic))
	uintptr_t base = t->run_base, mark = t->run_mark;       /* the current run */
	size_t switches = 0;
	void **r = q, **const qend = q + m, **const qlast3 = qend - 3;
	/* d[i] for q[i]: one register for both (the stores address r) */
	const uintptr_t doff = (uintptr_t)d - (uintptr_t)q;
#define BULK_D(r) ((void **)((char *)(r) + doff))
	void *x;
	unsigned int k;

	if (!m)
		return 0;
	if (unlikely(t->table))
		return pow2 ? bulk_table_pow2(s, t, q, d, m) : bulk_table_any(s, t, q, d, m);
	if (likely(base))
		goto run;
	/*
	 * The run: a pointer into the current slab (the free record's, then
	 * the last entry used) costs no table access. Objects of few slabs,
	 * or in long runs, never leave it; p[] that switches slabs more than
	 * once in 16 pointers (each switch a mispredicted branch) goes on in
	 * the table loop for the rest of the call.
	 */
	goto look;
	for (;;) {
run:
		/* pow2: four at a time, one test for all four; each object's
		 * mark set before the next one's is tested (the same pointer
		 * twice) */
		while (pow2 && r < qlast3) {
			uintptr_t x0 = (uintptr_t)r[0], x1 = (uintptr_t)r[1];
			uintptr_t x2 = (uintptr_t)r[2], x3 = (uintptr_t)r[3];
			if (unlikely(((x0 - base) | (x1 - base) | (x2 - base) | (x3 - base)) & bad))
				break;
			if (unlikely(!bulk_mark_store(x0, mark, &BULK_D(r)[0])))
				goto out;
			if (unlikely(!bulk_mark_store(x1, mark, &BULK_D(r)[1]))) {
				r += 1;
				goto out;
			}
			if (unlikely(!bulk_mark_store(x2, mark, &BULK_D(r)[2]))) {
				r += 2;
				goto out;
			}
			if (unlikely(!bulk_mark_store(x3, mark, &BULK_D(r)[3]))) {
				r += 3;
				goto out;
			}
			r += 4;
		}
		if (r == qend)
			goto out;
		x = *r;
		if (unlikely(!BULK_PLACED(x, base))) {
look:
			bulk_runs_ready(s, t);
			x = *r;
			k = bulk_run_key(kshift, (uintptr_t)x);
			if (unlikely(!BULK_PLACED(x, t->base[k]))) {
				if (bulk_run_fast(s, t, x))
					goto look;      /* its slab in the table now */
				goto out;
			}
			if (unlikely(++switches > 1 + (size_t)(r - q) / 16)) {
				t->table = true;
				goto table;
			}
			base = t->base[k];
			mark = t->mark[k];
		}
		if (USLUB_FREE_MARK) {
			uintptr_t *mp = (uintptr_t *)((char *)x + fmo);
			if (unlikely(meta_load(mp) == mark))
				goto out;
			meta_store(mp, mark);
		}
		*BULK_D(r) = x;
		r++;
	}
table:
	t->run_base = base;
	t->run_mark = mark;
	{
		size_t done = (size_t)(r - q);
		return done + (pow2 ? bulk_table_pow2(s, t, r, BULK_D(r), m - done) :
				      bulk_table_any(s, t, r, BULK_D(r), m - done));
	}
#undef BULK_D
#undef BULK_PLACED
out:
	t->run_base = base;
	t->run_mark = mark;
	return (size_t)(r - q);
}

/* Its two instances: power-of-two sizes (no tail after the objects, the
 * free mark at word 0), and the rest. */
static __noinline size_t bulk_mark_pow2(const struct kmem_cache *s, struct bulk_runs *t,
					void **q, void **d, size_t m)
{
	return bulk_mark_run(s, t, q, d, m, true);
}

static __noinline size_t bulk_mark_any(const struct kmem_cache *s, struct bulk_runs *t,
				       void **q, void **d, size_t m)
{
	return bulk_mark_run(s, t, q, d, m, false);
}

enum { BULK_DROP, BULK_STORE, BULK_LEAVE };

/*
 * @slab holds sampled objects (no PG_slab_page): untag the sampled ones
 * among the pointers still to come, q[0, m), before any of them is stored
 * (every one of them is freed by this call, to main or to the slabs), so
 * that the slab gets its bit back with its last sample and the rest of
 * its objects go through the table, not here one by one.
 */
static __noinline void bulk_untag_ahead(struct kmem_cache *s, struct slab *slab, uintptr_t base,
					uint32_t bytes, void **q, size_t m)
{
	const struct page *page = slab_page(slab);
	for (size_t i = 0; i < m && !(READ_ONCE(page->flags) & PG_slab_page); i++) {
		uintptr_t off = (uintptr_t)q[i] - base;
		if (off >= bytes || !obj_start(s, off))
			continue;
		if (obj_ext_tag(slab_obj_ext(s, slab, q[i])))
			_uslub_sample_free(s, slab, q[i]);
	}
}

/*
 * What bulk_mark_run() refused, out of line so that the loop keeps its
 * registers, with the @left pointers after it at @q: NULL (BULK_DROP),
 * else a descriptor lookup: not an object start of a local slab of @s
 * (foreign, another cache's or node's, inside an object or past the last
 * one: BULK_LEAVE, the detached path reports it), a double free (reported,
 * BULK_DROP), else marked free (BULK_STORE, for main). A slab holding
 * sampled objects (no PG_slab_page) gets no entry until its samples are
 * untagged (sample.c, and bulk_untag_ahead()) before they are stored; nor
 * does a slab that does not qualify (bulk_run_fits()): their objects come
 * here. Only valid objects fill an entry: a pointer of this call keeps the
 * slab live.
 */
static __noinline int bulk_push_cold(struct kmem_cache *s, struct bulk_runs *t, void *x,
				     void **q, size_t left)
{
	if (unlikely(!x))
		return BULK_DROP;
	struct slab *slab = virt_to_slab(x);
	if (!slab || READ_ONCE(slab->slab_cache) != s)
		return BULK_LEAVE;                      /* foreign, another cache's */
	if (unlikely(_uslub_multi_node)) {
		struct uslub_thread *th = _uslub_tls.thread;    /* home_node(), inline */
		if (slab_nid(slab) != (th ? th->node : 0))
			return BULK_LEAVE;              /* another node's */
	}
	uintptr_t base = (uintptr_t)slab_obj_base(s, slab);
	uint32_t bytes = slab_objects_bytes(slab);
	uintptr_t off = (uintptr_t)x - base;
	if (off >= bytes || !obj_start(s, off))
		return BULK_LEAVE;                      /* in no object, or not at its start */
	uintptr_t mark = slab_free_mark(s, slab);
	const struct page *page = virt_to_page(x);
	if (unlikely(!(READ_ONCE(page->flags) & PG_slab_page))) {
		_uslub_sample_free(s, slab, x);
		if (t->scanned != slab) {       /* once per slab and call */
			t->scanned = slab;
			bulk_untag_ahead(s, slab, base, bytes, q, left);
		}
	}
	if ((READ_ONCE(page->flags) & PG_slab_page) && bulk_run_fits(s, base, bytes)) {
		bulk_run_fill(s, t, base, mark);
		if (!t->first)
			t->first = slab;
	}
	if (USLUB_FREE_MARK) {
		uintptr_t *m = (uintptr_t *)((char *)x + s->free_mark_offset);
		if (unlikely(meta_load(m) == mark)) {
			_uslub_report_double_free(s, slab, x);
			return BULK_DROP;
		}
		meta_store(m, mark);
	}
	return BULK_STORE;
}

/* Start the table: the slot's free record (struct free_record), valid
 * while the cache's epoch is the one it holds, is the current run, and
 * the entries wait for their first use. Returns that epoch. */
static __always_inline uint64_t bulk_runs_seed(struct kmem_cache *s, struct kmem_cache_cpu *c,
					       struct bulk_runs *t)
{
	uint64_t epoch = __atomic_load_n(&s->slab_epoch, __ATOMIC_ACQUIRE);
	t->ready = false;
	t->table = false;
	t->first = NULL;
	t->scanned = NULL;
	t->run_base = 0;
	if (c->rec.epoch == epoch && bulk_run_fits(s, (uintptr_t)c->rec.addr, c->rec.bytes)) {
		t->run_base = (uintptr_t)c->rec.addr;
		t->run_mark = c->rec.mark;
	}
	return epoch;
}

/* The first slab a lookup entered (p[0]'s, when the record did not place
 * it) becomes the slot's free record: the next call's seed, and the
 * single free's first try. */
static __always_inline void bulk_record(struct kmem_cache *s, struct kmem_cache_cpu *c,
					const struct bulk_runs *t, uint64_t epoch)
{
	if (slab_address(t->first) != c->rec.addr || c->rec.epoch != epoch)
		_uslub_free_record_set(s, c, t->first);
}

/*
 * The general case, from p[i] on (p[0, i) stored and published by the
 * caller) with the caller's table @t of @epoch: main filled sheaf by
 * sheaf, the refused pointers by bulk_push_cold(). Returns how many were
 * left at the front of p[]. @record: the free record did not place p[0],
 * so the first slab looked up becomes it.
 */
static __noinline size_t free_to_pcs_bulk(struct kmem_cache *s, struct kmem_cache_cpu *c,
					  size_t n, void **p, size_t i, struct bulk_runs *t,
					  uint64_t epoch, bool record, const bool pow2)
{
	struct slab_sheaf *main = c->main;
	unsigned long pushed = 0;
	void **q = p + i, **const qend = p + n; /* the next pointer to take */
	void **out = p;                         /* where the next one left goes */

	if (q == qend)
		return 0;
	for (;;) {
		if (unlikely(!sheaf_real(main) || main->size == main->capacity)) {
			/* main is full (or there is none): the spare, or a
			 * whole-sheaf exchange at the barn */
			main = _uslub_pcs_replace_full_main(s, c);
			if (!main)
				goto rest;
			/* a sheaf given to the barn may be flushed by another
			 * thread: our entries hold while the epoch does */
			if (__atomic_load_n(&s->slab_epoch, __ATOMIC_ACQUIRE) != epoch)
				epoch = bulk_runs_seed(s, c, t);
		}
		void **const dst = main->objects;
		void **d = dst + main->size, **const first = d;
		/* q[i] goes to d[i] until a pointer is not stored: take no
		 * more than main has room for */
		size_t m = MIN((size_t)(qend - q), (size_t)(main->capacity - main->size));
		for (;;) {
			size_t k = pow2 ? bulk_mark_pow2(s, t, q, d, m) : bulk_mark_any(s, t, q, d, m);
			d += k;
			q += k;
			m -= k;
			if (likely(!m))
				break;
			/* q[0] was refused: the objects before it are stored */
			barrier();
			WRITE_ONCE(main->size, (unsigned int)(d - dst));   /* the report, the untag */
			void *x = *q++;
			m--;
			int r = bulk_push_cold(s, t, x, q, (size_t)(qend - q));
			if (r == BULK_STORE)
				*d++ = x;
			else if (r == BULK_LEAVE)
				*out++ = x;
		}
		barrier();                              /* a fork child flushes objects[0, size) */
		WRITE_ONCE(main->size, (unsigned int)(d - dst));
		pushed += (unsigned long)(d - first);
		if (q == qend)
			break;
	}
	stat_add(c, FREE_PCS, pushed);
	if (t->first && record)
		bulk_record(s, c, t, epoch);
	return (size_t)(out - p);
rest:
	/* no room without the slabs: the rest goes to the detached path */
	memmove(out, q, (size_t)(qend - q) * sizeof(void *));
	stat_add(c, FREE_PCS, pushed);
	return (size_t)(out - p) + (size_t)(qend - q);
}

/*
 * The slab of @x for a run of bulk_rec_run(), read from the page's own
 * line as free_object_lookup() reads it: a live slab of @s without
 * sampled objects, on one node, whose objects span a whole block of the
 * cache's order (pow2: the mask's test needs it), @x an object start in
 * it. Else false: the table's way decides.
 */
static __always_inline bool bulk_rec_slab(const struct kmem_cache *s, const void *x,
					  uintptr_t *base, uintptr_t *mark, uint32_t *bytes,
					  struct slab **slabp, const bool pow2)
{
	if (unlikely(!_uslub_owns_segment(x)) || unlikely(_uslub_multi_node))
		return false;
	const struct page *page = virt_to_page(x);
	if (unlikely(!(READ_ONCE(page->flags) & PG_slab_page)) || unlikely(page_slab_cache(page) != s))
		return false;
	struct slab *slab = page_slab(READ_ONCE(page->compound_head));
	uint64_t word = page_slab_word(page);
	uintptr_t b = (uintptr_t)slab_obj_base(s, slab), off = (uintptr_t)x - b;
	if (unlikely(off >= (uint32_t)word) || unlikely(!obj_start(s, off)) ||
	    (pow2 && unlikely(!bulk_run_fits(s, b, (uint32_t)word))))
		return false;
	*base = b;
	*mark = s->free_mark ^ word;                    /* slab_free_mark() */
	*bytes = (uint32_t)word;
	*slabp = slab;
	return true;
}

/*
 * The common case, without the table: p[] while it stays in few slabs,
 * the first the slot's free record's (struct free_record, valid while the
 * cache's epoch is the one it holds), the next ones read by bulk_rec_slab()
 * (three at most: then the table pays), each taken the way bulk_mark_run()'s
 * run takes it (an object start there and not free already: marked and
 * stored at d[]). Returns how many went; the rest is the table's. *@first:
 * p[0]'s slab when the record did not place it (it becomes the record),
 * else NULL. A call whose objects sit in a slab or two call after call
 * costs a test and the mark per object, and none of the table's setup.
 */
static __always_inline size_t bulk_rec_run(const struct kmem_cache *s,
					   const struct kmem_cache_cpu *c, void **q, void **d,
					   size_t m, struct slab **first, const bool pow2)
{
	/* locals: the stores into objects and sheaves may alias s and c */
	uintptr_t base = (uintptr_t)c->rec.addr, mark = c->rec.mark;
	uint32_t bytes = (uint32_t)c->rec.bytes;
	const uintptr_t bad = ~((PAGE_SIZE << s->order) - 1) | (s->size - 1);
	const uintptr_t fmo = pow2 ? 0 : s->free_mark_offset;   /* pow2: the mark at word 0 */
	const uint64_t magic = s->div_magic;
	const uintptr_t doff = (uintptr_t)d - (uintptr_t)q;
	void **r = q, **const qend = q + m;
	unsigned int switches = 0;
	struct slab *slab;

	*first = NULL;
	/* pow2: the bad mask's test needs the record's slab to span a whole
	 * block of the cache's order: all objects, naturally aligned */
	if (c->rec.epoch != __atomic_load_n(&s->slab_epoch, __ATOMIC_ACQUIRE) ||
	    (pow2 && bytes != PAGE_SIZE << s->order))
		goto other;
	for (;;) {
		for (; pow2 && r + 4 <= qend; r += 4) {
			uintptr_t x0 = (uintptr_t)r[0], x1 = (uintptr_t)r[1];
			uintptr_t x2 = (uintptr_t)r[2], x3 = (uintptr_t)r[3];
			if (unlikely(((x0 - base) | (x1 - base) | (x2 - base) | (x3 - base)) & bad))
				break;
			if (USLUB_FREE_MARK) {
				/* each mark set before the next one's test: the
				 * same pointer twice */
				if (unlikely(meta_load((uintptr_t *)x0) == mark))
					goto out;
				meta_store((uintptr_t *)x0, mark);
				*(void **)((uintptr_t)r + doff) = (void *)x0;
				if (unlikely(meta_load((uintptr_t *)x1) == mark)) {
					r += 1;
					goto out;
				}
				meta_store((uintptr_t *)x1, mark);
				*(void **)((uintptr_t)(r + 1) + doff) = (void *)x1;
				if (unlikely(meta_load((uintptr_t *)x2) == mark)) {
					r += 2;
					goto out;
				}
				meta_store((uintptr_t *)x2, mark);
				*(void **)((uintptr_t)(r + 2) + doff) = (void *)x2;
				if (unlikely(meta_load((uintptr_t *)x3) == mark)) {
					r += 3;
					goto out;
				}
				meta_store((uintptr_t *)x3, mark);
			} else {
				*(void **)((uintptr_t)r + doff) = (void *)x0;
				*(void **)((uintptr_t)(r + 1) + doff) = (void *)x1;
				*(void **)((uintptr_t)(r + 2) + doff) = (void *)x2;
			}
			*(void **)((uintptr_t)(r + 3) + doff) = (void *)x3;
		}
		if (r == qend)
			goto out;
		uintptr_t x = (uintptr_t)*r, off = x - base;
		if (pow2 ? unlikely(off & bad) : unlikely(off >= bytes) || unlikely(off * magic >= magic)) {
other:
			/* another slab: read it, up to three times */
			if (switches++ == 3 || !bulk_rec_slab(s, *r, &base, &mark, &bytes, &slab, pow2))
				goto out;
			if (r == q)
				*first = slab;
			continue;
		}
		if (USLUB_FREE_MARK) {
			uintptr_t *mp = (uintptr_t *)(x + fmo);
			if (unlikely(meta_load(mp) == mark))
				goto out;
			meta_store(mp, mark);
		}
		*(void **)((uintptr_t)r + doff) = (void *)x;
		r++;
	}
out:
	return (size_t)(r - q);
}

/* What bulk_rec_run() left, p[i, n): the table's way, then the detached
 * path for what that leaves. @record: as free_to_pcs_bulk()'s. */
static __noinline void free_bulk_pcs_more(struct kmem_cache *s, struct kmem_cache_cpu *c,
					  size_t n, void **p, size_t i, bool record,
					  const bool pow2)
{
	struct bulk_runs t;
	uint64_t epoch = bulk_runs_seed(s, c, &t);
	struct slab_sheaf *main = c->main;
	unsigned int size = main->size;
	size_t k;
	if (likely(n - i <= main->capacity - size)) {
		/* the rest fits: the table's loop once, one published size */
		k = pow2 ? bulk_mark_pow2(s, &t, p + i, main->objects + size, n - i) :
				  bulk_mark_any(s, &t, p + i, main->objects + size, n - i);
		barrier();              /* a fork child flushes objects[0, size) */
		WRITE_ONCE(main->size, size + (unsigned int)k);
		stat_add(c, FREE_PCS, k);
		if (likely(k == n - i)) {
			if (t.first && record)
				bulk_record(s, c, &t, epoch);
			return;
		}
		/* a refused pointer: the general case goes on from it */
		k += i;
	} else {
		k = i;
	}
	size_t left = free_to_pcs_bulk(s, c, n, p, k, &t, epoch, record, pow2);
	if (unlikely(left))
		free_bulk_rest(s, left, p);
}

/*
 * The two instances of the sheaf front, entered by a tail call from
 * uslub_cache_free_bulk(): the first for power-of-two sizes with the free
 * mark at word 0. All of p[] in the record's slab and room for it in main:
 * one loop, one published size. Else free_bulk_pcs_more() goes on from the
 * first pointer the record does not place.
 */
static __always_inline void free_bulk_pcs_common(struct kmem_cache *s, struct kmem_cache_cpu *c,
						 size_t n, void **p, const bool pow2)
{
	struct slab_sheaf *main = c->main;
	unsigned int size = main->size;
	struct slab *first = NULL;
	size_t i = 0;
	if (likely(n <= main->capacity - size)) {       /* the empty sheaf has none */
		i = bulk_rec_run(s, c, p, main->objects + size, n, &first, pow2);
		barrier();                      /* a fork child flushes objects[0, size) */
		WRITE_ONCE(main->size, size + (unsigned int)i);
		stat_add(c, FREE_PCS, i);
		if (unlikely(first))
			_uslub_free_record_set(s, c, first);    /* p[0]'s slab */
		if (likely(i == n))
			return;
	}
	/* the table's way records p[0]'s slab when nothing placed it yet */
	free_bulk_pcs_more(s, c, n, p, i, !i && !first, pow2);
}

static __noinline void free_bulk_pcs_pow2(struct kmem_cache *s, struct kmem_cache_cpu *c,
					  size_t n, void **p)
{
	free_bulk_pcs_common(s, c, n, p, true);
}

static __noinline void free_bulk_pcs(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n,
				     void **p)
{
	free_bulk_pcs_common(s, c, n, p, false);
}

static size_t free_bulk_to_sheaves(struct kmem_cache *s, size_t n, void **p)
{
	if (!(this_cpu_is_real() || _uslub_thread_init()))
		return n;
	struct kmem_cache_cpu *c = this_cpu(s);
	struct bulk_runs t;
	bool claimed = _uslub_pcpu_claim(s, c);              /* per-CPU mode */
	uint64_t epoch = bulk_runs_seed(s, c, &t);
	size_t left = free_to_pcs_bulk(s, c, n, p, 0, &t, epoch, true, bulk_pow2(s));
	if (claimed)
		_uslub_pcpu_release(s, c);
	return left;
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
 * cpu area, straight to its instance of the sheaf front. */
__public void uslub_cache_free_bulk(struct kmem_cache *s, size_t n, void **p)
{
	if (likely(s && p && n) &&
	    likely(!(READ_ONCE(s->fastpath_off) & (FASTPATH_OFF_DEAD | FASTPATH_OFF_ASAN))) &&
	    likely(!READ_ONCE(s->hooks)) && likely(s->sheaf_capacity) &&
	    likely(this_cpu_is_real())) {
		struct kmem_cache_cpu *c = this_cpu(s);
		bool claimed = _uslub_pcpu_claim(s, c);          /* per-CPU mode */
		if (bulk_pow2(s))
			free_bulk_pcs_pow2(s, c, n, p);
		else
			free_bulk_pcs(s, c, n, p);
		if (claimed)
			_uslub_pcpu_release(s, c);
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
