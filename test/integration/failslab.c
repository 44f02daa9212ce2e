/*
 * Fault injection (failslab): deterministic failure sets, every kind of
 * allocation call, the cache filter, ignore-gfp-wait, times and space;
 * after every failure nothing is taken and the cache keeps working.
 */
#include "check.h"

#define CALLS 2000

static uint64_t live_objs(uslub_cache_t *s)
{
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	return si.live_objs;
}

/* Allocate CALLS times one object, recording which calls failed. */
static unsigned int run(uslub_cache_t *s, uslub_gfp_t gfp, unsigned char *failed)
{
	void **objs = calloc(CALLS, sizeof(*objs));
	CHECK(objs);
	unsigned int fails = 0;
	uint64_t live0 = live_objs(s);
	for (int i = 0; i < CALLS; i++) {
		errno = 0;
		objs[i] = uslub_cache_alloc(s, gfp);
		failed[i] = !objs[i];
		if (!objs[i]) {
			CHECK_EQ(errno, ENOMEM);
			fails++;
		}
	}
	CHECK_EQU(live_objs(s), live0 + CALLS - fails);
	for (int i = 0; i < CALLS; i++)
		uslub_cache_free(s, objs[i]);
	CHECK_EQU(live_objs(s), live0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	free(objs);
	return fails;
}

static void test_interval(uslub_cache_t *s)
{
	unsigned char failed[CALLS];
	unsigned long inj0 = uslub_failslab_injected();
	CHECK_EQ(uslub_failslab_configure("probability=100,interval=7"), 0);
	unsigned int fails = run(s, USLUB_GFP_KERNEL, failed);
	for (int i = 0; i < CALLS; i++)
		CHECK_MSG(failed[i] == ((i + 1) % 7 == 0), "interval 7: call %d failed=%d", i,
			  failed[i]);
	CHECK_EQU(fails, CALLS / 7);
	CHECK_EQU(uslub_failslab_injected() - inj0, fails);
	printf("  interval=7: %u of %d calls failed, exactly every 7th\n", fails, CALLS);
}

static void test_probability_deterministic(uslub_cache_t *s)
{
	unsigned char a[CALLS], b[CALLS], c[CALLS];
	CHECK_EQ(uslub_failslab_configure("probability=25,seed=42"), 0);
	unsigned int fa = run(s, USLUB_GFP_KERNEL, a);
	CHECK_EQ(uslub_failslab_configure("probability=25,seed=42"), 0);
	unsigned int fb = run(s, USLUB_GFP_KERNEL, b);
	CHECK_EQ(uslub_failslab_configure("probability=25,seed=43"), 0);
	unsigned int fc = run(s, USLUB_GFP_KERNEL, c);
	CHECK(!memcmp(a, b, sizeof(a)));            /* same seed: same calls fail */
	CHECK(memcmp(a, c, sizeof(a)));             /* another seed: others */
	CHECK_EQU(fa, fb);
	CHECK(fa > CALLS * 15 / 100 && fa < CALLS * 35 / 100);
	CHECK(fc > CALLS * 15 / 100 && fc < CALLS * 35 / 100);
	printf("  probability=25: seed 42 fails %u calls twice alike, seed 43 fails %u\n", fa, fc);
}

static void test_times_space(uslub_cache_t *s)
{
	unsigned char failed[CALLS];
	CHECK_EQ(uslub_failslab_configure("probability=100,times=5"), 0);
	unsigned int fails = run(s, USLUB_GFP_KERNEL, failed);
	CHECK_EQU(fails, 5);
	for (int i = 0; i < 5; i++)
		CHECK(failed[i]);
	/* space: calls pass while more than their size is left of it (the
	 * kernel's test), so 10 objects and a byte let exactly 10 pass */
	size_t osz = uslub_cache_object_size(s);
	char spec[96];
	snprintf(spec, sizeof(spec), "probability=100,space=%zu", 10 * osz + 1);
	CHECK_EQ(uslub_failslab_configure(spec), 0);
	fails = run(s, USLUB_GFP_KERNEL, failed);
	for (int i = 0; i < CALLS; i++)
		CHECK_MSG(failed[i] == (i >= 10), "space: call %d failed=%d", i, failed[i]);
	CHECK_EQU(fails, CALLS - 10);
	printf("  times=5 fails 5 calls; space=10 objects lets 10 pass\n");
}

static void test_gfp_wait(uslub_cache_t *s)
{
	unsigned char failed[CALLS];
	CHECK_EQ(uslub_failslab_configure("probability=100,ignore-gfp-wait=1"), 0);
	CHECK_EQU(run(s, USLUB_GFP_KERNEL, failed), 0);
	CHECK_EQU(run(s, USLUB_GFP_NOWAIT, failed), CALLS);
	printf("  ignore-gfp-wait=1: only non-blocking calls fail\n");
}

static void test_filter(uslub_cache_t *s, uslub_cache_t *other)
{
	unsigned char failed[CALLS];
	CHECK_EQ(uslub_failslab_configure("probability=100,cache-filter=1"), 0);
	CHECK_EQU(run(s, USLUB_GFP_KERNEL, failed), 0);
	uslub_cache_set_failslab(s, 1);
	CHECK_EQU(run(s, USLUB_GFP_KERNEL, failed), CALLS);
	CHECK_EQU(run(other, USLUB_GFP_KERNEL, failed), 0);
	uslub_cache_set_failslab(s, 0);
	CHECK_EQU(run(s, USLUB_GFP_KERNEL, failed), 0);
	printf("  cache-filter=1: only caches marked A fail\n");
}

/* bulk and prefill fail whole, taking nothing; sheaf allocation never */
static void test_bulk_prefill(uslub_cache_t *s)
{
	void *p[64];
	uint64_t live0 = live_objs(s);
	CHECK_EQ(uslub_failslab_configure("probability=100,interval=2"), 0);
	int got = 0, fails = 0;
	for (int i = 0; i < 10; i++) {
		errno = 0;
		int n = uslub_cache_alloc_bulk(s, USLUB_GFP_KERNEL, 64, p);
		if (n) {
			CHECK_EQ(n, 64);
			uslub_cache_free_bulk(s, 64, p);
			got++;
		} else {
			CHECK_EQ(errno, ENOMEM);
			fails++;
		}
		CHECK_EQU(live_objs(s), live0);
	}
	CHECK_EQ(fails, 5);
	CHECK_EQ(got, 5);
	CHECK_EQ(uslub_failslab_configure("probability=100"), 0);
	CHECK(uslub_cache_prefill_sheaf(s, USLUB_GFP_KERNEL, 8) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(uslub_failslab_configure("probability=0"), 0);
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, USLUB_GFP_KERNEL, 8);
	CHECK(sh);
	CHECK_EQ(uslub_failslab_configure("probability=100"), 0);
	for (int i = 0; i < 8; i++) {
		void *x = uslub_cache_alloc_from_sheaf(s, USLUB_GFP_KERNEL, sh);
		CHECK(x);                                /* never fails */
		uslub_cache_free(s, x);
	}
	uslub_cache_return_sheaf(s, USLUB_GFP_KERNEL, sh);
	CHECK_EQ(uslub_failslab_configure("probability=0"), 0);
	CHECK_EQU(live_objs(s), live0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	printf("  bulk: every 2nd call fails whole, nothing taken; prefill fails; "
	       "alloc_from_sheaf never\n");
}

static void test_bad_spec(void)
{
	CHECK_EQ(uslub_failslab_configure("probability=100,interval=3"), 0);
	unsigned long inj = uslub_failslab_injected();
	errno = 0;
	CHECK_EQ(uslub_failslab_configure("probability=101"), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(uslub_failslab_configure("interval=0"), -1);
	CHECK_EQ(uslub_failslab_configure("nonsense"), -1);
	CHECK_EQ(uslub_failslab_configure("times=x"), -1);
	CHECK_EQ(uslub_failslab_configure(NULL), -1);
	/* unchanged: still every 3rd call */
	uslub_cache_t *s = uslub_cache_create("failslab-bad", 32, 0, 0, NULL);
	CHECK(s);
	unsigned char failed[CALLS];
	CHECK_EQU(run(s, USLUB_GFP_KERNEL, failed), CALLS / 3);
	CHECK(uslub_failslab_injected() > inj);
	CHECK_EQ(uslub_failslab_configure("probability=0"), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	printf("  malformed specs are refused (EINVAL) and change nothing\n");
}

int main(void)
{
	uslub_cache_t *s = uslub_cache_create("failslab-64", 64, 0, 0, NULL);
	uslub_cache_t *other = uslub_cache_create("failslab-other", 128, 0, 0, NULL);
	struct uslub_cache_args args = { .sheaf_capacity = 16 };
	uslub_cache_t *sheafy = uslub_cache_create_args("failslab-sheaf", 96, &args,
						       USLUB_ACCOUNT);
	CHECK(s && other && sheafy);
	test_interval(s);
	test_interval(sheafy);                 /* sheaves and extension hooks */
	test_probability_deterministic(s);
	test_times_space(s);
	test_gfp_wait(s);
	test_filter(s, other);
	test_bulk_prefill(s);
	test_bulk_prefill(sheafy);
	test_bad_spec();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(other), 0);
	CHECK_EQ(uslub_cache_destroy(sheafy), 0);
	printf("failslab: ok\n");
	return 0;
}
