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
 * CPU when there is one). Per object, two clocks: the process's CPU time
 * (CLOCK_PROCESS_CPUTIME_ID: every thread's work, the worker's included;
 * not the waits, and little disturbed by other processes on a busy
 * machine: the cost) and the wall time (what the caller waited). The
 * three methods run interleaved (the order rotates each repeat); the
 * median of the repeats is printed, one JSON object per line:
 *   {"method": "kfree_rcu", "cpu_ns_per_obj": ..., "wall_ns_per_obj": ...,
 *    "cpu_samples": [...], "wall_samples": [...]}
 * Usage: uslub-bench-rcu [repeats] [objects]
 */
#include <uslub/slab.h>
#include <urcu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long n;

struct node {
	unsigned long key;
	struct rcu_head rcu;
	unsigned long payload[5];           /* 64 bytes in all */
};

static double clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct sample {
	double cpu, wall;
};
static double c0, w0;

static void start(void)
{
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	w0 = clock_ns(CLOCK_MONOTONIC);
}

static struct sample stop(void)
{
	struct sample r = { clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0,
			    clock_ns(CLOCK_MONOTONIC) - w0 };
	r.cpu /= n;
	r.wall /= n;
	return r;
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

static struct sample run_kfree_rcu(void)
{
	for (long i = 0; i < n; i++)
		objs[i] = kmalloc(sizeof(struct node), GFP_KERNEL);
	start();
	for (long i = 0; i < n; i++)
		kfree_rcu(objs[i], rcu);
	kvfree_rcu_barrier();
	return stop();
}

static struct sample run_call_rcu(bool glibc)
{
	for (long i = 0; i < n; i++)
		objs[i] = glibc ? malloc(sizeof(struct node)) : kmalloc(sizeof(struct node), GFP_KERNEL);
	start();
	for (long i = 0; i < n; i++)
		call_rcu(&objs[i]->rcu, glibc ? free_glibc_cb : free_uslub_cb);
	rcu_barrier();
	return stop();
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
	struct sample *t[3];
	for (int m = 0; m < 3; m++)
		t[m] = calloc((size_t)repeats, sizeof(struct sample));
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
	double *s = calloc((size_t)repeats, sizeof(double));
	for (int m = 0; m < 3; m++) {
		printf("{\"method\": \"%s\", \"objects\": %ld", names[m], n);
		for (int w = 0; w < 2; w++) {
			for (int r = 0; r < repeats; r++)
				s[r] = w ? t[m][r].wall : t[m][r].cpu;
			qsort(s, (size_t)repeats, sizeof(double), cmp);
			printf(", \"%s_ns_per_obj\": %.2f, \"%s_samples\": [", w ? "wall" : "cpu",
			       s[repeats / 2], w ? "wall" : "cpu");
			for (int r = 0; r < repeats; r++)
				printf("%s%.2f", r ? ", " : "", w ? t[m][r].wall : t[m][r].cpu);
			printf("]");
		}
		printf("}\n");
	}
	free(s);
	return 0;
}
