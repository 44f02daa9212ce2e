/*
 * uslub-bench-churn: a minimal malloc churn loop to count instructions per
 * malloc+free with callgrind (bench/instr-per-op.sh runs it).
 *
 *   uslub-bench-churn N [SEED]
 *
 * Fills 8192 slots with objects of 8..255 bytes, then does N operations:
 * each picks a random slot, frees its object and puts a new one of a
 * random size (8..255 B) there, writing its first byte. At the end it
 * frees everything. Plain malloc API, nothing of its own: run it under
 * LD_PRELOAD of the allocator to measure. The random numbers come from a
 * xorshift64 generator (no libc rand, no locks), so the loop's own cost
 * is a few dozen instructions per operation and the same for every
 * allocator; the start-up (the dynamic loader, the fill) is the same for
 * every N, so the difference of two runs divided by the difference of
 * their N is the cost of one operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define SLOTS 8192u          /* live objects: a power of two */
#define MIN_SIZE 8u
#define MAX_SIZE 255u

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static inline size_t rand_size(uint64_t r)
{
	return MIN_SIZE + (size_t)(r % (MAX_SIZE - MIN_SIZE + 1));
}

int main(int argc, char **argv)
{
	static unsigned char *slot[SLOTS];
	char *end;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s N [SEED]\n"
			"  N random replacements among %u live objects of %u..%u B\n",
			argv[0], SLOTS, MIN_SIZE, MAX_SIZE);
		return 2;
	}
	unsigned long long n = strtoull(argv[1], &end, 0);
	if (*end || end == argv[1]) {
		fprintf(stderr, "%s: bad N: %s\n", argv[0], argv[1]);
		return 2;
	}
	if (argc == 3) {
		rng_state = strtoull(argv[2], &end, 0);
		if (*end || !rng_state) {
			fprintf(stderr, "%s: bad SEED (non-zero integer): %s\n", argv[0], argv[2]);
			return 2;
		}
	}
	for (unsigned int i = 0; i < SLOTS; i++) {
		slot[i] = malloc(rand_size(rng()));
		if (!slot[i]) {
			perror("malloc");
			return 1;
		}
		slot[i][0] = (unsigned char)i;
	}
	for (unsigned long long k = 0; k < n; k++) {
		uint64_t r = rng();
		unsigned int i = (unsigned int)(r >> 32) & (SLOTS - 1);
		free(slot[i]);
		slot[i] = malloc(rand_size(r));
		if (__builtin_expect(!slot[i], 0)) {
			perror("malloc");
			return 1;
		}
		slot[i][0] = (unsigned char)k;
	}
	unsigned int sum = 0;
	for (unsigned int i = 0; i < SLOTS; i++) {
		sum += slot[i][0];
		free(slot[i]);
	}
	printf("%llu ops, checksum %u\n", n, sum);
	return 0;
}
