/*
 * Live observability from outside the process: with USLUB_PUBLISH_MS=<ms>,
 * a background thread writes a snapshot every <ms> milliseconds to
 *   /dev/shm/uslub-<euid>/<pid>.txt   (slabinfo and group tables)
 *   /dev/shm/uslub-<euid>/<pid>.json  ({"pid", "start_time", "time_ns",
 *                                      "slabinfo", "groups"}, one line)
 *   /dev/shm/uslub-<euid>/<pid>.heap  (sampled mode with stacks: the heap
 *                                      dump, ext/stack.c, at most once a
 *                                      second: `uslub heap PID`)
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
 * Descriptors held inside someone else's process. The program may close
 * ours (a daemon's close_range(3, ~0U, 0)) and get the numbers back for its
 * own files, or dup2() its own over them. So the directory's and the lock
 * file's descriptors are checked to be the same open file before each use
 * and before they are closed (_uslub_fd_is(): still close-on-exec as made, which
 * dup2 clears; the same device and inode; the directory still pub_euid's,
 * 0700). One that is not is forgotten, never written or closed; the
 * publisher says so once, opens the directory again by its path (with
 * every check) and takes its lock again. At exit it removes its own files
 * the same way, through a checked descriptor only.
 *
 * A change of euid (a root daemon that drops privileges after it started
 * publishing): the directory belongs to the old euid, so the publisher
 * stops, says so once, removes what it still can and lets go of its lock
 * so that the old uid's next sweep removes the rest. A fork child with the
 * new euid publishes into the new euid's directory.
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
#include <signal.h>
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
static bool gave_up;            /* stopped publishing: the euid changed, or
				 * the lock file could not be locked */
static bool published;          /* set up: pub_pid's files may exist */
static bool lost_said, write_said;     /* each said once */
static int drop_err = -1;       /* what give_up() has to say, until said */
static unsigned int drop_euid;  /* the euid it changed to */
static long interval_ms;
static pid_t pub_pid;           /* the process the state below belongs to */
static unsigned int pub_euid;   /* the euid the directory was opened for */
static int dir_fd = -1;         /* <root>/uslub-<pub_euid>, checked */
static dev_t dir_dev;
static ino_t dir_ino;
static int lock_fd = -1;        /* <pid>.lock, write-locked while publishing */
static dev_t lock_dev;
static ino_t lock_ino;
static unsigned long long pub_start;   /* start time of pub_pid, clock ticks */

static unsigned long long now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static bool dir_ok(void)
{
	struct stat st;
	return _uslub_fd_is(dir_fd, dir_dev, dir_ino, &st) && S_ISDIR(st.st_mode) &&
	       st.st_uid == pub_euid && !(st.st_mode & 077);
}

static bool lock_ok(void)
{
	struct stat st;
	return _uslub_fd_is(lock_fd, lock_dev, lock_ino, &st) && S_ISREG(st.st_mode);
}

/*
 * Forget the descriptors that are no longer ours, saying so once; called
 * with pub_lock held. The lock went with its descriptor (closing any
 * descriptor of the lock file drops this process's lock on it).
 */
static void forget_lost(void)
{
	int lost_dir = -1, lost_lock = -1;
	if (dir_fd >= 0 && !dir_ok()) {
		lost_dir = dir_fd;
		dir_fd = -1;
	}
	if (lock_fd >= 0 && !lock_ok()) {
		lost_lock = lock_fd;
		lock_fd = -1;
	}
	if ((lost_dir < 0 && lost_lock < 0) || lost_said)
		return;
	lost_said = true;
	char path[PUBDIR_PATH_MAX], fds[64] = "";
	_uslub_pubdir_path(path, sizeof(path), pub_euid);
	if (lost_dir >= 0 && lost_lock >= 0)
		snprintf(fds, sizeof(fds), "fds %d and %d", lost_dir, lost_lock);
	else
		snprintf(fds, sizeof(fds), "fd %d", lost_dir >= 0 ? lost_dir : lost_lock);
	_uslub_report("uslub: USLUB_PUBLISH_MS: the program closed or reused %s, which uslub "
		      "kept for %s: left alone; opening the directory again by its path\n",
		      fds, path);
}

/* Write one snapshot through a fresh temporary and rename it into place. */
/* Write the snapshot of @kind (PUB_TXT, PUB_JSON, PUB_HEAP). */
static void write_file(pid_t self, int kind)
{
	char name[32], tmp[32];
	_uslub_pubdir_name(name, sizeof(name), kind, self);
	_uslub_pubdir_name(tmp, sizeof(tmp), kind + (PUB_TXT_TMP - PUB_TXT), self);
	/* The temporary is made under pub_lock, after a look at stopping:
	 * at_exit() (which takes pub_lock, sets stopping and removes every
	 * file of this pid, temporaries included) comes either before, and
	 * nothing is made, or after, and removes it. Made outside, it could
	 * appear after at_exit() and stay: python3 left .<pid>.json.tmp. */
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	int dfd = dir_ok() && !READ_ONCE(stopping) ? dir_fd : -1; /* checked just before use */
	int fd = -1, e = 0;
	/* A temporary left by an earlier image of this pid (or a link
	 * planted by name): O_EXCL|O_NOFOLLOW refuse it; remove, try again. */
	for (int tries = 0; dfd >= 0 && tries < 2; tries++) {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		e = errno;
		if (fd >= 0 || e != EEXIST)
			break;
		unlinkat(dfd, tmp, 0);
	}
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
	if (dfd < 0)
		return;
	if (fd < 0) {
		if (geteuid() != pub_euid)
			return;                 /* the publisher stops: gave_up */
		uslub_mutex_lock(&pub_lock, RANK_PUB);
		bool say = !write_said;
		write_said = true;
		uslub_mutex_unlock(&pub_lock, RANK_PUB);
		if (say) {
			char path[PUBDIR_PATH_MAX];
			_uslub_pubdir_path(path, sizeof(path), pub_euid);
			_uslub_report("uslub: USLUB_PUBLISH_MS: cannot write %s/%s: %s (said "
				      "once; still trying)\n", path, tmp, _uslub_errstr(e));
		}
		return;
	}
	struct stat tst;
	FILE *f = NULL;
	if (fstat(fd, &tst)) {
		close(fd);                      /* the next round's O_EXCL removes it */
		return;
	}
	int bad = 1;
	if (fchmod(fd, 0600) || !(f = fdopen(fd, "w"))) {
		close(fd);                      /* whatever the umask: 0600 */
		goto done;
	}
	unsigned long long now = now_ns(CLOCK_REALTIME);
	if (kind == PUB_HEAP) {
		fprintf(f, PUBDIR_TXT_HEAD ", heap dump at %llu.%03llu\n", (int)self, pub_start,
			now / 1000000000ull, (now / 1000000ull) % 1000);
		uslub_heap_profile_print(f, USLUB_HEAP_DUMP);
	} else if (kind == PUB_JSON) {
		fprintf(f, PUBDIR_JSON_HEAD "\"time_ns\":%llu,\"slabinfo\":", (int)self,
			pub_start, now);
		uslub_slabinfo_print(f, USLUB_FMT_JSON_VALUE);
		fprintf(f, ",\"groups\":");
		uslub_group_report_print(f, USLUB_FMT_JSON_VALUE);
		if (uslub_profiling_enabled()) {
			fprintf(f, ",\"allocinfo\":");
			uslub_allocinfo_print(f, USLUB_FMT_JSON_VALUE);
		}
		fprintf(f, "}\n");
	} else {
		fprintf(f, PUBDIR_TXT_HEAD ", snapshot at %llu.%03llu\n", (int)self, pub_start,
			now / 1000000000ull, (now / 1000000ull) % 1000);
		uslub_slabinfo_print(f, USLUB_FMT_TABLE);
		fprintf(f, "\n");
		uslub_group_report_print(f, USLUB_FMT_TABLE);
		if (uslub_profiling_enabled()) {
			fprintf(f, "\nallocinfo\n");
			uslub_allocinfo_print(f, USLUB_FMT_TABLE);
		}
	}
	bad = fflush(f) || ferror(f);
	bad |= fclose(f) != 0;
done:
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	/* The directory is checked again: the program may have taken the
	 * number meanwhile. Our temporary is removed only where it is still
	 * the file we wrote. */
	struct stat now_st;
	bool ours = dfd == dir_fd && dir_ok();
	if (ours && (bad || READ_ONCE(stopping) || renameat(dfd, tmp, dfd, name)) &&
	    !fstatat(dfd, tmp, &now_st, AT_SYMLINK_NOFOLLOW) && now_st.st_ino == tst.st_ino &&
	    now_st.st_dev == tst.st_dev)
		unlinkat(dfd, tmp, 0);
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
		snprintf(why, sizeof(why), "cannot create %s: %s", path, _uslub_errstr(errno));
		refuse(why);
		return -1;
	}
	int fd;
	if (_uslub_pubdir_open(path, euid, "this process's euid", 077, &fd, why, sizeof(why))) {
		refuse(why);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		close(fd);
		refuse("cannot fstat its directory");
		return -1;
	}
	if ((st.st_mode & 0700) != 0700)
		fchmod(fd, 0700);               /* made under a strict umask */
	dir_fd = fd;
	dir_dev = st.st_dev;
	dir_ino = st.st_ino;
	pub_euid = euid;
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
		if (READ_ONCE(stopping) || !dir_ok())
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
				lock_dev = st.st_dev;
				lock_ino = st.st_ino;
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

/*
 * Remove @pid's files from the directory, the lock file last: 0, or the
 * errno of a removal that failed. Called with pub_lock held, on a checked
 * descriptor.
 */
static int remove_own(int dfd, pid_t pid)
{
	char lock[32];
	int err = _uslub_pubdir_remove_files(dfd, pid);
	_uslub_pubdir_name(lock, sizeof(lock), PUB_LOCK, pid);
	if (unlinkat(dfd, lock, 0) && errno != ENOENT && !err)
		err = errno;
	return err;
}

/*
 * The euid is no longer the one the directory was opened for (a program
 * that drops privileges after it started): stop, remove what it still
 * can, and drop the lock so that the old uid's next sweep may remove the
 * rest. Called with pub_lock held; pub_unlock() says so, once, after
 * the lock is dropped.
 */
static void give_up(pid_t self)
{
	gave_up = true;
	drop_euid = (unsigned int)geteuid();
	drop_err = dir_ok() ? remove_own(dir_fd, self) : EBADF;
	if (lock_ok())
		close(lock_fd);                 /* the files are stale from now on */
	lock_fd = -1;
	if (dir_ok())                   /* at_exit() opens it by its path */
		close(dir_fd);
	dir_fd = -1;
}

/* Drop pub_lock, then say what give_up() did. */
static void pub_unlock(pid_t self)
{
	int err = drop_err;
	drop_err = -1;
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
	if (err < 0)
		return;
	char path[PUBDIR_PATH_MAX], left[PUBDIR_PATH_MAX + 200] = "its files there are removed";
	_uslub_pubdir_path(path, sizeof(path), pub_euid);
	if (err && READ_ONCE(stopping))         /* said at exit */
		snprintf(left, sizeof(left), "its files there (%d.txt, %d.json, %d.lock) cannot "
			 "be removed (%s): they are left to the next sweep in that directory (a "
			 "publisher of uid %u that starts, or a uslub reader)", (int)self,
			 (int)self, (int)self, _uslub_errstr(err), pub_euid);
	else if (err)
		snprintf(left, sizeof(left), "its files there (%d.txt, %d.json, %d.lock) cannot "
			 "be removed now (%s): they are removed at its exit if its euid is %u "
			 "again, else by the next sweep in that directory (a publisher of uid %u "
			 "that starts, or a uslub reader)", (int)self, (int)self, (int)self,
			 _uslub_errstr(err), pub_euid, pub_euid);
	_uslub_report("uslub: USLUB_PUBLISH_MS: the process's euid changed from %u to %u, "
		      "which cannot write %s: stopped publishing; %s\n", pub_euid, drop_euid,
		      path, left);
}

/*
 * Make sure the directory and the lock are ours (called with pub_lock
 * held, before each round of use): the lost ones forgotten, opened and
 * taken again. 0 when the thread may publish.
 */
static int ensure(pid_t self)
{
	if (READ_ONCE(stopping) || refused || gave_up)
		return -1;
	if (dir_fd >= 0 && (unsigned int)geteuid() != pub_euid) {
		give_up(self);
		return -1;
	}
	forget_lost();
	if (dir_fd < 0) {
		/* The lock file lies in the directory: a new descriptor of
		 * another directory by that path needs a new lock too. */
		if (lock_fd >= 0)
			close(lock_fd);         /* checked by forget_lost() */
		lock_fd = -1;
		if (open_dir())
			return -1;
	}
	if (lock_fd < 0 && take_lock(self)) {
		if (!READ_ONCE(stopping))
			_uslub_report("uslub: USLUB_PUBLISH_MS: stopped publishing: cannot lock "
				      "its lock file %d.lock\n", (int)self);
		gave_up = true;
		return -1;
	}
	return 0;
}

/* Directory, lock, own leftovers: 0 when the thread may publish. */
static int setup(pid_t self)
{
	unsigned long long start;
	if (_uslub_pubdir_start_time(0, &start)) {
		_uslub_report("uslub: USLUB_PUBLISH_MS: not publishing: cannot read the start "
			      "time of pid %d from /proc/self/stat: %s\n", (int)self,
			      _uslub_errstr(errno));
		return -1;
	}
	int ret = -1;
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	if (ensure(self))
		goto out;
	/* What an earlier image of this pid (before exec, or a dead process
	 * whose pid this is now) left: ours now, and out of date. */
	_uslub_pubdir_remove_files(dir_fd, self);
	pub_start = start;
	published = true;
	ret = 0;
out:
	pub_unlock(self);
	return ret;
}

/* Sweep the directory through its checked descriptor. */
static void sweep(pid_t self)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	int ok = !ensure(self);
	int dfd = dir_fd;
	pub_unlock(self);
	if (ok)
		_uslub_pubdir_sweep(dfd, self);   /* through its own descriptor */
}

static void *publisher(void *arg)
{
	(void)arg;
	pid_t self = getpid();
	if (setup(self))
		return NULL;
	sweep(self);
	unsigned long long last_sweep = now_ns(CLOCK_MONOTONIC), last_heap = 0;
	for (;;) {
		uslub_mutex_lock(&pub_lock, RANK_PUB);
		int ok = !ensure(self);
		pub_unlock(self);
		if (!ok)
			return NULL;
		write_file(self, PUB_TXT);
		write_file(self, PUB_JSON);
		/* the heap dump (sampled mode's stacks): at most once a second */
		if (_uslub_sampling && _uslub_option(USLUB_OPT_STACK_DEPTH) &&
		    now_ns(CLOCK_MONOTONIC) - last_heap >= 1000000000ull) {
			write_file(self, PUB_HEAP);
			last_heap = now_ns(CLOCK_MONOTONIC);
		}
		if (now_ns(CLOCK_MONOTONIC) - last_sweep >= SWEEP_INTERVAL_S * 1000000000ull) {
			sweep(self);
			last_sweep = now_ns(CLOCK_MONOTONIC);
		}
		/* the whole interval: glibc's setxid signal (a setuid() of
		 * any thread) interrupts it, and is no reason for a round */
		struct timespec d = { interval_ms / 1000, (interval_ms % 1000) * 1000000 };
		while (nanosleep(&d, &d) && errno == EINTR)
			;
	}
}

/*
 * Remove this process's files; the lock file last, still locked. Only
 * through a descriptor checked to be the directory: when the program took
 * ours, the directory is opened again by its path (with every check).
 * Also when this image has not published yet: the files of this pid are
 * then an earlier image's (a program that exec'd this one after it
 * published: the lock went with its descriptor at exec), which this
 * image's setup would have removed had it run before the exit (a fork
 * child that execs a short program under uslub, `sh -c 'prog; ...'`,
 * left them behind nine times in ten); an image that publishes nothing
 * (USLUB_PUBLISH_MS unset after the exec) leaves them to the next sweep.
 */
static void at_exit(void)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	WRITE_ONCE(stopping, true);
	if (pub_pid == getpid() && published && !gave_up &&
	    (unsigned int)geteuid() != pub_euid) {
		/* The euid changed after the last round (a program that
		 * drops privileges and exits): what the publisher would have
		 * said and done at its next round, done now. */
		give_up(pub_pid);
		pub_unlock(pub_pid);
		return;
	}
	unsigned int euid = published ? pub_euid : (unsigned int)geteuid();
	bool ours = published || (!refused && !gave_up && interval_ms > 0);
	if (pub_pid == getpid() && ours && (unsigned int)geteuid() == euid) {
		if (published)
			forget_lost();
		int dfd = published || (dir_fd >= 0 && pub_euid == euid && dir_ok()) ? dir_fd : -1;
		int fd = -1;
		if (dfd < 0) {
			char path[PUBDIR_PATH_MAX], why[PUBDIR_PATH_MAX + 160];
			_uslub_pubdir_path(path, sizeof(path), euid);
			if (!_uslub_pubdir_open(path, euid, "this process's euid", 077, &fd,
						why, sizeof(why)))
				dfd = fd;
		}
		if (dfd >= 0)
			remove_own(dfd, pub_pid);
		if (fd >= 0)
			close(fd);
	}
	uslub_mutex_unlock(&pub_lock, RANK_PUB);
}

/*
 * The publisher thread blocks every signal (it inherits the mask it is
 * created with), as the purge thread does: a process-directed signal
 * goes to a thread that does not block it, so a thread of uslub's that
 * did not would run the program's handlers, and take the signals of a
 * program that blocks them in its own threads to sigwait() for them
 * (SIGTERM killed such a program instead of reaching its sigwait()).
 */
static void start(void)
{
	pub_pid = getpid();
	if (_uslub_thread_start(NULL, publisher, 0))
		_uslub_report("uslub: USLUB_PUBLISH_MS: cannot start the publisher thread\n");
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

/* fork: pub_lock (RANK_PUB). Descriptors the program took are forgotten
 * (and said) here, once, rather than again in every child. */
static void pub_prefork(void)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	forget_lost();
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
 * process); the descriptor is, and is closed here when it still is the
 * lock file (which leaves the parent's lock alone): the program may have
 * dup2()'d its own file over that number. The directory descriptor is
 * kept when it still is the directory and the euid has not changed; a
 * child whose euid changed publishes into its own euid's directory.
 */
static void pub_restart_child(void)
{
	uslub_mutex_lock(&pub_lock, RANK_PUB);
	if (lock_fd >= 0 && lock_ok())
		close(lock_fd);
	lock_fd = -1;
	published = false;
	gave_up = false;                /* its own lock file; ensure() looks again */
	if (dir_fd >= 0 && (unsigned int)geteuid() != pub_euid) {
		if (dir_ok())
			close(dir_fd);
		dir_fd = -1;
	}
	bool again = interval_ms > 0 && !stopping && !refused && !gave_up;
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
