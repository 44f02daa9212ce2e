/*
 * The directory protocol of the published statistics (publish_dir.h):
 * paths, the checked open, liveness by pid + start time and the lock
 * file, and the sweep of stale files. Used by the publisher (publish.c)
 * and the uslub tool. libc and the option table only.
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "observe/publish_dir.h"

static const char *const pubdir_fmt[PUB_NR_KINDS] = {
	[PUB_LOCK]	= "%d.lock",
	[PUB_TXT]	= "%d.txt",
	[PUB_JSON]	= "%d.json",
	[PUB_HEAP]	= "%d.heap",
	[PUB_TXT_TMP]	= ".%d.txt.tmp",
	[PUB_JSON_TMP]	= ".%d.json.tmp",
	[PUB_HEAP_TMP]	= ".%d.heap.tmp",
};

/* Where the per-user directories are made: /dev/shm, or an absolute
 * USLUB_PUBLISH_ROOT (the tests use private ones; like every option it is
 * not read in a secure-execution program). */
static const char *pubdir_root(void)
{
	const char *r = _uslub_option_str(USLUB_OPT_PUBLISH_ROOT);
	if (r[0] == '/' && strlen(r) < PUBDIR_PATH_MAX - 32)
		return r;
	return PUBDIR_ROOT_DEFAULT;
}

void _uslub_pubdir_path(char *buf, size_t len, unsigned int uid)
{
	snprintf(buf, len, "%s/uslub-%u", pubdir_root(), uid);
}

void _uslub_pubdir_name(char *buf, size_t len, int kind, pid_t pid)
{
	snprintf(buf, len, pubdir_fmt[kind], (int)pid);
}

/* One of our names: 1 with its pid and kind, else 0 (left alone). */
static int pubdir_parse(const char *name, pid_t *pid, int *kind)
{
	static const char *const sfx[PUB_NR_KINDS] = {
		".lock", ".txt", ".json", ".heap", ".txt.tmp", ".json.tmp", ".heap.tmp"
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
		if (PUB_IS_TMP(k) != tmp || strcmp(p, sfx[k]))
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
ssize_t _uslub_pubdir_read_proc(pid_t pid, const char *file, char *buf,
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
int _uslub_pubdir_start_time(pid_t pid, unsigned long long *start)
{
	char buf[1024];
	if (_uslub_pubdir_read_proc(pid, "stat", buf, sizeof(buf)) < 0)
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
int _uslub_pubdir_open(const char *path, unsigned int uid, const char *whose,
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
		snprintf(why, wlen, "%s: %s", root, _uslub_errstr(e));
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
		snprintf(why, wlen, "%s: %s", path, _uslub_errstr(e));
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
		snprintf(why, wlen, "%s: %s", path, _uslub_errstr(e));
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

/* Remove the snapshots and temporaries of @pid (not its lock file): 0,
 * or the errno of the first removal that failed other than ENOENT. */
int _uslub_pubdir_remove_files(int dfd, pid_t pid)
{
	char name[32];
	int err = 0;
	for (int k = PUB_TXT; k < PUB_NR_KINDS; k++) {
		_uslub_pubdir_name(name, sizeof(name), k, pid);
		if (unlinkat(dfd, name, 0) && errno != ENOENT && !err)
			err = errno;
	}
	return err;
}

/* Whether @fd (open, locked) is still what @name refers to in @dfd. */
int _uslub_pubdir_same(int dfd, const char *name, int fd)
{
	struct stat a, b;
	return !fstat(fd, &a) && !fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * The start time a snapshot of @pid claims in its header (@kind says which
 * header): 1 and *@start, 0 when the content is not uslub's header for
 * @pid. The start time is read where the header has it, then the whole
 * header is built with the publisher's own format and compared.
 */
static int pubdir_header(const char *buf, int kind, pid_t pid, unsigned long long *start)
{
	int json = kind == PUB_JSON || kind == PUB_JSON_TMP;
	const char *fmt = json ? PUBDIR_JSON_HEAD : PUBDIR_TXT_HEAD;
	const char *p = buf;
	int colons = json ? 2 : 0;              /* after "pid": and "start_time": */
	if (json) {
		while (*p && colons)
			colons -= *p++ == ':';
	} else {
		p = strstr(buf, "(start time ");
		p = p ? p + 12 : "";
	}
	if (*p < '0' || *p > '9')
		return 0;
	unsigned long long v = strtoull(p, NULL, 10);
	char want[96];
	snprintf(want, sizeof(want), fmt, (int)pid, v);
	if (strncmp(buf, want, strlen(want)))
		return 0;
	*start = v;
	return 1;
}

/*
 * Whether @name (of @kind, @pid) in @dfd is provably a uslub file that may
 * go (see "What a sweep may delete" in publish_dir.h): a regular file
 * owned by @uid holding the header for @pid, or an empty temporary; with
 * @dead, also no process @pid with the start time of the header.
 */
static int pubdir_proven(int dfd, const char *name, int kind, pid_t pid, uid_t uid, int dead)
{
	struct stat a, b;
	if (fstatat(dfd, name, &a, AT_SYMLINK_NOFOLLOW) || !S_ISREG(a.st_mode) ||
	    a.st_uid != uid)
		return 0;
	int tmp = PUB_IS_TMP(kind);
	if (a.st_size == 0)
		return tmp;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[96];
	ssize_t n = -1;
	if (!fstat(fd, &b) && b.st_dev == a.st_dev && b.st_ino == a.st_ino)
		n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	unsigned long long start, now;
	if (!pubdir_header(buf, kind, pid, &start))
		return 0;
	if (!dead)
		return 1;
	if (_uslub_pubdir_start_time(pid, &now))
		return errno == ENOENT || errno == ESRCH;
	return now != start;
}

/* Remove those of @pid's snapshots and temporaries that prove uslub's. */
static void pubdir_remove_proven(int dfd, pid_t pid, uid_t uid, int dead)
{
	char name[32];
	for (int k = PUB_TXT; k < PUB_NR_KINDS; k++) {
		_uslub_pubdir_name(name, sizeof(name), k, pid);
		if (pubdir_proven(dfd, name, k, pid, uid, dead))
			unlinkat(dfd, name, 0);
	}
}

/*
 * The files of @pid when nobody holds its lock: remove them (the lock file
 * last, while holding its lock). 1 when they were stale, else 0; -1 when
 * @pid has no lock file (none, or a link or another uid's file by that
 * name, which is no lock: a link is removed).
 */
static int pubdir_reap(int dfd, pid_t pid, uid_t uid)
{
	char name[32];
	_uslub_pubdir_name(name, sizeof(name), PUB_LOCK, pid);
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? -1 : 0;
	if (S_ISLNK(st.st_mode)) {
		unlinkat(dfd, name, 0);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != uid)   /* a lock file proves no more */
		return -1;
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int stale = 0;
	if (!fcntl(fd, F_SETLK, &l) && _uslub_pubdir_same(dfd, name, fd)) {
		pubdir_remove_proven(dfd, pid, uid, 0);
		unlinkat(dfd, name, 0);
		stale = 1;
	}
	close(fd);                               /* drops our lock */
	return stale;
}

/*
 * Remove every stale file set of the directory but @self's: those whose
 * lock can be taken, and snapshots or temporaries without a lock file of
 * a process that is gone; only what proves uslub's (publish_dir.h). The
 * number of file sets and lone files removed. Everything is done through
 * the sweep's own descriptor of the directory, checked first.
 */
int _uslub_pubdir_sweep(int dfd, pid_t self)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat dst;
	uid_t uid = geteuid();
	bool ok = !fstat(fd, &dst);
	if (ok && uid == 0)
		uid = dst.st_uid;               /* root sweeps as the owner */
	if (!ok || !S_ISDIR(dst.st_mode) || dst.st_uid != uid ||
	    (dst.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return 0;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	int swept = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t pid;
		int kind, r;
		if (!pubdir_parse(e->d_name, &pid, &kind) || pid == self)
			continue;
		if (kind == PUB_LOCK) {
			if (pubdir_reap(fd, pid, uid) > 0)
				swept++;
			continue;
		}
		char lock[32];
		struct stat st;
		_uslub_pubdir_name(lock, sizeof(lock), PUB_LOCK, pid);
		r = fstatat(fd, lock, &st, AT_SYMLINK_NOFOLLOW);
		if (!r && S_ISREG(st.st_mode) && st.st_uid == uid)
			continue;               /* the lock file decides */
		if (pubdir_proven(fd, e->d_name, kind, pid, uid, 1) &&
		    !unlinkat(fd, e->d_name, 0))
			swept++;
	}
	closedir(d);
	return swept;
}

/*
 * Who holds the lock of @pid's files: its pid, 0 when nobody, -1 when
 * there is no lock file (or it cannot be asked).
 */
pid_t _uslub_pubdir_lock_holder(int dfd, pid_t pid)
{
	char name[32];
	_uslub_pubdir_name(name, sizeof(name), PUB_LOCK, pid);
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
