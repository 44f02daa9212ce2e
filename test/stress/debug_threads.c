/*
 * slub_debug under threads, remote frees and fork. NTHREADS threads share
 * one debug cache (F | Z | P | U: every alloc and free takes the checked
 * paths under the node's list_lock). Each thread allocates objects, writes
 * every byte of them (a stamp and a fill pattern, within the object size),
 * and hands them to its neighbour through a mutex-protected queue; the
 * neighbour checks and frees them (remote frees). Some objects are kept a
 * while and freed by their own thread. Seeds are deterministic per thread.
 * Half way through, the main thread forks once: the child (under a 10 s
 * alarm, so a lock held across fork() fails the test) allocates, writes,
 * validates and frees objects of the shared debug cache and of a new debug
 * cache, checks that nothing was reported, and exits 0. At the end every
 * object came back: live 0, allocations == frees in the counters,
 * uslub_cache_validate() == 0, uslub_error_count() == 0, destroy == 0.
 */
#include "../integration/check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define NTHREADS 4
#define OBJ_SIZE 136
#define QCAP 1024
#define KEEP 64
#define DEBUG_FLAGS (USLUB_CONSISTENCY_CHECKS | USLUB_RED_ZONE | USLUB_POISON | USLUB_STORE_USER)

struct obj {
	uint64_t owner;
	uint64_t seq;
	uint64_t check;
	unsigned char fill[OBJ_SIZE - 24];
};
_Static_assert(sizeof(struct obj) == OBJ_SIZE, "object layout");

struct queue {
	pthread_mutex_t lock;
	size_t head, len;
	struct obj *q[QCAP];
};

struct worker {
	pthread_t th;
	int id;
	struct rng rng;
	uint64_t seq;
	uint64_t allocs, frees, remote_frees;
	struct obj *keep[KEEP];
	struct queue in;                  /* filled by the previous thread */
	atomic_int producing_done;
};

static uslub_cache_t *shared;
static struct worker workers[NTHREADS];
static long iters;
static atomic_long progress;          /* iterations done, all threads */
static atomic_int forked;

static uint64_t obj_hash(const struct obj *o)
{
	uint64_t x = (o->owner << 40) ^ o->seq ^ (uint64_t)(uintptr_t)o;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static void obj_stamp(struct obj *o, uint64_t owner, uint64_t seq)
{
	o->owner = owner;
	o->seq = seq;
	o->check = obj_hash(o);
	memset(o->fill, (int)((owner * 31 + seq) & 0xff), sizeof(o->fill));
}

static void obj_check(const struct obj *o, int line)
{
	if (o->check != obj_hash(o))
		test_fail(__FILE__, line, "object %p stamp corrupted (owner %" PRIu64 " seq %" PRIu64 ")",
			  (const void *)o, o->owner, o->seq);
	unsigned char want = (unsigned char)((o->owner * 31 + o->seq) & 0xff);
	for (size_t i = 0; i < sizeof(o->fill); i++)
		if (o->fill[i] != want)
			test_fail(__FILE__, line, "object %p byte %zu is %#x, expected %#x",
				  (const void *)o, 24 + i, o->fill[i], want);
}

static struct obj *obj_new(struct worker *w)
{
	struct obj *o = uslub_cache_alloc(shared, 0);
	CHECK_MSG(o, "thread %d: allocation failed", w->id);
	obj_stamp(o, (uint64_t)w->id, w->seq++);
	w->allocs++;
	return o;
}

static void obj_free(struct worker *w, struct obj *o, int line)
{
	obj_check(o, line);
	if (o->owner != (uint64_t)w->id)
		w->remote_frees++;
	uslub_cache_free(shared, o);
	w->frees++;
}

/* Push to @q; false if it is full. */
static bool q_push(struct queue *q, struct obj *o)
{
	pthread_mutex_lock(&q->lock);
	bool ok = q->len < QCAP;
	if (ok) {
		q->q[(q->head + q->len) % QCAP] = o;
		q->len++;
	}
	pthread_mutex_unlock(&q->lock);
	return ok;
}

/* Pop up to @max objects into @out. */
static size_t q_pop(struct queue *q, struct obj **out, size_t max)
{
	pthread_mutex_lock(&q->lock);
	size_t n = q->len < max ? q->len : max;
	for (size_t i = 0; i < n; i++) {
		out[i] = q->q[q->head];
		q->head = (q->head + 1) % QCAP;
	}
	q->len -= n;
	pthread_mutex_unlock(&q->lock);
	return n;
}

static void drain_some(struct worker *w, size_t max)
{
	struct obj *got[32];
	size_t n = q_pop(&w->in, got, max < 32 ? max : 32);
	for (size_t i = 0; i < n; i++)
		obj_free(w, got[i], __LINE__);
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct worker *next = &workers[(w->id + 1) % NTHREADS];
	struct worker *prev = &workers[(w->id + NTHREADS - 1) % NTHREADS];
	for (int i = 0; i < KEEP; i++)
		w->keep[i] = obj_new(w);
	for (long it = 0; it < iters; it++) {
		struct obj *o = obj_new(w);
		uint64_t r = rng_below(&w->rng, 8);
		if (r < 5) {
			/* to the neighbour, who frees it */
			if (!q_push(&next->in, o))
				obj_free(w, o, __LINE__);
		} else if (r < 7) {
			/* kept a while, freed by this thread later */
			size_t k = (size_t)rng_below(&w->rng, KEEP);
			obj_free(w, w->keep[k], __LINE__);
			w->keep[k] = o;
		} else {
			obj_free(w, o, __LINE__);
		}
		if (rng_below(&w->rng, 4) == 0)
			drain_some(w, 1 + (size_t)rng_below(&w->rng, 16));
		if ((it & 63) == 63)
			atomic_fetch_add_explicit(&progress, 64, memory_order_relaxed);
	}
	atomic_store(&w->producing_done, 1);
	for (int i = 0; i < KEEP; i++)
		obj_free(w, w->keep[i], __LINE__);
	/* the previous thread may still be sending */
	for (;;) {
		int done = atomic_load(&prev->producing_done);
		drain_some(w, 32);
		if (done) {
			drain_some(w, QCAP);
			pthread_mutex_lock(&w->in.lock);
			size_t left = w->in.len;
			pthread_mutex_unlock(&w->in.lock);
			if (!left)
				break;
		} else {
			sched_yield();
		}
	}
	return NULL;
}

/* ---- the fork child ----------------------------------------------------- */
static void child(unsigned long err_at_fork)
{
	alarm(10);
	enum { M = 1000 };
	static struct obj *a[M];
	static unsigned char *b[M];
	CHECK_EQ(uslub_cache_validate(shared), 0);
	uslub_cache_t *mine = uslub_cache_create("dbg-fork-child", 88, 0, DEBUG_FLAGS, NULL);
	CHECK(mine);
	for (int rep = 0; rep < 2; rep++) {
		for (int i = 0; i < M; i++) {
			a[i] = uslub_cache_alloc(shared, 0);
			b[i] = uslub_cache_alloc(mine, 0);
			CHECK_MSG(a[i] && b[i], "child: allocation %d failed", i);
			obj_stamp(a[i], 1000 + (uint64_t)rep, (uint64_t)i);
			memset(b[i], i & 0xff, 88);
		}
		CHECK_EQ(uslub_cache_validate(shared), 0);
		CHECK_EQ(uslub_cache_validate(mine), 0);
		for (int i = 0; i < M; i++) {
			obj_check(a[i], __LINE__);
			uslub_cache_free(shared, a[i]);
			for (int k = 0; k < 88; k++)
				CHECK(b[i][k] == (unsigned char)(i & 0xff));
			uslub_cache_free(mine, b[i]);
		}
	}
	CHECK_EQ(uslub_cache_validate(shared), 0);
	CHECK_EQ(uslub_cache_validate(mine), 0);
	CHECK_EQU(slabinfo_get(mine).live_objs, 0);
	CHECK_EQ(uslub_cache_destroy(mine), 0);
	/* the parent's threads hold objects: destroy must refuse (a report
	 * listing every live object: to /dev/null) */
	fflush(stderr);
	int saved = dup(2), null = open("/dev/null", O_WRONLY);
	CHECK(saved >= 0 && null >= 0 && dup2(null, 2) == 2);
	errno = 0;
	int rc = uslub_cache_destroy(shared);
	int err = errno;
	CHECK(dup2(saved, 2) == 2);
	close(saved);
	close(null);
	CHECK_EQ(rc, -1);
	CHECK_EQ(err, EBUSY);
	CHECK_EQU(uslub_error_count(), err_at_fork + 1);
	CHECK_EQ(uslub_cache_validate(shared), 0);
	_exit(0);
}

static void fork_once(void)
{
	unsigned long err = uslub_error_count();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(err);
	int status;
	pid_t w;
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	CHECK_MSG(w == pid, "waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		CHECK_MSG(0, "fork child killed by signal %d%s", WTERMSIG(status),
			  WTERMSIG(status) == SIGALRM ? " (deadlock: 10 s alarm)" : "");
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child exited with %d",
		  WEXITSTATUS(status));
	atomic_store(&forked, 1);
}

int main(void)
{
	if (getenv("USLUB_DEBUG") || getenv("USLUB_FAILSLAB")) {
		printf("debug_threads: skipped (counts reports exactly)\n");
		return 77;
	}
	uint64_t seed = test_seed(0xd7b6);
	iters = scaled(200000);
	CHECK_EQU(uslub_error_count(), 0);
	shared = uslub_cache_create("dbg-threads", OBJ_SIZE, 0, DEBUG_FLAGS, NULL);
	CHECK(shared);
	CHECK(slabinfo_get(shared).size > OBJ_SIZE);
	double t0 = now_s();
	for (int i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		workers[i].rng.s = seed * 31 + (uint64_t)i;
		pthread_mutex_init(&workers[i].in.lock, NULL);
	}
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&workers[i].th, NULL, worker_fn, &workers[i]) == 0);

	/* fork half way through */
	long half = (long)NTHREADS * iters / 2 / 64 * 64;
	while (atomic_load_explicit(&progress, memory_order_relaxed) < half)
		usleep(500);
	fork_once();
	CHECK_EQU(uslub_error_count(), 0);         /* the child's report stayed there */

	uint64_t allocs = 0, frees = 0, remote = 0;
	for (int i = 0; i < NTHREADS; i++) {
		CHECK(pthread_join(workers[i].th, NULL) == 0);
		allocs += workers[i].allocs;
		frees += workers[i].frees;
		remote += workers[i].remote_frees;
	}
	for (int i = 0; i < NTHREADS; i++)
		CHECK_EQU(workers[i].in.len, 0);
	CHECK(atomic_load(&forked));
	CHECK_EQU(frees, allocs);
	CHECK(remote > 0);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(shared, st);
	CHECK_EQU(stat_allocs(st), allocs);
	CHECK_EQU(stat_frees(st), frees);
	CHECK_EQU(slabinfo_get(shared).live_objs, 0);
	CHECK_EQ(uslub_cache_validate(shared), 0);
	CHECK_EQU(uslub_error_count(), 0);
	CHECK_EQ(uslub_cache_destroy(shared), 0);
	CHECK_EQU(uslub_error_count(), 0);
	printf("debug_threads: ok: %d threads, %" PRIu64 " objects, %" PRIu64
	       " remote frees, one fork child, %.2f s\n", NTHREADS, allocs, remote, now_s() - t0);
	return 0;
}
