/*
 * Lock-order checking (USLUB_LOCKDEP, on in the sanitizer builds): taking
 * a lock of an earlier rank while holding a later one aborts with a report;
 * the contract's order passes. Skipped (77) in builds without it.
 */
#include "cache/slub.h"
#include "unit.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef USLUB_LOCKDEP
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return status;
}

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t list_lock2 = PTHREAD_MUTEX_INITIALIZER;

static void in_order(void)
{
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_unlock(&list_lock, RANK_LIST);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
}

static void inverted(void)
{
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);   /* must abort */
}

static void two_list_locks(void)
{
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_lock(&list_lock2, RANK_LIST);                /* must abort */
}

#endif

int main(void)
{
#ifndef USLUB_LOCKDEP
	printf("lockdep: not built with USLUB_LOCKDEP, skipped\n");
	return 77;
#else
	int st = in_child(in_order);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = in_child(inverted);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	st = in_child(two_list_locks);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	printf("lockdep: ok\n");
	return 0;
#endif
}
