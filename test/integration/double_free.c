/*
 * Double frees that are not back to back, caught wherever the first free
 * put the object (the free mark, slub/object.h): through the cache API
 * (single and bulk) and the kmalloc API (kfree, kfree_bulk, krealloc,
 * ksize), on every kind of cache (cpu slabs, sheaves, hardened freelists,
 * 8-byte objects, constructors, a caller-placed free pointer, accounting
 * hooks). Each case:
 *   - is reported exactly once (uslub_error_count() + 1, one "double free"
 *     line) and leaves the object alone;
 *   - never lets an object be handed out twice: afterwards every object of
 *     the slabs is allocated at once and all are distinct;
 *   - leaves the cache consistent: validate() finds nothing, everything
 *     freed, destroy() succeeds (no object counted twice or lost).
 * Where the first free went: the calling thread's cpu freelist or main
 * sheaf, after a flush (the slab's freelist, the barn), another thread's
 * cache (a remote free), the same bulk array, a different earlier bulk.
 * Plus no false alarm: a long random alloc/free workload reports nothing.
 */
#define _GNU_SOURCE
#include "check.h"
#include <pthread.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t ctor_magic = 0x5ca1ab1e0ddba11ull;

static void ctor_fn(void *p)
{
	memcpy(p, &ctor_magic, sizeof(ctor_magic));
}

enum kind { K_PLAIN, K_TINY, K_ODD, K_SHEAF, K_HARDENED, K_CTOR, K_FREEPTR, K_ACCOUNT, K_NR };
static const char *kind_name[K_NR] = { "plain-64", "tiny-8", "odd-12", "sheaf-96",
				       "hardened-64", "ctor-100", "freeptr-48", "account-64" };

static uslub_cache_t *make(enum kind k)
{
	struct uslub_cache_args a;
	memset(&a, 0, sizeof(a));
	switch (k) {
	case K_PLAIN:
		return uslub_cache_create("df-plain", 64, 0, 0, NULL);
	case K_TINY:
		return uslub_cache_create("df-tiny", 8, 0, 0, NULL);
	case K_ODD:
		return uslub_cache_create("df-odd", 12, 0, 0, NULL);
	case K_SHEAF:
		a.sheaf_capacity = 16;
		return uslub_cache_create_args("df-sheaf", 96, &a, 0);
	case K_HARDENED:
		return uslub_cache_create("df-hard", 64, 0, USLUB_HARDENED_FREELIST, NULL);
	case K_CTOR:
		return uslub_cache_create("df-ctor", 100, 0, 0, ctor_fn);
	case K_FREEPTR:
		a.use_freeptr_offset = 1;
		a.freeptr_offset = 8;
		a.ctor = ctor_fn;
		return uslub_cache_create_args("df-freeptr", 48, &a, 0);
	case K_ACCOUNT:
		return uslub_cache_create("df-acct", 64, 0, USLUB_ACCOUNT, NULL);
	default:
		return NULL;
	}
}

/* One bad call: exactly one error, one "double free" line. */
#define EXPECT_ONE(call, what)                                                     \
	do {                                                                       \
		unsigned long e0_ = uslub_error_count();                           \
		capture_begin();                                                   \
		call;                                                              \
		const char *out_ = capture_end();                                  \
		CHECK_MSG(uslub_error_count() == e0_ + 1, "%s: %s: %lu errors, want 1", \
			  kname, what, uslub_error_count() - e0_);                   \
		CHECK_MSG(count_substr(out_, "double free") == 1,                  \
			  "%s: %s: report %s", kname, what, out_);                 \
	} while (0)

static const char *kname;

/* Every object of the cache's slabs (and more) at once: all distinct,
 * none of them anything else's; a ctor cache's objects keep their state.
 * Then free them all, validate, and leave the cache empty. */
static void check_no_duplicates(uslub_cache_t *s, size_t n, bool ctor)
{
	void **v = calloc(n, sizeof(*v));
	CHECK(v);
	set_count = 0;
	memset(set_tab, 0, sizeof(set_tab));
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		CHECK(v[i]);
		CHECK_MSG(set_insert((uintptr_t)v[i]), "%s: %p handed out twice (object %zu of %zu)",
			  kname, v[i], i, n);
		if (ctor)
			CHECK_MSG(!memcmp(v[i], &ctor_magic, sizeof(ctor_magic)),
				  "%s: a constructed object lost its state", kname);
	}
	uslub_cache_free_bulk(s, n, v);
	free(v);
	CHECK_MSG(uslub_cache_validate(s) == 0, "%s: validate found errors", kname);
}

struct remote { uslub_cache_t *s; void *x; };

static void *remote_free(void *arg)
{
	struct remote *r = arg;
	uslub_cache_free(r->s, r->x);
	return NULL;
}

static void one_kind(enum kind k)
{
	kname = kind_name[k];
	uslub_cache_t *s = make(k);
	CHECK_MSG(s, "%s: create failed", kname);
	struct uslub_slabinfo si = slabinfo_get(s);
	size_t n = (size_t)si.objs_per_slab * 3 + 50;
	void **v = calloc(n, sizeof(*v));
	CHECK(v);
	for (size_t i = 0; i < n; i++)
		CHECK((v[i] = uslub_cache_alloc(s, 0)) != NULL);
	bool ctor = k == K_CTOR || k == K_FREEPTR;

	/* 1. free(a); free(b); free(a) */
	uslub_cache_free(s, v[0]);
	uslub_cache_free(s, v[1]);
	EXPECT_ONE(uslub_cache_free(s, v[0]), "free(a) free(b) free(a)");

	/* 2. free(a), many frees and allocations of other objects, free(a) */
	uslub_cache_free(s, v[2]);
	for (size_t i = 3; i < n / 2; i += 2)
		uslub_cache_free(s, v[i]);
	for (size_t i = 3; i < n / 2; i += 2)
		CHECK((v[i] = uslub_cache_alloc(s, 0)) != NULL);  /* may include v[2]: */
	bool reused = false;                                       /* then it is live */
	for (size_t i = 3; i < n / 2; i += 2)
		reused |= v[i] == v[2];
	if (!reused)
		EXPECT_ONE(uslub_cache_free(s, v[2]), "free(a), 100s of frees and allocs, free(a)");
	else
		v[2] = NULL;

	/* 3. free(a), the thread's caches flushed (a is on its slab's
	 *    freelist or in the barn), free(a) */
	uslub_cache_free(s, v[n / 2]);
	uslub_flush_thread();
	EXPECT_ONE(uslub_cache_free(s, v[n / 2]), "free(a), flush, free(a)");

	/* 4. another thread freed a (a remote free), then this one */
	struct remote r = { s, v[n / 2 + 1] };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, remote_free, &r) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	EXPECT_ONE(uslub_cache_free(s, v[n / 2 + 1]), "remote free(a), free(a)");

	/* 5. bulk [a, b, a] */
	void *ab[3] = { v[n / 2 + 2], v[n / 2 + 3], v[n / 2 + 2] };
	EXPECT_ONE(uslub_cache_free_bulk(s, 3, ab), "free_bulk([a, b, a])");

	/* 6. free(a), then bulk [b, a, c] */
	uslub_cache_free(s, v[n / 2 + 4]);
	void *bac[3] = { v[n / 2 + 5], v[n / 2 + 4], v[n / 2 + 6] };
	EXPECT_ONE(uslub_cache_free_bulk(s, 3, bac), "free(a), free_bulk([b, a, c])");

	/* 7. bulk [a, b], then free(a) */
	void *abk[2] = { v[n / 2 + 7], v[n / 2 + 8] };
	uslub_cache_free_bulk(s, 2, abk);
	EXPECT_ONE(uslub_cache_free(s, v[n / 2 + 7]), "free_bulk([a, b]), free(a)");

	/* everything else goes back once */
	for (size_t i = 0; i < n; i++) {
		if (i <= 2 || (i >= n / 2 && i <= n / 2 + 8) || (i >= 3 && i < n / 2 && (i & 1)))
			continue;
		uslub_cache_free(s, v[i]);
	}
	for (size_t i = 3; i < n / 2; i += 2)
		uslub_cache_free(s, v[i]);
	if (v[2] && reused)
		uslub_cache_free(s, v[2]);
	free(v);
	check_no_duplicates(s, n + (size_t)si.objs_per_slab, ctor);
	CHECK_MSG(uslub_cache_destroy(s) == 0, "%s: destroy failed: objects still counted live",
		  kname);
}

/* kmalloc, kfree, kfree_bulk, krealloc, ksize of objects already freed. */
static void kmalloc_cases(void)
{
	kname = "kmalloc";
	static const size_t sizes[] = { 1, 8, 24, 64, 200, 1000, 4000, 8192 };
	for (size_t i = 0; i < NELEM(sizes); i++) {
		char *a = uslub_kmalloc(sizes[i], 0), *b = uslub_kmalloc(sizes[i], 0);
		char *c = uslub_kmalloc(sizes[i], 0);
		CHECK(a && b && c);
		uslub_kfree(a);
		uslub_kfree(b);
		EXPECT_ONE(uslub_kfree(a), "kfree(a) kfree(b) kfree(a)");
		void *arr[2] = { c, c };
		EXPECT_ONE(uslub_kfree_bulk(2, arr), "kfree_bulk([c, c])");
		/* krealloc of a freed object: refused, nothing allocated */
		unsigned long e0 = uslub_error_count();
		capture_begin();
		void *q = uslub_krealloc(b, sizes[i] * 2 + 1, 0);
		const char *out = capture_end();
		CHECK_MSG(!q && errno == EINVAL, "krealloc of a freed %zu-byte object gave %p",
			  sizes[i], q);
		CHECK_EQU(uslub_error_count(), e0 + 1);
		CHECK_MSG(strstr(out, "already free"), "krealloc report: %s", out);
		/* ksize of a freed object: reported, 0 */
		e0 = uslub_error_count();
		capture_begin();
		size_t ks = uslub_ksize(a);
		out = capture_end();
		CHECK_MSG(ks == 0 && uslub_error_count() == e0 + 1 && strstr(out, "already free"),
			  "ksize of a freed object: %zu, report %s", ks, out);
		/* kfree_sensitive of a freed object: one report, no write */
		EXPECT_ONE(uslub_kfree_sensitive(b), "kfree_sensitive(freed)");
	}
	/* a page run and a huge mapping freed twice: named a double free */
	size_t big[] = { 64 << 10, 8 << 20 };
	for (size_t i = 0; i < NELEM(big); i++) {
		void *p = uslub_kmalloc(big[i], 0);
		CHECK(p);
		uslub_kfree(p);
		EXPECT_ONE(uslub_kfree(p), big[i] > (2 << 20) ? "huge kfree twice" : "run kfree twice");
	}
}

/* No false alarm: random allocation and frees (single and bulk) on every
 * kind, checking that the error count stays put. */
static void no_false_alarm(struct rng *rng)
{
	kname = "random";
	unsigned long e0 = uslub_error_count();
	for (int k = 0; k < K_NR; k++) {
		uslub_cache_t *s = make((enum kind)k);
		CHECK(s);
		const size_t LIVE = 512;
		void *live[512] = { 0 };
		for (long op = 0; op < scaled(20000); op++) {
			size_t i = (size_t)rng_below(rng, LIVE);
			if (live[i]) {
				if (rng_below(rng, 8) == 0) {
					size_t m = 0;
					void *batch[16];
					for (size_t j = i; j < LIVE && m < 16; j++)
						if (live[j]) {
							batch[m++] = live[j];
							live[j] = NULL;
						}
					uslub_cache_free_bulk(s, m, batch);
				} else {
					uslub_cache_free(s, live[i]);
					live[i] = NULL;
				}
			} else if (rng_below(rng, 8) == 0) {
				void *batch[8];
				if (uslub_cache_alloc_bulk(s, 0, 8, batch) == 8) {
					size_t m = 0;
					for (size_t j = 0; j < LIVE && m < 8; j++)
						if (!live[j])
							live[j] = batch[m++];
					if (m < 8)
						uslub_cache_free_bulk(s, 8 - m, batch + m);
				}
			} else {
				live[i] = uslub_cache_alloc(s, (rng_below(rng, 4) == 0) ? USLUB_GFP_ZERO : 0);
				CHECK(live[i]);
				memset(live[i], 0xff, uslub_cache_object_size(s));  /* never the mark */
			}
			if (rng_below(rng, 5000) == 0)
				uslub_flush_thread();
		}
		for (size_t i = 0; i < LIVE; i++)
			if (live[i])
				uslub_cache_free(s, live[i]);
		CHECK(uslub_cache_validate(s) == 0);
		CHECK(uslub_cache_destroy(s) == 0);
	}
	CHECK_MSG(uslub_error_count() == e0, "false double-free reports: %lu",
		  uslub_error_count() - e0);
}

/* A new slab on pages where the same cache's freed objects (holding its
 * marks) lay: bulk allocation hands its objects out without writing them,
 * and none may look freed (each slab's mark differs). Run with the pages'
 * contents kept (no purge before reuse). */
static void stale_marks(void)
{
	kname = "stale";
	uslub_cache_t *s = uslub_cache_create("df-stale", 64, 0, 0, NULL);
	CHECK(s);
	enum { N = 4096 };
	static void *v[N], *w[N];
	for (int i = 0; i < N; i++)
		CHECK((v[i] = uslub_cache_alloc(s, 0)) != NULL);
	set_count = 0;
	memset(set_tab, 0, sizeof(set_tab));
	for (int i = 0; i < N; i++)
		set_insert((uintptr_t)v[i]);
	for (int i = 0; i < N; i++)
		uslub_cache_free(s, v[i]);              /* every object marked */
	uslub_flush_thread();
	uslub_cache_shrink(s);                      /* slabs back to the pages */
	unsigned long e0 = uslub_error_count();
	CHECK(uslub_cache_alloc_bulk(s, 0, N, w) == N);
	size_t reused = 0;
	for (int i = 0; i < N; i++)
		reused += !set_insert((uintptr_t)w[i]);
	for (int i = 0; i < N; i++)
		uslub_cache_free(s, w[i]);
	CHECK_MSG(uslub_error_count() == e0, "%lu false double frees on reused pages",
		  uslub_error_count() - e0);
	CHECK_MSG(reused > N / 2, "only %zu of %d objects on reused addresses: the case is not "
		  "exercised", reused, N);
	CHECK(uslub_cache_validate(s) == 0);
	CHECK(uslub_cache_destroy(s) == 0);
}

/* A pointer freed, its slab discarded (and with @purge the pages given
 * back, reading zero), a new slab of the same cache on those pages, then
 * the pointer freed again: refused once (every free object of the new slab
 * holds its mark, the objects it links into its freelist included), and
 * never handed out twice. */
static void stale_pointer(bool purge)
{
	kname = purge ? "stale-purged" : "stale-discarded";
	/* objects of another cache, allocated in step, keep slabs between
	 * the old ones: a forced purge unmaps a segment with nothing in it,
	 * and the new slabs must come from the same (purged) pages */
	uslub_cache_t *pin_cache = uslub_cache_create("df-stale-pin", 64, 0, 0, NULL);
	CHECK(pin_cache);
	uslub_cache_t *s = uslub_cache_create("df-stale-ptr", 64, 0, 0, NULL);
	CHECK(s);
	enum { N = 4096 };
	static void *orig[N], *v[N], *pins[N];
	for (int i = 0; i < N; i++) {
		CHECK((orig[i] = uslub_cache_alloc(s, 0)) != NULL);
		CHECK((pins[i] = uslub_cache_alloc(pin_cache, 0)) != NULL);
	}
	for (int i = 0; i < N; i++)
		uslub_cache_free(s, orig[i]);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	if (purge)
		uslub_trim();
	/* new slabs, until one lies on a page of the old ones (the page
	 * layer need not hand out those pages first) */
	static void *ys[N];
	int ny = 0;
	void *x = NULL;
	while (!x && ny < N) {
		void *y = uslub_cache_alloc(s, 0);
		CHECK(y);
		ys[ny++] = y;
		for (int i = 0; i < N && !x; i++) {
			if (((uintptr_t)orig[i] >> 12) != ((uintptr_t)y >> 12))
				continue;
			x = orig[i];
			for (int j = 0; j < ny && x; j++)
				if (ys[j] == x)
					x = NULL;         /* handed out again: not free */
		}
	}
	CHECK_MSG(x, "%s: no object of the old slabs on the new ones: the case is not exercised",
		  kname);
	EXPECT_ONE(uslub_cache_free(s, x), "free of a pointer into a discarded slab");
	int hits = 0;
	for (int i = 0; i < N; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		CHECK(v[i]);
		hits += v[i] == x;
	}
	CHECK_MSG(hits <= 1, "%s: %p handed out %d times", kname, x, hits);
	for (int i = 0; i < N; i++)
		uslub_cache_free(s, v[i]);
	for (int i = 0; i < ny; i++)
		uslub_cache_free(s, ys[i]);
	CHECK(uslub_cache_validate(s) == 0);
	CHECK(uslub_cache_destroy(s) == 0);
	for (int i = 0; i < N; i++)
		uslub_cache_free(pin_cache, pins[i]);
	CHECK(uslub_cache_destroy(pin_cache) == 0);
}

int main(void)
{
	struct rng rng = { test_seed(20261124) };
	for (int k = 0; k < K_NR; k++) {
		one_kind((enum kind)k);
		printf("  %-12s every double free reported once, nothing handed out twice\n",
		       kind_name[k]);
	}
	kmalloc_cases();
	printf("  kmalloc      kfree, kfree_bulk, krealloc, ksize, kfree_sensitive, runs, mappings\n");
	stale_pointer(false);
	stale_pointer(true);
	printf("  stale ptr    a second free after the slab was discarded (and purged): reported\n");
	stale_marks();
	printf("  stale        new slabs on pages of freed objects: no false alarm\n");
	no_false_alarm(&rng);
	printf("  random       no false alarm\n");
	return 0;
}
