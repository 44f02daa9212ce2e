/*
 * fake_nodes: NUMA node allocation with USLUB_FAKE_NODES=3.
 * The test re-executes itself with the variable set if it is not. Then it
 * allocates from each node with uslub_cache_alloc_node (interleaved, and in
 * runs per node), checks the objects, validates, frees everything from
 * another thread (remote frees onto three nodes' slabs), validates again,
 * shrinks and destroys.
 */
#include "check.h"

#include <pthread.h>

#define NODES 3
#define SIZE 256

struct obj {
	uint32_t magic;
	uint32_t node;
	uint64_t idx;
	unsigned char pad[SIZE - 16];
};

struct free_arg {
	uslub_cache_t *s;
	struct obj **v;
	size_t n;
};

static void check_obj(const struct obj *o, size_t i, int line)
{
	if (o->magic != 0x4e4f4445u || o->idx != i)
		test_fail(__FILE__, line, "object %zu (%p) header corrupted: magic %#x idx %" PRIu64,
			  i, (const void *)o, o->magic, o->idx);
	for (size_t b = 0; b < sizeof(o->pad); b++)
		if (o->pad[b] != (unsigned char)(i + b))
			test_fail(__FILE__, line, "object %zu (%p) byte %zu corrupted", i,
				  (const void *)o, 16 + b);
}

static void *free_all(void *arg)
{
	struct free_arg *a = arg;
	for (size_t i = 0; i < a->n; i++) {
		check_obj(a->v[i], i, __LINE__);
		uslub_cache_free(a->s, a->v[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	if (uslub_nr_nodes() != NODES) {
		const char *again = getenv("USLUB_TEST_FAKE_NODES_REEXEC");
		CHECK_MSG(!again, "uslub_nr_nodes() is %d with USLUB_FAKE_NODES=%s", uslub_nr_nodes(),
			  getenv("USLUB_FAKE_NODES") ? getenv("USLUB_FAKE_NODES") : "(unset)");
		setenv("USLUB_FAKE_NODES", "3", 1);
		setenv("USLUB_TEST_FAKE_NODES_REEXEC", "1", 1);
		fflush(stdout);
		execv("/proc/self/exe", argv);
		test_fail(__FILE__, __LINE__, "execv(/proc/self/exe): %s", strerror(errno));
	}
	CHECK_EQ(uslub_nr_nodes(), NODES);
	test_seed(3);
	unsigned long err0 = uslub_error_count();

	uslub_cache_t *s = uslub_cache_create("fake-nodes-256", SIZE, 0, 0, NULL);
	CHECK(s);
	struct uslub_slabinfo si = slabinfo_get(s);
	size_t per_slab = si.objs_per_slab;
	/* interleaved: 0,1,2,0,1,2,... then runs of several slabs per node */
	size_t n_inter = 3 * 50;
	size_t n_runs = NODES * (3 * per_slab + 5);
	size_t n = n_inter + n_runs + 20;
	struct obj **v = calloc(n, sizeof(*v));
	CHECK(v);
	size_t k = 0;
	for (size_t i = 0; i < n_inter; i++, k++) {
		int node = (int)(i % NODES);
		v[k] = uslub_cache_alloc_node(s, 0, node);
		CHECK_MSG(v[k], "alloc_node(%d) failed: %s", node, strerror(errno));
	}
	uint64_t mismatch = stat_get(s, USLUB_ALLOC_NODE_MISMATCH);
	si = slabinfo_get(s);
	CHECK_MSG(si.num_slabs >= NODES,
		  "objects from %d nodes came from %lu slab(s): the node was not honoured",
		  NODES, si.num_slabs);
	CHECK_MSG(mismatch > 0, "interleaved node allocations never dropped the cpu slab "
				"(ALLOC_NODE_MISMATCH == 0)");
	for (int node = 0; node < NODES; node++)
		for (size_t i = 0; i < n_runs / NODES; i++, k++) {
			v[k] = uslub_cache_alloc_node(s, USLUB_GFP_ZERO, node);
			CHECK_MSG(v[k], "alloc_node(%d) failed: %s", node, strerror(errno));
			const unsigned char *c = (const unsigned char *)v[k];
			for (size_t b = 0; b < SIZE; b++)
				CHECK_MSG(c[b] == 0, "GFP_ZERO alloc_node(%d) byte %zu not zero", node, b);
		}
	for (size_t i = 0; i < 20; i++, k++) {
		v[k] = (i & 1) ? uslub_cache_alloc_node(s, 0, USLUB_NUMA_NO_NODE)
			       : uslub_cache_alloc(s, 0);
		CHECK(v[k]);
	}
	CHECK_EQU(k, n);
	for (size_t i = 0; i < n; i++) {
		CHECK(uslub_owns(v[i]));
		for (size_t j = i + 1; j < n && j < i + 64; j++)
			CHECK(v[i] != v[j]);
		v[i]->magic = 0x4e4f4445u;
		v[i]->idx = i;
		for (size_t b = 0; b < sizeof(v[i]->pad); b++)
			v[i]->pad[b] = (unsigned char)(i + b);
	}
	for (size_t i = 0; i < n; i++)
		check_obj(v[i], i, __LINE__);
	si = slabinfo_get(s);
	CHECK_EQU(si.live_objs, n);
	CHECK(si.num_slabs >= NODES * 3);
	CHECK_EQ(uslub_cache_validate(s), 0);

	/* everything freed remotely, from a thread on whatever node it runs */
	struct free_arg fa = { s, v, n };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, free_all, &fa) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	si = slabinfo_get(s);
	CHECK_EQU(si.live_objs, 0);

	/* reuse after the remote frees, per node, then free locally */
	for (size_t i = 0; i < n; i++) {
		v[i] = uslub_cache_alloc_node(s, 0, (int)(i % NODES));
		CHECK(v[i]);
		memset(v[i], 0x77, SIZE);
	}
	CHECK_EQ(uslub_cache_validate(s), 0);
	for (size_t i = 0; i < n; i++)
		uslub_cache_free(s, v[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);

	/* what the flush leaves: the barns' full sheaves (with sheaves; their
	 * objects count as active until a shrink) and empty slabs, at most
	 * MAX(min_partial, keep) per node (keep: raised while the cache
	 * swings, slub/partial.c) */
	uslub_flush_thread();
	si = slabinfo_get(s);
	CHECK_EQU(si.active_objs, si.barn_full * si.sheaf_capacity);
	if (!si.barn_full)
		CHECK_MSG(si.num_slabs <= (unsigned long)si.min_partial * NODES + si.keep_empty,
			  "%lu empty slabs kept, min_partial %u per node, keep %lu", si.num_slabs,
			  si.min_partial, si.keep_empty);
	uslub_cache_shrink(s);
	si = slabinfo_get(s);
	CHECK_EQU(si.active_objs, 0);
	CHECK_EQU(si.num_slabs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQU(uslub_error_count(), err0);
	free(v);
	printf("fake_nodes: ok (%d nodes)\n", uslub_nr_nodes());
	return 0;
}
