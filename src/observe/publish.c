/*
 * Live observability from outside the process: with USLUB_PUBLISH_MS=<ms>,
 * a background thread writes a snapshot every <ms> milliseconds to
 *   /dev/shm/uslub-<euid>/<pid>.txt   (slabinfo and group tables)
 *   /dev/shm/uslub-<euid>/<pid>.json  ({"pid", "start_time", "time_ns",
 *                                      "slabinfo", "groups"}, one line)
 * each replaced atomically (written to a temporary created with O_EXCL,
 * mode 0600, then renamed), and removes them at exit. `uslub slabinfo
 * PID` and `uslub top PID` read them. The fast paths pay nothing: the
 * snapshot sums the per-thread counters the way uslub_slabinfo_print()
 * does. A fork child publishes under its own pid (its publisher is started
 * again in the child).
 *
 * The directory, its checks, the lock file that tells a live publisher
 * from the leftovers of one that exited, exec'd or was killed, and the
 * sweep of those leftovers are described in publish_dir.h (shared with
 * the tool). In short: a private directory per euid, checked on an
 * O_NOFOLLOW descriptor, files opened relative to it and never followed,
 * every snapshot stamped with pid and start time, and <pid>.lock locked
 * (fcntl) for the publisher's lifetime.
 *
 * Locking: pub_lock is held only around system calls on the directory
 * (setup, rename, the removal at exit); never around stdio or anything
 * else that may allocate, nor around the sweep (readdir allocates). It is
 * taken with no other uslub lock held, so it ranks before thread_lock
 * (RANK_PUB); fork holds it, so the child's copy of the state is whole.
 */
#define _GNU_SOURCE
#include "observe/publish_dir.h"     /* first: slub.h defines a stat() macro */
#include "slub/slub.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How often a publisher looks for other processes' leftovers. */
#define SWEEP_INTERVAL_S	10

static pthread_mutex_t pub_lock = PTHREAD_MUTEX_INITIALIZER; /* files, state */
static bool stopping;
static bool atexit_done;
static bool refused;            /* the directory cannot be trusted: never again */
static long interval_ms;
static pid_t pub_pid;           /* the process the state below belongs to */
static int dir_fd = -1;         /* <root>/uslub-<euid>, checked */
static int lock_fd = -1;        /* <pid>.lock, write-locked while publishing */
static unsigned long long pub_start;   /* start time of pub_pid, clock ticks */

static unsigned long long now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Write one snapshot through a fresh temporary and rename it into place. */
static void write_file(pid_t self, int json)
{
	char name[32], tmp[32];
	_uslub_pubdir_name(name, sizeof(name), json ? PUB_JSON : PUB_TXT, self);
	_uslub_pubdir_name(tmp, sizeof(tmp), json ? PUB_JSON_TMP : PUB_TXT_TMP, self);
	int fd = -1;
	/* A temporary left by an earlier image of this pid (or a link
	 * planted by name): O_EXCL|O_NOFOLLOW refuse it; remove, try again. */
	for (int tries = 0; tries < 2; tries++) {
		fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			break;
		unlinkat(dir_fd, tmp, 0);
	}
	if (fd < 0)
		return;
	FILE *f = NULL;
	if (fchmod(fd, 0600) || !(f = fdopen(fd, "w"))) {      /* whatever the umask */
		close(fd);
		unlinkat(dir_fd, tmp, 0);
		return;
	}
	unsigned long long now = now_ns(CLOCK_REALTIME);
	if (json) {
		fprintf(f, "{\"pid\":%d,\"start_time\":%llu,\"time_ns\":%llu,\"slabinfo\":",
			(int)self, pub_start, now);
		uslub_slabinfo_print(f, USLUB_FMT_JSON_VALUE);
		fprintf(f, ",\"groups\":");
		uslub_group_report_print(f, USLUB_FMT_JSON_VALUE);
		if (uslub_profiling_enabled()) {
			fprintf(f, ",\"allocinfo\":");
			uslub_allocinfo_print(f, USLUB_FMT_JSON_VALUE);
		}
		fprintf(f, "}\n");
	} else {
		fprintf(f, "uslub pid %d (start time %llu ticks), snapshot at %llu.%03llu\n",
			(int)self, pub_start, now / 1000000000ull, (now / 1000000ull) % 1000);
		uslub_slabinfo_print(f, USLUB_FMT_TABLE);
		fprintf(f, "\n");
		uslub_group_report_print(f, USLUB_FMT_TABLE);
		if (uslub_profiling_enabled()) {
			fprintf(f, "\nallocinfo\n");
			uslub_allocinfo_print(f, USLUB_FMT_TABLE);
		}
	}
	int bad = fflush(f) || ferror(f);
	if (fclose(f) || bad) {                 /* not written fully */
		unlinkat(dir_fd, tmp, 0);
		return;
	}
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	if (READ_ONCE(stopping) || renameat(dir_fd, tmp, dir_fd, name))
		unlinkat(dir_fd, tmp, 0);
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
}

/* Refuse to publish, once, saying why. Called with pub_lock held. */
static void refuse(const char *why)
{
	refused = true;
	_uslub_report("uslub: USLUB_PUBLISH_MS: not publishing: %s\n", why);
}

/*
 * The directory (made 0700 when missing, checked always), called with
 * pub_lock held: 0, or -1 after refuse().
 */
static int open_dir(void)
{
	char path[PUBDIR_PATH_MAX], why[PUBDIR_PATH_MAX + 160];
	unsigned int euid = (unsigned int)geteuid();
	_uslub_pubdir_path(path, sizeof(path), euid);
	if (mkdir(path, 0700) && errno != EEXIST) {
		snprintf(why, sizeof(why), "cannot create %s: %s", path, strerror(errno));
		refuse(why);
		return -1;
	}
	int fd;
	if (_uslub_pubdir_open(path, euid, "this process's euid", 077, &fd, why, sizeof(why))) {
		refuse(why);
		return -1;
	}
	struct stat st;
	if (!fstat(fd, &st) && (st.st_mode & 0700) != 0700)
		fchmod(fd, 0700);               /* made under a strict umask */
	dir_fd = fd;
	return 0;
}

/*
 * Take <self>.lock (see publish_dir.h), called with pub_lock held, which
 * it drops while it waits for a sweeper that holds the lock for a moment:
 * 0, or -1 (stopping, or it cannot be had).
 */
static int take_lock(pid_t self)
{
	char name[32];
	_uslub_pubdir_name(name, sizeof(name), PUB_LOCK, self);
	for (int tries = 0; tries < 200; tries++) {
		if (READ_ONCE(stopping))
			return -1;
		int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
				O_CLOEXEC, 0600);
		struct stat st;
		if (fd < 0 && errno != ELOOP && errno != EACCES)
			return -1;
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid()) {
			/* A link, or not ours: a leftover, never used. */
			if (fd >= 0)
				close(fd);
			unlinkat(dir_fd, name, 0);
			continue;
		}
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		if (!fcntl(fd, F_SETLK, &l)) {
			if (_uslub_pubdir_same(dir_fd, name, fd)) {
				fchmod(fd, 0600);
				lock_fd = fd;
				return 0;
			}
			close(fd);              /* a sweeper removed it: again */
			continue;
		}
		close(fd);
		if (errno != EAGAIN && errno != EACCES)
			return -1;
		uslub_mutex_unlock(&pub_lock, RANK_PUB);
		struct timespec d = { 0, 5 * 1000000 };
		nanosleep(&d, NULL);
		uslub_mutex_lock(&pub_lock, RANK_PUB);
	}
	return -1;
}

/* Directory, lock, own leftovers: 0 when the thread may publish. */
static int setup(pid_t self)
{
	unsigned long long start;
	if (_uslub_pubdir_start_time(0, &start)) {
		_uslub_report("uslub: USLUB_PUBLISH_MS: not publishing: cannot read the start "
			      "time of pid %d from /proc/self/stat: %s\n", (int)self,
			      strerror(errno));
		return -1;
	}
	int ret = -1;
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	if (READ_ONCE(stopping) || refused || (dir_fd < 0 && open_dir()))
		goto out;
	if (take_lock(self))
		goto out;
	/* What an earlier image of this pid (before exec, or a dead process
	 * whose pid this is now) left: ours now, and out of date. */
	_uslub_pubdir_remove_files(dir_fd, self);
	pub_start = start;
	ret = 0;
out:
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
	return ret;
}

static void *publisher(void *arg)
{
	(void)arg;
	pid_t self = getpid();
	if (setup(self))
		return NULL;
	_uslub_pubdir_sweep(dir_fd, self);
	unsigned long long last_sweep = now_ns(CLOCK_MONOTONIC);
	for (;;) {
		if (READ_ONCE(stopping))
			return NULL;
		write_file(self, 0);
		write_file(self, 1);
		if (now_ns(CLOCK_MONOTONIC) - last_sweep >= SWEEP_INTERVAL_S * 1000000000ull) {
			_uslub_pubdir_sweep(dir_fd, self);
			last_sweep = now_ns(CLOCK_MONOTONIC);
		}
		struct timespec d = { interval_ms / 1000, (interval_ms % 1000) * 1000000 };
		nanosleep(&d, NULL);
	}
}

/* Remove this process's files; the lock file last, still locked. */
static void at_exit(void)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	WRITE_ONCE(stopping, true);
	if (pub_pid == getpid() && lock_fd >= 0 && dir_fd >= 0) {
		char name[32];
		_uslub_pubdir_remove_files(dir_fd, pub_pid);
		_uslub_pubdir_name(name, sizeof(name), PUB_LOCK, pub_pid);
		unlinkat(dir_fd, name, 0);
	}
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
}

static void start(void)
{
	pthread_attr_t a;
	pthread_t th;
	pub_pid = getpid();
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, publisher, NULL))
		_uslub_report("uslub: USLUB_PUBLISH_MS: cannot start the publisher thread\n");
	pthread_attr_destroy(&a);
}

static const struct uslub_lifecycle pub_lifecycle, pub_restart_lifecycle;

/* After _uslub_init() (from a constructor): start publishing if asked. */
void _uslub_publish_init(void)
{
	_uslub_lifecycle_register(&pub_lifecycle);
	_uslub_lifecycle_register(&pub_restart_lifecycle);
	interval_ms = _uslub_option(USLUB_OPT_PUBLISH_MS);
	if (interval_ms <= 0)
		return;
	if (!atexit_done) {
		atexit_done = true;
		atexit(at_exit);
	}
	start();
}

/* fork: pub_lock (RANK_PUB) */
static void pub_prefork(void)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
}

static void pub_postfork_parent(void)
{
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
}

static void pub_postfork_child(void)
{
	uslub_mutex_reset(&pub_lock, RANK_PUB);
}

/*
 * fork, with no uslub lock held (LIFECYCLE_UNLOCKED: pthread_create may
 * allocate): the child has no publisher thread; start its own. The
 * parent's lock is not inherited (POSIX record locks belong to a
 * process); the descriptor is, and is closed here, which leaves the
 * parent's lock alone. The directory descriptor is kept: same directory,
 * same credentials.
 */
static void pub_restart_child(void)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	if (lock_fd >= 0) {
		close(lock_fd);
		lock_fd = -1;
	}
	bool again = interval_ms > 0 && !stopping && !refused;
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
	if (again)
		start();
}

static const struct uslub_lifecycle pub_lifecycle = {
	.name = "pub_lock",
	.rank = RANK_PUB,
	.prefork = pub_prefork,
	.postfork_parent = pub_postfork_parent,
	.postfork_child = pub_postfork_child,
};

static const struct uslub_lifecycle pub_restart_lifecycle = {
	.name = "publisher",
	.rank = LIFECYCLE_UNLOCKED,
	.postfork_child = pub_restart_child,
};
