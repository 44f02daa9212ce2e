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

__public unsigned long uslub_error_count(void)
{
	return __atomic_load_n(&error_count, __ATOMIC_RELAXED);
}
