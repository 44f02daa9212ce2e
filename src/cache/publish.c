/*
 * Live observability from outside the process: with USLUB_PUBLISH_MS=<ms>,
 * a background thread writes a snapshot every <ms> milliseconds to
 *   /dev/shm/uslub.<pid>.txt   (slabinfo and group tables)
 *   /dev/shm/uslub.<pid>.json  ({"pid", "time_ns", "slabinfo", "groups"})
 * each replaced atomically (write a temporary file, rename), and removes
 * both at exit. `uslub slabinfo PID` and `uslub top PID` read them. The
 * fast paths pay nothing: the snapshot sums the per-thread counters the
 * way uslub_slabinfo_print() does. A fork child publishes under its own
 * pid (its publisher is started again in the child).
 */
#define _GNU_SOURCE
#include "cache/slub.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PUBLISH_DIR "/dev/shm"

static pthread_mutex_t pub_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf: files, state */
static bool stopping;
static bool atexit_done;
static long interval_ms;
static pid_t pub_pid;

static void paths(pid_t pid, char *txt, char *json, size_t len)
{
	snprintf(txt, len, PUBLISH_DIR "/uslub.%d.txt", (int)pid);
	snprintf(json, len, PUBLISH_DIR "/uslub.%d.json", (int)pid);
}

/* Write one file through a temporary and rename it into place. */
static void write_file(const char *path, int json)
{
	char tmp[96];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned long long now = (unsigned long long)ts.tv_sec * 1000000000ull +
				 (unsigned long long)ts.tv_nsec;
	if (json) {
		fprintf(f, "{\"pid\":%d,\"time_ns\":%llu,\"slabinfo\":", (int)getpid(), now);
		uslub_slabinfo_print(f, USLUB_FMT_JSON);
		fprintf(f, ",\"groups\":");
		uslub_group_report_print(f, USLUB_FMT_JSON);
		if (_uslub_option(USLUB_OPT_PROFILING)) {
			fprintf(f, ",\"allocinfo\":");
			uslub_allocinfo_print(f, USLUB_FMT_JSON);
		}
		fprintf(f, "}\n");
	} else {
		fprintf(f, "uslub pid %d, snapshot at %llu.%03llu\n", (int)getpid(),
			now / 1000000000ull, (now / 1000000ull) % 1000);
		uslub_slabinfo_print(f, USLUB_FMT_TABLE);
		fprintf(f, "\n");
		uslub_group_report_print(f, USLUB_FMT_TABLE);
		if (_uslub_option(USLUB_OPT_PROFILING)) {
			fprintf(f, "\nallocinfo\n");
			uslub_allocinfo_print(f, USLUB_FMT_TABLE);
		}
	}
	if (fclose(f) == 0) {
		pthread_mutex_lock(&pub_lock);
		if (!stopping)
			rename(tmp, path);
		else
			unlink(tmp);
		pthread_mutex_unlock(&pub_lock);
	} else {
		unlink(tmp);
	}
}

static void *publisher(void *arg)
{
	(void)arg;
	char txt[96], json[96];
	paths(getpid(), txt, json, sizeof(txt));
	for (;;) {
		if (READ_ONCE(stopping))
			return NULL;
		write_file(txt, 0);
		write_file(json, 1);
		struct timespec d = { interval_ms / 1000, (interval_ms % 1000) * 1000000 };
		nanosleep(&d, NULL);
	}
}

static void at_exit(void)
{
	char txt[96], json[96];
	pthread_mutex_lock(&pub_lock);
	WRITE_ONCE(stopping, true);
	if (pub_pid == getpid()) {
		paths(pub_pid, txt, json, sizeof(txt));
		unlink(txt);
		unlink(json);
	}
	pthread_mutex_unlock(&pub_lock);
}

static void start(void)
{
	pthread_attr_t a;
	pthread_t th;
	pub_pid = getpid();
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, publisher, NULL))
		_uslub_report("uslub: USLUB_PUBLISH_MS: cannot start the publisher thread\n");
	pthread_attr_destroy(&a);
}

/* After _uslub_init() (from a constructor): start publishing if asked. */
void _uslub_publish_init(void)
{
	interval_ms = _uslub_option(USLUB_OPT_PUBLISH_MS);
	if (interval_ms <= 0)
		return;
	if (!atexit_done) {
		atexit_done = true;
		atexit(at_exit);
	}
	start();
}

/* fork: the child has no publisher thread; start its own. */
void _uslub_publish_postfork_child(void)
{
	pthread_mutex_init(&pub_lock, NULL);
	if (interval_ms > 0 && !stopping)
		start();
}
