/*
 * malloc_cxx: C++ allocation on libuslub-malloc (linked, ahead of
 * libstdc++, so its operator new/delete replace libstdc++'s):
 *   - every replaceable operator new/delete, called explicitly: plain,
 *     array, nothrow, sized delete, align_val_t (64, 4096, 64 KiB, 2 MiB),
 *     aligned nothrow, aligned sized delete; new of zero bytes is unique;
 *   - new-expressions of over-aligned types (alignas(64), alignas(4096)),
 *     single and array, reach the aligned operators and are aligned;
 *   - impossible sizes: nothrow new returns nullptr, throwing new throws
 *     std::bad_alloc (plain, array, aligned), and a new_handler is called
 *     before the throw;
 *   - STL churn: vector growth, map/unordered_map insert/erase, string
 *     concatenation, list, shared_ptr, objects deleted on another thread;
 *     results checked against values computed independently;
 *   - thread_local objects whose destructors free (and allocate) during
 *     thread exit;
 *   - on uslub: every operator symbol resolves into libuslub-malloc, and
 *     the memory is uslub's (uslub_ksize(p) >= n, equal to
 *     malloc_usable_size(p)); uslub_error_count() stays 0.
 * Against plain glibc/libstdc++ the uslub-only checks are skipped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

static int failures;

#define CHECK(cond) check_((cond), #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, ...)                                                     \
	((cond) ? true : (report_(__FILE__, __LINE__, __VA_ARGS__), false))

static void report_(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void report_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	std::fflush(stdout);
	std::fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	std::vfprintf(stderr, fmt, ap);
	va_end(ap);
	std::fprintf(stderr, "\n");
	if (++failures > 50) {
		std::fprintf(stderr, "too many failures\n");
		std::_Exit(1);
	}
}
static bool check_(bool ok, const char *what, const char *file, int line)
{
	if (!ok)
		report_(file, line, "CHECK(%s)", what);
	return ok;
}

typedef size_t (*ksize_fn)(const void *);
static ksize_fn uslub_ksize_p;
static bool on_uslub;

static bool aligned(const void *p, size_t a)
{
	return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0;
}

/* The memory behind p (n bytes) is the allocator's: writable, and on
 * uslub one of uslub's allocations. */
static void check_block(void *p, size_t n, size_t align, const char *what)
{
	if (!CHECK_MSG(p != nullptr, "%s(%zu) returned nullptr", what, n))
		return;
	CHECK_MSG(aligned(p, align), "%s(%zu, align %zu) = %p misaligned", what, n, align, p);
	CHECK_MSG(malloc_usable_size(p) >= n, "%s(%zu): malloc_usable_size %zu", what, n,
		  malloc_usable_size(p));
	if (uslub_ksize_p) {
		size_t ks = uslub_ksize_p(p);
		CHECK_MSG(ks >= n, "%s(%zu): uslub_ksize %zu (not uslub memory?)", what, n, ks);
		CHECK_MSG(ks == malloc_usable_size(p), "%s(%zu): uslub_ksize %zu != usable %zu",
			  what, n, ks, malloc_usable_size(p));
	}
	std::memset(p, 0xab, n);
}

// Called through a volatile pointer: the compiler may not elide a
// new/delete pair nor fold a comparison of two new results.
template <class T> static T launder_ptr(T p)
{
	T volatile v = p;
	return v;
}

static void test_symbols()
{
	static const char *names[] = {
		"_Znwm",                       // new(size_t)
		"_Znam",                       // new[](size_t)
		"_ZnwmRKSt9nothrow_t",         // new(size_t, nothrow)
		"_ZnamRKSt9nothrow_t",         // new[](size_t, nothrow)
		"_ZnwmSt11align_val_t",        // new(size_t, align_val_t)
		"_ZnamSt11align_val_t",        // new[](size_t, align_val_t)
		"_ZnwmSt11align_val_tRKSt9nothrow_t",
		"_ZnamSt11align_val_tRKSt9nothrow_t",
		"_ZdlPv",                      // delete(void *)
		"_ZdaPv",                      // delete[](void *)
		"_ZdlPvm",                     // delete(void *, size_t)
		"_ZdaPvm",
		"_ZdlPvRKSt9nothrow_t",
		"_ZdaPvRKSt9nothrow_t",
		"_ZdlPvSt11align_val_t",
		"_ZdaPvSt11align_val_t",
		"_ZdlPvmSt11align_val_t",
		"_ZdaPvmSt11align_val_t",
		"_ZdlPvSt11align_val_tRKSt9nothrow_t",
		"_ZdaPvSt11align_val_tRKSt9nothrow_t",
	};
	if (!on_uslub)
		return;
	for (const char *name : names) {
		void *a = dlsym(RTLD_DEFAULT, name);
		Dl_info info;
		const char *owner = a && dladdr(a, &info) && info.dli_fname ? info.dli_fname : "";
		CHECK_MSG(std::strstr(owner, "libuslub-malloc") != nullptr,
			  "%s resolves to '%s', not libuslub-malloc", name, owner);
	}
}

static void test_operators()
{
	const size_t sizes[] = { 0, 1, 8, 24, 100, 1000, 4096, 10000, 100000, 3u << 20 };
	for (size_t n : sizes) {
		size_t want = n ? n : 1;
		void *p = launder_ptr(::operator new(n));
		check_block(p, want, n >= 16 ? 16 : 1, "operator new");
		::operator delete(p);

		p = launder_ptr(::operator new[](n));
		check_block(p, want, n >= 16 ? 16 : 1, "operator new[]");
		::operator delete[](p);

		p = launder_ptr(::operator new(n, std::nothrow));
		check_block(p, want, 1, "operator new(nothrow)");
		::operator delete(p, std::nothrow);

		p = launder_ptr(::operator new[](n, std::nothrow));
		check_block(p, want, 1, "operator new[](nothrow)");
		::operator delete[](p, std::nothrow);

		// sized delete
		p = launder_ptr(::operator new(n));
		check_block(p, want, 1, "operator new");
		::operator delete(p, n);
		p = launder_ptr(::operator new[](n));
		check_block(p, want, 1, "operator new[]");
		::operator delete[](p, n);

		const size_t aligns[] = { 8, 16, 32, 64, 128, 4096, 65536, 2u << 20 };
		for (size_t a : aligns) {
			std::align_val_t al = static_cast<std::align_val_t>(a);
			p = launder_ptr(::operator new(n, al));
			check_block(p, want, a, "operator new(align)");
			if (a & 1)
				::operator delete(p, al);
			else
				::operator delete(p, n, al);   // sized + aligned

			p = launder_ptr(::operator new[](n, al));
			check_block(p, want, a, "operator new[](align)");
			if (n & 1)
				::operator delete[](p, al);
			else
				::operator delete[](p, n, al);

			p = launder_ptr(::operator new(n, al, std::nothrow));
			check_block(p, want, a, "operator new(align, nothrow)");
			::operator delete(p, al, std::nothrow);

			p = launder_ptr(::operator new[](n, al, std::nothrow));
			check_block(p, want, a, "operator new[](align, nothrow)");
			::operator delete[](p, al, std::nothrow);

			p = launder_ptr(::operator new(n, al));
			check_block(p, want, a, "operator new(align)");
			::operator delete(p, al);
		}
	}
	// new of zero bytes: unique non-null pointers.
	void *z[16];
	for (int i = 0; i < 16; i++) {
		z[i] = launder_ptr(::operator new(0));
		CHECK(z[i] != nullptr);
		for (int j = 0; j < i; j++)
			CHECK_MSG(z[i] != z[j], "operator new(0) returned %p twice", z[i]);
	}
	for (int i = 0; i < 16; i++)
		::operator delete(z[i]);
	// delete of nullptr, every form.
	::operator delete(nullptr);
	::operator delete[](nullptr);
	::operator delete(nullptr, std::nothrow);
	::operator delete(nullptr, std::align_val_t(64));
	::operator delete[](nullptr, std::align_val_t(4096));
}

struct alignas(64) Line {
	unsigned char b[64];
	int tag;
	Line() : tag(7) { std::memset(b, 0x11, sizeof(b)); }
};
struct alignas(4096) Page {
	unsigned char b[100];
	int tag;
	Page() : tag(9) { std::memset(b, 0x22, sizeof(b)); }
};
struct alignas(256) Small256 {
	int x = 5;
};

static void test_overaligned()
{
	static_assert(alignof(Line) == 64, "alignas(64)");
	static_assert(alignof(Page) == 4096, "alignas(4096)");
	for (int round = 0; round < 50; round++) {
		Line *l = launder_ptr(new Line);
		CHECK_MSG(aligned(l, 64), "new Line = %p", static_cast<void *>(l));
		CHECK(l->tag == 7 && l->b[63] == 0x11);
		Page *pg = launder_ptr(new Page);
		CHECK_MSG(aligned(pg, 4096), "new Page = %p", static_cast<void *>(pg));
		CHECK(pg->tag == 9 && pg->b[99] == 0x22);
		size_t n = 1 + (size_t)round % 7;
		Line *la = launder_ptr(new Line[n]);
		CHECK_MSG(aligned(la, 64), "new Line[%zu] = %p", n, static_cast<void *>(la));
		for (size_t i = 0; i < n; i++)
			CHECK(la[i].tag == 7 && aligned(&la[i], 64));
		Page *pa = launder_ptr(new Page[n]);
		CHECK_MSG(aligned(pa, 4096), "new Page[%zu] = %p", n, static_cast<void *>(pa));
		for (size_t i = 0; i < n; i++) {
			CHECK(pa[i].tag == 9);
			std::memset(pa[i].b, (int)i, sizeof(pa[i].b));
		}
		Small256 *s = launder_ptr(new (std::nothrow) Small256);
		CHECK(s && aligned(s, 256) && s->x == 5);
		if (uslub_ksize_p) {
			CHECK(uslub_ksize_p(l) >= sizeof(Line));
			CHECK(uslub_ksize_p(pg) >= sizeof(Page));
		}
		delete s;
		delete[] pa;
		delete[] la;
		delete pg;
		delete l;
	}
	// Over-aligned objects in a container (std::allocator uses the aligned
	// operator new for them).
	std::vector<Page> v;
	for (int i = 0; i < 40; i++) {
		v.emplace_back();
		CHECK(aligned(v.data(), 4096));
	}
	for (auto &p : v)
		CHECK(p.tag == 9);
}

static int handler_calls;
static void one_shot_handler()
{
	handler_calls++;
	std::set_new_handler(nullptr);   // the next failure throws
}

static void test_impossible()
{
	volatile size_t huge = SIZE_MAX;
	volatile size_t big = SIZE_MAX / 2 + 1;
	const size_t sizes[] = { huge, big, huge - 4095, (size_t)1 << 50 };
	for (size_t n : sizes) {
		void *p = ::operator new(n, std::nothrow);
		CHECK_MSG(p == nullptr, "new(%#zx, nothrow) = %p", n, p);
		p = ::operator new[](n, std::nothrow);
		CHECK_MSG(p == nullptr, "new[](%#zx, nothrow) = %p", n, p);
		// libstdc++ (GCC 12) rounds the size up to the alignment and
		// overflows to 0 for SIZE_MAX: its aligned new of SIZE_MAX
		// succeeds. Checked on uslub only.
		bool check_aligned = !(n == SIZE_MAX && !on_uslub);
		if (check_aligned) {
			p = ::operator new(n, std::align_val_t(64), std::nothrow);
			CHECK_MSG(p == nullptr, "new(%#zx, align 64, nothrow) = %p", n, p);
			p = ::operator new[](n, std::align_val_t(4096), std::nothrow);
			CHECK_MSG(p == nullptr, "new[](%#zx, align 4096, nothrow) = %p", n, p);
		}

		bool thrown = false;
		try {
			p = ::operator new(n);
			::operator delete(p);
		} catch (const std::bad_alloc &) {
			thrown = true;
		}
		CHECK_MSG(thrown, "operator new(%#zx) did not throw bad_alloc", n);
		thrown = false;
		try {
			p = ::operator new[](n);
			::operator delete[](p);
		} catch (const std::bad_alloc &) {
			thrown = true;
		}
		CHECK_MSG(thrown, "operator new[](%#zx) did not throw bad_alloc", n);
		if (!check_aligned)
			continue;
		thrown = false;
		try {
			p = ::operator new(n, std::align_val_t(4096));
			::operator delete(p, std::align_val_t(4096));
		} catch (const std::bad_alloc &) {
			thrown = true;
		}
		CHECK_MSG(thrown, "operator new(%#zx, align 4096) did not throw bad_alloc", n);
	}
	// new-expression of an impossible array.
	bool thrown = false;
	try {
		volatile size_t count = SIZE_MAX / 16;
		// escapes, so that clang cannot elide the pair ([expr.new]/10)
		char *c = static_cast<char *>(launder_ptr(new char[count * 8]));
		delete[] c;
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	CHECK_MSG(thrown, "new char[huge] did not throw");
	// A new_handler runs before bad_alloc is thrown.
	handler_calls = 0;
	std::set_new_handler(one_shot_handler);
	thrown = false;
	try {
		void *p = ::operator new(huge);
		::operator delete(p);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	CHECK_MSG(thrown && handler_calls == 1,
		  "new with a new_handler: thrown %d, handler called %d times", thrown,
		  handler_calls);
	handler_calls = 0;
	std::set_new_handler(one_shot_handler);
	void *p = ::operator new(huge, std::nothrow);   // nothrow: handler, then nullptr
	CHECK_MSG(p == nullptr && handler_calls == 1,
		  "nothrow new with a new_handler: %p, handler called %d times", p, handler_calls);
	std::set_new_handler(nullptr);
	// Normal allocation still works after all that.
	p = ::operator new(100);
	check_block(p, 100, 16, "operator new");
	::operator delete(p, 100);
}

static uint64_t fnv(const std::string &s, uint64_t h = 1469598103934665603ull)
{
	for (unsigned char c : s)
		h = (h ^ c) * 1099511628211ull;
	return h;
}

static void test_stl()
{
	// vector growth: every element kept through each reallocation.
	std::vector<uint64_t> v;
	const uint64_t N = 1000000;
	for (uint64_t i = 0; i < N; i++) {
		v.push_back(i * 3 + 1);
		if ((i & (i + 1)) == 0 && uslub_ksize_p)   // after each growth step
			CHECK(uslub_ksize_p(v.data()) >= v.capacity() * sizeof(uint64_t));
	}
	uint64_t sum = 0;
	for (uint64_t x : v)
		sum += x;
	CHECK_MSG(sum == 3 * (N * (N - 1) / 2) + N, "vector sum %" PRIu64, sum);
	v.resize(10);
	v.shrink_to_fit();
	CHECK(v.size() == 10 && v[9] == 28);

	// vector of vectors of strings.
	std::vector<std::vector<std::string>> vv(200);
	for (int i = 0; i < 200; i++)
		for (int j = 0; j < i; j++)
			vv[i].push_back(std::string((size_t)(i + j) % 97, (char)('a' + j % 26)));
	size_t total = 0, expect = 0;
	for (int i = 0; i < 200; i++)
		for (int j = 0; j < i; j++) {
			total += vv[i][(size_t)j].size();
			expect += (size_t)(i + j) % 97;
		}
	CHECK(total == expect);

	// map / unordered_map: insert, erase half, verify.
	std::map<int, std::string> m;
	std::unordered_map<std::string, int> um;
	for (int i = 0; i < 100000; i++) {
		std::string s = "key-" + std::to_string(i * 7919 % 100003);
		m[i] = s;
		um[s] = i;
	}
	for (int i = 0; i < 100000; i += 2) {
		um.erase(m[i]);
		m.erase(i);
	}
	CHECK(m.size() == 50000 && um.size() == 50000);
	bool ok = true;
	for (auto &kv : m)
		ok &= kv.first % 2 == 1 && um.count(kv.second) && um[kv.second] == kv.first &&
		      kv.second == "key-" + std::to_string(kv.first * 7919 % 100003);
	CHECK_MSG(ok, "map/unordered_map contents wrong");

	// strings: concatenation and growth, compared with a byte hash.
	std::string s;
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 200000; i++) {
		std::string piece = std::to_string(i) + ",";
		s += piece;
		h = fnv(piece, h);
	}
	CHECK(fnv(s) == h);
	std::string t = s.substr(1000, 50000);
	CHECK(t.size() == 50000 && std::memcmp(t.data(), s.data() + 1000, 50000) == 0);

	// list and shared_ptr churn.
	std::list<std::shared_ptr<std::vector<int>>> l;
	long acc = 0, acc_expect = 0;
	for (int i = 0; i < 50000; i++) {
		l.push_back(std::make_shared<std::vector<int>>((size_t)(i % 50), i));
		acc_expect += (long)(i % 50) * i;
		if (l.size() > 1000) {
			for (int x : *l.front())
				acc += x;
			l.pop_front();
		}
	}
	for (auto &p : l)
		for (int x : *p)
			acc += x;
	CHECK(acc == acc_expect);
}

// Objects made on one thread, destroyed on another (remote frees).
static void test_threads()
{
	std::mutex mu;
	std::vector<std::unique_ptr<std::string>> pool;
	std::atomic<long> made{0}, destroyed{0};
	std::atomic<bool> bad{false};
	std::vector<std::thread> th;
	for (int t = 0; t < 4; t++)
		th.emplace_back([&, t] {
			for (int i = 0; i < 20000; i++) {
				auto p = std::make_unique<std::string>(
					(size_t)(i % 300) + 1, (char)('A' + t));
				made++;
				std::unique_ptr<std::string> other;
				{
					std::lock_guard<std::mutex> g(mu);
					pool.push_back(std::move(p));
					if (pool.size() > 64) {
						size_t k = (size_t)(i * 31 + t) % pool.size();
						other = std::move(pool[k]);
						pool[k] = std::move(pool.back());
						pool.pop_back();
					}
				}
				if (other) {
					char c = (*other)[0];
					for (char x : *other)
						if (x != c || c < 'A' || c > 'D')
							bad = true;
					other.reset();
					destroyed++;
				}
			}
		});
	for (auto &x : th)
		x.join();
	destroyed += (long)pool.size();
	pool.clear();
	CHECK(!bad);
	CHECK(made == destroyed);
}

// thread_local objects with destructors: destroyed during thread exit
// (__cxa_thread_atexit), freeing memory allocated on that thread, and
// allocating while they go.
struct TlsHolder {
	std::vector<std::string> v;
	std::map<int, std::vector<char>> m;
	~TlsHolder()
	{
		size_t n = 0;
		for (auto &s : v)
			n += s.size();
		if (n != expect)
			tls_bad++;
		std::string tail(1000, 'z');   // allocate during thread exit
		tls_bytes += (long)(n + tail.size());
	}
	size_t expect = 0;
	static std::atomic<int> tls_bad;
	static std::atomic<long> tls_bytes;
};
std::atomic<int> TlsHolder::tls_bad{0};
std::atomic<long> TlsHolder::tls_bytes{0};
static thread_local TlsHolder tls_holder;

static void test_thread_local()
{
	long want = 0;
	for (int round = 0; round < 10; round++) {
		std::vector<std::thread> th;
		for (int t = 0; t < 8; t++) {
			size_t len = (size_t)(round * 8 + t) % 200 + 1;
			want += (long)(len * 300 + 1000);
			th.emplace_back([len] {
				for (int i = 0; i < 300; i++) {
					tls_holder.v.emplace_back(len, 'q');
					tls_holder.m[i].resize(len);
				}
				tls_holder.expect = len * 300;
			});
		}
		for (auto &x : th)
			x.join();
	}
	CHECK(TlsHolder::tls_bad == 0);
	CHECK_MSG(TlsHolder::tls_bytes == want, "thread_local destructors saw %ld bytes, want %ld",
		  TlsHolder::tls_bytes.load(), want);
}

int main()
{
	setvbuf(stdout, nullptr, _IONBF, 0);
	uslub_ksize_p = reinterpret_cast<ksize_fn>(dlsym(RTLD_DEFAULT, "uslub_ksize"));
	on_uslub = uslub_ksize_p != nullptr;
	std::printf("malloc_cxx: %s\n",
		    on_uslub ? "uslub" : "NOT uslub (glibc: uslub-only checks skipped)");
	struct {
		const char *name;
		void (*fn)();
	} tests[] = {
		{ "symbols", test_symbols },         { "operators", test_operators },
		{ "overaligned", test_overaligned }, { "impossible", test_impossible },
		{ "stl", test_stl },                 { "threads", test_threads },
		{ "thread_local", test_thread_local },
	};
	for (auto &t : tests) {
		int before = failures;
		t.fn();
		std::printf("  %-12s %s\n", t.name, failures == before ? "ok" : "FAILED");
	}
	if (on_uslub) {
		auto errs = reinterpret_cast<unsigned long (*)()>(
			dlsym(RTLD_DEFAULT, "uslub_error_count"));
		if (CHECK(errs != nullptr))
			CHECK_MSG(errs() == 0, "uslub_error_count() = %lu", errs());
	}
	if (failures) {
		std::printf("malloc_cxx: %d check(s) failed\n", failures);
		return 1;
	}
	std::printf("malloc_cxx: all passed\n");
	return 0;
}
