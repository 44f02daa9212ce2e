/*
 * kernel_flex_nocounter: the other half of kernel_flex_counter. The stand-in
 * for __builtin_counted_by_ref answers as the builtin does for a flexible
 * array without __counted_by, (void *)0: kmalloc_flex then sets nothing and
 * takes any count that the size arithmetic allows.
 */
#include <stdio.h>

#define __builtin_counted_by_ref(fam) ((void *)0)
#define USLUB_COMPAT_HAVE_COUNTED_BY_REF 1
#include <uslub/slab.h>

int flex_nocounter(void);

struct rec {
	unsigned char len;
	long vals[];
};

int flex_nocounter(void)
{
	struct rec *r = kzalloc_flex(*r, vals, 1000);   /* 1000 > UCHAR_MAX */

	if (!r || r->len != 0 || ksize(r) < sizeof(*r) + 1000 * sizeof(long)) {
		fprintf(stderr, "kernel_flex_nocounter: FAIL: %p\n", (void *)r);
		return 1;
	}
	kfree(r);
	errno = 0;
	if (kmalloc_flex(struct rec, vals, SIZE_MAX / 4) != NULL || errno != ENOMEM) {
		fprintf(stderr, "kernel_flex_nocounter: FAIL: overflow allocated\n");
		return 1;
	}
	return 0;
}
