/*
 * The cache layer's internals, across src/cache/: the extension hooks'
 * inline parts (the accounting stock and the tag counters; the slow parts
 * are in ext/), and the functions one file of the layer calls in another.
 */
#ifndef USLUB_CACHE_INTERNAL_H
#define USLUB_CACHE_INTERNAL_H

#include "cache/cache.h"
#include "ext/ext.h"
#include "sheaf/sheaf.h"

/*
 * Extension hooks, for the layers above: run the post-allocation hook on
 * @n objects just taken from @s (charge, record the tag). false: the
 * charge was refused (errno ENOMEM); the objects are untouched and still
 * the caller's to give back.
 */
__internal bool _uslub_post_alloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
				       void **p);


/*
 * Sampled mode, for kmalloc's page runs and mappings (cache/sample.c):
 * every one counts exactly on its call site; a sample of them records a
 * stack. sample_large(): is a block of @len bytes (at most
 * KMALLOC_MAX_SIZE) sampled? The thread's countdown of large blocks'
 * bytes (_uslub_large_left) is exponential with 16 intervals as its mean
 * (USLUB_LARGE_RATE_SHIFT, slub.h), so a block is sampled with p = 1 -
 * exp(-len / (16 interval)), each block independently; the inline part
 * is a subtraction, the slow part (a sample, or the thread's first large
 * block) draws the next countdown. _uslub_sample_large_weights(): what
 * the sampled block of @len bytes at @addr stands for in its stack:
 * len / p bytes, 1 / p blocks, rounded up or down by a coin that is a
 * hash of @addr (the same at its free; weights cached per length).
 */
__internal extern __thread int64_t _uslub_large_left __tls_ie;
__internal bool _uslub_sample_large_slow(size_t len);
__internal void _uslub_sample_large_weights(size_t len, uintptr_t addr, int64_t *bytes,
					    int64_t *calls);
static __always_inline bool sample_large(size_t len)
{
	int64_t left = _uslub_large_left - (int64_t)len;
	_uslub_large_left = left;
	if (likely(left > 0))
		return false;
	return _uslub_sample_large_slow(len);
}

/* nolock.c: the drain of the frees kfree_nolock deferred, run by the
 * ordinary miss paths, shrink and destroy (no lock held). */
__internal extern void *_uslub_nolock_deferred;
__internal __cold void _uslub_nolock_drain_slow(void);
static __always_inline void nolock_drain(void)
{
	if (unlikely(__atomic_load_n(&_uslub_nolock_deferred, __ATOMIC_RELAXED)))
		_uslub_nolock_drain_slow();
}

/* alloc.c */
__internal void _uslub_set_pcs_hooks(struct kmem_cache *s);
__internal __cold void _uslub_obj_ext_enable_on_demand(struct kmem_cache *s);
__internal __cold bool _uslub_obj_ext_enable_on_demand_try(struct kmem_cache *s);
__internal void _uslub_free_checked(struct kmem_cache *s, void *x, uintptr_t addr);

/*
 * The thread's accounting stock (the kernel's obj_stock) and its tag
 * counters, each step once: a test whether the common case can do it, and
 * the doing. memcg_charge(), memcg_uncharge() and tag_add() put them
 * together with the slow parts in ext/; the hooked cpu-slab leaves
 * (alloc.c, free.c), which must stay frameless, test everything first and
 * then do it.
 */
static __always_inline bool stock_can_charge(const struct uslub_thread *t,
					     const struct obj_cgroup *objcg, size_t bytes)
{
	return t->stock.cached == objcg && t->stock.nr_bytes >= (long)bytes;
}

static __always_inline void stock_charge(struct uslub_thread *t, size_t bytes)
{
	t->stock.nr_bytes -= (long)bytes;
}

/* The stock holds @objcg's bytes and stays under its cap. */
static __always_inline bool stock_can_uncharge(const struct uslub_thread *t,
					       const struct obj_cgroup *objcg, size_t bytes)
{
	return t->stock.cached == objcg && t->stock.nr_bytes + (long)bytes <= _uslub_stock_max;
}

static __always_inline void stock_uncharge(struct uslub_thread *t, size_t bytes)
{
	t->stock.nr_bytes += (long)bytes;
}

/* The thread has counters and the tag an index (READ_ONCE(tag->index)). */
static __always_inline bool tag_counters_ready(const struct uslub_thread *t, unsigned int idx)
{
	return t->tagc && idx;
}

static __always_inline void tag_counters_alloc(struct uslub_thread *t, unsigned int idx,
					       int64_t bytes, int64_t calls)
{
	SINGLE_WRITER_INC(t->tagc[idx].alloc_bytes, bytes);
	SINGLE_WRITER_INC(t->tagc[idx].alloc_calls, calls);
}

static __always_inline void tag_counters_free(struct uslub_thread *t, unsigned int idx,
					      int64_t bytes, int64_t calls)
{
	SINGLE_WRITER_INC(t->tagc[idx].free_bytes, bytes);
	SINGLE_WRITER_INC(t->tagc[idx].free_calls, calls);
}

/* @calls > 0: an allocation's; < 0: a free's (both counts negative). */
static __always_inline void tag_counters_add(struct uslub_thread *t, unsigned int idx,
					     int64_t bytes, int64_t calls)
{
	if (calls >= 0)
		tag_counters_alloc(t, idx, bytes, calls);
	else
		tag_counters_free(t, idx, -bytes, -calls);
}

/* Charge @bytes to @objcg from the thread's stock (the kernel's
 * consume_obj_stock), else through ext/. */
static __always_inline bool memcg_charge(struct obj_cgroup *objcg, size_t bytes, uslub_gfp_t gfp)
{
	struct uslub_thread *t = _uslub_tls.thread;
	if (likely(t && stock_can_charge(t, objcg, bytes))) {
		stock_charge(t, bytes);
		return true;
	}
	return _uslub_charge_slow(objcg, bytes, gfp);
}

/* Uncharge into the thread's stock (the kernel's refill_obj_stock), else
 * through ext/. */
static __always_inline void memcg_uncharge(struct obj_cgroup *objcg, size_t bytes)
{
	struct uslub_thread *t = _uslub_tls.thread;
	if (likely(t && stock_can_uncharge(t, objcg, bytes))) {
		stock_uncharge(t, bytes);
		return;
	}
	_uslub_uncharge_slow(objcg, bytes);
}

/* Add to @tag's counters in the thread's, else through ext/. */
static __always_inline void tag_add(struct uslub_alloc_tag *tag, int64_t bytes, int64_t calls)
{
	struct uslub_thread *t = _uslub_tls.thread;
	unsigned int idx = READ_ONCE(tag->index);
	if (likely(t && tag_counters_ready(t, idx))) {
		tag_counters_add(t, idx, bytes, calls);
		return;
	}
	_uslub_tag_add_slow(tag, bytes, calls);
}

/* The call site's tag the macro left in the thread's slot (uslub.h),
 * taken once per allocation call, before anything can nest. */
static __always_inline struct uslub_alloc_tag *take_alloc_tag(unsigned int hooks)
{
	if (!(hooks & HOOK_PROFILE))
		return NULL;
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	if (tag)
		uslub_alloc_tag_cur = NULL;
	return tag;
}

/*
 * The post-allocation hook (slab_post_alloc_hook: memcg, then alloc tag)
 * for @n objects in p[] (@slab: their slab if known, else NULL). Charges
 * all of them at once; false (nothing charged or recorded) if the group's
 * limit refuses it.
 */
static __always_inline bool post_alloc_hook(struct kmem_cache *s, uslub_gfp_t gfp, size_t n,
					    void **p, struct slab *slab, struct uslub_alloc_tag *tag)
{
	struct obj_cgroup *objcg = NULL;
	unsigned int hooks = READ_ONCE(s->hooks);
	if (((gfp & USLUB_GFP_ACCOUNT) || (s->flags & USLUB_ACCOUNT)) &&
	    !(s->flags & SLAB_NO_OBJ_EXT) && (objcg = _uslub_tls.cur_objcg)) {
		if (unlikely(!(hooks & HOOK_ACCOUNT)))
			_uslub_obj_ext_enable_on_demand(s);
		if (unlikely(!memcg_charge(objcg, n * s->charge, gfp)))
			return false;
	}
	if (!(hooks & HOOK_PROFILE))
		tag = NULL;
	if (likely(!objcg && !tag))
		return true;
	size_t missed = 0;
	for (size_t i = 0; i < n; i++) {
		struct slab *sl = slab ? slab : virt_to_slab(p[i]);
		struct obj_ext ext = slab_obj_ext(s, sl, p[i]);
		/* no word for the charge (no array yet, a tag-only layout):
		 * make one; a tag with no word (no array: out of memory when
		 * the slab was made) goes without, as the kernel's does */
		if (unlikely(objcg && !ext.objcg))
			ext = _uslub_slab_obj_ext_alloc(s, sl, p[i], OBJ_EXT_OBJCG);
		if (unlikely((objcg && !ext.objcg) || (tag && !ext.tag))) {
			missed++;
			continue;
		}
		if (objcg)
			WRITE_ONCE(*ext.objcg, objcg);
		if (tag)
			WRITE_ONCE(*ext.tag, tag);
	}
	if (objcg) {
		if (unlikely(missed))
			memcg_uncharge(objcg, missed * s->charge);
		/* an on-demand cache's hooks may have been switched on after
		 * this thread's cpu slab was installed: close its free range */
		struct kmem_cache_cpu *c = this_cpu(s);
		if (unlikely(READ_ONCE(c->slab_bytes)))
			WRITE_ONCE(c->slab_bytes, 0);
	}
	if (tag && n > missed)
		tag_add(tag, (int64_t)((n - missed) * s->size), (int64_t)(n - missed));
	return true;
}

/* The pre-free hook of object @idx of @slab (valid): uncharge, untag. */
static __always_inline void free_hook(struct kmem_cache *s, struct slab *slab, void *x)
{
	struct obj_ext ext = slab_obj_ext(s, slab, x);
	struct obj_cgroup *objcg = obj_ext_objcg(ext);
	struct uslub_alloc_tag *tag = obj_ext_tag(ext);
	if (objcg) {
		WRITE_ONCE(*ext.objcg, NULL);
		memcg_uncharge(objcg, s->charge);
	}
	if (tag) {
		WRITE_ONCE(*ext.tag, NULL);
		tag_add(tag, -(int64_t)s->size, -1);
	}
}

/*
 * The lean hooked sheaf paths (kmem_cache.pcs_hooks), each written once
 * here: the bodies that uslub_cache_alloc()/uslub_cache_free() inline in
 * their cold branch (api.c) and the miss paths' leaves call (alloc.c,
 * free.c, for kmalloc, malloc and the others). @ph is a compile-time
 * PCS_HOOKS_* value, so each condition is tested once, and everything is
 * tested before anything is written: NULL / false is a miss that changed
 * nothing (the caller takes the ladder).
 *
 * Alloc, for slot @c whose main sheaf @main holds @n > 0 objects, inline
 * paths off only for hooks (FASTPATH_OFF_HOOKS; freelist hardening and
 * the free mark's place do not matter to a sheaf): the top object; its
 * slab from the page descriptor (an object of our own sheaf needs no
 * ownership test); its extension (obj_ext_at(): by shift where the
 * layout allows, so the free's load of it waits on no multiply); the
 * charge with one subtraction and sign test on the stock (which follows
 * the current group: ext/memcg.c stock_follow_locked(), so stock.cached
 * is the group's handle, NULL in the root where nothing is charged); the
 * call site's tag on the thread's allocation-side counters.
 */
static __always_inline void *alloc_pcs_lean(struct kmem_cache *s, struct kmem_cache_cpu *c,
					    struct slab_sheaf *main, unsigned int n,
					    const unsigned int ph, const bool tick)
{
	void *obj = main->objects[n - 1];
	/* the extensions' base and the object's offset: from the slot's
	 * hooked record where the object is in its slab, else from the
	 * object's slab */
	unsigned long base;
	uint32_t off;
	if (rec_hooked_covers(s, c, obj, &off)) {
		base = c->rec.exts;
	} else {
		struct slab *slab = page_slab(READ_ONCE(virt_to_page(obj)->compound_head));
		base = __atomic_load_n(&slab->obj_exts, __ATOMIC_ACQUIRE);
		off = slab_offset32(slab, obj);
	}
	/* a sheaf holds objects of a live cpu area: t != NULL */
	struct uslub_thread *t = _uslub_tls.thread;
	struct obj_cgroup *objcg = NULL;
	long stock = 0;
	struct uslub_alloc_tag *tag = NULL;
	unsigned int tidx = 0;
	/* none, or widened (a sample in an objcg-only slab): the ladder */
	if (unlikely((long)base <= 0))
		return NULL;
	if (ph & PCS_HOOKS_ACCOUNT) {
		objcg = t->stock.cached;
		stock = t->stock.nr_bytes - (long)s->charge;
		if (objcg && unlikely(stock < 0))
			return NULL;
	}
	if (ph & PCS_HOOKS_PROFILE) {
		tag = uslub_alloc_tag_cur;
		if (tag) {
			tidx = READ_ONCE(tag->index);
			if (unlikely(!tidx || !t->tagc))
				return NULL;
		}
	}
	/* @tick (the API's call, which no miss path has seen): ALLOC_PCS,
	 * which is also sampled profiling's countdown (cache.h sample_tick()),
	 * as the inline pop counts it, as the last check: a sampled
	 * allocation declines, and the miss path pops and samples. Else the
	 * miss path ticked for the call: counted as a slow pop. */
	if (tick) {
		if (unlikely(sample_tick(&c->stat[USLUB_ALLOC_PCS])))
			return NULL;
	} else {
		stat_pcs_slow(c, 1);
	}
	main->size = n - 1;
	free_mark_clear(s, obj);
	char *ext = obj_ext_at(s, base, off, slab_offset_to_index(off, s->reciprocal_size));
	if (ph & PCS_HOOKS_ACCOUNT) {
		if (objcg)
			t->stock.nr_bytes = stock;
		WRITE_ONCE(*obj_ext_at_objcg(ext, ph), objcg);
	}
	if (ph & PCS_HOOKS_PROFILE) {
		WRITE_ONCE(*obj_ext_at_tag(ext, ph), tag);
		if (tag) {
			uslub_alloc_tag_cur = NULL;              /* taken */
			tag_counters_alloc(t, tidx, (int64_t)s->size, 1);
		}
	}
	return obj;
}

/*
 * Free, for slot @c whose main sheaf @main has room (@n < capacity),
 * inline paths off only for hooks: the inline path's checks (ours, a
 * page of a slab without sampled objects, this cache, inside the slab's objects, an object start, one node, not
 * already free), the extension from the index the start check computed;
 * the uncharge into the stock when it holds the object's group and stays
 * under its cap, the tag on the thread's free-side counters; the push.
 * false: a miss, nothing changed (the ladder reports a bad free).
 */
static __always_inline bool free_pcs_lean(struct kmem_cache *s, struct kmem_cache_cpu *c,
					  struct slab_sheaf *main, unsigned int n, void *x,
					  const unsigned int ph)
{
	struct slab *slab = NULL;
	uintptr_t mark;
	unsigned long base;
	uint32_t off;
	if (rec_hooked_covers(s, c, x, &off)) {
		/* the slot's hooked record (slub.h struct free_record): x is
		 * in its live slab of this cache, no descriptor needed */
		mark = c->rec.mark;
		base = c->rec.exts;
		if (unlikely(!obj_start(s, off)) || free_mark_test(s, x, mark))
			return false;
	} else {
		/* free_object()'s lookup: PG_slab_page, which a slab holding
		 * a sampled object lacks (its free must reach the ladder's
		 * untag), and from the same descriptor line the cache and
		 * the slab's word (the free fast word, slab/slab.h) */
		if (unlikely(!_uslub_owns_segment(x)))
			return false;
		struct page *page = virt_to_page(x);
		if (unlikely(!(READ_ONCE(page->flags) & PG_slab_page)) ||
		    unlikely(page_slab_cache(page) != s))
			return false;
		slab = page_slab(READ_ONCE(page->compound_head));
		uint64_t word = page_slab_word(page);
		off = slab_offset32(slab, x);
		mark = s->free_mark ^ word;
		base = __atomic_load_n(&slab->obj_exts, __ATOMIC_ACQUIRE);
		if (unlikely(off >= (uint32_t)word) || unlikely(!obj_start(s, off)) ||
		    (unlikely(_uslub_multi_node) && slab_nid(slab) != main->node) ||
		    unlikely((long)base <= 0) || free_mark_test(s, x, mark))
			return false;
	}
	/* the index (a multiply) only where the extension's place needs it */
	char *ext = obj_ext_at(s, base, off, slab_offset_to_index(off, s->reciprocal_size));
	/* a main sheaf with room: a live cpu area, t != NULL */
	struct uslub_thread *t = _uslub_tls.thread;
	struct obj_cgroup *objcg = NULL;
	long stock = 0;
	struct uslub_alloc_tag *tag = NULL;
	unsigned int tidx = 0;
	if (ph & PCS_HOOKS_ACCOUNT) {
		objcg = READ_ONCE(*obj_ext_at_objcg(ext, ph));
		stock = t->stock.nr_bytes + (long)s->charge;
		if (objcg && unlikely(objcg != t->stock.cached || stock > _uslub_stock_max))
			return false;
	}
	if (ph & PCS_HOOKS_PROFILE) {
		tag = READ_ONCE(*obj_ext_at_tag(ext, ph));
		if (tag) {
			tidx = READ_ONCE(tag->index);
			if (unlikely(!tidx || !t->tagc))
				return false;
		}
	}
	if ((ph & PCS_HOOKS_ACCOUNT) && objcg) {
		WRITE_ONCE(*obj_ext_at_objcg(ext, ph), NULL);
		t->stock.nr_bytes = stock;
	}
	if ((ph & PCS_HOOKS_PROFILE) && tag) {
		WRITE_ONCE(*obj_ext_at_tag(ext, ph), NULL);
		tag_counters_free(t, tidx, (int64_t)s->size, 1);
	}
	free_mark_set(s, x, mark);
	void *top = main->objects[n];
	main->objects[n] = x;
	barrier();      /* a fork child flushes objects[0, size) */
	main->size = n + 1;
	stat(c, FREE_PCS);
	if (slab)       /* a lookup's push: the record's note (cache.h) */
		free_record_note(s, c, slab, top == x);
	return true;
}

#endif /* USLUB_CACHE_INTERNAL_H */
