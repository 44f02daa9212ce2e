/*
 * Sampled profiling's free side, white box (cache/sample.c). Run by CTest
 * with USLUB_PROFILING=sample:1: every object of stride >= 20 bytes is
 * sampled (p = 1, weight exactly its stride and 1 call), so allocinfo's
 * figures are exact and each check below is deterministic. For each free
 * path (kmem_cache_free, kfree, bulk free with and without the cache,
 * kfree_nolock, a cpu-slab cache, sheaf and cpu-slab frees from another
 * thread):
 *   - after the allocations, the site lists exactly n objects and n * size
 *     bytes, and every page of each object's slab lacks PG_slab_page (so
 *     the inline frees miss to the paths that untag);
 *   - a slab keeps the bit cleared while any of its sampled objects lives
 *     and gets it back (head and tails) when its last one is freed;
 *   - after the frees the site is not listed (weights added and
 *     subtracted match) and, after a shrink, no slab is left.
 * Also: uslub_profiling_enabled() == 2 and the interval is 1; a cache's
 * hooks stay off (plain fast paths); a cpu slab's free range reopens when
 * its last sampled object is freed.
 */
#include "cache/internal.h"
#include "unit.h"
#include <pthread.h>
#include <string.h>

static struct uslub_allocinfo info[256];

/* calls and bytes of the site at @line of this file (0, 0: not listed) */
static void site(int line, int64_t *calls, int64_t *bytes)
{
	size_t n = uslub_allocinfo(info, 256);
	CHECK(n <= 256);
	*calls = *bytes = 0;
	for (size_t i = 0; i < n; i++)
		if ((int)info[i].line == line && strstr(info[i].file, "unit/sample.c")) {
			*calls += info[i].calls;
			*bytes += info[i].bytes;
		}
}

static void check_site(int line, int64_t calls, int64_t bytes)
{
	int64_t c, b;
	site(line, &c, &b);
	if (c != calls || b != bytes) {
		fprintf(stderr, "site %d: calls %lld bytes %lld, expected %lld %lld\n", line,
			(long long)c, (long long)b, (long long)calls, (long long)bytes);
		exit(1);
	}
}

/* Does every page of @p's slab have PG_slab_page (1), none (0)? -1: mixed */
static int slab_bit(const void *p)
{
	struct slab *slab = virt_to_slab(p);
	CHECK(slab);
	struct page *page = slab_page(slab);
	unsigned int n = 1u << page_order(page), set = 0;
	for (unsigned int i = 0; i < n; i++)
		set += (page[i].flags & PG_slab_page) != 0;
	return set == n ? 1 : set == 0 ? 0 : -1;
}

static unsigned long slabs_of(struct kmem_cache *s)
{
	struct uslub_slabinfo si;
	CHECK(uslub_cache_slabinfo(s, &si) == 0);
	return si.num_slabs;
}

#define N 40

static void *objs[N];

static void all_cleared(int n)
{
	for (int i = 0; i < n; i++)
		CHECK_EQ(slab_bit(objs[i]), 0);
}

/* objs[0, N) from @s, all sampled (sample:1) at one call site, whose
 * line it returns (the site holds the N objects). */
static int alloc_all(struct kmem_cache *s)
{
	int line = __LINE__ + 2;
	for (int i = 0; i < N; i++) {
		objs[i] = uslub_cache_alloc(s, 0);
		CHECK(objs[i]);
	}
	check_site(line, N, (int64_t)N * s->size);
	return line;
}

/* kmem_cache_free, in any order; a slab's bit comes back with its last */
static void path_cache_free(struct kmem_cache *s)
{
	int line = alloc_all(s);
	all_cleared(N);
	for (int i = N - 1; i >= 0; i--) {
		struct slab *slab = virt_to_slab(objs[i]);
		uslub_cache_free(s, objs[i]);
		bool others = false;
		for (int j = 0; j < i; j++)
			others |= virt_to_slab(objs[j]) == slab;
		/* the slab stays (the cache keeps it: the sheaves hold objects) */
		CHECK_EQ(slab_bit(objs[i]), others ? 0 : 1);
	}
	check_site(line, 0, 0);
	uslub_cache_shrink(s);
	CHECK_EQ(slabs_of(s), 0);
}

/* kfree of kmalloc objects */
static void path_kfree(void)
{
	int line = 0;
	for (int i = 0; i < N; i++) {
		line = __LINE__ + 1;
		objs[i] = uslub_kmalloc(200, 0);
		CHECK(objs[i]);
	}
	size_t size = virt_to_slab(objs[0])->slab_cache->size;
	check_site(line, N, (int64_t)N * size);
	all_cleared(N);
	for (int i = 0; i < N; i++)
		uslub_kfree(objs[i]);
	check_site(line, 0, 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ(slab_bit(objs[i]), 1);  /* kmalloc slabs stay (other users) */
}

/* bulk allocation, then bulk free with the cache and without (NULL) */
static void path_bulk(struct kmem_cache *s, bool with_cache)
{
	int line = __LINE__ + 1;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, N, objs), N);
	check_site(line, N, (int64_t)N * s->size);
	all_cleared(N);
	uslub_cache_free_bulk(with_cache ? s : NULL, N, objs);
	check_site(line, 0, 0);
	uslub_cache_shrink(s);
	CHECK_EQ(slabs_of(s), 0);
}

/* kfree_nolock: deferred (the untag takes list_lock), drained by shrink */
static void path_nolock(struct kmem_cache *s)
{
	int line = alloc_all(s);
	for (int i = 0; i < N; i++)
		uslub_kfree_nolock(objs[i]);
	uslub_cache_shrink(s);
	check_site(line, 0, 0);
	uslub_cache_shrink(s);
	CHECK_EQ(slabs_of(s), 0);
}

struct remote {
	struct kmem_cache *s;
	int n;
};

static void *remote_free(void *arg)
{
	struct remote *r = arg;
	for (int i = 0; i < r->n; i++) {
		if (i & 1)
			uslub_cache_free(r->s, objs[i]);
		else
			uslub_kfree(objs[i]);
	}
	return NULL;
}

/* frees from another thread (kmem_cache_free and kfree alternately) */
static void path_remote(struct kmem_cache *s)
{
	int line = alloc_all(s);
	struct remote r = { s, N };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, remote_free, &r) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	check_site(line, 0, 0);
	uslub_cache_shrink(s);
	CHECK_EQ(slabs_of(s), 0);
}

/* cpu-slab mode: the thread's cpu slab's free range, closed while the
 * slab holds a sampled object (its frees must untag), opens again when
 * the last one is untagged, so later frees skip the lookup again (before
 * the fix one sample sent every later free of that cpu slab to the slow
 * path: B1 in cpu-slab mode at 4x its sheaf mode) */
static void path_reopen(struct kmem_cache *s)
{
	void *x = uslub_cache_alloc(s, 0);
	CHECK(x);
	struct slab *slab = virt_to_slab(x);
	struct kmem_cache_cpu *c = this_cpu(s);
	CHECK(c->slab == slab);
	CHECK_EQ(slab_bit(x), 0);
	CHECK_EQ(c->slab_bytes, 0);
	uslub_cache_free(s, x);
	CHECK_EQ(slab_bit(slab_address(slab)), 1);
	/* the range a cpu slab gets when installed: none where the cache's
	 * fast paths are off (under AddressSanitizer) */
	CHECK_EQ(c->slab_bytes, s->fastpath_off ? 0 : slab_objects_bytes(slab));
	uslub_cache_shrink(s);
}

int main(void)
{
	if (uslub_profiling_enabled() != 2) {
		fprintf(stderr, "needs USLUB_PROFILING=sample:1 (set by CTest)\n");
		return 77;
	}
	CHECK_EQ(uslub_profiling_sample_interval(), 1);
	struct kmem_cache *sheaf = uslub_cache_create("sample_sheaf", 96, 0, 0, NULL);
	struct kmem_cache *cpu = uslub_cache_create("sample_cpu", 96, 0, USLUB_CPU_SLAB, NULL);
	struct kmem_cache *big = uslub_cache_create("sample_big", 3000, 0, 0, NULL);
	CHECK(sheaf && cpu && big);
	CHECK_EQ(sheaf->hooks, 0);       /* sampled mode: no profiling hook */
	for (int round = 0; round < 2; round++) {
		path_cache_free(sheaf);
		path_cache_free(cpu);
		path_reopen(cpu);
		path_cache_free(big);
		path_kfree();
		path_bulk(sheaf, true);
		path_bulk(cpu, false);
		path_nolock(sheaf);
		path_nolock(cpu);
		path_remote(sheaf);
		path_remote(cpu);
	}
	uslub_cache_destroy(sheaf);
	uslub_cache_destroy(cpu);
	uslub_cache_destroy(big);
	printf("sample paths: ok\n");
	return 0;
}
