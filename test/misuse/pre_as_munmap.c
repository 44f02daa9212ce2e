/*
 * as_munmap (issue 25, item 4): a release the kernel refuses loses
 * nothing. The program installs a seccomp filter that fails munmap with
 * ENOMEM (what vm.max_map_count gives when an unmap would split a
 * mapping), in a second run also madvise(MADV_DONTNEED) with EPERM, and
 * then, round after round, fills and frees 16 MiB of small objects and
 * four 8 MiB blocks and calls malloc_trim(0). Before the fix the failed
 * munmap was ignored: the segment's ownership bit cleared and the segment
 * forgotten, the kept mapping dropped, all of it still resident; every
 * round mapped new memory and RSS grew by a round's worth (1.30 GB
 * against 12.6 MB in the report's run). Now a refused release keeps the
 * memory owned and reusable: RSS stays within one round of the first
 * round's, and when madvise is allowed the pages still go back (RSS near
 * where it started); uslub_page_stats() counts the refusals and the
 * segments kept; the refusal is reported once. The third run refuses
 * both with USLUB_DECAY_MS=0, where every kept range expires at once: a
 * refused one must still be reused, not mapped anew.
 *
 *   as_munmap DIR [munmap|both|both-decay0]   (none: all three, as children)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../malloc/rss.h"

#define ROUNDS  8
#define SMALL   1000
#define SMALL_BYTES (16ul << 20)
#define NHUGE   4
#define HUGE    (8ul << 20)
#define ROUND_KIB ((long)((SMALL_BYTES + NHUGE * HUGE) >> 10))

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

/* mirrors struct uslub_page_stats (include/uslub/types.h) */
struct page_stats {
	unsigned long segments, bytes_reserved, bytes_in_slabs, bytes_purged, purges;
	unsigned long segments_kept, release_failures, bytes_unreleased;
};

static int refuse(int madvise_too)
{
#ifdef ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_munmap, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOMEM),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_DONTNEED, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, madvise_too ? SECCOMP_RET_ERRNO | EPERM
						      : SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
			    &prog);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static void round_trip(void)
{
	void *head = NULL;
	for (size_t b = 0; b < SMALL_BYTES; b += SMALL) {
		void **o = malloc(SMALL);
		if (!o)
			break;
		memset(o, 3, SMALL);
		*o = head;
		head = o;
	}
	while (head) {
		void **o = head;
		head = *o;
		free(o);
	}
	void *h[NHUGE];
	for (int i = 0; i < NHUGE; i++)
		if ((h[i] = malloc(HUGE)))
			memset(h[i], 5, HUGE);
	for (int i = 0; i < NHUGE; i++)
		free(h[i]);
	malloc_trim(0);
}

static int run(int madvise_too)
{
	void (*stats)(struct page_stats *) =
		(void (*)(struct page_stats *))dlsym(RTLD_DEFAULT, "uslub_page_stats");
	if (!stats) {
		printf("SKIP: uslub is not preloaded\n");
		return 77;
	}
	/* stderr to a file, to count uslub's messages */
	char path[] = "/tmp/as_munmap.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	fflush(stderr);
	int saved_err = dup(2);
	dup2(fd, 2);

	round_trip();                /* everything mapped once before the filter */
	long rss0 = rss_kib();
	if (refuse(madvise_too)) {
		dup2(saved_err, 2);
		printf("SKIP: seccomp filter: %s\n", strerror(errno));
		return 77;
	}
	long rss[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		round_trip();
		rss[r] = rss_kib();
	}
	struct page_stats ps;
	memset(&ps, 0, sizeof(ps));
	stats(&ps);

	dup2(saved_err, 2);
	char out[8192];
	ssize_t n = pread(fd, out, sizeof(out) - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(fd);
	int msgs = 0;
	for (char *p = out; (p = strstr(p, "the kernel refused")); p++)
		msgs++;

	const char *mode = !madvise_too ? "munmap refused" :
			   getenv("USLUB_DECAY_MS") ? "munmap and madvise refused, decay 0" :
			   "munmap and madvise refused";
	printf("as_munmap (%s): RSS %ld KiB before, %ld after round 1, %ld after round %d; "
	       "%lu segments kept, %lu refusals counted, %d messages\n", mode, rss0, rss[0],
	       rss[ROUNDS - 1], ROUNDS, ps.segments_kept, ps.release_failures, msgs);
	int fail = 0;
	if (rss[ROUNDS - 1] - rss[0] > ROUND_KIB) {
		printf("FAIL: RSS grew %ld KiB over %d rounds of %ld KiB: memory whose release "
		       "was refused is lost, not reused\n", rss[ROUNDS - 1] - rss[0], ROUNDS - 1,
		       ROUND_KIB);
		fail = 1;
	}
	if (!madvise_too && rss[ROUNDS - 1] - rss0 > ROUND_KIB / 2) {
		printf("FAIL: RSS %ld KiB above the start with madvise allowed: the pages of "
		       "what could not be unmapped were not given back\n", rss[ROUNDS - 1] - rss0);
		fail = 1;
	}
	if (!ps.release_failures || !ps.segments_kept) {
		printf("FAIL: the refusals are not in uslub_page_stats() (release_failures %lu, "
		       "segments_kept %lu)\n", ps.release_failures, ps.segments_kept);
		fail = 1;
	}
	if (msgs != 1) {
		printf("FAIL: %d messages about the refusal, want 1:\n%s\n", msgs, out);
		fail = 1;
	}
	return fail;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "munmap"))
		return run(0);
	if (argc > 2 && !strcmp(argv[2], "both"))
		return run(1);
	if (argc > 2 && !strcmp(argv[2], "both-decay0"))
		return run(1);
	int rc = 0;
	const char *modes[] = { "munmap", "both", "both-decay0" };
	for (int i = 0; i < 3; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			if (i == 2)
				setenv("USLUB_DECAY_MS", "0", 1);
			else
				unsetenv("USLUB_DECAY_MS");
			char *args[] = { argv[0], argc > 1 ? argv[1] : ".", (char *)modes[i], NULL };
			execv("/proc/self/exe", args);
			_exit(127);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		int c = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (c == 77 && !rc)
			rc = 77;
		else if (c && c != 77)
			rc = 1;
	}
	return rc;
}
