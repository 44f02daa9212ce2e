/*
 * misuse_tag_replaced's program (tag_replaced.sh), under LD_PRELOAD
 * with profiling on. argv[1]: a private directory holding plug.so and
 * same.so (both the first build, mod_tag_plug_v1), argv[2]: the second
 * build (mod_tag_plug_v2.so).
 *   - plug.so allocates 12 x 1 MiB, kept live; it is dlclose()d, the file
 *     replaced by the second build (copied beside it, renamed over it, as
 *     an install or a rebuild does), and the same path loaded again (the
 *     loader puts it where the first was) and its function that never
 *     allocates is called; a new call site of this program allocates (a
 *     claim: uslub sweeps for unloaded modules there);
 *   - same.so is opened twice and closed once (still loaded): its 3 x 1 MiB
 *     stay named by its function.
 * Exits with everything live: the report at exit (USLUB_REPORT) must name
 * the 12 MiB "<unloaded: DIR/plug.so>", never tag_plug_never_allocates.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef void *(*alloc_fn)(size_t);

static void *keep[16];

static int copy(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[4096];
	ssize_t n;
	int rc = in < 0 || out < 0;
	while (!rc && (n = read(in, buf, sizeof(buf))) > 0)
		rc = write(out, buf, (size_t)n) != n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

__attribute__((noinline)) static void *fresh_site(void)
{
	void *p = malloc(1 << 20);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	char plug[4096], next[4096], same[4096];
	snprintf(plug, sizeof(plug), "%s/plug.so", argv[1]);
	snprintf(next, sizeof(next), "%s/plug.so.new", argv[1]);
	snprintf(same, sizeof(same), "%s/same.so", argv[1]);
	void *h = dlopen(plug, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	alloc_fn a = (alloc_fn)dlsym(h, "tag_plug_alloc");
	for (int i = 0; i < 12; i++)
		keep[i] = a(1 << 20);
	void *before = dlsym(h, "tag_plug_alloc");
	dlclose(h);
	if (copy(argv[2], next) || rename(next, plug)) {
		perror("replace");
		return 1;
	}
	h = dlopen(plug, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*f)(int) = (int (*)(int))dlsym(h, "tag_plug_never_allocates");
	if (!f || f(1) != 2)
		return 1;
	printf("same_place %d\n", (void *)f <= before && before < (void *)((char *)f + 256));
	keep[12] = fresh_site();
	void *s1 = dlopen(same, RTLD_NOW), *s2 = dlopen(same, RTLD_NOW);
	if (!s1 || !s2)
		return 1;
	a = (alloc_fn)dlsym(s1, "tag_plug_alloc");
	for (int i = 13; i < 16; i++)
		keep[i] = a(1 << 20);
	dlclose(s2);
	return 0;
}
