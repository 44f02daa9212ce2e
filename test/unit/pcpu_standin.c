/*
 * pcpu_standin: per-CPU mode (USLUB_PERCPU=cpu) sends a thread's inline
 * paths to the id's sections only once its slot's main is PCPU_STANDIN.
 * A slot starts with the empty sheaf (its cpu area's, as in per-thread
 * mode), which sends every call down the whole miss path; the slow paths
 * must leave PCPU_STANDIN even when they do not claim the id's sheaves:
 * a thread that starts on a CPU whose id holds objects of the cache finds
 * them at its first miss, and before the fix kept the empty sheaf (every
 * call the whole miss path: larson with one thread, pinned to the CPU of
 * the main thread that made its objects, at 2.5x the per-thread time).
 *
 * All threads run on one CPU (the process pinned), so they share its
 * concurrency id; where the kernel gives them different ids anyway the
 * checks that need one id are skipped (said, not failed).
 *   first alloc    thread A fills the id's sheaf (allocates and frees
 *                  some objects); thread B's first allocation takes one
 *                  of them, with no claim: B's slot, the empty sheaf
 *                  before it, is PCPU_STANDIN after it, and B's second allocation takes the next object of
 *                  the id's sheaf
 *   first free     the main thread allocates some objects (its slot
 *                  claims: PCPU_STANDIN); thread C's first call is a free
 *                  into the id's sheaf, which has room: C's slot, the
 *                  empty sheaf before it, is PCPU_STANDIN after it
 * Skipped (77) where the process is not in per-CPU mode.
 */
#define _GNU_SOURCE
#include "cache/cache.h"
#include "unit.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#define SIZE  64
#define NOBJ  8

static struct kmem_cache *cache;
static void *objs[NOBJ];

static struct kmem_cache_cpu *own_slot(void)
{
	return (struct kmem_cache_cpu *)(_uslub_tls.cpu_base + cache->cpu_offset);
}

static unsigned int id_now(void)
{
	return *_uslub_tls.pcpu_idp;
}

struct result {
	unsigned int id;
	const struct slab_sheaf *main_before, *main_after;
	void *obj[2];
};

/* Each thread does its step, then waits until the end: alive, its area
 * is not parked for the next thread (a parked area keeps its slots). */
static pthread_barrier_t step, done;

static void *fill_fn(void *arg)
{
	struct result *r = arg;
	void *v[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		v[i] = uslub_cache_alloc(cache, 0);
		CHECK(v[i]);
	}
	for (int i = 0; i < NOBJ; i++)
		uslub_cache_free(cache, v[i]);
	memcpy(objs, v, sizeof(v));
	r->id = id_now();
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&done);
	return NULL;
}

static void *first_alloc_fn(void *arg)
{
	struct result *r = arg;
	/* the thread's area comes with its first slow path (another
	 * cache's), then the cache's first allocation */
	uslub_kfree(uslub_kmalloc(32, 0));
	r->id = id_now();
	r->main_before = own_slot()->main;
	r->obj[0] = uslub_cache_alloc(cache, 0);
	r->main_after = own_slot()->main;
	r->obj[1] = uslub_cache_alloc(cache, 0);
	uslub_cache_free(cache, r->obj[1]);
	uslub_cache_free(cache, r->obj[0]);
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&done);
	return NULL;
}

static void *first_free_fn(void *arg)
{
	struct result *r = arg;
	/* the area first, on another cache, then the free */
	uslub_kfree(uslub_kmalloc(32, 0));
	r->id = id_now();
	r->main_before = own_slot()->main;
	uslub_cache_free(cache, objs[0]);
	r->main_after = own_slot()->main;
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&done);
	return NULL;
}

static pthread_t threads[3];
static int nthreads;

static void run(void *(*fn)(void *), struct result *r)
{
	memset(r, 0, sizeof(*r));
	CHECK(pthread_create(&threads[nthreads++], NULL, fn, r) == 0);
	pthread_barrier_wait(&step);
}

static bool in(void *x)
{
	for (int i = 0; i < NOBJ; i++)
		if (objs[i] == x)
			return true;
	return false;
}

int main(void)
{
	/* the main thread's area (and whether it got per-CPU sections) */
	uslub_kfree(uslub_kmalloc(16, 0));
	if (!_uslub_pcpu || !_uslub_tls.pcpu_idp) {
		printf("SKIP: not in per-CPU mode (USLUB_PERCPU=cpu, rseq)\n");
		return 77;
	}
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);

	struct uslub_cache_args args = { .sheaf_capacity = 32 };
	cache = uslub_cache_create_args("pcpu-standin", SIZE, &args, 0);
	CHECK(cache);

	CHECK(pthread_barrier_init(&step, NULL, 2) == 0);
	CHECK(pthread_barrier_init(&done, NULL, 4) == 0);

	/* first alloc */
	struct result a, b;
	run(fill_fn, &a);
	run(first_alloc_fn, &b);
	if (a.id != b.id) {
		printf("first alloc: ids %u and %u differ on one CPU: not checked\n", a.id, b.id);
	} else {
		CHECK(b.main_before == EMPTY_SHEAF);
		CHECK(b.main_after == PCPU_STANDIN);
		/* its allocations were the id's objects, LIFO */
		CHECK(in(b.obj[0]) && in(b.obj[1]) && b.obj[0] != b.obj[1]);
		printf("first alloc: id %u, the slot stood in, objects from the id's sheaf\n", b.id);
	}

	/* first free: the main thread's objects, freed by a new thread */
	for (int i = 0; i < NOBJ; i++) {
		objs[i] = uslub_cache_alloc(cache, 0);
		CHECK(objs[i]);
	}
	unsigned int main_id = id_now();
	struct result c;
	run(first_free_fn, &c);
	if (c.id != main_id) {
		printf("first free: ids %u and %u differ on one CPU: not checked\n", main_id, c.id);
	} else {
		CHECK(c.main_before == EMPTY_SHEAF);
		CHECK(c.main_after == PCPU_STANDIN);
		printf("first free: id %u, the slot stood in\n", c.id);
	}
	pthread_barrier_wait(&done);
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_join(threads[i], NULL) == 0);
	for (int i = 1; i < NOBJ; i++)
		uslub_cache_free(cache, objs[i]);

	CHECK_EQ(uslub_cache_validate(cache), 0);
	uslub_cache_destroy(cache);
	printf("ok\n");
	return 0;
}
