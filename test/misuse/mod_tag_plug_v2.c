/*
 * misuse_tag_replaced's plugin, rebuilt: the same path, other code.
 * Its first function never allocates and covers the offsets where the
 * first build called malloc (256 bytes of nops); before the fix the first
 * build's live blocks were named after it.
 */
#include <stdlib.h>

__attribute__((noinline)) int tag_plug_never_allocates(int x)
{
	__asm__ volatile(".rept 256\n\tnop\n\t.endr" : : : "memory");
	return x + 1;
}

__attribute__((noinline)) void *tag_plug_alloc(size_t size)
{
	return NULL;
}
