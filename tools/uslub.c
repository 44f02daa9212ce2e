/*
 * uslub — the command line tool.
 *
 *   uslub run [--report | --report-file FILE] [--profile[=MODE]] [--] CMD [ARGS...]
 *                                    run CMD on the uslub malloc (LD_PRELOAD)
 *   uslub slabinfo PID [--json]      one snapshot of a running process
 *   uslub allocinfo PID [--json]     its allocation profile, when published
 *   uslub top PID [-d MS] [-n COUNT | --once] [--json] [--sort COL] [--view VIEW]
 *                                    a full-screen view of it (tools/top.c)
 *   uslub flame [OPTIONS] [FILE]     an SVG flame graph of folded stacks
 *                                    (tools/flame.c)
 *   uslub pprof [OPTIONS] [FILE]     folded stacks as a pprof profile
 *                                    (tools/pprof.c)
 *   uslub bench [ARGS...]            the benchmark suite (from a build tree)
 *   uslub help [COMMAND]             usage and every USLUB_* option
 *
 * A process publishes its statistics when started with
 * USLUB_PUBLISH_MS=<ms> (src/observe/publish.c): <pid>.txt and <pid>.json
 * in /dev/shm/uslub-<euid>/, a directory private to its effective uid,
 * replaced atomically and removed at exit (leftovers of processes that
 * exec'd or were killed are swept; src/observe/publish_dir.h). slabinfo,
 * allocinfo and top only read them, so watching costs the process nothing
 * but the publisher's snapshots; they check the directory, the file, its
 * owner, the pid and start time it records and the publisher's lock
 * before they print anything, and print no control character from it.
 *
 * `uslub run` refuses a set-uid, set-gid or file-capability CMD (exit
 * 126): it would run in secure-execution mode, without the preload.
 *
 * `uslub run` without --report execs CMD itself (the pid, the signals and
 * the exit status are CMD's); with --report it stays as CMD's parent,
 * forwards the signals sent to it, and prints CMD's report when it exits.
 *
 * The tool links the static core for the option table only. It includes
 * <uslub/types.h>, not <uslub.h>: the latter registers the includer's
 * allocation tags from a constructor, which would pull the whole core (and
 * its own constructor: options, caches, a publisher thread with
 * USLUB_PUBLISH_MS) into the tool. The one function it calls is
 * uslub_options_fprint().
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* uslub_options_fprint(): every USLUB_* option, its default and meaning.
 * Declarations only: no constructor (see above). */
#include <uslub/types.h>
/* The directory protocol shared with the publisher (header only, libc),
 * and what this file shares with tools/top.c. */
#include "../src/observe/publish_dir.h"
#include "tool.h"
#include "resolve.h"

/* Baked in by CMake (CMakeLists.txt, target uslub_tool). */
#ifndef USLUB_SOURCE_DIR
#define USLUB_SOURCE_DIR ""
#endif
#ifndef USLUB_BINARY_DIR
#define USLUB_BINARY_DIR ""
#endif
#ifndef USLUB_INSTALL_LIBDIR
#define USLUB_INSTALL_LIBDIR "lib"
#endif

#define MALLOC_LIB "libuslub-malloc.so"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__riscv) && __riscv_xlen == 64
#define MULTIARCH "riscv64-linux-gnu"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MULTIARCH "powerpc64le-linux-gnu"
#else
#define MULTIARCH ""
#endif

/* Exit statuses of the tool's own failures (those of CMD pass through). */
#define EXIT_TOOL    125   /* uslub itself failed (no library, no temp dir) */
#define EXIT_SECURE  126   /* CMD is set-uid/set-gid/has file capabilities */
#define EXIT_NOEXEC  127   /* CMD could not be executed                     */

static const char usage_text[] =
	"usage: uslub run [--report | --report-file FILE] [--profile[=MODE]] [--heap-profile FILE]\n"
	"                 [--] CMD [ARGS...]\n"
	"       uslub slabinfo PID [--json]\n"
	"       uslub allocinfo PID [--json]\n"
	"       uslub top PID [-d MS] [-n COUNT | --once] [--json] [--sort COL] [--view VIEW]\n"
	"       uslub resolve [FILE...]\n"
	"       uslub flame [--title TEXT] [--unit NAME] [--width PX] [FILE]\n"
	"       uslub pprof [--type NAME[/UNIT]] [--raw] [FILE]\n"
	"       uslub heap [--alloc] [-o OUT] PID|FILE\n"
	"       uslub bench [ARGS...]\n"
	"       uslub help [COMMAND]\n";

static const char run_help[] =
	"uslub run [--report | --report-file FILE] [--profile[=MODE]] [--heap-profile FILE]\n"
	"          [--] CMD [ARGS...]\n"
	"  Run CMD with the uslub malloc front end preloaded (LD_PRELOAD=" MALLOC_LIB ",\n"
	"  put before any LD_PRELOAD already set). Every process CMD starts inherits it.\n"
	"    --report            when CMD exits, print its report (slabinfo, and allocinfo\n"
	"                        with --profile) to stderr, and say how many other processes\n"
	"                        of its tree left one; when CMD ends with _exit() (sh -c\n"
	"                        does), its last snapshot (it runs with USLUB_PUBLISH_MS=100\n"
	"                        unless that is set), or why there is none\n"
	"    --report-file FILE  every process of the tree writes its report to FILE at exit\n"
	"                        (USLUB_REPORT=FILE; %p in FILE is replaced by the pid,\n"
	"                        - is stderr)\n"
	"    --profile           allocation profiling (USLUB_PROFILING=1: every object)\n"
	"    --profile=sample[:BYTES]\n"
	"                        sampled profiling: one allocation every 512 KiB (or\n"
	"                        BYTES) allocated, on average; allocinfo's figures are\n"
	"                        estimates (USLUB_PROFILING=sample[:BYTES])\n"
	"    --heap-profile FILE when CMD exits, write its heap profile: folded stacks\n"
	"                        (root;...;leaf BYTES, for flamegraph.pl or speedscope) of\n"
	"                        its sampled allocations, frames named by function; FILE:\n"
	"                        the bytes still in use at exit (the leak profile),\n"
	"                        FILE.alloc: the bytes allocated in all (estimates);\n"
	"                        other processes of the tree: FILE.PID (USLUB_HEAP_PROFILE).\n"
	"                        FILE.svg: a flame graph instead (uslub flame); FILE.pb.gz\n"
	"                        (or .pb): one pprof profile with the four sample types\n"
	"                        (alloc_objects/space, inuse_objects/space: uslub heap);\n"
	"                        .PID and .alloc go before the extension (heap.alloc.svg)\n"
	"  Other options are passed in the environment, e.g.\n"
	"    USLUB_PUBLISH_MS=500 uslub run -- CMD   (then: uslub top PID)\n"
	"  In secure-execution mode (set-uid/set-gid programs, file capabilities: AT_SECURE)\n"
	"  uslub reads no USLUB_* variable at all; uslub run refuses such a CMD (exit 126).\n"
	"  Exit status: CMD's; 128+N when CMD was killed by signal N; 127 when CMD could\n"
	"  not be executed; 126 when CMD is set-uid/set-gid or has file capabilities;\n"
	"  125 when uslub itself failed; 2 on bad usage.\n";

static const char pid_help[] =
	"uslub slabinfo PID [--json]       the caches of a running process (one snapshot)\n"
	"uslub allocinfo PID [--json]      its live allocations by call site (needs\n"
"                                  USLUB_PROFILING=1 or sample in the process)\n"
	"uslub top PID                     a full-screen view, refreshed (uslub help top)\n"
	"  They read what the process publishes when started with USLUB_PUBLISH_MS=<ms>\n"
	"  (/dev/shm/uslub-<euid>/<pid>.txt and .json, private to the process's effective\n"
	"  uid: run them as that user or root), e.g.\n"
	"    USLUB_PUBLISH_MS=500 uslub run -- CMD\n"
	"  They refuse a snapshot that is not the process's own (directory or file not\n"
	"  owned by its uid, a symbolic link, another pid or start time: a reused pid, or\n"
	"  a process that exec'd), remove stale snapshots of others when they may, and\n"
	"  print no control character from the file (shown as '?').\n";

static const char resolve_help[] =
	"uslub resolve [FILE...]\n"
	"  Print each FILE (standard input without one, or for -) with the program's\n"
	"  call sites in its allocinfo resolved to source file, line and function by\n"
	"  addr2line (binutils), as `uslub run --report` and `uslub allocinfo PID` do:\n"
	"  for reports written with USLUB_REPORT=FILE or --report-file FILE, table or\n"
	"  JSON; a heap profile (USLUB_HEAP_PROFILE=FILE: folded stacks) with each frame\n"
	"  named by its function, as `uslub run --heap-profile` writes it.\n"
	"  Control characters are shown as '?'. Exit status: 0, or 1 when a FILE\n"
	"  cannot be read (the others are still printed).\n";

static const char bench_help[] =
	"uslub bench [ARGS...]\n"
	"  Run the benchmark suite (bench/run.py of the source tree, on this build\n"
	"  tree); ARGS go to run.py (uslub bench --help lists them, e.g. --quick,\n"
	"  --only B1,B4). Only from a build tree: the benchmarks are not installed.\n";

static void print_options(FILE *f)
{
	fprintf(f, "\nOptions, read from the environment by every process that uses uslub\n"
		   "(USLUB_<NAME>=<value>; integers also take on/off, yes/no, true/false):\n");
	uslub_options_fprint(f);
	fprintf(f, "Read by this tool:\n"
		   "  %-22s the library `uslub run` preloads (default: " MALLOC_LIB " next to\n"
		   "  %-22s this program, or in its ../%s)\n", "USLUB_LIBRARY", "",
		USLUB_INSTALL_LIBDIR);
}

int help(const char *topic)
{
	if (!topic) {
		fputs(usage_text, stdout);
		fputs("\n", stdout);
		fputs(run_help, stdout);
		fputs("\n", stdout);
		fputs(pid_help, stdout);
		fputs("\n", stdout);
		fputs(top_help, stdout);
		fputs("\n", stdout);
		fputs(resolve_help, stdout);
		fputs("\n", stdout);
		fputs(flame_help, stdout);
		fputs("\n", stdout);
		fputs(pprof_help, stdout);
		fputs("\n", stdout);
		fputs(heap_help, stdout);
		fputs("\n", stdout);
		fputs(bench_help, stdout);
		print_options(stdout);
		return 0;
	}
	if (!strcmp(topic, "run")) {
		fputs(run_help, stdout);
		print_options(stdout);
		return 0;
	}
	if (!strcmp(topic, "slabinfo") || !strcmp(topic, "allocinfo")) {
		fputs(pid_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "top")) {
		fputs(top_help, stdout);
		fputs("\n", stdout);
		fputs(pid_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "resolve")) {
		fputs(resolve_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "bench")) {
		fputs(bench_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "flame")) {
		fputs(flame_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "pprof")) {
		fputs(pprof_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "heap")) {
		fputs(heap_help, stdout);
		return 0;
	}
	if (!strcmp(topic, "help"))
		return help(NULL);
	fprintf(stderr, "uslub: no command '%s'\n", topic);
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}

/* The usage on stderr, after a message when @fmt; EXIT_USAGE. */
int usage(const char *fmt, ...)
{
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		fputs("uslub: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
	fputs(usage_text, stderr);
	fputs("Run 'uslub help' for details and the USLUB_* options.\n", stderr);
	return EXIT_USAGE;
}

/* The directory of this executable (no trailing slash); 0, or -1. */
static int exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (slash == buf)
		strcpy(buf, "/");
	return 0;
}

/* ------------------------------------------------------------------------
 * slabinfo, allocinfo, top: read the published snapshot
 * ---------------------------------------------------------------------- */

/*
 * The snapshot of a process is trusted only after the checks below (the
 * protocol is in src/observe/publish_dir.h): the directory of the process's
 * effective uid (from /proc/PID/status) is a real directory owned by that
 * uid and not writable by group or others; the file is a regular file
 * opened with O_NOFOLLOW and owned by that uid; it records PID and the
 * start time /proc/PID/stat shows now (else the pid was reused); and PID
 * holds the lock of its files (else it exec'd a program that does not
 * publish, or its publisher stopped). Each check that fails is said, and
 * the command exits with 1. Once per command, a reader that may write the
 * directory removes the stale files of other processes in it, as a
 * publisher does when it starts.
 */
static int swept;

/* Remove the stale files of @dfd, once per command. */
static void sweep(int dfd)
{
	if (dfd >= 0 && !swept) {
		swept = 1;
		_uslub_pubdir_sweep(dfd, 0);
	}
}

/* The effective uid of @pid (the second field of the Uid: line of
 * /proc/PID/status), or -1. */
static long proc_euid(long pid)
{
	char buf[4096];
	if (_uslub_pubdir_read_proc((pid_t)pid, "status", buf, sizeof(buf)) < 0)
		return -1;
	const char *p = strstr(buf, "\nUid:");
	unsigned long ruid, euid;
	if (!p || sscanf(p + 5, "%lu %lu", &ruid, &euid) != 2)
		return -1;
	return (long)euid;
}

/* The process is gone: say so, and sweep what we may (our own directory). */
static int no_process(long pid)
{
	fprintf(stderr, "uslub: no process %ld\n", pid);
	char dir[PUBDIR_PATH_MAX], why[PUBDIR_PATH_MAX + 160];
	int dfd;
	_uslub_pubdir_path(dir, sizeof(dir), (unsigned int)geteuid());
	if (!_uslub_pubdir_open(dir, (unsigned int)geteuid(), "uid", 022, &dfd, why, sizeof(why))) {
		sweep(dfd);
		close(dfd);
	}
	return 1;
}

static void no_snapshot(const struct snapshot *s, const char *what, int kind)
{
	if (kind == PUB_HEAP)
		fprintf(stderr, "uslub: process %ld publishes no heap dump (%s: %s); start it with "
			"USLUB_PUBLISH_MS=500 and sampled profiling (the default: "
			"USLUB_PROFILING=sample), stacks on (USLUB_STACK_DEPTH > 0)\n", s->pid,
			s->path, what);
	else
		fprintf(stderr, "uslub: process %ld publishes no statistics (%s: %s); start it "
			"with USLUB_PUBLISH_MS=500\n", s->pid, s->path, what);
}

static int refuse(const struct snapshot *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int refuse(const struct snapshot *s, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "uslub: refusing the snapshot of process %ld (%s): ", s->pid, s->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

char *slurp_fd(int fd, size_t *lenp)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len < cap)
			continue;
		char *nb = cap < (256u << 20) ? realloc(buf, cap * 2 + 1) : NULL;
		if (!nb) {
			free(buf);
			errno = cap < (256u << 20) ? ENOMEM : EFBIG;
			return NULL;
		}
		buf = nb;
		cap *= 2;
	}
	if (!buf)
		return NULL;
	buf[len] = '\0';
	*lenp = len;
	return buf;
}

bool grow_array(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = c <= SIZE_MAX / size ? realloc(*p, c * size) : NULL;
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

char *read_input(const char *file, size_t *lenp, const char *who)
{
	bool in = !file || !strcmp(file, "-");
	int fd = in ? 0 : open(file, O_RDONLY | O_CLOEXEC);
	char *text = fd >= 0 ? slurp_fd(fd, lenp) : NULL;
	int err = errno;
	if (fd > 0)
		close(fd);
	if (!text)
		fprintf(stderr, "uslub %s: cannot read %s: %s\n", who, in ? "standard input" : file,
			strerror(err));
	return text;
}

/* The pid and start time the snapshot records: 0, or -1. */
static int recorded(const struct snapshot *s, int json, long *pid, unsigned long long *start)
{
	if (!json) {                    /* the text and the heap dump */
		int p;
		if (sscanf(s->doc, PUBDIR_TXT_HEAD, &p, start) != 2)
			return -1;
		*pid = p;
		return 0;
	}
	const char *ps, *pe, *ts, *te;
	if (!json_member(s->doc, "pid", &ps, &pe) ||
	    !json_member(s->doc, "start_time", &ts, &te))
		return -1;
	char *end;
	*pid = strtol(ps, &end, 10);
	if (end != pe || *ps == '-')
		return -1;
	*start = strtoull(ts, &end, 10);
	return end == te && *ts != '-' ? 0 : -1;
}

/* Load and check the snapshot of @pid into @s: 0, or 1 with a message. */
int load(struct snapshot *s, long pid, int kind)
{
	int json = kind == PUB_JSON;
	char name[32];
	_uslub_pubdir_name(name, sizeof(name), kind, (pid_t)pid);
	char why[PUBDIR_PATH_MAX + 160];
	unsigned long long start, rstart;
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->dfd = -1;
	if (_uslub_pubdir_start_time((pid_t)pid, &start)) {
		if (errno == ENOENT || errno == ESRCH)
			return no_process(pid);
		fprintf(stderr, "uslub: cannot read /proc/%ld/stat: %s\n", pid, strerror(errno));
		return 1;
	}
	long uid = proc_euid(pid);
	if (uid < 0) {
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			return no_process(pid);
		fprintf(stderr, "uslub: cannot read the uid of process %ld (/proc/%ld/status)\n",
			pid, pid);
		return 1;
	}
	s->uid = (unsigned int)uid;
	_uslub_pubdir_path(s->dir, sizeof(s->dir), s->uid);
	snprintf(s->path, sizeof(s->path), "%s/%s", s->dir, name);
	if (_uslub_pubdir_open(s->dir, s->uid, "the process's uid", 022, &s->dfd, why, sizeof(why))) {
		if (errno == ENOENT) {
			no_snapshot(s, "no such directory", kind);
		} else if (errno == EPERM) {
			fprintf(stderr, "uslub: refusing the statistics of process %ld: %s\n", pid,
				why);
		} else if (errno == EACCES) {
			fprintf(stderr, "uslub: may not read the statistics of process %ld (uid "
				"%u): %s; run as uid %u or root\n", pid, s->uid, why, s->uid);
		} else {
			fprintf(stderr, "uslub: %s\n", why);
		}
		return 1;
	}

	int fd = openat(s->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			no_snapshot(s, "no such file", kind);
		else if (errno == ELOOP)
			refuse(s, "it is a symbolic link");
		else if (errno == EACCES)
			fprintf(stderr, "uslub: may not read %s: %s; run as uid %u or root\n",
				s->path, strerror(errno), s->uid);
		else
			fprintf(stderr, "uslub: %s: %s\n", s->path, strerror(errno));
		return 1;
	}
	struct stat st;
	int bad = 1;
	if (fstat(fd, &st))
		fprintf(stderr, "uslub: %s: %s\n", s->path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		refuse(s, "not a regular file");
	else if (st.st_uid != s->uid)
		refuse(s, "owned by uid %u, not the process's uid %u", (unsigned)st.st_uid,
		       s->uid);
	else if (st.st_mode & 022)
		refuse(s, "mode %04o: group or others may write it",
		       (unsigned)(st.st_mode & 07777));
	else if (!(s->doc = slurp_fd(fd, &s->len)))
		fprintf(stderr, "uslub: %s: %s\n", s->path, strerror(errno));
	else
		bad = 0;
	close(fd);
	if (bad)
		return 1;

	long rpid;
	if (recorded(s, json, &rpid, &rstart))
		return refuse(s, "it records no pid and start time (not a snapshot of this "
			      "uslub)");
	if (rpid != pid)
		return refuse(s, "it is the snapshot of pid %ld", rpid);
	if (rstart != start)
		return refuse(s, "stale snapshot of a process that has exited (pid reused: it "
			      "records start time %llu, process %ld started at %llu)", rstart,
			      pid, start);
	pid_t holder = _uslub_pubdir_lock_holder(s->dfd, (pid_t)pid);
	if (holder != (pid_t)pid)
		return refuse(s, "stale snapshot: process %ld no longer publishes (it exec'd a "
			      "program that does not, or its publisher stopped; %s)", pid,
			      holder < 0 ? "no lock file" : holder ? "its lock is another's" :
			      "nobody holds its lock");
	return 0;
}

/* Sweep the directory once (stale files of others) and let go of @s. */
void unload(struct snapshot *s)
{
	sweep(s->dfd);
	if (s->dfd >= 0)
		close(s->dfd);
	free(s->doc);
	s->doc = NULL;
	s->dfd = -1;
}

/*
 * Everything printed from a snapshot goes through emit(): the file was
 * written by another process, and a terminal obeys what it is sent (ESC
 * and CSI sequences move the cursor, clear or retitle the window, set the
 * clipboard, on some terminals answer back into the input). Kept:
 * printable ASCII, '\n', '\t', and well-formed UTF-8 of code points from
 * U+00A0 on; every other byte (the C0 controls, ESC among them, DEL, the
 * C1 controls U+0080..U+009F raw or encoded, malformed UTF-8) is printed
 * as '?'. JSON stays JSON: a raw control byte is invalid inside a JSON
 * string anyway, and escapes such as \u001b are plain text.
 */
size_t safe_char(const unsigned char *s, size_t n)
{
	if (s[0] == '\n' || s[0] == '\t')
		return 1;
	return _uslub_text_char(s, n);     /* the library's test (base/report.c) */
}

void emit(const char *str, size_t n, FILE *out)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		size_t len = safe_char(s + i, n - i);
		if (len) {
			fwrite(s + i, 1, len, out);
			i += len;
		} else {
			putc('?', out);
			i++;
		}
	}
}

/* Print the published file of @pid; 0, or 1 with a message. */
static int show(long pid, int json)
{
	struct snapshot s;
	int ret = load(&s, pid, json ? PUB_JSON : PUB_TXT);
	if (!ret)
		emit(s.doc, s.len, stdout);
	unload(&s);
	return ret;
}

/* Minimal JSON scanning: the end of the value starting at @p (after
 * blanks), or NULL when it is malformed. */
const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *skip_string(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\') {
			if (!*++p)
				return NULL;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

const char *skip_value(const char *p)
{
	p = skip_ws(p);
	if (*p == '"')
		return skip_string(p);
	if (*p == '{' || *p == '[') {
		int depth = 0;
		while (*p) {
			if (*p == '"') {
				p = skip_string(p);
				if (!p)
					return NULL;
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if (*p == '}' || *p == ']')
				if (--depth == 0)
					return p + 1;
			p++;
		}
		return NULL;
	}
	const char *s = p;
	while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
		p++;
	return p == s ? NULL : p;
}

/* The value of the top-level @key of the object @doc: its start and end,
 * or 0 when absent (or @doc is not an object). */
int json_member(const char *doc, const char *key, const char **vs, const char **ve)
{
	const char *p = skip_ws(doc);
	if (*p++ != '{')
		return 0;
	size_t klen = strlen(key);
	for (;;) {
		p = skip_ws(p);
		if (*p != '"')
			return 0;
		const char *k = p + 1, *kend = skip_string(p);
		if (!kend)
			return 0;
		p = skip_ws(kend);
		if (*p++ != ':')
			return 0;
		const char *v = skip_ws(p), *vend = skip_value(v);
		if (!vend)
			return 0;
		if ((size_t)(kend - 1 - k) == klen && !memcmp(k, key, klen)) {
			*vs = v;
			*ve = vend;
			return 1;
		}
		p = skip_ws(vend);
		if (*p++ != ',')
			return 0;
	}
}

static void no_allocinfo(long pid)
{
	fprintf(stderr, "uslub: the snapshot of process %ld has no allocinfo: it is published "
		"when the process runs with USLUB_PROFILING=1 or sample (uslub run --profile or "
		"--profile=sample) by a uslub "
		"that publishes allocinfo\n", pid);
}

/*
 * allocinfo: the "allocinfo" member of the JSON snapshot, or the text
 * snapshot's section that starts with a line "allocinfo" and ends at a
 * blank line (what uslub_allocinfo_print() writes), after its first line
 * (the snapshot's pid and time).
 */
static int show_allocinfo(long pid, int json)
{
	struct snapshot s;
	if (load(&s, pid, json ? PUB_JSON : PUB_TXT)) {
		unload(&s);
		return 1;
	}
	const char *doc = s.doc;
	int ret = 0;
	if (json) {
		const char *as, *ae, *ps, *pe, *ts, *te;
		if (!json_member(doc, "allocinfo", &as, &ae)) {
			no_allocinfo(pid);
			ret = 1;
		} else {
			printf("{");
			if (json_member(doc, "pid", &ps, &pe)) {
				printf("\"pid\":");
				emit(ps, (size_t)(pe - ps), stdout);
				printf(",");
			}
			if (json_member(doc, "time_ns", &ts, &te)) {
				printf("\"time_ns\":");
				emit(ts, (size_t)(te - ts), stdout);
				printf(",");
			}
			printf("\"allocinfo\":");
			resolve_and_emit(as, (size_t)(ae - as), stdout, emit);
			printf("}\n");
		}
	} else {
		const char *sec = NULL;
		for (const char *l = doc; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
			if (!strncmp(l, "allocinfo", 9)) {
				sec = l;
				break;
			}
		if (!sec) {
			no_allocinfo(pid);
			ret = 1;
		} else {
			const char *end = strstr(sec, "\n\n");
			end = end ? end + 1 : doc + s.len;
			if (!strncmp(doc, "uslub pid", 9) && doc != sec) {
				const char *nl = strchr(doc, '\n');
				emit(doc, (size_t)(nl - doc) + 1, stdout);
			}
			resolve_and_emit(sec, (size_t)(end - sec), stdout, emit);
		}
	}
	unload(&s);
	return ret;
}

static int cmd_pid(int argc, char **argv)
{
	const char *cmd = argv[1];
	int json = 0;
	long pid = -1;
	for (int i = 2; i < argc; i++) {
		char *end;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return help(cmd);
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (pid < 0 && argv[i][0] != '-') {
			pid = strtol(argv[i], &end, 10);
			if (*end || pid <= 0 || pid > INT_MAX)
				return usage("'%s' is not a process id", argv[i]);
		} else {
			return usage("unexpected argument '%s'", argv[i]);
		}
	}
	if (pid < 0)
		return usage("%s: which process? (PID)", cmd);
	if (!strcmp(cmd, "slabinfo"))
		return show(pid, json);
	return show_allocinfo(pid, json);
}

/* ------------------------------------------------------------------------
 * run
 * ---------------------------------------------------------------------- */

/* The library to preload, as an absolute path in @out; 0, or -1 with a
 * message. */
static int find_library(char *out, size_t len)
{
	const char *env = getenv("USLUB_LIBRARY");
	if (env && *env) {
		if (access(env, R_OK) || !realpath(env, out)) {
			fprintf(stderr, "uslub run: USLUB_LIBRARY=%s: %s\n", env, strerror(errno));
			return -1;
		}
		return 0;
	}
	char dir[PATH_MAX];
	if (exe_dir(dir, sizeof(dir))) {
		fprintf(stderr, "uslub run: cannot find this program's directory "
			"(/proc/self/exe); set USLUB_LIBRARY=/path/to/" MALLOC_LIB "\n");
		return -1;
	}
	char cand[5][PATH_MAX + 64];
	int n = 0;
	snprintf(cand[n++], sizeof(cand[0]), "%s/" MALLOC_LIB, dir);       /* build tree */
	if (USLUB_INSTALL_LIBDIR[0] == '/')
		snprintf(cand[n++], sizeof(cand[0]), "%s/" MALLOC_LIB, USLUB_INSTALL_LIBDIR);
	else
		snprintf(cand[n++], sizeof(cand[0]), "%s/../%s/" MALLOC_LIB, dir,
			 USLUB_INSTALL_LIBDIR);
	snprintf(cand[n++], sizeof(cand[0]), "%s/../lib/" MALLOC_LIB, dir);
	if (MULTIARCH[0])
		snprintf(cand[n++], sizeof(cand[0]), "%s/../lib/" MULTIARCH "/" MALLOC_LIB, dir);
	snprintf(cand[n++], sizeof(cand[0]), "%s/../lib64/" MALLOC_LIB, dir);
	for (int i = 2; i < n; i++)             /* ../lib twice when LIBDIR is lib */
		if (!strcmp(cand[i], cand[1]))
			memmove(cand[i], cand[--n], sizeof(cand[0]));
	for (int i = 0; i < n; i++)
		if (!access(cand[i], R_OK) && realpath(cand[i], out) && strlen(out) < len)
			return 0;
	fprintf(stderr, "uslub run: cannot find " MALLOC_LIB "; looked in:\n");
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  %s\n", cand[i]);
	fprintf(stderr, "build the uslub_malloc target, or set USLUB_LIBRARY=/path/to/"
		MALLOC_LIB "\n");
	return -1;
}

/* --report: how often CMD publishes the snapshot that stands in for its
 * report when it ends with _exit() (USLUB_PUBLISH_MS). */
#define REPORT_PUBLISH_MS "100"

/* --report: the parent waits for CMD and forwards the signals sent to it. */
static volatile sig_atomic_t child_pid;
static const int fwd_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
#define NR_FWD ((int)(sizeof(fwd_signals) / sizeof(fwd_signals[0])))

/*
 * A signal some process sent to the tool (si_code <= 0: kill, sigqueue,
 * tkill) is passed on to CMD. One the kernel sent (si_code > 0: Ctrl-C,
 * Ctrl-\ and hangups from the terminal) already reached CMD, which is in
 * the same foreground process group; the tool only outlives it to report.
 */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	pid_t c = child_pid;
	if (c > 0 && si->si_code <= 0 && si->si_pid != c) {
		int e = errno;
		kill(c, sig);
		errno = e;
	}
}

static void remove_dir(const char *dir)
{
	for (int tries = 0; tries < 5; tries++) {
		DIR *d = opendir(dir);
		if (!d)
			return;
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
		if (!rmdir(dir) || errno != ENOTEMPTY)
			return;
	}
}

/* The command line, shortened, for the report's header. */
static void describe(char *buf, size_t len, char **argv)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; argv[i] && n + 1 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", argv[i]);
	if (n >= len - 1 && len > 4)
		strcpy(buf + len - 4, "...");
	/* One line, and text only, as emit() prints a snapshot: a control
	 * byte is a space, DEL, a C1 control (raw, or U+0080..U+009F: U+009B
	 * is CSI to a terminal that takes C1) and malformed UTF-8 are '?'. */
	size_t blen = strlen(buf);
	for (size_t i = 0; i < blen;) {
		unsigned char c = (unsigned char)buf[i];
		size_t k = safe_char((const unsigned char *)buf + i, blen - i);
		if (k && c >= ' ') {
			i += k;
			continue;
		}
		buf[i++] = c < ' ' ? ' ' : '?';
	}
}

/*
 * What CMD's publisher left (USLUB_PUBLISH_MS, set by run_and_report()):
 * its last snapshot, read after CMD ended and before it is reaped (a
 * zombie's /proc/PID/stat still gives its start time, and its pid cannot
 * be reused yet). Kept only when it records CMD's pid and start time.
 */
struct last_snapshot {
	int dfd;                        /* the checked directory, or -1 */
	int lock_fd;                    /* <pid>.lock, read-locked: no sweeper
					   removes the files while we read them */
	int published;                  /* CMD's publisher made <pid>.lock */
	char *text;                     /* <pid>.txt, or NULL */
	size_t len;
	unsigned long long time_ns;     /* when it was taken (<pid>.json), or 0 */
};

/* @name in @dfd, when it is a regular file of ours that only we may
 * write: malloc'ed and NUL-terminated, or NULL. */
static char *read_own(int dfd, const char *name, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *doc = NULL;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 022))
		doc = slurp_fd(fd, len);
	close(fd);
	return doc;
}

/* @since: when CMD was forked (CLOCK_REALTIME seconds), to tell CMD's
 * lock file from a leftover of an earlier holder of its pid. */
static void last_snapshot_read(struct last_snapshot *ls, pid_t pid, time_t since)
{
	char dir[PUBDIR_PATH_MAX], why[PUBDIR_PATH_MAX + 160], name[32];
	unsigned long long start;
	memset(ls, 0, sizeof(*ls));
	ls->dfd = ls->lock_fd = -1;
	_uslub_pubdir_path(dir, sizeof(dir), (unsigned int)geteuid());
	if (_uslub_pubdir_start_time(pid, &start) ||
	    _uslub_pubdir_open(dir, (unsigned int)geteuid(), "uid", 022, &ls->dfd, why,
			       sizeof(why))) {
		ls->dfd = -1;
		return;
	}
	_uslub_pubdir_name(name, sizeof(name), PUB_LOCK, pid);
	ls->lock_fd = openat(ls->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (ls->lock_fd >= 0) {
		struct flock l = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		struct stat st;
		if (fcntl(ls->lock_fd, F_SETLK, &l) || fstat(ls->lock_fd, &st) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			close(ls->lock_fd);     /* a sweeper has it: the files go */
			ls->lock_fd = -1;
		} else {
			ls->published = st.st_ctime >= since - 1;
		}
	}
	struct snapshot s;
	long rpid;
	unsigned long long rstart;
	memset(&s, 0, sizeof(s));
	_uslub_pubdir_name(name, sizeof(name), PUB_TXT, pid);
	s.doc = read_own(ls->dfd, name, &s.len);
	if (s.doc && !recorded(&s, 0, &rpid, &rstart) && rpid == pid && rstart == start) {
		ls->text = s.doc;
		ls->len = s.len;
		ls->published = 1;
	} else {
		free(s.doc);
		return;
	}
	_uslub_pubdir_name(name, sizeof(name), PUB_JSON, pid);
	s.doc = read_own(ls->dfd, name, &s.len);
	const char *ts, *te;
	if (s.doc && !recorded(&s, 1, &rpid, &rstart) && rpid == pid && rstart == start &&
	    json_member(s.doc, "time_ns", &ts, &te))
		ls->time_ns = strtoull(ts, NULL, 10);
	free(s.doc);
}

/* Let go of the snapshot, and sweep the directory: CMD's files are stale
 * now, and so are those of the tree's other processes that ended with
 * _exit or were killed. */
static void last_snapshot_done(struct last_snapshot *ls)
{
	free(ls->text);
	ls->text = NULL;
	if (ls->lock_fd >= 0)
		close(ls->lock_fd);              /* drops our read lock */
	if (ls->dfd >= 0) {
		_uslub_pubdir_sweep(ls->dfd, 0);
		close(ls->dfd);
	}
	ls->dfd = ls->lock_fd = -1;
}

/* The snapshot's tables, after its own first line (pid, start time). */
static void print_snapshot_body(const struct last_snapshot *ls)
{
	const char *body = ls->text;
	if (!strncmp(body, "uslub pid ", 10)) {
		const char *nl = strchr(body, '\n');
		body = nl ? nl + 1 : body + ls->len;
	}
	resolve_and_emit(body, ls->len - (size_t)(body - ls->text), stderr, emit);
}

/* "0.04 s before it ended", or "" when the snapshot's time is unknown. */
static void snapshot_age(char *buf, size_t len, const struct last_snapshot *ls,
			 unsigned long long end_ns)
{
	buf[0] = '\0';
	if (ls->time_ns && end_ns >= ls->time_ns)
		snprintf(buf, len, " (%.2f s before it ended)",
			 (double)(end_ns - ls->time_ns) / 1e9);
}

/*
 * CMD's report: the file it wrote at exit (USLUB_REPORT), its header line
 * completed with the command; else, when CMD ended with _exit() (which
 * runs no exit handler) or was killed, its last published snapshot; else
 * why there is none.
 */
static void print_report(const char *dir, pid_t pid, char **cmd, int status,
			 const struct last_snapshot *ls, unsigned long long end_ns)
{
	char path[PATH_MAX + 32], what[256], age[64];
	describe(what, sizeof(what), cmd);
	snprintf(path, sizeof(path), "%s/report.%d", dir, (int)pid);
	fflush(stdout);
	FILE *f = fopen(path, "r");
	snapshot_age(age, sizeof(age), ls, end_ns);
	if (f) {
		/* One header: the file's own first line ("uslub report: pid
		 * N"), with the command added; the rest with its caller sites
		 * resolved (resolve.c). */
		size_t len;
		char *text = slurp_fd(fileno(f), &len);
		char head[64];
		int n0 = snprintf(head, sizeof(head), "uslub report: pid %d\n", (int)pid);
		fprintf(stderr, "uslub report: pid %d (%s)\n", (int)pid, what);
		if (text) {
			size_t skip = len >= (size_t)n0 && !memcmp(text, head, (size_t)n0) ?
				      (size_t)n0 : 0;
			resolve_and_emit(text + skip, len - skip, stderr, emit);
			free(text);
		}
		fclose(f);
	} else {
		/* Why there is no report file. */
		char why[160];
		if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
		else
			snprintf(why, sizeof(why), "it ended with _exit(), which runs no exit "
				 "handler, or exec'd a program that does not run on uslub");
		const char *ms = getenv("USLUB_PUBLISH_MS");
		if (ls->text) {
			fprintf(stderr, "uslub report: pid %d (%s), from its last snapshot%s\n"
				"(it left no report at exit: %s)\n", (int)pid, what, age, why);
			print_snapshot_body(ls);
		} else if (ls->published) {
			fprintf(stderr, "uslub: pid %d (%s) left no report: %s; it ran on uslub "
				"but ended before its first snapshot\n", (int)pid, what, why);
		} else if (WIFSIGNALED(status)) {
			fprintf(stderr, "uslub: pid %d (%s) left no report: %s, and published no "
				"snapshot\n", (int)pid, what, why);
		} else {
			fprintf(stderr, "uslub: pid %d (%s) left no report and published no "
				"snapshot: it did not run on uslub (a static program, or one that "
				"drops LD_PRELOAD)%s\n", (int)pid, what, ms && atol(ms) > 0 ?
				", or it ended with _exit() before uslub started publishing" :
				"; or it ended with _exit(), and USLUB_PUBLISH_MS turned off the "
				"snapshot that would stand in");
		}
	}

	/* The other processes of the tree (fork children, exec'ed children). */
	DIR *d = opendir(dir);
	if (!d)
		return;
	int others = 0;
	char pids[160];
	size_t pl = 0;
	pids[0] = '\0';
	struct dirent *e;
	while ((e = readdir(d))) {
		int p;
		if (sscanf(e->d_name, "report.%d", &p) != 1 || p == (int)pid)
			continue;
		others++;
		if (pl + 16 < sizeof(pids))
			pl += (size_t)snprintf(pids + pl, sizeof(pids) - pl, " %d", p);
		else if (pl + 5 < sizeof(pids) && pids[pl - 1] != '.')
			pl += (size_t)snprintf(pids + pl, sizeof(pids) - pl, " ...");
	}
	closedir(d);
	if (others)
		fprintf(stderr, "uslub: %d other process%s of the tree left a report (pid%s%s); "
			"to keep them all: uslub run --report-file FILE.%%p\n", others,
			others == 1 ? "" : "es", others == 1 ? "" : "s", pids);
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_TOOL;
}

/*
 * --heap-profile FILE: the heap dumps the processes of the tree wrote into
 * @dir at exit (USLUB_HEAP_PROFILE=DIR/heap.%p.heap), their frames named
 * (tools/heap.c), written for CMD (@pid) to FILE (the bytes in use) and
 * FILE.alloc (the bytes allocated), for the others to FILE.PID and
 * FILE.PID.alloc; as a flame graph when FILE ends with .svg; as one pprof
 * profile with the four sample types when it ends with .pb.gz or .pb. The
 * .PID and .alloc go before the extension (heap.alloc.svg). 0, or 1 when
 * CMD left none.
 */
static int heap_profiles_write(const char *dir, pid_t pid, const char *out)
{
	DIR *d = opendir(dir);
	int mine = 0, others = 0;
	struct dirent *e;
	size_t stem;
	enum heap_format format = heap_format_of(out, &stem);
	bool pprof = format == HEAP_PPROF_GZ || format == HEAP_PPROF;
	while (d && (e = readdir(d))) {
		int p, n = 0;
		if (sscanf(e->d_name, "heap.%d.heap%n", &p, &n) != 1 || e->d_name[n] || !n)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		size_t len;
		char *text = fd >= 0 ? slurp_fd(fd, &len) : NULL;
		if (fd >= 0)
			close(fd);
		if (!text)
			continue;
		char who[24] = "";
		if (p != (int)pid)
			snprintf(who, sizeof(who), ".%d", p);
		for (int alloc = 0; alloc < (pprof ? 1 : 2); alloc++) {
			char path[PATH_MAX + 64];
			snprintf(path, sizeof(path), "%.*s%s%s%s", (int)stem, out, who,
				 alloc ? ".alloc" : "", out + stem);
			FILE *f = fopen(path, "w");
			if (!f) {
				fprintf(stderr, "uslub run: --heap-profile: cannot write %s: %s\n",
					path, strerror(errno));
				continue;
			}
			int erc = heap_dump_emit(text, len, f, format, alloc, p, "run --heap-profile");
			if (fclose(f) || erc)
				fprintf(stderr, "uslub run: --heap-profile: cannot write %s%s%s\n", path,
					erc ? "" : ": ", erc ? "" : strerror(errno));
			else if (!alloc)
				*(p == (int)pid ? &mine : &others) += 1;
		}
		free(text);
	}
	if (d)
		closedir(d);
	if (!mine)
		fprintf(stderr, "uslub run: pid %d left no heap profile (it ended without exit(), "
			"or ran without sampled profiling: USLUB_PROFILING=sample)\n", (int)pid);
	if (others)
		fprintf(stderr, "uslub run: %d other process%s of the tree left a heap profile: "
			"%.*s.PID%s\n", others, others == 1 ? "" : "es", (int)stem, out, out + stem);
	return !mine;
}

/* --report, --heap-profile: fork, exec CMD, wait, print its report (with
 * @report), write its heap profile (to @heap), clean up. */
static int run_and_report(char **cmd, int report, const char *heap)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp || strchr(tmp, '%'))
		tmp = "/tmp";
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/uslub-run.XXXXXX", tmp) >= sizeof(dir) - 16 ||
	    !mkdtemp(dir)) {
		fprintf(stderr, "uslub run: cannot create a temporary directory in %s: %s\n", tmp,
			strerror(errno));
		return EXIT_TOOL;
	}
	char pattern[PATH_MAX + 16];
	snprintf(pattern, sizeof(pattern), "%s/report.%%p", dir);
	if (report)
		setenv("USLUB_REPORT", pattern, 1);
	snprintf(pattern, sizeof(pattern), "%s/heap.%%p.heap", dir);
	if (heap)
		setenv("USLUB_HEAP_PROFILE", pattern, 1);

	/* Catch the forwarded signals, blocked until the child's pid is known. */
	sigset_t block, old;
	sigemptyset(&block);
	struct sigaction sa, saved[NR_FWD];
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < NR_FWD; i++) {
		sigaddset(&block, fwd_signals[i]);
		sigaction(fwd_signals[i], &sa, &saved[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &old);

	int pfd[2];                        /* exec failure: the child's errno */
	if (pipe2(pfd, O_CLOEXEC)) {
		fprintf(stderr, "uslub run: pipe: %s\n", strerror(errno));
		remove_dir(dir);
		return EXIT_TOOL;
	}
	fflush(NULL);
	time_t forked = time(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "uslub run: fork: %s\n", strerror(errno));
		remove_dir(dir);
		return EXIT_TOOL;
	}
	if (pid == 0) {
		close(pfd[0]);
		for (int i = 0; i < NR_FWD; i++)
			sigaction(fwd_signals[i], &saved[i], NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(cmd[0], cmd);
		int err = errno;
		fprintf(stderr, "uslub run: cannot run %s: %s\n", cmd[0], strerror(err));
		ssize_t w = write(pfd[1], &err, sizeof(err));
		(void)w;
		_exit(EXIT_NOEXEC);
	}
	child_pid = pid;
	close(pfd[1]);
	signal(SIGPIPE, SIG_IGN);          /* stderr may be gone: still clean up */
	sigprocmask(SIG_SETMASK, &old, NULL);

	int err = 0;
	ssize_t r;
	while ((r = read(pfd[0], &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	int exec_failed = r == (ssize_t)sizeof(err);

	/* Wait for CMD to end but leave it unreaped while its last snapshot
	 * is read: its pid and start time stay its own. */
	struct last_snapshot ls = { .dfd = -1, .lock_fd = -1 };
	siginfo_t si;
	int r2;
	memset(&si, 0, sizeof(si));
	while ((r2 = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT)) < 0 && errno == EINTR)
		;
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	if (report && !exec_failed && !r2)
		last_snapshot_read(&ls, pid, forked);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "uslub run: waitpid: %s\n", strerror(errno));
			status = EXIT_TOOL << 8;
			break;
		}
	}
	child_pid = 0;
	if (heap && !exec_failed)
		heap_profiles_write(dir, pid, heap);
	if (report && !exec_failed)
		print_report(dir, pid, cmd, status, &ls,
			     (unsigned long long)end.tv_sec * 1000000000ull +
			     (unsigned long long)end.tv_nsec);
	last_snapshot_done(&ls);
	remove_dir(dir);
	return exit_status(status);
}

/*
 * The file execvp() would run for @name: a name with a slash as it is;
 * otherwise the first regular, executable file of that name in the
 * directories of PATH (default "/bin:/usr/bin", as glibc's; an empty entry
 * is the current directory). 0 with the path in @out, or -1 when there is
 * none (execvp says so then).
 */
static int resolve_cmd(const char *name, char *out, size_t len)
{
	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; ) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		struct stat st;
		if (dl == 0)
			snprintf(out, len, "%s", name);
		else
			snprintf(out, len, "%.*s/%s", (int)dl, p, name);
		if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK))
			return 0;
		if (!colon)
			return -1;
		p = colon + 1;
	}
}

/*
 * A program the kernel runs in secure-execution mode (AT_SECURE): set-uid,
 * set-gid (with group execute; without it the bit means mandatory
 * locking), or with file capabilities. The dynamic loader ignores an
 * LD_PRELOAD of a path outside the system directories for it, and uslub
 * reads no USLUB_* variable there: `uslub run` would preload it half-way
 * at best. 1 with the reason in @why, else 0. Conservative: a set-uid
 * program whose owner is the caller is refused too.
 */
static int secure_target(const char *file, char *why, size_t len)
{
	struct stat st;
	if (stat(file, &st))
		return 0;
	if (st.st_mode & S_ISUID) {
		snprintf(why, len, "set-uid (to uid %u)", (unsigned)st.st_uid);
		return 1;
	}
	if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) {
		snprintf(why, len, "set-gid (to gid %u)", (unsigned)st.st_gid);
		return 1;
	}
	if (getxattr(file, "security.capability", NULL, 0) >= 0) {
		snprintf(why, len, "has file capabilities (security.capability)");
		return 1;
	}
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	int report = 0, i;
	const char *report_file = NULL, *profile = NULL, *heap = NULL;
	for (i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return help("run");
		if (!strcmp(a, "--report")) {
			report = 1;
		} else if (!strcmp(a, "--profile")) {
			profile = "1";
		} else if (!strncmp(a, "--profile=", 10)) {
			profile = a + 10;       /* exact, sample, sample:BYTES */
			if (!*profile)
				return usage("run: --profile= needs exact, sample or sample:BYTES");
		} else if (!strcmp(a, "--heap-profile") || !strncmp(a, "--heap-profile=", 15)) {
			if (a[14] == '=')
				heap = a + 15;
			else if (i + 1 < argc)
				heap = argv[++i];
			else
				return usage("run: --heap-profile needs a FILE");
			if (!*heap || !strcmp(heap, "--"))
				return usage("run: --heap-profile needs a FILE");
		} else if (!strcmp(a, "--report-file") || !strncmp(a, "--report-file=", 14)) {
			if (a[13] == '=')
				report_file = a + 14;
			else if (i + 1 < argc)
				report_file = argv[++i];
			else
				return usage("run: --report-file needs a FILE");
			if (!*report_file)
				return usage("run: --report-file needs a FILE");
		} else {
			return usage("run: unknown option '%s'", a);
		}
	}
	if (i >= argc)
		return usage("run: which command? (uslub run [OPTIONS] -- CMD [ARGS...])");
	if (report && report_file)
		return usage("run: --report prints the report, --report-file keeps it in a "
			     "file: give one of them");
	char **cmd = argv + i;

	char file[PATH_MAX + 256], why[64];
	if (!resolve_cmd(cmd[0], file, sizeof(file)) && secure_target(file, why, sizeof(why))) {
		fprintf(stderr, "uslub run: %s is %s: it runs in secure-execution mode (AT_SECURE), "
			"where the dynamic loader does not preload " MALLOC_LIB " and uslub reads "
			"no USLUB_* variable; run it without uslub\n", file, why);
		return EXIT_SECURE;
	}

	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)))
		return EXIT_TOOL;
	if (strpbrk(lib, " :\t\n")) {
		fprintf(stderr, "uslub run: %s: LD_PRELOAD cannot name a path with a space or "
			"a colon; set USLUB_LIBRARY to another path (a symbolic link)\n", lib);
		return EXIT_TOOL;
	}
	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *preload = malloc(n);
	if (!preload) {
		fprintf(stderr, "uslub run: out of memory\n");
		return EXIT_TOOL;
	}
	if (old && *old)
		snprintf(preload, n, "%s:%s", lib, old);
	else
		snprintf(preload, n, "%s", lib);
	setenv("LD_PRELOAD", preload, 1);
	free(preload);
	if (profile)
		setenv("USLUB_PROFILING", profile, 1);

	if (report_file) {
		/* Absolute, so that a process that changes directory still
		 * writes where it was asked. */
		char abs[PATH_MAX * 2];
		if (report_file[0] != '/' && strcmp(report_file, "-")) {
			char cwd[PATH_MAX];
			if (getcwd(cwd, sizeof(cwd))) {
				snprintf(abs, sizeof(abs), "%s/%s", cwd, report_file);
				report_file = abs;
			}
		}
		setenv("USLUB_REPORT", report_file, 1);
	}
	/* --report: CMD publishes its statistics (unless USLUB_PUBLISH_MS is
	 * set already, 0 included), so that a CMD that ends with _exit(),
	 * which runs no exit handler and so writes no report, still leaves
	 * its last snapshot (the publisher's files are removed by an exit
	 * handler too). */
	if (report && !getenv("USLUB_PUBLISH_MS"))
		setenv("USLUB_PUBLISH_MS", REPORT_PUBLISH_MS, 1);
	if (heap && profile && strncmp(profile, "sample", 6)) {
		fprintf(stderr, "uslub run: --heap-profile takes sampled profiling "
			"(--profile=sample[:BYTES], the default); not --profile=%s\n", profile);
		return EXIT_TOOL;
	}
	if (heap && !profile) {
		const char *env = getenv("USLUB_PROFILING");
		if (env && *env && strncmp(env, "sample", 6))
			setenv("USLUB_PROFILING", "sample", 1);   /* stacks are its */
	}
	if (report || heap)
		return run_and_report(cmd, report, heap);

	/* Become CMD: its pid, its signals, its exit status. */
	execvp(cmd[0], cmd);
	fprintf(stderr, "uslub run: cannot run %s: %s\n", cmd[0], strerror(errno));
	return EXIT_NOEXEC;
}

/* ------------------------------------------------------------------------
 * bench
 * ---------------------------------------------------------------------- */

static int same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return *a && *b && realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

static int cmd_bench(int argc, char **argv)
{
	char dir[PATH_MAX], probe[PATH_MAX + 32], runpy[PATH_MAX + 32];
	if (exe_dir(dir, sizeof(dir))) {
		fprintf(stderr, "uslub bench: cannot find this program's directory (/proc/self/exe)\n");
		return EXIT_TOOL;
	}
	snprintf(probe, sizeof(probe), "%s/CMakeCache.txt", dir);
	int build_tree = same_dir(dir, USLUB_BINARY_DIR) || !access(probe, F_OK);
	snprintf(runpy, sizeof(runpy), "%s/bench/run.py", USLUB_SOURCE_DIR);
	if (!build_tree || !USLUB_SOURCE_DIR[0]) {
		fprintf(stderr, "uslub bench: the benchmarks run from a build tree; this uslub "
			"(in %s) is not in one, and the benchmarks are not installed. Build uslub "
			"from its sources and run <build>/uslub bench.\n", dir);
		return EXIT_TOOL;
	}
	if (access(runpy, R_OK)) {
		fprintf(stderr, "uslub bench: the benchmark sources are not there (%s: %s); "
			"this uslub was built from %s\n", runpy, strerror(errno), USLUB_SOURCE_DIR);
		return EXIT_TOOL;
	}
	char **args = calloc((size_t)argc + 4, sizeof(*args));
	if (!args) {
		fprintf(stderr, "uslub bench: out of memory\n");
		return EXIT_TOOL;
	}
	int k = 0;
	args[k++] = "python3";
	args[k++] = runpy;
	args[k++] = "--build";
	args[k++] = dir;
	for (int i = 2; i < argc; i++)
		args[k++] = argv[i];
	args[k] = NULL;
	execvp(args[0], args);
	fprintf(stderr, "uslub bench: cannot run python3: %s\n", strerror(errno));
	free(args);
	return EXIT_NOEXEC;
}

/* uslub resolve [FILE...]: reports written without the tool, resolved. */
static int cmd_resolve(int argc, char **argv)
{
	int ret = 0, nfiles = argc - 2;
	for (int i = 0; i < (nfiles ? nfiles : 1); i++) {
		const char *name = nfiles ? argv[2 + i] : "-";
		if (!strcmp(name, "--help") || !strcmp(name, "-h"))
			return help("resolve");
		size_t len;
		char *text = read_input(name, &len, "resolve");
		if (!text) {
			ret = 1;
		} else {
			if (!strncmp(text, "# uslub heap profile", 20))
				resolve_folded(text, len, stdout, emit);
			else
				resolve_and_emit(text, len, stdout, emit);
			free(text);
		}
	}
	return fflush(stdout) ? 1 : ret;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(NULL);
	const char *cmd = argv[1];
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		if (argc > 3)
			return usage("help takes one COMMAND");
		return help(argc == 3 ? argv[2] : NULL);
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "slabinfo") || !strcmp(cmd, "allocinfo"))
		return cmd_pid(argc, argv);
	if (!strcmp(cmd, "top"))
		return cmd_top(argc, argv);
	if (!strcmp(cmd, "resolve"))
		return cmd_resolve(argc, argv);
	if (!strcmp(cmd, "bench"))
		return cmd_bench(argc, argv);
	if (!strcmp(cmd, "flame"))
		return cmd_flame(argc, argv);
	if (!strcmp(cmd, "pprof"))
		return cmd_pprof(argc, argv);
	if (!strcmp(cmd, "heap"))
		return cmd_heap(argc, argv);
	return usage("no command '%s'", cmd);
}
