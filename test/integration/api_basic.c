/*
 * api_basic: create/alloc/free/destroy through the public API only.
 *   - objects are distinct, owned, and writable over their full size
 *     without corrupting each other;
 *   - alignment (align 8..4096, HWCACHE_ALIGN -> 64 for sizes >= 33);
 *   - ctor runs once per object slot when a slab is created, never on
 *     reuse, and objects come back in their constructed state;
 *   - GFP_ZERO zeroes; name/object_size; uslub_owns.
 */
#include "check.h"

#include <stdatomic.h>

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

static unsigned char pat(size_t obj, size_t i)
{
	return (unsigned char)(obj * 131u + i * 7u + 1u);
}

static void fill(void *p, size_t size, size_t id)
{
	unsigned char *c = p;
	for (size_t i = 0; i < size; i++)
		c[i] = pat(id, i);
}

static void verify(const void *p, size_t size, size_t id, int line)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < size; i++)
		if (c[i] != pat(id, i))
			test_fail(__FILE__, line, "object %zu (%p) byte %zu is %#x, expected %#x",
				  id, p, i, c[i], pat(id, i));
}

/*
 * Allocate n objects of s, check each is aligned to @align, owned, not
 * overlapping any other, fill and verify all, free all.
 */
static void exercise(uslub_cache_t *s, size_t size, size_t align, size_t n)
{
	void **v = calloc(n, sizeof(*v));
	void **sorted = calloc(n, sizeof(*sorted));
	CHECK(v && sorted);
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, USLUB_GFP_KERNEL);
		CHECK_MSG(v[i], "alloc %zu of size %zu align %zu returned NULL", i, size, align);
		CHECK_MSG((uintptr_t)v[i] % align == 0,
			  "object %p of size %zu not aligned to %zu", v[i], size, align);
		CHECK(uslub_owns(v[i]));
		CHECK(uslub_owns((char *)v[i] + size - 1));
		fill(v[i], size, i);
	}
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), cmp_ptr);
	for (size_t i = 1; i < n; i++)
		CHECK_MSG((uintptr_t)sorted[i] - (uintptr_t)sorted[i - 1] >= size,
			  "objects %p and %p (size %zu) overlap or repeat", sorted[i - 1],
			  sorted[i], size);
	for (size_t i = 0; i < n; i++)
		verify(v[i], size, i, __LINE__);
	/* free in an interleaved order: odd first, then even */
	for (size_t i = 1; i < n; i += 2)
		uslub_cache_free(s, v[i]);
	for (size_t i = 0; i < n; i += 2) {
		verify(v[i], size, i, __LINE__);
		uslub_cache_free(s, v[i]);
	}
	free(v);
	free(sorted);
}

static void test_basic(void)
{
	unsigned long err0 = uslub_error_count();
	uslub_cache_t *s = uslub_cache_create("api-basic-100", 100, 0, 0, NULL);
	CHECK(s);
	CHECK(strcmp(uslub_cache_name(s), "api-basic-100") == 0);
	CHECK_EQU(uslub_cache_object_size(s), 100);

	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(si.name && strcmp(si.name, "api-basic-100") == 0);
	CHECK_EQU(si.object_size, 100);
	CHECK(si.size >= si.object_size);
	CHECK(si.objs_per_slab >= 1);
	CHECK_EQU(si.pages_per_slab, 1u << si.order);
	CHECK(si.objs_per_slab * si.size <= (size_t)si.pages_per_slab * USLUB_PAGE_SIZE);
	CHECK_EQU(si.num_slabs, 0);
	CHECK_EQU(si.live_objs, 0);

	/* natural word alignment when align == 0 */
	exercise(s, 100, sizeof(void *), 1000);

	void *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	si = slabinfo_get(s);
	CHECK_EQU(si.live_objs, 1);
	CHECK(si.num_slabs >= 1);
	CHECK_EQU(si.num_objs, si.num_slabs * si.objs_per_slab);
	CHECK(si.active_objs >= 1);
	uslub_cache_free(s, p);
	si = slabinfo_get(s);
	CHECK_EQU(si.live_objs, 0);

	/* node 0 and NUMA_NO_NODE allocations */
	void *a = uslub_cache_alloc_node(s, 0, 0);
	void *b = uslub_cache_alloc_node(s, 0, USLUB_NUMA_NO_NODE);
	CHECK(a && b && a != b);
	CHECK(uslub_owns(a) && uslub_owns(b));
	memset(a, 0x11, 100);
	memset(b, 0x22, 100);
	for (int i = 0; i < 100; i++)
		CHECK(((unsigned char *)a)[i] == 0x11 && ((unsigned char *)b)[i] == 0x22);
	uslub_cache_free(s, a);
	uslub_cache_free(s, b);

	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQU(uslub_error_count(), err0);

	/* a range of sizes, including tiny and multi-page objects */
	static const size_t sizes[] = { 1, 2, 7, 8, 9, 16, 24, 40, 64, 96, 128, 192, 250,
					512, 1000, 2048, 4095, 4096, 4097, 10000, 70000 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		char name[64];
		snprintf(name, sizeof(name), "api-size-%zu", sizes[k]);
		s = uslub_cache_create(name, sizes[k], 0, 0, NULL);
		CHECK_MSG(s, "create size %zu failed: %s", sizes[k], strerror(errno));
		CHECK_EQU(uslub_cache_object_size(s), sizes[k]);
		CHECK(strcmp(uslub_cache_name(s), name) == 0);
		size_t n = sizes[k] > 8192 ? 40 : 300;
		exercise(s, sizes[k], 1, n);
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	CHECK_EQU(uslub_error_count(), err0);
}

static void test_align(void)
{
	static const size_t sizes[] = { 1, 8, 24, 33, 100, 1000, 3000 };
	/* 8..4096, and beyond a page (up to 64 KiB) */
	for (size_t align = 8; align <= 65536; align <<= 1) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			char name[64];
			snprintf(name, sizeof(name), "api-align-%zu-%zu", align, sizes[k]);
			uslub_cache_t *s = uslub_cache_create(name, sizes[k], align, 0, NULL);
			CHECK_MSG(s, "create size %zu align %zu failed: %s", sizes[k], align,
				  strerror(errno));
			struct uslub_slabinfo si = slabinfo_get(s);
			CHECK_MSG(si.align >= align && si.size % align == 0,
				  "size %zu align %zu: slabinfo align %zu size %zu", sizes[k], align,
				  si.align, si.size);
			exercise(s, sizes[k], align, align > 4096 ? 16 : 64);
			CHECK_EQ(uslub_cache_validate(s), 0);
			CHECK_EQ(uslub_cache_destroy(s), 0);
		}
	}
	/* HWCACHE_ALIGN: cache-line (64 B) alignment for objects >= 33 bytes */
	static const size_t hw[] = { 33, 40, 48, 63, 64, 65, 100, 200, 1000, 5000 };
	for (size_t k = 0; k < sizeof(hw) / sizeof(hw[0]); k++) {
		char name[64];
		snprintf(name, sizeof(name), "api-hwalign-%zu", hw[k]);
		uslub_cache_t *s = uslub_cache_create(name, hw[k], 0, USLUB_HWCACHE_ALIGN, NULL);
		CHECK_MSG(s, "create HWCACHE_ALIGN size %zu failed", hw[k]);
		exercise(s, hw[k], 64, 128);
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	/* HWCACHE_ALIGN with an explicit smaller align still gives 64 */
	uslub_cache_t *s = uslub_cache_create("api-hwalign-8", 200, 8, USLUB_HWCACHE_ALIGN, NULL);
	CHECK(s);
	exercise(s, 200, 64, 128);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	/* the other valid flags are accepted */
	s = uslub_cache_create("api-flags", 72, 0,
			       USLUB_NO_MERGE | USLUB_ACCOUNT | USLUB_HWCACHE_ALIGN, NULL);
	CHECK(s);
	exercise(s, 72, 64, 100);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ---------------------------------------------------------------------- */
#define CTOR_SIZE 200
#define CTOR_MAGIC 0xc0ffee1234abcdefull
#define CTOR_MAX_CALLS 100000

static atomic_long ctor_calls;
static void *ctor_addrs[CTOR_MAX_CALLS];

static void ctor_fn(void *p)
{
	long i = atomic_fetch_add(&ctor_calls, 1);
	if (i < CTOR_MAX_CALLS)
		ctor_addrs[i] = p;
	uint64_t m = CTOR_MAGIC;
	memcpy(p, &m, 8);
	memset((char *)p + 8, 0x5a, CTOR_SIZE - 8);
}

static void check_constructed(const void *p, int line)
{
	uint64_t m;
	memcpy(&m, p, 8);
	if (m != CTOR_MAGIC)
		test_fail(__FILE__, line, "object %p: ctor magic is %#" PRIx64, p, m);
	const unsigned char *c = p;
	for (size_t i = 8; i < CTOR_SIZE; i++)
		if (c[i] != 0x5a)
			test_fail(__FILE__, line,
				  "object %p byte %zu is %#x: not in its constructed state", p, i,
				  c[i]);
}

static bool ctor_saw(void *p)
{
	long n = atomic_load(&ctor_calls);
	if (n > CTOR_MAX_CALLS)
		n = CTOR_MAX_CALLS;
	for (long i = 0; i < n; i++)
		if (ctor_addrs[i] == p)
			return true;
	return false;
}

static void check_ctor_count(uslub_cache_t *s, unsigned int objs_per_slab, int line)
{
	uint64_t slabs = stat_get(s, USLUB_ALLOC_SLAB);
	uint64_t fb = stat_get(s, USLUB_ORDER_FALLBACK);
	long calls = atomic_load(&ctor_calls);
	if (fb == 0) {
		if ((uint64_t)calls != slabs * objs_per_slab)
			test_fail(__FILE__, line,
				  "ctor ran %ld times for %" PRIu64 " slabs of %u objects", calls,
				  slabs, objs_per_slab);
	} else if ((uint64_t)calls > slabs * objs_per_slab || (uint64_t)calls < slabs) {
		test_fail(__FILE__, line, "ctor ran %ld times for %" PRIu64 " slabs", calls, slabs);
	}
}

static void test_ctor(void)
{
	atomic_store(&ctor_calls, 0);
	uslub_cache_t *s = uslub_cache_create("api-ctor", CTOR_SIZE, 0, 0, ctor_fn);
	CHECK(s);
	CHECK_EQ(atomic_load(&ctor_calls), 0); /* no slab yet, no ctor call */
	struct uslub_slabinfo si = slabinfo_get(s);
	unsigned int ops = si.objs_per_slab;
	CHECK(ops >= 1);
	size_t n = 3 * ops + 5;
	CHECK(n < CTOR_MAX_CALLS / 4);
	void **v = calloc(n, sizeof(*v));
	CHECK(v);

	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		CHECK(v[i]);
		check_constructed(v[i], __LINE__);
		CHECK_MSG(ctor_saw(v[i]), "object %p handed out without its ctor having run", v[i]);
		/* the user may use it, as long as it goes back constructed */
		memset((char *)v[i] + 8, 0xee, CTOR_SIZE - 8);
	}
	check_ctor_count(s, ops, __LINE__);
	si = slabinfo_get(s);
	CHECK_EQ(atomic_load(&ctor_calls), (long)si.num_objs);

	/* each slot constructed exactly once: no address twice */
	long calls = atomic_load(&ctor_calls);
	void **sorted = malloc((size_t)calls * sizeof(*sorted));
	CHECK(sorted);
	memcpy(sorted, ctor_addrs, (size_t)calls * sizeof(*sorted));
	qsort(sorted, (size_t)calls, sizeof(*sorted), cmp_ptr);
	for (long i = 1; i < calls; i++)
		CHECK_MSG(sorted[i] != sorted[i - 1], "ctor ran twice on %p", sorted[i]);
	free(sorted);

	/* restore the constructed state, free, reallocate: no ctor on reuse */
	for (size_t i = 0; i < n; i++)
		memset((char *)v[i] + 8, 0x5a, CTOR_SIZE - 8);
	uint64_t slabs0 = stat_get(s, USLUB_ALLOC_SLAB);
	long calls0 = atomic_load(&ctor_calls);
	uslub_cache_free(s, v[n / 2]);
	void *again = uslub_cache_alloc(s, 0);
	CHECK(again);
	check_constructed(again, __LINE__);
	CHECK_EQU(stat_get(s, USLUB_ALLOC_SLAB), slabs0);
	CHECK_EQ(atomic_load(&ctor_calls), calls0);
	v[n / 2] = again;

	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < n; i++)
			uslub_cache_free(s, v[i]);
		for (size_t i = 0; i < n; i++) {
			v[i] = uslub_cache_alloc(s, 0);
			CHECK(v[i]);
			check_constructed(v[i], __LINE__);
		}
		/* a slab freed when empty and made again is constructed again; any
		 * other object was reused without its ctor */
		check_ctor_count(s, ops, __LINE__);
		if (stat_get(s, USLUB_ALLOC_SLAB) == slabs0)
			CHECK_EQ(atomic_load(&ctor_calls), calls0);
	}
	for (size_t i = 0; i < n; i++)
		uslub_cache_free(s, v[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(v);
}

static void test_zero(void)
{
	const size_t size = 300, n = 200;
	uslub_cache_t *s = uslub_cache_create("api-zero", size, 0, 0, NULL);
	CHECK(s);
	void **v = calloc(n, sizeof(*v));
	CHECK(v);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < n; i++) {
			v[i] = uslub_cache_alloc(s, 0);
			CHECK(v[i]);
			memset(v[i], 0xff, size);
		}
		for (size_t i = 0; i < n; i++)
			uslub_cache_free(s, v[i]);
		for (size_t i = 0; i < n; i++) {
			v[i] = (i & 1) ? uslub_cache_alloc(s, USLUB_GFP_ZERO)
				       : uslub_cache_alloc_node(s, USLUB_GFP_ZERO,
								USLUB_NUMA_NO_NODE);
			CHECK(v[i]);
			const unsigned char *c = v[i];
			for (size_t b = 0; b < size; b++)
				CHECK_MSG(c[b] == 0, "GFP_ZERO object %p byte %zu is %#x", v[i], b,
					  c[b]);
		}
		for (size_t i = 0; i < n; i++)
			uslub_cache_free(s, v[i]);
	}
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(v);
}

/* Every allocation flag is accepted (none may fail with memory to spare). */
static void test_gfp_flags(void)
{
	static const uslub_gfp_t flags[] = {
		USLUB_GFP_KERNEL, USLUB_GFP_NOWAIT, USLUB_GFP_ATOMIC, USLUB_GFP_NOFAIL,
		USLUB_GFP_ACCOUNT, USLUB_GFP_NOWARN, USLUB_GFP_ATOMIC | USLUB_GFP_NOWARN,
		USLUB_GFP_NOFAIL | USLUB_GFP_ZERO, USLUB_GFP_NOWAIT | USLUB_GFP_ZERO,
	};
	const size_t n = sizeof(flags) / sizeof(flags[0]);
	uslub_cache_t *s = uslub_cache_create("api-gfp", 160, 0, USLUB_ACCOUNT, NULL);
	CHECK(s);
	void *v[sizeof(flags) / sizeof(flags[0])][40];
	for (size_t f = 0; f < n; f++)
		for (int i = 0; i < 40; i++) {
			v[f][i] = (i & 1) ? uslub_cache_alloc(s, flags[f])
					  : uslub_cache_alloc_node(s, flags[f], 0);
			CHECK_MSG(v[f][i], "alloc with gfp %#x failed", flags[f]);
			if (flags[f] & USLUB_GFP_ZERO)
				for (int b = 0; b < 160; b++)
					CHECK(((unsigned char *)v[f][i])[b] == 0);
			memset(v[f][i], (int)f + 1, 160);
		}
	for (size_t f = 0; f < n; f++)
		for (int i = 0; i < 40; i++) {
			for (int b = 0; b < 160; b++)
				CHECK(((unsigned char *)v[f][i])[b] == (unsigned char)(f + 1));
			uslub_cache_free(s, v[f][i]);
		}
	CHECK_EQU(slabinfo_get(s).live_objs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

static int global_var;

static void test_owns(void)
{
	int stack_var = 0;
	void *m = malloc(64);
	CHECK(m);
	CHECK(!uslub_owns(&stack_var));
	CHECK(!uslub_owns(m));
	CHECK(!uslub_owns(&global_var));
	CHECK(!uslub_owns(NULL));
	CHECK(!uslub_owns((void *)test_owns));
	uslub_cache_t *s = uslub_cache_create("api-owns", 48, 0, 0, NULL);
	CHECK(s);
	void *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	CHECK(uslub_owns(p));
	CHECK(uslub_owns((char *)p + 47));
	CHECK(!uslub_owns(&stack_var));
	CHECK(!uslub_owns(m));
	/* virt_to_cache: the object's cache, anywhere inside it; a kmalloc
	 * object's size class; nothing for memory that is not a live slab */
	CHECK(uslub_object_cache(p) == s);
	CHECK(uslub_object_cache((char *)p + 47) == s);
	void *k = uslub_kmalloc(100, 0);
	CHECK(k && uslub_object_cache(k) == uslub_kmalloc_cache(100));
	void *big = uslub_kmalloc(4u << 20, 0);
	CHECK(big && uslub_object_cache(big) == NULL);
	CHECK(uslub_object_cache(NULL) == NULL && uslub_object_cache(&stack_var) == NULL);
	CHECK(uslub_object_cache(m) == NULL);
	uslub_kfree(k);
	uslub_kfree(big);
	uslub_cache_free(s, p);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	free(m);
}

int main(void)
{
	unsigned long err0 = uslub_error_count();
	test_owns();
	test_basic();
	test_align();
	test_ctor();
	test_zero();
	test_gfp_flags();
	CHECK_EQU(uslub_error_count(), err0);
	printf("api_basic: ok\n");
	return 0;
}
