/* Minimal white-box test helpers: CHECK() prints the failing expression. */
#ifndef USLUB_UNIT_H
#define USLUB_UNIT_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
		exit(1); \
	} \
} while (0)
#define CHECK_EQ(a, b) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { \
		fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n", \
			__FILE__, __LINE__, #a, _a, #b, _b); \
		exit(1); \
	} \
} while (0)

static inline unsigned long long unit_rand(unsigned long long *s)
{
	unsigned long long z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
#endif
