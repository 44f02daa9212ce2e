/*
 * slub_debug together with accounting groups and with fault injection.
 *   - a cache with USLUB_ACCOUNT | F | Z | P | U (a debug cache, so no
 *     object extensions in the poisoned padding): its objects charge the
 *     thread's group (slabinfo size + obj_ext_bytes each, per
 *     uslub_group_usage and uslub_group_cache_usage) while they live; freed
 *     (half of them from another thread whose current group is the root)
 *     and with the stock drained, the usage is back where it started;
 *   - a one-byte right red zone overflow of such an object is detected at
 *     its free exactly once, the object is uncharged all the same, and the
 *     cache validates clean;
 *   - under a group limit, allocations stop with NULL and ENOMEM (bulk: 0),
 *     usage stays within the limit, nothing is taken (live_objs), validate
 *     finds nothing, and the same count fits after everything is freed;
 *   - failslab on a debug cache: uslub_failslab_configure(
 *     "interval=3,probability=100,cache-filter=1") and a cache with
 *     USLUB_FAILSLAB | USLUB_POISON | USLUB_CONSISTENCY_CHECKS: of 30
 *     single allocations exactly calls 3, 6, ..., 30 (indices 2, 5, ...,
 *     29) fail with ENOMEM, while allocations of a debug cache without A
 *     interleaved with them never fail and do not count; then one bulk
 *     call counts as one call (the 33rd fails, taking nothing); nothing
 *     leaks (validate 0, destroy 0); failslab is reset with probability=0.
 */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>

#define ACCT_SIZE 120
#define N 200

static size_t batch;

static size_t account_batch(void)
{
	const char *e = getenv("USLUB_ACCOUNT_BATCH");
	if (e && *e)
		return (size_t)strtoull(e, NULL, 10);
	return 8192;
}

static size_t charge_of(uslub_cache_t *s)
{
	struct uslub_slabinfo si = slabinfo_get(s);
	return si.obj_ext_charge;
}

static uint64_t live_objs(uslub_cache_t *s)
{
	return slabinfo_get(s).live_objs;
}

#define USAGE_EXACT(g, want) do {                                                \
	uslub_group_drain_stock();                                               \
	size_t _u = uslub_group_usage(g), _w = (want);                           \
	CHECK_MSG(_u == _w, "usage %zu after draining the stock, expected %zu", _u, _w); \
} while (0)


/* ---- accounting ---------------------------------------------------------- */
struct remote {
	uslub_cache_t *s;
	void **p;
	size_t n;
};

static void *remote_free(void *arg)
{
	struct remote *r = arg;
	CHECK(uslub_group_current() == NULL || uslub_group_current() == uslub_group_root());
	for (size_t i = 0; i < r->n; i++)
		uslub_cache_free(r->s, r->p[i]);
	return NULL;
}

static void test_account(uslub_cache_t *s, uslub_group_t *g)
{
	size_t cs = charge_of(s);
	CHECK(cs > ACCT_SIZE);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(si.obj_ext != USLUB_OBJ_EXT_NONE && si.obj_ext != USLUB_OBJ_EXT_PADDING);
	USAGE_EXACT(g, 0);
	static void *v[N];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			v[i] = uslub_cache_alloc(s, round == 1 ? USLUB_GFP_ZERO : 0);
			CHECK(v[i]);
			if (round == 1)
				for (int k = 0; k < ACCT_SIZE; k++)
					CHECK(((unsigned char *)v[i])[k] == 0);
			memset(v[i], 0x40 + round, ACCT_SIZE);
		}
		size_t u = uslub_group_usage(g);
		CHECK_MSG(u >= N * cs && u <= N * cs + batch, "usage %zu, %d objects of %zu", u, N, cs);
		USAGE_EXACT(g, N * cs);
		unsigned long objs = 0;
		size_t bytes = 0;
		CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
		CHECK_EQU(objs, N);
		CHECK_EQU(bytes, N * cs);
		CHECK_EQ(uslub_cache_validate(s), 0);
		/* half freed here, half by a thread in the root group */
		for (int i = 0; i < N / 2; i++)
			uslub_cache_free(s, v[i]);
		USAGE_EXACT(g, (N - N / 2) * cs);
		struct remote r = { s, v + N / 2, N - N / 2 };
		pthread_t th;
		CHECK(pthread_create(&th, NULL, remote_free, &r) == 0);
		CHECK(pthread_join(th, NULL) == 0);
		USAGE_EXACT(g, 0);
		CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
		CHECK_EQU(objs, 0);
		CHECK_EQU(live_objs(s), 0);
		CHECK_EQ(uslub_cache_validate(s), 0);
	}
	printf("  charged %d objects of %zu bytes while live, usage back to 0 after frees\n", N, cs);
}

static void test_redzone(uslub_cache_t *s, uslub_group_t *g)
{
	size_t cs = charge_of(s);
	void *keep = uslub_cache_alloc(s, 0);
	unsigned char *p = uslub_cache_alloc(s, 0);
	CHECK(keep && p);
	USAGE_EXACT(g, 2 * cs);
	memset(p, 0x5a, ACCT_SIZE);
	p[ACCT_SIZE] = 0x77;
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(s, p);
	const char *r = capture_end();
	CHECK_EQU(uslub_error_count(), e + 1);
	CHECK_MSG(strstr(r, "Right Redzone overwritten"), "report:\n%s", r);
	CHECK_EQU(count_substr(r, "BUG "), 1);
	USAGE_EXACT(g, cs);                       /* uncharged all the same */
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQU(uslub_error_count(), e + 1);
	uslub_cache_free(s, keep);
	USAGE_EXACT(g, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQU(uslub_error_count(), e + 1);
	printf("  red zone overflow of an accounted debug object: reported once, uncharged\n");
}

static void test_limit(uslub_cache_t *s, uslub_group_t *g)
{
	size_t cs = charge_of(s);
	size_t L = 40 * cs + cs / 2;
	USAGE_EXACT(g, 0);
	CHECK_EQ(uslub_group_set_limit(g, L), 0);
	static void *v[4096];
	size_t got = 0;
	for (;;) {
		CHECK(got < 4096);
		errno = 0;
		void *p = uslub_cache_alloc(s, 0);
		if (!p) {
			CHECK_EQ(errno, ENOMEM);
			break;
		}
		memset(p, 0x21, ACCT_SIZE);
		v[got++] = p;
		CHECK(uslub_group_usage(g) <= L);
	}
	size_t maxb = batch > cs ? batch : cs;
	CHECK_MSG(got >= 1 && got * cs <= L && got * cs + cs + maxb > L,
		  "%zu objects of %zu bytes under a limit of %zu", got, cs, L);
	struct uslub_group_info gi;
	CHECK_EQ(uslub_group_info(g, &gi), 0);
	CHECK(gi.failcnt >= 1);
	CHECK(gi.usage <= L);
	uint64_t live = live_objs(s);
	CHECK_EQU(live, got);
	/* nothing fits: singles and bulk fail cleanly, nothing taken */
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_set_limit(g, uslub_group_usage(g)), 0);
	for (int i = 0; i < 5; i++) {
		errno = 0;
		CHECK(uslub_cache_alloc(s, USLUB_GFP_ZERO) == NULL && errno == ENOMEM);
	}
	void *bp[8];
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 8, bp), 0);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQU(live_objs(s), live);
	CHECK_EQ(uslub_cache_validate(s), 0);
	/* one freed makes room for one */
	uslub_cache_free(s, v[--got]);
	CHECK((v[got] = uslub_cache_alloc(s, 0)) != NULL);
	got++;
	errno = 0;
	CHECK(uslub_cache_alloc(s, 0) == NULL && errno == ENOMEM);
	CHECK_EQ(uslub_cache_validate(s), 0);
	for (size_t i = 0; i < got; i++)
		uslub_cache_free(s, v[i]);
	USAGE_EXACT(g, 0);
	CHECK_EQU(live_objs(s), 0);
	/* the same count fits again */
	CHECK_EQ(uslub_group_set_limit(g, L), 0);
	size_t again = 0;
	while ((v[again] = uslub_cache_alloc(s, 0)) != NULL)
		again++;
	CHECK_EQU(again, got);
	for (size_t i = 0; i < again; i++)
		uslub_cache_free(s, v[i]);
	CHECK_EQ(uslub_group_set_limit(g, USLUB_GROUP_NO_LIMIT), 0);
	USAGE_EXACT(g, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	printf("  limit %zu: %zu objects fit, then ENOMEM with nothing taken\n", L, got);
}

/* ---- failslab on a debug cache ------------------------------------------ */
static void test_failslab(uslub_cache_t *other)
{
	uslub_cache_t *s = uslub_cache_create("dbg-failslab", 64, 0,
					      USLUB_FAILSLAB | USLUB_POISON | USLUB_CONSISTENCY_CHECKS,
					      NULL);
	CHECK(s);
	CHECK(slabinfo_get(s).size > 64);         /* a debug cache: metadata */
	unsigned long inj0 = uslub_failslab_injected();
	CHECK_EQ(uslub_failslab_configure("interval=3,probability=100,cache-filter=1"), 0);
	enum { CALLS = 30 };
	void *v[CALLS], *o[CALLS];
	int fails = 0;
	for (int i = 0; i < CALLS; i++) {
		errno = 0;
		v[i] = uslub_cache_alloc(s, 0);
		bool want_fail = (i + 1) % 3 == 0;
		CHECK_MSG(!v[i] == want_fail, "call %d: %s, expected %s", i + 1,
			  v[i] ? "succeeded" : "failed", want_fail ? "a failure" : "success");
		if (!v[i]) {
			CHECK_EQ(errno, ENOMEM);
			fails++;
		} else {
			memset(v[i], 0x17, 64);
		}
		o[i] = uslub_cache_alloc(other, 0);   /* no A: never fails, not counted */
		CHECK_MSG(o[i], "call %d of the cache without A failed", i + 1);
	}
	CHECK_EQ(fails, CALLS / 3);
	CHECK_EQU(uslub_failslab_injected() - inj0, CALLS / 3);
	CHECK_EQU(live_objs(s), CALLS - CALLS / 3);
	CHECK_EQ(uslub_cache_validate(s), 0);
	/* a bulk call is one call: 31 and 32 pass, 33 fails taking nothing */
	void *b[3][5];
	for (int k = 0; k < 3; k++) {
		errno = 0;
		int n = uslub_cache_alloc_bulk(s, 0, 5, b[k]);
		CHECK_MSG(n == (k == 2 ? 0 : 5), "bulk call %d returned %d", 31 + k, n);
		if (!n)
			CHECK_EQ(errno, ENOMEM);
	}
	CHECK_EQU(uslub_failslab_injected() - inj0, CALLS / 3 + 1);
	CHECK_EQU(live_objs(s), CALLS - CALLS / 3 + 10);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_cache_free_bulk(s, 5, b[0]);
	uslub_cache_free_bulk(s, 5, b[1]);

	CHECK_EQ(uslub_failslab_configure("probability=0"), 0);
	for (int i = 0; i < CALLS; i++) {
		uslub_cache_free(s, v[i]);          /* NULL for the failed ones */
		uslub_cache_free(other, o[i]);
	}
	CHECK_EQU(live_objs(s), 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_validate(other), 0);
	/* off again: every call succeeds */
	for (int i = 0; i < CALLS; i++)
		CHECK((v[i] = uslub_cache_alloc(s, 0)) != NULL);
	for (int i = 0; i < CALLS; i++)
		uslub_cache_free(s, v[i]);
	CHECK_EQU(uslub_failslab_injected() - inj0, CALLS / 3 + 1);
	unsigned long e = uslub_error_count();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQU(uslub_error_count(), e);
	printf("  failslab interval=3 on a debug cache: calls 3, 6, ..., 30 and bulk call 33 "
	       "failed, nothing leaked\n");
}

int main(void)
{
	if (getenv("USLUB_DEBUG") || getenv("USLUB_FAILSLAB")) {
		printf("debug_account: skipped (counts reports and failures exactly)\n");
		return 77;
	}
	batch = account_batch();
	unsigned long e0 = uslub_error_count();
	uslub_cache_t *s = uslub_cache_create("dbg-acct", ACCT_SIZE, 0,
					      USLUB_ACCOUNT | USLUB_RED_ZONE | USLUB_POISON |
					      USLUB_CONSISTENCY_CHECKS | USLUB_STORE_USER, NULL);
	CHECK(s);
	uslub_group_t *g = uslub_group_create(NULL, "dbg-acct-g", USLUB_GROUP_NO_LIMIT);
	CHECK(g);
	uslub_group_t *prev = uslub_group_set_current(g);
	test_account(s, g);
	test_redzone(s, g);
	test_limit(s, g);
	test_failslab(s);                         /* s: a debug cache without A */
	USAGE_EXACT(g, 0);
	CHECK(uslub_group_set_current(prev) == g);
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQU(uslub_error_count(), e0 + 1);   /* the red zone overflow, once */
	printf("debug_account: ok\n");
	return 0;
}
