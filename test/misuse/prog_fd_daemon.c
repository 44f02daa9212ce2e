/*
 * A program that does to its descriptors what daemons do, run under
 * LD_PRELOAD=libuslub-malloc.so with USLUB_PUBLISH_MS and a private
 * USLUB_PUBLISH_ROOT (or USLUB_REPORT=-) by the fd_*.sh tests. Exit 0
 * when what the program itself can see held; the scripts check the files
 * and the messages.
 *
 *   wait                  publish once, exit
 *   closerange DATADIR    publish; close_range(3, ~0U, 0); open DATADIR at
 *                         the number the publisher's directory had; wait
 *                         for a fresh snapshot in the publish root; fork a
 *                         child that publishes once; exit
 *   dup2lock              publish; dup2 a pipe over the publisher's lock
 *                         file descriptor; fork: the child writes through
 *                         that number, the parent reads it back
 *   dup2report FILE       (USLUB_REPORT=-) dup2 FILE over uslub's copy of
 *                         stderr; fork twice, each child writes through
 *                         that number; close stderr; exit
 *   drop setuid|seteuid   (root) publish; drop to uid 65534 (seteuid: and
 *                         back to 0 once the message is out, stdin closes);
 *                         wait for stdin to close; exit
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[512];

static void die(const char *what)
{
	fprintf(stderr, "prog_fd_daemon: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&d, NULL);
}

/* The inode of <d>/<pid>.txt, 0 when there is none. */
static ino_t snapshot(const char *d, pid_t pid)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%d.txt", d, (int)pid);
	return stat(p, &st) ? 0 : st.st_ino;
}

/* Wait (5 s at most) for a snapshot of @pid in @d other than @old. */
static int wait_snapshot(const char *d, pid_t pid, ino_t old)
{
	for (int i = 0; i < 500; i++) {
		ino_t ino = snapshot(d, pid);
		if (ino && ino != old)
			return 1;
		sleep_ms(10);
	}
	return 0;
}

/* The descriptor whose link is @prefix followed by @suffix, or -1. */
static int find_fd(const char *prefix, const char *suffix)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;
	if (!d)
		die("/proc/self/fd");
	while ((e = readdir(d))) {
		char p[64], l[600];
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, l, sizeof(l) - 1);
		if (n <= 0)
			continue;
		l[n] = 0;
		size_t lp = strlen(prefix);
		if (!strncmp(l, prefix, lp) && !strcmp(l + lp, suffix) &&
		    atoi(e->d_name) != dirfd(d))
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static int closerange(const char *datadir)
{
	pid_t self = getpid();
	if (!wait_snapshot(dir, self, 0)) {
		fprintf(stderr, "prog_fd_daemon: nothing published in %s\n", dir);
		return 2;
	}
	int n = find_fd(dir, "");
	if (n < 0) {
		fprintf(stderr, "prog_fd_daemon: no descriptor of %s\n", dir);
		return 2;
	}
	ino_t before = snapshot(dir, self);
	if (syscall(SYS_close_range, 3U, ~0U, 0))
		die("close_range");
	int fd = open(datadir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die(datadir);
	if (fd != n) {
		if (dup2(fd, n) != n)
			die("dup2");
		close(fd);
	}
	fprintf(stderr, "prog_fd_daemon: %s is fd %d now\n", datadir, n);
	if (!wait_snapshot(dir, self, before)) {
		fprintf(stderr, "prog_fd_daemon: no fresh snapshot in %s after close_range\n", dir);
		return 3;
	}
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		/* Wait for the child's first snapshot, wherever it goes (its
		 * publisher sweeps the directory before it writes it). */
		for (int i = 0; i < 300 && !snapshot(dir, getpid()) &&
			     !snapshot(datadir, getpid()); i++)
			sleep_ms(10);
		exit(0);
	}
	int status;
	if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status))
		return 4;
	struct stat st;
	if (fstat(n, &st) || !S_ISDIR(st.st_mode))
		return 5;
	printf("%d %d\n", (int)self, (int)c);
	return 0;
}

static int dup2lock(void)
{
	pid_t self = getpid();
	char suffix[32];
	if (!wait_snapshot(dir, self, 0)) {
		fprintf(stderr, "prog_fd_daemon: nothing published in %s\n", dir);
		return 2;
	}
	snprintf(suffix, sizeof(suffix), "/%d.lock", (int)self);
	int n = find_fd(dir, suffix);
	if (n < 0) {
		fprintf(stderr, "prog_fd_daemon: no descriptor of %s%s\n", dir, suffix);
		return 2;
	}
	int p[2];
	if (pipe(p))
		die("pipe");
	if (dup2(p[1], n) != n)
		die("dup2");
	close(p[1]);
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		sleep_ms(50);           /* the child's publisher has started */
		if (write(n, "child\n", 6) != 6) {
			fprintf(stderr, "prog_fd_daemon: child: fd %d: %s\n", n, strerror(errno));
			exit(1);
		}
		exit(0);
	}
	int status;
	if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status))
		return 4;
	ino_t before = snapshot(dir, self);
	if (!wait_snapshot(dir, self, before))   /* the parent publishes on */
		return 3;
	if (write(n, "parent\n", 7) != 7)
		die("write to the program's pipe");
	close(n);
	char buf[64] = "";
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(buf) - 1 && (r = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)r;
	if (strcmp(buf, "child\nparent\n")) {
		fprintf(stderr, "prog_fd_daemon: the program's pipe carried '%s'\n", buf);
		return 5;
	}
	return 0;
}

static int dup2report(const char *file)
{
	struct stat e, st;
	int n = -1;
	if (fstat(2, &e))
		die("fstat 2");
	for (int fd = 10; fd < 1100; fd++) {
		int fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && (fl & FD_CLOEXEC) && !fstat(fd, &st) && st.st_dev == e.st_dev &&
		    st.st_ino == e.st_ino)
			n = fd;
	}
	if (n < 0) {
		fprintf(stderr, "prog_fd_daemon: no copy of stderr kept\n");
		return 2;
	}
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (fd < 0)
		die(file);
	if (dup2(fd, n) != n)
		die("dup2");
	close(fd);
	if (write(n, "program\n", 8) != 8)
		die("write");
	for (int i = 0; i < 2; i++) {
		pid_t c = fork();
		if (c < 0)
			die("fork");
		if (c == 0) {
			if (write(n, "child\n", 6) != 6) {
				fprintf(stderr, "prog_fd_daemon: child: fd %d: %s\n", n,
					strerror(errno));
				exit(1);
			}
			exit(0);
		}
		int status;
		if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status))
			return 4;
	}
	close(2);
	return 0;
}

static int drop(const char *how)
{
	pid_t self = getpid();
	if (!wait_snapshot(dir, self, 0)) {
		fprintf(stderr, "prog_fd_daemon: nothing published in %s\n", dir);
		return 2;
	}
	printf("%d\n", (int)self);
	fflush(stdout);
	if (!strcmp(how, "setuid") ? setuid(65534) : seteuid(65534))
		die(how);
	char c;
	while (read(0, &c, 1) > 0)
		;
	if (strcmp(how, "setuid") && seteuid(0))
		die("seteuid back");
	return 0;
}

int main(int argc, char **argv)
{
	const char *root = getenv("USLUB_PUBLISH_ROOT");
	snprintf(dir, sizeof(dir), "%s/uslub-%u", root ? root : "/dev/shm",
		 (unsigned)geteuid());
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && !strcmp(argv[1], "wait")) {
		if (!wait_snapshot(dir, getpid(), 0))
			return 2;
		printf("%d\n", (int)getpid());
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "closerange"))
		return closerange(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "dup2lock"))
		return dup2lock();
	if (argc == 3 && !strcmp(argv[1], "dup2report"))
		return dup2report(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "drop"))
		return drop(argv[2]);
	fprintf(stderr, "usage: prog_fd_daemon wait | closerange DIR | dup2lock | "
		"dup2report FILE | drop setuid|seteuid\n");
	return 2;
}
