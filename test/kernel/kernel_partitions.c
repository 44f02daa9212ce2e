/*
 * kernel_partitions: the kmalloc partition token plumbing of
 * <uslub/slab.h> (Linux 7.2's kmalloc_token_t), used as mm/slab.h and
 * kernel wrappers use it: a wrapper declared with DECL_TOKEN_PARAMS and
 * called through a macro that passes __kmalloc_token(), the token-taking
 * __kmalloc*_noprof / _kmalloc*_noprof names, krealloc_node_align_noprof()
 * in its 7.2 (token) and 6.17 (no token) forms, krealloc_array's. Each
 * allocation is checked (size, contents kept, zeroing) and freed; run
 * with and without USLUB_KMALLOC_PARTITIONS=1 (placement itself is
 * checked by unit_kmalloc_partitions).
 */
#include <uslub/slab.h>

#include <string.h>

#define KCHECK_PROG "kernel_partitions"
#include "kcheck.h"

/* A kernel-style wrapper that takes the caller's token. */
static void *my_alloc_noprof(DECL_TOKEN_PARAMS(size, token), gfp_t gfp)
{
	return __kmalloc_noprof(PASS_TOKEN_PARAMS(size, token), gfp);
}
#define my_alloc(size, gfp) \
	alloc_hooks(my_alloc_noprof(PASS_TOKEN_PARAMS((size), __kmalloc_token(size)), (gfp)))

static void *my_node_alloc(DECL_KMALLOC_PARAMS(size, b, token), gfp_t gfp, int node)
{
	return __kmalloc_node_noprof(PASS_KMALLOC_PARAMS(size, b, token), gfp, node);
}

int main(void)
{
	kmalloc_token_t a = __kmalloc_token(64), b = __kmalloc_token(64);
	CHECK(KMALLOC_PARTITION_CACHES_NR == 15);
	/* random mode: two sites, two tokens (typed mode: the same type) */
#ifndef USLUB_KMALLOC_TYPED
	CHECK(a.v != b.v && a.v >= USLUB_KMALLOC_PARTITIONS);
#else
	CHECK(a.v < USLUB_KMALLOC_PARTITIONS && b.v < USLUB_KMALLOC_PARTITIONS);
#endif
	char *p = my_alloc(100, GFP_KERNEL | __GFP_ZERO);
	CHECK(p && ksize(p) == 128 && !p[99]);
	char *q = my_node_alloc(PASS_KMALLOC_PARAMS(40, NULL, __kmalloc_token(40)), GFP_KERNEL,
				NUMA_NO_NODE);
	CHECK(q && ksize(q) == 64);
	kmem_buckets *set = kmem_buckets_create("kpart_set", 0, 0, 0, NULL);
	CHECK(set);
	void *r = my_node_alloc(PASS_KMALLOC_PARAMS(40, set, a), GFP_KERNEL, NUMA_NO_NODE);
	CHECK(r && ksize(r) == 64);
	void *s = _kmalloc_noprof(200, GFP_KERNEL, __kmalloc_token(200));
	void *t = _kmalloc_node_noprof(8, GFP_KERNEL, NUMA_NO_NODE, b);
	void *u = _kmalloc_array_noprof(4, 16, GFP_KERNEL, __kmalloc_token(4, 16));
	CHECK(s && t && u && ksize(s) == 256 && ksize(u) == 64);
	CHECK(!_kmalloc_array_noprof(SIZE_MAX, 2, GFP_KERNEL, a) && errno == ENOMEM);
	void *v = __kmalloc_node_track_caller_noprof(PASS_KMALLOC_PARAMS(30, NULL, a), GFP_KERNEL,
						     NUMA_NO_NODE, 0);
	void *w = __kvmalloc_node_noprof(PASS_KMALLOC_PARAMS(50, NULL, b), 64, GFP_KERNEL,
					 NUMA_NO_NODE);
	CHECK(v && w && !((uintptr_t)w & 63));
	void *x = _kmalloc_nolock_noprof(PASS_TOKEN_PARAMS(32, a), __GFP_ZERO, NUMA_NO_NODE);
	CHECK(x);

	/* krealloc_node_align_noprof: 7.2's six arguments, then 6.17's five */
	memset(p, 0x5a, 100);
	p = krealloc_node_align_noprof(p, PASS_TOKEN_PARAMS(3000, __kmalloc_token(3000)), 1,
				       GFP_KERNEL, NUMA_NO_NODE);
	CHECK(p && ksize(p) == 4096 && p[0] == 0x5a && p[99] == 0x5a);
	p = krealloc_node_align_noprof(p, 5000, 1, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(p && ksize(p) == 8192 && p[99] == 0x5a);
	q = _krealloc_array_noprof(q, 10, 100, GFP_KERNEL, __kmalloc_token(10, 100));
	CHECK(q && ksize(q) == 1024);

	void *all[] = { p, q, r, s, t, u, v, w, x };
	kfree_bulk(sizeof(all) / sizeof(all[0]), all);
	printf("kernel_partitions: ok (USLUB_KMALLOC_PARTITIONS=%s)\n",
	       getenv("USLUB_KMALLOC_PARTITIONS") ? getenv("USLUB_KMALLOC_PARTITIONS") : "unset");
	return 0;
}
