/*
 * The malloc family on kmalloc, for LD_PRELOAD (`uslub run`) and for
 * linking (-luslub-malloc): malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, malloc_trim, cfree, glibc's __libc_* names, and C++
 * operator new/delete in every variant.
 *
 * malloc(n) takes malloc's own size class (classes.h; n = 0 the smallest,
 * a unique pointer, as glibc gives), above 64 KiB kmalloc's page runs and
 * mappings; free(p) frees any uslub object (as kfree) and aborts with a
 * report for a pointer uslub did not allocate, an interior pointer or a
 * detected double free (USLUB_MALLOC_ABORT=0: report and leave it alone).
 * Every path sets errno as C and POSIX say; free preserves it.
 *
 * Hard cases (notes/percpu.md §3):
 *   - Before main, the first call initializes (lazily, in any entry); a
 *     constructor of the core is only a backstop.
 *   - A malloc from inside uslub's own initialization (libc may allocate
 *     in pthread_atfork and friends) is served from a static boot arena:
 *     _uslub_tls.init_depth tells; its blocks are never reused, and free
 *     ignores them.
 *   - No dlsym, no stdio, no getenv while initializing: options come from
 *     environ (base/options.c); nothing here calls the libc allocator.
 *   - fork: the lifecycle table's atfork handlers (base/lifecycle.h) take
 *     every lock, the core's and kmalloc's, in rank order.
 *   - After a thread's cpu area is torn down (glibc frees TLS after the
 *     key destructors), the core serves it from the slow paths.
 */
#define _GNU_SOURCE
#include <sys/stat.h>            /* first: slub.h defines a stat() macro */
#include "malloc/classes.h"
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool fatal(void)
{
	return _uslub_option(USLUB_OPT_MALLOC_ABORT) != 0;
}

/* The allocation tag of the malloc family, when profiling is on: the
 * program's call site, a caller tag (ext/caller_tag.c) for the entry
 * point's return address (USLUB_CALLER() where the macro is expanded: the
 * public entry's caller), so allocinfo names the program's sites, not
 * malloc's own. Exact mode looks it up at once (every allocation records
 * it); sampled mode stores the address for the rare sample to resolve
 * (USLUB_CALLER_DEFERRED, ext.h). Off, nothing is looked up or stored
 * (profiling is fixed at startup; a tag left in the slot is never read
 * then). */
static __always_inline struct uslub_alloc_tag *malloc_tag(uintptr_t caller)
{
	if (_uslub_profiling)
		return _uslub_caller_tag(caller);
	return (struct uslub_alloc_tag *)(caller | USLUB_CALLER_DEFERRED);
}

#define MALLOC_TAG() do {                                                       \
	if (unlikely(_uslub_profiling | _uslub_sampling))                      \
		uslub_alloc_tag_cur = malloc_tag(USLUB_CALLER());               \
} while (0)

/* This library's kmalloc caches make bad frees fatal (see kmalloc.h). */
bool _uslub_kmalloc_fatal_errors(void)
{
	return fatal();
}

/* ------------------------------------------------------------------------
 * The boot arena: allocations made while this thread initializes uslub.
 * ---------------------------------------------------------------------- */
#define BOOT_ARENA_SIZE (256u << 10)
static char boot_arena[BOOT_ARENA_SIZE] __attribute__((aligned(4096)));
static size_t boot_used;                 /* bump offset, CAS */

static void *boot_alloc(size_t size, size_t align)
{
	align = MAX(align, 16);
	size_t off = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
	do {
		start = ALIGN_UP(off + 16, align);
		if (align > BOOT_ARENA_SIZE || size > BOOT_ARENA_SIZE ||
		    start + size > BOOT_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
		end = start + size;
	} while (!__atomic_compare_exchange_n(&boot_used, &off, end, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	((size_t *)(boot_arena + start))[-1] = size;
	return boot_arena + start;               /* .bss, never reused: zeroed */
}

static bool in_boot_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_ARENA_SIZE;
}

static size_t boot_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

/* ------------------------------------------------------------------------
 * malloc and free
 * ---------------------------------------------------------------------- */

/* Everything but a class hit: the boot arena while this thread creates
 * the kmalloc caches, the caches' creation, aligned requests (kmalloc's
 * naturally aligned classes), sizes above 64 KiB (kmalloc's page runs and
 * mappings), gfp bits. */
static __noinline void *malloc_slow(size_t size, size_t align, uslub_gfp_t gfp)
{
	if (unlikely(_uslub_tls.init_depth) &&
	    !__atomic_load_n(&_uslub_kmalloc_caches[KMALLOC_SHIFT_HIGH], __ATOMIC_ACQUIRE)) {
		uslub_alloc_tag_cur = NULL;     /* boot blocks are never tagged */
		return boot_alloc(size, align);
	}
	if (!size)
		size = 1;
	if (unlikely(!__atomic_load_n(&_uslub_malloc_direct[MALLOC_DIRECT_MAX / 8], __ATOMIC_ACQUIRE)) &&
	    !_uslub_tls.init_depth && _uslub_kmalloc_init())
		_uslub_malloc_classes_init();
	struct kmem_cache *s = align <= 16 ? malloc_cache(align > 8 ? MAX(size, 16) : size) : NULL;
	if (s)
		return slab_alloc_node(s, gfp, USLUB_NUMA_NO_NODE, size);
	return _uslub_kmalloc_slow(size, align, gfp, USLUB_NUMA_NO_NODE);
}

/* One class hit: a table lookup and the cache's fast path (the caller
 * has set the allocation tag). */
static __always_inline void *malloc_inline(size_t size)
{
	struct kmem_cache *s = malloc_cache(size);
	if (likely(s))
		return slab_alloc_node(s, 0, USLUB_NUMA_NO_NODE, size);
	return malloc_slow(size, 1, 0);
}

/* A class miss (or no class) of the entry point whose caller is @caller:
 * its tag (profiling), then the cache's miss path, or malloc_slow(). Not
 * inlined: the entry's hit path keeps no frame, its miss is a tail call
 * (@size first: it stays in malloc's argument register). */
static __noinline void *malloc_miss(size_t size, struct kmem_cache *s, uintptr_t caller)
{
	if (unlikely(_uslub_profiling | _uslub_sampling))
		uslub_alloc_tag_cur = malloc_tag(caller);
	if (likely(s))
		return _uslub_slab_alloc_miss(s, 0, USLUB_NUMA_NO_NODE, size, caller);
	return malloc_slow(size, 1, 0);
}

/* Per-CPU mode's pop missed or fired the sampling countdown (@obj: the
 * object it took, to be sampled with the caller's tag). */
static __noinline void *malloc_pcpu_miss(size_t size, struct kmem_cache *s, uintptr_t caller,
					 void *obj)
{
	if (obj) {
		uslub_alloc_tag_cur = malloc_tag(caller);
		return _uslub_sample_popped(s, this_cpu(s), obj);
	}
	return malloc_miss(size, s, caller);
}

/* Per-CPU mode (the fast slot @c's main is PCPU_STANDIN): the pop from
 * the id's sheaf (cache.h alloc_from_pcpu()), a leaf without a frame on
 * its hit; the rest in malloc_pcpu_miss(), with the entry point's
 * @caller (calloc and realloc call this one before their own work: not
 * always a tail call). */
static __noinline void *malloc_pcpu(size_t size, struct kmem_cache *s,
				    struct kmem_cache_cpu *c, uintptr_t caller)
{
	bool fired = false;
	void *obj = alloc_from_pcpu(s, c, &fired);
	if (likely(obj) && likely(!fired))
		return obj;
	return malloc_pcpu_miss(size, s, caller, obj);
}

/* malloc's hit path for the entry points (malloc, calloc, realloc(NULL),
 * operator new): the lookup and the inline pop; the allocation tag (the
 * caller's) is looked up only on a miss, in malloc_miss() (profiling
 * sends every allocation of a profiled cache there), so nothing is done
 * on a hit. A macro, so that USLUB_CALLER() is the return address of the
 * entry point it is expanded in. */
#define MALLOC_INLINE(size) ({                                                  \
	size_t __n = (size);                                                    \
	struct kmem_cache *__s = malloc_cache(__n);                             \
	struct kmem_cache_cpu *__c = NULL;                                      \
	void *__o = NULL;                                                       \
	if (likely(__s))                                                        \
		__o = alloc_from_pcs(__c = this_cpu_fast(__s));                 \
	if (unlikely(!__o))                                                     \
		__o = __c && __c->main == PCPU_STANDIN ?                        \
		      malloc_pcpu(__n, __s, __c, USLUB_CALLER()) :              \
		      malloc_miss(__n, __s, USLUB_CALLER());                    \
	__o; })

/* malloc: the table lookup and the pop inline; the allocation tag (for
 * profiling, whose hooks send every allocation to the miss path) is set
 * only when the pop misses. */
__public void *malloc(size_t size)
{
	return MALLOC_INLINE(size);
}

static __noinline void free_cold(void *p)
{
	if (!p || in_boot_arena(p))
		return;
	int e = errno;
	_uslub_kfree_cold(p, fatal());
	errno = e;
}

/* The record, then the lookup, both inline (as
 * kfree): the rest is laid out after the record's ret. */
__public void free(void *p)
{
	if (likely(free_object_record(p)))
		return;
	if (likely(free_object_lookup(p)))
		return;
	free_cold(p);
}

__public void cfree(void *p)
{
	free(p);
}

__public void *calloc(size_t n, size_t size)
{
	size_t bytes;
	if (unlikely(__builtin_mul_overflow(n, size, &bytes))) {
		errno = ENOMEM;
		return NULL;
	}
	if (likely(bytes <= MALLOC_CLASS_MAX)) {
		void *p = MALLOC_INLINE(bytes);
		if (likely(p) && !in_boot_arena(p))
			memset(p, 0, bytes);
		return p;
	}
	MALLOC_TAG();
	return malloc_slow(bytes, 1, USLUB_GFP_ZERO);   /* page runs: zeroed; mmaps: fresh */
}

/* realloc's new object, allocated as malloc's, with the tag realloc set
 * (the program's call site, not this library's). */
static void *realloc_alloc(size_t size)
{
	return malloc_inline(size);
}

/* realloc's body, inlined in realloc and reallocarray: USLUB_CALLER() is
 * their caller. */
static __always_inline void *realloc_inline(void *p, size_t size)
{
	if (!p)
		return MALLOC_INLINE(size);
	if (!size) {                             /* glibc: free and return NULL */
		free(p);
		return NULL;
	}
	if (unlikely(in_boot_arena(p))) {
		void *q = malloc(size);
		if (q)
			memcpy(q, p, MIN(size, boot_size(p)));
		return q;
	}
	MALLOC_TAG();
	void *q = _uslub_krealloc(p, size, 0, realloc_alloc);
	if (q == p)                     /* in place: no allocation took the tag */
		uslub_alloc_tag_cur = NULL;
	return q;
}

__public void *realloc(void *p, size_t size)
{
	return realloc_inline(p, size);
}

__public void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (unlikely(__builtin_mul_overflow(n, size, &bytes))) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_inline(p, bytes);
}

/* ------------------------------------------------------------------------
 * Aligned allocation
 * ---------------------------------------------------------------------- */
static void *aligned(size_t align, size_t size)
{
	if (align <= 8)
		return malloc_inline(size);
	if (align == 16)                 /* every class from 16 bytes on */
		return malloc_inline(MAX(size, 16));
	return malloc_slow(size, align, 0);
}

__public int posix_memalign(void **out, size_t align, size_t size)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	int e = errno;
	MALLOC_TAG();
	void *p = aligned(align, size);
	errno = e;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

__public void *aligned_alloc(size_t align, size_t size)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	MALLOC_TAG();
	return aligned(align, size);
}

/* glibc's memalign rounds an alignment that is not a power of two up. */
__public void *memalign(size_t align, size_t size)
{
	if (align & (align - 1)) {
		if (align > SIZE_MAX / 2 + 1) {
			errno = EINVAL;
			return NULL;
		}
		align = 1ul << fls_u(align);
	}
	MALLOC_TAG();
	return aligned(align, size);
}

__public void *valloc(size_t size)
{
	MALLOC_TAG();
	return aligned(PAGE_SIZE, size);
}

__public void *pvalloc(size_t size)
{
	if (size > SIZE_MAX - PAGE_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	MALLOC_TAG();
	return aligned(PAGE_SIZE, size ? ALIGN_UP(size, PAGE_SIZE) : PAGE_SIZE);
}

__public size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (in_boot_arena(p))
		return boot_size(p);
	return _uslub_ksize(p, fatal());
}

/* Give free memory back to the OS now; 1 if some was. */
__public int malloc_trim(size_t pad)
{
	return uslub_trim() > 0;
}

/* glibc's internal names, which parts of glibc call directly. gcc copies
 * the target's attributes onto an alias (copy); clang has no such
 * attribute and needs none. */
#ifdef __clang__
#define ALIAS_OF(f) __attribute__((alias(#f)))
#else
#define ALIAS_OF(f) __attribute__((alias(#f), copy(f)))
#endif
__public void *__libc_malloc(size_t) ALIAS_OF(malloc);
__public void __libc_free(void *) ALIAS_OF(free);
__public void *__libc_calloc(size_t, size_t) ALIAS_OF(calloc);
__public void *__libc_realloc(void *, size_t) ALIAS_OF(realloc);
__public void *__libc_memalign(size_t, size_t) ALIAS_OF(memalign);
__public void *__libc_valloc(size_t) ALIAS_OF(valloc);
__public void *__libc_pvalloc(size_t) ALIAS_OF(pvalloc);
__public int __posix_memalign(void **, size_t, size_t) ALIAS_OF(posix_memalign);

/* ------------------------------------------------------------------------
 * C++ operator new and delete (the Itanium ABI names, x86-64). A failed
 * new calls the new_handler until it succeeds, then throws std::bad_alloc
 * (nothrow forms return NULL); libstdc++ is looked up weakly, so C programs
 * do not load it.
 * ---------------------------------------------------------------------- */
typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static __noinline void *new_failed(size_t size, size_t align, bool nothrow)
{
	for (;;) {
		new_handler_fn h = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
		if (!h) {
			if (nothrow)
				return NULL;
			if (_ZSt17__throw_bad_allocv)
				_ZSt17__throw_bad_allocv();
			_uslub_report("uslub: operator new(%zu): out of memory\n", size);
			abort();
		}
		h();
		void *p = aligned(align, size);
		if (p)
			return p;
	}
}

/* operator new: malloc's hit path, then new's failure rules. */
#define CXX_NEW(size, nothrow) ({                                               \
	void *__p = MALLOC_INLINE(size);                                        \
	if (unlikely(!__p))                                                     \
		__p = new_failed(size, 1, nothrow);                             \
	__p; })

static void *cxx_new_aligned(size_t size, size_t align, bool nothrow)
{
	if (!align || (align & (align - 1))) {   /* undefined behaviour in C++ */
		_uslub_report("uslub: operator new(%zu, align_val_t(%zu)): alignment is not "
			      "a power of two\n", size, align);
		abort();
	}
	void *p = aligned(align, size);
	if (unlikely(!p))
		return new_failed(size, align, nothrow);
	return p;
}

struct nothrow_t;
__public void *_Znwm(size_t n) { return CXX_NEW(n, false); }
__public void *_Znam(size_t n) { return CXX_NEW(n, false); }
__public void *_ZnwmRKSt9nothrow_t(size_t n, const struct nothrow_t *t)
{ return CXX_NEW(n, true); }
__public void *_ZnamRKSt9nothrow_t(size_t n, const struct nothrow_t *t)
{ return CXX_NEW(n, true); }
__public void *_ZnwmSt11align_val_t(size_t n, size_t a)
{ MALLOC_TAG(); return cxx_new_aligned(n, a, false); }
__public void *_ZnamSt11align_val_t(size_t n, size_t a)
{ MALLOC_TAG(); return cxx_new_aligned(n, a, false); }
__public void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const struct nothrow_t *t)
{ MALLOC_TAG(); return cxx_new_aligned(n, a, true); }
__public void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const struct nothrow_t *t)
{ MALLOC_TAG(); return cxx_new_aligned(n, a, true); }

__public void _ZdlPv(void *p) { free(p); }
__public void _ZdaPv(void *p) { free(p); }
__public void _ZdlPvm(void *p, size_t n) { free(p); }
__public void _ZdaPvm(void *p, size_t n) { free(p); }
__public void _ZdlPvRKSt9nothrow_t(void *p, const struct nothrow_t *t) { free(p); }
__public void _ZdaPvRKSt9nothrow_t(void *p, const struct nothrow_t *t) { free(p); }
__public void _ZdlPvSt11align_val_t(void *p, size_t a) { free(p); }
__public void _ZdaPvSt11align_val_t(void *p, size_t a) { free(p); }
__public void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { free(p); }
__public void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { free(p); }
__public void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const struct nothrow_t *t)
{ free(p); }
__public void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const struct nothrow_t *t)
{ free(p); }

/* ------------------------------------------------------------------------
 * USLUB_REPORT: slabinfo (and allocinfo) at exit
 * ---------------------------------------------------------------------- */
static void write_report(FILE *f, const char *note)
{
	struct kmalloc_large_stats ls;
	struct uslub_page_stats ps;
	_uslub_kmalloc_large_stats(&ls);
	uslub_page_stats(&ps);
	fprintf(f, "uslub report: pid %d%s\n\n", (int)getpid(), note);
	uslub_slabinfo_print(f, USLUB_FMT_TABLE);
	fprintf(f, "\npage runs (kmalloc above 8 KiB, malloc above 64 KiB, to 2 MiB): %lu allocated, %lu freed, %lu KiB held\n",
		ls.large_allocs, ls.large_frees, ls.large_bytes >> 10);
	fprintf(f, "kmalloc mappings (> 2 MiB): %lu allocated, %lu freed, %lu KiB held\n",
		ls.huge_allocs, ls.huge_frees, ls.huge_bytes >> 10);
	fprintf(f, "page provider: %lu segments, %lu KiB in use, %lu KiB returned to the OS\n",
		ps.segments, ps.bytes_in_slabs >> 10, ps.bytes_purged >> 10);
	if (ps.release_failures)
		fprintf(f, "releases the kernel refused (munmap, madvise): %lu; uslub keeps those "
			"ranges, reuses what it can (an empty segment kept %lu times) and tries "
			"their munmap again (%lu KiB of address space waiting now)\n",
			ps.release_failures, ps.segments_kept, ps.bytes_unreleased >> 10);
	fprintf(f, "errors reported: %lu\n", uslub_error_count());
	if (uslub_profiling_enabled()) {
		fprintf(f, "\n");
		uslub_allocinfo_print(f, USLUB_FMT_TABLE);
	}
}

static const char *report_option = "USLUB_REPORT";     /* the file's, for messages */

/* Why USLUB_REPORT could not be written: the file and the cause (@why,
 * else _uslub_errstr(@err), errno saved right after the call that failed). A
 * path too long for one report line is shown by its two ends; its
 * control characters escaped (base.h), as any name in a text output. */
static void report_failed(const char *what, const char *path, bool cut, int err,
			  const char *why)
{
	char head[4 * 200 + 1], tail[4 * 160 + 1];
	size_t len = strlen(path);
	bool two_ends = len > 400 || cut;
	_uslub_escape(head, sizeof(head), path, two_ends ? 200 : len);
	_uslub_escape(tail, sizeof(tail), len > 400 ? path + len - 160 : "", 160);
	_uslub_report("uslub: %s: cannot %s \"%s%s%s\": %s\n", report_option, what, head,
		      two_ends ? "..." : "", tail, why ? why : _uslub_errstr(err));
}

/*
 * The directory the report file goes into, walked from "/" (or ".") one
 * component at a time, each opened O_PATH relative to the one before:
 * what the kernel's fs.protected_symlinks does, done here too because it
 * may be off (it is a sysctl). A symbolic link among the directories is
 * followed only when it is not another user's in a sticky directory that
 * others may write (/tmp): when its owner is this process's effective
 * user or the directory's owner. Else USLUB_REPORT=/tmp/x/shadow, /tmp/x
 * being another user's link to /etc, made a root process truncate
 * /etc/shadow (the last component's checks all passed: root's file, one
 * link). A directory that is not a link must still be one when it is
 * opened (O_NOFOLLOW: not swapped for a link meanwhile). A link that is
 * followed is followed by the kernel, links in its target included.
 * The directory's descriptor and *@last (the file's name in it), or -1
 * with errno and, when the cause is not errno's, the reason in @why.
 */
static int report_dir(const char *path, const char **last, char *why, size_t wlen)
{
	why[0] = '\0';
	const char *end = strrchr(path, '/');
	*last = end ? end + 1 : path;
	if (!**last)
		*last = ".";                    /* "dir/": open fails, EISDIR */
	int dfd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || !end)
		return dfd;
	uid_t euid = geteuid();
	for (const char *c = path; c < end;) {
		while (c < end && *c == '/')
			c++;
		const char *slash = memchr(c, '/', (size_t)(end - c));
		size_t n = (size_t)((slash ? slash : end) - c);
		char name[NAME_MAX + 1];
		struct stat lst, dst, st;
		if (!n)
			break;
		if (n > NAME_MAX) {
			close(dfd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(name, c, n);
		name[n] = '\0';
		c += n;
		if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) || fstat(dfd, &dst)) {
			int e = errno;
			close(dfd);
			errno = e;
			return -1;
		}
		bool link = S_ISLNK(lst.st_mode);
		if (link && (dst.st_mode & S_ISVTX) && (dst.st_mode & S_IWOTH) &&
		    lst.st_uid != euid && lst.st_uid != dst.st_uid) {
			char esc[4 * 160 + 1];           /* its last 160 bytes, escaped */
			size_t k = MIN((size_t)(c - path), (size_t)160);
			_uslub_escape(esc, sizeof(esc), c - k, k);
			snprintf(why, wlen, "%s%s is another user's symbolic link (uid %u) in a "
				 "sticky directory others may write, which uslub does not follow "
				 "(as the kernel's fs.protected_symlinks); nothing written",
				 c - k > path ? "..." : "", esc, (unsigned int)lst.st_uid);
			close(dfd);
			errno = ELOOP;
			return -1;
		}
		int nfd = openat(dfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | (link ? 0 : O_NOFOLLOW));
		int e = errno;
		close(dfd);
		if (nfd < 0) {
			errno = e;
			return -1;
		}
		if (!link && (fstat(nfd, &st) || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino)) {
			close(nfd);
			errno = ELOOP;
			snprintf(why, wlen, "a directory on its path changed while it was opened");
			return -1;
		}
		dfd = nfd;
	}
	return dfd;
}

/*
 * The report file, opened for writing without giving a hostile user a
 * way to make the process write elsewhere. The name comes from the
 * environment and is often predictable (/tmp/report.%p): another user
 * may have put a symbolic link there to a file of ours (or root's), a
 * hard link to one, or a file or FIFO of theirs. So: the last component
 * is never followed (O_NOFOLLOW); the file is created 0600; an existing
 * one is opened without O_TRUNC and truncated only after fstat() showed
 * it is a regular file (or FIFO) of this process's effective user with
 * no other link. A device is written as it is (/dev/null, /dev/tty:
 * only root makes device nodes). O_NONBLOCK: opening a FIFO or a device
 * never hangs the exit. The directories on the way are walked one by one
 * (report_dir()), so that another user's symbolic link among them is not
 * followed either. The descriptor, or -1 after the message.
 */
static int report_open(const char *path)
{
	char why[4 * 160 + 256];
	const char *last;
	int dfd = report_dir(path, &last, why, sizeof(why));
	if (dfd < 0) {
		report_failed("open", path, false, errno, why[0] ? why : NULL);
		return -1;
	}
	int fd = openat(dfd, last, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	struct stat st;
	if (fd < 0) {
		int err = errno;
		bool link = err == ELOOP && !fstatat(dfd, last, &st, AT_SYMLINK_NOFOLLOW) &&
			    S_ISLNK(st.st_mode);
		close(dfd);
		if (link)
			report_failed("open", path, false, err, "it is a symbolic link, which "
				      "uslub does not follow (name the file it points to); "
				      "nothing written");
		else
			report_failed("open", path, false, err, NULL);
		return -1;
	}
	close(dfd);
	why[0] = '\0';
	if (fstat(fd, &st)) {
		snprintf(why, sizeof(why), "%s", _uslub_errstr(errno));
	} else if (S_ISCHR(st.st_mode)) {
		/* a device: written as it is, not truncated */
	} else if (st.st_uid != geteuid()) {
		snprintf(why, sizeof(why), "it belongs to uid %u, not to this process's "
			 "user (uid %u); left as it was", (unsigned int)st.st_uid,
			 (unsigned int)geteuid());
	} else if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
		snprintf(why, sizeof(why), "not a regular file; left as it was");
	} else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
		snprintf(why, sizeof(why), "it has %lu hard links (another name may be "
			 "another user's); left as it was", (unsigned long)st.st_nlink);
	} else if (S_ISREG(st.st_mode) && ftruncate(fd, 0)) {
		snprintf(why, sizeof(why), "%s", _uslub_errstr(errno));
	}
	int fl = why[0] ? 0 : fcntl(fd, F_GETFL);
	if (!why[0] && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)))
		snprintf(why, sizeof(why), "%s", _uslub_errstr(errno));
	if (why[0]) {
		close(fd);
		report_failed("open", path, false, 0, why);
		return -1;
	}
	return fd;
}

/*
 * USLUB_REPORT=-: the report goes to stderr, also when the program has
 * closed it by then (coreutils' close_stdout() closes stderr at exit, and
 * many daemons close it at start). The constructor keeps a duplicate of
 * the stderr the process started with, close-on-exec and out of the way
 * (from fd 1000 up, as a debugger's log descriptor), with its identity;
 * at exit the report goes to fd 2 when it is open, else to that duplicate
 * when it still is what it was, with a note saying so; else nowhere (the
 * process started with no stderr). The stdio stream stderr is never used
 * at exit: after fclose(stderr) it must not be. The duplicate is this
 * process's only: a fork child closes it (lifecycle entry below), or a
 * daemon child that pointed fds 0-2 at /dev/null would hold its parent's
 * stderr pipe open for its whole life (`x=$(prog 2>&1)` would wait for it).
 *
 * The number is the program's to take: it may close it (close_range) and
 * get it back for a file of its own, or dup2() its own over it. So before
 * each use and before it is closed the duplicate is checked to be still
 * ours: close-on-exec as made (dup2 clears the flag), the same device
 * and inode (not the status flags: they are shared with fd 2, which the
 * program may make O_NONBLOCK). When it is not, uslub forgets the number
 * (never writes or closes it) and says so once on fd 2, at the next fork
 * (in the parent, so that children do not each say it) or at exit.
 */
static int report_fd = -1;
static dev_t report_dev;
static ino_t report_ino;

static bool report_fd_ours(void)
{
	struct stat st;
	return _uslub_fd_is(report_fd, report_dev, report_ino, &st);
}

/* Forget a duplicate that is no longer ours, saying so once (@say). */
static void report_fd_check(bool say)
{
	if (report_fd < 0 || report_fd_ours())
		return;
	if (say)                        /* once: the number is forgotten */
		_uslub_report("uslub: USLUB_REPORT=-: the program closed or reused fd %d, where "
			      "uslub kept a copy of its stderr: left alone; the report goes to fd 2 "
			      "only\n", report_fd);
	report_fd = -1;
}

static void report_fd_prefork(void)
{
	report_fd_check(true);
}

static void report_fd_postfork_child(void)
{
	if (report_fd >= 0 && report_fd_ours())
		close(report_fd);
	report_fd = -1;
}

static const struct uslub_lifecycle report_fd_lifecycle = {
	.name = "USLUB_REPORT=- stderr copy",
	.rank = LIFECYCLE_UNLOCKED,
	.prefork = report_fd_prefork,
	.postfork_child = report_fd_postfork_child,
};

static void report_keep_stderr(void)
{
	static const int from[] = { 1000, 100, 10 };
	struct stat st;
	if (fstat(2, &st))
		return;
	for (unsigned int i = 0; i < ARRAY_SIZE(from) && report_fd < 0; i++)
		report_fd = fcntl(2, F_DUPFD_CLOEXEC, from[i]);
	report_dev = st.st_dev;
	report_ino = st.st_ino;
	if (report_fd >= 0)
		_uslub_lifecycle_register(&report_fd_lifecycle);
}

static void report_to_stderr(void)
{
	const char *note = "";
	int fd = 2;
	bool have2 = fcntl(2, F_GETFD) >= 0;
	report_fd_check(have2);
	if (!have2) {
		if (report_fd < 0)
			return;                 /* no stderr now, none kept */
		fd = report_fd;
		note = " (its stderr was closed at exit: this is the stderr it started with)";
	}
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	FILE *f = dfd >= 0 ? fdopen(dfd, "w") : NULL;
	if (!f) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	write_report(f, note);
	fclose(f);
}

/* @spec with each %p replaced by the pid, into @path (@cap bytes, of
 * which the last @slack stay free for a suffix): its length, or -1 after
 * naming the cut path (longer than any path can be). */
static long report_path(const char *spec, char *path, size_t cap, size_t slack)
{
	size_t k = 0;
	const char *c = spec;
	for (; *c && k + 24 + slack < cap; c++) {
		if (c[0] == '%' && c[1] == 'p') {
			k += (size_t)snprintf(path + k, cap - k, "%d", (int)getpid());
			c++;
		} else {
			path[k++] = *c;
		}
	}
	path[k] = 0;
	if (*c) {
		report_failed("open", path, true, ENAMETOOLONG, NULL);
		return -1;
	}
	return (long)k;
}

/* Write the report (@heap false) or the heap profile's @view to @path,
 * under report_open()'s rules; a failure is named (report_failed()). */
static void report_write(const char *path, bool heap, int view)
{
	int fd = report_open(path);
	if (fd < 0)
		return;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		report_failed("open", path, false, errno, NULL);
		close(fd);
		return;
	}
	errno = 0;
	if (heap)
		uslub_heap_profile_print(f, view);
	else
		write_report(f, "");
	int err = 0;
	if (fflush(f) == EOF || ferror(f))
		err = errno ? errno : EIO;
	if (fclose(f) == EOF && !err)
		err = errno ? errno : EIO;
	if (err)
		report_failed("write", path, false, err, NULL);
}

static void report_at_exit(void)
{
	const char *spec = _uslub_option_str(USLUB_OPT_REPORT);
	if (!strcmp(spec, "-")) {
		report_to_stderr();
		return;
	}
	char path[4096];
	if (report_path(spec, path, sizeof(path), 0) >= 0)
		report_write(path, false, 0);
}

/* An exit handler registered from a constructor (never from inside
 * malloc), as the program's own (no DSO handle): it runs at the very end
 * of exit(), after every destructor, so the report shows what the program
 * left. The tags of programs and libraries are unregistered by then (their
 * destructors fold them away); the malloc front end's own stay. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
static void report_at_exit_arg(void *arg)
{
	report_at_exit();
}

/*
 * USLUB_HEAP_PROFILE=FILE (sampled mode): at exit, with the report (the
 * same end of exit(), the same file rules: report_open()), the heap
 * profile's folded stacks (ext/stack.c): the bytes in use to FILE (the
 * leak profile), the bytes allocated in all to FILE.alloc; %p is the pid.
 * A FILE ending in ".heap" gets the dump instead (USLUB_HEAP_DUMP: every
 * count and the modules), which `uslub heap FILE` reads.
 */

static void heap_profile_at_exit(void *arg)
{
	char path[4096];
	report_option = "USLUB_HEAP_PROFILE";
	long k = report_path(_uslub_option_str(USLUB_OPT_HEAP_PROFILE), path, sizeof(path), 8);
	if (k >= 5 && !strcmp(path + k - 5, ".heap")) {
		report_write(path, true, USLUB_HEAP_DUMP);
	} else if (k >= 0) {
		report_write(path, true, USLUB_HEAP_INUSE);
		memcpy(path + k, ".alloc", 7);
		report_write(path, true, USLUB_HEAP_ALLOC);
	}
	report_option = "USLUB_REPORT";
}

__attribute__((constructor)) static void report_init(void)
{
	if (*_uslub_option_str(USLUB_OPT_HEAP_PROFILE))
		__cxa_atexit(heap_profile_at_exit, NULL, NULL);
	const char *spec = _uslub_option_str(USLUB_OPT_REPORT);
	if (!*spec)
		return;
	if (!strcmp(spec, "-"))
		report_keep_stderr();
	__cxa_atexit(report_at_exit_arg, NULL, NULL);
}
