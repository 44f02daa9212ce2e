/*
 * model: randomized operations over up to 8 caches, each checked against a
 * reference model.
 *
 * Ops: create, alloc (sometimes _node, sometimes GFP_ZERO), free of a random
 * live object, shrink, destroy (must fail with EBUSY while the model has
 * live objects, succeed otherwise), flush of the thread's cpu slabs.
 * Every object is filled with its own byte pattern on alloc and checked on
 * free (and in periodic full scans): overlap or corruption shows up. No
 * address may be handed out twice while live (a global set across caches).
 * After each phase of PHASE ops: validate == 0 for every cache, slabinfo
 * live_objs and the alloc/free counters equal the model's, and (after a
 * flush) active_objs == live objects. At the end everything is freed,
 * shrunk and destroyed.
 */
#include "check.h"

#define MAX_CACHES 8
#define MAX_LIVE_PER_CACHE 2500
#define PHASE 1000
#define CTOR_MAGIC 0x6d6f64656c63746full

struct mobj {
	unsigned char *p;
	unsigned char fill;
};

struct mcache {
	uslub_cache_t *s;
	char name[48];
	size_t size, align;
	unsigned int flags;
	bool ctor;
	struct mobj *objs;
	size_t n, cap;
	uint64_t allocs, frees; /* model's counts since creation */
};

static struct mcache caches[MAX_CACHES];
static int nr_caches;
static struct rng rng;
static unsigned long cache_serial;
static int nr_nodes;

/* ---- global live-address set (open addressing, backward-shift delete) -- */
#define SET_BITS 17
#define SET_SIZE (1u << SET_BITS)
static uintptr_t set_tab[SET_SIZE];
static size_t set_count;

static size_t set_hash(uintptr_t p)
{
	return (size_t)((p * 0x9e3779b97f4a7c15ull) >> (64 - SET_BITS));
}

static bool set_insert(uintptr_t p)
{
	CHECK(set_count < SET_SIZE / 2);
	size_t i = set_hash(p);
	while (set_tab[i]) {
		if (set_tab[i] == p)
			return false;
		i = (i + 1) & (SET_SIZE - 1);
	}
	set_tab[i] = p;
	set_count++;
	return true;
}

static void set_remove(uintptr_t p)
{
	size_t i = set_hash(p);
	while (set_tab[i] != p) {
		CHECK_MSG(set_tab[i] != 0, "model: %p not in the live set", (void *)p);
		i = (i + 1) & (SET_SIZE - 1);
	}
	set_tab[i] = 0;
	set_count--;
	size_t j = i;
	for (;;) {
		j = (j + 1) & (SET_SIZE - 1);
		if (!set_tab[j])
			break;
		size_t h = set_hash(set_tab[j]);
		/* move set_tab[j] into the hole at i if its home is not in (i, j] */
		bool in_range = (i <= j) ? (h > i && h <= j) : (h > i || h <= j);
		if (!in_range) {
			set_tab[i] = set_tab[j];
			set_tab[j] = 0;
			i = j;
		}
	}
}

/* ---- patterns ----------------------------------------------------------- */
static size_t pattern_start(const struct mcache *c)
{
	return c->ctor ? 8 : 0;
}

static void fill_obj(const struct mcache *c, const struct mobj *o)
{
	for (size_t i = pattern_start(c); i < c->size; i++)
		o->p[i] = (unsigned char)(o->fill + i);
}

static void check_obj(const struct mcache *c, const struct mobj *o, int line)
{
	if (c->ctor) {
		uint64_t m;
		memcpy(&m, o->p, 8);
		if (m != CTOR_MAGIC)
			test_fail(__FILE__, line, "cache %s object %p: ctor magic %#" PRIx64, c->name,
				  (void *)o->p, m);
	}
	for (size_t i = pattern_start(c); i < c->size; i++)
		if (o->p[i] != (unsigned char)(o->fill + i))
			test_fail(__FILE__, line,
				  "cache %s (size %zu) object %p byte %zu is %#x, expected %#x "
				  "(overlap or corruption)",
				  c->name, c->size, (void *)o->p, i, o->p[i],
				  (unsigned char)(o->fill + i));
}

static void model_ctor(void *p)
{
	uint64_t m = CTOR_MAGIC;
	memcpy(p, &m, 8);
}

/* ---- ops ---------------------------------------------------------------- */
static void op_create(void)
{
	struct mcache *c = &caches[nr_caches];
	memset(c, 0, sizeof(*c));
	uint64_t r = rng_below(&rng, 100);
	if (r < 50)
		c->size = 8 + rng_below(&rng, 249);
	else if (r < 85)
		c->size = 257 + rng_below(&rng, 768);
	else
		c->size = 1025 + rng_below(&rng, 3072);
	r = rng_below(&rng, 100);
	if (r < 50)
		c->align = 0;
	else if (r < 95)
		c->align = (size_t)8 << rng_below(&rng, 6); /* 8..256 */
	else
		c->align = (size_t)512 << rng_below(&rng, 4); /* 512..4096 */
	c->flags = 0;
	if (rng_below(&rng, 4) == 0)
		c->flags |= USLUB_HWCACHE_ALIGN;
	if (rng_below(&rng, 4) == 0)
		c->flags |= USLUB_NO_MERGE;
	c->ctor = c->size >= 16 && rng_below(&rng, 5) == 0;
	snprintf(c->name, sizeof(c->name), "model-%lu-%zu", cache_serial++, c->size);
	c->s = uslub_cache_create(c->name, c->size, c->align, c->flags,
				  c->ctor ? model_ctor : NULL);
	CHECK_MSG(c->s, "create %s size %zu align %zu flags %#x failed: %s", c->name, c->size,
		  c->align, c->flags, strerror(errno));
	CHECK(strcmp(uslub_cache_name(c->s), c->name) == 0);
	CHECK_EQU(uslub_cache_object_size(c->s), c->size);
	c->cap = 64;
	c->objs = malloc(c->cap * sizeof(*c->objs));
	CHECK(c->objs);
	nr_caches++;
}

static size_t expected_align(const struct mcache *c)
{
	size_t a = c->align ? c->align : sizeof(void *);
	if ((c->flags & USLUB_HWCACHE_ALIGN) && c->size >= 33 && a < 64)
		a = 64;
	return a;
}

static void op_alloc(struct mcache *c)
{
	uslub_gfp_t gfp = 0;
	bool zero = !c->ctor && rng_below(&rng, 10) == 0;
	if (zero)
		gfp |= USLUB_GFP_ZERO;
	unsigned char *p;
	int how = (int)rng_below(&rng, 10);
	if (how < 2)
		p = uslub_cache_alloc_node(c->s, gfp, (int)rng_below(&rng, (uint64_t)nr_nodes));
	else if (how < 3)
		p = uslub_cache_alloc_node(c->s, gfp, USLUB_NUMA_NO_NODE);
	else
		p = uslub_cache_alloc(c->s, gfp);
	CHECK_MSG(p, "alloc from %s failed: %s", c->name, strerror(errno));
	CHECK_MSG((uintptr_t)p % expected_align(c) == 0, "object %p of %s not aligned to %zu",
		  (void *)p, c->name, expected_align(c));
	CHECK(uslub_owns(p));
	CHECK_MSG(set_insert((uintptr_t)p), "address %p handed out twice while live (cache %s)",
		  (void *)p, c->name);
	if (zero)
		for (size_t i = 0; i < c->size; i++)
			CHECK_MSG(p[i] == 0, "GFP_ZERO object %p of %s byte %zu is %#x", (void *)p,
				  c->name, i, p[i]);
	if (c->ctor) {
		uint64_t m;
		memcpy(&m, p, 8);
		CHECK_MSG(m == CTOR_MAGIC, "object %p of ctor cache %s not constructed (%#" PRIx64 ")",
			  (void *)p, c->name, m);
	}
	if (c->n == c->cap) {
		c->cap *= 2;
		c->objs = realloc(c->objs, c->cap * sizeof(*c->objs));
		CHECK(c->objs);
	}
	struct mobj *o = &c->objs[c->n++];
	o->p = p;
	o->fill = (unsigned char)rng_next(&rng);
	fill_obj(c, o);
	c->allocs++;
}

static void op_free(struct mcache *c)
{
	size_t i = rng_below(&rng, c->n);
	struct mobj o = c->objs[i];
	check_obj(c, &o, __LINE__);
	c->objs[i] = c->objs[--c->n];
	set_remove((uintptr_t)o.p);
	uslub_cache_free(c->s, o.p);
	c->frees++;
}

static void remove_cache(int idx)
{
	free(caches[idx].objs);
	caches[idx] = caches[--nr_caches];
}


/* Errors reported so far that the model expects (busy destroys may count
 * as misuse reports; nothing else may). */
static unsigned long expected_errors;
static long busy_destroys;

static void op_destroy(int idx)
{
	struct mcache *c = &caches[idx];
	/* half the time, drain the cache first so destroy must succeed */
	if (rng_below(&rng, 2) == 0)
		while (c->n)
			op_free(c);
	unsigned long e0 = uslub_error_count();
	CHECK_MSG(e0 == expected_errors, "error count %lu, expected %lu", e0, expected_errors);
	errno = 0;
	int rc = uslub_cache_destroy(c->s);
	unsigned long e1 = uslub_error_count();
	if (c->n > 0) {
		/* reporting leaked objects may count as one misuse report */
		CHECK_MSG(e1 - e0 <= 1, "busy destroy raised the error count by %lu", e1 - e0);
		expected_errors = e1;
		busy_destroys++;
		CHECK_MSG(rc == -1 && errno == EBUSY,
			  "destroy of %s with %zu live objects returned %d errno %d", c->name, c->n,
			  rc, errno);
		CHECK_EQ(uslub_cache_validate(c->s), 0);
		for (size_t i = 0; i < c->n; i++)
			check_obj(c, &c->objs[i], __LINE__);
	} else {
		CHECK_MSG(rc == 0, "destroy of empty cache %s returned %d errno %d", c->name, rc,
			  errno);
		CHECK_MSG(e1 == e0, "destroy of an empty cache raised the error count");
		remove_cache(idx);
	}
}

static void check_cache(struct mcache *c, bool flushed, bool scan)
{
	long v = uslub_cache_validate(c->s);
	CHECK_MSG(v == 0, "validate(%s) found %ld inconsistencies", c->name, v);
	struct uslub_slabinfo si = slabinfo_get(c->s);
	CHECK_MSG(si.live_objs == c->n, "%s: slabinfo live_objs %lu, model %zu", c->name,
		  si.live_objs, c->n);
	CHECK_EQU(si.memory_requested, si.live_objs * c->size);
	CHECK(si.object_size == c->size);
	CHECK(si.size >= c->size);
	CHECK(si.nr_partial <= si.num_slabs);
	CHECK(si.active_objs <= si.num_objs);
	CHECK_MSG(si.active_objs >= si.live_objs, "%s: active %lu < live %lu", c->name,
		  si.active_objs, si.live_objs);
	CHECK(si.num_objs >= si.live_objs);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(c->s, st);
	CHECK_MSG(stat_allocs(st) == c->allocs, "%s: counters say %" PRIu64 " allocs, model %" PRIu64,
		  c->name, stat_allocs(st), c->allocs);
	CHECK_MSG(stat_frees(st) == c->frees, "%s: counters say %" PRIu64 " frees, model %" PRIu64,
		  c->name, stat_frees(st), c->frees);
	if (st[USLUB_ORDER_FALLBACK] == 0)
		CHECK_MSG(si.num_objs == si.num_slabs * si.objs_per_slab,
			  "%s: num_objs %lu != %lu slabs * %u", c->name, si.num_objs, si.num_slabs,
			  si.objs_per_slab);
	if (flushed) {
		/* no cpu slabs left: every slab is full or on a node partial list */
		CHECK_MSG(si.active_objs == c->n, "%s: after flush active_objs %lu, live %zu",
			  c->name, si.active_objs, c->n);
		CHECK_MSG(si.partial_free == si.num_objs - c->n,
			  "%s: after flush partial_free %lu, expected %lu", c->name,
			  si.partial_free, si.num_objs - c->n);
	}
	if (scan)
		for (size_t i = 0; i < c->n; i++)
			check_obj(c, &c->objs[i], __LINE__);
}

int main(void)
{
	rng.s = test_seed(20240601);
	nr_nodes = uslub_nr_nodes();
	CHECK(nr_nodes >= 1);
	expected_errors = uslub_error_count();
	long ops = scaled(100000);
	long counts[8] = { 0 };

	for (long op = 1; op <= ops; op++) {
		/* per mille: 10 create (while < MAX_CACHES), 3 destroy, 10 shrink,
		 * 5 flush, the rest alloc/free */
		uint64_t r = rng_below(&rng, 1000);
		if (nr_caches == 0 || r < 10) {
			if (nr_caches < MAX_CACHES) {
				op_create();
				counts[0]++;
				goto phase_check;
			}
			r = 1000; /* all caches in use: alloc/free instead */
		}
		if (r < 13) {
			op_destroy((int)rng_below(&rng, (uint64_t)nr_caches));
			counts[1]++;
		} else if (r < 23) {
			struct mcache *c = &caches[rng_below(&rng, (uint64_t)nr_caches)];
			int rel = uslub_cache_shrink(c->s);
			CHECK_MSG(rel >= 0, "shrink(%s) returned %d", c->name, rel);
			counts[2]++;
		} else if (r < 28) {
			uslub_flush_thread();
			counts[3]++;
		} else {
			struct mcache *c = &caches[rng_below(&rng, (uint64_t)nr_caches)];
			/* a per-cache drift towards growth or shrinkage keeps the
			 * live counts moving through full, partial and empty slabs */
			uint64_t bias = 480 + ((uint64_t)(op / 3000 + (c - caches)) % 3) * 30;
			bool alloc = c->n == 0 || (c->n < MAX_LIVE_PER_CACHE && rng_below(&rng, 1000) < bias);
			if (alloc) {
				op_alloc(c);
				counts[4]++;
			} else {
				op_free(c);
				counts[5]++;
			}
		}
	phase_check:
		if (op % PHASE == 0) {
			long phase = op / PHASE;
			bool flushed = phase % 2 == 0;
			if (flushed)
				uslub_flush_thread();
			for (int i = 0; i < nr_caches; i++)
				check_cache(&caches[i], flushed, phase % 5 == 0);
			size_t total = 0;
			for (int i = 0; i < nr_caches; i++)
				total += caches[i].n;
			CHECK_EQU(total, set_count);
			CHECK_EQU(uslub_error_count(), expected_errors);
		}
	}
	printf("ops: create %ld destroy %ld shrink %ld flush %ld alloc %ld free %ld; caches %d live %zu\n",
	       counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], nr_caches,
	       set_count);

	/* teardown: free everything, shrink, destroy */
	uslub_flush_thread();
	for (int i = 0; i < nr_caches; i++)
		check_cache(&caches[i], true, true);
	for (int i = 0; i < nr_caches; i++) {
		struct mcache *c = &caches[i];
		while (c->n)
			op_free(c);
		uslub_cache_shrink(c->s);
		struct uslub_slabinfo si = slabinfo_get(c->s);
		CHECK_MSG(si.num_slabs == 0, "%s: %lu slabs left after freeing all and shrinking",
			  c->name, si.num_slabs);
		CHECK_EQU(si.live_objs, 0);
		CHECK_EQU(si.active_objs, 0);
		check_cache(c, false, false);
	}
	while (nr_caches) {
		struct mcache *c = &caches[nr_caches - 1];
		CHECK_MSG(uslub_cache_destroy(c->s) == 0, "final destroy of %s failed: %s", c->name,
			  strerror(errno));
		remove_cache(nr_caches - 1);
	}
	CHECK_EQU(set_count, 0);
	CHECK_EQU(uslub_error_count(), expected_errors);
	printf("busy destroys %ld\n", busy_destroys);
	printf("model: ok\n");
	return 0;
}
