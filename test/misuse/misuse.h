/*
 * What the misuse tier's preloaded programs share: their output written
 * with write(2) (no stdio buffer: the tests measure while they make no
 * allocator call), failures counted, a sleep, the /proc readers of
 * test/malloc/rss.h, a thread of the program's own, unshare(), and a run
 * of the test again in another mode.
 */
#ifndef USLUB_TEST_MISUSE_H
#define USLUB_TEST_MISUSE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE          /* unshare */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../malloc/rss.h"

static int failures;                  /* fail() calls */

static inline void say(const char *s)
{
	ssize_t r = write(1, s, strlen(s));
	(void)r;
}

static inline void fail(const char *s)
{
	say("FAIL: ");
	say(s);
	failures++;
}

static inline void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static int hold[2] = { -1, -1 };       /* a worker lives until hold[1] is closed */

static inline void *worker(void *arg)
{
	for (int i = 0; i < 1000; i++)
		free(malloc(32 + (size_t)(i % 32) * 16));
	char c;
	while (read(hold[0], &c, 1) > 0)
		;
	return arg;
}

/* A thread of the program's own that allocated (uslub saw it) and stays
 * alive until worker_end(): 0, or -1 after a fail(). */
static inline int worker_start(pthread_t *t)
{
	if (pipe(hold) || pthread_create(t, NULL, worker, NULL)) {
		fail("pipe or pthread_create failed\n");
		return -1;
	}
	return 0;
}

static inline void worker_end(pthread_t t)
{
	close(hold[1]);
	pthread_join(t, NULL);
	close(hold[0]);
}

/* unshare(CLONE_NEWUSER): 0, or the errno; -1 where this kernel refuses
 * it to any process here (so it says nothing about threads) */
static inline int try_unshare(void)
{
	if (!unshare(CLONE_NEWUSER))
		return 0;
	int e = errno;
	if (e == EPERM || e == ENOSPC || e == ENOSYS || e == EUSERS) {
		char msg[160];
		snprintf(msg, sizeof(msg), "unshare(CLONE_NEWUSER) refused here (%s): not "
			 "checked\n", strerror(e));
		say(msg);
		return -1;
	}
	return e;
}

extern char **environ;

/* Run this program again as @mode (argv[2]), its environment without any
 * USLUB_BACKGROUND_THREAD or USLUB_DECAY_MS, plus USLUB_DECAY_MS=100 and
 * @extra: its exit status, 1 when it did not exit normally. */
static inline int spawn(const char *mode, const char *extra)
{
	static char *env[512];
	int k = 0;
	for (char **e = environ; *e && k < 508; e++)
		if (strncmp(*e, "USLUB_BACKGROUND_THREAD=", 24) && strncmp(*e, "USLUB_DECAY_MS=", 15))
			env[k++] = *e;
	env[k++] = "USLUB_DECAY_MS=100";
	if (extra)
		env[k++] = (char *)extra;
	env[k] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		char *argv[] = { "/proc/self/exe", (char *)mode, (char *)mode, NULL };
		execve("/proc/self/exe", argv, env);
		_exit(126);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		say("FAIL: a run did not exit normally\n");
		return 1;
	}
	return WEXITSTATUS(st);
}

#endif
