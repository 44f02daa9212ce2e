/*
 * bench_core.h — the timing loops shared by every allocator under test.
 *
 * Each benchmark binary (uslub, malloc, DPDK) is one C file that defines
 * the peer hooks below and then includes this header, so every peer runs
 * the very same loop, compiled with the same flags; only the two inline
 * calls inside the loop differ.
 *
 * Hooks the including file must define before the #include:
 *
 *   struct peer_ctx;                                  (opaque to us)
 *   static const char peer_default_label[];           e.g. "uslub"
 *   static struct peer_ctx *peer_open(size_t size, size_t max_live);
 *          a cache / pool for objects of @size bytes that must be able to
 *          hold at least @max_live objects at once; NULL on failure.
 *   static void peer_close(struct peer_ctx *c);
 *   static inline void *peer_alloc(struct peer_ctx *c);   NULL on failure
 *   static inline void peer_free(struct peer_ctx *c, void *p);
 *   static void peer_thread_start(struct peer_ctx *c);
 *          run first by every extra thread we create (DPDK registers it)
 *   static void peer_thread_stop(struct peer_ctx *c);
 *   static void peer_extra_json(struct peer_ctx *c, FILE *f);
 *          prints zero or more `,"key":value` members for the result line
 *
 * Then the file's main() calls bench_main(argc, argv) (after any global
 * initialisation of its own, e.g. rte_eal_init).
 *
 * Benchmarks (methodology: see bench/README.md):
 *   B1  alloc + free of one object, same cache, hot (Brouer's "fastpath
 *       reuse" test). ns per alloc+free pair.
 *   B4  remote free: the main thread (CPU 0) allocates and touches objects
 *       and hands them in batches of 64 through a single-producer/single-
 *       consumer ring to a thread on CPU 1, which frees them. ns per object
 *       (wall time of the whole transfer / objects).
 *
 * Output: one JSON object per line on stdout, e.g.
 *   {"bench":"B1","peer":"uslub","size":64,"iters":20000000,
 *    "samples_ns":[10.1,10.0,10.2], ...}
 */
#ifndef USLUB_BENCH_CORE_H
#define USLUB_BENCH_CORE_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_LIKELY(x)   __builtin_expect(!!(x), 1)
#define BENCH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BENCH_CACHELINE 64

/* Make @p look used (and memory clobbered) so the compiler can neither drop
 * the allocation nor fuse an alloc/free pair; costs no instruction. */
static inline void bench_escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void bench_die(const char *what)
{
	fprintf(stderr, "bench: %s\n", what);
	exit(2);
}

/* Pin the calling thread to @cpu; -1 or a CPU we cannot use: leave it. */
static int bench_pin(int cpu)
{
	cpu_set_t set;
	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/* ------------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------- */
struct bench_opts {
	const char *bench;    /* "B1" or "B4"                                */
	const char *label;    /* peer name in the output                      */
	size_t size;          /* object size in bytes                         */
	unsigned long iters;  /* B1: alloc+free pairs per sample; B4: objects */
	unsigned long warmup; /* untimed iterations / objects before samples  */
	int repeats;          /* samples in this process                      */
	int cpu;              /* B1: CPU to pin to (-1: none)                 */
	int prod_cpu;         /* B4: producer CPU (-1: none)                  */
	int cons_cpu;         /* B4: consumer CPU (-1: none)                  */
};

static void bench_usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s --bench B1|B4 [--size BYTES] [--iters N] [--warmup N]\n"
		"          [--repeats R] [--label NAME] [--cpu C] [--cpus P,C]\n"
		"  B1: N alloc+free pairs per sample (same cache, hot)\n"
		"  B4: N objects allocated on CPU P, freed on CPU C\n"
		"  prints one JSON line per benchmark on stdout\n",
		argv0);
}

static unsigned long bench_parse_ul(const char *s, const char *opt)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);   /* accepts 20000000, 2e7, ... */
	if (errno || end == s || *end || v < 0 || v > 1e15) {
		fprintf(stderr, "bench: bad value for %s: %s\n", opt, s);
		exit(2);
	}
	return (unsigned long)v;
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	memset(o, 0, sizeof(*o));
	o->bench = NULL;
	o->label = peer_default_label;
	o->size = 64;
	o->iters = 0;
	o->warmup = (unsigned long)-1;
	o->repeats = 3;
	o->cpu = 0;
	o->prod_cpu = ncpu >= 2 ? 0 : -1;
	o->cons_cpu = ncpu >= 2 ? 1 : -1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			bench_usage(stdout, argv[0]);
			exit(0);
		}
		if (!v) {
			bench_usage(stderr, argv[0]);
			exit(2);
		}
		i++;
		if (!strcmp(a, "--bench"))
			o->bench = v;
		else if (!strcmp(a, "--label"))
			o->label = v;
		else if (!strcmp(a, "--size"))
			o->size = bench_parse_ul(v, a);
		else if (!strcmp(a, "--iters"))
			o->iters = bench_parse_ul(v, a);
		else if (!strcmp(a, "--warmup"))
			o->warmup = bench_parse_ul(v, a);
		else if (!strcmp(a, "--repeats"))
			o->repeats = (int)bench_parse_ul(v, a);
		else if (!strcmp(a, "--cpu"))
			o->cpu = atoi(v);
		else if (!strcmp(a, "--cpus")) {
			if (sscanf(v, "%d,%d", &o->prod_cpu, &o->cons_cpu) != 2)
				bench_die("--cpus wants P,C");
		} else {
			fprintf(stderr, "bench: unknown option %s\n", a);
			bench_usage(stderr, argv[0]);
			exit(2);
		}
	}
	if (!o->bench) {
		bench_usage(stderr, argv[0]);
		exit(2);
	}
	if (o->size == 0)
		bench_die("--size must be > 0");
	if (o->repeats < 1 || o->repeats > 1000)
		bench_die("--repeats must be 1..1000");
	if (o->cpu >= ncpu)
		o->cpu = -1;
	if (o->prod_cpu >= ncpu || o->cons_cpu >= ncpu)
		o->prod_cpu = o->cons_cpu = -1;
}

/* Output helpers: the common head of a result line, then the samples. */
static void bench_json_head(const struct bench_opts *o, unsigned long iters,
			    const char *unit)
{
	printf("{\"bench\":\"%s\",\"peer\":\"%s\",\"size\":%zu,\"iters\":%lu,"
	       "\"warmup\":%lu,\"unit\":\"%s\"",
	       o->bench, o->label, o->size, iters, o->warmup, unit);
}

static void bench_json_samples(const double *ns, int n)
{
	printf(",\"samples_ns\":[");
	for (int i = 0; i < n; i++)
		printf("%s%.4f", i ? "," : "", ns[i]);
	printf("]");
}

/* ------------------------------------------------------------------------
 * B1: alloc + free of one object, hot
 * ---------------------------------------------------------------------- */
static __attribute__((noinline)) void bench_b1_loop(struct peer_ctx *c,
						    unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		void *p = peer_alloc(c);
		if (BENCH_UNLIKELY(!p))
			bench_die("B1: allocation failed");
		bench_escape(p);
		peer_free(c, p);
	}
}

static int bench_b1(const struct bench_opts *o)
{
	unsigned long iters = o->iters ? o->iters : 20000000ul;
	struct bench_opts oo = *o;
	double ns[1000];
	struct peer_ctx *c;

	if (oo.warmup == (unsigned long)-1)
		oo.warmup = iters / 10 > 100000 ? iters / 10 : 100000;
	if (oo.cpu >= 0 && !bench_pin(oo.cpu))
		oo.cpu = -1;
	c = peer_open(o->size, 1024);
	if (!c)
		bench_die("B1: cannot create the cache/pool");

	bench_b1_loop(c, oo.warmup);
	for (int r = 0; r < o->repeats; r++) {
		uint64_t t0 = bench_now_ns();
		bench_b1_loop(c, iters);
		uint64_t t1 = bench_now_ns();
		ns[r] = (double)(t1 - t0) / (double)iters;
	}

	bench_json_head(&oo, iters, "ns per alloc+free pair");
	printf(",\"cpu\":%d", oo.cpu);
	bench_json_samples(ns, o->repeats);
	peer_extra_json(c, stdout);
	printf("}\n");
	fflush(stdout);
	peer_close(c);
	return 0;
}

/* ------------------------------------------------------------------------
 * B4: remote free through an SPSC ring of batches
 * ---------------------------------------------------------------------- */
#define B4_BATCH 64         /* pointers per ring slot                     */
#define B4_SLOTS 32         /* ring slots: <= 2048 objects in flight      */

struct b4_slot {
	void *p[B4_BATCH];
} __attribute__((aligned(BENCH_CACHELINE)));

struct b4_shared {
	/* producer-written */
	_Alignas(BENCH_CACHELINE) unsigned long head;
	/* consumer-written */
	_Alignas(BENCH_CACHELINE) unsigned long tail;
	_Alignas(BENCH_CACHELINE) struct b4_slot slot[B4_SLOTS];
	/* set-up, read-only during a phase */
	_Alignas(BENCH_CACHELINE) struct peer_ctx *ctx;
	pthread_barrier_t start;
	unsigned long phase_batches[1001]; /* per phase: warm-up, samples */
	int phases;
	int cons_cpu;
	/* consumer results */
	_Alignas(BENCH_CACHELINE) uint64_t end_ns[1001];
	unsigned long spins_cons;
};

static inline void b4_wait(unsigned long *spins)
{
	/* Both threads own a CPU, so spin; yield now and then in case the
	 * machine is oversubscribed (or has one CPU). */
	if (BENCH_UNLIKELY((++*spins & 1023) == 0))
		sched_yield();
	else
		bench_cpu_relax();
}

static void *b4_consumer(void *arg)
{
	struct b4_shared *sh = arg;
	struct peer_ctx *c = sh->ctx;
	unsigned long tail = 0, spins = 0;

	if (sh->cons_cpu >= 0)
		bench_pin(sh->cons_cpu);
	peer_thread_start(c);
	for (int ph = 0; ph < sh->phases; ph++) {
		pthread_barrier_wait(&sh->start);
		for (unsigned long b = 0; b < sh->phase_batches[ph]; b++) {
			while (__atomic_load_n(&sh->head, __ATOMIC_ACQUIRE) == tail)
				b4_wait(&spins);
			struct b4_slot *s = &sh->slot[tail % B4_SLOTS];
			for (int i = 0; i < B4_BATCH; i++)
				peer_free(c, s->p[i]);
			tail++;
			__atomic_store_n(&sh->tail, tail, __ATOMIC_RELEASE);
		}
		sh->end_ns[ph] = bench_now_ns();
	}
	sh->spins_cons = spins;
	peer_thread_stop(c);
	return NULL;
}

static int bench_b4(const struct bench_opts *o)
{
	unsigned long objs = o->iters ? o->iters : 5000000ul;
	unsigned long batches = (objs + B4_BATCH - 1) / B4_BATCH;
	struct bench_opts oo = *o;
	struct b4_shared *sh;
	pthread_t th;
	uint64_t t0[1001];
	double ns[1000];
	unsigned long head = 0, spins = 0;

	objs = batches * B4_BATCH;
	if (oo.warmup == (unsigned long)-1)
		oo.warmup = objs / 10 > 65536 ? objs / 10 : 65536;
	oo.warmup = (oo.warmup + B4_BATCH - 1) / B4_BATCH * B4_BATCH;

	if (posix_memalign((void **)&sh, BENCH_CACHELINE, sizeof(*sh)))
		bench_die("B4: out of memory");
	memset(sh, 0, sizeof(*sh));
	sh->phases = o->repeats + 1;
	sh->phase_batches[0] = oo.warmup / B4_BATCH;
	for (int r = 1; r <= o->repeats; r++)
		sh->phase_batches[r] = batches;
	sh->cons_cpu = oo.cons_cpu;
	/* in flight at most: the ring, one batch being filled, one being freed */
	sh->ctx = peer_open(o->size, (B4_SLOTS + 2) * B4_BATCH);
	if (!sh->ctx)
		bench_die("B4: cannot create the cache/pool");
	if (oo.prod_cpu >= 0 && !bench_pin(oo.prod_cpu))
		oo.prod_cpu = oo.cons_cpu = sh->cons_cpu = -1;
	pthread_barrier_init(&sh->start, NULL, 2);
	if (pthread_create(&th, NULL, b4_consumer, sh))
		bench_die("B4: pthread_create failed");

	for (int ph = 0; ph < sh->phases; ph++) {
		pthread_barrier_wait(&sh->start);
		t0[ph] = bench_now_ns();
		for (unsigned long b = 0; b < sh->phase_batches[ph]; b++) {
			while (head - __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) >= B4_SLOTS)
				b4_wait(&spins);
			struct b4_slot *s = &sh->slot[head % B4_SLOTS];
			for (int i = 0; i < B4_BATCH; i++) {
				void *p = peer_alloc(sh->ctx);
				if (BENCH_UNLIKELY(!p))
					bench_die("B4: allocation failed");
				*(volatile unsigned long *)p = b; /* touch */
				s->p[i] = p;
			}
			head++;
			__atomic_store_n(&sh->head, head, __ATOMIC_RELEASE);
		}
	}
	pthread_join(th, NULL);
	for (int r = 0; r < o->repeats; r++)
		ns[r] = (double)(sh->end_ns[r + 1] - t0[r + 1]) / (double)objs;

	bench_json_head(&oo, objs, "ns per object (alloc on producer, free on consumer)");
	printf(",\"cpus\":[%d,%d],\"batch\":%d,\"ring_slots\":%d", oo.prod_cpu,
	       oo.cons_cpu, B4_BATCH, B4_SLOTS);
	bench_json_samples(ns, o->repeats);
	printf(",\"producer_spins\":%lu,\"consumer_spins\":%lu", spins,
	       sh->spins_cons);
	peer_extra_json(sh->ctx, stdout);
	printf("}\n");
	fflush(stdout);
	pthread_barrier_destroy(&sh->start);
	peer_close(sh->ctx);
	free(sh);
	return 0;
}

static int bench_main(int argc, char **argv)
{
	struct bench_opts o;
	bench_parse(argc, argv, &o);
	if (!strcmp(o.bench, "B1"))
		return bench_b1(&o);
	if (!strcmp(o.bench, "B4"))
		return bench_b4(&o);
	fprintf(stderr, "bench: unknown benchmark %s (B1, B4)\n", o.bench);
	return 2;
}

#endif /* USLUB_BENCH_CORE_H */
