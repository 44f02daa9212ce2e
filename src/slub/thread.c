/*
 * The per-CPU layer's "CPUs": one cpu area per thread (default mode).
 *
 * A cpu area is an mmap'd header page (struct uslub_thread) followed by
 * USLUB_MAX_CACHES slots of CPU_SLOT_SIZE bytes, one struct kmem_cache_cpu
 * per cache at s->cpu_offset. Until its first slow path a thread points at
 * _uslub_cpu_empty, an area in .bss that only cache creation writes (each
 * used slot's main points at the empty sheaf): its sheaves are empty, its
 * freelists NULL and its slabs never match, so both fast paths fall into
 * their slow paths, which give the thread a real area. Only the pages of
 * an area that hold used slots are ever touched.
 *
 * Thread exit (pthread key destructor) flushes every cache's cpu slab and
 * cpu partial slabs, folds the counters into the caches, and parks the area
 * on free_areas for the next thread; later frees and allocations from that
 * thread (glibc frees TLS after destructors run) take the slow paths with a
 * cpu slot on the stack (THREAD_DEAD).
 */
#define _GNU_SOURCE
#include "slub/slub.h"
#include "base/lifecycle.h"
#include "base/rseq.h"
#include <sys/mman.h>
#include <unistd.h>

#define THREAD_HDR_SIZE PAGE_SIZE

struct cpu_empty_area _uslub_cpu_empty_area __attribute__((aligned(4096)));
static_assert(offsetof(struct cpu_empty_area, area) % 4096 == 0, "the sentinel area is page aligned");
static_assert(sizeof(struct uslub_thread) <= THREAD_HDR_SIZE, "the thread header fits its page");
__thread struct uslub_tls _uslub_tls __tls_ie = { .cpu_base = _uslub_cpu_empty,
						    .last_slot = CPU_SLOT_NONE };

pthread_mutex_t _uslub_thread_lock = PTHREAD_MUTEX_INITIALIZER;
struct list_head _uslub_threads = LIST_HEAD_INIT(_uslub_threads);
static struct list_head free_areas = LIST_HEAD_INIT(free_areas);  /* thread_lock */
static unsigned long thread_seq;                                   /* thread_lock */

/* The stand-in main sheaf of every cpu slot without a real one. */
const struct slab_sheaf _uslub_empty_sheaf = { .node = -1 };

static pthread_key_t thread_key;

static void thread_exit(void *arg);
static const struct uslub_lifecycle thread_lifecycle;

/* From the init order (init.c): thread_lock's lifecycle entry, then (after
 * the other layers' entries) the key whose destructor is thread exit. */
void _uslub_thread_lifecycle_init(void)
{
	_uslub_lifecycle_register(&thread_lifecycle);
}

void _uslub_thread_key_init(void)
{
	pthread_key_create(&thread_key, thread_exit);
}

struct kmem_cache_cpu *_uslub_thread_cpu(struct uslub_thread *t, const struct kmem_cache *s)
{
	return (struct kmem_cache_cpu *)(t->cpu_base + s->cpu_offset);
}

bool _uslub_thread_init(void)
{
	if (_uslub_tls.state == THREAD_ACTIVE)
		return true;
	if (_uslub_tls.state == THREAD_DEAD)
		return false;
	_uslub_init();

	struct uslub_thread *t = NULL;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	if (!list_empty(&free_areas)) {
		t = list_entry(free_areas.next, struct uslub_thread, link);
		list_del(&t->link);
	} else {
		/* out of address space, it gives back what uslub keeps
		 * unused first (the page layer's locks rank above this one) */
		void *p = _uslub_page_map(THREAD_HDR_SIZE + CPU_AREA_SIZE);
		if (p) {
			t = p;
			t->cpu_base = (char *)p + THREAD_HDR_SIZE;
		}
	}
	if (!t) {
		uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
		return false;
	}
	_uslub_cpu_area_init(t->cpu_base);
	int nodes = _uslub_nr_nodes();
	t->node = _uslub_option(USLUB_OPT_FAKE_NODES) ? (int)(thread_seq % (unsigned long)nodes)
						       : _uslub_numa_node_of_cpu();
	thread_seq++;
	list_add_tail(&t->link, &_uslub_threads);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);

	_uslub_tls.thread = t;
	if (_uslub_pcpu && _uslub_rseq_thread_ok()) {
		/* per-CPU mode: the id's sections (glibc registered this
		 * thread; one it could not register stays per thread) */
		const struct uslub_rseq_info *ri = _uslub_rseq_info();
		_uslub_tls.rseq_area = uslub_rseq_area(ri);
		_uslub_tls.pcpu_idp = (const unsigned int *)(_uslub_tls.rseq_area + ri->id_offset);
	}
	_uslub_tls.cpu_base = t->cpu_base;
	_uslub_tls.state = THREAD_ACTIVE;
	pthread_setspecific(thread_key, t);
	/* a thread's first slow path: the page layer learns whether the
	 * program has threads of its own (its purge thread's auto mode) */
	_uslub_purge_note_thread();
	return true;
}

void _uslub_for_each_cpu_area(void (*fn)(char *cpu_base, void *arg), void *arg)
{
	struct uslub_thread *t;
	fn(_uslub_cpu_empty, arg);
	list_for_each_entry(t, &_uslub_threads, link)
		fn(t->cpu_base, arg);
	list_for_each_entry(t, &free_areas, link)
		fn(t->cpu_base, arg);
}

/* Flush every cache's cpu state of @t (thread_lock held); @exiting: @t
 * exits (its full sheaves may go to the barns); @ids: per-CPU mode's
 * ids too (uslub_flush_thread(): a thread's sheaves are its ids'). */
static void flush_thread_locked(struct uslub_thread *t, bool exiting, bool ids)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		struct kmem_cache_cpu *c = _uslub_thread_cpu(t, s);
		if (exiting)
			_uslub_flush_cpu_exit(s, c);
		else
			_uslub_flush_cpu(s, c);
		if (ids && _uslub_pcpu) {
			_uslub_pcpu_drain_ids(s, c);
			_uslub_fold_stats(s, c);
		}
	}
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

/* The key destructor: every layer's thread_exit in rank order (the
 * extension layer's, with no lock held, then thread_exit_locked()). */
static void thread_exit(void *arg)
{
	_uslub_lifecycle_thread_exit(arg);
	_uslub_tls.cpu_base = _uslub_cpu_empty;
	_uslub_tls.last_slot = CPU_SLOT_NONE;   /* the area goes to another thread */
	_uslub_tls.thread = NULL;
	_uslub_tls.rseq_area = NULL;            /* no section after exit */
	_uslub_tls.state = THREAD_DEAD;
	_uslub_gp_drain();      /* the thread's rcu_free sheaves (rcu.c) */
	/* last: the purge thread may go with the program's last thread */
	_uslub_purge_note_thread_exit();
}

/* The other layers' folds (the ext layer's tag counters) and the flush of
 * every cache's cpu slot are one step under thread_lock (a report holding
 * it never sees a thread's counters in both places): the table's
 * thread_fold callbacks, then the flush. */
static void thread_exit_locked(void *arg)
{
	struct uslub_thread *t = arg;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	_uslub_lifecycle_thread_fold(t);
	flush_thread_locked(t, true, false);
	list_del(&t->link);
	list_add(&t->link, &free_areas);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
}

__public void uslub_flush_thread(void)
{
	if (!this_cpu_is_real())
		return;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	flush_thread_locked(_uslub_tls.thread, false, true);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	_uslub_gp_drain();
}

/* fork: thread_lock first (after lifecycle_lock, pub_lock, flush_lock);
 * the other layers' entries take the rest of the contract's order. */
static void prefork(void)
{
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
}

static void postfork_parent(void)
{
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
}

/* In the child only the forking thread exists. Every lock of a later rank
 * is reset by now: reset thread_lock, then give back what the other
 * threads held in their cpu slots, as if their CPUs went offline. */
static void postfork_child(void)
{
	uslub_mutex_reset(&_uslub_thread_lock, RANK_THREAD);

	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	struct list_head *pos, *tmp;
	list_for_each_safe(pos, tmp, &_uslub_threads) {
		struct uslub_thread *t = list_entry(pos, struct uslub_thread, link);
		if (t == _uslub_tls.thread)
			continue;
		_uslub_lifecycle_thread_fold(t);
		_uslub_lifecycle_thread_lost(t);
		flush_thread_locked(t, false, false);
		list_del(&t->link);
		list_add(&t->link, &free_areas);
	}
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	_uslub_slub_recount();
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
}

static const struct uslub_lifecycle thread_lifecycle = {
	.name = "thread_lock",
	.rank = RANK_THREAD,
	.thread_exit = thread_exit_locked,
	.prefork = prefork,
	.postfork_parent = postfork_parent,
	.postfork_child = postfork_child,
};

__public int uslub_owns(const void *p)
{
	return _uslub_owns_segment(p);
}

__public struct kmem_cache *uslub_object_cache(const void *p)
{
	if (!p || !_uslub_owns_segment(p))
		return NULL;
	struct slab *slab = virt_to_slab(p);
	return slab ? slab->slab_cache : NULL;
}

__public size_t uslub_trim(void)
{
	return _uslub_page_trim();
}

__public int uslub_nr_nodes(void)
{
	return _uslub_nr_nodes();
}
