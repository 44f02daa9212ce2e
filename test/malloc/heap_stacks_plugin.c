/*
 * malloc_heap_stacks' plugin (heap_stacks.c, mode dlclose): a module that
 * allocates with its own call to malloc, loaded and unloaded over and
 * over while its blocks stay live.
 */
#include <stdlib.h>

__attribute__((noinline)) void *plugin_alloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");     /* no tail call */
	return p;
}
