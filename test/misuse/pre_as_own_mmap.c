/*
 * misuse_as_own_mmap (issue 25, item 3, a variant the first fix
 * missed): under an address-space limit (RLIMIT_AS, `ulimit -v`) what
 * uslub keeps after a free is taken from the program's own mappings,
 * which cannot give it back: its mmap()s, its thread stacks, dlopen. The
 * first fix made uslub's own mappings give back what it keeps before they
 * fail; the program's mmap failed all the same. With a 400 MiB budget,
 * after 320 MiB were allocated and freed, the program could mmap():
 *   - five 64 MiB blocks freed (kept for reuse): 77 MiB (glibc 400);
 *   - 320 MiB of 1000-byte objects freed (empty segments kept until the
 *     decay): 74 MiB (glibc 397);
 * and only 8 threads with 8 MiB stacks could be alive at once (glibc 33).
 * Now, while RLIMIT_AS is finite, a freed huge mapping and an empty
 * segment are unmapped at once (as glibc does): each phase must map at
 * least 300 of the 400 MiB. Run with USLUB_DECAY_MS=600000 (it
 * re-executes itself so): nothing goes back by the decay.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define BUDGET  (400ul << 20)
#define FREED   (320ul << 20)
#define WANT    300                     /* MiB the program maps after */
#define NSMALL  (FREED / 1000)

static void *small[NSMALL];
static void *maps[512];

static size_t vm_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strtoul(buf, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

/* MiB the program can mmap() itself now (given back after) */
static int own_mmap(void)
{
	int n = 0;
	while (n < 512) {
		void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			break;
		maps[n++] = p;
	}
	for (int i = 0; i < n; i++)
		munmap(maps[i], 1 << 20);
	return n;
}

int main(int argc, char **argv)
{
	if (!getenv("R2_AS_CHILD")) {
		const char *ld = getenv("LD_PRELOAD");
		if (!ld || !strstr(ld, "uslub")) {
			printf("SKIP: not under uslub's LD_PRELOAD\n");
			return 77;
		}
		setenv("R2_AS_CHILD", "1", 1);
		setenv("USLUB_DECAY_MS", "600000", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	(void)argc;
	free(malloc(1000));
	size_t base = vm_bytes();
	if (!base) {
		printf("SKIP: no /proc/self/statm\n");
		return 77;
	}
	struct rlimit rl = { base + BUDGET, base + BUDGET };
	if (setrlimit(RLIMIT_AS, &rl)) {
		perror("setrlimit");
		return 1;
	}
	int failures = 0;
	/* five 64 MiB blocks */
	void *big[5];
	for (int i = 0; i < 5; i++)
		if ((big[i] = malloc(64ul << 20)))
			memset(big[i], 1, 4096);
	for (int i = 0; i < 5; i++)
		free(big[i]);
	int got = own_mmap();
	printf("as_own_mmap: after five 64 MiB blocks freed, the program maps %d MiB of 400\n",
	       got);
	if (got < WANT) {
		printf("FAIL: freed large blocks kept by uslub starve the program's own mmap\n");
		failures++;
	}
	/* 320 MiB of small objects */
	size_t n = 0;
	while (n < NSMALL && (small[n] = malloc(1000)))
		memset(small[n++], 2, 1000);
	for (size_t i = 0; i < n; i++)
		free(small[i]);
	got = own_mmap();
	printf("as_own_mmap: after %zu MiB of 1000-byte objects freed, the program maps %d "
	       "MiB of 400\n", n * 1000 >> 20, got);
	if (got < WANT) {
		printf("FAIL: empty segments kept by uslub starve the program's own mmap\n");
		failures++;
	}
	return failures ? 1 : 0;
}
