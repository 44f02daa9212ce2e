/*
 * Stand-in for the 7.x harness's tools/include/linux/slab.h (6.18 on;
 * this test's own text): the declarations uslub's harness header finds
 * with #include_next, in the 7.x form -- flag bits of the tree's own
 * values, struct kmem_cache_args with sheaf_capacity, kmem_cache_create a
 * generic selection over the argument forms, struct slab_sheaf with an
 * inline size reader of its own layout, the prefilled-sheaf calls, and
 * kmem_cache_alloc_bulk returning bool.
 */
#ifndef KTEST_STANDIN_SLAB_H
#define KTEST_STANDIN_SLAB_H
#include <linux/types.h>
#include <linux/gfp.h>
#include <stdbool.h>

#define SLAB_RECLAIM_ACCOUNT 0x00020000UL
#define SLAB_HWCACHE_ALIGN (1U << 1)
#define SLAB_PANIC (1U << 2)
#define SLAB_TYPESAFE_BY_RCU (1U << 3)
#define SLAB_ACCOUNT 0U   /* as a tree without CONFIG_MEMCG has it */

#define kzalloc_node(size, flags, node) kmalloc(size, flags)

struct kmem_cache;
struct list_lru;

void *kmalloc(size_t size, gfp_t gfp);
void kfree(void *p);
void *kmalloc_array(size_t n, size_t size, gfp_t gfp);
bool slab_is_available(void);

enum slab_state { DOWN, PARTIAL, UP, FULL };

struct kmem_cache_args {
	unsigned int align;
	unsigned int sheaf_capacity;
	unsigned int useroffset;
	unsigned int usersize;
	unsigned int freeptr_offset;
	bool use_freeptr_offset;
	void (*ctor)(void *);
};

/* a layout of the tree's own, which uslub's sheaves do not share */
struct slab_sheaf {
	unsigned long list[2];
	struct kmem_cache *cache;
	unsigned int size;
	int node;
	void *objects[];
};

static inline void *kzalloc(size_t size, gfp_t gfp)
{
	return kmalloc(size, gfp | __GFP_ZERO);
}

void *kmem_cache_alloc_lru(struct kmem_cache *cachep, struct list_lru *lru, int flags);
static inline void *kmem_cache_alloc(struct kmem_cache *cachep, int flags)
{
	return kmem_cache_alloc_lru(cachep, NULL, flags);
}
void kmem_cache_free(struct kmem_cache *cachep, void *objp);

struct kmem_cache *__kmem_cache_create_args(const char *name, unsigned int size,
					    struct kmem_cache_args *args, unsigned int flags);
static inline struct kmem_cache *__kmem_cache_default_args(const char *name, unsigned int size,
							   struct kmem_cache_args *args,
							   unsigned int flags)
{
	struct kmem_cache_args none = { 0 };
	(void)args;
	return __kmem_cache_create_args(name, size, &none, flags);
}
static inline struct kmem_cache *__kmem_cache_create(const char *name, unsigned int size,
						     unsigned int align, unsigned int flags,
						     void (*ctor)(void *))
{
	struct kmem_cache_args a = { .align = align, .ctor = ctor };
	return __kmem_cache_create_args(name, size, &a, flags);
}
#define kmem_cache_create(name, size, args, ...)                              \
	_Generic((args), struct kmem_cache_args *: __kmem_cache_create_args,  \
		 void *: __kmem_cache_default_args,                           \
		 default: __kmem_cache_create)(name, size, args, __VA_ARGS__)

void kmem_cache_free_bulk(struct kmem_cache *cachep, size_t size, void **list);
bool kmem_cache_alloc_bulk(struct kmem_cache *cachep, gfp_t gfp, size_t size, void **list);

struct slab_sheaf *kmem_cache_prefill_sheaf(struct kmem_cache *s, gfp_t gfp, unsigned int size);
void *kmem_cache_alloc_from_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf *sheaf);
void kmem_cache_return_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf *sheaf);
int kmem_cache_refill_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf **sheafp,
			    unsigned int size);
static inline unsigned int kmem_cache_sheaf_size(struct slab_sheaf *sheaf)
{
	return sheaf->size;
}
#endif
