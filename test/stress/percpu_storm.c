/*
 * percpu_storm: the allocator in per-CPU mode (USLUB_PERCPU=cpu: every
 * cache's sheaves belong to the rseq concurrency id, not to the thread)
 * under a migration storm.
 *
 * 4x the online CPUs (at least 8) threads each run a fixed number of
 * iterations with their own PRNG (seeded from USLUB_TEST_SEED): they
 * allocate and free objects of a cache of their own ("storm-160", from
 * uslub_cache_create) and of kmalloc (24, 200 and 1000 bytes), singly and
 * in bulk (uslub_cache_alloc_bulk, uslub_cache_free_bulk, kfree_bulk with
 * caches mixed), hand some objects to other threads through small
 * lock-protected outboxes (remote frees), flip their own affinity between
 * single CPUs and all of them (sched_setaffinity) and yield, so that the
 * ids' sections are preempted, migrated and restarted all the time; now
 * and then one flushes itself or shrinks the cache (remote takes of every
 * id's sheaves while the others use them). The main thread sends them
 * SIGUSR1 (pthread_kill) as it goes: the handler, which may interrupt a
 * section or a slow path anywhere, allocates with kmalloc_nolock() and
 * frees with kfree_nolock() (the any-context API, which never touches
 * the sheaves), and hands some of its objects to its thread's ordinary
 * kfree(). One thread forks three times during the storm: each child
 * allocates and frees thousands of objects of every cache, validates
 * them and _exits 0 (under a 20 s alarm: a lock held across fork()
 * becomes a failure).
 *
 * Every object carries a stamp (a tag unique to its allocation, a check
 * word bound to its address, its cache and size, and a fill pattern over
 * the rest of it); its holder keeps the tag and checks the whole stamp
 * before it frees the object, and poisons the tag: an object handed out
 * twice (two owners) shows up as a stamp the holder did not write.
 *
 * At the end (every thread joined, every object freed, uslub_flush_thread())
 * for each cache used: the deferred nolock frees drained and the ids'
 * sheaves taken by uslub_cache_shrink(), validate == 0, the counters
 * (allocs, frees since the storm began) equal the test's own counts
 * exactly, no object is active or live, and storm-160 is destroyed.
 * Skipped (77) where the process has no per-CPU mode (no rseq).
 */
#define _GNU_SOURCE
#include "../integration/check.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_THREADS 64
#define HELD        128        /* objects a thread holds                     */
#define OUTBOX      256        /* remote frees waiting for their thread      */
#define BULK        32
#define HSLOTS      8          /* the signal handler's objects, per thread   */
#define FORKS       3
#define NKINDS      4          /* storm-160, kmalloc 24, 200, 1000          */
#define NKMALLOC    13         /* kmalloc-8 .. kmalloc-8k                   */
#define NTAB        (1 + NKMALLOC)
#define FILL_MAX    256        /* stamped bytes past the header             */

/* A cache with sheaves in every pass of the suite: a sheaf_capacity asked
 * for keeps them with USLUB_CPU_SLABS=1 too (60: the default for these
 * sizes, 123 once rounded to fill the sheaf's allocation). */
static uslub_cache_t *sheaf_cache_create(const char *name, size_t size)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 60;
	return uslub_cache_create_args(name, size, &args, 0);
}

static const size_t kind_size[NKINDS] = { 160, 24, 200, 1000 };

/* tab[0] is storm-160, tab[1..13] the kmalloc caches */
static uslub_cache_t *tab[NTAB];
static int kind_tab[NKINDS];   /* the tab index kmalloc/cache_alloc of a kind uses */

struct hdr {                   /* the first 24 bytes of every object */
	uint64_t tag;
	uint64_t check;
	uint32_t tab;
	uint32_t size;
};

struct item {
	void *p;
	uint64_t tag;
};

struct outbox {
	pthread_mutex_t lock;
	unsigned int n;
	struct item it[OUTBOX];
} __attribute__((aligned(64)));

struct worker {
	pthread_t th;
	int id;
	struct rng rng;
	uint64_t seq;
	struct item held[HELD];
	uint64_t allocs[NTAB], frees[NTAB];
	uint64_t bulk_allocs, bulk_frees, kfree_bulks, remote_sent, remote_freed;
	uint64_t flips, flushes, shrinks, forks, xfer_freed;
	unsigned long cpus_seen[16];   /* sched_getcpu() bits, first 1024 CPUs */
	/* the handler's (it runs on this thread; SIGUSR1 is blocked inside it) */
	volatile int h_on;
	uint64_t hrng, hseq;
	struct item hheld[HSLOTS];
	uint64_t h_allocs[NTAB], h_frees[NTAB];
	uint64_t h_calls, h_fails, h_bad;
	_Atomic(void *) xfer;          /* handler -> thread: freed with kfree() */
	_Atomic uint64_t xfer_tag;
} __attribute__((aligned(64)));

static struct worker workers[MAX_THREADS];
static struct outbox outboxes[MAX_THREADS];
static int nthreads;
static long iters;
static cpu_set_t allowed;
static int allowed_cpus[CPU_SETSIZE];
static int nallowed;
static atomic_int done;
static __thread struct worker *self;

/* ------------------------------------------------------------------------
 * stamps
 * ---------------------------------------------------------------------- */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 32);
}

static int tab_of(const void *p)
{
	uslub_cache_t *s = uslub_object_cache(p);
	for (int i = 0; i < NTAB; i++)
		if (tab[i] == s)
			return i;
	return -1;
}

static void stamp(void *p, uint64_t tag, int t, size_t size)
{
	struct hdr *h = p;
	h->tag = tag;
	h->check = mix(tag ^ (uint64_t)(uintptr_t)p);
	h->tab = (uint32_t)t;
	h->size = (uint32_t)size;
	unsigned char *b = p;
	size_t end = size < sizeof(*h) + FILL_MAX ? size : sizeof(*h) + FILL_MAX;
	for (size_t i = sizeof(*h); i < end; i++)
		b[i] = (unsigned char)(tag * 13 + i);
}

/* 0: the stamp is the one @tag's holder wrote; else a reason */
static const char *stamp_bad(const void *p, uint64_t tag)
{
	const struct hdr *h = p;
	if (h->tag != tag)
		return "tag";
	if (h->check != mix(tag ^ (uint64_t)(uintptr_t)p))
		return "check word";
	if (h->tab >= NTAB || h->size < sizeof(*h))
		return "cache/size";
	const unsigned char *b = p;
	size_t end = h->size < sizeof(*h) + FILL_MAX ? h->size : sizeof(*h) + FILL_MAX;
	for (size_t i = sizeof(*h); i < end; i++)
		if (b[i] != (unsigned char)(tag * 13 + i))
			return "fill";
	return NULL;
}

/* Check @it before it is freed, poison its tag; returns its tab index. */
static int retire(struct item it, int line)
{
	const char *why = stamp_bad(it.p, it.tag);
	if (why) {
		const struct hdr *h = it.p;
		test_fail(__FILE__, line,
			  "object %p: bad %s (tag %#" PRIx64 " expected %#" PRIx64 ", cache %d): "
			  "two owners?", it.p, why, h->tag, it.tag, tab_of(it.p));
	}
	struct hdr *h = it.p;
	int t = (int)h->tab;
	CHECK_MSG(tab_of(it.p) == t, "object %p: stamped for cache %d, in cache %d", it.p, t,
		  tab_of(it.p));
	h->tag = ~h->tag;
	return t;
}

/* unique per allocation: thread, context (handler or not), sequence */
static uint64_t new_tag(struct worker *w, bool handler)
{
	return ((uint64_t)(w->id + 1) << 48) | ((uint64_t)handler << 47) |
	       (handler ? w->hseq++ : w->seq++);
}

/* ------------------------------------------------------------------------
 * the thread's own allocations and frees
 * ---------------------------------------------------------------------- */
static struct item alloc_one(struct worker *w, int kind)
{
	void *p = kind == 0 ? uslub_cache_alloc(tab[0], 0) : uslub_kmalloc(kind_size[kind], 0);
	CHECK_MSG(p, "thread %d: allocation of kind %d failed", w->id, kind);
	int t = kind_tab[kind];
	struct item it = { p, new_tag(w, false) };
	stamp(p, it.tag, t, kind_size[kind]);
	w->allocs[t]++;
	return it;
}

static void free_local(struct worker *w, struct item it)
{
	int t = retire(it, __LINE__);
	w->frees[t]++;
	if (t == 0 && rng_below(&w->rng, 2))
		uslub_cache_free(tab[0], it.p);
	else
		uslub_kfree(it.p);
}

/* To another thread's outbox (it frees it); false: full. */
static bool send_remote(struct worker *w, struct item it)
{
	int dest = (int)rng_below(&w->rng, (uint64_t)nthreads);
	if (dest == w->id)
		dest = (dest + 1) % nthreads;
	struct outbox *o = &outboxes[dest];
	bool ok = false;
	pthread_mutex_lock(&o->lock);
	if (o->n < OUTBOX) {
		o->it[o->n++] = it;
		ok = true;
	}
	pthread_mutex_unlock(&o->lock);
	if (ok)
		w->remote_sent++;
	return ok;
}

static void drop(struct worker *w, struct item it)
{
	if (rng_below(&w->rng, 3) == 0 && send_remote(w, it))
		return;
	free_local(w, it);
}

/* Put @it in a held slot, the slot's old object freed or sent away. */
static void hold(struct worker *w, struct item it)
{
	size_t i = rng_below(&w->rng, HELD);
	if (w->held[i].p)
		drop(w, w->held[i]);
	w->held[i] = it;
}

/* Free @n items: all of one cache with uslub_cache_free_bulk, else mixed
 * with kfree_bulk. */
static void free_many(struct worker *w, struct item *v, size_t n)
{
	if (!n)
		return;
	void *p[2 * HELD + BULK];
	int first = -1;
	bool same = true;
	for (size_t i = 0; i < n; i++) {
		int t = retire(v[i], __LINE__);
		w->frees[t]++;
		p[i] = v[i].p;
		if (first < 0)
			first = t;
		else if (t != first)
			same = false;
	}
	if (same && rng_below(&w->rng, 2)) {
		uslub_cache_free_bulk(tab[first], n, p);
		w->bulk_frees++;
	} else {
		uslub_kfree_bulk(n, p);
		w->kfree_bulks++;
	}
}

static void drain_outbox(struct worker *w)
{
	struct outbox *o = &outboxes[w->id];
	struct item in[OUTBOX];
	pthread_mutex_lock(&o->lock);
	unsigned int n = o->n;
	memcpy(in, o->it, n * sizeof(in[0]));
	o->n = 0;
	pthread_mutex_unlock(&o->lock);
	w->remote_freed += n;
	if (rng_below(&w->rng, 2)) {
		free_many(w, in, n);
	} else {
		for (unsigned int i = 0; i < n; i++)
			free_local(w, in[i]);
	}
}

/* The handler's objects given to the thread: kfree(). */
static void take_xfer(struct worker *w)
{
	void *p = atomic_load(&w->xfer);
	if (!p)
		return;
	struct item it = { p, atomic_load(&w->xfer_tag) };
	CHECK(atomic_exchange(&w->xfer, NULL) == p);
	int t = retire(it, __LINE__);
	w->frees[t]++;
	w->xfer_freed++;
	uslub_kfree(p);
}

static void flip_affinity(struct worker *w)
{
	cpu_set_t set;
	if (rng_below(&w->rng, 3) == 0) {
		set = allowed;
	} else {
		CPU_ZERO(&set);
		CPU_SET(allowed_cpus[rng_below(&w->rng, (uint64_t)nallowed)], &set);
	}
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		CHECK_MSG(errno == EINVAL, "sched_setaffinity: %s", strerror(errno));
	w->flips++;
	sched_yield();
	int cpu = sched_getcpu();
	if (cpu >= 0 && cpu < 1024)
		w->cpus_seen[cpu / 64] |= 1ul << (cpu % 64);
}

/* ------------------------------------------------------------------------
 * the signal handler: kmalloc_nolock / kfree_nolock only
 * ---------------------------------------------------------------------- */
static uint64_t h_next(struct worker *w)
{
	uint64_t z = (w->hrng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void handler(int sig)
{
	(void)sig;
	struct worker *w = self;
	if (!w || !w->h_on)
		return;
	int saved = errno;
	w->h_calls++;
	for (int k = 0; k < 3; k++) {
		uint64_t r = h_next(w);
		unsigned int i = (unsigned int)(r % HSLOTS);
		struct item *it = &w->hheld[i];
		if (it->p) {
			const struct hdr *h = it->p;
			int t = (int)h->tab;
			if (stamp_bad(it->p, it->tag) || t >= NTAB) {
				w->h_bad++;
				it->p = NULL;        /* left alone: the test fails */
				continue;
			}
			((struct hdr *)it->p)->tag = ~it->tag;
			void *none = NULL;
			if ((r >> 20) % 4 == 0 && atomic_compare_exchange_strong(&w->xfer, &none, NULL)) {
				/* to the thread's kfree(): restore the tag it checks */
				((struct hdr *)it->p)->tag = it->tag;
				atomic_store(&w->xfer_tag, it->tag);
				atomic_store(&w->xfer, it->p);
			} else {
				w->h_frees[t]++;
				uslub_kfree_nolock(it->p);
			}
			it->p = NULL;
			continue;
		}
		int kind = 1 + (int)((r >> 8) % 3);
		void *p = uslub_kmalloc_nolock(kind_size[kind], 0, USLUB_NUMA_NO_NODE);
		if (!p) {
			w->h_fails++;
			continue;
		}
		int t = tab_of(p);           /* maybe the next size: its cache */
		if (t < 1) {
			w->h_bad++;
			continue;
		}
		it->p = p;
		it->tag = new_tag(w, true);
		stamp(p, it->tag, t, kind_size[kind]);
		w->h_allocs[t]++;
	}
	errno = saved;
}

/* ------------------------------------------------------------------------
 * fork children
 * ---------------------------------------------------------------------- */
static void child(int round)
{
	alarm(20);
	enum { n = 3000 };
	static struct item v[n];
	struct worker me;
	memset(&me, 0, sizeof(me));
	me.id = MAX_THREADS + round;
	me.rng.s = 0xc41d0000ull + (uint64_t)round;
	for (int kind = 0; kind < NKINDS; kind++) {
		for (int rep = 0; rep < 2; rep++) {
			for (int i = 0; i < n; i++)
				v[i] = alloc_one(&me, kind);
			if (rep) {
				for (int i = 0; i < n; i += BULK)
					free_many(&me, v + i, n - i < BULK ? (size_t)(n - i) : BULK);
			} else {
				for (int i = n; i-- > 0;)
					free_local(&me, v[i]);
			}
		}
		if (kind == 0) {
			void *b[BULK];
			CHECK_EQ(uslub_cache_alloc_bulk(tab[0], 0, BULK, b), BULK);
			uslub_cache_free_bulk(tab[0], BULK, b);
		}
	}
	for (int t = 0; t < NTAB; t++)
		CHECK_MSG(uslub_cache_validate(tab[t]) == 0, "child %d: %s: validate failed",
			  round, uslub_cache_name(tab[t]));
	struct uslub_slabinfo si = slabinfo_get(tab[0]);
	CHECK_MSG(!strcmp(si.percpu_mode, "cpu"), "child %d: percpu_mode %s", round,
		  si.percpu_mode);
	_exit(0);
}

static void fork_one(struct worker *w)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		self = NULL;                 /* no handler work in the child */
		child((int)w->forks);
	}
	int status;
	pid_t r;
	do
		r = waitpid(pid, &status, 0);
	while (r < 0 && errno == EINTR);
	CHECK_MSG(r == pid, "waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		CHECK_MSG(0, "child %" PRIu64 " killed by signal %d%s", w->forks, WTERMSIG(status),
			  WTERMSIG(status) == SIGALRM ? " (deadlock: 20 s alarm)" : "");
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child %" PRIu64 " exited with status %d", w->forks, WEXITSTATUS(status));
	w->forks++;
}

/* ------------------------------------------------------------------------
 * the storm
 * ---------------------------------------------------------------------- */
static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	self = w;
	w->h_on = 1;
	struct item v[2 * HELD + BULK];
	for (long it = 0; it < iters; it++) {
		uint64_t r = rng_next(&w->rng);
		unsigned int op = (unsigned int)(r % 100);
		if (op < 40) {
			hold(w, alloc_one(w, (int)((r >> 8) % NKINDS)));
		} else if (op < 65) {
			size_t i = (r >> 8) % HELD;
			if (w->held[i].p) {
				drop(w, w->held[i]);
				w->held[i].p = NULL;
			}
		} else if (op < 75) {
			/* bulk: storm-160 or a kmalloc cache through the cache API */
			int kind = (r >> 8) % 2 ? 0 : 1 + (int)((r >> 9) % 3);
			int t = kind_tab[kind];
			size_t n = 1 + (r >> 16) % BULK;
			void *p[BULK];
			int got = uslub_cache_alloc_bulk(tab[t], 0, n, p);
			CHECK_MSG(got == (int)n, "thread %d: alloc_bulk(%zu) gave %d", w->id, n, got);
			w->bulk_allocs++;
			size_t nfree = 0;
			for (size_t i = 0; i < n; i++) {
				struct item x = { p[i], new_tag(w, false) };
				stamp(p[i], x.tag, t, kind_size[kind]);
				w->allocs[t]++;
				if ((r >> (24 + i % 32)) & 1)
					hold(w, x);
				else
					v[nfree++] = x;
			}
			free_many(w, v, nfree);
		} else if (op < 85) {
			drain_outbox(w);
		} else if (op < 92) {
			/* a mixed batch of held objects */
			size_t n = 0, want = 1 + (r >> 8) % BULK;
			for (size_t i = (r >> 16) % HELD, k = 0; k < HELD && n < want; k++) {
				size_t j = (i + k) % HELD;
				if (w->held[j].p) {
					v[n++] = w->held[j];
					w->held[j].p = NULL;
				}
			}
			free_many(w, v, n);
		} else if (op < 96) {
			flip_affinity(w);
		} else {
			take_xfer(w);
			sched_yield();
		}
		uint64_t rare = (r >> 40) % 4096;
		if (rare == 0) {
			uslub_flush_thread();    /* takes every id's sheaves */
			w->flushes++;
		} else if (rare == 1) {
			CHECK(uslub_cache_shrink(tab[rng_below(&w->rng, 2) ? 0 : kind_tab[2]]) >= 0);
			w->shrinks++;
		}
		if (w->id == 0 && w->forks < FORKS && it == (long)(w->forks + 1) * iters / (FORKS + 1))
			fork_one(w);
	}
	/* the handler stops; its objects are freed here */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &block, NULL) == 0);
	w->h_on = 0;
	for (int i = 0; i < HSLOTS; i++) {
		struct item it = w->hheld[i];
		if (!it.p)
			continue;
		int t = retire(it, __LINE__);
		w->h_frees[t]++;
		uslub_kfree_nolock(it.p);
		w->hheld[i].p = NULL;
	}
	take_xfer(w);
	for (int i = 0; i < HELD; i++)
		if (w->held[i].p) {
			free_local(w, w->held[i]);
			w->held[i].p = NULL;
		}
	drain_outbox(w);
	atomic_fetch_add(&done, 1);
	return NULL;
}

int main(void)
{
	uint64_t seed = test_seed(0x57024dull);
	unsigned long err0 = uslub_error_count();

	tab[0] = sheaf_cache_create("storm-160", 160);
	CHECK(tab[0]);
	struct uslub_slabinfo si = slabinfo_get(tab[0]);
	if (strcmp(si.percpu_mode, "cpu")) {
		printf("SKIP: percpu_mode is \"%s\", not \"cpu\" (USLUB_PERCPU=cpu without rseq "
		       "or with USLUB_PERCPU unset)\n", si.percpu_mode);
		CHECK_EQ(uslub_cache_destroy(tab[0]), 0);
		return 77;
	}
	CHECK(si.sheaf_capacity > 0);
	/* kmalloc_nolock needs the kmalloc caches made by an ordinary kmalloc */
	uslub_kfree(uslub_kmalloc(8, 0));
	for (int k = 0; k < NKMALLOC; k++) {
		static const size_t ks[NKMALLOC] = { 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024,
						    2048, 4096, 8192 };
		tab[1 + k] = uslub_kmalloc_cache(ks[k]);
		CHECK(tab[1 + k]);
		CHECK_EQU(uslub_cache_object_size(tab[1 + k]), ks[k]);
	}
	kind_tab[0] = 0;
	for (int kind = 1; kind < NKINDS; kind++) {
		uslub_cache_t *s = uslub_kmalloc_cache(kind_size[kind]);
		kind_tab[kind] = -1;
		for (int t = 1; t < NTAB; t++)
			if (tab[t] == s)
				kind_tab[kind] = t;
		CHECK(kind_tab[kind] > 0);
	}
	/* the counters from here on are the test's */
	uint64_t base_allocs[NTAB], base_frees[NTAB];
	for (int t = 0; t < NTAB; t++) {
		uint64_t st[USLUB_NR_STATS];
		uslub_cache_stats(tab[t], st);
		base_allocs[t] = stat_allocs(st);
		base_frees[t] = stat_frees(st);
		CHECK_EQU(base_allocs[t], base_frees[t]);
	}

	CHECK(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			allowed_cpus[nallowed++] = c;
	CHECK(nallowed > 0);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	nthreads = (int)(4 * ncpu < 8 ? 8 : 4 * ncpu);
	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;
	const char *e = getenv("USLUB_TEST_ITERS");
	/* 2.4 M iterations in all (~2 s on 2 CPUs), at least 20,000 a thread */
	iters = e && *e ? atol(e) : scaled(300000 * 8 / nthreads > 20000 ? 300000 * 8 / nthreads : 20000);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	for (int i = 0; i < nthreads; i++) {
		CHECK(pthread_mutex_init(&outboxes[i].lock, NULL) == 0);
		workers[i].id = i;
		workers[i].rng.s = seed * 0x100000001b3ull + (uint64_t)(i + 1) * 0x1000;
		workers[i].hrng = seed ^ (0xa5a5ull << 20) ^ (uint64_t)i;
	}
	double t0 = now_s();
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_create(&workers[i].th, NULL, worker_fn, &workers[i]) == 0);
	/* the driver: signals at random threads until all are done */
	struct rng drv = { seed ^ 0xd41e };
	unsigned long signals = 0;
	while (atomic_load(&done) < nthreads) {
		for (int k = 0; k < 4; k++) {
			int i = (int)rng_below(&drv, (uint64_t)nthreads);
			if (pthread_kill(workers[i].th, SIGUSR1) == 0)
				signals++;
		}
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < nthreads; i++)
		CHECK(pthread_join(workers[i].th, NULL) == 0);
	double storm_s = now_s() - t0;

	/* what was sent after its thread's last drain */
	struct worker last;
	memset(&last, 0, sizeof(last));
	last.id = nthreads;
	last.rng.s = seed ^ 0x1a57;
	for (int i = 0; i < nthreads; i++) {
		struct outbox *o = &outboxes[i];
		for (unsigned int k = 0; k < o->n; k++)
			free_local(&last, o->it[k]);
		last.remote_freed += o->n;
		o->n = 0;
	}
	uslub_flush_thread();

	uint64_t allocs[NTAB] = { 0 }, frees[NTAB] = { 0 };
	struct worker sum;
	memset(&sum, 0, sizeof(sum));
	int migrated = 0;
	for (int i = 0; i <= nthreads; i++) {
		struct worker *w = i < nthreads ? &workers[i] : &last;
		for (int t = 0; t < NTAB; t++) {
			allocs[t] += w->allocs[t] + w->h_allocs[t];
			frees[t] += w->frees[t] + w->h_frees[t];
		}
		sum.bulk_allocs += w->bulk_allocs;
		sum.bulk_frees += w->bulk_frees;
		sum.kfree_bulks += w->kfree_bulks;
		sum.remote_sent += w->remote_sent;
		sum.remote_freed += w->remote_freed;
		sum.flips += w->flips;
		sum.flushes += w->flushes;
		sum.shrinks += w->shrinks;
		sum.forks += w->forks;
		sum.xfer_freed += w->xfer_freed;
		sum.h_calls += w->h_calls;
		sum.h_fails += w->h_fails;
		sum.h_bad += w->h_bad;
		int ncpus = 0;
		for (int k = 0; k < 16; k++)
			ncpus += __builtin_popcountl(w->cpus_seen[k]);
		migrated += ncpus > 1;
	}
	uint64_t h_allocs = 0;
	for (int i = 0; i < nthreads; i++)
		for (int t = 0; t < NTAB; t++)
			h_allocs += workers[i].h_allocs[t];
	si = slabinfo_get(tab[0]);
	printf("percpu_storm: %d threads x %ld iterations on %d CPUs (%d allowed), %.2f s; "
	       "%" PRIu64 " affinity flips (%d threads ran on several CPUs), %u ids; "
	       "%" PRIu64 " bulk allocs, %" PRIu64 " free_bulk, %" PRIu64 " kfree_bulk; "
	       "%" PRIu64 " remote frees; %" PRIu64 " flushes, %" PRIu64 " shrinks, %" PRIu64
	       " forks; %lu signals, %" PRIu64 " handler calls: %" PRIu64 " kmalloc_nolock (%"
	       PRIu64 " NULL), %" PRIu64 " of them freed by kfree\n",
	       nthreads, iters, (int)ncpu, nallowed, storm_s, sum.flips, migrated, si.percpu_ids,
	       sum.bulk_allocs, sum.bulk_frees, sum.kfree_bulks, sum.remote_freed, sum.flushes,
	       sum.shrinks, sum.forks, signals, sum.h_calls, h_allocs, sum.h_fails,
	       sum.xfer_freed);
	CHECK_EQ(sum.h_bad, 0);
	CHECK_EQU(sum.remote_freed, sum.remote_sent);
	CHECK_EQ(sum.forks, FORKS);
	CHECK(sum.flips > 0 && sum.bulk_allocs > 0 && sum.remote_freed > 0);
	CHECK(si.percpu_ids > 0);
	if (nallowed > 1)
		CHECK_MSG(migrated > 0, "no thread ran on more than one CPU");

	for (int t = 0; t < NTAB; t++) {
		uslub_cache_t *s = tab[t];
		const char *name = uslub_cache_name(s);
		CHECK_MSG(allocs[t] == frees[t], "%s: the test allocated %" PRIu64 " and freed %"
			  PRIu64, name, allocs[t], frees[t]);
		/* the deferred kfree_nolock frees drained, every id's sheaves
		 * taken, the barns flushed */
		CHECK(uslub_cache_shrink(s) >= 0);
		long v = uslub_cache_validate(s);
		CHECK_MSG(v == 0, "%s: validate found %ld inconsistencies", name, v);
		uint64_t st[USLUB_NR_STATS];
		uslub_cache_stats(s, st);
		uint64_t a = stat_allocs(st) - base_allocs[t], f = stat_frees(st) - base_frees[t];
		if (allocs[t] || a)
			printf("  %-12s allocs %8" PRIu64 " (pcs %" PRIu64 ") frees %8" PRIu64
			       " (pcs %" PRIu64 ") barn put %" PRIu64 " get %" PRIu64
			       " nolock fail %" PRIu64 " defer %" PRIu64 "\n", name, a,
			       st[USLUB_ALLOC_PCS], f, st[USLUB_FREE_PCS], st[USLUB_BARN_PUT],
			       st[USLUB_BARN_GET], st[USLUB_ALLOC_NOLOCK_FAIL],
			       st[USLUB_FREE_NOLOCK_DEFER]);
		CHECK_MSG(a == allocs[t], "%s: counters say %" PRIu64 " allocs, the test made %"
			  PRIu64, name, a, allocs[t]);
		CHECK_MSG(f == frees[t], "%s: counters say %" PRIu64 " frees, the test made %"
			  PRIu64, name, f, frees[t]);
		si = slabinfo_get(s);
		CHECK_MSG(si.active_objs == 0 && si.live_objs == 0 && si.barn_full == 0,
			  "%s after shrink: active_objs %lu live_objs %lu barn_full %lu", name,
			  si.active_objs, si.live_objs, si.barn_full);
	}
	uint64_t st0[USLUB_NR_STATS];
	uslub_cache_stats(tab[0], st0);
	CHECK_MSG(st0[USLUB_ALLOC_PCS] > 0 && st0[USLUB_FREE_PCS] > 0, "storm-160: sheaves unused");
	CHECK_EQ(uslub_cache_validate(tab[0]), 0);
	CHECK_EQ(uslub_cache_destroy(tab[0]), 0);
	CHECK_EQU(uslub_error_count(), err0);
	printf("percpu_storm: ok\n");
	return 0;
}
