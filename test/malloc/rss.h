/*
 * The resident set size of the calling process in KiB, from
 * /proc/self/statm with open/read into a stack buffer: no allocation, so
 * a test can measure while it makes no allocator call. -1 if unreadable.
 */
#ifndef USLUB_TEST_MALLOC_RSS_H
#define USLUB_TEST_MALLOC_RSS_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long rss_kib(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strchr(buf, ' ');          /* size, then resident (pages) */
	return p ? strtol(p + 1, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

#endif
