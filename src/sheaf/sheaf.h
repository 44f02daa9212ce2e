/*
 * Sheaf layer (Linux 6.18 "percpu sheaves"): per-CPU arrays of free objects
 * in front of the slab layer, a per-node barn of full and empty sheaves
 * behind them, and the prefill API built on both.
 *
 *   thread (cpu slot)             node                      slabs
 *   +--------------+     +-------------------------+     +----------------+
 *   | main  [....] |<--->| barn: full  [F][F]..    |     | partial / new  |
 *   | spare [....] |     |       empty [E][E]..    |     | slabs of s     |
 *   +--------------+     +-------------------------+     +----------------+
 *          \____________ refill (bulk) / flush (detached freelists) ___/
 *
 * The layer sits on the cache layer: it calls only the slab-level
 * primitives of slub/slub.h (_uslub_refill_objects, _uslub_free_to_slabs)
 * and implements the hooks declared there (_uslub_sheaf_*). The pop/push
 * on c->main is inline in cache/; everything else is here.
 *
 * Ownership: a sheaf is, at any instant, in exactly one place: a cpu slot
 * (c->main or c->spare, owner thread only), a barn list (barn lock), the
 * hands of a prefill user, or the local variables of the one thread moving
 * it. A sheaf leaves a cpu slot before it is put in a barn, flushed or
 * freed, and is installed in a slot only after it was taken: a fork child
 * finding a thread stopped half-way leaks a sheaf, never shares one.
 *
 * Every object in a sheaf is a free object counted in its slab's inuse (as
 * on a cpu freelist); refill and flush keep the slab counters exact.
 *
 * Counters (stat items of uslub.h), counted on the slot doing the work:
 *   ALLOC_PCS / FREE_PCS    objects popped from / pushed onto a sheaf
 *   SHEAF_REFILL / _FLUSH   objects moved slabs -> sheaf / sheaf -> slabs
 *   SHEAF_ALLOC / _FREE     sheaf structs allocated / freed (oversize ones
 *                           too): ALLOC - FREE == sheaves that exist
 *   BARN_GET / _GET_FAIL    full sheaf taken from the barn / none there
 *   BARN_PUT / _PUT_FAIL    full sheaf put in the barn / barn was full
 *   SHEAF_PREFILL_*, SHEAF_RETURN_*   the prefill API's paths
 *
 * Lock: node_barn.lock (RANK_BARN), after slab_mutex, before every
 * list_lock; never held while calling into the slab layer or allocating.
 */
#ifndef USLUB_SHEAF_H
#define USLUB_SHEAF_H

#include "slub/slub.h"
#include "base/rseq.h"

#define MAX_FULL_SHEAVES   10
#define MAX_EMPTY_SHEAVES  10

/*
 * Per node of a sheaf cache. full holds sheaves with size == capacity,
 * empty holds sheaves with size == 0, all of capacity s->sheaf_capacity.
 *   nr_full == |full| <= max_full (up to a raise racing a put: a hint),
 *   base_full <= max_full <= MAX(base_full, barn_cap()),
 *   nr_empty == |empty| <= MAX(MAX_EMPTY_SHEAVES, max_full)
 * (the counts written under lock, read lockless as hints). max_full is
 * base_full while the cache does not swing; a refill that follows a
 * refused put within USLUB_DECAY_MS raises it by one, and the page
 * layer's purge pass lowers it back (sheaf.c, "The barn follows the
 * swings").
 */
struct node_barn {
	pthread_mutex_t lock;
	struct list_head full;
	struct list_head empty;
	unsigned long nr_full;
	unsigned long nr_empty;
	unsigned long max_full;          /* the limit now (atomic)              */
	unsigned long base_full;         /* MAX_FULL_SHEAVES unless the cache's
	                                    creator set fewer (written before
	                                    the cache is used)                  */
	uint64_t refused_ns;             /* coarse time of the last full sheaf
	                                    the barn refused (0: none; atomic)  */
	uint64_t raised_ns;              /* of the last raise of max_full       */
};

/*
 * Sheaf structs come from the internal bucket caches (slub/buckets.c),
 * as barns do. A sheaf of capacity n takes SHEAF_HEADER_SIZE + 8n bytes;
 * a cache's capacity is rounded up to fill its bucket exactly. Oversize
 * (prefill) sheaves fit SHEAF_MAX_OBJECTS, the largest bucket.
 */
#define SHEAF_BUCKET_MIN_SHIFT 6
#define SHEAF_MAX_OBJECTS \
	((unsigned int)((USLUB_BUCKET_MAX - SHEAF_HEADER_SIZE) / sizeof(void *)))

/* Default capacities of every cache without USLUB_CPU_SLAB(S) (the
 * kernel's calculate_sheaf_capacity), before rounding up to fill the
 * sheaf's allocation: roughly half the old cpu partial target per sheaf. */
static inline unsigned int sheaf_default_capacity(size_t object_size)
{
	if (object_size >= 4096)
		return 4;
	if (object_size >= 1024)
		return 12;
	if (object_size >= 256)
		return 26;
	return 60;
}

/* The capacity a requested one is rounded up to (clamped to the largest). */
__internal unsigned int _uslub_sheaf_round_capacity(unsigned int capacity);

/*
 * The sheaf layer's entries for the cache layer above: each is a no-op (or
 * returns "not handled") for a cache without sheaves. The inline pop/push on c->main are in cache/;
 * these take over when main is empty/full or missing.
 */
__internal int _uslub_sheaf_cache_init(struct kmem_cache *s, unsigned int capacity);
/* Keep at most @max_full full sheaves in each barn of @s (1 ..
 * MAX_FULL_SHEAVES): a creator whose objects are big bounds what the barn
 * holds. Call right after creating the cache, before it is used. */
__internal void _uslub_sheaf_set_barn_limit(struct kmem_cache *s, unsigned int max_full);
__internal void *_uslub_sheaf_alloc_slow(struct kmem_cache *s, struct kmem_cache_cpu *c,
					 uslub_gfp_t gfp);
__internal bool _uslub_sheaf_free_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x);
__internal int _uslub_sheaf_cache_shrink(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal void _uslub_sheaf_cache_destroy(struct kmem_cache *s);
__internal void _uslub_sheaf_barn_counts(const struct kmem_cache *s, unsigned long *full,
					 unsigned long *empty);
/* Full sheaves the barns of @s take now (the sum of max_full). */
__internal unsigned long _uslub_sheaf_barn_limit(const struct kmem_cache *s);
/* The prefill API's pop: an object of the prefilled @sheaf (its free mark
 * cleared; no hook run, nothing counted), or NULL when it is empty or not
 * a sheaf of @s (reported for @fn, the public entry). */
__internal void *_uslub_sheaf_pop_prefilled(struct kmem_cache *s, struct slab_sheaf *sheaf,
					    const char *fn);
/* The bulk paths' whole-sheaf exchanges (sheaf.c): make c->main hold
 * objects (alloc_bulk) or have room (free_bulk) through the spare and the
 * barn; NULL when that cannot be done without the slabs. */
__internal struct slab_sheaf *_uslub_pcs_replace_empty_main(struct kmem_cache *s,
							    struct kmem_cache_cpu *c);
__internal struct slab_sheaf *_uslub_pcs_replace_full_main(struct kmem_cache *s,
							   struct kmem_cache_cpu *c);

/*
 * kfree_rcu's rcu_free sheaf (sheaf.c, the end): _uslub_sheaf_free_rcu()
 * appends @x (a valid object of @s, in use, of the local node; checked by
 * the caller) to the calling thread's rcu_free sheaf, handing a full one
 * to the grace-period provider; false when no sheaf could be had (the
 * caller falls back to a grace period per object).
 * _uslub_sheaf_rcu_flush() hands slot @c's partly filled rcu_free sheaf to
 * the provider (deferred if a lock is held); @wait: wait while its owner
 * is appending (a live thread), else leave it to the owner.
 */
__internal bool _uslub_sheaf_free_rcu(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x);
__internal void _uslub_sheaf_rcu_flush(struct kmem_cache *s, struct kmem_cache_cpu *c, bool wait);

/*
 * Per-CPU mode (sheaf/pcpu.c; slub/pcpu.c has the ids' areas, slub/percpu.h
 * the sections). A thread's slot holds its id's sheaves only inside a slow
 * path: _uslub_pcpu_claim() exchanges them out of the id's words into the
 * slot (the ordinary slow path then works on them as in per-thread mode),
 * _uslub_pcpu_release() installs them back into the id the thread has
 * then, or gives them to the barn (a full one) or the slabs when its words
 * were filled meanwhile, and leaves PCPU_STANDIN as the slot's main. So
 * cached memory is bounded by ids, plus the sheaves of threads inside a
 * slow path.
 */
#if USLUB_HAVE_RSEQ
/* Is @c the slot of @s that per-CPU mode claims (the thread's own, in
 * per-CPU mode, not claimed already)? */
static __always_inline bool pcpu_slot(const struct kmem_cache *s, const struct kmem_cache_cpu *c)
{
	return _uslub_tls.rseq_area && !c->pcpu_claimed &&
	       (const char *)c == _uslub_tls.cpu_base + s->cpu_offset &&
	       s->cpu_offset != (unsigned int)CACHE_SLOT_DEAD * CPU_SLOT_SIZE;
}
#else
static __always_inline bool pcpu_slot(const struct kmem_cache *s, const struct kmem_cache_cpu *c)
{
	(void)s;
	(void)c;
	return false;
}
#endif
/* true: the id's sheaves are now in @c, and _uslub_pcpu_release() must
 * follow; false: nothing done (per-thread mode, claimed already). */
__internal bool _uslub_pcpu_claim(struct kmem_cache *s, struct kmem_cache_cpu *c);
__internal void _uslub_pcpu_release(struct kmem_cache *s, struct kmem_cache_cpu *c);
/* The slow paths' pop and push for a pcpu_slot(): the id's sheaf, else
 * claim, the ordinary slow path, release. */
__internal void *_uslub_pcpu_alloc_slow(struct kmem_cache *s, struct kmem_cache_cpu *c,
					uslub_gfp_t gfp);
__internal bool _uslub_pcpu_free_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x);
/* Every id's sheaves of @s to the barn or the slabs (shrink, destroy:
 * slab_mutex held, which serializes the remote takes). */
__internal void _uslub_pcpu_drain_cache(struct kmem_cache *s, struct kmem_cache_cpu *c);
/* The idle-id drain's purge callback (registered by the sheaf layer). */
__internal void _uslub_pcpu_purge_init(void);
/* A sheaf nobody holds: a full one to its barn, else its objects to the
 * slabs and the struct to the barn or freed (@locked: through a slot on
 * the stack, a lock may be held). */
__internal void _uslub_sheaf_give_back(struct kmem_cache *s, struct kmem_cache_cpu *c,
				       struct slab_sheaf *sheaf, bool locked);

#endif /* USLUB_SHEAF_H */
