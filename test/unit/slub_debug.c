/*
 * slub_debug corruption suite, in the manner of the kernel's slub_kunit:
 * each case damages an object in one way and must be detected exactly the
 * expected number of times (uslub_error_count() and validate's count),
 * with a report of the right class, after which the damaged slab is
 * isolated and the cache keeps working (new objects come from other slabs,
 * validate finds nothing more, destroy succeeds).
 */
#include "slub/slub.h"
#include "unit.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* ---- stderr capture ---------------------------------------------------- */
static char captured[1 << 20];
static int saved_fd = -1;
static char cap_path[] = "/tmp/uslub-slub-debug-XXXXXX";

static void capture_begin(void)
{
	fflush(stderr);
	int fd = mkstemp(cap_path);
	CHECK(fd >= 0);
	saved_fd = dup(2);
	dup2(fd, 2);
	close(fd);
}

static const char *capture_end(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	int fd = open(cap_path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, captured, sizeof(captured) - 1);
	close(fd);
	unlink(cap_path);
	strcpy(cap_path, "/tmp/uslub-slub-debug-XXXXXX");
	captured[n > 0 ? n : 0] = 0;
	return captured;
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

#define CHECK_HAS(text, needle) do { \
	if (!strstr((text), (needle))) { \
		fprintf(stderr, "%s:%d: report lacks \"%s\":\n%s\n", __FILE__, __LINE__, \
			(needle), (text)); \
		exit(1); \
	} \
} while (0)

/* ---- helpers ----------------------------------------------------------- */
static struct kmem_cache *create(const char *name, size_t size, unsigned int flags)
{
	struct kmem_cache *s = uslub_cache_create(name, size, 0, flags, NULL);
	CHECK(s);
	CHECK(kmem_cache_debug(s));
	return s;
}

/* The cache still works: many objects, none from the isolated slab of
 * @bad (if any), all freed again; validate clean; destroy succeeds. */
static void keeps_working(struct kmem_cache *s, void *bad)
{
	struct slab *isolated = bad ? virt_to_slab(bad) : NULL;
	enum { N = 300 };
	void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = uslub_cache_alloc(s, 0);
		CHECK(p[i]);
		CHECK(!isolated || virt_to_slab(p[i]) != isolated);
		memset(p[i], 0x11, s->object_size);
	}
	for (int i = 0; i < N; i++)
		uslub_cache_free(s, p[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
}

static void destroy_clean(struct kmem_cache *s)
{
	unsigned long e = uslub_error_count();
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_error_count(), e);
}

/* Run validate; it must find exactly @want problems, counted as errors. */
static const char *validate_expect(struct kmem_cache *s, long want)
{
	unsigned long e = uslub_error_count();
	capture_begin();
	long got = uslub_cache_validate(s);
	const char *out = capture_end();
	if (got != want || (long)(uslub_error_count() - e) != want) {
		fprintf(stderr, "validate %s: %ld problems, %lu errors, want %ld:\n%s\n", s->name,
			got, uslub_error_count() - e, want, out);
		exit(1);
	}
	return out;
}

/* Exported (the test links with -rdynamic) so dladdr names it. */
__attribute__((noinline)) void *slub_debug_alloc_site(struct kmem_cache *s)
{
	void *p = uslub_cache_alloc(s, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void slub_debug_free_site(struct kmem_cache *s, void *p)
{
	uslub_cache_free(s, p);
	__asm__ volatile("" ::: "memory");
}

/* ---- the kernel's slub_kunit cases ------------------------------------- */
static void test_clobber_zone(void)
{
	struct kmem_cache *s = create("TestSlub_RZ_alloc", 64, USLUB_RED_ZONE);
	unsigned char *p = uslub_cache_alloc(s, 0);
	p[64] = 0x12;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "BUG TestSlub_RZ_alloc: Right Redzone overwritten");
	CHECK_HAS(r, "First byte 0x12 instead of 0xcc");
	CHECK_HAS(r, "isolated");
	CHECK(virt_to_slab(p)->__page_flags & PG_isolated);
	unsigned long e = uslub_error_count();
	uslub_cache_free(s, p);                   /* restored: no second report */
	CHECK_EQ(uslub_error_count(), e);
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_left_zone(void)
{
	struct kmem_cache *s = create("TestSlub_LRZ", 64, USLUB_RED_ZONE);
	unsigned char *p = uslub_cache_alloc(s, 0);
	CHECK(s->red_left_pad >= sizeof(void *));
	p[-1] = 0x34;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "Left Redzone overwritten");
	CHECK_HAS(r, "First byte 0x34 instead of 0xcc");
	uslub_cache_free(s, p);
	validate_expect(s, 0);
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_next_pointer(void)
{
	struct kmem_cache *s = create("TestSlub_next_ptr_free", 64, USLUB_POISON);
	unsigned char *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	CHECK(s->offset >= s->object_size);        /* outside the poisoned bytes */
	p[s->offset] = (unsigned char)~p[s->offset];
	p[s->offset + 5] ^= 0x40;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "Freepointer corrupt");
	validate_expect(s, 0);                    /* isolated: never reported twice */
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_first_word(void)
{
	struct kmem_cache *s = create("TestSlub_1th_word_free", 64, USLUB_POISON);
	unsigned char *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	*p = 0x78;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "Poison overwritten");
	CHECK_HAS(r, "First byte 0x78 instead of 0x6b");
	validate_expect(s, 0);
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_clobber_50th_byte(void)
{
	struct kmem_cache *s = create("TestSlub_50th_word_free", 64, USLUB_POISON);
	unsigned char *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	p[50] = 0x9a;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "Poison overwritten");
	CHECK_HAS(r, "@offset=");
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_clobber_redzone_free(void)
{
	struct kmem_cache *s = create("TestSlub_RZ_free", 64, USLUB_RED_ZONE);
	unsigned char *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	p[64] = 0xab;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "Right Redzone overwritten");
	CHECK_HAS(r, "First byte 0xab instead of 0xbb");
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_kmalloc_redzone_access(void)
{
	struct kmem_cache *s = create("TestSlub_RZ_kmalloc", 32, USLUB_STORE_USER | USLUB_RED_ZONE);
	unsigned char *p = uslub_kmalloc_trace(s, 0, 18);
	CHECK(p);
	p[17] = 0x01;                             /* inside the request: fine */
	p[18] = 0xab;
	p[19] = 0xab;
	const char *r = validate_expect(s, 1);
	CHECK_HAS(r, "kmalloc Redzone overwritten");
	CHECK_HAS(r, "First byte 0xab instead of 0xcc");
	unsigned long e = uslub_error_count();
	uslub_cache_free(s, p);
	CHECK_EQ(uslub_error_count(), e);
	errno = 0;
	CHECK(!uslub_kmalloc_trace(s, 0, 33) && errno == EINVAL);
	keeps_working(s, p);
	destroy_clean(s);
}

/* ---- detected by alloc and free (F) ------------------------------------ */
#define ALL (USLUB_CONSISTENCY_CHECKS | USLUB_RED_ZONE | USLUB_POISON | USLUB_STORE_USER)

static void test_double_free(void)
{
	struct kmem_cache *s = create("TestSlub_double_free", 64, ALL);
	void *p = slub_debug_alloc_site(s);
	slub_debug_free_site(s, p);
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(s, p);
	const char *r = capture_end();
	CHECK_EQ(uslub_error_count() - e, 1);
	CHECK_HAS(r, "BUG TestSlub_double_free: Object already free");
	CHECK_HAS(r, "Allocated in slub_debug_alloc_site+");
	CHECK_HAS(r, "Freed in slub_debug_free_site+");
	CHECK_HAS(r, "Redzone ");
	CHECK_HAS(r, "Object ");
	CHECK_HAS(r, "6b 6b 6b 6b");              /* the poisoned bytes in the dump */
	validate_expect(s, 0);                    /* nothing was freed twice */
	keeps_working(s, NULL);
	destroy_clean(s);
}

static void test_right_zone_at_free(void)
{
	struct kmem_cache *s = create("TestSlub_RZ_at_free", 100, ALL);
	unsigned char *p = uslub_cache_alloc(s, 0);
	p[100] = 0x55;                            /* one byte past the object */
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(s, p);
	const char *r = capture_end();
	CHECK_EQ(uslub_error_count() - e, 1);
	CHECK_HAS(r, "Right Redzone overwritten");
	CHECK_HAS(r, "isolated");
	validate_expect(s, 0);
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_write_after_free_at_alloc(void)
{
	struct kmem_cache *s = create("TestSlub_uaf_alloc", 64, ALL);
	unsigned char *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	p[8] = 0x42;                              /* use after free */
	unsigned long e = uslub_error_count();
	capture_begin();
	unsigned char *q = uslub_cache_alloc(s, 0);  /* would have been p */
	const char *r = capture_end();
	CHECK(q && q != p);
	CHECK(virt_to_slab(q) != virt_to_slab(p));
	CHECK_EQ(uslub_error_count() - e, 1);
	CHECK_HAS(r, "Poison overwritten");
	uslub_cache_free(s, q);
	validate_expect(s, 0);
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_freepointer_at_alloc(void)
{
	struct kmem_cache *s = create("TestSlub_fp_alloc", 64, ALL);
	unsigned char *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	*(uintptr_t *)(p + s->offset) ^= 0x10000; /* the free pointer, off the slab */
	unsigned long e = uslub_error_count();
	capture_begin();
	void *q = uslub_cache_alloc(s, 0);
	const char *r = capture_end();
	CHECK(q && q != p && virt_to_slab(q) != virt_to_slab(p));
	CHECK_EQ(uslub_error_count() - e, 1);
	CHECK_HAS(r, "Freepointer corrupt");
	uslub_cache_free(s, q);
	validate_expect(s, 0);
	keeps_working(s, p);
	destroy_clean(s);
}

static void test_invalid_frees(void)
{
	struct kmem_cache *s = create("TestSlub_invalid", 64, ALL);
	struct kmem_cache *other = create("TestSlub_other", 64, ALL);
	char *p = uslub_cache_alloc(s, 0);
	char *o = uslub_cache_alloc(other, 0);
	int on_stack;
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free(s, p + 8);               /* not an object start */
	uslub_cache_free(s, o);                   /* an object of another cache */
	uslub_cache_free(s, &on_stack);           /* not uslub's */
	const char *r = capture_end();
	CHECK_EQ(uslub_error_count() - e, 3);
	CHECK_HAS(r, "not an object start");
	CHECK_HAS(r, "an object of cache TestSlub_other");
	CHECK_HAS(r, "does not own");
	validate_expect(s, 0);
	validate_expect(other, 0);
	uslub_cache_free(s, p);
	uslub_cache_free(other, o);
	destroy_clean(other);
	keeps_working(s, NULL);
	destroy_clean(s);
}

static void test_leak_at_destroy(void)
{
	struct kmem_cache *s = create("TestSlub_leak", 64, ALL);
	void *p = slub_debug_alloc_site(s);
	void *q = slub_debug_alloc_site(s);
	uslub_cache_free(s, q);
	unsigned long e = uslub_error_count();
	capture_begin();
	int rc = uslub_cache_destroy(s);
	int err = errno;
	const char *r = capture_end();
	CHECK_EQ(rc, -1);
	CHECK_EQ(err, EBUSY);
	CHECK_EQ(uslub_error_count() - e, 1);
	CHECK_HAS(r, "1 objects remaining");
	CHECK_HAS(r, "left at destroy, allocated in slub_debug_alloc_site+");
	CHECK_EQ(count_of(r, "left at destroy"), 1);
	uslub_cache_free(s, p);
	destroy_clean(s);
}

/* ---- the other paths of a debug cache ---------------------------------- */
static void test_bulk_and_sheaves(void)
{
	struct kmem_cache *s = create("TestSlub_bulk", 48, ALL);
	void *p[200];
	CHECK_EQ(uslub_cache_alloc_bulk(s, USLUB_GFP_ZERO, 200, p), 200);
	for (int i = 0; i < 200; i++)
		for (int k = 0; k < 48; k++)
			CHECK(((unsigned char *)p[i])[k] == 0);
	((unsigned char *)p[77])[48] = 0x99;      /* one right red zone */
	unsigned long e = uslub_error_count();
	capture_begin();
	uslub_cache_free_bulk(s, 200, p);
	const char *r = capture_end();
	CHECK_EQ(uslub_error_count() - e, 1);
	CHECK_HAS(r, "Right Redzone overwritten");
	validate_expect(s, 0);

	struct uslub_sheaf *sh = uslub_cache_prefill_sheaf(s, 0, 10);
	CHECK(sh);
	void *a = uslub_cache_alloc_from_sheaf(s, 0, sh);
	CHECK(a);
	validate_expect(s, 0);                    /* sheaf objects count as allocated */
	uslub_cache_return_sheaf(s, 0, sh);
	uslub_cache_free(s, a);
	validate_expect(s, 0);
	keeps_working(s, NULL);
	destroy_clean(s);
}

static void test_trace(void)
{
	struct kmem_cache *s = create("TestSlub_trace", 32, USLUB_TRACE);
	capture_begin();
	void *p = uslub_cache_alloc(s, 0);
	uslub_cache_free(s, p);
	const char *r = capture_end();
	CHECK_EQ(count_of(r, "TRACE TestSlub_trace alloc"), 1);
	CHECK_EQ(count_of(r, "TRACE TestSlub_trace free"), 1);
	destroy_clean(s);
}

static void ctor_fill(void *p)
{
	memset(p, 0x3c, 40);
}

static void test_layout(void)
{
	/* a ctor cache keeps its constructed state: no poison */
	struct kmem_cache *s = uslub_cache_create("TestSlub_ctor", 40, 0, ALL, ctor_fill);
	CHECK(s && !(s->debug & USLUB_DBG_P) && kmem_cache_debug(s));
	unsigned char *c = uslub_cache_alloc(s, 0);
	CHECK(c[0] == 0x3c && c[39] == 0x3c);
	uslub_cache_free(s, c);
	c = uslub_cache_alloc(s, 0);              /* still constructed after a free */
	CHECK(c[0] == 0x3c && c[39] == 0x3c);
	uslub_cache_free(s, c);
	validate_expect(s, 0);
	destroy_clean(s);
	/* objects stay aligned behind a left red zone */
	struct kmem_cache *al = uslub_cache_create("TestSlub_align", 100, 64, ALL, NULL);
	CHECK(al && al->red_left_pad % 64 == 0 && al->size % 64 == 0);
	void *x[50];
	for (int i = 0; i < 50; i++) {
		x[i] = uslub_cache_alloc(al, 0);
		CHECK(((uintptr_t)x[i] & 63) == 0);
	}
	for (int i = 0; i < 50; i++)
		uslub_cache_free(al, x[i]);
	validate_expect(al, 0);
	destroy_clean(al);
}

int main(void)
{
	test_clobber_zone();
	test_left_zone();
	test_next_pointer();
	test_first_word();
	test_clobber_50th_byte();
	test_clobber_redzone_free();
	test_kmalloc_redzone_access();
	test_double_free();
	test_right_zone_at_free();
	test_write_after_free_at_alloc();
	test_freepointer_at_alloc();
	test_invalid_frees();
	test_leak_at_destroy();
	test_bulk_and_sheaves();
	test_trace();
	test_layout();
	printf("slub_debug: all cases detected exactly as expected\n");
	return 0;
}
