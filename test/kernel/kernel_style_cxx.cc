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
//   - the 7.x API: typed allocators (kmalloc_obj & co., with and without
//     gfp, a template using them), krealloc_node_align, kvrealloc,
//     kvmalloc_node_align, kmem_buckets, __free(kfree_sensitive),
//     gfpflags_allow_spinning, slab_is_available, prefill of 0;
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

struct blob {
	unsigned int n;
	unsigned char bytes[];
};

template <typename T>
T *typed_new(size_t n)
{
	T *p = kzalloc_objs(T, n);     // gfp left out: GFP_KERNEL
	return p;
}

static void test_api7()
{
	widget *w = kmalloc_obj(*w);
	widget *wa = kzalloc_objs(widget, 8, GFP_KERNEL);
	blob *b = kzalloc_flex(*b, bytes, 100);
	blob *vb = kvmalloc_flex(blob, bytes, 20000, GFP_KERNEL);
	CHECK(w && wa && b && vb);
	CHECK(ksize(w) >= sizeof(widget) && ksize(wa) >= 8 * sizeof(widget));
	CHECK(ksize(b) >= sizeof(blob) + 100 && ksize(vb) >= sizeof(blob) + 20000);
	CHECK(wa[7].magic == 0 && b->bytes[99] == 0);
	errno = 0;
	CHECK(kmalloc_objs(widget, SIZE_MAX / 4) == nullptr && errno == ENOMEM);
	double *d = typed_new<double>(5);
	CHECK(d && d[4] == 0.0);
	kfree(d);
	kfree(w);
	kfree(wa);
	kfree(b);
	kvfree(vb);

	auto *r = static_cast<char *>(kmalloc(40, GFP_KERNEL));
	CHECK(r);
	std::memset(r, 'r', 40);
	r = static_cast<char *>(krealloc_node_align(r, 300, 256, GFP_KERNEL, NUMA_NO_NODE));
	CHECK(r && reinterpret_cast<uintptr_t>(r) % 256 == 0 && r[39] == 'r');
	r = static_cast<char *>(kvrealloc(r, 3u << 20, GFP_KERNEL));
	CHECK(r && r[0] == 'r');
	kvfree(r);
	void *al = kvmalloc_node_align(1000, 1024, GFP_KERNEL, NUMA_NO_NODE);
	CHECK(al && reinterpret_cast<uintptr_t>(al) % 1024 == 0);
	kvfree_atomic(al);

	kmem_buckets *bk = kmem_buckets_create("cxx_buckets", 0, 0, 0, nullptr);
	CHECK(bk != nullptr);
	void *bo = kmem_buckets_alloc(bk, 500, GFP_KERNEL);
	struct uslub_slabinfo info;
	CHECK(bo && uslub_cache_slabinfo((*bk)[9], &info) == 0 && info.live_objs == 1);
	CHECK(std::strcmp(info.name, "cxx_buckets-512") == 0);
	kfree(bo);
	{
		char *secret __free(kfree_sensitive) = static_cast<char *>(kmalloc(32, GFP_KERNEL));
		CHECK(secret != nullptr);
	}
	CHECK(slab_is_available());
	CHECK(gfpflags_allow_spinning(GFP_NOWAIT) && !gfpflags_allow_spinning(0));
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
	CHECK(kmem_cache_prefill_sheaf(wc, GFP_KERNEL, 0) == nullptr);
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

	test_api7();

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
