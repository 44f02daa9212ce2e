/*
 * The directory protocol of the published statistics, shared by the
 * publisher (src/observe/publish.c, in every process that runs with
 * USLUB_PUBLISH_MS) and its readers (tools/uslub.c, which links this file
 * and the option table from the static core, nothing else). publish_dir.c.
 *
 * Layout. A process publishes into the directory of its effective uid,
 *
 *   <root>/uslub-<euid>/          root: /dev/shm (USLUB_PUBLISH_ROOT)
 *       <pid>.lock                held with a POSIX record lock for life
 *       <pid>.txt  <pid>.json     the snapshots, replaced with rename()
 *       <pid>.heap                the heap dump (sampled mode's stacks:
 *                                 `uslub heap PID`), the same way
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
 *   - Snapshots or temporaries with no lock file at all are removed only
 *     as "What a sweep may delete" (below) allows.
 *   - A reader asks F_GETLK who holds <pid>.lock: nobody, or another pid,
 *     means "stale snapshot: the process no longer publishes".
 *
 * What a sweep may delete. A name is no proof: the directory is only ever
 * reached through a descriptor checked to be it (the publisher re-checks
 * its own before each use, publish.c), and even there a sweep removes a
 * file only when it proves it is a uslub file of a process that no longer
 * publishes: the directory (fstat on the sweep's own descriptor) is owned
 * by the sweeper's euid (any, for root) and has no group or other write
 * bit; the file is a regular file (never followed) owned by the
 * directory's owner; and
 *   - <pid>.lock: its lock could be taken (and the name still is the inode
 *     locked): the snapshots and temporaries of <pid> are then removed
 *     when their content starts with the header below for that pid (an
 *     empty temporary too: it holds nothing), the lock file last;
 *   - a snapshot or temporary with no <pid>.lock: its content starts with
 *     the header for that pid, and the start time in the header is not
 *     the start time of a process <pid> now (no such process, or the pid
 *     was reused); an empty temporary is removed as above. A <pid>.lock
 *     that is not a regular file of that uid counts as no lock file (a
 *     link by that name is removed: unlinking a link loses nothing).
 * A file that fails any of these is left alone, whatever its name.
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
#define PUBDIR_PATH_MAX		512

/* The first bytes of every snapshot (and temporary once written): the
 * publisher writes them, the sweep parses them. */
#define PUBDIR_TXT_HEAD		"uslub pid %d (start time %llu ticks)"
#define PUBDIR_JSON_HEAD	"{\"pid\":%d,\"start_time\":%llu,"

/* The kinds of file in the directory (pubdir_parse()). */
enum { PUB_LOCK, PUB_TXT, PUB_JSON, PUB_HEAP, PUB_TXT_TMP, PUB_JSON_TMP, PUB_HEAP_TMP,
       PUB_NR_KINDS };
#define PUB_IS_TMP(kind)	((kind) >= PUB_TXT_TMP)

/* Declarations: see publish_dir.c. Hidden: the core's and the tool's own. */
#define PUBDIR_API __attribute__((visibility("hidden")))
PUBDIR_API void _uslub_pubdir_path(char *buf, size_t len, unsigned int uid);
PUBDIR_API void _uslub_pubdir_name(char *buf, size_t len, int kind, pid_t pid);
PUBDIR_API ssize_t _uslub_pubdir_read_proc(pid_t pid, const char *file, char *buf,
					      size_t len);
PUBDIR_API int _uslub_pubdir_start_time(pid_t pid, unsigned long long *start);
PUBDIR_API int _uslub_pubdir_open(const char *path, unsigned int uid, const char *whose,
				     mode_t forbidden, int *dfd, char *why, size_t wlen);
PUBDIR_API int _uslub_pubdir_remove_files(int dfd, pid_t pid);
PUBDIR_API int _uslub_pubdir_same(int dfd, const char *name, int fd);
PUBDIR_API int _uslub_pubdir_sweep(int dfd, pid_t self);
PUBDIR_API pid_t _uslub_pubdir_lock_holder(int dfd, pid_t pid);

#endif /* USLUB_PUBLISH_DIR_H */
