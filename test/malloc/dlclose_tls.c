/*
 * malloc_dlclose_tls: dlclose() of a module with dynamic TLS under the
 * uslub malloc front end (LD_PRELOAD; CTest runs it with the default
 * options and with USLUB_DEBUG=FZPU).
 *
 * Regression: with owner tracking (USLUB_DEBUG=U) the debug alloc/free
 * paths read a thread-local variable of the library under a node's
 * list_lock. Compiled -fPIC it was a (local-)dynamic TLS access, i.e. a
 * call to __tls_get_addr; after a dlclose() of a module with TLS, glibc's
 * __tls_get_addr updates the thread's DTV and free()s the unloaded
 * module's TLS block, which goes back into uslub, to the list_lock the
 * thread already holds: a self-deadlock (the process hung). Now every
 * thread-local variable of the library is initial-exec (no
 * __tls_get_addr; test/tls/tls_model.sh checks the built libraries).
 *
 *   - argv[1] (test/malloc/tls_module.c) is dlopen()ed; its TLS is touched
 *     by the main thread and by WORKERS threads (each thread gets a block
 *     of ~tls_block_bytes() from malloc, i.e. from uslub);
 *   - the workers wait at a barrier while the main thread dlclose()s it
 *     (RTLD_NOLOAD then must find nothing);
 *   - then every thread allocates first from the size class of its TLS
 *     block (so its first DTV update frees into the cache it is working
 *     in), then churns malloc/free/realloc of many sizes, and a second
 *     module generation is loaded, touched and closed again mid-churn by
 *     the main thread while new threads start and exit;
 *   - a hang becomes a failure: alarm(ALARM_S) kills the process
 *     (SIGALRM), well before CTest's timeout.
 * On uslub (found with dlsym) uslub_error_count() must be 0 at the end.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#define MIN_SZ(a, b) ((a) < (b) ? (a) : (b))

#define WORKERS 3
#define ROUNDS 4
#define OPS 20000
#define ALARM_S 15

typedef int (*touch_fn)(int);
typedef int (*bytes_fn)(void);

static const char *module_path;
static pthread_barrier_t touched, closed;
static int block_bytes;

static void *open_module(touch_fn *touch)
{
	void *h = dlopen(module_path, RTLD_NOW | RTLD_LOCAL);
	REQUIRE(h, "dlopen %s: %s", module_path, dlerror());
	*touch = (touch_fn)dlsym(h, "tls_touch");
	bytes_fn bytes = (bytes_fn)dlsym(h, "tls_block_bytes");
	REQUIRE(*touch && bytes, "dlsym: %s", dlerror());
	block_bytes = bytes();
	return h;
}

static void close_module(void *h)
{
	REQUIRE(dlclose(h) == 0, "dlclose: %s", dlerror());
	void *again = dlopen(module_path, RTLD_NOW | RTLD_NOLOAD);
	CHECK_MSG(!again, "the module is still loaded after dlclose");
	if (again)
		dlclose(again);
}

/* malloc/free/realloc of @n ops over sizes 1 .. 4096, the first ones of
 * the module's block size; every block checked before it is freed. */
static void churn(uint64_t seed, int n)
{
	enum { SLOTS = 64 };
	struct { unsigned char *p; size_t n; uint64_t seed; } slot[SLOTS] = { { 0 } };
	struct mt_rng r = { seed };
	for (int i = 0; i < n; i++) {
		unsigned int k = (unsigned int)mt_range(&r, 0, SLOTS - 1);
		if (slot[k].p) {
			CHECK(mt_verify(slot[k].p, slot[k].n, slot[k].seed) == (size_t)-1);
			if (mt_range(&r, 0, 3) == 0) {
				size_t m = (size_t)mt_range(&r, 1, 4096);
				unsigned char *q = realloc(slot[k].p, m);
				REQUIRE(q, "realloc(%zu) failed", m);
				CHECK(mt_verify(q, MIN_SZ(m, slot[k].n), slot[k].seed) == (size_t)-1);
				mt_fill(q, m, slot[k].seed);
				slot[k].p = q;
				slot[k].n = m;
				continue;
			}
			free(slot[k].p);
			slot[k].p = NULL;
			continue;
		}
		size_t m = i < 256 ? (size_t)block_bytes : (size_t)mt_range(&r, 1, 4096);
		slot[k].p = malloc(m);
		REQUIRE(slot[k].p, "malloc(%zu) failed", m);
		slot[k].n = m;
		slot[k].seed = mt_next(&r);
		mt_fill(slot[k].p, m, slot[k].seed);
	}
	for (int k = 0; k < SLOTS; k++)
		if (slot[k].p) {
			CHECK(mt_verify(slot[k].p, slot[k].n, slot[k].seed) == (size_t)-1);
			free(slot[k].p);
		}
}

struct worker {
	pthread_t th;
	touch_fn touch;
	uint64_t seed;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	CHECK(w->touch(1) != 0);
	w->touch(2);
	pthread_barrier_wait(&touched);
	pthread_barrier_wait(&closed);
	/* the module is gone: the first malloc of the block's size class
	 * comes before any other TLS access of this thread */
	void *p = malloc((size_t)block_bytes);
	REQUIRE(p, "malloc");
	free(p);
	churn(w->seed, OPS);
	return NULL;
}

/* Short-lived threads while the main thread opens and closes the module. */
static void *short_lived(void *arg)
{
	churn((uint64_t)(uintptr_t)arg, OPS / 10);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s tls_module.so\n", argv[0]);
		return 2;
	}
	module_path = argv[1];
	uint64_t seed = mt_seed_init(0x7e57d1c105e);
	alarm(ALARM_S);                  /* a hang fails with SIGALRM */
	bool on_uslub = mt_uslub_error_count() != NULL;
	if (getenv("LD_PRELOAD") && *getenv("LD_PRELOAD"))
		REQUIRE(on_uslub, "LD_PRELOAD set, but uslub_error_count not found");

	for (int round = 0; round < ROUNDS; round++) {
		touch_fn touch;
		void *h = open_module(&touch);
		CHECK(touch(3) != 0);
		pthread_barrier_init(&touched, NULL, WORKERS + 1);
		pthread_barrier_init(&closed, NULL, WORKERS + 1);
		struct worker w[WORKERS];
		for (int i = 0; i < WORKERS; i++) {
			w[i].touch = touch;
			w[i].seed = seed + (uint64_t)round * 100 + (uint64_t)i;
			REQUIRE(pthread_create(&w[i].th, NULL, worker, &w[i]) == 0, "pthread_create");
		}
		pthread_barrier_wait(&touched);
		close_module(h);
		pthread_barrier_wait(&closed);
		/* the main thread too: its block's size class first */
		void *p = malloc((size_t)block_bytes);
		REQUIRE(p, "malloc");
		free(p);
		/* mid-churn: another generation of the module, touched by this
		 * thread only, closed while the workers allocate; short-lived
		 * threads start (new DTVs) and exit (TLS blocks freed) */
		h = open_module(&touch);
		CHECK(touch(4) != 0);
		pthread_t sl[2];
		for (int i = 0; i < 2; i++)
			REQUIRE(pthread_create(&sl[i], NULL, short_lived,
					       (void *)(uintptr_t)(seed + 1000 + (uint64_t)i)) == 0,
				"pthread_create");
		close_module(h);
		churn(seed + 500 + (uint64_t)round, OPS);
		for (int i = 0; i < 2; i++)
			pthread_join(sl[i], NULL);
		for (int i = 0; i < WORKERS; i++)
			pthread_join(w[i].th, NULL);
		pthread_barrier_destroy(&touched);
		pthread_barrier_destroy(&closed);
	}
	if (on_uslub)
		CHECK_EQ(mt_uslub_error_count()(), 0);
	alarm(0);
	if (mt_failures)
		return 1;
	printf("malloc_dlclose_tls: %d rounds of dlopen/touch/dlclose with %d threads%s: ok\n",
	       ROUNDS, WORKERS, on_uslub ? " on uslub" : " (not on uslub)");
	return 0;
}
