/*
 * Kernel-style use of the any-context calls, the object dump and the late
 * charge, through <uslub/slab.h> only: kmalloc_nolock()/kfree_nolock()
 * with the kernel's gfp bits (GFP_KERNEL is refused: it may sleep), kfree()
 * of a nolock object, kfree_nolock() of a kmalloc() one, kmem_dump_obj()
 * and kmem_cache_charge(). Run plain and with USLUB_PROFILING=1 (every
 * kmalloc cache then keeps its extensions in a separate array, which a
 * slab made in any context goes without).
 */
#include <uslub/slab.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #c); \
			exit(1);                                              \
		}                                                             \
	} while (0)

struct item {
	unsigned long key;
	char name[40];
};

int main(void)
{
	kfree(kmalloc(8, GFP_KERNEL));          /* the kmalloc caches exist */

	CHECK(kmalloc_nolock(0, 0, NUMA_NO_NODE) == ZERO_SIZE_PTR);
	CHECK(kmalloc_nolock(KMALLOC_MAX_CACHE_SIZE + 1, 0, NUMA_NO_NODE) == NULL);
	CHECK(kmalloc_nolock(64, GFP_KERNEL, NUMA_NO_NODE) == NULL);   /* may sleep */
	CHECK(kmalloc_nolock(64, __GFP_NOFAIL, NUMA_NO_NODE) == NULL);

	void *v[256];
	for (int i = 0; i < 256; i++) {
		size_t size = 1 + (size_t)i * 31;
		v[i] = kmalloc_nolock(size, __GFP_ZERO | __GFP_NOWARN | __GFP_NOMEMALLOC,
				      NUMA_NO_NODE);
		CHECK(v[i]);
		for (size_t k = 0; k < size; k++)
			CHECK(((unsigned char *)v[i])[k] == 0);
		memset(v[i], 0x11, size);
	}
	for (int i = 0; i < 256; i++) {
		if (i % 2)
			kfree(v[i]);
		else
			kfree_nolock(v[i]);
	}
	struct item *it = kmalloc(sizeof(*it), GFP_KERNEL);
	CHECK(it);
	kfree_nolock(it);

	struct kmem_cache *c = kmem_cache_create("nolock_items", sizeof(struct item), 0,
						 SLAB_STORE_USER, NULL);
	CHECK(c);
	struct item *x = kmem_cache_alloc(c, GFP_KERNEL);
	CHECK(x);
	CHECK(kmem_dump_obj(&x->name[3]));
	int local = 0;
	CHECK(!kmem_dump_obj(&local));
	/* no current accounting group: nothing to charge */
	CHECK(kmem_cache_charge(x, GFP_KERNEL));
	kfree_nolock(x);                        /* a debug cache: deferred */
	kmem_cache_destroy(c);                  /* drains it first */

	CHECK(uslub_error_count() == 0);
	printf("ok\n");
	return 0;
}
