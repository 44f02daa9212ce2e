/*
 * uslub-bench-uslub: the benchmarks on uslub object caches
 * (uslub_cache_create / uslub_cache_alloc(GFP_KERNEL) / uslub_cache_free;
 * B2: uslub_cache_alloc_bulk / uslub_cache_free_bulk, with --sheaves N a
 * cache made by uslub_cache_create_args with sheaf_capacity = N),
 * linked statically with libuslub.
 *
 * B3 (fresh-slab allocation, deferred vs eager freelist) compares uslub
 * with itself, so its loop lives here, below the shared harness.
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
static unsigned int peer_sheaves;   /* --sheaves: 0 = a cache without sheaves */
struct bench_opts;
static int peer_bench_b3(const struct bench_opts *o);

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
		  .flags = USLUB_EAGER_FREELIST | USLUB_NO_RANDOM_FREELIST },
		{ .name = "deferred-norandom", .flags = USLUB_NO_RANDOM_FREELIST },
		{ .name = "eager-random",
		  .flags = USLUB_EAGER_FREELIST | USLUB_RANDOM_FREELIST },
		{ .name = "deferred-random", .flags = USLUB_RANDOM_FREELIST },
	};
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
