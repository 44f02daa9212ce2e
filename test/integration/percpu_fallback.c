/*
 * percpu_fallback: USLUB_PERCPU=cpu where the process has no rseq (glibc's
 * registration off: GLIBC_TUNABLES=glibc.pthread.rseq=0) falls back to
 * per-thread sheaves and says so in one line on stderr:
 *   "uslub: USLUB_PERCPU=cpu: sheaves stay per thread: <why>"
 * USLUB_PERCPU=auto falls back without a word (auto asks for nothing).
 *
 * The test runs itself again (/proc/self/exe child MODE) with each
 * environment, stdout and stderr to files, and checks:
 *   cpu,  no rseq   the note exactly once (the child also runs a thread
 *                   of its own: one note a process, not a thread) and
 *                   nothing else on stderr; percpu_mode "thread", 0 ids
 *   auto, no rseq   stderr empty; percpu_mode "thread"
 *   thread          stderr empty; percpu_mode "thread"
 *   cpu, rseq on    the note and mode "thread" where this machine has no
 *                   rseq, else no note and mode "cpu" (either way
 *                   consistent)
 * Each child allocates and frees from a cache of its own and kmalloc, in
 * two threads, validates and destroys its cache, and exits 0. The test's
 * own process (ctest: USLUB_PERCPU=cpu, rseq off) must be in "thread".
 */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define NOTE "USLUB_PERCPU=cpu: sheaves stay per thread"

/* A cache with sheaves in every pass of the suite: a sheaf_capacity asked
 * for keeps them with USLUB_CPU_SLABS=1 too (60: the default for these
 * sizes, 123 once rounded to fill the sheaf's allocation). */
static uslub_cache_t *sheaf_cache_create(const char *name, size_t size)
{
	struct uslub_cache_args args;
	memset(&args, 0, sizeof(args));
	args.sheaf_capacity = 60;
	return uslub_cache_create_args(name, size, &args, 0);
}

static void *child_thread(void *arg)
{
	uslub_cache_t *s = arg;
	void *v[1000];
	for (int rep = 0; rep < 3; rep++) {
		for (int i = 0; i < 1000; i++) {
			v[i] = i % 2 ? uslub_cache_alloc(s, 0) : uslub_kmalloc(24 + i % 500, 0);
			CHECK(v[i]);
			memset(v[i], i & 0xff, 24);
		}
		for (int i = 0; i < 1000; i++) {
			CHECK(((unsigned char *)v[i])[23] == (i & 0xff));
			if (i % 2)
				uslub_cache_free(s, v[i]);
			else
				uslub_kfree(v[i]);
		}
	}
	return NULL;
}

/* The child: its mode on stdout, nothing of its own on stderr. */
static int child(void)
{
	uslub_cache_t *s = sheaf_cache_create("fallback-64", 64);
	CHECK(s);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, child_thread, s) == 0);
	child_thread(s);
	CHECK(pthread_join(th, NULL) == 0);
	uslub_flush_thread();
	struct uslub_slabinfo si = slabinfo_get(s);
	CHECK(si.sheaf_capacity > 0);
	CHECK_EQU(si.live_objs, 0);
	CHECK_EQ(uslub_cache_validate(s), 0);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(s, st);
	CHECK_EQU(stat_allocs(st), 3000);
	CHECK_EQU(stat_frees(st), 3000);
	printf("mode=%s ids=%u\n", si.percpu_mode, si.percpu_ids);
	fflush(stdout);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f);
	static char bufs[2][1 << 16];
	static int which;
	char *buf = bufs[which++ & 1];
	size_t n = fread(buf, 1, sizeof(bufs[0]) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static size_t lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Run the child with USLUB_PERCPU=@percpu (NULL: unset) and glibc's rseq
 * on or off; its stdout and stderr in *@out, *@err. */
static void run(const char *percpu, bool rseq_off, char **out, char **err)
{
	char opath[] = "/tmp/uslub-fallback-out-XXXXXX", epath[] = "/tmp/uslub-fallback-err-XXXXXX";
	int ofd = mkstemp(opath), efd = mkstemp(epath);
	CHECK(ofd >= 0 && efd >= 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (dup2(ofd, 1) != 1 || dup2(efd, 2) != 2)
			_exit(126);
		if (percpu)
			setenv("USLUB_PERCPU", percpu, 1);
		else
			unsetenv("USLUB_PERCPU");
		if (rseq_off)
			setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
		else
			unsetenv("GLIBC_TUNABLES");
		unsetenv("USLUB_DEBUG");     /* nothing else may write to stderr */
		unsetenv("USLUB_VERBOSE");
		execl("/proc/self/exe", "percpu_fallback", "child", (char *)NULL);
		_exit(127);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	close(ofd);
	close(efd);
	*out = slurp(opath);
	*err = slurp(epath);
	unlink(opath);
	unlink(epath);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child (USLUB_PERCPU=%s, rseq %s) failed (status %#x):\nstdout:\n%s\nstderr:\n%s",
		  percpu ? percpu : "(unset)", rseq_off ? "off" : "on", status, *out, *err);
	printf("USLUB_PERCPU=%s rseq %s: %s", percpu ? percpu : "(unset)", rseq_off ? "off" : "on",
	       *out);
	if (**err)
		printf("  stderr: %s", *err);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();

	/* this process: ctest runs it with USLUB_PERCPU=cpu and rseq off */
	const char *tun = getenv("GLIBC_TUNABLES"), *pc = getenv("USLUB_PERCPU");
	uslub_cache_t *s = sheaf_cache_create("fallback-self", 64);
	CHECK(s);
	void *p = uslub_cache_alloc(s, 0);
	CHECK(p);
	uslub_cache_free(s, p);
	struct uslub_slabinfo si = slabinfo_get(s);
	if (tun && strstr(tun, "glibc.pthread.rseq=0") && pc &&
	    (!strcmp(pc, "cpu") || !strcmp(pc, "auto")))
		CHECK_MSG(!strcmp(si.percpu_mode, "thread"), "own process: percpu_mode %s",
			  si.percpu_mode);
	uslub_flush_thread();
	CHECK_EQ(uslub_cache_destroy(s), 0);

	char *out, *err;
	/* cpu asked, no rseq: one note, per thread */
	run("cpu", true, &out, &err);
	CHECK_MSG(strstr(out, "mode=thread ids=0\n"), "cpu without rseq: %s", out);
	CHECK_MSG(count_substr(err, NOTE) == 1, "cpu without rseq: the note %zu times:\n%s",
		  count_substr(err, NOTE), err);
	CHECK_MSG(lines(err) == 1 && !strncmp(err, "uslub: " NOTE ": ", strlen("uslub: " NOTE ": ")),
		  "cpu without rseq: stderr is not the one note:\n%s", err);
	CHECK_MSG(strstr(err, "rseq"), "the note does not say why (rseq):\n%s", err);

	/* auto, no rseq: per thread, silently */
	run("auto", true, &out, &err);
	CHECK_MSG(strstr(out, "mode=thread ids=0\n"), "auto without rseq: %s", out);
	CHECK_MSG(!*err, "auto without rseq wrote to stderr:\n%s", err);

	/* thread: per thread, silently */
	run("thread", true, &out, &err);
	CHECK_MSG(strstr(out, "mode=thread ids=0\n"), "thread: %s", out);
	CHECK_MSG(!*err, "USLUB_PERCPU=thread wrote to stderr:\n%s", err);
	run(NULL, false, &out, &err);
	CHECK_MSG(strstr(out, "mode=thread ids=0\n"), "the default: %s", out);
	CHECK_MSG(!*err, "the default mode wrote to stderr:\n%s", err);

	/* cpu with glibc's rseq: cpu where the machine has rseq, else the note */
	run("cpu", false, &out, &err);
	if (strstr(out, "mode=cpu ")) {
		CHECK_MSG(!*err, "cpu with rseq wrote to stderr:\n%s", err);
		CHECK_MSG(!strstr(out, "ids=0\n"), "cpu mode with no id used: %s", out);
	} else {
		CHECK_MSG(strstr(out, "mode=thread ids=0\n"), "cpu with rseq: %s", out);
		CHECK_EQ(count_substr(err, NOTE), 1);
	}
	printf("percpu_fallback: ok\n");
	return 0;
}
