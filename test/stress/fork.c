/*
 * fork: the child of a multi-threaded process gets a usable allocator.
 * While 3 threads allocate, free and hand objects to each other (remote
 * frees) on a shared cache, the process forks FORKS times (every fourth
 * fork from a short-lived thread with objects of its own, so that in that
 * child the main thread is one of the vanished threads). Each child
 * (under a 10 s alarm, so a lock held across fork() becomes a failure)
 * allocates and frees thousands of objects from the shared cache and a new
 * one, validates both, checks destroy of the shared cache (live objects of
 * the parent's threads) fails with EBUSY, prints slabinfo to /dev/null and
 * _exits 0. The parent requires every child to exit 0, then stops its
 * threads and checks that every object came back.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

#define NTHREADS 3
#define FORKS 40
#define RING 256
#define HANDOFF 512
#define SHARED_SIZE 128

struct obj {
	uint64_t owner;
	uint64_t seq;
	uint64_t check;
	unsigned char fill[SHARED_SIZE - 24];
};

static uslub_cache_t *shared;
static atomic_int stop;
static atomic_int ready;
static pthread_mutex_t handoff_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *handoff[HANDOFF];
static size_t handoff_len;

struct worker {
	pthread_t th;
	int id;
	struct rng rng;
	uint64_t allocs, frees;
	uint64_t seq;
	struct obj *ring[RING];
};
static struct worker workers[NTHREADS];

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
	memset(o->fill, (int)(owner * 31 + seq), sizeof(o->fill));
}

static void obj_check(const struct obj *o, int line)
{
	if (o->check != obj_hash(o))
		test_fail(__FILE__, line, "object %p stamp corrupted (owner %" PRIu64 " seq %" PRIu64 ")",
			  (const void *)o, o->owner, o->seq);
	for (size_t i = 0; i < sizeof(o->fill); i++)
		if (o->fill[i] != (unsigned char)(o->owner * 31 + o->seq))
			test_fail(__FILE__, line, "object %p byte %zu corrupted", (const void *)o,
				  24 + i);
}

static void obj_free(struct obj *o, int line)
{
	obj_check(o, line);
	o->check = ~o->check;
	uslub_cache_free(shared, o);
}

static struct obj *obj_new(struct worker *w)
{
	struct obj *o = uslub_cache_alloc(shared, 0);
	CHECK_MSG(o, "thread %d: alloc failed", w->id);
	obj_stamp(o, (uint64_t)w->id, w->seq++);
	w->allocs++;
	return o;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < RING; i++)
		w->ring[i] = obj_new(w);
	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int k = 0; k < 64; k++) {
			size_t i = rng_below(&w->rng, RING);
			struct obj *o = w->ring[i];
			w->ring[i] = obj_new(w);
			if (rng_below(&w->rng, 4) == 0) {
				/* swap with the handoff pool: another thread frees it */
				pthread_mutex_lock(&handoff_lock);
				if (handoff_len < HANDOFF) {
					handoff[handoff_len++] = o;
					o = NULL;
				} else {
					size_t j = rng_below(&w->rng, HANDOFF);
					struct obj *t = handoff[j];
					handoff[j] = o;
					o = t;
				}
				pthread_mutex_unlock(&handoff_lock);
			}
			if (o) {
				obj_free(o, __LINE__);
				w->frees++;
			}
		}
	}
	for (int i = 0; i < RING; i++) {
		obj_free(w->ring[i], __LINE__);
		w->frees++;
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	void **v = arg;
	for (int i = 0; i < 500; i++) {
		v[i] = uslub_cache_alloc(shared, 0);
		CHECK(v[i]);
		memset(v[i], 0x3c, SHARED_SIZE);
	}
	for (int i = 0; i < 250; i++)
		uslub_cache_free(shared, v[i]);
	return NULL;
}

static void child(int round)
{
	alarm(10);
	enum { n = 3000 };
	char name[32];
	snprintf(name, sizeof(name), "fork-child-%d", round);
	uslub_cache_t *mine = uslub_cache_create(name, 200, 0, 0, NULL);
	CHECK_MSG(mine, "child %d: create failed", round);
	CHECK_EQ(uslub_cache_validate(shared), 0);
	/* the test's own arrays static, not malloc'd: under ASan the
	 * program's malloc is the runtime's, whose allocator locks a parent
	 * thread may hold across fork() (gcc 12's libasan has no fork
	 * handlers for them) */
	static struct obj *a[n];
	static unsigned char *b[n];
	for (int rep = 0; rep < 2; rep++) {
		for (size_t i = 0; i < n; i++) {
			a[i] = uslub_cache_alloc(shared, 0);
			b[i] = uslub_cache_alloc(mine, 0);
			CHECK_MSG(a[i] && b[i], "child %d: alloc %zu failed", round, i);
			obj_stamp(a[i], 1000 + (uint64_t)round, i);
			memset(b[i], (int)(i & 0xff), 200);
		}
		for (size_t i = 0; i < n; i++) {
			obj_free(a[i], __LINE__);
			for (size_t k = 0; k < 200; k++)
				CHECK_MSG(b[i][k] == (unsigned char)(i & 0xff),
					  "child %d: object %zu of the new cache corrupted", round, i);
			uslub_cache_free(mine, b[i]);
		}
	}
	CHECK_EQ(uslub_cache_validate(shared), 0);
	CHECK_EQ(uslub_cache_validate(mine), 0);
	CHECK_EQU(slabinfo_get(mine).live_objs, 0);

#if !defined(TSAN) && !defined(ASAN)
	/* threads work in the child too (TSan does not support them after a
	 * multi-threaded fork; under ASan a new thread's setup frees into the
	 * runtime's allocator, whose lock a parent thread may have held at
	 * fork(): seen as a child hung in SizeClassAllocator64::
	 * GetFromAllocator under pthread_getattr_np, once in 40 runs on a
	 * loaded 2-CPU machine, before and after issue 26's changes) */
	void *tv[500];
	pthread_t th;
	CHECK(pthread_create(&th, NULL, child_thread, tv) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	for (int i = 250; i < 500; i++)
		uslub_cache_free(shared, tv[i]);
	CHECK_EQ(uslub_cache_validate(shared), 0);
#else
	(void)child_thread;
#endif

	/* the parent's threads hold live objects: destroy must refuse */
	errno = 0;
	CHECK_EQ(uslub_cache_destroy(shared), -1);
	CHECK_EQ(errno, EBUSY);
	CHECK_EQ(uslub_cache_validate(shared), 0);
	/* and the shared cache is still usable after that */
	void *p = uslub_cache_alloc(shared, 0);
	CHECK(p);
	uslub_cache_free(shared, p);

	FILE *f = fopen("/dev/null", "w");
	CHECK(f);
	uslub_slabinfo_print(f, USLUB_FMT_TABLE);
	uslub_slabinfo_print(f, USLUB_FMT_JSON);
	CHECK(fclose(f) == 0);

	uslub_flush_thread();
	CHECK(uslub_cache_shrink(mine) >= 0);
	CHECK_EQU(slabinfo_get(mine).num_slabs, 0);
	CHECK_EQ(uslub_cache_destroy(mine), 0);
	CHECK_EQ(uslub_cache_validate(shared), 0);
	_exit(0);
}

/* Fork and wait; returns the child's wait status. */
static int fork_and_wait(long r)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child((int)r);
	int status;
	pid_t w;
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	CHECK_MSG(w == pid, "waitpid: %s", strerror(errno));
	return status;
}

/* Some forks come from a short-lived thread with objects and a cpu slab
 * of its own: in that child the main thread is one of the vanished ones. */
static atomic_long helper_allocs, helper_frees;

static void *fork_helper(void *arg)
{
	long r = (long)(intptr_t)arg;
	struct worker me = { .id = 50 };
	struct obj *mine[20];
	for (int i = 0; i < 20; i++)
		mine[i] = obj_new(&me);
	int status = fork_and_wait(r);
	for (int i = 0; i < 20; i++)
		obj_free(mine[i], __LINE__);
	atomic_fetch_add(&helper_allocs, 20);
	atomic_fetch_add(&helper_frees, 20);
	return (void *)(intptr_t)status;
}

int main(void)
{
	uint64_t seed = test_seed(0xf0f0);
	struct rng rng = { seed };
	const char *fe = getenv("USLUB_TEST_FORKS");
	long forks = fe ? atol(fe) : scaled(FORKS);
	if (forks < 5)
		forks = 5;
	unsigned long err0 = uslub_error_count();
	shared = uslub_cache_create("fork-shared", SHARED_SIZE, 0, 0, NULL);
	CHECK(shared);
	for (int i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		workers[i].rng.s = seed * 7 + (uint64_t)i;
		CHECK(pthread_create(&workers[i].th, NULL, worker_fn, &workers[i]) == 0);
	}
	while (atomic_load(&ready) < NTHREADS)
		usleep(1000);

	for (long r = 0; r < forks; r++) {
		usleep((useconds_t)rng_below(&rng, 5000));
		int status;
		if (r % 4 == 3) {
			pthread_t h;
			void *ret;
			CHECK(pthread_create(&h, NULL, fork_helper, (void *)(intptr_t)r) == 0);
			CHECK(pthread_join(h, &ret) == 0);
			status = (int)(intptr_t)ret;
		} else {
			status = fork_and_wait(r);
		}
		if (WIFSIGNALED(status))
			CHECK_MSG(0, "child %ld killed by signal %d%s", r, WTERMSIG(status),
				  WTERMSIG(status) == SIGALRM ? " (deadlock: 10 s alarm)" : "");
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child %ld exited with status %d", r, WEXITSTATUS(status));
	}

	atomic_store(&stop, 1);
	uint64_t allocs = 0, frees = 0;
	for (int i = 0; i < NTHREADS; i++) {
		CHECK(pthread_join(workers[i].th, NULL) == 0);
		allocs += workers[i].allocs;
		frees += workers[i].frees;
	}
	allocs += (uint64_t)atomic_load(&helper_allocs);
	frees += (uint64_t)atomic_load(&helper_frees);
	for (size_t i = 0; i < handoff_len; i++, frees++)
		obj_free(handoff[i], __LINE__);
	handoff_len = 0;
	uslub_flush_thread();

	CHECK_EQU(frees, allocs);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(shared, st);
	CHECK_EQU(stat_allocs(st), allocs);
	CHECK_EQU(stat_frees(st), frees);
	struct uslub_slabinfo si = slabinfo_get(shared);
	CHECK_EQU(si.live_objs, 0);
	CHECK_EQU(si.active_objs, si.barn_full * si.sheaf_capacity); /* the barn's sheaves */
	CHECK_EQ(uslub_cache_validate(shared), 0);
	CHECK(uslub_cache_shrink(shared) >= 0);
	CHECK_EQU(slabinfo_get(shared).num_slabs, 0);
	CHECK_EQ(uslub_cache_destroy(shared), 0);
	CHECK_EQU(uslub_error_count(), err0);
	printf("fork: ok: %ld children, %" PRIu64 " objects in the parent\n", forks, allocs);
	return 0;
}
