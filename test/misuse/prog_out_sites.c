/*
 * Helper of the misuse_out_* shell tests (issue 25, items 6 and 7), run
 * under LD_PRELOAD=libuslub-malloc.so; ends with exit() (its exit
 * handlers run: USLUB_REPORT is written).
 *
 *   misuse_prog_out_sites                      allocate, exit 0
 *   misuse_prog_out_sites MODULE CACHE [wait]  also: a cache named CACHE
 *       (uslub_cache_create, found with dlsym) with an object in it, and
 *       MODULE dlopen'ed (a path the test chose) allocating 10 blocks
 *       at its own call site; with "wait": "ready" on stdout, then wait
 *       for stdin to end (while the tool reads the snapshot)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static void *keep[16];
	keep[0] = malloc(100);
	if (argc < 3)
		return !keep[0];
	void *(*create)(const char *, size_t, size_t, unsigned int, void (*)(void *)) =
		(void *(*)(const char *, size_t, size_t, unsigned int, void (*)(void *)))
		dlsym(RTLD_DEFAULT, "uslub_cache_create");
	void *(*alloc)(void *, unsigned int) =
		(void *(*)(void *, unsigned int))dlsym(RTLD_DEFAULT, "uslub_cache_alloc_noprof");
	if (!create || !alloc) {
		fprintf(stderr, "prog: not running on uslub (no uslub_cache_create)\n");
		return 2;
	}
	void *s = create(argv[2], 64, 0, 0, NULL);
	if (!s || !(keep[1] = alloc(s, 0))) {
		fprintf(stderr, "prog: cannot create the cache\n");
		return 2;
	}
	void *mod = dlopen(argv[1], RTLD_NOW);
	void *(*site)(size_t) = mod ? (void *(*)(size_t))dlsym(mod, "out_site_alloc") : NULL;
	if (!site) {
		fprintf(stderr, "prog: dlopen: %s\n", dlerror());
		return 2;
	}
	for (int i = 0; i < 10; i++)
		keep[2 + i] = site(1000);
	if (argc > 3 && !strcmp(argv[3], "wait")) {
		char c;
		printf("ready\n");
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
	}
	return 0;
}
