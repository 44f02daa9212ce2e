/*
 * dlclose: allocation tags of a shared object that is unloaded
 * (USLUB_PROFILING=1, set by CTest; skips with 77 when profiling is off).
 * argv[1] is the plugin (ext/plugin.c, linked against libuslub.so, as this
 * program is). Found by review; before ed8e1dd the reports and the free of
 * the plugin's objects read its unmapped tags (a crash).
 *   - dlopen: objects allocated through the plugin's tagged site are
 *     listed at that site (file, line, func, calls, bytes), next to a
 *     site of this program;
 *   - dlclose (the plugin really unmapped: RTLD_NOLOAD finds nothing):
 *     uslub_allocinfo() no longer lists the plugin's site, this
 *     program's site is unchanged, uslub_allocinfo_print gives valid JSON
 *     and a table without the plugin's function;
 *   - the plugin's objects are then freed (single and bulk): no crash, no
 *     error, the cache validates, this program's site is still exact;
 *   - loaded again, the plugin's site starts from its new objects only;
 *     unloaded again with a live object, which a thread then frees.
 * At the end everything is freed and the cache destroys.
 */
#include "../integration/check.h"

#include <dlfcn.h>
#include <pthread.h>

typedef void *(*plugin_alloc_fn)(uslub_cache_t *);
typedef const char *(*plugin_site_fn)(unsigned int *);

static uslub_cache_t *s;
static char plugin_file[4096];
static unsigned int plugin_line;
static int own_line;
static int64_t own_calls;

/* calls at file:line (-1: not listed); each site listed at most once */
static int64_t site_calls(const char *file, unsigned int line, const char *func,
			  int64_t *bytes)
{
	static struct uslub_allocinfo info[512];
	size_t n = uslub_allocinfo(info, 512);
	CHECK(n <= 512);
	int64_t calls = -1;
	for (size_t i = 0; i < n; i++) {
		CHECK(info[i].file && info[i].func);
		CHECK(info[i].calls > 0 && info[i].bytes > 0);
		if (strcmp(info[i].file, file) || info[i].line != line)
			continue;
		CHECK_MSG(calls < 0, "%s:%u listed twice", file, line);
		CHECK_MSG(!strcmp(info[i].func, func), "%s:%u: func %s, expected %s", file, line,
			  info[i].func, func);
		calls = info[i].calls;
		if (bytes)
			*bytes = info[i].bytes;
	}
	return calls;
}

static void check_own_site(void)
{
	int64_t bytes = 0;
	CHECK_EQ(site_calls(__FILE__, (unsigned)own_line, "main", &bytes), own_calls);
	CHECK_EQ(bytes, own_calls * (int64_t)slabinfo_get(s).size);
}

static char *allocinfo_string(int fmt)
{
	FILE *f = tmpfile();
	CHECK(f);
	uslub_allocinfo_print(f, fmt);
	fflush(f);
	long len = ftell(f);
	CHECK(len >= 0);
	char *buf = malloc((size_t)len + 1);
	CHECK(buf);
	rewind(f);
	CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	buf[len] = 0;
	return buf;
}

static void *load(const char *path, plugin_alloc_fn *pa)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK_MSG(h, "dlopen %s: %s", path, dlerror());
	*pa = (plugin_alloc_fn)dlsym(h, "plugin_alloc");
	plugin_site_fn ps = (plugin_site_fn)dlsym(h, "plugin_site");
	CHECK(*pa && ps);
	return h;
}

static void unload(void *h, const char *path)
{
	CHECK_EQ(dlclose(h), 0);
	void *again = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	CHECK_MSG(!again, "%s still loaded after dlclose", path);
}

static void *free_later(void *arg)
{
	uslub_cache_free(s, arg);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}
	if (uslub_profiling_enabled() != 1) {   /* exact figures: exact mode */
		printf("dlclose: profiling is not exact (USLUB_PROFILING=1), skipped\n");
		return 77;
	}
	double t0 = now_s();
	unsigned long err0 = uslub_error_count();
	const char *path = argv[1];
	s = uslub_cache_create("dl-objs", 128, 0, 0, NULL);
	CHECK(s);
	const int64_t size = (int64_t)slabinfo_get(s).size;

	enum { OWN = 3, PLUG = 5 };
	void *own[OWN];
	for (int i = 0; i < OWN; i++) {
		own_line = __LINE__; own[i] = uslub_cache_alloc(s, 0);
		CHECK(own[i]);
		own_calls++;
	}
	check_own_site();

	/* load, allocate through the plugin's site */
	plugin_alloc_fn pa;
	void *h = load(path, &pa);
	void *px[PLUG];
	for (int i = 0; i < PLUG; i++)
		CHECK((px[i] = pa(s)));
	plugin_site_fn ps = (plugin_site_fn)dlsym(h, "plugin_site");
	snprintf(plugin_file, sizeof(plugin_file), "%s", ps(&plugin_line));
	CHECK(plugin_line > 0);
	int64_t bytes = 0;
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", &bytes), PLUG);
	CHECK_EQ(bytes, PLUG * size);
	char *table = allocinfo_string(USLUB_FMT_TABLE);
	CHECK(strstr(table, "plugin_alloc"));
	free(table);
	check_own_site();

	/* unload with the plugin's objects live */
	unload(h, path);
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", NULL), -1);
	check_own_site();
	char *json = allocinfo_string(USLUB_FMT_JSON);
	CHECK_MSG(json_valid(json), "allocinfo JSON after dlclose does not parse:\n%s", json);
	CHECK(!strstr(json, "plugin_alloc"));
	free(json);
	table = allocinfo_string(USLUB_FMT_TABLE);
	CHECK(!strstr(table, "plugin_alloc"));
	free(table);

	/* free the unloaded plugin's objects: one, then the rest in bulk */
	uslub_cache_free(s, px[0]);
	uslub_cache_free_bulk(s, PLUG - 1, px + 1);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", NULL), -1);
	check_own_site();

	/* load again: the site counts only its new objects */
	h = load(path, &pa);
	void *y = pa(s), *z = pa(s);
	CHECK(y && z);
	ps = (plugin_site_fn)dlsym(h, "plugin_site");
	unsigned int line2;
	CHECK(!strcmp(ps(&line2), plugin_file) && line2 == plugin_line);
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", &bytes), 2);
	CHECK_EQ(bytes, 2 * size);
	uslub_cache_free(s, y);
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", NULL), 1);
	/* unload with one live object; another thread frees it */
	unload(h, path);
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", NULL), -1);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_later, z) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(site_calls(plugin_file, plugin_line, "plugin_alloc", NULL), -1);
	check_own_site();

	for (int i = 0; i < OWN; i++) {
		uslub_cache_free(s, own[i]);
		own_calls--;
	}
	CHECK_EQ(site_calls(__FILE__, (unsigned)own_line, "main", NULL), -1);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQU(slabinfo_get(s).live_objs, 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQU(uslub_error_count(), err0);
	printf("dlclose: a plugin's tagged site listed while loaded, gone after dlclose, "
	       "its objects freed after it: ok (%.2f s)\n", now_s() - t0);
	return 0;
}
