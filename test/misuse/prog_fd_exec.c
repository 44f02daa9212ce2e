/*
 * Helper of misuse_fd_exec_leftover (issue 25, item 1, review R1): a
 * process that publishes, then execs a program under uslub that ends
 * before its own publisher is set up. Run under LD_PRELOAD with
 * USLUB_PUBLISH_MS and a private USLUB_PUBLISH_ROOT.
 *
 *   misuse_prog_fd_exec ROOT start   wait for its snapshot in ROOT; fork
 *       a child that waits for the publisher's lock (<pid>.lock) and holds
 *       it once the exec has dropped it (so that the new image's publisher
 *       waits and is not set up when it exits); print "PID CHILD"; exec
 *       itself as "image"
 *   misuse_prog_fd_exec ROOT image CHILD   wait until CHILD holds the
 *       lock; return from main (exit 5 when this image's publisher took the
 *       lock before the child: the test runs it again)
 *
 * The child lets go when the lock file is removed (or after 5 s) and
 * exits. Exit 0 when what the program itself can see held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char lock[600];

static void sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&d, NULL);
}

/* Whether @child waits for a POSIX lock ("N: -> POSIX ADVISORY WRITE
 * PID ..." in /proc/locks); 2 s at most. */
static int waiting(pid_t child)
{
	char want[64], line[256];
	snprintf(want, sizeof(want), " %d ", (int)child);
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen("/proc/locks", "r");
		int found = 0;
		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, "-> POSIX") && strstr(line, want);
		if (f)
			fclose(f);
		if (found)
			return 1;
		sleep_ms(10);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static void *keep;
	keep = malloc(100);
	if (argc < 3 || !keep)
		return 2;
	char dir[512], snap[600];
	snprintf(dir, sizeof(dir), "%s/uslub-%u", argv[1], (unsigned)geteuid());
	snprintf(lock, sizeof(lock), "%s/%d.lock", dir, (int)getpid());
	if (!strcmp(argv[2], "start")) {
		struct stat st;
		snprintf(snap, sizeof(snap), "%s/%d.txt", dir, (int)getpid());
		for (int i = 0; i < 500 && stat(snap, &st); i++)
			sleep_ms(10);
		if (stat(snap, &st)) {
			fprintf(stderr, "prog_fd_exec: no snapshot %s\n", snap);
			return 2;
		}
		int pfd[2];
		if (pipe(pfd))
			return 2;
		pid_t child = fork();
		if (child < 0)
			return 2;
		if (!child) {
			int fd = open(lock, O_RDWR | O_CLOEXEC);
			if (write(pfd[1], "x", 1) != 1)
				exit(3);
			struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			if (fd < 0 || fcntl(fd, F_SETLKW, &l))
				exit(3);
			for (int i = 0; i < 500 && !fstat(fd, &st) && st.st_nlink; i++)
				sleep_ms(10);
			exit(0);
		}
		char c;
		if (read(pfd[0], &c, 1) != 1 || !waiting(child)) {
			fprintf(stderr, "prog_fd_exec: the child does not wait for %s\n", lock);
			return 2;
		}
		printf("%d %d\n", (int)getpid(), (int)child);
		fflush(stdout);
		char num[32];
		snprintf(num, sizeof(num), "%d", (int)child);
		execl("/proc/self/exe", argv[0], argv[1], "image", num, (char *)NULL);
		return 2;
	}
	if (!strcmp(argv[2], "image") && argc > 3) {
		pid_t child = (pid_t)atoi(argv[3]);
		int fd = open(lock, O_RDONLY | O_CLOEXEC);
		for (int i = 0; fd >= 0 && i < 500; i++) {
			struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			if (!fcntl(fd, F_GETLK, &l) && l.l_type != F_UNLCK && l.l_pid == child)
				return 0;               /* its publisher waits: not set up */
			sleep_ms(10);
		}
		return 5;       /* this image's publisher took it first: again */
	}
	return 2;
}
