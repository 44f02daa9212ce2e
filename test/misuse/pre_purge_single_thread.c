/*
 * misuse_purge_single_thread (issue 25, item 2): uslub makes no thread the
 * program did not ask for. A single-threaded program under the preload
 * that allocates and frees a lot stayed single-threaded with glibc's
 * malloc but got a second thread from uslub ("uslub-purge"), so
 * unshare(CLONE_NEWUSER) (and setns() into a user namespace) failed with
 * EINVAL, and sandboxes that check they are single-threaded before they
 * fork and exec refused to run.
 *
 * The test runs itself twice (fresh processes, USLUB_DECAY_MS=100):
 *
 *   auto    (USLUB_BACKGROUND_THREAD unset: the default)
 *           after 16 MiB of small objects, 8 MiB of 64 KiB .. 1 MiB blocks
 *           and six 8 MiB mappings are allocated, touched and freed, and
 *           the allocator used again (where the thread used to start):
 *           (a) /proc/self/status says Threads: 1
 *           (b) unshare(CLONE_NEWUSER) succeeds (not checked where the
 *               kernel refuses it anyway: EPERM, ENOSPC, ENOSYS, EUSERS)
 *           (c) idle purging without the thread: after the decay, small
 *               allocations on the slow paths bring the resident size
 *               above the baseline below half of its peak (the kept 8 MiB
 *               mappings included: only a whole purge pass unmaps them);
 *               and after a second round, malloc_trim(0) at once
 *           (d) once the program starts a thread (which allocates), the
 *               purge thread appears while that thread lives (the
 *               purge_threads_exit test: it goes when the thread exits)
 *   fork    (the default) a program with a live thread of its own, and so
 *           uslub's thread, forks (as a sandbox or container runtime
 *           does before unshare and exec): the child has one thread and
 *           stays so through the same churn (it used to start its own
 *           uslub-purge), and unshare(CLONE_NEWUSER) succeeds in it
 *   always  (USLUB_BACKGROUND_THREAD=1): the same program gets the
 *           uslub-purge thread without starting one of its own, and then
 *           unshare(CLONE_NEWUSER) fails with EINVAL (so (b) can fail)
 *
 * No allocator call while it measures: /proc files are read with
 * open/read into stack buffers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "misuse.h"

#define SMALL_BYTES (16ul << 20)
#define LARGE_BYTES (8ul << 20)
#define NHUGE       6
#define HUGE_BYTES  (8ul << 20)
#define MAX_SMALL   (SMALL_BYTES / 16)
#define MAX_LARGE   64
#define DECAY_MS    100

static void *small[MAX_SMALL];
static void *large[MAX_LARGE];
static void *huge[NHUGE];

/* Allocate, touch and free small objects, large blocks and huge mappings
 * (the huge ones live together, so all six are kept when freed); then
 * use the allocator again, as a program does: the thread used to be
 * started here. Returns the resident size at the peak. */
static long churn(void)
{
	size_t ns = 0, nl = 0, bytes = 0;
	unsigned int x = 12345;
	while (bytes < SMALL_BYTES && ns < MAX_SMALL) {
		x = x * 1103515245u + 12345u;
		size_t sz = 16 + (x >> 16) % 497;            /* 16 .. 512 */
		if (!(small[ns] = malloc(sz)))
			break;
		memset(small[ns++], 0x5a, sz);
		bytes += sz;
	}
	bytes = 0;
	while (bytes < LARGE_BYTES && nl < MAX_LARGE) {
		x = x * 1103515245u + 12345u;
		size_t sz = (64ul << 10) + (x >> 8) % (960ul << 10);   /* 64 KiB .. 1 MiB */
		if (!(large[nl] = malloc(sz)))
			break;
		memset(large[nl++], 0xa5, sz);
		bytes += sz;
	}
	for (int i = 0; i < NHUGE; i++)
		if ((huge[i] = malloc(HUGE_BYTES)))
			memset(huge[i], 0x3c, HUGE_BYTES);
	long peak = rss_kib();
	for (size_t i = 0; i < ns; i++)
		free(small[i]);
	for (size_t i = 0; i < nl; i++)
		free(large[i]);
	for (int i = 0; i < NHUGE; i++)
		free(huge[i]);
	for (int i = 0; i < 2000; i++)
		free(malloc(16 + (size_t)(i % 64) * 8));
	free(malloc(64 << 10));
	return peak;
}

/* Allocator activity on the slow paths, no big block: small objects of
 * every class past what the per-thread caches hold, a 64 KiB page run. */
static void activity(void)
{
	static void *p[4096];
	for (int i = 0; i < 4096; i++)
		p[i] = malloc(16 + (size_t)(i % 64) * 8);
	for (int i = 0; i < 4096; i++)
		free(p[i]);
	free(malloc(64 << 10));
}


/* Start a thread of the program's own (alive until worker_end(*@t)),
 * then allocate until the uslub-purge thread shows (USLUB_BACKGROUND_
 * THREAD's auto allows it now): 1 when it did, 0 when not, -1 when no
 * thread could be started. */
static int own_thread_then_purge_thread(pthread_t *t)
{
	if (worker_start(t))
		return -1;
	int found = 0;
	for (int i = 0; i < 50 && found != 1; i++) {
		churn();
		found = has_thread("uslub-purge");
	}
	return found;
}

/* (a) and (b) for @who ("auto"; "fork": the child of a threaded program):
 * Threads: 1 after the churn, and unshare(CLONE_NEWUSER) works. */
static void check_single_threaded(const char *who)
{
	char msg[256];
	long threads = status_field("Threads");
	snprintf(msg, sizeof(msg), "purge_single_thread: %s: Threads: %ld after the churn; "
		 "uslub-purge thread: %d\n", who, threads, has_thread("uslub-purge"));
	say(msg);
	if (threads != 1) {
		snprintf(msg, sizeof(msg), "%s: a single-threaded process has more than one "
			 "thread under uslub\n", who);
		fail(msg);
	}
	int e = try_unshare();
	if (e > 0) {
		snprintf(msg, sizeof(msg), "%s: unshare(CLONE_NEWUSER) failed: %s (a thread the "
			 "program did not start?)\n", who, strerror(e));
		fail(msg);
	} else if (!e) {
		snprintf(msg, sizeof(msg), "purge_single_thread: %s: unshare(CLONE_NEWUSER) "
			 "succeeded\n", who);
		say(msg);
	}
}

static int run_auto(void)
{
	char msg[256];
	long base = rss_kib();
	if (base < 0) {
		say("SKIP: no VmRSS in /proc/self/status\n");
		return 77;
	}
	long peak = churn();
	/* (a), (b) */
	check_single_threaded("auto");
	/* (c) after the decay, the slow paths purge: the huge mappings kept
	 * for reuse too */
	long rss = rss_kib();
	snprintf(msg, sizeof(msg), "purge_single_thread: auto: baseline %ld KiB, peak %ld KiB, "
		 "after the frees %ld KiB\n", base, peak, rss);
	say(msg);
	int waited = 0;
	while (waited < 3000 && (rss - base) * 2 >= peak - base) {
		sleep_ms(2 * DECAY_MS);
		waited += 2 * DECAY_MS;
		activity();
		rss = rss_kib();
	}
	snprintf(msg, sizeof(msg), "purge_single_thread: auto: %ld KiB after %d ms of idling and "
		 "allocator calls\n", rss, waited);
	say(msg);
	if ((rss - base) * 2 >= peak - base)
		fail("without the thread, allocation slow paths past the decay did not bring the "
		     "resident size above the baseline below half of its peak\n");
	/* ... and malloc_trim() at once */
	peak = churn();
	malloc_trim(0);
	rss = rss_kib();
	snprintf(msg, sizeof(msg), "purge_single_thread: auto: second peak %ld KiB, %ld KiB "
		 "after malloc_trim(0)\n", peak, rss);
	say(msg);
	if ((rss - base) * 2 >= peak - base)
		fail("malloc_trim(0) did not bring the resident size above the baseline below half "
		     "of its peak\n");
	if (status_field("Threads") != 1)
		fail("a thread appeared in the single-threaded program\n");
	/* (d) a thread of the program's own: now the purge thread may start */
	pthread_t t;
	int found = own_thread_then_purge_thread(&t);
	if (found < 0) {
		fail("pthread_create failed\n");
		return 1;
	}
	if (found != 1)
		fail("the program started a thread of its own, and still no uslub-purge thread "
		     "(USLUB_BACKGROUND_THREAD's default is auto)\n");
	else
		say("purge_single_thread: auto: uslub-purge started after the program's own thread\n");
	worker_end(t);
	return failures ? 1 : 0;
}

static int run_fork(void)
{
	pthread_t t;
	int found = own_thread_then_purge_thread(&t);
	if (found < 0) {
		fail("pthread_create failed\n");
		return 1;
	}
	if (found != 1) {
		fail("fork: no uslub-purge thread in the parent, which started a thread\n");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fail("fork failed\n");
		return 1;
	}
	if (!pid) {
		churn();
		churn();
		check_single_threaded("fork");
		_exit(failures ? 1 : 0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fail("fork: the child failed\n");
		return 1;
	}
	worker_end(t);
	return 0;
}

static int run_always(void)
{
	char msg[256];
	int found = 0;
	for (int i = 0; i < 50 && found != 1; i++) {
		churn();
		found = has_thread("uslub-purge");
	}
	long threads = status_field("Threads");
	snprintf(msg, sizeof(msg), "purge_single_thread: always: uslub-purge thread: %d, "
		 "Threads: %ld\n", found, threads);
	say(msg);
	if (found != 1 || threads != 2) {
		fail("USLUB_BACKGROUND_THREAD=1: no uslub-purge thread in a single-threaded "
		     "program\n");
		return 1;
	}
	int e = try_unshare();
	if (!e)
		fail("unshare(CLONE_NEWUSER) succeeded with a second thread: this kernel does not "
		     "refuse it, so the auto run's check proves nothing\n");
	else if (e > 0 && e != EINVAL)
		fail("unshare(CLONE_NEWUSER) with a second thread: an errno other than EINVAL\n");
	else if (e == EINVAL)
		say("purge_single_thread: always: unshare(CLONE_NEWUSER) fails with EINVAL, as "
		    "expected of a multi-threaded process\n");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "auto"))
		return run_auto();
	if (argc > 2 && !strcmp(argv[2], "fork"))
		return run_fork();
	if (argc > 2 && !strcmp(argv[2], "always"))
		return run_always();
	const char *ld = getenv("LD_PRELOAD");
	if (!ld || !strstr(ld, "uslub")) {
		say("SKIP: not under uslub's LD_PRELOAD\n");
		return 77;
	}
	int a = spawn("auto", NULL);
	int f = spawn("fork", NULL);
	int b = spawn("always", "USLUB_BACKGROUND_THREAD=1");
	if (a == 77)
		return 77;
	if (a || f || b) {
		say("purge_single_thread: FAILED\n");
		return 1;
	}
	say("purge_single_thread: ok\n");
	return 0;
}
