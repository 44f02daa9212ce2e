/*
 * malloc_thp: USLUB_THP, read back from the kernel: the VmFlags of the
 * mapping holding a block say "hg" when it was advised MADV_HUGEPAGE
 * (/proc/self/smaps), whatever huge pages the system then has to give.
 *   thp 0     no block's mapping is advised: small, segment-sized totals,
 *             a 4 MiB block;
 *   thp 1     (the default) a program's first segments are not advised
 *             (a small program keeps 4 KiB pages); once more than 16 MiB
 *             of segments are mapped, new ones are; a 4 MiB block is, and
 *             starts on a 2 MiB boundary;
 *   thp 2     the first small block's segment is advised.
 * Usage: malloc_thp 0|1|2 (the caller sets USLUB_THP to the same value).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* 1: the mapping holding @p is advised huge, 0: it is not, -1: not found */
static int advised(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	int in = 0, res = -1;
	uintptr_t a = (uintptr_t)p;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			res = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return res;
}

int main(int argc, char **argv)
{
	int mode = argc > 1 ? atoi(argv[1]) : 1;
	if (advised(&mode) < 0) {
		fprintf(stderr, "SKIP: no VmFlags in /proc/self/smaps\n");
		return 77;
	}
	/* a kernel without THP refuses the advice (and shows no "hg") */
	void *probe = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe == MAP_FAILED || madvise(probe, 4u << 20, MADV_HUGEPAGE) || advised(probe) != 1) {
		fprintf(stderr, "SKIP: this kernel does not take MADV_HUGEPAGE\n");
		return 77;
	}
	munmap(probe, 4u << 20);
	char *small = malloc(64);
	memset(small, 1, 64);
	CHECK(advised(small) == (mode == 2), "USLUB_THP=%d: first segment advised %d",
	      mode, advised(small));

	/* 48 MiB of 4 KiB-class blocks: at least 12 segments on one node */
	enum { N = 48 * 256 };
	static char *blocks[N];
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(4000);
		blocks[i][0] = 1;
	}
	int last = advised(blocks[N - 1]);
	CHECK(last == (mode >= 1), "USLUB_THP=%d: a segment past 16 MiB advised %d", mode, last);

	char *big = malloc(4u << 20);
	memset(big, 2, 4u << 20);
	CHECK(advised(big) == (mode >= 1), "USLUB_THP=%d: a 4 MiB mapping advised %d", mode,
	      advised(big));
	if (mode >= 1)
		CHECK((uintptr_t)big % (2u << 20) == 0, "a 4 MiB block at %p, not 2 MiB aligned",
		      (void *)big);
	free(big);
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	free(small);
	if (failures)
		return 1;
	printf("malloc_thp %d: ok\n", mode);
	return 0;
}
