/*
 * The library's own releases of memory: munmap and madvise(MADV_DONTNEED).
 * Inside someone else's process either may be refused: a seccomp filter
 * that denies munmap, or ENOMEM when unmapping the middle of a mapping
 * would split it past vm.max_map_count. A caller that ignored the result
 * lost the memory (still mapped and resident, no longer known to uslub),
 * so every release goes through here and its caller keeps what was not
 * released (page.c: the segment goes back on its node; kmalloc.c: the
 * mapping is kept for reuse) and tries again later. Each refusal is
 * counted (uslub_page_stats().release_failures); the first is reported,
 * once per process, since a filter that refuses one refuses them all.
 *
 * A range that nobody would keep (an alignment slack, a freed mapping
 * when every keep slot is taken, an outgrown table) is parked instead:
 * _uslub_sys_munmap_or_park() gives its pages back with MADV_DONTNEED
 * where allowed and links it through its own first bytes (it is still
 * uslub's, mapped read-write; the link costs the one page it touches)
 * on a lock-free stack, and _uslub_sys_retry_parked() (each purge pass,
 * trim) tries its munmap again, so a refusal loses no address space for
 * good either. uslub_page_stats().bytes_unreleased says how much waits.
 */
#include "base/base.h"
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

static unsigned long release_failures;  /* atomic */
static bool release_reported;           /* atomic */
static long refuse_next;                /* atomic: tests (_uslub_sys_refuse_next) */

struct parked_range {
	struct parked_range *next;
	size_t len;
};
static struct parked_range *parked;     /* atomic: a Treiber stack */
static size_t parked_bytes;             /* atomic */

static int refused(const char *call, void *addr, size_t len, int err)
{
	__atomic_add_fetch(&release_failures, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&release_reported, true, __ATOMIC_RELAXED))
		_uslub_report("uslub: the kernel refused %s(%p, %zu): %s (errno %d); uslub keeps "
			      "the range as it is, reuses what it can and tries again later "
			      "(reported once; uslub_page_stats() counts every refusal)\n",
			      call, addr, len, _uslub_errstr(err), err);
	return err;
}

/* A refusal injected by a test: the call is not made. */
static bool injected_refusal(void)
{
	long n = __atomic_load_n(&refuse_next, __ATOMIC_RELAXED);
	while (n > 0)
		if (__atomic_compare_exchange_n(&refuse_next, &n, n - 1, true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

static int raw_munmap(void *addr, size_t len)
{
	if (injected_refusal())
		return ENOMEM;
	return munmap(addr, len) ? (errno ? errno : EINVAL) : 0;
}

int _uslub_sys_munmap(void *addr, size_t len)
{
	int saved = errno;
	int err = raw_munmap(addr, len);
	if (err)
		err = refused("munmap", addr, len, err);
	errno = saved;
	return err;
}

static void park(struct parked_range *r)
{
	struct parked_range *head = __atomic_load_n(&parked, __ATOMIC_RELAXED);
	do
		r->next = head;
	while (!__atomic_compare_exchange_n(&parked, &head, r, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

void _uslub_sys_park(void *addr, size_t len)
{
	struct parked_range *r = addr;
	r->len = len;
	__atomic_add_fetch(&parked_bytes, len, __ATOMIC_RELAXED);
	park(r);
}

int _uslub_sys_munmap_or_park(void *addr, size_t len)
{
	int err = _uslub_sys_munmap(addr, len);
	if (!err)
		return 0;
	_uslub_sys_madvise_dontneed(addr, len);
	_uslub_sys_park(addr, len);
	return err;
}

size_t _uslub_sys_retry_parked(void)
{
	if (!__atomic_load_n(&parked, __ATOMIC_RELAXED))
		return 0;
	int saved = errno;
	size_t done = 0;
	struct parked_range *r = __atomic_exchange_n(&parked, NULL, __ATOMIC_ACQUIRE);
	while (r) {
		struct parked_range *next = r->next;
		size_t len = r->len;
		if (raw_munmap(r, len)) {
			park(r);             /* refused again: counted once already */
		} else {
			__atomic_sub_fetch(&parked_bytes, len, __ATOMIC_RELAXED);
			done += len;
		}
		r = next;
	}
	errno = saved;
	return done;
}

size_t _uslub_sys_parked_bytes(void)
{
	return __atomic_load_n(&parked_bytes, __ATOMIC_RELAXED);
}

void _uslub_sys_refuse_next(long n)
{
	__atomic_store_n(&refuse_next, n, __ATOMIC_RELAXED);
}

int _uslub_sys_madvise_dontneed(void *addr, size_t len)
{
	int saved = errno;
	int err = 0;
	if (injected_refusal())
		err = refused("madvise(MADV_DONTNEED)", addr, len, EPERM);
	else if (madvise(addr, len, MADV_DONTNEED))
		err = refused("madvise(MADV_DONTNEED)", addr, len, errno ? errno : EINVAL);
	errno = saved;
	return err;
}

unsigned long _uslub_release_failures(void)
{
	return __atomic_load_n(&release_failures, __ATOMIC_RELAXED);
}

bool _uslub_fd_is(int fd, unsigned long dev, unsigned long ino, struct stat *st)
{
	int fl = fd >= 0 ? fcntl(fd, F_GETFD) : -1;
	return fl >= 0 && (fl & FD_CLOEXEC) && !fstat(fd, st) && st->st_dev == dev &&
	       st->st_ino == ino;
}

int _uslub_thread_start(pthread_t *t, void *(*fn)(void *), size_t stack)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);  /* the new thread inherits it */
	pthread_attr_t attr;
	pthread_t th;
	int rc = pthread_attr_init(&attr);
	if (!rc) {
		if (!t)
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (stack)
			pthread_attr_setstacksize(&attr, stack);
		rc = pthread_create(&th, &attr, fn, NULL);
		if (!rc && t)
			*t = th;
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
