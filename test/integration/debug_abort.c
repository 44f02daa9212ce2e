/*
 * slub_debug's X (uslub's: abort after a detected corruption). The test
 * runs itself again (fork, then exec of /proc/self/exe with USLUB_DEBUG
 * set, since options are read once at startup) as a child that creates
 * "abrt-c", overflows an object's right red zone by one byte and frees it.
 *   - USLUB_DEBUG="FZPUX,abrt-*": the child dies by SIGABRT, after writing
 *     "BUG abrt-c: Right Redzone overwritten" (and the report's details) to
 *     its stderr, which the parent reads through a pipe; it never gets to
 *     print that it survived;
 *   - USLUB_DEBUG="FZPU,abrt-*": the same child reports the same corruption
 *     once, keeps going (its cache validates clean and is destroyed) and
 *     exits 0;
 *   - USLUB_DEBUG="FZPUX,other-*": X for other caches only: "abrt-c" is not
 *     a debug cache, nothing is reported, exit 0.
 */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define SURVIVED "debug_abort child: survived the corruption"

static int child_main(void)
{
	uslub_cache_t *s = uslub_cache_create("abrt-c", 92, 0, 0, NULL);
	CHECK(s);
	void *keep[10];
	for (int i = 0; i < 10; i++)
		CHECK((keep[i] = uslub_cache_alloc(s, 0)) != NULL);
	unsigned char *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	memset(p, 0x5a, 92);
	p[92] = 0x77;                         /* one byte past the object (stride padding in a plain cache) */
	unsigned long e = uslub_error_count();
	uslub_cache_free(s, p);               /* X: abort() here */
	unsigned long reported = uslub_error_count() - e;
	for (int i = 0; i < 10; i++)
		uslub_cache_free(s, keep[i]);
	CHECK_EQ(uslub_cache_validate(s), 0);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	fprintf(stderr, SURVIVED ": %lu reports\n", reported);
	return 0;
}

struct result {
	int status;
	char err[1 << 16];
};

/* Run this binary as the child with USLUB_DEBUG=@spec; collect its stderr
 * and wait status. */
static void run_child(const char *spec, struct result *r)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		if (dup2(fds[1], 2) != 2)
			_exit(120);
		close(fds[1]);
		struct rlimit core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &core);    /* no core file from the abort */
		setenv("USLUB_DEBUG", spec, 1);
		unsetenv("USLUB_ABORT_ON_ERROR");
		char *argv[] = { "integration_debug_abort", "--child", NULL };
		execv("/proc/self/exe", argv);
		_exit(121);
	}
	close(fds[1]);
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fds[0], r->err + len, sizeof(r->err) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(r->err) - 1) {  /* full: drain the rest */
			char sink[4096];
			while (read(fds[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	r->err[len] = 0;
	close(fds[0]);
	pid_t w;
	do
		w = waitpid(pid, &r->status, 0);
	while (w < 0 && errno == EINTR);
	CHECK_MSG(w == pid, "waitpid: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child_main();
	static struct result r;

	run_child("FZPUX,abrt-*", &r);
	CHECK_MSG(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
		  "with X: child status %#x (exited %d, signal %d), not SIGABRT; stderr:\n%s",
		  r.status, WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1,
		  WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0, r.err);
	CHECK_HAS(r.err, "BUG abrt-c: Right Redzone overwritten");
	CHECK_HAS(r.err, "First byte 0x77 instead of 0xcc");
	CHECK_MSG(!strstr(r.err, SURVIVED), "with X the child went on:\n%s", r.err);
	CHECK_EQU(count_substr(r.err, "BUG "), 1);
	printf("  FZPUX: report written, then SIGABRT\n");

	run_child("FZPU,abrt-*", &r);
	CHECK_MSG(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		  "without X: child status %#x; stderr:\n%s", r.status, r.err);
	CHECK_HAS(r.err, "BUG abrt-c: Right Redzone overwritten");
	CHECK_HAS(r.err, SURVIVED ": 1 reports");
	CHECK_EQU(count_substr(r.err, "BUG "), 1);
	printf("  FZPU: reported once, child went on and exited 0\n");

	run_child("FZPUX,other-*", &r);
	CHECK_MSG(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		  "X for other caches: child status %#x; stderr:\n%s", r.status, r.err);
	CHECK_HAS(r.err, SURVIVED ": 0 reports");
	CHECK_MSG(!strstr(r.err, "BUG "), "abrt-c was checked:\n%s", r.err);
	printf("  FZPUX,other-*: abrt-c not a debug cache, nothing reported\n");

	printf("debug_abort: ok\n");
	return 0;
}
