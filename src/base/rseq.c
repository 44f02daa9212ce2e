/*
 * rseq.c — finding glibc's rseq registration (rseq.h says why uslub
 * never registers its own) and the number of ids a section can see.
 */
#define _GNU_SOURCE
#include "base/rseq.h"
#include "base/lifecycle.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/membarrier.h>

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif

/* glibc >= 2.35; weak, so a glibc without them loads uslub all the same */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static struct uslub_rseq_info info;

/* The highest id of a CPU list ("0-3,8-11\n") + 1; 0 on a parse error. */
static unsigned int cpu_list_end(const char *s)
{
	unsigned long end = 0;
	while (*s && *s != '\n') {
		char *e;
		unsigned long a = strtoul(s, &e, 10), b = a;
		if (e == s)
			return 0;
		if (*e == '-') {
			s = e + 1;
			b = strtoul(s, &e, 10);
			if (e == s || b < a)
				return 0;
		}
		end = MAX(end, b + 1);
		s = e;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return 0;
	}
	return end > 65536 ? 0 : (unsigned int)end;
}

/* Possible CPUs (the kernel's nr_cpu_ids): every cpu_id and mm_cid is
 * below it. Read with a short-lived descriptor of our own, no stdio. */
static unsigned int possible_cpus(void)
{
	char buf[256];
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return cpu_list_end(buf);
}

static long membarrier(int cmd, unsigned int flags)
{
	return syscall(__NR_membarrier, cmd, flags, 0);
}

int _uslub_rseq_fence(void)
{
	for (int tries = 0; tries < 2; tries++) {
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0) == 0)
			return 0;
		if (errno != EPERM || tries)
			return -1;
		/* not registered (the first fence, or a fork child's mm) */
		if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0) != 0)
			return -1;
	}
	return -1;
}

static void detect(struct uslub_rseq_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->id_offset = RSEQ_OFF_CPU_ID;
	if (!USLUB_HAVE_RSEQ) {
		ri->why = "rseq sections are written for x86-64 only (and not built with "
			  "ThreadSanitizer, which cannot see into them)";
		return;
	}
	if (!&__rseq_size || !&__rseq_offset) {
		ri->why = "the C library does not register rseq (glibc 2.35 or later does)";
		return;
	}
	unsigned int size = __rseq_size;
	if (!size) {
		ri->why = "the C library did not register rseq (GLIBC_TUNABLES=glibc.pthread.rseq=0, "
			  "a seccomp filter or a kernel without rseq)";
		return;
	}
	/* glibc < 2.40 says 20 (or 32) for its 32-byte area: the kernel's
	 * feature size tells what it fills in */
	if (size == 20 || size == 32) {
		unsigned long fs = getauxval(AT_RSEQ_FEATURE_SIZE);
		size = fs ? (unsigned int)MIN(32ul, fs) : 20;
	}
	unsigned int nr = possible_cpus();
	if (!nr) {
		ri->why = "/sys/devices/system/cpu/possible could not be read";
		return;
	}
	ri->offset = (long)__rseq_offset;
	ri->feature_size = size;
	ri->nr_ids = nr;
	if (_uslub_rseq_fence() != 0) {
		ri->why = "the kernel has no rseq fence (membarrier's "
			  "MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, Linux 5.10) or refuses it";
		return;
	}
	if (size >= RSEQ_END_MM_CID) {
		ri->id = USLUB_RSEQ_MM_CID;
		ri->id_offset = RSEQ_OFF_MM_CID;
	} else {
		ri->id = USLUB_RSEQ_CPU_ID;
		ri->id_offset = RSEQ_OFF_CPU_ID;
	}
}

static struct uslub_once info_once = USLUB_ONCE_INIT;

static void info_init(void)
{
	detect(&info);
}

const struct uslub_rseq_info *_uslub_rseq_info(void)
{
	_uslub_once(&info_once, info_init);
	return &info;
}

bool _uslub_rseq_thread_ok(void)
{
	const struct uslub_rseq_info *ri = _uslub_rseq_info();
	if (ri->id == USLUB_RSEQ_NONE)
		return false;
	int cpu = (int)__atomic_load_n((const unsigned int *)(uslub_rseq_area(ri) + RSEQ_OFF_CPU_ID),
				       __ATOMIC_RELAXED);
	if (cpu < 0 || (unsigned int)cpu >= ri->nr_ids)
		return false;
	return uslub_rseq_id_now(ri) < ri->nr_ids;
}

