/* base/sys.c: a release the kernel refuses loses nothing, not even
 * address space nobody would keep. A refused munmap of such a range
 * parks it (its pages returned, still mapped, counted in
 * bytes_unreleased); a purge pass (here trim) tries it again. Through
 * sys.c itself, and through kmalloc: freed huge blocks past the keep
 * slots, whose munmap is refused (issue 25, item 4). Refusals are
 * injected (_uslub_sys_refuse_next), as a seccomp filter would make
 * them, but can be lifted. */
#include "base/base.h"
#include "page/page.h"
#include "uslub.h"
#include "unit.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* Is any of [p, p + len) mapped? (mincore: ENOMEM where nothing is) */
static int mapped(void *p, size_t len)
{
	static unsigned char vec[(8u << 20) / 4096];
	for (size_t off = 0; off < len; off += PAGE_SIZE)
		if (!mincore((char *)p + off, PAGE_SIZE, vec))
			return 1;
	return 0;
}

#define NBIG  80                  /* more than kmalloc's keep slots */
#define BIG   (3ul << 20)

int main(void)
{
	_uslub_page_init();
	struct uslub_page_stats ps0, ps;
	uslub_page_stats(&ps0);
	size_t len = 4 * PAGE_SIZE;

	/* 1. sys.c: refused once, parked, mapped; refused again on the
	 * retry, still parked (not counted twice); then unmapped */
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	memset(p, 0x5a, len);
	_uslub_sys_refuse_next(1);
	CHECK_EQ(_uslub_sys_munmap_or_park(p, len), ENOMEM);
	uslub_page_stats(&ps);
	CHECK_EQ(ps.bytes_unreleased, ps0.bytes_unreleased + len);
	CHECK_EQ(ps.release_failures, ps0.release_failures + 1);
	CHECK(mapped(p, len));
	CHECK_EQ(p[len - 1], 0);           /* its pages were given back */
	_uslub_sys_refuse_next(1);
	CHECK_EQ(_uslub_sys_retry_parked(), 0);
	uslub_page_stats(&ps);
	CHECK_EQ(ps.bytes_unreleased, ps0.bytes_unreleased + len);
	CHECK_EQ(ps.release_failures, ps0.release_failures + 1);
	CHECK(mapped(p, len));
	CHECK_EQ(_uslub_sys_retry_parked(), len);
	uslub_page_stats(&ps);
	CHECK_EQ(ps.bytes_unreleased, ps0.bytes_unreleased);
	CHECK(!mapped(p, len));

	/* 2. kmalloc: the blocks no keep slot takes are parked, not lost;
	 * trim unmaps every one once the kernel allows it */
	static void *big[NBIG];
	for (int i = 0; i < NBIG; i++) {
		big[i] = uslub_kmalloc(BIG, USLUB_GFP_KERNEL);
		CHECK(big[i]);
		memset(big[i], 1, PAGE_SIZE);
	}
	_uslub_sys_refuse_next(1L << 20);
	for (int i = 0; i < NBIG; i++)
		uslub_kfree(big[i]);
	_uslub_sys_refuse_next(0);
	uslub_page_stats(&ps);
	CHECK(ps.bytes_unreleased > ps0.bytes_unreleased);
	CHECK_EQ((ps.bytes_unreleased - ps0.bytes_unreleased) % BIG, 0);
	for (int i = 0; i < NBIG; i++)
		CHECK(mapped(big[i], BIG));
	unsigned long parked = (ps.bytes_unreleased - ps0.bytes_unreleased) / BIG;
	uslub_trim();
	uslub_page_stats(&ps);
	CHECK_EQ(ps.bytes_unreleased, 0);
	for (int i = 0; i < NBIG; i++)
		CHECK(!mapped(big[i], BIG));
	printf("sys: ok (%lu of %d freed blocks parked after a refused munmap, all unmapped "
	       "by trim)\n", parked, NBIG);
	return 0;
}
