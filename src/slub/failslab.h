/*
 * failslab.c's settings and their parser, for the unit tests.
 */
#ifndef USLUB_FAILSLAB_H
#define USLUB_FAILSLAB_H
#include "base/base.h"

struct failslab {
	long probability;             /* percent, 0..100                        */
	unsigned long interval;       /* every n-th eligible call (1: each)     */
	long times;                   /* failures left; -1 unlimited            */
	long space;                   /* bytes that pass before any failure     */
	uint64_t seed;
	int ignore_gfp_wait;
	int cache_filter;
	int verbose;
};

/* Parse a USLUB_FAILSLAB / uslub_failslab_configure() spec into @a: true,
 * or false with the reason in @why and @a untouched. The spec is rejected
 * as a whole: an empty field, a field without '=', an unknown key, an empty
 * value, anything but decimal digits (and -1 for times), a value out of
 * its key's range. No allocation, no stdio. */
__internal bool _uslub_failslab_parse(const char *spec, struct failslab *a, char *why,
				      size_t whylen);
#endif
