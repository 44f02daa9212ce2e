/*
 * The internal bucket caches: one family of power-of-two caches,
 * "bucket-64" .. "bucket-2M", for the structs kept out of line (sheaves
 * and barns of the sheaf layer, separate extension arrays of obj_ext.c),
 * as the kernel takes both from kmalloc. Each is created on first use
 * (_uslub_once: a fork child of a thread caught mid-creation starts
 * over), so only the sizes in use exist. The buckets are internal caches (slub.h): no sheaves, no
 * extensions, used below the cache API.
 */
#include "slub/slub.h"
#include <string.h>

#define BUCKET_MIN_SHIFT 6
#define BUCKET_MAX_SHIFT 21
#define NR_BUCKETS (BUCKET_MAX_SHIFT - BUCKET_MIN_SHIFT + 1)
static_assert(NR_BUCKETS == 16, "one once per bucket");
static_assert((1ul << BUCKET_MAX_SHIFT) == USLUB_BUCKET_MAX, "the largest bucket");

static const char *const bucket_names[NR_BUCKETS] = {
	"bucket-64", "bucket-128", "bucket-256", "bucket-512", "bucket-1k", "bucket-2k",
	"bucket-4k", "bucket-8k", "bucket-16k", "bucket-32k", "bucket-64k", "bucket-128k",
	"bucket-256k", "bucket-512k", "bucket-1M", "bucket-2M",
};
static struct kmem_cache *buckets[NR_BUCKETS];

static void bucket_create(int i)
{
	buckets[i] = _uslub_internal_cache_create(bucket_names[i], 1ul << (i + BUCKET_MIN_SHIFT));
}

#define BUCKET_ONCE(i) static void bucket_create_##i(void) { bucket_create(i); }
BUCKET_ONCE(0) BUCKET_ONCE(1) BUCKET_ONCE(2) BUCKET_ONCE(3) BUCKET_ONCE(4) BUCKET_ONCE(5)
BUCKET_ONCE(6) BUCKET_ONCE(7) BUCKET_ONCE(8) BUCKET_ONCE(9) BUCKET_ONCE(10) BUCKET_ONCE(11)
BUCKET_ONCE(12) BUCKET_ONCE(13) BUCKET_ONCE(14) BUCKET_ONCE(15)
#undef BUCKET_ONCE
static void (*const bucket_create_fn[NR_BUCKETS])(void) = {
	bucket_create_0, bucket_create_1, bucket_create_2, bucket_create_3, bucket_create_4,
	bucket_create_5, bucket_create_6, bucket_create_7, bucket_create_8, bucket_create_9,
	bucket_create_10, bucket_create_11, bucket_create_12, bucket_create_13, bucket_create_14,
	bucket_create_15,
};
static struct uslub_once bucket_once[NR_BUCKETS];   /* USLUB_ONCE_INIT: zero */

static unsigned int bucket_index(size_t bytes)
{
	unsigned int shift = bytes <= (1ul << BUCKET_MIN_SHIFT) ? BUCKET_MIN_SHIFT
								 : fls_u(bytes - 1);
	return shift - BUCKET_MIN_SHIFT;
}

struct kmem_cache *_uslub_bucket_for(size_t bytes)
{
	if (bytes > USLUB_BUCKET_MAX)
		return NULL;
	unsigned int i = bucket_index(bytes);
	_uslub_once(&bucket_once[i], bucket_create_fn[i]);
	return buckets[i];
}

void *_uslub_bucket_alloc(size_t bytes, uslub_gfp_t gfp)
{
	struct kmem_cache *b = _uslub_bucket_for(bytes);
	return b ? _uslub_internal_alloc(b, gfp | USLUB_GFP_NOWARN) : NULL;
}

void _uslub_bucket_free(void *x, size_t bytes)
{
	_uslub_internal_free(buckets[bucket_index(bytes)], x, true);
}

/* Any context: thread_lock may be held and the caller may have no cpu
 * area, so this never sets one up (a slot on the stack takes the free and
 * is folded into the cache at once). */
void _uslub_bucket_free_locked(void *x, size_t bytes)
{
	_uslub_internal_free(buckets[bucket_index(bytes)], x, false);
}
