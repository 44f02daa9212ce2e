/*
 * as_freed_large (issue 25, item 8b): a freed block named by the same
 * cause through every entry point. For a freed block above 2 MiB (a
 * mapping) a second free() said "double free" but realloc() and
 * malloc_usable_size() said "a pointer uslub did not allocate". Now each
 * of the three names the pointer as passed and the same cause ("... of a
 * huge block (a mapping above 2 MiB freed before)"), with the entry
 * point's word for it: a double free, a realloc after free, a use after
 * free. The same for a freed page run (8 KiB - 2 MiB). realloc leaves the
 * pointer alone (NULL, EINVAL), malloc_usable_size gives 0.
 *
 * Re-executes itself with USLUB_MALLOC_ABORT=0 (report and go on).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void (*volatile f_free)(void *) = free;
static void *(*volatile f_realloc)(void *, size_t) = realloc;
static size_t (*volatile f_usable)(void *) = malloc_usable_size;

static int capture_fd, saved_err;
static off_t capture_off;

static void capture_begin(void)
{
	fflush(stderr);
	capture_off = lseek(capture_fd, 0, SEEK_END);
	dup2(capture_fd, 2);
}

static const char *capture_end(void)
{
	static char out[4096];
	fflush(stderr);
	dup2(saved_err, 2);
	ssize_t n = pread(capture_fd, out, sizeof(out) - 1, capture_off);
	out[n > 0 ? n : 0] = 0;
	return out;
}

static int fails;

/* One line, "<op> of <p as passed>: <pre><word><post>": the cause (pre,
 * post) the same for every entry point, the word the entry point's. */
static void expect(const char *what, const char *out, const void *p, const char *pre,
		   const char *word, const char *post)
{
	char ptr[32], cause[256];
	snprintf(ptr, sizeof(ptr), " of %p: ", p);
	snprintf(cause, sizeof(cause), "%s%s%s%s", ptr, pre, word, post);
	const char *bad = !strstr(out, ptr) ? "does not name the pointer as passed" :
			  !strstr(out, cause) ? "does not name the cause" :
			  strchr(out, '\n') != strrchr(out, '\n') ? "is more than one line" : NULL;
	if (bad) {
		printf("FAIL: %s: the report %s (want \"...%s...\"):\n  %s", what, bad, cause,
		       *out ? out : "(nothing)\n");
		fails++;
	} else {
		printf("  %-30s %s", what, out);
	}
}

static void freed_block(const char *kind, size_t size, const char *pre, const char *post)
{
	char *p = malloc(size);
	if (!p) {
		printf("FAIL: malloc(%zu)\n", size);
		fails++;
		return;
	}
	memset(p, 1, size);
	f_free(p);
	char what[64];

	capture_begin();
	f_free(p);
	snprintf(what, sizeof(what), "free(%s) again", kind);
	expect(what, capture_end(), p, pre, "a double free", post);

	capture_begin();
	errno = 0;
	void *q = f_realloc(p, size * 2);
	int err = errno;
	snprintf(what, sizeof(what), "realloc(freed %s)", kind);
	expect(what, capture_end(), p, pre, "a realloc after free", post);
	if (q || err != EINVAL) {
		printf("FAIL: realloc of a freed %s gave %p, errno %d (want NULL, EINVAL)\n", kind,
		       q, err);
		fails++;
	}

	capture_begin();
	size_t n = f_usable(p);
	snprintf(what, sizeof(what), "malloc_usable_size(freed %s)", kind);
	expect(what, capture_end(), p, pre, "a use after free", post);
	if (n) {
		printf("FAIL: malloc_usable_size of a freed %s gave %zu\n", kind, n);
		fails++;
	}
}

int main(int argc, char **argv)
{
	if (!getenv("AS_FREED_CHILD")) {
		setenv("AS_FREED_CHILD", "1", 1);
		setenv("USLUB_MALLOC_ABORT", "0", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	(void)argc;
	char path[] = "/tmp/as_freed_large.XXXXXX";
	capture_fd = mkstemp(path);
	if (capture_fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	saved_err = dup(2);
	printf("as_freed_large: each entry point names a freed block's pointer and cause:\n");
	freed_block("8 MiB block", 8ul << 20, "",
		    " of a huge block (a mapping above 2 MiB freed before)");
	freed_block("256 KiB block", 256ul << 10, "nothing is allocated there: ",
		    " of a kmalloc page run (8 KiB - 2 MiB), or a pointer into freed memory");
	close(capture_fd);
	return fails ? 1 : 0;
}
