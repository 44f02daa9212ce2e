/*
 * Shared helpers of the black-box tests (test/integration, test/stress):
 * CHECK macros, a deterministic PRNG with a printed, overridable seed, the
 * sanitizer scale factor, stat/slabinfo shortcuts, and a small strict JSON
 * validator. Public API only (uslub.h). Header-only: each test is one file.
 */
#ifndef USLUB_TEST_CHECK_H
#define USLUB_TEST_CHECK_H

#include "uslub.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_UNUSED __attribute__((unused))

static uint64_t test_seed_value TEST_UNUSED;
static int test_seed_set TEST_UNUSED;

/* Report and end the process at once (safe in threads and fork children). */
static TEST_UNUSED __attribute__((noreturn, format(printf, 3, 4))) void
test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (test_seed_set)
		fprintf(stderr, " [seed=%" PRIu64 ", rerun with USLUB_TEST_SEED=%" PRIu64 "]",
			test_seed_value, test_seed_value);
	fprintf(stderr, "\n");
	fflush(stderr);
	_exit(1);
}

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond))                                                 \
			test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);   \
	} while (0)

#define CHECK_MSG(cond, ...)                                                 \
	do {                                                                 \
		if (!(cond))                                                 \
			test_fail(__FILE__, __LINE__, __VA_ARGS__);          \
	} while (0)

/* Compare two integers (as long long / unsigned long long), print both. */
#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);          \
		if (_a != _b)                                                \
			test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %lld != %lld", \
				  #a, #b, _a, _b);                           \
	} while (0)

#define CHECK_EQU(a, b)                                                      \
	do {                                                                 \
		unsigned long long _a = (unsigned long long)(a),             \
				   _b = (unsigned long long)(b);             \
		if (_a != _b)                                                \
			test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %llu != %llu", \
				  #a, #b, _a, _b);                           \
	} while (0)

/* ------------------------------------------------------------------------
 * PRNG: splitmix64, one state per user (threads keep their own).
 * ---------------------------------------------------------------------- */
struct rng {
	uint64_t s;
};

static TEST_UNUSED uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0; tiny modulo bias is irrelevant here). */
static TEST_UNUSED uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* The test's seed: USLUB_TEST_SEED if set, else @def; printed once. */
static TEST_UNUSED uint64_t test_seed(uint64_t def)
{
	const char *e = getenv("USLUB_TEST_SEED");
	uint64_t v = def;
	if (e && *e) {
		char *end;
		unsigned long long x = strtoull(e, &end, 0);
		if (end != e && !*end)
			v = x;
	}
	test_seed_value = v;
	test_seed_set = 1;
	printf("seed %" PRIu64 "\n", v);
	fflush(stdout);
	return v;
}

/* Iteration counts: /4 in sanitizer runs (USLUB_SANITIZED=1). */
static TEST_UNUSED int test_sanitized(void)
{
	const char *e = getenv("USLUB_SANITIZED");
	return e && *e && strcmp(e, "0") != 0;
}

static TEST_UNUSED long scaled(long n)
{
	if (test_sanitized()) {
		n /= 4;
		if (n < 1)
			n = 1;
	}
	return n;
}

/* ------------------------------------------------------------------------
 * Stats and slabinfo shortcuts
 * ---------------------------------------------------------------------- */
static TEST_UNUSED uint64_t stat_get(uslub_cache_t *s, enum uslub_stat_item it)
{
	uint64_t st[USLUB_NR_STATS];
	memset(st, 0, sizeof(st));
	uslub_cache_stats(s, st);
	return st[it];
}

/* The counter invariant: every successful allocation counts exactly once
 * in ALLOC_FASTPATH + ALLOC_SLOWPATH + ALLOC_PCS (per-CPU sheaves), every
 * free once in FREE_FASTPATH + FREE_SLOWPATH + FREE_PCS; bulk calls count
 * per object; sheaf refills and flushes count in neither. */
static TEST_UNUSED uint64_t stat_allocs(const uint64_t *st)
{
	return st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS];
}

static TEST_UNUSED uint64_t stat_frees(const uint64_t *st)
{
	return st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS];
}

static TEST_UNUSED struct uslub_slabinfo slabinfo_get(uslub_cache_t *s)
{
	struct uslub_slabinfo si;
	memset(&si, 0xa5, sizeof(si));
	int rc = uslub_cache_slabinfo(s, &si);
	if (rc != 0)
		test_fail(__FILE__, __LINE__, "uslub_cache_slabinfo returned %d", rc);
	return si;
}

/* Current time in seconds (monotonic). */
#include <time.h>
static TEST_UNUSED double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------
 * slabinfo_print into a malloc'd NUL-terminated string.
 * ---------------------------------------------------------------------- */
static TEST_UNUSED char *slabinfo_string(enum uslub_format fmt, size_t *len_out)
{
	FILE *f = tmpfile();
	if (!f)
		test_fail(__FILE__, __LINE__, "tmpfile: %s", strerror(errno));
	uslub_slabinfo_print(f, fmt);
	fflush(f);
	long len = ftell(f);
	if (len < 0)
		test_fail(__FILE__, __LINE__, "ftell failed");
	char *buf = malloc((size_t)len + 1);
	if (!buf)
		test_fail(__FILE__, __LINE__, "malloc");
	rewind(f);
	size_t got = fread(buf, 1, (size_t)len, f);
	fclose(f);
	if (got != (size_t)len)
		test_fail(__FILE__, __LINE__, "short read of slabinfo output");
	buf[len] = 0;
	if (len_out)
		*len_out = (size_t)len;
	return buf;
}

/* Occurrences of @needle in @hay. */
static TEST_UNUSED size_t count_substr(const char *hay, const char *needle)
{
	size_t n = 0, l = strlen(needle);
	for (const char *p = hay; (p = strstr(p, needle)); p += l)
		n++;
	return n;
}

/* ------------------------------------------------------------------------
 * Strict JSON (RFC 8259) validator: returns true if the whole text is one
 * JSON value (surrounding whitespace allowed).
 * ---------------------------------------------------------------------- */
struct json_p {
	const char *p;
	int depth;
};

static TEST_UNUSED void json_ws(struct json_p *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static bool json_value(struct json_p *j);

static TEST_UNUSED bool json_string(struct json_p *j)
{
	if (*j->p != '"')
		return false;
	j->p++;
	for (;;) {
		unsigned char c = (unsigned char)*j->p;
		if (c == 0 || c < 0x20)
			return false;
		if (c == '"') {
			j->p++;
			return true;
		}
		if (c == '\\') {
			j->p++;
			c = (unsigned char)*j->p;
			if (c == 'u') {
				for (int i = 1; i <= 4; i++) {
					char h = j->p[i];
					if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') ||
					      (h >= 'A' && h <= 'F')))
						return false;
				}
				j->p += 5;
				continue;
			}
			if (c == 0 || !strchr("\"\\/bfnrt", c))
				return false;
		}
		j->p++;
	}
}

static TEST_UNUSED bool json_number(struct json_p *j)
{
	const char *p = j->p;
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return false;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	j->p = p;
	return true;
}

/* An object's members or an array's elements, from the opening bracket
 * to @close; objects have "key": before each value. */
static TEST_UNUSED bool json_seq(struct json_p *j, char close, bool members)
{
	j->p++;
	json_ws(j);
	if (*j->p == close) {
		j->p++;
		return true;
	}
	for (;;) {
		json_ws(j);
		if (members) {
			if (!json_string(j))
				return false;
			json_ws(j);
			if (*j->p != ':')
				return false;
			j->p++;
		}
		if (!json_value(j))
			return false;
		json_ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p != close)
			return false;
		j->p++;
		return true;
	}
}

static TEST_UNUSED bool json_value(struct json_p *j)
{
	json_ws(j);
	if (++j->depth > 256)
		return false;
	bool ok = false;
	char c = *j->p;
	if (c == '{') {
		ok = json_seq(j, '}', true);
	} else if (c == '[') {
		ok = json_seq(j, ']', false);
	} else if (c == '"') {
		ok = json_string(j);
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		ok = json_number(j);
	} else if (!strncmp(j->p, "true", 4)) {
		j->p += 4;
		ok = true;
	} else if (!strncmp(j->p, "false", 5)) {
		j->p += 5;
		ok = true;
	} else if (!strncmp(j->p, "null", 4)) {
		j->p += 4;
		ok = true;
	}
	j->depth--;
	return ok;
}

static TEST_UNUSED bool json_valid(const char *text)
{
	struct json_p j = { text, 0 };
	if (!json_value(&j))
		return false;
	json_ws(&j);
	return *j.p == 0;
}


/* What a report printer (uslub_*_print(FILE *, fmt)) writes, as a string
 * to free(). */
static inline TEST_UNUSED char *print_to_string(void (*print)(FILE *, int), int fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f);
	print(f, fmt);
	CHECK(fclose(f) == 0);
	CHECK(buf);
	return buf;
}

/* ---- a set of live addresses (open addressing, backward-shift delete):
 * tests use it to prove no address is handed out twice ------------------ */
#define SET_BITS 17
#define SET_SIZE (1u << SET_BITS)
static uintptr_t set_tab[SET_SIZE] __attribute__((unused));
static size_t set_count __attribute__((unused));

static inline size_t set_hash(uintptr_t p)
{
	return (size_t)((p * 0x9e3779b97f4a7c15ull) >> (64 - SET_BITS));
}

static inline bool set_insert(uintptr_t p)
{
	CHECK(set_count < SET_SIZE / 2);
	size_t i = set_hash(p);
	while (set_tab[i]) {
		if (set_tab[i] == p)
			return false;
		i = (i + 1) & (SET_SIZE - 1);
	}
	set_tab[i] = p;
	set_count++;
	return true;
}

static inline void set_remove(uintptr_t p)
{
	size_t i = set_hash(p);
	while (set_tab[i] != p) {
		CHECK_MSG(set_tab[i] != 0, "%p not in the live set", (void *)p);
		i = (i + 1) & (SET_SIZE - 1);
	}
	set_tab[i] = 0;
	set_count--;
	size_t j = i;
	for (;;) {
		j = (j + 1) & (SET_SIZE - 1);
		if (!set_tab[j])
			break;
		size_t h = set_hash(set_tab[j]);
		/* move set_tab[j] into the hole at i if its home is not in (i, j] */
		bool in_range = (i <= j) ? (h > i && h <= j) : (h > i || h <= j);
		if (!in_range) {
			set_tab[i] = set_tab[j];
			set_tab[j] = 0;
			i = j;
		}
	}
}

/* The process's address-space size (VmSize), for RLIMIT_AS tests; -1 if unknown. */
static TEST_UNUSED long vm_size_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Compiled with ASan or TSan (RLIMIT_AS tests cannot run under them). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZER_BUILD 1
#endif
#endif


/* ---- stderr capture: reports are written with write(2) to fd 2 ----------- */
static char check_captured[1 << 18];
static int check_saved_fd = -1;
static char check_cap_path[64];

static inline void capture_begin(void)
{
	fflush(stderr);
	strcpy(check_cap_path, "/tmp/uslub-capture-XXXXXX");
	int fd = mkstemp(check_cap_path);
	CHECK(fd >= 0);
	check_saved_fd = dup(2);
	CHECK(check_saved_fd >= 0);
	CHECK(dup2(fd, 2) == 2);
	close(fd);
}

/* What fd 2 received since capture_begin() (NUL-terminated). */
static inline const char *capture_end(void)
{
	fflush(stderr);
	CHECK(dup2(check_saved_fd, 2) == 2);
	close(check_saved_fd);
	int fd = open(check_cap_path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, check_captured, sizeof(check_captured) - 1);
	close(fd);
	unlink(check_cap_path);
	check_captured[n > 0 ? n : 0] = 0;
	return check_captured;
}

#define CHECK_HAS(text, needle) \
	CHECK_MSG(strstr((text), (needle)), "output lacks \"%s\":\n%s", (needle), (text))

/* The uslub tool: @arg if given, else <build>/uslub next to the test's
 * <build>/test/ directory. NULL (the test is skipped) when it is not there. */
static inline TEST_UNUSED const char *uslub_tool_path(const char *arg, char *buf, size_t len)
{
	const char *tool = arg;
	if (!tool) {
		ssize_t n = readlink("/proc/self/exe", buf, len - 16);
		CHECK(n > 0);
		buf[n] = 0;
		char *slash = strrchr(buf, '/');
		CHECK(slash);
		strcpy(slash, "/../uslub");
		tool = buf;
	}
	return access(tool, X_OK) ? NULL : tool;
}

/* Run the shell command line @cmd: its output (to free) and its exit
 * status in *@status (-1: killed). */
static inline TEST_UNUSED char *run_command(const char *cmd, int *status)
{
	FILE *f = popen(cmd, "r");
	CHECK(f);
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);
	CHECK(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 >= cap) {
			cap *= 2;
			CHECK((buf = realloc(buf, cap)) != NULL);
		}
	}
	buf[len] = 0;
	int st = pclose(f);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return buf;
}

#endif /* USLUB_TEST_CHECK_H */
