/*
 * misuse_purge_threads_exit (issue 25, item 2, variants the first fix
 * missed): uslub's purge thread exists only while the program has a
 * thread of its own, and a program that frees and then sleeps gets its
 * memory back wherever the docs say it does.
 *
 * Runs itself three times (fresh processes, USLUB_DECAY_MS=100):
 *
 *   exit    (auto, the default) a worker thread allocates and stays; the
 *           main thread churns until uslub-purge appears. The program
 *           then joins its worker: at once (no sleep) /proc/self/status
 *           must say Threads: 1 and unshare(CLONE_NEWUSER) must succeed,
 *           as with glibc (before: uslub-purge stayed, EINVAL). A second
 *           worker brings uslub-purge back; its join takes it away again.
 *   asleep  (auto) with a live worker of its own that allocated, the main
 *           thread maps four 16 MiB blocks, touches and frees them, and
 *           sleeps with no allocator call: the resident size must drop
 *           below half of the peak (before: the thread was only wanted by
 *           the frees and started by an allocation that never came, so
 *           the 64 MiB stayed resident for good)
 *   always  (USLUB_BACKGROUND_THREAD=1) the same without the worker: the
 *           README says this program gets its memory back while it sleeps
 *           (before: no thread was ever started, 64 MiB stayed)
 *
 * No allocator call while it measures: /proc files are read with
 * open/read into stack buffers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "misuse.h"

#define DECAY_MS 100
#define NBIG     4
#define BIG      (16ul << 20)


static void churn(void)
{
	static void *p[8192];
	for (int i = 0; i < 8192; i++)
		p[i] = malloc(16 + (size_t)(i % 64) * 8);
	for (int i = 0; i < 8192; i++)
		free(p[i]);
	free(malloc(64 << 10));
}


static int run_exit(void)
{
	char msg[256];
	for (int round = 1; round <= 2; round++) {
		pthread_t t;
		if (worker_start(&t))
			return 1;
		int found = 0;
		/* the second round: uslub waits a decay after a stop */
		for (int i = 0; i < 60 && found != 1; i++) {
			churn();
			found = has_thread("uslub-purge");
			if (found != 1)
				sleep_ms(DECAY_MS / 2);
		}
		if (found != 1) {
			snprintf(msg, sizeof(msg), "round %d: a live thread of the program's own, and "
				 "no uslub-purge thread (auto)\n", round);
			fail(msg);
			return 1;
		}
		worker_end(t);
		long threads = status_field("Threads");
		snprintf(msg, sizeof(msg), "purge_threads_exit: exit: round %d: Threads: %ld right "
			 "after the program joined its only thread\n", round, threads);
		say(msg);
		if (threads != 1)
			fail("the program's threads have all exited, and uslub's thread stayed\n");
		if (round == 2)
			break;
		int e = try_unshare();
		if (e > 0) {
			snprintf(msg, sizeof(msg), "unshare(CLONE_NEWUSER) after the join failed: "
				 "%s\n", strerror(e));
			fail(msg);
		}
		churn();
		if (status_field("Threads") != 1)
			fail("uslub's thread came back in a single-threaded program\n");
	}
	return failures ? 1 : 0;
}

/* Map, touch and free four 16 MiB blocks, then sleep without an allocator
 * call: the resident size must come down. */
static int run_asleep(const char *mode)
{
	char msg[256];
	static void *big[NBIG];
	long base = status_field("VmRSS");
	if (base < 0) {
		say("SKIP: no VmRSS in /proc/self/status\n");
		return 77;
	}
	for (int i = 0; i < NBIG; i++)
		if ((big[i] = malloc(BIG)))
			memset(big[i], 0x3c, BIG);
	long peak = status_field("VmRSS");
	for (int i = 0; i < NBIG; i++)
		free(big[i]);
	long rss = status_field("VmRSS");
	int waited = 0;
	while (waited < 3000 && (rss - base) * 2 >= peak - base) {
		sleep_ms(DECAY_MS);
		waited += DECAY_MS;
		rss = status_field("VmRSS");
	}
	snprintf(msg, sizeof(msg), "purge_threads_exit: %s: baseline %ld KiB, peak %ld KiB, %ld KiB "
		 "after %d ms asleep\n", mode, base, peak, rss, waited);
	say(msg);
	if ((rss - base) * 2 >= peak - base)
		fail("a program that freed its large blocks and sleeps kept them resident\n");
	return failures ? 1 : 0;
}

static int run_asleep_threaded(void)
{
	pthread_t t;
	if (worker_start(&t))
		return 1;
	sleep_ms(50);                  /* the worker has allocated */
	int rc = run_asleep("asleep");
	worker_end(t);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "exit"))
		return run_exit();
	if (argc > 2 && !strcmp(argv[2], "asleep"))
		return run_asleep_threaded();
	if (argc > 2 && !strcmp(argv[2], "always"))
		return run_asleep("always");
	const char *ld = getenv("LD_PRELOAD");
	if (!ld || !strstr(ld, "uslub")) {
		say("SKIP: not under uslub's LD_PRELOAD\n");
		return 77;
	}
	int a = spawn("exit", NULL);
	int b = spawn("asleep", NULL);
	int c = spawn("always", "USLUB_BACKGROUND_THREAD=1");
	if (a == 77 || b == 77 || c == 77)
		return 77;
	if (a || b || c) {
		say("FAIL: purge_threads_exit\n");
		return 1;
	}
	say("purge_threads_exit: ok\n");
	return 0;
}
