/*
 * uslub-bench-uslub: the benchmarks on uslub object caches
 * (uslub_cache_create / uslub_cache_alloc(GFP_KERNEL) / uslub_cache_free),
 * linked statically with libuslub.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "uslub.h"

struct peer_ctx {
	uslub_cache_t *s;
};

static const char peer_default_label[] = "uslub";

static struct peer_ctx *peer_open(size_t size, size_t max_live)
{
	char name[32];
	struct peer_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(name, sizeof(name), "bench-%zu", size);
	c->s = uslub_cache_create(name, size, 0, 0, NULL);
	if (!c->s) {
		perror("uslub_cache_create");
		free(c);
		return NULL;
	}
	return c;
}

static void peer_close(struct peer_ctx *c)
{
	uslub_flush_thread();
	if (uslub_cache_destroy(c->s))
		fprintf(stderr, "bench: uslub_cache_destroy failed (objects live?)\n");
	free(c);
}

static inline void *peer_alloc(struct peer_ctx *c)
{
	return uslub_cache_alloc(c->s, USLUB_GFP_KERNEL);
}

static inline void peer_free(struct peer_ctx *c, void *p)
{
	uslub_cache_free(c->s, p);
}

static void peer_thread_start(struct peer_ctx *c) {}
static void peer_thread_stop(struct peer_ctx *c) { uslub_flush_thread(); }

/* Every non-zero SLUB counter of the run's cache, to explain the figures. */
static void peer_extra_json(struct peer_ctx *c, FILE *f)
{
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(c->s, st);
	fprintf(f, ",\"stats\":{");
	int n = 0;
	for (int i = 0; i < USLUB_NR_STATS; i++)
		if (st[i])
			fprintf(f, "%s\"%s\":%llu", n++ ? "," : "",
				uslub_stat_name((enum uslub_stat_item)i),
				(unsigned long long)st[i]);
	fprintf(f, "},\"errors\":%lu", uslub_error_count());
}

#include "bench_core.h"

int main(int argc, char **argv)
{
	int rc = bench_main(argc, argv);
	unsigned long errors = uslub_error_count();
	if (rc == 0 && errors) {
		fprintf(stderr, "bench: uslub reported %lu error(s) during the run\n",
			errors);
		return 4;
	}
	return rc;
}
