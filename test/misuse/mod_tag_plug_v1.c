/*
 * misuse_tag_replaced's plugin, first build: allocates at one site
 * (the only function of its .text). The test loads it, keeps what it
 * allocated, unloads it and replaces the file with the second build.
 */
#include <stdlib.h>

__attribute__((noinline)) void *tag_plug_alloc(size_t size)
{
	void *p = malloc(size);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
