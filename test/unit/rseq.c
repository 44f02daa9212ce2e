/*
 * rseq: the per-CPU sheaf sections (slub/percpu.h) under a migration
 * storm. 4x the CPUs (at least 8) threads pop and push objects on the
 * sheaves of their id's slot, take a slot's sheaf out and install one
 * from a shared pool (the slow paths' pattern), flip their affinity with
 * sched_setaffinity, and take signals whose handlers pop and push too;
 * the main thread forks children during the storm, which check the
 * sheaves they inherited and run sections of their own; a drainer
 * thread takes sheaves out of other ids' slots (exchange, then the rseq
 * fence) and installs others (CAS). Every object is
 * an index with a state word: a pop that finds an object not free, or a
 * final census that finds one missing or twice, fails.
 *
 *   unit_rseq            the storm (skips, 77, where rseq is missing)
 *   unit_rseq none       expects no rseq: run with
 *                        GLIBC_TUNABLES=glibc.pthread.rseq=0
 */
#define _GNU_SOURCE
#include "slub/percpu.h"
#include "unit.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if USLUB_HAVE_RSEQ

#define CAP      16                  /* objects per sheaf                    */
#define NOBJ     4096
#define NPOOL    512                 /* sheaves in the pool                  */
#define MAXIDS   1024
#define HELD     32
#define OPS      50000000            /* a bound: the storm ends on stop */

/* a struct slab_sheaf with room for CAP objects */
#define SHEAF_BYTES ALIGN_UP(sizeof(struct slab_sheaf) + CAP * sizeof(void *), 64)
typedef char sheaf_mem[SHEAF_BYTES] __attribute__((aligned(64)));

static const struct uslub_rseq_info *ri;
static unsigned int nr_ids;
static char *tab[MAXIDS];            /* id -> its area (one slot, at 0)       */
static sheaf_mem empty_mem;          /* the stand-in: capacity 0             */
static sheaf_mem sheaf_store[MAXIDS + NPOOL];
static sheaf_mem stop_mem;           /* the remote taker's marker: capacity 0 */
#define empty_sheaf (*(struct slab_sheaf *)empty_mem)
#define stop_sheaf (*(struct slab_sheaf *)stop_mem)
#define SHEAF(i) ((struct slab_sheaf *)sheaf_store[i])
static struct {
	unsigned int state;          /* 0 free (in a sheaf or being pushed), 1 held */
} obj[NOBJ];

/* the pool: sheaves out of any slot (mutex; never taken by a handler) */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slab_sheaf *pool[MAXIDS + NPOOL];
static unsigned int pool_n;

/* objects a signal handler could not push back (a lock-free stack of
 * indexes: next[] links) */
static unsigned long overflow_head;  /* index + 1; 0 empty                   */
static unsigned long overflow_next[NOBJ];

static volatile int stop;
static unsigned long dup_pops;        /* atomic: pops of an object not free */

static inline unsigned int *idp(void)
{
	return (unsigned int *)(uslub_rseq_area(ri) + ri->id_offset);
}

static void *pop(void)
{
	return pcpu_sheaf_pop(uslub_rseq_area(ri), idp(), tab, 0);
}

static bool push(void *x)
{
	return pcpu_sheaf_push(uslub_rseq_area(ri), idp(), tab, 0, x);
}

static unsigned long idx(void *x)
{
	return (unsigned long)((char *)x - (char *)obj) / sizeof(obj[0]);
}

/* A popped object: it must have been free. */
static void took(void *x)
{
	unsigned int zero = 0;
	if (!__atomic_compare_exchange_n(&obj[idx(x)].state, &zero, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&dup_pops, 1, __ATOMIC_RELAXED);
}

/* Push a held object; false (still held) when the sheaf is full. */
static bool give(void *x)
{
	__atomic_store_n(&obj[idx(x)].state, 0, __ATOMIC_RELEASE);
	if (push(x))
		return true;
	__atomic_store_n(&obj[idx(x)].state, 1, __ATOMIC_RELAXED);
	return false;
}

static void overflow_push(void *x)
{
	unsigned long i = idx(x), head = __atomic_load_n(&overflow_head, __ATOMIC_RELAXED);
	do
		overflow_next[i] = head;
	while (!__atomic_compare_exchange_n(&overflow_head, &head, i + 1, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

static void handler(int sig)
{
	(void)sig;
	void *x = pop();
	if (!x)
		return;
	took(x);
	if (!give(x))
		overflow_push(x);
}

/* The slow paths' pattern: take the slot's sheaf out (the stand-in in
 * its place), put it in the pool, install another from the pool. */
static void swap_sheaf(unsigned long long *seed)
{
	unsigned int id;
	struct slab_sheaf *got = pcpu_slot_exchange(uslub_rseq_area(ri), idp(), tab, 0,
						    &empty_sheaf, &id);
	CHECK(id < nr_ids);
	pthread_mutex_lock(&pool_lock);
	if (got->capacity)               /* a stand-in or the stop marker: none */
		pool[pool_n++] = got;
	unsigned int k = pool_n ? (unsigned int)(unit_rand(seed) % pool_n) : 0;
	struct slab_sheaf *put = pool_n ? pool[k] : NULL;
	if (put)
		pool[k] = pool[--pool_n];
	pthread_mutex_unlock(&pool_lock);
	if (!put)
		return;
	struct slab_sheaf *was = pcpu_slot_install(uslub_rseq_area(ri), idp(), tab, 0,
						   &empty_sheaf, put, &id);
	if (was != &empty_sheaf) {         /* filled meanwhile: back to the pool */
		pthread_mutex_lock(&pool_lock);
		pool[pool_n++] = put;
		pthread_mutex_unlock(&pool_lock);
	}
}

/* Another id's slot, from outside its sections (pcpu_slot_take_remote:
 * exchange, then the fence): its sheaf to the pool, and one from the
 * pool into an empty slot (pcpu_slot_install_remote: the stop marker,
 * the fence, then the sheaf; a plain CAS lost a sheaf to an install
 * section that had read the empty word before it). */
static unsigned long remote_takes;    /* sheaves taken from other ids' slots */
static unsigned long stale_commits;   /* atomic: a section's commit after a take */

static void *drain(void *arg)
{
	unsigned long long seed = 0xd7a1ull;
	(void)arg;
	while (!stop) {
		unsigned int id = (unsigned int)(unit_rand(&seed) % nr_ids);
		void **slot = (void **)tab[id];
		struct slab_sheaf *got = pcpu_slot_take_remote(slot, &empty_sheaf, &stop_sheaf);
		if (got != &empty_sheaf) {
			/* ours alone now: a section still at work on it (no
			 * fence) would commit a size over the poison */
			unsigned int size = __atomic_load_n(&got->size, __ATOMIC_RELAXED);
			__atomic_store_n(&got->size, 0xdeadu, __ATOMIC_RELAXED);
			for (int k = 0; k < 2000; k++)
				__asm__ __volatile__("pause" ::: "memory");
			if (__atomic_load_n(&got->size, __ATOMIC_RELAXED) != 0xdeadu)
				__atomic_fetch_add(&stale_commits, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&got->size, size, __ATOMIC_RELAXED);
		}
		pthread_mutex_lock(&pool_lock);
		if (got != &empty_sheaf) {
			pool[pool_n++] = got;
			remote_takes++;
		}
		struct slab_sheaf *put = NULL;
		if (pool_n) {
			unsigned int k = (unsigned int)(unit_rand(&seed) % pool_n);
			put = pool[k];
			pool[k] = pool[--pool_n];
		}
		pthread_mutex_unlock(&pool_lock);
		id = (unsigned int)(unit_rand(&seed) % nr_ids);
		if (put && !pcpu_slot_install_remote((void **)tab[id], &empty_sheaf, put, &stop_sheaf)) {
			pthread_mutex_lock(&pool_lock);
			pool[pool_n++] = put;
			pthread_mutex_unlock(&pool_lock);
		}
		sched_yield();
	}
	return NULL;
}

struct worker {
	pthread_t t;
	unsigned long long seed;
	void *held[HELD];
	unsigned int nheld;
	unsigned long ids_seen;           /* bit per id (ids < 64)              */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	for (long op = 0; op < OPS && !stop; op++) {
		unsigned long long r = unit_rand(&w->seed);
		unsigned int id = uslub_rseq_id_now(ri);
		if (id < 64)
			w->ids_seen |= 1ul << id;
		switch (r % 16) {
		case 0:
			if ((r >> 8) % 64 == 0) {
				cpu_set_t set;
				CPU_ZERO(&set);
				if ((r >> 16) % 3 == 0) {
					for (int c = 0; c < ncpu; c++)
						CPU_SET(c, &set);
				} else {
					CPU_SET((int)((r >> 20) % (unsigned long long)ncpu), &set);
				}
				sched_setaffinity(0, sizeof(set), &set);
			} else if ((r >> 8) % 8 == 0) {
				swap_sheaf(&w->seed);
			}
			break;
		case 1 ... 7:
			if (w->nheld < HELD) {
				void *x = pop();
				if (x) {
					took(x);
					w->held[w->nheld++] = x;
				}
			}
			break;
		default:
			if (w->nheld && give(w->held[w->nheld - 1]))
				w->nheld--;
			break;
		}
	}
	return NULL;
}

/* Census: every object exactly once in the slots' sheaves, the pool's,
 * the held lists and the overflow stack. */
static void census(struct worker *w, int nw, bool forked)
{
	static unsigned char seen[NOBJ];
	memset(seen, 0, sizeof(seen));
	unsigned long total = 0;
#define SEE(x) do { unsigned long _i = idx(x); CHECK(_i < NOBJ); CHECK(!seen[_i]); \
		seen[_i] = 1; total++; } while (0)
	for (unsigned int i = 0; i < nr_ids; i++) {
		struct slab_sheaf *sh = *(struct slab_sheaf **)tab[i];
		CHECK(sh->size <= sh->capacity);
		for (unsigned int k = 0; k < sh->size; k++) {
			SEE(sh->objects[k]);
			CHECK_EQ(obj[idx(sh->objects[k])].state, 0);
		}
	}
	if (forked)                  /* the pool's lock may be held by a thread we lack */
		return;
	for (unsigned int p = 0; p < pool_n; p++) {
		CHECK(pool[p]->size <= pool[p]->capacity);
		for (unsigned int k = 0; k < pool[p]->size; k++)
			SEE(pool[p]->objects[k]);
	}
	for (int t = 0; t < nw; t++)
		for (unsigned int k = 0; k < w[t].nheld; k++)
			SEE(w[t].held[k]);
	for (unsigned long i = overflow_head; i; i = overflow_next[i - 1])
		SEE(&obj[i - 1]);
	CHECK_EQ(total, NOBJ);
#undef SEE
}

static void child_run(void)
{
	census(NULL, 0, true);
	void *h[HELD];
	int n = 0;
	for (int op = 0; op < 20000; op++) {
		if (op % 3 != 2 && n < HELD) {
			void *x = pop();
			if (x) {
				CHECK_EQ(obj[idx(x)].state, 0);
				obj[idx(x)].state = 1;
				h[n++] = x;
			}
		} else if (n) {
			obj[idx(h[n - 1])].state = 0;
			if (push(h[n - 1]))
				n--;
			else
				obj[idx(h[n - 1])].state = 1;
		}
	}
	while (n) {
		obj[idx(h[n - 1])].state = 0;
		if (!push(h[n - 1]))
			break;
		n--;
	}
	census(NULL, 0, true);       /* what was held and not pushed: not in a sheaf */
	_exit(0);
}

static void storm(void)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int nw = MAX(8, 4 * ncpu);
	/* areas: one slot each, at 0; sheaves: one per id, half full */
	static char areas[MAXIDS][64] __attribute__((aligned(64)));
	empty_sheaf.capacity = 0;
	unsigned int next = 0;
	for (unsigned int i = 0; i < MAXIDS + NPOOL; i++) {
		SHEAF(i)->capacity = CAP;
		SHEAF(i)->size = 0;
	}
	for (unsigned int i = 0; i < MAXIDS + NPOOL && next < NOBJ; i++)
		for (unsigned int k = 0; k < CAP / 2 && next < NOBJ; k++)
			SHEAF(i)->objects[SHEAF(i)->size++] = &obj[next++];
	CHECK_EQ(next, NOBJ);
	for (unsigned int i = 0; i < nr_ids; i++) {
		tab[i] = areas[i];
		*(struct slab_sheaf **)tab[i] = SHEAF(i);
	}
	for (unsigned int i = nr_ids; i < MAXIDS + NPOOL; i++)
		pool[pool_n++] = SHEAF(i);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);

	static struct worker w[256];
	for (int t = 0; t < nw; t++) {
		w[t].seed = 0x5eed0000ull + (unsigned long long)t;
		CHECK(pthread_create(&w[t].t, NULL, work, &w[t]) == 0);
	}
	pthread_t drainer;
	CHECK(pthread_create(&drainer, NULL, drain, NULL) == 0);
	unsigned long long r = 42;
	int forks = 0;
	for (int round = 0; round < 400; round++) {
		for (int k = 0; k < 4; k++)
			pthread_kill(w[unit_rand(&r) % (unsigned long long)nw].t, SIGUSR1);
		if (round % 100 == 50) {
			pid_t pid = fork();
			CHECK(pid >= 0);
			if (pid == 0)
				child_run();
			int st;
			CHECK(waitpid(pid, &st, 0) == pid);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			forks++;
		}
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	stop = 1;
	CHECK(pthread_join(drainer, NULL) == 0);
	unsigned long ids = 0;
	int migrated = 0;
	for (int t = 0; t < nw; t++) {
		CHECK(pthread_join(w[t].t, NULL) == 0);
		ids |= w[t].ids_seen;
		migrated += __builtin_popcountl(w[t].ids_seen) > 1;
	}
	CHECK_EQ(__atomic_load_n(&stale_commits, __ATOMIC_RELAXED), 0);
	CHECK_EQ(__atomic_load_n(&dup_pops, __ATOMIC_RELAXED), 0);
	census(w, nw, false);
	printf("rseq: %s, %u ids, %d threads (%d saw more than one id, ids seen %#lx), %d forks, "
	       "%lu sheaves taken from other ids: every object once\n",
	       ri->id == USLUB_RSEQ_MM_CID ? "mm_cid" : "cpu_id", nr_ids, nw, migrated, ids, forks,
	       remote_takes);
	CHECK(migrated > 0);
	CHECK(remote_takes > 0);
}

int main(int argc, char **argv)
{
	ri = _uslub_rseq_info();
	if (argc > 1 && !strcmp(argv[1], "none")) {
		CHECK_EQ(ri->id, USLUB_RSEQ_NONE);
		CHECK(ri->why && strstr(ri->why, "did not register"));
		CHECK(!_uslub_rseq_thread_ok());
		printf("rseq: none, as expected: %s\n", ri->why);
		return 0;
	}
	if (ri->id == USLUB_RSEQ_NONE) {
		printf("SKIP: no rseq: %s\n", ri->why);
		return 77;
	}
	CHECK(_uslub_rseq_thread_ok());
	nr_ids = ri->nr_ids;
	CHECK(nr_ids >= 1 && nr_ids <= MAXIDS);
	CHECK(uslub_rseq_id_now(ri) < nr_ids);
	storm();
	return 0;
}

#else
int main(void)
{
	printf("SKIP: no rseq sections on this architecture or build\n");
	return 77;
}
#endif
