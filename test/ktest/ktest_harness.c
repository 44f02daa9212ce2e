/*
 * A program in the style of the kernel's userspace test harness
 * (tools/testing/radix-tree): a small id tree whose nodes come from a
 * kmem_cache, tested through <linux/slab.h> -- here the harness header of
 * libuslub-ktest (include/uslub/ktest/linux/slab.h), so every node is a
 * real uslub object.
 *
 * What it checks, as the kernel's tests use them:
 *   - the non-kernel budget: GFP_NOWAIT insertions fail with -ENOMEM once
 *     kmem_cache_set_non_kernel()'s budget is spent, and nothing leaks;
 *     GFP_KERNEL ones never fail; kmalloc(GFP_NOWAIT) always fails;
 *   - the failures are uslub fault injection (uslub_failslab_injected());
 *   - the callback runs once, on the allocation after a failure, with the
 *     private pointer;
 *   - preloading with kmem_cache_alloc_bulk (all or nothing under the
 *     budget);
 *   - nr_allocated, kmalloc_nr_allocated and the per-cache counters
 *     follow the tree, from several threads, and return to 0;
 *   - kmalloc_verbose prints each allocation and free;
 *   - the cache is a uslub cache (slabinfo), and the library's own
 *     test_kmem_cache_bulk() passes.
 */
#include <linux/slab.h>
#ifdef USLUB_KTEST_KERNEL_GFP
/* the harness header in its kernel mode (ktest_harness_kgfp): the
 * counters are declared by the user, as lib/maple_tree.c does */
extern unsigned int kmem_cache_nr_allocated(struct kmem_cache *);
extern unsigned int kmem_cache_nr_tallocated(struct kmem_cache *);
#define KTEST_MODE "kernel gfp headers"
#else
#define KTEST_MODE "<uslub/slab.h>"
#endif
#if defined(KTEST_EXPECT_KERNEL_GFP) != defined(USLUB_KTEST_KERNEL_GFP)
#error "the harness header chose the wrong mode"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond) do {                                                       \
	if (!(cond)) {                                                         \
		fprintf(stderr, "ktest_harness: %s:%d: %s failed\n",          \
			__FILE__, __LINE__, #cond);                            \
		exit(1);                                                       \
	}                                                                      \
} while (0)

/* ---- the tree: ids 0..4095, three levels of 16 slots ------------------- */
#define SHIFT 4
#define SLOTS (1 << SHIFT)
#define LEVELS 3
#define MAX_ID ((1 << (SHIFT * LEVELS)) - 1)

struct node {
	struct node *parent;
	unsigned int count;
	void *slots[SLOTS];
};

struct idtree {
	pthread_mutex_t lock;
	struct node *root;
};

static struct kmem_cache *node_cache;

/* A preload stash, as radix_tree_preload() keeps one per CPU. */
struct preload {
	int nr;
	struct node *nodes[LEVELS];
};

static struct node *node_alloc(struct preload *pl, gfp_t gfp)
{
	struct node *n = kmem_cache_zalloc(node_cache, gfp);

	if (!n && pl && pl->nr) {
		n = pl->nodes[--pl->nr];
		memset(n, 0, sizeof(*n));
	}
	return n;
}

/* Insert @item at @id; -ENOMEM (tree unchanged but for empty nodes kept)
 * or -EEXIST. */
static int idtree_insert(struct idtree *t, unsigned int id, void *item, struct preload *pl,
			 gfp_t gfp)
{
	struct node **slot = &t->root, *parent = NULL;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (int level = LEVELS - 1; level >= 0; level--) {
		if (!*slot) {
			struct node *n = node_alloc(pl, gfp);
			if (!n) {
				ret = -ENOMEM;
				goto out;
			}
			n->parent = parent;
			*slot = n;
			if (parent)
				parent->count++;
		}
		parent = *slot;
		unsigned int idx = (id >> (level * SHIFT)) & (SLOTS - 1);
		if (level == 0) {
			if (parent->slots[idx]) {
				ret = -EEXIST;
				goto out;
			}
			parent->slots[idx] = item;
			parent->count++;
		} else {
			slot = (struct node **)&parent->slots[idx];
		}
	}
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* Free every node with a count of 0 from @n up. */
static void shrink_up(struct idtree *t, struct node *n)
{
	while (n && !n->count) {
		struct node *p = n->parent;
		if (p) {
			for (int i = 0; i < SLOTS; i++)
				if (p->slots[i] == n)
					p->slots[i] = NULL;
			p->count--;
		} else {
			t->root = NULL;
		}
		kmem_cache_free(node_cache, n);
		n = p;
	}
}

/* The leaf node that holds @id's slot, or NULL (t->lock held). */
static struct node *idtree_leaf(struct idtree *t, unsigned int id)
{
	struct node *n = t->root;

	for (int level = LEVELS - 1; n && level > 0; level--)
		n = n->slots[(id >> (level * SHIFT)) & (SLOTS - 1)];
	return n;
}

static void *idtree_remove(struct idtree *t, unsigned int id)
{
	struct node *n;
	void *item = NULL;

	pthread_mutex_lock(&t->lock);
	n = idtree_leaf(t, id);
	if (n) {
		item = n->slots[id & (SLOTS - 1)];
		if (item) {
			n->slots[id & (SLOTS - 1)] = NULL;
			n->count--;
		}
		shrink_up(t, n);
	}
	pthread_mutex_unlock(&t->lock);
	return item;
}

static void *idtree_lookup(struct idtree *t, unsigned int id)
{
	struct node *n;
	void *item = NULL;

	pthread_mutex_lock(&t->lock);
	n = idtree_leaf(t, id);
	if (n)
		item = n->slots[id & (SLOTS - 1)];
	pthread_mutex_unlock(&t->lock);
	return item;
}

/* Nodes of the tree, counted by walking it. */
static unsigned long count_nodes(struct node *n, int level)
{
	unsigned long c = 1;

	if (level > 0)
		for (int i = 0; i < SLOTS; i++)
			if (n->slots[i])
				c += count_nodes(n->slots[i], level - 1);
	return c;
}

static unsigned long tree_nodes(struct idtree *t)
{
	return t->root ? count_nodes(t->root, LEVELS - 1) : 0;
}

static void item_kill_tree(struct idtree *t)
{
	for (unsigned int id = 0; id <= MAX_ID; id++) {
		void *item = idtree_remove(t, id);
		if (item)
			kfree(item);
	}
	CHECK(t->root == NULL);
}

static void *item_create(unsigned int id)
{
	unsigned int *p = kmalloc(sizeof(*p), GFP_KERNEL);

	CHECK(p);
	*p = id;
	return p;
}

/* ---- the tests ------------------------------------------------------- */

static void test_budget(void)
{
	struct idtree t = { PTHREAD_MUTEX_INITIALIZER, NULL };
	unsigned long injected = uslub_failslab_injected();
	void *item = item_create(1);

	/* budget 0: a GFP_NOWAIT insertion into an empty tree needs a node */
	kmem_cache_set_non_kernel(node_cache, 0);
	CHECK(idtree_insert(&t, 1, item, NULL, GFP_NOWAIT) == -ENOMEM);
	CHECK(t.root == NULL);
	CHECK(uslub_failslab_injected() == injected + 1);
	/* GFP_ATOMIC does not reclaim either */
	CHECK(idtree_insert(&t, 1, item, NULL, GFP_ATOMIC) == -ENOMEM);
	/* two units: two of the three levels, then -ENOMEM; the nodes made
	 * stay in the tree (as the radix tree keeps them) */
	kmem_cache_set_non_kernel(node_cache, 2);
	CHECK(idtree_insert(&t, 1, item, NULL, GFP_NOWAIT) == -ENOMEM);
	CHECK(tree_nodes(&t) == 2);
	CHECK(kmem_cache_nr_allocated(node_cache) == 2);
	/* GFP_KERNEL does not use the budget and never fails */
	CHECK(idtree_insert(&t, 1, item, NULL, GFP_KERNEL) == 0);
	CHECK(idtree_lookup(&t, 1) == item);
	CHECK(tree_nodes(&t) == 3 && kmem_cache_nr_allocated(node_cache) == 3);
	CHECK(uslub_failslab_injected() == injected + 3);

	/* kmalloc: GFP_NOWAIT always fails, whatever the budget */
	kmem_cache_set_non_kernel(node_cache, 100);
	CHECK(kmalloc(32, GFP_NOWAIT) == NULL);
	CHECK(kzalloc(9000, GFP_ATOMIC) == NULL);
	kmem_cache_set_non_kernel(node_cache, 0);

	item_kill_tree(&t);
	CHECK(kmem_cache_nr_allocated(node_cache) == 0);
	printf("budget: ok\n");
}

static int callback_runs;
static struct idtree *callback_tree;

/* Runs on the allocation after a failure, as "another writer" (the maple
 * tree's nomem race test does this): a store into an existing leaf, which
 * allocates nothing. The shim disarms the callback only after it returns,
 * so a callback that allocated from the cache would run itself again. */
static void writer2(void *priv)
{
	CHECK(priv == callback_tree);
	callback_runs++;
	CHECK(idtree_insert(callback_tree, 5, item_create(5), NULL, GFP_NOWAIT) == 0);
}

static void test_callback(void)
{
	struct idtree t = { PTHREAD_MUTEX_INITIALIZER, NULL };
	struct node *n;
	void *item;

	CHECK(idtree_insert(&t, 6, item_create(6), NULL, GFP_KERNEL) == 0);
	callback_tree = &t;
	kmem_cache_set_callback(node_cache, writer2);
	kmem_cache_set_private(node_cache, &t);
	kmem_cache_set_non_kernel(node_cache, 0);
	/* id 100 needs two new nodes: refused */
	item = item_create(100);
	CHECK(idtree_insert(&t, 100, item, NULL, GFP_NOWAIT) == -ENOMEM);
	kfree(item);
	CHECK(callback_runs == 0);
	/* the next allocation (a preload, outside the tree's lock) runs
	 * writer2 first, once */
	n = kmem_cache_alloc(node_cache, GFP_KERNEL);
	CHECK(n && callback_runs == 1);
	CHECK(idtree_lookup(&t, 5) != NULL);
	kmem_cache_free(node_cache, n);
	n = kmem_cache_alloc(node_cache, GFP_KERNEL);
	CHECK(n && callback_runs == 1);
	kmem_cache_free(node_cache, n);
	kmem_cache_set_callback(node_cache, NULL);
	kmem_cache_set_private(node_cache, NULL);
	item_kill_tree(&t);
	printf("callback: ok\n");
}

static void test_preload_bulk(void)
{
	struct idtree t = { PTHREAD_MUTEX_INITIALIZER, NULL };
	struct preload pl = { 0 };

	/* the budget covers 2 of 3: the bulk call fails whole */
	kmem_cache_set_non_kernel(node_cache, 2);
	CHECK(kmem_cache_alloc_bulk(node_cache, GFP_NOWAIT, LEVELS, (void **)pl.nodes) == 0);
	CHECK(kmem_cache_nr_allocated(node_cache) == 0);
	/* ... and used it up */
	CHECK(kmem_cache_alloc(node_cache, GFP_NOWAIT) == NULL);
	/* preload with GFP_KERNEL, then insert under GFP_NOWAIT from it */
	CHECK(kmem_cache_alloc_bulk(node_cache, GFP_KERNEL, LEVELS, (void **)pl.nodes) == LEVELS);
	pl.nr = LEVELS;
	CHECK(kmem_cache_nr_allocated(node_cache) == LEVELS);
	CHECK(idtree_insert(&t, 300, item_create(300), &pl, GFP_NOWAIT) == 0);
	CHECK(pl.nr == 0 && tree_nodes(&t) == LEVELS);
	/* bulk free of what a second preload did not use */
	CHECK(kmem_cache_alloc_bulk(node_cache, GFP_KERNEL, LEVELS, (void **)pl.nodes) == LEVELS);
	kmem_cache_free_bulk(node_cache, LEVELS, (void **)pl.nodes);
	item_kill_tree(&t);
	CHECK(kmem_cache_nr_allocated(node_cache) == 0);
	printf("preload/bulk: ok\n");
}

#define THREADS 4
#define PER_THREAD 512
static struct idtree shared_tree = { PTHREAD_MUTEX_INITIALIZER, NULL };

static void *worker(void *arg)
{
	unsigned int base = (unsigned int)(uintptr_t)arg * PER_THREAD;

	for (int round = 0; round < 3; round++) {
		for (unsigned int i = 0; i < PER_THREAD; i++)
			CHECK(idtree_insert(&shared_tree, base + i, item_create(base + i), NULL,
					    GFP_KERNEL) == 0);
		for (unsigned int i = 0; i < PER_THREAD; i += 2)
			kfree(idtree_remove(&shared_tree, base + i));
		for (unsigned int i = 1; i < PER_THREAD; i += 2)
			kfree(idtree_remove(&shared_tree, base + i));
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[THREADS];

	kmem_cache_zero_nr_tallocated(node_cache);
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	CHECK(shared_tree.root == NULL);
	CHECK(kmem_cache_nr_allocated(node_cache) == 0);
	/* every insertion into an emptied range made its nodes again */
	CHECK(kmem_cache_nr_tallocated(node_cache) >= THREADS * 3);
	CHECK(kmem_cache_get_alloc(node_cache) == 0);
	printf("threads: ok (%lu node allocations)\n",
	       (unsigned long)kmem_cache_nr_tallocated(node_cache));
}

/* kmalloc_verbose: the lines the shim prints, captured from stdout. */
static void test_verbose_output(void)
{
	char path[] = "/tmp/ktest_harness.XXXXXX";
	char buf[512], want[64];
	int fd = mkstemp(path), saved;
	void *n, *p;
	ssize_t len;

	CHECK(fd >= 0);
	fflush(stdout);
	saved = dup(1);
	CHECK(saved >= 0 && dup2(fd, 1) == 1);
	kmalloc_verbose = 1;
	n = kmem_cache_alloc(node_cache, GFP_KERNEL);
	kmem_cache_free(node_cache, n);
	p = kmalloc(24, GFP_KERNEL);
	kfree(p);
	kmalloc_verbose = 0;
	fflush(stdout);
	CHECK(dup2(saved, 1) == 1);
	close(saved);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	CHECK(len > 0);
	buf[len] = 0;
	snprintf(want, sizeof(want), "Allocating %p from slab\n", n);
	CHECK(strstr(buf, want));
	snprintf(want, sizeof(want), "Freeing %p to slab\n", n);
	CHECK(strstr(buf, want));
	snprintf(want, sizeof(want), "Allocating %p from malloc\n", p);
	CHECK(strstr(buf, want));
	snprintf(want, sizeof(want), "Freeing %p to malloc\n", p);
	CHECK(strstr(buf, want));
	printf("kmalloc_verbose: ok\n");
}

int main(void)
{
	struct uslub_slabinfo si;

	printf("harness header mode: %s\n", KTEST_MODE);
	node_cache = kmem_cache_create("idtree_node", sizeof(struct node), 0,
				       SLAB_PANIC | SLAB_RECLAIM_ACCOUNT, NULL);
	CHECK(node_cache);
	CHECK(uslub_cache_slabinfo(node_cache, &si) == 0 && !strcmp(si.name, "idtree_node"));

	test_budget();
	test_callback();
	test_preload_bulk();
	test_threads();
	test_verbose_output();
	test_kmem_cache_bulk();
	printf("test_kmem_cache_bulk: ok\n");

	/* the harness's leak check: nothing left anywhere */
	CHECK(nr_allocated == 0);
	CHECK(kmalloc_nr_allocated == 0);
	CHECK(kmem_cache_nr_allocated(node_cache) == 0);
	kmem_cache_destroy(node_cache);
	printf("nr_allocated = %d, kmalloc_nr_allocated = %d\n", nr_allocated,
	       kmalloc_nr_allocated);
	return 0;
}
