/*
 * bench_rcu.c — B-rcu: what freeing an object after an RCU grace period
 * costs per object, kfree_rcu() (uslub's rcu_free sheaf: one call_rcu per
 * full sheaf) against liburcu's call_rcu() per object with a callback that
 * frees it (glibc's free() of a malloc()ed object, and uslub's kfree() of
 * a kmalloc()ed one), in one process (liburcu's default flavour, one
 * call_rcu worker).
 *
 * One sample: N objects allocated (not timed), then timed: a free after a
 * grace period of each, then kvfree_rcu_barrier() / rcu_barrier(), so the
 * time covers the callbacks too (they run in liburcu's worker, on another
 * CPU when there is one). Per object: that time / N. The three methods
 * run interleaved (the order rotates each repeat); the median of the
 * repeats is printed, one JSON object per line:
 *   {"method": "kfree_rcu", "ns_per_obj": ..., "samples": [...]}
 * Usage: uslub-bench-rcu [repeats] [objects]
 */
#include <uslub/slab.h>
#include <urcu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct node {
	unsigned long key;
	struct rcu_head rcu;
	unsigned long payload[5];           /* 64 bytes in all */
};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void free_glibc_cb(struct rcu_head *h)
{
	free(caa_container_of(h, struct node, rcu));
}

static void free_uslub_cb(struct rcu_head *h)
{
	kfree(caa_container_of(h, struct node, rcu));
}

static struct node **objs;
static long n;

static double run_kfree_rcu(void)
{
	for (long i = 0; i < n; i++)
		objs[i] = kmalloc(sizeof(struct node), GFP_KERNEL);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		kfree_rcu(objs[i], rcu);
	kvfree_rcu_barrier();
	return (now_ns() - t0) / n;
}

static double run_call_rcu(bool glibc)
{
	for (long i = 0; i < n; i++)
		objs[i] = glibc ? malloc(sizeof(struct node)) : kmalloc(sizeof(struct node), GFP_KERNEL);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		call_rcu(&objs[i]->rcu, glibc ? free_glibc_cb : free_uslub_cb);
	rcu_barrier();
	return (now_ns() - t0) / n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int repeats = argc > 1 ? atoi(argv[1]) : 11;
	n = argc > 2 ? atol(argv[2]) : 200000;
	if (repeats < 1 || n < 1)
		return 2;
	objs = calloc((size_t)n, sizeof(*objs));
	double *t[3];
	for (int m = 0; m < 3; m++)
		t[m] = calloc((size_t)repeats, sizeof(double));
	static const char *names[3] = { "kfree_rcu", "call_rcu+glibc_free", "call_rcu+kfree" };
	rcu_register_thread();
	run_kfree_rcu();                     /* warm up: caches, sheaves, workers */
	run_call_rcu(true);
	run_call_rcu(false);
	for (int r = 0; r < repeats; r++)
		for (int k = 0; k < 3; k++) {
			int m = (r + k) % 3;
			t[m][r] = m == 0 ? run_kfree_rcu() : run_call_rcu(m == 1);
		}
	rcu_unregister_thread();
	for (int m = 0; m < 3; m++) {
		double *s = calloc((size_t)repeats, sizeof(double));
		memcpy(s, t[m], sizeof(double) * (size_t)repeats);
		qsort(s, (size_t)repeats, sizeof(double), cmp);
		printf("{\"method\": \"%s\", \"objects\": %ld, \"ns_per_obj\": %.2f, \"samples\": [",
		       names[m], n, s[repeats / 2]);
		for (int r = 0; r < repeats; r++)
			printf("%s%.2f", r ? ", " : "", t[m][r]);
		printf("]}\n");
		free(s);
	}
	return 0;
}
