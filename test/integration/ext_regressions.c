/*
 * ext_regressions: one function per bug found in the extension layer
 * (accounting groups, per-object extensions) by review; each failed
 * (hang, crash, leak or wrong result) before the fixes of ed8e1dd.
 *   - destroy_from_fresh_thread: uslub_cache_destroy() of an ACCOUNT
 *     cache whose extensions are separate arrays, from a thread that
 *     never allocated (no cpu area), returns 0 (it used to deadlock on
 *     thread_lock freeing the arrays; a 10 s alarm turns a hang into a
 *     failure);
 *   - fork_from_fresh_thread: while a worker holds an empty cpu slab of
 *     such a cache (and enough partial slabs that flushing it frees it),
 *     a thread that never allocated forks; the child (whose postfork
 *     flush frees the slab and its array) allocates, validates and exits
 *     0 within 5 s (it used to hang in the postfork handler);
 *   - reclaim_flushes: a group's reclaim callback that calls
 *     uslub_cache_shrink() (then, second round, uslub_flush_thread())
 *     and frees nothing: the allocation fails with ENOMEM, the cache
 *     validates clean, live_objs is unchanged, and once objects are
 *     freed further accounted allocations succeed (the refused object
 *     used to go back on a cpu freelist the callback had flushed);
 *   - ondemand_sheaf_handoff: a plain cache with sheaves switched to
 *     on-demand extensions by a USLUB_GFP_ACCOUNT allocation on thread A
 *     that took an object of thread B's cpu slab from A's sheaf; B frees
 *     it (its free fast path covers that slab): after B exits and A
 *     drains its stock the group's usage and cache usage are 0 and
 *     uslub_objcg_count() is back to its baseline once the group is
 *     deleted (the charge and the handle used to leak);
 *   - sheaf_over_limit: uslub_cache_alloc_from_sheaf() on an ACCOUNT
 *     cache never returns NULL while the sheaf holds objects, even past
 *     the group's limit (it used to fail on a refused charge); the limit
 *     still refuses ordinary allocations, and freeing everything brings
 *     usage back to 0;
 *   - reclaim_sibling: a reclaim callback that frees objects of a
 *     sibling group (their uncharges land in this thread's stock, cached
 *     for the sibling) lets the charge succeed, usage within the limit
 *     (the foreign stock used to be drained only once per charge).
 * Everything is freed at the end of each function: the caches destroy
 * (0), usage 0, handle count back to where it was.
 */
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

/* Up to 10 s per step; a hang is a failure, not a stalled ctest. */
#define WATCHDOG_S 10

/* A fork child gets less, so that its parent reports it. */
#define CHILD_TIMEOUT_S 5

static const char *watchdog_what = "";

static void on_alarm(int sig)
{
	(void)sig;
	static const char m1[] = "FAIL: hang (watchdog alarm) in ";
	(void)!write(2, m1, sizeof(m1) - 1);
	(void)!write(2, watchdog_what, strlen(watchdog_what));
	(void)!write(2, "\n", 1);
	_exit(1);
}

static void watchdog(const char *what)
{
	watchdog_what = what;
	alarm(WATCHDOG_S);
}

static void watchdog_off(void)
{
	alarm(0);
}

/* An ACCOUNT cache whose extensions are a separate array per slab. */
static uslub_cache_t *create_array_cache(const char *name)
{
	static const size_t sizes[] = { 64, 128, 256, 512, 1024, 32, 2048 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uslub_cache_t *s = uslub_cache_create(name, sizes[i], 0, USLUB_ACCOUNT, NULL);
		CHECK(s);
		struct uslub_slabinfo si = slabinfo_get(s);
		if (si.obj_ext == USLUB_OBJ_EXT_ARRAY) {
			CHECK(si.obj_ext_bytes > 0);
			return s;
		}
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	CHECK_MSG(0, "no object size gives an ACCOUNT cache ARRAY extensions");
}

/* ---- r1: destroy from a thread without a cpu area ---------------------- */
static void *destroyer(void *arg)
{
	uslub_cache_t *s = arg;
	return (void *)(intptr_t)uslub_cache_destroy(s);
}

static void destroy_from_fresh_thread(void)
{
	uslub_cache_t *s = create_array_cache("reg-destroy");
	struct uslub_slabinfo si = slabinfo_get(s);
	size_t n = (size_t)si.objs_per_slab * 4;
	void **p = malloc(n * sizeof(*p));
	CHECK(p);
	for (size_t i = 0; i < n; i++)
		CHECK((p[i] = uslub_cache_alloc(s, 0)));
	for (size_t i = 0; i < n; i++)
		uslub_cache_free(s, p[i]);
	free(p);
	CHECK(slabinfo_get(s).num_slabs > 0);   /* slabs (with arrays) to discard */

	watchdog("uslub_cache_destroy from a thread that never allocated");
	pthread_t t;
	void *ret;
	CHECK(pthread_create(&t, NULL, destroyer, s) == 0);
	CHECK(pthread_join(t, &ret) == 0);
	CHECK_EQ((intptr_t)ret, 0);
}

/* ---- r1b: fork from a thread without a cpu area ------------------------ */
static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_cv = PTHREAD_COND_INITIALIZER;
static int fk_ready, fk_done;
static uslub_cache_t *fk_cache;

static void *fork_worker(void *arg)
{
	(void)arg;
	uslub_cache_t *s = fk_cache;
	struct uslub_slabinfo si = slabinfo_get(s);
	unsigned per = si.objs_per_slab, nslabs = si.min_partial + 8;
	size_t n = (size_t)per * (nslabs + 1);
	void **p = malloc(n * sizeof(*p));
	CHECK(p);
	for (size_t i = 0; i < n; i++)
		CHECK((p[i] = uslub_cache_alloc(s, 0)));
	/* one object off each of the first slabs: partial slabs, more than
	 * min_partial; then everything of the last (the cpu slab): empty */
	for (unsigned g = 0; g < nslabs; g++)
		uslub_cache_free(s, p[(size_t)g * per]);
	for (size_t i = (size_t)per * nslabs; i < n; i++)
		uslub_cache_free(s, p[i]);
	pthread_mutex_lock(&fk_lock);
	fk_ready = 1;
	pthread_cond_broadcast(&fk_cv);
	while (!fk_done)
		pthread_cond_wait(&fk_cv, &fk_lock);
	pthread_mutex_unlock(&fk_lock);
	for (unsigned g = 0; g < nslabs; g++)
		for (unsigned k = 1; k < per; k++)
			uslub_cache_free(s, p[(size_t)g * per + k]);
	free(p);
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return (void *)(intptr_t)-1;
	if (pid == 0) {
		/* the child: the allocator works, the cache is consistent */
		void *x = uslub_cache_alloc(fk_cache, 0);
		if (!x)
			_exit(3);
		memset(x, 0x5a, uslub_cache_object_size(fk_cache));
		uslub_cache_free(fk_cache, x);
		_exit(uslub_cache_validate(fk_cache) == 0 ? 0 : 4);
	}
	int status = 0;
	double t0 = now_s();
	pid_t w;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_s() - t0 < CHILD_TIMEOUT_S)
		usleep(10000);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return (void *)(intptr_t)-2;
	}
	if (w != pid)
		return (void *)(intptr_t)-3;
	if (WIFSIGNALED(status))
		return (void *)(intptr_t)(1000 + WTERMSIG(status));
	return (void *)(intptr_t)WEXITSTATUS(status);
}

static void fork_from_fresh_thread(void)
{
	fk_cache = create_array_cache("reg-fork");
	fk_ready = fk_done = 0;
	pthread_t w, f;
	CHECK(pthread_create(&w, NULL, fork_worker, NULL) == 0);
	pthread_mutex_lock(&fk_lock);
	while (!fk_ready)
		pthread_cond_wait(&fk_cv, &fk_lock);
	pthread_mutex_unlock(&fk_lock);

	void *ret;
	CHECK(pthread_create(&f, NULL, forker, NULL) == 0);
	CHECK(pthread_join(f, &ret) == 0);
	intptr_t rc = (intptr_t)ret;
	CHECK_MSG(rc != -2, "fork child hung for %d s (postfork flush deadlock)", CHILD_TIMEOUT_S);
	CHECK_MSG(rc == 0, "fork child failed: %ld (-1 fork, 3 alloc, 4 validate, "
		  "1000+n signal n)", (long)rc);

	pthread_mutex_lock(&fk_lock);
	fk_done = 1;
	pthread_cond_broadcast(&fk_cv);
	pthread_mutex_unlock(&fk_lock);
	CHECK(pthread_join(w, NULL) == 0);
	CHECK_EQ(uslub_cache_validate(fk_cache), 0);
	CHECK_EQU(slabinfo_get(fk_cache).live_objs, 0);
	CHECK_EQ(uslub_cache_destroy(fk_cache), 0);
}

/* ---- r2: a reclaim callback that flushes this thread's cpu slabs ------- */
static uslub_cache_t *rf_cache;
static int rf_mode, rf_calls;

static size_t reclaim_flush(uslub_group_t *g, size_t need, void *arg)
{
	(void)g; (void)arg;
	CHECK(need > 0);
	rf_calls++;
	if (rf_mode == 0)
		uslub_cache_shrink(rf_cache);   /* "drop caches" */
	else
		uslub_flush_thread();
	return 0;                          /* nothing freed: the charge fails */
}

static void reclaim_flushes(void)
{
	unsigned long objcgs0 = uslub_objcg_count();
	for (rf_mode = 0; rf_mode < 2; rf_mode++) {
		rf_cache = uslub_cache_create("reg-reclaim-flush", 256, 0, USLUB_ACCOUNT, NULL);
		CHECK(rf_cache);
		const size_t limit = 16384;
		uslub_group_t *g = uslub_group_create(NULL, "reg-rf", limit);
		CHECK(g);
		uslub_group_set_reclaim(g, reclaim_flush, NULL);
		uslub_group_set_current(g);
		rf_calls = 0;
		enum { MAXN = 1000 };
		static void *p[MAXN];
		int n = 0;
		for (; n < MAXN; n++) {
			errno = 0;
			p[n] = uslub_cache_alloc(rf_cache, 0);
			if (!p[n])
				break;
			memset(p[n], 0x11, 256);
		}
		CHECK_MSG(n > 0 && n < MAXN, "mode %d: %d allocations below a %zu-byte limit",
			  rf_mode, n, limit);
		CHECK_EQ(errno, ENOMEM);
		CHECK_EQ(rf_calls, 1);
		CHECK(uslub_group_usage(g) <= limit);

		uslub_group_set_current(NULL);
		CHECK_EQ(uslub_cache_validate(rf_cache), 0);
		CHECK_EQU(slabinfo_get(rf_cache).live_objs, (unsigned long)n);
		/* a refused allocation again, validated again */
		uslub_group_set_current(g);
		CHECK(!uslub_cache_alloc(rf_cache, 0));
		uslub_group_set_current(NULL);
		CHECK_EQ(uslub_cache_validate(rf_cache), 0);

		/* room again: accounted allocations work (single and bulk) */
		uslub_group_set_current(g);
		for (int i = 0; i < 4; i++)
			uslub_cache_free(rf_cache, p[--n]);
		for (int i = 0; i < 2; i++) {
			p[n] = uslub_cache_alloc(rf_cache, 0);
			CHECK_MSG(p[n], "mode %d: accounted allocation after the refusal failed "
				  "(errno %d)", rf_mode, errno);
			memset(p[n++], 0x22, 256);
		}
		CHECK_EQ(uslub_cache_alloc_bulk(rf_cache, USLUB_GFP_NOWARN, 2, &p[n]), 2);
		n += 2;
		CHECK(uslub_group_usage(g) <= limit);
		uslub_group_set_current(NULL);
		CHECK_EQ(uslub_cache_validate(rf_cache), 0);
		CHECK_EQU(slabinfo_get(rf_cache).live_objs, (unsigned long)n);

		while (n)
			uslub_cache_free(rf_cache, p[--n]);
		uslub_group_drain_stock();
		CHECK_EQU(uslub_group_usage(g), 0);
		CHECK_EQ(uslub_cache_validate(rf_cache), 0);
		CHECK_EQ(uslub_group_delete(g), 0);
		CHECK_EQ(uslub_cache_destroy(rf_cache), 0);
	}
	CHECK_EQU(uslub_objcg_count(), objcgs0);
}

/* ---- r3: on-demand switch, object freed on another thread's fast path -- */
static pthread_mutex_t od_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t od_cv = PTHREAD_COND_INITIALIZER;
static int od_stage;
static uslub_cache_t *od_cache;
static void *od_objs[8];
static void *od_handoff;

static void od_wait(int k)
{
	pthread_mutex_lock(&od_lock);
	while (od_stage < k)
		pthread_cond_wait(&od_cv, &od_lock);
	pthread_mutex_unlock(&od_lock);
}

static void od_set(int k)
{
	pthread_mutex_lock(&od_lock);
	od_stage = k;
	pthread_cond_broadcast(&od_cv);
	pthread_mutex_unlock(&od_lock);
}

static void *od_thread_b(void *arg)
{
	(void)arg;
	/* a node allocation skips the sheaves: B gets a cpu slab (free fast
	 * path open, the cache has no hooks yet) */
	for (int i = 0; i < 8; i++)
		CHECK((od_objs[i] = uslub_cache_alloc_node(od_cache, 0, 0)));
	od_set(1);
	od_wait(2);
	uslub_cache_free(od_cache, od_handoff);   /* B frees A's charged object */
	return NULL;
}

static void ondemand_sheaf_handoff(void)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 8;
	od_cache = uslub_cache_create_args("reg-ondemand", 256, &args, 0);
	CHECK(od_cache);
	/* (with profiling on, the cache has hooks from the start and nothing
	 * switches at run time; the checks below hold all the same) */
	CHECK(uslub_cache_sheaf_capacity(od_cache) >= 8);
	unsigned long objcgs0 = uslub_objcg_count();
	uslub_group_t *g = uslub_group_create(NULL, "reg-od", USLUB_GROUP_NO_LIMIT);
	CHECK(g);
	od_stage = 0;
	pthread_t b;
	CHECK(pthread_create(&b, NULL, od_thread_b, NULL) == 0);
	od_wait(1);
	for (int i = 0; i < 8; i++)
		uslub_cache_free(od_cache, od_objs[i]);   /* into this thread's sheaf */
	uslub_group_set_current(g);
	void *x = uslub_cache_alloc(od_cache, USLUB_GFP_ACCOUNT);
	CHECK(x);
	int from_b = 0;
	for (int i = 0; i < 8; i++)
		from_b |= x == od_objs[i];
	CHECK_MSG(from_b, "the accounted allocation did not come from the sheaf "
		  "(one of B's cpu slab objects): the scenario was not set up");
	struct uslub_slabinfo si = slabinfo_get(od_cache);
	CHECK_MSG(si.obj_ext != USLUB_OBJ_EXT_NONE,
		  "a USLUB_GFP_ACCOUNT allocation left the cache without extensions");
	unsigned long objects = 0;
	size_t bytes = 0;
	CHECK_EQ(uslub_group_cache_usage(g, od_cache, &objects, &bytes), 0);
	CHECK_EQU(objects, 1);
	CHECK(uslub_group_usage(g) >= bytes && bytes > 0);

	od_handoff = x;
	od_set(2);
	CHECK(pthread_join(b, NULL) == 0);      /* B freed it and exited */
	uslub_group_set_current(NULL);
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_cache_usage(g, od_cache, &objects, &bytes), 0);
	CHECK_EQU(objects, 0);
	CHECK_EQU(bytes, 0);
	CHECK_MSG(uslub_group_usage(g) == 0, "usage %zu after the charged object was freed "
		  "on another thread's fast path (charge leaked)", uslub_group_usage(g));
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_MSG(uslub_objcg_count() == objcgs0, "objcg handles %lu, baseline %lu "
		  "(the freed object's reference leaked)", uslub_objcg_count(), objcgs0);
	CHECK_EQ(uslub_cache_validate(od_cache), 0);
	CHECK_EQ(uslub_cache_destroy(od_cache), 0);
}

/* ---- r4: alloc_from_sheaf over the group's limit ----------------------- */
static void sheaf_over_limit(void)
{
	unsigned long objcgs0 = uslub_objcg_count();
	uslub_cache_t *s = uslub_cache_create("reg-sheaf-limit", 512, 0, USLUB_ACCOUNT, NULL);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	const size_t charge = si.obj_ext_charge;
	const size_t limit = 4096;                 /* 16 objects are twice that */
	uslub_group_t *g = uslub_group_create(NULL, "reg-sl", limit);
	CHECK(g);
	enum { N = 16 };
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, N);   /* nothing charged */
	CHECK(sh);
	unsigned int held = uslub_cache_sheaf_size(sh);
	CHECK(held >= N);
	void **p = calloc(held, sizeof(*p));
	CHECK(p);
	uslub_group_set_current(g);
	for (unsigned int i = 0; i < held; i++) {
		uslub_gfp_t gfp = (i & 1) ? USLUB_GFP_ATOMIC : USLUB_GFP_KERNEL;
		if (i % 3 == 0)
			gfp |= USLUB_GFP_ZERO;
		errno = 0;
		p[i] = uslub_cache_alloc_from_sheaf(s, gfp | USLUB_GFP_NOWARN, sh);
		CHECK_MSG(p[i], "alloc_from_sheaf %u returned NULL (errno %d) with %u objects "
			  "in the sheaf (usage %zu, limit %zu)", i, errno,
			  uslub_cache_sheaf_size(sh), uslub_group_usage(g), limit);
		if (gfp & USLUB_GFP_ZERO)
			for (size_t k = 0; k < 512; k++)
				CHECK(!((unsigned char *)p[i])[k]);
		memset(p[i], 0x33, 512);
		CHECK_EQ(uslub_cache_sheaf_size(sh), held - i - 1);
	}
	/* empty: NULL */
	CHECK(!uslub_cache_alloc_from_sheaf(s, USLUB_GFP_ATOMIC, sh));
	uslub_group_drain_stock();
	/* every object charged, past the limit */
	CHECK_EQU(uslub_group_usage(g), (size_t)held * charge);
	CHECK(uslub_group_usage(g) > limit);
	unsigned long objects = 0;
	size_t bytes = 0;
	CHECK_EQ(uslub_group_cache_usage(g, s, &objects, &bytes), 0);
	CHECK_EQU(objects, held);
	/* the limit still refuses ordinary allocations */
	errno = 0;
	CHECK(!uslub_cache_alloc(s, USLUB_GFP_NOWARN));
	CHECK_EQ(errno, ENOMEM);

	uslub_cache_return_sheaf(s, 0, sh);
	for (unsigned int i = 0; i < held; i++) {
		for (size_t k = 0; k < 512; k++)
			CHECK(((unsigned char *)p[i])[k] == 0x33);
		uslub_cache_free(s, p[i]);
	}
	free(p);
	uslub_group_set_current(NULL);
	uslub_group_drain_stock();
	CHECK_EQU(uslub_group_usage(g), 0);
	CHECK_EQ(uslub_group_delete(g), 0);
	CHECK_EQU(uslub_objcg_count(), objcgs0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ---- r5: reclaim frees a sibling group's objects ----------------------- */
#define SIB_MAX 4096
static uslub_cache_t *sib_small;
static void *sib_obj[SIB_MAX];
static int sib_n, sib_calls;
static size_t sib_freed;

static size_t reclaim_sibling_cb(uslub_group_t *g, size_t need, void *arg)
{
	(void)g; (void)need; (void)arg;
	sib_calls++;
	if (!sib_n)
		return 0;
	uslub_cache_free(sib_small, sib_obj[--sib_n]);   /* one object per call */
	struct uslub_slabinfo si = slabinfo_get(sib_small);
	sib_freed += si.obj_ext_charge;
	return si.obj_ext_charge;
}

static void reclaim_sibling(void)
{
	unsigned long objcgs0 = uslub_objcg_count();
	sib_small = uslub_cache_create("reg-sib-small", 256, 0, USLUB_ACCOUNT, NULL);
	uslub_cache_t *big = uslub_cache_create("reg-sib-big", 1024, 0, USLUB_ACCOUNT, NULL);
	CHECK(sib_small && big);
	const size_t L = 64 * 1024;
	uslub_group_t *P = uslub_group_create(NULL, "reg-P", L);
	uslub_group_t *A = uslub_group_create(P, "reg-A", USLUB_GROUP_NO_LIMIT);
	uslub_group_t *B = uslub_group_create(P, "reg-B", USLUB_GROUP_NO_LIMIT);
	CHECK(P && A && B);
	/* B fills the parent to its limit */
	uslub_group_set_current(B);
	sib_n = 0;
	while (sib_n < SIB_MAX && (sib_obj[sib_n] = uslub_cache_alloc(sib_small, USLUB_GFP_NOWARN)))
		sib_n++;
	CHECK(sib_n > 8 && sib_n < SIB_MAX);
	uslub_group_drain_stock();
	int held = sib_n;
	uslub_group_set_reclaim(P, reclaim_sibling_cb, NULL);

	/* A allocates: the callback frees B's objects one by one */
	uslub_group_set_current(A);
	enum { ROUNDS = 3 };
	void *x[ROUNDS];
	for (int round = 0; round < ROUNDS; round++) {
		sib_calls = 0;
		sib_freed = 0;
		errno = 0;
		x[round] = uslub_cache_alloc(big, 0);
		CHECK_MSG(x[round], "round %d: the allocation failed (errno %d) although the "
			  "reclaim callback freed %zu bytes in %d calls", round, errno, sib_freed,
			  sib_calls);
		memset(x[round], 0x44, 1024);
		CHECK(uslub_group_usage(P) <= L);
	}
	CHECK(sib_n < held);
	for (int round = 0; round < ROUNDS; round++)
		uslub_cache_free(big, x[round]);

	uslub_group_set_current(NULL);
	uslub_group_drain_stock();
	CHECK(uslub_group_usage(P) <= L);
	while (sib_n)
		uslub_cache_free(sib_small, sib_obj[--sib_n]);
	uslub_group_drain_stock();
	CHECK_EQU(uslub_group_usage(A), 0);
	CHECK_EQU(uslub_group_usage(B), 0);
	CHECK_EQU(uslub_group_usage(P), 0);
	CHECK_EQ(uslub_group_delete(A), 0);
	CHECK_EQ(uslub_group_delete(B), 0);
	CHECK_EQ(uslub_group_delete(P), 0);
	CHECK_EQU(uslub_objcg_count(), objcgs0);
	CHECK_EQ(uslub_cache_destroy(sib_small), 0);
	CHECK_EQ(uslub_cache_destroy(big), 0);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "destroy_from_fresh_thread", destroy_from_fresh_thread },
	{ "fork_from_fresh_thread", fork_from_fresh_thread },
	{ "reclaim_flushes", reclaim_flushes },
	{ "ondemand_sheaf_handoff", ondemand_sheaf_handoff },
	{ "sheaf_over_limit", sheaf_over_limit },
	{ "reclaim_sibling", reclaim_sibling },
};

/* With arguments: only the functions named (a reproducer for one bug). */
int main(int argc, char **argv)
{
	signal(SIGALRM, on_alarm);
	unsigned long err0 = uslub_error_count();
	double t0 = now_s();
	int ran = 0;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		bool want = argc < 2;
		for (int a = 1; a < argc; a++)
			want |= !strcmp(argv[a], tests[i].name);
		if (!want)
			continue;
		watchdog(tests[i].name);
		tests[i].fn();
		watchdog_off();
		ran++;
	}
	CHECK_MSG(ran > 0, "no test named %s", argc > 1 ? argv[1] : "");
	CHECK_EQU(uslub_error_count(), err0);
	printf("ext_regressions: %d checks (destroy/fork without a cpu area, reclaim that "
	       "flushes, on-demand switch with sheaves, sheaf past the limit, sibling "
	       "reclaim): ok (%.2f s)\n", ran, now_s() - t0);
	return 0;
}
