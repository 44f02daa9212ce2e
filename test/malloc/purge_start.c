/*
 * malloc_purge_start: the background purge thread ("uslub-purge") is
 * started where a malloc inside pthread_create is safe (LD_PRELOAD).
 * page.c wants the thread once a node has 4 segments (16 MiB) and used
 * to start it from the page allocation that mapped the fourth: in the
 * middle of a cache's sheaf refill, which reads the main sheaf's size
 * before taking objects from slabs and adds to it after. pthread_create
 * callocs the new thread's DTV (288 bytes here: malloc-320): when that
 * was the cache being refilled, the calloc refilled the same main sheaf,
 * the outer refill then added its objects on top (size > capacity) and
 * the next pops read pointers past the sheaf (bench_smoke_malloc_phases
 * crashed with some workload and profiling seeds).
 *
 * Made independent of which cache maps the fourth segment and of the
 * DTV's size: this executable exports its own pthread_create (linked with
 * -rdynamic, so it comes before libc's in the global scope), which
 * mallocs from every small class before it creates the thread. The test
 * fills 24 MiB with objects of 16 .. 2048 bytes, each with its own
 * pattern, and checks every one: an overfull sheaf crashes or hands out
 * an object twice. Also checks that the thread was started, and from an
 * allocation. Skips (77) without uslub's malloc or a purge thread.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>

#define BYTES  (24ul << 20)
#define MAXOBJ (BYTES / 16)

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				 void *);

static int creates;                    /* pthread_create calls seen */
static void *inside[64 * 32];          /* what the calls malloc()ed */

/* Every thread this process creates comes here: uslub's purge thread
 * only (the test makes none). One malloc from each class 16 .. 2048
 * bytes, as the DTV's calloc did from one. */
int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static pthread_create_fn real;
	if (!real)
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		return EAGAIN;
	int k = creates++;
	if (k < 32)
		for (int i = 0; i < 64; i++)
			inside[k * 64 + i] = malloc(16 + (size_t)i * 32);
	return real(t, attr, fn, arg);
}

static void *obj[MAXOBJ];
static uint32_t len[MAXOBJ];

int main(void)
{
	if (!mt_uslub_ksize()) {
		printf("malloc_purge_start: needs uslub's malloc (LD_PRELOAD)\n");
		return 77;
	}
	struct mt_rng r = { mt_seed_init(1) };
	size_t n = 0, bytes = 0;
	while (bytes < BYTES && n < MAXOBJ) {
		/* 16 .. 2048 bytes, small ones more often (a log-uniform size) */
		size_t sz = (size_t)16 << mt_range(&r, 0, 7);
		sz += mt_range(&r, 0, sz - 1);
		if (sz > 2048)
			sz = 2048;
		obj[n] = malloc(sz);
		REQUIRE(obj[n], "malloc(%zu) failed", sz);
		len[n] = (uint32_t)sz;
		mt_fill(obj[n], sz, n);
		bytes += sz;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(mt_verify(obj[i], len[i], i) == (size_t)-1,
			  "object %zu (%u bytes at %p) overwritten: handed out twice", i, len[i],
			  obj[i]);
	for (size_t i = 0; i < n; i++)
		free(obj[i]);
	for (int i = 0; i < 64 * 32; i++)
		free(inside[i]);
	if (!creates) {
		printf("malloc_purge_start: no purge thread started (USLUB_BACKGROUND_THREAD=0?)\n");
		return mt_failures ? 1 : 77;
	}
	CHECK_EQ(creates, 1);
	if (mt_failures)
		return 1;
	printf("malloc_purge_start: ok (%zu objects, %zu bytes)\n", n, bytes);
	return 0;
}
