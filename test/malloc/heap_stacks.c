/*
 * malloc_heap_stacks' program: known allocation stacks under LD_PRELOAD.
 * One wrapper, alloc_wrapper(), the program's only malloc call (as
 * CPython's _PyObject_Malloc is its interpreter's), called from three
 * callers that allocate 1, 2 and 4 MiB in 64-byte objects and keep them
 * (caller_one, caller_two, caller_four), and from caller_freed, which
 * allocates 4 MiB and frees it all. The heap profile (ext/stack.c) must
 * tell the callers apart through the wrapper: its stacks end
 * "caller_X;alloc_wrapper". Modes (argv[1]):
 *   known    the four callers, in this thread
 *   big      caller_big: page runs and a mapping through the wrapper,
 *            kept; page runs freed; a mapping resized (realloc) after it
 *            was recorded with its stack
 *   threads  each caller in a thread of its own, at once (4 threads)
 *   fork     caller_one here; a child (fork) runs caller_four and exits
 *            with exit() (its own profile: USLUB_HEAP_PROFILE's %p), the
 *            parent waits for it and runs caller_two
 *   dlclose  (argv[2]: heap_stacks_plugin.so) 40 rounds of: dlopen the
 *            plugin, keep 2048 64-byte blocks from its plugin_alloc()
 *            (called by plugin_round), dlclose it; a second thread
 *            allocates and frees all along (caller_freed); the kept
 *            blocks are freed after the last round, but for the first
 *            20 rounds' (2.5 MiB kept at exit); prints "kept N"
 *   signal   a timer's signal handler (on_signal) allocates and frees
 *            (sampled: its stacks are walked from a signal frame) while
 *            this thread alternates, for about 1 s, allocation in a loop
 *            (caller_freed, with the signal blocked: malloc is
 *            async-signal-safe as far as glibc's is, SPEC, and a handler
 *            that interrupts the inline push or pop of its own thread
 *            corrupts it) and a stretch of work without malloc, where the
 *            signals land; alarm(30) turns a deadlock into a failure
 *   hold     the four callers, then "ready" and nothing until standard
 *            input ends (a live process for `uslub heap PID`)
 * Built with -rdynamic (dladdr names the functions in the process) and -g
 * (addr2line names them in the tool). Only libc: uslub comes in by
 * LD_PRELOAD.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OBJ 64

__attribute__((noinline)) void *alloc_wrapper(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");     /* no tail call */
	return p;
}

static void **take(size_t bytes)
{
	size_t n = bytes / OBJ;
	void **v = calloc(n, sizeof(*v));                /* not through the wrapper */
	if (!v)
		exit(2);
	return v;
}

__attribute__((noinline)) void **caller_one(void)
{
	void **v = take(1 << 20);
	for (size_t i = 0; i < (1u << 20) / OBJ; i++)
		v[i] = alloc_wrapper(OBJ);
	return v;
}

__attribute__((noinline)) void **caller_two(void)
{
	void **v = take(2 << 20);
	for (size_t i = 0; i < (2u << 20) / OBJ; i++)
		v[i] = alloc_wrapper(OBJ);
	return v;
}

__attribute__((noinline)) void **caller_four(void)
{
	void **v = take(4 << 20);
	for (size_t i = 0; i < (4u << 20) / OBJ; i++)
		v[i] = alloc_wrapper(OBJ);
	return v;
}

/* large blocks: 3 page runs of 1 MiB, a 5 MiB mapping, kept (each
 * sampled, weight 1, at sample:256, whose large blocks' interval is 4 KiB:
 * their usable bytes, printed as "big N"); 64 page runs of 128 KiB freed
 * at once; a 6 MiB mapping grown to 12 MiB by realloc, kept (its stack
 * gives it up at the resize: allocated, not in use; its usable bytes
 * before the resize printed as "resized N") */
__attribute__((noinline)) void caller_big(void)
{
	size_t total = 0;
	for (int i = 0; i < 4; i++) {
		void *p = alloc_wrapper(i < 3 ? (size_t)1 << 20 : (size_t)5 << 20);
		total += malloc_usable_size(p);
	}
	for (int i = 0; i < 64; i++)
		free(alloc_wrapper((size_t)128 << 10));
	void *r = alloc_wrapper((size_t)6 << 20);
	size_t resized = malloc_usable_size(r);
	r = realloc(r, (size_t)12 << 20);
	if (!r)
		exit(4);
	printf("resized %zu\n", resized);
	printf("big %zu\n", total);
}

__attribute__((noinline)) void caller_freed(void)
{
	void **v = take(4 << 20);
	for (size_t i = 0; i < (4u << 20) / OBJ; i++)
		v[i] = alloc_wrapper(OBJ);
	for (size_t i = 0; i < (4u << 20) / OBJ; i++)
		free(v[i]);
	free(v);
}

static void *run(void *arg)
{
	switch ((long)arg) {
	case 1: return caller_one();
	case 2: return caller_two();
	case 4: return caller_four();
	default: caller_freed(); return NULL;
	}
}

static volatile int stop;

static void *churn(void *arg __attribute__((unused)))
{
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		caller_freed();
	return NULL;
}

#define ROUNDS 40
#define PER_ROUND 2048
static void *kept[ROUNDS][PER_ROUND];

__attribute__((noinline)) void plugin_round(void *(*fn)(size_t), int r)
{
	for (int i = 0; i < PER_ROUND; i++)
		kept[r][i] = fn(OBJ);
}

static int run_dlclose(const char *plugin)
{
	pthread_t t;
	if (pthread_create(&t, NULL, churn, NULL))
		return 2;
	for (int r = 0; r < ROUNDS; r++) {
		void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen %s: %s\n", plugin, dlerror());
			return 2;
		}
		void *(*fn)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_alloc");
		if (!fn)
			return 2;
		plugin_round(fn, r);
		if (dlclose(h))
			return 2;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	for (int r = ROUNDS / 2; r < ROUNDS; r++)
		for (int i = 0; i < PER_ROUND; i++)
			free(kept[r][i]);
	printf("kept %d\n", ROUNDS / 2 * PER_ROUND * OBJ);
	return 0;
}

static volatile sig_atomic_t signals;

__attribute__((noinline)) void on_signal(int sig __attribute__((unused)))
{
	void *p[8];
	for (int i = 0; i < 8; i++)
		p[i] = malloc(256);
	for (int i = 0; i < 8; i++)
		free(p[i]);
	signals++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "known";
	alarm(30);
	if (!strcmp(mode, "known")) {
		caller_one();
		caller_two();
		caller_four();
		caller_freed();
	} else if (!strcmp(mode, "big")) {
		caller_big();
	} else if (!strcmp(mode, "threads")) {
		pthread_t t[4];
		long which[4] = { 1, 2, 4, 0 };
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, run, (void *)which[i]))
				return 2;
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	} else if (!strcmp(mode, "fork")) {
		caller_one();
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			caller_four();
			exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 3;
		caller_two();
		printf("child %d\n", (int)pid);
	} else if (!strcmp(mode, "dlclose") && argc > 2) {
		return run_dlclose(argv[2]);
	} else if (!strcmp(mode, "signal")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGPROF, &sa, NULL);
		struct itimerval it = { { 0, 200 }, { 0, 200 } };    /* every 200 us of CPU */
		setitimer(ITIMER_PROF, &it, NULL);
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		sigset_t prof;
		sigemptyset(&prof);
		sigaddset(&prof, SIGPROF);
		do {
			pthread_sigmask(SIG_BLOCK, &prof, NULL);
			caller_freed();
			pthread_sigmask(SIG_UNBLOCK, &prof, NULL);
			for (volatile unsigned long spin = 0; spin < 2000000; spin++)
				;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000000L);
		struct itimerval off = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_PROF, &off, NULL);
		printf("signals %d\n", (int)signals);
	} else if (!strcmp(mode, "hold")) {
		caller_one();
		caller_two();
		caller_four();
		caller_freed();
		printf("ready\n");
		fflush(stdout);
		char c;
		while (read(0, &c, 1) > 0)
			;
	} else {
		return 2;
	}
	return 0;
}
