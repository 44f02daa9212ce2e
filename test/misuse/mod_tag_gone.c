/*
 * misuse_tag_unloaded's module that goes: opened by a relative path,
 * allocates at one site (the line marked SITE gone), is dlclose()d with
 * its blocks still live.
 */
#include <stdlib.h>

__attribute__((noinline)) void *tag_gone_alloc(size_t size)
{
	void *p = malloc(size);                  /* SITE gone */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
