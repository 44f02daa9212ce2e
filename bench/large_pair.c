/*
 * uslub-bench-largepair: ns per malloc+free pair of large blocks (kmalloc
 * page runs and mappings under LD_PRELOAD=libuslub-malloc.so), the cost
 * of the sampled mode's stacks for them (docs/design.md §5 "Page runs and
 * mappings"). Plain malloc API, no allocator of its own.
 *
 *   uslub-bench-largepair SIZE ITERS [TOUCH]
 *
 * TOUCH: 0 (bare: malloc and free), 1 (one write per 4 KiB page before
 * the free), 2 (memset of the whole block). Prints the thread's CPU time
 * per pair in ns (CLOCK_THREAD_CPUTIME_ID: on shared CPUs the time the
 * thread waited to run is left out), after ITERS / 10 + 10 warm-up pairs.
 * bench/large_pairs.py runs it interleaved under several libraries and
 * environments and prints medians.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void pair(size_t size, int touch, void *volatile *sink)
{
	char *p = malloc(size);
	if (!p)
		exit(1);
	*sink = p;                      /* keeps the pair from being elided */
	if (touch == 1)
		for (size_t o = 0; o < size; o += 4096)
			((volatile char *)p)[o] = 1;
	else if (touch == 2)
		memset(p, 1, size);
	free(p);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: uslub-bench-largepair SIZE ITERS [TOUCH 0|1|2]\n");
		return 2;
	}
	size_t size = strtoull(argv[1], NULL, 0);
	long iters = atol(argv[2]);
	int touch = argc > 3 ? atoi(argv[3]) : 0;
	void *volatile sink;
	for (long i = 0; i < iters / 10 + 10; i++)
		pair(size, touch, &sink);
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		pair(size, touch, &sink);
	printf("%.1f\n", (now_ns() - t0) / (double)iters);
	return 0;
}
