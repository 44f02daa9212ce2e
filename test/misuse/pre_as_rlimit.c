/*
 * as_rlimit (issue 25, item 3): under an address-space limit (RLIMIT_AS,
 * `ulimit -v`), memory uslub keeps but does not use is given back before
 * an allocation fails. Ten large blocks are allocated and freed (uslub
 * keeps freed mappings for reuse: here all of them), then malloc(1000)
 * runs until it fails. It must reach about what the limit leaves once
 * the kept mappings are gone (glibc gives them back at free), not only
 * what is left beside them: before the fix the small objects' segment
 * growth failed without giving back the kept mappings (111 MiB of 800
 * with ten 64 MiB blocks; glibc 667 MiB). The bound comes from the limit
 * and what the process had mapped before the blocks, no machine figure;
 * the page runs (malloc above 64 KiB) grow through the same path.
 *
 * Run with USLUB_DECAY_MS=600000 (it re-executes itself so), so the
 * background purge never gives the mappings back first.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "../malloc/rss.h"

#define NBLOCKS 10
#define BLOCK   (32ul << 20)         /* ten: 320 MiB kept after the frees */
#define BUDGET  (400ul << 20)        /* the limit: mapped now + this */
#define SMALL   1000

int main(int argc, char **argv)
{
	if (!getenv("AS_RLIMIT_CHILD")) {
		setenv("AS_RLIMIT_CHILD", "1", 1);
		setenv("USLUB_DECAY_MS", "600000", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	(void)argc;
	void *warm = malloc(SMALL);
	free(warm);
	size_t base = vm_bytes();
	if (!base) {
		printf("SKIP: no /proc/self/statm\n");
		return 77;
	}
	struct rlimit rl = { base + BUDGET, base + BUDGET };
	if (setrlimit(RLIMIT_AS, &rl)) {
		perror("setrlimit");
		return 77;
	}
	void *big[NBLOCKS];
	for (int i = 0; i < NBLOCKS; i++) {
		big[i] = malloc(BLOCK);
		if (!big[i]) {
			printf("FAIL: large block %d of %d (%zu MiB) failed under a limit of "
			       "%zu MiB above %zu MiB mapped\n", i, NBLOCKS, BLOCK >> 20,
			       BUDGET >> 20, base >> 20);
			return 1;
		}
		memset(big[i], 1, 4096);
	}
	for (int i = 0; i < NBLOCKS; i++)
		free(big[i]);
	/* small objects until it fails, chained through their first word */
	void *head = NULL;
	size_t n = 0;
	for (;;) {
		void **o = malloc(SMALL);
		if (!o)
			break;
		*o = head;
		head = o;
		n++;
	}
	size_t reached = n * SMALL;
	/* the limit leaves BUDGET above what was mapped; slab and segment
	 * overhead (1000 in a 1 KiB class, descriptors, the last 64 MiB
	 * reservation that no longer fits) take some: three quarters of it
	 * is well above what the kept mappings alone leave (BUDGET minus
	 * NBLOCKS * BLOCK, a fifth of it) */
	size_t want = BUDGET / 4 * 3;
	printf("as_rlimit: limit %zu MiB above %zu MiB mapped; after %d x %zu MiB freed, "
	       "malloc(%d) reached %zu MiB (want >= %zu MiB)\n", BUDGET >> 20, base >> 20,
	       NBLOCKS, BLOCK >> 20, SMALL, reached >> 20, want >> 20);
	int fail = 0;
	if (reached < want) {
		printf("FAIL: small objects stopped at %zu MiB: the kept mappings were not "
		       "given back first\n", reached >> 20);
		fail = 1;
	}
	return fail;
}
