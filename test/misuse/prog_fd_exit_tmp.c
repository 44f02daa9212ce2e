/*
 * Helper of misuse_fd_exit_tmp (review R1 of issue 25, item 1: files left
 * in /dev/shm at exit). Run under LD_PRELOAD with USLUB_PUBLISH_MS=1 and a
 * private USLUB_PUBLISH_ROOT, with misuse_mod_fd_exit_tmp.so preloaded
 * after uslub: once its publisher writes a text snapshot (.<pid>.txt.tmp
 * is there), call exit(); the module's exit handler, which runs after
 * uslub's, watches for a temporary made after it. Prints its pid.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char txt_tmp[600];

int main(void)
{
	static void *keep;
	keep = malloc(100);
	const char *root = getenv("USLUB_PUBLISH_ROOT");
	char dir[512];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s/uslub-%u", root ? root : "/dev/shm", (unsigned)geteuid());
	snprintf(txt_tmp, sizeof(txt_tmp), "%s/.%d.txt.tmp", dir, (int)getpid());
	printf("%d\n", (int)getpid());
	fflush(stdout);
	/* up to 30 s of polling, not a count of stat() calls: on a loaded
	 * machine (make test runs two at a time on two CPUs) the publisher
	 * thread may get no CPU for most of a second, and the temporary
	 * exists only while it writes */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			if (!stat(txt_tmp, &st))
				exit(0);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 30);
	fprintf(stderr, "prog_fd_exit_tmp: never saw %s in 30 s\n", txt_tmp);
	return keep ? 2 : 3;
}
