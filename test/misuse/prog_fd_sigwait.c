/*
 * Helper of misuse_fd_publisher_signals (review R1 of issue 25): the
 * sigwait() pattern. SIGTERM blocked in the program's only thread, sent
 * to the process once uslub's publisher runs (its first snapshot is
 * there), and taken with sigwait(). Run under LD_PRELOAD with
 * USLUB_PUBLISH_MS and a private USLUB_PUBLISH_ROOT. Prints "sigwait: 15"
 * and exits 0; a thread that does not block SIGTERM would take it
 * instead, and its default action ends the process.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	static void *keep;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	keep = malloc(100);
	const char *root = getenv("USLUB_PUBLISH_ROOT");
	char snap[600];
	struct stat st;
	snprintf(snap, sizeof(snap), "%s/uslub-%u/%d.txt", root ? root : "/dev/shm",
		 (unsigned)geteuid(), (int)getpid());
	for (int i = 0; i < 500 && stat(snap, &st); i++) {
		struct timespec d = { 0, 10 * 1000000L };
		nanosleep(&d, NULL);
	}
	if (!keep || stat(snap, &st)) {
		fprintf(stderr, "prog_fd_sigwait: no snapshot %s\n", snap);
		return 2;
	}
	int sig = 0;
	kill(getpid(), SIGTERM);
	if (sigwait(&set, &sig))
		return 3;
	printf("sigwait: %d\n", sig);
	return 0;
}
