// kernel_style_cxx: <uslub/slab.h> from C++ (g++ -std=c++17). The header
// must compile here (no _Generic: kmem_cache_create's two forms are
// overloads; compound literals and designated initializers are avoided),
// and:
//   - kmem_cache_create: args form (pointer, NULL, nullptr), legacy form,
//     KMEM_CACHE; SLAB_TYPESAFE_BY_RCU fails with EINVAL (no libuslub-rcu);
//   - kmem_cache_alloc / zalloc / free, a ctor, bulk, a prefilled sheaf;
//   - kmalloc / kzalloc / kcalloc (and its overflow) / krealloc / kstrdup /
//     kfree, kmalloc(0) == ZERO_SIZE_PTR, ksize;
//   - the allocation macros in an inline function and a template, and
//     __free(kfree) in C++;
//   - shrink and destroy leave no error (uslub_error_count() == 0).
#include <uslub/slab.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			std::fprintf(stderr, "kernel_style_cxx: FAIL %s:%d: %s\n",     \
				     __FILE__, __LINE__, #cond);                 \
			std::exit(1);                                            \
		}                                                                \
	} while (0)

struct widget {
	unsigned int magic;
	unsigned int users;
	double weight;
	char tag[20];
};

static unsigned int widget_ctors;

static void widget_ctor(void *p)
{
	static_cast<widget *>(p)->magic = 0x77696467u;
	static_cast<widget *>(p)->users = 0;
	widget_ctors++;
}

inline widget *widget_get(struct kmem_cache *s, gfp_t gfp)
{
	return static_cast<widget *>(kmem_cache_alloc(s, gfp));
}

template <typename T>
T *new_array(size_t n)
{
	return static_cast<T *>(kcalloc(n, sizeof(T), GFP_KERNEL));
}

int main()
{
	// The args form (C++: an overload, the struct set field by field).
	struct kmem_cache_args args = {};
	args.align = 32;
	args.ctor = widget_ctor;
	args.sheaf_capacity = 16;
	struct kmem_cache *wc = kmem_cache_create("cxx_widget", sizeof(widget), &args,
						  SLAB_HWCACHE_ALIGN | SLAB_RECLAIM_ACCOUNT);
	CHECK(wc != nullptr);
	struct kmem_cache *nc = kmem_cache_create("cxx_null", 48, NULL, 0);
	struct kmem_cache *np = kmem_cache_create("cxx_nullptr", 48, nullptr, SLAB_PANIC);
	struct kmem_cache *lc = kmem_cache_create("cxx_legacy", 100, 8, SLAB_NO_MERGE, NULL);
	struct kmem_cache *kc = KMEM_CACHE(widget, 0);
	CHECK(nc && np && lc && kc);
	CHECK(std::strcmp(uslub_cache_name(kc), "widget") == 0);
	CHECK(kmem_cache_size(lc) == 100);
	errno = 0;
	CHECK(kmem_cache_create("cxx_rcu", 64, nullptr, SLAB_TYPESAFE_BY_RCU) == nullptr);
	CHECK(errno == EINVAL);

	// Objects, constructed.
	widget *w = widget_get(wc, GFP_KERNEL);
	widget *w2 = widget_get(wc, GFP_ATOMIC);
	CHECK(w && w2 && w != w2);
	CHECK(w->magic == 0x77696467u && w2->magic == 0x77696467u && widget_ctors >= 2);
	CHECK(reinterpret_cast<uintptr_t>(w) % 32 == 0);
	kmem_cache_free(wc, w);
	kfree(w2);
	auto *z = static_cast<unsigned char *>(kmem_cache_zalloc(nc, GFP_KERNEL));
	CHECK(z != nullptr);
	for (int i = 0; i < 48; i++)
		CHECK(z[i] == 0);
	kmem_cache_free(nc, z);

	// Bulk.
	void *objs[20];
	CHECK(kmem_cache_alloc_bulk(lc, GFP_KERNEL, 20, objs) == 20);
	kmem_cache_free_bulk(lc, 20, objs);

	// A prefilled sheaf, allocated from without blocking.
	struct slab_sheaf *sheaf = kmem_cache_prefill_sheaf(wc, GFP_KERNEL, 4);
	CHECK(sheaf && kmem_cache_sheaf_size(sheaf) >= 4);
	widget *sw[4];
	for (int i = 0; i < 4; i++) {
		sw[i] = static_cast<widget *>(kmem_cache_alloc_from_sheaf(wc, GFP_NOWAIT, sheaf));
		CHECK(sw[i] && sw[i]->magic == 0x77696467u);
	}
	CHECK(kmem_cache_refill_sheaf(wc, GFP_KERNEL, &sheaf, 2) == 0);
	CHECK(kmem_cache_sheaf_size(sheaf) >= 2);
	kmem_cache_return_sheaf(wc, GFP_KERNEL, sheaf);
	for (int i = 0; i < 4; i++)
		kmem_cache_free(wc, sw[i]);

	// kmalloc family.
	CHECK(kmalloc(0, GFP_KERNEL) == ZERO_SIZE_PTR);
	auto *buf = static_cast<char *>(kmalloc(100, GFP_KERNEL));
	CHECK(buf && ksize(buf) >= 100);
	std::memset(buf, 'x', 100);
	auto *buf2 = static_cast<char *>(krealloc(buf, 5000, GFP_KERNEL));
	CHECK(buf2 && buf2[0] == 'x' && buf2[99] == 'x' && ksize(buf2) >= 5000);
	kfree(buf2);
	auto *zz = static_cast<int *>(kzalloc(64 * sizeof(int), GFP_KERNEL));
	CHECK(zz != nullptr);
	for (int i = 0; i < 64; i++)
		CHECK(zz[i] == 0);
	kfree_sensitive(zz);
	long *la = new_array<long>(10);
	double *da = new_array<double>(10);
	CHECK(la && da && la[9] == 0 && da[9] == 0.0);
	kfree(la);
	kvfree(da);
	CHECK(new_array<long>(SIZE_MAX / 4) == nullptr);
	char *s = kstrdup("c++", GFP_KERNEL);
	CHECK(s && std::strcmp(s, "c++") == 0);
	kfree(s);
	{
		char *t __free(kfree) = static_cast<char *>(kmalloc(16, GFP_KERNEL));
		CHECK(t != nullptr);
	}

	// Shrink, destroy; nothing reported.
	CHECK(kmem_cache_shrink(wc) == 0);
	kmem_cache_destroy(wc);
	kmem_cache_destroy(nc);
	kmem_cache_destroy(np);
	kmem_cache_destroy(lc);
	kmem_cache_destroy(kc);
	CHECK(uslub_error_count() == 0);
	std::printf("kernel_style_cxx: ok\n");
	return 0;
}
