/*
 * malloc_sample_free: sampled profiling under the malloc front end
 * (LD_PRELOAD, USLUB_PROFILING=sample:1: every object of 24 bytes and more
 * is sampled, so the figures are exact). malloc's hit path pops the main
 * sheaf inline and looks up the allocation tag only on a miss; a sampled
 * pop takes that miss, so its object is tagged with the caller's tag (the
 * return address in main(): ext/caller_tag.c; -rdynamic, so dladdr names
 * it "main+0x.."). free()
 * (free_object(): PG_slab_page) misses for a slab holding a sampled object
 * and its cold path untags.
 *   - N mallocs of 24 B .. 64 KiB (the front end's classes) add exactly N
 *     objects to main()'s sites; N callocs too;
 *   - freeing them (from this thread, or half from another one) takes the
 *     sites back exactly to where they were;
 *   - realloc that moves an object untags the old one (the new one is
 *     counted at realloc's call site in main()).
 * The background purge thread is off (its pthread_create callocs).
 * No malloc runs between the measurements (uslub_allocinfo() maps its
 * memory). Skips (77) when uslub is not the process's malloc or the mode is
 * not sample:1.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>

struct allocinfo {             /* struct uslub_allocinfo (uslub/types.h) */
	const char *file;
	const char *func;
	unsigned int line;
	int64_t bytes;
	int64_t calls;
};

static size_t (*allocinfo)(struct allocinfo *, size_t);
static struct allocinfo info[4096];

#define N 2000

/* calls at the call sites in main() (@func: which entry, for the reader) */
static int64_t site_calls(const char *func)
{
	(void)func;
	size_t n = allocinfo(info, 4096);
	if (n > 4096)
		n = 4096;
	int64_t calls = 0;
	for (size_t i = 0; i < n; i++)
		if (info[i].file && !info[i].line && info[i].func &&
		    !strncmp(info[i].func, "main+0x", 7))
			calls += info[i].calls;
	return calls;
}

static void *objs[N];

static void *free_half(void *arg)
{
	for (int i = 1; i < N; i += 2)
		free(objs[i]);
	return arg;
}

int main(void)
{
	int (*enabled)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "uslub_profiling_enabled");
	size_t (*interval)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT,
							   "uslub_profiling_sample_interval");
	allocinfo = (size_t (*)(struct allocinfo *, size_t))dlsym(RTLD_DEFAULT, "uslub_allocinfo");
	if (!enabled || !interval || !allocinfo || enabled() != 2 || interval() != 1) {
		printf("malloc_sample_free: needs uslub's malloc with USLUB_PROFILING=sample:1\n");
		return 77;
	}
	for (int round = 0; round < 3; round++) {
		int64_t m0 = site_calls("malloc");
		for (int i = 0; i < N; i++)
			objs[i] = malloc(24 + (size_t)(i * 37) % 65000);
		int64_t m1 = site_calls("malloc");
		CHECK_EQ(m1 - m0, N);
		if (round == 1) {
			pthread_t t;
			CHECK(pthread_create(&t, NULL, free_half, NULL) == 0);
			CHECK(pthread_join(t, NULL) == 0);
			for (int i = 0; i < N; i += 2)
				free(objs[i]);
		} else {
			for (int i = 0; i < N; i++)
				free(objs[i]);
		}
		CHECK_EQ(site_calls("malloc"), m0);
		/* (pthread_create callocs the thread's DTV: read the base here) */
		int64_t c0 = site_calls("calloc");
		for (int i = 0; i < N; i++)
			objs[i] = calloc(1, 24 + (size_t)(i * 13) % 2000);
		CHECK_EQ(site_calls("calloc") - c0, N);
		for (int i = 0; i < N; i++)
			free(objs[i]);
		CHECK_EQ(site_calls("calloc"), c0);
		/* realloc moving each object to a larger class: the old one is
		 * freed (untagged), the new one allocated through malloc() (its
		 * site) */
		for (int i = 0; i < N; i++)
			objs[i] = malloc(32);
		CHECK_EQ(site_calls("malloc"), m0 + N);
		for (int i = 0; i < N; i++)
			objs[i] = realloc(objs[i], 4000);
		CHECK_EQ(site_calls("malloc"), m0 + N);
		for (int i = 0; i < N / 2; i++)
			objs[i] = realloc(objs[i], 16000);
		CHECK_EQ(site_calls("malloc"), m0 + N);
		for (int i = 0; i < N; i++)
			free(objs[i]);
		CHECK_EQ(site_calls("malloc"), m0);
	}
	if (mt_failures)
		return 1;
	printf("malloc_sample_free: ok\n");
	return 0;
}
