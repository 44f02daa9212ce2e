/*
 * kernel_bulk_bool: kmem_cache_alloc_bulk() under the kernel's 7.2
 * convention (bool: true on success), chosen with USLUB_BULK_RETURNS_BOOL
 * before including <uslub/slab.h>; linked into kernel_api7, whose own
 * translation unit uses the int convention (6.12 to 7.1).
 */
#define USLUB_BULK_RETURNS_BOOL
#include <uslub/slab.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void test_bulk_bool(void);

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "kernel_bulk_bool: FAIL line %d: %s\n", \
				__LINE__, #cond);                              \
			_exit(1);                                              \
		}                                                              \
	} while (0)

void test_bulk_bool(void)
{
	struct kmem_cache *s = kmem_cache_create("api7_bulk_bool", 48, 0, 0, NULL);
	struct uslub_slabinfo info;
	void *objs[16];

	CHECK(s);
	CHECK(_Generic(kmem_cache_alloc_bulk(s, GFP_KERNEL, 16, objs), bool: 1, default: 0));
	CHECK(_Generic(kmem_cache_alloc_bulk_noprof(s, GFP_KERNEL, 16, objs), bool: 1,
		       default: 0));
	bool ok = kmem_cache_alloc_bulk(s, GFP_KERNEL, 16, objs);
	CHECK(ok);
	for (int i = 0; i < 16; i++)
		CHECK(objs[i] != NULL);
	CHECK(uslub_cache_slabinfo(s, &info) == 0 && info.live_objs == 16);
	kmem_cache_free_bulk(s, 16, objs);
	CHECK(kmem_cache_alloc_bulk_noprof(s, GFP_KERNEL | __GFP_ZERO, 4, objs) == true);
	kmem_cache_free_bulk(s, 4, objs);
	/* nothing asked: false, as the kernel */
	CHECK(kmem_cache_alloc_bulk(s, GFP_KERNEL, 0, objs) == false);
	/* the kernel's idiom works under either convention */
	if (!kmem_cache_alloc_bulk(s, GFP_KERNEL, 8, objs))
		CHECK(0);
	kmem_cache_free_bulk(s, 8, objs);
	CHECK(uslub_cache_slabinfo(s, &info) == 0 && info.live_objs == 0);
	kmem_cache_destroy(s);
}
