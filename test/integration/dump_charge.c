/*
 * uslub_kmem_dump_obj() and uslub_cache_charge() (kmem_dump_obj,
 * kmem_cache_charge).
 *
 * dump: an object of a cache without owner tracking (cache name, object
 * start, the pointer's offset into it, sizes, "not tracked"), one of a
 * SLAB_STORE_USER cache (allocated by this thread; freed: not recorded;
 * after a free and a new allocation both owners), a kmalloc object, and
 * false with no output for NULL, the stack, a page run, a huge mapping.
 *
 * charge: no current group: true, nothing charged; with one: usage rises
 * by exactly the object's charge (slabinfo size + obj_ext_bytes, the stock
 * drained), a second charge is a no-op, the free uncharges; over the
 * limit: false with ENOMEM and nothing charged, and with NOFAIL charged
 * past the limit; a kmalloc object; non-slab pointers: true, no-op.
 */
#define _GNU_SOURCE
#include "check.h"

static size_t charge_of(uslub_cache_t *s)
{
	struct uslub_slabinfo si = slabinfo_get(s);
	return si.obj_ext_charge;
}

static size_t usage_now(uslub_group_t *g)
{
	uslub_group_drain_stock();
	return uslub_group_usage(g);
}

static void test_dump(void)
{
	char want[256];
	uslub_cache_t *s = uslub_cache_create("dump-plain", 100, 0, 0, NULL);
	CHECK(s);
	char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	capture_begin();
	bool ok = uslub_kmem_dump_obj(p + 37);
	const char *out = capture_end();
	CHECK(ok);
	CHECK_HAS(out, "cache dump-plain");
	snprintf(want, sizeof(want), "object at %p, offset 37 into it, object size 100", (void *)p);
	CHECK_HAS(out, want);
	CHECK_HAS(out, "owners not tracked");
	CHECK(!strstr(out, "allocated at"));

	uslub_cache_t *u = uslub_cache_create("dump-user", 64, 0, USLUB_STORE_USER, NULL);
	CHECK(u);
	char *q = uslub_cache_alloc(u, 0);
	CHECK(q);
	capture_begin();
	ok = uslub_kmem_dump_obj(q);
	out = capture_end();
	CHECK(ok);
	CHECK_HAS(out, "cache dump-user");
	snprintf(want, sizeof(want), "object at %p, offset 0 into it, object size 64", (void *)q);
	CHECK_HAS(out, want);
	snprintf(want, sizeof(want), "thread %d", (int)gettid());
	CHECK_HAS(out, "allocated at ");
	CHECK_HAS(out, want);
	CHECK_HAS(out, "last freed: not recorded");
	/* freed and taken again (a debug cache hands the same object back
	 * only eventually: free every object of a small batch) */
	uslub_cache_free(u, q);
	capture_begin();
	ok = uslub_kmem_dump_obj(q);
	out = capture_end();
	CHECK(ok);
	CHECK_HAS(out, "last freed at ");
	CHECK(!strstr(out, "last freed: not recorded"));

	char *k = uslub_kmalloc(300, 0);
	capture_begin();
	ok = uslub_kmem_dump_obj(k + 299);
	out = capture_end();
	CHECK(ok);
	CHECK_HAS(out, "cache kmalloc-512");
	CHECK_HAS(out, "offset 299 into it");
	uslub_kfree(k);

	int local = 0;
	void *run = uslub_kmalloc(100000, 0), *huge = uslub_kmalloc(3u << 20, 0);
	CHECK(run && huge);
	capture_begin();
	CHECK(!uslub_kmem_dump_obj(NULL));
	CHECK(!uslub_kmem_dump_obj(&local));
	CHECK(!uslub_kmem_dump_obj(run));
	CHECK(!uslub_kmem_dump_obj(huge));
	out = capture_end();
	CHECK_MSG(!*out, "output for a non-slab pointer: %s", out);
	uslub_kfree(run);
	uslub_kfree(huge);

	uslub_cache_free(s, p);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(u), 0);
}

static void test_charge(void)
{
	uslub_cache_t *s = uslub_cache_create("charge-late", 200, 0, 0, NULL);
	CHECK(s);
	uslub_group_t *g = uslub_group_create(NULL, "late", USLUB_GROUP_NO_LIMIT);
	CHECK(g);

	/* no current group: nothing to do */
	void *a = uslub_cache_alloc(s, 0);
	CHECK(a);
	CHECK(uslub_cache_charge(a, 0));
	CHECK_EQU(usage_now(g), 0);

	uslub_group_set_current(g);
	size_t u0 = usage_now(g);
	CHECK(uslub_cache_charge(a, 0));
	size_t cs = charge_of(s);
	CHECK(cs >= 200);
	CHECK_EQU(usage_now(g), u0 + cs);
	CHECK(uslub_cache_charge(a, 0));                  /* already charged */
	CHECK_EQU(usage_now(g), u0 + cs);
	/* the free uncharges it, from another group's context too */
	uslub_group_set_current(NULL);
	uslub_cache_free(s, a);
	uslub_group_set_current(g);
	CHECK_EQU(usage_now(g), u0);

	/* over the limit: refused, nothing charged; NOFAIL oversteps it */
	void *b = uslub_cache_alloc(s, 0);
	CHECK(b);
	CHECK_EQ(uslub_group_set_limit(g, u0 + cs - 1), 0);
	errno = 0;
	CHECK(!uslub_cache_charge(b, USLUB_GFP_NOWARN));
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQU(usage_now(g), u0);
	struct uslub_group_info gi;
	CHECK_EQ(uslub_group_info(g, &gi), 0);
	CHECK(gi.failcnt >= 1);
	CHECK(uslub_cache_charge(b, USLUB_GFP_NOFAIL));
	CHECK_EQU(usage_now(g), u0 + cs);
	CHECK(usage_now(g) > u0 + cs - 1);
	uslub_cache_free(s, b);
	CHECK_EQU(usage_now(g), u0);
	CHECK_EQ(uslub_group_set_limit(g, USLUB_GROUP_NO_LIMIT), 0);

	/* a kmalloc object; pointers that are not slab objects: no-op */
	void *k = uslub_kmalloc(40, 0);
	CHECK(uslub_cache_charge(k, 0));
	size_t ck = charge_of(uslub_kmalloc_cache(40));
	CHECK_EQU(usage_now(g), u0 + ck);
	uslub_kfree(k);
	CHECK_EQU(usage_now(g), u0);
	void *run = uslub_kmalloc(100000, 0);
	int local;
	CHECK(uslub_cache_charge(run, 0));
	CHECK(uslub_cache_charge(&local, 0));
	CHECK(uslub_cache_charge(NULL, 0));
	CHECK_EQU(usage_now(g), u0);
	uslub_kfree(run);

	uslub_group_set_current(NULL);
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

int main(void)
{
	test_dump();
	test_charge();
	CHECK_EQ(uslub_error_count(), 0);
	printf("ok\n");
	return 0;
}
