/*
 * account: accounting groups (a userspace obj_cgroup; seed 004).
 * A charge is the cache's slabinfo size + obj_ext_bytes (+ a word where
 * the extension is tag-only: obj_ext_charge), to the thread's
 * current group and every ancestor; usage includes the thread's prepaid
 * stock (at most USLUB_ACCOUNT_BATCH bytes, default 8192), so each check
 * is "within one batch" first and exact after uslub_group_drain_stock().
 *   - API: the root (depth 0) exists; create: EINVAL for a NULL or empty
 *     name, names truncated to 63 bytes, depth/children/limit/usage in
 *     uslub_group_info, NULL parent == the root; set_current returns the
 *     previous group, a new thread starts in the root; delete: EINVAL for
 *     the root and NULL, EBUSY with children, EBUSY while it is the
 *     current group of this thread or of another live thread, 0 once that
 *     thread switched away or exited; uslub_group_count() follows;
 *   - charging: root-context allocations charge nobody; single, _node,
 *     bulk and sheaf allocations of an ACCOUNT cache charge the current
 *     group and its ancestors; a plain cache is charged only with
 *     USLUB_GFP_ACCOUNT (its extensions then ON_DEMAND, 16 bytes); a
 *     prefilled sheaf charges nothing until objects are taken from it;
 *     frees (single, bulk, kfree_bulk, from another thread whose current
 *     group is a third group) uncharge the group the object was charged
 *     to; uslub_group_cache_usage exact per group and cache;
 *   - limits: allocation stops at the limit (usage never above it; the
 *     failing charge really did not fit), NULL with ENOMEM, bulk 0, and
 *     nothing taken (live_objs and usage unchanged, also when the
 *     thread's stock holds some of the group's bytes); failcnt counts at
 *     the group whose limit refused (a parent's limit: the child's
 *     failcnt stays 0); unaccounted allocations still succeed; freeing
 *     one object makes room for one; a limit lowered below usage refuses
 *     everything, a raised one allows again;
 *   - reclaim: the callback of the group over its limit runs on the
 *     allocating thread with need > 0; when it frees objects every
 *     allocation (single and bulk) succeeds and usage stays within the
 *     limit; returning 0 fails the allocation after exactly one call,
 *     returning > 0 without freeing after 16 (or 17) calls; reclaims
 *     counts every call;
 *   - delete with live objects: the group is gone at once (count drops),
 *     the parent's usage is unchanged, the parent's cache usage now
 *     includes the deleted child's objects, the objcg handle count stays
 *     until those objects are freed (from two threads), then returns to
 *     its baseline;
 *   - seed 004's kselftest (test_kmem_memcg_deletion): a parent with 100
 *     children each holding objects of two caches; deleting all 100
 *     leaves the parent's usage exact and the group count where it was,
 *     no deleted child in the report; freeing everything: usage 0 and the
 *     handle count back to its baseline;
 *   - uslub_group_report_print: JSON parses and names every live group,
 *     the table names them too.
 */
#include "check.h"

#include <pthread.h>

static struct rng rng;
static size_t batch;
static int profiling;

/* USLUB_ACCOUNT_BATCH as the library reads it (default 8192). */
static size_t account_batch(void)
{
	const char *e = getenv("USLUB_ACCOUNT_BATCH");
	if (e && *e)
		return (size_t)strtoull(e, NULL, 10);
	return 8192;
}

static size_t charge_of(uslub_cache_t *s)
{
	struct uslub_slabinfo si = slabinfo_get(s);
	/* a tag-only extension (a plain cache, exact profiling) is widened
	 * with an objcg word per object by the first charge in a slab */
	size_t c = si.size + si.obj_ext_bytes + (strcmp(si.obj_ext_fields, "tag") ? 0 : sizeof(void *));
	CHECK_EQU(si.obj_ext_charge, c);
	return c;
}

static struct uslub_group_info ginfo(const uslub_group_t *g)
{
	struct uslub_group_info i;
	memset(&i, 0xa5, sizeof(i));
	CHECK_EQ(uslub_group_info(g, &i), 0);
	return i;
}

static bool is_root_ctx(uslub_group_t *g)
{
	return g == NULL || g == uslub_group_root();
}

/* usage in [want, want + batch] (the stock), then exactly want after a drain */
#define USAGE_NEAR(g, want) usage_near((g), (want), __LINE__)
static void usage_near(const uslub_group_t *g, size_t want, int line)
{
	size_t u = uslub_group_usage(g);
	if (u < want || u > want + batch)
		test_fail(__FILE__, line, "group %s: usage %zu, live charges %zu (+ at most %zu stock)",
			  ginfo(g).name, u, want, batch);
}

#define USAGE_EXACT(g, want) usage_exact((g), (want), __LINE__)
static void usage_exact(const uslub_group_t *g, size_t want, int line)
{
	uslub_group_drain_stock();
	size_t u = uslub_group_usage(g);
	if (u != want)
		test_fail(__FILE__, line, "group %s: usage %zu after draining the stock, live charges %zu",
			  ginfo(g).name, u, want);
}

#define CACHE_USAGE(g, s, objs, bytes) cache_usage_is((g), (s), (objs), (bytes), __LINE__)
static void cache_usage_is(const uslub_group_t *g, uslub_cache_t *s, unsigned long objs,
			   size_t bytes, int line)
{
	unsigned long o = 999999;
	size_t b = 999999;
	int rc = uslub_group_cache_usage(g, s, &o, &b);
	if (rc != 0 || o != objs || b != bytes)
		test_fail(__FILE__, line,
			  "uslub_group_cache_usage(%s, %s) = %d: %lu objects %zu bytes, expected %lu and %zu",
			  ginfo(g).name, uslub_cache_name(s), rc, o, b, objs, bytes);
}

/* ---- a growable array of objects ---------------------------------------- */
struct objv {
	void **p;
	size_t n, cap;
};

static void push(struct objv *v, void *p)
{
	CHECK(p);
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 64;
		v->p = realloc(v->p, v->cap * sizeof(*v->p));
		CHECK(v->p);
	}
	v->p[v->n++] = p;
}

static void free_all(uslub_cache_t *s, struct objv *v)
{
	for (size_t i = 0; i < v->n; i++)
		uslub_cache_free(s, v->p[i]);
	v->n = 0;
}

static void objv_release(struct objv *v)
{
	free(v->p);
	memset(v, 0, sizeof(*v));
}

static unsigned long live_objs(uslub_cache_t *s)
{
	return slabinfo_get(s).live_objs;
}

/* ---- threads ------------------------------------------------------------ */
struct holder {
	uslub_group_t *g;
	pthread_barrier_t *b;
	int reset;          /* switch back to the root before exiting */
	int started_root;
};

static void *hold_current(void *arg)
{
	struct holder *h = arg;
	h->started_root = is_root_ctx(uslub_group_current());
	uslub_group_set_current(h->g);
	pthread_barrier_wait(h->b); /* main: delete must say EBUSY */
	pthread_barrier_wait(h->b);
	if (h->reset)
		uslub_group_set_current(NULL);
	return NULL;
}

struct freer {
	uslub_cache_t *s;
	void **p;
	size_t n;
	uslub_group_t *cur; /* the freeing thread's own current group */
};

static void *free_thread(void *arg)
{
	struct freer *f = arg;
	uslub_group_set_current(f->cur);
	for (size_t i = 0; i < f->n; i++)
		uslub_cache_free(f->s, f->p[i]);
	uslub_group_set_current(NULL);
	return NULL; /* exit drains this thread's stock */
}

static void free_in_thread(uslub_cache_t *s, void **p, size_t n, uslub_group_t *cur)
{
	struct freer f = { s, p, n, cur };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, free_thread, &f) == 0);
	CHECK(pthread_join(th, NULL) == 0);
}

/* ---- API ---------------------------------------------------------------- */
static void test_api(void)
{
	uslub_group_t *root = uslub_group_root();
	CHECK(root);
	struct uslub_group_info ri = ginfo(root);
	CHECK_EQ(ri.depth, 0);
	CHECK(ri.name && *ri.name);
	CHECK(is_root_ctx(uslub_group_current()));
	unsigned long count0 = uslub_group_count();
	CHECK(count0 >= 1);

	errno = 0;
	CHECK(uslub_group_create(NULL, NULL, USLUB_GROUP_NO_LIMIT) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(uslub_group_create(NULL, "", USLUB_GROUP_NO_LIMIT) == NULL && errno == EINVAL);
	CHECK_EQU(uslub_group_count(), count0);

	uslub_group_t *a = uslub_group_create(NULL, "api-a", USLUB_GROUP_NO_LIMIT);
	CHECK(a);
	struct uslub_group_info ai = ginfo(a);
	CHECK(strcmp(ai.name, "api-a") == 0);
	CHECK_EQ(ai.depth, 1);
	CHECK_EQU(ai.limit, USLUB_GROUP_NO_LIMIT);
	CHECK_EQU(ai.usage, 0);
	CHECK_EQU(ai.failcnt, 0);
	CHECK_EQU(ai.reclaims, 0);
	CHECK_EQU(ai.children, 0);
	CHECK_EQU(ginfo(root).children, ri.children + 1);
	uslub_group_t *b = uslub_group_create(a, "api-b", 1u << 20);
	CHECK(b);
	struct uslub_group_info bi = ginfo(b);
	CHECK_EQ(bi.depth, 2);
	CHECK_EQU(bi.limit, 1u << 20);
	CHECK_EQU(ginfo(a).children, 1);
	uslub_group_t *c = uslub_group_create(root, "api-c-under-root", USLUB_GROUP_NO_LIMIT);
	CHECK(c);
	CHECK_EQ(ginfo(c).depth, 1);
	char longname[101];
	memset(longname, 'x', 100);
	longname[100] = 0;
	uslub_group_t *l = uslub_group_create(b, longname, USLUB_GROUP_NO_LIMIT);
	CHECK(l);
	struct uslub_group_info li = ginfo(l);
	CHECK_EQU(strlen(li.name), 63);
	CHECK(strncmp(li.name, longname, 63) == 0);
	CHECK_EQ(li.depth, 3);
	CHECK_EQU(uslub_group_count(), count0 + 4);

	errno = 0;
	CHECK(uslub_group_delete(NULL) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(uslub_group_delete(root) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(uslub_group_delete(a) == -1 && errno == EBUSY); /* has a child */
	CHECK_EQU(uslub_group_count(), count0 + 4);

	CHECK_EQ(uslub_group_set_limit(b, 4096), 0);
	CHECK_EQU(ginfo(b).limit, 4096);
	CHECK_EQ(uslub_group_set_limit(b, USLUB_GROUP_NO_LIMIT), 0);
	CHECK_EQU(ginfo(b).limit, USLUB_GROUP_NO_LIMIT);

	/* the calling thread's current group */
	CHECK(is_root_ctx(uslub_group_set_current(l)));
	CHECK(uslub_group_current() == l);
	CHECK(uslub_group_set_current(c) == l);
	errno = 0;
	CHECK(uslub_group_delete(c) == -1 && errno == EBUSY);
	CHECK(uslub_group_set_current(NULL) == c);
	CHECK(is_root_ctx(uslub_group_current()));

	/* another thread's current group: EBUSY while it is, 0 after it
	 * switched away (reset) or exited still in it (no reset) */
	for (int reset = 1; reset >= 0; reset--) {
		uslub_group_t *t = uslub_group_create(a, reset ? "api-held" : "api-held-exit",
						      USLUB_GROUP_NO_LIMIT);
		CHECK(t);
		pthread_barrier_t bar;
		CHECK(pthread_barrier_init(&bar, NULL, 2) == 0);
		struct holder h = { t, &bar, reset, 0 };
		pthread_t th;
		CHECK(pthread_create(&th, NULL, hold_current, &h) == 0);
		pthread_barrier_wait(&bar);
		errno = 0;
		CHECK_MSG(uslub_group_delete(t) == -1 && errno == EBUSY,
			  "deleting another thread's current group did not fail with EBUSY (errno %d)",
			  errno);
		pthread_barrier_wait(&bar);
		CHECK(pthread_join(th, NULL) == 0);
		CHECK_MSG(h.started_root, "a new thread did not start in the root group");
		CHECK_MSG(uslub_group_delete(t) == 0,
			  "group %s: delete after its thread %s failed (errno %d)",
			  reset ? "api-held" : "api-held-exit",
			  reset ? "switched back to the root" : "exited", errno);
		pthread_barrier_destroy(&bar);
	}

	CHECK_EQ(uslub_group_delete(l), 0);
	CHECK_EQU(ginfo(b).children, 0);
	CHECK_EQ(uslub_group_delete(b), 0);
	CHECK_EQ(uslub_group_delete(a), 0);
	CHECK_EQ(uslub_group_delete(c), 0);
	CHECK_EQU(uslub_group_count(), count0);
	CHECK_EQU(ginfo(root).children, ri.children);
}

/* ---- charging ----------------------------------------------------------- */
static void test_charging(uslub_cache_t *s, uslub_cache_t *plain)
{
	size_t cs = charge_of(s);
	uslub_group_t *root = uslub_group_root();
	uslub_group_t *g = uslub_group_create(NULL, "charge-parent", USLUB_GROUP_NO_LIMIT);
	uslub_group_t *c = uslub_group_create(g, "charge-child", USLUB_GROUP_NO_LIMIT);
	uslub_group_t *h = uslub_group_create(NULL, "charge-other", USLUB_GROUP_NO_LIMIT);
	CHECK(g && c && h);
	struct objv vs = { 0 }, vg = { 0 }, vp = { 0 }, vr = { 0 };

	/* the root is never charged */
	uslub_group_drain_stock();
	size_t root0 = uslub_group_usage(root);
	for (int i = 0; i < 50; i++)
		push(&vr, uslub_cache_alloc(s, 0));
	for (int i = 0; i < 10; i++)
		push(&vr, uslub_cache_alloc(s, USLUB_GFP_ACCOUNT));
	USAGE_EXACT(g, 0);
	USAGE_EXACT(c, 0);
	CHECK_EQU(uslub_group_usage(root), root0);
	free_all(s, &vr);
	USAGE_EXACT(g, 0);

	/* singles in the child */
	uslub_group_set_current(c);
	size_t n = 300;
	for (size_t i = 0; i < n; i++) {
		push(&vs, uslub_cache_alloc(s, 0));
		USAGE_NEAR(c, vs.n * cs);
		USAGE_NEAR(g, vs.n * cs);
	}
	USAGE_EXACT(c, n * cs);
	USAGE_EXACT(g, n * cs);
	CACHE_USAGE(c, s, n, n * cs);
	CACHE_USAGE(g, s, 0, 0);
	CACHE_USAGE(h, s, 0, 0);

	/* the parent's own objects */
	uslub_group_set_current(g);
	for (int i = 0; i < 40; i++)
		push(&vg, uslub_cache_alloc(s, 0));
	USAGE_EXACT(g, (n + 40) * cs);
	USAGE_EXACT(c, n * cs);
	CACHE_USAGE(g, s, 40, 40 * cs);

	/* a plain cache: charged only with GFP_ACCOUNT */
	uslub_group_set_current(c);
	if (!profiling)
		CHECK_EQ(slabinfo_get(plain).obj_ext, USLUB_OBJ_EXT_NONE);
	for (int i = 0; i < 30; i++)
		push(&vr, uslub_cache_alloc(plain, 0));
	USAGE_EXACT(c, n * cs);
	for (int i = 0; i < 30; i++)
		push(&vp, uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT));
	struct uslub_slabinfo psi = slabinfo_get(plain);
	/* Linux 7.3's smaller extension: the on-demand arrays hold an objcg
	 * (and a tag under sampled profiling); exact profiling's tag-only
	 * vector is widened with an objcg word per object, which the charge
	 * includes */
	bool sampling = uslub_profiling_enabled() == 2;
	if (!profiling) {
		CHECK_EQ(psi.obj_ext, USLUB_OBJ_EXT_ON_DEMAND);
		CHECK_EQU(psi.obj_ext_bytes, sampling ? 16 : 8);
	}
	CHECK_EQU(psi.obj_ext_size, sampling ? 16 : 8);
	CHECK_MSG(!strcmp(psi.obj_ext_fields, profiling ? "tag" : sampling ? "objcg+tag" : "objcg"),
		  "plain cache's extension holds %s", psi.obj_ext_fields);
	size_t cp = psi.size + psi.obj_ext_bytes + (profiling ? 8 : 0);
	CHECK_EQU(psi.obj_ext_charge, cp);
	USAGE_EXACT(c, n * cs + 30 * cp);
	USAGE_EXACT(g, (n + 40) * cs + 30 * cp);
	CACHE_USAGE(c, plain, 30, 30 * cp);

	/* bulk, _node and sheaf allocations */
	void *bp[64];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 64, bp), 64);
	for (int i = 0; i < 64; i++)
		push(&vs, bp[i]);
	CHECK_EQ(uslub_cache_alloc_bulk(plain, USLUB_GFP_ACCOUNT, 33, bp), 33);
	for (int i = 0; i < 33; i++)
		push(&vp, bp[i]);
	for (int i = 0; i < 5; i++)
		push(&vs, uslub_cache_alloc_node(s, 0, 0));
	size_t ns = vs.n, np = vp.n;
	USAGE_EXACT(c, ns * cs + np * cp);
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 12);
	CHECK(sh);
	USAGE_EXACT(c, ns * cs + np * cp); /* objects in a sheaf are nobody's yet */
	for (int i = 0; i < 5; i++)
		push(&vs, uslub_cache_alloc_from_sheaf(s, 0, sh));
	ns = vs.n;
	USAGE_EXACT(c, ns * cs + np * cp);
	uslub_cache_return_sheaf(s, 0, sh);
	USAGE_EXACT(c, ns * cs + np * cp);
	CACHE_USAGE(c, s, ns, ns * cs);
	CACHE_USAGE(c, plain, np, np * cp);
	CHECK_EQU(live_objs(s), ns + vg.n);
	uslub_group_set_current(NULL);

	/* frees: bulk, single, from another thread charged to another group */
	uslub_cache_free_bulk(s, 32, vs.p + vs.n - 32);
	vs.n -= 32;
	USAGE_EXACT(c, vs.n * cs + np * cp);
	for (int i = 0; i < 20; i++)
		uslub_cache_free(s, vs.p[--vs.n]);
	USAGE_EXACT(c, vs.n * cs + np * cp);
	free_in_thread(s, vs.p, vs.n / 2, h);
	memmove(vs.p, vs.p + vs.n / 2, (vs.n - vs.n / 2) * sizeof(void *));
	vs.n -= vs.n / 2;
	USAGE_EXACT(c, vs.n * cs + np * cp);
	USAGE_EXACT(h, 0);
	USAGE_EXACT(g, (vs.n + vg.n) * cs + np * cp);
	CACHE_USAGE(c, s, vs.n, vs.n * cs);
	CACHE_USAGE(h, s, 0, 0);

	/* kfree_bulk of both caches mixed, from another thread */
	void *mix[40];
	size_t k = 0;
	for (int i = 0; i < 20; i++) {
		mix[k++] = vs.p[--vs.n];
		mix[k++] = vp.p[--vp.n];
	}
	uslub_kfree_bulk(k, mix);
	USAGE_EXACT(c, vs.n * cs + vp.n * cp);
	free_in_thread(plain, vp.p, vp.n, h);
	vp.n = 0;
	USAGE_EXACT(c, vs.n * cs);
	USAGE_EXACT(h, 0);
	CACHE_USAGE(c, plain, 0, 0);

	free_all(s, &vs);
	free_all(s, &vg);
	free_all(plain, &vr);
	USAGE_EXACT(c, 0);
	USAGE_EXACT(g, 0);
	CACHE_USAGE(c, s, 0, 0);
	CACHE_USAGE(g, s, 0, 0);
	CHECK_EQU(live_objs(s), 0);
	CHECK_EQU(live_objs(plain), 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_validate(plain), 0);
	CHECK_EQ(uslub_group_delete(c), 0);
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_EQ(uslub_group_delete(h), 0);
	objv_release(&vs);
	objv_release(&vg);
	objv_release(&vp);
	objv_release(&vr);
}

/* ---- limits ------------------------------------------------------------- */
/* Allocate from @s under the current group until a charge is refused at
 * @lim_g (limit @limit); returns the number allocated. */
static size_t fill_to_limit(uslub_cache_t *s, uslub_gfp_t gfp, uslub_group_t *lim_g,
			    size_t limit, struct objv *v, int line)
{
	size_t cs = charge_of(s), got = 0;
	for (;;) {
		size_t u = uslub_group_usage(lim_g);
		unsigned long live = live_objs(s);
		errno = 0;
		void *p = uslub_cache_alloc(s, gfp);
		if (!p) {
			if (errno != ENOMEM)
				test_fail(__FILE__, line, "refused allocation: errno %d, not ENOMEM", errno);
			if (uslub_group_usage(lim_g) != u || live_objs(s) != live)
				test_fail(__FILE__, line,
					  "refused allocation changed usage %zu -> %zu, live_objs %lu -> %lu",
					  u, uslub_group_usage(lim_g), live, live_objs(s));
			/* it did not fit, even taking the stock into account */
			if (u + (batch > cs ? batch : cs) <= limit)
				test_fail(__FILE__, line,
					  "refused at usage %zu of limit %zu (charge %zu, batch %zu)", u,
					  limit, cs, batch);
			return got;
		}
		push(v, p);
		got++;
		if (uslub_group_usage(lim_g) > limit)
			test_fail(__FILE__, line, "usage %zu above the limit %zu",
				  uslub_group_usage(lim_g), limit);
		if (got > 1000000)
			test_fail(__FILE__, line, "the limit %zu never refused", limit);
	}
}

static void test_limits(uslub_cache_t *s, uslub_cache_t *plain)
{
	size_t cs = charge_of(s);
	size_t L = 48 * 1024 + 100;
	uslub_group_t *g = uslub_group_create(NULL, "limit-g", L);
	CHECK(g);
	struct objv v = { 0 }, vp = { 0 }, vu = { 0 };
	uslub_group_set_current(g);
	size_t got = fill_to_limit(s, 0, g, L, &v, __LINE__);
	size_t maxb = batch > cs ? batch : cs;
	CHECK_MSG(got * cs <= L && got * cs + cs + maxb > L,
		  "%zu objects of %zu bytes fit a limit of %zu", got, cs, L);
	struct uslub_group_info gi = ginfo(g);
	CHECK(gi.failcnt >= 1);
	CHECK_EQU(gi.reclaims, 0);
	CHECK(gi.usage <= L);

	/* nothing fits now: singles, bulk, GFP_ACCOUNT on a plain cache */
	uslub_group_drain_stock();
	size_t u = uslub_group_usage(g);
	CHECK_EQU(u, got * cs);
	CHECK_EQ(uslub_group_set_limit(g, u), 0);
	unsigned long f0 = ginfo(g).failcnt, live_s = live_objs(s), live_p = live_objs(plain);
	for (int i = 0; i < 5; i++) {
		errno = 0;
		CHECK(uslub_cache_alloc(s, 0) == NULL && errno == ENOMEM);
	}
	void *bp[16];
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 16, bp), 0);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(plain, USLUB_GFP_ACCOUNT, 16, bp), 0);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQU(live_objs(s), live_s);
	CHECK_EQU(live_objs(plain), live_p);
	CHECK_EQU(uslub_group_usage(g), u);
	CHECK_MSG(ginfo(g).failcnt >= f0 + 8, "failcnt %lu -> %lu after 8 refused allocations", f0,
		  ginfo(g).failcnt);
	/* unaccounted objects are not limited */
	for (int i = 0; i < 20; i++)
		push(&vu, uslub_cache_alloc(plain, 0));
	CHECK_EQU(uslub_group_usage(g), u);
	CHECK_EQ(uslub_cache_validate(s), 0);

	/* one freed makes room for one */
	uslub_cache_free(s, v.p[--v.n]);
	push(&v, uslub_cache_alloc(s, 0));
	errno = 0;
	CHECK(uslub_cache_alloc(s, 0) == NULL && errno == ENOMEM);
	USAGE_EXACT(g, v.n * cs);

	/* a limit below the usage refuses; raised, allocation works again */
	CHECK_EQ(uslub_group_set_limit(g, u / 2), 0);
	CHECK_EQU(ginfo(g).limit, u / 2);
	errno = 0;
	CHECK(uslub_cache_alloc(s, 0) == NULL && errno == ENOMEM);
	CHECK_EQU(uslub_group_usage(g), u);
	CHECK_EQ(uslub_group_set_limit(g, USLUB_GROUP_NO_LIMIT), 0);
	for (int i = 0; i < 100; i++)
		push(&v, uslub_cache_alloc(s, 0));
	USAGE_EXACT(g, v.n * cs);
	uslub_group_set_current(NULL);
	free_all(s, &v);
	free_all(plain, &vu);
	USAGE_EXACT(g, 0);

	/* a refusal changes nothing, also when the thread's stock holds some
	 * bytes of the group (a freed smaller object) that do not cover it */
	uslub_group_t *q = uslub_group_create(NULL, "limit-stock", USLUB_GROUP_NO_LIMIT);
	CHECK(q);
	uslub_group_set_current(q);
	void *small = uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT);
	CHECK(small);
	for (int i = 0; i < 3; i++)
		push(&v, uslub_cache_alloc(s, 0));
	uslub_group_drain_stock();
	u = uslub_group_usage(q);
	CHECK_EQU(u, 3 * cs + charge_of(plain));
	CHECK_EQ(uslub_group_set_limit(q, u), 0);
	uslub_cache_free(plain, small);
	size_t u1 = uslub_group_usage(q);
	CHECK(u1 == u || u1 == u - charge_of(plain));
	live_s = live_objs(s);
	errno = 0;
	CHECK(uslub_cache_alloc(s, 0) == NULL && errno == ENOMEM);
	CHECK_MSG(uslub_group_usage(q) == u1 && live_objs(s) == live_s,
		  "a refused charge changed usage %zu -> %zu (the freed %zu bytes in the stock), "
		  "live_objs %lu -> %lu", u1, uslub_group_usage(q), charge_of(plain), live_s,
		  live_objs(s));
	uslub_group_set_current(NULL);
	free_all(s, &v);
	USAGE_EXACT(q, 0);
	CHECK_EQ(uslub_group_delete(q), 0);

	/* a parent's limit: refusals count at the parent, not the child */
	size_t Lp = 40 * 1024;
	uslub_group_t *p = uslub_group_create(NULL, "limit-parent", Lp);
	uslub_group_t *c = uslub_group_create(p, "limit-child", USLUB_GROUP_NO_LIMIT);
	CHECK(p && c);
	uslub_group_set_current(c);
	got = fill_to_limit(s, 0, p, Lp, &v, __LINE__);
	CHECK(got * cs <= Lp && got * cs + cs + maxb > Lp);
	CHECK(ginfo(p).failcnt >= 1);
	CHECK_EQU(ginfo(c).failcnt, 0);
	/* GFP_ACCOUNT objects of the plain cache count against the same limit */
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_set_limit(p, uslub_group_usage(p) + 10 * charge_of(plain)), 0);
	size_t gotp = fill_to_limit(plain, USLUB_GFP_ACCOUNT, p, ginfo(p).limit, &vp, __LINE__);
	CHECK_MSG(gotp <= 10, "%zu plain objects fit where 10 should", gotp);
	CHECK_EQU(ginfo(c).failcnt, 0);
	/* the child's own, smaller limit refuses at the child */
	CHECK_EQ(uslub_group_set_limit(p, USLUB_GROUP_NO_LIMIT), 0);
	unsigned long pf = ginfo(p).failcnt;
	uslub_group_drain_stock();
	size_t Lc = uslub_group_usage(c) + 20 * cs + 50;
	CHECK_EQ(uslub_group_set_limit(c, Lc), 0);
	got = fill_to_limit(s, 0, c, Lc, &v, __LINE__);
	CHECK(got <= 20);
	CHECK(ginfo(c).failcnt >= 1);
	CHECK_EQU(ginfo(p).failcnt, pf);
	uslub_group_set_current(NULL);
	free_all(s, &v);
	free_all(plain, &vp);
	USAGE_EXACT(p, 0);
	USAGE_EXACT(c, 0);
	CHECK_EQ(uslub_group_delete(c), 0);
	CHECK_EQ(uslub_group_delete(p), 0);
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_EQU(live_objs(s), 0);
	objv_release(&v);
	objv_release(&vp);
	objv_release(&vu);
}

/* ---- reclaim ------------------------------------------------------------ */
struct reclaim_state {
	pthread_t thread;
	uslub_group_t *expect;
	uslub_cache_t *s;
	struct objv *victims; /* freed oldest first; NULL: free nothing */
	size_t head;
	size_t per_call;
	size_t ret;           /* returned when there are no victims */
	size_t charge;
	unsigned long calls, bad_thread, bad_group, zero_need;
};

static size_t reclaim_cb(uslub_group_t *g, size_t need, void *arg)
{
	struct reclaim_state *r = arg;
	r->calls++;
	if (!pthread_equal(pthread_self(), r->thread))
		r->bad_thread++;
	if (g != r->expect)
		r->bad_group++;
	if (!need)
		r->zero_need++;
	if (!r->victims)
		return r->ret;
	size_t freed = 0;
	while (freed < r->per_call && r->head < r->victims->n) {
		uslub_cache_free(r->s, r->victims->p[r->head]);
		r->victims->p[r->head++] = NULL;
		freed++;
	}
	return freed * r->charge;
}

static void test_reclaim(uslub_cache_t *s)
{
	size_t cs = charge_of(s);
	size_t L = 32 * 1024;
	uslub_group_t *p = uslub_group_create(NULL, "reclaim-parent", L);
	uslub_group_t *c = uslub_group_create(p, "reclaim-child", USLUB_GROUP_NO_LIMIT);
	CHECK(p && c);
	struct objv v = { 0 };
	struct reclaim_state r;
	memset(&r, 0, sizeof(r));
	r.thread = pthread_self();
	r.expect = p; /* the group over its limit, not the allocating child */
	r.s = s;
	r.victims = &v;
	r.per_call = 8;
	r.charge = cs;
	uslub_group_set_reclaim(p, reclaim_cb, &r);
	uslub_group_set_current(c);

	/* the callback frees the oldest objects: every allocation succeeds */
	size_t total = 4 * L / cs;
	for (size_t i = 0; i < total;) {
		if (i % 16 == 0) {
			void *bp[8];
			errno = 0;
			int got = uslub_cache_alloc_bulk(s, 0, 8, bp);
			CHECK_MSG(got == 8, "bulk of 8 with a reclaiming callback: %d (errno %d)", got,
				  errno);
			for (int k = 0; k < 8; k++)
				push(&v, bp[k]);
			i += 8;
		} else {
			void *o = uslub_cache_alloc(s, 0);
			CHECK_MSG(o, "allocation %zu with a reclaiming callback failed (errno %d)", i,
				  errno);
			push(&v, o);
			i++;
		}
		CHECK(uslub_group_usage(p) <= L);
	}
	size_t live = v.n - r.head;
	CHECK_MSG(r.calls > 0 && r.head > 0, "reclaim never called (calls %lu)", r.calls);
	CHECK_EQ(r.bad_thread, 0);
	CHECK_EQ(r.bad_group, 0);
	CHECK_EQ(r.zero_need, 0);
	CHECK_EQU(ginfo(p).reclaims, r.calls);
	CHECK_EQU(ginfo(c).reclaims, 0);
	CHECK_EQU(live_objs(s), live);
	USAGE_EXACT(p, live * cs);
	USAGE_EXACT(c, live * cs);
	CACHE_USAGE(c, s, live, live * cs);
	printf("reclaim: %zu allocations under a %zu-byte limit, %lu callback calls freed %zu\n",
	       total, L, r.calls, r.head);

	/* a callback that frees nothing and says so: one call, then ENOMEM */
	r.victims = NULL;
	r.ret = 0;
	unsigned long calls0 = r.calls;
	for (;;) {
		unsigned long before = r.calls;
		errno = 0;
		void *o = uslub_cache_alloc(s, 0);
		if (o) {
			CHECK_EQU(r.calls, before);
			push(&v, o);
			continue;
		}
		CHECK_EQ(errno, ENOMEM);
		CHECK_MSG(r.calls == before + 1,
			  "callback returning 0: called %lu times for one failing allocation",
			  r.calls - before);
		break;
	}
	CHECK(r.calls == calls0 + 1);
	CHECK_EQU(ginfo(p).reclaims, r.calls);

	/* a callback that claims progress but frees nothing: at most 16 retries */
	r.ret = 4096;
	unsigned long before = r.calls;
	unsigned long f0 = ginfo(p).failcnt;
	size_t u0 = uslub_group_usage(p);
	unsigned long l0 = live_objs(s);
	errno = 0;
	CHECK(uslub_cache_alloc(s, 0) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_MSG(r.calls - before >= 16 && r.calls - before <= 17,
		  "callback claiming progress: called %lu times (16 retries expected)",
		  r.calls - before);
	CHECK_EQU(ginfo(p).reclaims, r.calls);
	CHECK(ginfo(p).failcnt > f0);
	CHECK_EQU(uslub_group_usage(p), u0);
	CHECK_EQU(live_objs(s), l0);
	/* bulk too */
	before = r.calls;
	void *bp[4];
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 4, bp), 0);
	CHECK_EQ(errno, ENOMEM);
	CHECK(r.calls > before);
	CHECK_EQU(ginfo(p).reclaims, r.calls);
	CHECK_EQU(live_objs(s), l0);
	CHECK_EQ(r.bad_thread, 0);
	CHECK_EQ(r.bad_group, 0);
	CHECK_EQ(r.zero_need, 0);

	/* without a callback: plain refusal, no more calls */
	uslub_group_set_reclaim(p, NULL, NULL);
	before = r.calls;
	CHECK(uslub_cache_alloc(s, 0) == NULL);
	CHECK_EQU(r.calls, before);
	CHECK_EQU(ginfo(p).reclaims, r.calls);

	uslub_group_set_current(NULL);
	for (size_t i = r.head; i < v.n; i++)
		uslub_cache_free(s, v.p[i]);
	USAGE_EXACT(p, 0);
	CHECK_EQU(live_objs(s), 0);
	CHECK_EQ(uslub_group_delete(c), 0);
	CHECK_EQ(uslub_group_delete(p), 0);
	objv_release(&v);
}

/* ---- deleting a group with live objects --------------------------------- */
static void test_reparent(uslub_cache_t *s, uslub_cache_t *plain)
{
	size_t cs = charge_of(s);
	uslub_group_t *p = uslub_group_create(NULL, "reparent-parent", USLUB_GROUP_NO_LIMIT);
	CHECK(p);
	struct objv own = { 0 }, vs = { 0 }, vp = { 0 };
	uslub_group_set_current(p);
	for (int i = 0; i < 10; i++)
		push(&own, uslub_cache_alloc(s, 0));
	uslub_group_set_current(NULL);
	uslub_group_drain_stock();
	unsigned long objcg0 = uslub_objcg_count(), groups0 = uslub_group_count();

	uslub_group_t *c = uslub_group_create(p, "reparent-child", USLUB_GROUP_NO_LIMIT);
	CHECK(c);
	CHECK_EQU(uslub_group_count(), groups0 + 1);
	uslub_group_set_current(c);
	for (int i = 0; i < 100; i++)
		push(&vs, uslub_cache_alloc(s, 0));
	for (int i = 0; i < 20; i++)
		push(&vp, uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT));
	uslub_group_set_current(NULL);
	size_t cp = charge_of(plain);
	size_t want = (own.n + vs.n) * cs + vp.n * cp;
	USAGE_EXACT(p, want);
	unsigned long objcg1 = uslub_objcg_count();
	CHECK(objcg1 >= objcg0);

	CHECK_EQ(uslub_group_delete(c), 0);
	CHECK_EQU(uslub_group_count(), groups0);
	CHECK_EQU(ginfo(p).children, 0);
	USAGE_EXACT(p, want);
	CACHE_USAGE(p, s, own.n + vs.n, (own.n + vs.n) * cs);
	CACHE_USAGE(p, plain, vp.n, vp.n * cp);
	CHECK_MSG(uslub_objcg_count() == objcg1,
		  "objcg count %lu after deleting a group with live objects, was %lu",
		  uslub_objcg_count(), objcg1);

	/* the deleted child's objects go, half from another thread */
	free_in_thread(s, vs.p, vs.n / 2, NULL);
	memmove(vs.p, vs.p + vs.n / 2, (vs.n - vs.n / 2) * sizeof(void *));
	vs.n -= vs.n / 2;
	USAGE_EXACT(p, (own.n + vs.n) * cs + vp.n * cp);
	CACHE_USAGE(p, s, own.n + vs.n, (own.n + vs.n) * cs);
	CHECK_EQU(uslub_objcg_count(), objcg1);
	free_all(s, &vs);
	free_in_thread(plain, vp.p, vp.n, NULL);
	vp.n = 0;
	USAGE_EXACT(p, own.n * cs);
	CACHE_USAGE(p, s, own.n, own.n * cs);
	CACHE_USAGE(p, plain, 0, 0);
	CHECK_MSG(uslub_objcg_count() == objcg0,
		  "objcg count %lu after every object of the deleted group was freed, baseline %lu",
		  uslub_objcg_count(), objcg0);
	free_all(s, &own);
	USAGE_EXACT(p, 0);
	CHECK_EQ(uslub_group_delete(p), 0);
	CHECK_EQU(uslub_group_count(), groups0 - 1);
	objv_release(&own);
	objv_release(&vs);
	objv_release(&vp);
}

/* ---- reports ------------------------------------------------------------ */
static char *report_string(int fmt)
{
	return print_to_string(uslub_group_report_print, fmt);
}

/* ---- seed 004: a parent's 100 children deleted with live objects --------- */
#define NCHILD 100

static void test_kmem_deletion(uslub_cache_t *s, uslub_cache_t *plain)
{
	size_t cs = charge_of(s);
	uslub_group_t *p = uslub_group_create(NULL, "kmem-parent", USLUB_GROUP_NO_LIMIT);
	CHECK(p);
	/* one object of its own, so its handle exists before the baseline */
	uslub_group_set_current(p);
	void *own = uslub_cache_alloc(s, 0);
	CHECK(own);
	uslub_group_set_current(NULL);
	uslub_group_drain_stock();
	unsigned long groups0 = uslub_group_count(), objcg0 = uslub_objcg_count();

	uslub_group_t *ch[NCHILD];
	struct objv vs[NCHILD], vp[NCHILD];
	memset(vs, 0, sizeof(vs));
	memset(vp, 0, sizeof(vp));
	size_t ns = 0, np = 0;
	for (int i = 0; i < NCHILD; i++) {
		char name[32];
		snprintf(name, sizeof(name), "kmem-child-%d", i);
		ch[i] = uslub_group_create(p, name, USLUB_GROUP_NO_LIMIT);
		CHECK(ch[i]);
		uslub_group_set_current(ch[i]);
		size_t k = 1 + (size_t)rng_below(&rng, 40);
		if (i % 3 == 0) {
			void *bp[40];
			CHECK_EQ(uslub_cache_alloc_bulk(s, 0, k, bp), (long long)k);
			for (size_t j = 0; j < k; j++)
				push(&vs[i], bp[j]);
		} else {
			for (size_t j = 0; j < k; j++)
				push(&vs[i], uslub_cache_alloc(s, 0));
		}
		size_t m = (size_t)rng_below(&rng, 10);
		for (size_t j = 0; j < m; j++)
			push(&vp[i], uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT));
		ns += k;
		np += m;
	}
	uslub_group_set_current(NULL);
	size_t cp = charge_of(plain);
	CHECK_EQU(uslub_group_count(), groups0 + NCHILD);
	CHECK_EQU(ginfo(p).children, NCHILD);
	size_t want = (1 + ns) * cs + np * cp;
	USAGE_EXACT(p, want);
	for (int i = 0; i < NCHILD; i++) {
		USAGE_EXACT(ch[i], vs[i].n * cs + vp[i].n * cp);
		CACHE_USAGE(ch[i], s, vs[i].n, vs[i].n * cs);
	}
	char *j = report_string(USLUB_FMT_JSON);
	CHECK_MSG(json_valid(j), "group report JSON does not parse:\n%s", j);
	CHECK(strstr(j, "\"kmem-parent\""));
	CHECK(strstr(j, "\"kmem-child-0\"") && strstr(j, "\"kmem-child-99\""));
	free(j);

	for (int i = 0; i < NCHILD; i++)
		CHECK_MSG(uslub_group_delete(ch[i]) == 0, "deleting kmem-child-%d: errno %d", i,
			  errno);
	CHECK_EQU(uslub_group_count(), groups0);
	CHECK_EQU(ginfo(p).children, 0);
	USAGE_EXACT(p, want);
	CACHE_USAGE(p, s, 1 + ns, (1 + ns) * cs);
	CACHE_USAGE(p, plain, np, np * cp);
	j = report_string(USLUB_FMT_JSON);
	CHECK_MSG(json_valid(j), "group report JSON does not parse:\n%s", j);
	CHECK(strstr(j, "\"kmem-parent\""));
	CHECK_MSG(!strstr(j, "kmem-child-"), "a deleted group is still in the report:\n%s", j);
	free(j);

	/* free everything, odd children from another thread */
	struct objv odd = { 0 };
	for (int i = 0; i < NCHILD; i++) {
		if (i % 2) {
			for (size_t k = 0; k < vs[i].n; k++)
				push(&odd, vs[i].p[k]);
			vs[i].n = 0;
		} else {
			free_all(s, &vs[i]);
		}
		free_all(plain, &vp[i]);
	}
	free_in_thread(s, odd.p, odd.n, NULL);
	USAGE_EXACT(p, cs);
	CACHE_USAGE(p, s, 1, cs);
	CACHE_USAGE(p, plain, 0, 0);
	CHECK_MSG(uslub_objcg_count() == objcg0,
		  "objcg count %lu after freeing every object of 100 deleted groups, baseline %lu",
		  uslub_objcg_count(), objcg0);
	uslub_cache_free(s, own);
	USAGE_EXACT(p, 0);
	CHECK_EQ(uslub_group_delete(p), 0);
	CHECK_EQU(uslub_group_count(), groups0 - 1);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_validate(plain), 0);
	for (int i = 0; i < NCHILD; i++) {
		objv_release(&vs[i]);
		objv_release(&vp[i]);
	}
	objv_release(&odd);
	printf("kmem deletion: 100 children, %zu + %zu objects, parent usage exact\n", ns, np);
}

static void test_report(uslub_cache_t *s, uslub_cache_t *plain)
{
	uslub_group_t *a = uslub_group_create(NULL, "report-alpha", USLUB_GROUP_NO_LIMIT);
	uslub_group_t *b = uslub_group_create(a, "report-beta", USLUB_GROUP_NO_LIMIT);
	uslub_group_t *e = uslub_group_create(NULL, "report-empty", USLUB_GROUP_NO_LIMIT);
	CHECK(a && b && e);
	struct objv va = { 0 }, vb = { 0 };
	uslub_group_set_current(a);
	for (int i = 0; i < 7; i++)
		push(&va, uslub_cache_alloc(s, 0));
	uslub_group_set_current(b);
	for (int i = 0; i < 5; i++)
		push(&vb, uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT));
	uslub_group_set_current(NULL);
	char *j = report_string(USLUB_FMT_JSON);
	CHECK_MSG(json_valid(j), "group report JSON does not parse:\n%s", j);
	CHECK_MSG(strstr(j, "\"report-alpha\"") && strstr(j, "\"report-beta\"") &&
			  strstr(j, "\"report-empty\""),
		  "a live group is missing from the report:\n%s", j);
	CHECK(strstr(j, uslub_cache_name(s)) && strstr(j, uslub_cache_name(plain)));
	free(j);
	char *t = report_string(USLUB_FMT_TABLE);
	CHECK(strlen(t) > 0);
	CHECK_MSG(strstr(t, "report-alpha") && strstr(t, "report-beta"),
		  "a live group is missing from the table:\n%s", t);
	free(t);
	free_all(s, &va);
	free_all(plain, &vb);
	USAGE_EXACT(a, 0);
	CHECK_EQ(uslub_group_delete(b), 0);
	CHECK_EQ(uslub_group_delete(a), 0);
	CHECK_EQ(uslub_group_delete(e), 0);
	objv_release(&va);
	objv_release(&vb);
}

int main(void)
{
	test_seed(0xacc0004);
	rng.s = test_seed_value;
	batch = account_batch();
	profiling = uslub_profiling_enabled() == 1;   /* exact: every cache has extensions */
	double t0 = now_s();
	unsigned long err0 = uslub_error_count();
	unsigned long groups0 = uslub_group_count();

	uslub_cache_t *s = uslub_cache_create("account-200", 200, 0, USLUB_ACCOUNT, NULL);
	uslub_cache_t *plain = uslub_cache_create("account-plain-96", 96, 0, 0, NULL);
	CHECK(s && plain);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(si.obj_ext != USLUB_OBJ_EXT_NONE && si.obj_ext != USLUB_OBJ_EXT_ON_DEMAND);

	test_api();
	test_charging(s, plain);
	test_limits(s, plain);
	test_reclaim(s);
	test_reparent(s, plain);
	test_kmem_deletion(s, plain);
	test_report(s, plain);

	CHECK_EQU(uslub_group_count(), groups0);
	CHECK_EQU(uslub_error_count(), err0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(plain), 0);
	printf("account: ok: charge %zu bytes per object (%s), batch %zu, %.2f s\n",
	       si.size + si.obj_ext_bytes, uslub_obj_ext_placement_name(si.obj_ext), batch,
	       now_s() - t0);
	return 0;
}
