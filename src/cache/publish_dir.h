/*
 * The directory protocol of the published statistics, shared by the
 * publisher (src/cache/publish.c, in every process that runs with
 * USLUB_PUBLISH_MS) and its readers (tools/uslub.c). Header only, libc
 * only: the tool must not link the core (see tools/uslub.c).
 *
 * Layout. A process publishes into the directory of its effective uid,
 *
 *   <root>/uslub-<euid>/          root: /dev/shm (USLUB_PUBLISH_ROOT)
 *       <pid>.lock                held with a POSIX record lock for life
 *       <pid>.txt  <pid>.json     the snapshots, replaced with rename()
 *       .<pid>.txt.tmp  ...       the temporaries they are written to
 *
 * Trust. /dev/shm is writable by everyone, so nothing in it is trusted by
 * name. The directory is made with mode 0700 and used only when it is a
 * real directory (opened with O_NOFOLLOW|O_DIRECTORY, checked with fstat
 * on that descriptor) owned by the euid, with no group or other bits;
 * <root> itself must be owned by root or the euid and, when others may
 * write it, be sticky (so that nobody else can rename the directory away).
 * Every file is then opened relative to the directory's descriptor with
 * O_NOFOLLOW; the snapshots and their temporaries are created with
 * O_CREAT|O_EXCL and fchmod'ed to 0600 whatever the umask. Inside a
 * directory only its owner (or root) can write, a planted file or link can
 * only be a leftover of the same user: it is removed, never followed.
 *
 * Liveness. Each snapshot records the publisher's pid and that pid's start
 * time (field 22 of /proc/<pid>/stat, clock ticks since boot): a reader
 * shows it only when /proc/<pid>/stat still says the same, so a reused pid
 * never shows a dead process's tables. That does not cover exec (same pid,
 * same start time, but the new program no longer publishes), nor tell the
 * sweepers which files are garbage; the lock file does:
 *
 *   - The publisher takes a write lock (fcntl F_SETLK) on <pid>.lock
 *     opened with O_CLOEXEC and keeps it while it publishes. A POSIX
 *     record lock belongs to the process: a fork child does not inherit
 *     it (the child closes the inherited descriptor, which does not touch
 *     the parent's lock, and takes its own <childpid>.lock), and the
 *     kernel drops it when the process exits, is killed, or execs (the
 *     descriptor is closed on exec).
 *   - So a lock file whose lock can be taken belongs to a process that
 *     exited without its exit handlers (_exit, a fatal signal), exec'd, or
 *     whose pid was reused: its files are stale. A sweeper (every
 *     publisher when it starts and every SWEEP_INTERVAL_S after, and every
 *     reader that may write the directory) takes that lock itself, checks
 *     that the name still refers to the inode it locked, removes the
 *     snapshots and temporaries, and unlinks the lock file last, still
 *     holding it. A publisher does the same check after it locks (and
 *     starts over when the name moved), so a publisher and a sweeper
 *     never both believe they own <pid>.lock.
 *   - Snapshots or temporaries with no lock file at all (a temporary
 *     written while exit() removed the others) are stale too.
 *   - A reader asks F_GETLK who holds <pid>.lock: nobody, or another pid,
 *     means "stale snapshot: the process no longer publishes".
 */
#ifndef USLUB_PUBLISH_DIR_H
#define USLUB_PUBLISH_DIR_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define PUBDIR_ROOT_DEFAULT	"/dev/shm"
#define PUBDIR_ROOT_ENV		"USLUB_PUBLISH_ROOT"
#define PUBDIR_PATH_MAX		512

#define PUBDIR_UNUSED __attribute__((unused))

/* The kinds of file in the directory (pubdir_parse()). */
enum { PUB_LOCK, PUB_TXT, PUB_JSON, PUB_TXT_TMP, PUB_JSON_TMP, PUB_NR_KINDS };

static const char *const pubdir_fmt[PUB_NR_KINDS] PUBDIR_UNUSED = {
	[PUB_LOCK]	= "%d.lock",
	[PUB_TXT]	= "%d.txt",
	[PUB_JSON]	= "%d.json",
	[PUB_TXT_TMP]	= ".%d.txt.tmp",
	[PUB_JSON_TMP]	= ".%d.json.tmp",
};

/*
 * Where the per-user directories are made: /dev/shm, or an absolute
 * USLUB_PUBLISH_ROOT (the tests use private ones). secure_getenv: a
 * set-uid or set-gid program, or one with file capabilities, ignores it.
 */
static PUBDIR_UNUSED const char *pubdir_root(void)
{
	const char *r = secure_getenv(PUBDIR_ROOT_ENV);
	if (r && r[0] == '/' && strlen(r) < PUBDIR_PATH_MAX - 32)
		return r;
	return PUBDIR_ROOT_DEFAULT;
}

static PUBDIR_UNUSED void pubdir_path(char *buf, size_t len, unsigned int uid)
{
	snprintf(buf, len, "%s/uslub-%u", pubdir_root(), uid);
}

static PUBDIR_UNUSED void pubdir_name(char *buf, size_t len, int kind, pid_t pid)
{
	snprintf(buf, len, pubdir_fmt[kind], (int)pid);
}

/* One of our names: 1 with its pid and kind, else 0 (left alone). */
static PUBDIR_UNUSED int pubdir_parse(const char *name, pid_t *pid, int *kind)
{
	static const char *const sfx[PUB_NR_KINDS] = {
		".lock", ".txt", ".json", ".txt.tmp", ".json.tmp"
	};
	int tmp = name[0] == '.';
	const char *p = name + tmp;
	long v = 0;
	if (*p < '1' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > 0x7fffffff)
			return 0;
	}
	for (int k = 0; k < PUB_NR_KINDS; k++) {
		if ((k >= PUB_TXT_TMP) != tmp || strcmp(p, sfx[k]))
			continue;
		*pid = (pid_t)v;
		*kind = k;
		return 1;
	}
	return 0;
}

/*
 * Read /proc/<pid>/<file> (pid 0: /proc/self) into @buf (NUL-terminated,
 * without allocating): its length, or -1 with errno (ENOENT: no such
 * process).
 */
static PUBDIR_UNUSED ssize_t pubdir_read_proc(pid_t pid, const char *file, char *buf,
					      size_t len)
{
	char path[64];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	else
		snprintf(path, sizeof(path), "/proc/self/%s", file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n < len - 1) {
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

/*
 * The start time of @pid: field 22 of /proc/<pid>/stat, counted after the
 * command name (field 2, in parentheses, may itself hold spaces and
 * parentheses: the last ')' ends it). 0, or -1 with errno.
 */
static PUBDIR_UNUSED int pubdir_start_time(pid_t pid, unsigned long long *start)
{
	char buf[1024];
	if (pubdir_read_proc(pid, "stat", buf, sizeof(buf)) < 0)
		return -1;
	char *p = strrchr(buf, ')');
	if (!p) {
		errno = EINVAL;
		return -1;
	}
	p++;
	for (int field = 3; field < 22; field++) {     /* p is before field 3 */
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
		if (!*p) {
			errno = EINVAL;
			return -1;
		}
	}
	char *end;
	errno = 0;
	*start = strtoull(p, &end, 10);
	if (end == p || errno) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * Open the directory @path for @uid and check it (see the comment at the
 * top): 0 and *@dfd, or -1 with errno (ENOENT: not there; EPERM: there but
 * not to be trusted) and the reason in @why. @whose names @uid in it
 * ("the process's uid"); @forbidden: the mode bits it must not have
 * (publisher: 077; reader: 022).
 */
static PUBDIR_UNUSED int pubdir_open(const char *path, unsigned int uid, const char *whose,
				     mode_t forbidden, int *dfd, char *why, size_t wlen)
{
	char root[PUBDIR_PATH_MAX];
	struct stat st, lst;
	snprintf(root, sizeof(root), "%s", path);
	char *slash = strrchr(root, '/');
	if (slash && slash != root)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
	if (stat(root, &st)) {
		int e = errno;
		snprintf(why, wlen, "%s: %s", root, strerror(e));
		errno = e;
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != uid) ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		snprintf(why, wlen, "%s (uid %u, mode %04o) is not a directory owned by root "
			 "or uid %u, sticky when others may write it", root,
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), uid);
		errno = EPERM;
		return -1;
	}
	if (lstat(path, &lst)) {
		int e = errno;
		snprintf(why, wlen, "%s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (S_ISLNK(lst.st_mode)) {
		snprintf(why, wlen, "%s is a symbolic link", path);
		errno = EPERM;
		return -1;
	}
	if (!S_ISDIR(lst.st_mode)) {
		snprintf(why, wlen, "%s is not a directory", path);
		errno = EPERM;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, wlen, "%s: %s", path, strerror(e));
		errno = e == ELOOP || e == ENOTDIR ? EPERM : e;
		return -1;
	}
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode) || st.st_dev != lst.st_dev ||
	    st.st_ino != lst.st_ino) {
		snprintf(why, wlen, "%s changed while it was checked", path);
		close(fd);
		errno = EPERM;
		return -1;
	}
	if (st.st_uid != uid) {
		snprintf(why, wlen, "%s is owned by uid %u, not %s %u", path,
			 (unsigned)st.st_uid, whose, uid);
		close(fd);
		errno = EPERM;
		return -1;
	}
	if (st.st_mode & forbidden) {
		snprintf(why, wlen, "%s has mode %04o: group or other may %s it", path,
			 (unsigned)(st.st_mode & 07777), forbidden & 044 ? "use" : "write");
		close(fd);
		errno = EPERM;
		return -1;
	}
	*dfd = fd;
	return 0;
}

/* Remove the snapshots and temporaries of @pid (not its lock file). */
static PUBDIR_UNUSED void pubdir_remove_files(int dfd, pid_t pid)
{
	char name[32];
	for (int k = PUB_TXT; k < PUB_NR_KINDS; k++) {
		pubdir_name(name, sizeof(name), k, pid);
		unlinkat(dfd, name, 0);
	}
}

/* Whether @fd (open, locked) is still what @name refers to in @dfd. */
static PUBDIR_UNUSED int pubdir_same(int dfd, const char *name, int fd)
{
	struct stat a, b;
	return !fstat(fd, &a) && !fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * The files of @pid when nobody holds its lock: remove them (the lock file
 * last, while holding its lock). 1 when they were stale, else 0.
 */
static PUBDIR_UNUSED int pubdir_reap(int dfd, pid_t pid)
{
	char name[32];
	pubdir_name(name, sizeof(name), PUB_LOCK, pid);
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP) {          /* a link by that name: no lock */
			pubdir_remove_files(dfd, pid);
			unlinkat(dfd, name, 0);
			return 1;
		}
		return 0;
	}
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int stale = 0;
	if (!fcntl(fd, F_SETLK, &l) && pubdir_same(dfd, name, fd)) {
		pubdir_remove_files(dfd, pid);
		unlinkat(dfd, name, 0);
		stale = 1;
	}
	close(fd);                               /* drops our lock */
	return stale;
}

/*
 * Remove every stale file set of the directory but @self's: those whose
 * lock can be taken, and snapshots or temporaries without a lock file.
 * The number of file sets and lone files removed.
 */
static PUBDIR_UNUSED int pubdir_sweep(int dfd, pid_t self)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	int swept = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t pid;
		int kind;
		char lock[32];
		struct stat st;
		if (!pubdir_parse(e->d_name, &pid, &kind) || pid == self)
			continue;
		if (kind == PUB_LOCK) {
			swept += pubdir_reap(dfd, pid);
			continue;
		}
		pubdir_name(lock, sizeof(lock), PUB_LOCK, pid);
		if (fstatat(dfd, lock, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT &&
		    !unlinkat(dfd, e->d_name, 0))
			swept++;
	}
	closedir(d);
	return swept;
}

/*
 * Who holds the lock of @pid's files: its pid, 0 when nobody, -1 when
 * there is no lock file (or it cannot be asked).
 */
static PUBDIR_UNUSED pid_t pubdir_lock_holder(int dfd, pid_t pid)
{
	char name[32];
	pubdir_name(name, sizeof(name), PUB_LOCK, pid);
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	pid_t holder = -1;
	if (!fcntl(fd, F_GETLK, &l))
		holder = l.l_type == F_UNLCK ? 0 : l.l_pid;
	close(fd);
	return holder;
}

#endif /* USLUB_PUBLISH_DIR_H */
