/*
 * uslub-bench-rseq: what the per-CPU sheaf sections (slub/percpu.h) cost
 * against the per-thread slot's plain pop and push, one thread, hot:
 * one pop and one push of the same object per iteration, on a sheaf
 * reached through the id's area (rseq) or through a thread-local pointer
 * (plain loads and stores, as the per-thread fast paths do). Rounds
 * interleave the two; the medians are printed as one JSON line with
 * their ratio. Under `valgrind --tool=callgrind` the instruction counts
 * per iteration are (total - start-up) / iterations of each function:
 * run with --iters to compare.
 *
 *   uslub-bench-rseq [--iters N] [--rounds R]
 */
#define _GNU_SOURCE
#include "slub/percpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if USLUB_HAVE_RSEQ
#define CAP 32
#define SHEAF_BYTES ALIGN_UP(sizeof(struct slab_sheaf) + CAP * sizeof(void *), 64)
static char sheaf_store[1024][SHEAF_BYTES] __attribute__((aligned(64)));
#define SHEAF(i) ((struct slab_sheaf *)sheaf_store[i])
static char areas[1024][64] __attribute__((aligned(64)));
static char *tab[1024];
static __thread struct slab_sheaf *thread_main __tls_ie;
static long objs[CAP];

static uint64_t now(void)
{
	return monotonic_ns(CLOCK_MONOTONIC);
}

static __noinline uint64_t run_rseq(const struct uslub_rseq_info *ri, long iters)
{
	char *area = uslub_rseq_area(ri);
	const unsigned int *idp = (const unsigned int *)(area + ri->id_offset);
	uint64_t t0 = now();
	for (long i = 0; i < iters; i++) {
		void *x = pcpu_sheaf_pop(area, idp, tab, 0);
		if (unlikely(!x))
			abort();
		if (unlikely(!pcpu_sheaf_push(area, idp, tab, 0, x)))
			abort();
	}
	return now() - t0;
}

static __noinline uint64_t run_thread(long iters)
{
	uint64_t t0 = now();
	for (long i = 0; i < iters; i++) {
		struct slab_sheaf *m = thread_main;
		unsigned int n = m->size;
		if (unlikely(!n))
			abort();
		void *x = m->objects[n - 1];
		m->size = n - 1;
		barrier();
		m = thread_main;
		n = m->size;
		if (unlikely(n >= m->capacity))
			abort();
		m->objects[n] = x;
		barrier();
		m->size = n + 1;
	}
	return now() - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long iters = 50000000;
	int rounds = 7;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--iters"))
			iters = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
	}
	if (iters < 1 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "usage: uslub-bench-rseq [--iters N] [--rounds R (1..99)]\n");
		return 2;
	}
	const struct uslub_rseq_info *ri = _uslub_rseq_info();
	if (ri->id == USLUB_RSEQ_NONE || ri->nr_ids > 1024) {
		printf("{\"bench\":\"rseq\",\"skipped\":\"%s\"}\n",
		       ri->why ? ri->why : "more than 1024 ids");
		return 0;
	}
	for (unsigned int i = 0; i < ri->nr_ids; i++) {
		SHEAF(i)->capacity = CAP;
		for (int k = 0; k < CAP / 2; k++)
			SHEAF(i)->objects[SHEAF(i)->size++] = &objs[k];
		tab[i] = areas[i];
		*(struct slab_sheaf **)tab[i] = SHEAF(i);
	}
	thread_main = SHEAF(0);
	double r[99], t[99], q[99];
	for (int k = 0; k < rounds; k++) {
		r[k] = (double)run_rseq(ri, iters) / (double)iters;
		t[k] = (double)run_thread(iters) / (double)iters;
		q[k] = r[k] / t[k];
	}
	qsort(r, (size_t)rounds, sizeof(double), cmp);
	qsort(t, (size_t)rounds, sizeof(double), cmp);
	qsort(q, (size_t)rounds, sizeof(double), cmp);
	printf("{\"bench\":\"rseq\",\"id\":\"%s\",\"iters\":%ld,\"rounds\":%d,"
	       "\"rseq_pair_ns\":%.3f,\"thread_pair_ns\":%.3f,\"ratio\":%.3f}\n",
	       ri->id == USLUB_RSEQ_MM_CID ? "mm_cid" : "cpu_id", iters, rounds,
	       r[rounds / 2], t[rounds / 2], q[rounds / 2]);
	return 0;
}
#else
int main(void)
{
	printf("{\"bench\":\"rseq\",\"skipped\":\"no rseq sections in this build\"}\n");
	return 0;
}
#endif
