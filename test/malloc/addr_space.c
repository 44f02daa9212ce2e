/*
 * addr_space: address space goes back to the OS. Under an address-space
 * limit (RLIMIT_AS 400 MB, set in-process: `ulimit -v 400000`), allocate
 * ~250 MB of small objects, free them, then give the memory back
 * (malloc_trim(0), or with "decay": wait for the background purge with
 * USLUB_DECAY_MS=200) and ask for large blocks: one of 64 MiB must succeed,
 * and 3 MiB blocks must reach well beyond what the small objects' address
 * space would leave (an allocator that never unmaps its segments reached
 * 54 MiB; glibc 258 MiB; uslub 312-330 MiB, for every sampling seed, since
 * a forced purge empties the barns and discards every empty slab: before,
 * the barns' base sheaves and min_partial's empty slabs, spread over the
 * segments, left 231-282 MiB). Not for sanitizer runs (their shadow memory
 * needs far more address space): skips with USLUB_SANITIZED=1.
 *
 *   addr_space [trim|decay]
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LIMIT       (400ul * 1000 * 1024)     /* ulimit -v 400000 (KiB) */
#define SMALL_TOTAL (250ul << 20)
#define NSMALL      (SMALL_TOTAL / 512)
#define BLOCK       (3ul << 20)
#define MAX_BLOCKS  200
#define WANT_MIB    280

int main(int argc, char **argv)
{
	int decay = argc > 1 && !strcmp(argv[1], "decay");
	const char *san = getenv("USLUB_SANITIZED");
	if (san && *san && strcmp(san, "0")) {
		printf("SKIP: sanitizer run (RLIMIT_AS)\n");
		return 77;
	}
	struct rlimit rl = { LIMIT, LIMIT };
	if (setrlimit(RLIMIT_AS, &rl)) {
		perror("setrlimit");
		return 77;
	}
	/* the pointer array is one mapping, unmapped by free() */
	void **v = malloc(NSMALL * sizeof(*v));
	if (!v) {
		printf("FAIL: no room for the pointer array\n");
		return 1;
	}
	size_t n = 0, bytes = 0;
	while (bytes < SMALL_TOTAL && n < NSMALL) {
		size_t sz = 256 + (n * 7919) % 513;      /* 256 .. 768 */
		v[n] = malloc(sz);
		if (!v[n])
			break;
		memset(v[n], 1, sz);
		bytes += sz;
		n++;
	}
	printf("addr_space: %zu small objects, %zu MiB\n", n, bytes >> 20);
	if (bytes < SMALL_TOTAL * 9 / 10) {
		printf("FAIL: only %zu MiB of small objects under the limit\n", bytes >> 20);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	if (decay) {
		struct timespec ts = { 1, 0 };    /* 5x USLUB_DECAY_MS=200 */
		nanosleep(&ts, NULL);
	} else {
		malloc_trim(0);
	}
	int fail = 0;
	void *big = malloc(64ul << 20);
	if (!big) {
		printf("FAIL: a 64 MiB allocation failed after the small objects were freed (%s)\n",
		       decay ? "decay" : "malloc_trim");
		fail = 1;
	} else {
		memset(big, 2, 64ul << 20);
		free(big);
	}
	static void *blk[MAX_BLOCKS];
	size_t k = 0;
	while (k < MAX_BLOCKS && (blk[k] = malloc(BLOCK)))
		k++;
	printf("addr_space: %zu MiB in 3 MiB blocks after %s\n", k * 3,
	       decay ? "the decay" : "malloc_trim");
	if (k * 3 < WANT_MIB) {
		printf("FAIL: 3 MiB blocks reached only %zu MiB (want >= %d)\n", k * 3, WANT_MIB);
		fail = 1;
	}
	for (size_t i = 0; i < k; i++)
		free(blk[i]);
	if (!fail)
		printf("addr_space: ok\n");
	return fail;
}
