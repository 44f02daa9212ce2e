/*
 * Helpers shared by the malloc front-end tests (test/malloc): non-fatal
 * CHECK macros that count failures, a splitmix64 PRNG with an overridable
 * seed, byte patterns to fill and verify blocks, and the uslub probes
 * (dlsym, so that a test also builds and runs against plain glibc, where
 * the uslub-only checks are skipped). Public API only; no uslub header.
 */
#ifndef USLUB_TEST_MALLOC_COMMON_H
#define USLUB_TEST_MALLOC_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MT_UNUSED __attribute__((unused))

static int mt_failures MT_UNUSED;
static uint64_t mt_seed MT_UNUSED;

static MT_UNUSED __attribute__((format(printf, 3, 4))) void
mt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " [seed=%" PRIu64 "; rerun with USLUB_TEST_SEED=%" PRIu64 "]\n",
		mt_seed, mt_seed);
	fflush(stderr);
	if (++mt_failures >= 50) {
		fprintf(stderr, "too many failures, stopping\n");
		_exit(1);
	}
}

/* A failed check is reported and counted; the test goes on. */
#define CHECK(cond)                                                          \
	((cond) ? 1 : (mt_fail(__FILE__, __LINE__, "CHECK(%s)", #cond), 0))
#define CHECK_MSG(cond, ...)                                                 \
	((cond) ? 1 : (mt_fail(__FILE__, __LINE__, __VA_ARGS__), 0))
#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);          \
		if (_a != _b)                                                \
			mt_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %lld != %lld", \
				#a, #b, _a, _b);                             \
	} while (0)
/* Fatal: report and end the process at once (threads, fork children). */
#define REQUIRE(cond, ...)                                                   \
	do {                                                                 \
		if (!(cond)) {                                               \
			mt_fail(__FILE__, __LINE__, __VA_ARGS__);            \
			_exit(1);                                            \
		}                                                            \
	} while (0)

/* splitmix64 */
struct mt_rng { uint64_t s; };
static MT_UNUSED uint64_t mt_next(struct mt_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
/* Uniform in [lo, hi]. */
static MT_UNUSED uint64_t mt_range(struct mt_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + mt_next(r) % (hi - lo + 1);
}
/* The run's seed: USLUB_TEST_SEED or a fixed default (deterministic). */
static MT_UNUSED uint64_t mt_seed_init(uint64_t dflt)
{
	const char *e = getenv("USLUB_TEST_SEED");
	mt_seed = e && *e ? strtoull(e, NULL, 0) : dflt;
	return mt_seed;
}

/* The pattern byte i of a block with @seed (position dependent, so a
 * block moved or copied at an offset, or overlapping another, shows). */
static inline uint8_t mt_pat(uint64_t seed, size_t i)
{
	uint64_t x = seed ^ ((uint64_t)(i >> 3) * 0x9e3779b97f4a7c15ull);
	x ^= x >> 29;
	return (uint8_t)(x >> ((i & 7) * 8));
}
static MT_UNUSED void mt_fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	size_t i = 0;
	for (; i + 8 <= n && ((uintptr_t)(b + i) & 7) == 0; i += 8) {
		uint64_t x = seed ^ ((uint64_t)(i >> 3) * 0x9e3779b97f4a7c15ull);
		x ^= x >> 29;
		memcpy(b + i, &x, 8);   /* little endian: byte k is x >> 8k */
	}
	for (; i < n; i++)
		b[i] = mt_pat(seed, i);
}
/* Offset of the first wrong byte in [from, n), or (size_t)-1. */
static MT_UNUSED size_t mt_verify_from(const void *p, size_t from, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	size_t i = from;
	for (; i < n && ((i & 7) || ((uintptr_t)(b + i) & 7)); i++)
		if (b[i] != mt_pat(seed, i))
			return i;
	for (; i + 8 <= n; i += 8) {
		uint64_t x = seed ^ ((uint64_t)(i >> 3) * 0x9e3779b97f4a7c15ull), y;
		x ^= x >> 29;
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
	}
	for (; i < n; i++)
		if (b[i] != mt_pat(seed, i))
			return i;
	return (size_t)-1;
}
static MT_UNUSED size_t mt_verify(const void *p, size_t n, uint64_t seed)
{
	return mt_verify_from(p, 0, n, seed);
}

/* uslub probes: present when the process runs on libuslub-malloc. */
typedef size_t (*mt_ksize_fn)(const void *);
typedef unsigned long (*mt_errcount_fn)(void);
typedef void (*mt_slabinfo_fn)(FILE *, int);
static MT_UNUSED mt_ksize_fn mt_uslub_ksize(void)
{
	return (mt_ksize_fn)dlsym(RTLD_DEFAULT, "uslub_ksize");
}
static MT_UNUSED mt_errcount_fn mt_uslub_error_count(void)
{
	return (mt_errcount_fn)dlsym(RTLD_DEFAULT, "uslub_error_count");
}
static MT_UNUSED mt_slabinfo_fn mt_uslub_slabinfo_print(void)
{
	return (mt_slabinfo_fn)dlsym(RTLD_DEFAULT, "uslub_slabinfo_print");
}
/* The file name of the object that defines @sym in the global scope
 * ("" when not found). */
static MT_UNUSED const char *mt_sym_owner(const char *sym)
{
	void *a = dlsym(RTLD_DEFAULT, sym);
	Dl_info info;
	if (!a || !dladdr(a, &info) || !info.dli_fname)
		return "";
	return info.dli_fname;
}

#endif
