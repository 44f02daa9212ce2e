/*
 * bad_input: invalid arguments get a clear error and lose nothing.
 *   - uslub_cache_create rejects NULL/empty names, size 0, sizes over the
 *     largest slab, non power-of-two alignments and unknown flags with
 *     NULL + EINVAL, and creates nothing;
 *   - freeing a foreign, interior or wrong-cache pointer is counted exactly
 *     once in uslub_error_count() and leaves every cache consistent and the
 *     object still allocated;
 *   - destroy with live objects fails with EBUSY and leaves the cache usable.
 */
#include "check.h"

#define MAX_SLAB_BYTES ((size_t)USLUB_PAGE_SIZE << USLUB_MAX_PAGE_ORDER)

static size_t caches_in_json(void)
{
	char *j = slabinfo_string(USLUB_FMT_JSON, NULL);
	CHECK_MSG(json_valid(j), "slabinfo JSON does not parse:\n%s", j);
	size_t n = count_substr(j, "\"ALLOC_FASTPATH\"");
	free(j);
	return n;
}

static bool name_in_output(const char *name)
{
	char *j = slabinfo_string(USLUB_FMT_JSON, NULL);
	char *t = slabinfo_string(USLUB_FMT_TABLE, NULL);
	bool found = strstr(j, name) != NULL || strstr(t, name) != NULL;
	free(j);
	free(t);
	return found;
}

static void expect_einval(const char *name, size_t size, size_t align, unsigned int flags,
			  void (*ctor)(void *), const char *what, int line)
{
	errno = 0;
	uslub_cache_t *s = uslub_cache_create(name, size, align, flags, ctor);
	if (s != NULL)
		test_fail(__FILE__, line, "%s: uslub_cache_create succeeded", what);
	if (errno != EINVAL)
		test_fail(__FILE__, line, "%s: errno %d (%s), expected EINVAL", what, errno,
			  strerror(errno));
	if (name && *name && name_in_output(name))
		test_fail(__FILE__, line, "%s: cache '%s' appears in slabinfo after a failed create",
			  what, name);
}

static void dummy_ctor(void *p)
{
	(void)p;
}

static void test_create_errors(void)
{
	/* a valid cache first so the output has something in it */
	uslub_cache_t *ref = uslub_cache_create("bad-ref-cache", 64, 0, 0, NULL);
	CHECK(ref);
	void *rp = uslub_cache_alloc(ref, 0);
	CHECK(rp);
	size_t before = caches_in_json();
	CHECK_MSG(before >= 1, "slabinfo JSON lists no ALLOC_FASTPATH for a live cache");

	expect_einval(NULL, 64, 0, 0, NULL, "NULL name", __LINE__);
	expect_einval("", 64, 0, 0, NULL, "empty name", __LINE__);
	expect_einval("bad-size-zero", 0, 0, 0, NULL, "size 0", __LINE__);
	expect_einval("bad-size-zero-ctor", 0, 8, 0, dummy_ctor, "size 0 with ctor", __LINE__);
	expect_einval("bad-size-big", MAX_SLAB_BYTES + 1, 0, 0, NULL, "size 2 MiB + 1", __LINE__);
	expect_einval("bad-size-huge", MAX_SLAB_BYTES * 2, 0, 0, NULL, "size 4 MiB", __LINE__);
	expect_einval("bad-size-max", SIZE_MAX, 0, 0, NULL, "size SIZE_MAX", __LINE__);
	expect_einval("bad-size-max2", SIZE_MAX - 4095, 0, 0, NULL, "size SIZE_MAX-4095",
		      __LINE__);
	expect_einval("bad-align-3", 64, 3, 0, NULL, "align 3", __LINE__);
	expect_einval("bad-align-48", 64, 48, 0, NULL, "align 48", __LINE__);
	expect_einval("bad-align-12", 64, 12, USLUB_HWCACHE_ALIGN, NULL, "align 12", __LINE__);
	expect_einval("bad-align-huge", 64, ((size_t)1 << 63) + 1, 0, NULL, "align 2^63+1",
		      __LINE__);
	CHECK(!(USLUB_CACHE_FLAGS_VALID & 0x8u));
	expect_einval("bad-flags-3", 64, 0, 0x8u, NULL, "flag bit 3", __LINE__);
	expect_einval("bad-flags-top", 64, 0, 0x80000000u, NULL, "flag bit 31", __LINE__);
	CHECK(!(USLUB_CACHE_FLAGS_VALID & 0x20u));
	expect_einval("bad-flags-mix", 64, 0, USLUB_HWCACHE_ALIGN | 0x20u, NULL,
		      "valid + unknown flag", __LINE__);
	expect_einval("bad-flags-all", 64, 0, ~0u, NULL, "all flag bits", __LINE__);

	CHECK_EQU(caches_in_json(), before);

	/* a later valid create still works, and shows up */
	uslub_cache_t *s = uslub_cache_create("bad-later-valid", 64, 16, USLUB_HWCACHE_ALIGN, NULL);
	CHECK(s);
	CHECK(name_in_output("bad-later-valid"));
	CHECK_EQU(caches_in_json(), before + 1);
	void *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	CHECK((uintptr_t)p % 64 == 0);
	uslub_cache_free(s, p);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK(!name_in_output("bad-later-valid"));
	CHECK_EQU(caches_in_json(), before);

	/* the boundary: an object of exactly the largest slab is valid */
	s = uslub_cache_create("bad-size-exact-max", MAX_SLAB_BYTES, 0, 0, NULL);
	CHECK_MSG(s, "size == 2 MiB (largest slab) rejected: %s", strerror(errno));
	p = uslub_cache_alloc(s, 0);
	CHECK(p);
	((volatile char *)p)[0] = 1;
	((volatile char *)p)[MAX_SLAB_BYTES - 1] = 2;
	CHECK(uslub_owns((char *)p + MAX_SLAB_BYTES - 1));
	uslub_cache_free(s, p);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);

	uslub_cache_free(ref, rp);
	CHECK_EQ(uslub_cache_destroy(ref), 0);
}

/* One invalid free: exactly one error, nothing else changes. */
static void bad_free(uslub_cache_t *s, void *p, uslub_cache_t *other, const char *what,
		     int line)
{
	struct uslub_slabinfo a = slabinfo_get(s);
	struct uslub_slabinfo ao = other ? slabinfo_get(other) : a;
	uint64_t st0[USLUB_NR_STATS];
	uslub_cache_stats(s, st0);
	unsigned long e0 = uslub_error_count();
	uslub_cache_free(s, p);
	unsigned long e1 = uslub_error_count();
	if (e1 != e0 + 1)
		test_fail(__FILE__, line, "%s: error count went %lu -> %lu, expected +1", what, e0,
			  e1);
	long v = uslub_cache_validate(s);
	if (v != 0)
		test_fail(__FILE__, line, "%s: validate found %ld inconsistencies", what, v);
	if (other && (v = uslub_cache_validate(other)) != 0)
		test_fail(__FILE__, line, "%s: validate(other) found %ld inconsistencies", what, v);
	struct uslub_slabinfo b = slabinfo_get(s);
	if (b.live_objs != a.live_objs || b.num_slabs != a.num_slabs ||
	    b.active_objs != a.active_objs)
		test_fail(__FILE__, line,
			  "%s: cache changed: live %lu->%lu slabs %lu->%lu active %lu->%lu", what,
			  a.live_objs, b.live_objs, a.num_slabs, b.num_slabs, a.active_objs,
			  b.active_objs);
	uint64_t st1[USLUB_NR_STATS];
	uslub_cache_stats(s, st1);
	if (stat_frees(st1) != stat_frees(st0))
		test_fail(__FILE__, line, "%s: a rejected free was counted as a free", what);
	if (other) {
		struct uslub_slabinfo bo = slabinfo_get(other);
		if (bo.live_objs != ao.live_objs || bo.num_slabs != ao.num_slabs)
			test_fail(__FILE__, line, "%s: other cache changed", what);
	}
}

static void test_bad_frees(void)
{
	const size_t size = 128, n = 50;
	uslub_cache_t *s = uslub_cache_create("bad-free-a", size, 0, 0, NULL);
	uslub_cache_t *t = uslub_cache_create("bad-free-b", size, 0, 0, NULL);
	uslub_cache_t *u = uslub_cache_create("bad-free-c", 512, 0, 0, NULL);
	CHECK(s && t && u);
	void *v[50], *w[50];
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		w[i] = uslub_cache_alloc(t, 0);
		CHECK(v[i] && w[i]);
		memset(v[i], (int)(0x40 + i), size);
		memset(w[i], (int)(0x90 + i), size);
	}

	int stack_obj[32];
	void *heap = malloc(size);
	CHECK(heap);
	static char static_obj[128];

	bad_free(s, heap, NULL, "free of a malloc'd pointer", __LINE__);
	bad_free(s, stack_obj, NULL, "free of a stack pointer", __LINE__);
	bad_free(s, static_obj, NULL, "free of a static pointer", __LINE__);
	bad_free(s, (char *)v[3] + 1, NULL, "free of obj+1", __LINE__);
	bad_free(s, (char *)v[4] + size / 2, NULL, "free of obj+size/2", __LINE__);
	bad_free(s, (char *)v[5] + size - 1, NULL, "free of obj+size-1", __LINE__);
	bad_free(t, v[6], s, "free of an object of another cache (same size)", __LINE__);
	bad_free(u, v[7], s, "free of an object of another cache (other size)", __LINE__);
	bad_free(s, w[8], t, "free of cache b's object into cache a", __LINE__);
	/* the same through the inline free paths: by default the main sheaf
	 * has room after the 50 allocations, so free_to_pcs() checks these
	 * (lookup, this cache, object start, free mark) before any push; with
	 * USLUB_CPU_SLABS=1 (the cpu_slabs variant) the objects are in the
	 * current cpu slab (the last ones allocated) and free_to_cpu_slab()'s
	 * range and object-start tests refuse them */
	bad_free(s, (char *)v[n - 1] + 1, NULL, "free of obj+1 (cpu slab)", __LINE__);
	bad_free(s, (char *)v[n - 1] + size - 1, NULL, "free of obj+size-1 (cpu slab)", __LINE__);
	bad_free(s, (char *)v[n - 2] + 8, NULL, "free of obj+8 (cpu slab)", __LINE__);
	bad_free(t, v[n - 1], s, "free of cache a's cpu-slab object into cache b", __LINE__);
	bad_free(s, w[n - 1], t, "free of cache b's cpu-slab object into cache a", __LINE__);
	bad_free(u, v[n - 3], s, "free of a cpu-slab object into a cache of other size",
		 __LINE__);

	/* the wrongly freed objects are still allocated and intact */
	for (size_t i = 0; i < n; i++) {
		for (size_t b = 0; b < size; b++) {
			CHECK_MSG(((unsigned char *)v[i])[b] == (unsigned char)(0x40 + i),
				  "object %zu of cache a corrupted at byte %zu", i, b);
			CHECK_MSG(((unsigned char *)w[i])[b] == (unsigned char)(0x90 + i),
				  "object %zu of cache b corrupted at byte %zu", i, b);
		}
	}
	/* and none of them is handed out again while live */
	void *extra[200];
	for (size_t i = 0; i < 200; i++) {
		extra[i] = uslub_cache_alloc(s, 0);
		CHECK(extra[i]);
		for (size_t k = 0; k < n; k++)
			CHECK_MSG(extra[i] != v[k] && extra[i] != w[k],
				  "live object %p handed out again after a rejected free",
				  extra[i]);
		memset(extra[i], 0, size);
	}
	for (size_t i = 0; i < 200; i++)
		uslub_cache_free(s, extra[i]);

	/* freeing them properly afterwards works */
	unsigned long e0 = uslub_error_count();
	for (size_t i = 0; i < n; i++) {
		uslub_cache_free(s, v[i]);
		uslub_cache_free(t, w[i]);
	}
	CHECK_EQU(uslub_error_count(), e0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_validate(t), 0);
	CHECK_EQU(slabinfo_get(s).live_objs, 0);
	CHECK_EQU(slabinfo_get(t).live_objs, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(t), 0);
	CHECK_EQ(uslub_cache_destroy(u), 0);
	free(heap);
}

static void test_destroy_busy(void)
{
	const size_t n = 300;
	uslub_cache_t *s = uslub_cache_create("bad-destroy-busy", 80, 0, 0, NULL);
	CHECK(s);
	void *v[300];
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		CHECK(v[i]);
		memset(v[i], (int)(i & 0xff), 80);
	}
	/* free most, keep a few live */
	for (size_t i = 0; i < n; i++)
		if (i % 37 != 0) {
			uslub_cache_free(s, v[i]);
			v[i] = NULL;
		}
	for (int attempt = 0; attempt < 2; attempt++) {
		errno = 0;
		CHECK_EQ(uslub_cache_destroy(s), -1);
		CHECK_EQ(errno, EBUSY);
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK(name_in_output("bad-destroy-busy"));
		/* still usable: the live objects are intact, and new ones work */
		for (size_t i = 0; i < n; i++)
			if (v[i])
				for (size_t b = 0; b < 80; b++)
					CHECK(((unsigned char *)v[i])[b] == (unsigned char)(i & 0xff));
		void *q[100];
		for (int i = 0; i < 100; i++) {
			q[i] = uslub_cache_alloc(s, 0);
			CHECK(q[i]);
			for (size_t k = 0; k < n; k++)
				CHECK(q[i] != v[k]);
			memset(q[i], 0xcc, 80);
		}
		for (int i = 0; i < 100; i++)
			uslub_cache_free(s, q[i]);
		CHECK_EQU(slabinfo_get(s).live_objs, (n + 36) / 37);
	}
	for (size_t i = 0; i < n; i++)
		if (v[i])
			uslub_cache_free(s, v[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK(!name_in_output("bad-destroy-busy"));
}

int main(void)
{
	test_create_errors();
	test_bad_frees();
	test_destroy_busy();
	printf("bad_input: ok\n");
	return 0;
}
