/*
 * misuse_tag_unloaded's module that goes: opened by a relative path,
 * allocates at one site (the line marked SITE again), is dlclose()d with
 * its blocks still live.
 */
#include <stdlib.h>

__attribute__((noinline)) void *tag_again_alloc(size_t size)
{
	void *p = malloc(size);                  /* SITE again */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
