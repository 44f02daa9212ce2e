/*
 * Helper of misuse_fd_privdrop_exit (issue 25, item 8, review R1), run as
 * root under LD_PRELOAD with USLUB_PUBLISH_MS (long: the publisher sleeps
 * through what follows) and a private USLUB_PUBLISH_ROOT: wait for its
 * first snapshot, print its pid, drop to uid 65534 (setuid) and return
 * from main at once, before the publisher's next round.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	static void *keep;
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
		fprintf(stderr, "prog_fd_drop: no snapshot %s\n", snap);
		return 2;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (setgid(65534) || setuid(65534)) {
		perror("prog_fd_drop: setuid");
		return 2;
	}
	return 0;
}
