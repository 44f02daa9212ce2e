/*
 * Caller tags (ext/caller_tag.c), white box, with USLUB_PROFILING=1 (set
 * by CTest): the malloc family's dynamic tags, one per return address.
 *   - one address gives one tag, every time; distinct addresses distinct
 *     tags; a tag is counted and listed like a static one (kmalloc objects
 *     allocated with it: exact calls and bytes), and freeing its objects
 *     takes it back out of allocinfo (bytes and calls to 0);
 *   - the table is bounded: past its limit (lowered here) a new address
 *     gets the shared "other" tag, listed as "<other call sites>", which
 *     also returns to 0; addresses claimed before keep their own tags;
 *   - threads racing to claim the same new addresses all get the same tag
 *     per address (the lock-free claim);
 *   - names: an address in libc resolves to "/path/libc...+0xOFF" and
 *     "symbol+0xOFF" (line 0); an address outside any module to "0x...";
 *   - modules (issue 25): an address claimed in a module opened by a
 *     relative path, named after the program left that directory, names
 *     the module's real path; one claimed in a module unloaded before the
 *     report is named "/real/path.so+0xOFF" and "<unloaded:
 *     /real/path.so>", and after a sweep the address claims a new slot
 *     (the old one retired, its tag unchanged).
 */
#define _GNU_SOURCE
#include "cache/internal.h"
#include "unit.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct uslub_allocinfo info[1024];

/* calls and bytes allocinfo lists for site name @file (0, 0: absent) */
static void site(const char *file, int64_t *calls, int64_t *bytes)
{
	size_t n = uslub_allocinfo(info, 1024);
	CHECK(n <= 1024);
	*calls = *bytes = 0;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(info[i].file, file)) {
			CHECK_EQ(info[i].line, 0);
			*calls += info[i].calls;
			*bytes += info[i].bytes;
		}
}

static void *alloc_with(struct uslub_alloc_tag *tag, size_t size)
{
	uslub_alloc_tag_cur = tag;
	void *p = uslub_kmalloc_noprof(size, 0);
	CHECK(p);
	return p;
}

#define NT 8
#define NA 64
static struct uslub_alloc_tag *seen[NT][NA];

static void *claim(void *arg)
{
	long t = (long)arg;
	for (int i = 0; i < NA; i++)
		seen[t][i] = _uslub_caller_tag(0x200000 + (uintptr_t)i * 8);
	return NULL;
}

int main(void)
{
	if (uslub_profiling_enabled() != 1) {
		printf("unit_caller_tag: needs USLUB_PROFILING=1\n");
		return 77;
	}
	/* one address, one tag */
	uintptr_t a = 0x1000, b = 0x1010;
	struct uslub_alloc_tag *ta = _uslub_caller_tag(a), *tb = _uslub_caller_tag(b);
	CHECK(ta && tb && ta != tb);
	CHECK(_uslub_caller_tag(a) == ta);
	CHECK(_uslub_caller_tag_slot(ta) >= 0 && _uslub_caller_tag_slot(tb) >= 0);

	/* counted and listed; frees return it to 0 */
	void *p[20];
	for (int i = 0; i < 20; i++)
		p[i] = alloc_with(i < 15 ? ta : tb, 64);
	size_t stride = uslub_ksize(p[0]);
	int64_t c, by;
	site("0x1000", &c, &by);
	CHECK_EQ(c, 15);
	CHECK_EQ(by, 15 * (int64_t)stride);
	site("0x1010", &c, &by);
	CHECK_EQ(c, 5);
	for (int i = 0; i < 20; i++)
		uslub_kfree(p[i]);
	site("0x1000", &c, &by);
	CHECK_EQ(c, 0);
	CHECK_EQ(by, 0);
	site("0x1010", &c, &by);
	CHECK_EQ(c, 0);

	/* full: new addresses share "other"; old ones keep theirs */
	unsigned int used = _uslub_caller_tags_limit(0);
	_uslub_caller_tags_limit(used + 3);
	struct uslub_alloc_tag *t[10];
	for (int i = 0; i < 10; i++)
		t[i] = _uslub_caller_tag(0x100000 + (uintptr_t)i * 16);
	for (int i = 0; i < 3; i++)
		CHECK(_uslub_caller_tag_slot(t[i]) >= 0);
	for (int i = 3; i < 10; i++)
		CHECK_EQ(_uslub_caller_tag_slot(t[i]), -2);
	CHECK(_uslub_caller_tag(a) == ta);
	CHECK(_uslub_caller_tag(0x100000) == t[0]);
	for (int i = 0; i < 10; i++)
		p[i] = alloc_with(t[i], 200);
	site("<other call sites>", &c, &by);
	CHECK_EQ(c, 7);
	CHECK_EQ(by, 7 * (int64_t)uslub_ksize(p[9]));
	for (int i = 0; i < 10; i++)
		uslub_kfree(p[i]);
	site("<other call sites>", &c, &by);
	CHECK_EQ(c, 0);
	CHECK_EQ(by, 0);
	_uslub_caller_tags_limit(0);

	/* racing claims agree */
	pthread_t th[NT];
	for (long i = 0; i < NT; i++)
		CHECK(pthread_create(&th[i], NULL, claim, (void *)i) == 0);
	for (int i = 0; i < NT; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	for (int i = 0; i < NA; i++) {
		CHECK(_uslub_caller_tag_slot(seen[0][i]) >= 0);
		for (int k = 1; k < NT; k++)
			CHECK(seen[k][i] == seen[0][i]);
		for (int j = 0; j < i; j++)
			CHECK(seen[0][j] != seen[0][i]);
	}

	/* names: libc's module and symbol; nothing for a stray address */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	CHECK(libc);
	void *qs = dlsym(libc, "qsort");    /* libc's own: not a PLT, not ASan's */
	CHECK(qs);
	struct uslub_alloc_tag *tl = _uslub_caller_tag((uintptr_t)qs + 4);
	const char *file, *func;
	_uslub_caller_tag_name(_uslub_caller_tag_slot(tl), &file, &func);
	CHECK(file[0] == '/' && strstr(file, "libc") && strstr(file, "+0x"));
	CHECK(strstr(func, "qsort") && strstr(func, "+0x4"));
	_uslub_caller_tag_name(_uslub_caller_tag_slot(ta), &file, &func);
	CHECK(!strcmp(file, "0x1000") && !strcmp(func, "?"));

	/* modules: unit_caller_plugin.so, next to this program */
	char dir[PATH_MAX], real[PATH_MAX + 32], want[PATH_MAX + 64];
	ssize_t dn = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	CHECK(dn > 0);
	dir[dn] = 0;
	*strrchr(dir, '/') = 0;
	CHECK(realpath(dir, real));
	strcat(real, "/unit_caller_plugin.so");
	char cwd[PATH_MAX];
	CHECK(getcwd(cwd, sizeof(cwd)));
	for (int round = 0; round < 2; round++) {
		CHECK(chdir(dir) == 0);
		void *h = dlopen("./unit_caller_plugin.so", RTLD_NOW | RTLD_LOCAL);
		CHECK(h);
		CHECK(chdir("/") == 0);       /* left before the claim */
		uintptr_t fn = (uintptr_t)dlsym(h, "caller_plugin_fn");
		CHECK(fn);
		/* another address each round: a slot named once keeps it */
		uintptr_t at = fn + 4 + (uintptr_t)round;
		struct uslub_alloc_tag *tm = _uslub_caller_tag(at);
		CHECK(_uslub_caller_tag_slot(tm) >= 0);
		Dl_info di;
		CHECK(dladdr((void *)fn, &di) && di.dli_fbase);
		snprintf(want, sizeof(want), "%s+0x%lx", real,
			 (unsigned long)(at - (uintptr_t)di.dli_fbase));
		if (round == 0) {               /* named while loaded */
			_uslub_caller_tag_name(_uslub_caller_tag_slot(tm), &file, &func);
			CHECK(!strcmp(file, want));
			CHECK(!strncmp(func, "caller_plugin_fn+0x", 19));
			CHECK(dlclose(h) == 0);
			continue;
		}
		CHECK(dlclose(h) == 0);         /* named after the unload */
		CHECK(!dlopen(real, RTLD_NOW | RTLD_NOLOAD));
		_uslub_caller_tags_sweep();
		_uslub_caller_tag_name(_uslub_caller_tag_slot(tm), &file, &func);
		CHECK(!strcmp(file, want));
		snprintf(want, sizeof(want), "<unloaded: %s>", real);
		CHECK(!strcmp(func, want));
		struct uslub_alloc_tag *tn = _uslub_caller_tag(at);
		CHECK(tn != tm && _uslub_caller_tag_slot(tn) >= 0);
		CHECK(_uslub_caller_tag(at) == tn);
	}
	CHECK(chdir(cwd) == 0);
	printf("unit_caller_tag: ok\n");
	return 0;
}
