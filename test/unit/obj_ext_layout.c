/*
 * The smaller per-object extension (Linux 7.3's slabobj_ext), white box:
 * each cache's extension holds only the words it can need, and a slab
 * whose layout lacks a word a later event needs is widened (slub.h,
 * slub/object.h struct obj_ext_wide). Run by CTest in three modes:
 *
 *   USLUB_PROFILING=0 (the unit tier's default): an accounted cache's
 *     extension is one objcg word (obj_ext_size 8, fields "objcg"); a
 *     plain cache has none until a USLUB_GFP_ACCOUNT allocation, whose
 *     on-demand arrays are objcg words too; no tag word anywhere;
 *   USLUB_PROFILING=1 (_exact): a plain cache's extension is one tag word
 *     (the allocation profile counts right with accounting off); an
 *     accounted one has both words (16 bytes); a USLUB_GFP_ACCOUNT
 *     allocation from the plain cache widens its slab with an objcg word
 *     per object: the tags stay where they were, the charge is the stride
 *     + the extension bytes outside the slab + the objcg word, the group's
 *     usage exact, every charged object found by uslub_group_cache_usage;
 *   USLUB_PROFILING=sample:1 (_sampled): every object is sampled; an
 *     accounted cache (created with no tag word) gets its samples' tags in
 *     widened slabs; charges and allocinfo exact (p = 1).
 *
 * In every mode: the words of each field are where the accessors say (a
 * charged object's objcg is the thread's group's handle, a tagged
 * object's tag its site's), every word NULL again after the frees, the
 * usage back to 0 and the site gone from allocinfo.
 */
#include "cache/internal.h"
#include "unit.h"
#include <string.h>

#define N 300

static struct uslub_allocinfo info[256];

/* calls and bytes of the site at @line of this file (0, 0: not listed) */
static void site(int line, int64_t *calls, int64_t *bytes)
{
	size_t n = uslub_allocinfo(info, 256);
	CHECK(n <= 256);
	*calls = *bytes = 0;
	for (size_t i = 0; i < n; i++)
		if ((int)info[i].line == line && strstr(info[i].file, "unit/obj_ext_layout.c")) {
			*calls += info[i].calls;
			*bytes += info[i].bytes;
		}
}

static int mode;                 /* 0 off, 1 exact, 2 sampled */

/* The words @s's extension has in this mode. */
static unsigned int want_layout(bool account)
{
	unsigned int l = account ? OBJ_EXT_OBJCG : 0;
	if (mode == 1)
		l |= OBJ_EXT_TAG;
	if (!l)                  /* the on-demand arrays */
		l = OBJ_EXT_OBJCG | (mode == 2 ? OBJ_EXT_TAG : 0);
	return l;
}

static void check_cache(struct kmem_cache *s, bool account)
{
	unsigned int l = want_layout(account);
	struct uslub_slabinfo si;
	CHECK_EQ(uslub_cache_slabinfo(s, &si), 0);
	CHECK_EQ(s->ext_layout, l);
	CHECK_EQ(s->ext_size, (l == OBJ_EXT_BOTH ? 2 : 1) * sizeof(void *));
	CHECK_EQ(si.obj_ext_size, si.obj_ext == USLUB_OBJ_EXT_NONE ? 0 : s->ext_size);
	CHECK(!strcmp(si.obj_ext_fields, l == OBJ_EXT_BOTH ? "objcg+tag" :
					  l == OBJ_EXT_OBJCG ? "objcg" : "tag"));
	CHECK_EQ(s->charge, s->size + s->ext_bytes + (l & OBJ_EXT_OBJCG ? 0 : sizeof(void *)));
	CHECK_EQ(si.obj_ext_charge, s->charge);
	/* the lean paths only where their compile-time layout is the cache's */
	CHECK(!s->pcs_hooks || s->pcs_hooks == s->ext_layout);
}

/* N objects of @s charged to @g (USLUB_GFP_ACCOUNT on a plain cache),
 * their words checked, then freed. */
static void run(struct kmem_cache *s, bool account, uslub_group_t *g)
{
	static void *p[N];
	uslub_gfp_t gfp = account ? 0 : USLUB_GFP_ACCOUNT;
	bool tagged = mode != 0;
	uslub_group_set_current(g);
	uslub_group_drain_stock();
	size_t u0 = uslub_group_usage(g);
	int line = __LINE__ + 2;
	for (int i = 0; i < N; i++)
		p[i] = uslub_cache_alloc(s, gfp);
	uslub_group_drain_stock();
	check_cache(s, account);
	CHECK_EQ(uslub_group_usage(g), u0 + N * (size_t)s->charge);
	unsigned long objs = 0;
	size_t bytes = 0;
	CHECK_EQ(uslub_group_cache_usage(g, s, &objs, &bytes), 0);
	CHECK_EQ(objs, N);
	CHECK_EQ(bytes, N * (size_t)s->charge);
	int64_t calls, tb;
	site(line, &calls, &tb);
	CHECK_EQ(calls, tagged ? N : 0);
	CHECK_EQ(tb, tagged ? (int64_t)N * s->size : 0);
	unsigned long widened = 0;
	for (int i = 0; i < N; i++) {
		CHECK(p[i]);
		struct slab *slab = virt_to_slab(p[i]);
		unsigned long v = slab->obj_exts;
		struct obj_ext e = slab_obj_ext(s, slab, p[i]);
		CHECK(e.objcg && *e.objcg == g->objcg);
		CHECK(!tagged || (e.tag && *e.tag));
		if (!tagged && s->ext_layout == OBJ_EXT_OBJCG)
			CHECK(!e.tag);
		/* widened exactly where the layout lacks a word the mode uses */
		bool wide = (v & OBJ_EXTS_WIDENED) != 0;
		CHECK_EQ(wide, (mode == 1 && !(s->ext_layout & OBJ_EXT_OBJCG)) ||
			       (mode == 2 && !(s->ext_layout & OBJ_EXT_TAG)));
		if (wide) {
			struct obj_ext_wide *w = (struct obj_ext_wide *)(v & ~OBJ_EXTS_WIDENED);
			unsigned int idx = obj_to_index(s, slab, p[i]);
			void **extra = &w->extra[idx];
			CHECK(extra == (void **)e.objcg || extra == (void **)e.tag);
			CHECK(w->primary && !(w->primary & OBJ_EXTS_WIDENED));
			widened++;
		}
	}
	for (int i = 0; i < N; i++) {
		struct slab *slab = virt_to_slab(p[i]);
		struct obj_ext e = slab_obj_ext(s, slab, p[i]);
		uslub_cache_free(s, p[i]);
		CHECK(!obj_ext_objcg(e) && !obj_ext_tag(e));
	}
	uslub_group_drain_stock();
	CHECK_EQ(uslub_group_usage(g), u0);
	site(line, &calls, &tb);
	CHECK_EQ(calls, 0);
	CHECK_EQ(tb, 0);
	uslub_group_set_current(NULL);
	printf("  %-22s %-9s %-9s ext %2u charge %4u (stride %u): %d objects, %lu in widened slabs\n",
	       s->name, account ? "accounted" : "plain",
	       uslub_obj_ext_placement_name(s->ext_placement), s->ext_size, s->charge, s->size, N,
	       widened);
}

int main(void)
{
	mode = uslub_profiling_enabled();
	if (mode == 2)
		CHECK_EQ(uslub_profiling_sample_interval(), 1);
	uslub_group_t *g = uslub_group_create(NULL, "ext-layout", USLUB_GROUP_NO_LIMIT);
	CHECK(g);
	/* three placements for the accounted caches: a separate array (64 B
	 * objects fill their slab), the padding (80 B in 128), the leftover */
	static const struct { const char *name; size_t size, align; } kinds[] = {
		{ "layout-array-64", 64, 0 }, { "layout-pad-80", 80, 64 },
		{ "layout-left-1184", 1184, 64 },
	};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int account = 1; account >= 0; account--) {
			char name[64];
			snprintf(name, sizeof(name), "%s%s", kinds[k].name, account ? "-acct" : "");
			struct kmem_cache *s = uslub_cache_create(name, kinds[k].size, kinds[k].align,
								  account ? USLUB_ACCOUNT : 0, NULL);
			CHECK(s);
			check_cache(s, account);
			run(s, account, g);
			uslub_flush_thread();
			uslub_cache_shrink(s);
			CHECK_EQ(uslub_cache_destroy(s), 0);
		}
	}
	CHECK_EQ(uslub_group_delete(g), 0);
	printf("obj_ext_layout: ok (profiling %s)\n",
	       mode == 1 ? "exact" : mode == 2 ? "sampled" : "off");
	return 0;
}
