/*
 * kasan.c — KASAN's role under AddressSanitizer: when the process runs
 * ASan's runtime (the program was built with -fsanitize=address), free
 * objects, slab padding and slab tails are poisoned with the runtime's
 * manual interface, and the bytes handed to a user are unpoisoned, so ASan
 * reports an access to a freed slab object or past the end of one (as
 * "use-after-poison": manual poisoning has its own shadow value). The
 * contract is in slub.h, above _uslub_kasan; docs/design.md, "ASan",
 * says what is caught.
 *
 * The library itself is usually built without ASan: the runtime's entry
 * points are weak references (base.h), resolved when the runtime is in
 * the process. Everything here runs only for caches with
 * FASTPATH_OFF_ASAN, which no cache has without the runtime.
 *
 * Shadow granules are 8 bytes; every object start and stride is a
 * multiple of 8 (geometry.c), so a slot is poisoned exactly, and an
 * unpoisoned prefix of any length leaves the bytes after it poisoned.
 */
#include "slub/slub.h"
#include <string.h>

bool _uslub_kasan;

void _uslub_kasan_init(void)
{
	_uslub_kasan = __asan_poison_memory_region && __asan_unpoison_memory_region &&
		       _uslub_option(USLUB_OPT_ASAN);
}

#ifdef USLUB_ASAN_BUILD
/* The uninstrumented metadata accessors of object.h (a library built
 * with ASan). noinline: a no_sanitize function is never inlined into an
 * instrumented one. */
__noinline __no_sanitize_address uintptr_t _uslub_meta_load(const void *p)
{
	return *(const volatile uintptr_t *)p;
}

__noinline __no_sanitize_address void _uslub_meta_store(void *p, uintptr_t v)
{
	*(volatile uintptr_t *)p = v;
}
#endif

static inline void poison(const void *p, size_t n)
{
	if (n)
		__asan_poison_memory_region(p, n);
}

/* For the layers above (kmalloc's ksize, krealloc): under ASan only. */
void _uslub_kasan_unpoison(const void *p, size_t n)
{
	if (n && _uslub_kasan)
		__asan_unpoison_memory_region(p, n);
}

void _uslub_kasan_poison(const void *p, size_t n)
{
	if (n && _uslub_kasan)
		__asan_poison_memory_region(p, n);
}

/* The slot of @obj: the object, its free pointer and free mark, its
 * padding; not a per-object extension in the padding (written by the
 * hooks while the object is free). */
static void poison_slot(const struct kmem_cache *s, char *obj)
{
	if (READ_ONCE(s->ext_placement) == USLUB_OBJ_EXT_PADDING) {
		size_t after = s->ext_offset + s->ext_size;
		poison(obj, s->ext_offset);
		poison(obj + after, s->size - after);
	} else {
		poison(obj, s->size);
	}
}

void _uslub_kasan_alloc(const struct kmem_cache *s, void *obj, size_t size, bool zero)
{
	if (!size || size > s->object_size)
		size = s->object_size;
	if (zero) {
		/* the whole object is zeroed, as without ASan (krealloc and
		 * ksize count on it), then the bytes after @size poisoned */
		__asan_unpoison_memory_region(obj, s->object_size);
		memset(obj, 0, s->object_size);
		poison((char *)obj + size, s->object_size - size);
	} else {
		__asan_unpoison_memory_region(obj, size);
	}
}

/*
 * A user frees @x (of @s; NULL: of its own cache), before the free
 * publishes it: poison its slot if its cache has the bit and @x is a live
 * object start (an invalid or double free is left to the free path, which
 * reports it; a double free must not poison an object another thread may
 * be taking). SLAB_TYPESAFE_BY_RCU caches, as KASAN: a freed object stays
 * readable (an RCU reader may still look at it), poisoned only when the
 * slab goes.
 */
void _uslub_kasan_slab_free(const struct kmem_cache *s, void *x)
{
	struct slab *slab = x ? virt_to_slab(x) : NULL;
	if (!slab)
		return;
	struct kmem_cache *cs = READ_ONCE(slab->slab_cache);
	if (!cs || (s && cs != s) || !cache_kasan(cs) || !obj_is_valid(cs, slab, x) ||
	    free_mark_test(cs, x, slab_free_mark(cs, slab)))
		return;
#ifdef USLUB_TYPESAFE_BY_RCU
	if (cs->flags & USLUB_TYPESAFE_BY_RCU)
		return;
#endif
	poison_slot(cs, x);
}

/* A new slab of @objects (private to its creator): its objects' slots and
 * the tail after them, but the extension array kept in the tail. */
void _uslub_kasan_new_slab(const struct kmem_cache *s, const struct slab *slab,
			   unsigned int objects)
{
	char *base = slab_obj_base(s, slab);
	char *end = (char *)slab_address(slab) + (PAGE_SIZE << slab_order(slab));
	char *used = base + (size_t)objects * s->size;
	int placement = READ_ONCE(s->ext_placement);

	if (placement == USLUB_OBJ_EXT_PADDING) {
		for (unsigned int i = 0; i < objects; i++)
			poison_slot(s, base + (size_t)i * s->size);
	} else {
		poison(base, (size_t)(used - base));
	}
	if (placement == USLUB_OBJ_EXT_LEFTOVER)
		used = (char *)ALIGN_UP((uintptr_t)used, sizeof(void *)) +
		       (size_t)objects * s->ext_size;
	if (used < end)
		poison(used, (size_t)(end - used));
}

/* The constructor runs on @obj: unpoisoned meanwhile. */
void _uslub_kasan_ctor(const struct kmem_cache *s, void *obj)
{
	__asan_unpoison_memory_region(obj, s->object_size);
	s->ctor(obj);
	poison_slot(s, obj);
}

/* @slab goes back to the page level, which reuses its pages for anything. */
void _uslub_kasan_discard_slab(const struct kmem_cache *s, const struct slab *slab)
{
	__asan_unpoison_memory_region(slab_address(slab), PAGE_SIZE << slab_order(slab));
}
