/* A module for misuse_out_text (issue 25, item 7): an allocation call
 * site in a module whose path the test chose (control characters in it). */
#include <stdlib.h>

void *out_site_alloc(size_t n);

__attribute__((noinline)) void *out_site_alloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");      /* a call, not a tail jump */
	return p;
}
