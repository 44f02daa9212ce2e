/*
 * Separate extension arrays (seed 003's fallback, and on-demand arrays):
 * one zeroed array of slabobj_ext per slab, from power-of-two bucket caches
 * "slabobj_ext-64" .. "slabobj_ext-512K" of this layer's own, created on
 * first use. The buckets never have extensions themselves.
 */
#include "ext/ext.h"
#include <string.h>

#define EXT_BUCKET_MIN_SHIFT 6                 /* 64 B: 4 extensions       */
#define EXT_BUCKET_MAX_SHIFT 19                /* 512 KiB: 32768 of them   */
#define EXT_BUCKETS (EXT_BUCKET_MAX_SHIFT - EXT_BUCKET_MIN_SHIFT + 1)
static_assert((size_t)MAX_OBJS_PER_SLAB * sizeof(struct slabobj_ext) <=
	      (1ul << EXT_BUCKET_MAX_SHIFT), "the largest slab's array fits a bucket");

static struct kmem_cache *buckets[EXT_BUCKETS];
static pthread_once_t bucket_once[EXT_BUCKETS] = {
	PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
	PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
	PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
	PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
};

static void bucket_create(int i)
{
	char name[32];
	size_t size = 1ul << (i + EXT_BUCKET_MIN_SHIFT);
	if (size >= 1024)
		snprintf(name, sizeof(name), "slabobj_ext-%zuK", size >> 10);
	else
		snprintf(name, sizeof(name), "slabobj_ext-%zu", size);
	buckets[i] = _uslub_cache_create(name, size, NULL,
					 SLAB_NO_SHEAVES | SLAB_NO_OBJ_EXT | USLUB_NO_MERGE);
}

#define BUCKET_ONCE(i) static void bucket_create_##i(void) { bucket_create(i); }
BUCKET_ONCE(0) BUCKET_ONCE(1) BUCKET_ONCE(2) BUCKET_ONCE(3) BUCKET_ONCE(4) BUCKET_ONCE(5)
BUCKET_ONCE(6) BUCKET_ONCE(7) BUCKET_ONCE(8) BUCKET_ONCE(9) BUCKET_ONCE(10) BUCKET_ONCE(11)
BUCKET_ONCE(12) BUCKET_ONCE(13)
#undef BUCKET_ONCE
static void (*const bucket_fns[EXT_BUCKETS])(void) = {
	bucket_create_0, bucket_create_1, bucket_create_2, bucket_create_3, bucket_create_4,
	bucket_create_5, bucket_create_6, bucket_create_7, bucket_create_8, bucket_create_9,
	bucket_create_10, bucket_create_11, bucket_create_12, bucket_create_13,
};

static int bucket_index(unsigned int objects)
{
	size_t bytes = (size_t)objects * sizeof(struct slabobj_ext);
	int i = 0;
	while (i < EXT_BUCKETS - 1 && (1ul << (i + EXT_BUCKET_MIN_SHIFT)) < bytes)
		i++;
	return i;
}

/* A zeroed array for @objects extensions (as an unsigned long, for
 * slab->obj_exts), or 0 if out of memory. */
unsigned long _uslub_obj_exts_alloc(struct kmem_cache *s, unsigned int objects)
{
	(void)s;
	int i = bucket_index(objects);
	pthread_once(&bucket_once[i], bucket_fns[i]);
	if (!buckets[i])
		return 0;
	void *p = uslub_cache_alloc_noprof(buckets[i], USLUB_GFP_NOWARN);
	if (p)
		memset(p, 0, (size_t)objects * sizeof(struct slabobj_ext));
	return (unsigned long)p;
}

void _uslub_obj_exts_free(struct kmem_cache *s, unsigned long obj_exts, unsigned int objects)
{
	(void)s;
	/* may run with thread_lock held (destroy, a fork child's flush) */
	_uslub_free_noinit(buckets[bucket_index(objects)], (void *)obj_exts);
}
