/*
 * Sheaf layer, white box: capacity rounding and defaults, the per-CPU
 * paths and their counters, barn limits, flushing back to slabs, the
 * prefill API's guarantees (alloc_from_sheaf never fails while the sheaf
 * holds objects, even with the page provider failing), refill/return
 * paths, failure without leaks, a thread without a cpu area, fork, and a
 * few threads freeing each other's objects.
 *
 * "Leaks" are checked against the slabs themselves: the sum of every slab's
 * inuse must equal the objects the test holds once the thread is flushed.
 */
#define _GNU_SOURCE
#include "sheaf/sheaf.h"
#include "unit.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t st(const struct kmem_cache *s, enum uslub_stat_item item)
{
	uint64_t out[USLUB_NR_STATS];
	uslub_cache_stats(s, out);
	return out[item];
}
#define ST(s, item) st(s, USLUB_##item)

struct inuse_sum {
	struct kmem_cache *s;
	unsigned long slabs, inuse;
};

static void inuse_cb(struct page *head, void *arg)
{
	struct inuse_sum *sum = arg;
	struct slab *slab = page_slab(head);
	if (!(READ_ONCE(head->flags) & PG_slab) || slab->slab_cache != sum->s)
		return;
	sum->slabs++;
	sum->inuse += FC_INUSE(slab_counters(slab));
}

/* Objects of @s counted in use by their slabs. */
static unsigned long slab_inuse(struct kmem_cache *s)
{
	struct inuse_sum sum = { s, 0, 0 };
	_uslub_for_each_run(inuse_cb, &sum);
	return sum.inuse;
}

static unsigned long barn_full(const struct kmem_cache *s)
{
	unsigned long full, empty;
	_uslub_sheaf_barn_counts(s, &full, &empty);
	return full;
}

static unsigned long barn_empty(const struct kmem_cache *s)
{
	unsigned long full, empty;
	_uslub_sheaf_barn_counts(s, &full, &empty);
	return empty;
}

/* Sheaf structs that exist, by the counters and by looking (single thread;
 * @held: sheaves the caller holds). */
static void check_sheaf_census(struct kmem_cache *s, unsigned long held)
{
	struct kmem_cache_cpu *c = this_cpu(s);
	unsigned long seen = held + sheaf_real(c->main) + !!c->spare + barn_full(s) + barn_empty(s);
	CHECK_EQ(ST(s, SHEAF_ALLOC) - ST(s, SHEAF_FREE), seen);
}

/* Flush the thread and shrink: every object the test does not hold is
 * back in a slab, and the slabs agree with their counters. */
static void check_settled(struct kmem_cache *s, unsigned long held)
{
	uslub_flush_thread();
	struct kmem_cache_cpu *c = this_cpu(s);
	CHECK(c->main == EMPTY_SHEAF && !c->spare);
	uslub_cache_shrink(s);
	CHECK_EQ(barn_full(s), 0);
	CHECK_EQ(barn_empty(s), 0);
	CHECK_EQ(slab_inuse(s), held);
	CHECK_EQ(uslub_cache_validate(s), 0);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	if (!held)
		CHECK_EQ(si.num_slabs, 0);
}

static struct kmem_cache *sheaf_cache(const char *name, size_t size, unsigned int capacity)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = capacity;
	struct kmem_cache *s = uslub_cache_create_args(name, size, &args, 0);
	CHECK(s);
	return s;
}

/* ------------------------------------------------------------------------ */

static void test_capacity(void)
{
	static const struct { unsigned int want, got; } round[] = {
		{ 1, 3 }, { 3, 3 }, { 4, 11 }, { 11, 11 }, { 12, 27 }, { 26, 27 }, { 30, 59 },
		{ 59, 59 }, { 60, 123 }, { 124, 251 }, { SHEAF_MAX_OBJECTS, SHEAF_MAX_OBJECTS },
		{ SHEAF_MAX_OBJECTS + 1, SHEAF_MAX_OBJECTS }, { ~0u, SHEAF_MAX_OBJECTS },
	};
	for (unsigned i = 0; i < ARRAY_SIZE(round); i++)
		CHECK_EQ(_uslub_sheaf_round_capacity(round[i].want), round[i].got);
	/* every rounded capacity fills its power-of-two bucket exactly */
	for (unsigned int want = 1; want < 5000; want += 7) {
		unsigned int got = _uslub_sheaf_round_capacity(want);
		size_t bytes = SHEAF_HEADER_SIZE + (size_t)got * sizeof(void *);
		CHECK(got >= want && IS_POW2(bytes) && bytes >= 64);
	}

	struct kmem_cache *s = sheaf_cache("sheaf-cap30", 64, 30);
	CHECK_EQ(uslub_cache_sheaf_capacity(s), 59);
	for (int i = 0; i < _uslub_nr_nodes(); i++)
		CHECK(s->barn[i]);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	CHECK_EQ(si.sheaf_capacity, 59);
	CHECK_EQ(uslub_cache_destroy(s), 0);

	/* no capacity asked for, a cache in cpu-slab mode (6.x): none */
	s = uslub_cache_create("sheaf-none", 64, 0, USLUB_CPU_SLAB, NULL);
	CHECK(s && uslub_cache_sheaf_capacity(s) == 0 && !s->barn[0]);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	/* ... but one asked for wins, as in 6.18 */
	struct uslub_cache_args a30;
	memset(&a30, 0, sizeof(a30));
	a30.sheaf_capacity = 30;
	s = uslub_cache_create_args("sheaf-cpuslab-asked", 64, &a30, USLUB_CPU_SLAB);
	CHECK(s && uslub_cache_sheaf_capacity(s) == 59);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	/* the internal flag wins over a requested capacity */
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 30;
	s = _uslub_cache_create("sheaf-nosheaves", 64, &args, SLAB_NO_SHEAVES);
	CHECK(s && uslub_cache_sheaf_capacity(s) == 0 && !s->barn[0]);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_sheaf_capacity(NULL), 0);
}

/* Run with sheaves on every cache (the default): the default capacities;
 * and in a child with USLUB_CPU_SLABS=1: none unless asked for. */
static void test_cpu_slabs_child(void)
{
	CHECK_EQ(_uslub_option(USLUB_OPT_CPU_SLABS), 1);
	struct kmem_cache *s = uslub_cache_create("sheaf-6x", 64, 0, 0, NULL);
	CHECK(s && uslub_cache_sheaf_capacity(s) == 0 && !s->barn[0]);
	void *x = uslub_cache_alloc(s, 0);
	CHECK(x);
	uslub_cache_free(s, x);
	CHECK_EQ(ST(s, ALLOC_PCS), 0);
	CHECK_EQ(ST(s, FREE_FASTPATH), 1);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

static void test_defaults(void)
{
	static const struct { size_t size; unsigned int cap; } def[] = {
		{ 8, 123 }, { 255, 123 }, { 256, 27 }, { 1000, 27 }, { 1024, 27 },
		{ 4000, 27 }, { 4096, 11 }, { 65536, 11 },
	};
	for (unsigned i = 0; i < ARRAY_SIZE(def); i++) {
		struct kmem_cache *s = uslub_cache_create("sheaf-def", def[i].size, 0, 0, NULL);
		CHECK(s);
		CHECK_EQ(uslub_cache_sheaf_capacity(s), def[i].cap);
		void *x = uslub_cache_alloc(s, 0);
		CHECK(x);
		CHECK_EQ(ST(s, ALLOC_PCS), 1);
		uslub_cache_free(s, x);
		CHECK_EQ(ST(s, FREE_PCS), 1);
		check_settled(s, 0);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	/* a requested capacity still wins over the default */
	struct kmem_cache *s = sheaf_cache("sheaf-def30", 8, 30);
	CHECK_EQ(uslub_cache_sheaf_capacity(s), 59);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	/* the sheaf buckets themselves have none */
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s = sheaf_cache("sheaf-def-b", 8, 0), 0, 1);
	CHECK(sh);
	uslub_cache_return_sheaf(s, 0, sh);
	struct slab *slab = virt_to_slab(sh);
	CHECK(slab && slab->slab_cache && slab->slab_cache->sheaf_capacity == 0);
	CHECK(strncmp(slab->slab_cache->name, "bucket-", 7) == 0);
	check_settled(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* Run this program again as "<self> mode" with @env set. */
static void run_child(const char *self, const char *mode, const char *env, const char *val)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		setenv(env, val, 1);
		execl(self, self, mode, (char *)NULL);
		_exit(99);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "sheaf: child \"%s\" (%s=%s) failed\n", mode, env, val);
		exit(1);
	}
}

/* ------------------------------------------------------------------------ */

/* The per-CPU paths, counter by counter (capacity 59, one node). */
static void test_pcs_paths(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-pcs", 64, 30);
	struct kmem_cache_cpu *c;
	enum { N = 59 * 4 };
	void *obj[N];

	/* first alloc: a main is allocated and refilled to capacity */
	obj[0] = uslub_cache_alloc(s, 0);
	CHECK(obj[0]);
	c = this_cpu(s);
	CHECK(sheaf_real(c->main) && c->main->capacity == 59 && c->main->size == 58 && !c->spare);
	CHECK_EQ(ST(s, SHEAF_ALLOC), 1);
	CHECK_EQ(ST(s, BARN_GET_FAIL), 1);
	CHECK_EQ(ST(s, SHEAF_REFILL), 59);
	CHECK_EQ(ST(s, ALLOC_PCS), 1);
	for (int i = 1; i < 59; i++)
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
	CHECK_EQ(c->main->size, 0);
	CHECK_EQ(ST(s, SHEAF_REFILL), 59);
	/* main empty, no spare, empty barn: refill again */
	CHECK(obj[59] = uslub_cache_alloc(s, USLUB_GFP_ZERO));
	for (int b = 0; b < 64; b++)
		CHECK(((unsigned char *)obj[59])[b] == 0);
	CHECK_EQ(ST(s, BARN_GET_FAIL), 2);
	CHECK_EQ(ST(s, SHEAF_REFILL), 118);
	CHECK_EQ(ST(s, ALLOC_PCS), 60);
	CHECK_EQ(c->main->size, 58);
	for (int i = 60; i < N; i++)
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
	CHECK_EQ(ST(s, ALLOC_PCS), N);
	CHECK_EQ(ST(s, ALLOC_SLOWPATH), 0);
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < i + 5 && j < N; j++)
			CHECK(obj[i] != obj[j]);
	CHECK_EQ(c->main->size, 59 * 4 - N);   /* 0: exactly four refills */
	CHECK_EQ(ST(s, SHEAF_REFILL), N);

	/* frees: fill main (59), swap in a new empty spare (59 more), then
	 * the full main goes to the barn for a new empty sheaf */
	for (int i = 0; i < 59; i++)
		uslub_cache_free(s, obj[i]);
	CHECK_EQ(c->main->size, 59);
	CHECK(!c->spare);
	uslub_cache_free(s, obj[59]);
	CHECK(c->spare && c->spare->size == 59 && c->main->size == 1);
	CHECK_EQ(ST(s, SHEAF_ALLOC), 2);
	for (int i = 60; i < 118; i++)
		uslub_cache_free(s, obj[i]);
	CHECK(c->main->size == 59 && c->spare->size == 59);
	CHECK_EQ(ST(s, BARN_PUT), 0);
	uslub_cache_free(s, obj[118]);
	CHECK_EQ(ST(s, BARN_PUT), 1);
	CHECK_EQ(barn_full(s), 1);
	CHECK_EQ(c->main->size, 1);
	CHECK_EQ(ST(s, SHEAF_ALLOC), 3);
	for (int i = 119; i < N; i++)
		uslub_cache_free(s, obj[i]);
	/* 236 = main 59 + spare 59 + two full sheaves in the barn */
	CHECK_EQ(ST(s, BARN_PUT), 2);
	CHECK_EQ(barn_full(s), 2);
	CHECK(c->main->size == 59 && c->spare->size == 59);
	CHECK_EQ(ST(s, FREE_PCS), N);
	CHECK_EQ(ST(s, FREE_SLOWPATH), 0);
	check_sheaf_census(s, 0);

	/* allocs now: main (59 minus what it holds), then the full spare,
	 * then the barn's full sheaf for the empty main */
	unsigned int in_main = c->main->size;
	for (unsigned int i = 0; i < in_main + 59; i++)
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
	CHECK_EQ(ST(s, BARN_GET), 0);
	CHECK_EQ(c->main->size, 0);
	CHECK(obj[in_main + 59] = uslub_cache_alloc(s, 0));
	CHECK_EQ(ST(s, BARN_GET), 1);
	CHECK_EQ(barn_full(s), 1);
	CHECK_EQ(barn_empty(s), 1);   /* the empty main went to the barn */
	CHECK(c->spare && c->spare->size == 0);
	CHECK_EQ(c->main->size, 58);
	check_sheaf_census(s, 0);

	/* bulk: from main first, then slabs; free_bulk to main */
	uint64_t pcs = ST(s, ALLOC_PCS), fpcs = ST(s, FREE_PCS);
	void *bulk[100];
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 100, bulk), 100);
	/* main's 58 first; the rest through the sheaves or straight from slabs */
	CHECK(ST(s, ALLOC_PCS) - pcs >= 58 && ST(s, ALLOC_PCS) - pcs <= 100);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uslub_cache_free_bulk(s, 100, bulk);
	if (_uslub_nr_nodes() == 1)
		CHECK_EQ(ST(s, FREE_PCS) - fpcs, 100);   /* main, then the empty spare */
	for (unsigned int i = 0; i < in_main + 60; i++)
		uslub_cache_free(s, obj[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* More full sheaves than the barn takes: BARN_PUT_FAIL flushes to slabs,
 * nr_full never passes MAX_FULL_SHEAVES, nr_empty never MAX_EMPTY. */
static void test_barn_limits(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-barn", 64, 3);
	CHECK_EQ(uslub_cache_sheaf_capacity(s), 3);
	enum { N = 3 * 40 };
	void *obj[N];
	for (int i = 0; i < N; i++)
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
	uslub_flush_thread();            /* start the frees from empty sheaves */
	CHECK_EQ(slab_inuse(s), N);
	uint64_t flush0 = ST(s, SHEAF_FLUSH);
	for (int i = 0; i < N; i++) {
		uslub_cache_free(s, obj[i]);
		CHECK(barn_full(s) <= MAX_FULL_SHEAVES);
		CHECK(barn_empty(s) <= MAX_EMPTY_SHEAVES);
	}
	CHECK_EQ(ST(s, BARN_PUT), MAX_FULL_SHEAVES);
	CHECK_EQ(barn_full(s), MAX_FULL_SHEAVES);
	uint64_t fails = ST(s, BARN_PUT_FAIL);
	/* main + spare + 10 in the barn hold 36; each failure flushed 3 */
	CHECK_EQ(fails, (N - 3 * (2 + MAX_FULL_SHEAVES) + 2) / 3);
	CHECK_EQ(ST(s, SHEAF_FLUSH) - flush0, 3 * fails);
	CHECK_EQ(ST(s, FREE_PCS), N);
	CHECK_EQ(slab_inuse(s), this_cpu(s)->main->size + this_cpu(s)->spare->size +
				3 * MAX_FULL_SHEAVES);
	CHECK_EQ(uslub_cache_validate(s), 0);

	/* allocations take the full sheaves back; the empties fill the barn's
	 * empty list up to its limit, the rest become the spare or are freed */
	for (int i = 0; i < N; i++) {
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
		CHECK(barn_empty(s) <= MAX_EMPTY_SHEAVES);
	}
	CHECK_EQ(ST(s, BARN_GET), MAX_FULL_SHEAVES);
	CHECK_EQ(barn_full(s), 0);
	CHECK_EQ(barn_empty(s), MAX_EMPTY_SHEAVES);
	check_sheaf_census(s, 0);
	for (int i = 0; i < N; i++)
		uslub_cache_free(s, obj[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* uslub_flush_thread() gives every sheaf object back to its slab. */
static void test_flush(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-flush", 256, 30);
	enum { N = 1000, KEEP = 17 };
	void *obj[N];
	for (int i = 0; i < N; i++)
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
	for (int i = KEEP; i < N; i++)
		uslub_cache_free(s, obj[i]);
	struct kmem_cache_cpu *c = this_cpu(s);
	CHECK(sheaf_real(c->main) && c->spare);
	unsigned long cached = c->main->size + c->spare->size;
	uint64_t flushed = ST(s, SHEAF_FLUSH);
	uslub_flush_thread();
	CHECK(c->main == EMPTY_SHEAF && !c->spare);
	CHECK_EQ(ST(s, SHEAF_FLUSH) - flushed, cached);
	/* the barn's full sheaves still hold theirs until shrink */
	CHECK_EQ(slab_inuse(s), KEEP + barn_full(s) * 59);
	struct uslub_slabinfo si;
	uslub_cache_shrink(s);
	uslub_cache_slabinfo(s, &si);
	CHECK_EQ(barn_full(s) + barn_empty(s), 0);
	CHECK_EQ(slab_inuse(s), KEEP);
	CHECK_EQ(uslub_cache_validate(s), 0);
	/* 17 objects of 256 B: one or two slabs kept, no empty one */
	CHECK(si.num_slabs >= 1 && si.num_slabs <= 2);
	for (int i = 0; i < KEEP; i++)
		uslub_cache_free(s, obj[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* A thread that exits gives its full sheaves to the barn and flushes
 * only the others; a second thread's allocations take a barn sheaf back. */
struct exit_arg {
	struct kmem_cache *s;
	void *obj[256];
	int n, f;                        /* allocate n, free the first f     */
	unsigned int main_n, spare_n;    /* what the slot held at the end     */
};

static void *exit_thread(void *argp)
{
	struct exit_arg *a = argp;
	for (int i = 0; i < a->n; i++)
		CHECK(a->obj[i] = uslub_cache_alloc(a->s, 0));
	for (int i = 0; i < a->f; i++)
		uslub_cache_free(a->s, a->obj[i]);
	struct kmem_cache_cpu *c = this_cpu(a->s);
	a->main_n = c->main->size;
	a->spare_n = c->spare ? c->spare->size : 0;
	return NULL;
}

static void test_exit_to_barn(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-exit", 128, 30);
	unsigned int cap = s->sheaf_capacity;
	CHECK(cap >= 30 && 2 * cap + 2 <= 256);
	uslub_cache_shrink(s);
	/* ends with a full spare and a partial main (the free path's swap) */
	struct exit_arg a = { .s = s, .n = (int)(2 * cap + 2), .f = (int)(cap - 9) };
	uint64_t flushed = ST(s, SHEAF_FLUSH), put = ST(s, BARN_PUT);
	unsigned long full0 = barn_full(s);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, exit_thread, &a) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	unsigned int held = a.main_n + a.spare_n;
	unsigned int kept = (a.main_n == cap) + (a.spare_n == cap);
	CHECK(kept >= 1 && held > kept * cap);  /* both cases exercised */
	CHECK_EQ(barn_full(s), full0 + kept);
	CHECK_EQ(ST(s, BARN_PUT) - put, kept);
	CHECK_EQ(ST(s, SHEAF_FLUSH) - flushed, held - kept * cap);
	/* in slabs' counts: the barn's sheaves and what the thread kept */
	CHECK_EQ(slab_inuse(s), kept * cap + (unsigned int)(a.n - a.f));
	CHECK_EQ(uslub_cache_validate(s), 0);
	for (int i = a.f; i < a.n; i++)
		uslub_cache_free(s, a.obj[i]);
	/* the next thread's allocations refill from the barn */
	uint64_t get = ST(s, BARN_GET);
	a.n = a.f = (int)cap;
	CHECK(pthread_create(&t, NULL, exit_thread, &a) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(ST(s, BARN_GET) - get >= 1);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ------------------------------------------------------------------------ */

/* alloc_from_sheaf cannot fail while the sheaf holds objects, whatever
 * the page provider does; the 101st returns NULL. */
static void test_prefill_guarantee(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-prefill", 64, 30);
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 100);
	CHECK(sh);
	CHECK_EQ(uslub_cache_sheaf_size(sh), 100);
	CHECK_EQ(ST(s, SHEAF_PREFILL_OVERSIZE), 1);
	CHECK(((struct slab_sheaf *)sh)->oversize && ((struct slab_sheaf *)sh)->capacity == 100);
	void *obj[100];
	_uslub_page_fail_after(0);
	for (int i = 0; i < 100; i++) {
		obj[i] = uslub_cache_alloc_from_sheaf(s, USLUB_GFP_NOWAIT, sh);
		CHECK(obj[i]);
		memset(obj[i], 0x5a, 64);
	}
	CHECK(!uslub_cache_alloc_from_sheaf(s, USLUB_GFP_NOWAIT, sh));
	_uslub_page_fail_after(-1);
	CHECK_EQ(uslub_cache_sheaf_size(sh), 0);
	CHECK_EQ(ST(s, ALLOC_PCS), 100);
	uslub_cache_return_sheaf(s, 0, sh);
	CHECK_EQ(ST(s, SHEAF_RETURN_SLOW), 1);
	CHECK_EQ(slab_inuse(s), 100);

	/* GFP_ZERO zeroes what it hands out (the objects were dirtied) */
	for (int i = 0; i < 100; i++)
		uslub_cache_free(s, obj[i]);
	uslub_flush_thread();
	sh = uslub_cache_prefill_sheaf(s, 0, 100);
	CHECK(sh);
	for (int i = 0; i < 100; i++) {
		unsigned char *p = uslub_cache_alloc_from_sheaf(s, USLUB_GFP_ZERO, sh);
		CHECK(p);
		for (int b = 0; b < 64; b++)
			CHECK(p[b] == 0);
		obj[i] = p;
	}
	uslub_cache_return_sheaf(s, 0, sh);
	for (int i = 0; i < 100; i++)
		uslub_cache_free(s, obj[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);

	/* a cache without sheaves: always the oversize path */
	struct kmem_cache *t = uslub_cache_create("sheaf-prefill-none", 64, 0, USLUB_CPU_SLAB,
						   NULL);
	CHECK(t);
	CHECK_EQ(uslub_cache_sheaf_capacity(t), 0);
	sh = uslub_cache_prefill_sheaf(t, 0, 5);
	CHECK(sh && uslub_cache_sheaf_size(sh) == 5);
	CHECK_EQ(ST(t, SHEAF_PREFILL_OVERSIZE), 1);
	void *x = uslub_cache_alloc_from_sheaf(t, 0, sh);
	CHECK(x);
	uslub_cache_return_sheaf(t, 0, sh);
	CHECK_EQ(ST(t, SHEAF_RETURN_SLOW), 1);
	CHECK_EQ(slab_inuse(t), 1);
	uslub_cache_free(t, x);
	sh = uslub_cache_prefill_sheaf(t, 0, 0);
	CHECK(sh && uslub_cache_sheaf_size(sh) == 0);
	uslub_cache_return_sheaf(t, 0, sh);
	check_settled(t, 0);
	CHECK_EQ(uslub_cache_destroy(t), 0);

	/* too large for any sheaf */
	errno = 0;
	CHECK(!uslub_cache_prefill_sheaf(s, 0, SHEAF_MAX_OBJECTS + 1));
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* Within capacity: slow (refilled to capacity), spare (fast), barn (fast);
 * return to the spare, to the barn (refilled full), and flushed. */
static void test_prefill_return(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-return", 64, 30);
	enum { H = MAX_FULL_SHEAVES + 2 };
	void *popped[H + 1];
	struct kmem_cache_cpu *c;
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 10);
	CHECK(sh);
	c = this_cpu(s);
	CHECK_EQ(uslub_cache_sheaf_size(sh), 59);
	CHECK_EQ(ST(s, SHEAF_PREFILL_SLOW), 1);
	CHECK(!((struct slab_sheaf *)sh)->oversize);

	CHECK(popped[H] = uslub_cache_alloc_from_sheaf(s, 0, sh));
	uslub_cache_return_sheaf(s, 0, sh);          /* no spare: becomes it */
	CHECK(c->spare == (struct slab_sheaf *)sh);
	CHECK_EQ(ST(s, SHEAF_RETURN_FAST), 1);
	struct uslub_sheaf *sh2 = uslub_cache_prefill_sheaf(s, 0, 58);
	CHECK(sh2 == sh && !c->spare);                 /* the spare, fast */
	CHECK_EQ(ST(s, SHEAF_PREFILL_FAST), 1);
	uslub_cache_return_sheaf(s, 0, sh);
	CHECK(c->spare == (struct slab_sheaf *)sh);
	sh2 = uslub_cache_prefill_sheaf(s, 0, 59);    /* spare too small: slow */
	CHECK(sh2 && sh2 != sh && uslub_cache_sheaf_size(sh2) == 59);
	CHECK_EQ(ST(s, SHEAF_PREFILL_SLOW), 2);
	CHECK(c->spare == (struct slab_sheaf *)sh);

	struct uslub_sheaf *held[H];
	for (int i = 0; i < H; i++) {
		CHECK(held[i] = uslub_cache_prefill_sheaf(s, 0, 1));
		CHECK(popped[i] = uslub_cache_alloc_from_sheaf(s, 0, held[i]));
	}
	CHECK(held[0] == sh && !c->spare);             /* the spare served the first */
	check_sheaf_census(s, H + 1);
	uslub_cache_return_sheaf(s, 0, sh2);          /* the spare again */
	CHECK(c->spare == (struct slab_sheaf *)sh2);
	/* spare taken: returns go to the barn, refilled to capacity, until
	 * it holds MAX_FULL_SHEAVES; then they are flushed and freed */
	uint64_t slow0 = ST(s, SHEAF_RETURN_SLOW);
	for (int i = 0; i < H; i++) {
		uslub_cache_return_sheaf(s, 0, held[i]);
		CHECK_EQ(barn_full(s), MIN(i + 1, MAX_FULL_SHEAVES));
	}
	CHECK_EQ(ST(s, BARN_PUT), MAX_FULL_SHEAVES);
	CHECK_EQ(ST(s, SHEAF_RETURN_SLOW), slow0 + H - MAX_FULL_SHEAVES);
	check_sheaf_census(s, 0);
	struct node_barn *barn = s->barn[_uslub_home_node()];
	for (struct list_head *p = barn->full.next; p != &barn->full; p = p->next)
		CHECK_EQ(list_entry(p, struct slab_sheaf, barn_list)->size, 59);
	CHECK_EQ(slab_inuse(s), H + 1 + 59 * (MAX_FULL_SHEAVES + 1));

	/* prefills now: the spare, then the barn's full sheaves */
	uint64_t fast0 = ST(s, SHEAF_PREFILL_FAST), get0 = ST(s, BARN_GET);
	sh = uslub_cache_prefill_sheaf(s, 0, 59);
	sh2 = uslub_cache_prefill_sheaf(s, 0, 59);
	CHECK(sh && sh2 && sh != sh2);
	CHECK_EQ(ST(s, SHEAF_PREFILL_FAST), fast0 + 2);
	CHECK_EQ(ST(s, BARN_GET), get0 + 1);
	CHECK_EQ(barn_full(s), MAX_FULL_SHEAVES - 1);
	uslub_cache_return_sheaf(s, 0, sh);
	uslub_cache_return_sheaf(s, 0, sh2);
	check_sheaf_census(s, 0);

	/* live objects popped from sheaves keep the cache from going away */
	uslub_flush_thread();
	uslub_cache_shrink(s);
	CHECK_EQ(slab_inuse(s), H + 1);
	CHECK_EQ(uslub_cache_destroy(s), -1);
	for (int i = 0; i <= H; i++)
		uslub_cache_free(s, popped[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* refill_sheaf: in place up to capacity; past capacity, a new sheaf
 * (the old one returned); already enough: nothing. */
static void test_refill(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-refill", 64, 30);
	void *obj[300];
	int n = 0;
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 10), *old;
	CHECK(sh && uslub_cache_sheaf_size(sh) == 59);
	while (uslub_cache_sheaf_size(sh) > 4)
		obj[n++] = uslub_cache_alloc_from_sheaf(s, 0, sh);
	old = sh;
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &sh, 20), 0);
	CHECK(sh == old && uslub_cache_sheaf_size(sh) == 59);
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &sh, 59), 0);
	CHECK(sh == old);

	uint64_t fast0 = ST(s, SHEAF_RETURN_FAST);
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &sh, 200), 0);     /* swap */
	CHECK(sh != old && uslub_cache_sheaf_size(sh) == 200);
	CHECK(((struct slab_sheaf *)sh)->oversize);
	CHECK_EQ(ST(s, SHEAF_RETURN_FAST), fast0 + 1);           /* old: the spare */
	CHECK(this_cpu(s)->spare == (struct slab_sheaf *)old);
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &sh, 150), 0);     /* enough */
	CHECK_EQ(uslub_cache_sheaf_size(sh), 200);
	for (int i = 0; i < 60; i++)
		obj[n++] = uslub_cache_alloc_from_sheaf(s, 0, sh);
	old = sh;
	uint64_t slow0 = ST(s, SHEAF_RETURN_SLOW);
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &sh, 150), 0);     /* oversize: new */
	CHECK(sh != old && uslub_cache_sheaf_size(sh) == 150);
	CHECK_EQ(ST(s, SHEAF_RETURN_SLOW), slow0 + 1);
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, NULL, 1), -EINVAL);   /* reported */

	uslub_cache_return_sheaf(s, 0, sh);
	for (int i = 0; i < n; i++)
		uslub_cache_free(s, obj[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/*
 * The page provider's injected failure is one-shot, so the failure tests
 * run where a slab has no fallback order (USLUB_MAX_ORDER=0: every slab of
 * small objects is one page), in a child process.
 */
static struct kmem_cache *failure_cache(const char *name)
{
	struct kmem_cache *s = sheaf_cache(name, 64, 30);
	CHECK_EQ(s->order, s->min_order);
	return s;
}

/* refill_sheaf failing: -ENOMEM, the sheaf unchanged and usable. */
static void test_refill_failure(void)
{
	struct kmem_cache *s = failure_cache("sheaf-refill-fail");
	void *obj[300];
	int n = 0;
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 59), *old;
	CHECK(sh);
	while (uslub_cache_sheaf_size(sh) > 9)
		obj[n++] = uslub_cache_alloc_from_sheaf(s, 0, sh);
	int fails[2] = { 0, 0 };
	for (int big = 0; big < 2; big++) {
		unsigned int want = big ? 300 : 59;
		for (long k = 0; k < 16; k++) {
			uslub_flush_thread();
			uslub_cache_shrink(s);
			old = sh;
			unsigned int size0 = uslub_cache_sheaf_size(sh);
			_uslub_page_fail_after(k);
			errno = 0;
			int r = uslub_cache_refill_sheaf(s, USLUB_GFP_NOWAIT, &sh, want);
			int e = errno;
			_uslub_page_fail_after(-1);
			if (r == 0) {
				CHECK(uslub_cache_sheaf_size(sh) >= want);
				CHECK(big ? sh != old : sh == old);
				break;
			}
			fails[big]++;
			CHECK_EQ(r, -ENOMEM);
			CHECK_EQ(e, ENOMEM);
			CHECK(sh == old && uslub_cache_sheaf_size(sh) == size0);
			uslub_flush_thread();
			CHECK_EQ(slab_inuse(s), (unsigned long)n + size0);
			CHECK_EQ(uslub_cache_validate(s), 0);
		}
		if (!big)     /* empty the cache's free objects for the next round */
			while (uslub_cache_sheaf_size(sh) > 9)
				obj[n++] = uslub_cache_alloc_from_sheaf(s, 0, sh);
	}
	CHECK(fails[0] >= 1 && fails[1] >= 1);
	uslub_cache_return_sheaf(s, 0, sh);
	for (int i = 0; i < n; i++)
		uslub_cache_free(s, obj[i]);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* Prefill under page-provider failure: NULL + ENOMEM and nothing taken,
 * for a failure at every step; GFP_NOFAIL retries through it. */
static void test_prefill_failure(void)
{
	struct kmem_cache *s = failure_cache("sheaf-fail");
	static const unsigned int sizes[] = { 59, 300 };
	for (unsigned int z = 0; z < ARRAY_SIZE(sizes); z++) {
		int fails = 0;
		for (long k = 0; k < 16; k++) {
			check_settled(s, 0);
			uint64_t alive = ST(s, SHEAF_ALLOC) - ST(s, SHEAF_FREE);
			_uslub_page_fail_after(k);
			errno = 0;
			struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, USLUB_GFP_NOWAIT,
									   sizes[z]);
			int e = errno;
			_uslub_page_fail_after(-1);
			if (sh) {
				CHECK(uslub_cache_sheaf_size(sh) >= sizes[z]);
				uslub_cache_return_sheaf(s, 0, sh);
				break;
			}
			fails++;
			CHECK_EQ(e, ENOMEM);
			uslub_flush_thread();
			CHECK_EQ(slab_inuse(s), 0);
			CHECK_EQ(uslub_cache_validate(s), 0);
			/* the sheaf struct went to the barn (empty) or was freed */
			CHECK(ST(s, SHEAF_ALLOC) - ST(s, SHEAF_FREE) <= alive + 1);
			check_sheaf_census(s, 0);
		}
		CHECK(fails >= 1);
	}
	/* NOFAIL: the one injected failure is waited out */
	check_settled(s, 0);
	_uslub_page_fail_after(0);
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, USLUB_GFP_NOFAIL, 300);
	_uslub_page_fail_after(-1);
	CHECK(sh && uslub_cache_sheaf_size(sh) == 300);
	uslub_cache_return_sheaf(s, 0, sh);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* Wrong sheaf, wrong cache: reported, nothing touched. */
static void test_bad_input(void)
{
	struct kmem_cache *a = sheaf_cache("sheaf-bad-a", 64, 30);
	struct kmem_cache *b = sheaf_cache("sheaf-bad-b", 64, 30);
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(a, 0, 5);
	CHECK(sh);
	unsigned long errors = uslub_error_count(), size = uslub_cache_sheaf_size(sh);
	CHECK(!uslub_cache_alloc_from_sheaf(b, 0, sh));
	uslub_cache_return_sheaf(b, 0, sh);
	struct uslub_sheaf *sp = sh;
	CHECK_EQ(uslub_cache_refill_sheaf(b, 0, &sp, 100), -EINVAL);
	CHECK(sp == sh);
	CHECK(!uslub_cache_alloc_from_sheaf(a, 0, NULL));
	uslub_cache_return_sheaf(a, 0, NULL);
	int local;
	CHECK(!uslub_cache_alloc_from_sheaf(a, 0, (struct uslub_sheaf *)&local));
	CHECK_EQ(uslub_error_count(), errors + 6);
	CHECK_EQ(uslub_cache_sheaf_size(sh), size);
	CHECK_EQ(uslub_cache_sheaf_size(NULL), 0);
	uslub_cache_return_sheaf(a, 0, sh);
	check_settled(a, 0);
	check_settled(b, 0);
	CHECK_EQ(uslub_cache_destroy(a), 0);
	CHECK_EQ(uslub_cache_destroy(b), 0);
}

/* ------------------------------------------------------------------------ */

/* A thread without a cpu area (as after its exit): the prefill API works
 * on a slot on the stack, folded into the cache. */
static void *nocpu_thread(void *arg)
{
	struct kmem_cache *s = arg;
	_uslub_tls.state = THREAD_DEAD;
	CHECK(!this_cpu_is_real());
	struct uslub_sheaf *big = uslub_cache_prefill_sheaf(s, 0, 100);
	struct uslub_sheaf *small = uslub_cache_prefill_sheaf(s, 0, 7);
	CHECK(big && small);
	CHECK_EQ(uslub_cache_sheaf_size(big), 100);
	CHECK(uslub_cache_sheaf_size(small) >= 7);
	void *x = uslub_cache_alloc_from_sheaf(s, 0, big);
	void *y = uslub_cache_alloc_from_sheaf(s, 0, small);
	CHECK(x && y);
	CHECK_EQ(uslub_cache_refill_sheaf(s, 0, &small, 59), 0);
	uslub_cache_return_sheaf(s, 0, big);
	uslub_cache_return_sheaf(s, 0, small);     /* no spare here: the barn */
	uslub_cache_free(s, x);
	uslub_cache_free(s, y);
	CHECK(!this_cpu_is_real());
	_uslub_tls.state = THREAD_NEW;
	return NULL;
}

static void test_nocpu(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-nocpu", 64, 30);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, nocpu_thread, s) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(ST(s, SHEAF_PREFILL_OVERSIZE), 1);
	CHECK_EQ(ST(s, ALLOC_PCS), 2);
	CHECK_EQ(ST(s, SHEAF_RETURN_SLOW) + ST(s, SHEAF_RETURN_FAST), 2);
	CHECK_EQ(ST(s, SHEAF_RETURN_SLOW), 1);
	CHECK_EQ(barn_full(s), 1);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ------------------------------------------------------------------------ */

enum { THREADS = 4, ROUNDS = 200, BATCH = 150 };
static struct kmem_cache *mt_cache;
static void *mt_slots[THREADS][BATCH];
static pthread_barrier_t mt_barrier;

/* Each round, every thread allocates a batch and frees its neighbour's
 * batch of the previous round (remote frees, barn traffic). */
static void *mt_thread(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long long seed = 0x5eed0000u + (unsigned)me;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BATCH; i++) {
			void **p = &mt_slots[me][i];
			*p = uslub_cache_alloc(mt_cache, 0);
			CHECK(*p);
			*(int *)*p = me;
		}
		if (unit_rand(&seed) % 8 == 0) {
			struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(mt_cache, 0,
									   1 + unit_rand(&seed) % 120);
			CHECK(sh);
			void *x = uslub_cache_alloc_from_sheaf(mt_cache, 0, sh);
			CHECK(x);
			uslub_cache_return_sheaf(mt_cache, 0, sh);
			uslub_cache_free(mt_cache, x);
		}
		pthread_barrier_wait(&mt_barrier);
		int victim = (me + 1) % THREADS;
		for (int i = 0; i < BATCH; i++) {
			CHECK(*(int *)mt_slots[victim][i] == victim);
			uslub_cache_free(mt_cache, mt_slots[victim][i]);
		}
		pthread_barrier_wait(&mt_barrier);
	}
	return NULL;
}

static void test_threads(void)
{
	mt_cache = sheaf_cache("sheaf-mt", 48, 8);
	pthread_barrier_init(&mt_barrier, NULL, THREADS);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, mt_thread, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	pthread_barrier_destroy(&mt_barrier);
	/* the barn may have followed the rounds' swings above its base
	 * limit (sheaf.c), never above what it holds now as its limit */
	unsigned long limit = 0;
	for (int i = 0; i < _uslub_nr_nodes(); i++) {
		CHECK(mt_cache->barn[i]->max_full >= mt_cache->barn[i]->base_full);
		CHECK_EQ(mt_cache->barn[i]->base_full, MAX_FULL_SHEAVES);
		limit += mt_cache->barn[i]->max_full;
	}
	CHECK(barn_full(mt_cache) <= limit);
	CHECK(ST(mt_cache, BARN_PUT) > 0 && ST(mt_cache, BARN_GET) > 0);
	check_settled(mt_cache, 0);
	CHECK_EQ(ST(mt_cache, SHEAF_ALLOC), ST(mt_cache, SHEAF_FREE));
	CHECK_EQ(uslub_cache_destroy(mt_cache), 0);
}

/* fork with sheaves in slots and barns: the child's barn locks work and
 * its state is consistent. */
static void test_fork(void)
{
	struct kmem_cache *s = sheaf_cache("sheaf-fork", 64, 3);
	void *obj[60];
	for (int i = 0; i < 60; i++)
		CHECK(obj[i] = uslub_cache_alloc(s, 0));
	for (int i = 0; i < 60; i++)
		uslub_cache_free(s, obj[i]);
	CHECK(barn_full(s) > 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		for (int i = 0; i < 60; i++)
			CHECK(obj[i] = uslub_cache_alloc(s, 0));
		for (int i = 0; i < 60; i++)
			uslub_cache_free(s, obj[i]);
		check_settled(s, 0);
		/* no destroy here: TSan reports destroying a mutex that the
		 * fork handlers re-initialized while it counted it locked */
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check_settled(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* A cache that swings (a wave of objects freed, then allocated again):
 * the refills that follow the barn's refusals raise its limit, until a
 * wave stays in sheaves and never crosses the slab layer; uslub_trim()
 * (the purge pass, forced) lowers the limit back and, as
 * kmem_cache_shrink() does, flushes every sheaf of the barn. */
static void test_barn_swings(void)
{
	if (_uslub_option(USLUB_OPT_DECAY_MS) == 0)
		return;                          /* memory back at once: no raise */
	struct kmem_cache *s = sheaf_cache("sheaf-swing", 64, 3);
	enum { N = 3 * 60 };
	void *obj[N];
	struct node_barn *barn = s->barn[_uslub_home_node()];
	CHECK_EQ(barn->max_full, MAX_FULL_SHEAVES);
	uint64_t flush0 = 0, refill0 = 0, put0 = 0;
	for (int w = 0; w < 4; w++) {
		if (w == 3) {
			flush0 = ST(s, SHEAF_FLUSH);
			refill0 = ST(s, SHEAF_REFILL);
			put0 = ST(s, BARN_PUT);
		}
		for (int i = 0; i < N; i++)
			CHECK(obj[i] = uslub_cache_alloc(s, 0));
		for (int i = 0; i < N; i++)
			uslub_cache_free(s, obj[i]);
		CHECK(barn->nr_full <= barn->max_full);
		CHECK(barn->nr_empty <= MAX(MAX_EMPTY_SHEAVES, barn->max_full));
	}
	/* the fourth wave: all in the barn and back, nothing to the slabs */
	CHECK_EQ(ST(s, SHEAF_FLUSH), flush0);
	CHECK_EQ(ST(s, SHEAF_REFILL), refill0);
	CHECK(ST(s, BARN_PUT) - put0 >= N / 3 - 2);
	CHECK(barn->max_full > MAX_FULL_SHEAVES && barn->max_full <= N / 3);
	CHECK(barn_full(s) > MAX_FULL_SHEAVES);
	CHECK_EQ(uslub_cache_validate(s), 0);

	unsigned long full = barn_full(s);
	uslub_trim();
	CHECK_EQ(barn->max_full, MAX_FULL_SHEAVES);
	CHECK_EQ(barn_full(s), 0);
	CHECK_EQ(barn_empty(s), 0);
	CHECK_EQ(ST(s, SHEAF_FLUSH) - flush0, 3 * full);
	check_settled(s, 0);
	check_sheaf_census(s, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "cpu_slabs")) {
		test_cpu_slabs_child();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "failure")) {
		test_refill_failure();
		test_prefill_failure();
		return 0;
	}
	if (_uslub_option(USLUB_OPT_CPU_SLABS) != 0) {
		fprintf(stderr, "sheaf: run without USLUB_CPU_SLABS (the test sets it itself)\n");
		return 77;
	}
	test_capacity();
	test_defaults();
	run_child(argv[0], "cpu_slabs", "USLUB_CPU_SLABS", "1");
	run_child(argv[0], "failure", "USLUB_MAX_ORDER", "0");
	test_pcs_paths();
	test_barn_limits();
	test_barn_swings();
	test_flush();
	test_exit_to_barn();
	test_prefill_guarantee();
	test_prefill_return();
	test_refill();
	test_bad_input();
	test_nocpu();
	test_threads();
	test_fork();
	printf("sheaf: ok\n");
	return 0;
}
