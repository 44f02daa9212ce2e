/*
 * allocinfo: allocation profiling (USLUB_PROFILING=1, set by CTest; skips
 * with 77 when profiling is off).
 * Every allocation macro (uslub_cache_alloc, _alloc_node, _alloc_bulk,
 * _alloc_from_sheaf) tags its objects with its call site; uslub_allocinfo()
 * lists the sites with live objects. The test drives random traffic
 * through seven call sites of this file over five caches (an ARRAY, a
 * PADDING and a LEFTOVER placement, an ACCOUNT cache charged to a group,
 * a small one), with GFP_ZERO, bulk allocations, prefilled sheaves,
 * single/bulk/kfree_bulk frees, frees from other threads, and worker
 * threads that allocate at the same sites (concurrently, handing objects
 * to each other) and exit. It keeps its own model of each site's live
 * objects and bytes (live objects * slabinfo size of their cache) keyed
 * by __LINE__. At each checkpoint (all other threads joined):
 *   - the entries of uslub_allocinfo() whose file is this file are
 *     exactly the model's sites with live objects: same line, func,
 *     calls and bytes, each once; no site without live objects is listed;
 *   - every entry has calls > 0 and bytes > 0, sorted by bytes (largest
 *     first); the return value is the number of sites, also when @max
 *     is smaller (and the first entry is the same);
 *   - objects allocated through *_noprof or the plain exported function
 *     (untagged) count nowhere;
 *   - the ACCOUNT cache's objects are charged exactly (the extension
 *     holds both the tag and the group), and each object's header is
 *     intact;
 *   - uslub_allocinfo_print: the JSON parses and names each live site's
 *     function, the table too;
 *   - every cache has extensions (obj_ext != NONE, 16 bytes).
 * At the end everything is freed: no site of this file is listed.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

/* The plain name is also exported as an untagged function (see uslub.h);
 * the parentheses keep the macro from expanding. */
void *(uslub_cache_alloc)(uslub_cache_t *s, uslub_gfp_t gfp);

#define NCACHES 5
#define MAX_SITES 16
#define MAX_LIVE 60000
#define SOFT_LIVE 5000  /* per thread: above it, only frees */
#define NTHREADS 3
#define XSLOTS 256

static uslub_cache_t *caches[NCACHES];
static size_t csize[NCACHES];   /* slabinfo size: what a site is charged */
static size_t osize[NCACHES];   /* object_size */
static uslub_group_t *grp;
static const int ACCT = 3;       /* the ACCOUNT cache's index */

/* ---- the model: live objects and bytes per call site -------------------- */
struct msite {
	int line;
	const char *func;
	int64_t calls, bytes;
};
static struct msite msites[MAX_SITES];
static int nmsites;
static pthread_mutex_t mlock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long acct_live; /* live objects of the ACCOUNT cache */

static struct msite *msite(int line, const char *func)
{
	for (int i = 0; i < nmsites; i++)
		if (msites[i].line == line)
			return &msites[i];
	CHECK(nmsites < MAX_SITES);
	msites[nmsites] = (struct msite){ line, func, 0, 0 };
	return &msites[nmsites++];
}

/* An object starts with its header (objects are >= 24 bytes). */
struct hdr {
	uint32_t line;  /* 0: untagged */
	uint32_t cache;
	uint64_t check;
};

static uint64_t hdr_hash(const void *p, uint32_t line, uint32_t cache)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull ^ ((uint64_t)line << 32 | cache);
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

static void born(void *p, int cache, int line, const char *func, bool zeroed)
{
	CHECK_MSG(p, "allocation from cache %d at line %d failed (errno %d)", cache, line, errno);
	if (zeroed)
		for (size_t i = 0; i < osize[cache]; i++)
			CHECK_MSG(!((unsigned char *)p)[i], "GFP_ZERO object byte %zu not zero", i);
	struct hdr *h = p;
	h->line = (uint32_t)line;
	h->cache = (uint32_t)cache;
	h->check = hdr_hash(p, h->line, h->cache);
	if (cache == ACCT)
		atomic_fetch_add(&acct_live, 1);
	if (!line)
		return;
	pthread_mutex_lock(&mlock);
	struct msite *m = msite(line, func);
	m->calls++;
	m->bytes += (int64_t)csize[cache];
	pthread_mutex_unlock(&mlock);
}

/* Check the header, take the object off the model; the caller frees it. */
static int dying(void *p)
{
	struct hdr *h = p;
	CHECK_MSG(h->cache < NCACHES && h->check == hdr_hash(p, h->line, h->cache),
		  "object %p: header corrupted (line %u cache %u)", p, h->line, h->cache);
	int cache = (int)h->cache;
	if (cache == ACCT)
		atomic_fetch_sub(&acct_live, 1);
	if (h->line) {
		pthread_mutex_lock(&mlock);
		struct msite *m = msite((int)h->line, NULL);
		m->calls--;
		m->bytes -= (int64_t)csize[cache];
		CHECK(m->calls >= 0);
		pthread_mutex_unlock(&mlock);
	}
	h->check = ~h->check;
	return cache;
}

static void kill_obj(void *p)
{
	int c = dying(p);
	uslub_cache_free(caches[c], p);
}

/* ---- call sites: one tag each; w->line and w->func say which ------------------- */
struct where {
	int line;
	const char *func;
};

static void *site_alloc(uslub_cache_t *s, struct where *w)
{
	w->line = __LINE__; w->func = __func__; return uslub_cache_alloc(s, 0);
}

static void *site_zero(uslub_cache_t *s, struct where *w)
{
	w->line = __LINE__; w->func = __func__; return uslub_cache_alloc(s, USLUB_GFP_ZERO);
}

static void *site_node(uslub_cache_t *s, struct where *w)
{
	w->line = __LINE__; w->func = __func__; return uslub_cache_alloc_node(s, 0, 0);
}

static int site_bulk(uslub_cache_t *s, size_t n, void **p, struct where *w)
{
	w->line = __LINE__; w->func = __func__; return uslub_cache_alloc_bulk(s, 0, n, p);
}

static void *site_sheaf(uslub_cache_t *s, struct uslub_sheaf *sh, struct where *w)
{
	w->line = __LINE__; w->func = __func__; return uslub_cache_alloc_from_sheaf(s, 0, sh);
}

static void *site_worker(uslub_cache_t *s, struct where *w)
{
	w->line = __LINE__; w->func = __func__; return uslub_cache_alloc(s, 0);
}

/* ---- a set of live objects (per thread) --------------------------------- */
struct live {
	void **p;
	size_t n;
};

static void live_add(struct live *l, void *p)
{
	CHECK(l->n < MAX_LIVE);
	l->p[l->n++] = p;
}

static void *live_take(struct live *l, struct rng *r)
{
	size_t i = (size_t)rng_below(r, l->n);
	void *p = l->p[i];
	l->p[i] = l->p[--l->n];
	return p;
}

/* One random operation on @l (any thread). */
static void one_op(struct live *l, struct rng *r, bool worker)
{
	unsigned op = (unsigned)rng_below(r, 100);
	int c = (int)rng_below(r, NCACHES);
	uslub_cache_t *s = caches[c];
	struct where w = { 0, NULL };
	if (l->n > SOFT_LIVE || (op >= 45 && op < 85 && l->n)) {
		/* frees: single, or a bulk of one cache, or kfree_bulk mixed */
		unsigned kind = (unsigned)rng_below(r, 8);
		if (kind == 0 || kind == 1) {
			void *p[16];
			size_t k = 0, want = 1 + (size_t)rng_below(r, 16);
			while (k < want && l->n) {
				p[k] = live_take(l, r);
				int pc = dying(p[k]);
				if (kind == 0 && pc != c) {
					uslub_cache_free(caches[pc], p[k]); /* not this cache's */
					continue;
				}
				k++;
			}
			if (kind == 0)
				uslub_cache_free_bulk(s, k, p);
			else
				uslub_kfree_bulk(k, p);
		} else {
			kill_obj(live_take(l, r));
		}
		return;
	}
	if (op < 25) {
		unsigned k = (unsigned)rng_below(r, 3);
		void *p = k == 0 ? site_alloc(s, &w) : k == 1 ? site_zero(s, &w) :
			  worker ? site_worker(s, &w) : site_node(s, &w);
		born(p, c, w.line, w.func, k == 1);
		live_add(l, p);
	} else if (op < 32) {
		void *p[32];
		size_t n = 1 + (size_t)rng_below(r, 32);
		CHECK_EQ(site_bulk(s, n, p, &w), (long long)n);
		for (size_t i = 0; i < n; i++) {
			born(p[i], c, w.line, w.func, false);
			live_add(l, p[i]);
		}
	} else if (op < 35) {
		/* objects in a prefilled sheaf are untagged until taken */
		unsigned want = 1 + (unsigned)rng_below(r, 12);
		struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, want);
		CHECK(sh);
		for (unsigned i = 0, take = (unsigned)rng_below(r, want + 1); i < take; i++) {
			void *p = site_sheaf(s, sh, &w);
			born(p, c, w.line, w.func, false);
			live_add(l, p);
		}
		uslub_cache_return_sheaf(s, 0, sh);
	} else if (op < 40) {
		/* untagged: the _noprof function and the exported plain function */
		void *p = op < 38 ? uslub_cache_alloc_noprof(s, 0) : (uslub_cache_alloc)(s, 0);
		born(p, c, 0, NULL, false);
		live_add(l, p);
	} else {
		void *p[4];
		CHECK_EQ(uslub_cache_alloc_bulk_noprof(s, 0, 4, p), 4);
		for (int i = 0; i < 4; i++) {
			born(p[i], c, 0, NULL, false);
			live_add(l, p[i]);
		}
	}
}

/* ---- checkpoints -------------------------------------------------------- */
static char *allocinfo_string(int fmt)
{
	return print_to_string(uslub_allocinfo_print, fmt);
}

static struct uslub_allocinfo out[1024];
static unsigned long checkpoints;

/* USLUB_PROFILING=sample: allocinfo holds estimates, so a site with live
 * objects may be listed with any positive figures, or not at all. A
 * sampled allocation takes the tag the thread's last tagged call left
 * (inline hits leave it), so an untagged (_noprof) object may be counted
 * at such a site while it lives: a site without live objects is checked
 * at exactly 0 (weights added and subtracted alike: not listed) once
 * every object is gone (@all_freed). The placement checks are exact
 * mode's. */
static int sampled, all_freed;

static void check_allocinfo(int line)
{
	size_t n = uslub_allocinfo(out, 1024);
	if (n > 1024)
		test_fail(__FILE__, line, "%zu call sites, more than this test can hold", n);
	struct uslub_allocinfo one;
	size_t n1 = uslub_allocinfo(&one, 1);
	if (n1 != n)
		test_fail(__FILE__, line, "uslub_allocinfo(max 1024) = %zu, (max 1) = %zu", n, n1);
	if (n && (one.line != out[0].line || one.bytes != out[0].bytes ||
		  strcmp(one.file, out[0].file)))
		test_fail(__FILE__, line, "first entry differs between max 1 and max 1024");
	CHECK_EQU(uslub_allocinfo(NULL, 0), n);
	bool seen[MAX_SITES] = { false };
	int ours = 0;
	for (size_t i = 0; i < n; i++) {
		const struct uslub_allocinfo *a = &out[i];
		if (a->calls <= 0 || a->bytes <= 0)
			test_fail(__FILE__, line, "entry %s:%u: calls %" PRId64 " bytes %" PRId64, a->file,
				  a->line, a->calls, a->bytes);
		if (i && out[i - 1].bytes < a->bytes)
			test_fail(__FILE__, line, "entries %zu and %zu not sorted by bytes: %" PRId64
				  " < %" PRId64, i - 1, i, out[i - 1].bytes, a->bytes);
		if (!a->file || strcmp(a->file, __FILE__))
			continue;
		int k;
		for (k = 0; k < nmsites; k++)
			if (msites[k].line == (int)a->line)
				break;
		if (k == nmsites)
			test_fail(__FILE__, line, "allocinfo lists line %u (%s), not a call site", a->line,
				  a->func);
		struct msite *m = &msites[k];
		if (seen[k])
			test_fail(__FILE__, line, "line %d listed twice", m->line);
		seen[k] = true;
		ours++;
		if (sampled ? all_freed && m->calls == 0 :
			      a->calls != m->calls || a->bytes != m->bytes)
			test_fail(__FILE__, line,
				  "site %s line %d: allocinfo says %" PRId64 " objects %" PRId64
				  " bytes, the model %" PRId64 " objects %" PRId64 " bytes",
				  m->func, m->line, a->calls, a->bytes, m->calls, m->bytes);
		if (!a->func || strcmp(a->func, m->func))
			test_fail(__FILE__, line, "line %d: func %s, expected %s", m->line,
				  a->func ? a->func : "(null)", m->func);
	}
	char *j = allocinfo_string(USLUB_FMT_JSON);
	if (!json_valid(j))
		test_fail(__FILE__, line, "allocinfo JSON does not parse:\n%s", j);
	char *t = allocinfo_string(USLUB_FMT_TABLE);
	for (int k = 0; k < nmsites; k++) {
		if (msites[k].calls == 0 || (sampled && !seen[k]))
			continue;
		if (!seen[k])
			test_fail(__FILE__, line, "site %s line %d has %" PRId64 " live objects, not listed",
				  msites[k].func, msites[k].line, msites[k].calls);
		if (!strstr(j, msites[k].func) || !strstr(t, msites[k].func))
			test_fail(__FILE__, line, "the allocinfo report does not name %s",
				  msites[k].func);
	}
	free(j);
	free(t);
	/* the ACCOUNT cache's charges (threads joined, this thread's stock drained) */
	uslub_group_drain_stock();
	struct uslub_slabinfo si = slabinfo_get(caches[ACCT]);
	size_t want = (size_t)atomic_load(&acct_live) * si.obj_ext_charge;
	if (uslub_group_usage(grp) != want)
		test_fail(__FILE__, line, "group usage %zu, %ld live ACCOUNT objects charge %zu",
			  uslub_group_usage(grp), atomic_load(&acct_live), want);
	checkpoints++;
}

/* ---- threads ------------------------------------------------------------ */
static _Atomic(void *) xslots[XSLOTS];
static pthread_barrier_t start; /* concurrent workers start at once */
static int barrier_n;

struct worker {
	pthread_t th;
	struct rng rng;
	struct live live;
	void **frees;    /* objects to free first (from the main thread) */
	size_t nfrees;
	long ops;
	bool exchange;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uslub_group_set_current(grp);
	if (barrier_n > 1)
		pthread_barrier_wait(&start);
	for (size_t i = 0; i < w->nfrees; i++)
		kill_obj(w->frees[i]);
	for (long i = 0; i < w->ops; i++) {
		one_op(&w->live, &w->rng, true);
		if (w->exchange && w->live.n && rng_below(&w->rng, 4) == 0) {
			/* hand an object to whichever thread comes by that slot */
			void *p = live_take(&w->live, &w->rng);
			void *old = atomic_exchange(&xslots[rng_below(&w->rng, XSLOTS)], p);
			if (old)
				kill_obj(old);
		}
	}
	uslub_group_set_current(NULL);
	return NULL; /* the rest of w->live stays live: the main thread takes it */
}

static void run_workers(struct worker *ws, int n)
{
	barrier_n = n;
	if (n > 1)
		CHECK(pthread_barrier_init(&start, NULL, (unsigned)n) == 0);
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&ws[i].th, NULL, worker_fn, &ws[i]) == 0);
	for (int i = 0; i < n; i++)
		CHECK(pthread_join(ws[i].th, NULL) == 0);
	if (n > 1)
		pthread_barrier_destroy(&start);
}

static uslub_cache_t *leftover_cache(void)
{
	for (size_t sz = 504; sz <= 4096; sz += 8) {
		uslub_cache_t *s = uslub_cache_create("prof-leftover", sz, 0, 0, NULL);
		CHECK(s);
		if (sampled || slabinfo_get(s).obj_ext == USLUB_OBJ_EXT_LEFTOVER)
			return s;
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	test_fail(__FILE__, __LINE__, "no cache size with a LEFTOVER placement");
}

int main(void)
{
	if (!uslub_profiling_enabled()) {
		printf("allocinfo: skipped: profiling is off (run with USLUB_PROFILING=1)\n");
		return 77;
	}
	sampled = uslub_profiling_enabled() == 2;
	test_seed(0xa110c1f0);
	struct rng rng = { test_seed_value };
	double t0 = now_s();
	unsigned long err0 = uslub_error_count();

	caches[0] = uslub_cache_create("prof-24", 24, 0, 0, NULL);
	caches[1] = uslub_cache_create("prof-pad", 80, 64, 0, NULL);
	caches[2] = leftover_cache();
	caches[3] = uslub_cache_create("prof-acct", 192, 0, USLUB_ACCOUNT, NULL);
	caches[4] = uslub_cache_create("prof-2k", 2000, 0, USLUB_HWCACHE_ALIGN, NULL);
	for (int c = 0; c < NCACHES; c++) {
		CHECK(caches[c]);
		struct uslub_slabinfo si = slabinfo_get(caches[c]);
		/* Linux 7.3's smaller extension: exact mode, a tag word (and an
		 * objcg before it in the accounted cache); sampled mode, only the
		 * accounted cache has a vector, of objcg words: a sample there
		 * widens its slab with tag words */
		const char *fields = c == ACCT ? (sampled ? "objcg" : "objcg+tag") : "tag";
		CHECK_MSG((sampled && c != ACCT) ||
			  (si.obj_ext != USLUB_OBJ_EXT_NONE && !strcmp(si.obj_ext_fields, fields) &&
			   si.obj_ext_size == (c == ACCT && !sampled ? 16 : 8)),
			  "cache %s: obj_ext %d size %u fields %s with profiling on, expected %s",
			  si.name, si.obj_ext, si.obj_ext_size, si.obj_ext_fields, fields);
		csize[c] = si.size;
		osize[c] = si.object_size;
	}
	if (!sampled)
		CHECK_EQ(slabinfo_get(caches[1]).obj_ext, USLUB_OBJ_EXT_PADDING);
	grp = uslub_group_create(NULL, "allocinfo-group", USLUB_GROUP_NO_LIMIT);
	CHECK(grp);
	uslub_group_set_current(grp);

	/* nothing of this file yet */
	check_allocinfo(__LINE__);
	CHECK_EQ(nmsites, 0);

	/* a site in main itself */
	struct where wm = { __LINE__ + 1, __func__ };
	void *m0 = uslub_cache_alloc(caches[4], 0);
	born(m0, 4, wm.line, wm.func, false);

	struct live ml = { calloc(MAX_LIVE, sizeof(void *)), 0 };
	CHECK(ml.p);
	long nops = scaled(100000), phase = nops / 10;
	for (long i = 1; i <= nops; i++) {
		one_op(&ml, &rng, false);
		if (i % phase)
			continue;
		/* a worker frees some of main's objects, allocates, exits */
		struct worker w;
		memset(&w, 0, sizeof(w));
		w.rng.s = rng_next(&rng);
		w.live.p = calloc(MAX_LIVE, sizeof(void *));
		CHECK(w.live.p);
		size_t k = ml.n / 4;
		w.frees = malloc((k + 1) * sizeof(void *));
		CHECK(w.frees);
		for (size_t j = 0; j < k; j++)
			w.frees[w.nfrees++] = live_take(&ml, &rng);
		w.ops = 200;
		run_workers(&w, 1);
		for (size_t j = 0; j < w.live.n; j++)
			live_add(&ml, w.live.p[j]);
		free(w.live.p);
		free(w.frees);
		check_allocinfo(__LINE__);
	}

	/* concurrent workers at the same sites, frees across threads */
	struct worker ws[NTHREADS];
	memset(ws, 0, sizeof(ws));
	for (int i = 0; i < NTHREADS; i++) {
		ws[i].rng.s = test_seed_value + 0x1000ull * (uint64_t)(i + 1);
		ws[i].live.p = calloc(MAX_LIVE, sizeof(void *));
		CHECK(ws[i].live.p);
		ws[i].ops = scaled(50000);
		ws[i].exchange = true;
	}
	run_workers(ws, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		for (size_t j = 0; j < ws[i].live.n; j++)
			live_add(&ml, ws[i].live.p[j]);
		free(ws[i].live.p);
	}
	for (int i = 0; i < XSLOTS; i++) {
		void *p = atomic_exchange(&xslots[i], NULL);
		if (p)
			live_add(&ml, p);
	}
	check_allocinfo(__LINE__);
	int nsites_used = nmsites;
	CHECK_MSG(nsites_used == 7, "%d call sites used, expected 7", nsites_used);
	size_t peak = ml.n;

	/* everything goes: nothing of this file is listed */
	while (ml.n)
		kill_obj(live_take(&ml, &rng));
	kill_obj(m0);
	all_freed = 1;
	check_allocinfo(__LINE__);
	size_t n = uslub_allocinfo(out, 1024);
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(strcmp(out[i].file, __FILE__), "line %u still listed after freeing all",
			  out[i].line);
	uslub_group_set_current(NULL);
	CHECK_EQU(uslub_group_usage(grp), 0);
	CHECK_EQ(uslub_group_delete(grp), 0);
	for (int c = 0; c < NCACHES; c++) {
		CHECK_EQ(uslub_cache_validate(caches[c]), 0);
		CHECK_EQ(uslub_cache_destroy(caches[c]), 0);
	}
	CHECK_EQU(uslub_error_count(), err0);
	free(ml.p);
	printf("allocinfo: ok: %d call sites, %lu checkpoints, %zu objects live at the end of the "
	       "threads, %.2f s\n", nsites_used, checkpoints, peak, now_s() - t0);
	return 0;
}
