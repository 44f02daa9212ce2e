/*
 * free.c — the free miss path of the cache API (cache.h's inline paths
 * missed); frees of internal caches without a cpu area.
 *
 * One rung per thing it adds:
 *
 *   _uslub_slab_free_miss           a cache's lean hooked path (pcs_hooks), else the ladder
 *    ├─ free_pcs_account, _profile, _account_profile
 *    │                              the lean hooked sheaf paths: the inline path's checks,
 *    │                              the extension, the stock, the tag, the push
 *   free_miss_ladder                a hooked cache's rungs, or the checked one (under
 *    │                              ASan the object poisoned first: kasan.c)
 *    ├─ free_hooked_cpu_slab        hooks, cpu-slab mode: a frameless leaf; an object of the
 *    │    │                         cpu slab, the stock, the tag counters, the cpu-freelist push
 *    │    └─ free_hooked            any hooked free (sheaf mode too): free_lookup(), a double
 *    │         │                    free reported before any uncharge, free_hook()
 *    └─ _uslub_free_checked         the hardened cpu-slab push (its checked next pointer)
 *              ├─ free_lookup       (inline) the slab, this cache, an object start; a bad
 *              │                    free reported
 *              └─ free_valid        (inline) slub_debug's free, or a double free reported;
 *                   │               the free mark
 *                   ├─ free_to_sheaves   the main sheaf, else its spare, the barn (sheaf/)
 *                   └─ free_to_slab      __slab_free (slub/); a slot on the stack for a
 *                                        thread without a cpu area
 *
 * Every rung takes the public caller's address @addr (slub_debug's owner)
 * from the one above, but the leaf free_hooked_cpu_slab(), entered by a
 * tail call, which takes its own return address.
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

/* @x's slab, if @x is an object start of a slab of @s; else NULL, the bad
 * free reported. */
static __always_inline struct slab *free_lookup(struct kmem_cache *s, void *x)
{
	struct slab *slab = virt_to_slab(x);
	if (likely(slab && slab->slab_cache == s && obj_is_valid(s, slab, x)))
		return slab;
	_uslub_report_invalid_free(s, x, slab);
	return NULL;
}

/* A thread without a cpu area (or one that cannot get one): a cpu slot on
 * the stack, its counters folded into the cache. */
static __cold __noinline void free_to_slab_nocpu(struct kmem_cache *s, struct slab *slab, void *x)
{
	struct kmem_cache_cpu tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (_uslub___slab_free(s, slab, x, x, 1, &tmp, false))
		stat(&tmp, FREE_SLOWPATH);
	_uslub_fold_stats(s, &tmp);
}

/* Onto @slab itself: one CAS, list_lock only for a list move. */
static __always_inline void free_to_slab(struct kmem_cache *s, struct kmem_cache_cpu *c,
					 struct slab *slab, void *x)
{
	if (_uslub___slab_free(s, slab, x, x, 1, c, s->cpu_partial_slabs != 0))
		stat(c, FREE_SLOWPATH);
}

/* A sheaf cache's object of the local node: onto the main sheaf if it has
 * room, else the sheaf layer's spare, barn or flush; false if it could not
 * take it. */
static __always_inline bool free_to_sheaves(struct kmem_cache *s, struct kmem_cache_cpu *c,
					    void *x)
{
	struct slab_sheaf *main = c->main;
	if (likely(main && main->size < main->capacity)) {
		main->objects[main->size] = x;
		barrier();      /* a fork child flushes objects[0, size) */
		main->size++;
		stat(c, FREE_PCS);
		return true;
	}
	return _uslub_sheaf_free_slow(s, c, x);
}

/* @x is an object of @slab of @s (checked): a debug cache's checked free,
 * or the free-mark check; then the main sheaf or the slab. */
static __always_inline void free_valid(struct kmem_cache *s, void *x, struct slab *slab,
				       uintptr_t addr)
{
	if (kmem_cache_debug(s)) {
		_uslub_debug_slab_free(s, slab, x, addr);
		return;
	}
	if (free_mark_test(s, x, slab_free_mark(s, slab))) {
		_uslub_report_double_free(s, slab, x);
		return;
	}
	free_mark_set(s, x, slab_free_mark(s, slab));   /* before anyone else can take it */
	if (unlikely(!this_cpu_is_real()) && !_uslub_thread_init()) {
		free_to_slab_nocpu(s, slab, x);
		return;
	}
	struct kmem_cache_cpu *c = this_cpu(s);
	if (s->sheaf_capacity && slab_nid(slab) == home_node() && free_to_sheaves(s, c, x))
		return;
	free_to_slab(s, c, slab, x);
}

/* A cache without hooks (and a hooked one's hardened cpu-slab push): the
 * cpu slab's push, checked, first and small, like alloc.c's checked pops;
 * then the lookup and the free of a valid object. */
__noinline void _uslub_free_checked(struct kmem_cache *s, void *x, uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	struct slab *slab = c->slab;
	if (likely(slab) && likely(obj_is_valid(s, slab, x)) &&
	    likely(!free_mark_test(s, x, c->free_mark))) {
		free_mark_set(s, x, c->free_mark);
		set_freepointer(s, x, c->freelist);
		c->freelist = x;
		stat(c, FREE_FASTPATH);
		return;
	}
	if (unlikely(!x))
		return;
	slab = free_lookup(s, x);
	if (likely(slab))
		free_valid(s, x, slab, addr);
}

/* Any free into a cache with hooks: check the object, run the free hook,
 * then free it as _uslub_free_checked() does. */
static __noinline void free_hooked(struct kmem_cache *s, void *x, uintptr_t addr)
{
	if (unlikely(!x))
		return;
	struct slab *slab = free_lookup(s, x);
	if (unlikely(!slab))
		return;
	if (!kmem_cache_debug(s) && free_mark_test(s, x, slab_free_mark(s, slab))) {
		/* before any uncharge */
		_uslub_report_double_free(s, slab, x);
		return;
	}
	free_hook(s, slab, x);
	if (unlikely(cache_hardened(s)) && !s->sheaf_capacity) {
		_uslub_free_checked(s, x, addr);        /* its checked cpu-slab push */
		return;
	}
	free_valid(s, x, slab, addr);                   /* no second lookup */
}

/*
 * Hooks in cpu-slab mode, a leaf like alloc_hooked_cpu_slab(): an object
 * of the cpu slab (@off from its start; @head the cpu freelist),
 * uncharged into the thread's stock and untagged in the thread's counters
 * (the inline steps of internal.h), pushed onto the cpu freelist; anything
 * else goes to free_hooked() untouched.
 */
static __noinline void free_hooked_cpu_slab(struct kmem_cache *s, void *x,
					    struct kmem_cache_cpu *c, uintptr_t off, void *head)
{
	/* entered by a tail call: the return address is the public caller's */
#define addr ((uintptr_t)__builtin_return_address(0))
	unsigned int idx = slab_offset_to_index(off, s->reciprocal_size);
	if (unlikely(off >= c->slab_span || (uintptr_t)idx * s->size != off ||
		     free_mark_test(s, x, c->free_mark) || cache_hardened(s)))
		return free_hooked(s, x, addr);
	struct obj_ext ext = slab_obj_ext_idx(s, c->slab, idx);
	{
		struct obj_cgroup *objcg = obj_ext_objcg(ext);
		struct uslub_alloc_tag *tag = obj_ext_tag(ext);
		if (objcg || tag) {
			/* inside a cpu slab's range: a real cpu area, t != NULL */
			struct uslub_thread *t = _uslub_tls.thread;
			unsigned int tidx = tag ? READ_ONCE(tag->index) : 0;
			if ((objcg && unlikely(!stock_can_uncharge(t, objcg, s->charge))) ||
			    (tag && unlikely(!tag_counters_ready(t, tidx))))
				return free_hooked(s, x, addr);
			if (objcg) {
				WRITE_ONCE(*ext.objcg, NULL);
				stock_uncharge(t, s->charge);
			}
			if (tag) {
				WRITE_ONCE(*ext.tag, NULL);
				tag_counters_add(t, tidx, -(int64_t)s->size, -1);
			}
		}
	}
	free_mark_set(s, x, c->free_mark);
	set_freepointer_raw(s, x, head);
	c->freelist = x;
	stat(c, FREE_FASTPATH);
#undef addr
}

/*
 * The free record (slub.h struct free_record), set after a lookup path's
 * noted push (the second in a row into @slab: cache.h free_record_note())
 * and after an allocation's refill
 * (the slab of the object the program was just handed, whose free then
 * skips the lookup, as that of its neighbours). @slab is live here (it has
 * an object in this thread's sheaf). The epoch is read first and what the
 * record states is tested after it (inline paths on, or for a hooked
 * record the lean hooked paths' conditions and the extensions,
 * PG_slab_page, the cache, a main sheaf that takes frees), so whatever
 * ends one of them later also ends the record. A tail call after the push: the lookup keeps
 * no register for it.
 */
/* @c, of a rec_thread cache, becomes the thread's last record slot:
 * free()'s and kfree()'s first try. */
static void rec_slot_set(struct kmem_cache_cpu *c)
{
	_uslub_tls.last_slot = c;
}

void _uslub_free_record_note_run(struct kmem_cache *s, struct kmem_cache_cpu *c, struct slab *slab)
{
	/* a record set costs ~60 instructions: a slab needs two noted
	 * pushes (with no other slab's between) before it becomes the
	 * record */
	if (c->rec.pending != slab) {
		c->rec.pending = slab;
		return;
	}
	_uslub_free_record_set(s, c, slab);
}

void _uslub_free_record_set(struct kmem_cache *s, struct kmem_cache_cpu *c, struct slab *slab)
{
	/* the epoch first, then what the record rests on: whatever ends
	 * one of them after this bumps the epoch past it */
	uint64_t epoch = __atomic_load_n(&s->slab_epoch, __ATOMIC_SEQ_CST);
	if (c->rec.addr == slab_address(slab) && c->rec.epoch == epoch) {
		/* the record names this slab already (frees that alternate
		 * between caches come back here): only the thread's pointer
		 * to it moves */
		if (s->rec_thread)
			rec_slot_set(c);
		return;
	}
	unsigned int off = READ_ONCE(s->fastpath_off);
	unsigned long exts = 0;
	if (unlikely(_uslub_multi_node) ||
	    !(READ_ONCE(slab_page(slab)->flags) & PG_slab_page) ||
	    READ_ONCE(slab->slab_cache) != s ||
	    (!c->main->capacity && c->main != PCPU_STANDIN))
		return;
	if (off > FASTPATH_OFF_HARDENED) {
		/* a hooked record, for the lean leaves (slub.h) */
		exts = __atomic_load_n(&slab->obj_exts, __ATOMIC_ACQUIRE);
		if ((off & ~PCS_LEAN_OFF_OK) || !READ_ONCE(s->pcs_hooks) || (long)exts <= 0)
			return;
		epoch |= FREE_RECORD_HOOKED;
	}
	c->rec.addr = slab_address(slab);
	c->rec.bytes = slab_objects_bytes(slab);
	c->rec.mark = slab_free_mark(s, slab);
	c->rec.epoch = epoch;
	c->rec.cache = s;
	c->rec.exts = exts;
	if (s->rec_thread && !(epoch & FREE_RECORD_HOOKED))
		rec_slot_set(c);
}

/* Where the object's slab qualifies: the inline paths on, PG_slab_page
 * (no sampled object in it), a main sheaf that takes frees; the epoch
 * read before those are tested, so whatever ends one of them ends the
 * record. Objects in this thread's sheaf keep the slab live. */
void _uslub_free_record_obj(struct kmem_cache *s, struct kmem_cache_cpu *c, void *obj)
{
	_uslub_free_record_set(s, c, page_slab(READ_ONCE(virt_to_page(obj)->compound_head)));
}

/* Per-CPU mode's pushes (cache.h), by tail calls from the inline paths:
 * the return address is the public caller's. A push the id's full sheaf
 * refuses, or a free the checks refuse, takes the whole miss path. Each
 * is pcpu_push_word() with @x's slab and word found its own way, and
 * notes a hot push as the per-thread lookup does (cache.h
 * free_record_note(): the section says whether it wrote @x over itself).
 * Noting every second push in a row into one slab instead set a record
 * at most frees of one thread whose live objects of a class fit one slab
 * (larson with one thread: 572k sets, 1.08M notes for 4M frees, against
 * 72k and 58k per thread), each a call that only moved last_slot. */
static __always_inline bool pcpu_push_word(struct kmem_cache *s, struct kmem_cache_cpu *c,
					   struct slab *slab, uint64_t word, void *x)
{
	uintptr_t mark;
	if (unlikely(!free_word_ok(s, slab, word, x, &mark, NULL)))
		return false;
	int r = free_to_pcpu_top(s, c, x, mark);
	if (unlikely(r == PCPU_PUSH_FULL))
		return false;
	free_record_note(s, c, slab, r == PCPU_PUSHED_HOT);
	return true;
}

__noinline void _uslub_free_pcpu(void *x, struct kmem_cache_cpu *c, struct kmem_cache *s,
				 struct slab *slab, uint64_t word)
{
	if (likely(pcpu_push_word(s, c, slab, word, x)))
		return;
	_uslub_slab_free_miss(s, x, (uintptr_t)__builtin_return_address(0));
}

__noinline void _uslub_free_pcpu_mark(void *x, struct kmem_cache_cpu *c, uintptr_t mark,
				      struct kmem_cache *s)
{
	if (likely(free_to_pcpu(s, c, x, mark)))
		return;
	_uslub_slab_free_miss(s, x, (uintptr_t)__builtin_return_address(0));
}

__noinline void _uslub_free_pcpu_slab(void *x, struct kmem_cache_cpu *c, struct kmem_cache *s,
				      struct slab *slab)
{
	if (likely(pcpu_push_word(s, c, slab, page_slab_word(virt_to_page(x)), x)))
		return;
	_uslub_slab_free_miss(s, x, (uintptr_t)__builtin_return_address(0));
}

__noinline void _uslub_cache_free_pcpu(struct kmem_cache *s, void *x, uintptr_t addr)
{
	/* slab_free_lookup()'s lookup (cache.h), then the id's sheaf */
	if (likely(_uslub_owns_segment(x))) {
		struct page *page = virt_to_page(x);
		if (likely(READ_ONCE(page->flags) & PG_slab_page) &&
		    likely(page_slab_cache(page) == s) &&
		    likely(pcpu_push_word(s, this_cpu(s), page_slab(READ_ONCE(page->compound_head)),
					  page_slab_word(page), x)))
			return;
	}
	_uslub_slab_free_miss(s, x, addr);
}

__noinline void _uslub_cache_free_pcpu_mark(struct kmem_cache *s, void *x,
					    struct kmem_cache_cpu *c, uintptr_t mark)
{
	/* _uslub_free_pcpu_mark()'s body, not a call to it: that would move
	 * four argument registers on uslub_cache_free()'s per-CPU path */
	if (likely(free_to_pcpu(s, c, x, mark)))
		return;
	_uslub_slab_free_miss(s, x, (uintptr_t)__builtin_return_address(0));
}

void _uslub_free_slab_miss(struct kmem_cache *s, struct slab *slab, void *x, uintptr_t addr)
{
	__slab_free_to_pcs(s, this_cpu(s), slab, x, addr);
}

/* The miss path's rungs (the ladder at the top of this file). */
static __noinline void free_miss_ladder(struct kmem_cache *s, void *x, uintptr_t addr)
{
	nolock_drain();                          /* kfree_nolock's deferred frees */
	if (unlikely(_uslub_sampling) && x) {    /* a sampled object's untag (sample.c) */
		struct slab *slab = _uslub_sample_free(s, NULL, x);
		/* a valid object of a plain sheaf cache (most often an
		 * unsampled neighbour of a sampled one, whose slab lacks
		 * PG_slab_page): looked up already, so straight to the
		 * checked free (a cpu-slab cache tries its cpu slab first) */
		if (slab && s->sheaf_capacity && !READ_ONCE(s->hooks) && !cache_kasan(s)) {
			free_valid(s, x, slab, addr);
			return;
		}
	}
	struct kmem_cache_cpu *c = this_cpu(s);

	if (unlikely(cache_kasan(s)))
		_uslub_kasan_slab_free(s, x);           /* poisoned before it is published */
	if (READ_ONCE(s->hooks)) {
		if (s->sheaf_capacity)
			free_hooked(s, x, addr);
		else
			free_hooked_cpu_slab(s, x, c, (uintptr_t)x - (uintptr_t)c->slab_addr,
					     c->freelist);
		return;
	}
	_uslub_free_checked(s, x, addr);
}

/* The lean hooked sheaf paths (internal.h's free_pcs_lean()) as leaves
 * of the miss path, for the callers that do not inline them (kfree,
 * free). Entered by tail calls: the return address is the public
 * caller's. */
static __always_inline void free_pcs_leaf(struct kmem_cache *s, void *x, const unsigned int ph)
{
#define addr ((uintptr_t)__builtin_return_address(0))
	struct kmem_cache_cpu *c = this_cpu(s);
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;
	if (likely(n < main->capacity) &&
	    likely(!(READ_ONCE(s->fastpath_off) & ~PCS_LEAN_OFF_OK)) &&
	    likely(free_pcs_lean(s, c, main, n, x, ph)))
		return;
	free_miss_ladder(s, x, addr);
#undef addr
}

/* The API's leaves (api.c cache_free(), by tail calls). */
__noinline void _uslub_free_pcs_account(struct kmem_cache *s, struct kmem_cache_cpu *c,
					struct slab_sheaf *main, unsigned int n, void *x)
{
	if (likely(free_pcs_lean(s, c, main, n, x, PCS_HOOKS_ACCOUNT)))
		return;
	free_miss_ladder(s, x, (uintptr_t)__builtin_return_address(0));
}

__noinline void _uslub_free_pcs_profile(struct kmem_cache *s, struct kmem_cache_cpu *c,
					struct slab_sheaf *main, unsigned int n, void *x)
{
	if (likely(free_pcs_lean(s, c, main, n, x, PCS_HOOKS_PROFILE)))
		return;
	free_miss_ladder(s, x, (uintptr_t)__builtin_return_address(0));
}

__noinline void _uslub_free_pcs_account_profile(struct kmem_cache *s, struct kmem_cache_cpu *c,
						struct slab_sheaf *main, unsigned int n, void *x)
{
	if (likely(free_pcs_lean(s, c, main, n, x, PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE)))
		return;
	free_miss_ladder(s, x, (uintptr_t)__builtin_return_address(0));
}

static __noinline void free_pcs_account(struct kmem_cache *s, void *x)
{
	free_pcs_leaf(s, x, PCS_HOOKS_ACCOUNT);
}

static __noinline void free_pcs_profile(struct kmem_cache *s, void *x)
{
	free_pcs_leaf(s, x, PCS_HOOKS_PROFILE);
}

static __noinline void free_pcs_account_profile(struct kmem_cache *s, void *x)
{
	free_pcs_leaf(s, x, PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE);
}

/*
 * The free miss path (cache.h's inline paths missed), with the public
 * caller's address @addr (slub_debug's owner): a cache with a lean hooked
 * path takes it, any other the ladder at the top of this file.
 */
__noinline void _uslub_slab_free_miss(struct kmem_cache *s, void *x, uintptr_t addr)
{
	/* the lean paths leave kfree_nolock's deferred frees to the next
	 * ladder (any cache's), thread exit, shrink or destroy */
	switch (READ_ONCE(s->pcs_hooks)) {
	case PCS_HOOKS_ACCOUNT:
		return free_pcs_account(s, x);
	case PCS_HOOKS_PROFILE:
		return free_pcs_profile(s, x);
	case PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE:
		return free_pcs_account_profile(s, x);
	}
	free_miss_ladder(s, x, addr);
}
