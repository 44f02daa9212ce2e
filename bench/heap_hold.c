/*
 * uslub-bench-heaphold: a process holding N objects (default 10^7) of
 * 64 to 191 bytes (about 1 GiB with their allocator overhead at the
 * default) from three call chains, for bench/heap_live.sh to read with
 * `uslub heap PID` while it waits. Prints "ready N BYTES" once they are
 * allocated, then waits until standard input ends, and frees nothing.
 *   uslub-bench-heaphold [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static void *keep(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");     /* no tail call */
	return p;
}

/* the three callers, each a frame of its own (no tail call) */
#define CALLER(name, size)                                              \
	__attribute__((noinline)) static void *name(size_t i)           \
	{                                                               \
		void *p = keep(size);                                   \
		__asm__ volatile("" : : "r"(p) : "memory");             \
		return p;                                               \
	}
CALLER(index_entry, 64 + (i & 63))
CALLER(row_text, 128 + (i & 63))
CALLER(small_node, 64 + 0 * i)

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000000;
	void **v = malloc(n * sizeof(*v));
	size_t bytes = 0;
	if (!v)
		return 2;
	for (size_t i = 0; i < n; i++) {
		switch (i % 3) {
		case 0: v[i] = index_entry(i); bytes += 64 + (i & 63); break;
		case 1: v[i] = row_text(i); bytes += 128 + (i & 63); break;
		default: v[i] = small_node(i); bytes += 64; break;
		}
		if (!v[i])
			return 2;
	}
	printf("ready %zu %zu\n", n, bytes);
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
