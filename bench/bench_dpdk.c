/*
 * uslub-bench-dpdk: the benchmarks on a DPDK rte_mempool (single-object
 * rte_mempool_get / rte_mempool_put through the per-lcore cache; B2:
 * rte_mempool_get_bulk / rte_mempool_put_bulk through the same cache).
 *
 * The EAL runs without hugepages, PCI or shared config, on lcore 0, so it
 * works as root on any machine:
 *   --no-huge --no-pci --no-shconf --no-telemetry -l 0 -m MB --log-level=1
 * (MB is 256 unless USLUB_BENCH_DPDK_MEM_MB says otherwise). Everything
 * after the program name is ours, not the EAL's.
 *
 * B4: the freeing thread registers with rte_thread_register() so that it
 * gets an lcore id and its own mempool cache, as a second worker lcore
 * would; if registration fails it frees through the pool's ring directly
 * (reported as "consumer_cache":false).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_version.h>

#define DPDK_CACHE_SIZE 256 /* per-lcore cache (RTE_MEMPOOL_CACHE_MAX_SIZE is 512) */

struct peer_ctx {
	struct rte_mempool *mp;
	size_t size;
	unsigned int n;
	int consumer_started;     /* B4: a freeing thread ran                */
	int consumer_registered;  /* ... and got an lcore id (and a cache)   */
	unsigned int consumer_lcore;
};

static const char peer_default_label[] = "dpdk";

static struct peer_ctx *peer_open(size_t size, size_t max_live)
{
	static int seq;
	char name[RTE_MEMPOOL_NAMESIZE];
	struct peer_ctx *c = calloc(1, sizeof(*c));
	unsigned int n = 4095;

	if (!c)
		return NULL;
	/* room for max_live objects plus what two lcore caches can hold
	 * (up to 1.5 * cache_size each); 2^k - 1 elements is the ring's best */
	while (n < max_live + 4 * DPDK_CACHE_SIZE)
		n = n * 2 + 1;
	snprintf(name, sizeof(name), "bench-%zu-%d", size, seq++);
	c->mp = rte_mempool_create(name, n, (unsigned int)size, DPDK_CACHE_SIZE,
				   0, NULL, NULL, NULL, NULL, SOCKET_ID_ANY, 0);
	if (!c->mp) {
		fprintf(stderr, "bench: rte_mempool_create: %s\n",
			rte_strerror(rte_errno));
		free(c);
		return NULL;
	}
	c->size = size;
	c->n = n;
	return c;
}

static void peer_close(struct peer_ctx *c)
{
	rte_mempool_free(c->mp);
	free(c);
}

static inline void *peer_alloc(struct peer_ctx *c)
{
	void *p;
	if (__builtin_expect(rte_mempool_get(c->mp, &p) < 0, 0))
		return NULL;
	return p;
}

static inline void peer_free(struct peer_ctx *c, void *p)
{
	rte_mempool_put(c->mp, p);
}

#define PEER_HAS_BULK 1

static inline int peer_alloc_bulk(struct peer_ctx *c, size_t n, void **p)
{
	if (__builtin_expect(rte_mempool_get_bulk(c->mp, p, (unsigned int)n) < 0, 0))
		return 0;
	return (int)n;
}

static inline void peer_free_bulk(struct peer_ctx *c, size_t n, void **p)
{
	rte_mempool_put_bulk(c->mp, p, (unsigned int)n);
}

static void peer_thread_start(struct peer_ctx *c)
{
	c->consumer_started = 1;
	if (rte_thread_register() == 0) {
		c->consumer_registered = 1;
		c->consumer_lcore = rte_lcore_id();
	} else {
		fprintf(stderr, "bench: rte_thread_register failed (%s); the "
			"consumer frees without a cache\n", rte_strerror(rte_errno));
	}
}

static void peer_thread_stop(struct peer_ctx *c)
{
	/* Give back what sits in this lcore's cache, then the lcore id. */
	if (c->consumer_registered) {
		struct rte_mempool_cache *cache =
			rte_mempool_default_cache(c->mp, rte_lcore_id());
		if (cache)
			rte_mempool_cache_flush(cache, c->mp);
		rte_thread_unregister();
	}
}

static void peer_extra_json(struct peer_ctx *c, FILE *f)
{
	fprintf(f, ",\"dpdk_version\":\"%s\",\"cache_size\":%d,\"pool_elts\":%u,"
		"\"ops\":\"%s\"", rte_version(), DPDK_CACHE_SIZE, c->n,
		rte_mempool_get_ops(c->mp->ops_index)->name);
	if (c->consumer_registered)
		fprintf(f, ",\"consumer_cache\":true,\"consumer_lcore\":%u",
			c->consumer_lcore);
	else if (c->consumer_started)
		fprintf(f, ",\"consumer_cache\":false");
}

#include "bench_core.h"

int main(int argc, char **argv)
{
	char mem[32];
	const char *mb = getenv("USLUB_BENCH_DPDK_MEM_MB");
	char *eal_argv[] = {
		argv[0], "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
		"-l", "0", "-m", mem, "--log-level=1", NULL,
	};
	int eal_argc = (int)(sizeof(eal_argv) / sizeof(eal_argv[0])) - 1;

	/* --help must not need the EAL */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return bench_main(argc, argv);
	snprintf(mem, sizeof(mem), "%s", mb && *mb ? mb : "256");
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "bench: rte_eal_init failed: %s\n",
			rte_strerror(rte_errno));
		return 3;
	}
	int rc = bench_main(argc, argv);
	rte_eal_cleanup();
	return rc;
}
