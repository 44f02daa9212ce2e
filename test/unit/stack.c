/*
 * Allocation stacks (ext/stack.c), white box, with USLUB_PROFILING=sample:1
 * (set by CTest: every allocation is sampled, each weighing exactly its
 * stride), through the heap profile's text (uslub_heap_profile_print):
 *   - three call sites (distinct callers of one helper, which passes its
 *     return address as malloc's deferred caller tag does) each get a
 *     stack of their own: one line each, its count exactly the bytes
 *     allocated there, its leaf the call site (uslub's frames trimmed:
 *     the line ends "(EXE+0xOFF)" for that return address) and its root
 *     first (libc's frames, below main(), come before the leaf's; with
 *     the frame-pointer walk, built without libunwind, the call site
 *     alone);
 *   - the in-use view drops a stack whose objects were freed, the
 *     allocated view keeps it;
 *   - the table is bounded: past its limit (lowered here) new stacks
 *     count in "<no stack>" (their bytes exactly), stacks interned before
 *     keep their own lines.
 */
#define _GNU_SOURCE
#include "cache/internal.h"
#include "unit.h"
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define N 100
#define SIZE 64

static uintptr_t site_addr[8];
static void *objs[8][N];

/* kmalloc of @size with the caller's return address as the deferred
 * caller tag (as the malloc front end passes it) */
static __attribute__((noinline)) void *alloc_here(int site, size_t size)
{
	uintptr_t ret = (uintptr_t)__builtin_return_address(0);
	site_addr[site] = ret;
	uslub_alloc_tag_cur = (struct uslub_alloc_tag *)(ret | USLUB_CALLER_DEFERRED);
	void *p = uslub_kmalloc_noprof(size, 0);
	CHECK(p);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static __attribute__((noinline)) void site0(void)
{
	for (int i = 0; i < N; i++)
		objs[0][i] = alloc_here(0, SIZE);
}

static __attribute__((noinline)) void site1(void)
{
	for (int i = 0; i < N; i++)
		objs[1][i] = alloc_here(1, SIZE);
}

static __attribute__((noinline)) void site2(void)
{
	for (int i = 0; i < N; i++)
		objs[2][i] = alloc_here(2, SIZE);
}

/* a stack of depth @d, then one object from the site at its bottom */
static __attribute__((noinline)) void *deep(int d)
{
	void *p = d ? deep(d - 1) : alloc_here(3, SIZE);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static char *profile(int view)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f);
	uslub_heap_profile_print(f, view);
	CHECK(!fclose(f));
	return buf;
}

/* "(EXE+0xOFF)", the frame text of return address @a */
static void frame_of(uintptr_t a, char *out, size_t len)
{
	Dl_info info;
	struct link_map *lm = NULL;
	CHECK(dladdr1((void *)a, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm);
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n] = 0;
	snprintf(out, len, "(%s+0x%lx)", exe, (unsigned long)(a - (uintptr_t)lm->l_addr));
}

/* the count of the line whose leaf frame is @leaf (-1: none; more than
 * one such line fails) */
static long long line_ending(const char *text, const char *leaf, const char **line)
{
	long long found = -1;
	size_t ll = strlen(leaf);
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		const char *end = nl ? nl : l + strlen(l), *sp = end;
		while (sp > l && sp[-1] != ' ')
			sp--;
		if (*l != '#' && sp > l && (size_t)(sp - 1 - l) >= ll && !memcmp(sp - 1 - ll, leaf, ll)) {
			CHECK_EQ(found, -1);
			found = atoll(sp);
			if (line)
				*line = l;
		}
		l = nl ? nl + 1 : end;
	}
	return found;
}

static long long no_stack(const char *text)
{
	const char *p = strstr(text, "\n<no stack> ");
	return p ? atoll(p + 12) : 0;
}

int main(void)
{
	if (uslub_profiling_enabled() != 2) {
		fprintf(stderr, "needs USLUB_PROFILING=sample:1\n");
		return 77;
	}
	site0();
	site1();
	site2();
	char leaf[4][600];
	for (int s = 0; s < 3; s++)
		frame_of(site_addr[s], leaf[s], sizeof(leaf[s]));
	char *inuse = profile(USLUB_HEAP_INUSE);
	CHECK(!strncmp(inuse, "# uslub heap profile, pid ", 26));
	bool whole = _uslub_stacks_unwinder();  /* walks past the call site */
	for (int s = 0; s < 3; s++) {
		const char *line;
		CHECK_EQ(line_ending(inuse, leaf[s], &line), (long long)N * SIZE);
		/* root first: libc's frames (__libc_start_main, below main)
		 * come before the leaf (libunwind). The frame-pointer walk
		 * stops inside uslub where it is built without them (-O2)
		 * and keeps the call site alone; where every frame keeps its
		 * pointer (the sanitizer builds) it goes on to libc's, root
		 * first too */
		bool one = strchr(line, ';') == NULL || strchr(line, ';') > strchr(line, '\n');
		whole |= !one;
		if (whole)
			CHECK(strstr(line, "libc.so") && strstr(line, "libc.so") < strstr(line, leaf[s]));
	}
	free(inuse);

	/* the leak view: site1 freed */
	for (int i = 0; i < N; i++)
		uslub_kfree(objs[1][i]);
	inuse = profile(USLUB_HEAP_INUSE);
	char *alloc = profile(USLUB_HEAP_ALLOC);
	CHECK_EQ(line_ending(inuse, leaf[1], NULL), -1);
	CHECK_EQ(line_ending(inuse, leaf[0], NULL), (long long)N * SIZE);
	CHECK_EQ(line_ending(alloc, leaf[1], NULL), (long long)N * SIZE);
	free(inuse);
	free(alloc);

	/* the bound: two more stacks, then "<no stack>" */
	inuse = profile(USLUB_HEAP_INUSE);
	long long before = no_stack(inuse);
	free(inuse);
	unsigned int used = _uslub_stacks_limit(0);
	_uslub_stacks_limit(used + 2);
	void *d[6];
	for (int i = 0; i < 6; i++)
		d[i] = deep(i + 1);
	inuse = profile(USLUB_HEAP_INUSE);
	/* the call site alone (frame pointers stopping in uslub): the six
	 * share one stack */
	CHECK_EQ(no_stack(inuse) - before, whole ? 4 * SIZE : 0);
	CHECK_EQ(line_ending(inuse, leaf[0], NULL), (long long)N * SIZE);   /* kept */
	frame_of(site_addr[3], leaf[3], sizeof(leaf[3]));
	const char *l;
	int lines = 0;
	for (l = inuse; (l = strstr(l, leaf[3])); l++)
		lines++;
	CHECK_EQ(lines, whole ? 2 : 1);          /* one frame: one stack */
	free(inuse);
	_uslub_stacks_limit(0);
	for (int i = 0; i < 6; i++)
		uslub_kfree(d[i]);
	inuse = profile(USLUB_HEAP_INUSE);
	CHECK_EQ(no_stack(inuse), before);
	free(inuse);
	for (int s = 0; s < 3; s += 2)
		for (int i = 0; i < N; i++)
			uslub_kfree(objs[s][i]);
	printf("PASS: stacks per call site, leaf last, leak view, bounded table\n");
	return 0;
}
