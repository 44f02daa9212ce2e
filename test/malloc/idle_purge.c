/*
 * idle_purge: memory goes back to the OS while the program makes no
 * allocator call at all (the background purge thread, "uslub-purge").
 * Allocate ~48 MiB in small objects and ~16 MiB in 64 KiB - 1 MiB blocks,
 * touch them, free them all, then only sleep and read /proc/self/statm
 * (open/read into a stack buffer: no stdio, no malloc): the resident size
 * above the baseline must fall below half of its peak within the polling
 * window. Run with USLUB_DECAY_MS=200 and USLUB_BACKGROUND_THREAD=1
 * (ctest sets them: the program is single-threaded, and the default,
 * auto, starts no thread in it).
 *
 *   idle_purge          expect the drop, and a thread named uslub-purge
 *   idle_purge off      (USLUB_BACKGROUND_THREAD=0) expect no drop: with
 *                       no call, nothing purges; and no such thread
 *   idle_purge fork     the same as the first, in a fork child of a
 *                       parent whose thread runs (the child has none: it
 *                       must start its own)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rss.h"

#define SMALL_BYTES (48ul << 20)
#define LARGE_BYTES (16ul << 20)
#define MAX_SMALL   (SMALL_BYTES / 16)
#define MAX_LARGE   256
#define POLL_MS     1500

static void *small[MAX_SMALL];
static void *large[MAX_LARGE];


static void say(const char *s)
{
	ssize_t r = write(1, s, strlen(s));
	(void)r;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static int run(int off)
{
	char msg[256];
	long base = rss_kib();
	if (base < 0) {
		say("SKIP: no /proc/self/statm\n");
		return 77;
	}
	size_t ns = 0, nl = 0, bytes = 0;
	unsigned int x = 12345;
	while (bytes < SMALL_BYTES && ns < MAX_SMALL) {
		x = x * 1103515245u + 12345u;
		size_t sz = 16 + (x >> 16) % 497;            /* 16 .. 512 */
		small[ns] = malloc(sz);
		if (!small[ns])
			break;
		memset(small[ns++], 0x5a, sz);
		bytes += sz;
	}
	bytes = 0;
	while (bytes < LARGE_BYTES && nl < MAX_LARGE) {
		x = x * 1103515245u + 12345u;
		size_t sz = (64ul << 10) + (x >> 8) % (960ul << 10);   /* 64 KiB .. 1 MiB */
		large[nl] = malloc(sz);
		if (!large[nl])
			break;
		memset(large[nl++], 0xa5, sz);
		bytes += sz;
	}
	long peak = rss_kib();
	for (size_t i = 0; i < ns; i++)
		free(small[i]);
	for (size_t i = 0; i < nl; i++)
		free(large[i]);
	/* from here on: no allocator call until the measurement is over */
	long rss = rss_kib(), waited = 0;
	while (waited < POLL_MS && (rss - base) * 2 >= peak - base) {
		sleep_ms(20);
		waited += 20;
		rss = rss_kib();
	}
	/* a while longer in the off mode: nothing should change */
	snprintf(msg, sizeof(msg), "idle_purge: baseline %ld KiB, peak %ld KiB, after free %ld KiB "
		 "(%ld ms idle); %zu small, %zu large blocks\n", base,
		 peak, rss, waited, ns, nl);
	say(msg);
	int fail = 0;
	int thr = has_thread("uslub-purge");
	if (!off) {
		if ((rss - base) * 2 >= peak - base) {
			say("FAIL: resident memory above the baseline did not fall below half of its "
			    "peak while the program was idle\n");
			fail = 1;
		}
		if (thr != 1) {
			say("FAIL: no thread named uslub-purge\n");
			fail = 1;
		}
	} else {
		if ((rss - base) * 2 < peak - base) {
			say("FAIL: with USLUB_BACKGROUND_THREAD=0 and no call, memory still went back\n");
			fail = 1;
		}
		if (thr != 0) {
			say("FAIL: a uslub-purge thread exists with USLUB_BACKGROUND_THREAD=0\n");
			fail = 1;
		}
	}
	if (!fail)
		say("idle_purge: ok\n");
	return fail;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "fork"))
		return run(!strcmp(mode, "off"));
	/* the parent's thread first: free something, wait until it exists */
	for (int i = 0; i < 10000; i++)
		free(malloc(4096));
	void *b = malloc(1 << 20);
	free(b);                 /* something to purge: the thread is wanted, */
	b = malloc(1 << 20);     /* and started by the next allocation */
	free(b);
	int t = 0;
	for (int i = 0; i < 100 && (t = has_thread("uslub-purge")) != 1; i++)
		sleep_ms(10);
	if (t != 1) {
		say("FAIL: the parent has no uslub-purge thread\n");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0)
		return 77;
	if (pid == 0)
		_exit(run(0));
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		say("FAIL: the fork child did not exit normally\n");
		return 1;
	}
	return WEXITSTATUS(st);
}
