/*
 * misuse_tag_unloaded's newcomer: loaded after misuse_mod_tag_gone.so is
 * unloaded, where it was if the loader reuses the hole. Its function is
 * laid out like tag_gone_alloc() but never allocates: no report may name
 * it.
 */
#include <stddef.h>

__attribute__((noinline)) void *tag_other_spin(size_t size)
{
	static volatile size_t sink;
	sink = size;
	__asm__ volatile("" : : "r"(size) : "memory");
	return (void *)sink;
}
