/*
 * uslub-bench-uslub: the benchmarks on uslub object caches
 * (uslub_cache_create / uslub_cache_alloc(GFP_KERNEL) / uslub_cache_free;
 * B2: uslub_cache_alloc_bulk / uslub_cache_free_bulk, with --sheaves N a
 * cache made by uslub_cache_create_args with sheaf_capacity = N),
 * linked statically with libuslub.
 *
 * Mode-agnostic: the caches are made without USLUB_CPU_SLAB (except B3's,
 * below), so they take whichever per-CPU model the process runs: per-CPU
 * sheaves (the default) or the 6.x cpu slabs (USLUB_CPU_SLABS=1; run.py
 * runs B1, B2 and B4 both ways). The result line reports every non-zero
 * SLUB counter of the cache, whichever mode's they are, its
 * sheaf_capacity (0: the cache runs on cpu slabs) and whose sheaves they
 * are ("percpu_mode": "thread", or "cpu" with USLUB_PERCPU=cpu where rseq
 * is available; "percpu_ids": the rseq ids that have had sheaves).
 *
 * B3 (fresh-slab allocation, deferred vs eager freelist) compares uslub
 * with itself, so its loop lives here, below the shared harness; so do
 * B5 (accounted vs plain cache), B6 (profiling on vs off: run.py runs this
 * binary with USLUB_PROFILING=1 and =0), B7 (slab pages: groups sharing one
 * accounted cache vs one cache per group), B-meta (where the per-object
 * extension of accounted caches lives, seed 003) and B-debug (a plain
 * cache with a debug cache beside it: run.py runs this binary with and
 * without USLUB_DEBUG), and B6-acc (sampled allocinfo's accuracy: call
 * sites with known live bytes; run.py runs it with USLUB_PROFILING=1 once
 * and =sample every round).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "uslub.h"

struct peer_ctx {
	uslub_cache_t *s;
};

static const char peer_default_label[] = "uslub";

#define PEER_HAS_BULK 1
#define PEER_HAS_SHEAVES 1
#define PEER_HAS_B3 1
#define PEER_HAS_USLUB_ONLY 1
static unsigned int peer_sheaves;   /* --sheaves: 0 = the default (sheaves of
				       the default capacity, or none with
				       USLUB_CPU_SLABS=1) */
struct bench_opts;
static int peer_bench_b3(const struct bench_opts *o);
static int peer_bench_uslub_only(const struct bench_opts *o);

static struct peer_ctx *peer_open(size_t size, size_t max_live)
{
	char name[32];
	struct peer_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (peer_sheaves) {
		struct uslub_cache_args args = { .sheaf_capacity = peer_sheaves };
		snprintf(name, sizeof(name), "bench-%zu-sheaves", size);
		c->s = uslub_cache_create_args(name, size, &args, 0);
	} else {
		snprintf(name, sizeof(name), "bench-%zu", size);
		c->s = uslub_cache_create(name, size, 0, 0, NULL);
	}
	if (!c->s) {
		perror("uslub_cache_create");
		free(c);
		return NULL;
	}
	return c;
}

static void peer_close(struct peer_ctx *c)
{
	uslub_flush_thread();
	if (uslub_cache_destroy(c->s))
		fprintf(stderr, "bench: uslub_cache_destroy failed (objects live?)\n");
	free(c);
}

static inline void *peer_alloc(struct peer_ctx *c)
{
	return uslub_cache_alloc(c->s, USLUB_GFP_KERNEL);
}

static inline void peer_free(struct peer_ctx *c, void *p)
{
	uslub_cache_free(c->s, p);
}

static inline int peer_alloc_bulk(struct peer_ctx *c, size_t n, void **p)
{
	return uslub_cache_alloc_bulk(c->s, USLUB_GFP_KERNEL, n, p);
}

static inline void peer_free_bulk(struct peer_ctx *c, size_t n, void **p)
{
	uslub_cache_free_bulk(c->s, n, p);
}

static void peer_thread_start(struct peer_ctx *c) {}
static void peer_thread_stop(struct peer_ctx *c) { uslub_flush_thread(); }

/* Every non-zero SLUB counter of the run's cache, to explain the figures. */
static void peer_extra_json(struct peer_ctx *c, FILE *f)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(c->s, st);
	fprintf(f, ",\"stats\":{");
	int n = 0;
	for (int i = 0; i < USLUB_NR_STATS; i++)
		if (st[i])
			fprintf(f, "%s\"%s\":%llu", n++ ? "," : "",
				uslub_stat_name((enum uslub_stat_item)i),
				(unsigned long long)st[i]);
	fprintf(f, "},\"sheaf_capacity\":%u,\"errors\":%lu",
		uslub_cache_sheaf_capacity(c->s), uslub_error_count());
	/* whose sheaves (USLUB_PERCPU): run.py's uslub-percpu checks "cpu" */
	struct uslub_slabinfo si;
	if (uslub_cache_slabinfo(c->s, &si) == 0 && si.percpu_mode)
		fprintf(f, ",\"percpu_mode\":\"%s\",\"percpu_ids\":%u", si.percpu_mode,
			si.percpu_ids);
}

#include "bench_core.h"

/* ------------------------------------------------------------------------
 * B3: fresh-slab allocation (slub_bulk_bench, seed 000)
 *
 * Four caches of --size bytes, all in this process: the freelist of a new
 * slab built eagerly (USLUB_EAGER_FREELIST, the kernel before 7.1) or
 * deferred (the default), each with randomization off and on. A round of
 * one cache allocates --bytes in batches of alloc_bulk(objects per slab)
 * and only that is timed; then everything is freed (free_bulk, one batch
 * at a time) and the cache shrunk, so the next round starts with no slab
 * at all and every batch has to come from a new slab. That is checked:
 * the new slabs made during the timed part are counted (ALLOC_SLAB) and
 * the slabs left after the shrink too, and both go into the result line
 * with the minor page faults taken during the timed parts.
 * The caches take turns round by round (the first one rotates), after
 * --warmup untimed rounds each (default 1: it faults the pages in).
 * The caches have no per-CPU sheaves (USLUB_CPU_SLAB): B3 measures the
 * slab layer's new slabs, a slab's worth handed out by one bulk call with
 * no free pointer written. uslub's bulk path with sheaves refills the
 * main sheaf first (a capacity's worth: slabs split, freelists linked,
 * pointers copied twice, one slab more per round), which is not that.
 * ---------------------------------------------------------------------- */
#define B3_VARIANTS 4

struct b3_variant {
	const char *name;
	unsigned int flags;
	uslub_cache_t *s;
	struct uslub_slabinfo si;
	unsigned long batch, batches, objects;
	unsigned long new_slabs_min, new_slabs_max; /* per timed round     */
	unsigned long left_slabs_max;  /* slabs left after free + shrink   */
	unsigned long minflt;          /* minor faults in the timed parts  */
	double *ns;
};

static uint64_t b3_new_slabs(uslub_cache_t *s)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	return st[USLUB_ALLOC_SLAB];
}

static long b3_minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

static int peer_bench_b3(const struct bench_opts *o)
{
	struct b3_variant v[B3_VARIANTS] = {
		{ .name = "eager-norandom",
		  .flags = USLUB_CPU_SLAB | USLUB_EAGER_FREELIST | USLUB_NO_RANDOM_FREELIST },
		{ .name = "deferred-norandom",
		  .flags = USLUB_CPU_SLAB | USLUB_NO_RANDOM_FREELIST },
		{ .name = "eager-random",
		  .flags = USLUB_CPU_SLAB | USLUB_EAGER_FREELIST | USLUB_RANDOM_FREELIST },
		{ .name = "deferred-random", .flags = USLUB_CPU_SLAB | USLUB_RANDOM_FREELIST },
	};
	for (int k = 0; k < B3_VARIANTS; k++)
		v[k].flags |= USLUB_CPU_SLAB;     /* no sheaves: see above */
	struct bench_opts oo = *o;
	unsigned long bytes = o->bytes ? o->bytes : 32ul << 20;
	unsigned long max_objs = 0;
	void **p;

	if (oo.warmup == (unsigned long)-1)
		oo.warmup = 1;
	if (oo.warmup > 100)
		bench_die("B3: --warmup is in rounds here: at most 100");
	if (oo.cpu >= 0 && !bench_pin(oo.cpu))
		oo.cpu = -1;
	for (int k = 0; k < B3_VARIANTS; k++) {
		struct uslub_cache_args args = { .sheaf_capacity = 0 };
		char name[48];
		snprintf(name, sizeof(name), "b3-%zu-%s", o->size, v[k].name);
		v[k].s = uslub_cache_create_args(name, o->size, &args, v[k].flags);
		if (!v[k].s) {
			perror("uslub_cache_create_args");
			bench_die("B3: cannot create the caches");
		}
		if (uslub_cache_slabinfo(v[k].s, &v[k].si))
			bench_die("B3: uslub_cache_slabinfo failed");
		v[k].batch = v[k].si.objs_per_slab;
		if (!v[k].batch)
			bench_die("B3: objs_per_slab is 0");
		v[k].batches = (bytes / o->size + v[k].batch - 1) / v[k].batch;
		if (!v[k].batches)
			v[k].batches = 1;
		v[k].objects = v[k].batches * v[k].batch;
		if (v[k].objects > max_objs)
			max_objs = v[k].objects;
		v[k].new_slabs_min = (unsigned long)-1;
		v[k].ns = calloc((size_t)o->repeats, sizeof(double));
		if (!v[k].ns)
			bench_die("B3: out of memory");
	}
	if (posix_memalign((void **)&p, BENCH_CACHELINE, max_objs * sizeof(void *)))
		bench_die("B3: out of memory");
	memset(p, 0, max_objs * sizeof(void *)); /* no page fault in the timed part */

	for (unsigned long r = 0; r < oo.warmup + (unsigned long)o->repeats; r++) {
		for (int j = 0; j < B3_VARIANTS; j++) {
			struct b3_variant *x = &v[(j + r) % B3_VARIANTS];
			uint64_t slabs0 = b3_new_slabs(x->s);
			long flt0 = b3_minflt();
			uint64_t t0 = bench_now_ns();
			for (unsigned long b = 0; b < x->batches; b++)
				if (BENCH_UNLIKELY(uslub_cache_alloc_bulk(x->s, USLUB_GFP_KERNEL,
									  x->batch, p + b * x->batch)
						   != (int)x->batch))
					bench_die("B3: bulk allocation failed");
			uint64_t t1 = bench_now_ns();
			long flt1 = b3_minflt();
			uint64_t slabs1 = b3_new_slabs(x->s);
			bench_escape(p);
			for (unsigned long b = 0; b < x->batches; b++)
				uslub_cache_free_bulk(x->s, x->batch, p + b * x->batch);
			uslub_cache_shrink(x->s);
			struct uslub_slabinfo si;
			if (uslub_cache_slabinfo(x->s, &si) == 0 && si.num_slabs > x->left_slabs_max)
				x->left_slabs_max = si.num_slabs;
			if (r < oo.warmup)
				continue;
			x->ns[r - oo.warmup] = (double)(t1 - t0) / (double)x->objects;
			x->minflt += (unsigned long)(flt1 - flt0);
			if (slabs1 - slabs0 < x->new_slabs_min)
				x->new_slabs_min = (unsigned long)(slabs1 - slabs0);
			if (slabs1 - slabs0 > x->new_slabs_max)
				x->new_slabs_max = (unsigned long)(slabs1 - slabs0);
		}
	}

	bench_json_head(&oo, max_objs, "ns per object (allocation only, fresh slabs)");
	printf(",\"cpu\":%d,\"bytes\":%lu,\"series\":{", oo.cpu, bytes);
	for (int k = 0; k < B3_VARIANTS; k++) {
		printf("%s\"%s\":[", k ? "," : "", v[k].name);
		for (int r = 0; r < o->repeats; r++)
			printf("%s%.4f", r ? "," : "", v[k].ns[r]);
		printf("]");
	}
	printf("},\"variants\":{");
	for (int k = 0; k < B3_VARIANTS; k++) {
		/* every batch from a new slab: exactly one new slab per batch */
		int fresh = v[k].new_slabs_min == v[k].batches &&
			    v[k].new_slabs_max == v[k].batches && v[k].left_slabs_max == 0;
		printf("%s\"%s\":{\"flags\":%u,\"batch\":%lu,\"batches\":%lu,"
		       "\"objects\":%lu,\"objs_per_slab\":%u,\"order\":%u,"
		       "\"object_stride\":%zu,\"random_freelist\":%d,"
		       "\"sheaf_capacity\":%u,\"new_slabs_per_round\":[%lu,%lu],"
		       "\"slabs_left_after_shrink\":%lu,\"minflt_timed\":%lu,"
		       "\"fresh\":%s}",
		       k ? "," : "", v[k].name, v[k].flags, v[k].batch, v[k].batches,
		       v[k].objects, v[k].si.objs_per_slab, v[k].si.order, v[k].si.size,
		       v[k].si.random_freelist, v[k].si.sheaf_capacity,
		       v[k].new_slabs_min, v[k].new_slabs_max, v[k].left_slabs_max,
		       v[k].minflt, fresh ? "true" : "false");
		if (!fresh)
			fprintf(stderr, "bench: B3 %s %zu B: not every batch came from a new "
				"slab (new slabs per round %lu..%lu for %lu batches, %lu "
				"slabs left after shrink)\n", v[k].name, o->size,
				v[k].new_slabs_min, v[k].new_slabs_max, v[k].batches,
				v[k].left_slabs_max);
	}
	printf("},\"errors\":%lu}\n", uslub_error_count());
	fflush(stdout);
	for (int k = 0; k < B3_VARIANTS; k++) {
		uslub_flush_thread();
		if (uslub_cache_destroy(v[k].s))
			fprintf(stderr, "bench: uslub_cache_destroy failed (objects live?)\n");
		free(v[k].ns);
	}
	free(p);
	return 0;
}

/* ------------------------------------------------------------------------
 * B5, B6, B7, B-meta, B-debug: uslub against itself
 * ---------------------------------------------------------------------- */

/* A cache for these benchmarks: like peer_open(), with flags and align. */
static struct peer_ctx *b_open(const char *name, size_t size, size_t align,
			       unsigned int flags)
{
	struct peer_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		bench_die("out of memory");
	if (peer_sheaves) {
		struct uslub_cache_args args = { .sheaf_capacity = peer_sheaves,
						 .align = align };
		c->s = uslub_cache_create_args(name, size, &args, flags);
	} else {
		c->s = uslub_cache_create(name, size, align, flags, NULL);
	}
	if (!c->s) {
		fprintf(stderr, "bench: cannot create cache %s (%zu B, align %zu, flags %#x): %s\n",
			name, size, align, flags, strerror(errno));
		exit(2);
	}
	return c;
}

static void b_slabinfo(uslub_cache_t *s, struct uslub_slabinfo *si)
{
	if (uslub_cache_slabinfo(s, si))
		bench_die("uslub_cache_slabinfo failed");
}

/* The layout of @s as JSON members (no braces). */
static void b_layout_json(const struct uslub_slabinfo *si)
{
	printf("\"object_size\":%zu,\"stride\":%zu,\"align\":%zu,\"objs_per_slab\":%u,"
	       "\"order\":%u,\"pages_per_slab\":%u,\"obj_ext\":\"%s\",\"obj_ext_size\":%u,"
	       "\"obj_ext_bytes\":%u,\"obj_ext_fields\":\"%s\",\"obj_ext_charge\":%u,"
	       "\"sheaf_capacity\":%u",
	       si->object_size, si->size, si->align, si->objs_per_slab, si->order,
	       si->pages_per_slab, uslub_obj_ext_placement_name(si->obj_ext),
	       si->obj_ext_size, si->obj_ext_bytes, si->obj_ext_fields, si->obj_ext_charge,
	       si->sheaf_capacity);
}

/* Every non-zero SLUB counter of @s as a JSON member "stats":{...}. */
static void b_stats_json(uslub_cache_t *s)
{
	uint64_t st[USLUB_NR_STATS];
	int n = 0;
	uslub_cache_stats(s, st);
	printf("\"stats\":{");
	for (int i = 0; i < USLUB_NR_STATS; i++)
		if (st[i])
			printf("%s\"%s\":%llu", n++ ? "," : "",
			       uslub_stat_name((enum uslub_stat_item)i),
			       (unsigned long long)st[i]);
	printf("}");
}

static void b_close(struct peer_ctx *c)
{
	uslub_flush_thread();
	if (uslub_cache_destroy(c->s))
		fprintf(stderr, "bench: uslub_cache_destroy failed (objects live?)\n");
	free(c);
}

/* Is there a live allocation site of this file in the allocinfo report?
 * (B6: shows that the tags really went into the objects' extensions.) */
static int b_tag_seen(void)
{
	struct uslub_allocinfo ai[256];
	size_t n = uslub_allocinfo(ai, 256);
	if (n > 256)
		n = 256;
	for (size_t i = 0; i < n; i++)
		if (ai[i].file && strstr(ai[i].file, "bench_uslub.c") && ai[i].calls > 0)
			return 1;
	return 0;
}

/* The sampled mode's mean interval in bytes, as the library took it
 * (USLUB_PROFILING, or the default); 0 when not sampling. */
static unsigned long b_sample_rate(void)
{
	return (unsigned long)uslub_profiling_sample_interval();
}

/* B6's and B6-acc's first step: is profiling what run.py asked for?
 * 0: yes; 3: no (the environment did not take); -1: the sampled mode was
 * asked for (2) but this build has none: the caller prints a skipped row. */
static int b_check_profiling(const struct bench_opts *o, int prof)
{
	if (o->expect_profiling < 0 || prof == o->expect_profiling)
		return 0;
	const char *env = getenv("USLUB_PROFILING");
	if (o->expect_profiling == 2)
		return -1;
	fprintf(stderr, "bench: %s: USLUB_PROFILING=%s but uslub_profiling_enabled() "
		"is %d, not %d: the environment did not take effect\n", o->bench,
		env ? env : "(unset)", prof, o->expect_profiling);
	return 3;
}

/* Sampled mode: allocate from @c until this file's call site shows up in
 * allocinfo (a sample was taken), at most 64 x the sampling rate's worth
 * of objects, all held until the end; 1 when it showed up. */
static int b_tag_seen_sampled(struct peer_ctx *c, size_t stride)
{
	unsigned long rate = b_sample_rate(), chunk, max;
	int seen = 0;
	if (!rate)
		rate = 512ul << 10;
	chunk = rate / stride + 1;
	max = 64 * chunk;
	void **held = malloc(max * sizeof(*held));
	unsigned long n = 0;
	if (!held)
		bench_die("out of memory");
	while (n < max && !seen) {
		for (unsigned long i = 0; i < chunk && n < max; i++) {
			held[n] = peer_alloc(c);
			if (!held[n])
				bench_die("B6: check allocation failed");
			n++;
		}
		seen = b_tag_seen();
	}
	while (n)
		peer_free(c, held[--n]);
	free(held);
	return seen;
}

/*
 * B5 (@account): a plain cache and a USLUB_ACCOUNT cache of --size bytes,
 * the thread's current group one without limit; B6: one plain cache, the
 * process run with USLUB_PROFILING=1 or =0 (--expect-profiling). Both
 * patterns of bench_pairs_batches(): B1's hot pair and --batch objects
 * allocated then freed one by one.
 */
static int b56(const struct bench_opts *o, int account)
{
	static const char *const vname[2] = { "plain", "account" };
	static const char *const pname[2] = { "pair", "batch" };
	unsigned long iters = o->iters ? o->iters : 20000000ul;
	int nv = account ? 2 : 1;
	int prof = uslub_profiling_enabled();
	struct bench_opts oo = *o;
	struct peer_ctx *c[2] = { NULL, NULL };
	uslub_group_t *g = NULL, *old = NULL;
	double *ns;

	int pc = b_check_profiling(o, prof);
	if (pc < 0)
		return bench_skip(o, "sampled mode not available (USLUB_PROFILING=sample gives "
				  "uslub_profiling_enabled() != 2)");
	if (pc)
		return pc;
	if (oo.warmup == (unsigned long)-1)
		oo.warmup = iters / 10 > 100000 ? iters / 10 : 100000;
	if (oo.cpu >= 0 && !bench_pin(oo.cpu))
		oo.cpu = -1;
	if (account) {
		g = uslub_group_create(NULL, "bench", USLUB_GROUP_NO_LIMIT);
		if (!g) {
			perror("uslub_group_create");
			bench_die("B5: cannot create the group");
		}
		old = uslub_group_set_current(g);
	}
	for (int v = 0; v < nv; v++) {
		char name[48];
		snprintf(name, sizeof(name), "%s-%zu-%s", o->bench, o->size, vname[v]);
		c[v] = b_open(name, o->size, 0, v ? USLUB_ACCOUNT : 0);
	}
	ns = calloc((size_t)nv * 2 * (size_t)o->repeats, sizeof(*ns));
	if (!ns)
		bench_die("out of memory");

	bench_pairs_batches(c, nv, iters, oo.warmup, o->batch, o->repeats, ns, NULL, NULL);

	bench_json_head(&oo, iters, "ns per alloc+free pair (pair), per object (batch)");
	printf(",\"cpu\":%d,\"batch\":%lu,\"profiling\":%d,\"profiling_env\":\"%s\","
	       "\"sample_rate\":%lu,\"series\":{", oo.cpu, o->batch, prof,
	       getenv("USLUB_PROFILING") ? getenv("USLUB_PROFILING") : "",
	       prof == 2 ? b_sample_rate() : 0ul);
	for (int v = 0; v < nv; v++)
		for (int pat = 0; pat < 2; pat++) {
			printf("%s\"%s %s\":[", v || pat ? "," : "", vname[v], pname[pat]);
			for (int r = 0; r < o->repeats; r++)
				printf("%s%.4f", r ? "," : "", ns[(v * 2 + pat) * o->repeats + r]);
			printf("]");
		}
	printf("},\"caches\":{");
	for (int v = 0; v < nv; v++) {
		struct uslub_slabinfo si;
		b_slabinfo(c[v]->s, &si);
		printf("%s\"%s\":{", v ? "," : "", vname[v]);
		b_layout_json(&si);
		printf(",");
		b_stats_json(c[v]->s);
		printf("}");
	}
	printf("}");

	/* Checks, after the timing: B5, one object of each cache charges the
	 * group (account) or not (plain); B6, its call site shows up in
	 * allocinfo with profiling on and not with it off. */
	if (account) {
		unsigned long objs[2] = { 0, 0 };
		size_t bytes[2] = { 0, 0 };
		struct uslub_slabinfo si;
		void *p[2];
		for (int v = 0; v < 2; v++)
			p[v] = peer_alloc(c[v]);
		for (int v = 0; v < 2; v++)
			if (!p[v] || uslub_group_cache_usage(g, c[v]->s, &objs[v], &bytes[v]))
				bench_die("B5: check allocation or uslub_group_cache_usage failed");
		b_slabinfo(c[1]->s, &si);
		int ok = objs[1] == 1 && bytes[1] == si.size + si.obj_ext_bytes && objs[0] == 0;
		printf(",\"charge_check\":{\"account_objects\":%lu,\"account_bytes\":%zu,"
		       "\"expected_bytes\":%zu,\"plain_objects\":%lu,\"ok\":%s}",
		       objs[1], bytes[1], si.size + si.obj_ext_bytes, objs[0],
		       ok ? "true" : "false");
		if (!ok)
			fprintf(stderr, "bench: B5: one object of the accounted cache charged "
				"%lu object(s), %zu bytes (expected 1, %zu), the plain one %lu\n",
				objs[1], bytes[1], si.size + si.obj_ext_bytes, objs[0]);
		for (int v = 0; v < 2; v++)
			peer_free(c[v], p[v]);
		struct uslub_group_info gi;
		if (uslub_group_info(g, &gi) == 0)
			printf(",\"group\":{\"usage_at_end\":%zu,\"failcnt\":%lu}", gi.usage,
			       gi.failcnt);
	} else {
		/* exact: one object shows up; sampled: enough objects for a
		 * few samples do; off: nothing does */
		int seen;
		if (prof == 2) {
			struct uslub_slabinfo si;
			b_slabinfo(c[0]->s, &si);
			seen = b_tag_seen_sampled(c[0], si.size);
		} else {
			void *p = peer_alloc(c[0]);
			if (!p)
				bench_die("B6: check allocation failed");
			seen = b_tag_seen();
			peer_free(c[0], p);
		}
		printf(",\"tag_check\":{\"site_seen\":%s,\"ok\":%s}", seen ? "true" : "false",
		       seen == (prof != 0) ? "true" : "false");
		if (seen != (prof != 0))
			fprintf(stderr, "bench: B6: profiling is %s but this file's call site "
				"%s in uslub_allocinfo() while it held %s\n",
				prof == 2 ? "sampled" : prof ? "on" : "off",
				seen ? "shows up" : "does not show up",
				prof == 2 ? "64 x the sampling rate's bytes" : "an object");
	}
	printf(",\"errors\":%lu}\n", uslub_error_count());
	fflush(stdout);

	for (int v = 0; v < nv; v++)
		b_close(c[v]);
	if (account) {
		uslub_group_set_current(old);
		uslub_group_drain_stock();
		if (uslub_group_delete(g))
			perror("bench: uslub_group_delete");
	}
	free(ns);
	return 0;
}

/*
 * B7 (seed 004): for each N of --groups, N groups each holding --objs
 * objects of --size bytes, either from one shared USLUB_ACCOUNT cache
 * (--mode shared: the kernel since 5.9) or from one plain cache per group
 * (--mode per-group: the per-memcg caches before it). Slab pages = sum over
 * the caches of num_slabs * pages_per_slab, taken with every object still
 * held; everything is then freed, the caches destroyed and the groups
 * deleted before the next N.
 */
static int b7(const struct bench_opts *o)
{
	static const unsigned long def_groups[] = { 100, 1000 };
	const unsigned long *gs = o->nr_groups ? o->groups : def_groups;
	int ngs = o->nr_groups ? o->nr_groups : 2;
	int shared = !strcmp(o->mode, "shared");
	long pagesz = sysconf(_SC_PAGESIZE);

	printf("{\"bench\":\"B7\",\"peer\":\"%s\",\"size\":%zu,\"mode\":\"%s\","
	       "\"objs_per_group\":%lu,\"profiling\":%d,\"page_size\":%ld,\"points\":{",
	       o->label, o->size, o->mode, o->objs, uslub_profiling_enabled(), pagesz);
	for (int k = 0; k < ngs; k++) {
		unsigned long n = gs[k], ncaches = shared ? 1 : n;
		uslub_group_t **g = calloc(n, sizeof(*g));
		uslub_cache_t **cs = calloc(ncaches, sizeof(*cs));
		void **objs = calloc(n * o->objs, sizeof(*objs));
		struct uslub_page_stats ps0, ps1;
		struct uslub_slabinfo si0;
		unsigned long slabs = 0, pages = 0, num_objs = 0, mem = 0, ext_out = 0;
		unsigned long c_objs = 0;
		size_t c_bytes = 0, usage = 0;
		char name[64];
		uint64_t t0, t1;

		if (!g || !cs || !objs)
			bench_die("B7: out of memory");
		uslub_page_stats(&ps0);
		t0 = bench_now_ns();
		for (unsigned long i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "b7-g%lu", i);
			g[i] = uslub_group_create(NULL, name, USLUB_GROUP_NO_LIMIT);
			if (!g[i]) {
				perror("uslub_group_create");
				bench_die("B7: cannot create a group");
			}
		}
		for (unsigned long i = 0; i < ncaches; i++) {
			if (shared)
				snprintf(name, sizeof(name), "b7-%zu-shared", o->size);
			else
				snprintf(name, sizeof(name), "b7-%zu-g%lu", o->size, i);
			cs[i] = uslub_cache_create(name, o->size, 0, shared ? USLUB_ACCOUNT : 0,
						   NULL);
			if (!cs[i]) {
				fprintf(stderr, "bench: B7: cannot create cache %lu of %lu: %s\n",
					i + 1, ncaches, strerror(errno));
				exit(2);
			}
		}
		/* Each group allocates its objects as its thread's current group
		 * (in per-group mode too: the caches are plain, nothing charged). */
		for (unsigned long i = 0; i < n; i++) {
			uslub_group_t *prev = uslub_group_set_current(g[i]);
			uslub_cache_t *s = cs[shared ? 0 : i];
			for (unsigned long j = 0; j < o->objs; j++) {
				void *p = uslub_cache_alloc(s, USLUB_GFP_KERNEL);
				if (!p)
					bench_die("B7: allocation failed");
				*(volatile char *)p = 1;
				objs[i * o->objs + j] = p;
			}
			uslub_group_set_current(prev);
		}
		t1 = bench_now_ns();
		for (unsigned long i = 0; i < ncaches; i++) {
			struct uslub_slabinfo si;
			b_slabinfo(cs[i], &si);
			if (i == 0)
				si0 = si;
			slabs += si.num_slabs;
			pages += si.num_slabs * si.pages_per_slab;
			num_objs += si.num_objs;
			mem += si.memory_used;
			ext_out += (unsigned long)si.obj_ext_bytes * si.num_objs;
		}
		uslub_page_stats(&ps1);
		for (unsigned long i = 0; i < n; i++)
			usage += uslub_group_usage(g[i]);
		if (uslub_group_cache_usage(g[0], cs[0], &c_objs, &c_bytes))
			bench_die("B7: uslub_group_cache_usage failed");

		printf("%s\"%lu\":{\"groups\":%lu,\"caches\":%lu,\"objects\":%lu,"
		       "\"slabs\":%lu,\"slab_pages\":%lu,\"slab_bytes\":%lu,"
		       "\"slot_objects\":%lu,\"ext_bytes_outside\":%lu,"
		       "\"page_provider_bytes_in_slabs_delta\":%ld,"
		       "\"group_usage_sum\":%zu,\"group0_charged_objects\":%lu,"
		       "\"group0_charged_bytes\":%zu,\"setup_ms\":%.2f,\"ok\":%s,\"layout\":{",
		       k ? "," : "", n, n, ncaches, n * o->objs, slabs, pages, mem, num_objs,
		       ext_out, (long)(ps1.bytes_in_slabs - ps0.bytes_in_slabs), usage, c_objs,
		       c_bytes, (double)(t1 - t0) / 1e6,
		       c_objs == (shared ? o->objs : 0) ? "true" : "false");
		b_layout_json(&si0);
		printf("}}");
		/* shared: group 0's objects are charged to it; per-group: nothing */
		if (c_objs != (shared ? o->objs : 0))
			fprintf(stderr, "bench: B7 %s: group 0 has %lu objects charged in its "
				"cache, expected %lu\n", o->mode, c_objs, shared ? o->objs : 0);

		for (unsigned long i = 0; i < n; i++)
			for (unsigned long j = 0; j < o->objs; j++)
				uslub_cache_free(cs[shared ? 0 : i], objs[i * o->objs + j]);
		uslub_flush_thread();
		for (unsigned long i = 0; i < ncaches; i++)
			if (uslub_cache_destroy(cs[i]))
				fprintf(stderr, "bench: B7: uslub_cache_destroy failed\n");
		uslub_group_drain_stock();
		for (unsigned long i = 0; i < n; i++)
			if (uslub_group_delete(g[i]))
				perror("bench: B7: uslub_group_delete");
		free(g);
		free(cs);
		free(objs);
	}
	printf("},\"errors\":%lu}\n", uslub_error_count());
	fflush(stdout);
	return 0;
}

/*
 * B-meta (seed 003): for each spec LABEL=SIZE[/ALIGN][+hw] of --caches, a
 * USLUB_ACCOUNT cache (+hw: USLUB_HWCACHE_ALIGN) and a plain twin with the
 * same size and alignment. Reports where the accounted cache keeps its
 * per-object extension (uslub_slabinfo.obj_ext), the extension bytes per
 * object outside the slab (obj_ext_bytes), the twin's layout (so an
 * in-slab placement can be seen to cost no object slot), and what one
 * object really charges its group. The twin then allocates one object
 * with USLUB_GFP_ACCOUNT, so its "plain" layout shows the extension a
 * plain cache gets on demand (and, with exact profiling, its tag-only
 * extension and the charge of a widened slab). run.py runs it with
 * profiling off and exact: the exact run's accounted cache has both
 * words, the two-word layout every extension had before Linux 7.3.
 */
#define BMETA_DEFAULT "ext4_inode_cache-like=1184+hw,xfs_inode-like=984/64,64B=64,120B-in-128=120/64"

static int bmeta(const struct bench_opts *o)
{
	char buf[1024], *save = NULL, *tok;
	const char *spec = o->caches ? o->caches : BMETA_DEFAULT;
	long pagesz = sysconf(_SC_PAGESIZE);
	uslub_group_t *g, *old;
	int k = 0;

	if (strlen(spec) >= sizeof(buf))
		bench_die("B-meta: --caches too long");
	strcpy(buf, spec);
	g = uslub_group_create(NULL, "bench-meta", USLUB_GROUP_NO_LIMIT);
	if (!g)
		bench_die("B-meta: cannot create the group");
	printf("{\"bench\":\"B-meta\",\"peer\":\"%s\",\"size\":0,\"profiling\":%d,"
	       "\"page_size\":%ld,\"caches\":[", o->label, uslub_profiling_enabled(), pagesz);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), k++) {
		char *eq = strchr(tok, '='), *end;
		const char *label = tok;
		unsigned long size, align = 0;
		int hw = 0;
		if (!eq)
			bench_die("B-meta: --caches wants LABEL=SIZE[/ALIGN][+hw],...");
		*eq = 0;
		size = strtoul(eq + 1, &end, 0);
		if (*end == '/')
			align = strtoul(end + 1, &end, 0);
		if (!strcmp(end, "+hw"))
			hw = 1;
		else if (*end)
			bench_die("B-meta: --caches wants LABEL=SIZE[/ALIGN][+hw],...");
		unsigned int flags = hw ? USLUB_HWCACHE_ALIGN : 0;
		char name[96];
		snprintf(name, sizeof(name), "meta-%s", label);
		struct peer_ctx *acc = b_open(name, size, align, flags | USLUB_ACCOUNT);
		snprintf(name, sizeof(name), "meta-%s-plain", label);
		struct peer_ctx *pl = b_open(name, size, align, flags);
		struct uslub_slabinfo sa, sp;
		unsigned long c_objs = 0;
		size_t c_bytes = 0;

		old = uslub_group_set_current(g);
		void *p = peer_alloc(acc);
		if (!p || uslub_group_cache_usage(g, acc->s, &c_objs, &c_bytes))
			bench_die("B-meta: allocation or uslub_group_cache_usage failed");
		uslub_cache_free(acc->s, p);
		unsigned long p_objs = 0;
		size_t p_bytes = 0;
		void *q = uslub_cache_alloc(pl->s, USLUB_GFP_ACCOUNT);
		if (!q || uslub_group_cache_usage(g, pl->s, &p_objs, &p_bytes))
			bench_die("B-meta: allocation or uslub_group_cache_usage failed");
		uslub_cache_free(pl->s, q);
		uslub_group_set_current(old);
		b_slabinfo(acc->s, &sa);
		b_slabinfo(pl->s, &sp);

		long slab_bytes = (long)sa.pages_per_slab * pagesz;
		printf("%s{\"label\":\"%s\",\"hwcache_align\":%d,\"align_asked\":%lu,",
		       k ? "," : "", label, hw, align);
		b_layout_json(&sa);
		int ok = c_objs == 1 && c_bytes == sa.size + sa.obj_ext_bytes &&
			 c_bytes == sa.obj_ext_charge && p_objs == 1 && p_bytes == sp.obj_ext_charge;
		printf(",\"slab_bytes\":%ld,\"leftover_bytes\":%ld,\"padding_bytes\":%ld,"
		       "\"charged_objects\":%lu,\"charged_bytes\":%zu,\"ok\":%s,\"plain\":{",
		       slab_bytes, slab_bytes - (long)sa.objs_per_slab * (long)sa.size,
		       (long)sa.size - (long)sa.object_size, c_objs, c_bytes,
		       ok ? "true" : "false");
		if (!ok)
			fprintf(stderr, "bench: B-meta %s: one object charged %lu object(s), %zu "
				"bytes (expected 1, stride %zu + outside %u = %u); the plain twin's "
				"%lu, %zu (expected 1, %u)\n", label, c_objs, c_bytes, sa.size,
				sa.obj_ext_bytes, sa.obj_ext_charge, p_objs, p_bytes,
				sp.obj_ext_charge);
		b_layout_json(&sp);
		printf(",\"charged_objects\":%lu,\"charged_bytes\":%zu", p_objs, p_bytes);
		printf("}}");
		b_close(acc);
		b_close(pl);
	}
	uslub_group_drain_stock();
	if (uslub_group_delete(g))
		perror("bench: uslub_group_delete");
	printf("],\"errors\":%lu}\n", uslub_error_count());
	fflush(stdout);
	return 0;
}

/*
 * B-debug: what a debug cache elsewhere in the process costs a cache that
 * is not one. Two caches of --size bytes: "bench-plain-SIZE", timed with
 * B5's two patterns, and "bench-debug-other-SIZE", which run.py makes a
 * debug cache in one of its two processes (USLUB_DEBUG="FZPU,bench-debug*")
 * and leaves plain in the other, so both run the very same code. The other
 * cache holds BDEBUG_HELD objects all through the timing and allocates and
 * frees BDEBUG_BURST more before each timed loop's warm-up (untimed). Then
 * the other cache itself is timed with the same loops, --other-iters pairs
 * / objects per sample: what debugging costs that cache. Last, the checks:
 * the other cache is a debug cache as --expect-debug says, the timed one
 * is not (exit 3 otherwise).
 */
#define BDEBUG_HELD 8
#define BDEBUG_BURST 8

/* bench_pairs_batches()'s hook: a burst of allocations on the other cache. */
static void bdebug_burst(void *arg)
{
	struct peer_ctx *c = arg;
	void *p[BDEBUG_BURST];
	for (int i = 0; i < BDEBUG_BURST; i++)
		if (!(p[i] = peer_alloc(c)))
			bench_die("B-debug: allocation from the other cache failed");
	bench_escape(p);
	for (int i = 0; i < BDEBUG_BURST; i++)
		peer_free(c, p[i]);
}

/* Is @s a debug cache: did every allocation take the checked slow path
 * (none from the cpu freelist or a sheaf)? */
static int b_checked_only(uslub_cache_t *s)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	return st[USLUB_ALLOC_SLOWPATH] && !st[USLUB_ALLOC_FASTPATH] && !st[USLUB_ALLOC_PCS];
}

static int bdebug(const struct bench_opts *o)
{
	static const char *const vname[2] = { "plain", "other" };
	static const char *const pname[2] = { "pair", "batch" };
	unsigned long iters = o->iters ? o->iters : 20000000ul;
	unsigned long other_iters = o->other_iters ? o->other_iters :
				    iters >= 100 ? iters / 100 : 1;
	struct bench_opts oo = *o;
	struct peer_ctx *c[2];
	void *held[BDEBUG_HELD];
	int debug[2], ok;
	char name[2][48];
	double *ns;

	if (oo.warmup == (unsigned long)-1)
		oo.warmup = iters / 10 > 100000 ? iters / 10 : 100000;
	if (oo.cpu >= 0 && !bench_pin(oo.cpu))
		oo.cpu = -1;
	snprintf(name[0], sizeof(name[0]), "bench-plain-%zu", o->size);
	snprintf(name[1], sizeof(name[1]), "bench-debug-other-%zu", o->size);
	for (int v = 0; v < 2; v++)
		c[v] = b_open(name[v], o->size, 0, 0);
	for (int i = 0; i < BDEBUG_HELD; i++)
		if (!(held[i] = peer_alloc(c[1])))
			bench_die("B-debug: allocation from the other cache failed");
	ns = calloc(4 * (size_t)o->repeats, sizeof(*ns));
	if (!ns)
		bench_die("out of memory");

	bench_pairs_batches(&c[0], 1, iters, oo.warmup, o->batch, o->repeats, ns,
			    bdebug_burst, c[1]);
	bench_pairs_batches(&c[1], 1, other_iters, other_iters / 10, o->batch, o->repeats,
			    ns + 2 * o->repeats, NULL, NULL);
	for (int i = 0; i < BDEBUG_HELD; i++)
		peer_free(c[1], held[i]);
	for (int v = 0; v < 2; v++)
		debug[v] = b_checked_only(c[v]->s);
	ok = !debug[0] && (o->expect_debug < 0 || debug[1] == o->expect_debug);

	bench_json_head(&oo, iters, "ns per alloc+free pair (pair), per object (batch)");
	printf(",\"cpu\":%d,\"batch\":%lu,\"other_iters\":%lu,\"profiling\":%d,\"series\":{",
	       oo.cpu, o->batch, other_iters, uslub_profiling_enabled());
	for (int v = 0; v < 2; v++)
		for (int pat = 0; pat < 2; pat++) {
			printf("%s\"%s %s\":[", v || pat ? "," : "", vname[v], pname[pat]);
			for (int r = 0; r < o->repeats; r++)
				printf("%s%.4f", r ? "," : "", ns[(v * 2 + pat) * o->repeats + r]);
			printf("]");
		}
	printf("},\"caches\":{");
	for (int v = 0; v < 2; v++) {
		struct uslub_slabinfo si;
		b_slabinfo(c[v]->s, &si);
		printf("%s\"%s\":{\"name\":\"%s\",\"debug\":%s,", v ? "," : "", vname[v],
		       name[v], debug[v] ? "true" : "false");
		b_layout_json(&si);
		printf(",");
		b_stats_json(c[v]->s);
		printf("}");
	}
	printf("},\"debug_check\":{\"expect_debug\":%d,\"ok\":%s},\"errors\":%lu}\n",
	       o->expect_debug, ok ? "true" : "false", uslub_error_count());
	fflush(stdout);
	if (debug[0])
		fprintf(stderr, "bench: B-debug: %s is a debug cache (its allocations all took "
			"the checked path): USLUB_DEBUG must not name it\n", name[0]);
	else if (!ok)
		fprintf(stderr, "bench: B-debug: %s is %sa debug cache, but --expect-debug is "
			"%d (USLUB_DEBUG=%s)\n", name[1], debug[1] ? "" : "not ",
			o->expect_debug, getenv("USLUB_DEBUG") ? getenv("USLUB_DEBUG") : "(unset)");

	for (int v = 0; v < 2; v++)
		b_close(c[v]);
	free(ns);
	return ok ? 0 : 3;
}

/*
 * B6-acc: sampled allocinfo's accuracy. Eight call sites, each holding a
 * known share of --bytes live bytes (default 64 MiB) in objects of one
 * size, 16 B .. 32 KiB (kmalloc up to 4 KiB; caches of their own for
 * 16 and 32 KiB, since kmalloc above 8 KiB is a page run and untagged),
 * allocated interleaved in a fixed shuffled order; then each site's
 * allocinfo row is read while everything is held, and everything freed.
 * --repeats times in one process (the sampling countdown runs on, so each
 * repetition is a fresh sample of the same workload). Each site's exact
 * figure is its objects x its cache's stride (what allocinfo counts);
 * run.py runs it with USLUB_PROFILING=1 (must report exactly that) and
 * =sample (estimates). Bytes, not time.
 */
#define B6ACC_SITES 8
static const struct {
	size_t size;
	double share;        /* of --bytes */
} b6acc_site[B6ACC_SITES] = {
	{ 16, 0.005 }, { 64, 0.10 }, { 192, 0.14 }, { 512, 0.14 },
	{ 1024, 0.18 }, { 4096, 0.14 }, { 16384, 0.12 }, { 32768, 0.175 },
};
static uslub_cache_t *b6acc_cache[B6ACC_SITES];  /* NULL: kmalloc */
static unsigned int b6acc_line[B6ACC_SITES];

/* One call site per case, each on its own line (its allocinfo row). */
static void *b6acc_alloc(int site)
{
	switch (site) {
	case 0: b6acc_line[0] = __LINE__; return uslub_kmalloc(16, USLUB_GFP_KERNEL);
	case 1: b6acc_line[1] = __LINE__; return uslub_kmalloc(64, USLUB_GFP_KERNEL);
	case 2: b6acc_line[2] = __LINE__; return uslub_kmalloc(192, USLUB_GFP_KERNEL);
	case 3: b6acc_line[3] = __LINE__; return uslub_kmalloc(512, USLUB_GFP_KERNEL);
	case 4: b6acc_line[4] = __LINE__; return uslub_kmalloc(1024, USLUB_GFP_KERNEL);
	case 5: b6acc_line[5] = __LINE__; return uslub_kmalloc(4096, USLUB_GFP_KERNEL);
	case 6: b6acc_line[6] = __LINE__; return uslub_cache_alloc(b6acc_cache[6], USLUB_GFP_KERNEL);
	default: b6acc_line[7] = __LINE__; return uslub_cache_alloc(b6acc_cache[7], USLUB_GFP_KERNEL);
	}
}

static void b6acc_free(int site, void *p)
{
	if (b6acc_cache[site])
		uslub_cache_free(b6acc_cache[site], p);
	else
		uslub_kfree(p);
}

static int b6acc(const struct bench_opts *o)
{
	int prof = uslub_profiling_enabled();
	int pc = b_check_profiling(o, prof);
	if (pc < 0)
		return bench_skip(o, "sampled mode not available (USLUB_PROFILING=sample gives "
				  "uslub_profiling_enabled() != 2)");
	if (pc)
		return pc;
	if (!prof)
		return bench_skip(o, "profiling is off (USLUB_PROFILING=0): no allocinfo");
	size_t total = o->bytes ? o->bytes : (size_t)64 << 20;
	size_t stride[B6ACC_SITES];
	unsigned long count[B6ACC_SITES], n = 0;
	for (int i = 0; i < B6ACC_SITES; i++) {
		struct uslub_slabinfo si;
		uslub_cache_t *s;
		if (b6acc_site[i].size > 8192) {
			char name[32];
			snprintf(name, sizeof(name), "b6acc-%zu", b6acc_site[i].size);
			b6acc_cache[i] = uslub_cache_create(name, b6acc_site[i].size, 0, 0, NULL);
			if (!b6acc_cache[i])
				bench_die("B6-acc: cannot create a cache");
			s = b6acc_cache[i];
		} else {
			s = uslub_kmalloc_cache(b6acc_site[i].size);
			if (!s)
				bench_die("B6-acc: no kmalloc cache");
		}
		b_slabinfo(s, &si);
		stride[i] = si.size;
		count[i] = (unsigned long)(b6acc_site[i].share * (double)total / (double)si.size);
		if (!count[i])
			count[i] = 1;
		n += count[i];
	}
	/* the allocation order: every object's site, shuffled (fixed seed) */
	unsigned char *order = malloc(n);
	void **held = malloc(n * sizeof(*held));
	int64_t *bytes = calloc((size_t)o->repeats * B6ACC_SITES, sizeof(*bytes));
	int64_t *calls = calloc((size_t)o->repeats * B6ACC_SITES, sizeof(*calls));
	struct uslub_allocinfo *ai = malloc(4096 * sizeof(*ai));
	if (!order || !held || !bytes || !calls || !ai)
		bench_die("out of memory");
	unsigned long k = 0;
	for (int i = 0; i < B6ACC_SITES; i++)
		for (unsigned long j = 0; j < count[i]; j++)
			order[k++] = (unsigned char)i;
	uint64_t x = 0x6acc5eedull;
	for (unsigned long i = n - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned long j = (unsigned long)(x % (i + 1));
		unsigned char t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	int exact_ok = 1;
	for (int r = 0; r < o->repeats; r++) {
		for (unsigned long i = 0; i < n; i++) {
			held[i] = b6acc_alloc(order[i]);
			if (!held[i])
				bench_die("B6-acc: allocation failed");
		}
		size_t m = uslub_allocinfo(ai, 4096);
		if (m > 4096)
			m = 4096;
		for (size_t i = 0; i < m; i++) {
			if (!ai[i].file || !strstr(ai[i].file, "bench_uslub.c"))
				continue;
			for (int s_ = 0; s_ < B6ACC_SITES; s_++)
				if (ai[i].line == b6acc_line[s_]) {
					bytes[r * B6ACC_SITES + s_] += ai[i].bytes;
					calls[r * B6ACC_SITES + s_] += ai[i].calls;
				}
		}
		for (int s_ = 0; s_ < B6ACC_SITES; s_++)
			if (prof == 1 && (bytes[r * B6ACC_SITES + s_] !=
					  (int64_t)(count[s_] * stride[s_]) ||
					  calls[r * B6ACC_SITES + s_] != (int64_t)count[s_]))
				exact_ok = 0;
		for (unsigned long i = 0; i < n; i++)
			b6acc_free(order[i], held[i]);
	}
	size_t exp_total = 0;
	for (int i = 0; i < B6ACC_SITES; i++)
		exp_total += count[i] * stride[i];
	printf("{\"bench\":\"B6-acc\",\"peer\":\"%s\",\"size\":0,\"profiling\":%d,"
	       "\"profiling_env\":\"%s\",\"sample_rate\":%lu,\"bytes_asked\":%zu,"
	       "\"total_bytes\":%zu,\"objects\":%lu,\"repeats\":%d,\"sites\":[",
	       o->label, prof, getenv("USLUB_PROFILING") ? getenv("USLUB_PROFILING") : "",
	       prof == 2 ? b_sample_rate() : 0ul, total, exp_total, n, o->repeats);
	for (int i = 0; i < B6ACC_SITES; i++) {
		printf("%s{\"site\":\"%s %zu B\",\"line\":%u,\"size\":%zu,\"stride\":%zu,"
		       "\"objects\":%lu,\"exact_bytes\":%zu,\"bytes\":[", i ? "," : "",
		       b6acc_cache[i] ? "cache" : "kmalloc", b6acc_site[i].size, b6acc_line[i],
		       b6acc_site[i].size, stride[i], count[i], count[i] * stride[i]);
		for (int r = 0; r < o->repeats; r++)
			printf("%s%lld", r ? "," : "", (long long)bytes[r * B6ACC_SITES + i]);
		printf("],\"calls\":[");
		for (int r = 0; r < o->repeats; r++)
			printf("%s%lld", r ? "," : "", (long long)calls[r * B6ACC_SITES + i]);
		printf("]}");
	}
	printf("],\"exact_check\":{\"ok\":%s},\"errors\":%lu}\n",
	       prof != 1 ? "null" : exact_ok ? "true" : "false", uslub_error_count());
	fflush(stdout);
	if (prof == 1 && !exact_ok)
		fprintf(stderr, "bench: B6-acc: exact profiling did not report every site's "
			"objects x stride\n");
	for (int i = 0; i < B6ACC_SITES; i++)
		if (b6acc_cache[i])
			uslub_cache_destroy(b6acc_cache[i]);
	free(order);
	free(held);
	free(bytes);
	free(calls);
	free(ai);
	return prof == 1 && !exact_ok ? 3 : 0;
}

static int peer_bench_uslub_only(const struct bench_opts *o)
{
	if (!strcmp(o->bench, "B6-acc"))
		return b6acc(o);
	if (!strcmp(o->bench, "B5"))
		return b56(o, 1);
	if (!strcmp(o->bench, "B6"))
		return b56(o, 0);
	if (!strcmp(o->bench, "B7"))
		return b7(o);
	if (!strcmp(o->bench, "B-debug"))
		return bdebug(o);
	return bmeta(o);
}

int main(int argc, char **argv)
{
	int rc = bench_main(argc, argv);
	unsigned long errors = uslub_error_count();
	if (rc == 0 && errors) {
		fprintf(stderr, "bench: uslub reported %lu error(s) during the run\n",
			errors);
		return 4;
	}
	return rc;
}
