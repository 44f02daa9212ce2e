/* Reports to stderr without allocating: vsnprintf into a stack buffer. */
#include "base/base.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void vreport(const char *fmt, va_list ap)
{
	char buf[1024];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	for (int off = 0; off < n;) {
		ssize_t w = write(STDERR_FILENO, buf + off, n - off);
		if (w <= 0)
			break;
		off += (int)w;
	}
}

void _uslub_report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

static unsigned long error_count;

void _uslub_report_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&error_count, 1, __ATOMIC_RELAXED);
	if (_uslub_option(USLUB_OPT_ABORT_ON_ERROR))
		abort();
}

void _uslub_count_error(bool abort_too)
{
	__atomic_add_fetch(&error_count, 1, __ATOMIC_RELAXED);
	if (abort_too || _uslub_option(USLUB_OPT_ABORT_ON_ERROR))
		abort();
}

__public unsigned long uslub_error_count(void)
{
	return __atomic_load_n(&error_count, __ATOMIC_RELAXED);
}

#ifdef USLUB_LOCKDEP
/* Lock-order checking for the test builds: per thread, how many locks of
 * each rank are held. */
static __thread unsigned char lockdep_held[RANK_NR];
static const char *const rank_names[RANK_NR] = {
	"thread_lock", "slab_mutex", "groups_lock", "tags_lock", "barn.lock", "list_lock",
	"page_node.lock", "reserve_lock", "huge_lock",
};

void _uslub_lockdep_acquire(enum uslub_lock_rank r)
{
	for (int k = r; k < RANK_NR; k++)
		if (lockdep_held[k]) {
			_uslub_report("uslub: lock order violated: taking %s while holding %s\n",
				      rank_names[r], rank_names[k]);
			abort();
		}
	lockdep_held[r]++;
}

void _uslub_lockdep_release(enum uslub_lock_rank r)
{
	lockdep_held[r]--;
}
#endif
