/*
 * kernel_gfp_body.h: the checks of the kernel-gfp co-include tests, for a
 * translation unit that included kernel gfp headers (a stand-in written
 * here, gfp_kernel_first.h, or a kernel tree's own) and then
 * <uslub/slab.h>. Built as C and C++ with -Werror: a name defined twice,
 * or gfp_t declared twice with another type, fails the build; the
 * program then checks the values against the kernel's 6.12 layout
 * (written out here bit by bit) and the translation to uslub's flags.
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef KGFP_NAME
#define KGFP_NAME "kernel_gfp"
#endif

static int kgfp_failures;
#define KGFP_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, KGFP_NAME ": FAIL line %d: %s\n",      \
				__LINE__, #cond);                              \
			kgfp_failures++;                                       \
		}                                                              \
	} while (0)
#define KGFP_EQ(a, b) KGFP_CHECK((unsigned long)(a) == (unsigned long)(b))

/* The kernel's bit numbers (include/linux/gfp_types.h, 6.12, no
 * CONFIG_KASAN_HW_TAGS / CONFIG_LOCKDEP / CONFIG_SLAB_OBJ_EXT). */
#define B(n) (1ul << (n))

static void kgfp_values(void)
{
	KGFP_EQ(__GFP_DMA, B(0));
	KGFP_EQ(__GFP_HIGHMEM, B(1));
	KGFP_EQ(__GFP_DMA32, B(2));
	KGFP_EQ(__GFP_MOVABLE, B(3));
	KGFP_EQ(__GFP_RECLAIMABLE, B(4));
	KGFP_EQ(__GFP_HIGH, B(5));
	KGFP_EQ(__GFP_IO, B(6));
	KGFP_EQ(__GFP_FS, B(7));
	KGFP_EQ(__GFP_ZERO, B(8));
	KGFP_EQ(__GFP_DIRECT_RECLAIM, B(10));
	KGFP_EQ(__GFP_KSWAPD_RECLAIM, B(11));
	KGFP_EQ(__GFP_WRITE, B(12));
	KGFP_EQ(__GFP_NOWARN, B(13));
	KGFP_EQ(__GFP_RETRY_MAYFAIL, B(14));
	KGFP_EQ(__GFP_NOFAIL, B(15));
	KGFP_EQ(__GFP_NORETRY, B(16));
	KGFP_EQ(__GFP_MEMALLOC, B(17));
	KGFP_EQ(__GFP_COMP, B(18));
	KGFP_EQ(__GFP_NOMEMALLOC, B(19));
	KGFP_EQ(__GFP_HARDWALL, B(20));
	KGFP_EQ(__GFP_THISNODE, B(21));
	KGFP_EQ(__GFP_ACCOUNT, B(22));
	KGFP_EQ(__GFP_ZEROTAGS, B(23));
	KGFP_EQ(__GFP_SKIP_ZERO, 0);
	KGFP_EQ(__GFP_SKIP_KASAN, 0);
	KGFP_EQ(__GFP_NOLOCKDEP, 0);
	KGFP_EQ(__GFP_NO_OBJ_EXT, 0);
	KGFP_EQ(__GFP_RECLAIM, B(10) | B(11));
	KGFP_EQ(__GFP_BITS_SHIFT, 24);
	KGFP_EQ(__GFP_BITS_MASK, B(24) - 1);
	KGFP_EQ(GFP_ZONEMASK, B(0) | B(1) | B(2) | B(3));
	KGFP_EQ(GFP_KERNEL, 0xcc0);
	KGFP_EQ(GFP_KERNEL_ACCOUNT, 0x400cc0);
	KGFP_EQ(GFP_ATOMIC, 0x820);
	KGFP_EQ(GFP_NOWAIT, 0x2800);
	KGFP_EQ(GFP_NOIO, 0xc00);
	KGFP_EQ(GFP_NOFS, 0xc40);
	KGFP_EQ(GFP_USER, 0x100cc0);
	KGFP_EQ(GFP_DMA, 0x1);
	KGFP_EQ(GFP_DMA32, 0x4);
	KGFP_EQ(GFP_HIGHUSER, 0x100cc2);
	KGFP_EQ(GFP_HIGHUSER_MOVABLE, 0x100cca);
	KGFP_EQ(GFP_TRANSHUGE_LIGHT, 0x1c20ca);
	KGFP_EQ(GFP_TRANSHUGE, 0x1c24ca);
}

static void kgfp_translation(void)
{
	KGFP_EQ(uslub_compat_gfp(GFP_KERNEL), USLUB_GFP_KERNEL);
	KGFP_EQ(uslub_compat_gfp(GFP_KERNEL_ACCOUNT), USLUB_GFP_ACCOUNT);
	KGFP_EQ(uslub_compat_gfp(GFP_ATOMIC), USLUB_GFP_ATOMIC);
	KGFP_EQ(uslub_compat_gfp(GFP_NOWAIT), USLUB_GFP_NOWAIT | USLUB_GFP_NOWARN);
	KGFP_EQ(uslub_compat_gfp((gfp_t)0), USLUB_GFP_NOWAIT);
	KGFP_EQ(uslub_compat_gfp((gfp_t)(GFP_KERNEL | __GFP_ZERO | __GFP_NOFAIL)),
		USLUB_GFP_ZERO | USLUB_GFP_NOFAIL);
	KGFP_EQ(uslub_compat_gfp((gfp_t)(GFP_KERNEL | __GFP_COMP | GFP_ZONEMASK)),
		USLUB_GFP_KERNEL);
	KGFP_CHECK(gfpflags_allow_blocking(GFP_KERNEL));
	KGFP_CHECK(!gfpflags_allow_blocking(GFP_ATOMIC));
	KGFP_CHECK(gfpflags_allow_spinning(GFP_ATOMIC));
	KGFP_CHECK(gfpflags_allow_spinning(GFP_NOWAIT));
	KGFP_CHECK(!gfpflags_allow_spinning((gfp_t)0));
	KGFP_CHECK(!gfpflags_allow_spinning((gfp_t)__GFP_NOWARN));
	KGFP_CHECK(!gfpflags_allow_spinning((gfp_t)(__GFP_ZERO | __GFP_ACCOUNT)));
	KGFP_CHECK(!gfpflags_allow_spinning(GFP_TRANSHUGE_LIGHT));
}

static void kgfp_alloc(void)
{
	char *p = (char *)kmalloc(100, GFP_KERNEL);
	char *z = (char *)kzalloc(200, GFP_ATOMIC);

	KGFP_CHECK(p != NULL && z != NULL);
	if (z)
		for (int i = 0; i < 200; i++)
			KGFP_CHECK(z[i] == 0);
	kfree(p);
	kfree(z);
}

int main(void)
{
	kgfp_values();
	kgfp_translation();
	kgfp_alloc();
	if (kgfp_failures)
		return 1;
	printf(KGFP_NAME ": ok\n");
	return 0;
}
