/*
 * misuse_out_kfree_rcu_exact (issue 25, item 8a): a kfree_rcu() that
 * cannot be done names the pointer as passed, with the cause kfree()
 * gives for it, and frees nothing else.
 *
 * Before the fix the pointer was checked only in the grace-period
 * callback, which has just the rcu_head: kfree_rcu(&global) reported the
 * address rounded down to its page ("...000" for "...020"), and a pointer
 * inside a kmalloc page run freed the run's start silently.
 *
 * The grace-period provider is this test's own (uslub_gp_register): call
 * queues, rcu_barrier runs the queue, synchronize has nothing to wait for.
 */
#include "uslub.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "capture.h"

static _Alignas(4096) char area[3 * 4096];

int main(void)
{
	char want[160], page[40];
	if (uslub_gp_register(&ops)) {
		fprintf(stderr, "FAIL: uslub_gp_register\n");
		return 1;
	}

	/* 1. a global, 0x20 into a page: kfree_rcu and kfree_rcu_mightsleep
	 * name it as passed, with kfree()'s cause */
	char *g = area + 4096 + 0x20;
	snprintf(page, sizeof(page), "%p:", (void *)(area + 4096));
	start();
	uslub_gp_kvfree(g, (struct uslub_rcu_head *)(g + 0x10));
	uslub_gp_barrier(NULL);
	const char *t = stop();
	snprintf(want, sizeof(want), "kfree_rcu of %p: a pointer uslub did not allocate", (void *)g);
	expect("kfree_rcu(&global)", t, want, true);
	expect("kfree_rcu(&global): the page, not the pointer", t, page, false);

	start();
	uslub_gp_kvfree(g, NULL);
	t = stop();
	snprintf(want, sizeof(want), "kfree_rcu_mightsleep of %p: a pointer uslub did not allocate",
		 (void *)g);
	expect("kfree_rcu_mightsleep(&global)", t, want, true);

	start();
	uslub_kfree(g);
	t = stop();
	snprintf(want, sizeof(want), "free of %p: a pointer uslub did not allocate", (void *)g);
	expect("kfree(&global): the same cause", t, want, true);

	/* 2. inside a kmalloc page run (16 KiB), not its start: reported, and
	 * the run is not freed (freeing it afterwards is no double free) */
	char *run = uslub_kmalloc(16384, 0);
	if (!run) {
		fprintf(stderr, "FAIL: kmalloc(16384)\n");
		return 1;
	}
	unsigned long errors = uslub_error_count();
	start();
	uslub_gp_kvfree(run + 0x20, (struct uslub_rcu_head *)(run + 0x40));
	uslub_gp_barrier(NULL);
	t = stop();
	snprintf(want, sizeof(want), "kfree_rcu of %p: inside a kmalloc page run, not its start",
		 (void *)(run + 0x20));
	expect("kfree_rcu(inside a page run)", t, want, true);
	start();
	uslub_kfree(run);
	t = stop();
	expect("kfree of the page run after a refused kfree_rcu", t, "uslub:", false);
	if (uslub_error_count() != errors + 1) {
		fprintf(stderr, "FAIL: %lu errors counted, want 1\n", uslub_error_count() - errors);
		failed = 1;
	}

	/* 3. what works still works: an object and a page run, freed after
	 * the grace period, with nothing reported */
	void *obj = uslub_kmalloc(100, 0);
	char *run2 = uslub_kmalloc(16384, 0);
	start();
	uslub_gp_kvfree(obj, (struct uslub_rcu_head *)((char *)obj + 16));
	uslub_gp_kvfree(run2, (struct uslub_rcu_head *)(run2 + 0x40));
	uslub_gp_barrier(NULL);
	t = stop();
	expect("kfree_rcu of live objects", t, "uslub:", false);

	if (!failed)
		printf("PASS\n");
	return failed;
}
