/*
 * Regression tests for the bugs a review of the bulk/sheaves code found
 * (each failed on the code before its fix):
 *   bulk_dup_truncates        a double free caught in free_bulk/kfree_bulk
 *                             must not truncate a live freelist
 *   sheaf_double_free         the inline sheaf push keeps the naive check
 *   flush_corrupt_head        a corrupted cpu freelist head is reported at
 *                             flush, not followed
 *   bulk_fail_stale_fastpath  a failed alloc_bulk leaves exact counters
 *   failed_alloc_counted      a failed allocation counts nothing
 *   rejected_free_counted     a rejected (double) free counts nothing
 *   race_stress               producers/consumers over bulk, sheaves,
 *                             kfree_bulk: counters balance, validate clean
 * The bugs were in the 6.x cpu-slab paths (cpu freelist, derived
 * ALLOC_FASTPATH, ___slab_alloc, __slab_free): their caches are made with
 * USLUB_CPU_SLAB. Where the property means something with per-CPU sheaves
 * (the default), the test runs on a sheaf cache too.
 */
#include "slub/slub.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
static uint64_t stat_of(struct kmem_cache *s, int i)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	return st[i];
}
static uint64_t allocs_of(struct kmem_cache *s)
{
	return stat_of(s, USLUB_ALLOC_FASTPATH) + stat_of(s, USLUB_ALLOC_SLOWPATH) +
	       stat_of(s, USLUB_ALLOC_PCS);
}
static uint64_t frees_of(struct kmem_cache *s)
{
	return stat_of(s, USLUB_FREE_FASTPATH) + stat_of(s, USLUB_FREE_SLOWPATH) +
	       stat_of(s, USLUB_FREE_PCS);
}
static int fails;
#define EXPECT(cond, ...)                                                       \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fails++;                                                  \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			printf(__VA_ARGS__);                                      \
			printf("\n");                                             \
		}                                                                 \
	} while (0)
/* ---- bulk_dup_truncates ---- */
/* Bug: build_detached_freelist() writes the free pointer of an object
 * before the naive double-free checks (free_detached_user: head of the
 * cpu freelist; __slab_free: head of the slab freelist) reject it. A
 * double free caught and "left alone" truncates a live freelist. */
static int test_bulk_dup_truncates(unsigned int flags)
{
	/* A: bulk free [x, x] of a cpu-slab object (duplicate in the array) */
	struct kmem_cache *s = uslub_cache_create("dup-cpu", 64, 0, flags, NULL);
	void *x = uslub_cache_alloc(s, 0), *y = uslub_cache_alloc(s, 0);
	unsigned long e0 = uslub_error_count();
	void *arr[2] = { x, x };
	uslub_cache_free_bulk(s, 2, arr);          /* frees x, reports the dup */
	EXPECT(uslub_error_count() == e0 + 1, "errors +%lu", uslub_error_count() - e0);
	uslub_cache_free(s, y);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	printf("     after freeing everything: live_objs %lu active_objs %lu num_slabs %lu\n",
	       (unsigned long)si.live_objs, (unsigned long)si.active_objs, (unsigned long)si.num_slabs);
	EXPECT(si.active_objs == 0, "objects lost from the cpu freelist: %lu", (unsigned long)si.active_objs);
	EXPECT(uslub_cache_destroy(s) == 0, "destroy: EBUSY, objects leaked");

	/* B: kfree_bulk of an object that is the head of a (non-cpu) slab freelist */
	s = uslub_cache_create("dup-slab", 64, 0, flags, NULL);
	x = uslub_cache_alloc(s, 0);
	y = uslub_cache_alloc(s, 0);
	uslub_flush_thread();                      /* slab -> node partial */
	uslub_cache_free(s, x);                    /* x = head of the slab freelist */
	e0 = uslub_error_count();
	void *one[1] = { x };
	uslub_kfree_bulk(1, one);                  /* double free, caught by __slab_free */
	EXPECT(uslub_error_count() == e0 + 1, "errors +%lu", uslub_error_count() - e0);
	long v = uslub_cache_validate(s);
	EXPECT(v == 0, "validate found %ld errors (slab freelist truncated)", v);
	/* C: hardened cache: bulk [a, b], a already freed (cpu freelist head),
	 * b live: the whole group is dropped by free_detached_user, b leaks */
	s = uslub_cache_create("dup-hard", 64, 0, USLUB_HARDENED_FREELIST | flags, NULL);
	void *a = uslub_cache_alloc(s, 0), *b = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, a);
	void *ab[2] = { a, b };
	uslub_cache_free_bulk(s, 2, ab);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	uslub_cache_slabinfo(s, &si);
	EXPECT(si.active_objs == 0, "hardened: %lu objects never come back (b and the cpu freelist)", (unsigned long)si.active_objs);
	printf("%s\n", fails ? "BUG REPRODUCED" : "no bug");
	return fails != 0;
}
/* ---- sheaf_double_free ---- */
/* Bug: slab_free_slow()'s inline sheaf push (5a5de2d) skips the naive
 * double-free check against the cpu freelist head that
 * slab_free_slow_path() (double_free_naive) does: the object ends up on the
 * cpu freelist and in the main sheaf, and is handed out twice. */
static int test_sheaf_double_free(void)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 8;
	/* the 6.18 model: sheaves asked for, and a cpu slab for alloc_node */
	struct kmem_cache *s = uslub_cache_create_args("sheaf-df", 64, &args, USLUB_CPU_SLAB);
	void *a = uslub_cache_alloc(s, 0), *b = uslub_cache_alloc(s, 0);  /* main: full - 2 */
	uslub_cache_free(s, a);                                           /* main has room */
	void *x = uslub_cache_alloc_node(s, 0, 0);                        /* a cpu slab object */
	uslub_cache_free(s, x);                                           /* cpu freelist head */
	unsigned long e0 = uslub_error_count();
	uslub_cache_free(s, x);                                           /* double free */
	EXPECT(uslub_error_count() == e0 + 1, "double free of %p not reported", x);
	/* x is now on the cpu freelist and on top of the main sheaf: drain the
	 * cpu freelist with alloc_node, then take the sheaf's top */
	void *got[4096]; unsigned ng = 0; int twice = 0;
	void *p1 = uslub_cache_alloc_node(s, 0, 0);  /* cpu freelist head: x */
	while (this_cpu(s)->freelist && ng < 4096) got[ng++] = uslub_cache_alloc_node(s, 0, 0);
	void *p2 = uslub_cache_alloc(s, 0);          /* main sheaf top */
	twice = p1 == p2;
	EXPECT(!twice, "same object %p handed out twice (cpu freelist, then main sheaf)", p1);
	for (unsigned i = 0; i < ng; i++) uslub_cache_free(s, got[i]);
	(void)b;
	/* B: the same through free_bulk_to_sheaves() */
	void *z = uslub_cache_alloc_node(s, 0, 0);
	uslub_cache_free(s, z);                       /* cpu freelist head */
	e0 = uslub_error_count();
	void *arr[1] = { z };
	uslub_cache_free_bulk(s, 1, arr);             /* double free */
	EXPECT(uslub_error_count() == e0 + 1, "bulk double free of %p not reported", z);
	ng = 0;
	p1 = uslub_cache_alloc_node(s, 0, 0);
	while (this_cpu(s)->freelist && ng < 4096) got[ng++] = uslub_cache_alloc_node(s, 0, 0);
	p2 = uslub_cache_alloc(s, 0);
	EXPECT(p1 != p2, "bulk: same object %p handed out twice", p1);
	printf("%s\n", fails ? "BUG REPRODUCED" : "no bug");
	return fails != 0;
}
/* ---- flush_corrupt_head ---- */
/* Bug: deactivate_slab() (flush: uslub_flush_thread, thread exit,
 * shrink, destroy) follows c->freelist without checking its head, unlike
 * every other slow path; a hardened cache whose last-allocated object's
 * free pointer was overwritten crashes on flush instead of reporting
 * FREELIST_CORRUPT. */
static int test_flush_corrupt_head(void)
{
	struct kmem_cache *s = uslub_cache_create("flush-corrupt", 64, 0,
						  USLUB_HARDENED_FREELIST | USLUB_CPU_SLAB, NULL);
	void *a = uslub_cache_alloc(s, 0), *b = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, a);              /* a: head of the cpu freelist */
	memset(a, 0x41, 64);                 /* use after free: free pointer overwritten */
	void *a2 = uslub_cache_alloc(s, 0);  /* pops a; c->freelist = garbage */
	(void)b;
	printf("     got %p back (a=%p); flushing\n", a2, a);
	pid_t pid = fork();
	if (pid == 0) {
		uslub_flush_thread();
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "flush in the child died: %s",
	       WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exit code");
	printf("%s\n", fails ? "BUG REPRODUCED" : "no bug");
	return fails != 0;
}
/* ---- bulk_fail_stale_fastpath ---- */
/* Counter: a failed alloc_bulk restores c->loaded but not the published
 * stat[ALLOC_FASTPATH] that refill_cpu() wrote while the popped objects
 * were still counted in loaded: other threads' uslub_cache_stats() see the
 * popped-and-returned objects as fast-path allocations. */
static struct kmem_cache *s;
static pthread_barrier_t bar;
static void *thr(void *arg)
{
	(void)arg;
	void *x = uslub_cache_alloc(s, 0);          /* 1 live object, rest on cpu freelist */
	unsigned int n = s->objects + 5;
	void **p = calloc(n, sizeof(void *));
	_uslub_page_fail_after(0);
	int got = uslub_cache_alloc_bulk(s, USLUB_GFP_NOWARN, n, p);
	_uslub_page_fail_after(-1);
	printf("     bulk of %u got %d; own view allocs-frees = %llu\n", n, got,
	       (unsigned long long)(allocs_of(s) - frees_of(s)));
	pthread_barrier_wait(&bar);                 /* main reads stats now */
	pthread_barrier_wait(&bar);
	uslub_cache_free(s, x);
	free(p);
	return NULL;
}
static int test_bulk_fail_stale_fastpath(void)
{
	s = uslub_cache_create("stale-af", 64, 0, USLUB_CPU_SLAB, NULL);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t t;
	pthread_create(&t, NULL, thr, NULL);
	pthread_barrier_wait(&bar);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	EXPECT(si.live_objs == 1, "other thread's view: live_objs %lu (ALLOC_FASTPATH %llu)",
	       (unsigned long)si.live_objs, (unsigned long long)stat_of(s, USLUB_ALLOC_FASTPATH));
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	printf("%s\n", fails ? "BUG REPRODUCED" : "no bug");
	return fails != 0;
}
/* ---- failed_alloc_counted ---- */
/* Counter: a failed single allocation counts ALLOC_SLOWPATH
 * (___slab_alloc counts before refill_cpu can fail); NOFAIL counts every
 * retry. live_objs in slabinfo drifts. (alloc_bulk carefully counts
 * nothing on failure.) With sheaves a one-shot page failure is absorbed
 * (a failed refill falls back to the slabs): the allocation succeeds and
 * counts once. */
static int test_failed_alloc_counted(unsigned int flags)
{
	struct kmem_cache *s = uslub_cache_create("fail-count", 64, 0, flags, NULL);
	uint64_t a0 = allocs_of(s);
	_uslub_page_fail_after(0);
	void *x = uslub_cache_alloc(s, USLUB_GFP_NOWARN);
	_uslub_page_fail_after(-1);
	if (s->sheaf_capacity) {
		EXPECT(x != NULL, "alloc failed");
		EXPECT(allocs_of(s) == a0 + 1, "allocs +%llu", (unsigned long long)(allocs_of(s) - a0));
		uslub_cache_free(s, x);
	} else {
		EXPECT(x == NULL, "alloc succeeded");
		EXPECT(allocs_of(s) == a0, "failed alloc counted: allocs +%llu",
		       (unsigned long long)(allocs_of(s) - a0));
	}
	_uslub_page_fail_after(0);
	a0 = allocs_of(s);
	x = uslub_cache_alloc(s, USLUB_GFP_NOFAIL);
	(void)x;
	_uslub_page_fail_after(-1);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	EXPECT(allocs_of(s) - a0 == 1, "one NOFAIL allocation counted %llu times; live_objs %lu",
	       (unsigned long long)(allocs_of(s) - a0), (unsigned long)si.live_objs);
	printf("%s\n", fails ? "BUG REPRODUCED" : "no bug");
	return fails != 0;
}
/* ---- rejected_free_counted ---- */
/* Counter: a free that __slab_free() rejects as a double free (the object
 * is the head of its slab's freelist) was already counted FREE_SLOWPATH
 * by slab_free_slow_path() / free_detached_user(): live_objs drops for a
 * free that did not happen. */
static int test_rejected_free_counted(unsigned int flags)
{
	struct kmem_cache *s = uslub_cache_create("rej-count", 64, 0, flags, NULL);
	void *x = uslub_cache_alloc(s, 0), *y = uslub_cache_alloc(s, 0);
	uslub_flush_thread();                 /* the slab leaves the cpu */
	uslub_cache_free(s, x);               /* x = head of the slab freelist */
	uint64_t f0 = frees_of(s);
	unsigned long e0 = uslub_error_count();
	uslub_cache_free(s, x);               /* double free: reported, left alone */
	EXPECT(uslub_error_count() == e0 + 1, "not reported");
	EXPECT(frees_of(s) == f0, "rejected free counted: frees +%llu", (unsigned long long)(frees_of(s) - f0));
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	EXPECT(si.live_objs == 1, "live_objs %lu with y live", (unsigned long)si.live_objs);
	(void)y;
	printf("%s\n", fails ? "BUG REPRODUCED" : "no bug");
	return fails != 0;
}
/* ---- race_stress ---- */
/* Stress: producers bulk-allocate (take_objects from node partial slabs,
 * new slabs, sheaves) while consumers free the same objects remotely, one
 * by one, in bulk, and with kfree_bulk. At the end every object is freed
 * and every thread has exited: nothing may be in use, counters must
 * balance, validate must pass and destroy must succeed. */
#define NT 4
#define ROUNDS 3000
#define Q 4096
static struct kmem_cache *caches[2];
static void *q[Q];
static unsigned qh, qt;
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qc = PTHREAD_COND_INITIALIZER;
static int done_producers;
static int push(void *x) { int ok = 0; pthread_mutex_lock(&qm); if (qt - qh < Q) { q[qt++ % Q] = x; ok = 1; pthread_cond_signal(&qc);} pthread_mutex_unlock(&qm); return ok; }
static void *pop(int wait) { void *x = NULL; pthread_mutex_lock(&qm); while (qt == qh && wait && done_producers < NT) pthread_cond_wait(&qc, &qm); if (qt != qh) x = q[qh++ % Q]; pthread_mutex_unlock(&qm); return x; }
static void *producer(void *arg)
{
	unsigned long seed = (unsigned long)arg * 7919 + 1;
	void *p[200];
	for (int r = 0; r < ROUNDS; r++) {
		struct kmem_cache *s = caches[r & 1];
		seed = seed * 6364136223846793005ul + 1442695040888963407ul;
		unsigned n = 1 + (seed >> 33) % 199;
		if (uslub_cache_alloc_bulk(s, (seed & 8) ? USLUB_GFP_ZERO : 0, n, p) != (int)n) abort();
		unsigned keep = (seed >> 20) % (n + 1);
		for (unsigned i = 0; i < keep; i++)
			while (!push(p[i])) { void *y = pop(0); if (y) uslub_kfree_bulk(1, &y); }
		if ((seed >> 40) & 1)
			uslub_cache_free_bulk(s, n - keep, p + keep);
		else
			for (unsigned i = keep; i < n; i++) uslub_cache_free(s, p[i]);
	}
	pthread_mutex_lock(&qm); done_producers++; pthread_cond_broadcast(&qc); pthread_mutex_unlock(&qm);
	return NULL;
}
static void *consumer(void *arg)
{
	(void)arg;
	void *batch[64];
	unsigned nb = 0;
	for (;;) {
		void *x = pop(1);
		if (!x) break;
		batch[nb++] = x;
		if (nb == 64 || (((uintptr_t)x >> 6) & 3) == 0) {
			if (nb & 1) uslub_kfree_bulk(nb, batch);
			else for (unsigned i = 0; i < nb; i++) { struct slab *sl = virt_to_slab(batch[i]); uslub_cache_free(sl->slab_cache, batch[i]); }
			nb = 0;
		}
	}
	if (nb) uslub_kfree_bulk(nb, batch);
	return NULL;
}
static int test_race_stress(void)
{
	struct uslub_cache_args a; memset(&a, 0, sizeof(a)); a.sheaf_capacity = 16;
	caches[0] = uslub_cache_create_args("st-sheaf", 96, &a, 0);
	caches[1] = uslub_cache_create_args("st-plain", 48, NULL, USLUB_CPU_SLAB);
	pthread_t t[2 * NT];
	for (long i = 0; i < NT; i++) pthread_create(&t[i], NULL, producer, (void *)i);
	for (long i = 0; i < NT; i++) pthread_create(&t[NT + i], NULL, consumer, NULL);
	for (int i = 0; i < 2 * NT; i++) pthread_join(t[i], NULL);
	for (int k = 0; k < 2; k++) {
		struct kmem_cache *s = caches[k];
		uslub_flush_thread(); uslub_cache_shrink(s);
		struct uslub_slabinfo si; uslub_cache_slabinfo(s, &si);
		printf("%s: live %lu active %lu slabs %lu allocs %llu frees %llu\n", s->name,
		       (unsigned long)si.live_objs, (unsigned long)si.active_objs, (unsigned long)si.num_slabs,
		       (unsigned long long)allocs_of(s), (unsigned long long)frees_of(s));
		EXPECT(si.active_objs == 0, "%s objects lost", s->name);
		EXPECT(allocs_of(s) == frees_of(s), "counters");
		EXPECT(uslub_cache_validate(s) == 0, "validate");
		EXPECT(uslub_cache_destroy(s) == 0, "destroy");
	}
	printf("%s\n", fails ? "BUG REPRODUCED" : "clean");
	return fails != 0;
}

int main(void)
{
	printf("== %s\n", "bulk_dup_truncates");
	test_bulk_dup_truncates(USLUB_CPU_SLAB);
	printf("== %s\n", "bulk_dup_truncates (default model)");
	test_bulk_dup_truncates(0);
	printf("== %s\n", "sheaf_double_free");
	test_sheaf_double_free();
	printf("== %s\n", "flush_corrupt_head");
	test_flush_corrupt_head();
	printf("== %s\n", "bulk_fail_stale_fastpath");
	test_bulk_fail_stale_fastpath();
	printf("== %s\n", "failed_alloc_counted");
	test_failed_alloc_counted(USLUB_CPU_SLAB);
	printf("== %s\n", "failed_alloc_counted (default model)");
	test_failed_alloc_counted(0);
	printf("== %s\n", "rejected_free_counted");
	test_rejected_free_counted(USLUB_CPU_SLAB);
	printf("== %s\n", "rejected_free_counted (default model)");
	test_rejected_free_counted(0);
	printf("== %s\n", "race_stress");
	test_race_stress();
	if (fails)
		printf("%d check(s) failed\n", fails);
	return fails != 0;
}
