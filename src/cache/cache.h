/*
 * The cache layer's inline fast paths (Linux 7.0's alloc_from_pcs and
 * free_to_pcs): a pop from and a push onto the calling thread's main
 * sheaf of a cache, each written once here, used by the kmem_cache API
 * (cache/api.c), kmalloc and malloc. Every miss goes, by one tail call,
 * to the miss paths in cache/alloc.c and cache/free.c
 * (_uslub_slab_alloc_miss, _uslub_slab_free_miss), with the public
 * caller's address for slub_debug's owner tracking.
 */
#ifndef USLUB_CACHE_CACHE_H
#define USLUB_CACHE_CACHE_H

#include "slub/slub.h"
#include "slub/percpu.h"

__internal void *_uslub_slab_alloc_miss(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					size_t orig_size, uintptr_t addr);
__internal void _uslub_slab_free_miss(struct kmem_cache *s, void *x, uintptr_t addr);
/* Make @slab, of @s, the free record of slot @c (struct free_record),
 * where it qualifies, tested after the epoch is read (free.c), and @c the
 * thread's last_slot for a rec_thread cache; the same for the slab of
 * @obj, just taken from the sheaves. */
__internal void _uslub_free_record_set(struct kmem_cache *s, struct kmem_cache_cpu *c,
				       struct slab *slab);
__internal void _uslub_free_record_obj(struct kmem_cache *s, struct kmem_cache_cpu *c, void *obj);
/* A noted lookup push into @slab (free_record_note()): the record is
 * set on the slab's second such push in a row (rec.pending). */
__internal void _uslub_free_record_note_run(struct kmem_cache *s, struct kmem_cache_cpu *c,
					    struct slab *slab);
/* free_object_lookup()'s miss, for @x in live @slab of @s: the cpu slab
 * (cpu-slab mode), else the miss path (free.c). */
__internal void _uslub_free_slab_miss(struct kmem_cache *s, struct slab *slab, void *x,
				      uintptr_t addr);
/* The lean hooked leaves the inline paths below tail-call: alloc
 * for the caller's slot @c (gfp 0, no node); free for slot @c with main
 * sheaf @main of size @n < capacity, the cache's fastpath_off holding
 * nothing but PCS_LEAN_OFF_OK bits. The lean path, else the miss path. */
__internal void *_uslub_alloc_pcs_account(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal void *_uslub_alloc_pcs_profile(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal void *_uslub_alloc_pcs_account_profile(struct kmem_cache *s,
						  struct kmem_cache_cpu *c);
/* free.c */
__internal void _uslub_free_pcs_account(struct kmem_cache *s, struct kmem_cache_cpu *c,
					struct slab_sheaf *main, unsigned int n, void *x);
__internal void _uslub_free_pcs_profile(struct kmem_cache *s, struct kmem_cache_cpu *c,
					struct slab_sheaf *main, unsigned int n, void *x);
__internal void _uslub_free_pcs_account_profile(struct kmem_cache *s, struct kmem_cache_cpu *c,
						struct slab_sheaf *main, unsigned int n, void *x);
/* Sampled profiling (sample.c): the miss path in sampled mode, the plain
 * miss path it wraps (alloc.c), bulk allocations, and the untag of a freed
 * object whose page lacks PG_slab_page (@slab NULL: looked up). */
__internal void *_uslub_sample_alloc_miss(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					  size_t orig_size, uintptr_t addr);
__internal void *_uslub_slab_alloc_miss_plain(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					      size_t orig_size, uintptr_t addr);
__internal int _uslub_sample_bulk(struct kmem_cache *s, size_t n, void **p,
				  struct uslub_alloc_tag *tag, bool tick);
__internal struct slab *_uslub_sample_free(struct kmem_cache *s, struct slab *slab, void *x);

/* Sampled mode: does freeing @x (in a live slab) need _uslub_sample_free()
 * first? Its page lacks PG_slab_page. */
static __always_inline bool sample_free_needed(const void *x)
{
	return unlikely(_uslub_sampling) &&
	       !(READ_ONCE(virt_to_page(x)->flags) & PG_slab_page);
}

/* One tick of a sampling countdown (kmem_cache_cpu: stat[ALLOC_PCS] or
 * sample_left): add 1; true when it turned negative (the allocation is
 * sampled: the caller takes the miss path). On x86-64 one add to memory
 * and one branch on its sign: the countdown costs the ALLOC_PCS counter's
 * add nothing but the branch. Never armed (profiling off or exact), a
 * countdown counts up from 0 and never turns negative. */
#if defined(__x86_64__) && !defined(USLUB_TSAN)
static __always_inline bool sample_tick(void *ctr)
{
	__asm__ goto("addq $1, %0\n\tjs %l[fire]" : "+m"(*(uint64_t *)ctr) : : "cc" : fire);
	return false;
fire:
	return true;
}
#else
static __always_inline bool sample_tick(void *ctr)
{
	uint64_t v = READ_ONCE(*(uint64_t *)ctr) + 1;
	WRITE_ONCE(*(uint64_t *)ctr, v);
	return (int64_t)v < 0;
}
#endif
/* The any-context allocation of one object of @s and the any-context free
 * of any cache's object (kmalloc_nolock, kfree_nolock: nolock.c). */
__internal void *_uslub_cache_alloc_nolock(struct kmem_cache *s, uslub_gfp_t gfp, int node);
__internal void _uslub_cache_free_nolock(void *x);
/* Its lifecycle entry (a thread's exit drains the deferred frees),
 * registered from _uslub_init(). */
__internal void _uslub_nolock_lifecycle_init(void);

/* The public caller's address (slub_debug's owner), taken where the
 * inline paths are inlined: in the public entry point itself, so it holds
 * in builds that make no tail calls (TSan) too. */
#define USLUB_CALLER() ((uintptr_t)__builtin_return_address(0))

/* Are the inline sheaf paths off for @s (hooks, slub_debug, failslab,
 * destroyed, a free mark outside word 0)? Hardening does not count: a
 * sheaf holds plain pointers. */
static __always_inline unsigned int fastpath_off_load(const struct kmem_cache *s)
{
#ifdef USLUB_TSAN
	return READ_ONCE(s->fastpath_off);
#else
	/* a plain load, which the compiler folds into the compare (it keeps
	 * an atomic or volatile load in a register first): one instruction.
	 * fastpath_off is one aligned word, changed by atomic or/and; each
	 * inline path reads it once. */
	return s->fastpath_off;
#endif
}

static __always_inline bool pcs_off(const struct kmem_cache *s)
{
	static_assert(FASTPATH_OFF_HARDENED == 1, "hardening is the lowest bit");
	return fastpath_off_load(s) > FASTPATH_OFF_HARDENED;
}

/*
 * The alloc fast path (Linux 7.0's alloc_from_pcs): pop the main sheaf of
 * slot @c, this_cpu_fast() of the cache. One thread-local load (the cpu
 * area, by the caller) and one predicted branch: NULL on an empty main
 * (the empty sheaf stands in for a missing one, and a cache whose inline
 * paths are off, for hooks, debug, failslab or destroyed, has the dead
 * slot's). Objects are never NULL, so callers test the result with no
 * extra branch.
 */
static __always_inline void *alloc_from_pcs(struct kmem_cache_cpu *c)
{
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;

	if (unlikely(!n))
		return NULL;
	/* ALLOC_PCS, and the sampled countdown: a sampled pop takes the
	 * miss path (sample.c) */
	if (unlikely(sample_tick(&c->stat[USLUB_ALLOC_PCS])))
		return NULL;
	n--;
	main->size = n;         /* n is 32-bit: no extension for the index */
	void *obj = main->objects[n];
	free_mark_clear0(obj);
	return obj;
}

/*
 * Per-CPU mode (USLUB_PERCPU=cpu): slot @c's main is PCPU_STANDIN, and
 * the sheaves of @s are the thread's rseq id's (slub/percpu.h): the pop
 * is a section on the id's main sheaf, NULL when it is empty. The
 * countdown ticks after the pop (readers never see the counter go back);
 * when it fires, *@fired is set and the caller hands the object to
 * _uslub_sample_popped() (with the allocation's tag set).
 */
__internal void *_uslub_sample_popped(struct kmem_cache *s, struct kmem_cache_cpu *c, void *obj);
#if USLUB_HAVE_RSEQ
static __always_inline void *alloc_from_pcpu(const struct kmem_cache *s, struct kmem_cache_cpu *c,
					     bool *fired)
{
	void *obj = pcpu_pop(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp, s->cpu_offset);
	if (unlikely(!obj))
		return NULL;
	if (unlikely(sample_tick(&c->stat[USLUB_ALLOC_PCS]))) {
		*fired = true;
		return obj;
	}
	free_mark_clear0(obj);
	return obj;
}

/* The push of @x (checked by the caller) onto the id's main sheaf, with
 * the free mark @mark set first; false when it is full (the mark cleared
 * again: the miss path checks and sets it). */
static __always_inline bool free_to_pcpu(const struct kmem_cache *s, struct kmem_cache_cpu *c,
					 void *x, uintptr_t mark)
{
	free_mark_set0(x, mark);
	if (likely(pcpu_push(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp, s->cpu_offset, x))) {
		stat(c, FREE_PCS);
		return true;
	}
	free_mark_clear0(x);
	return false;
}

/* free_to_pcpu() for the lookup paths' leaves: PCPU_PUSHED_HOT when the
 * push was hot (percpu.h pcpu_push_top()), for the free record's note. */
static __always_inline int free_to_pcpu_top(const struct kmem_cache *s, struct kmem_cache_cpu *c,
					    void *x, uintptr_t mark)
{
	free_mark_set0(x, mark);
	int r = pcpu_push_top(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp, s->cpu_offset, x);
	if (likely(r != PCPU_PUSH_FULL)) {
		stat(c, FREE_PCS);
		return r;
	}
	free_mark_clear0(x);
	return r;
}
#else
static __always_inline void *alloc_from_pcpu(const struct kmem_cache *s, struct kmem_cache_cpu *c,
					     bool *fired)
{
	(void)s;
	(void)c;
	(void)fired;
	return NULL;
}

static __always_inline bool free_to_pcpu(const struct kmem_cache *s, struct kmem_cache_cpu *c,
					 void *x, uintptr_t mark)
{
	(void)s;
	(void)c;
	(void)x;
	(void)mark;
	return false;
}

static __always_inline int free_to_pcpu_top(const struct kmem_cache *s, struct kmem_cache_cpu *c,
					    void *x, uintptr_t mark)
{
	(void)s;
	(void)c;
	(void)x;
	(void)mark;
	return PCPU_PUSH_FULL;
}
#endif

/* Per-CPU mode's leaves (alloc.c, free.c), entered by tail calls from
 * the inline paths when the fast slot's main is PCPU_STANDIN (out of
 * line: a section's registers would make every inline path save some).
 * Each completes the call, by the miss path when the id's sheaf is empty
 * or full, with the public caller's address. The alloc: for @s, fast
 * slot @c, a kmalloc's @orig_size. The frees: @x in @slab (fast word
 * @word), checked here; or checked already against the free record's
 * mark @mark. */
__internal void *_uslub_alloc_pcpu(struct kmem_cache *s, struct kmem_cache_cpu *c,
				   size_t orig_size);
__internal void _uslub_free_pcpu(void *x, struct kmem_cache_cpu *c, struct kmem_cache *s,
				 struct slab *slab, uint64_t word);
__internal void _uslub_free_pcpu_mark(void *x, struct kmem_cache_cpu *c, uintptr_t mark,
				      struct kmem_cache *s);
/* free_object_lookup()'s: @x in live @slab of @s (its page's PG_slab_page
 * seen), fast slot @c; the word read again from the page's line (passed,
 * it kept a register live that made free() save two callee-saved ones on
 * its lookup path). */
__internal void _uslub_free_pcpu_slab(void *x, struct kmem_cache_cpu *c, struct kmem_cache *s,
				      struct slab *slab);
/* uslub_cache_free()'s lookup of @x (ours, a live slab of @s) and push,
 * else the miss path with @addr. */
__internal void _uslub_cache_free_pcpu(struct kmem_cache *s, void *x, uintptr_t addr);
/* _uslub_free_pcpu_mark() in uslub_cache_free()'s argument order (no
 * register moves on either caller's hot path). */
__internal void _uslub_cache_free_pcpu_mark(struct kmem_cache *s, void *x,
					    struct kmem_cache_cpu *c, uintptr_t mark);

/* The cpu freelist's pop, with sampled profiling's countdown @tick
 * (sample_left; NULL: the miss path) or without (the miss path ticked for
 * the call). */
static __always_inline void *cpu_slab_pop_tick(struct kmem_cache *s, struct kmem_cache_cpu *c,
					       const bool tick)
{
	void *obj = c->freelist;

	if (unlikely(!obj || READ_ONCE(s->fastpath_off)))
		return NULL;
	if (tick && unlikely(sample_tick(&c->sample_left)))
		return NULL;    /* sampled: the miss path */
	c->freelist = get_freepointer_raw(s, obj);
	free_mark_clear0(obj);
	return obj;
}

static __always_inline void *cpu_slab_pop(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	return cpu_slab_pop_tick(s, c, false);
}

/* The 6.x fast path (cpu-slab mode): pop the cpu freelist. NULL when it
 * is empty or the fast paths are off (hardened caches too: their free
 * pointers need decoding and checking). Counted by derivation (see
 * kmem_cache_cpu.loaded). */
static __always_inline void *alloc_from_cpu_slab(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	return cpu_slab_pop_tick(s, c, true);
}

/* An allocation from @s: the main sheaf, else an accounted or profiled
 * cache's lean leaf, else the cpu freelist (a cache in cpu-slab mode finds
 * its main empty at once), else (gfp bits, a node, or a miss) the miss
 * path. @orig_size: a kmalloc's requested size (0:
 * not kmalloc), for a debug cache's record. */
static __always_inline void *slab_alloc_node(struct kmem_cache *s, uslub_gfp_t gfp, int node,
					     size_t orig_size)
{
	if (likely(!gfp && node == USLUB_NUMA_NO_NODE)) {
		struct kmem_cache_cpu *c = this_cpu_fast(s);
		void *obj = alloc_from_pcs(c);
		if (likely(obj))
			return obj;
		if (c->main == PCPU_STANDIN)    /* per-CPU mode: the id's sheaf */
			return _uslub_alloc_pcpu(s, c, orig_size);
		/* an accounted or a profiled sheaf cache (its fast slot the
		 * dead one): one tail call with its own slot straight into its
		 * lean hooked leaf (alloc.c; chosen once per cache in
		 * pcs_hooks), no miss function on the way */
		unsigned int ph = READ_ONCE(s->pcs_hooks);
		if (ph == PCS_HOOKS_ACCOUNT)
			return _uslub_alloc_pcs_account(s, this_cpu(s));
		if (ph == PCS_HOOKS_PROFILE)
			return _uslub_alloc_pcs_profile(s, this_cpu(s));
		if (ph == (PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE))
			return _uslub_alloc_pcs_account_profile(s, this_cpu(s));
		/* the dead slot's freelist is empty too */
		obj = alloc_from_cpu_slab(s, c);
		if (likely(obj))
			return obj;
	}
	return _uslub_slab_alloc_miss(s, gfp, node, orig_size, USLUB_CALLER());
}

/* Is @off (below the slab's object bytes, so < 2^22) an object start?
 * idx * size <= off < 2^22 whatever off is, so 32-bit arithmetic is exact
 * (and the multiply takes size from memory: one register fewer). */
static __always_inline bool obj_start(const struct kmem_cache *s, uintptr_t off)
{
	return slab_offset_is_start(off, s->div_magic);
}

/* The checks that make a bad free of @x, in @slab with its fast word
 * @word, detectable: inside the slab's objects, at an object start, not
 * already free (the free mark, *@mark); with a slot's @main (NULL: an
 * id's sheaf, per-CPU mode is on one node), a slab of its node. */
static __always_inline bool free_word_ok(const struct kmem_cache *s, const struct slab *slab,
					 uint64_t word, void *x, uintptr_t *mark,
					 const struct slab_sheaf *main)
{
	uint32_t off = slab_offset32(slab, x);
	*mark = s->free_mark ^ word;
	return likely(off < (uint32_t)word) && likely(obj_start(s, off)) &&
	       !(main && unlikely(_uslub_multi_node) && slab_nid(slab) != main->node) &&
	       !free_mark_test0(x, *mark);
}

/*
 * The free fast path (Linux 7.0's free_to_pcs), for @x already known to
 * be in @slab of @s, with the caller's slot @c and its main sheaf @main
 * with room (and inline paths on: the caller tested both before the
 * lookup): the checks that make a bad free detectable (inside the slab's
 * objects, at an object start, not already free: the free mark), a slab
 * of the main sheaf's node -> mark it and push it; *@top is the entry
 * the push wrote over (the object last popped from that place). false:
 * nothing done (the miss path checks again and reports). The object
 * offset is taken from the slab's start without the left red zone: only
 * debug caches have one, and their inline paths are off.
 */
static __always_inline bool free_to_pcs_word(struct kmem_cache *s, struct kmem_cache_cpu *c,
					     struct slab_sheaf *main, struct slab *slab,
					     uint64_t word, void *x, void **top)
{
	uintptr_t mark;

	if (!free_word_ok(s, slab, word, x, &mark, main))
		return false;
	free_mark_set0(x, mark);
	/* size read again (it was checked below capacity by the caller):
	 * one register fewer across the checks, no callee-saved spill */
	unsigned int n = main->size;
	void **at = &main->objects[n];
	*top = *at;
	*at = x;
	barrier();      /* a fork child flushes objects[0, size) */
	main->size = n + 1;
	stat(c, FREE_PCS);
	return true;
}

/* free_to_pcs_word() with @slab's own word (slab_objects_bytes() and the
 * generation: slab_free_mark()). */
static __always_inline bool free_to_pcs(struct kmem_cache *s, struct kmem_cache_cpu *c,
					struct slab_sheaf *main, struct slab *slab, void *x)
{
	void *top;      /* unused: the load goes */
	return free_to_pcs_word(s, c, main, slab, slab->__unused[0], x, &top);
}

/* Is @p inside the slab of slot @c's hooked free record (struct
 * free_record: a cache on its lean hooked paths), still valid? Then *@off
 * is its offset there. Only the lean leaves (internal.h) ask. */
static __always_inline bool rec_hooked_covers(const struct kmem_cache *s,
					      const struct kmem_cache_cpu *c, const void *p,
					      uint32_t *off)
{
	uintptr_t roff = (uintptr_t)p - (uintptr_t)c->rec.addr;
	*off = (uint32_t)roff;
	return roff < c->rec.bytes &&
	       c->rec.epoch == (READ_ONCE(s->slab_epoch) | FREE_RECORD_HOOKED);
}

/*
 * A lookup's push of @x into @slab, @hot when it wrote over @x itself:
 * the free of the object the sheaf handed out last from that place (a
 * hot pair, a LIFO burst), the one pattern where the next frees are
 * likely in the same slab. Such a push goes out of line, where a slab's
 * second one in a row makes it the slot's free record (free.c, which
 * reads the epoch and then checks again what the record rests on); any
 * other push pays a compare. Frees that wander over many slabs set no
 * records (a record set costs ~60 instructions), and frees that
 * alternate between classes find their own slot's record on their next
 * hot push.
 */
static __always_inline void free_record_note(struct kmem_cache *s, struct kmem_cache_cpu *c,
					     struct slab *slab, bool hot)
{
	if (likely(!hot))
		return;
	_uslub_free_record_note_run(s, c, slab);
}

/*
 * The free fast path's first try: @x in the slab slot @c of @s last freed
 * into (its free record, still valid: the cache's epoch unchanged), at an
 * object start, not already free, with room in the main sheaf -> mark it
 * and push it. No descriptor, no ownership bit: the record proves what
 * the lookup would (struct free_record), and the only load that depends
 * on @x is its free mark's, after the epoch test (a record's slab is
 * live). false: nothing done. @c may be CPU_SLOT_NONE (the record empty,
 * @s not read).
 */
static __always_inline bool free_to_pcs_record_api(struct kmem_cache_cpu *c, void *x,
						   struct kmem_cache *s, const bool api)
{
	uintptr_t off = (uintptr_t)x - (uintptr_t)c->rec.addr;

	if (unlikely(off >= c->rec.bytes))
		return false;
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;
	uintptr_t mark = c->rec.mark;
	if (unlikely(!obj_start(s, off)) ||
	    unlikely(c->rec.epoch != READ_ONCE(s->slab_epoch)) ||
	    free_mark_test0(x, mark))
		return false;
	if (unlikely(n >= main->capacity)) {    /* full, or per-CPU mode */
		if (main != PCPU_STANDIN)
			return false;
		if (api)        /* a tail call */
			_uslub_cache_free_pcpu_mark(s, x, c, mark);
		else
			_uslub_free_pcpu_mark(x, c, mark, s);
		return true;
	}
	free_mark_set0(x, mark);
	main->objects[n] = x;
	barrier();      /* a fork child flushes objects[0, size) */
	main->size = n + 1;
	stat(c, FREE_PCS);
	return true;
}

static __always_inline bool free_to_pcs_record(struct kmem_cache_cpu *c, void *x,
					       struct kmem_cache *s)
{
	return free_to_pcs_record_api(c, x, s, false);
}

/* uslub_cache_free()'s (api.c). */
static __always_inline bool cache_free_to_pcs_record(struct kmem_cache_cpu *c, void *x,
						     struct kmem_cache *s)
{
	return free_to_pcs_record_api(c, x, s, true);
}

/*
 * The 6.x free fast path (cpu-slab mode): @x inside our cpu slab of this
 * cache (one subtraction and compare against the cpu slot, no descriptor
 * load: the range proves the pointer is ours and of this cache), at an
 * object start (reciprocal multiply), and without the free mark (not
 * already free) -> mark it and push it onto the cpu freelist. A cache
 * whose fast paths are off, or in sheaf mode, has an empty range (see
 * set_cpu_slab()).
 */
static __always_inline bool free_to_cpu_slab(struct kmem_cache *s, struct kmem_cache_cpu *c,
					     void *x)
{
	uintptr_t off = (uintptr_t)x - (uintptr_t)c->slab_addr;

	if (unlikely(off >= c->slab_bytes) ||
	    unlikely(!obj_start(s, off)) ||
	    free_mark_test0(x, c->free_mark))
		return false;
	free_mark_set0(x, c->free_mark);
	set_freepointer_raw(s, x, c->freelist);
	c->freelist = x;
	stat(c, FREE_FASTPATH);
	return true;
}

/* The free fast path for @x known to be in @slab of @s, with the
 * caller's slot @c for @s and the public caller's @addr. */
static __always_inline void __slab_free_to_pcs(struct kmem_cache *s, struct kmem_cache_cpu *c,
					       struct slab *slab, void *x, uintptr_t addr)
{
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;

	if (likely(n < main->capacity) && likely(!pcs_off(s))) {
		if (likely(free_to_pcs(s, c, main, slab, x)))
			return;
	} else if (likely(free_to_cpu_slab(s, c, x))) {
		return;
	} else if (main == PCPU_STANDIN && !pcs_off(s)) {
		return _uslub_free_pcpu(x, c, s, slab, slab->__unused[0]);
	}
	_uslub_slab_free_miss(s, x, addr);
}

/* The free fast path for @x known to be in @slab (kfree's cold path,
 * where the page may lack PG_slab_page: no record). */
static __always_inline void slab_free_to_pcs(struct kmem_cache *s, struct slab *slab, void *x)
{
	__slab_free_to_pcs(s, this_cpu(s), slab, x, USLUB_CALLER());
}

/*
 * free() and kfree() of any @x, in two steps: the inline one, the free
 * record of the slot the thread last freed into (_uslub_tls.last_slot: a
 * kmalloc or malloc cache's; not indexed by @x, so its loads do not wait
 * for @x and a hit costs no more latency than one record's); then, out
 * of line in the callers, the lookup.
 */
static __always_inline bool free_object_record(void *x)
{
	struct kmem_cache_cpu *last = _uslub_tls.last_slot;
	return free_to_pcs_record(last, x, last->rec.cache);
}

/*
 * The lookup: ownership (one byte per segment), then the one descriptor
 * line of @x's page (the free fast word, slab/slab.h): "a page of a live
 * slab", the slab, its cache and its word (bounds and mark); the slot
 * from the cache's fast_offset; then the push with its checks, which
 * notes the slab for the record, else the miss path with the public
 * caller's address. false: @x is not in a live slab (NULL, a page run, a
 * mapping, a bad pointer, a slab holding a sampled object): the caller's
 * cold path.
 */
static __always_inline bool free_object_lookup(void *x)
{
	if (unlikely(!_uslub_owns_segment(x)))
		return false;
	struct page *page = virt_to_page(x);
	if (unlikely(!(READ_ONCE(page->flags) & PG_slab_page)))
		return false;
	/* the cache, the slab and its word from the page's own line, the
	 * slot from the cache: its fast slot, the dead one (full) while its
	 * inline paths are off */
	struct kmem_cache *s = page_slab_cache(page);
	struct slab *slab = page_slab(READ_ONCE(page->compound_head));
	struct kmem_cache_cpu *c = this_cpu_fast(s);
	struct slab_sheaf *main = c->main;
	void *top;
	if (likely(main->size < main->capacity) &&
	    likely(free_to_pcs_word(s, c, main, slab, page_slab_word(page), x, &top))) {
		free_record_note(s, c, slab, top == x);
		return true;
	}
	if (main == PCPU_STANDIN) {             /* per-CPU mode: the id's sheaf */
		_uslub_free_pcpu_slab(x, c, s, slab);
		return true;
	}
	/* the public caller's address taken here, on the miss only (an
	 * inline function: the entry point's return address) */
	_uslub_free_slab_miss(s, slab, x, USLUB_CALLER());
	return true;
}

/* @s (kmalloc's or malloc's, never destroyed) may be the cache of the
 * thread's last_slot (free_object()): set before the cache is published. */
static inline void cache_set_rec_thread(struct kmem_cache *s)
{
	s->rec_thread = !_uslub_multi_node;
}

/* What the lean hooked paths accept in fastpath_off (internal.h). */
#define PCS_LEAN_OFF_OK (FASTPATH_OFF_HOOKS | FASTPATH_OFF_HARDENED | FASTPATH_OFF_MARK)

/* uslub_cache_free()'s fast path is free_to_pcs_record() on the cache's
 * fast slot, then this, out of line (api.c), for any @x, with the public
 * caller's @addr: with room in the fast slot's main sheaf (the cache's
 * inline paths on), one descriptor lookup (ours, a slab, of this cache)
 * and free_to_pcs(); without, the cpu slab's range (a cache in cpu-slab
 * mode: capacity 0; the dead slot's range is empty). From its cold end,
 * an accounted or a profiled sheaf cache goes by one tail call, with its
 * own slot, to its lean hooked leaf (free.c; the choice made once per
 * cache in pcs_hooks): no miss function on the way, and the hot path
 * above stays the plain one's. */
static __always_inline void slab_free_lookup(struct kmem_cache *s, void *x, uintptr_t addr)
{
	struct kmem_cache_cpu *c = this_cpu_fast(s);
	struct slab_sheaf *main = c->main;
	unsigned int n = main->size;

	if (likely(n < main->capacity)) {
		/* free_object()'s lookup: the page's PG_slab_page (a page of a
		 * live slab without sampled objects), then its cache and
		 * word from the same line */
		if (likely(_uslub_owns_segment(x))) {
			struct page *page = virt_to_page(x);
			struct slab *slab;
			void *top;
			if (likely(READ_ONCE(page->flags) & PG_slab_page) &&
			    likely(page_slab_cache(page) == s) &&
			    (slab = page_slab(READ_ONCE(page->compound_head)),
			     likely(free_to_pcs_word(s, c, main, slab, page_slab_word(page), x, &top))))
				return free_record_note(s, c, slab, top == x);
		}
	} else if (main == PCPU_STANDIN) {
		/* per-CPU mode: the same lookup, then the id's sheaf */
		return _uslub_cache_free_pcpu(s, x, addr);
	} else if (likely(free_to_cpu_slab(s, c, x))) {
		return;
	} else {
		unsigned int off = fastpath_off_load(s);
		if (off > FASTPATH_OFF_HARDENED && !(off & ~PCS_LEAN_OFF_OK)) {
			/* the lean leaves, with the cache's own slot */
			c = this_cpu(s);
			main = c->main;
			n = main->size;
			unsigned int ph = READ_ONCE(s->pcs_hooks);
			if (likely(n < main->capacity)) {
				if (ph == PCS_HOOKS_ACCOUNT)
					return _uslub_free_pcs_account(s, c, main, n, x);
				if (ph == PCS_HOOKS_PROFILE)
					return _uslub_free_pcs_profile(s, c, main, n, x);
				if (ph == (PCS_HOOKS_ACCOUNT | PCS_HOOKS_PROFILE))
					return _uslub_free_pcs_account_profile(s, c, main, n, x);
			}
		}
	}
	_uslub_slab_free_miss(s, x, addr);
}

#endif /* USLUB_CACHE_CACHE_H */
