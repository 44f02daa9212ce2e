/*
 * unit_stack_walk's module (plain libc, no uslub, no frame pointer): a
 * frame between the test and its callback, in code that is unloaded and
 * loaded again while other threads walk.
 */
#include <stddef.h>

__attribute__((noinline)) size_t walk_plugin_call(size_t (*cb)(void *), void *arg)
{
	static volatile size_t sink;
	size_t r = cb(arg);
	sink += r;
	return sink;
}
