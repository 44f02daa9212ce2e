/*
 * The process test/tool/top_test.sh watches with `uslub top`: run it with
 * USLUB_PUBLISH_MS (and USLUB_PROFILING=1 for the allocinfo view).
 *   top_busy   96-byte objects, 1000 allocated and freed every ~2 ms
 *              (the busy cache: non-zero rates, few objects)
 *   top_big    2048 objects of 4000 bytes allocated once and kept, charged
 *              to the accounting group "top_group" (the most memory, no
 *              activity after the start)
 * It prints its pid, then runs until SIGTERM or SIGINT, and returns from
 * main (the published files are removed at exit).
 */
#define _GNU_SOURCE
#include <uslub.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NR_BUSY 1000
#define NR_BIG  2048

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	uslub_cache_t *busy = uslub_cache_create("top_busy", 96, 0, 0, NULL);
	uslub_cache_t *big = uslub_cache_create("top_big", 4000, 0, 0, NULL);
	uslub_group_t *g = uslub_group_create(NULL, "top_group", USLUB_GROUP_NO_LIMIT);
	if (!busy || !big || !g) {
		fprintf(stderr, "top_workload: cannot create its caches or group\n");
		return 1;
	}
	static void *held[NR_BIG], *p[NR_BUSY];
	uslub_group_t *old = uslub_group_set_current(g);
	for (int i = 0; i < NR_BIG; i++)
		if (!(held[i] = uslub_cache_alloc(big, USLUB_GFP_ACCOUNT))) {
			fprintf(stderr, "top_workload: out of memory\n");
			return 1;
		}
	uslub_group_set_current(old);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	const struct timespec pause = { 0, 2 * 1000 * 1000 };
	while (!stop) {
		for (int i = 0; i < NR_BUSY; i++)
			p[i] = uslub_cache_alloc(busy, 0);
		for (int i = 0; i < NR_BUSY; i++)
			uslub_cache_free(busy, p[i]);
		nanosleep(&pause, NULL);
	}
	for (int i = 0; i < NR_BIG; i++)
		uslub_cache_free(big, held[i]);
	return 0;
}
