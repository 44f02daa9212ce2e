/*
 * The 7.x harness API on uslub, without kernel source: built with the
 * harness header first and a stand-in of a 7.x tree's tools/include
 * (kernel-7x/linux/slab.h: kmem_cache_args with sheaf_capacity, the
 * generic-selection kmem_cache_create, struct slab_sheaf of its own
 * layout, bool kmem_cache_alloc_bulk; kernel-gfp/ for gfp), as the maple
 * tree of 6.18 on uses it:
 *   - creation in the three forms (args with sheaf_capacity and align,
 *     NULL, the old five arguments), to uslub caches with sheaves;
 *   - prefill gives exactly what was asked, from uslub's sheaves (its
 *     statistics say so); its objects count as allocated only when
 *     kmem_cache_alloc_from_sheaf() takes them; an empty sheaf gives NULL;
 *   - refill in place, refill that replaces the sheaf (above capacity),
 *     oversize prefill, return with objects left;
 *   - the non-kernel budget on prefill and refill (GFP_NOWAIT), the
 *     callback armed by a refused prefill and run by the next one;
 *   - kmem_cache_alloc_bulk() returns bool; kfree() of a cache object
 *     counts it out of nr_allocated; the typed allocators (kmalloc_objs)
 *     where the tree's header lacks them; everything validates clean.
 */
#include <linux/slab.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(USLUB_KTEST_KERNEL_GFP) || !defined(USLUB_KTEST_ARGS_API)
#error "the harness header did not see the 7.x stand-in"
#endif
/* declared by the user, as lib/maple_tree.c does */
extern unsigned int kmem_cache_nr_allocated(struct kmem_cache *);

#define CHECK(cond) do {                                                       \
	if (!(cond)) {                                                         \
		fprintf(stderr, "ktest_sheaf: %s:%d: %s failed\n",            \
			__FILE__, __LINE__, #cond);                            \
		exit(1);                                                       \
	}                                                                      \
} while (0)

struct item {
	unsigned long key;
	char pad[184];
};

static int callback_runs;
static void on_failure(void *p)
{
	CHECK(p == &callback_runs);
	callback_runs++;
}

static uint64_t stat_of(struct kmem_cache *c, int which)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(c, st);
	return st[which];
}

static void test_create_forms(void)
{
	struct kmem_cache_args args = { .align = 64, .sheaf_capacity = 32 };
	struct kmem_cache *a = kmem_cache_create("ks_args", sizeof(struct item), &args, SLAB_PANIC);
	struct kmem_cache *n = kmem_cache_create("ks_null", 96, NULL, SLAB_PANIC);
	struct kmem_cache *l = kmem_cache_create("ks_legacy", 48, 16, SLAB_PANIC | SLAB_HWCACHE_ALIGN,
						 NULL);
	void *p;

	CHECK(a && n && l);
	CHECK(uslub_cache_sheaf_capacity(a) >= 32);
	CHECK(uslub_cache_object_size(a) == sizeof(struct item));
	p = kmem_cache_alloc(a, GFP_KERNEL);
	CHECK(p && ((uintptr_t)p & 63) == 0);
	kmem_cache_free(a, p);
	p = kmem_cache_zalloc(n, GFP_KERNEL);
	CHECK(p && ((char *)p)[95] == 0);
	kmem_cache_free(n, p);
	p = kmem_cache_alloc(l, GFP_KERNEL);   /* SLAB_HWCACHE_ALIGN of the tree's bit */
	CHECK(p && ((uintptr_t)p & 63) == 0);
	kmem_cache_free(l, p);
	kmem_cache_destroy(a);
	kmem_cache_destroy(n);
	kmem_cache_destroy(l);
	puts("create forms: ok");
}

static void test_sheaves(void)
{
	struct kmem_cache_args args = { .sheaf_capacity = 32 };
	struct kmem_cache *c = kmem_cache_create("ks_node", sizeof(struct item), &args, SLAB_PANIC);
	struct slab_sheaf *sheaf, *old;
	void *objs[200];
	unsigned int cap = uslub_cache_sheaf_capacity(c), i;
	int base = nr_allocated;

	CHECK(cap >= 32 && cap < 100);
	/* warm the barn: a returned full sheaf may come back bigger than asked */
	sheaf = kmem_cache_prefill_sheaf(c, GFP_KERNEL, cap);
	CHECK(sheaf && kmem_cache_sheaf_size(sheaf) == cap);
	kmem_cache_return_sheaf(c, GFP_KERNEL, sheaf);

	sheaf = kmem_cache_prefill_sheaf(c, GFP_KERNEL, 10);
	CHECK(sheaf);
	CHECK(kmem_cache_sheaf_size(sheaf) == 10);      /* exactly, as the shim */
	CHECK(nr_allocated == base && kmem_cache_nr_allocated(c) == 0);
	for (i = 0; i < 10; i++) {
		objs[i] = kmem_cache_alloc_from_sheaf(c, GFP_KERNEL, sheaf);
		CHECK(objs[i]);
		memset(objs[i], 0x5a, sizeof(struct item));
	}
	CHECK(kmem_cache_alloc_from_sheaf(c, GFP_KERNEL, sheaf) == NULL);
	CHECK(nr_allocated == base + 10 && kmem_cache_nr_allocated(c) == 10);

	/* refill in place (within capacity): the same sheaf */
	old = sheaf;
	CHECK(kmem_cache_refill_sheaf(c, GFP_KERNEL, &sheaf, 20) == 0);
	CHECK(sheaf == old && kmem_cache_sheaf_size(sheaf) == 20);
	CHECK(kmem_cache_refill_sheaf(c, GFP_KERNEL, &sheaf, 5) == 0);  /* has enough */
	CHECK(kmem_cache_sheaf_size(sheaf) == 20);
	/* above capacity: a new (oversize) sheaf replaces it */
	CHECK(kmem_cache_refill_sheaf(c, GFP_KERNEL, &sheaf, 100) == 0);
	CHECK(sheaf != old && kmem_cache_sheaf_size(sheaf) == 100);
	CHECK(nr_allocated == base + 10);
	for (i = 10; i < 60; i++)
		CHECK((objs[i] = kmem_cache_alloc_from_sheaf(c, GFP_KERNEL | __GFP_ZERO, sheaf)) != NULL);
	CHECK(kmem_cache_sheaf_size(sheaf) == 50);
	kmem_cache_return_sheaf(c, GFP_KERNEL, sheaf);   /* 50 left in it */
	CHECK(nr_allocated == base + 60 && kmem_cache_nr_allocated(c) == 60);

	/* an oversize prefill */
	sheaf = kmem_cache_prefill_sheaf(c, GFP_KERNEL, 140);
	CHECK(sheaf && kmem_cache_sheaf_size(sheaf) == 140);
	for (i = 60; i < 200; i++)
		CHECK((objs[i] = kmem_cache_alloc_from_sheaf(c, GFP_KERNEL, sheaf)) != NULL);
	kmem_cache_return_sheaf(c, GFP_KERNEL, sheaf);
	CHECK(kmem_cache_nr_allocated(c) == 200);
	for (i = 0; i < 200; i++)
		for (unsigned int j = i + 1; j < 200; j += 37)
			CHECK(objs[i] != objs[j]);
	/* kfree() of a cache object is the cache's free (the maple tree's) */
	for (i = 0; i < 100; i++)
		kfree(objs[i]);
	kmem_cache_free_bulk(c, 100, objs + 100);
	CHECK(nr_allocated == base && kmem_cache_nr_allocated(c) == 0);

	/* these were uslub's sheaves */
	CHECK(stat_of(c, USLUB_SHEAF_PREFILL_FAST) + stat_of(c, USLUB_SHEAF_PREFILL_SLOW) >= 2);
	CHECK(stat_of(c, USLUB_SHEAF_PREFILL_OVERSIZE) >= 2);
	CHECK(kmem_cache_prefill_sheaf(c, GFP_KERNEL, 0) == NULL);
	CHECK(uslub_cache_validate(c) == 0);
	kmem_cache_destroy(c);
	puts("prefill, alloc from, refill, return, oversize: ok");
}

static void test_budget(void)
{
	struct kmem_cache_args args = { .sheaf_capacity = 16 };
	struct kmem_cache *c = kmem_cache_create("ks_budget", 64, &args, SLAB_PANIC);
	struct slab_sheaf *sheaf;
	unsigned long inj = uslub_failslab_injected();

	kmem_cache_set_callback(c, on_failure);
	kmem_cache_set_private(c, &callback_runs);
	kmem_cache_set_non_kernel(c, 5);
	CHECK(kmem_cache_prefill_sheaf(c, GFP_NOWAIT, 8) == NULL);   /* 5 < 8 */
	CHECK(uslub_failslab_injected() > inj);
	CHECK(callback_runs == 0);
	kmem_cache_set_non_kernel(c, 8);
	sheaf = kmem_cache_prefill_sheaf(c, GFP_NOWAIT, 8);           /* runs it first */
	CHECK(callback_runs == 1);
	CHECK(sheaf && kmem_cache_sheaf_size(sheaf) == 8);
	/* the budget is spent: an in-place refill fails, the sheaf intact */
	CHECK(kmem_cache_refill_sheaf(c, GFP_NOWAIT, &sheaf, 12) == -ENOMEM);
	CHECK(sheaf && kmem_cache_sheaf_size(sheaf) == 8);
	kmem_cache_set_non_kernel(c, 4);
	CHECK(kmem_cache_refill_sheaf(c, GFP_NOWAIT, &sheaf, 12) == 0);
	CHECK(kmem_cache_sheaf_size(sheaf) == 12);
	CHECK(kmem_cache_refill_sheaf(c, GFP_KERNEL, &sheaf, 16) == 0);   /* reclaim: no budget */
	kmem_cache_return_sheaf(c, GFP_KERNEL, sheaf);
	/* the refused refill armed it; returning a sheaf with objects left
	 * runs it (the shim frees them in bulk, which runs it) */
	CHECK(callback_runs == 2);
	kmem_cache_set_callback(c, NULL);
	CHECK(kmem_cache_nr_allocated(c) == 0);
	kmem_cache_destroy(c);
	puts("budget and callback on sheaves: ok");
}

static void test_bulk_bool(void)
{
	struct kmem_cache *c = kmem_cache_create("ks_bulk", 128, NULL, SLAB_PANIC);
	void *list[16];

	_Static_assert(__builtin_types_compatible_p(
			       __typeof__(kmem_cache_alloc_bulk(c, GFP_KERNEL, 16, list)), bool),
		       "kmem_cache_alloc_bulk returns the tree's bool");
	CHECK(kmem_cache_alloc_bulk(c, GFP_KERNEL, 16, list) == true);
	CHECK(kmem_cache_nr_allocated(c) == 16);
	kmem_cache_free_bulk(c, 16, list);
	CHECK(kmem_cache_alloc_bulk(c, GFP_NOWAIT, 4, list) == false);   /* no budget */
	CHECK(kmem_cache_nr_allocated(c) == 0);
	kmem_cache_destroy(c);
	puts("bool bulk: ok");
}

/* the 7.x typed allocators the tree's header lacks (lib/rbtree_test.c) */
static void test_typed(void)
{
	int base = kmalloc_nr_allocated;
	struct item *one = kmalloc_obj(*one);
	struct item *arr = kzalloc_objs(struct item, 4, GFP_KERNEL);

	CHECK(one && arr && arr[3].key == 0 && arr[3].pad[183] == 0);
	CHECK(uslub_ksize(one) >= sizeof(*one) && uslub_ksize(arr) >= 4 * sizeof(*arr));
	CHECK(kmalloc_nr_allocated == base + 2);
	CHECK(kmalloc_objs(struct item, 2, GFP_NOWAIT) == NULL);   /* the shim's rule */
	kfree(one);
	kfree(arr);
	CHECK(kmalloc_nr_allocated == base);
	puts("typed allocators: ok");
}

int main(void)
{
	test_create_forms();
	test_sheaves();
	test_budget();
	test_bulk_bool();
	test_typed();
	CHECK(nr_allocated == 0);
	printf("nr_allocated = %d\n", nr_allocated);
	return 0;
}
