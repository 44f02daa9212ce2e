/*
 * kernel_api7: the 7.x additions of <uslub/slab.h>, used as kernel code
 * uses them, each step checking something that can fail:
 *
 *   - typed allocators: kmalloc_obj/objs/flex and the kzalloc_, kvmalloc_,
 *     kvzalloc_ forms, with and without gfp, return TYPE * of the right
 *     size (zeroed where asked); an overflowing count gets NULL (ENOMEM);
 *     under USLUB_PROFILING=1 each call site has its own tag;
 *   - krealloc_node_align / krealloc_node / kvrealloc (3 arguments) /
 *     kvrealloc_node / kvrealloc_node_align / kvmalloc_node_align: the
 *     alignment is met (an object that does not meet it moves, contents
 *     kept), a bad alignment or node is refused with EINVAL and @p left
 *     alone; with USLUB_FAKE_NODES=2 (the kernel_api7_nodes test) an
 *     object on the wrong node moves;
 *   - kmem_buckets: a set's objects come from its own caches
 *     ("<name>-<class>", counted there, not in kmalloc-<class>), sizes
 *     above 8 KiB as kmalloc serves them, a ctor runs, the usercopy window
 *     is clipped per class, kfree frees them; a NULL set is kmalloc;
 *   - bulk allocation under the int convention here, the bool one in
 *     kernel_bulk_bool.c (USLUB_BULK_RETURNS_BOOL), same results;
 *   - the kernel's semantics where uslub used to differ:
 *     kmem_cache_prefill_sheaf(s, gfp, 0) is NULL; use_freeptr_offset
 *     without a ctor fails (EINVAL, both APIs); a usercopy window outside
 *     the object is dropped with a warning (compat) but refused by
 *     uslub_cache_create_args;
 *   - __free(kfree_sensitive), kvfree_atomic, gfpflags_allow_spinning,
 *     slab_is_available.
 */
#include <uslub/slab.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void test_bulk_bool(void);    /* kernel_bulk_bool.c */

#define KCHECK_PROG "kernel_api7"
#include "kcheck.h"

static bool aligned(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

/* ------------------------------------------------------------------------
 * typed allocators
 * ---------------------------------------------------------------------- */
struct item {
	int id;
	long weight;
	char tag[20];
};

struct packet {
	unsigned short len;
	unsigned int flags;
	unsigned char data[];
};

#define SAME_TYPE(expr, type) __builtin_types_compatible_p(__typeof__(expr), type)

static void test_typed(void)
{
	struct item *it = kmalloc_obj(*it);
	struct item *it2 = kmalloc_obj(struct item, GFP_ATOMIC);
	struct item *zit = kzalloc_obj(*zit, GFP_KERNEL);

	CHECK(SAME_TYPE(kmalloc_obj(*it), struct item *));
	CHECK(SAME_TYPE(kzalloc_objs(int, 3), int *));
	CHECK(SAME_TYPE(kmalloc_flex(struct packet, data, 4), struct packet *));
	CHECK(it && it2 && zit && it != it2);
	CHECK(ksize(it) >= sizeof(struct item) && ksize(it2) >= sizeof(struct item));
	CHECK(all_zero(zit, sizeof(*zit)));
	memset(it, 0x5a, sizeof(*it));
	kfree(it);
	kfree(it2);
	kfree(zit);

	int *arr = kzalloc_objs(*arr, 1000);
	CHECK(arr && ksize(arr) >= 1000 * sizeof(int) && all_zero(arr, 1000 * sizeof(int)));
	kfree(arr);
	long *la = kmalloc_objs(long, 33, GFP_KERNEL | __GFP_NOFAIL);
	CHECK(la && ksize(la) >= 33 * sizeof(long));
	kfree(la);

	/* An array whose size overflows size_t: NULL, ENOMEM. */
	errno = 0;
	CHECK(kmalloc_objs(struct item, SIZE_MAX / 8) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(kvzalloc_objs(struct item, SIZE_MAX / 2, GFP_KERNEL) == NULL);
	CHECK_EQ(errno, ENOMEM);

	/* Flexible arrays: struct_size bytes; zeroed with kzalloc_flex. The
	 * struct here has no __counted_by, so the counter is the caller's. */
	struct packet *pk = kzalloc_flex(*pk, data, 300);
	CHECK(pk && ksize(pk) >= sizeof(struct packet) + 300);
	CHECK(all_zero(pk, sizeof(struct packet) + 300));
	pk->len = 300;
	memset(pk->data, 0xee, 300);
	kfree(pk);
	pk = kmalloc_flex(struct packet, data, 5000, GFP_NOWAIT);
	CHECK(pk && ksize(pk) >= sizeof(struct packet) + 5000);
	kfree(pk);
	errno = 0;
	CHECK(kmalloc_flex(struct packet, data, SIZE_MAX - 2) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(struct_size_t(struct packet, data, 10), sizeof(struct packet) + 10);
	CHECK_EQ(struct_size_t(struct packet, data, SIZE_MAX), SIZE_MAX);

	/* The kv forms: any size (a page run, a mapping). */
	struct item *big = kvmalloc_objs(struct item, 100000);
	CHECK(big && ksize(big) >= 100000 * sizeof(struct item));
	big[99999].id = 7;
	kvfree(big);
	struct item *vz = kvzalloc_obj(struct item);
	CHECK(vz && all_zero(vz, sizeof(*vz)));
	kvfree(vz);
	struct packet *vp = kvmalloc_flex(*vp, data, 10000, GFP_KERNEL);
	struct packet *vzp = kvzalloc_flex(struct packet, data, 64);
	CHECK(vp && vzp && ksize(vp) >= sizeof(*vp) + 10000 && all_zero(vzp, sizeof(*vzp) + 64));
	kvfree(vp);
	kvfree(vzp);
	int *vi = kvmalloc_obj(int, GFP_KERNEL);
	CHECK(vi);
	*vi = 1;
	kvfree_atomic(vi);
}

/* Under USLUB_PROFILING=1: each typed call site is its own tag. */
static void test_typed_tags(void)
{
	struct item *keep[5];
	int line_obj, line_flex;

	if (uslub_profiling_enabled() != 1)     /* exact counts: exact mode only */
		return;
	for (int i = 0; i < 3; i++) {
		line_obj = __LINE__ + 1;
		keep[i] = kmalloc_obj(struct item);
	}
	for (int i = 3; i < 5; i++) {
		line_flex = __LINE__ + 1;
		keep[i] = (struct item *)kzalloc_flex(struct packet, data, 40);
	}
	struct uslub_allocinfo info[256];
	size_t n = uslub_allocinfo(info, 256);
	int found = 0;

	CHECK(n <= 256);
	for (size_t i = 0; i < n; i++) {
		if (!info[i].file || !strstr(info[i].file, "kernel_api7.c"))
			continue;
		if (info[i].line == (unsigned int)line_obj) {
			CHECK_EQ(info[i].calls, 3);
			CHECK(strcmp(info[i].func, "test_typed_tags") == 0);
			found |= 1;
		} else if (info[i].line == (unsigned int)line_flex) {
			CHECK_EQ(info[i].calls, 2);
			found |= 2;
		}
	}
	CHECK_EQ(found, 3);
	printf("kernel_api7: typed allocators tagged per call site\n");
	for (int i = 0; i < 5; i++)
		kfree(keep[i]);
}

/* ------------------------------------------------------------------------
 * krealloc_node*, kvrealloc*, kvmalloc_node_align
 * ---------------------------------------------------------------------- */
static void fill(void *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)(seed + i);
}

static bool filled(const void *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)(seed + i))
			return false;
	return true;
}

static void test_realloc(void)
{
	/* Find a kmalloc-96 object that is not 64-aligned (96-byte objects
	 * at 32-byte steps: one of two in a row is not). */
	void *held[4];
	char *p = NULL;
	int nh = 0;

	for (int i = 0; i < 4 && !p; i++) {
		char *t = (char *)kmalloc(90, GFP_KERNEL);
		CHECK(t);
		if (!aligned(t, 64))
			p = t;
		else
			held[nh++] = t;
	}
	CHECK(p != NULL);
	fill(p, 90, 1);
	/* Same size, stricter alignment: it moves, contents kept. */
	char *q = (char *)krealloc_node_align(p, 90, 64, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(q && q != p && aligned(q, 64) && filled(q, 90, 1));
	for (int i = 0; i < nh; i++)
		kfree(held[i]);
	/* Already aligned and big enough: in place. */
	CHECK(krealloc_node_align(q, 60, 64, GFP_KERNEL, NUMA_NO_NODE) == q);
	/* Grow with a page alignment. */
	p = (char *)krealloc_node_align(q, 5000, 4096, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(p && aligned(p, 4096) && filled(p, 60, 1));
	fill(p, 5000, 9);
	/* Bad alignment, bad node: NULL, EINVAL, p untouched. */
	errno = 0;
	CHECK(krealloc_node_align(p, 6000, 48, GFP_KERNEL, NUMA_NO_NODE) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(krealloc_node(p, 6000, GFP_KERNEL, 1000) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(filled(p, 5000, 9));
	/* krealloc_node on node 0 (there is always one): contents kept. */
	q = (char *)krealloc_node(p, 7000, GFP_KERNEL, 0);
	CHECK(q && filled(q, 5000, 9));
	/* NULL allocates (aligned); 0 frees. */
	p = (char *)krealloc_node_align(NULL, 100, 256, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(p && aligned(p, 256));
	CHECK(krealloc_node_align(p, 0, 8, GFP_KERNEL, NUMA_NO_NODE) == ZERO_SIZE_PTR);
	kfree(q);

	/* kvrealloc: three arguments, any size. */
	char *v = (char *)kvmalloc(1000, GFP_KERNEL);
	CHECK(v);
	fill(v, 1000, 3);
	v = (char *)kvrealloc(v, 3u << 20, GFP_KERNEL);
	CHECK(v && filled(v, 1000, 3));
	v = (char *)kvrealloc_node(v, 64, GFP_KERNEL, 0);
	CHECK(v && filled(v, 64, 3));
	v = (char *)kvrealloc_node_align(v, 200, 128, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(v && aligned(v, 128) && filled(v, 64, 3));
	kvfree(v);

	/* kvmalloc_node_align: small, page-run and mapped sizes. */
	static const size_t sizes[] = { 24, 1000, 20000, 3u << 20 };
	static const size_t aligns[] = { 8, 512, 8192, 4096 };
	for (unsigned int i = 0; i < 4; i++) {
		void *m = kvmalloc_node_align(sizes[i], aligns[i], GFP_KERNEL, NUMA_NO_NODE);
		CHECK(m && aligned(m, aligns[i]) && ksize(m) >= sizes[i]);
		memset(m, 1, sizes[i]);
		kvfree(m);
	}
	void *m0 = kvmalloc_node_align(64, 64, GFP_KERNEL | __GFP_ZERO, 0);
	CHECK(m0 && aligned(m0, 64) && all_zero(m0, 64));
	kvfree(m0);
	errno = 0;
	CHECK(kvmalloc_node_align(64, 3, GFP_KERNEL, NUMA_NO_NODE) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(kvmalloc_node_align(0, 64, GFP_KERNEL, NUMA_NO_NODE) == ZERO_SIZE_PTR);

	/* With more than one node (USLUB_FAKE_NODES=2): an object on node 0
	 * moves when node 1 is asked for, and stays when node 0 is. */
	if (uslub_nr_nodes() > 1) {
		char *a = (char *)kmalloc_node(200, GFP_KERNEL, 0);
		CHECK(a);
		fill(a, 200, 5);
		CHECK(krealloc_node(a, 150, GFP_KERNEL, 0) == a);
		char *b = (char *)krealloc_node(a, 150, GFP_KERNEL, 1);
		CHECK(b && b != a && filled(b, 150, 5));
		CHECK(krealloc_node(b, 100, GFP_KERNEL, 1) == b);
		kfree(b);
		printf("kernel_api7: krealloc_node moved across %d nodes\n", uslub_nr_nodes());
	}
}

/* ------------------------------------------------------------------------
 * kmem_buckets
 * ---------------------------------------------------------------------- */
static unsigned long bucket_ctor_calls;

static void bucket_ctor(void *obj)
{
	bucket_ctor_calls++;
	memset(obj, 0x3c, 8);
}

static void test_buckets(void)
{
	static const size_t sizes[] = { 1, 8, 9, 64, 65, 96, 100, 128, 129, 192, 200,
					256, 300, 512, 513, 1024, 2000, 4096, 5000, 8192 };
	const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	void *objs[sizeof(sizes) / sizeof(sizes[0])];
	kmem_buckets *b = kmem_buckets_create("msgbuf", SLAB_ACCOUNT, 16, 100, NULL);

	CHECK(b != NULL);
	/* One cache per kmalloc class, named after the set and the class. */
	CHECK(strcmp(uslub_cache_name((*b)[1]), "msgbuf-96") == 0);
	CHECK(strcmp(uslub_cache_name((*b)[2]), "msgbuf-192") == 0);
	CHECK(strcmp(uslub_cache_name((*b)[3]), "msgbuf-8") == 0);
	CHECK(strcmp(uslub_cache_name((*b)[10]), "msgbuf-1k") == 0);
	CHECK(strcmp(uslub_cache_name((*b)[13]), "msgbuf-8k") == 0);
	for (unsigned int i = 1; i <= USLUB_KMALLOC_SHIFT_HIGH; i++) {
		struct uslub_slabinfo info;

		CHECK(uslub_cache_slabinfo((*b)[i], &info) == 0);
		CHECK((*b)[i] != uslub_kmalloc_cache(info.object_size));
		CHECK_EQ(info.object_size, uslub_kmalloc_size_roundup(info.object_size));
		/* the window [16, +100), clipped to the class */
		if (info.object_size <= 16) {
			CHECK_EQ(info.usersize, 0);
		} else {
			CHECK_EQ(info.useroffset, 16);
			CHECK_EQ(info.usersize, info.object_size - 16 < 100 ?
					 info.object_size - 16 : 100);
		}
	}

	/* Each size from its own class cache of the set; kmalloc's untouched. */
	for (size_t i = 0; i < nsizes; i++) {
		struct kmem_cache *km = uslub_kmalloc_cache(sizes[i]);
		unsigned long km_before = live_objs(km);
		size_t rounded = kmalloc_size_roundup(sizes[i]);
		struct kmem_cache *mine = NULL;

		for (unsigned int c = 1; c <= USLUB_KMALLOC_SHIFT_HIGH; c++)
			if (uslub_cache_object_size((*b)[c]) == rounded)
				mine = (*b)[c];
		CHECK(mine != NULL);
		unsigned long before = live_objs(mine);
		objs[i] = kmem_buckets_alloc(b, sizes[i], GFP_KERNEL);
		CHECK(objs[i] != NULL);
		CHECK_EQ(ksize(objs[i]), rounded);
		CHECK_EQ(live_objs(mine), before + 1);
		CHECK_EQ(live_objs(km), km_before);
		memset(objs[i], 0x77, sizes[i]);
	}
	/* Power-of-two classes are naturally aligned, as kmalloc's. */
	CHECK(aligned(objs[15], 1024) && aligned(objs[19], 4096));
	for (size_t i = 0; i < nsizes; i++)
		kfree(objs[i]);
	for (unsigned int c = 1; c <= USLUB_KMALLOC_SHIFT_HIGH; c++)
		CHECK_EQ(live_objs((*b)[c]), 0);

	/* Above 8 KiB: as kmalloc (a page run, a mapping); zeroing; the
	 * other entry points; the NULL set is kmalloc. */
	void *large = kmem_buckets_alloc(b, 50000, GFP_KERNEL | __GFP_ZERO);
	void *huge = kmem_buckets_valloc(b, 3u << 20, GFP_KERNEL);
	void *tc = kmem_buckets_alloc_track_caller(b, 40, GFP_KERNEL | __GFP_ZERO);
	CHECK(large && huge && tc && all_zero(large, 50000) && all_zero(tc, 40));
	CHECK_EQ(live_objs((*b)[6]), 1);
	kfree(large);
	kvfree(huge);
	kfree(tc);
	struct kmem_cache *k64 = uslub_kmalloc_cache(64);
	unsigned long k64_before = live_objs(k64);
	void *viak = kmem_buckets_alloc(NULL, 64, GFP_KERNEL);
	CHECK(viak && live_objs(k64) == k64_before + 1);
	kfree(viak);
	CHECK(kmem_buckets_alloc(b, 0, GFP_KERNEL) == ZERO_SIZE_PTR);
	/* uslub's own entry takes a node: a real one is served from the set,
	 * one that does not exist is refused. */
	void *on0 = uslub_kmem_buckets_alloc(b, 64, 0, 0);
	CHECK(on0 && live_objs((*b)[6]) == 1);
	kfree(on0);
	errno = 0;
	CHECK(uslub_kmem_buckets_alloc(b, 64, 0, 99) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* A second set is a different set of caches; a ctor runs. */
	kmem_buckets *cb = kmem_buckets_create("ctorbuf", 0, 0, 0, bucket_ctor);
	CHECK(cb && cb != b && (*cb)[7] != (*b)[7]);
	unsigned char *co = (unsigned char *)kmem_buckets_alloc(cb, 100, GFP_KERNEL);
	CHECK(co && bucket_ctor_calls > 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(co[i], 0x3c);
	kfree(co);

	/* Failures: a bad name; SLAB_TYPESAFE_BY_RCU is not supported. */
	errno = 0;
	CHECK(kmem_buckets_create("", 0, 0, 0, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
}

/* ------------------------------------------------------------------------
 * bulk (int), prefill 0, freeptr and usercopy divergences, odds and ends
 * ---------------------------------------------------------------------- */
static void test_bulk_int(void)
{
	struct kmem_cache *s = kmem_cache_create("api7_bulk", 48, 0, 0, NULL);
	void *objs[16];

	CHECK(s);
	CHECK(_Generic(kmem_cache_alloc_bulk(s, GFP_KERNEL, 16, objs), int: 1, default: 0));
	CHECK(_Generic(kmem_cache_alloc_bulk_noprof(s, GFP_KERNEL, 16, objs), int: 1, default: 0));
	int got = kmem_cache_alloc_bulk(s, GFP_KERNEL, 16, objs);
	CHECK_EQ(got, 16);
	CHECK_EQ(live_objs(s), 16);
	kmem_cache_free_bulk(s, 16, objs);
	CHECK_EQ(kmem_cache_alloc_bulk(s, GFP_KERNEL, 0, objs), 0);
	CHECK_EQ(live_objs(s), 0);
	/* any gfp, as the kernel's bulk allocation takes (the non-blocking
	 * masks included); __GFP_ZERO zeroes every object */
	const gfp_t masks[] = { GFP_NOWAIT, GFP_ATOMIC, __GFP_NOWARN, GFP_KERNEL | __GFP_NOWARN,
				GFP_NOWAIT | __GFP_ZERO, GFP_ATOMIC | __GFP_ZERO | __GFP_NOWARN, 0 };
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		memset(objs, 0, sizeof(objs));
		CHECK_EQ(kmem_cache_alloc_bulk(s, masks[m], 16, objs), 16);
		CHECK_EQ(live_objs(s), 16);
		for (int i = 0; i < 16; i++) {
			CHECK(objs[i]);
			if (masks[m] & __GFP_ZERO)
				for (int b = 0; b < 48; b++)
					CHECK(((unsigned char *)objs[i])[b] == 0);
			memset(objs[i], 0xa5, 48);
		}
		kmem_cache_free_bulk(s, 16, objs);
		CHECK_EQ(live_objs(s), 0);
	}
	kmem_cache_destroy(s);
}

static void fp_ctor(void *obj)
{
	memset(obj, 0, 64);
}

static void test_divergences(void)
{
	struct kmem_cache *s;

	/* prefill of 0 objects: NULL, as the kernel. */
	s = kmem_cache_create("api7_sheaf", 64, (&(struct kmem_cache_args){ .sheaf_capacity = 8 }),
			      0);
	CHECK(s);
	CHECK(kmem_cache_prefill_sheaf(s, GFP_KERNEL, 0) == NULL);
	struct slab_sheaf *sh = kmem_cache_prefill_sheaf(s, GFP_KERNEL, 1);
	CHECK(sh && kmem_cache_sheaf_size(sh) >= 1);
	kmem_cache_return_sheaf(s, GFP_KERNEL, sh);
	kmem_cache_destroy(s);

	/* use_freeptr_offset without a ctor: EINVAL (compat and uslub API). */
	errno = 0;
	s = kmem_cache_create("api7_fp", 64, (&(struct kmem_cache_args){
					.freeptr_offset = 8, .use_freeptr_offset = true }), 0);
	CHECK(s == NULL);
	CHECK_EQ(errno, EINVAL);
	struct uslub_cache_args ua;
	memset(&ua, 0, sizeof(ua));
	ua.use_freeptr_offset = 1;
	ua.freeptr_offset = 8;
	errno = 0;
	CHECK(uslub_cache_create_args("api7_fp_u", 64, &ua, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* with one: made, free pointer where asked (unless slub_debug moves it) */
	s = kmem_cache_create("api7_fp_ctor", 64, (&(struct kmem_cache_args){
					.freeptr_offset = 8, .use_freeptr_offset = true,
					.ctor = fp_ctor }), 0);
	CHECK(s);
	{
		struct uslub_slabinfo info;

		CHECK(uslub_cache_slabinfo(s, &info) == 0);
		CHECK(info.debug[0] || info.offset == 8);
	}
	kmem_cache_destroy(s);

	/* A usercopy window outside the object: the kernel WARNs and drops
	 * the window ("fail closed"); uslub's own API refuses it. */
	s = kmem_cache_create("api7_uc", 64, (&(struct kmem_cache_args){
					.useroffset = 60, .usersize = 16 }), 0);
	CHECK(s != NULL);
	{
		struct uslub_slabinfo info;

		CHECK(uslub_cache_slabinfo(s, &info) == 0);
		CHECK_EQ(info.useroffset, 0);
		CHECK_EQ(info.usersize, 0);
	}
	void *o = kmem_cache_alloc(s, GFP_KERNEL);
	CHECK(o);
	kmem_cache_free(s, o);
	kmem_cache_destroy(s);
	s = kmem_cache_create_usercopy("api7_uc2", 64, 0, 0, 8, 32, NULL);
	CHECK(s);
	{
		struct uslub_slabinfo info;

		CHECK(uslub_cache_slabinfo(s, &info) == 0);
		CHECK_EQ(info.useroffset, 8);
		CHECK_EQ(info.usersize, 32);
	}
	kmem_cache_destroy(s);
	s = kmem_cache_create_usercopy("api7_uc3", 64, 0, 0, 0xfffffff0u, 0x20, NULL);
	CHECK(s != NULL);        /* an offset + size that wraps: dropped too */
	kmem_cache_destroy(s);
	memset(&ua, 0, sizeof(ua));
	ua.useroffset = 60;
	ua.usersize = 16;
	errno = 0;
	CHECK(uslub_cache_create_args("api7_uc_u", 64, &ua, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
}

static void test_misc(void)
{
	struct kmem_cache *k64 = uslub_kmalloc_cache(64);
	unsigned long before = live_objs(k64);

	{
		char *secret __free(kfree_sensitive) = (char *)kmalloc(64, GFP_KERNEL);

		CHECK(secret);
		memcpy(secret, "hunter2", 8);
		CHECK_EQ(live_objs(k64), before + 1);
	}
	CHECK_EQ(live_objs(k64), before);
	{
		char *gone __free(kfree_sensitive) = (char *)kmalloc(64, GFP_KERNEL);
		char *kept = no_free_ptr(gone);

		CHECK(kept && gone == NULL);
		kfree_sensitive(kept);
	}
	CHECK_EQ(live_objs(k64), before);

	CHECK(slab_is_available());
	CHECK(gfpflags_allow_spinning(GFP_KERNEL));
	CHECK(gfpflags_allow_spinning(GFP_ATOMIC));
	CHECK(gfpflags_allow_spinning(GFP_NOWAIT));
	CHECK(gfpflags_allow_spinning(GFP_NOIO));
	CHECK(!gfpflags_allow_spinning(0));
	CHECK(!gfpflags_allow_spinning(__GFP_NOWARN | __GFP_ZERO));
	CHECK(!gfpflags_allow_spinning(GFP_KERNEL & ~__GFP_RECLAIM));
	CHECK(!gfpflags_allow_blocking(__GFP_KSWAPD_RECLAIM));
	CHECK_EQ(uslub_compat_gfp(__GFP_NOWARN), USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN);
	CHECK_EQ(__GFP_BITS_MASK & GFP_KERNEL, GFP_KERNEL);
	CHECK_EQ(GFP_ZONEMASK & GFP_KERNEL, 0);
	CHECK_EQ(default_gfp(), GFP_KERNEL);
	CHECK_EQ(default_gfp(GFP_ATOMIC), GFP_ATOMIC);
}

/* 7.x's remaining _noprof names and helpers */
static void test_noprof_names(void)
{
	struct kmem_cache *c = kmem_cache_create("api7_lru", 40, NULL, 0);
	void *a = kmalloc_track_caller_noprof(24, GFP_KERNEL, 0);
	void *b = kmalloc_node_track_caller_noprof(24, GFP_KERNEL, NUMA_NO_NODE, 0);
	int *arr = kmalloc_array_node_noprof(10, sizeof(int), GFP_KERNEL | __GFP_ZERO, NUMA_NO_NODE);
	int *z = kvcalloc_noprof(100, sizeof(int), GFP_KERNEL);
	void *v = kvmalloc_noprof(5000, GFP_KERNEL);
	void *vn = kvmalloc_node_noprof(100, GFP_KERNEL, NUMA_NO_NODE);
	void *va = kvmalloc_array_noprof(7, 9, GFP_KERNEL);
	void *o = kmem_cache_alloc_lru_noprof(c, NULL, GFP_KERNEL);

	CHECK(a && b && arr && z && v && vn && va && o && c);
	CHECK(all_zero(arr, 10 * sizeof(int)) && all_zero(z, 100 * sizeof(int)));
	CHECK(ksize(v) >= 5000 && ksize(va) >= 63);
	CHECK(kmalloc_array_node_noprof(SIZE_MAX / 2, 4, GFP_KERNEL, NUMA_NO_NODE) == NULL);
	CHECK(kvcalloc_node_noprof(SIZE_MAX / 2, 4, GFP_KERNEL, NUMA_NO_NODE) == NULL);
	memset(arr, 7, 10 * sizeof(int));
	int *arr2 = krealloc_array_noprof(arr, 20, sizeof(int), GFP_KERNEL);
	CHECK(arr2 && ksize(arr2) >= 20 * sizeof(int) && arr2[9] == 0x07070707);
	CHECK(krealloc_array_noprof(arr2, SIZE_MAX / 2, 4, GFP_KERNEL) == NULL);  /* arr2 kept */
	void *al = kvrealloc_node_align_noprof(NULL, 300, 256, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(al && ((uintptr_t)al & 255) == 0);
	struct kmem_cache_args args = { .align = 128 };
	struct kmem_cache *c2 = __kmem_cache_create_args("api7_direct", 100, &args, 0);
	void *o2 = c2 ? kmem_cache_alloc(c2, GFP_KERNEL) : NULL;
	CHECK(o2 && ((uintptr_t)o2 & 127) == 0);
	CHECK(arch_slab_minalign() >= sizeof(long long));
	kmem_cache_free(c2, o2);
	kmem_cache_destroy(c2);
	kmem_cache_free(c, o);
	kmem_cache_destroy(c);
	kfree(a);
	kfree(b);
	kfree(arr2);
	kvfree(z);
	kvfree(v);
	kvfree(vn);
	kvfree(va);
	kvfree(al);
	printf("noprof names: ok\n");
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_noprof_names();
	test_typed();
	test_typed_tags();
	test_realloc();
	test_buckets();
	test_bulk_int();
	test_bulk_bool();
	test_divergences();
	test_misc();
	CHECK_EQ(uslub_error_count(), 0);
	printf("kernel_api7: ok\n");
	return 0;
}
