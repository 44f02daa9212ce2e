/*
 * The resident set size and the mapped size of the calling process, from
 * /proc/self/statm with open/read into a stack buffer: no allocation, so
 * a test can measure while it makes no allocator call (or under an
 * address-space limit); and whether a thread of a given name runs.
 */
#ifndef USLUB_TEST_MALLOC_RSS_H
#define USLUB_TEST_MALLOC_RSS_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field @i of /proc/self/statm (0: the mapped size, 1: resident), in KiB */
static inline long statm_kib(int i)
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
	char *p = buf;
	for (; i > 0 && p; i--)
		if ((p = strchr(p, ' ')))
			p++;
	return p ? strtol(p, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static inline long rss_kib(void)
{
	return statm_kib(1);
}

/* The address space mapped (VmSize), in bytes; 0 if unreadable. */
static inline size_t vm_bytes(void)
{
	long k = statm_kib(0);
	return k > 0 ? (size_t)k << 10 : 0;
}

/* The whole of a small /proc file into @buf (NUL-terminated): 0, or -1. */
static inline int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	ssize_t n;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	return 0;
}

/* The number after "@name:" in /proc/self/status (Threads, VmRSS); -1. */
static inline long status_field(const char *name)
{
	char buf[4096];
	if (read_file("/proc/self/status", buf, sizeof(buf)))
		return -1;
	size_t n = strlen(name);
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ':')
			return strtol(p + n + 1, NULL, 10);
	return -1;
}

/* Is there a thread of this process named @name (its comm)? 1, 0, or -1
 * when /proc/self/task cannot be read. opendir allocates: call it only
 * where the test does not measure. */
static inline int has_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], comm[32] = { 0 };
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = 0;
		if (!strcmp(comm, name))
			found = 1;
	}
	closedir(d);
	return found;
}

#endif
