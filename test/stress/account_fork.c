/*
 * Accounting across fork(): NTHREADS threads, each in its own group,
 * allocate accounted objects (so each holds a per-thread byte stock of
 * prepaid bytes) and wait while the main thread forks. In the child those
 * threads are gone: the child drains their stocks, so after draining its
 * own the child sees every group's usage equal to the charges of the live
 * objects exactly, can delete the groups once their objects are freed,
 * and every handle is gone. The parent checks the child and then cleans
 * up the same way.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#define NTHREADS 3
#define PER_THREAD 37

static uslub_cache_t *cache;
static uslub_group_t *groups[NTHREADS];
static void *objs[NTHREADS][PER_THREAD];
static pthread_barrier_t allocated, release;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uslub_group_set_current(groups[id]);
	for (int i = 0; i < PER_THREAD; i++)
		CHECK((objs[id][i] = uslub_cache_alloc(cache, USLUB_GFP_KERNEL)) != NULL);
	pthread_barrier_wait(&allocated);
	pthread_barrier_wait(&release);      /* the main thread forks meanwhile */
	uslub_group_set_current(NULL);
	return NULL;
}

/* Every group's usage equals its live objects' charges; then free them,
 * delete the groups, and no handle is left. */
static void check_and_clean(size_t charge, unsigned long objcgs0, const char *who)
{
	uslub_group_drain_stock();
	for (int i = 0; i < NTHREADS; i++)
		CHECK_MSG(uslub_group_usage(groups[i]) == PER_THREAD * charge,
			  "%s: group %d usage %zu, live charges %zu", who, i,
			  uslub_group_usage(groups[i]), PER_THREAD * charge);
	for (int i = 0; i < NTHREADS; i++)
		for (int j = 0; j < PER_THREAD; j++)
			uslub_cache_free(cache, objs[i][j]);
	uslub_group_drain_stock();
	for (int i = 0; i < NTHREADS; i++) {
		CHECK_EQU(uslub_group_usage(groups[i]), 0);
		CHECK_EQ(uslub_group_delete(groups[i]), 0);
	}
	CHECK_EQU(uslub_objcg_count(), objcgs0);
	CHECK_EQ(uslub_cache_validate(cache), 0);
}

int main(void)
{
	unsigned long objcgs0 = uslub_objcg_count();
	cache = uslub_cache_create("account-fork", 96, 0, USLUB_ACCOUNT, NULL);
	CHECK(cache);
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(cache, &si);
	size_t charge = si.obj_ext_charge;
	for (int i = 0; i < NTHREADS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "forked-%d", i);
		CHECK((groups[i] = uslub_group_create(NULL, name, USLUB_GROUP_NO_LIMIT)) != NULL);
	}
	pthread_barrier_init(&allocated, NULL, NTHREADS + 1);
	pthread_barrier_init(&release, NULL, NTHREADS + 1);
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
	pthread_barrier_wait(&allocated);
	/* each thread's stock holds prepaid bytes now: usage exceeds charges */
	for (int i = 0; i < NTHREADS; i++)
		CHECK(uslub_group_usage(groups[i]) >= PER_THREAD * charge);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(10);
		check_and_clean(charge, objcgs0, "child");
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (status %d)", status);

	pthread_barrier_wait(&release);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	check_and_clean(charge, objcgs0, "parent");
	CHECK_EQ(uslub_cache_destroy(cache), 0);
	printf("account_fork: ok: %d groups, %d objects each, exact usage in child and parent\n",
	       NTHREADS, PER_THREAD);
	return 0;
}
