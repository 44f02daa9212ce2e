/*
 * The live statistics channel is safe to write and to read (the protocol:
 * src/observe/publish_dir.h). Each case publishes into a private root of
 * its own (USLUB_PUBLISH_ROOT=<root>, a fresh directory), so that planting
 * links and chown'ing directories cannot disturb another process, and the
 * real /dev/shm/uslub-<euid> is not touched.
 *
 *   symlink_dir     <root>/uslub-<euid> is a link (to a directory, to a
 *                   file): the publisher refuses with a message and writes
 *                   nothing through it; the reader refuses too.
 *   symlink_files   links planted at <pid>.txt, .json, .lock and at the
 *                   temporaries, to a precious 0600 file: never written
 *                   through; the files are 0600 under umask 0.
 *   foreign_dir     (root) the directory owned by nobody: the publisher
 *                   refuses, the reader refuses ("owned by uid ...").
 *   forged          a publishing process's snapshot replaced: with ESC
 *                   sequences and other control bytes, raw and as JSON
 *                   escapes (\u001b: top unescapes names) (no control byte
 *                   in the output of slabinfo, allocinfo, top, with or
 *                   without --json); with a wrong start time (refused as
 *                   stale); owned by nobody (root: refused); a link
 *                   (refused).
 *   stale           fork children of a publisher that _exit, are killed,
 *                   exec a program that stays (sleep) or ends (true): their
 *                   files are left, a reader refuses the exec'd one as
 *                   stale and sweeps them all; again, and the next
 *                   publisher's start sweeps them.
 *   run_secure      `uslub run` refuses set-uid and set-gid programs (and
 *                   file capabilities, as root where they can be set),
 *                   found through PATH too: exit 126.
 *
 * Usage: integration_publish_secure [<path of the uslub tool>]
 */
#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>

static const char *tool;
static char root[256];          /* this case's USLUB_PUBLISH_ROOT */
static char dir[512];           /* <root>/uslub-<euid> */
static unsigned int nobody = 65534;
static bool is_root;

/* ------------------------------------------------------------------------
 * helpers
 * ---------------------------------------------------------------------- */

/* A fresh private root for the next case; the previous one removed. */
static void rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		CHECK(d);
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[1024];
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_rf(sub);
		}
		closedir(d);
		CHECK_MSG(!rmdir(path), "rmdir %s: %s", path, strerror(errno));
	} else {
		CHECK_MSG(!unlink(path), "unlink %s: %s", path, strerror(errno));
	}
}

static void new_root(const char *name)
{
	if (root[0])
		rm_rf(root);
	const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	snprintf(root, sizeof(root), "%s/uslub-test-%s.XXXXXX", base, name);
	CHECK_MSG(mkdtemp(root), "mkdtemp %s: %s", root, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/uslub-%u", root, (unsigned)geteuid());
	CHECK(!setenv("USLUB_PUBLISH_ROOT", root, 1));
}

static void path_of(char *buf, size_t len, const char *fmt, pid_t pid)
{
	char name[64];
	snprintf(name, sizeof(name), fmt, (int)pid);
	snprintf(buf, len, "%s/%s", dir, name);
}

static bool is_file(const char *path)
{
	struct stat st;
	return !lstat(path, &st) && S_ISREG(st.st_mode);
}

static bool exists(const char *path)
{
	struct stat st;
	return !lstat(path, &st);
}

/* Wait up to 5 s for a regular file at @path. */
static bool wait_file(const char *path)
{
	for (int ms = 0; ms < 5000; ms += 5) {
		if (is_file(path))
			return true;
		usleep(5000);
	}
	return false;
}

static void put_file(const char *path, const char *content, mode_t mode)
{
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.test", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
	CHECK_MSG(fd >= 0, "%s: %s", tmp, strerror(errno));
	CHECK(fchmod(fd, mode) == 0);
	size_t n = strlen(content);
	CHECK((size_t)write(fd, content, n) == n);
	close(fd);
	CHECK(rename(tmp, path) == 0);
}

static char *get_file(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY);
	CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	CHECK(n >= 0);
	buf[n] = 0;
	close(fd);
	return buf;
}

/* Run a shell command line, stdout and stderr together: its output (to
 * free) and exit status. */
static char *run(int *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *run(int *status, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strcat(cmd, " 2>&1");
	return run_command(cmd, status);
}

/* A child of this program in @mode that publishes every @ms: it waits for
 * the go byte on *@go before it execs (so that its pid is known before it
 * publishes), then for a byte (or EOF) on its stdin, *@ctl, before it
 * exits; its stdout on *@out when @out; stderr into <root>/err.<pid>. */
struct kid {
	pid_t pid;
	int go, ctl, out;
	char err[600];
};

static void spawn(struct kid *k, const char *self, const char *mode, int ms, mode_t umask_to)
{
	int gp[2], cp[2], op[2];
	CHECK(!pipe(gp) && !pipe(cp) && !pipe(op));
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		char c, err[600], v[32];
		close(gp[1]);
		close(cp[1]);
		close(op[0]);
		if (read(gp[0], &c, 1) != 1)
			_exit(98);
		snprintf(err, sizeof(err), "%s/err.%d", root, (int)getpid());
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(97);
		dup2(fd, 2);
		dup2(cp[0], 0);
		dup2(op[1], 1);
		snprintf(v, sizeof(v), "%d", ms);
		setenv("USLUB_PUBLISH_MS", v, 1);
		/* The forker's children start publisher threads after a
		 * multi-threaded fork: TSan must let them. */
		const char *t = getenv("TSAN_OPTIONS");
		char tsan[512];
		snprintf(tsan, sizeof(tsan), "%s%sdie_after_fork=0", t ? t : "", t && *t ? ":" : "");
		setenv("TSAN_OPTIONS", tsan, 1);
		umask(umask_to);
		execl("/proc/self/exe", self, mode, (char *)NULL);
		_exit(99);
	}
	close(gp[0]);
	close(cp[0]);
	close(op[1]);
	k->pid = pid;
	k->go = gp[1];
	k->ctl = cp[1];
	k->out = op[0];
	snprintf(k->err, sizeof(k->err), "%s/err.%d", root, (int)pid);
}

static void go(struct kid *k)
{
	CHECK(write(k->go, "g", 1) == 1);
	close(k->go);
}

/* Let it exit; its exit status. */
static int finish(struct kid *k)
{
	int st;
	if (write(k->ctl, "x", 1) != 1) {
		/* it is gone already */
	}
	close(k->ctl);
	close(k->out);
	CHECK(waitpid(k->pid, &st, 0) == k->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wait up to 5 s until the child's stderr says @what. */
static char *wait_err(struct kid *k, const char *what)
{
	char *s = "";
	for (int ms = 0; ms < 5000; ms += 5) {
		if (exists(k->err) && strstr((s = get_file(k->err)), what))
			return s;
		usleep(5000);
	}
	test_fail(__FILE__, __LINE__, "the publisher did not say '%s'; its stderr: %s", what, s);
}

static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	snprintf(buf, sizeof(buf), "%s", get_file(path));
	char *p = strrchr(buf, ')');
	CHECK(p);
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		CHECK(p);
		p++;
	}
	return strtoull(p, NULL, 10);
}

/*
 * The first byte a terminal would act on, or NULL: C0 controls but '\n'
 * and '\t', DEL, C1 controls (raw, or UTF-8 encoded), malformed UTF-8.
 */
static const char *control_byte(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; s[i];) {
		unsigned char c = s[i];
		if (c < 0x80) {
			if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
				return str + i;
			i++;
			continue;
		}
		size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 :
			     c >= 0xc2 && c <= 0xdf ? 2 : 0;
		unsigned long cp = c & (len == 4 ? 0x07u : len == 3 ? 0x0fu : 0x1fu);
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return str + i;
			cp = cp << 6 | (s[i + k] & 0x3fu);
		}
		if (!len || cp < 0xa0)
			return str + i;
		i += len;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * the child modes
 * ---------------------------------------------------------------------- */

/* --wait: publish (the parent set it up) until a byte or EOF on stdin. */
static int wait_main(void)
{
	uslub_cache_t *s = uslub_cache_create("secure-test-cache", 100, 0, 0, NULL);
	CHECK(s);
	void *p = uslub_cache_alloc(s, 0);
	char c;
	if (read(0, &c, 1) < 0)
		return 1;
	uslub_cache_free(s, p);
	return 0;
}

/* Wait until our own snapshot is there (the forker's children). */
static void wait_own(void)
{
	char path[600];
	path_of(path, sizeof(path), "%d.txt", getpid());
	if (!wait_file(path))
		_exit(50);
}

/*
 * --forker: fork four children that publish; once all have, the first
 * _exits, the second is killed, the third execs sleep (and stays), the
 * fourth execs true (and ends). Print their pids, then wait for stdin.
 */
static int forker_main(void)
{
	pid_t c[4];
	int gop[4][2], execp[2];
	wait_own();
	CHECK(pipe2(execp, O_CLOEXEC) == 0);
	for (int i = 0; i < 4; i++) {
		CHECK(pipe(gop[i]) == 0);
		c[i] = fork();
		CHECK(c[i] >= 0);
		if (c[i])
			continue;
		close(gop[i][1]);
		close(execp[0]);
		wait_own();
		char b;
		if (read(gop[i][0], &b, 1) != 1)
			_exit(51);
		if (i == 0)
			_exit(0);                       /* no exit handlers */
		if (i == 1)
			pause();                        /* killed */
		if (i == 2)
			execl("/bin/sleep", "sleep", "20", (char *)NULL);
		if (i == 3)
			execl("/bin/true", "true", (char *)NULL);
		_exit(52);
	}
	close(execp[1]);
	for (int i = 0; i < 4; i++) {
		char path[600];
		path_of(path, sizeof(path), "%d.txt", c[i]);
		CHECK_MSG(wait_file(path), "child %d did not publish", (int)c[i]);
	}
	for (int i = 0; i < 4; i++)
		CHECK(write(gop[i][1], "g", 1) == 1);
	int st;
	CHECK(waitpid(c[0], &st, 0) == c[0] && WIFEXITED(st));
	CHECK(kill(c[1], SIGKILL) == 0);
	CHECK(waitpid(c[1], &st, 0) == c[1] && WIFSIGNALED(st));
	char b;
	CHECK(read(execp[0], &b, 1) == 0);       /* both exec'd: EOF */
	CHECK(waitpid(c[3], &st, 0) == c[3] && WIFEXITED(st) && !WEXITSTATUS(st));
	printf("%d %d %d %d\n", (int)c[0], (int)c[1], (int)c[2], (int)c[3]);
	fflush(stdout);
	if (read(0, &b, 1) < 0)
		return 1;
	kill(c[2], SIGKILL);
	waitpid(c[2], &st, 0);
	return 0;
}

/* ------------------------------------------------------------------------
 * the cases
 * ---------------------------------------------------------------------- */

static void symlink_dir(const char *self)
{
	for (int to_file = 0; to_file < 2; to_file++) {
		new_root("symlink-dir");
		char victim[600];
		snprintf(victim, sizeof(victim), "%s/victim", root);
		if (to_file)
			put_file(victim, "precious\n", 0600);
		else
			CHECK(mkdir(victim, 0700) == 0);
		CHECK(symlink(victim, dir) == 0);
		struct kid k;
		spawn(&k, self, "--wait", 10, 022);
		go(&k);
		char *err = wait_err(&k, "not publishing");
		CHECK_MSG(strstr(err, "symbolic link"), "publisher's message: %s", err);
		usleep(50000);                  /* it would have written by now */
		if (to_file) {
			CHECK(!strcmp(get_file(victim), "precious\n"));
		} else {
			DIR *d = opendir(victim);
			CHECK(d);
			struct dirent *e;
			while ((e = readdir(d)))
				CHECK_MSG(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
					  "%s written through the link", e->d_name);
			closedir(d);
		}
		struct stat st;
		CHECK(!lstat(dir, &st) && S_ISLNK(st.st_mode));
		int status;
		char *out = run(&status, "%s slabinfo %d", tool, (int)k.pid);
		CHECK_MSG(status == 1 && strstr(out, "symbolic link"), "reader: %d %s", status,
			  out);
		free(out);
		CHECK_EQ(finish(&k), 0);
	}
	printf("symlink_dir: ok\n");
}

static void symlink_files(const char *self)
{
	new_root("symlink-files");
	CHECK(mkdir(dir, 0700) == 0);
	char victim[600];
	snprintf(victim, sizeof(victim), "%s/victim", root);
	put_file(victim, "precious\n", 0600);
	struct kid k;
	spawn(&k, self, "--wait", 10, 0);        /* umask 0: still 0600 */
	static const char *const names[] = {
		"%d.txt", "%d.json", "%d.lock", ".%d.txt.tmp", ".%d.json.tmp"
	};
	for (int i = 0; i < 5; i++) {
		char p[600];
		path_of(p, sizeof(p), names[i], k.pid);
		CHECK(symlink(victim, p) == 0);
	}
	go(&k);
	char txt[600], json[600], lock[600];
	path_of(txt, sizeof(txt), "%d.txt", k.pid);
	path_of(json, sizeof(json), "%d.json", k.pid);
	path_of(lock, sizeof(lock), "%d.lock", k.pid);
	CHECK_MSG(wait_file(txt) && wait_file(json) && wait_file(lock), "nothing published");
	usleep(50000);                          /* a few more snapshots */
	CHECK(!strcmp(get_file(victim), "precious\n"));
	struct stat st;
	CHECK(!stat(victim, &st) && (st.st_mode & 07777) == 0600);
	CHECK(!lstat(dir, &st) && (st.st_mode & 07777) == 0700 && st.st_uid == geteuid());
	const char *files[] = { txt, json, lock };
	for (int i = 0; i < 3; i++) {
		CHECK(!lstat(files[i], &st) && S_ISREG(st.st_mode));
		CHECK_MSG((st.st_mode & 07777) == 0600, "%s: mode %o", files[i],
			  (unsigned)(st.st_mode & 07777));
		CHECK(st.st_uid == geteuid());
	}
	/* a snapshot that shows the cache: the publisher's first may come
	 * before the child made it, and under TSan on a loaded machine the
	 * next one more than 50 ms later (CI failed it once so) */
	int status;
	char *out = NULL;
	for (int tries = 0; tries < 100; tries++) {
		free(out);
		out = run(&status, "%s slabinfo %d", tool, (int)k.pid);
		if (status || strstr(out, "secure-test-cache"))
			break;
		usleep(100000);
	}
	CHECK_MSG(status == 0 && strstr(out, "secure-test-cache"), "reader: %d %s", status, out);
	free(out);
	CHECK_EQ(finish(&k), 0);
	CHECK_MSG(!exists(txt) && !exists(json) && !exists(lock), "files left after exit");
	CHECK(!strcmp(get_file(victim), "precious\n"));
	printf("symlink_files: ok\n");
}

static void foreign_dir(const char *self)
{
	if (!is_root) {
		printf("foreign_dir: skipped: needs root (to chown to nobody)\n");
		return;
	}
	new_root("foreign-dir");
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(chown(dir, nobody, nobody) == 0);
	struct kid k;
	spawn(&k, self, "--wait", 10, 022);
	go(&k);
	char *err = wait_err(&k, "not publishing");
	char want[64];
	snprintf(want, sizeof(want), "owned by uid %u", nobody);
	CHECK_MSG(strstr(err, want), "publisher's message: %s", err);
	/* A snapshot forged by its owner: the reader refuses the directory. */
	char txt[600];
	path_of(txt, sizeof(txt), "%d.txt", k.pid);
	char content[256];
	snprintf(content, sizeof(content), "uslub pid %d (start time %llu ticks), snapshot "
		 "at 1.000\nforged\n", (int)k.pid, start_time(k.pid));
	put_file(txt, content, 0600);
	int status;
	char *out = run(&status, "%s slabinfo %d", tool, (int)k.pid);
	snprintf(want, sizeof(want), "owned by uid %u, not the process's uid %u", nobody,
		 (unsigned)geteuid());
	CHECK_MSG(status == 1 && strstr(out, want) && !strstr(out, "forged"), "reader: %d %s",
		  status, out);
	free(out);
	CHECK_EQ(finish(&k), 0);
	printf("foreign_dir: ok\n");
}

static void forged(const char *self)
{
	new_root("forged");
	struct kid k;
	spawn(&k, self, "--wait", 600000, 022);  /* one snapshot, then sleeps */
	go(&k);
	char txt[600], json[600];
	path_of(txt, sizeof(txt), "%d.txt", k.pid);
	path_of(json, sizeof(json), "%d.json", k.pid);
	CHECK_MSG(wait_file(txt) && wait_file(json), "nothing published");
	unsigned long long st0 = start_time(k.pid);
	char content[1024];
	int status;
	char *out;

	/* Control characters: ESC sequences (CSI, OSC, title, clipboard),
	 * BEL, CR, backspace, DEL, raw and encoded C1 CSI. */
	snprintf(content, sizeof(content),
		 "uslub pid %d (start time %llu ticks), snapshot at 1.000\n"
		 "evil-cache\033[2J\033[H\033]0;pwned\007 \033]52;c;QUFBQQ==\033\\\r\b\x7f"
		 "\x9b" "31m \xc2\x9b" "31m caf\xc3\xa9\n\nallocinfo\nevil-site\033[31m red\x01\n\n",
		 (int)k.pid, st0);
	put_file(txt, content, 0600);
	snprintf(content, sizeof(content),
		 "{\"pid\":%d,\"start_time\":%llu,\"time_ns\":1,\"slabinfo\":{\"caches\":"
		 "[{\"name\":\"evil-cache\033[2J\033]0;pwned\007\x9b\\u001b[2J\\u009b\",\"num_objs\":1}]},"
		 "\"groups\":[],"
		 "\"allocinfo\":[{\"site\":\"evil-site\033[31m\x7f\"}]}\n", (int)k.pid, st0);
	put_file(json, content, 0600);
	static const char *const cmds[] = {
		"slabinfo %d", "slabinfo %d --json", "allocinfo %d", "allocinfo %d --json",
		"top %d -n 2 -d 10", "top %d --json -n 2 -d 10",
	};
	for (int i = 0; i < 6; i++) {
		char args[64];
		snprintf(args, sizeof(args), cmds[i], (int)k.pid);
		out = run(&status, "%s %s", tool, args);
		CHECK_MSG(status == 0, "uslub %s: exit %d: %s", args, status, out);
		CHECK_MSG(strstr(out, "evil-"), "uslub %s shows nothing: %s", args, out);
		const char *c = control_byte(out);
		CHECK_MSG(!c, "uslub %s printed control byte 0x%02x at offset %ld", args,
			  (unsigned char)*c, (long)(c - out));
		CHECK_MSG(!strchr(out, '\033'), "uslub %s printed ESC", args);
		if (strstr(args, "--json") && !strncmp(args, "slab", 4))
			CHECK_MSG(json_valid(out), "uslub %s: not JSON: %s", args, out);
		if (i == 0)
			CHECK_MSG(strstr(out, "caf\xc3\xa9"), "UTF-8 text lost: %s", out);
		free(out);
	}

	/* A start time that is not the process's: stale (pid reused). */
	snprintf(content, sizeof(content), "uslub pid %d (start time %llu ticks), snapshot "
		 "at 1.000\nstale-cache\n", (int)k.pid, st0 + 1);
	put_file(txt, content, 0600);
	snprintf(content, sizeof(content), "{\"pid\":%d,\"start_time\":%llu,\"time_ns\":1,"
		 "\"slabinfo\":{\"caches\":[{\"name\":\"stale-cache\"}]}}\n", (int)k.pid,
		 st0 + 1);
	put_file(json, content, 0600);
	for (int j = 0; j < 2; j++) {
		out = run(&status, "%s slabinfo %d%s", tool, (int)k.pid, j ? " --json" : "");
		CHECK_MSG(status == 1 && strstr(out, "stale snapshot") &&
			  strstr(out, "pid reused") && !strstr(out, "stale-cache"),
			  "wrong start time: %d %s", status, out);
		free(out);
	}
	/* Another pid's snapshot under this pid's name. */
	snprintf(content, sizeof(content), "uslub pid %d (start time %llu ticks), snapshot "
		 "at 1.000\nother-cache\n", (int)getpid(), start_time(getpid()));
	put_file(txt, content, 0600);
	out = run(&status, "%s slabinfo %d", tool, (int)k.pid);
	CHECK_MSG(status == 1 && !strstr(out, "other-cache"), "other pid: %d %s", status, out);
	free(out);

	/* A link at the snapshot's name (to a good snapshot): refused. */
	char good[600];
	snprintf(good, sizeof(good), "%s/good", root);
	snprintf(content, sizeof(content), "uslub pid %d (start time %llu ticks), snapshot "
		 "at 1.000\nlinked-cache\n", (int)k.pid, st0);
	put_file(good, content, 0600);
	CHECK(unlink(txt) == 0 && symlink(good, txt) == 0);
	out = run(&status, "%s slabinfo %d", tool, (int)k.pid);
	CHECK_MSG(status == 1 && strstr(out, "symbolic link") && !strstr(out, "linked-cache"),
		  "link: %d %s", status, out);
	free(out);

	/* Owned by another uid, in the right directory: refused. */
	if (is_root) {
		CHECK(unlink(txt) == 0);
		put_file(txt, content, 0600);
		CHECK(chown(txt, nobody, nobody) == 0);
		out = run(&status, "%s slabinfo %d", tool, (int)k.pid);
		char want[64];
		snprintf(want, sizeof(want), "owned by uid %u, not the process's uid %u", nobody,
			 (unsigned)geteuid());
		CHECK_MSG(status == 1 && strstr(out, want) && !strstr(out, "linked-cache"),
			  "foreign file: %d %s", status, out);
		free(out);
	} else {
		printf("forged: foreign file owner skipped: needs root (chown)\n");
	}
	CHECK_EQ(finish(&k), 0);
	CHECK_MSG(!exists(txt) && !exists(json), "files left after exit");
	printf("forged: ok\n");
}

/* Run the forker: the pids of its four children, their files left. */
static void forker(struct kid *f, const char *self, pid_t c[4])
{
	spawn(f, self, "--forker", 10, 022);
	go(f);
	char line[128];
	size_t n = 0;
	while (n < sizeof(line) - 1) {
		ssize_t r = read(f->out, line + n, 1);
		if (r <= 0 || line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	int a, b, cc, d;
	CHECK_MSG(sscanf(line, "%d %d %d %d", &a, &b, &cc, &d) == 4, "forker said '%s'; "
		  "stderr: %s", line, exists(f->err) ? get_file(f->err) : "");
	c[0] = a, c[1] = b, c[2] = cc, c[3] = d;
	for (int i = 0; i < 4; i++) {
		char txt[600], lock[600];
		path_of(txt, sizeof(txt), "%d.txt", c[i]);
		path_of(lock, sizeof(lock), "%d.lock", c[i]);
		CHECK_MSG(exists(txt) && exists(lock), "child %d left no files: cannot test",
			  (int)c[i]);
	}
}

static void check_swept(struct kid *f, pid_t c[4], const char *by)
{
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = {
			"%d.txt", "%d.json", "%d.lock", ".%d.txt.tmp", ".%d.json.tmp"
		};
		for (int j = 0; j < 5; j++) {
			char p[600];
			path_of(p, sizeof(p), names[j], c[i]);
			CHECK_MSG(!exists(p), "%s: %s not swept", by, p);
		}
	}
	char p[600];
	path_of(p, sizeof(p), "%d.txt", f->pid);
	CHECK_MSG(exists(p), "%s swept the live forker's snapshot", by);
	path_of(p, sizeof(p), "%d.lock", f->pid);
	CHECK_MSG(exists(p), "%s swept the live forker's lock", by);
}

static void stale(const char *self)
{
	new_root("stale");
	struct kid f;
	pid_t c[4];
	int status;

	/* Swept by a reader: the exec'd one, alive, is refused as stale. */
	forker(&f, self, c);
	CHECK(kill(c[2], 0) == 0);
	char *out = run(&status, "%s slabinfo %d", tool, (int)c[2]);
	CHECK_MSG(status == 1 && strstr(out, "stale snapshot") &&
		  strstr(out, "no longer publishes"), "exec'd child: %d %s", status, out);
	free(out);
	check_swept(&f, c, "a reader");
	out = run(&status, "%s slabinfo %d", tool, (int)f.pid);
	CHECK_MSG(status == 0, "the forker itself: %d %s", status, out);
	free(out);
	out = run(&status, "%s slabinfo %d", tool, (int)c[0]);
	CHECK_MSG(status == 1 && strstr(out, "no process"), "dead child: %d %s", status, out);
	free(out);
	CHECK_EQ(finish(&f), 0);

	/* Swept by the next publisher when it starts. */
	forker(&f, self, c);
	struct kid q;
	spawn(&q, self, "--wait", 600000, 022);
	go(&q);
	char p[600];
	path_of(p, sizeof(p), "%d.txt", q.pid);
	CHECK_MSG(wait_file(p), "the next publisher did not publish");
	check_swept(&f, c, "the next publisher");
	CHECK_EQ(finish(&q), 0);
	CHECK_EQ(finish(&f), 0);
	printf("stale: ok\n");
}

static void run_secure(void)
{
	new_root("run");
	char prog[600];
	snprintf(prog, sizeof(prog), "%s/prog", root);
	put_file(prog, "#!/bin/sh\nexit 0\n", 0755);     /* never run */
	static const mode_t modes[] = { 04755, 02755 };
	static const char *const what[] = { "set-uid", "set-gid" };
	int status;
	char *out;
	for (int i = 0; i < 2; i++) {
		CHECK(chmod(prog, modes[i]) == 0);
		out = run(&status, "%s run -- %s", tool, prog);
		CHECK_MSG(status == 126 && strstr(out, what[i]) && strstr(out, "AT_SECURE"),
			  "run %s: %d %s", what[i], status, out);
		free(out);
		out = run(&status, "PATH=%s:/usr/bin:/bin %s run -- prog", root, tool);
		CHECK_MSG(status == 126 && strstr(out, what[i]), "run %s through PATH: %d %s",
			  what[i], status, out);
		free(out);
	}
	CHECK(chmod(prog, 0755) == 0);
	/* File capabilities: a version 2 security.capability (CAP_NET_RAW
	 * permitted), where this kernel and file system let us set one. */
	unsigned int cap[5] = { 0x02000000, 1u << 13, 0, 0, 0 };
	if (!setxattr(prog, "security.capability", cap, sizeof(cap), 0)) {
		out = run(&status, "%s run -- %s", tool, prog);
		CHECK_MSG(status == 126 && strstr(out, "capabilities"), "run caps: %d %s",
			  status, out);
		free(out);
	} else {
		printf("run_secure: file capabilities skipped: cannot set security.capability "
		       "here (%s)\n", strerror(errno));
	}
	printf("run_secure: ok\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--wait"))
		return wait_main();
	if (argc == 2 && !strcmp(argv[1], "--forker")) {
		const char *r = getenv("USLUB_PUBLISH_ROOT");
		CHECK(r);
		snprintf(root, sizeof(root), "%s", r);
		snprintf(dir, sizeof(dir), "%s/uslub-%u", root, (unsigned)geteuid());
		return forker_main();
	}
	static char toolbuf[4096];
	tool = uslub_tool_path(argc == 2 ? argv[1] : NULL, toolbuf, sizeof(toolbuf));
	if (!tool) {
		printf("publish_secure: skipped: no uslub tool next to the test\n");
		return 77;
	}
	is_root = geteuid() == 0;
	struct passwd *pw = getpwnam("nobody");
	if (pw)
		nobody = (unsigned)pw->pw_uid;
	if (!is_root)
		printf("publish_secure: not root: the cases that chown to nobody are skipped\n");

	symlink_dir(argv[0]);
	symlink_files(argv[0]);
	foreign_dir(argv[0]);
	forged(argv[0]);
	stale(argv[0]);
	run_secure();
	rm_rf(root);
	printf("publish_secure: ok\n");
	return 0;
}
