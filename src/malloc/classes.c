/*
 * malloc's size classes (see classes.h): their caches, created once, and
 * the two lookup tables.
 */
#define _GNU_SOURCE
#include "malloc/classes.h"
#include <pthread.h>
#include <stdio.h>

struct kmem_cache *_uslub_malloc_direct[MALLOC_DIRECT_MAX / 8 + 1];
struct kmem_cache *_uslub_malloc_mid[MALLOC_MID_CLASSES];

static struct uslub_once classes_once = USLUB_ONCE_INIT;   /* fork-safe (base/lifecycle.h) */
static bool classes_ok;

/* Class i (0 .. MALLOC_CLASSES-1) in bytes: 8, 16 .. 128 by 16, then four
 * per power of two. */
static size_t class_size(unsigned int i)
{
	if (i == 0)
		return 8;
	if (i <= 8)
		return 16u * i;
	return malloc_quarter_size(i - 9);
}
static_assert(MALLOC_SMALL_CLASSES == 9 + 3 * 4, "classes up to 1 KiB: 8, 16..128, 3 doublings");
/* malloc_mid_index() counts the mid classes from 1280 = quarter class 12 */
static_assert(MALLOC_SMALL_CLASSES - 9 == 12, "the mid table starts at quarter class 12");

/*
 * Per-CPU sheaf capacity of a class. Up to 4 KiB the kernel's default
 * (calculate_sheaf_capacity, rounded up to fill the sheaf's allocation:
 * 123 objects below 256 B, 27 to 4 KiB). Measured on the B8 suite
 * (USLUB_REPORT counters, scale 0.3): prodcons moves whole sheaves through
 * the barn with these (BARN_PUT_FAIL 0, SHEAF_FLUSH only at thread exit,
 * in every class), and phases' flushes are its phase-1 mass free, which
 * no capacity or barn limit absorbs (200 MiB freed at once; they are what
 * returns its memory). Above 4 KiB a sheaf caps what one thread keeps
 * cached: 11 objects (two sheaves: at most 352 KiB at 16 KiB), and 3
 * above 16 KiB (at most 384 KiB at 64 KiB).
 */
static unsigned int class_capacity(size_t size)
{
	if (size > (16u << 10))
		return 3;
	if (size > 4096)
		return 11;
	return sheaf_default_capacity(size);
}

/*
 * Full sheaves a class's barn keeps: 10 (MAX_FULL_SHEAVES) while that is
 * at most 256 KiB of objects, else as many as fit 256 KiB (at least one):
 * a barn holds what threads freed beyond their own two sheaves, and ten
 * sheaves of 64 KiB objects would be 1.9 MiB no other class can use. (On
 * the B8 suite it changed no peak RSS: the workloads never filled a
 * mid-size barn; it bounds the worst case.)
 */
static unsigned int class_barn_limit(size_t size, unsigned int capacity)
{
	size_t sheaf = (size_t)MAX(capacity, 1u) * size;
	return (unsigned int)MAX((size_t)1, MIN((size_t)MAX_FULL_SHEAVES, (256u << 10) / sheaf));
}

static void class_name(char *buf, size_t len, size_t size)
{
	if (size >= 1024 && size % 1024 == 0)
		snprintf(buf, len, "malloc-%zuk", size >> 10);
	else
		snprintf(buf, len, "malloc-%zu", size);
}

static void classes_init_once(void)
{
	struct kmem_cache *caches[MALLOC_CLASSES];
	bool fatal = _uslub_kmalloc_fatal_errors();
	bool sheaves = _uslub_option(USLUB_OPT_KMALLOC_SHEAVES) != 0;

	_uslub_tls.init_depth++;
	for (unsigned int i = 0; i < MALLOC_CLASSES; i++) {
		size_t size = class_size(i);
		char name[32];
		struct uslub_cache_args args = {
			.align = size == 8 ? 8 : 16,
			.sheaf_capacity = sheaves ? class_capacity(size) : 0,
		};
		unsigned int flags = (sheaves ? 0 : USLUB_CPU_SLAB) |
				     (size > 4096 ? SLAB_HIGH_ORDER : 0);
		class_name(name, sizeof(name), size);
		caches[i] = _uslub_cache_create(name, size, &args, flags);
		if (!caches[i]) {
			_uslub_report("uslub: cannot create the malloc caches; malloc uses "
				      "the kmalloc caches\n");
			goto out;
		}
		if (fatal)
			caches[i]->flags |= SLAB_ABORT_ON_ERROR;
		cache_set_rec_thread(caches[i]);
		_uslub_sheaf_set_barn_limit(caches[i], class_barn_limit(size, caches[i]->sheaf_capacity));
	}
	/* publish: the mid table, then the direct one (malloc tests the
	 * direct table's last entry to know both are filled) */
	for (unsigned int i = 0; i < MALLOC_MID_CLASSES; i++)
		__atomic_store_n(&_uslub_malloc_mid[i], caches[MALLOC_SMALL_CLASSES + i],
				 __ATOMIC_RELEASE);
	unsigned int c = 0;
	for (unsigned int e = 0; e <= MALLOC_DIRECT_MAX / 8; e++) {
		size_t size = e ? 8 * e : 1;     /* the largest size of entry e */
		while (class_size(c) < size)
			c++;
		__atomic_store_n(&_uslub_malloc_direct[e], caches[c], __ATOMIC_RELEASE);
	}
	classes_ok = true;
out:
	_uslub_tls.init_depth--;
}

bool _uslub_malloc_classes_init(void)
{
	_uslub_once(&classes_once, classes_init_once);
	return classes_ok;
}
