/*
 * malloc_preload_stress: threads and fork on the malloc family, with
 * libuslub-malloc LD_PRELOADed into a program that links only libc and
 * pthreads (what an unmodified program gets).
 *
 *   (0) It checks that it really runs on uslub: with LD_PRELOAD set,
 *       uslub_ksize must be found with dlsym (else it fails), and blocks
 *       from malloc, calloc, realloc and posix_memalign must be uslub's
 *       (uslub_ksize(p) >= the request). Without LD_PRELOAD it runs on
 *       whatever malloc the process has (glibc: a self-check of the test).
 *   (a) Thread churn: 200 short-lived threads in waves of 8 (half joined,
 *       half detached), each allocating and freeing blocks of random sizes
 *       with every entry point, handing blocks to a shared queue from which
 *       other threads (often of later waves, after the allocating thread
 *       exited) verify and free them (remote frees), and leaving a block in
 *       a pthread key whose destructor, run during thread exit, verifies
 *       and frees it, allocates again and re-arms itself once (allocation
 *       after the allocator's own thread-exit work). libc's own per-thread
 *       buffers (an unknown error's strerror text, a dlerror message) are
 *       freed by glibc at the very end of thread exit.
 *   (b) Fork under load: 4 threads churn malloc/free/realloc and hand
 *       blocks to each other while the main thread forks 20 times (every
 *       fifth fork from a short-lived thread). Each child, under a 10 s
 *       alarm (a lock held across fork() becomes SIGALRM), verifies and
 *       frees blocks inherited from the parent, allocates and frees a lot,
 *       starts a thread that does the same, and exits 0 through exit(), so
 *       atexit/destructor work runs in the child too. The parent requires
 *       every child to exit 0.
 *   (c) Before main and after exit: a constructor(101) allocates (maybe the
 *       process's first malloc, before uslub is set up) and registers an
 *       atexit handler that runs after the allocator's own exit work (its
 *       USLUB_REPORT) and frees those blocks and allocates again.
 * Every block carries a pattern over its whole request, checked before it
 * is freed; at the end the queue is drained and verified, and on uslub
 * uslub_error_count() must be 0.
 */
#define _GNU_SOURCE
#include "common.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>

#define WAVES 25
#define WAVE_THREADS 8
#define THREAD_OPS 3000
#define QUEUE 2048
#define CHURN_THREADS 4
#define FORKS 20

struct block {
	unsigned char *p;
	size_t n;
	uint64_t seed;
};

static mt_ksize_fn ksize;
static atomic_ulong seed_counter;

/* The shared queue of blocks handed from one thread to another. */
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block queue[QUEUE];
static size_t q_len;
static atomic_long handed, taken;

static size_t rand_size(struct mt_rng *r)
{
	unsigned d = (unsigned)mt_range(r, 0, 999);
	if (d < 700)
		return mt_range(r, 1, 256);
	if (d < 930)
		return mt_range(r, 257, 4096);
	if (d < 997)
		return mt_range(r, 4097, 65536);
	if (d < 999)
		return mt_range(r, 65537, 1 << 20);
	return mt_range(r, 2 << 20, 3 << 20);   /* mapped (huge) blocks */
}

static bool block_alloc(struct mt_rng *r, struct block *b)
{
	size_t n = rand_size(r);
	unsigned how = (unsigned)mt_range(r, 0, 9);
	void *p = NULL;
	if (how < 6) {
		p = malloc(n);
	} else if (how < 7) {
		p = calloc(1, n);
		if (p) {
			const unsigned char *c = p;
			for (size_t i = 0; i < n; i += 61)
				REQUIRE(c[i] == 0, "calloc(%zu) byte %zu not zero", n, i);
		}
	} else if (how < 8) {
		p = realloc(NULL, n);
	} else {
		size_t align = (size_t)8 << mt_range(r, 0, 9);
		REQUIRE(posix_memalign(&p, align, n) == 0, "posix_memalign(%zu, %zu) failed",
			align, n);
		REQUIRE(((uintptr_t)p & (align - 1)) == 0, "posix_memalign(%zu) = %p", align, p);
	}
	REQUIRE(p != NULL, "allocation of %zu bytes failed", n);
	if (ksize)
		REQUIRE(ksize(p) >= n, "uslub_ksize(%p) = %zu < %zu: not uslub memory", p,
			ksize(p), n);
	b->p = p;
	b->n = n;
	b->seed = atomic_fetch_add(&seed_counter, 1) * 0x9e3779b97f4a7c15ull + mt_seed;
	mt_fill(b->p, b->n, b->seed);
	return true;
}

static void block_check(const struct block *b, const char *where)
{
	size_t bad = mt_verify(b->p, b->n, b->seed);
	REQUIRE(bad == (size_t)-1, "%s: block %p (%zu bytes) corrupt at byte %zu", where,
		(void *)b->p, b->n, bad);
}

static void block_free(struct block *b, const char *where)
{
	block_check(b, where);
	free(b->p);
	b->p = NULL;
}

/* realloc to a random size, keeping and checking the contents. */
static void block_realloc(struct mt_rng *r, struct block *b)
{
	block_check(b, "before realloc");
	size_t nn = rand_size(r);
	unsigned char *q = realloc(b->p, nn);
	REQUIRE(q != NULL, "realloc(%zu -> %zu) failed", b->n, nn);
	size_t keep = b->n < nn ? b->n : nn;
	size_t bad = mt_verify(q, keep, b->seed);
	REQUIRE(bad == (size_t)-1, "realloc %zu -> %zu lost byte %zu", b->n, nn, bad);
	b->p = q;
	b->n = nn;
	b->seed = atomic_fetch_add(&seed_counter, 1) * 0x9e3779b97f4a7c15ull + mt_seed;
	mt_fill(b->p, b->n, b->seed);
}

static bool q_put(struct block *b)
{
	bool ok = false;
	pthread_mutex_lock(&q_lock);
	if (q_len < QUEUE) {
		queue[q_len++] = *b;
		ok = true;
	}
	pthread_mutex_unlock(&q_lock);
	if (ok) {
		b->p = NULL;
		atomic_fetch_add(&handed, 1);
	}
	return ok;
}

static bool q_take(struct mt_rng *r, struct block *out)
{
	bool ok = false;
	pthread_mutex_lock(&q_lock);
	if (q_len) {
		size_t k = mt_range(r, 0, q_len - 1);
		*out = queue[k];
		queue[k] = queue[--q_len];
		ok = true;
	}
	pthread_mutex_unlock(&q_lock);
	if (ok)
		atomic_fetch_add(&taken, 1);
	return ok;
}

/* One round of work on a thread's own slots: alloc, free, realloc, hand
 * off, take and free a block of another thread. */
static void churn_step(struct mt_rng *r, struct block *slots, size_t nslots)
{
	struct block *b = &slots[mt_range(r, 0, nslots - 1)];
	unsigned d = (unsigned)mt_range(r, 0, 99);
	if (!b->p) {
		block_alloc(r, b);
	} else if (d < 45) {
		block_free(b, "own free");
	} else if (d < 60) {
		block_realloc(r, b);
	} else if (d < 80) {
		if (!q_put(b))
			block_free(b, "own free (queue full)");
	} else {
		struct block o;
		if (q_take(r, &o))
			block_free(&o, "remote free");
	}
}

/* ------------------------------------------------------------------------
 * (a) thread churn
 * ---------------------------------------------------------------------- */
static pthread_key_t key;
static atomic_long dtor_runs, dtor_frees;
static __thread int dtor_rearmed;
static atomic_int detached_done;

static void key_dtor(void *v)
{
	struct block *b = v;
	struct mt_rng r = { (uint64_t)(uintptr_t)v };
	atomic_fetch_add(&dtor_runs, 1);
	block_free(b, "key destructor");
	free(b);
	atomic_fetch_add(&dtor_frees, 1);
	/* Allocate during thread exit, then once more leave a block for a
	 * second destructor round. */
	for (int i = 0; i < 50; i++) {
		struct block t;
		block_alloc(&r, &t);
		block_free(&t, "destructor temporary");
	}
	if (!dtor_rearmed) {
		dtor_rearmed = 1;
		struct block *nb = malloc(sizeof(*nb));
		REQUIRE(nb != NULL, "malloc in destructor");
		block_alloc(&r, nb);
		REQUIRE(pthread_setspecific(key, nb) == 0, "pthread_setspecific in destructor");
	}
}

struct churn_arg {
	int id;
	bool detached;
};

static void *short_thread(void *varg)
{
	struct churn_arg *a = varg;
	struct mt_rng r = { mt_seed ^ ((uint64_t)a->id * 0x51ed27ull) };
	struct block slots[128] = { { 0 } };
	for (int op = 0; op < THREAD_OPS; op++)
		churn_step(&r, slots, 128);
	/* Leave some blocks to others (freed after this thread is gone). */
	for (int i = 0; i < 128; i++)
		if (slots[i].p && !(mt_next(&r) & 1) && q_put(&slots[i]))
			continue;
		else if (slots[i].p)
			block_free(&slots[i], "thread end");
	struct block *kb = malloc(sizeof(*kb));
	REQUIRE(kb != NULL, "malloc");
	block_alloc(&r, kb);
	REQUIRE(pthread_setspecific(key, kb) == 0, "pthread_setspecific");
	/* libc's own per-thread allocations, which glibc frees at the very end
	 * of thread exit (after the key destructors): an unknown error's
	 * strerror text and a dlerror message. */
	char *msg = strerror(100000 + a->id);
	REQUIRE(msg && strstr(msg, "100"), "strerror");
	if ((a->id & 3) == 0) {
		REQUIRE(dlopen("/nonexistent/uslub-test.so", RTLD_NOW) == NULL, "dlopen");
		(void)dlerror();
		REQUIRE(dlopen("/nonexistent/uslub-test-2.so", RTLD_NOW) == NULL, "dlopen");
	}
	if (a->detached) {
		free(a);
		atomic_fetch_add(&detached_done, 1);
	}
	return NULL;
}

static void thread_churn(void)
{
	REQUIRE(pthread_key_create(&key, key_dtor) == 0, "pthread_key_create");
	int detached = 0;
	for (int w = 0; w < WAVES; w++) {
		pthread_t th[WAVE_THREADS];
		struct churn_arg args[WAVE_THREADS];
		for (int i = 0; i < WAVE_THREADS; i++) {
			int id = w * WAVE_THREADS + i;
			if (i & 1) {
				/* detached: its argument is its own to free */
				struct churn_arg *a = malloc(sizeof(*a));
				REQUIRE(a != NULL, "malloc");
				a->id = id;
				a->detached = true;
				pthread_attr_t at;
				pthread_attr_init(&at);
				pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
				REQUIRE(pthread_create(&th[i], &at, short_thread, a) == 0,
					"pthread_create");
				pthread_attr_destroy(&at);
				detached++;
			} else {
				args[i].id = id;
				args[i].detached = false;
				REQUIRE(pthread_create(&th[i], NULL, short_thread, &args[i]) == 0,
					"pthread_create");
			}
		}
		for (int i = 0; i < WAVE_THREADS; i += 2)
			pthread_join(th[i], NULL);
	}
	/* The detached ones finish their work (their exit may still be
	 * running: the destructors are counted below after a grace wait). */
	while (atomic_load(&detached_done) < detached)
		usleep(1000);
	for (int i = 0; i < 2000 && atomic_load(&dtor_runs) < 2L * WAVES * WAVE_THREADS; i++)
		usleep(1000);
	CHECK_MSG(atomic_load(&dtor_runs) == 2L * WAVES * WAVE_THREADS,
		  "key destructors ran %ld times, expected %d", atomic_load(&dtor_runs),
		  2 * WAVES * WAVE_THREADS);
	/* The main thread frees what the exited threads left. */
	struct mt_rng r = { mt_seed };
	struct block b;
	long left = 0;
	while (q_take(&r, &b)) {
		block_free(&b, "drain after churn");
		left++;
	}
	CHECK(atomic_load(&handed) == atomic_load(&taken));
	printf("  thread churn: %d threads, %ld blocks handed off, %ld freed after their "
	       "threads exited, %ld destructor frees\n",
	       WAVES * WAVE_THREADS, atomic_load(&handed), left, atomic_load(&dtor_frees));
}

/* ------------------------------------------------------------------------
 * (b) fork while other threads allocate
 * ---------------------------------------------------------------------- */
static atomic_int stop_churn;
static atomic_long churn_ops;

static void *churn_thread(void *varg)
{
	int id = (int)(intptr_t)varg;
	struct mt_rng r = { mt_seed ^ (0xc0ffeeull * (uint64_t)(id + 1)) };
	struct block slots[256] = { { 0 } };
	while (!atomic_load(&stop_churn)) {
		for (int i = 0; i < 64; i++)
			churn_step(&r, slots, 256);
		atomic_fetch_add(&churn_ops, 64);
	}
	for (int i = 0; i < 256; i++)
		if (slots[i].p)
			block_free(&slots[i], "churn end");
	return NULL;
}

static void *child_thread(void *varg)
{
	struct mt_rng r = { (uint64_t)(uintptr_t)varg };
	struct block slots[64] = { { 0 } };
	for (int op = 0; op < 5000; op++) {
		struct block *b = &slots[mt_range(&r, 0, 63)];
		if (b->p)
			block_free(b, "child thread");
		else
			block_alloc(&r, b);
	}
	for (int i = 0; i < 64; i++)
		if (slots[i].p)
			block_free(&slots[i], "child thread end");
	return NULL;
}

/* The forked child: the parent's other threads are gone, maybe mid-call. */
static void child_main(int k, struct block *inherited, size_t ninh)
{
	alarm(10);
	struct mt_rng r = { mt_seed ^ (0xf0f0ull + (uint64_t)k) };
	for (size_t i = 0; i < ninh; i++)
		if (inherited[i].p)
			block_free(&inherited[i], "child: inherited block");
	struct block slots[256] = { { 0 } };
	for (int op = 0; op < 10000; op++) {
		struct block *b = &slots[mt_range(&r, 0, 255)];
		if (!b->p)
			block_alloc(&r, b);
		else if (mt_range(&r, 0, 3) == 0)
			block_realloc(&r, b);
		else
			block_free(b, "child");
	}
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, child_thread, (void *)(uintptr_t)(k + 1)) == 0,
		"pthread_create in child");
	pthread_join(th, NULL);
	for (int i = 0; i < 256; i++)
		if (slots[i].p)
			block_free(&slots[i], "child end");
	if (ksize) {
		mt_errcount_fn errs = mt_uslub_error_count();
		REQUIRE(errs && errs() == 0, "child: uslub_error_count() = %lu",
			errs ? errs() : 0ul);
	}
	exit(0);   /* atexit handlers and destructors run in the child */
}

struct forker_arg {
	int k;
	struct block *inh;
	size_t ninh;
	pid_t pid;
};

static void *forker_thread(void *varg)
{
	struct forker_arg *a = varg;
	/* A thread with blocks of its own: in the child it is the only one. */
	struct mt_rng r = { mt_seed ^ 0xabcdefull ^ (uint64_t)a->k };
	struct block mine[16];
	for (int i = 0; i < 16; i++)
		block_alloc(&r, &mine[i]);
	a->pid = fork();
	if (a->pid == 0) {
		for (int i = 0; i < 16; i++)
			block_free(&mine[i], "child: forker thread's block");
		child_main(a->k, a->inh, a->ninh);
	}
	for (int i = 0; i < 16; i++)
		block_free(&mine[i], "forker thread");
	return NULL;
}

static void fork_under_load(void)
{
	pthread_t th[CHURN_THREADS];
	for (int i = 0; i < CHURN_THREADS; i++)
		REQUIRE(pthread_create(&th[i], NULL, churn_thread, (void *)(intptr_t)i) == 0,
			"pthread_create");
	struct mt_rng r = { mt_seed ^ 0x5eedull };
	int ok = 0;
	for (int k = 0; k < FORKS; k++) {
		/* Let the churn get going between forks. */
		long base = atomic_load(&churn_ops);
		for (int i = 0; i < 200 && atomic_load(&churn_ops) < base + 2000; i++)
			usleep(500);
		struct block inh[32];
		for (int i = 0; i < 32; i++)
			block_alloc(&r, &inh[i]);
		/* and a page run and a mapped block the child frees */
		block_free(&inh[0], "parent");
		block_free(&inh[1], "parent");
		inh[0].n = 100000;
		inh[1].n = 5u << 20;
		for (int i = 0; i < 2; i++) {
			inh[i].p = malloc(inh[i].n);
			REQUIRE(inh[i].p != NULL, "malloc(%zu)", inh[i].n);
			mt_fill(inh[i].p, inh[i].n, inh[i].seed);
		}
		pid_t pid;
		if (k % 5 == 4) {
			struct forker_arg a = { k, inh, 32, -1 };
			pthread_t ft;
			REQUIRE(pthread_create(&ft, NULL, forker_thread, &a) == 0, "pthread_create");
			pthread_join(ft, NULL);
			pid = a.pid;
		} else {
			pid = fork();
			if (pid == 0)
				child_main(k, inh, 32);
		}
		REQUIRE(pid > 0, "fork failed: %s", strerror(errno));
		int st = 0;
		REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			(void)CHECK_MSG(0, "fork %d: child deadlocked (SIGALRM after 10 s)", k);
		else
			(void)CHECK_MSG(0, "fork %d: child %s %d", k,
				  WIFSIGNALED(st) ? "killed by signal" : "exited with",
				  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		for (int i = 0; i < 32; i++)
			block_free(&inh[i], "parent after fork");
	}
	atomic_store(&stop_churn, 1);
	for (int i = 0; i < CHURN_THREADS; i++)
		pthread_join(th[i], NULL);
	struct block b;
	while (q_take(&r, &b))
		block_free(&b, "drain after fork");
	CHECK(atomic_load(&handed) == atomic_load(&taken));
	printf("  fork under load: %d/%d children exited 0, %ld churn ops meanwhile\n", ok,
	       FORKS, atomic_load(&churn_ops));
}

/* ------------------------------------------------------------------------
 * Before main and after exit: a constructor that runs before everything
 * else of this program allocates (maybe the process's first malloc), and
 * registers an atexit handler, which therefore runs after any handler the
 * allocator registered later (its exit report): that handler checks and
 * frees the early blocks and allocates again.
 * ---------------------------------------------------------------------- */
static struct block early[8];

static void late_exit_handler(void)
{
	struct mt_rng r = { 99 };
	for (int i = 0; i < 8; i++)
		if (early[i].p)
			block_free(&early[i], "atexit: block from the early constructor");
	for (int i = 0; i < 200; i++) {
		struct block b;
		block_alloc(&r, &b);
		block_free(&b, "atexit");
	}
	char *s = strdup("after exit");
	REQUIRE(s && !strcmp(s, "after exit"), "strdup in atexit");
	free(s);
}

__attribute__((constructor(101))) static void early_ctor(void)
{
	struct mt_rng r = { 98 };
	atexit(late_exit_handler);
	for (int i = 0; i < 8; i++) {
		block_alloc(&r, &early[i]);
		if (i & 1)
			block_realloc(&r, &early[i]);
	}
}

/* ------------------------------------------------------------------------ */
static void check_on_uslub(void)
{
	const char *pre = getenv("LD_PRELOAD");
	ksize = mt_uslub_ksize();
	if (pre && *pre && !ksize) {
		fprintf(stderr, "FAIL: LD_PRELOAD=%s but uslub_ksize is not in the process: "
				"not running on uslub\n", pre);
		exit(1);
	}
	printf("malloc_preload_stress: %s\n",
	       ksize ? "on uslub" : "NOT on uslub (no LD_PRELOAD: a self-check on libc)");
	if (!ksize)
		return;
	const char *owner = mt_sym_owner("malloc");
	CHECK_MSG(strstr(owner, "uslub") != NULL, "malloc resolves to '%s'", owner);
	owner = mt_sym_owner("free");
	CHECK_MSG(strstr(owner, "uslub") != NULL, "free resolves to '%s'", owner);
	/* The blocks this program gets are uslub's. */
	void *a = malloc(100), *b = calloc(10, 100), *c = realloc(NULL, 5000), *d = NULL;
	CHECK(posix_memalign(&d, 4096, 300) == 0);
	CHECK(a && b && c && d);
	CHECK_MSG(ksize(a) >= 100 && ksize(b) >= 1000 && ksize(c) >= 5000 && ksize(d) >= 300,
		  "uslub_ksize: %zu %zu %zu %zu", ksize(a), ksize(b), ksize(c), ksize(d));
	CHECK(malloc_usable_size(a) == ksize(a));
	free(a);
	free(b);
	free(c);
	free(d);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	mt_seed_init(7345);
	check_on_uslub();
	for (int i = 0; i < 8; i++) {
		block_check(&early[i], "early block in main");
		if (ksize)
			CHECK_MSG(ksize(early[i].p) >= early[i].n,
				  "block from the early constructor is not uslub's");
	}
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	thread_churn();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fork_under_load();
	clock_gettime(CLOCK_MONOTONIC, &t2);
	printf("  times: churn %.2f s, fork %.2f s\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
	       (double)(t2.tv_sec - t1.tv_sec) + (double)(t2.tv_nsec - t1.tv_nsec) * 1e-9);
	if (ksize) {
		mt_errcount_fn errs = mt_uslub_error_count();
		if (CHECK(errs != NULL))
			CHECK_MSG(errs() == 0, "uslub_error_count() = %lu", errs());
	}
	if (mt_failures) {
		printf("malloc_preload_stress: %d check(s) failed\n", mt_failures);
		return 1;
	}
	printf("malloc_preload_stress: all passed\n");
	return 0;
}
