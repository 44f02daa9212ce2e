/*
 * test/kernel/kcheck.h: the checks the kernel-API test programs share:
 * CHECK/CHECK_EQ (a failure names the program, file and line, and exits
 * 1), live_objs() (a cache's live objects from its slabinfo) and
 * all_zero(). Include after <uslub/slab.h>; KCHECK_PROG names the program.
 */
#ifndef USLUB_TEST_KCHECK_H
#define USLUB_TEST_KCHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

static __attribute__((noreturn, format(printf, 3, 4))) void
fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: FAIL %s:%d: ", KCHECK_PROG, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			fail(__FILE__, __LINE__, "%s", #cond);                 \
	} while (0)
#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		unsigned long long a_ = (unsigned long long)(a);               \
		unsigned long long b_ = (unsigned long long)(b);               \
		if (a_ != b_)                                                  \
			fail(__FILE__, __LINE__, "%s == %s: %llu != %llu",     \
			     #a, #b, a_, b_);                                  \
	} while (0)

static inline unsigned long live_objs(struct kmem_cache *s)
{
	struct uslub_slabinfo info;

	CHECK(uslub_cache_slabinfo(s, &info) == 0);
	return info.live_objs;
}

static inline bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = (const unsigned char *)p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

#endif /* USLUB_TEST_KCHECK_H */
