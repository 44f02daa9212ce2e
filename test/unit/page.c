/* Page provider: natural alignment, buddy split/merge, O(1) lookup,
 * ownership, failure injection, purge of empty segments. */
#include "page/page.h"
#include "uslub.h"
#include "unit.h"
#include <string.h>

int main(void)
{
	_uslub_page_init();
	struct uslub_page_stats ps0, ps;
	uslub_page_stats(&ps0);

	/* every order: naturally aligned, descriptors point at the head */
	struct page *runs[MAX_PAGE_ORDER + 1];
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++) {
		struct page *p = _uslub_alloc_pages(o, 0);
		CHECK(p);
		runs[o] = p;
		char *a = page_address(p);
		CHECK(((uintptr_t)a & ((PAGE_SIZE << o) - 1)) == 0);
		CHECK_EQ(page_order(p), o);
		CHECK(p->flags & PG_head);
		for (unsigned long off = 0; off < (PAGE_SIZE << o); off += PAGE_SIZE / 2)
			CHECK(_uslub_virt_to_head_page(a + off) == p);
		memset(a, 0xa5, PAGE_SIZE << o);     /* the memory is usable */
		CHECK(_uslub_owns_segment(a));
	}
	CHECK(_uslub_alloc_pages(MAX_PAGE_ORDER + 1, 0) == NULL);
	/* runs never overlap */
	for (unsigned int i = 0; i <= MAX_PAGE_ORDER; i++)
		for (unsigned int j = i + 1; j <= MAX_PAGE_ORDER; j++) {
			char *a = page_address(runs[i]), *b = page_address(runs[j]);
			CHECK(a + (PAGE_SIZE << i) <= b || b + (PAGE_SIZE << j) <= a);
		}
	uslub_page_stats(&ps);
	unsigned long want = 0;
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++)
		want += PAGE_SIZE << o;
	CHECK_EQ(ps.bytes_in_slabs - ps0.bytes_in_slabs, want);

	/* the descriptor pages of a segment are not runs */
	char *seg = (char *)ptr_segment(page_address(runs[0]));
	for (unsigned long off = 0; off < SEGMENT_META_PAGES * PAGE_SIZE; off += 1000)
		CHECK(_uslub_virt_to_head_page(seg + off) == NULL);

	/* foreign memory */
	int local;
	CHECK(!_uslub_owns_segment(&local));
	void *m = malloc(16);
	CHECK(!_uslub_owns_segment(m));
	free(m);
	CHECK(!_uslub_owns_segment((void *)0xffff800000000000ull));

	/* freed runs are no longer runs */
	char *a0 = page_address(runs[0]);
	for (unsigned int o = 0; o <= MAX_PAGE_ORDER; o++)
		_uslub_free_pages(runs[o]);
	CHECK(_uslub_virt_to_head_page(a0) == NULL);
	uslub_page_stats(&ps);
	CHECK_EQ(ps.bytes_in_slabs, ps0.bytes_in_slabs);

	/* buddies merge: 1024 order-0 pages freed give back an order-9 block */
	enum { N = 2048 };
	static struct page *pg[N];
	for (int i = 0; i < N; i++)
		CHECK((pg[i] = _uslub_alloc_pages(0, 0)));
	for (int i = 0; i < N; i++)
		_uslub_free_pages(pg[i]);
	unsigned long segs_before = ps.segments;
	struct page *big[8];
	for (int i = 0; i < 8; i++)
		CHECK((big[i] = _uslub_alloc_pages(MAX_PAGE_ORDER, 0)));
	uslub_page_stats(&ps);
	/* 2048 pages needed 3 segments; 8 order-9 blocks need 8 segments:
	 * only possible without fragmentation if the small pages merged */
	CHECK(ps.segments <= segs_before + 8);
	for (int i = 0; i < 8; i++)
		_uslub_free_pages(big[i]);

	/* failure injection: the next allocation fails, then all is normal */
	_uslub_page_fail_after(0);
	CHECK(_uslub_alloc_pages(0, 0) == NULL);
	struct page *p = _uslub_alloc_pages(0, 0);
	CHECK(p);
	_uslub_free_pages(p);
	_uslub_page_fail_after(2);
	struct page *q1 = _uslub_alloc_pages(0, 0), *q2 = _uslub_alloc_pages(0, 0);
	CHECK(q1 && q2);
	CHECK(_uslub_alloc_pages(0, 0) == NULL);
	_uslub_free_pages(q1);
	_uslub_free_pages(q2);
	_uslub_page_fail_after(-1);

	/* every segment is empty now: trim unmaps them all, and their
	 * addresses are no longer ours (the background thread may have done
	 * it first, on a slow machine) */
	size_t bytes = _uslub_page_trim();
	uslub_page_stats(&ps);
	CHECK(bytes >= SEGMENT_SIZE);
	CHECK_EQ(ps.segments, 0);
	CHECK_EQ(ps.bytes_reserved, 0);
	CHECK_EQ(ps.bytes_purged, 0);
	CHECK(!_uslub_owns_segment(a0));
	CHECK(_uslub_virt_to_head_page(a0) == NULL);
	CHECK_EQ(_uslub_page_trim(), 0);
	/* a new segment is mapped for the next allocation */
	p = _uslub_alloc_pages(3, 0);
	CHECK(p);
	uslub_page_stats(&ps);
	CHECK_EQ(ps.segments, 1);
	CHECK(_uslub_owns_segment(page_address(p)));
	memset(page_address(p), 1, PAGE_SIZE << 3);
	_uslub_free_pages(p);
	/* freed: a dirty empty segment; trim purges and unmaps it */
	CHECK(_uslub_page_trim() >= SEGMENT_SIZE);
	uslub_page_stats(&ps);
	CHECK_EQ(ps.segments, 0);
	printf("page: ok (%lu segments)\n", ps.segments);
	return 0;
}
