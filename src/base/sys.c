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
 */
#define _GNU_SOURCE         /* strerrorname_np */
#include "base/base.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static unsigned long release_failures;  /* atomic */
static bool release_reported;           /* atomic */

/* ENOMEM, EPERM, ...: glibc's static name, no locale, no allocation */
static const char *errno_name(int err)
{
	const char *n = strerrorname_np(err);
	return n ? n : "error";
}

static int refused(const char *call, void *addr, size_t len, int err)
{
	__atomic_add_fetch(&release_failures, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&release_reported, true, __ATOMIC_RELAXED))
		_uslub_report("uslub: the kernel refused %s(%p, %zu): %s (errno %d); uslub keeps "
			      "the range as it is, reuses what it can and tries again later "
			      "(reported once; uslub_page_stats() counts every refusal)\n",
			      call, addr, len, errno_name(err), err);
	return err;
}

int _uslub_sys_munmap(void *addr, size_t len)
{
	int saved = errno;
	int err = 0;
	if (munmap(addr, len))
		err = refused("munmap", addr, len, errno ? errno : EINVAL);
	errno = saved;
	return err;
}

int _uslub_sys_madvise_dontneed(void *addr, size_t len)
{
	int saved = errno;
	int err = 0;
	if (madvise(addr, len, MADV_DONTNEED))
		err = refused("madvise(MADV_DONTNEED)", addr, len, errno ? errno : EINVAL);
	errno = saved;
	return err;
}

unsigned long _uslub_release_failures(void)
{
	return __atomic_load_n(&release_failures, __ATOMIC_RELAXED);
}
