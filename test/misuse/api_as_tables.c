/*
 * as_tables (issue 25, item 3): every path that maps memory gives back
 * what uslub keeps unused before it fails, not only the slab and kmalloc
 * growth: here the tables a layer maps for itself (the group report's
 * per-group counts, and the report text after it). Eight 16 MiB kmalloc
 * blocks are freed (uslub keeps the mappings for reuse), the address-space
 * limit is set just above what is mapped, and the group report must still
 * list the group's objects. Before: its table's mmap failed without a
 * trim, and the report came out without the row (or empty).
 *
 * Runs itself again with USLUB_DECAY_MS=600000, so no purge gives the
 * mappings back first. Not in the sanitizer builds (their shadow memory
 * does not live under an address-space limit).
 */
#define _GNU_SOURCE
#include <uslub.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "../malloc/rss.h"

#define NBLOCKS 8
#define BLOCK   (16ul << 20)
#define NOBJS   100

static char fbuf[1 << 16];             /* the FILE's buffer: no malloc under the limit */

int main(int argc, char **argv)
{
	if (getenv("USLUB_SANITIZED")) {
		printf("SKIP: no address-space limit under a sanitizer\n");
		return 77;
	}
	if (!getenv("AS_TABLES_CHILD")) {
		setenv("AS_TABLES_CHILD", "1", 1);
		setenv("USLUB_DECAY_MS", "600000", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	uslub_group_t *g = uslub_group_create(NULL, "as-tables-group", SIZE_MAX);
	uslub_cache_t *s = uslub_cache_create("as-tables-64", 64, 0, USLUB_ACCOUNT, NULL);
	if (!g || !s) {
		printf("FAIL: group or cache\n");
		return 1;
	}
	uslub_group_t *old = uslub_group_set_current(g);
	static void *objs[NOBJS];
	for (int i = 0; i < NOBJS; i++)
		objs[i] = uslub_cache_alloc(s, USLUB_GFP_KERNEL);
	uslub_group_set_current(old);

	void *big[NBLOCKS];
	for (int i = 0; i < NBLOCKS; i++) {
		big[i] = uslub_kmalloc(BLOCK, USLUB_GFP_KERNEL);
		if (!big[i]) {
			printf("FAIL: block %d\n", i);
			return 1;
		}
		memset(big[i], 1, 4096);
	}
	for (int i = 0; i < NBLOCKS; i++)
		uslub_kfree(big[i]);

	char path[] = "/tmp/uslub-as-tables-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
	if (!f) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	setvbuf(f, fbuf, _IOFBF, sizeof(fbuf));

	struct rlimit was, rl;
	getrlimit(RLIMIT_AS, &was);
	size_t base = vm_bytes();
	rl.rlim_cur = base + (64 << 10);
	rl.rlim_max = was.rlim_max;
	if (!base || setrlimit(RLIMIT_AS, &rl)) {
		printf("SKIP: cannot set an address-space limit\n");
		return 77;
	}
	uslub_group_report_print(f, USLUB_FMT_TABLE);
	fflush(f);
	setrlimit(RLIMIT_AS, &was);

	char out[1 << 14];
	rewind(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	int fail = 0;
	const char *row = strstr(out, "as-tables-64");
	if (!row) {
		printf("FAIL: under a limit %zu KiB above %zu MiB mapped, with %d x %lu MiB kept "
		       "unused, the group report has no row for the group's objects:\n%s\n",
		       (size_t)64, base >> 20, NBLOCKS, BLOCK >> 20, out);
		fail = 1;
	} else {
		char want[32];
		snprintf(want, sizeof(want), " %d ", NOBJS);
		const char *eol = strchr(row, '\n');
		const char *cnt = strstr(row, want);
		if (!cnt || (eol && cnt > eol)) {
			printf("FAIL: the row does not count %d objects: %.*s\n", NOBJS,
			       (int)(eol ? eol - row : 80), row);
			fail = 1;
		}
	}
	for (int i = 0; i < NOBJS; i++)
		uslub_cache_free(s, objs[i]);
	if (!fail)
		printf("as_tables: the group report listed the group's %d objects under the limit\n",
		       NOBJS);
	return fail;
}
