/*
 * ext_layout: the lean hooked paths find each object's extension where the
 * reports look for it. An accounted cache's alloc and free address the
 * extension by shift where the layout allows (padding; a power-of-two
 * stride with extensions in the leftover or an array) and by index x
 * stride otherwise, while uslub_group_cache_usage() walks the slabs by
 * index. For sizes 8..4096 (powers of two and between), with and without
 * sheaves, every placement: allocate N objects in a group, free every
 * third in a shuffled order, then the rest; after each step the group's
 * per-cache count must equal the live objects exactly (a wrong address
 * charges or clears some other slot), and the cache validates clean.
 * Sizes with alignment padding too.
 * Variants: profiling on (the profiled lean paths), cpu slabs.
 */
#include "check.h"

#define N 700

static struct rng rng;

static void one(size_t size, size_t align, unsigned int cap, int seen[8])
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = cap;
	args.align = align;
	char name[48];
	snprintf(name, sizeof(name), "layout-%zu-%zu-%u", size, align, cap);
	uslub_cache_t *s = uslub_cache_create_args(name, size, &args, USLUB_ACCOUNT);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(si.obj_ext > 0 && si.obj_ext < 8);
	seen[si.obj_ext]++;
	uslub_group_t *g = uslub_group_create(NULL, name, USLUB_GROUP_NO_LIMIT);
	CHECK(g);
	uslub_group_t *old = uslub_group_set_current(g);
	static void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = uslub_cache_alloc(s, 0);
		CHECK(p[i]);
		memset(p[i], 0xa5, size);      /* the object's bytes only */
	}
	unsigned long objs = 0;
	size_t bytes = 0;
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQU(objs, N);
	for (int i = N - 1; i > 0; i--) {          /* shuffle */
		int j = (int)rng_below(&rng, (uint64_t)(i + 1));
		void *t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	int live = N;
	for (int i = 0; i < N; i += 3, live--)
		uslub_cache_free(s, p[i]);
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQU(objs, (unsigned long)live);
	for (int i = 0; i < N; i++)
		if (i % 3)
			uslub_cache_free(s, p[i]);
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQU(objs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_group_set_current(old);
	uslub_group_drain_stock();
	CHECK_EQU(uslub_group_usage(g), 0);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_group_delete(g), 0);
}

int main(void)
{
	rng.s = test_seed(17);
	int seen[8] = { 0 };
	static const size_t sizes[] = { 8, 16, 24, 32, 48, 64, 72, 96, 128, 192, 256,
					500, 512, 1024, 1500, 2048, 4096 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		one(sizes[i], 0, 0, seen);
		one(sizes[i], 0, 16, seen);
	}
	/* alignment padding with room for an extension */
	one(40, 64, 0, seen);
	one(40, 64, 16, seen);
	one(100, 128, 16, seen);
	/* the sizes above give each in-slab placement and the array */
	CHECK_MSG(seen[USLUB_OBJ_EXT_LEFTOVER] && seen[USLUB_OBJ_EXT_PADDING] &&
		  seen[USLUB_OBJ_EXT_ARRAY],
		  "placements seen: leftover %d padding %d array %d",
		  seen[USLUB_OBJ_EXT_LEFTOVER], seen[USLUB_OBJ_EXT_PADDING],
		  seen[USLUB_OBJ_EXT_ARRAY]);
	printf("ext_layout: ok (leftover %d, padding %d, array %d caches)\n",
	       seen[USLUB_OBJ_EXT_LEFTOVER], seen[USLUB_OBJ_EXT_PADDING],
	       seen[USLUB_OBJ_EXT_ARRAY]);
	return 0;
}
