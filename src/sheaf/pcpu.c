/*
 * pcpu.c — the sheaf layer's part of per-CPU mode (USLUB_PERCPU=cpu;
 * sheaf.h says how a thread's slot borrows its id's sheaves; slub/pcpu.c
 * has the ids' areas, slub/percpu.h the sections).
 *
 *   inline pop/push (cache/cache.h)   the id's main, by a section
 *   slow pop/push (here)              the same section, for callers that
 *                                     did not try it (hooked, checked)
 *   claim                             exchange the id's main and spare out
 *                                     into the thread's slot
 *   the ordinary slow path (sheaf.c)  spare, barn, slabs, on that slot
 *   release                           install them back into the id's
 *                                     words (the id the thread has now),
 *                                     else give them to the barn
 *   drains (shrink, destroy, idle)    from outside the id: remote takes
 *                                     (a stop marker, the rseq fence)
 *
 * Nothing waits for a thread that was preempted while it held an id's
 * sheaves: the others on that id find PCPU_NONE, miss, and take sheaves
 * of their own from the barn; whichever installs last gives its sheaves
 * to the barn.
 */
#include "sheaf/sheaf.h"
#include "slub/percpu.h"
#include <string.h>
#include <time.h>

#if USLUB_HAVE_RSEQ

#define WORD_MAIN  offsetof(struct kmem_cache_cpu, main)
#define WORD_SPARE offsetof(struct kmem_cache_cpu, spare)

static __always_inline unsigned long word_off(const struct kmem_cache *s, size_t word)
{
	return (unsigned long)s->cpu_offset + word;
}

/* Take the id's sheaf in @word of @s: a real sheaf, or NULL. */
static struct slab_sheaf *take(const struct kmem_cache *s, size_t word)
{
	unsigned int id;
	struct slab_sheaf *sh = pcpu_slot_exchange(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp,
						   _uslub_pcpu_tab, word_off(s, word), PCPU_NONE,
						   &id);
	return sheaf_real(sh) ? sh : NULL;
}

bool _uslub_pcpu_claim(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	if (!pcpu_slot(s, c))
		return false;
	c->pcpu_claimed = 1;
	barrier();
	if (!sheaf_real(c->main)) {
		struct slab_sheaf *m = take(s, WORD_MAIN);
		WRITE_ONCE(c->main, m ? m : EMPTY_SHEAF);
	}
	if (!c->spare)
		WRITE_ONCE(c->spare, take(s, WORD_SPARE));
	return true;
}

/* Install @sheaf into a word of the id the thread has now: @first, else
 * the other; the id's area is made on the way if it has none. false: both
 * words hold sheaves (or no area could be made). */
static bool put(struct kmem_cache *s, struct slab_sheaf *sheaf, size_t first)
{
	size_t other = first == WORD_MAIN ? WORD_SPARE : WORD_MAIN;
	for (int tries = 0; tries < 4; tries++) {
		unsigned int id;
		size_t word = tries & 1 ? other : first;
		void *old = pcpu_slot_install(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp,
					      _uslub_pcpu_tab, word_off(s, word), PCPU_NONE, sheaf,
					      &id);
		if (old == PCPU_NONE)
			return true;
		if ((old == EMPTY_SHEAF || !old) && !_uslub_pcpu_area(id))
			return false;      /* the sentinel's word: no area, none to be had */
	}
	return false;
}

void _uslub_pcpu_release(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	struct slab_sheaf *m = c->main, *sp = c->spare;
	WRITE_ONCE(c->spare, NULL);
	WRITE_ONCE(c->main, PCPU_STANDIN);
	barrier();
	c->pcpu_claimed = 0;
	if (sheaf_real(m) && !put(s, m, WORD_MAIN))
		_uslub_sheaf_give_back(s, c, m, false);
	if (sp && !put(s, sp, WORD_SPARE))
		_uslub_sheaf_give_back(s, c, sp, false);
	char *base = __atomic_load_n(&_uslub_pcpu_tab[uslub_rseq_id_now(_uslub_rseq_info())],
				     __ATOMIC_RELAXED);
	if (base == _uslub_cpu_empty)
		return;
	struct pcpu_area *a = _uslub_pcpu_area_hdr(base);
	__atomic_fetch_add(&a->uses, 1, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&a->watched, __ATOMIC_RELAXED)) {
		/* the idle drain needs a purge pass to come: ask for one
		 * (racing releases on this id may ask twice: harmless) */
		__atomic_store_n(&a->watched, true, __ATOMIC_RELAXED);
		_uslub_purge_notify();
	}
}

/*
 * A slot of a per-CPU thread starts with the empty sheaf as its main (the
 * cpu area's, as any thread's: slab_common.c), and an empty sheaf that is
 * not PCPU_STANDIN sends every inline call down the whole miss path. A
 * release leaves PCPU_STANDIN, but a slot whose first slow paths find the
 * id's sheaf with an object or with room never claims: a thread that
 * starts on a CPU where others ran. So the slow paths stand the slot in
 * themselves (a slot of this thread's, not claimed: its spare is NULL).
 */
static __always_inline void stand_in(struct kmem_cache_cpu *c)
{
	if (unlikely(c->main == EMPTY_SHEAF))
		WRITE_ONCE(c->main, PCPU_STANDIN);
}

void *_uslub_pcpu_alloc_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp)
{
	void *obj = pcpu_pop(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp, s->cpu_offset);
	if (obj) {
		stat_pcs_slow(c, 1);
		stand_in(c);
		return obj;
	}
	_uslub_pcpu_claim(s, c);
	obj = _uslub_sheaf_alloc_slow(s, c, gfp);
	_uslub_pcpu_release(s, c);
	return obj;
}

bool _uslub_pcpu_free_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x)
{
	if (pcpu_push(_uslub_tls.rseq_area, _uslub_tls.pcpu_idp, s->cpu_offset, x)) {
		stat(c, FREE_PCS);
		stand_in(c);
		return true;
	}
	_uslub_pcpu_claim(s, c);
	bool ok = _uslub_sheaf_free_slow(s, c, x);
	_uslub_pcpu_release(s, c);
	return ok;
}

/* ------------------------------------------------------------------------
 * Drains: from outside the id's sections, serialized by slab_mutex
 * ---------------------------------------------------------------------- */

#define DRAIN_BATCH 64

struct drain {
	void **word[DRAIN_BATCH];
	void *old[DRAIN_BATCH];
	unsigned int n;
};                                      /* 1 KiB of a drainer's stack */

/* The batch's remote takes: each word exchanged for the stop marker, one
 * fence for all, then each sheaf is ours if its marker is still there
 * (percpu.h, pcpu_slot_take_remote(), one fence per batch). */
static void drain_batch(struct kmem_cache *s, struct kmem_cache_cpu *c, struct drain *d)
{
	for (unsigned int i = 0; i < d->n; i++)
		d->old[i] = __atomic_exchange_n(d->word[i], PCPU_STOP, __ATOMIC_ACQ_REL);
	bool fenced = _uslub_rseq_fence() == 0;
	for (unsigned int i = 0; i < d->n; i++) {
		void *expect = PCPU_STOP;
		bool ours = __atomic_compare_exchange_n(d->word[i], &expect,
							fenced ? PCPU_NONE : d->old[i], false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		if (ours && fenced && sheaf_real(d->old[i]))
			_uslub_sheaf_give_back(s, c, d->old[i], true);
	}
	d->n = 0;
}

static void drain_add(struct kmem_cache *s, struct kmem_cache_cpu *c, struct drain *d,
		      char *base)
{
	for (int w = 0; w < 2; w++) {
		void **word = (void **)(base + word_off(s, w ? WORD_SPARE : WORD_MAIN));
		void *v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
		if (!sheaf_real(v))
			continue;
		d->word[d->n++] = word;
		if (d->n == DRAIN_BATCH)
			drain_batch(s, c, d);
	}
}

void _uslub_pcpu_drain_cache(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	if (!_uslub_pcpu || !s->sheaf_capacity || !_uslub_pcpu_nr_areas())
		return;
	struct drain d;
	d.n = 0;
	for (unsigned int id = 0; id < PCPU_MAX_IDS; id++) {
		char *base = __atomic_load_n(&_uslub_pcpu_tab[id], __ATOMIC_ACQUIRE);
		if (base != _uslub_cpu_empty)
			drain_add(s, c, &d, base);
	}
	if (d.n)
		drain_batch(s, c, &d);
}

/*
 * The idle drain (the page layer's purge pass): an id with no slow path
 * for USLUB_DECAY_MS gives its sheaves to the barns, as the kernel drains
 * the sheaves of a CPU going offline. Its idle time counts from the pass
 * that first sees its use count unchanged, so the drain comes one to two
 * decays after its last release (whose first since a drain asks the page
 * layer for a pass: _uslub_purge_notify()); with concurrency ids (dense, at
 * most one per running thread) the ids a shrinking program stops using
 * hold nothing after a while. A forced pass (uslub_trim(), malloc_trim())
 * drains every id. The barns' own pass runs after this one.
 */
static size_t pcpu_purge(bool force, uint64_t *next)
{
	*next = 0;
	if (!_uslub_pcpu || !_uslub_pcpu_nr_areas())
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t decay = (uint64_t)_uslub_option(USLUB_OPT_DECAY_MS) * 1000000ull;
	if (_uslub_locks_held) {
		*next = now + (decay ? decay : 1000000000ull);
		return 0;
	}
	uint64_t idle[PCPU_MAX_IDS / 64] = { 0 };   /* a bitmap: small frame */
	unsigned int nidle = 0;
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	for (unsigned int id = 0; id < PCPU_MAX_IDS; id++) {
		char *base = _uslub_pcpu_tab[id];
		if (base == _uslub_cpu_empty)
			continue;
		struct pcpu_area *a = _uslub_pcpu_area_hdr(base);
		unsigned long uses = __atomic_load_n(&a->uses, __ATOMIC_RELAXED);
		if (uses != a->seen) {
			a->seen = uses;
			a->idle_ns = now;
			a->drained = false;
		}
		if (a->drained && !force)
			continue;
		if (force || now - a->idle_ns >= decay) {
			idle[id / 64] |= 1ull << (id % 64);
			nidle++;
			a->drained = true;
			__atomic_store_n(&a->watched, false, __ATOMIC_RELAXED);
		} else if (!*next || a->idle_ns + decay < *next) {
			*next = a->idle_ns + decay;
		}
	}
	if (nidle) {
		struct kmem_cache *s;
		list_for_each_entry(s, &_uslub_slab_caches, list) {
			if (!s->sheaf_capacity)
				continue;
			struct kmem_cache_cpu c;
			memset(&c, 0, sizeof(c));
			struct drain d;
			d.n = 0;
			for (unsigned int w = 0; w < PCPU_MAX_IDS / 64; w++)
				for (uint64_t bits = idle[w]; bits; bits &= bits - 1)
					drain_add(s, &c, &d,
						  _uslub_pcpu_tab[w * 64 + __builtin_ctzll(bits)]);
			if (d.n)
				drain_batch(s, &c, &d);
			_uslub_fold_stats(s, &c);
		}
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	return 0;
}

void _uslub_pcpu_purge_init(void)
{
	_uslub_purge_register(pcpu_purge);
}

#else /* !USLUB_HAVE_RSEQ: per-thread sheaves only */

bool _uslub_pcpu_claim(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	(void)s;
	(void)c;
	return false;
}

void _uslub_pcpu_release(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	(void)s;
	(void)c;
}

void *_uslub_pcpu_alloc_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp)
{
	(void)s;
	(void)c;
	(void)gfp;
	return NULL;
}

bool _uslub_pcpu_free_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x)
{
	(void)s;
	(void)c;
	(void)x;
	return false;
}

void _uslub_pcpu_drain_cache(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	(void)s;
	(void)c;
}

void _uslub_pcpu_purge_init(void)
{
}

#endif
