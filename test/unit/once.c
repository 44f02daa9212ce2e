/*
 * _uslub_once (base/lifecycle.h): a one-time initialization runs exactly
 * once among racing threads, every caller returns only after it is done,
 * and a fork child whose parent forked while another thread was inside
 * the function runs it again instead of waiting for a thread it does not
 * have (ThreadSanitizer's pthread_once waited forever there: stress_fork
 * found it through the bucket caches' onces).
 */
#include "slub/slub.h"
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define RACERS 4

static struct uslub_once race_once = USLUB_ONCE_INIT;
static int race_runs;            /* atomic */
static int race_done;            /* written by the once's function only */
static int race_seen[RACERS];

static void race_fn(void)
{
	__atomic_fetch_add(&race_runs, 1, __ATOMIC_RELAXED);
	usleep(20000);               /* the others arrive and wait */
	race_done = 1;
}

static void *racer(void *arg)
{
	int i = (int)(intptr_t)arg;
	_uslub_once(&race_once, race_fn);
	race_seen[i] = race_done;    /* ordered after the function's stores */
	return NULL;
}

static struct uslub_once fork_once = USLUB_ONCE_INIT;
static pid_t parent_pid;
static int fork_entered;         /* atomic */
static int fork_release;         /* atomic */
static int fork_runs;            /* atomic; this process's runs */

static void fork_fn(void)
{
	__atomic_fetch_add(&fork_runs, 1, __ATOMIC_RELAXED);
	if (getpid() != parent_pid)
		return;              /* the child's run: nothing to wait for */
	__atomic_store_n(&fork_entered, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&fork_release, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void *fork_runner(void *arg)
{
	(void)arg;
	_uslub_once(&fork_once, fork_fn);
	return NULL;
}

int main(void)
{
	_uslub_init();               /* the fork handlers are registered */

	pthread_t th[RACERS];
	for (int i = 0; i < RACERS; i++)
		CHECK(pthread_create(&th[i], NULL, racer, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < RACERS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	CHECK_EQ(race_runs, 1);
	for (int i = 0; i < RACERS; i++)
		CHECK_EQ(race_seen[i], 1);
	_uslub_once(&race_once, race_fn);           /* done: returns at once */
	CHECK_EQ(race_runs, 1);

	/* fork while another thread is inside the function */
	parent_pid = getpid();
	pthread_t runner;
	CHECK(pthread_create(&runner, NULL, fork_runner, NULL) == 0);
	while (!__atomic_load_n(&fork_entered, __ATOMIC_ACQUIRE))
		usleep(1000);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(10);           /* a wait for the lost thread: SIGALRM */
		_uslub_once(&fork_once, fork_fn);
		_uslub_once(&fork_once, fork_fn);   /* done now */
		/* one run in the parent (not finished, inherited) + the child's */
		_exit(__atomic_load_n(&fork_runs, __ATOMIC_RELAXED) == 2 ? 0 : 3);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d%s\n", WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? " (waited for the parent's runner)" : "");
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);

	/* the parent's run is unaffected: it finishes, and nobody reruns it */
	__atomic_store_n(&fork_release, 1, __ATOMIC_RELEASE);
	CHECK(pthread_join(runner, NULL) == 0);
	_uslub_once(&fork_once, fork_fn);
	CHECK_EQ(fork_runs, 1);
	printf("once: ok\n");
	return 0;
}
