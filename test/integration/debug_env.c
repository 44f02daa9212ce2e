/*
 * slub_debug chosen per cache from the environment: CTest runs this with
 * USLUB_DEBUG="FZPU,dbg-*;O,big-*;-,plain-*" (without it the test skips).
 * Everything is checked through public behaviour:
 *   - "dbg-a" (created without debug flags: the environment makes it a
 *     debug cache) has metadata (slabinfo size > object size), poisons a
 *     freed object (0x6b ... 0xa5), detects a one-byte right red zone
 *     overflow at free exactly once ("BUG dbg-a: Right Redzone
 *     overwritten", uslub_error_count() + 1), then keeps working,
 *     validates clean and is destroyed;
 *   - "plain-a" ('-') has no metadata, no poison, and a write into its
 *     stride's alignment padding is not reported; "-" does not take away
 *     flags given at creation (USLUB_POISON still poisons);
 *   - "big-*" (only 'O'): a 4096-byte cache without flags has no
 *     debugging; with the debug cache flags, O switches debugging off
 *     where it raises the slab order (32768: order 3 -> 4; both the
 *     kernel's rule and uslub's say so) and keeps it where it does not
 *     (64 bytes), against a "dbg-" control of the same size;
 *   - USLUB_GFP_ZERO zeroes on a debug cache (after the object was
 *     poisoned), with intact red zones;
 *   - alloc_bulk / free_bulk / kfree_bulk with objects of a debug and a
 *     plain cache mixed: all freed, validate clean, no report;
 *   - prefill_sheaf / alloc_from_sheaf / refill_sheaf / return_sheaf on a
 *     debug cache: objects usable, nothing leaks (live 0, destroy 0).
 */
#include "check.h"

#include <fcntl.h>

#define ENV_SPEC "FZPU,dbg-*;O,big-*;-,plain-*"
#define ALL_DEBUG (USLUB_CONSISTENCY_CHECKS | USLUB_RED_ZONE | USLUB_POISON | USLUB_STORE_USER)



/* ---- helpers ------------------------------------------------------------ */

/* Does a freshly freed object of @s carry slub_debug's poison? Allocates
 * one object, fills it, frees it and reads it back before anything else
 * allocates (single-threaded). */
static bool poisons(uslub_cache_t *s)
{
	size_t size = uslub_cache_object_size(s);
	unsigned char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 0x11, size);
	uslub_cache_free(s, p);
	bool all = true;
	for (size_t i = 0; i + 1 < size; i++)
		all &= p[i] == 0x6b;
	all &= p[size - 1] == 0xa5;
	if (all)
		return true;
	/* not poisoned: then nothing but the free pointer and the free
	 * mark (the double-free check) changed */
	struct uslub_slabinfo si = slabinfo_get(s);
	for (size_t i = 0; i < size; i++)
		if ((i < si.offset || i >= si.offset + sizeof(void *)) &&
		    (i < si.free_mark_offset || i >= si.free_mark_offset + sizeof(void *)))
			CHECK_MSG(p[i] == 0x11, "%s: byte %zu of a freed object is %#x, neither "
				  "poison nor what was written", uslub_cache_name(s), i, p[i]);
	return false;
}

/* Many objects, written fully, freed; then validate clean. */
static void keeps_working(uslub_cache_t *s, size_t n)
{
	size_t size = uslub_cache_object_size(s);
	void **v = calloc(n, sizeof(*v));
	CHECK(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		CHECK(v[i]);
		memset(v[i], (int)(i & 0xff), size);
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char *b = v[i];
		CHECK(b[0] == (unsigned char)(i & 0xff) && b[size - 1] == (unsigned char)(i & 0xff));
		uslub_cache_free(s, v[i]);
	}
	free(v);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQU(slabinfo_get(s).live_objs, 0);
}

static void destroy_clean(uslub_cache_t *s)
{
	unsigned long e = uslub_error_count();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQU(uslub_error_count(), e);
}

/* ---- the cases ---------------------------------------------------------- */
static void test_dbg_cache(void)
{
	uslub_cache_t *s = uslub_cache_create("dbg-a", 100, 0, 0, NULL);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK_MSG(si.size > si.object_size + 8, "dbg-a: size %zu, object %zu: no metadata",
		  si.size, si.object_size);
	CHECK_EQU(si.sheaf_capacity, 0);          /* debug caches take the checked paths */
	CHECK(poisons(s));

	unsigned char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 0x5a, 100);                     /* the whole object is fine */
	p[100] = 0x77;                            /* one byte past it is not */
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(s, p);
	const char *r = capture_end();
	CHECK_EQU(uslub_error_count(), e + 1);
	CHECK_HAS(r, "BUG dbg-a: Right Redzone overwritten");
	CHECK_HAS(r, "First byte 0x77 instead of 0xcc");
	CHECK_EQU(count_substr(r, "BUG "), 1);
	CHECK_EQU(slabinfo_get(s).live_objs, 0);  /* the object was freed all the same */

	/* restored and isolated: never reported again */
	capture_begin();
	long v = uslub_cache_validate(s);
	r = capture_end();
	CHECK_MSG(v == 0, "validate after the report: %ld\n%s", v, r);
	CHECK_EQU(uslub_error_count(), e + 1);
	keeps_working(s, 500);
	CHECK_EQU(uslub_error_count(), e + 1);
	destroy_clean(s);
	printf("  dbg-a: right red zone overflow reported once, cache kept working\n");
}

static void test_plain_cache(void)
{
	/* 60 bytes: a stride of 64, so byte 60 is alignment padding */
	uslub_cache_t *s = uslub_cache_create("plain-a", 60, 0, 0, NULL);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK_EQU(si.size, 64);
	CHECK(si.offset + sizeof(void *) <= 60);  /* free pointer inside the object */
	CHECK(!poisons(s));

	unsigned char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 0x5a, 60);
	p[60] = 0x77;
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(s, p);
	CHECK_EQ(uslub_cache_validate(s), 0);
	const char *r = capture_end();
	CHECK_MSG(uslub_error_count() == e && !strstr(r, "BUG "), "plain-a reported:\n%s", r);
	keeps_working(s, 500);
	destroy_clean(s);

	/* '-' is the environment's word only: flags given at creation stay */
	uslub_cache_t *pp = uslub_cache_create("plain-p", 64, 0, USLUB_POISON, NULL);
	CHECK(pp);
	CHECK(poisons(pp));
	keeps_working(pp, 100);
	destroy_clean(pp);
	printf("  plain-a: no metadata, no poison, padding write not reported\n");
}

static void test_big_caches(void)
{
	/* 'O' alone enables nothing */
	uslub_cache_t *bx = uslub_cache_create("big-x", 4096, 0, 0, NULL);
	CHECK(bx);
	CHECK_EQU(slabinfo_get(bx).size, 4096);
	CHECK(!poisons(bx));
	keeps_working(bx, 64);
	destroy_clean(bx);

	/* O with the debug flags: off where the order rises */
	uslub_cache_t *ctl = uslub_cache_create("dbg-32k", 32768, 0, ALL_DEBUG, NULL);
	uslub_cache_t *pl = uslub_cache_create("plain-32k", 32768, 0, 0, NULL);
	uslub_cache_t *big = uslub_cache_create("big-32k", 32768, 0, ALL_DEBUG, NULL);
	CHECK(ctl && pl && big);
	struct uslub_slabinfo sc = slabinfo_get(ctl), sp = slabinfo_get(pl), sb = slabinfo_get(big);
	CHECK_MSG(sc.order > sp.order, "dbg-32k order %u, plain-32k order %u", sc.order, sp.order);
	CHECK(poisons(ctl));
	CHECK(!poisons(pl));
	CHECK_MSG(sb.order == sp.order && sb.size == sp.size,
		  "big-32k: order %u size %zu, plain order %u size %zu: O kept debugging",
		  sb.order, sb.size, sp.order, sp.size);
	CHECK(!poisons(big));
	keeps_working(big, 16);
	keeps_working(ctl, 16);
	destroy_clean(big);
	destroy_clean(pl);
	destroy_clean(ctl);

	/* SLUB's rule is the minimum order: 4096 + metadata needs two pages
	 * where 4096 needs one, so O drops red zones, poison and owners
	 * (the consistency checks stay: "debug=F") */
	uslub_cache_t *b4 = uslub_cache_create("big-4096", 4096, 0, ALL_DEBUG, NULL);
	CHECK(b4);
	struct uslub_slabinfo s4 = slabinfo_get(b4);
	CHECK_EQU(s4.size, 4096);
	CHECK(!poisons(b4));
	CHECK_MSG(strchr(s4.debug, 'F') && !strchr(s4.debug, 'Z') && !strchr(s4.debug, 'P') &&
		  !strchr(s4.debug, 'U'), "big-4096: debug \"%s\"", s4.debug);
	keeps_working(b4, 64);
	CHECK_EQ(uslub_cache_validate(b4), 0);
	destroy_clean(b4);

	/* O with the debug flags: on where the order does not rise */
	uslub_cache_t *small = uslub_cache_create("big-64", 64, 0, ALL_DEBUG, NULL);
	CHECK(small);
	CHECK(slabinfo_get(small).size > 64);
	CHECK(poisons(small));
	unsigned char *p = uslub_cache_alloc(small, 0);
	CHECK(p);
	p[64] = 0x42;
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(small, p);
	const char *r = capture_end();
	CHECK_EQU(uslub_error_count(), e + 1);
	CHECK_HAS(r, "BUG big-64: Right Redzone overwritten");
	CHECK_EQ(uslub_cache_validate(small), 0);
	keeps_working(small, 300);
	destroy_clean(small);
	printf("  big-*: O dropped the metadata for 4096 and 32768 (it raises the order %u -> %u), kept it for 64\n",
	       sp.order, sc.order);
}

static void test_gfp_zero(void)
{
	uslub_cache_t *s = uslub_cache_create("dbg-zero", 200, 0, 0, NULL);
	CHECK(s);
	CHECK(poisons(s));
	for (int round = 0; round < 3; round++) {
		void *v[64];
		for (int i = 0; i < 64; i++) {
			unsigned char *p = uslub_cache_alloc(s, USLUB_GFP_ZERO);
			CHECK(p);
			for (int k = 0; k < 200; k++)
				CHECK_MSG(p[k] == 0, "round %d object %d byte %d is %#x", round, i, k, p[k]);
			memset(p, 0xee, 200);
			v[i] = p;
		}
		for (int i = 0; i < 64; i++)
			uslub_cache_free(s, v[i]);
	}
	unsigned char *q = uslub_cache_alloc_node(s, USLUB_GFP_ZERO, 0);
	CHECK(q);
	for (int k = 0; k < 200; k++)
		CHECK(q[k] == 0);
	uslub_cache_free(s, q);
	CHECK_EQ(uslub_cache_validate(s), 0);
	destroy_clean(s);
	printf("  dbg-zero: USLUB_GFP_ZERO zeroes poisoned objects\n");
}

static void test_bulk_mixed(struct rng *rng)
{
	enum { N = 300 };
	uslub_cache_t *d = uslub_cache_create("dbg-bulk", 72, 0, 0, NULL);
	uslub_cache_t *pl = uslub_cache_create("plain-bulk", 72, 0, 0, NULL);
	CHECK(d && pl);
	CHECK(slabinfo_get(d).size > slabinfo_get(pl).size);
	static void *pd[N], *pp[N], *mix[2 * N + N / 50];
	for (int round = 0; round < 4; round++) {
		CHECK_EQ(uslub_cache_alloc_bulk(d, round & 1 ? USLUB_GFP_ZERO : 0, N, pd), N);
		CHECK_EQ(uslub_cache_alloc_bulk(pl, round & 1 ? USLUB_GFP_ZERO : 0, N, pp), N);
		for (int i = 0; i < N; i++) {
			if (round & 1)
				for (int k = 0; k < 72; k++)
					CHECK(((unsigned char *)pd[i])[k] == 0 &&
					      ((unsigned char *)pp[i])[k] == 0);
			memset(pd[i], 0xd0, 72);
			memset(pp[i], 0x70, 72);
		}
		CHECK_EQU(slabinfo_get(d).live_objs, N);
		CHECK_EQ(uslub_cache_validate(d), 0);
		if (round < 2) {
			/* kfree_bulk of both caches, shuffled, with NULLs */
			size_t m = 0;
			for (int i = 0; i < N; i++) {
				mix[m++] = pd[i];
				mix[m++] = pp[i];
				if (i % 50 == 0)
					mix[m++] = NULL;  /* skipped */
			}
			for (size_t i = m - 1; i > 0; i--) {
				size_t j = (size_t)rng_below(rng, i + 1);
				void *t = mix[i];
				mix[i] = mix[j];
				mix[j] = t;
			}
			if (round == 0)
				uslub_kfree_bulk(m, mix);
			else
				uslub_cache_free_bulk(NULL, m, mix);
		} else {
			/* per-cache bulk frees, interleaved halves */
			uslub_cache_free_bulk(d, N / 2, pd);
			uslub_cache_free_bulk(pl, N, pp);
			uslub_cache_free_bulk(d, N - N / 2, pd + N / 2);
		}
		CHECK_EQU(slabinfo_get(d).live_objs, 0);
		CHECK_EQU(slabinfo_get(pl).live_objs, 0);
		CHECK_EQ(uslub_cache_validate(d), 0);
		CHECK_EQ(uslub_cache_validate(pl), 0);
	}
	destroy_clean(d);
	destroy_clean(pl);
	printf("  dbg-bulk + plain-bulk: bulk alloc, kfree_bulk and free_bulk mixed, clean\n");
}

static void test_sheaves(void)
{
	uslub_cache_t *s = uslub_cache_create("dbg-sheaf", 56, 0, 0, NULL);
	CHECK(s);
	for (int round = 0; round < 3; round++) {
		unsigned int want = round == 2 ? 500 : 10;   /* the last: oversize */
		struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, want);
		CHECK(sh);
		CHECK(uslub_cache_sheaf_size(sh) >= want);
		CHECK_EQ(uslub_cache_validate(s), 0);     /* sheaf objects count as allocated */
		void *v[8];
		for (int i = 0; i < 8; i++) {
			unsigned char *p = uslub_cache_alloc_from_sheaf(s, i & 1 ? USLUB_GFP_ZERO : 0, sh);
			CHECK(p);
			if (i & 1)
				for (int k = 0; k < 56; k++)
					CHECK(p[k] == 0);
			memset(p, 0x33, 56);
			v[i] = p;
		}
		CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &sh, want + 20), 0);
		CHECK(uslub_cache_sheaf_size(sh) >= want + 20);
		void *w = uslub_cache_alloc_from_sheaf(s, 0, sh);
		CHECK(w);
		uslub_cache_return_sheaf(s, 0, sh);
		for (int i = 0; i < 8; i++)
			uslub_cache_free(s, v[i]);
		uslub_cache_free(s, w);
		CHECK_EQ(uslub_cache_validate(s), 0);
		CHECK_EQU(slabinfo_get(s).live_objs, 0);
	}
	keeps_working(s, 200);
	destroy_clean(s);
	printf("  dbg-sheaf: prefill, alloc_from_sheaf, refill, return: nothing leaked\n");
}

int main(void)
{
	const char *dbg = getenv("USLUB_DEBUG");
	if (!dbg || strcmp(dbg, ENV_SPEC)) {
		printf("debug_env: skipped (run by CTest with USLUB_DEBUG=\"%s\")\n", ENV_SPEC);
		return 77;
	}
	uint64_t seed = test_seed(0xdeb6);
	struct rng rng = { seed };
	unsigned long e0 = uslub_error_count();
	test_dbg_cache();
	test_plain_cache();
	test_big_caches();
	test_gfp_zero();
	test_bulk_mixed(&rng);
	test_sheaves();
	CHECK_EQU(uslub_error_count(), e0 + 2);     /* dbg-a's and big-64's overflows */
	printf("debug_env: ok\n");
	return 0;
}
