/*
 * A NULL cache and a destroyed cache given to every call that takes a
 * cache: a clear report naming the call (and "NULL" or "destroyed" with
 * the cache's name), exactly one error each, NULL / 0 / -1 with errno
 * EINVAL where the call returns something, never a crash and never a
 * silent success -- also after a new cache has taken the destroyed one's
 * cpu slot.
 */
#define _GNU_SOURCE
#include "check.h"

static unsigned long e0;
static const char *out;

#define BEGIN() do { e0 = uslub_error_count(); errno = 0; capture_begin(); } while (0)
#define END(what, needle)                                                          \
	do {                                                                       \
		out = capture_end();                                               \
		CHECK_MSG(uslub_error_count() == e0 + 1, "%s: %lu errors, want 1: %s", \
			  what, uslub_error_count() - e0, out);                    \
		CHECK_MSG(strstr(out, needle) != NULL, "%s: report lacks '%s': %s",   \
			  what, needle, out);                                      \
	} while (0)

static void calls(uslub_cache_t *s, const char *needle, void *other_obj)
{
	void *p;
	BEGIN(); p = uslub_cache_alloc(s, 0); END("alloc", needle);
	CHECK(!p && errno == EINVAL);
	BEGIN(); p = uslub_cache_alloc(s, USLUB_GFP_ZERO); END("alloc(GFP_ZERO)", needle);
	CHECK(!p && errno == EINVAL);
	BEGIN(); p = uslub_cache_alloc_node(s, 0, 0); END("alloc_node", needle);
	CHECK(!p && errno == EINVAL);
	void *v[4];
	BEGIN(); int got = uslub_cache_alloc_bulk(s, 0, 4, v); END("alloc_bulk", needle);
	CHECK(got == 0 && errno == EINVAL);
	BEGIN(); long bad = uslub_cache_validate(s); END("validate", needle);
	CHECK(bad == -1 && errno == EINVAL);
	BEGIN(); int freed = uslub_cache_shrink(s); END("shrink", needle);
	CHECK(freed == -1 && errno == EINVAL);
	BEGIN(); struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 4); END("prefill", needle);
	CHECK(!sh);
	struct uslub_slabinfo si;
	BEGIN(); int r = uslub_cache_slabinfo(s, &si); END("slabinfo", needle);
	CHECK(r == -1);
	/* a free of another cache's live object through it: reported, the
	 * object stays live and intact */
	memset(other_obj, 0x3c, 32);
	BEGIN(); uslub_cache_free(s, other_obj); END("free", needle);
	CHECK(((unsigned char *)other_obj)[0] == 0x3c && ((unsigned char *)other_obj)[31] == 0x3c);
}

int main(void)
{
	uslub_cache_t *live = uslub_cache_create("bad-cache-live", 64, 0, 0, NULL);
	CHECK(live);
	void *obj = uslub_cache_alloc(live, 0);
	CHECK(obj);

	calls(NULL, "NULL cache", obj);
	BEGIN(); const char *name = uslub_cache_name(NULL); END("name", "NULL cache");
	CHECK(name == NULL);
	CHECK(uslub_cache_destroy(NULL) == 0);          /* as kmem_cache_destroy(NULL) */
	printf("  NULL cache: every call reports it, nothing crashes\n");

	uslub_cache_t *dead = uslub_cache_create("bad-cache-dead", 64, 0, 0, NULL);
	CHECK(dead);
	void *x = uslub_cache_alloc(dead, 0);
	CHECK(x);
	uslub_cache_free(dead, x);
	CHECK(uslub_cache_destroy(dead) == 0);
	calls(dead, "bad-cache-dead", obj);
	BEGIN(); int rc = uslub_cache_destroy(dead); END("second destroy", "destroyed");
	CHECK(rc == -1 && errno == EINVAL);
	printf("  destroyed cache: every call reports it\n");

	/* a prefilled sheaf, emptied, outlives its cache: the sheaf calls
	 * report the destroyed cache */
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 8;
	uslub_cache_t *sc = uslub_cache_create_args("bad-cache-sheafy", 64, &args, 0);
	CHECK(sc);
	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(sc, 0, 4);
	CHECK(sh);
	void *o[64];
	int no = 0;
	while (uslub_cache_sheaf_size(sh) && no < 64)
		o[no++] = uslub_cache_alloc_from_sheaf(sc, 0, sh);
	for (int i = 0; i < no; i++)
		uslub_cache_free(sc, o[i]);
	uslub_cache_shrink(sc);
	CHECK(uslub_cache_destroy(sc) == 0);
	BEGIN(); void *q = uslub_cache_alloc_from_sheaf(sc, 0, sh); END("alloc_from_sheaf", "destroyed");
	CHECK(q == NULL);
	BEGIN(); int rr = uslub_cache_refill_sheaf(sc, 0, &sh, 4); END("refill_sheaf", "destroyed");
	CHECK(rr != 0);
	BEGIN(); uslub_cache_return_sheaf(sc, 0, sh); END("return_sheaf", "destroyed");
	printf("  destroyed cache: the sheaf calls report it\n");

	/* new caches take the freed cpu slot: the stale pointer still fails */
	uslub_cache_t *fresh[4];
	for (int i = 0; i < 4; i++) {
		fresh[i] = uslub_cache_create("bad-cache-fresh", 64, 0, 0, NULL);
		CHECK(fresh[i]);
		void *y = uslub_cache_alloc(fresh[i], 0);   /* fills its cpu slot */
		CHECK(y);
		uslub_cache_free(fresh[i], y);
	}
	BEGIN(); void *p = uslub_cache_alloc(dead, 0); END("alloc after reuse", "destroyed");
	CHECK(p == NULL);
	for (int i = 0; i < 4; i++)
		CHECK(uslub_cache_destroy(fresh[i]) == 0);
	printf("  destroyed cache: still reported after its slot is reused\n");

	uslub_cache_free(live, obj);
	CHECK(uslub_cache_validate(live) == 0);
	CHECK(uslub_cache_destroy(live) == 0);
	return 0;
}
