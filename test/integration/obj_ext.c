/*
 * obj_ext: per-object extensions (struct slabobj_ext: group handle and
 * allocation tag, only the words a cache can need: Linux 7.3's smaller
 * extension) and where each cache keeps them.
 *   - uslub_obj_ext_placement_name() names the five placements, distinct;
 *   - the placement rule, for ~1500 layouts (every 8 bytes from 8 to 4096,
 *     every size from 1 to 256, alignments 16..256, HWCACHE_ALIGN, ctor
 *     caches with the free pointer after the object or inside it
 *     (freeptr_offset), objects up to 64 KiB): a USLUB_ACCOUNT cache (and,
 *     with USLUB_PROFILING=1, any cache) reports, at its preferred order,
 *       LEFTOVER if the slab's unused tail (pages * 4096 - objs * size, its
 *         start aligned to 8) holds objs_per_slab extensions, else
 *       PADDING if each object's padding (size minus object_size rounded
 *         up to 8, minus 8 more when the free pointer is stored after the
 *         object) holds one, else
 *       ARRAY;
 *     obj_ext_size 8 for an ACCOUNT cache ("objcg") or, with exact
 *     profiling, a plain one ("tag"), 16 for an ACCOUNT cache with exact
 *     profiling ("objcg+tag"), with the rule applied to that size;
 *     obj_ext_bytes the size for ARRAY and 0 in the slab; a cache without
 *     ACCOUNT (profiling off or sampled) reports NONE, 0, 0; the free
 *     pointer is outside the object exactly for ctor caches without a
 *     freeptr_offset; each of LEFTOVER, PADDING and ARRAY occurs;
 *   - one cache of each kind (ARRAY, PADDING, PADDING with a ctor,
 *     LEFTOVER, a large object, and a plain cache that USLUB_GFP_ACCOUNT
 *     turns ON_DEMAND): several slabs of objects allocated under two
 *     nested groups and the root (singly, in bulk, zeroed, on node 0),
 *     every one of their object_size bytes written with a pattern; no
 *     address handed out twice; GFP_ZERO objects are zero; ctor objects
 *     keep their constructed state; obj_ext_charge == size +
 *     obj_ext_bytes (+ 8 where the extension has no objcg word: the plain
 *     cache with exact profiling, whose slabs are widened with an objcg
 *     array by the first charge); group usage == charged objects *
 *     obj_ext_charge (within one stock batch, exactly after
 *     draining), uslub_group_cache_usage exact for each group, the
 *     patterns intact (the allocator never writes into a live object),
 *     validate == 0; again after freeing every other object and
 *     reallocating; after freeing everything usage 0, nothing left;
 *   - profiling off: uslub_allocinfo() reports no call site and its JSON
 *     parses (the USLUB_PROFILING=1 variant checks the rule for plain
 *     caches instead).
 */
#include "check.h"

#define CTOR_MAGIC 0x6f626a6578746372ull

static struct rng rng;
static int profiling;          /* exact */
static int sampling;
static size_t batch;
static unsigned long cache_serial;

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static void ctor_fn(void *p)
{
	uint64_t m = CTOR_MAGIC;
	memcpy(p, &m, sizeof(m));
}

/* USLUB_ACCOUNT_BATCH as the library reads it (default 8192). */
static size_t account_batch(void)
{
	const char *e = getenv("USLUB_ACCOUNT_BATCH");
	if (e && *e)
		return (size_t)strtoull(e, NULL, 10);
	return 8192;
}

/* ---- the placement rule ------------------------------------------------- */
struct layout {
	size_t size, align;
	unsigned int flags;  /* besides USLUB_ACCOUNT */
	bool ctor;
	bool freeptr;        /* ctor with freeptr_offset 0: pointer inside */
};

/* The extension's bytes for an ACCOUNT cache or a plain one (a plain
 * cache's on-demand arrays when it has no vector). */
static unsigned int ext_size(bool account)
{
	if (account)
		return profiling ? 16 : 8;
	return profiling ? 8 : sampling ? 16 : 8;
}

static const char *ext_fields(bool account)
{
	if (account)
		return profiling ? "objcg+tag" : "objcg";
	return profiling ? "tag" : sampling ? "objcg+tag" : "objcg";
}

/* What one accounted object charges: its stride, the extension bytes
 * outside the slab, a word for the objcg a tag-only slab is widened with. */
static size_t want_charge(const struct uslub_slabinfo *si)
{
	return si->size + si->obj_ext_bytes + (strcmp(si->obj_ext_fields, "tag") ? 0 : 8);
}

static int rule_ext(const struct uslub_slabinfo *si, bool fp_outside, unsigned int ext)
{
	size_t slab = (size_t)si->pages_per_slab * USLUB_PAGE_SIZE;
	size_t tail = align_up((size_t)si->objs_per_slab * si->size, 8);
	size_t left = slab > tail ? slab - tail : 0;
	if (left >= (size_t)si->objs_per_slab * ext)
		return USLUB_OBJ_EXT_LEFTOVER;
	size_t used = align_up(si->object_size, 8) + (fp_outside ? sizeof(void *) : 0) +
		      (si->free_mark_offset >= si->object_size ? sizeof(void *) : 0);
	if (si->size >= used + ext)
		return USLUB_OBJ_EXT_PADDING;
	return USLUB_OBJ_EXT_ARRAY;
}

static int rule(const struct uslub_slabinfo *si, bool fp_outside, bool account)
{
	return rule_ext(si, fp_outside, ext_size(account));
}

static uslub_cache_t *make_cache(const struct layout *l, bool account)
{
	char name[64];
	snprintf(name, sizeof(name), "ext-%zu-%zu-%s%s-%lu", l->size, l->align,
		 l->ctor ? "c" : "", account ? "a" : "", cache_serial++);
	unsigned int flags = l->flags | (account ? USLUB_ACCOUNT : 0);
	if (l->freeptr) {
		struct uslub_cache_args a;
		memset(&a, 0, sizeof(a));
		a.align = l->align;
		a.ctor = ctor_fn;
		a.use_freeptr_offset = 1;
		a.freeptr_offset = 0;
		return uslub_cache_create_args(name, l->size, &a, flags);
	}
	return uslub_cache_create(name, l->size, l->align, flags, l->ctor ? ctor_fn : NULL);
}

static unsigned long seen[5];

/* Create the layout with and without ACCOUNT and check what each reports. */
static void check_layout(const struct layout *l, bool also_plain)
{
	for (int account = 1; account >= (also_plain ? 0 : 1); account--) {
		uslub_cache_t *s = make_cache(l, account);
		CHECK_MSG(s, "create size %zu align %zu ctor %d freeptr %d: errno %d", l->size,
			  l->align, l->ctor, l->freeptr, errno);
		struct uslub_slabinfo si = slabinfo_get(s);
		CHECK_EQU(si.object_size, l->size);
		CHECK_EQU(si.pages_per_slab, 1u << si.order);
		/* outside: after a constructed object, or after an 8-byte one
		 * (its only word holds the free mark) */
		bool fp_outside = !l->freeptr && (l->ctor || l->size <= sizeof(void *));
		CHECK_MSG((si.offset >= si.object_size) == fp_outside,
			  "size %zu ctor %d freeptr %d: free pointer offset %zu, object_size %zu",
			  l->size, l->ctor, l->freeptr, si.offset, si.object_size);
		int want = rule(&si, fp_outside, account);
		unsigned int ext = ext_size(account);
		if (!account && !profiling) {
			CHECK_MSG(si.obj_ext == USLUB_OBJ_EXT_NONE && si.obj_ext_size == 0 &&
					  si.obj_ext_bytes == 0,
				  "plain cache size %zu align %zu: obj_ext %d (%s) size %u bytes %u, "
				  "expected none", l->size, l->align, si.obj_ext,
				  uslub_obj_ext_placement_name(si.obj_ext), si.obj_ext_size,
				  si.obj_ext_bytes);
		} else {
			CHECK_MSG(si.obj_ext == want,
				  "%s cache object_size %zu align %zu ctor %d freeptr %d (size %zu, "
				  "order %u, %u objs/slab, %zu leftover bytes, free pointer at %zu): "
				  "placement %d (%s), the rule says %d (%s)",
				  account ? "ACCOUNT" : "profiled", l->size, l->align, l->ctor,
				  l->freeptr, si.size, si.order, si.objs_per_slab,
				  (size_t)si.pages_per_slab * USLUB_PAGE_SIZE -
					  (size_t)si.objs_per_slab * si.size,
				  si.offset, si.obj_ext, uslub_obj_ext_placement_name(si.obj_ext),
				  want, uslub_obj_ext_placement_name(want));
			CHECK_EQU(si.obj_ext_size, ext);
			CHECK_EQU(si.obj_ext_bytes, want == USLUB_OBJ_EXT_ARRAY ? ext : 0);
			CHECK_MSG(!strcmp(si.obj_ext_fields, ext_fields(account)),
				  "obj_ext_fields %s, expected %s", si.obj_ext_fields,
				  ext_fields(account));
			CHECK_EQU(si.obj_ext_charge, want_charge(&si));
			seen[want]++;
		}
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
}

static unsigned long test_placement_rule(void)
{
	unsigned long n = 0;
	struct layout l;
#define LAYOUT(sz, al, fl, ct, fp, plain)                                          \
	do {                                                                       \
		l = (struct layout){ (sz), (al), (fl), (ct), (fp) };               \
		check_layout(&l, (plain));                                         \
		n++;                                                               \
	} while (0)
	for (size_t sz = 8; sz <= 4096; sz += 8)
		LAYOUT(sz, 0, 0, false, false, sz % 64 == 8);
	for (size_t sz = 1; sz <= 256; sz++)
		LAYOUT(sz, 0, 0, false, false, sz % 37 == 1);
	static const size_t aligns[] = { 16, 32, 64, 128, 256 };
	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++)
		for (size_t sz = 8; sz <= 1024; sz += 8 + 8 * a)
			LAYOUT(sz, aligns[a], 0, false, false, sz % 96 == 8);
	for (size_t sz = 8; sz <= 512; sz += 8)
		LAYOUT(sz, 0, USLUB_HWCACHE_ALIGN, false, false, false);
	for (size_t sz = 8; sz <= 2048; sz += 8)
		LAYOUT(sz, 0, 0, true, false, sz % 128 == 8);
	for (size_t sz = 8; sz <= 512; sz += 8)
		LAYOUT(sz, 64, 0, true, false, false);
	for (size_t sz = 8; sz <= 1024; sz += 24)
		LAYOUT(sz, 0, 0, true, true, false);
	for (size_t sz = 4100; sz <= 65536; sz += 1531)
		LAYOUT(sz, 0, 0, false, false, sz % 3 == 0);
#undef LAYOUT
	CHECK_MSG(seen[USLUB_OBJ_EXT_LEFTOVER] && seen[USLUB_OBJ_EXT_PADDING] &&
			  seen[USLUB_OBJ_EXT_ARRAY],
		  "placements seen: leftover %lu padding %lu array %lu", seen[USLUB_OBJ_EXT_LEFTOVER],
		  seen[USLUB_OBJ_EXT_PADDING], seen[USLUB_OBJ_EXT_ARRAY]);
	CHECK_EQU(seen[USLUB_OBJ_EXT_NONE], 0);
	return n;
}

/* ---- objects of each placement ------------------------------------------ */
struct fobj {
	unsigned char *p;
	int grp;           /* 0: not charged, 1: g1, 2: g2 (child of g1) */
	unsigned char fill;
};

struct fcase {
	uslub_cache_t *s;
	size_t size;       /* object_size */
	bool ctor;
	uslub_gfp_t acct;  /* gfp that charges (GFP_ACCOUNT for a plain cache) */
	bool plain;        /* a plain cache: some group allocations not charged */
	uslub_group_t *g[3];
	struct fobj *o;
	size_t n, cap;
	const char *what;
};

static unsigned char pat(const struct fobj *o, size_t i)
{
	return (unsigned char)(o->fill + i * 13 + (i >> 8));
}

static void fill_obj(const struct fcase *c, const struct fobj *o)
{
	for (size_t i = 0; i < c->size; i++)
		o->p[i] = pat(o, i);
}

static void verify_obj(const struct fcase *c, const struct fobj *o, int line)
{
	for (size_t i = 0; i < c->size; i++)
		if (o->p[i] != pat(o, i))
			test_fail(__FILE__, line,
				  "%s: object %p byte %zu of %zu is %#x, expected %#x (the allocator "
				  "wrote into a live object)", c->what, (void *)o->p, i, c->size,
				  o->p[i], pat(o, i));
}

/* A new object: zeroed if asked, constructed (ctor caches), then filled. */
static void accept_obj(struct fcase *c, void *p, uslub_gfp_t gfp, int grp)
{
	CHECK_MSG(p, "%s: allocation failed (errno %d)", c->what, errno);
	CHECK_MSG(set_insert((uintptr_t)p), "%s: %p handed out twice while live", c->what, p);
	unsigned char *b = p;
	if (gfp & USLUB_GFP_ZERO) {
		for (size_t i = 0; i < c->size; i++)
			CHECK_MSG(!b[i], "%s: GFP_ZERO object %p byte %zu is %#x", c->what, p, i, b[i]);
	} else if (c->ctor) {
		uint64_t m;
		memcpy(&m, b, sizeof(m));
		CHECK_MSG(m == CTOR_MAGIC, "%s: object %p lost its constructed state", c->what, p);
	}
	CHECK(c->n < c->cap);
	struct fobj *o = &c->o[c->n++];
	o->p = p;
	o->grp = grp;
	o->fill = (unsigned char)rng_next(&rng);
	fill_obj(c, o);
}

static void release_obj(struct fcase *c, size_t i, int line)
{
	struct fobj o = c->o[i];
	verify_obj(c, &o, line);
	if (c->ctor)
		ctor_fn(o.p); /* back to the constructed state, as SLUB expects */
	set_remove((uintptr_t)o.p);
	uslub_cache_free(c->s, o.p);
	c->o[i] = c->o[--c->n];
}

/* Allocate @k objects, charged (or not) to a random group. */
static void alloc_some(struct fcase *c, size_t k)
{
	size_t done = 0;
	while (done < k) {
		unsigned r = (unsigned)rng_below(&rng, 10);
		int grp = r < 2 ? 0 : r < 6 ? 1 : 2;
		uslub_group_set_current(grp ? c->g[grp] : NULL);
		uslub_gfp_t gfp = c->acct;
		/* a plain cache: an allocation without GFP_ACCOUNT is not charged */
		int charged = grp;
		if (c->plain && grp && rng_below(&rng, 4) == 0) {
			gfp = 0;
			charged = 0;
		}
		unsigned kind = (unsigned)rng_below(&rng, 8);
		if (kind == 0 && k - done >= 2) {
			void *p[16];
			size_t m = 2 + (size_t)rng_below(&rng, 15);
			if (m > k - done)
				m = k - done;
			if (rng_below(&rng, 2))
				gfp |= USLUB_GFP_ZERO; /* zeroed after the extensions are set */
			CHECK_EQ(uslub_cache_alloc_bulk(c->s, gfp, m, p), (long long)m);
			for (size_t i = 0; i < m; i++)
				accept_obj(c, p[i], gfp, charged);
			done += m;
			continue;
		}
		if (kind == 1)
			gfp |= USLUB_GFP_ZERO;
		void *p = kind == 2 ? uslub_cache_alloc_node(c->s, gfp, 0) : uslub_cache_alloc(c->s, gfp);
		accept_obj(c, p, gfp, charged);
		done++;
	}
	uslub_group_set_current(NULL);
}

/* Usage of both groups and the per-group cache walk against the objects. */
static void check_charges(struct fcase *c, int line)
{
	struct uslub_slabinfo si = slabinfo_get(c->s);
	size_t charge = want_charge(&si);
	CHECK_EQU(si.obj_ext_charge, charge);
	unsigned long cnt[3] = { 0, 0, 0 };
	for (size_t i = 0; i < c->n; i++)
		cnt[c->o[i].grp]++;
	size_t want1 = (cnt[1] + cnt[2]) * charge, want2 = cnt[2] * charge;
	size_t u1 = uslub_group_usage(c->g[1]), u2 = uslub_group_usage(c->g[2]);
	if (u1 < want1 || u1 > want1 + batch || u2 < want2 || u2 > want2 + batch)
		test_fail(__FILE__, line,
			  "%s: usage g1 %zu g2 %zu, charged %zu and %zu (+ at most %zu stock)", c->what,
			  u1, u2, want1, want2, batch);
	uslub_group_drain_stock();
	u1 = uslub_group_usage(c->g[1]);
	u2 = uslub_group_usage(c->g[2]);
	if (u1 != want1 || u2 != want2)
		test_fail(__FILE__, line,
			  "%s: after draining the stock usage g1 %zu g2 %zu, expected %zu and %zu "
			  "(objects g1 %lu g2 %lu uncharged %lu, charge %zu = size %zu + ext %u "
			  "(%s), placement %s)", c->what, u1, u2, want1, want2, cnt[1], cnt[2],
			  cnt[0], charge, si.size, si.obj_ext_bytes, si.obj_ext_fields,
			  uslub_obj_ext_placement_name(si.obj_ext));
	for (int g = 1; g <= 2; g++) {
		unsigned long objs = 12345;
		size_t bytes = 12345;
		CHECK_EQ(uslub_group_cache_usage(c->g[g], c->s, &objs, &bytes), 0);
		if (objs != cnt[g] || bytes != cnt[g] * charge)
			test_fail(__FILE__, line,
				  "%s: uslub_group_cache_usage(g%d) = %lu objects %zu bytes, expected "
				  "%lu and %zu (placement %s)", c->what, g, objs, bytes, cnt[g],
				  cnt[g] * charge, uslub_obj_ext_placement_name(si.obj_ext));
	}
	for (size_t i = 0; i < c->n; i++)
		verify_obj(c, &c->o[i], line);
	long v = uslub_cache_validate(c->s);
	if (v)
		test_fail(__FILE__, line, "%s: validate found %ld inconsistencies", c->what, v);
	if (si.live_objs != c->n)
		test_fail(__FILE__, line, "%s: live_objs %lu, %zu objects live", c->what,
			  si.live_objs, c->n);
}

static void exercise(uslub_cache_t *s, bool ctor, bool plain, int want, const char *what)
{
	struct fcase c;
	memset(&c, 0, sizeof(c));
	c.s = s;
	c.ctor = ctor;
	c.plain = plain;
	c.acct = plain ? USLUB_GFP_ACCOUNT : 0;
	c.what = what;
	struct uslub_slabinfo si = slabinfo_get(s);
	c.size = si.object_size;
	char name[64];
	snprintf(name, sizeof(name), "ext-%s-g1", what);
	c.g[1] = uslub_group_create(NULL, name, USLUB_GROUP_NO_LIMIT);
	snprintf(name, sizeof(name), "ext-%s-g2", what);
	c.g[2] = uslub_group_create(c.g[1], name, USLUB_GROUP_NO_LIMIT);
	CHECK(c.g[1] && c.g[2]);

	size_t n = (size_t)si.objs_per_slab * 4 + 3;
	if (n > (size_t)scaled(3000))
		n = (size_t)scaled(3000);
	if (n < 40)
		n = 40;
	c.cap = n + 16;
	c.o = calloc(c.cap, sizeof(*c.o));
	CHECK(c.o);

	alloc_some(&c, n);
	si = slabinfo_get(s);
	CHECK_MSG(si.obj_ext == want, "%s: placement %d (%s), expected %d (%s)", what, si.obj_ext,
		  uslub_obj_ext_placement_name(si.obj_ext), want, uslub_obj_ext_placement_name(want));
	unsigned int ext = ext_size(!plain);
	CHECK_EQU(si.obj_ext_size, ext);
	CHECK_EQU(si.obj_ext_bytes,
		  want == USLUB_OBJ_EXT_ARRAY || want == USLUB_OBJ_EXT_ON_DEMAND ? ext : 0);
	CHECK_MSG(!strcmp(si.obj_ext_fields, ext_fields(!plain)), "%s: obj_ext_fields %s, expected %s",
		  what, si.obj_ext_fields, ext_fields(!plain));
	CHECK_MSG(si.num_slabs >= 2, "%s: only %lu slabs", what, si.num_slabs);
	check_charges(&c, __LINE__);

	/* every other object goes, then the holes are filled again */
	for (size_t i = 0; i < c.n; i++)
		release_obj(&c, i, __LINE__);
	check_charges(&c, __LINE__);
	alloc_some(&c, n - c.n);
	check_charges(&c, __LINE__);

	/* everything goes, in a random order */
	while (c.n)
		release_obj(&c, (size_t)rng_below(&rng, c.n), __LINE__);
	check_charges(&c, __LINE__);
	CHECK_EQU(uslub_group_usage(c.g[1]), 0);
	CHECK_EQU(uslub_group_usage(c.g[2]), 0);
	CHECK_EQU(set_count, 0);
	CHECK_EQ(uslub_group_delete(c.g[2]), 0);
	CHECK_EQ(uslub_group_delete(c.g[1]), 0);
	uslub_flush_thread();
	uslub_cache_shrink(s);
	CHECK_EQU(slabinfo_get(s).num_slabs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	printf("  %-14s size %5zu order %u %4u objs/slab placement %-9s ext bytes %2u: %zu objects ok\n",
	       what, si.size, si.order, si.objs_per_slab, uslub_obj_ext_placement_name(si.obj_ext),
	       si.obj_ext_bytes, n);
	free(c.o);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* The first ACCOUNT layout from @l (size stepped by 8) with placement @want. */
static uslub_cache_t *find_cache(struct layout l, size_t max, int want)
{
	for (; l.size <= max; l.size += 8) {
		uslub_cache_t *s = make_cache(&l, true);
		CHECK(s);
		struct uslub_slabinfo si = slabinfo_get(s);
		if (si.obj_ext == want)
			return s;
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	test_fail(__FILE__, __LINE__, "no layout from size %zu to %zu has placement %s", l.size,
		  max, uslub_obj_ext_placement_name(want));
}

static void test_placements_work(void)
{
	/* 64-byte objects fill an order-0 slab: no leftover, no padding */
	struct layout l = { 64, 0, 0, false, false };
	uslub_cache_t *s = make_cache(&l, true);
	CHECK(s);
	exercise(s, false, false, USLUB_OBJ_EXT_ARRAY, "array-64");

	/* 80 bytes aligned to 64: 128-byte stride, 48 bytes of padding */
	l = (struct layout){ 80, 64, 0, false, false };
	s = make_cache(&l, true);
	CHECK(s);
	exercise(s, false, false, USLUB_OBJ_EXT_PADDING, "padding-80");

	/* ctor: the free pointer sits after the object, the extension after it */
	l = (struct layout){ 32, 64, 0, true, false };
	s = make_cache(&l, true);
	CHECK(s);
	exercise(s, true, false, USLUB_OBJ_EXT_PADDING, "padding-ctor");

	l = (struct layout){ 504, 0, 0, false, false };
	s = find_cache(l, 4096, USLUB_OBJ_EXT_LEFTOVER);
	exercise(s, false, false, USLUB_OBJ_EXT_LEFTOVER, "leftover");

	/* large objects: whichever placement the rule gives */
	l = (struct layout){ 9000, 0, 0, false, false };
	s = make_cache(&l, true);
	CHECK(s);
	struct uslub_slabinfo big = slabinfo_get(s);
	exercise(s, false, false, rule(&big, false, true), "large-9000");

	/* a plain cache: USLUB_GFP_ACCOUNT gives its slabs extensions on demand
	 * (with exact profiling every cache has a tag-only vector from the
	 * start, and the first charge in a slab widens it with objcg words) */
	l = (struct layout){ 64, 0, 0, false, false };
	s = make_cache(&l, false);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	int want = profiling ? rule(&si, false, false) : USLUB_OBJ_EXT_ON_DEMAND;
	if (!profiling) {
		CHECK_EQ(si.obj_ext, USLUB_OBJ_EXT_NONE);
		/* unaccounted objects, then a charged one: ON_DEMAND from then on */
		void *p[8];
		for (int i = 0; i < 8; i++)
			CHECK((p[i] = uslub_cache_alloc(s, USLUB_GFP_ACCOUNT)) != NULL); /* root */
		for (int i = 0; i < 8; i++)
			uslub_cache_free(s, p[i]);
	}
	exercise(s, false, true, want, "on-demand-64");
}

static void test_names(void)
{
	const char *n[5];
	for (int i = 0; i < 5; i++) {
		n[i] = uslub_obj_ext_placement_name(i);
		CHECK_MSG(n[i] && *n[i], "placement %d has no name", i);
		for (int j = 0; j < i; j++)
			CHECK_MSG(strcmp(n[i], n[j]), "placements %d and %d are both named %s", i, j,
				  n[i]);
	}
}

static void test_profiling_off(void)
{
	if (uslub_profiling_enabled())
		return;
	uslub_cache_t *s = uslub_cache_create("ext-noprof", 100, 0, USLUB_ACCOUNT, NULL);
	CHECK(s);
	void *p[20];
	for (int i = 0; i < 10; i++)
		CHECK((p[i] = uslub_cache_alloc(s, 0)) != NULL);
	CHECK_EQ(uslub_cache_alloc_bulk(s, 0, 10, p + 10), 10);
	struct uslub_allocinfo ai[4];
	CHECK_EQU(uslub_allocinfo(ai, 4), 0);
	char *buf = print_to_string(uslub_allocinfo_print, USLUB_FMT_JSON);
	CHECK_MSG(json_valid(buf), "allocinfo JSON (profiling off) does not parse:\n%s", buf);
	free(buf);
	uslub_cache_free_bulk(s, 20, p);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

int main(void)
{
	test_seed(0x0b1e0e47);
	rng.s = test_seed_value;
	/* exact mode gives every cache extensions; sampled mode none (its
	 * sampled objects' slabs get arrays on demand, unreported) */
	profiling = uslub_profiling_enabled() == 1;
	sampling = uslub_profiling_enabled() == 2;
	batch = account_batch();
	unsigned long err0 = uslub_error_count();
	double t0 = now_s();
	test_names();
	unsigned long layouts = test_placement_rule();
	printf("placement rule: %lu layouts ok (leftover %lu, padding %lu, array %lu)\n", layouts,
	       seen[USLUB_OBJ_EXT_LEFTOVER], seen[USLUB_OBJ_EXT_PADDING], seen[USLUB_OBJ_EXT_ARRAY]);
	test_placements_work();
	test_profiling_off();
	CHECK_EQU(uslub_error_count(), err0);
	printf("obj_ext: ok: %lu layouts, every placement works (profiling %s), %.2f s\n", layouts,
	       profiling ? "on" : "off", now_s() - t0);
	return 0;
}
