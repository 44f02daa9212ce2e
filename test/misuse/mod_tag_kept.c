/*
 * misuse_tag_unloaded's module that stays: opened by a relative path, the
 * program then leaves that directory before it allocates here (the line
 * marked SITE kept).
 */
#include <stdlib.h>

__attribute__((noinline)) void *tag_kept_alloc(size_t size)
{
	void *p = malloc(size);                  /* SITE kept */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
