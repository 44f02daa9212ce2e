/*
 * Stand-in for the 6.12 harness's tools/include/linux/slab.h (this test's
 * own text): the declarations uslub's harness header finds with
 * #include_next, in the 6.12 form (kmem_cache_create a function of five
 * arguments, kmem_cache_alloc_bulk returning the count).
 */
#ifndef KTEST_STANDIN_SLAB_H
#define KTEST_STANDIN_SLAB_H
#include <linux/types.h>
#include <linux/gfp.h>

#define SLAB_PANIC 2
#define SLAB_RECLAIM_ACCOUNT 0x00020000UL

#define kzalloc_node(size, flags, node) kmalloc(size, flags)

struct kmem_cache;
struct list_lru;

void *kmalloc(size_t size, gfp_t gfp);
void kfree(void *p);
bool slab_is_available(void);

enum slab_state { DOWN, PARTIAL, UP, FULL };

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
struct kmem_cache *kmem_cache_create(const char *name, unsigned int size, unsigned int align,
				     unsigned int flags, void (*ctor)(void *));
void kmem_cache_free_bulk(struct kmem_cache *cachep, size_t size, void **list);
int kmem_cache_alloc_bulk(struct kmem_cache *cachep, gfp_t gfp, size_t size, void **list);
#endif
