/*
 * model: randomized operations over up to 8 caches, each checked against a
 * reference model.
 *
 * Ops: create (uslub_cache_create, or uslub_cache_create_args with a
 * random sheaf capacity, free pointer offset for ctor caches, usercopy
 * window; random freelist flags: RANDOM / NO_RANDOM / EAGER / HARDENED), alloc
 * (sometimes _node, sometimes GFP_ZERO), free of a random live object,
 * alloc_bulk of random sizes (0 .. several slabs' worth), free_bulk of a
 * random subset with NULL entries, kfree_bulk of objects of several caches
 * mixed, prefilled sheaves (prefill of random sizes, oversize included;
 * alloc_from_sheaf; refill; return; up to two held per cache), shrink,
 * destroy (must fail with EBUSY while the model has live objects, succeed
 * otherwise; held sheaves are returned first), flush of the thread's cpu
 * slabs and sheaves.
 * Every object is filled with its own byte pattern on alloc and checked on
 * free (and in periodic full scans): overlap or corruption shows up. No
 * address may be handed out twice while live (a global set across caches).
 * The model knows how many objects each held sheaf has left.
 * After each phase of PHASE ops: validate == 0 for every cache, slabinfo
 * live_objs and the alloc/free counters (ALLOC_FASTPATH + ALLOC_SLOWPATH +
 * ALLOC_PCS, FREE_FASTPATH + FREE_SLOWPATH + FREE_PCS; one per object for
 * bulk calls, alloc_from_sheaf counted as ALLOC_PCS) equal the model's,
 * and (after a flush) active_objs == live objects + objects in held
 * sheaves + objects in the barn's full sheaves. At the end everything is
 * freed, returned, shrunk and destroyed.
 */
#include "check.h"

#define MAX_CACHES 8
#define MAX_LIVE_PER_CACHE 2500
#define PHASE 1000
#define MAX_SHEAVES 2
#define CTOR_MAGIC 0x6d6f64656c63746full

struct mobj {
	unsigned char *p;
	unsigned char fill;
};

struct msheaf {
	struct uslub_sheaf *sh;
	unsigned int size;      /* objects left, as the model counts them */
};

struct mcache {
	uslub_cache_t *s;
	char name[48];
	size_t size, align;
	unsigned int flags;
	bool ctor;
	unsigned int sheaf_cap; /* uslub_cache_sheaf_capacity() */
	struct mobj *objs;
	size_t n, cap;
	uint64_t allocs, frees; /* model's counts since creation */
	struct msheaf sheaves[MAX_SHEAVES];
	int nsheaves;
};

static struct mcache caches[MAX_CACHES];
static int nr_caches;
static struct rng rng;
static unsigned long cache_serial;
static int nr_nodes;


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
	uint64_t fl = rng_below(&rng, 8);
	if (fl == 0)
		c->flags |= USLUB_RANDOM_FREELIST;
	else if (fl == 1)
		c->flags |= USLUB_NO_RANDOM_FREELIST;
	else if (fl == 2)
		c->flags |= USLUB_EAGER_FREELIST;
	else if (fl == 3)
		c->flags |= USLUB_EAGER_FREELIST | USLUB_RANDOM_FREELIST;
	if (rng_below(&rng, 3) == 0)
		c->flags |= USLUB_HARDENED_FREELIST;
	c->ctor = c->size >= 16 && rng_below(&rng, 5) == 0;
	snprintf(c->name, sizeof(c->name), "model-%lu-%zu", cache_serial++, c->size);
	unsigned int want_cap = 0;
	if (rng_below(&rng, 2) == 0) {
		c->s = uslub_cache_create(c->name, c->size, c->align, c->flags,
					  c->ctor ? model_ctor : NULL);
	} else {
		/* the kernel's argument structure */
		struct uslub_cache_args args;
		memset(&args, 0, sizeof(args));
		args.align = c->align;
		args.ctor = c->ctor ? model_ctor : NULL;
		if (rng_below(&rng, 2) == 0)
			want_cap = args.sheaf_capacity = 1 + (unsigned int)rng_below(&rng, 100);
		if (c->ctor && c->size >= 24 && rng_below(&rng, 2) == 0) {
			/* free pointer inside the object, after the ctor's magic */
			args.use_freeptr_offset = 1;
			args.freeptr_offset =
				(unsigned int)(8 + 8 * rng_below(&rng, (c->size - 16) / 8 + 1));
			CHECK(args.freeptr_offset + 8 <= c->size);
		}
		if (rng_below(&rng, 3) == 0) {
			args.useroffset = (unsigned int)rng_below(&rng, c->size);
			args.usersize = (unsigned int)rng_below(&rng, c->size - args.useroffset + 1);
		}
		c->s = uslub_cache_create_args(c->name, c->size, &args, c->flags);
	}
	CHECK_MSG(c->s, "create %s size %zu align %zu flags %#x failed: %s", c->name, c->size,
		  c->align, c->flags, strerror(errno));
	c->sheaf_cap = uslub_cache_sheaf_capacity(c->s);
	/* slub_debug caches (USLUB_DEBUG) have no sheaves, as in SLUB */
	const char *dbg = getenv("USLUB_DEBUG");
	CHECK_MSG(c->sheaf_cap >= want_cap || (dbg && *dbg && c->sheaf_cap == 0),
		  "%s: sheaf_capacity %u asked, %u given", c->name, want_cap, c->sheaf_cap);
	{
		struct uslub_slabinfo si = slabinfo_get(c->s);
		CHECK_EQU(si.sheaf_capacity, c->sheaf_cap);
		if (c->flags & USLUB_RANDOM_FREELIST)
			CHECK(si.random_freelist);
		if (c->flags & USLUB_NO_RANDOM_FREELIST)
			CHECK(!si.random_freelist);
		if (c->flags & USLUB_HARDENED_FREELIST)
			CHECK(si.hardened_freelist);
	}
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

/* An object just handed out (single, bulk or sheaf): aligned, owned, not
 * live already, zeroed or constructed as asked; then patterned. */
static void accept_obj(struct mcache *c, unsigned char *p, bool zero, const char *how)
{
	CHECK_MSG(p, "%s from %s failed: %s", how, c->name, strerror(errno));
	CHECK_MSG((uintptr_t)p % expected_align(c) == 0, "object %p of %s (%s) not aligned to %zu",
		  (void *)p, c->name, how, expected_align(c));
	CHECK(uslub_owns(p));
	CHECK_MSG(set_insert((uintptr_t)p), "address %p handed out twice while live (cache %s, %s)",
		  (void *)p, c->name, how);
	if (zero)
		for (size_t i = 0; i < c->size; i++)
			CHECK_MSG(p[i] == 0, "GFP_ZERO object %p of %s (%s) byte %zu is %#x",
				  (void *)p, c->name, how, i, p[i]);
	if (c->ctor) {
		uint64_t m;
		memcpy(&m, p, 8);
		CHECK_MSG(m == CTOR_MAGIC, "object %p of ctor cache %s (%s) not constructed (%#" PRIx64 ")",
			  (void *)p, c->name, how, m);
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
	accept_obj(c, p, zero, "alloc");
}

static void *bulk_buf[4 * MAX_LIVE_PER_CACHE];

static void op_alloc_bulk(struct mcache *c)
{
	size_t room = MAX_LIVE_PER_CACHE - (c->n < MAX_LIVE_PER_CACHE ? c->n : MAX_LIVE_PER_CACHE);
	size_t n;
	uint64_t r = rng_below(&rng, 10);
	if (r < 6)
		n = rng_below(&rng, 17);                   /* 0 .. 16 */
	else if (r < 9)
		n = rng_below(&rng, 200);
	else
		n = rng_below(&rng, 1200);                 /* many slabs' worth */
	if (n > room)
		n = room;
	bool zero = !c->ctor && rng_below(&rng, 5) == 0;
	errno = 0;
	int got = uslub_cache_alloc_bulk(c->s, zero ? USLUB_GFP_ZERO : 0, n, bulk_buf);
	CHECK_MSG(got == (int)n, "alloc_bulk(%s, %zu) returned %d: %s", c->name, n, got,
		  strerror(errno));
	for (size_t i = 0; i < n; i++)
		accept_obj(c, bulk_buf[i], zero, "alloc_bulk");
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

/* Take a random live object out of the model (checked), for a bulk free. */
static void *take_random(struct mcache *c)
{
	size_t i = rng_below(&rng, c->n);
	struct mobj o = c->objs[i];
	check_obj(c, &o, __LINE__);
	c->objs[i] = c->objs[--c->n];
	set_remove((uintptr_t)o.p);
	c->frees++;
	return o.p;
}

static void op_free_bulk(struct mcache *c)
{
	size_t k = 1 + rng_below(&rng, rng_below(&rng, 4) == 0 ? c->n : (c->n < 64 ? c->n : 64));
	size_t m = 0;
	for (size_t j = 0; j < k; j++) {
		if (rng_below(&rng, 8) == 0)
			bulk_buf[m++] = NULL;
		bulk_buf[m++] = take_random(c);
	}
	if (rng_below(&rng, 4) == 0)
		uslub_kfree_bulk(m, bulk_buf);
	else
		uslub_cache_free_bulk(c->s, m, bulk_buf);
}

/* kfree_bulk over objects of every cache, shuffled together */
static void op_kfree_bulk_mixed(void)
{
	size_t m = 0;
	for (int i = 0; i < nr_caches; i++) {
		struct mcache *c = &caches[i];
		size_t k = c->n ? rng_below(&rng, (c->n < 100 ? c->n : 100) + 1) : 0;
		for (size_t j = 0; j < k; j++)
			bulk_buf[m++] = take_random(c);
	}
	for (size_t i = m; i > 1; i--) {
		size_t j = rng_below(&rng, i);
		void *t = bulk_buf[i - 1];
		bulk_buf[i - 1] = bulk_buf[j];
		bulk_buf[j] = t;
	}
	uslub_kfree_bulk(m, bulk_buf);
}

/* ---- prefilled sheaves -------------------------------------------------- */
static unsigned int sheaf_limit(const struct mcache *c)
{
	return c->sheaf_cap ? 2 * c->sheaf_cap + 3 : 80;
}

static void check_sheaf(const struct mcache *c, const struct msheaf *m, int line)
{
	unsigned int got = uslub_cache_sheaf_size(m->sh);
	if (got != m->size)
		test_fail(__FILE__, line, "%s: sheaf %p holds %u objects, model %u", c->name,
			  (void *)m->sh, got, m->size);
}

static void op_sheaf(struct mcache *c)
{
	uint64_t r = rng_below(&rng, 100);
	if (c->nsheaves < MAX_SHEAVES && (c->nsheaves == 0 || r < 25)) {
		unsigned int want = (unsigned int)rng_below(&rng, sheaf_limit(c) + 1);
		errno = 0;
		struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(
			c->s, rng_below(&rng, 2) ? USLUB_GFP_NOWAIT : 0, want);
		CHECK_MSG(sh, "prefill(%s, %u) failed: %s", c->name, want, strerror(errno));
		unsigned int size = uslub_cache_sheaf_size(sh);
		CHECK_MSG(size >= want, "prefill(%s, %u): sheaf of %u", c->name, want, size);
		c->sheaves[c->nsheaves].sh = sh;
		c->sheaves[c->nsheaves].size = size;
		c->nsheaves++;
		return;
	}
	int i = (int)rng_below(&rng, (uint64_t)c->nsheaves);
	struct msheaf *m = &c->sheaves[i];
	check_sheaf(c, m, __LINE__);
	if (r < 70) {
		/* allocate a few, possibly past the end (NULL there) */
		unsigned int k = 1 + (unsigned int)rng_below(&rng, 12);
		for (unsigned int j = 0; j < k && c->n < MAX_LIVE_PER_CACHE; j++) {
			bool zero = !c->ctor && rng_below(&rng, 6) == 0;
			uslub_gfp_t gfp = (zero ? USLUB_GFP_ZERO : 0) |
					  (rng_below(&rng, 2) ? USLUB_GFP_NOWAIT : 0);
			unsigned char *p = uslub_cache_alloc_from_sheaf(c->s, gfp, m->sh);
			if (!m->size) {
				CHECK_MSG(!p, "%s: alloc_from_sheaf of an empty sheaf returned %p",
					  c->name, (void *)p);
				break;
			}
			accept_obj(c, p, zero, "alloc_from_sheaf");
			m->size--;
			check_sheaf(c, m, __LINE__);
		}
	} else if (r < 85) {
		unsigned int want = (unsigned int)rng_below(&rng, sheaf_limit(c) + 1);
		struct uslub_sheaf *old = m->sh;
		errno = 0;
		int rc = uslub_cache_refill_sheaf(c->s, 0, &m->sh, want);
		CHECK_MSG(rc == 0, "refill(%s, %u) returned %d: %s", c->name, want, rc,
			  strerror(errno));
		unsigned int size = uslub_cache_sheaf_size(m->sh);
		if (want <= m->size)
			CHECK_MSG(m->sh == old && size == m->size,
				  "%s: refill to %u of a sheaf holding %u changed it", c->name, want,
				  m->size);
		CHECK_MSG(size >= want, "refill(%s, %u): sheaf of %u", c->name, want, size);
		m->size = size;
	} else {
		uslub_cache_return_sheaf(c->s, 0, m->sh);
		c->sheaves[i] = c->sheaves[--c->nsheaves];
	}
}

static void return_sheaves(struct mcache *c)
{
	while (c->nsheaves) {
		struct msheaf *m = &c->sheaves[--c->nsheaves];
		check_sheaf(c, m, __LINE__);
		uslub_cache_return_sheaf(c->s, 0, m->sh);
	}
}

static unsigned long held_objects(const struct mcache *c)
{
	unsigned long h = 0;
	for (int i = 0; i < c->nsheaves; i++)
		h += c->sheaves[i].size;
	return h;
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
	/* a held sheaf's objects are the caller's: give them back first */
	return_sheaves(c);
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
	for (int i = 0; i < c->nsheaves; i++)
		check_sheaf(c, &c->sheaves[i], __LINE__);
	if (!c->sheaf_cap)
		CHECK_MSG(si.barn_full == 0 && si.barn_empty == 0,
			  "%s: no sheaves, but barn full %lu empty %lu", c->name, si.barn_full,
			  si.barn_empty);
	if (flushed) {
		/* no cpu slabs or cpu sheaves left: every slab is full or on a
		 * node partial list; objects not free there are live, in held
		 * sheaves, or in the barn's full sheaves */
		unsigned long held = held_objects(c);
		unsigned long want = c->n + held + si.barn_full * c->sheaf_cap;
		CHECK_MSG(si.active_objs == want,
			  "%s: after flush active_objs %lu, expected %lu (live %zu, in held sheaves "
			  "%lu, barn full sheaves %lu of %u)", c->name, si.active_objs, want, c->n,
			  held, si.barn_full, c->sheaf_cap);
		CHECK_MSG(si.partial_free == si.num_objs - want,
			  "%s: after flush partial_free %lu, expected %lu", c->name,
			  si.partial_free, si.num_objs - want);
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
			uint64_t kind = rng_below(&rng, 100);
			if (kind < 8) {
				if (alloc)
					op_alloc_bulk(c);
				else
					op_free_bulk(c);
				counts[6]++;
			} else if (kind < 9) {
				op_kfree_bulk_mixed();
				counts[6]++;
			} else if (kind < 16) {
				op_sheaf(c);
				counts[7]++;
			} else if (alloc) {
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
	printf("ops: create %ld destroy %ld shrink %ld flush %ld alloc %ld free %ld bulk %ld "
	       "sheaf %ld; caches %d live %zu\n",
	       counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6],
	       counts[7], nr_caches, set_count);

	/* teardown: return sheaves, free everything, shrink, destroy */
	uslub_flush_thread();
	for (int i = 0; i < nr_caches; i++)
		check_cache(&caches[i], true, true);
	for (int i = 0; i < nr_caches; i++) {
		struct mcache *c = &caches[i];
		return_sheaves(c);
		check_cache(c, false, false);
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
