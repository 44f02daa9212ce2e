/*
 * uslub-bench-malloc: the benchmarks on plain malloc/free.
 *
 * Linked with no allocator of its own: run as is it measures glibc's
 * malloc; run.py also runs it with LD_PRELOAD=libjemalloc.so.2,
 * libmimalloc.so.2 and libtcmalloc_minimal.so.4. The result line names the
 * library that actually provides malloc ("malloc_lib"), so a preload that
 * did not take is visible.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct peer_ctx {
	size_t size;
};

static const char peer_default_label[] = "malloc";

static struct peer_ctx *peer_open(size_t size, size_t max_live)
{
	/* calloc, not malloc: this bookkeeping must not warm the size class
	 * under test more than the loop itself does */
	struct peer_ctx *c = calloc(1, sizeof(*c));
	if (c)
		c->size = size;
	return c;
}

static void peer_close(struct peer_ctx *c)
{
	free(c);
}

static inline void *peer_alloc(struct peer_ctx *c)
{
	return malloc(c->size);
}

static inline void peer_free(struct peer_ctx *c, void *p)
{
	free(p);
}

static void peer_thread_start(struct peer_ctx *c) {}
static void peer_thread_stop(struct peer_ctx *c) {}

static void peer_extra_json(struct peer_ctx *c, FILE *f)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	const char *lib = "?";
	if (sym && dladdr(sym, &info) && info.dli_fname)
		lib = info.dli_fname;
	fprintf(f, ",\"malloc_lib\":\"%s\"", lib);
}

#include "bench_core.h"

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
