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
 * Optional hooks, each announced by a macro defined before the #include:
 *
 *   PEER_HAS_BULK (B2: slab/mempool peers; the malloc peers have none)
 *     static inline int peer_alloc_bulk(struct peer_ctx *c, size_t n, void **p);
 *            n objects into p[0..n-1], all or nothing: returns n, or 0
 *     static inline void peer_free_bulk(struct peer_ctx *c, size_t n, void **p);
 *   PEER_HAS_SHEAVES (uslub: --sheaves N)
 *     static unsigned int peer_sheaves;
 *            set from --sheaves before peer_open(); the peer makes its
 *            cache with per-CPU sheaves of (at least) that many objects
 *   PEER_HAS_B3 (uslub: B3 compares uslub with itself, no loop to share)
 *     static int peer_bench_b3(const struct bench_opts *o);
 *            declared before the #include (with `struct bench_opts;`),
 *            defined after it, so it can use the helpers here.
 *   PEER_HAS_USLUB_ONLY (uslub: B5, B6, B7, B-meta and B-debug compare
 *            uslub with itself: accounting, profiling, memory, extension
 *            placement, slub_debug)
 *     static int peer_bench_uslub_only(const struct bench_opts *o);
 *            declared and defined like peer_bench_b3; B5, B6 and B-debug
 *            time their caches with bench_pairs_batches() below (B1's and
 *            B2's one-by-one loops).
 *
 * A benchmark whose hooks a peer lacks prints one line
 * {"bench":"B2","peer":...,"skipped":"why"} and exits with status 0.
 *
 * Then the file's main() calls bench_main(argc, argv) (after any global
 * initialisation of its own, e.g. rte_eal_init).
 *
 * Benchmarks (methodology: see bench/README.md):
 *   B1  alloc + free of one object, same cache, hot (Brouer's "fastpath
 *       reuse" test). ns per alloc+free pair.
 *   B2  bulk alloc+free (Brouer's slab_bulk_test01, seed 001): for each n
 *       of a list, alloc_bulk(n) then free_bulk(n), against the same n done
 *       one by one (n allocs, then n frees). ns per object.
 *   B3  fresh-slab allocation (slub_bulk_bench, seed 000): uslub only, see
 *       bench_uslub.c. ns per object, allocation only.
 *   B4  remote free: the main thread (CPU 0) allocates and touches objects
 *       and hands them in batches of 64 through a single-producer/single-
 *       consumer ring to a thread on CPU 1, which frees them. ns per object
 *       (wall time of the whole transfer / objects).
 *   B5  (uslub) accounted vs unaccounted cache, B6 (uslub) profiling on vs
 *       off: B1's hot pair and a batch of --batch objects done one by one
 *       (B2's one-by-one loop), on several caches side by side.
 *   B7  (uslub) slab pages of N groups x a few objects: one shared
 *       accounted cache vs one cache per group. Pages, not time.
 *   B-meta (uslub) where accounted caches keep their per-object extension
 *       (seed 003) and what that costs outside the slab. Layout, not time.
 *   B-debug (uslub) B5's two patterns on a cache that is not a debug cache,
 *       with another cache of the process a debug cache (USLUB_DEBUG) or
 *       not; then that other cache itself.
 *   B6-acc (uslub) sampled allocinfo's accuracy: call sites with known
 *       live bytes, their allocinfo figures (exact or sampled profiling).
 *       Bytes, not time.
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
#define BENCH_MAX_NS 64     /* B2: at most this many batch sizes         */
#define BENCH_MAX_N 65536   /* B2: largest n                               */

/* B2's batch sizes: the first column of Brouer's table (seed 001). */
static const unsigned long bench_b2_default_ns[] = {
	1, 2, 3, 4, 8, 16, 30, 32, 34, 48, 64, 128, 158, 250,
};

struct bench_opts {
	const char *bench;    /* "B1", "B2", "B3" or "B4"                    */
	const char *label;    /* peer name in the output                      */
	size_t size;          /* object size in bytes                         */
	unsigned long iters;  /* B1: alloc+free pairs per sample; B2, B4:
	                         objects per sample (B2: per n and mode)      */
	unsigned long warmup; /* untimed iterations / objects before samples
	                         (B2: before each sample; B3: rounds)         */
	int repeats;          /* samples in this process (B3: timed rounds)   */
	int cpu;              /* B1: CPU to pin to (-1: none)                 */
	int prod_cpu;         /* B4: producer CPU (-1: none)                  */
	int cons_cpu;         /* B4: consumer CPU (-1: none)                  */
	unsigned long ns[BENCH_MAX_NS]; /* B2: the batch sizes n           */
	int nr_ns;
	long sheaves;         /* --sheaves N (-1: not given)                  */
	unsigned long bytes;  /* B3: bytes allocated per round (0: default)   */
	unsigned long batch;  /* B5, B6: objects per batch (default 100)      */
	unsigned long groups[BENCH_MAX_NS]; /* B7: the group counts N       */
	int nr_groups;
	unsigned long objs;   /* B7: objects per group (default 4)            */
	const char *mode;     /* B7: "shared" or "per-group"                  */
	const char *caches;   /* B-meta: cache specs, see bench_uslub.c       */
	int expect_profiling; /* B6, B6-acc: 0 (off), 1 (exact), 2 (sampled):
	                         what uslub_profiling_enabled() must say (-1:
	                         not checked; 2 and not sampled: a skipped
	                         row, the sampled mode is not in this build) */
	unsigned long other_iters; /* B-debug: pairs / objects per sample of
	                         the other cache (0: --iters / 100)           */
	int expect_debug;     /* B-debug: 0/1, whether the other cache must be
	                         a debug cache (-1: not checked)              */
};

static void bench_usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s --bench B1|B2|B3|B4|B5|B6|B6-acc|B7|B-meta|B-debug [--size BYTES]\n"
		"          [--iters N] [--warmup N] [--repeats R] [--label NAME] [--cpu C]\n"
		"          [--cpus P,C] [--ns N1,N2,...] [--sheaves CAP] [--bytes B]\n"
		"          [--batch N] [--groups N1,N2,...] [--objs K]\n"
		"          [--mode shared|per-group] [--caches SPECS]\n"
		"          [--expect-profiling 0|1|2] [--other-iters N] [--expect-debug 0|1]\n"
		"  B1: N alloc+free pairs per sample (same cache, hot)\n"
		"  B2: for each n of --ns (default 1,2,3,4,8,16,30,32,34,48,64,128,\n"
		"      158,250): alloc_bulk(n) + free_bulk(n), and n allocs + n frees,\n"
		"      N objects per sample (default 2e6); --warmup objects before\n"
		"      each sample (default N/10)\n"
		"  B3: (uslub) alloc_bulk(objects per slab) from fresh slabs only,\n"
		"      B bytes per round (default 32 MiB), deferred vs eager freelist,\n"
		"      random on and off; R timed rounds after --warmup rounds (1)\n"
		"  B4: N objects allocated on CPU P, freed on CPU C\n"
		"  B5: (uslub) a plain and a USLUB_ACCOUNT cache, the thread in a group\n"
		"      without limit: N hot alloc+free pairs, and N objects in batches of\n"
		"      --batch (default 100) allocated then freed one by one\n"
		"  B6: (uslub) the same on one plain cache; run it with USLUB_PROFILING=1,\n"
		"      =sample and =0 (--expect-profiling 1, 2, 0 says which, and is\n"
		"      checked; 2 without the sampled mode: a skipped row)\n"
		"  B6-acc: (uslub) 8 call sites (kmalloc of 16 B..32 KiB) holding known\n"
		"      live bytes (about 40 MiB); each site's allocinfo bytes and calls\n"
		"      against them; run it with USLUB_PROFILING=1 and =sample\n"
		"  B7: (uslub) for each N of --groups (default 100,1000): N groups holding\n"
		"      --objs (4) objects each, from one shared USLUB_ACCOUNT cache\n"
		"      (--mode shared) or one cache per group (--mode per-group); slab pages\n"
		"  B-meta: (uslub) extension placement of USLUB_ACCOUNT caches, --caches\n"
		"      LABEL=SIZE[/ALIGN][+hw],... (default: a few of seed 003's kind)\n"
		"  B-debug: (uslub) B5's patterns on a plain cache while the cache\n"
		"      bench-debug-other-SIZE holds objects; run it with USLUB_DEBUG=\n"
		"      \"FZPU,bench-debug*\" (--expect-debug 1) and without (0); then\n"
		"      that cache itself, --other-iters (default N/100) per sample\n"
		"  --sheaves CAP: (uslub) a cache with per-CPU sheaves of CAP objects\n"
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

/* A comma-separated list of 1..65536 into out[BENCH_MAX_NS]; its length. */
static int bench_parse_list(const char *v, const char *opt, unsigned long *out)
{
	char buf[1024], *save = NULL, *tok;
	int nr = 0;
	if (strlen(v) >= sizeof(buf)) {
		fprintf(stderr, "bench: %s: list too long\n", opt);
		exit(2);
	}
	strcpy(buf, v);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long n = bench_parse_ul(tok, opt);
		if (n < 1 || n > BENCH_MAX_N || nr == BENCH_MAX_NS) {
			fprintf(stderr, "bench: %s: at most %d values, each 1..%d\n", opt,
				BENCH_MAX_NS, BENCH_MAX_N);
			exit(2);
		}
		out[nr++] = n;
	}
	if (!nr) {
		fprintf(stderr, "bench: %s: empty list\n", opt);
		exit(2);
	}
	return nr;
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
	o->nr_ns = (int)(sizeof(bench_b2_default_ns) / sizeof(bench_b2_default_ns[0]));
	memcpy(o->ns, bench_b2_default_ns, sizeof(bench_b2_default_ns));
	o->sheaves = -1;
	o->bytes = 0;
	o->batch = 100;
	o->nr_groups = 0;
	o->objs = 4;
	o->mode = "shared";
	o->caches = NULL;
	o->expect_profiling = -1;
	o->other_iters = 0;
	o->expect_debug = -1;

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
		else if (!strcmp(a, "--ns"))
			o->nr_ns = bench_parse_list(v, "--ns", o->ns);
		else if (!strcmp(a, "--sheaves"))
			o->sheaves = (long)bench_parse_ul(v, a);
		else if (!strcmp(a, "--bytes"))
			o->bytes = bench_parse_ul(v, a);
		else if (!strcmp(a, "--batch"))
			o->batch = bench_parse_ul(v, a);
		else if (!strcmp(a, "--groups"))
			o->nr_groups = bench_parse_list(v, "--groups", o->groups);
		else if (!strcmp(a, "--objs"))
			o->objs = bench_parse_ul(v, a);
		else if (!strcmp(a, "--mode"))
			o->mode = v;
		else if (!strcmp(a, "--caches"))
			o->caches = v;
		else if (!strcmp(a, "--expect-profiling"))
			o->expect_profiling = (int)bench_parse_ul(v, a);
		else if (!strcmp(a, "--other-iters"))
			o->other_iters = bench_parse_ul(v, a);
		else if (!strcmp(a, "--expect-debug"))
			o->expect_debug = (int)bench_parse_ul(v, a);
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
	if (o->batch < 1 || o->batch > BENCH_MAX_N)
		bench_die("--batch must be 1..65536");
	if (o->objs < 1 || o->objs > 1000)
		bench_die("--objs must be 1..1000");
	if (o->expect_profiling > 2)
		bench_die("--expect-profiling must be 0, 1 or 2");
	if (o->expect_debug > 1)
		bench_die("--expect-debug must be 0 or 1");
	if (strcmp(o->mode, "shared") && strcmp(o->mode, "per-group"))
		bench_die("--mode must be shared or per-group");
	if (o->cpu >= ncpu)
		o->cpu = -1;
	if (o->prod_cpu >= ncpu || o->cons_cpu >= ncpu)
		o->prod_cpu = o->cons_cpu = -1;
	if (o->sheaves >= 0) {
#ifdef PEER_HAS_SHEAVES
		if (o->sheaves > 65535)
			bench_die("--sheaves must be 0..65535");
		peer_sheaves = (unsigned int)o->sheaves;
#else
		bench_die("--sheaves: this peer has no sheaves");
#endif
	}
}

/* The result line of a benchmark this peer cannot run (exit status 0). */
static __attribute__((unused)) int bench_skip(const struct bench_opts *o,
					       const char *why)
{
	printf("{\"bench\":\"%s\",\"peer\":\"%s\",\"size\":%zu,\"skipped\":\"%s\"}\n",
	       o->bench, o->label, o->size, why);
	fflush(stdout);
	return 0;
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
 * B2: bulk alloc + free against one by one, hot
 * ---------------------------------------------------------------------- */
/* The same n objects one by one: n allocations, then n frees in the same
 * order (the "fallback bulking" column of seed 001's table; also B5's and
 * B6's batch pattern, Vlastimil Babka's "batch of 100"). */
static __attribute__((noinline, unused)) void bench_b2_single_loop(struct peer_ctx *c,
								   size_t n,
								   unsigned long loops,
								   void **p)
{
	for (unsigned long i = 0; i < loops; i++) {
		for (size_t j = 0; j < n; j++) {
			p[j] = peer_alloc(c);
			if (BENCH_UNLIKELY(!p[j]))
				bench_die("B2: allocation failed");
		}
		bench_escape(p);
		for (size_t j = 0; j < n; j++)
			peer_free(c, p[j]);
	}
}

#ifdef PEER_HAS_BULK
/* Brouer's slab_bulk_test01 loop: alloc_bulk(n), free_bulk(n), repeat. */
static __attribute__((noinline)) void bench_b2_bulk_loop(struct peer_ctx *c,
							 size_t n,
							 unsigned long loops,
							 void **p)
{
	for (unsigned long i = 0; i < loops; i++) {
		if (BENCH_UNLIKELY(peer_alloc_bulk(c, n, p) != (int)n))
			bench_die("B2: bulk allocation failed");
		bench_escape(p);
		peer_free_bulk(c, n, p);
	}
}

static void bench_b2_run(struct peer_ctx *c, int bulk, size_t n,
			 unsigned long loops, void **p)
{
	if (bulk)
		bench_b2_bulk_loop(c, n, loops, p);
	else
		bench_b2_single_loop(c, n, loops, p);
}

static int bench_b2(const struct bench_opts *o)
{
	unsigned long objs = o->iters ? o->iters : 2000000ul;
	struct bench_opts oo = *o;
	static const char *const mode_name[2] = { "single", "bulk" };
	unsigned long max_n = 0;
	struct peer_ctx *c;
	double *ns;
	void **p;

	if (oo.warmup == (unsigned long)-1)
		oo.warmup = objs / 10;
	for (int i = 0; i < o->nr_ns; i++)
		if (o->ns[i] > max_n)
			max_n = o->ns[i];
	/* ns[(mode * nr_ns + i) * repeats + r] */
	ns = calloc((size_t)2 * (size_t)o->nr_ns * (size_t)o->repeats, sizeof(*ns));
	if (posix_memalign((void **)&p, BENCH_CACHELINE, max_n * sizeof(void *)) || !ns)
		bench_die("B2: out of memory");
	memset(p, 0, max_n * sizeof(void *));
	if (oo.cpu >= 0 && !bench_pin(oo.cpu))
		oo.cpu = -1;
	c = peer_open(o->size, max_n);
	if (!c)
		bench_die("B2: cannot create the cache/pool");

	/* Every sample: a warm-up of the same n and mode, then the timed
	 * loop. Samples go round n by n, so drift spreads over all n; the
	 * mode that goes first alternates from round to round. */
	for (int r = 0; r < o->repeats; r++) {
		for (int i = 0; i < o->nr_ns; i++) {
			size_t n = o->ns[i];
			unsigned long loops = (objs + n - 1) / n;
			unsigned long wloops = (oo.warmup + n - 1) / n;
			if (loops < 1)
				loops = 1;
			for (int k = 0; k < 2; k++) {
				int bulk = (k + r) & 1;
				bench_b2_run(c, bulk, n, wloops, p);
				uint64_t t0 = bench_now_ns();
				bench_b2_run(c, bulk, n, loops, p);
				uint64_t t1 = bench_now_ns();
				ns[((size_t)bulk * o->nr_ns + i) * o->repeats + r] =
					(double)(t1 - t0) / ((double)loops * (double)n);
			}
		}
	}

	bench_json_head(&oo, objs, "ns per object (alloc+free)");
	printf(",\"cpu\":%d,\"ns\":[", oo.cpu);
	for (int i = 0; i < o->nr_ns; i++)
		printf("%s%lu", i ? "," : "", o->ns[i]);
	printf("],\"series\":{");
	for (int m = 1; m >= 0; m--) {
		printf("%s\"%s\":{", m == 1 ? "" : ",", mode_name[m]);
		for (int i = 0; i < o->nr_ns; i++) {
			printf("%s\"%lu\":[", i ? "," : "", o->ns[i]);
			for (int r = 0; r < o->repeats; r++)
				printf("%s%.4f", r ? "," : "",
				       ns[((size_t)m * o->nr_ns + i) * o->repeats + r]);
			printf("]");
		}
		printf("}");
	}
	printf("}");
	peer_extra_json(c, stdout);
	printf("}\n");
	fflush(stdout);
	peer_close(c);
	free(p);
	free(ns);
	return 0;
}
#endif /* PEER_HAS_BULK */

/* ------------------------------------------------------------------------
 * B5, B6, B-debug: variants of one peer side by side, hot pair and batch
 *
 * @nv contexts of the same peer (B5: a plain and an accounted cache),
 * timed in one process with the very loops of B1 (alloc + free of one
 * object) and of B2's one-by-one column (@batch allocations, then @batch
 * frees). Sample r runs every context (the first one rotating with r) and,
 * for each, both patterns (the one that goes first alternating), each
 * preceded by a warm-up of @warm pairs / objects of the same context and
 * pattern, so every timed loop starts from the state it would be in after
 * a long run of itself and slow drift hits every variant alike. Before
 * each of those warm-ups @between(@arg) runs, when not NULL (B-debug: work
 * on another cache of the process, untimed).
 * out[(v * 2 + pat) * repeats + r]: pat 0 = ns per pair, pat 1 = ns per
 * object (one alloc + one free), loops rounded up to whole batches.
 * ---------------------------------------------------------------------- */
static __attribute__((unused)) void bench_pairs_batches(struct peer_ctx **c, int nv,
							 unsigned long iters,
							 unsigned long warm,
							 size_t batch, int repeats,
							 double *out,
							 void (*between)(void *),
							 void *arg)
{
	unsigned long loops = (iters + batch - 1) / batch;
	unsigned long wloops = (warm + batch - 1) / batch;
	void **p;

	if (posix_memalign((void **)&p, BENCH_CACHELINE, batch * sizeof(void *)))
		bench_die("out of memory");
	memset(p, 0, batch * sizeof(void *));
	/* one long warm-up of everything first (B1's N/10) */
	for (int v = 0; v < nv; v++) {
		bench_b1_loop(c[v], warm);
		bench_b2_single_loop(c[v], batch, wloops, p);
	}
	for (int r = 0; r < repeats; r++) {
		for (int j = 0; j < nv; j++) {
			int v = (j + r) % nv;
			for (int k = 0; k < 2; k++) {
				int pat = (k + r / nv) & 1;
				uint64_t t0, t1;
				if (between)
					between(arg);
				if (pat == 0) {
					bench_b1_loop(c[v], warm / 4);
					t0 = bench_now_ns();
					bench_b1_loop(c[v], iters);
					t1 = bench_now_ns();
					out[(v * 2 + 0) * repeats + r] =
						(double)(t1 - t0) / (double)iters;
				} else {
					bench_b2_single_loop(c[v], batch, wloops / 4 + 1, p);
					t0 = bench_now_ns();
					bench_b2_single_loop(c[v], batch, loops, p);
					t1 = bench_now_ns();
					out[(v * 2 + 1) * repeats + r] =
						(double)(t1 - t0) / ((double)loops * (double)batch);
				}
			}
		}
	}
	free(p);
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
	if (!strcmp(o.bench, "B2")) {
#ifdef PEER_HAS_BULK
		return bench_b2(&o);
#else
		return bench_skip(&o, "no bulk API: B2 is a slab/mempool benchmark");
#endif
	}
	if (!strcmp(o.bench, "B3")) {
#ifdef PEER_HAS_B3
		return peer_bench_b3(&o);
#else
		return bench_skip(&o, "B3 measures uslub against itself");
#endif
	}
	if (!strcmp(o.bench, "B4"))
		return bench_b4(&o);
	if (!strcmp(o.bench, "B5") || !strcmp(o.bench, "B6") || !strcmp(o.bench, "B7") ||
	    !strcmp(o.bench, "B-meta") || !strcmp(o.bench, "B-debug") ||
	    !strcmp(o.bench, "B6-acc")) {
#ifdef PEER_HAS_USLUB_ONLY
		return peer_bench_uslub_only(&o);
#else
		return bench_skip(&o, "this benchmark measures uslub against itself");
#endif
	}
	fprintf(stderr, "bench: unknown benchmark %s (B1..B7, B6-acc, B-meta, B-debug)\n",
		o.bench);
	return 2;
}

#endif /* USLUB_BENCH_CORE_H */
