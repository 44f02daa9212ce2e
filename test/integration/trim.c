/*
 * trim: memory goes back to the page provider and then to the OS.
 * Allocate ~64 MiB of 1 KiB objects, free them all, flush, shrink: the
 * cache holds no slab and bytes_in_slabs is back where it started; after
 * destroy, uslub_trim() returns bytes to the OS (or the decay purge already
 * did: bytes_purged grew).
 */
#include "check.h"

#define OBJ 1024

int main(void)
{
	size_t total = (size_t)scaled(64l << 20);
	size_t n = total / OBJ;
	unsigned long err0 = uslub_error_count();

	/* warm up: the thread's per-CPU state exists before the baseline, and
	 * so does a slab of the sheaf bucket a cache of OBJ takes its sheaves
	 * from (the same size: the same sheaf capacity); its main sheaf keeps
	 * that slab */
	uslub_cache_t *warm = uslub_cache_create("trim-warm", OBJ, 0, 0, NULL);
	CHECK(warm);
	void *w = uslub_cache_alloc(warm, 0);
	CHECK(w);
	uslub_cache_free(warm, w);

	uslub_cache_t *s = uslub_cache_create("trim-1k", OBJ, 0, 0, NULL);
	CHECK(s);
	struct uslub_page_stats ps0, ps1, ps2, ps3;
	uslub_page_stats(&ps0);
	printf("start: segments %lu reserved %lu in_slabs %lu purged %lu purges %lu\n",
	       ps0.segments, ps0.bytes_reserved, ps0.bytes_in_slabs, ps0.bytes_purged, ps0.purges);

	void **v = malloc(n * sizeof(*v));
	CHECK(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc(s, 0);
		CHECK_MSG(v[i], "alloc %zu of %zu failed: %s", i, n, strerror(errno));
		/* touch every page so the memory is really resident */
		memset(v[i], (int)(i & 0xff), OBJ);
	}
	uslub_page_stats(&ps1);
	printf("full:  segments %lu reserved %lu in_slabs %lu purged %lu purges %lu\n",
	       ps1.segments, ps1.bytes_reserved, ps1.bytes_in_slabs, ps1.bytes_purged, ps1.purges);
	CHECK_MSG(ps1.bytes_in_slabs >= ps0.bytes_in_slabs + total,
		  "bytes_in_slabs grew by %lu for %zu bytes of objects",
		  ps1.bytes_in_slabs - ps0.bytes_in_slabs, total);
	CHECK(ps1.bytes_reserved >= ps1.bytes_in_slabs);
	CHECK(ps1.segments * (4ul << 20) >= ps1.bytes_in_slabs);
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK_EQU(si.live_objs, n);
	CHECK(si.memory_used >= total);
	if (uslub_profiling_enabled() != 2) {
		CHECK_EQU(ps1.bytes_in_slabs - ps0.bytes_in_slabs, si.memory_used);
	} else {
		/* sampled profiling: the slabs holding sampled objects have
		 * extension arrays (16 bytes per object) in the bucket caches */
		CHECK(ps1.bytes_in_slabs - ps0.bytes_in_slabs >= si.memory_used);
		CHECK(ps1.bytes_in_slabs - ps0.bytes_in_slabs <=
		      si.memory_used + si.live_objs * 16 + (1ul << 20));
	}

	for (size_t i = 0; i < n; i++) {
		if (*(unsigned char *)v[i] != (unsigned char)(i & 0xff))
			CHECK_MSG(0, "object %zu corrupted", i);
		uslub_cache_free(s, v[i]);
	}
	uslub_flush_thread();
	int rel = uslub_cache_shrink(s);
	CHECK(rel >= 0);
	si = slabinfo_get(s);
	CHECK_EQU(si.num_slabs, 0);
	CHECK_EQU(si.memory_used, 0);
	uslub_page_stats(&ps2);
	printf("freed: segments %lu reserved %lu in_slabs %lu purged %lu purges %lu\n",
	       ps2.segments, ps2.bytes_reserved, ps2.bytes_in_slabs, ps2.bytes_purged, ps2.purges);
	/* sampled profiling: the extension arrays went back to the bucket
	 * caches, which may keep a slab or two */
	CHECK_MSG(ps2.bytes_in_slabs == ps0.bytes_in_slabs ||
		  (uslub_profiling_enabled() == 2 &&
		   ps2.bytes_in_slabs <= ps0.bytes_in_slabs + (1ul << 20)),
		  "bytes_in_slabs %lu after freeing everything, %lu at the start",
		  ps2.bytes_in_slabs, ps0.bytes_in_slabs);

	CHECK_EQ(uslub_cache_destroy(s), 0);
	size_t trimmed = uslub_trim();
	uslub_page_stats(&ps3);
	printf("trim:  returned %zu; segments %lu reserved %lu in_slabs %lu purged %lu purges %lu\n",
	       trimmed, ps3.segments, ps3.bytes_reserved, ps3.bytes_in_slabs, ps3.bytes_purged,
	       ps3.purges);
	/* empty segments are unmapped (by trim now, or by the decay before:
	 * the background thread), free pages in used ones purged */
	size_t unmapped = ps1.segments > ps3.segments ? (ps1.segments - ps3.segments) << 22 : 0;
	size_t purged_total = ps3.bytes_purged > ps0.bytes_purged ?
			      ps3.bytes_purged - ps0.bytes_purged : 0;
	CHECK_MSG(trimmed > 0 || purged_total > 0 || unmapped > 0,
		  "uslub_trim returned 0, bytes_purged did not grow (%lu -> %lu) and no segment "
		  "was unmapped (%lu -> %lu)", ps0.bytes_purged, ps3.bytes_purged, ps1.segments,
		  ps3.segments);
	CHECK(ps3.bytes_in_slabs <= ps0.bytes_in_slabs ||
	      (uslub_profiling_enabled() == 2 &&       /* the bucket caches' slabs */
	       ps3.bytes_in_slabs <= ps0.bytes_in_slabs + (1ul << 20)));
	/* most of the ~64 MiB went back, by trim now or by decay before */
	CHECK_MSG(purged_total >= total / 2 || trimmed >= total / 2 || unmapped >= total / 2,
		  "only %zu bytes trimmed (%zu purged, %zu unmapped in total) of %zu freed",
		  trimmed, purged_total, unmapped, total);
	CHECK(ps3.purges > ps0.purges);
	/* a second trim has nothing left to return */
	size_t again = uslub_trim();
	CHECK_MSG(again <= trimmed, "second trim returned %zu after %zu", again, trimmed);

	/* the allocator still works after trimming; purged memory comes back */
	s = uslub_cache_create("trim-1k-again", OBJ, 0, 0, NULL);
	CHECK(s);
	for (size_t i = 0; i < n / 4; i++) {
		v[i] = uslub_cache_alloc(s, USLUB_GFP_ZERO);
		CHECK(v[i]);
		CHECK(((unsigned char *)v[i])[0] == 0 && ((unsigned char *)v[i])[OBJ - 1] == 0);
		memset(v[i], 0x5c, OBJ);
	}
	for (size_t i = 0; i < n / 4; i++)
		uslub_cache_free(s, v[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_shrink(warm) >= 0, 1);
	CHECK_EQ(uslub_cache_destroy(warm), 0);
	CHECK_EQU(uslub_error_count(), err0);
	free(v);
	printf("trim: ok\n");
	return 0;
}
