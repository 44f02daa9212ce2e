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
 *   fallback       a thread whose rseq registration is gone (the test
 *                  unregisters glibc's, as a seccomp filter that refuses
 *                  rseq after the first threads would leave it) is a
 *                  per-thread thread in a per-CPU process; it takes an
 *                  area that per-CPU threads parked, whose slots stood
 *                  in. Its allocations and frees must not reach the
 *                  per-CPU leaves (no sections: before area init reset
 *                  the stand-ins, a segfault): the slot's main is not
 *                  PCPU_STANDIN after them, and the objects are its own
 *   hot push       the free record's note (cache.h free_record_note()) in
 *                  per-CPU mode: pcpu_push_top() says PCPU_PUSHED_HOT
 *                  when the word it wrote over was the object itself (the
 *                  one the id's sheaf handed out last from that place),
 *                  PCPU_PUSHED for another object, PCPU_PUSH_FULL on a
 *                  full sheaf (nothing written)
 * Skipped (77) where the process is not in per-CPU mode.
 */
#define _GNU_SOURCE
#include "cache/cache.h"
#include "unit.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !USLUB_HAVE_RSEQ
int main(void)
{
	printf("SKIP: no rseq sections in this build\n");
	return 77;
}
#else

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

/* The thread's area comes with its first slow path (another cache's);
 * then @r has its id and its slot's main before the cache's first call. */
static void area_first(struct result *r)
{
	uslub_kfree(uslub_kmalloc(32, 0));
	r->id = id_now();
	r->main_before = own_slot()->main;
}

/* The step done: alive until the end. */
static void *stay(void)
{
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&done);
	return NULL;
}

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
	return stay();
}

static void *first_alloc_fn(void *arg)
{
	struct result *r = arg;
	area_first(r);
	r->obj[0] = uslub_cache_alloc(cache, 0);
	r->main_after = own_slot()->main;
	r->obj[1] = uslub_cache_alloc(cache, 0);
	uslub_cache_free(cache, r->obj[1]);
	uslub_cache_free(cache, r->obj[0]);
	return stay();
}

static void *first_free_fn(void *arg)
{
	struct result *r = arg;
	area_first(r);
	uslub_cache_free(cache, objs[0]);
	r->main_after = own_slot()->main;
	return stay();
}

extern const ptrdiff_t __rseq_offset;
extern const unsigned int __rseq_size;

static void *fallback_fn(void *arg)
{
	struct result *r = arg;
	char *area = (char *)__builtin_thread_pointer() + __rseq_offset;
	/* glibc's registration undone: RSEQ_FLAG_UNREGISTER (1), with the
	 * length glibc registered (32 where __rseq_size says 20, glibc
	 * 2.35..2.39; the wrong one is refused, EINVAL, and changes nothing) */
	unsigned int len = __rseq_size;
	while (syscall(__NR_rseq, area, len, 1, USLUB_RSEQ_SIG) != 0)
		if ((len += 4) > 1024) {
			r->id = ~0u;
			return NULL;
		}
	void *v[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		v[i] = uslub_cache_alloc(cache, 0);
		CHECK(v[i]);
	}
	/* kmalloc's class of the threads above: its slot's first call is
	 * an inline one (the area came with the allocations above) */
	void *k = uslub_kmalloc(32, 0);
	CHECK(k);
	uslub_kfree(k);
	r->main_after = own_slot()->main;
	r->obj[0] = _uslub_tls.pcpu_idp ? v[0] : NULL;
	for (int i = 0; i < NOBJ; i++)
		uslub_cache_free(cache, v[i]);
	r->main_before = own_slot()->main;
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

	/* fallback: the areas of the threads above are parked */
	struct result d;
	memset(&d, 0, sizeof(d));
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fallback_fn, &d) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	if (d.id == ~0u) {
		printf("fallback: rseq could not be unregistered: not checked\n");
	} else {
		CHECK(d.obj[0] == NULL);                /* no sections */
		CHECK(d.main_after != PCPU_STANDIN && d.main_before != PCPU_STANDIN);
		printf("fallback: per thread, in a parked area\n");
	}

	/* hot push: on the main thread's id (one CPU), with its main
	 * sheaf holding objects (the allocations below leave some) */
	void *x = uslub_cache_alloc(cache, 0), *y = uslub_cache_alloc(cache, 0);
	CHECK(x && y && x != y);
	char *ra = _uslub_tls.rseq_area;
	const unsigned int *idp = _uslub_tls.pcpu_idp;
	unsigned long off = cache->cpu_offset;
	/* y was popped last, from the place x's push now takes: not hot */
	CHECK_EQ(pcpu_push_top(ra, idp, off, x), PCPU_PUSHED);
	CHECK(pcpu_pop(ra, idp, off) == x);
	/* x was handed out from that place just now: hot */
	CHECK_EQ(pcpu_push_top(ra, idp, off, x), PCPU_PUSHED_HOT);
	CHECK(pcpu_pop(ra, idp, off) == x);
	/* a full sheaf: capacity + 1 of the cache's objects pushed until
	 * one is refused (the allocations may refill: the id's sheaf is
	 * read after them) */
	unsigned int cap = cache->sheaf_capacity;
	void **v = calloc(cap + 1, sizeof(void *));
	CHECK(v);
	for (unsigned int i = 0; i <= cap; i++) {
		v[i] = uslub_cache_alloc(cache, 0);
		CHECK(v[i]);
	}
	unsigned int pushed = 0;
	int r;
	while ((r = pcpu_push_top(ra, idp, off, v[pushed])) != PCPU_PUSH_FULL)
		CHECK(++pushed <= cap);
	struct slab_sheaf *sh = *(struct slab_sheaf **)(_uslub_pcpu_tab[*idp] + off);
	CHECK(sh->capacity > 0);               /* a real sheaf: the slow paths install one */
	CHECK_EQ(sh->size, sh->capacity);
	CHECK(sh->objects[sh->capacity - 1] != v[pushed]);
	while (pushed)                          /* back out, then freed */
		CHECK(pcpu_pop(ra, idp, off) == v[--pushed]);
	for (unsigned int i = 0; i <= cap; i++)
		uslub_cache_free(cache, v[i]);
	free(v);
	uslub_cache_free(cache, y);
	uslub_cache_free(cache, x);
	printf("hot push: pushed, hot and full as written\n");

	CHECK_EQ(uslub_cache_validate(cache), 0);
	uslub_cache_destroy(cache);
	printf("ok\n");
	return 0;
}
#endif /* USLUB_HAVE_RSEQ */
