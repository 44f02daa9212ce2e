/*
 * Cache layer, white box: geometry (calculate_sizes/calculate_order), the
 * four slab states of the contract and the transitions between them (the
 * 6.x cpu-slab model: a USLUB_CPU_SLAB cache), out-of-memory without
 * leaks, the alloc/free counters (in both per-CPU models).
 */
#include "sheaf/sheaf.h"
#include "slub/slub.h"
#include "unit.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>

static struct slab *slab_of(void *obj)
{
	struct slab *slab = virt_to_slab(obj);
	CHECK(slab);
	return slab;
}

enum state { NODE_PARTIAL, CPU_PARTIAL, CPU_SLAB, FULL };

/* The state table: (flag, frozen) -> state; cpu partial vs full is told
 * apart by whether the slab has free objects. */
static enum state state_of(struct slab *slab)
{
	uint64_t c = slab_counters(slab);
	bool flag = slab_test_node_partial(slab), frozen = FC_FROZEN(c);
	CHECK(!(flag && frozen));
	if (flag)
		return NODE_PARTIAL;
	if (frozen)
		return CPU_SLAB;
	return FC_FREELIST(c) == SLAB_FL_NONE && FC_INUSE(c) == FC_OBJECTS(c) ? FULL : CPU_PARTIAL;
}

static void noop_ctor(void *p)
{
	(void)p;
}

static void test_geometry(void)
{
	static const struct { size_t size; unsigned order, objects; } exact[] = {
		{ 8, 0, 256 },  /* the free mark needs a second word */
		{ 64, 0, 64 }, { 4096, 3, 8 }, { 1u << 21, 9, 1 },
		{ (1u << 20) + 8, 9, 1 },
	};
	for (unsigned i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		struct kmem_cache *s = uslub_cache_create("geo", exact[i].size, 0, 0, NULL);
		CHECK(s);
		CHECK_EQ(s->order, exact[i].order);
		CHECK_EQ(s->objects, exact[i].objects);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	for (size_t size = 1; size <= 65536; size = size * 5 / 4 + 1) {
		struct kmem_cache *s = uslub_cache_create("geo", size, 0, 0, NULL);
		CHECK(s);
		CHECK(s->size >= size && s->size % sizeof(void *) == 0);
		CHECK(s->objects >= 1 && s->objects <= MAX_OBJS_PER_SLAB);
		CHECK(s->objects * (size_t)s->size <= (PAGE_SIZE << s->order));
		/* at most half the slab wasted, as calculate_order guarantees */
		CHECK((PAGE_SIZE << s->order) % s->size <= (PAGE_SIZE << s->order) / 2);
		CHECK(s->offset + sizeof(void *) <= s->size);
		CHECK(s->offset <= size / 2 || size < 2 * sizeof(void *));  /* word 0: the mark */
		CHECK(s->free_mark_offset == 0);
		/* the free mark: its own word of the stride, never the free pointer's */
		CHECK(s->free_mark_offset + sizeof(void *) <= s->size);
		CHECK(s->free_mark_offset + sizeof(void *) <= s->offset ||
		      s->offset + sizeof(void *) <= s->free_mark_offset);
		CHECK(s->free_mark != 0);
		CHECK(s->min_partial >= 5 && s->min_partial <= 10);
		CHECK(s->min_order <= s->order);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	/* ctor: free pointer after the object, constructed state survives */
	struct kmem_cache *s = uslub_cache_create("geo-ctor", 100, 0, 0, noop_ctor);
	CHECK(s && s->offset == 104 && s->free_mark_offset == 112 && s->size == 120);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	/* HWCACHE_ALIGN halves the line for small objects */
	s = uslub_cache_create("geo-hw", 20, 0, USLUB_HWCACHE_ALIGN, NULL);
	CHECK(s && s->align == 32 && s->size == 32);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	s = uslub_cache_create("geo-hw", 33, 0, USLUB_HWCACHE_ALIGN, NULL);
	CHECK(s && s->align == 64 && s->size == 64);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	s = uslub_cache_create("geo-al", 24, 256, 0, NULL);
	CHECK(s && s->size == 256);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

static struct kmem_cache *remote_cache;
static void *remote_objs[4096];
static int remote_n;
static void *remote_free_thread(void *arg)
{
	for (int i = 0; i < remote_n; i++)
		uslub_cache_free(remote_cache, remote_objs[i]);
	return NULL;
}

static void free_remotely(struct kmem_cache *s, void **objs, int n)
{
	pthread_t t;
	remote_cache = s;
	remote_n = n;
	memcpy(remote_objs, objs, sizeof(void *) * n);
	CHECK(pthread_create(&t, NULL, remote_free_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

static void stats_of(struct kmem_cache *s, uint64_t st[USLUB_NR_STATS])
{
	uslub_cache_stats(s, st);
}

/* The states of the cpu-slab model: cpu slab, cpu partial list, lockless
 * remote frees (sheaves have no frozen slab; their paths: unit_sheaf). */
static void test_states(void)
{
	struct kmem_cache *s = uslub_cache_create("states", 256, 0, USLUB_CPU_SLAB, NULL);
	CHECK(s);
	unsigned int n = s->objects;
	CHECK(n >= 4 && n < 1024);
	void *a[1024], *b[1024];
	uint64_t st[USLUB_NR_STATS];

	/* 1. first allocation: a new slab becomes the cpu slab (frozen) */
	for (unsigned int i = 0; i < n; i++)
		a[i] = uslub_cache_alloc(s, 0);
	struct slab *sa = slab_of(a[0]);
	for (unsigned int i = 1; i < n; i++)
		CHECK(slab_of(a[i]) == sa);
	CHECK_EQ(state_of(sa), CPU_SLAB);
	CHECK_EQ(FC_INUSE(slab_counters(sa)), n);

	/* 2. the next allocation finds it empty: it becomes a full slab,
	 * unfrozen and on no list, and a new cpu slab takes over */
	b[0] = uslub_cache_alloc(s, 0);
	struct slab *sb = slab_of(b[0]);
	CHECK(sb != sa);
	CHECK_EQ(state_of(sa), FULL);
	CHECK_EQ(state_of(sb), CPU_SLAB);
	stats_of(s, st);
	CHECK_EQ(st[USLUB_DEACTIVATE_BYPASS], 1);

	/* 3. a remote free into the full slab: full -> the freeing thread's cpu
	 * partial list, still unfrozen; the freeing thread exits, which puts it
	 * on the node partial list (flag set) */
	free_remotely(s, &a[0], 1);
	CHECK_EQ(state_of(sa), NODE_PARTIAL);
	stats_of(s, st);
	CHECK_EQ(st[USLUB_CPU_PARTIAL_FREE], 1);
	CHECK_EQ(s->node[slab_nid(sa)]->nr_partial, 1);

	/* 4. a remote free into a node partial slab: no list move, and so
	 * no list_lock (the freeing thread's exit takes none either) */
	struct kmem_cache_node *node = s->node[slab_nid(sa)];
	unsigned long locks = node->lock_taken;
	free_remotely(s, &a[1], 1);
	CHECK_EQ(state_of(sa), NODE_PARTIAL);
	CHECK_EQ(FC_INUSE(slab_counters(sa)), n - 2);
	CHECK_EQ(node->lock_taken, locks);

	/* 5. a remote free into our frozen cpu slab: FREE_FROZEN, no lock */
	for (unsigned int i = 1; i < n; i++)
		b[i] = uslub_cache_alloc(s, 0);
	CHECK(slab_of(b[n - 1]) == sb);
	locks = node->lock_taken;
	free_remotely(s, &b[0], 1);
	CHECK_EQ(state_of(sb), CPU_SLAB);
	stats_of(s, st);
	CHECK(st[USLUB_FREE_FROZEN] >= 1);
	CHECK_EQ(node->lock_taken, locks);

	/* 6. local frees of a full slab put it on our cpu partial list */
	void *c0 = uslub_cache_alloc(s, 0);      /* refills from sb's remote free */
	CHECK(slab_of(c0) == sb);
	stats_of(s, st);
	CHECK_EQ(st[USLUB_ALLOC_REFILL], 1);
	void *c1 = uslub_cache_alloc(s, 0);      /* sb full -> next slab */
	struct slab *sc = slab_of(c1);
	if (sc == sa) {
		/* delayed freezing: the node partial slab was frozen only now */
		CHECK_EQ(state_of(sa), CPU_SLAB);
	}
	CHECK_EQ(state_of(sb), FULL);
	uslub_cache_free(s, b[1]);
	CHECK_EQ(state_of(sb), CPU_PARTIAL);
	struct kmem_cache_cpu *c = this_cpu(s);
	CHECK(c->partial == sb && c->partial_slabs == 1);

	/* 7. a remote free emptying... a cpu partial slab: left to its owner */
	void *rest[1024];
	int k = 0;
	rest[k++] = c0;
	for (unsigned int i = 2; i < n; i++)
		rest[k++] = b[i];
	locks = node->lock_taken;
	free_remotely(s, rest, k);
	/* emptying an unfrozen slab takes list_lock once, to read the flag */
	CHECK_EQ(node->lock_taken, locks + 1);
	CHECK_EQ(state_of(sb), CPU_PARTIAL);
	CHECK_EQ(FC_INUSE(slab_counters(sb)), 0);
	CHECK(c->partial == sb);

	CHECK_EQ(uslub_cache_validate(s), 0);

	/* 8. flush: the empty cpu partial slab is kept or discarded by
	 * min_partial, never lost; validate agrees with every counter */
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK(c->slab == NULL && c->partial == NULL && c->freelist == NULL);

	/* free everything; shrink releases every empty slab */
	uslub_cache_free(s, c1);
	for (unsigned int i = 2; i < n; i++)
		if (sc != sa || a[i] != c1)
			uslub_cache_free(s, a[i]);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	CHECK_EQ(si.num_slabs, 0);
	CHECK_EQ(si.live_objs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* The slab of a[i] for every sc case above is freed exactly once: a is
 * allocated before c1 so c1 is never in a[]. */

/*
 * Without sheaves (@flags USLUB_CPU_SLAB, or USLUB_CPU_SLABS=1) the one
 * page allocation of an allocation is the cache's slab: a one-shot failure
 * fails it. With sheaves a failed refill falls back to the slabs, which
 * asks for a page again: the failure is absorbed, and the allocation must
 * then succeed.
 */
static void test_oom(unsigned int flags)
{
	/* one failure at the preferred order: the slab is made at the
	 * minimum order instead (ORDER_FALLBACK) */
	struct kmem_cache *fb = uslub_cache_create("oom-fallback", 512, 0, flags, NULL);
	CHECK(fb && fb->min_order < fb->order);
	/* warm up: with sheaves, the sheaf bucket cache then has a slab, so
	 * the first page allocation below is fb's slab, as without */
	void *y = uslub_cache_alloc(fb, 0);
	CHECK(y);
	uslub_cache_free(fb, y);
	uslub_flush_thread();
	uslub_cache_shrink(fb);
	_uslub_page_fail_after(0);
	y = uslub_cache_alloc(fb, 0);
	CHECK(y);
	if (!fb->sheaf_capacity)   /* (a refill fills its sheaf from more slabs) */
		CHECK_EQ(slab_order(slab_of(y)), fb->min_order);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(fb, st);
	CHECK_EQ(st[USLUB_ORDER_FALLBACK], 1);
	CHECK_EQ(uslub_cache_validate(fb), 0);
	uslub_cache_free(fb, y);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(fb), 0);

	struct kmem_cache *s = uslub_cache_create("oom", 64, 0, flags, NULL);
	CHECK(s && s->min_order == s->order);
	CHECK(!(flags & USLUB_CPU_SLAB) || !s->sheaf_capacity);
	struct uslub_page_stats p0, p1;
	uslub_flush_thread();
	uslub_page_stats(&p0);
	_uslub_page_fail_after(0);
	errno = 0;
	void *x = uslub_cache_alloc(s, 0);
	_uslub_page_fail_after(-1);
	if (s->sheaf_capacity) {
		CHECK(x);                                  /* absorbed */
		uslub_cache_free(s, x);
	} else {
		CHECK(x == NULL && errno == ENOMEM);
		uslub_page_stats(&p1);
		CHECK_EQ(p1.bytes_in_slabs, p0.bytes_in_slabs);   /* nothing half-made */
	}
	CHECK_EQ(uslub_cache_validate(s), 0);
	x = uslub_cache_alloc(s, 0);                      /* still usable */
	CHECK(x);
	uslub_cache_free(s, x);
	/* NOFAIL retries through a transient failure */
	uslub_flush_thread();
	uslub_cache_shrink(s);
	_uslub_page_fail_after(0);
	x = uslub_cache_alloc(s, USLUB_GFP_NOFAIL);
	CHECK(x);
	uslub_cache_free(s, x);
	_uslub_page_fail_after(-1);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ALLOC_FASTPATH is derived (loaded + FREE_FASTPATH - |cpu freelist|):
 * it must equal the real count at every point, for the owner; with
 * sheaves (@flags 0, the default) the sum of the counters must too. */
static void test_derived_counter(unsigned int flags)
{
	struct kmem_cache *s = uslub_cache_create("derived", 48, 0, flags, NULL);
	CHECK(s);
	void *v[3000];
	uint64_t st[USLUB_NR_STATS];
	unsigned long long seed = 7;
	long allocs = 0, frees = 0, live = 0;
	for (int round = 0; round < 200; round++) {
		int na = (int)(unit_rand(&seed) % 40);
		for (int i = 0; i < na && live < 3000; i++, allocs++)
			v[live++] = uslub_cache_alloc(s, round % 3 ? 0 : USLUB_GFP_ZERO);
		int nf = (int)(unit_rand(&seed) % 40);
		for (int i = 0; i < nf && live > 0; i++, frees++) {
			int k = (int)(unit_rand(&seed) % (unsigned long long)live);
			uslub_cache_free(s, v[k]);
			v[k] = v[--live];
		}
		uslub_cache_stats(s, st);
		CHECK_EQ(st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS],
			 allocs);
		CHECK_EQ(st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS],
			 frees);
		if (round % 50 == 49)
			uslub_flush_thread();
	}
	while (live) {
		uslub_cache_free(s, v[--live]);
		frees++;
	}
	uslub_flush_thread();
	uslub_cache_stats(s, st);
	CHECK_EQ(st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH] + st[USLUB_ALLOC_PCS], allocs);
	CHECK_EQ(st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH] + st[USLUB_FREE_PCS], frees);
	if (s->sheaf_capacity) {  /* the sheaves take the traffic */
		CHECK(st[USLUB_ALLOC_PCS] > st[USLUB_ALLOC_SLOWPATH]);
		CHECK_EQ(st[USLUB_ALLOC_FASTPATH] + st[USLUB_FREE_FASTPATH], 0);
	} else {
		CHECK(st[USLUB_ALLOC_FASTPATH] > st[USLUB_ALLOC_SLOWPATH]);
		CHECK_EQ(st[USLUB_ALLOC_PCS] + st[USLUB_FREE_PCS], 0);
	}
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* Internal caches (slub.h): created, allocated from and freed below the
 * cache API, in cpu-slab mode with no sheaves and no hooks; the counters
 * add up as the cache API's would; a double free and a foreign pointer
 * are reported and left alone; a free with may_init false from a thread
 * that never had a cpu area goes straight to the slab. */
static void *internal_free_noinit(void *x)
{
	struct kmem_cache *s = *(struct kmem_cache **)x;
	_uslub_internal_free(s, ((void **)x)[1], false);
	return NULL;
}

static void test_internal_cache(void)
{
	struct kmem_cache *s = _uslub_internal_cache_create("unit_internal", 96);
	CHECK(s);
	CHECK_EQ(s->flags & SLAB_INTERNAL, SLAB_INTERNAL);
	CHECK_EQ(s->sheaf_capacity, 0);
	CHECK_EQ(s->hooks, 0);
	CHECK(!_uslub_internal_cache_create("", 96));
	enum { N = 1000 };
	static void *v[N];
	uint64_t st[USLUB_NR_STATS];
	for (int i = 0; i < N; i++) {
		v[i] = _uslub_internal_alloc(s, i % 2 ? USLUB_GFP_ZERO : 0);
		CHECK(v[i]);
		if (i % 2)
			for (unsigned int k = 0; k < s->object_size; k++)
				CHECK_EQ(((unsigned char *)v[i])[k], 0);
		memset(v[i], 0x5a, s->object_size);
	}
	unsigned long errors = uslub_error_count();
	_uslub_internal_free(s, v[0], true);
	_uslub_internal_free(s, v[0], true);            /* double: reported */
	CHECK_EQ(uslub_error_count(), errors + 1);
	_uslub_internal_free(s, (char *)v[1] + 8, true); /* not an object start */
	CHECK_EQ(uslub_error_count(), errors + 2);
	_uslub_internal_free(s, NULL, true);             /* nothing */
	CHECK_EQ(uslub_error_count(), errors + 2);
	pthread_t th;
	void *arg[2] = { s, v[1] };
	CHECK_EQ(pthread_create(&th, NULL, internal_free_noinit, arg), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	for (int i = N - 1; i >= 2; i--)
		_uslub_internal_free(s, v[i], i % 3 != 0);
	uslub_flush_thread();
	uslub_cache_stats(s, st);
	CHECK_EQ(st[USLUB_ALLOC_FASTPATH] + st[USLUB_ALLOC_SLOWPATH], N);
	CHECK_EQ(st[USLUB_FREE_FASTPATH] + st[USLUB_FREE_SLOWPATH], N);
	CHECK_EQ(st[USLUB_ALLOC_PCS] + st[USLUB_FREE_PCS], 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* Empty slabs kept for the next swing (partial.c): waves of objects
 * allocated and freed make their slabs in the first waves only; the
 * node's keep was raised above min_partial and bounds what it holds;
 * uslub_trim() (the purge pass, forced) lowers it and discards the empty
 * slabs above min_partial. Both per-CPU models (a sheaf cache with a
 * barn of one sheaf, so the waves cross the slab layer). */
static void test_keep_empty(unsigned int flags)
{
	if (_uslub_option(USLUB_OPT_DECAY_MS) == 0)
		return;                          /* memory back at once: no raise */
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = flags ? 0 : 4;
	struct kmem_cache *s = uslub_cache_create_args("keep", 64, &args, flags);
	CHECK(s);
	if (s->sheaf_capacity)
		_uslub_sheaf_set_barn_limit(s, 1);
	enum { N = 4000, WAVES = 8 };
	static void *v[N];
	uint64_t st[USLUB_NR_STATS], made[WAVES];
	for (int w = 0; w < WAVES; w++) {
		for (int i = 0; i < N; i++)
			CHECK(v[i] = uslub_cache_alloc(s, 0));
		for (int i = 0; i < N; i++)
			uslub_cache_free(s, v[w % 2 ? i : N - 1 - i]);
		uslub_cache_stats(s, st);
		made[w] = st[USLUB_ALLOC_SLAB];
	}
	struct kmem_cache_node *n = get_node(s, _uslub_home_node());
	unsigned long slabs = N / s->objects;
	/* the first wave made its slabs, the second made again those the
	 * first discarded (each raising keep by one), and from then on the
	 * waves made none */
	CHECK(made[0] >= slabs);
	CHECK_EQ(made[WAVES - 1], made[WAVES / 2 - 1]);
	CHECK(made[WAVES - 1] <= 2 * made[0]);
	CHECK(n->keep > s->min_partial);
	CHECK(n->nr_partial <= MAX(n->keep, s->min_partial));
	CHECK_EQ(uslub_cache_validate(s), 0);

	uslub_flush_thread();
	uslub_trim();
	CHECK_EQ(n->keep, 0);
	CHECK(n->nr_partial <= s->min_partial);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

int main(void)
{
	test_internal_cache();
	test_derived_counter(0);
	test_derived_counter(USLUB_CPU_SLAB);
	test_geometry();
	test_states();
	test_oom(0);
	test_oom(USLUB_CPU_SLAB);
	test_keep_empty(0);
	test_keep_empty(USLUB_CPU_SLAB);
	printf("slub: ok\n");
	return 0;
}
