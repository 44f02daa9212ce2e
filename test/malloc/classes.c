/*
 * malloc_classes: malloc's size classes (src/malloc/classes.h) through the
 * public API of libuslub-malloc (linked):
 *   - every size 0 .. 64 KiB gets the smallest class that holds it, by this
 *     file's own list of the classes (8; 16 .. 128 by 16; then four per
 *     power of two, 2^k * 5/4 .. 8/4, up to 64 KiB): malloc_usable_size()
 *     is exactly that class;
 *   - alignment as documented: 16 bytes for every class from 16 on, 8 for
 *     malloc(1..8); posix_memalign(16, 1..8) gets 16;
 *   - sizes above 64 KiB are not served by a class (usable size a page
 *     multiple);
 *   - slabinfo lists a cache "malloc-<size>" for every class (sizes that are
 *     whole KiB named "malloc-<n>k"), with sheaves (cpu slabs with
 *     USLUB_KMALLOC_SHEAVES=0);
 *   - kfree() frees malloc's blocks and free() frees kmalloc's, from the
 *     classes of both families, and a freed block is reused by its own
 *     class (no block is lost or served twice: 1000 rounds of both mixed).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static size_t classes[64];
static int nclasses;

static void build_classes(void)
{
	classes[nclasses++] = 8;
	for (size_t c = 16; c <= 128; c += 16)
		classes[nclasses++] = c;
	for (int k = 7; k < 16; k++)
		for (int j = 1; j <= 4; j++)
			classes[nclasses++] = ((size_t)1 << k) + (size_t)j * ((size_t)1 << (k - 2));
}

static size_t expected_class(size_t size)
{
	if (size == 0)
		size = 1;
	for (int i = 0; i < nclasses; i++)
		if (classes[i] >= size)
			return classes[i];
	return 0;
}

int main(void)
{
	build_classes();
	CHECK(nclasses == 45, "45 classes, got %d", nclasses);
	CHECK(classes[nclasses - 1] == 65536, "the largest class is 64 KiB");

	/* every size 0 .. 64 KiB: the smallest class that fits, aligned */
	for (size_t size = 0; size <= 65536; size++) {
		void *p = malloc(size);
		size_t want = expected_class(size);
		size_t got = malloc_usable_size(p);
		CHECK(p != NULL, "malloc(%zu)", size);
		CHECK(got == want, "malloc(%zu): usable %zu, the class is %zu", size, got, want);
		size_t align = want >= 16 ? 16 : 8;
		CHECK((uintptr_t)p % align == 0, "malloc(%zu) = %p not %zu-aligned", size, p, align);
		if (failures > 20)
			return 1;
		free(p);
	}
	for (size_t size = 1; size <= 8; size++) {
		void *p = NULL;
		CHECK(posix_memalign(&p, 16, size) == 0 && (uintptr_t)p % 16 == 0,
		      "posix_memalign(16, %zu) = %p", size, p);
		free(p);
	}
	for (size_t size = 65537; size <= 65536 * 4; size += 4093) {
		void *p = malloc(size);
		size_t got = malloc_usable_size(p);
		CHECK(got >= size && got % 4096 == 0, "malloc(%zu): usable %zu, a page run", size, got);
		free(p);
	}

	/* slabinfo names every class */
	void (*slabinfo_print)(FILE *, int) = (void (*)(FILE *, int))dlsym(RTLD_DEFAULT,
									      "uslub_slabinfo_print");
	void *(*kmalloc)(size_t, unsigned int) =
		(void *(*)(size_t, unsigned int))dlsym(RTLD_DEFAULT, "uslub_kmalloc_noprof");
	void (*kfree)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT, "uslub_kfree");
	unsigned long (*errors)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT,
								      "uslub_error_count");
	if (!slabinfo_print || !kmalloc || !kfree || !errors) {
		fprintf(stderr, "SKIP: not running on uslub (no uslub_slabinfo_print)\n");
		return failures ? 1 : 77;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	slabinfo_print(f, 0 /* USLUB_FMT_TABLE */);
	fclose(f);
	/* sheaves, unless USLUB_KMALLOC_SHEAVES=0 put them on cpu slabs */
	const char *ks = getenv("USLUB_KMALLOC_SHEAVES");
	const char *want_percpu = ks && !strcmp(ks, "0") ? "\n    percpu=cpu_slab" :
				  "\n    percpu=sheaves";
	for (int i = 0; i < nclasses; i++) {
		char name[40];
		if (classes[i] % 1024 == 0)
			snprintf(name, sizeof(name), "\nmalloc-%zuk ", classes[i] >> 10);
		else
			snprintf(name, sizeof(name), "\nmalloc-%zu ", classes[i]);
		char *at = strstr(text, name);
		CHECK(at != NULL, "slabinfo has no cache%s", name);
		if (at) {
			char *next = strchr(at + 1, '\n');
			CHECK(next && !strncmp(next, want_percpu, strlen(want_percpu)),
			      "cache%s: %s", name, want_percpu + 5);
		}
	}
	free(text);

	/* kfree and free take each other's blocks */
	for (int round = 0; round < 1000; round++) {
		size_t size = 1 + (size_t)(round * 7919) % 65536;
		void *a = malloc(size), *b = kmalloc(size, 0);
		CHECK(a && b && a != b, "round %d: malloc and kmalloc(%zu)", round, size);
		memset(a, 0x5a, size);
		memset(b, 0xa5, size);
		kfree(a);
		free(b);
		void *c = malloc(size);
		CHECK(c == a, "round %d: malloc(%zu) after kfree reuses the block (%p, %p)",
		      round, size, c, a);
		free(c);
	}
	CHECK(errors() == 0, "uslub reported %lu errors", errors());
	if (failures)
		return 1;
	printf("malloc_classes: %d classes, sizes 0..65536 checked\n", nclasses);
	return 0;
}
