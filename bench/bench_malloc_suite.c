/*
 * uslub-bench-mallocsuite: B8 (malloc workloads) and B9 (RSS held in
 * per-thread caches) on the plain malloc API.
 *
 * Linked with no allocator of its own: run as is it measures glibc's
 * malloc; bench/run.py runs it again with LD_PRELOAD of libuslub-malloc.so,
 * libjemalloc.so.2, libmimalloc.so.2 and libtcmalloc_minimal.so.4. The
 * result line names the library that actually provides malloc
 * ("malloc_lib"), so a preload that did not take is visible.
 *
 *   --workload churn     one thread replaces random objects of a live set
 *                        of small objects (8..255 B), with short LIFO
 *                        bursts of temporaries
 *   --workload prodcons  2 producer threads allocate batches of objects,
 *                        2 consumer threads free them (a mutex-protected
 *                        bounded queue of batch pointers)
 *   --workload realloc   buffers grown by repeated realloc: strings that
 *                        append 1..64 bytes at a time up to 64 KiB, vectors
 *                        that grow by 1.5x up to 64 KiB or (1 in 256) a few
 *                        MiB; freed when they reach their length
 *   --workload mixed     random sizes (90% 8..511 B, 9.95% 1..64 KiB,
 *                        0.05% 256 KiB..4 MiB) into a short-lived and a
 *                        long-lived live set; some calloc, posix_memalign
 *   --workload threads   16 threads doing churn at the same time
 *   --workload phases    phase 1 allocates ~200 MiB of small objects
 *                        (16..511 B) and frees all but 1% (every 100th);
 *                        a purge wait; phase 2 churns a working set of a
 *                        tenth of the size, of 512..8191 B objects. RSS at
 *                        the peak, after the frees and at the end
 *   --workload large     large blocks: allocate 1..32 MiB (log-uniform), fill
 *                        every byte with memset, free; two blocks live at a
 *                        time (each freed one op after it was made, its
 *                        contents checked first). Reports the minor page
 *                        faults of the loop ("loop_minflt"; every workload's
 *                        line has the whole run's "minflt")
 *   --workload waves-lifo, waves-fifo, waves-shuffle
 *                        one thread allocates and frees in waves: 200 waves
 *                        (at --scale 1) each allocating 50000 objects of
 *                        8..128 B (uniform in multiples of 8), writing a
 *                        few bytes of each, then freeing all of them last
 *                        first (lifo), first first (fifo) or in a seeded
 *                        shuffled order; nothing lives from one wave to
 *                        the next (sh6bench/sh8bench-like programs)
 *   --workload waves-4t  4 threads (--threads) each doing a quarter of
 *                        those waves (+1), the order rotating per wave
 *   --workload tloop     4 threads (--threads) each a fixed loop over its own
 *                        1024 blocks: free a random one, allocate one of
 *                        8 B..32 KiB (log-uniform by octave), nothing
 *                        shared (glibc bench-malloc-thread-like)
 *   --workload mstress   40 rounds (at --scale 1) of 8 short-lived threads
 *                        (--threads) that allocate 8..511 B (1 in 64:
 *                        1..64 KiB), swap objects through 1024 shared
 *                        slots with threads of this and earlier rounds,
 *                        free what they hold and exit; the time includes
 *                        the threads' start and exit (mstress-like)
 *   --workload larson    4 threads (--threads) replace random objects
 *                        (8..511 B) of a live set of 1000 and every 2000
 *                        replacements swap the set for the one waiting in
 *                        a shared mailbox: they free objects other
 *                        threads made (larson-like)
 *   --workload xmalloc   --threads/2 pairs (default 2): each producer
 *                        allocates 8..511 B objects into a ring, its
 *                        consumer frees them (xmalloc-test-like)
 *                        The threaded workloads (threads, tloop, mstress,
 *                        larson, xmalloc) report "allocs", "frees" and
 *                        "unaccounted" (allocs - frees, 0; else "ok" is
 *                        false); threads, larson and xmalloc divide a fixed
 *                        total of operations among --threads, so their
 *                        time against the thread count is B-scale's curve
 *   --workload b9        N threads (--threads) each allocate 1000 objects
 *                        of 16..256 B, free them and wait while the main
 *                        thread reads VmRSS; baseline: the same threads
 *                        before they called malloc
 *
 * Sizing: --scale F multiplies the operation counts (default 1: each
 * workload takes about 0.1..0.5 s with mimalloc on a 2-core machine, up
 * to 1 s with a slower malloc), --quick is --scale 0.05 with a 16 MiB
 * phase 1 and a 200 ms purge wait (smoke tests, well under a second). Every run is deterministic (xorshift64* seeded from --seed).
 *
 * Prints one JSON line: workload, time_ns (the workload's own time: thread
 * start-up, the purge wait and the final checks are not in it),
 * peak_rss_kb (VmHWM at the end), rss_start_kb, minflt and majflt (page
 * faults of the process during the workload function), the workload's own
 * figures, and "ok" (false when an object's contents were not what was
 * written into it: the allocator handed out overlapping memory or realloc
 * lost bytes; the exit status is then 2) and "misaligned" (posix_memalign
 * results not aligned as asked, see below). Under libuslub-malloc.so it
 * also says which per-CPU mode the process ran in: "percpu_mode" ("thread"
 * or "cpu", USLUB_PERCPU) and "percpu_ids" (the rseq ids that have had
 * sheaves), from uslub_cache_slabinfo of kmalloc-64 after the workload,
 * both found with dlsym (absent under any other malloc), so bench/run.py
 * can tell a per-CPU peer that fell back to per-thread sheaves.
 *
 * The program's own bookkeeping (slot arrays, queues) lives in mmap'ed
 * memory, so what the allocator does is all that malloc sees.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "uslub/types.h"  /* struct uslub_slabinfo: the mode (uslub_mode_extra); declarations only */

/* ------------------------------------------------------------------------
 * Helpers: random numbers, time, RSS, bookkeeping memory
 * ---------------------------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ULL);
	r->s = splitmix64(&x);
	if (!r->s)
		r->s = 1;
}

/* xorshift64* */
static inline uint64_t rng_next(struct rng *r)
{
	uint64_t x = r->s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* uniform in [0, n), n < 2^32 */
static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Log-uniform by octaves: an octave of [lo, lo << k) picked uniformly,
 * then a size uniform inside it. */
static inline size_t size_oct(struct rng *r, size_t lo, unsigned k)
{
	uint64_t x = rng_next(r);
	unsigned oct = (unsigned)(((x >> 32) * k) >> 32);
	size_t base = lo << oct;
	return base + (size_t)(((x & 0xffffffffULL) * base) >> 32);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The start of a threaded workload's timed part: its threads call
 * start_line() and the main thread start_go(), all on one barrier of
 * threads + 1. The first wait says every thread is up; the main thread
 * reads the clock then and the second wait lets them go. A clock read
 * after a single wait could come after the threads had run: on a machine
 * with few CPUs they may do all their work before the main thread is
 * scheduled again (a larson run of 2 threads, 203002 allocations, timed
 * at 837 ns). Thread start-up stays out of the time; the second wait's
 * wake-up is in it, the same for every allocator.
 */
static void start_line(pthread_barrier_t *b)
{
	pthread_barrier_wait(b);
	pthread_barrier_wait(b);
}

static uint64_t start_go(pthread_barrier_t *b)
{
	pthread_barrier_wait(b);
	uint64_t t0 = now_ns();
	pthread_barrier_wait(b);
	return t0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A field of /proc/self/status in kB, read with plain syscalls (no
 * malloc: stdio would allocate its FILE). -1 when missing. */
static long status_kb(const char *key)
{
	char buf[8192];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	close(fd);
	buf[len] = 0;
	size_t kl = strlen(key);
	for (char *p = buf; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (!strncmp(p, key, kl) && p[kl] == ':')
			return strtol(p + kl + 1, NULL, 10);
	}
	return -1;
}

static long rss_kb(void)
{
	return status_kb("VmRSS");
}

/* Page faults of the whole process so far (every thread): minor (a page
 * mapped without I/O, e.g. a fresh anonymous page zeroed by the kernel)
 * and major. */
static void faults(long *minflt, long *majflt)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru)) {
		*minflt = *majflt = -1;
		return;
	}
	*minflt = ru.ru_minflt;
	*majflt = ru.ru_majflt;
}

/* Bookkeeping outside the allocator under test. */
static void *xmap(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mallocsuite: mmap");
		exit(1);
	}
	return p;
}

static void xunmap(void *p, size_t bytes)
{
	munmap(p, bytes);
}

static void oom(size_t n)
{
	fprintf(stderr, "mallocsuite: allocation of %zu bytes failed\n", n);
	exit(1);
}

static _Atomic unsigned long bad_objects;
/* posix_memalign results not aligned as asked: counted apart from
 * bad_objects ("misaligned" in the result line, "ok" stays true), so a
 * peer with a known bug of its own (mimalloc 2.0.9 returns 128-byte
 * aligned blocks for posix_memalign(256, 256), its issue #700) still gets
 * its figures; the smoke tests fail on it. */
static _Atomic unsigned long misaligned;

/* Writes @tag over [from, to) of @p: every byte of short ranges, and of
 * long ones the first 4 KiB, one byte per page and the last byte (what a
 * program that fills a big buffer sparsely does: each page is faulted in). */
static inline void touch(unsigned char *p, size_t from, size_t to, unsigned char tag)
{
	if (to <= from)
		return;
	if (to - from <= 16384) {
		memset(p + from, tag, to - from);
		return;
	}
	memset(p + from, tag, 4096);
	for (size_t off = from + 4096; off < to; off += 4096)
		p[off] = tag;
	p[to - 1] = tag;
}

static inline void check(const unsigned char *p, size_t n, unsigned char tag)
{
	if (p[0] != tag || p[n - 1] != tag)
		bad_objects++;
}

static inline unsigned char tag_of(size_t n, uint32_t salt)
{
	return (unsigned char)(n * 131u + salt * 7u + 1u);
}

/* ------------------------------------------------------------------------
 * Settings and the result line
 * ---------------------------------------------------------------------- */

struct opts {
	const char *workload;
	const char *label;
	double scale;
	uint64_t seed;
	int threads;            /* threads, b9: 0 = the workload's default */
	unsigned purge_ms;      /* phases */
	unsigned phase1_mib;    /* phases */
	bool quick;
};

static struct opts opt = {
	.workload = NULL, .label = "", .scale = 1.0, .seed = 0x5eed0001,
	.threads = 0, .purge_ms = 1500, .phase1_mib = 200,
};

static char extra[2048];        /* ,"key":value pairs of the workload */
static size_t extra_len;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(extra + extra_len, sizeof(extra) - extra_len, fmt, ap);
	va_end(ap);
	if (n > 0 && extra_len + (size_t)n < sizeof(extra))
		extra_len += (size_t)n;
}

/* Under libuslub-malloc.so: its per-CPU mode, into the result line (after
 * the workload, outside every figure). Nothing under another malloc. */
static void uslub_mode_extra(void)
{
	typeof(&uslub_kmalloc_cache) kc =
		(typeof(&uslub_kmalloc_cache))dlsym(RTLD_DEFAULT, "uslub_kmalloc_cache");
	typeof(&uslub_cache_slabinfo) info =
		(typeof(&uslub_cache_slabinfo))dlsym(RTLD_DEFAULT, "uslub_cache_slabinfo");
	if (!kc || !info)
		return;
	uslub_cache_t *s = kc(64);
	struct uslub_slabinfo si;
	if (!s || info(s, &si) || !si.percpu_mode)
		return;
	put(",\"percpu_mode\":\"%s\",\"percpu_ids\":%u", si.percpu_mode, si.percpu_ids);
}

static uint64_t scaled(double base)
{
	double v = base * opt.scale;
	return v < 1 ? 1 : (uint64_t)v;
}

static pthread_t spawn(void *(*fn)(void *), void *arg, size_t stack)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	if (stack)
		pthread_attr_setstacksize(&a, stack);
	int err = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (err) {
		fprintf(stderr, "mallocsuite: pthread_create: %s\n", strerror(err));
		exit(1);
	}
	return t;
}

/* --threads, or the workload's default. */
static int threads_or(int dflt)
{
	return opt.threads > 0 ? opt.threads : dflt;
}

/* The objects a threaded workload made and freed, summed over its
 * threads: a run that lost or doubled one says so ("unaccounted" not 0,
 * and "ok" false). */
static void put_accounting(uint64_t allocs, uint64_t frees)
{
	if (allocs != frees)
		bad_objects++;
	put(",\"allocs\":%llu,\"frees\":%llu,\"unaccounted\":%lld", (unsigned long long)allocs,
	    (unsigned long long)frees, (long long)(allocs - frees));
}

/* ------------------------------------------------------------------------
 * churn and threads
 * ---------------------------------------------------------------------- */

struct slot {
	unsigned char *p;
	uint32_t n;
	uint32_t tag;
};

/* Fill slot @s with a fresh block of @n bytes, patterned by @salt. */
static inline void slot_fill(struct slot *s, size_t n, uint32_t salt)
{
	unsigned char t = tag_of(n, salt);
	s->p = malloc(n);
	if (!s->p)
		oom(n);
	touch(s->p, 0, n, t);
	s->n = (uint32_t)n;
	s->tag = t;
}

/* Check and free the block in @s, then fill it anew. */
static inline void slot_replace(struct slot *s, size_t n, uint32_t salt)
{
	check(s->p, s->n, (unsigned char)s->tag);
	free(s->p);
	slot_fill(s, n, salt);
}

#define BURST 16
#define BURST_EVERY 64

struct churn_arg {
	uint32_t live;
	uint64_t ops;
	uint64_t seed_stream;
	pthread_barrier_t *start;
	uint64_t allocs, frees;
};

/* Random replacement in a live set of @live small objects, @ops times; every
 * BURST_EVERY replacements a LIFO burst of BURST temporaries. */
static void *churn_run(void *argp)
{
	struct churn_arg *a = argp;
	struct rng r;
	rng_init(&r, opt.seed, a->seed_stream);
	size_t bytes = (size_t)a->live * sizeof(struct slot);
	struct slot *s = xmap(bytes);
	unsigned char *tmp[BURST];
	uint64_t allocs = 0, frees = 0;

	if (a->start)
		start_line(a->start);
	for (uint32_t i = 0; i < a->live; i++) {
		slot_fill(&s[i], size_oct(&r, 8, 5), i);
		allocs++;
	}
	for (uint64_t op = 0; op < a->ops; op++) {
		uint32_t i = rng_below(&r, a->live);
		slot_replace(&s[i], size_oct(&r, 8, 5), (uint32_t)op);
		allocs++;
		frees++;
		if (op % BURST_EVERY == BURST_EVERY - 1) {
			size_t bn = size_oct(&r, 8, 5);
			for (int k = 0; k < BURST; k++) {
				tmp[k] = malloc(bn);
				if (!tmp[k])
					oom(bn);
				touch(tmp[k], 0, bn, (unsigned char)k);
			}
			for (int k = BURST - 1; k >= 0; k--) {
				check(tmp[k], bn, (unsigned char)k);
				free(tmp[k]);
			}
			allocs += BURST;
			frees += BURST;
		}
	}
	for (uint32_t i = 0; i < a->live; i++) {
		check(s[i].p, s[i].n, (unsigned char)s[i].tag);
		free(s[i].p);
		frees++;
	}
	xunmap(s, bytes);
	a->allocs = allocs;
	a->frees = frees;
	return NULL;
}

static uint64_t wl_churn(void)
{
	struct churn_arg a = { .live = 32768, .ops = scaled(6e6), .seed_stream = 1 };
	uint64_t t0 = now_ns();
	churn_run(&a);
	uint64_t t = now_ns() - t0;
	put(",\"threads\":1,\"live_objects\":%u,\"ops\":%llu,\"allocs\":%llu",
	    a.live, (unsigned long long)a.ops, (unsigned long long)a.allocs);
	return t;
}

static uint64_t wl_threads(void)
{
	int nt = threads_or(16);
	struct churn_arg *a = xmap(sizeof(*a) * (size_t)nt);
	pthread_t *th = xmap(sizeof(*th) * (size_t)nt);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)nt + 1);
	uint64_t ops = scaled(6e6) / (uint64_t)nt + 1;
	for (int i = 0; i < nt; i++) {
		a[i] = (struct churn_arg){ .live = 2048, .ops = ops,
			.seed_stream = 100 + (uint64_t)i, .start = &start };
		th[i] = spawn(churn_run, &a[i], 0);
	}
	uint64_t t0 = start_go(&start);
	uint64_t allocs = 0, frees = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		allocs += a[i].allocs;
		frees += a[i].frees;
	}
	uint64_t t = now_ns() - t0;
	pthread_barrier_destroy(&start);
	put(",\"threads\":%d,\"live_objects_per_thread\":%u,\"ops_per_thread\":%llu", nt,
	    a[0].live, (unsigned long long)ops);
	put_accounting(allocs, frees);
	xunmap(a, sizeof(*a) * (size_t)nt);
	xunmap(th, sizeof(*th) * (size_t)nt);
	return t;
}

/* ------------------------------------------------------------------------
 * prodcons
 * ---------------------------------------------------------------------- */

#define PC_BATCH 128
#define PC_QUEUE 32             /* batches in flight at most */
#define PC_PRODUCERS 2
#define PC_CONSUMERS 2

struct batch {                  /* malloc'ed by the producer, freed by a consumer */
	uint32_t n;
	uint32_t seq;
	unsigned char *p[PC_BATCH];
	uint32_t size[PC_BATCH];
};

struct pc_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct batch *ring[PC_QUEUE];
	unsigned head, count;
	int producers_left;
	uint64_t batches_per_producer;
	pthread_barrier_t start;
};

struct pc_arg {
	struct pc_queue *q;
	int id;
	uint64_t objects;
	uint64_t bytes;
};

static void *producer(void *argp)
{
	struct pc_arg *a = argp;
	struct pc_queue *q = a->q;
	struct rng r;
	rng_init(&r, opt.seed, 200 + (uint64_t)a->id);
	start_line(&q->start);
	for (uint64_t b = 0; b < q->batches_per_producer; b++) {
		struct batch *bt = malloc(sizeof(*bt));
		if (!bt)
			oom(sizeof(*bt));
		bt->n = PC_BATCH;
		bt->seq = (uint32_t)b;
		for (int k = 0; k < PC_BATCH; k++) {
			size_t n = size_oct(&r, 8, 6);
			bt->p[k] = malloc(n);
			if (!bt->p[k])
				oom(n);
			touch(bt->p[k], 0, n, tag_of(n, bt->seq));
			bt->size[k] = (uint32_t)n;
			a->bytes += n;
		}
		a->objects += PC_BATCH;
		pthread_mutex_lock(&q->lock);
		while (q->count == PC_QUEUE)
			pthread_cond_wait(&q->not_full, &q->lock);
		q->ring[(q->head + q->count) % PC_QUEUE] = bt;
		q->count++;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->lock);
	}
	pthread_mutex_lock(&q->lock);
	if (--q->producers_left == 0)
		pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static void *consumer(void *argp)
{
	struct pc_arg *a = argp;
	struct pc_queue *q = a->q;
	start_line(&q->start);
	for (;;) {
		pthread_mutex_lock(&q->lock);
		while (q->count == 0 && q->producers_left > 0)
			pthread_cond_wait(&q->not_empty, &q->lock);
		if (q->count == 0) {
			pthread_mutex_unlock(&q->lock);
			break;
		}
		struct batch *bt = q->ring[q->head];
		q->head = (q->head + 1) % PC_QUEUE;
		q->count--;
		pthread_cond_signal(&q->not_full);
		pthread_mutex_unlock(&q->lock);
		for (uint32_t k = 0; k < bt->n; k++) {
			check(bt->p[k], bt->size[k], tag_of(bt->size[k], bt->seq));
			a->bytes += bt->size[k];
			free(bt->p[k]);
		}
		a->objects += bt->n;
		free(bt);
	}
	return NULL;
}

static uint64_t wl_prodcons(void)
{
	struct pc_queue *q = xmap(sizeof(*q));
	struct pc_arg *a = xmap(sizeof(*a) * (PC_PRODUCERS + PC_CONSUMERS));
	pthread_t th[PC_PRODUCERS + PC_CONSUMERS];
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->producers_left = PC_PRODUCERS;
	q->batches_per_producer = scaled(3e6) / PC_BATCH / PC_PRODUCERS + 1;
	pthread_barrier_init(&q->start, NULL, PC_PRODUCERS + PC_CONSUMERS + 1);
	for (int i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++) {
		a[i] = (struct pc_arg){ .q = q, .id = i };
		th[i] = spawn(i < PC_PRODUCERS ? producer : consumer, &a[i], 0);
	}
	uint64_t t0 = start_go(&q->start);
	for (int i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++)
		pthread_join(th[i], NULL);
	uint64_t t = now_ns() - t0;
	uint64_t made = 0, freed = 0, bmade = 0, bfreed = 0;
	for (int i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++) {
		if (i < PC_PRODUCERS) {
			made += a[i].objects;
			bmade += a[i].bytes;
		} else {
			freed += a[i].objects;
			bfreed += a[i].bytes;
		}
	}
	if (made != freed || bmade != bfreed)
		bad_objects++;
	put(",\"threads\":%d,\"producers\":%d,\"consumers\":%d,\"batch\":%d,\"objects\":%llu,"
	    "\"bytes\":%llu,\"consumed\":[%llu,%llu]", PC_PRODUCERS + PC_CONSUMERS,
	    PC_PRODUCERS, PC_CONSUMERS, PC_BATCH, (unsigned long long)made,
	    (unsigned long long)bmade, (unsigned long long)a[PC_PRODUCERS].objects,
	    (unsigned long long)a[PC_PRODUCERS + 1].objects);
	pthread_barrier_destroy(&q->start);
	pthread_cond_destroy(&q->not_empty);
	pthread_cond_destroy(&q->not_full);
	pthread_mutex_destroy(&q->lock);
	xunmap(a, sizeof(*a) * (PC_PRODUCERS + PC_CONSUMERS));
	xunmap(q, sizeof(*q));
	return t;
}

/* ------------------------------------------------------------------------
 * realloc
 * ---------------------------------------------------------------------- */

#define RB_BUFFERS 64

struct rbuf {
	unsigned char *p;
	size_t n, target;
	bool vector;
	unsigned char tag;
};

static void rbuf_new(struct rbuf *b, struct rng *r, uint32_t salt)
{
	b->vector = rng_below(r, 4) == 0;
	if (!b->vector)
		b->target = size_oct(r, 64, 10);                 /* 64 B .. 64 KiB */
	else if (rng_below(r, 256) == 0)
		b->target = size_oct(r, 256 << 10, 4);           /* 256 KiB .. 4 MiB */
	else
		b->target = size_oct(r, 1024, 6);                /* 1 .. 64 KiB */
	b->n = 16;
	b->tag = tag_of(b->target, salt);
	b->p = malloc(b->n);
	if (!b->p)
		oom(b->n);
	touch(b->p, 0, b->n, b->tag);
}

static uint64_t wl_realloc(void)
{
	struct rng r;
	rng_init(&r, opt.seed, 300);
	struct rbuf *bufs = xmap(sizeof(*bufs) * RB_BUFFERS);
	uint64_t ops = scaled(2e6), done = 0, big = 0, bytes = 0, moved = 0;
	size_t maxlen = 0;

	uint64_t t0 = now_ns();
	for (int i = 0; i < RB_BUFFERS; i++)
		rbuf_new(&bufs[i], &r, (uint32_t)i);
	for (uint64_t op = 0; op < ops; op++) {
		struct rbuf *b = &bufs[rng_below(&r, RB_BUFFERS)];
		size_t nn = b->vector ? b->n + b->n / 2 + 16 : b->n + 1 + rng_below(&r, 64);
		unsigned char *q = realloc(b->p, nn);
		if (!q)
			oom(nn);
		moved += q != b->p;
		check(q, b->n, b->tag);          /* realloc kept the old contents */
		touch(q, b->n, nn, b->tag);
		b->p = q;
		b->n = nn;
		if (nn >= b->target) {
			check(b->p, b->n, b->tag);
			if (nn > maxlen)
				maxlen = nn;
			big += nn >= (256 << 10);
			bytes += nn;
			done++;
			free(b->p);
			rbuf_new(b, &r, (uint32_t)op);
		}
	}
	for (int i = 0; i < RB_BUFFERS; i++) {
		check(bufs[i].p, bufs[i].n, bufs[i].tag);
		free(bufs[i].p);
	}
	uint64_t t = now_ns() - t0;
	xunmap(bufs, sizeof(*bufs) * RB_BUFFERS);
	put(",\"threads\":1,\"buffers\":%d,\"reallocs\":%llu,\"moved\":%llu,\"completed\":%llu,"
	    "\"completed_over_256k\":%llu,\"completed_bytes\":%llu,\"max_len\":%zu",
	    RB_BUFFERS, (unsigned long long)ops, (unsigned long long)moved,
	    (unsigned long long)done, (unsigned long long)big, (unsigned long long)bytes, maxlen);
	return t;
}

/* ------------------------------------------------------------------------
 * mixed
 * ---------------------------------------------------------------------- */

#define MX_SHORT 256
#define MX_LONG 8192

static size_t mixed_size(struct rng *r, uint64_t *counts)
{
	uint32_t x = rng_below(r, 10000);
	if (x < 9000) {
		counts[0]++;
		return size_oct(r, 8, 6);                /* 8 .. 511 B */
	}
	if (x < 9995) {
		counts[1]++;
		return size_oct(r, 1024, 6);             /* 1 .. 64 KiB */
	}
	counts[2]++;
	return size_oct(r, 256 << 10, 4);                /* 256 KiB .. 4 MiB */
}

/* malloc (94%), calloc (5%) or posix_memalign (1%, 64..256-byte aligned). */
static void mixed_alloc(struct slot *s, struct rng *r, uint64_t *counts, uint32_t salt)
{
	size_t n = mixed_size(r, counts);
	uint32_t how = rng_below(r, 100);
	unsigned char *p;
	if (how < 5) {
		p = calloc(1, n);
		if (!p)
			oom(n);
		if (p[0] || p[n - 1] || p[n / 2])
			bad_objects++;
		counts[3]++;
	} else if (how < 6) {
		size_t al = (size_t)64 << rng_below(r, 3);
		void *v = NULL;
		if (posix_memalign(&v, al, n))
			oom(n);
		p = v;
		if ((uintptr_t)p & (al - 1))
			misaligned++;
		counts[4]++;
	} else {
		p = malloc(n);
		if (!p)
			oom(n);
	}
	unsigned char t = tag_of(n, salt);
	touch(p, 0, n, t);
	s->p = p;
	s->n = (uint32_t)n;
	s->tag = t;
}

static uint64_t wl_mixed(void)
{
	struct rng r;
	rng_init(&r, opt.seed, 400);
	struct slot *sh = xmap(sizeof(*sh) * MX_SHORT);
	struct slot *lg = xmap(sizeof(*lg) * MX_LONG);
	uint64_t counts[5] = { 0 };
	uint64_t ops = scaled(1.5e6);

	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < MX_LONG; i++)
		mixed_alloc(&lg[i], &r, counts, i);
	for (uint32_t i = 0; i < MX_SHORT; i++)
		mixed_alloc(&sh[i], &r, counts, i);
	for (uint64_t op = 0; op < ops; op++) {
		struct slot *s = rng_below(&r, 4) == 0 ? &lg[rng_below(&r, MX_LONG)]
						       : &sh[rng_below(&r, MX_SHORT)];
		check(s->p, s->n, (unsigned char)s->tag);
		free(s->p);
		mixed_alloc(s, &r, counts, (uint32_t)op);
	}
	for (uint32_t i = 0; i < MX_LONG; i++) {
		check(lg[i].p, lg[i].n, (unsigned char)lg[i].tag);
		free(lg[i].p);
	}
	for (uint32_t i = 0; i < MX_SHORT; i++) {
		check(sh[i].p, sh[i].n, (unsigned char)sh[i].tag);
		free(sh[i].p);
	}
	uint64_t t = now_ns() - t0;
	xunmap(sh, sizeof(*sh) * MX_SHORT);
	xunmap(lg, sizeof(*lg) * MX_LONG);
	put(",\"threads\":1,\"ops\":%llu,\"live_short\":%d,\"live_long\":%d,"
	    "\"allocs_small\":%llu,\"allocs_medium\":%llu,\"allocs_large\":%llu,"
	    "\"callocs\":%llu,\"memaligns\":%llu", (unsigned long long)ops, MX_SHORT, MX_LONG,
	    (unsigned long long)counts[0], (unsigned long long)counts[1],
	    (unsigned long long)counts[2], (unsigned long long)counts[3],
	    (unsigned long long)counts[4]);
	return t;
}

/* ------------------------------------------------------------------------
 * phases
 * ---------------------------------------------------------------------- */

/* Phase 1's objects are chained through their first word (no array to
 * hold their pointers: the bookkeeping costs no RSS of its own). */
struct p1obj {
	struct p1obj *next;
	uint32_t n;
	unsigned char tag;
};

#define P1_KEEP_EVERY 100

/* During the purge wait, every 10 ms: 16 small allocations, one of 16..63
 * KiB and one of 256..1023 KiB, freed at once, so allocators that purge
 * lazily from their own calls (small, page-level or large paths) get the
 * chance. The same calls for every allocator. */
#define PURGE_TMP 18
static void purge_wait(unsigned ms, struct rng *r)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;
	unsigned char *tmp[PURGE_TMP];
	size_t tn[PURGE_TMP];
	while (now_ns() < end) {
		for (int k = 0; k < PURGE_TMP; k++) {
			size_t n = k < 16 ? size_oct(r, 16, 5)
				 : k == 16 ? size_oct(r, 16 << 10, 2) : size_oct(r, 256 << 10, 2);
			tmp[k] = malloc(n);
			if (!tmp[k])
				oom(n);
			touch(tmp[k], 0, n, (unsigned char)k);
			tn[k] = n;
		}
		for (int k = PURGE_TMP - 1; k >= 0; k--) {
			check(tmp[k], tn[k], (unsigned char)k);
			free(tmp[k]);
		}
		sleep_ms(10);
	}
}

static uint64_t wl_phases(void)
{
	struct rng r;
	rng_init(&r, opt.seed, 500);
	size_t p1_bytes = (size_t)opt.phase1_mib << 20;
	long rss0 = rss_kb();

	/* phase 1: ~p1_bytes of 16..511-byte objects */
	uint64_t t0 = now_ns();
	struct p1obj *head = NULL;
	uint64_t p1_objects = 0;
	size_t got = 0;
	while (got < p1_bytes) {
		size_t n = size_oct(&r, 16, 5);
		struct p1obj *o = malloc(n);
		if (!o)
			oom(n);
		unsigned char t = tag_of(n, (uint32_t)p1_objects);
		touch((unsigned char *)o, 0, n, t);
		o->next = head;
		o->n = (uint32_t)n;
		o->tag = t;
		head = o;
		got += n;
		p1_objects++;
	}
	uint64_t t_alloc = now_ns() - t0;
	long rss_peak = rss_kb();

	/* free all but every 100th (in reverse order of allocation) */
	t0 = now_ns();
	struct p1obj *keep = NULL;
	uint64_t kept = 0, idx = 0;
	size_t kept_bytes = 0;
	while (head) {
		struct p1obj *o = head;
		head = o->next;
		if (((unsigned char *)o)[o->n - 1] != o->tag)
			bad_objects++;
		if (idx++ % P1_KEEP_EVERY == 0) {
			o->next = keep;
			keep = o;
			kept++;
			kept_bytes += o->n;
		} else {
			free(o);
		}
	}
	uint64_t t_free = now_ns() - t0;
	long rss_freed_now = rss_kb();
	purge_wait(opt.purge_ms, &r);
	long rss_freed = rss_kb();

	/* phase 2: a working set a tenth of phase 1's, 512..8191-byte objects */
	size_t ws_bytes = p1_bytes / 10;
	uint32_t nslots = (uint32_t)(ws_bytes / 2944) + 1;      /* 2944: the mean size */
	struct slot *s = xmap(sizeof(*s) * nslots);
	uint64_t p2_ops = scaled(1.5e5);
	t0 = now_ns();
	for (uint32_t i = 0; i < nslots; i++) {
		slot_fill(&s[i], size_oct(&r, 512, 4), i);
	}
	for (uint64_t op = 0; op < p2_ops; op++) {
		uint32_t i = rng_below(&r, nslots);
		slot_replace(&s[i], size_oct(&r, 512, 4), (uint32_t)op);
	}
	uint64_t t_p2 = now_ns() - t0;
	long rss_end = rss_kb();
	for (uint32_t i = 0; i < nslots; i++) {
		check(s[i].p, s[i].n, (unsigned char)s[i].tag);
		free(s[i].p);
	}
	xunmap(s, sizeof(*s) * nslots);
	while (keep) {
		struct p1obj *o = keep;
		keep = o->next;
		if (((unsigned char *)o)[o->n - 1] != o->tag)
			bad_objects++;
		free(o);
	}

	/* "returned": RSS after the frees (and the purge wait) is below half
	 * of phase 1's peak, both counted above the RSS before phase 1 */
	double frac = rss_peak > rss0 ? (double)(rss_freed - rss0) / (double)(rss_peak - rss0) : 1.0;
	put(",\"threads\":1,\"phase1_bytes\":%zu,\"phase1_objects\":%llu,\"kept_objects\":%llu,"
	    "\"kept_bytes\":%zu,\"phase2_live_objects\":%u,\"phase2_ops\":%llu,"
	    "\"purge_ms\":%u,\"rss_before_kb\":%ld,\"rss_phase1_peak_kb\":%ld,"
	    "\"rss_after_free_nowait_kb\":%ld,\"rss_after_free_kb\":%ld,\"rss_phase2_end_kb\":%ld,"
	    "\"after_free_frac\":%.4f,\"memory_returned\":%s,"
	    "\"phase1_alloc_ns\":%llu,\"phase1_free_ns\":%llu,\"phase2_ns\":%llu",
	    got, (unsigned long long)p1_objects, (unsigned long long)kept, kept_bytes, nslots,
	    (unsigned long long)p2_ops, opt.purge_ms, rss0, rss_peak, rss_freed_now, rss_freed,
	    rss_end, frac, frac < 0.5 ? "true" : "false", (unsigned long long)t_alloc,
	    (unsigned long long)t_free, (unsigned long long)t_p2);
	return t_alloc + t_free + t_p2;
}

/* ------------------------------------------------------------------------
 * large
 * ---------------------------------------------------------------------- */

#define LG_LIVE 2               /* blocks live at a time */
#define LG_MIN (1u << 20)       /* sizes log-uniform in [1 MiB, 32 MiB) */
#define LG_OCTAVES 5
#define LG_CHECK_STRIDE (64u << 10)

struct lgblock {
	unsigned char *p;
	size_t n;
	unsigned char tag;
};

/* What memset wrote into @b: the first and the last byte and one byte
 * every LG_CHECK_STRIDE (a block that overlaps another, or lost pages,
 * shows up). */
static void lg_check(const struct lgblock *b)
{
	for (size_t off = 0; off < b->n; off += LG_CHECK_STRIDE)
		if (b->p[off] != b->tag) {
			bad_objects++;
			return;
		}
	check(b->p, b->n, b->tag);
}

/* Repeated large allocations, filled whole and freed: what a program that
 * builds big buffers (images, decompression, I/O) does. Measures the
 * large-block path: mmap/munmap per block, or a cache of freed spans and
 * what it costs in page faults and RSS. */
static uint64_t wl_large(void)
{
	struct rng r;
	rng_init(&r, opt.seed, 700);
	struct lgblock live[LG_LIVE] = { { 0 } };
	uint64_t ops = scaled(40), bytes = 0;
	size_t maxn = 0;
	long f0, f1, mj0, mj1;

	faults(&f0, &mj0);
	uint64_t t0 = now_ns();
	for (uint64_t op = 0; op < ops; op++) {
		struct lgblock *b = &live[op % LG_LIVE];
		if (b->p) {
			lg_check(b);
			free(b->p);
		}
		/* not a whole number of pages: malloc's header or rounding */
		size_t n = size_oct(&r, LG_MIN, LG_OCTAVES) + rng_below(&r, 4096);
		b->p = malloc(n);
		if (!b->p)
			oom(n);
		b->n = n;
		b->tag = tag_of(n, (uint32_t)op);
		memset(b->p, b->tag, n);
		bytes += n;
		if (n > maxn)
			maxn = n;
	}
	for (int i = 0; i < LG_LIVE; i++) {
		if (!live[i].p)
			continue;
		lg_check(&live[i]);
		free(live[i].p);
	}
	uint64_t t = now_ns() - t0;
	faults(&f1, &mj1);
	put(",\"threads\":1,\"blocks\":%llu,\"live\":%d,\"min_size\":%u,\"max_size\":%zu,"
	    "\"bytes\":%llu,\"loop_minflt\":%ld,\"loop_majflt\":%ld,"
	    "\"minflt_per_mib\":%.2f",
	    (unsigned long long)ops, LG_LIVE, LG_MIN, maxn, (unsigned long long)bytes,
	    f1 - f0, mj1 - mj0, (double)(f1 - f0) / ((double)bytes / (1 << 20)));
	return t;
}

/* ------------------------------------------------------------------------
 * waves-lifo, waves-fifo, waves-shuffle, waves-4t
 * ---------------------------------------------------------------------- */

/*
 * A program that allocates and frees in waves: each wave allocates K small
 * objects (8..128 B, uniform in multiples of 8), writes a few bytes of
 * each, then frees all K, in LIFO order (the last allocated first), FIFO
 * order (the first allocated first) or a shuffled order (a seeded
 * Fisher-Yates over the wave's objects). Nothing stays live between waves,
 * so the whole working set swings from zero to K objects and back every
 * wave: what such a program asks of an allocator is to keep the memory of
 * one wave for the next (a per-thread cache deeper than one wave, or empty
 * slabs/pages kept), rather than returning it to the page level and making
 * it anew each time. The same kind of program as MicroQuill's sh6bench and
 * sh8bench (whose sources are not used here).
 */
#define WV_OBJECTS 50000        /* K: objects per wave */
#define WV_WAVES 200            /* W at --scale 1, single thread */
#define WV_MIN 8
#define WV_CLASSES 16           /* sizes 8, 16, .., 128 */
#define WV_THREADS 4

enum wv_order { WV_LIFO, WV_FIFO, WV_SHUFFLE, WV_NORDERS };
static const char *const wv_order_name[WV_NORDERS] = { "lifo", "fifo", "shuffle" };

struct wv_arg {
	uint64_t waves;
	uint32_t objects;       /* per wave */
	int order;              /* enum wv_order, or -1: rotate per wave */
	uint64_t seed_stream;
	pthread_barrier_t *start;
	uint64_t total;         /* objects allocated (and freed) */
	uint64_t bytes;
	uint64_t by_order[WV_NORDERS];  /* waves run in each order */
};

/* Writes a few bytes of an object of @n >= 8 bytes: its first word and
 * its last byte (what check() reads back). */
static inline void wv_touch(unsigned char *p, size_t n, unsigned char t)
{
	memset(p, t, 8);
	p[n - 1] = t;
}

static void *waves_run(void *argp)
{
	struct wv_arg *a = argp;
	struct rng r;
	rng_init(&r, opt.seed, a->seed_stream);
	size_t bytes = (size_t)a->objects * sizeof(struct slot);
	struct slot *s = xmap(bytes);

	if (a->start)
		start_line(a->start);
	for (uint64_t w = 0; w < a->waves; w++) {
		int order = a->order >= 0 ? a->order : (int)((a->seed_stream + w) % WV_NORDERS);
		uint32_t k = a->objects;
		for (uint32_t i = 0; i < k; i++) {
			size_t n = WV_MIN * (1 + rng_below(&r, WV_CLASSES));
			unsigned char t = tag_of(n, (uint32_t)w + i);
			unsigned char *p = malloc(n);
			if (!p)
				oom(n);
			wv_touch(p, n, t);
			s[i] = (struct slot){ .p = p, .n = (uint32_t)n, .tag = t };
			a->bytes += n;
		}
		if (order == WV_SHUFFLE)
			for (uint32_t i = k - 1; i > 0; i--) {
				uint32_t j = rng_below(&r, i + 1);
				struct slot x = s[i];
				s[i] = s[j];
				s[j] = x;
			}
		if (order == WV_LIFO) {
			for (uint32_t i = k; i-- > 0;) {
				check(s[i].p, s[i].n, (unsigned char)s[i].tag);
				free(s[i].p);
			}
		} else {
			for (uint32_t i = 0; i < k; i++) {
				check(s[i].p, s[i].n, (unsigned char)s[i].tag);
				free(s[i].p);
			}
		}
		a->total += k;
		a->by_order[order]++;
	}
	xunmap(s, bytes);
	return NULL;
}

static uint64_t waves_single(int order)
{
	struct wv_arg a = { .waves = scaled(WV_WAVES), .objects = WV_OBJECTS, .order = order,
			    .seed_stream = 800 + (uint64_t)order };
	uint64_t t0 = now_ns();
	waves_run(&a);
	uint64_t t = now_ns() - t0;
	put(",\"threads\":1,\"order\":\"%s\",\"waves\":%llu,\"objects_per_wave\":%u,"
	    "\"total_objects\":%llu,\"bytes\":%llu,\"min_size\":%d,\"max_size\":%d",
	    wv_order_name[order], (unsigned long long)a.waves, a.objects,
	    (unsigned long long)a.total, (unsigned long long)a.bytes, WV_MIN,
	    WV_MIN * WV_CLASSES);
	return t;
}

static uint64_t wl_waves_lifo(void)
{
	return waves_single(WV_LIFO);
}

static uint64_t wl_waves_fifo(void)
{
	return waves_single(WV_FIFO);
}

static uint64_t wl_waves_shuffle(void)
{
	return waves_single(WV_SHUFFLE);
}

/* WV_THREADS threads, each doing its own waves (a quarter of the single
 * thread's count each, so the four do as much work as one single-thread
 * run), the order rotating per wave and starting at another order in
 * each thread: at any time the threads free in different orders. */
static uint64_t wl_waves_4t(void)
{
	int nt = opt.threads > 0 ? opt.threads : WV_THREADS;
	struct wv_arg *a = xmap(sizeof(*a) * (size_t)nt);
	pthread_t *th = xmap(sizeof(*th) * (size_t)nt);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)nt + 1);
	uint64_t waves = scaled(WV_WAVES) / (uint64_t)nt + 1;
	for (int i = 0; i < nt; i++) {
		a[i] = (struct wv_arg){ .waves = waves, .objects = WV_OBJECTS, .order = -1,
			.seed_stream = 900 + (uint64_t)i, .start = &start };
		th[i] = spawn(waves_run, &a[i], 0);
	}
	uint64_t t0 = start_go(&start);
	uint64_t total = 0, bytes = 0, by_order[WV_NORDERS] = { 0 };
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		total += a[i].total;
		bytes += a[i].bytes;
		for (int o = 0; o < WV_NORDERS; o++)
			by_order[o] += a[i].by_order[o];
	}
	uint64_t t = now_ns() - t0;
	pthread_barrier_destroy(&start);
	put(",\"threads\":%d,\"order\":\"rotating\",\"waves\":%llu,\"waves_per_thread\":%llu,"
	    "\"objects_per_wave\":%u,\"total_objects\":%llu,\"bytes\":%llu,\"min_size\":%d,"
	    "\"max_size\":%d,\"waves_lifo\":%llu,\"waves_fifo\":%llu,\"waves_shuffle\":%llu",
	    nt, (unsigned long long)waves * (unsigned long long)nt, (unsigned long long)waves,
	    (unsigned)WV_OBJECTS, (unsigned long long)total, (unsigned long long)bytes, WV_MIN,
	    WV_MIN * WV_CLASSES, (unsigned long long)by_order[WV_LIFO],
	    (unsigned long long)by_order[WV_FIFO], (unsigned long long)by_order[WV_SHUFFLE]);
	xunmap(a, sizeof(*a) * (size_t)nt);
	xunmap(th, sizeof(*th) * (size_t)nt);
	return t;
}

/* ------------------------------------------------------------------------
 * tloop, mstress, larson, xmalloc: threads that free what others made
 * ---------------------------------------------------------------------- */

/*
 * Self-describing objects for the workloads whose objects change hands
 * (mstress, larson, xmalloc): the object holds its own size in its first
 * 4 bytes and a tag in its fifth and last bytes, so whichever thread
 * frees it can check it without bookkeeping of its own. Every size is at
 * least 8. obj_free() returns the size it found (0: the object was bad).
 */
#define OBJ_MIN 8

static inline void *obj_new(size_t n, uint32_t salt)
{
	unsigned char *p = malloc(n);
	if (!p)
		oom(n);
	uint32_t n32 = (uint32_t)n;
	unsigned char t = tag_of(n, salt);
	memcpy(p, &n32, sizeof(n32));
	p[4] = t;
	p[n - 1] = t;
	return p;
}

static inline size_t obj_free(void *v)
{
	unsigned char *p = v;
	uint32_t n;
	memcpy(&n, p, sizeof(n));
	size_t ok = n >= OBJ_MIN && p[n - 1] == p[4] ? n : 0;
	if (!ok)
		bad_objects++;
	free(p);
	return ok;
}

/* --- tloop: each thread its own fixed loop of random sizes up to 32 KiB --- */

#define TL_SLOTS 1024           /* each thread's working set */
#define TL_THREADS 4
#define TL_OCTAVES 12           /* sizes 8 B .. 32 KiB, log-uniform by octave */

struct tl_arg {
	uint64_t iters;
	uint64_t seed_stream;
	pthread_barrier_t *start;
	uint64_t allocs, frees, bytes, big;
};

/*
 * A thread that frees a random block of its working set and allocates a
 * new one of a random size, a fixed number of times (a glibc
 * bench-malloc-thread-like loop, written here: every thread its own
 * blocks, sizes 8 B .. 32 KiB, log-uniform by octave so each octave gets
 * a twelfth of the calls and most of the bytes are in the large ones).
 * Nothing crosses threads: what it measures is each size class's own
 * paths under threads that share the CPUs.
 */
static void *tloop_run(void *argp)
{
	struct tl_arg *a = argp;
	struct rng r;
	rng_init(&r, opt.seed, a->seed_stream);
	size_t bytes = TL_SLOTS * sizeof(struct slot);
	struct slot *s = xmap(bytes);

	start_line(a->start);
	for (uint32_t i = 0; i < TL_SLOTS; i++) {
		size_t n = size_oct(&r, OBJ_MIN, TL_OCTAVES);
		unsigned char t = tag_of(n, i);
		s[i] = (struct slot){ .p = malloc(n), .n = (uint32_t)n, .tag = t };
		if (!s[i].p)
			oom(n);
		wv_touch(s[i].p, n, t);
		a->allocs++;
	}
	for (uint64_t k = 0; k < a->iters; k++) {
		struct slot *x = &s[rng_below(&r, TL_SLOTS)];
		check(x->p, x->n, (unsigned char)x->tag);
		free(x->p);
		a->frees++;
		size_t n = size_oct(&r, OBJ_MIN, TL_OCTAVES);
		unsigned char t = tag_of(n, (uint32_t)k);
		x->p = malloc(n);
		if (!x->p)
			oom(n);
		wv_touch(x->p, n, t);
		x->n = (uint32_t)n;
		x->tag = t;
		a->allocs++;
		a->bytes += n;
		a->big += n >= 16384;
	}
	for (uint32_t i = 0; i < TL_SLOTS; i++) {
		check(s[i].p, s[i].n, (unsigned char)s[i].tag);
		free(s[i].p);
		a->frees++;
	}
	xunmap(s, bytes);
	return NULL;
}

static uint64_t wl_tloop(void)
{
	int nt = threads_or(TL_THREADS);
	struct tl_arg *a = xmap(sizeof(*a) * (size_t)nt);
	pthread_t *th = xmap(sizeof(*th) * (size_t)nt);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)nt + 1);
	uint64_t iters = scaled(4e6) / (uint64_t)nt + 1;
	for (int i = 0; i < nt; i++) {
		a[i] = (struct tl_arg){ .iters = iters, .seed_stream = 1000 + (uint64_t)i,
					.start = &start };
		th[i] = spawn(tloop_run, &a[i], 0);
	}
	uint64_t t0 = start_go(&start);
	uint64_t allocs = 0, frees = 0, bytes = 0, big = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		allocs += a[i].allocs;
		frees += a[i].frees;
		bytes += a[i].bytes;
		big += a[i].big;
	}
	uint64_t t = now_ns() - t0;
	pthread_barrier_destroy(&start);
	put(",\"threads\":%d,\"slots_per_thread\":%d,\"iters_per_thread\":%llu,\"bytes\":%llu,"
	    "\"allocs_16k_up\":%llu,\"min_size\":%d,\"max_size\":%d", nt, TL_SLOTS,
	    (unsigned long long)iters, (unsigned long long)bytes, (unsigned long long)big, OBJ_MIN,
	    (OBJ_MIN << TL_OCTAVES) - 1);
	put_accounting(allocs, frees);
	xunmap(a, sizeof(*a) * (size_t)nt);
	xunmap(th, sizeof(*th) * (size_t)nt);
	return t;
}

/* --- mstress: short-lived threads in rounds, handing objects on --- */

#define MS_THREADS 8            /* per round */
#define MS_ROUNDS 40            /* at --scale 1 */
#define MS_LOCAL 512            /* each thread's own slots */
#define MS_TRANSFER 1024        /* slots shared by every thread of every round */
#define MS_OPS 8000             /* per thread and round (not scaled: the threads stay short) */

struct ms_shared {
	void *transfer[MS_TRANSFER];    /* atomic exchange; NULL: empty */
	pthread_barrier_t start;
};

struct ms_arg {
	struct ms_shared *sh;
	uint64_t seed_stream;
	uint64_t allocs, frees, handed;
};

/* 1 in 64 blocks 1..64 KiB, the others 8..511 B */
static inline size_t ms_size(struct rng *r)
{
	return rng_below(r, 64) ? size_oct(r, OBJ_MIN, 6) : size_oct(r, 1024, 6);
}

/*
 * One thread of one round: allocates into its own slots (freeing what was
 * there), and one time in eight swaps one of its objects with a shared
 * transfer slot, taking an object another thread made (this round's or
 * an earlier round's, whose thread has exited). At the end it frees
 * everything it holds and exits. What it asks of an allocator: a thread
 * that lives a few milliseconds pays its start (its first allocation),
 * its exit (what it cached), and frees of objects whose thread is gone.
 */
static void *ms_thread(void *argp)
{
	struct ms_arg *a = argp;
	struct ms_shared *sh = a->sh;
	struct rng r;
	rng_init(&r, opt.seed, a->seed_stream);
	void *local[MS_LOCAL] = { 0 };

	for (uint32_t k = 0; k < MS_OPS; k++) {
		uint32_t i = rng_below(&r, MS_LOCAL);
		if (rng_below(&r, 8) == 0 && local[i]) {
			void **slot = &sh->transfer[rng_below(&r, MS_TRANSFER)];
			local[i] = __atomic_exchange_n(slot, local[i], __ATOMIC_ACQ_REL);
			a->handed++;
			continue;
		}
		if (local[i]) {
			obj_free(local[i]);
			a->frees++;
		}
		local[i] = obj_new(ms_size(&r), k);
		a->allocs++;
	}
	for (uint32_t i = 0; i < MS_LOCAL; i++)
		if (local[i]) {
			obj_free(local[i]);
			a->frees++;
		}
	return NULL;
}

static uint64_t wl_mstress(void)
{
	int nt = threads_or(MS_THREADS);
	uint64_t rounds = scaled(MS_ROUNDS);
	struct ms_shared *sh = xmap(sizeof(*sh));
	struct ms_arg *a = xmap(sizeof(*a) * (size_t)nt);
	pthread_t *th = xmap(sizeof(*th) * (size_t)nt);
	uint64_t allocs = 0, frees = 0, handed = 0, max_round = 0;

	uint64_t t0 = now_ns();
	for (uint64_t rd = 0; rd < rounds; rd++) {
		uint64_t r0 = now_ns();
		for (int i = 0; i < nt; i++) {
			a[i] = (struct ms_arg){ .sh = sh,
				.seed_stream = 2000 + rd * (uint64_t)nt + (uint64_t)i };
			th[i] = spawn(ms_thread, &a[i], 256 << 10);
		}
		for (int i = 0; i < nt; i++) {
			pthread_join(th[i], NULL);
			allocs += a[i].allocs;
			frees += a[i].frees;
			handed += a[i].handed;
		}
		uint64_t rt = now_ns() - r0;
		if (rt > max_round)
			max_round = rt;
	}
	for (int i = 0; i < MS_TRANSFER; i++)
		if (sh->transfer[i]) {
			obj_free(sh->transfer[i]);
			frees++;
		}
	uint64_t t = now_ns() - t0;
	put(",\"threads\":%d,\"rounds\":%llu,\"threads_started\":%llu,\"ops_per_thread\":%d,"
	    "\"handed\":%llu,\"max_round_ms\":%.3f", nt, (unsigned long long)rounds,
	    (unsigned long long)rounds * (unsigned long long)nt, MS_OPS,
	    (unsigned long long)handed, (double)max_round / 1e6);
	put_accounting(allocs, frees);
	xunmap(th, sizeof(*th) * (size_t)nt);
	xunmap(a, sizeof(*a) * (size_t)nt);
	xunmap(sh, sizeof(*sh));
	return t;
}

/* --- larson: live sets handed from thread to thread --- */

#define LR_THREADS 4
#define LR_SLOTS 1000           /* objects per live set */
#define LR_EPOCH 2000           /* operations between two hand-overs */

struct lr_shared {
	void **mailbox;         /* atomic exchange: one live set waiting for a thread */
	pthread_barrier_t start;
};

struct lr_arg {
	struct lr_shared *sh;
	void **set;             /* the live set it holds */
	uint64_t ops;
	uint64_t seed_stream;
	uint64_t allocs, frees, handovers;
};

/*
 * Each thread replaces random objects of the live set it holds (frees the
 * old one, allocates a new one of 8..511 B there), and every LR_EPOCH
 * replacements swaps that set for the one waiting in a shared mailbox:
 * from then on it frees objects another thread allocated (a larson-like
 * server, in which a connection's objects outlive the thread that made
 * them, written here with one mailbox instead of thread hand-over). At
 * the end it frees the set it holds.
 */
static void *lr_thread(void *argp)
{
	struct lr_arg *a = argp;
	struct lr_shared *sh = a->sh;
	struct rng r;
	rng_init(&r, opt.seed, a->seed_stream);
	void **set = a->set;

	start_line(&sh->start);
	for (uint64_t k = 0; k < a->ops; k++) {
		uint32_t i = rng_below(&r, LR_SLOTS);
		obj_free(set[i]);
		a->frees++;
		set[i] = obj_new(size_oct(&r, OBJ_MIN, 6), (uint32_t)k);
		a->allocs++;
		if (k % LR_EPOCH == LR_EPOCH - 1) {
			set = __atomic_exchange_n(&sh->mailbox, set, __ATOMIC_ACQ_REL);
			a->handovers++;
		}
	}
	for (uint32_t i = 0; i < LR_SLOTS; i++) {
		obj_free(set[i]);
		a->frees++;
	}
	a->set = set;
	return NULL;
}

static uint64_t wl_larson(void)
{
	int nt = threads_or(LR_THREADS);
	struct lr_shared *sh = xmap(sizeof(*sh));
	struct lr_arg *a = xmap(sizeof(*a) * (size_t)nt);
	pthread_t *th = xmap(sizeof(*th) * (size_t)nt);
	size_t set_bytes = LR_SLOTS * sizeof(void *);
	void **sets = xmap(set_bytes * ((size_t)nt + 1));
	struct rng r;
	rng_init(&r, opt.seed, 3000);
	uint64_t allocs = 0, frees = 0, handovers = 0;

	/* the live sets, made by the main thread before the start: the
	 * first frees of every thread are of objects it did not make */
	for (size_t i = 0; i < LR_SLOTS * ((size_t)nt + 1); i++) {
		sets[i] = obj_new(size_oct(&r, OBJ_MIN, 6), (uint32_t)i);
		allocs++;
	}
	sh->mailbox = sets + LR_SLOTS * (size_t)nt;
	pthread_barrier_init(&sh->start, NULL, (unsigned)nt + 1);
	uint64_t ops = scaled(4e6) / (uint64_t)nt + 1;
	for (int i = 0; i < nt; i++) {
		a[i] = (struct lr_arg){ .sh = sh, .set = sets + LR_SLOTS * (size_t)i, .ops = ops,
					.seed_stream = 3001 + (uint64_t)i };
		th[i] = spawn(lr_thread, &a[i], 0);
	}
	uint64_t t0 = start_go(&sh->start);
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		allocs += a[i].allocs;
		frees += a[i].frees;
		handovers += a[i].handovers;
	}
	uint64_t t = now_ns() - t0;
	for (uint32_t i = 0; i < LR_SLOTS; i++) {
		obj_free(sh->mailbox[i]);
		frees++;
	}
	pthread_barrier_destroy(&sh->start);
	put(",\"threads\":%d,\"slots_per_set\":%d,\"ops_per_thread\":%llu,\"epoch\":%d,"
	    "\"handovers\":%llu", nt, LR_SLOTS, (unsigned long long)ops, LR_EPOCH,
	    (unsigned long long)handovers);
	put_accounting(allocs, frees);
	xunmap(sets, set_bytes * ((size_t)nt + 1));
	xunmap(th, sizeof(*th) * (size_t)nt);
	xunmap(a, sizeof(*a) * (size_t)nt);
	xunmap(sh, sizeof(*sh));
	return t;
}

/* --- xmalloc: producer threads allocate, each one's consumer frees --- */

#define XM_RING 1024            /* pointers in flight per pair, at most */
#define XM_PAIRS 2

struct xm_ring {                /* single producer, single consumer */
	_Alignas(64) uint64_t head;     /* the consumer's: next to take */
	_Alignas(64) uint64_t tail;     /* the producer's: next to fill */
	_Alignas(64) void *slot[XM_RING];
	int done;                       /* the producer finished */
	uint64_t objects;
	uint64_t seed_stream;
	pthread_barrier_t *start;
	uint64_t allocs, frees, waits;
};

/* Spins with sched_yield() while its ring is full: on a machine with fewer
 * CPUs than threads, its consumer runs meanwhile. */
static void *xm_producer(void *argp)
{
	struct xm_ring *q = argp;
	struct rng r;
	rng_init(&r, opt.seed, q->seed_stream);
	start_line(q->start);
	for (uint64_t k = 0; k < q->objects; k++) {
		void *p = obj_new(size_oct(&r, OBJ_MIN, 6), (uint32_t)k);
		q->allocs++;
		uint64_t tail = q->tail;
		while (tail - __atomic_load_n(&q->head, __ATOMIC_ACQUIRE) == XM_RING) {
			q->waits++;
			sched_yield();
		}
		q->slot[tail % XM_RING] = p;
		__atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *xm_consumer(void *argp)
{
	struct xm_ring *q = argp;
	start_line(q->start);
	uint64_t head = q->head;
	for (;;) {
		uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
		if (head == tail) {
			if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE) &&
			    head == __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE))
				break;
			sched_yield();
			continue;
		}
		for (; head != tail; head++) {
			obj_free(q->slot[head % XM_RING]);
			q->frees++;
		}
		__atomic_store_n(&q->head, head, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * --threads N: N/2 pairs (at least one), each a producer that allocates
 * objects of 8..511 B and pushes them into its ring and a consumer that
 * takes and frees them: every free is of another thread's object, and
 * every object goes one way (an xmalloc-test-like pattern, written here).
 */
static uint64_t wl_xmalloc(void)
{
	int pairs = threads_or(2 * XM_PAIRS) / 2;
	if (pairs < 1)
		pairs = 1;
	struct xm_ring *q = xmap(sizeof(*q) * (size_t)pairs);
	pthread_t *th = xmap(sizeof(*th) * 2 * (size_t)pairs);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, 2 * (unsigned)pairs + 1);
	uint64_t per = scaled(1.5e6) / (uint64_t)pairs + 1;
	for (int i = 0; i < pairs; i++) {
		q[i].objects = per;
		q[i].seed_stream = 4000 + (uint64_t)i;
		q[i].start = &start;
		th[2 * i] = spawn(xm_producer, &q[i], 0);
		th[2 * i + 1] = spawn(xm_consumer, &q[i], 0);
	}
	uint64_t t0 = start_go(&start);
	for (int i = 0; i < 2 * pairs; i++)
		pthread_join(th[i], NULL);
	uint64_t t = now_ns() - t0;
	uint64_t allocs = 0, frees = 0, waits = 0;
	for (int i = 0; i < pairs; i++) {
		allocs += q[i].allocs;
		frees += q[i].frees;
		waits += q[i].waits;
	}
	pthread_barrier_destroy(&start);
	put(",\"threads\":%d,\"pairs\":%d,\"objects_per_pair\":%llu,\"ring\":%d,"
	    "\"producer_waits\":%llu", 2 * pairs, pairs, (unsigned long long)per, XM_RING,
	    (unsigned long long)waits);
	put_accounting(allocs, frees);
	xunmap(th, sizeof(*th) * 2 * (size_t)pairs);
	xunmap(q, sizeof(*q) * (size_t)pairs);
	return t;
}

/* ------------------------------------------------------------------------
 * b9
 * ---------------------------------------------------------------------- */

#define B9_OBJS 1000
static const size_t b9_sizes[] = { 16, 32, 64, 128, 256 };
#define B9_NSIZES (sizeof(b9_sizes) / sizeof(b9_sizes[0]))

struct b9_ctx {
	pthread_barrier_t bar;
};

static void *b9_thread(void *argp)
{
	struct b9_ctx *c = argp;
	/* fault in the stack the malloc calls below may use, so that the
	 * baseline already holds it */
	volatile unsigned char stack[32768];
	for (size_t i = 0; i < sizeof(stack); i += 1024)
		stack[i] = (unsigned char)i;
	pthread_barrier_wait(&c->bar);          /* 1: baseline read */
	pthread_barrier_wait(&c->bar);          /* 2: go */
	unsigned char *objs[B9_OBJS];
	for (int i = 0; i < B9_OBJS; i++) {
		size_t n = b9_sizes[i % B9_NSIZES];
		objs[i] = malloc(n);
		if (!objs[i])
			oom(n);
		memset(objs[i], i, n);
	}
	pthread_barrier_wait(&c->bar);          /* 3: live read */
	pthread_barrier_wait(&c->bar);          /* 4: free */
	/* in seven strided passes: not only LIFO */
	for (int k = 0; k < 7; k++)
		for (int i = k; i < B9_OBJS; i += 7) {
			check(objs[i], b9_sizes[i % B9_NSIZES], (unsigned char)i);
			free(objs[i]);
		}
	pthread_barrier_wait(&c->bar);          /* 5: cached read */
	pthread_barrier_wait(&c->bar);          /* 6: exit */
	return NULL;
}

static uint64_t wl_b9(void)
{
	int nt = opt.threads > 0 ? opt.threads : 2;
	struct b9_ctx *c = xmap(sizeof(*c));
	pthread_t *th = xmap(sizeof(*th) * (size_t)nt);
	pthread_barrier_init(&c->bar, NULL, (unsigned)nt + 1);
	long rss_nothreads = rss_kb();
	for (int i = 0; i < nt; i++)
		th[i] = spawn(b9_thread, c, 256 << 10);
	pthread_barrier_wait(&c->bar);          /* 1 */
	long rss_base = rss_kb();
	uint64_t t0 = now_ns();
	pthread_barrier_wait(&c->bar);          /* 2 */
	pthread_barrier_wait(&c->bar);          /* 3 */
	long rss_live = rss_kb();
	pthread_barrier_wait(&c->bar);          /* 4 */
	pthread_barrier_wait(&c->bar);          /* 5 */
	uint64_t t = now_ns() - t0;
	long rss_cached = rss_kb();
	pthread_barrier_wait(&c->bar);          /* 6 */
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	long rss_joined = rss_kb();
	pthread_barrier_destroy(&c->bar);
	xunmap(th, sizeof(*th) * (size_t)nt);
	xunmap(c, sizeof(*c));
	put(",\"threads\":%d,\"objs_per_thread\":%d,\"sizes\":[16,32,64,128,256],"
	    "\"rss_nothreads_kb\":%ld,\"rss_baseline_kb\":%ld,\"rss_live_kb\":%ld,"
	    "\"rss_cached_kb\":%ld,\"rss_joined_kb\":%ld,\"rss_held_kb\":%ld,"
	    "\"rss_held_per_thread_kb\":%.2f", nt, B9_OBJS, rss_nothreads, rss_base, rss_live,
	    rss_cached, rss_joined, rss_cached - rss_base,
	    (double)(rss_cached - rss_base) / nt);
	return t;
}

/* ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	uint64_t (*fn)(void);
} workloads[] = {
	{ "churn", wl_churn },
	{ "prodcons", wl_prodcons },
	{ "realloc", wl_realloc },
	{ "mixed", wl_mixed },
	{ "threads", wl_threads },
	{ "phases", wl_phases },
	{ "large", wl_large },
	{ "waves-lifo", wl_waves_lifo },
	{ "waves-fifo", wl_waves_fifo },
	{ "waves-shuffle", wl_waves_shuffle },
	{ "waves-4t", wl_waves_4t },
	{ "tloop", wl_tloop },
	{ "mstress", wl_mstress },
	{ "larson", wl_larson },
	{ "xmalloc", wl_xmalloc },
	{ "b9", wl_b9 },
};
#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: uslub-bench-mallocsuite --workload NAME [--scale F | --quick] "
		"[--threads N] [--seed S]\n"
		"       [--purge-ms MS] [--phase1-mib MIB] [--label L]\n"
		"workloads:");
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(f, " %s", workloads[i].name);
	fprintf(f, "\n");
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= 0x20)
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	bool scale_set = false, mib_set = false, purge_set = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--quick")) {
			opt.quick = true;
			continue;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--workload")) {
			opt.workload = v;
		} else if (!strcmp(a, "--scale")) {
			opt.scale = strtod(v, NULL);
			scale_set = true;
		} else if (!strcmp(a, "--threads")) {
			opt.threads = atoi(v);
		} else if (!strcmp(a, "--seed")) {
			opt.seed = strtoull(v, NULL, 0);
		} else if (!strcmp(a, "--purge-ms")) {
			opt.purge_ms = (unsigned)atoi(v);
			purge_set = true;
		} else if (!strcmp(a, "--phase1-mib")) {
			opt.phase1_mib = (unsigned)atoi(v);
			mib_set = true;
		} else if (!strcmp(a, "--label")) {
			opt.label = v;
		} else {
			fprintf(stderr, "mallocsuite: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (opt.quick) {
		if (!scale_set)
			opt.scale = 0.05;
		if (!mib_set)
			opt.phase1_mib = 16;
		if (!purge_set)
			opt.purge_ms = 200;
	}
	if (!opt.workload || opt.scale <= 0 || opt.phase1_mib < 1 || opt.threads < 0) {
		usage(stderr);
		return 2;
	}
	uint64_t (*fn)(void) = NULL;
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (!strcmp(opt.workload, workloads[i].name))
			fn = workloads[i].fn;
	if (!fn) {
		fprintf(stderr, "mallocsuite: unknown workload %s\n", opt.workload);
		usage(stderr);
		return 2;
	}

	long rss_start = rss_kb(), minflt0, majflt0, minflt1, majflt1;
	faults(&minflt0, &majflt0);
	uint64_t t = fn();
	faults(&minflt1, &majflt1);
	long peak = status_kb("VmHWM");
	long rss_end = rss_kb();
	uslub_mode_extra();

	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	const char *lib = "?";
	if (sym && dladdr(sym, &info) && info.dli_fname)
		lib = info.dli_fname;

	bool ok = bad_objects == 0;
	printf("{\"workload\":");
	json_str(opt.workload);
	printf(",\"label\":");
	json_str(opt.label);
	printf(",\"malloc_lib\":");
	json_str(lib);
	printf(",\"scale\":%g,\"seed\":%llu,\"time_ns\":%llu,\"peak_rss_kb\":%ld,"
	       "\"rss_start_kb\":%ld,\"rss_end_kb\":%ld,\"minflt\":%ld,\"majflt\":%ld%s,"
	       "\"bad_objects\":%lu,\"misaligned\":%lu,\"ok\":%s}\n", opt.scale,
	       (unsigned long long)opt.seed, (unsigned long long)t, peak, rss_start, rss_end,
	       minflt1 - minflt0, majflt1 - majflt0, extra, (unsigned long)bad_objects,
	       (unsigned long)misaligned, ok ? "true" : "false");
	fflush(stdout);
	if (!ok)
		fprintf(stderr, "mallocsuite: %lu objects did not hold what was written into them\n",
			(unsigned long)bad_objects);
	return ok ? 0 : 2;
}
