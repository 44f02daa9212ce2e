/*
 * waves: threads that allocate and free in waves, so objects swing
 * between sheaves, the barn and slabs (flushes by slab runs, refills,
 * the barn raised by the swings, empty slabs kept), with remote frees,
 * a purge pass forced under their feet and a fork in the middle.
 *
 * NTHREADS workers, two caches (48 B with the default per-CPU layer,
 * 96 B with USLUB_CPU_SLAB). Each wave a worker allocates K objects of
 * each cache, singly or with alloc_bulk, and stamps them (owner, wave,
 * index); it gives half to its neighbour and frees its own half in LIFO,
 * FIFO or shuffled order, singly or with free_bulk; after a barrier it
 * checks and frees the half its other neighbour gave it (remote frees).
 * A trimmer thread calls uslub_trim() all along: the purge pass lowers
 * raised barns (flushing their sheaves) and discards kept empty slabs
 * while the workers use them. In the middle wave worker 0 forks; the
 * child runs waves of its own on both caches and checks validate.
 * At the end: the counter invariant (allocations == frees == what the
 * test did), live_objs == 0, validate == 0, and after a flush and a
 * shrink no slab and no barn sheaf is left.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 4
#define NCACHES 2

static uslub_cache_t *caches[NCACHES];
static const size_t sizes[NCACHES] = { 48, 96 };
static long K, WAVES;
static pthread_barrier_t bar;
static _Atomic int done;
static _Atomic uint64_t allocated[NCACHES], freed[NCACHES];
static uint64_t seed;

/* what a worker hands its neighbour: [cache][i] */
static void **handoff[NTHREADS + 1][NCACHES];    /* + the fork child's */

struct stamp {
	uint32_t owner, wave;
	uint64_t index;
};

static void stamp(void *p, int owner, long wave, long i)
{
	struct stamp *st = p;
	st->owner = (uint32_t)owner;
	st->wave = (uint32_t)wave;
	st->index = (uint64_t)i;
}

static void check_stamp(const void *p, int owner, long wave, long i)
{
	const struct stamp *st = p;
	CHECK_MSG(st->owner == (uint32_t)owner && st->wave == (uint32_t)wave &&
		  st->index == (uint64_t)i,
		  "object %p: stamp (%u, %u, %llu), expected (%d, %ld, %ld)", p, st->owner,
		  st->wave, (unsigned long long)st->index, owner, wave, i);
}

static void shuffle(struct rng *r, void **v, long n)
{
	for (long i = n; i > 1; i--) {
		long j = (long)rng_below(r, (uint64_t)i);
		void *t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* One wave of @me on cache @k: allocate K, hand the odd ones over, free
 * the even ones in an order of the wave's. */
static void wave_own(int me, int k, long w, struct rng *r, void **v, void **mine)
{
	uslub_cache_t *s = caches[k];
	if (w % 3 == 1) {
		CHECK_EQ(uslub_cache_alloc_bulk(s, 0, (size_t)K, v), K);
	} else {
		for (long i = 0; i < K; i++)
			CHECK(v[i] = uslub_cache_alloc(s, 0));
	}
	atomic_fetch_add(&allocated[k], (uint64_t)K);
	long nm = 0, nh = 0;
	for (long i = 0; i < K; i++) {
		stamp(v[i], me, w, i);
		if (i % 2)
			handoff[me][k][nh++] = v[i];
		else
			mine[nm++] = v[i];
	}
	switch (w % 3) {
	case 0:                                         /* LIFO, singly */
		for (long i = nm - 1; i >= 0; i--)
			uslub_cache_free(s, mine[i]);
		break;
	case 1:                                         /* FIFO, in bulk */
		uslub_cache_free_bulk(s, (size_t)nm, mine);
		break;
	default:                                        /* shuffled, singly */
		shuffle(r, mine, nm);
		for (long i = 0; i < nm; i++)
			uslub_cache_free(s, mine[i]);
		break;
	}
	atomic_fetch_add(&freed[k], (uint64_t)nm);
}

/* The odd objects @from handed over in wave @w: checked and freed here
 * (remote frees), in bulk every other wave. */
static void wave_remote(int from, int k, long w)
{
	uslub_cache_t *s = caches[k];
	long nh = K / 2;
	for (long j = 0; j < nh; j++)
		check_stamp(handoff[from][k][j], from, w, 2 * j + 1);
	if (w % 2)
		uslub_cache_free_bulk(s, (size_t)nh, handoff[from][k]);
	else
		for (long j = 0; j < nh; j++)
			uslub_cache_free(s, handoff[from][k][j]);
	atomic_fetch_add(&freed[k], (uint64_t)nh);
}

static void child_waves(void)
{
	struct rng r = { .s = seed ^ 0xc41d };
	void **v = malloc(sizeof(void *) * (size_t)K), **mine = malloc(sizeof(void *) * (size_t)K);
	CHECK(v && mine);
	for (long w = 0; w < 4; w++)
		for (int k = 0; k < NCACHES; k++) {
			wave_own(NTHREADS, k, w, &r, v, mine);
			/* the handed half, freed here too */
			uslub_cache_free_bulk(caches[k], (size_t)(K / 2), handoff[NTHREADS][k]);
		}
	uslub_trim();
	for (int k = 0; k < NCACHES; k++)
		CHECK_EQ(uslub_cache_validate(caches[k]), 0);
	free(v);
	free(mine);
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct rng r = { .s = seed + (uint64_t)me * 0x9e3779b97f4a7c15ull };
	void **v = malloc(sizeof(void *) * (size_t)K), **mine = malloc(sizeof(void *) * (size_t)K);
	CHECK(v && mine);
	int from = (me + NTHREADS - 1) % NTHREADS;
	for (long w = 0; w < WAVES; w++) {
		for (int k = 0; k < NCACHES; k++)
			wave_own(me, k, w, &r, v, mine);
		pthread_barrier_wait(&bar);
		if (me == 0 && w == WAVES / 2) {
			pid_t pid = fork();
			CHECK(pid >= 0);
			if (pid == 0) {
				child_waves();
				_exit(0);
			}
			int st = 0;
			CHECK(waitpid(pid, &st, 0) == pid);
			CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child: status %#x", st);
		}
		for (int k = 0; k < NCACHES; k++)
			wave_remote(from, k, w);
		pthread_barrier_wait(&bar);
	}
	uslub_flush_thread();
	free(v);
	free(mine);
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 2000000 };
	while (!atomic_load(&done)) {
		uslub_trim();
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(void)
{
	seed = test_seed(0x3a7e5);
	K = scaled(6000) & ~1L;
	WAVES = test_sanitized() ? 8 : 24;
	caches[0] = uslub_cache_create("waves-48", sizes[0], 0, 0, NULL);
	caches[1] = uslub_cache_create("waves-96-cpu", sizes[1], 0, USLUB_CPU_SLAB, NULL);
	CHECK(caches[0] && caches[1]);
	for (int t = 0; t <= NTHREADS; t++)
		for (int k = 0; k < NCACHES; k++)
			CHECK(handoff[t][k] = malloc(sizeof(void *) * (size_t)K));
	pthread_barrier_init(&bar, NULL, NTHREADS);
	pthread_t th[NTHREADS], tr;
	CHECK(pthread_create(&tr, NULL, trimmer, NULL) == 0);
	for (int t = 0; t < NTHREADS; t++)
		CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
	for (int t = 0; t < NTHREADS; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	atomic_store(&done, 1);
	CHECK(pthread_join(tr, NULL) == 0);
	pthread_barrier_destroy(&bar);

	uslub_flush_thread();
	for (int k = 0; k < NCACHES; k++) {
		uslub_cache_t *s = caches[k];
		uint64_t st[USLUB_NR_STATS];
		uslub_cache_stats(s, st);
		CHECK_EQU(stat_allocs(st), atomic_load(&allocated[k]));
		CHECK_EQU(stat_frees(st), atomic_load(&freed[k]));
		CHECK_EQU(atomic_load(&allocated[k]), atomic_load(&freed[k]));
		CHECK(st[USLUB_FLUSH_RUN] > 0 || st[USLUB_FREE_SLOWPATH] > 0);
		struct uslub_slabinfo si = slabinfo_get(s);
		CHECK_EQU(si.live_objs, 0);
		CHECK_EQ(uslub_cache_validate(s), 0);
		printf("%s: %llu objects in %ld waves of %ld per thread; FLUSH_RUN %llu "
		       "REFILL_RUN %llu ALLOC_SLAB %llu FREE_SLAB %llu BARN_PUT %llu\n",
		       uslub_cache_name(s), (unsigned long long)atomic_load(&allocated[k]), WAVES, K,
		       (unsigned long long)st[USLUB_FLUSH_RUN],
		       (unsigned long long)st[USLUB_REFILL_RUN],
		       (unsigned long long)st[USLUB_ALLOC_SLAB], (unsigned long long)st[USLUB_FREE_SLAB],
		       (unsigned long long)st[USLUB_BARN_PUT]);
		uslub_cache_shrink(s);
		si = slabinfo_get(s);
		CHECK_EQU(si.num_slabs, 0);
		CHECK_EQU(si.barn_full + si.barn_empty, 0);
		CHECK_EQ(uslub_cache_destroy(s), 0);
	}
	for (int t = 0; t <= NTHREADS; t++)
		for (int k = 0; k < NCACHES; k++)
			free(handoff[t][k]);
	printf("waves: ok\n");
	return 0;
}
