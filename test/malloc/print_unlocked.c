/*
 * malloc_print_unlocked: the uslub_*_print(FILE *) reports under the uslub
 * malloc front end (LD_PRELOAD), where writing to a FILE can re-enter the
 * allocator: glibc malloc()s a FILE's buffer on its first write, and an
 * open_memstream grows with realloc().
 *
 * Regression: uslub_slabinfo_print() and uslub_group_report_print() called
 * fprintf() with thread_lock and slab_mutex (and groups_lock) held. From a
 * thread that had never allocated, the FILE's buffer was that thread's
 * first malloc, whose slow path sets up the thread's cpu area under
 * thread_lock: a self-deadlock (or thread_lock taken under slab_mutex, out
 * of order). Now the reports are built into an mmap'ed buffer under the
 * locks and written to the FILE after they are dropped.
 *
 *   - for each report and each format: a new thread, whose first
 *     allocation is the FILE buffer, prints it to a FILE opened (but never
 *     written) by the main thread;
 *   - the same into an open_memstream (realloc growth), many times, while
 *     other threads allocate, exit and start; the text must be complete
 *     (a table's header, or JSON ending in "]}\n");
 *   - alarm(ALARM_S): a hang fails with SIGALRM.
 * Skips (77) when uslub is not the process's malloc.
 */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>
#include <stdbool.h>

#define ALARM_S 15
typedef void (*print_fn)(FILE *, int);

static print_fn prints[3];
static const char *const names[3] = {
	"uslub_slabinfo_print", "uslub_group_report_print", "uslub_allocinfo_print"
};

struct job {
	print_fn fn;
	int fmt;
	FILE *f;
};

static void *print_job(void *arg)
{
	struct job *j = arg;
	j->fn(j->f, j->fmt);       /* the thread's first allocation: the buffer */
	return NULL;
}

static void *churn(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	struct mt_rng r = { seed };
	void *keep[32] = { 0 };
	for (int i = 0; i < 20000; i++) {
		unsigned int k = (unsigned int)mt_range(&r, 0, 31);
		free(keep[k]);
		keep[k] = malloc((size_t)mt_range(&r, 1, 3000));
	}
	for (int k = 0; k < 32; k++)
		free(keep[k]);
	return NULL;
}

int main(void)
{
	mt_seed_init(0x9121e7);
	alarm(ALARM_S);
	for (int i = 0; i < 3; i++)
		prints[i] = (print_fn)dlsym(RTLD_DEFAULT, names[i]);
	if (!prints[0] || !prints[1] || !prints[2] || !mt_uslub_error_count()) {
		if (getenv("LD_PRELOAD") && *getenv("LD_PRELOAD")) {
			fprintf(stderr, "LD_PRELOAD set, but the uslub reports are not found\n");
			return 1;
		}
		printf("not on uslub: skipped\n");
		return 77;
	}

	/* (1) a new thread's first allocation is the FILE's buffer */
	for (int i = 0; i < 3; i++)
		for (int fmt = 0; fmt < 2; fmt++) {
			FILE *f = fopen("/dev/null", "w");
			REQUIRE(f, "fopen /dev/null");
			struct job j = { prints[i], fmt, f };
			pthread_t th;
			REQUIRE(pthread_create(&th, NULL, print_job, &j) == 0, "pthread_create");
			pthread_join(th, NULL);
			CHECK_MSG(!ferror(f), "%s(fmt %d): write error", names[i], fmt);
			fclose(f);
		}

	/* (2) open_memstream (realloc) while threads allocate, start and exit */
	for (int round = 0; round < 20; round++) {
		pthread_t th[2];
		for (int t = 0; t < 2; t++)
			REQUIRE(pthread_create(&th[t], NULL, churn,
					       (void *)(uintptr_t)(mt_seed + (uint64_t)round * 2 + (uint64_t)t)) == 0,
				"pthread_create");
		for (int i = 0; i < 3; i++)
			for (int fmt = 0; fmt < 2; fmt++) {
				char *text = NULL;
				size_t len = 0;
				FILE *f = open_memstream(&text, &len);
				REQUIRE(f, "open_memstream");
				prints[i](f, fmt);
				fclose(f);
				CHECK_MSG(len > 0, "%s(fmt %d): no output", names[i], fmt);
				if (fmt == 1)        /* USLUB_FMT_JSON: one complete object */
					CHECK_MSG(len >= 3 && text[0] == '{' &&
						  !strcmp(text + len - 3, "]}\n"),
						  "%s: JSON cut short: ...%s", names[i],
						  text + (len > 40 ? len - 40 : 0));
				free(text);
			}
		for (int t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
	}
	CHECK_EQ(mt_uslub_error_count()(), 0);
	alarm(0);
	if (mt_failures)
		return 1;
	printf("malloc_print_unlocked: ok\n");
	return 0;
}
