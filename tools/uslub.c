/*
 * uslub — the command line tool.
 *
 *   uslub slabinfo PID [--json]      one snapshot of a running process
 *   uslub top PID [--json] [-d MS] [-n COUNT]
 *                                    the same, refreshed in the terminal
 *
 * The process publishes its statistics when started with
 * USLUB_PUBLISH_MS=<ms> (src/cache/publish.c): /dev/shm/uslub.<pid>.txt
 * and .json, replaced atomically and removed at exit. This tool only reads
 * them, so watching costs the process nothing but the publisher's
 * snapshots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr,
		"usage: uslub slabinfo PID [--json]\n"
		"       uslub top PID [--json] [-d MS] [-n COUNT]\n"
		"The process must run with USLUB_PUBLISH_MS=<ms> (e.g. 500).\n");
	return 2;
}

/* Print the published file of @pid; 0, or 1 with a message. */
static int show(long pid, int json)
{
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm/uslub.%ld.%s", pid, json ? "json" : "txt");
	FILE *f = fopen(path, "r");
	if (!f) {
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			fprintf(stderr, "uslub: no process %ld\n", pid);
		else
			fprintf(stderr, "uslub: process %ld publishes no statistics (%s: %s); start "
				"it with USLUB_PUBLISH_MS=500\n", pid, path, strerror(errno));
		return 1;
	}
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	const char *cmd = argv[1];
	char *end;
	long pid = strtol(argv[2], &end, 10);
	if (*end || pid <= 0)
		return usage();
	int json = 0;
	long delay_ms = 1000, count = -1;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			delay_ms = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			count = strtol(argv[++i], NULL, 10);
		else
			return usage();
	}
	if (!strcmp(cmd, "slabinfo"))
		return show(pid, json);
	if (strcmp(cmd, "top") || delay_ms <= 0)
		return usage();
	for (long k = 0; count < 0 || k < count; k++) {
		if (!json)
			fputs("\033[H\033[2J", stdout);       /* home, clear */
		if (show(pid, json))
			return 1;
		if (!json)
			printf("\nuslub top %ld: refreshing every %ld ms (Ctrl-C to quit)\n", pid,
			       delay_ms);
		fflush(stdout);
		if (count >= 0 && k + 1 >= count)
			break;
		struct timespec d = { delay_ms / 1000, (delay_ms % 1000) * 1000000 };
		nanosleep(&d, NULL);
	}
	return 0;
}
