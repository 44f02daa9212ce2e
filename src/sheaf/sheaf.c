/*
 * sheaf.c — per-CPU sheaves, the barn, and the prefill API (Linux 6.18).
 * The design, ownership rules and counters are in sheaf.h.
 *
 * Paths, with the counters each takes:
 *
 *   alloc: main (inline, cache/cache.h) -> spare, swapped in -> a full sheaf from
 *          the barn for the empty main (BARN_GET) -> refill main from slabs
 *          (BARN_GET_FAIL, SHEAF_REFILL) -> classic cpu slab (slub/cpu_slab.c)
 *   free:  main (inline) -> an empty spare, swapped in -> the full main to
 *          the barn for an empty one (BARN_PUT) -> barn full: flush main
 *          to slabs and reuse it (BARN_PUT_FAIL, SHEAF_FLUSH)
 *
 * Contexts: the alloc/free hooks and the prefill API run with no uslub
 * lock held and may allocate. flush_cpu, cache_shrink and cache_destroy
 * may run under thread_lock and slab_mutex (thread exit, destroy, the fork
 * child), for another thread's slot, on a thread without a cpu area: they
 * never allocate and free sheaf structs through a slot on the stack
 * (free_sheaf_locked()), which cannot recurse into thread_lock.
 */
#include "sheaf/sheaf.h"
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>


/* c->rcu_free while its owner appends (the end of this file) */
#define RCU_SHEAF_BUSY ((struct slab_sheaf *)1)

static inline size_t sheaf_bytes(unsigned int capacity)
{
	return SHEAF_HEADER_SIZE + (size_t)capacity * sizeof(void *);
}

unsigned int _uslub_sheaf_round_capacity(unsigned int capacity)
{
	capacity = MIN(capacity, SHEAF_MAX_OBJECTS);
	size_t bytes = sheaf_bytes(capacity), bucket = 1ul << SHEAF_BUCKET_MIN_SHIFT;
	while (bucket < bytes)
		bucket <<= 1;
	return (unsigned int)((bucket - SHEAF_HEADER_SIZE) / sizeof(void *));
}

static int home_node(void)
{
	int node = _uslub_home_node();
	return node >= 0 && node < _uslub_nr_nodes() ? node : 0;
}

/* An empty sheaf of @capacity for @s (the caller counts SHEAF_ALLOC). */
static struct slab_sheaf *alloc_sheaf(struct kmem_cache *s, unsigned int capacity,
				      bool oversize, uslub_gfp_t gfp)
{
	struct slab_sheaf *sheaf = _uslub_bucket_alloc(sheaf_bytes(capacity), gfp & USLUB_GFP_ATOMIC);
	if (unlikely(!sheaf))
		return NULL;
	INIT_LIST_HEAD(&sheaf->barn_list);
	sheaf->cache = s;
	sheaf->size = 0;
	sheaf->capacity = capacity;
	sheaf->node = home_node();
	sheaf->oversize = oversize;
	return sheaf;
}

/* Free a sheaf struct with no lock held (the caller counts SHEAF_FREE). */
static void free_sheaf(struct slab_sheaf *sheaf)
{
	_uslub_bucket_free(sheaf, sheaf_bytes(sheaf->capacity));
}

/* ... in any context (thread_lock may be held, no cpu area). */
static void free_sheaf_locked(struct slab_sheaf *sheaf)
{
	_uslub_bucket_free_locked(sheaf, sheaf_bytes(sheaf->capacity));
}

/* ------------------------------------------------------------------------
 * Moving objects between sheaves and slabs
 * ---------------------------------------------------------------------- */

/* Add between @min and @max objects from slabs; returns how many (0:
 * nothing taken, @min could not be had). */
static unsigned int refill_sheaf(struct kmem_cache *s, struct kmem_cache_cpu *c,
				 struct slab_sheaf *sheaf, unsigned int min, unsigned int max)
{
	if (!max)
		return 0;
	unsigned int n = _uslub_refill_objects(s, c, sheaf->objects + sheaf->size, min, max,
					       USLUB_NUMA_NO_NODE);
	sheaf->size += n;
	stat_add(c, SHEAF_REFILL, n);
	return n;
}

/* Give every object of @sheaf (out of any slot) back to its slab. */
static void flush_sheaf(struct kmem_cache *s, struct kmem_cache_cpu *c, struct slab_sheaf *sheaf)
{
	unsigned int n = sheaf->size;
	if (!n)
		return;
	_uslub_free_to_slabs(s, c, n, sheaf->objects);
	sheaf->size = 0;
	stat_add(c, SHEAF_FLUSH, n);
}

/* ------------------------------------------------------------------------
 * The barn (lock held only around list operations)
 * ---------------------------------------------------------------------- */
static inline struct node_barn *get_barn(const struct kmem_cache *s, int node)
{
	return s->barn[node];
}

static inline void barn_lock(struct node_barn *barn)
{
	uslub_mutex_lock(&barn->lock, RANK_BARN);
}

static inline void barn_unlock(struct node_barn *barn)
{
	uslub_mutex_unlock(&barn->lock, RANK_BARN);
}

static struct slab_sheaf *__barn_take(struct list_head *list, unsigned long *nr)
{
	if (list_empty(list))
		return NULL;
	struct slab_sheaf *sheaf = list_entry(list->next, struct slab_sheaf, barn_list);
	list_del(&sheaf->barn_list);
	WRITE_ONCE(*nr, *nr - 1);
	return sheaf;
}

static bool __barn_put(struct list_head *list, unsigned long *nr, unsigned long max,
		       struct slab_sheaf *sheaf)
{
	if (*nr >= max)
		return false;
	list_add(&sheaf->barn_list, list);
	WRITE_ONCE(*nr, *nr + 1);
	return true;
}

/* Take a sheaf off one of a barn's lists (full or empty); NULL if none. */
static struct slab_sheaf *barn_get(struct node_barn *barn, struct list_head *list,
				   unsigned long *nr)
{
	if (!READ_ONCE(*nr))
		return NULL;
	barn_lock(barn);
	struct slab_sheaf *sheaf = __barn_take(list, nr);
	barn_unlock(barn);
	return sheaf;
}

/* Put @sheaf (of @node) on one of a barn's lists unless it holds @max. */
static bool barn_put(struct node_barn *barn, struct list_head *list, unsigned long *nr,
		     unsigned long max, struct slab_sheaf *sheaf, int node)
{
	if (READ_ONCE(*nr) >= max)
		return false;
	sheaf->node = node;
	barn_lock(barn);
	bool put = __barn_put(list, nr, max, sheaf);
	barn_unlock(barn);
	return put;
}

#define barn_get_full(b)  barn_get(b, &(b)->full, &(b)->nr_full)
#define barn_get_empty(b) barn_get(b, &(b)->empty, &(b)->nr_empty)
#define barn_put_full(b, sheaf, node) \
	barn_put(b, &(b)->full, &(b)->nr_full, READ_ONCE((b)->max_full), sheaf, node)
#define barn_put_empty(b, sheaf, node) \
	barn_put(b, &(b)->empty, &(b)->nr_empty, barn_max_empty(b), sheaf, node)

/* ------------------------------------------------------------------------
 * The barn follows the swings
 *
 * A full sheaf the barn refuses (max_full reached) is flushed to its
 * slabs. A program that frees a wave of objects and then allocates it
 * again gets them back by refills: each object of the wave crosses the
 * slab layer twice per swing. So a refill from slabs (BARN_GET_FAIL)
 * less than USLUB_DECAY_MS after the barn refused a sheaf raises
 * max_full by one, up to barn_cap() (BARN_GROW_BYTES of objects, at most
 * BARN_GROW_SHEAVES sheaves): after a swing or two the whole wave fits,
 * and the slab layer is left alone. The barn keeps as many empty sheaves
 * as full ones, so that the next wave's puts allocate none.
 *
 * Memory goes back as any freed memory does: the page layer's purge pass
 * (its thread, or the allocation slow paths past the deadline) calls
 * barn_purge(), which puts max_full back to base_full once no raise
 * happened for USLUB_DECAY_MS (at once for uslub_trim()) and flushes the
 * sheaves above it; their slabs, emptied, go back to the page layer.
 * A program that allocates once and frees once (a burst) never raises
 * the limit: the refills came before the refusals. USLUB_DECAY_MS=0
 * (return memory at once) never raises it either.
 * ---------------------------------------------------------------------- */
#define BARN_GROW_BYTES   (16ul << 20)
#define BARN_GROW_SHEAVES 4096ul

static inline unsigned long barn_max_empty(struct node_barn *barn)
{
	return MAX((unsigned long)MAX_EMPTY_SHEAVES, READ_ONCE(barn->max_full));
}

static unsigned long barn_cap(const struct kmem_cache *s, const struct node_barn *barn)
{
	unsigned long sheaves = BARN_GROW_BYTES / ((unsigned long)s->sheaf_capacity * s->size);
	return MAX(barn->base_full, MIN(sheaves, BARN_GROW_SHEAVES));
}

/* The barn refused a full sheaf: it goes to the slabs. */
static void barn_refused(struct node_barn *barn)
{
	_uslub_swing_mark(&barn->refused_ns);
}

/* Main is refilled from slabs: if the barn refused a sheaf within the
 * decay, those objects are coming back. */
static void barn_refill_seen(struct kmem_cache *s, struct node_barn *barn)
{
	_uslub_swing_raise(&barn->max_full, &barn->raised_ns, &barn->refused_ns,
			   barn->base_full, barn_cap(s, barn));
}

/* An empty sheaf nobody holds any more: to its node's barn if there is
 * room, else freed. */
static void release_empty(struct kmem_cache *s, struct kmem_cache_cpu *c,
			  struct slab_sheaf *sheaf, bool locked)
{
	if (!sheaf->oversize && barn_put_empty(get_barn(s, sheaf->node), sheaf, sheaf->node))
		return;
	if (locked)
		free_sheaf_locked(sheaf);
	else
		free_sheaf(sheaf);
	stat(c, SHEAF_FREE);
}

/* ------------------------------------------------------------------------
 * Cache creation and destruction
 * ---------------------------------------------------------------------- */
static void free_barns(struct kmem_cache *s, bool locked)
{
	for (int i = 0; i < MAX_NUMNODES; i++) {
		struct node_barn *barn = s->barn[i];
		if (!barn)
			continue;
		s->barn[i] = NULL;
		pthread_mutex_destroy(&barn->lock);
		if (locked)
			_uslub_bucket_free_locked(barn, sizeof(*barn));
		else
			_uslub_bucket_free(barn, sizeof(*barn));
	}
}

void _uslub_sheaf_set_barn_limit(struct kmem_cache *s, unsigned int max_full)
{
	if (!s->sheaf_capacity)
		return;
	max_full = MAX(1u, MIN(max_full, (unsigned int)MAX_FULL_SHEAVES));
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		s->barn[i]->base_full = max_full;
		WRITE_ONCE(s->barn[i]->max_full, max_full);
	}
}

int _uslub_sheaf_cache_init(struct kmem_cache *s, unsigned int capacity)
{
	s->sheaf_capacity = 0;
	if (s->flags & SLAB_NO_SHEAVES)
		return 0;
	if (!capacity) {
		/* the 6.x model (per cache, or for all): sheaves only when asked */
		if ((s->flags & USLUB_CPU_SLAB) || _uslub_option(USLUB_OPT_CPU_SLABS) > 0)
			return 0;
		capacity = sheaf_default_capacity(s->object_size);
	}
	capacity = _uslub_sheaf_round_capacity(capacity);

	if (!_uslub_bucket_for(sizeof(struct node_barn)) ||
	    !_uslub_bucket_for(sheaf_bytes(capacity)))
		goto fail;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		struct node_barn *barn = _uslub_bucket_alloc(sizeof(*barn), 0);
		if (!barn)
			goto fail;
		pthread_mutex_init(&barn->lock, NULL);
		INIT_LIST_HEAD(&barn->full);
		INIT_LIST_HEAD(&barn->empty);
		barn->nr_full = barn->nr_empty = 0;
		barn->max_full = barn->base_full = MAX_FULL_SHEAVES;
		barn->refused_ns = barn->raised_ns = 0;
		s->barn[i] = barn;
	}
	s->sheaf_capacity = capacity;
	return 0;
fail:
	free_barns(s, false);
	errno = ENOMEM;
	return -1;
}

/* Move every entry of @from to @to (both heads, @to empty). */
static void list_move_all(struct list_head *from, struct list_head *to)
{
	if (list_empty(from))
		return;
	to->next = from->next;
	to->prev = from->prev;
	to->next->prev = to;
	to->prev->next = to;
	INIT_LIST_HEAD(from);
}

/* Sheaves taken off a barn (no lock held): the full ones flushed, all
 * freed (SHEAF_FREE). Returns how many were full. */
static int drop_sheaves(struct kmem_cache *s, struct kmem_cache_cpu *c, struct list_head *full,
			struct list_head *empty)
{
	struct list_head *pos, *tmp;
	int flushed = 0;
	list_for_each_safe(pos, tmp, full) {
		struct slab_sheaf *sheaf = list_entry(pos, struct slab_sheaf, barn_list);
		flush_sheaf(s, c, sheaf);
		free_sheaf_locked(sheaf);
		stat(c, SHEAF_FREE);
		flushed++;
	}
	list_for_each_safe(pos, tmp, empty) {
		free_sheaf_locked(list_entry(pos, struct slab_sheaf, barn_list));
		stat(c, SHEAF_FREE);
	}
	return flushed;
}

int _uslub_sheaf_cache_shrink(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	int flushed = 0;
	if (!s->sheaf_capacity)
		return 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		struct node_barn *barn = get_barn(s, i);
		struct list_head full, empty;
		INIT_LIST_HEAD(&full);
		INIT_LIST_HEAD(&empty);
		barn_lock(barn);
		list_move_all(&barn->full, &full);
		list_move_all(&barn->empty, &empty);
		WRITE_ONCE(barn->nr_full, 0);
		WRITE_ONCE(barn->nr_empty, 0);
		barn_unlock(barn);
		flushed += drop_sheaves(s, c, &full, &empty);
	}
	return flushed;
}

/*
 * The purge pass's lower (_uslub_swing_purge(), slab_mutex held): each
 * raised barn of @s, when due, goes back to base_full; the full sheaves
 * above it are flushed and the empty ones above MAX_EMPTY_SHEAVES freed.
 * A forced pass (uslub_trim(), malloc_trim(), a mapping refused for
 * want of memory) empties every barn, as kmem_cache_shrink() does: the
 * base_full sheaves a barn keeps hold objects of slabs spread over many
 * segments, and each such slab keeps its whole segment mapped.
 */
static void barns_lower(struct kmem_cache *s, struct kmem_cache_cpu *c, struct swing_pass *p)
{
	for (int i = 0; s->sheaf_capacity && i < _uslub_nr_nodes(); i++) {
		struct node_barn *barn = get_barn(s, i);
		if (p->force ? !READ_ONCE(barn->nr_full) && !READ_ONCE(barn->nr_empty)
			     : READ_ONCE(barn->max_full) <= barn->base_full ||
			       !_uslub_swing_due(p, READ_ONCE(barn->raised_ns)))
			continue;
		unsigned long keep_full = p->force ? 0 : barn->base_full;
		unsigned long keep_empty = p->force ? 0 : MAX_EMPTY_SHEAVES;
		struct list_head full, empty;
		INIT_LIST_HEAD(&full);
		INIT_LIST_HEAD(&empty);
		barn_lock(barn);
		WRITE_ONCE(barn->max_full, barn->base_full);
		WRITE_ONCE(barn->refused_ns, 0);
		while (barn->nr_full > keep_full)
			list_add(&__barn_take(&barn->full, &barn->nr_full)->barn_list, &full);
		while (barn->nr_empty > keep_empty)
			list_add(&__barn_take(&barn->empty, &barn->nr_empty)->barn_list, &empty);
		barn_unlock(barn);
		drop_sheaves(s, c, &full, &empty);
	}
}

/* The page layer's purge callback (its thread, a slow path past the
 * deadline, uslub_trim()): every raised barn lowered when due. Returns
 * 0: what it frees goes to the slabs, and the pages those give back are
 * counted by the page layer when it returns them to the OS. */
static size_t barn_purge(bool force, uint64_t *next)
{
	return _uslub_swing_purge(force, next, barns_lower);
}

void _uslub_sheaf_cache_destroy(struct kmem_cache *s)
{
	if (!s->barn[0])
		return;
	unsigned long full, empty;
	_uslub_sheaf_barn_counts(s, &full, &empty);
	if (full || empty)
		_uslub_report("uslub: %s: destroy found %lu full and %lu empty sheaves in the "
			      "barns (not shrunk first); they are leaked\n", s->name, full, empty);
	free_barns(s, true);
	s->sheaf_capacity = 0;
}

void _uslub_sheaf_barn_counts(const struct kmem_cache *s, unsigned long *full,
			      unsigned long *empty)
{
	*full = *empty = 0;
	if (!s->sheaf_capacity)
		return;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		*full += READ_ONCE(get_barn(s, i)->nr_full);
		*empty += READ_ONCE(get_barn(s, i)->nr_empty);
	}
}

unsigned long _uslub_sheaf_barn_limit(const struct kmem_cache *s)
{
	unsigned long limit = 0;
	for (int i = 0; s->sheaf_capacity && i < _uslub_nr_nodes(); i++)
		limit += READ_ONCE(get_barn(s, i)->max_full);
	return limit;
}

/* ------------------------------------------------------------------------
 * The per-CPU slow paths (the owner's slot, no lock held)
 * ---------------------------------------------------------------------- */

/* Push @x onto a sheaf with room: the object is stored before the size
 * that covers it, so a fork child never flushes a stale entry. */
static inline void sheaf_push(struct slab_sheaf *sheaf, void *x)
{
	sheaf->objects[sheaf->size] = x;
	barrier();
	sheaf->size++;
}

/* Make c->main hold at least one object; NULL if nothing could be had. */
static struct slab_sheaf *main_refill(struct kmem_cache *s, struct kmem_cache_cpu *c,
				      uslub_gfp_t gfp)
{
	struct slab_sheaf *main = c->main, *spare = c->spare;

	if (!sheaf_real(main)) {
		main = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (!main)
			return NULL;
		stat(c, SHEAF_ALLOC);
		WRITE_ONCE(c->main, main);
	}
	if (main->size)
		return main;
	if (spare && spare->size) {
		cpu_sheaves_swap(c, main, spare);
		return spare;
	}

	/* Exchange the empty main for a full sheaf of the barn: out of the
	 * slot before the barn can see it, the full one installed after. */
	int node = home_node();
	struct node_barn *barn = get_barn(s, node);
	struct slab_sheaf *full = NULL;
	bool given = false;
	if (READ_ONCE(barn->nr_full)) {
		WRITE_ONCE(c->main, EMPTY_SHEAF);
		barrier();
		main->node = node;
		barn_lock(barn);
		full = __barn_take(&barn->full, &barn->nr_full);
		if (full)
			given = __barn_put(&barn->empty, &barn->nr_empty, barn_max_empty(barn), main);
		barn_unlock(barn);
		if (!full)
			WRITE_ONCE(c->main, main);
	}
	if (full) {
		stat(c, BARN_GET);
		if (!given) {
			if (!c->spare) {
				WRITE_ONCE(c->spare, main);
			} else {
				free_sheaf(main);
				stat(c, SHEAF_FREE);
			}
		}
		WRITE_ONCE(c->main, full);
		return full;
	}

	stat(c, BARN_GET_FAIL);
	barn_refill_seen(s, barn);
	if (!refill_sheaf(s, c, main, 1, main->capacity))
		return NULL;
	return main;
}

void *_uslub_sheaf_alloc_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, uslub_gfp_t gfp)
{
	if (!s->sheaf_capacity)
		return NULL;
	if (unlikely(pcpu_slot(s, c)))          /* per-CPU mode (pcpu.c) */
		return _uslub_pcpu_alloc_slow(s, c, gfp);
	struct slab_sheaf *main = main_refill(s, c, gfp);
	if (!main)
		return NULL;
	stat_pcs_slow(c, 1);
	return main->objects[--main->size];
}

/* Make c->main have room for at least one object; NULL if it cannot. */
static struct slab_sheaf *main_make_room(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	const uslub_gfp_t gfp = USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN;
	struct slab_sheaf *main = c->main, *spare = c->spare;

	if (!sheaf_real(main)) {
		main = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (!main)
			return NULL;
		stat(c, SHEAF_ALLOC);
		WRITE_ONCE(c->main, main);
	}
	if (main->size < main->capacity)
		return main;
	if (!spare || !spare->size) {
		if (!spare) {
			spare = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
			if (!spare)
				goto to_barn;
			stat(c, SHEAF_ALLOC);
		}
		cpu_sheaves_swap(c, main, spare);
		return spare;
	}

to_barn:
	/* The full main to the barn for an empty sheaf; out of the slot
	 * first, since the barn hands it to other threads at once. */
	WRITE_ONCE(c->main, EMPTY_SHEAF);
	barrier();
	int node = home_node();
	struct node_barn *barn = get_barn(s, node);
	struct slab_sheaf *empty = NULL;
	bool put = false;
	main->node = node;
	barn_lock(barn);
	put = __barn_put(&barn->full, &barn->nr_full, READ_ONCE(barn->max_full), main);
	if (put)
		empty = __barn_take(&barn->empty, &barn->nr_empty);
	barn_unlock(barn);

	if (!put) {
		stat(c, BARN_PUT_FAIL);
		barn_refused(barn);
		flush_sheaf(s, c, main);
		WRITE_ONCE(c->main, main);
		return main;
	}
	stat(c, BARN_PUT);
	if (!empty) {
		empty = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (!empty)
			return NULL;          /* main stays empty until the next free */
		stat(c, SHEAF_ALLOC);
	}
	WRITE_ONCE(c->main, empty);
	return empty;
}

bool _uslub_sheaf_free_slow(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x)
{
	if (!s->sheaf_capacity)
		return false;
	if (unlikely(pcpu_slot(s, c)))          /* per-CPU mode (pcpu.c) */
		return _uslub_pcpu_free_slow(s, c, x);
	struct slab_sheaf *main = main_make_room(s, c);
	if (!main)
		return false;
	sheaf_push(main, x);
	stat(c, FREE_PCS);
	return true;
}

/*
 * Flush a slot's sheaves (thread exit, uslub_flush_thread, shrink, destroy,
 * the fork child): both leave the slot first, their objects go back to the
 * slabs, the empty structs to the barn or freed. Never allocates. Run by
 * _uslub_flush_cpu() (registered at init).
 */
/*
 * A thread that exits leaves its sheaves' objects to the next thread, not
 * to the slabs (each flushed object costs a slab lookup and a freelist
 * push: ~160,000 instructions per exiting thread in a program of short
 * threads): a full sheaf goes to its node's barn where the barn has room
 * (a lock and a list add). A partial sheaf or one the barn refuses is
 * flushed as before (the free path's spare is always full, so a thread
 * that ends freeing keeps one sheaf at least). false: @sheaf is still
 * the caller's.
 */
static bool exit_keep(struct kmem_cache *s, struct kmem_cache_cpu *c, struct slab_sheaf *sheaf)
{
	if (sheaf->oversize || sheaf->size != sheaf->capacity ||
	    !barn_put_full(get_barn(s, sheaf->node), sheaf, sheaf->node))
		return false;
	stat(c, BARN_PUT);
	return true;
}

void _uslub_sheaf_give_back(struct kmem_cache *s, struct kmem_cache_cpu *c,
			    struct slab_sheaf *sheaf, bool locked)
{
	if (exit_keep(s, c, sheaf))
		return;
	flush_sheaf(s, c, sheaf);
	release_empty(s, c, sheaf, locked);
}

static void sheaf_flush_cpu(struct kmem_cache *s, struct kmem_cache_cpu *c, bool exiting)
{
	_uslub_sheaf_rcu_flush(s, c, false);
	/* BUSY here: a thread a fork child lost half-way through an append
	 * (the others are the caller itself or quiescent): its sheaf leaks,
	 * the slot is made usable */
	if (__atomic_load_n(&c->rcu_free, __ATOMIC_RELAXED) == RCU_SHEAF_BUSY)
		__atomic_store_n(&c->rcu_free, NULL, __ATOMIC_RELAXED);
	struct slab_sheaf *sheaves[2] = { c->main, c->spare };
	if (!sheaf_real(sheaves[0]) && !sheaves[1])
		return;
	WRITE_ONCE(c->main, EMPTY_SHEAF);
	WRITE_ONCE(c->spare, NULL);
	barrier();
	for (int i = 0; i < 2; i++) {
		if (!sheaf_real(sheaves[i]))
			continue;
		if (exiting && exit_keep(s, c, sheaves[i]))
			continue;
		flush_sheaf(s, c, sheaves[i]);
		release_empty(s, c, sheaves[i], true);
	}
}

/* ------------------------------------------------------------------------
 * fork: every barn lock across fork(), a batch nested in slab_mutex
 * (taken before; the list_locks after)
 * ---------------------------------------------------------------------- */
static void barn_prefork(void)
{
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		if (s->sheaf_capacity)
			for (int i = 0; i < _uslub_nr_nodes(); i++)
				uslub_mutex_lock_nest(&get_barn(s, i)->lock, RANK_BARN,
						      RANK_SLAB_MUTEX);
	}
}

static void barn_postfork_parent(void)
{
	struct kmem_cache *s;
	list_for_each_entry_reverse(s, &_uslub_slab_caches, list) {
		if (s->sheaf_capacity)
			for (int i = _uslub_nr_nodes() - 1; i >= 0; i--)
				uslub_mutex_unlock_nest(&get_barn(s, i)->lock, RANK_BARN);
	}
}

static void barn_postfork_child(void)
{
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		if (s->sheaf_capacity)
			for (int i = 0; i < _uslub_nr_nodes(); i++)
				uslub_mutex_reset_nest(&get_barn(s, i)->lock, RANK_BARN);
	}
}

void _uslub_sheaf_lifecycle_init(void)
{
	static const struct uslub_lifecycle e = {
		.name = "barn.lock",
		.rank = RANK_BARN,
		.prefork = barn_prefork,
		.postfork_parent = barn_postfork_parent,
		.postfork_child = barn_postfork_child,
	};
	_uslub_lifecycle_register(&e);
	_uslub_register_sheaf_flush(sheaf_flush_cpu);
	_uslub_purge_register(barn_purge);
	_uslub_pcpu_purge_init();       /* after: its pass runs first */
	_uslub_register_pcpu_drain(_uslub_pcpu_drain_cache);
}

/* ------------------------------------------------------------------------
 * Prefilled sheaves (kmem_cache_prefill_sheaf and friends)
 * ---------------------------------------------------------------------- */

/* The calling thread's slot, or one on the stack for a thread without a
 * cpu area (then no spare is used, and put_cpu() folds it). */
struct cpu_ref {
	struct kmem_cache_cpu *c;
	bool real;
	bool claimed;                /* per-CPU mode: the id's sheaves in c */
	struct kmem_cache_cpu tmp;
};

static void get_cpu(struct kmem_cache *s, struct cpu_ref *ref)
{
	ref->real = this_cpu_is_real() || _uslub_thread_init();
	ref->claimed = false;
	if (ref->real) {
		ref->c = this_cpu(s);
		ref->claimed = _uslub_pcpu_claim(s, ref->c);
	} else {
		memset(&ref->tmp, 0, sizeof(ref->tmp));
		ref->c = &ref->tmp;
	}
}

static void put_cpu(struct kmem_cache *s, struct cpu_ref *ref)
{
	if (ref->claimed)
		_uslub_pcpu_release(s, ref->c);
	if (!ref->real)
		_uslub_flush_cpu(s, &ref->tmp);
}

static __cold bool bad_sheaf(const struct kmem_cache *s, const struct slab_sheaf *sheaf,
			     const char *fn)
{
	if (!s)
		_uslub_report_error("uslub: %s: NULL cache; ignored\n", fn);
	else if (READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD)
		_uslub_bad_cache(s, fn);
	else if (!sheaf)
		_uslub_report_error("uslub: %s: %s: NULL sheaf; ignored\n", s->name, fn);
	else if (!_uslub_owns_segment(sheaf))
		_uslub_report_error("uslub: %s: %s: %p is not a sheaf (not uslub memory); "
				    "ignored\n", s->name, fn, (const void *)sheaf);
	else
		_uslub_report_error("uslub: %s: %s: sheaf %p belongs to cache %s; ignored\n",
				    s->name, fn, (const void *)sheaf,
				    sheaf->cache ? sheaf->cache->name : "(none)");
	return true;
}

static inline bool sheaf_ok(const struct kmem_cache *s, const struct slab_sheaf *sheaf)
{
	return likely(s && !(READ_ONCE(s->fastpath_off) & FASTPATH_OFF_DEAD) && sheaf &&
		      _uslub_owns_segment(sheaf) && sheaf->cache == s);
}

static void nofail_wait(void)
{
	struct timespec ts = { 0, 1000000 };
	nanosleep(&ts, NULL);
}

static bool oversize_fits(unsigned int size)
{
	return size <= SHEAF_MAX_OBJECTS;
}

/* A sheaf of exactly @size objects, freed again on return. */
static struct slab_sheaf *prefill_oversize(struct kmem_cache *s, struct kmem_cache_cpu *c,
					   uslub_gfp_t gfp, unsigned int size)
{
	struct slab_sheaf *sheaf = alloc_sheaf(s, size, true, gfp);
	if (!sheaf)
		return NULL;
	stat(c, SHEAF_ALLOC);
	if (size && refill_sheaf(s, c, sheaf, size, size) != size) {
		free_sheaf(sheaf);
		stat(c, SHEAF_FREE);
		return NULL;
	}
	stat(c, SHEAF_PREFILL_OVERSIZE);
	return sheaf;
}

static struct slab_sheaf *prefill(struct kmem_cache *s, struct cpu_ref *ref, uslub_gfp_t gfp,
				  unsigned int size)
{
	struct kmem_cache_cpu *c = ref->c;
	if (!s->sheaf_capacity || size > s->sheaf_capacity)
		return prefill_oversize(s, c, gfp, size);

	struct slab_sheaf *sheaf = ref->real ? c->spare : NULL;
	if (sheaf && sheaf->size >= size) {
		WRITE_ONCE(c->spare, NULL);
		stat(c, SHEAF_PREFILL_FAST);
		return sheaf;
	}
	struct node_barn *barn = get_barn(s, home_node());
	sheaf = barn_get_full(barn);
	if (sheaf) {
		stat(c, BARN_GET);
		stat(c, SHEAF_PREFILL_FAST);
		return sheaf;
	}
	stat(c, BARN_GET_FAIL);

	sheaf = barn_get_empty(barn);
	if (!sheaf) {
		sheaf = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (!sheaf)
			return NULL;
		stat(c, SHEAF_ALLOC);
	}
	if (!refill_sheaf(s, c, sheaf, size, sheaf->capacity) && size) {
		release_empty(s, c, sheaf, false);
		return NULL;
	}
	stat(c, SHEAF_PREFILL_SLOW);
	return sheaf;
}

__public struct uslub_sheaf *uslub_cache_prefill_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
						       unsigned int size)
{
	if (unlikely(cache_bad(s, __func__)))
		return NULL;
	if (size > s->sheaf_capacity && !oversize_fits(size)) {
		errno = EINVAL;
		return NULL;
	}
	if (unlikely(failslab(s, gfp, size)))
		return NULL;
	struct cpu_ref ref;
	struct slab_sheaf *sheaf;
	get_cpu(s, &ref);
	while (!(sheaf = prefill(s, &ref, gfp, size)) && (gfp & USLUB_GFP_NOFAIL))
		nofail_wait();
	put_cpu(s, &ref);
	if (!sheaf)
		errno = ENOMEM;
	return (struct uslub_sheaf *)sheaf;
}

/* The prefill API's pop (uslub_cache_alloc_from_sheaf(), cache/api.c,
 * which runs the post-allocation hook on it). */
void *_uslub_sheaf_pop_prefilled(struct kmem_cache *s, struct slab_sheaf *sheaf, const char *fn)
{
	if (unlikely(!sheaf_ok(s, sheaf))) {
		bad_sheaf(s, sheaf, fn);
		return NULL;
	}
	if (!sheaf->size)
		return NULL;
	void *obj = sheaf->objects[--sheaf->size];
	if (!kmem_cache_debug(s))
		free_mark_clear(s, obj);
	return obj;
}

/* Take back a sheaf: the spare if there is none, else full into the barn,
 * else its objects back to the slabs. */
static void return_sheaf(struct kmem_cache *s, struct cpu_ref *ref, struct slab_sheaf *sheaf)
{
	struct kmem_cache_cpu *c = ref->c;
	unsigned int cap = s->sheaf_capacity;

	if (sheaf->oversize || !cap)
		goto slow;
	if (ref->real && !c->spare) {
		WRITE_ONCE(c->spare, sheaf);
		stat(c, SHEAF_RETURN_FAST);
		return;
	}
	int node = home_node();
	struct node_barn *barn = get_barn(s, node);
	if (READ_ONCE(barn->nr_full) < READ_ONCE(barn->max_full)) {
		unsigned int want = cap - sheaf->size;
		if (!want || refill_sheaf(s, c, sheaf, want, want) == want) {
			if (barn_put_full(barn, sheaf, node)) {
				stat(c, BARN_PUT);
				stat(c, SHEAF_RETURN_FAST);
				return;
			}
		}
	}
slow:
	flush_sheaf(s, c, sheaf);
	free_sheaf(sheaf);
	stat(c, SHEAF_FREE);
	stat(c, SHEAF_RETURN_SLOW);
}

__public void uslub_cache_return_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
				       struct uslub_sheaf *usheaf)
{
	struct slab_sheaf *sheaf = (struct slab_sheaf *)usheaf;
	if (unlikely(!sheaf_ok(s, sheaf))) {
		bad_sheaf(s, sheaf, __func__);
		return;
	}
	struct cpu_ref ref;
	get_cpu(s, &ref);
	return_sheaf(s, &ref, sheaf);
	put_cpu(s, &ref);
}

__public int uslub_cache_refill_sheaf(struct kmem_cache *s, uslub_gfp_t gfp,
				      struct uslub_sheaf **sheafp, unsigned int size)
{
	struct slab_sheaf *sheaf = sheafp ? (struct slab_sheaf *)*sheafp : NULL;
	if (unlikely(!sheaf_ok(s, sheaf))) {
		bad_sheaf(s, sheaf, __func__);
		errno = EINVAL;
		return -EINVAL;
	}
	if (sheaf->size >= size)
		return 0;
	bool in_place = !sheaf->oversize && size <= s->sheaf_capacity;
	if (!in_place && !oversize_fits(size)) {
		errno = EINVAL;
		return -EINVAL;
	}
	/* fault injection as for a prefill of what the call must get: the
	 * missing objects in place, a whole new sheaf otherwise */
	if (unlikely(failslab(s, gfp, in_place ? size - sheaf->size : size))) {
		errno = ENOMEM;
		return -ENOMEM;
	}

	struct cpu_ref ref;
	int ret = 0;
	get_cpu(s, &ref);
	if (in_place) {
		/* in place, up to capacity */
		while (!refill_sheaf(s, ref.c, sheaf, size - sheaf->size,
				     sheaf->capacity - sheaf->size)) {
			if (!(gfp & USLUB_GFP_NOFAIL)) {
				ret = -ENOMEM;
				break;
			}
			nofail_wait();
		}
	} else {
		/* a new sheaf of @size; the old one is returned */
		struct slab_sheaf *fresh;
		while (!(fresh = prefill(s, &ref, gfp, size)) && (gfp & USLUB_GFP_NOFAIL))
			nofail_wait();
		if (fresh) {
			return_sheaf(s, &ref, sheaf);
			*sheafp = (struct uslub_sheaf *)fresh;
		} else {
			ret = -ENOMEM;
		}
	}
	put_cpu(s, &ref);
	if (ret)
		errno = -ret;
	return ret;
}

__public unsigned int uslub_cache_sheaf_size(const struct uslub_sheaf *usheaf)
{
	const struct slab_sheaf *sheaf = (const struct slab_sheaf *)usheaf;
	return sheaf ? sheaf->size : 0;
}

__public unsigned int uslub_cache_sheaf_capacity(const struct kmem_cache *s)
{
	return s ? s->sheaf_capacity : 0;
}

/* ------------------------------------------------------------------------
 * Whole-sheaf exchanges for the bulk API (cache/bulk.c)
 *
 * The bulk paths move objects between p[] and c->main inline; these take
 * over once per sheaf, when main is empty (alloc) or full (free), and
 * exchange whole sheaves with the spare and the barn instead of falling
 * back to one object at a time. The slot changes are made with the barn
 * lock held: fork takes every barn lock, so a fork child never sees the
 * slot half-way, and no sheaf is in two places at any instant.
 * ---------------------------------------------------------------------- */

/*
 * Make c->main hold objects for a bulk allocation: the spare if it has
 * any, else a full sheaf of the barn for the empty main (BARN_GET; the
 * empty one becomes the spare if there is none, else goes to the barn's
 * empty list, else is freed). Returns the new main, or NULL when main is
 * not a real empty sheaf or the barn has no full one (nothing changed,
 * nothing counted: the caller's one-object slow path refills from slabs
 * and counts BARN_GET_FAIL).
 */
struct slab_sheaf *_uslub_pcs_replace_empty_main(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	struct slab_sheaf *empty = c->main, *spare = c->spare, *full;
	if (!sheaf_real(empty) || empty->size)
		return NULL;
	if (sheaf_real(spare) && spare->size) {
		cpu_sheaves_swap(c, empty, spare);
		return spare;
	}
	int node = home_node();
	struct node_barn *barn = get_barn(s, node);
	if (!READ_ONCE(barn->nr_full))
		return NULL;
	bool kept = true;
	barn_lock(barn);
	full = __barn_take(&barn->full, &barn->nr_full);
	if (full) {
		WRITE_ONCE(c->main, full);
		if (!spare) {
			WRITE_ONCE(c->spare, empty);
		} else {
			empty->node = node;
			kept = __barn_put(&barn->empty, &barn->nr_empty, barn_max_empty(barn), empty);
		}
	}
	barn_unlock(barn);
	if (!full)
		return NULL;
	stat(c, BARN_GET);
	if (!kept) {
		free_sheaf(empty);
		stat(c, SHEAF_FREE);
	}
	return full;
}

/*
 * Make c->main have room for a bulk free: a new main if there is none,
 * the spare if it has room (a new empty spare if there is none), else the
 * full main to the barn for an empty sheaf (BARN_PUT; an empty of the
 * barn, or a new one). Returns the new main, or NULL when the barn's full
 * list is at its limit (BARN_PUT_FAIL) or no sheaf could be had: the slot
 * keeps what it had and the caller gives the rest to the slabs.
 */
struct slab_sheaf *_uslub_pcs_replace_full_main(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	const uslub_gfp_t gfp = USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN;
	struct slab_sheaf *full = c->main, *spare = c->spare, *empty = NULL, *fresh = NULL;

	if (!sheaf_real(full)) {
		full = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (!full)
			return NULL;
		stat(c, SHEAF_ALLOC);
		WRITE_ONCE(c->main, full);
	}
	if (full->size < full->capacity)
		return full;
	if (!spare) {
		spare = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (spare) {
			stat(c, SHEAF_ALLOC);
			cpu_sheaves_swap(c, full, spare);
			return spare;
		}
	} else if (sheaf_real(spare) && spare->size < spare->capacity) {
		cpu_sheaves_swap(c, full, spare);
		return spare;
	}

	int node = home_node();
	struct node_barn *barn = get_barn(s, node);
	if (READ_ONCE(barn->nr_full) >= READ_ONCE(barn->max_full)) {
		stat(c, BARN_PUT_FAIL);
		barn_refused(barn);
		return NULL;
	}
	if (!READ_ONCE(barn->nr_empty)) {
		fresh = alloc_sheaf(s, s->sheaf_capacity, false, gfp);
		if (!fresh)
			return NULL;
		stat(c, SHEAF_ALLOC);
	}
	bool full_list_full = true;
	full->node = node;
	barn_lock(barn);
	if (barn->nr_full < READ_ONCE(barn->max_full)) {
		full_list_full = false;
		empty = fresh ? fresh : __barn_take(&barn->empty, &barn->nr_empty);
		if (empty) {
			__barn_put(&barn->full, &barn->nr_full, READ_ONCE(barn->max_full), full);
			WRITE_ONCE(c->main, empty);
			fresh = NULL;
		}
	}
	barn_unlock(barn);
	if (fresh)
		release_empty(s, c, fresh, false);     /* the barn filled up meanwhile */
	if (!empty) {
		if (full_list_full) {
			stat(c, BARN_PUT_FAIL);
			barn_refused(barn);
		}
		return NULL;
	}
	stat(c, BARN_PUT);
	return empty;
}

/* ------------------------------------------------------------------------
 * kfree_rcu's rcu_free sheaf (Linux 6.18): objects wait in the slot's
 * rcu_free sheaf; a full one goes to the grace-period provider whole (one
 * call_rcu), and after its grace period its objects are free objects in a
 * full sheaf: into the barn, or flushed to the slabs.
 *
 * c->rcu_free is the one slot field other threads take (a barrier, with
 * every thread's slot): the owner exchanges it for RCU_SHEAF_BUSY while it
 * appends (no lock, no call, no allocation inside), and stores it back; a
 * taker CASes a real sheaf to NULL, waiting out BUSY (or leaving it, when
 * the owner may be gone: thread exit is the owner itself, a fork child's
 * lost thread leaks it). So a sheaf is handed to the provider once, by
 * whoever took it out of the slot.
 * ---------------------------------------------------------------------- */
/* After the grace period (the provider's callback thread, no lock held):
 * the objects become free (the free mark; a double kfree_rcu reported and
 * dropped), then the sheaf goes to the barn of the node it was filled on
 * as a full sheaf, or is flushed and kept as an empty one. */
static void rcu_free_sheaf(struct uslub_rcu_head *head)
{
	gp_callback_begin();
	struct slab_sheaf *sheaf = container_of(head, struct slab_sheaf, rcu_head);
	struct kmem_cache *s = sheaf->cache;
	struct cpu_ref ref;
	get_cpu(s, &ref);
	struct kmem_cache_cpu *c = ref.c;
	unsigned int n = 0;
	for (unsigned int i = 0; i < sheaf->size; i++) {
		void *x = sheaf->objects[i];
		if (i + 8 < sheaf->size)        /* the objects are cold by now */
			__builtin_prefetch((char *)sheaf->objects[i + 8] + s->free_mark_offset, 1);
		struct slab *slab = virt_to_slab(x);
		uintptr_t mark = slab_free_mark(s, slab);
		if (free_mark_test(s, x, mark)) {
			_uslub_report_double_free(s, slab, x);
			continue;
		}
		if (cache_kasan(s))      /* poisoned before it is published */
			_uslub_kasan_slab_free(s, x);
		free_mark_set(s, x, mark);
		sheaf->objects[n++] = x;
	}
	sheaf->size = n;
	stat_add(c, FREE_RCU_SHEAF, n);
	INIT_LIST_HEAD(&sheaf->barn_list);
	if (n == sheaf->capacity && barn_put_full(get_barn(s, sheaf->node), sheaf, sheaf->node)) {
		stat(c, BARN_PUT);
	} else {
		flush_sheaf(s, c, sheaf);
		release_empty(s, c, sheaf, false);
	}
	put_cpu(s, &ref);
	gp_callback_end();
}

static void rcu_sheaf_submit(struct slab_sheaf *sheaf)
{
	_uslub_gp_defer(&sheaf->rcu_head, rcu_free_sheaf);
}

/* Someone else's (or a flush's) take of a slot's rcu_free sheaf. */
static struct slab_sheaf *rcu_sheaf_steal(struct kmem_cache_cpu *c, bool wait)
{
	struct slab_sheaf *cur = __atomic_load_n(&c->rcu_free, __ATOMIC_ACQUIRE);
	for (;;) {
		if (!cur)
			return NULL;
		if (cur == RCU_SHEAF_BUSY) {
			if (!wait)
				return NULL;
			sched_yield();
			cur = __atomic_load_n(&c->rcu_free, __ATOMIC_ACQUIRE);
			continue;
		}
		if (__atomic_compare_exchange_n(&c->rcu_free, &cur, NULL, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return cur;
	}
}

void _uslub_sheaf_rcu_flush(struct kmem_cache *s, struct kmem_cache_cpu *c, bool wait)
{
	struct slab_sheaf *sheaf = rcu_sheaf_steal(c, wait);
	if (sheaf)
		rcu_sheaf_submit(sheaf);
}

bool _uslub_sheaf_free_rcu(struct kmem_cache *s, struct kmem_cache_cpu *c, void *x)
{
	struct slab_sheaf *fresh = NULL;
	if (!s->sheaf_capacity)
		return false;
	for (;;) {
		if (!fresh && !__atomic_load_n(&c->rcu_free, __ATOMIC_ACQUIRE)) {
			/* a sheaf to start with, before the slot is BUSY */
			int node = home_node();
			fresh = barn_get_empty(get_barn(s, node));
			if (!fresh) {
				fresh = alloc_sheaf(s, s->sheaf_capacity, false,
						    USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN);
				if (!fresh)
					return false;
				stat(c, SHEAF_ALLOC);
			}
			fresh->node = node;
		}
		struct slab_sheaf *sheaf = __atomic_exchange_n(&c->rcu_free, RCU_SHEAF_BUSY,
							       __ATOMIC_ACQUIRE);
		if (!sheaf) {
			if (!fresh) {           /* taken by a barrier since we looked */
				__atomic_store_n(&c->rcu_free, NULL, __ATOMIC_RELEASE);
				continue;
			}
			sheaf = fresh;
			fresh = NULL;
		}
		sheaf->objects[sheaf->size++] = x;
		bool full = sheaf->size == sheaf->capacity;
		__atomic_store_n(&c->rcu_free, full ? NULL : sheaf, __ATOMIC_RELEASE);
		if (fresh)
			release_empty(s, c, fresh, false);
		if (full)
			rcu_sheaf_submit(sheaf);
		return true;
	}
}
