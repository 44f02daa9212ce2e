// cxx_tags: uslub.h's allocation macros in C++ (USLUB_PROFILING=1, set by
// CTest; skips with 77 when profiling is off, after the allocations).
// Found by review: g++ refused the header once a macro was used both in an
// ordinary function and in an inline function or template (their static
// tags in one named section with different flags); C++ tags now live
// outside the section and register on first use. This file must compile,
// and:
//   - sites in an ordinary function, an inline function, an inline member
//     function, and a function template instantiated for two types (two
//     tags on one line), through uslub_cache_alloc, _alloc_node,
//     _alloc_bulk and _alloc_from_sheaf, are listed by uslub_allocinfo()
//     with this file, their line and function name, and exactly their
//     live objects' calls and bytes;
//   - a second thread allocating at the same sites adds to the same
//     entries;
//   - after every object is freed, no site of this file is listed.
// (check.h is C only: a few macros of its own here.)
#include "uslub.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			std::fprintf(stderr, "FAIL %s:%d: CHECK(%s)\n", __FILE__,      \
				     __LINE__, #cond);                           \
			std::exit(1);                                            \
		}                                                                \
	} while (0)
#define CHECK_EQ(a, b)                                                           \
	do {                                                                     \
		long long a_ = (long long)(a), b_ = (long long)(b);              \
		if (a_ != b_) {                                                  \
			std::fprintf(stderr, "FAIL %s:%d: CHECK_EQ(%s, %s): %lld != %lld\n", \
				     __FILE__, __LINE__, #a, #b, a_, b_);       \
			std::exit(1);                                            \
		}                                                                \
	} while (0)

static uslub_cache_t *cache;
static long long csize;

// Each site stores its line (all threads store the same value).
static int l_plain, l_node, l_inline, l_member, l_tmpl, l_bulk, l_sheaf;

void *alloc_plain(uslub_cache_t *s)
{
	l_plain = __LINE__; return uslub_cache_alloc(s, 0);
}

void *alloc_on_node(uslub_cache_t *s)
{
	l_node = __LINE__; return uslub_cache_alloc_node(s, USLUB_GFP_ZERO, USLUB_NUMA_NO_NODE);
}

inline void *alloc_inline(uslub_cache_t *s)
{
	l_inline = __LINE__; return uslub_cache_alloc(s, 0);
}

struct pool {
	uslub_cache_t *s;
	void *get() { l_member = __LINE__; return uslub_cache_alloc(s, 0); }
	int get_bulk(size_t n, void **p) { l_bulk = __LINE__; return uslub_cache_alloc_bulk(s, 0, n, p); }
};

template <typename T> T *alloc_t(uslub_cache_t *s)
{
	l_tmpl = __LINE__; return static_cast<T *>(uslub_cache_alloc(s, 0));
}

template <typename T> T *alloc_from(uslub_cache_t *s, struct uslub_sheaf *sh)
{
	l_sheaf = __LINE__; return static_cast<T *>(uslub_cache_alloc_from_sheaf(s, 0, sh));
}

// This file's entries: the calls and bytes summed per line, and how many
// entries each line has.
struct tally {
	long long calls, bytes;
	int entries;
	const char *func;
};

static tally at(int line)
{
	static struct uslub_allocinfo info[512];
	size_t n = uslub_allocinfo(info, 512);
	CHECK(n <= 512);
	tally t = { 0, 0, 0, nullptr };
	for (size_t i = 0; i < n; i++) {
		if (std::strcmp(info[i].file, __FILE__) || (int)info[i].line != line)
			continue;
		CHECK(info[i].calls > 0);
		t.calls += info[i].calls;
		t.bytes += info[i].bytes;
		t.entries++;
		if (t.func)
			CHECK(!std::strcmp(t.func, info[i].func));
		t.func = info[i].func;
	}
	return t;
}

static size_t file_entries()
{
	static struct uslub_allocinfo info[512];
	size_t n = uslub_allocinfo(info, 512);
	CHECK(n <= 512);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += !std::strcmp(info[i].file, __FILE__);
	return k;
}

static void expect(int line, const char *func, long long calls, int entries)
{
	tally t = at(line);
	if (t.calls != calls || t.entries != entries || t.bytes != calls * csize) {
		std::fprintf(stderr, "FAIL: site %s:%d (%s): %lld calls, %lld bytes in %d "
			     "entries; expected %lld calls, %lld bytes in %d\n", __FILE__, line,
			     func, t.calls, t.bytes, t.entries, calls, calls * csize, entries);
		std::exit(1);
	}
	CHECK(!std::strcmp(t.func, func));
}

enum { PER = 3, BULK = 4 };

struct batch {
	void *plain[PER], *node[PER], *inl[PER], *mem[PER], *bulk[BULK], *sheaf[PER];
	int *ti[PER];
	long *tl[PER];
};

static void fill(batch *b)
{
	pool p = { cache };
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(cache, 0, PER);
	CHECK(sh);
	for (int i = 0; i < PER; i++) {
		CHECK((b->plain[i] = alloc_plain(cache)));
		CHECK((b->node[i] = alloc_on_node(cache)));
		CHECK((b->inl[i] = alloc_inline(cache)));
		CHECK((b->mem[i] = p.get()));
		CHECK((b->ti[i] = alloc_t<int>(cache)));
		CHECK((b->tl[i] = alloc_t<long>(cache)));
		CHECK((b->sheaf[i] = alloc_from<char>(cache, sh)));
	}
	CHECK_EQ(p.get_bulk(BULK, b->bulk), BULK);
	uslub_cache_return_sheaf(cache, 0, sh);
}

static void drain(batch *b)
{
	for (int i = 0; i < PER; i++) {
		uslub_cache_free(cache, b->plain[i]);
		uslub_cache_free(cache, b->node[i]);
		uslub_cache_free(cache, b->inl[i]);
		uslub_cache_free(cache, b->mem[i]);
		uslub_cache_free(cache, b->ti[i]);
		uslub_cache_free(cache, b->tl[i]);
		uslub_cache_free(cache, b->sheaf[i]);
	}
	uslub_cache_free_bulk(cache, BULK, b->bulk);
}

static void expect_all(int k)
{
	expect(l_plain, "alloc_plain", k * PER, 1);
	expect(l_node, "alloc_on_node", k * PER, 1);
	expect(l_inline, "alloc_inline", k * PER, 1);
	expect(l_member, "get", k * PER, 1);
	expect(l_bulk, "get_bulk", k * BULK, 1);
	expect(l_tmpl, "alloc_t", 2 * k * PER, 2);   // alloc_t<int>, alloc_t<long>
	expect(l_sheaf, "alloc_from", k * PER, 1);
}

static batch second;

static void *thread_fill(void *)
{
	fill(&second);
	return nullptr;
}

int main()
{
	cache = uslub_cache_create("cxx-tags", 64, 0, 0, nullptr);
	CHECK(cache);
	struct uslub_slabinfo si;
	CHECK_EQ(uslub_cache_slabinfo(cache, &si), 0);
	csize = (long long)si.size;

	batch first;
	fill(&first);
	if (uslub_profiling_enabled() != 1) {   /* exact figures: exact mode */
		drain(&first);
		CHECK_EQ(uslub_cache_destroy(cache), 0);
		std::printf("cxx_tags: compiled and allocated; profiling is off "
			    "(USLUB_PROFILING=1), skipped\n");
		return 77;
	}
	expect_all(1);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, nullptr, thread_fill, nullptr), 0);
	CHECK_EQ(pthread_join(t, nullptr), 0);
	expect_all(2);
	drain(&first);
	expect_all(1);
	drain(&second);
	CHECK_EQ(file_entries(), 0);
	CHECK_EQ(uslub_cache_validate(cache), 0);
	CHECK_EQ(uslub_cache_destroy(cache), 0);
	std::printf("cxx_tags: plain, inline, member, template and sheaf sites of C++ "
		    "code listed exactly, gone when freed: ok\n");
	return 0;
}
