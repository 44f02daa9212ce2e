/*
 * kernel_flex_counter: kmalloc_flex's __counted_by branch, on any compiler.
 *
 * With __builtin_counted_by_ref (GCC 15, clang 20) <uslub/slab.h> sets a
 * flexible array's counter to COUNT and refuses a COUNT its type cannot
 * hold; gcc 12 and clang 14 (this project's CI) lack the builtin, so the
 * branch would go untested. Here the builtin is stood in for by a macro
 * that names one counter variable for every struct (a counter per struct
 * is the compiler's business, not the header's), or none: the header's
 * logic (pick the counter or nothing, check the fit, store) runs as it
 * would with the real builtin. kernel_flex_nocounter.c does the same
 * with the builtin's answer for a struct without a counter, (void *)0.
 */
#include <stdio.h>
#include <stdlib.h>

static signed char counter_s8;      /* the stand-in counter */
#define __builtin_counted_by_ref(fam) (&counter_s8)
#define USLUB_COMPAT_HAVE_COUNTED_BY_REF 1
#include <uslub/slab.h>

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "kernel_flex_counter: FAIL line %d: %s\n", \
				__LINE__, #cond);                              \
			return 1;                                              \
		}                                                              \
	} while (0)

int flex_nocounter(void);    /* kernel_flex_nocounter.c */

struct msg {
	signed char len;
	char text[];
};

int main(void)
{
	struct msg *m = kmalloc_flex(*m, text, 100);

	CHECK(m);
	CHECK(counter_s8 == 100);            /* the counter was set */
	CHECK(ksize(m) >= sizeof(*m) + 100);
	kfree(m);
	counter_s8 = 7;
	errno = 0;
	m = kzalloc_flex(struct msg, text, 200, GFP_KERNEL);   /* 200 > SCHAR_MAX */
	CHECK(m == NULL && errno == ENOMEM && counter_s8 == 7);
	m = kvmalloc_flex(struct msg, text, (size_t)-1);       /* negative as s8 */
	CHECK(m == NULL && counter_s8 == 7);
	m = kzalloc_flex(struct msg, text, 0);
	CHECK(m && counter_s8 == 0);
	kfree(m);
	CHECK(flex_nocounter() == 0);
	printf("kernel_flex_counter: ok\n");
	return 0;
}
