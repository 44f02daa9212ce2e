/*
 * freelist: object order of new slabs (randomization) and freelist
 * hardening.
 *
 * Randomization (USLUB_RANDOM_FREELIST, or every cache with the option
 * USLUB_FREELIST_RANDOM=1 unless USLUB_NO_RANDOM_FREELIST):
 *   - allocating objs_per_slab objects from a fresh cache gives each object
 *     index of one slab exactly once (index = offset from the slab start,
 *     which is aligned to the slab size, divided by the object stride);
 *   - shuffled caches: the order is not the identity, two caches get
 *     different orders, and two runs of the process (this binary re-executed
 *     through /proc/self/exe --order) get different orders;
 *   - caches that are not shuffled: the order is exactly 0, 1, 2, ...;
 *   - the same through alloc_bulk, and with USLUB_EAGER_FREELIST;
 *   - slabinfo's random_freelist says which caches are shuffled.
 * The order is observed through the cpu slab's freelist (the 6.x model):
 * those caches are made with USLUB_CPU_SLAB. With per-CPU sheaves (the
 * default) a refill takes a slab's objects in its freelist order and the
 * allocations pop the sheaf from the top: there, each slab's objects among
 * several slabs' worth must still be each of its indices once.
 *
 * Hardening (per cache with USLUB_HARDENED_FREELIST, every cache with the
 * option USLUB_FREELIST_HARDENED=1; slabinfo hardened_freelist says which).
 * A cache that is not hardened stores the raw next pointer. In a hardened
 * cache the free pointer of a free object lives at slabinfo offset and is
 * stored as next ^ secret ^ bswap(address of the slot). The test learns the secret
 * from two frees (free X then Y: Y's slot holds X encoded), checks the
 * formula on a second pair, then overwrites a free object's stored pointer
 * with:
 *   (a) a foreign address (a static array), encoded and raw;
 *   (b) an address inside the same slab that is not an object start,
 *       encoded;
 *   (c) the raw (unencoded) address of another object of the cache, one
 *       that is live (following it would hand out a live object twice);
 *   (d) an object start of another cache, encoded;
 * both for an object on the calling thread's cpu freelist and for one on
 * the freelist of a full slab that is later taken as the cpu slab (so on
 * USLUB_CPU_SLAB caches: with sheaves a free pushes no free pointer).
 * Expected, for each: every pointer allocation returns afterwards (3 slabs'
 * worth) is an object start of the cache (offset from the slab start a
 * multiple of the stride, index < objs_per_slab, owned by uslub) and not
 * live already; uslub_error_count() rises by exactly 1 and FREELIST_CORRUPT
 * by exactly 1; validate == 0 (the dropped objects stay counted as in use:
 * leaked on purpose); freeing everything allocated raises no error; the
 * cache keeps working.
 * Naive double free (freeing the object just freed) is reported (+1 error)
 * and ignored: the next two allocations are distinct.
 */
#include "check.h"

#include <sys/wait.h>

#define MAX_OPS 4096

static bool env_random(void)
{
	const char *e = getenv("USLUB_FREELIST_RANDOM");
	return e && *e && strcmp(e, "0") != 0;
}

struct geo {
	size_t size, slab_bytes;
	unsigned int ops;
	size_t offset;
};

static struct geo geo_of(uslub_cache_t *s)
{
	struct uslub_slabinfo si = slabinfo_get(s);
	struct geo g = { si.size, (size_t)si.pages_per_slab * USLUB_PAGE_SIZE, si.objs_per_slab,
			 si.offset };
	CHECK(g.size > 0 && g.ops >= 1 && g.ops <= MAX_OPS);
	CHECK((g.slab_bytes & (g.slab_bytes - 1)) == 0);
	CHECK((size_t)g.ops * g.size <= g.slab_bytes);
	return g;
}

static uintptr_t slab_base(const struct geo *g, const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)(g->slab_bytes - 1);
}

/* Index of @p in its slab; fails unless p is an object start. */
static unsigned int obj_index(const struct geo *g, const void *p, int line)
{
	if (!p)
		test_fail(__FILE__, line, "NULL where an object was expected");
	if (!uslub_owns(p))
		test_fail(__FILE__, line, "%p is not memory of uslub", p);
	uintptr_t off = (uintptr_t)p - slab_base(g, p);
	if (off % g->size || off / g->size >= g->ops)
		test_fail(__FILE__, line,
			  "%p is not an object start (offset %#lx in its slab, stride %zu, "
			  "%u objects)", p, (unsigned long)off, g->size, g->ops);
	return (unsigned int)(off / g->size);
}

/* ------------------------------------------------------------------------
 * Randomization
 * ---------------------------------------------------------------------- */

/* The object order of the first slab of a fresh cache: single allocs or
 * one bulk call. The objects are freed again. */
static unsigned int first_slab_order(uslub_cache_t *s, bool bulk, unsigned int *idx)
{
	struct geo g = geo_of(s);
	void **p = calloc(g.ops, sizeof(*p));
	CHECK(p);
	if (bulk) {
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, g.ops, p), (int)g.ops);
	} else {
		for (unsigned int i = 0; i < g.ops; i++) {
			p[i] = uslub_cache_alloc(s, 0);
			CHECK(p[i]);
		}
	}
	uintptr_t base = slab_base(&g, p[0]);
	for (unsigned int i = 0; i < g.ops; i++) {
		CHECK_MSG(slab_base(&g, p[i]) == base,
			  "%s: object %u of the first %u is in another slab", uslub_cache_name(s),
			  i, g.ops);
		idx[i] = obj_index(&g, p[i], __LINE__);
	}
	if (bulk)
		uslub_cache_free_bulk(s, g.ops, p);
	else
		for (unsigned int i = 0; i < g.ops; i++)
			uslub_cache_free(s, p[i]);
	free(p);
	return g.ops;
}

static void check_permutation(const unsigned int *idx, unsigned int n, const char *what)
{
	static unsigned char seen[MAX_OPS];
	memset(seen, 0, sizeof(seen));
	for (unsigned int i = 0; i < n; i++) {
		CHECK_MSG(idx[i] < n, "%s: index %u >= %u", what, idx[i], n);
		CHECK_MSG(!seen[idx[i]], "%s: index %u handed out twice", what, idx[i]);
		seen[idx[i]] = 1;
	}
}

static bool is_identity(const unsigned int *idx, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (idx[i] != i)
			return false;
	return true;
}

static void print_order(const unsigned int *idx, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		printf("%u%c", idx[i], i + 1 == n ? '\n' : ' ');
	fflush(stdout);
}

/* One cache with @flags: its first slab's order through single allocs and
 * through a bulk call (each on a fresh cache), then a second slab's worth;
 * shuffled or not as expected. */
static void check_cache_order(const char *name, size_t size, unsigned int flags, bool shuffled)
{
	static unsigned int idx[MAX_OPS];
	for (int bulk = 0; bulk < 2; bulk++) {
		uslub_cache_t *s = uslub_cache_create(name, size, 0, flags | USLUB_CPU_SLAB, NULL);
		CHECK_MSG(s, "create %s flags %#x: %s", name, flags, strerror(errno));
		struct uslub_slabinfo si = slabinfo_get(s);
		CHECK_MSG(si.random_freelist == (shuffled ? 1 : 0),
			  "%s (flags %#x): slabinfo random_freelist %d, expected %d", name, flags,
			  si.random_freelist, shuffled);
		unsigned int n = first_slab_order(s, bulk, idx);
		char what[96];
		snprintf(what, sizeof(what), "%s size %zu flags %#x %s", name, size, flags,
			 bulk ? "alloc_bulk" : "alloc");
		check_permutation(idx, n, what);
		if (shuffled && n >= 8)
			CHECK_MSG(!is_identity(idx, n),
				  "%s: shuffled cache handed out its %u objects in order", what, n);
		else if (!shuffled && !is_identity(idx, n)) {
			print_order(idx, n);
			CHECK_MSG(0, "%s: unshuffled cache's objects not in order 0..%u", what,
				  n - 1);
		}
		CHECK_EQ(uslub_cache_validate(s), 0);
		uslub_flush_thread();
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
}

/* Order of every slab among 4 slabs' worth of objects: each slab's
 * objects form a permutation of its indices. */
static void check_several_slabs(unsigned int flags, bool shuffled)
{
	uslub_cache_t *s = uslub_cache_create("fl-several", 128, 0, flags | USLUB_CPU_SLAB, NULL);
	CHECK(s);
	struct geo g = geo_of(s);
	unsigned int n = 4 * g.ops;
	void **p = calloc(n, sizeof(*p));
	unsigned int *idx = calloc(n, sizeof(*idx));
	CHECK(p && idx);
	for (unsigned int i = 0; i < n; i++) {
		p[i] = uslub_cache_alloc(s, 0);
		CHECK(p[i]);
	}
	/* a fresh cache, one thread: objects come one slab after another */
	int identity_slabs = 0;
	for (unsigned int k = 0; k < 4; k++) {
		uintptr_t base = slab_base(&g, p[k * g.ops]);
		for (unsigned int i = 0; i < g.ops; i++) {
			CHECK_MSG(slab_base(&g, p[k * g.ops + i]) == base,
				  "slab %u: object %u from another slab", k, i);
			idx[i] = obj_index(&g, p[k * g.ops + i], __LINE__);
		}
		check_permutation(idx, g.ops, "several slabs");
		identity_slabs += is_identity(idx, g.ops);
	}
	if (shuffled)
		CHECK_MSG(identity_slabs == 0, "%d of 4 shuffled slabs in order", identity_slabs);
	else
		CHECK_EQ(identity_slabs, 4);
	for (unsigned int i = 0; i < n; i++)
		uslub_cache_free(s, p[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
	free(idx);
}

/* The same with sheaves (@flags without USLUB_CPU_SLAB): several slabs'
 * worth of single allocations from a fresh cache; every slab all of whose
 * objects were handed out gave each of its indices once, and a shuffled
 * cache's slabs are not all in order (nor in reverse order, the sheaf's). */
static void check_sheaf_slabs(unsigned int flags, bool shuffled)
{
	uslub_cache_t *s = uslub_cache_create("fl-sheaves", 128, 0, flags, NULL);
	CHECK(s);
	struct geo g = geo_of(s);
	if (!slabinfo_get(s).sheaf_capacity) {   /* USLUB_CPU_SLABS=1 */
		CHECK_EQ(uslub_cache_destroy(s), 0);
		return;
	}
	unsigned int n = 4 * g.ops;
	void **p = calloc(n, sizeof(*p));
	unsigned int *idx = calloc(g.ops, sizeof(*idx));
	uintptr_t *bases = calloc(n, sizeof(*bases));
	CHECK(p && idx && bases);
	unsigned int nbases = 0, whole = 0, ordered = 0;
	for (unsigned int i = 0; i < n; i++) {
		p[i] = uslub_cache_alloc(s, 0);
		obj_index(&g, p[i], __LINE__);
		uintptr_t b = slab_base(&g, p[i]);
		unsigned int k = 0;
		while (k < nbases && bases[k] != b)
			k++;
		if (k == nbases)
			bases[nbases++] = b;
	}
	for (unsigned int k = 0; k < nbases; k++) {
		unsigned int m = 0;
		for (unsigned int i = 0; i < n; i++)
			if (slab_base(&g, p[i]) == bases[k]) {
				CHECK(m < g.ops);
				idx[m++] = obj_index(&g, p[i], __LINE__);
			}
		if (m < g.ops)
			continue;           /* the rest is still in a sheaf */
		whole++;
		check_permutation(idx, m, "sheaves: a slab's objects");
		bool rev = true;
		for (unsigned int i = 0; i < m; i++)
			rev &= idx[i] == m - 1 - i;
		ordered += is_identity(idx, m) || rev;
	}
	CHECK_MSG(whole >= 3, "sheaves: %u of %u slabs wholly handed out", whole, nbases);
	if (shuffled)
		CHECK_MSG(ordered < whole, "sheaves: all %u shuffled slabs in order", whole);
	for (unsigned int i = 0; i < n; i++)
		uslub_cache_free(s, p[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(p);
	free(idx);
	free(bases);
}

/* Child mode: print the order of a fresh shuffled cache's first slab. */
static int child_order(void)
{
	static unsigned int idx[MAX_OPS];
	uslub_cache_t *s = uslub_cache_create("fl-child", 64, 0,
					      USLUB_RANDOM_FREELIST | USLUB_CPU_SLAB, NULL);
	if (!s)
		return 2;
	unsigned int n = first_slab_order(s, false, idx);
	check_permutation(idx, n, "child");
	print_order(idx, n);
	return 0;
}

/* Run this binary with --order and capture its output. */
static char *run_child(void)
{
	int fd[2];
	CHECK(pipe(fd) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/proc/self/exe", "freelist-child", "--order", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	CHECK(buf);
	ssize_t r;
	while ((r = read(fd[0], buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	close(fd[0]);
	buf[len] = 0;
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited with %d",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/* the child prints nothing but its order (uslub prints to stderr) */
	CHECK_MSG(len > 0 && strchr(buf, '\n'), "child printed no order");
	return buf;
}

static void test_randomization(void)
{
	static unsigned int a[MAX_OPS], b[MAX_OPS];
	bool env = env_random();
	printf("USLUB_FREELIST_RANDOM %s\n", env ? "on" : "off");
	const unsigned int eager = USLUB_EAGER_FREELIST;
	/* flags -> shuffled? */
	struct {
		unsigned int flags;
		bool shuffled;
	} cases[] = {
		{ USLUB_RANDOM_FREELIST, true },
		{ USLUB_RANDOM_FREELIST | eager, true },
		{ 0, env },
		{ eager, env },
		{ USLUB_NO_RANDOM_FREELIST, false },
		{ USLUB_NO_RANDOM_FREELIST | eager, false },
		{ USLUB_RANDOM_FREELIST | USLUB_HWCACHE_ALIGN, true },
	};
	const size_t sizes[] = { 64, 24, 200, 1000 };
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
			check_cache_order("fl-order", sizes[z], cases[k].flags, cases[k].shuffled);
	check_several_slabs(USLUB_RANDOM_FREELIST, true);
	check_several_slabs(USLUB_NO_RANDOM_FREELIST, false);
	check_several_slabs(0, env);
	check_sheaf_slabs(USLUB_RANDOM_FREELIST, true);
	check_sheaf_slabs(USLUB_NO_RANDOM_FREELIST, false);
	check_sheaf_slabs(0, env);

	/* two caches alive at once get different orders */
	const unsigned int two = USLUB_RANDOM_FREELIST | USLUB_CPU_SLAB;
	uslub_cache_t *s1 = uslub_cache_create("fl-two-a", 64, 0, two, NULL);
	uslub_cache_t *s2 = uslub_cache_create("fl-two-b", 64, 0, two, NULL);
	CHECK(s1 && s2);
	unsigned int n1 = first_slab_order(s1, false, a);
	unsigned int n2 = first_slab_order(s2, false, b);
	CHECK_EQU(n1, n2);
	CHECK_MSG(memcmp(a, b, n1 * sizeof(a[0])) != 0,
		  "two shuffled caches of %u objects per slab got the same order", n1);
	CHECK(!is_identity(a, n1) && !is_identity(b, n2));
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s1), 0);
	CHECK_EQ(uslub_cache_destroy(s2), 0);

	/* two runs of the process get different orders */
	char *o1 = run_child();
	char *o2 = run_child();
	CHECK_MSG(strcmp(o1, o2) != 0, "two runs of the process shuffled alike:\n%s", o1);
	/* and each is a permutation that is not the identity */
	for (int r = 0; r < 2; r++) {
		char *cur = r ? o2 : o1, *end;
		unsigned int n = 0;
		for (;;) {
			unsigned long v = strtoul(cur, &end, 10);
			if (end == cur)
				break;
			CHECK(n < MAX_OPS);
			a[n++] = (unsigned int)v;
			cur = end;
		}
		CHECK_EQU(n, 64);
		check_permutation(a, n, "child order");
		CHECK(!is_identity(a, n));
	}
	free(o1);
	free(o2);
}

/* ------------------------------------------------------------------------
 * Hardening
 * ---------------------------------------------------------------------- */
static uintptr_t secret;
static bool secret_known;
static char foreign_buf[4096] __attribute__((aligned(64)));

static uintptr_t bswap_ptr(uintptr_t x)
{
	return (uintptr_t)__builtin_bswap64((uint64_t)x);
}

static uintptr_t stored_fp(const struct geo *g, void *obj)
{
	uintptr_t v;
	memcpy(&v, (char *)obj + g->offset, sizeof(v));
	return v;
}

static void store_fp(const struct geo *g, void *obj, uintptr_t v)
{
	memcpy((char *)obj + g->offset, &v, sizeof(v));
}

static uintptr_t encode(const struct geo *g, void *obj, uintptr_t target)
{
	return target ^ secret ^ bswap_ptr((uintptr_t)obj + g->offset);
}

/* live objects of the hardening cache (small linear set) */
#define HLIVE 8192
static void *hlive[HLIVE];
static size_t nhlive;

static bool hlive_has(void *p)
{
	for (size_t i = 0; i < nhlive; i++)
		if (hlive[i] == p)
			return true;
	return false;
}

static void hlive_add(void *p)
{
	CHECK(nhlive < HLIVE);
	hlive[nhlive++] = p;
}

static void hlive_del(void *p)
{
	for (size_t i = 0; i < nhlive; i++)
		if (hlive[i] == p) {
			hlive[i] = hlive[--nhlive];
			return;
		}
	CHECK_MSG(0, "%p not live", p);
}

static void *halloc(uslub_cache_t *s, const struct geo *g, int line)
{
	void *p = uslub_cache_alloc(s, 0);
	if (!p)
		test_fail(__FILE__, line, "allocation failed after a corruption: %s",
			  strerror(errno));
	obj_index(g, p, line);
	if (hlive_has(p))
		test_fail(__FILE__, line, "%p handed out while live (followed a corrupted "
			  "free pointer?)", p);
	if (p >= (void *)foreign_buf && p < (void *)(foreign_buf + sizeof(foreign_buf)))
		test_fail(__FILE__, line, "foreign address %p handed out", p);
	hlive_add(p);
	memset(p, 0x5a, g->size < 64 ? g->size : 64);
	return p;
}

static void hfree(uslub_cache_t *s, void *p)
{
	hlive_del(p);
	uslub_cache_free(s, p);
}

/* @n objects allocated one after another from the cpu slab (so frees of
 * them are cpu freelist pushes); objects that had to be skipped to get
 * there (the cpu slab ran out in between) are kept live in @extra. */
static void alloc_same_slab(uslub_cache_t *s, const struct geo *g, void **out, int n,
			    void **extra, int *nextra)
{
	int have = 0;
	while (have < n) {
		void *p = halloc(s, g, __LINE__);
		if (have && slab_base(g, p) != slab_base(g, out[0])) {
			for (int i = 0; i < have; i++) {
				CHECK(*nextra < 64);
				extra[(*nextra)++] = out[i];
			}
			have = 0;
		}
		out[have++] = p;
	}
}

static void learn_secret(uslub_cache_t *s, const struct geo *g)
{
	void *x[6], *extra[64];
	int nextra = 0;
	alloc_same_slab(s, g, x, 6, extra, &nextra);
	/* free x1 then x3: x3's slot holds x1 encoded */
	hfree(s, x[1]);
	hfree(s, x[3]);
	uintptr_t st3 = stored_fp(g, x[3]);
	CHECK_MSG(st3 != (uintptr_t)x[1],
		  "hardened freelist stores the raw free pointer %p", x[1]);
	secret = st3 ^ (uintptr_t)x[1] ^ bswap_ptr((uintptr_t)x[3] + g->offset);
	/* the formula holds for a second pair too */
	hfree(s, x[5]);
	uintptr_t st5 = stored_fp(g, x[5]);
	uintptr_t secret2 = st5 ^ (uintptr_t)x[3] ^ bswap_ptr((uintptr_t)x[5] + g->offset);
	CHECK_MSG(secret2 == secret,
		  "free pointers are not stored as next ^ secret ^ bswap(slot): secrets %#lx "
		  "and %#lx differ", (unsigned long)secret, (unsigned long)secret2);
	CHECK_MSG(secret != 0, "hardening secret is 0");
	secret_known = true;
	/* LIFO: x5, x3, x1 come back in that order */
	void *a = halloc(s, g, __LINE__), *b = halloc(s, g, __LINE__), *c = halloc(s, g, __LINE__);
	CHECK_MSG(a == x[5] && b == x[3] && c == x[1],
		  "cpu freelist not LIFO: got %p %p %p, freed %p %p %p", a, b, c, x[5], x[3],
		  x[1]);
	for (int i = 0; i < 6; i++)
		hfree(s, x[i]);
	for (int i = 0; i < nextra; i++)
		hfree(s, extra[i]);
}

enum bad_kind { BAD_FOREIGN_ENC, BAD_FOREIGN_RAW, BAD_INTERIOR, BAD_RAW_LIVE, BAD_OTHER_CACHE };
static const char *const bad_names[] = {
	"foreign address (encoded)", "foreign address (raw)",
	"interior address of the same slab (encoded)", "raw address of a live object",
	"object of another cache (encoded)",
};

static uslub_cache_t *other_cache;
static void *other_obj;

/* The value that replaces @victim's stored free pointer; @next is the
 * free object it pointed to (same slab), @live a live object of s. */
static uintptr_t bad_value(enum bad_kind k, const struct geo *g, void *victim, void *next,
			   void *live)
{
	switch (k) {
	case BAD_FOREIGN_ENC:
		return encode(g, victim, (uintptr_t)foreign_buf + 64);
	case BAD_FOREIGN_RAW:
		return (uintptr_t)foreign_buf + 64;
	case BAD_INTERIOR:
		return encode(g, victim, (uintptr_t)next + 8);
	case BAD_RAW_LIVE:
		return (uintptr_t)live;
	case BAD_OTHER_CACHE:
		return encode(g, victim, (uintptr_t)other_obj);
	}
	return 0;
}

/* After a corruption: allocate until FREELIST_CORRUPT moves (at most 10
 * slabs' worth), then one slab's worth more; every one a valid object;
 * exactly one error and one FREELIST_CORRUPT; validate == 0; then free
 * what was allocated without an error. */
static void expect_caught(uslub_cache_t *s, const struct geo *g, unsigned long e0, uint64_t c0,
			  const char *what)
{
	unsigned int max = 11 * g->ops, n = 0, more = g->ops;
	void **got = calloc(max, sizeof(*got));
	CHECK(got);
	while (n < max) {
		got[n++] = halloc(s, g, __LINE__);
		if (stat_get(s, USLUB_FREELIST_CORRUPT) != c0 && --more == 0)
			break;
	}
	unsigned long e1 = uslub_error_count();
	uint64_t c1 = stat_get(s, USLUB_FREELIST_CORRUPT);
	CHECK_MSG(c1 == c0 + 1, "%s: FREELIST_CORRUPT +%" PRIu64 " after %u allocations, "
		  "expected +1", what, c1 - c0, n);
	CHECK_MSG(e1 == e0 + 1, "%s: error count +%lu, expected +1", what, e1 - e0);
	long v = uslub_cache_validate(s);
	CHECK_MSG(v == 0, "%s: validate found %ld inconsistencies after the corruption", what, v);
	CHECK_EQU(uslub_error_count(), e1); /* validate reported nothing */
	for (unsigned int i = 0; i < n; i++)
		hfree(s, got[i]);
	CHECK_MSG(uslub_error_count() == e1, "%s: freeing the objects handed out after the "
		  "corruption raised errors", what);
	CHECK_EQ(uslub_cache_validate(s), 0);
	struct uslub_slabinfo si = slabinfo_get(s);
	/* the objects dropped with the corrupted chain never come back: they
	 * stay counted (as allocated), so live_objs may exceed the live ones
	 * by at most one slab's worth */
	uint64_t corrupt = stat_get(s, USLUB_FREELIST_CORRUPT);
	CHECK_MSG(si.live_objs >= nhlive &&
		  si.live_objs <= nhlive + corrupt * si.objs_per_slab,
		  "%s: live_objs %lu, %zu objects live, at most %" PRIu64 " x %u dropped", what,
		  si.live_objs, nhlive, corrupt, si.objs_per_slab);
	free(got);
}

/* (1) the corrupted object is on the calling thread's cpu freelist. */
static void corrupt_cpu_freelist(uslub_cache_t *s, const struct geo *g, enum bad_kind k)
{
	void *live = halloc(s, g, __LINE__);
	void *xy[2], *extra[64];
	int nextra = 0;
	alloc_same_slab(s, g, xy, 2, extra, &nextra);
	void *x = xy[0], *y = xy[1];
	hfree(s, x);
	hfree(s, y);             /* cpu freelist: y -> x -> ... */
	CHECK_MSG(stored_fp(g, y) == encode(g, y, (uintptr_t)x), "y's free pointer is not x");
	unsigned long e0 = uslub_error_count();
	uint64_t c0 = stat_get(s, USLUB_FREELIST_CORRUPT);
	store_fp(g, y, bad_value(k, g, y, x, live));
	char what[128];
	snprintf(what, sizeof(what), "cpu freelist, %s", bad_names[k]);
	expect_caught(s, g, e0, c0, what);
	hfree(s, live);
	for (int i = 0; i < nextra; i++)
		hfree(s, extra[i]);
}

/* (2) the corrupted object is on the freelist of a full slab, which is
 * then taken as the cpu slab (from a partial list). */
static void corrupt_slab_freelist(uslub_cache_t *s, const struct geo *g, enum bad_kind k)
{
	unsigned int n = 3 * g->ops;
	void **v = calloc(n, sizeof(*v));
	CHECK(v);
	for (unsigned int i = 0; i < n; i++)
		v[i] = halloc(s, g, __LINE__);
	/* an object whose slab is full and not the cpu slab (the slab of the
	 * last allocation), with two more objects of that slab */
	uintptr_t cpu_base = slab_base(g, v[n - 1]);
	unsigned int first = n;
	for (unsigned int i = 0; i < n && first == n; i++)
		if (slab_base(g, v[i]) != cpu_base)
			first = i;
	CHECK(first < n);
	uintptr_t base = slab_base(g, v[first]);
	void *same[2];
	int m = 0;
	for (unsigned int i = first; i < n && m < 2; i++)
		if (slab_base(g, v[i]) == base)
			same[m++] = v[i];
	CHECK(m == 2);
	/* full slab: x then y freed (slow path): its freelist is y -> x -> end */
	hfree(s, same[0]);
	hfree(s, same[1]);
	void *live = v[n - 1];
	CHECK_MSG(stored_fp(g, same[1]) == encode(g, same[1], (uintptr_t)same[0]),
		  "slab freelist: y's free pointer is not x");
	unsigned long e0 = uslub_error_count();
	uint64_t c0 = stat_get(s, USLUB_FREELIST_CORRUPT);
	store_fp(g, same[1], bad_value(k, g, same[1], same[0], live));
	char what[128];
	snprintf(what, sizeof(what), "slab freelist, %s", bad_names[k]);
	expect_caught(s, g, e0, c0, what);
	for (unsigned int i = 0; i < n; i++)
		if (v[i] != same[0] && v[i] != same[1])
			hfree(s, v[i]);
	free(v);
}

static void test_double_free(uslub_cache_t *s, const struct geo *g)
{
	void *keep = halloc(s, g, __LINE__);
	/* objects dropped by earlier corruption tests stay counted as live */
	unsigned long dropped = slabinfo_get(s).live_objs - nhlive;
	for (int round = 0; round < 3; round++) {
		void *d = halloc(s, g, __LINE__);
		hfree(s, d);
		unsigned long e0 = uslub_error_count();
		uslub_cache_free(s, d);  /* naive double free: d is the freelist head */
		CHECK_MSG(uslub_error_count() == e0 + 1, "naive double free: error count +%lu",
			  uslub_error_count() - e0);
		CHECK_EQ(uslub_cache_validate(s), 0);
		void *a = halloc(s, g, __LINE__);
		void *b = halloc(s, g, __LINE__);   /* halloc checks b != a (live) */
		CHECK(a != b);
		CHECK_EQU(uslub_error_count(), e0 + 1);
		struct uslub_slabinfo si = slabinfo_get(s);
		CHECK_EQU(si.live_objs, nhlive + dropped);
		hfree(s, a);
		hfree(s, b);
	}
	hfree(s, keep);
	CHECK_EQ(uslub_cache_validate(s), 0);
}

static bool env_hardened(void)
{
	const char *e = getenv("USLUB_FREELIST_HARDENED");
	return e && *e && strcmp(e, "0") != 0;
}

/* Which caches are hardened, and what a cache that is not stores. */
static void test_hardening_default(void)
{
	/* a cpu slab: a free pushes onto a freelist (no sheaf) */
	uslub_cache_t *s = uslub_cache_create("fl-default", 64, 0, USLUB_CPU_SLAB, NULL);
	uslub_cache_t *h = uslub_cache_create("fl-flagged", 64, 0, USLUB_HARDENED_FREELIST, NULL);
	CHECK(s && h);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK_MSG(si.hardened_freelist == (env_hardened() ? 1 : 0),
		  "default cache: hardened_freelist %d with USLUB_FREELIST_HARDENED %s",
		  si.hardened_freelist, env_hardened() ? "on" : "off");
	CHECK_EQ(slabinfo_get(h).hardened_freelist, 1);
	if (!si.hardened_freelist) {
		/* not hardened: y's slot holds the raw pointer to x */
		struct geo g = geo_of(s);
		void *x = uslub_cache_alloc(s, 0), *y = uslub_cache_alloc(s, 0);
		CHECK(x && y);
		if (slab_base(&g, x) == slab_base(&g, y)) {
			uslub_cache_free(s, x);
			uslub_cache_free(s, y);
			CHECK_MSG(stored_fp(&g, y) == (uintptr_t)x,
				  "unhardened cache: free pointer %#lx, expected raw %p",
				  (unsigned long)stored_fp(&g, y), x);
		} else {
			uslub_cache_free(s, x);
			uslub_cache_free(s, y);
		}
	}
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(h), 0);
}

static void test_hardening(unsigned int flags)
{
	/* frees to per-CPU sheaves push no free pointer: a cpu slab */
	uslub_cache_t *s = uslub_cache_create("fl-hardened", 64, 0,
					      flags | USLUB_HARDENED_FREELIST | USLUB_CPU_SLAB, NULL);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK_MSG(si.hardened_freelist == 1, "hardened_freelist %d with USLUB_HARDENED_FREELIST",
		  si.hardened_freelist);
	CHECK_EQU(si.sheaf_capacity, 0);
	struct geo g = geo_of(s);
	CHECK(g.offset % sizeof(void *) == 0 && g.offset + sizeof(void *) <= g.size);
	other_cache = uslub_cache_create("fl-other", 64, 0, 0, NULL);
	CHECK(other_cache);
	void *o2 = uslub_cache_alloc(other_cache, 0);
	other_obj = uslub_cache_alloc(other_cache, 0);
	CHECK(o2 && other_obj);
	uslub_cache_free(other_cache, other_obj);   /* a free object of the other cache */

	learn_secret(s, &g);
	test_double_free(s, &g);
	for (int k = BAD_FOREIGN_ENC; k <= BAD_OTHER_CACHE; k++) {
		corrupt_cpu_freelist(s, &g, (enum bad_kind)k);
		corrupt_slab_freelist(s, &g, (enum bad_kind)k);
	}
	test_double_free(s, &g);

	/* the cache keeps working: a bulk round trip and the other cache */
	void *b[100];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 100, b), 100);
	for (int i = 0; i < 100; i++) {
		obj_index(&g, b[i], __LINE__);
		CHECK(!hlive_has(b[i]));
		memset(b[i], i, 64);
	}
	unsigned long e0 = uslub_error_count();
	uslub_cache_free_bulk(s, 100, b);
	CHECK_EQU(uslub_error_count(), e0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQU(nhlive, 0);
	/* only the dropped objects remain counted: at most a slab per corruption */
	CHECK(slabinfo_get(s).live_objs <=
	      stat_get(s, USLUB_FREELIST_CORRUPT) * slabinfo_get(s).objs_per_slab);
	uslub_cache_free(other_cache, o2);
	CHECK_EQ(uslub_cache_validate(other_cache), 0);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(other_cache), 0);
	/* s keeps the leaked (dropped) objects: it is not destroyed */
	printf("hardening (flags %#x): FREELIST_CORRUPT %" PRIu64 ", %lu objects leaked\n", flags,
	       stat_get(s, USLUB_FREELIST_CORRUPT), slabinfo_get(s).active_objs);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--order") == 0)
		return child_order();
	test_seed(1);    /* nothing random in this test; printed for uniformity */
	unsigned long e0 = uslub_error_count();
	test_randomization();
	CHECK_EQU(uslub_error_count(), e0);
	test_hardening_default();
	test_hardening(0);
	test_hardening(USLUB_RANDOM_FREELIST);
	test_hardening(USLUB_EAGER_FREELIST);
	printf("freelist: ok\n");
	return 0;
}
