/*
 * allocinfo_regressions: how the entry macros hand the call site's tag to
 * the allocator (USLUB_PROFILING=1, set by CTest; skips with 77 when
 * profiling is off). Found by review; both failed before ed8e1dd:
 *   - an entry that returns without allocating leaves no tag behind: after
 *     uslub_cache_alloc_node() on a node that does not exist (EINVAL),
 *     uslub_cache_alloc_bulk() of 0 or more than INT_MAX objects,
 *     uslub_cache_alloc_from_sheaf() on an empty sheaf, and a refused
 *     charge (single and bulk, ENOMEM), the next untagged (_noprof)
 *     allocation of each kind counts at no site of this file;
 *   - an argument that allocates cannot take the call's tag: with a cache,
 *     gfp, node, count or sheaf argument whose evaluation allocates
 *     untagged (_noprof), only the outer call site is listed, with its own
 *     cache's bytes and calls; with an argument that allocates through a
 *     tagged site of its own, both sites are listed, each with exactly its
 *     own objects.
 * Sites are matched by this file's name and __LINE__ (and func); at the
 * end everything is freed and no site of this file is listed.
 */
#include "check.h"

#include <limits.h>

static uslub_cache_t *objs, *meta, *acct_cache;
static struct uslub_sheaf *sheaf;

#define MAXV 512   /* a prefilled sheaf of a default cache: up to its capacity */
static void *untagged[MAXV];
static int nuntagged;

/* ---- this file's entries of uslub_allocinfo() ------------------------- */
struct site {
	int line;
	const char *func;
	int64_t calls, bytes;
};

#define MAX_SITES 16
static struct site expect[MAX_SITES];
static int nexpect;

static void expect_site(int line, const char *func, int64_t calls, int64_t bytes)
{
	for (int i = 0; i < nexpect; i++)
		if (expect[i].line == line) {
			expect[i].calls += calls;
			expect[i].bytes += bytes;
			return;
		}
	CHECK(nexpect < MAX_SITES);
	expect[nexpect++] = (struct site){ line, func, calls, bytes };
}

static size_t csize(uslub_cache_t *s)
{
	return slabinfo_get(s).size;
}

/* This file's listed sites are exactly expect[] (those with calls > 0). */
static void check_sites(const char *when)
{
	static struct uslub_allocinfo info[512];
	size_t n = uslub_allocinfo(info, 512);
	CHECK(n <= 512);
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(info[i].file, __FILE__))
			continue;
		const struct site *e = NULL;
		for (int k = 0; k < nexpect; k++)
			if (expect[k].line == (int)info[i].line && expect[k].calls)
				e = &expect[k];
		CHECK_MSG(e, "%s: site %s:%u (%s) listed with %lld calls, %lld bytes; expected "
			  "none there (an untagged allocation took a stale or stolen tag)", when,
			  info[i].file, info[i].line, info[i].func, (long long)info[i].calls,
			  (long long)info[i].bytes);
		CHECK_MSG(info[i].calls == e->calls && info[i].bytes == e->bytes,
			  "%s: site line %d: %lld calls, %lld bytes; expected %lld, %lld", when,
			  e->line, (long long)info[i].calls, (long long)info[i].bytes,
			  (long long)e->calls, (long long)e->bytes);
		CHECK_MSG(!strcmp(info[i].func, e->func), "%s: line %d: func %s, expected %s",
			  when, e->line, info[i].func, e->func);
		found++;
	}
	int want = 0;
	for (int k = 0; k < nexpect; k++)
		want += expect[k].calls != 0;
	CHECK_MSG(found == want, "%s: %d sites of this file listed, expected %d", when, found,
		  want);
}

static void keep_untagged(void *p)
{
	CHECK(p);
	CHECK(nuntagged < MAXV);
	untagged[nuntagged++] = p;
}

/* One untagged allocation of each kind, from the plain cache. */
static void untagged_allocs(void)
{
	keep_untagged(uslub_cache_alloc_noprof(meta, 0));
	keep_untagged(uslub_cache_alloc_node_noprof(meta, 0, USLUB_NUMA_NO_NODE));
	void *b[2];
	CHECK_EQ(uslub_cache_alloc_bulk_noprof(meta, 0, 2, b), 2);
	keep_untagged(b[0]);
	keep_untagged(b[1]);
}

/* ---- 1: entries that return early leave no tag -------------------------- */
static void early_returns(void)
{
	errno = 0;
	CHECK(!uslub_cache_alloc_node(objs, 0, uslub_nr_nodes() + 98));
	CHECK_EQ(errno, EINVAL);
	untagged_allocs();
	check_sites("after alloc_node on a bad node");

	void *v[2];
	CHECK_EQ(uslub_cache_alloc_bulk(objs, 0, 0, v), 0);
	untagged_allocs();
	check_sites("after alloc_bulk of 0 objects");
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(objs, 0, (size_t)INT_MAX + 1, v), 0);
	CHECK_EQ(errno, EINVAL);
	untagged_allocs();
	check_sites("after alloc_bulk of more than INT_MAX objects");

	struct uslub_sheaf *empty = uslub_cache_prefill_sheaf(objs, 0, 1);
	CHECK(empty);
	while (uslub_cache_sheaf_size(empty))
		keep_untagged(uslub_cache_alloc_from_sheaf_noprof(objs, 0, empty));
	CHECK(!uslub_cache_alloc_from_sheaf(objs, 0, empty));
	untagged_allocs();
	check_sites("after alloc_from_sheaf on an empty sheaf");
	uslub_cache_return_sheaf(objs, 0, empty);

	/* refused charges: a group that has no room at all */
	uslub_group_t *g = uslub_group_create(NULL, "tag-refuse", 0);
	CHECK(g);
	uslub_group_set_current(g);
	errno = 0;
	CHECK(!uslub_cache_alloc(acct_cache, USLUB_GFP_NOWARN));
	CHECK_EQ(errno, ENOMEM);
	uslub_group_set_current(NULL);
	untagged_allocs();
	check_sites("after a refused charge");
	uslub_group_set_current(g);
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(acct_cache, USLUB_GFP_NOWARN, 2, v), 0);
	CHECK_EQ(errno, ENOMEM);
	uslub_group_set_current(NULL);
	untagged_allocs();
	check_sites("after a refused bulk charge");
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_delete(g), 0);
}

/* ---- 2: arguments that allocate ---------------------------------------- */
static uslub_cache_t *pick_cache(void)
{
	keep_untagged(uslub_cache_alloc_noprof(meta, 0));   /* bookkeeping, untagged */
	return objs;
}

static uslub_gfp_t pick_gfp(void)
{
	keep_untagged(uslub_cache_alloc_noprof(meta, 0));
	return USLUB_GFP_ZERO;
}

static int pick_node(void)
{
	keep_untagged(uslub_cache_alloc_node_noprof(meta, 0, 0));
	return 0;
}

static size_t pick_count(void)
{
	void *b[3];
	CHECK_EQ(uslub_cache_alloc_bulk_noprof(meta, 0, 3, b), 3);
	for (int i = 0; i < 3; i++)
		keep_untagged(b[i]);
	return 4;
}

static struct uslub_sheaf *pick_sheaf(void)
{
	keep_untagged(uslub_cache_alloc_noprof(meta, 0));
	return sheaf;
}

/* A tagged allocation of its own (line returned through *line). */
static void *tagged_meta[8];
static int ntagged_meta;

static uslub_cache_t *pick_cache_tagged(int *line)
{
	*line = __LINE__; tagged_meta[ntagged_meta++] = uslub_cache_alloc(meta, 0);
	CHECK(tagged_meta[ntagged_meta - 1]);
	return objs;
}

static void arguments_allocate(void)
{
	void *x[8], *bulk[4];
	int l[8], inner[2];
	const int64_t so = (int64_t)csize(objs), sm = (int64_t)csize(meta);

	l[0] = __LINE__; x[0] = uslub_cache_alloc(pick_cache(), 0);
	CHECK(x[0]);
	expect_site(l[0], __func__, 1, so);
	check_sites("uslub_cache_alloc(pick_cache(), 0)");

	l[1] = __LINE__; x[1] = uslub_cache_alloc(objs, pick_gfp());
	CHECK(x[1]);
	expect_site(l[1], __func__, 1, so);
	check_sites("uslub_cache_alloc(objs, pick_gfp())");

	l[2] = __LINE__; x[2] = uslub_cache_alloc_node(pick_cache(), 0, pick_node());
	CHECK(x[2]);
	expect_site(l[2], __func__, 1, so);
	check_sites("uslub_cache_alloc_node(pick_cache(), 0, pick_node())");

	l[3] = __LINE__; int got = uslub_cache_alloc_bulk(pick_cache(), 0, pick_count(), bulk);
	CHECK_EQ(got, 4);
	expect_site(l[3], __func__, 4, 4 * so);
	check_sites("uslub_cache_alloc_bulk(pick_cache(), 0, pick_count(), p)");

	l[4] = __LINE__; x[4] = uslub_cache_alloc_from_sheaf(pick_cache(), 0, pick_sheaf());
	CHECK(x[4]);
	expect_site(l[4], __func__, 1, so);
	check_sites("uslub_cache_alloc_from_sheaf(pick_cache(), 0, pick_sheaf())");

	/* an argument with a tagged site of its own: both sites, each its own */
	l[5] = __LINE__; x[5] = uslub_cache_alloc(pick_cache_tagged(&inner[0]), 0);
	CHECK(x[5]);
	expect_site(l[5], __func__, 1, so);
	expect_site(inner[0], "pick_cache_tagged", 1, sm);
	check_sites("uslub_cache_alloc(pick_cache_tagged(), 0)");
	l[6] = __LINE__; x[6] = uslub_cache_alloc_node(pick_cache_tagged(&inner[1]), 0, USLUB_NUMA_NO_NODE);
	CHECK(x[6]);
	expect_site(l[6], __func__, 1, so);
	expect_site(inner[1], "pick_cache_tagged", 1, sm);
	check_sites("uslub_cache_alloc_node(pick_cache_tagged(), 0, NO_NODE)");

	/* free everything: the sites leave */
	int frees[] = { 0, 1, 2, 4, 5, 6 };
	for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); i++) {
		uslub_cache_free(objs, x[frees[i]]);
		expect_site(l[frees[i]], __func__, -1, -so);
		check_sites("after a free");
	}
	uslub_cache_free_bulk(objs, 4, bulk);
	expect_site(l[3], __func__, -4, -4 * so);
	while (ntagged_meta) {
		uslub_cache_free(meta, tagged_meta[--ntagged_meta]);
		expect_site(inner[ntagged_meta], "pick_cache_tagged", -1, -sm);
	}
	check_sites("after freeing everything tagged");
}

int main(void)
{
	if (uslub_profiling_enabled() != 1) {   /* exact figures: exact mode */
		printf("allocinfo_regressions: profiling is not exact (USLUB_PROFILING=1), skipped\n");
		return 77;
	}
	double t0 = now_s();
	objs = uslub_cache_create("tag-objs", 128, 0, 0, NULL);
	meta = uslub_cache_create("tag-meta", 64, 0, 0, NULL);
	acct_cache = uslub_cache_create("tag-acct_cache", 96, 0, USLUB_ACCOUNT, NULL);
	CHECK(objs && meta && acct_cache);
	CHECK(csize(objs) != csize(meta));
	sheaf = uslub_cache_prefill_sheaf(objs, 0, 4);
	CHECK(sheaf);
	check_sites("at start");

	early_returns();
	arguments_allocate();

	uslub_cache_return_sheaf(objs, 0, sheaf);
	/* untagged objects: of meta, and of objs (the emptied sheaf's) */
	uslub_kfree_bulk((size_t)nuntagged, untagged);
	nuntagged = 0;
	check_sites("at the end");
	CHECK_EQU(slabinfo_get(objs).live_objs, 0);
	CHECK_EQU(slabinfo_get(meta).live_objs, 0);
	CHECK_EQ(uslub_cache_destroy(objs), 0);
	CHECK_EQ(uslub_cache_destroy(meta), 0);
	CHECK_EQ(uslub_cache_destroy(acct_cache), 0);
	printf("allocinfo_regressions: early returns leave no tag, allocating arguments "
	       "take none: ok (%.2f s)\n", now_s() - t0);
	return 0;
}
