/*
 * unit_caller_tag's module (plain libc, no uslub): an address inside it
 * is claimed as a caller tag, then the module is unloaded.
 */
#include <stddef.h>

__attribute__((noinline)) size_t caller_plugin_fn(size_t x)
{
	static volatile size_t sink;
	sink = x * 3 + 1;
	return sink;
}
