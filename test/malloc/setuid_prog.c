/*
 * malloc_setuid_prog: linked with libuslub-malloc; setuid.sh installs a
 * copy set-uid root and runs it as nobody with hostile USLUB_ variables.
 * It allocates and reports what it observed, one key=value a line:
 *   secure=       getauxval(AT_SECURE)
 *   alloc_failures= allocations that returned NULL (USLUB_FAILSLAB)
 *   injected=     uslub_failslab_injected()
 *   published=    1 if /dev/shm/uslub-<euid>/<pid>.txt appeared (USLUB_PUBLISH_MS)
 *   pid=
 * then the slab layout of the kmalloc caches (name, object size, stride,
 * objects and pages per slab), which USLUB_MAX_ORDER, USLUB_MIN_OBJECTS,
 * USLUB_DEBUG, ... would change.
 *
 *   malloc_setuid_prog run <ms>      poll up to <ms> ms for the snapshot
 *   malloc_setuid_prog badfree       free an interior pointer (with the
 *                                    default USLUB_MALLOC_ABORT=1: abort)
 *   malloc_setuid_prog nosuid <dir>  exit 0 if <dir>'s file system honours
 *                                    set-uid bits (statvfs), 1 if not
 *   malloc_setuid_prog clobberenv    overwrite every environment string
 *                                    with zeros (as setproctitle does in
 *                                    redis-server), allocate, exit 0
 *   malloc_setuid_prog closestderr   allocate, fclose(stderr) (as coreutils'
 *                                    close_stdout does at exit), exit 0
 *   malloc_setuid_prog daemon        fork a child that points fds 0-2 at
 *                                    /dev/null and sleeps 3 s (a daemon),
 *                                    exit 0 at once
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/statvfs.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

unsigned long uslub_failslab_injected(void);
void uslub_slabinfo_print(FILE *f, int fmt);

static void *(*volatile f_malloc)(size_t) = malloc;
static void (*volatile f_free)(void *) = free;

static void say(const char *key, long v)
{
	char b[64];
	int n = snprintf(b, sizeof(b), "%s=%ld\n", key, v);
	if (write(STDOUT_FILENO, b, (size_t)n) != n)
		exit(2);
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "nosuid")) {
		struct statvfs sv;
		if (statvfs(argv[2], &sv))
			return 2;
		return sv.f_flag & ST_NOSUID ? 1 : 0;
	}
	if (argc == 2 && !strcmp(argv[1], "badfree")) {
		char *p = f_malloc(64);
		f_free(p + 8);          /* aborts unless USLUB_MALLOC_ABORT=0 */
		say("survived_bad_free", 1);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "clobberenv")) {
		extern char **environ;
		for (char **e = environ; *e; e++)
			memset(*e, 0, strlen(*e));
		f_free(f_malloc(100));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "daemon")) {
		f_free(f_malloc(100));
		pid_t pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_RDWR);
			for (int i = 0; i < 3 && fd >= 0; i++)
				dup2(fd, i);
			sleep(3);
			_exit(0);
		}
		return pid > 0 ? 0 : 3;
	}
	if (argc == 2 && !strcmp(argv[1], "closestderr")) {
		f_free(f_malloc(100));
		return fclose(stderr) ? 3 : 0;
	}
	if (argc != 3 || strcmp(argv[1], "run"))
		return 2;
	long wait_ms = atol(argv[2]);

	say("secure", (long)getauxval(AT_SECURE));
	say("pid", (long)getpid());
	/* small, page-run and mapped sizes, freed in a different order */
	static void *p[512];
	long failures = 0;
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 512; i++) {
			size_t size = i == 511 ? (size_t)4 << 20 : (size_t)(8 + (i * 37) % 3000);
			if (i % 64 == 63)
				size = (size_t)(16 + i) << 10;
			p[i] = f_malloc(size);
			if (!p[i])
				failures++;
			else
				memset(p[i], 0x5a, size < 4096 ? size : 4096);
		}
		for (int i = 0; i < 512; i++)
			f_free(p[(i * 7) % 512]);
	}
	say("alloc_failures", failures);
	say("injected", (long)uslub_failslab_injected());

	char shm[600];
	const char *root = getenv("USLUB_PUBLISH_ROOT");   /* where uslub would publish */
	if (!root || root[0] != '/')
		root = "/dev/shm";
	snprintf(shm, sizeof(shm), "%s/uslub-%u/%d.txt", root, (unsigned)geteuid(),
		 (int)getpid());
	long published = 0;
	for (long t = 0; t < wait_ms && !published; t += 5) {
		sleep_ms(5);
		published = access(shm, F_OK) == 0;
	}
	say("published", published);
	fflush(stdout);
	printf("layout:\n");
	fflush(stdout);
	uslub_slabinfo_print(stdout, 0);
	fflush(stdout);
	return 0;
}
