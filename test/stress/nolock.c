/*
 * nolock: kmalloc_nolock()/kfree_nolock() from a signal handler that
 * interrupts uslub itself.
 *
 * The main thread hammers kmalloc/kfree (every kmalloc size) and
 * uslub_cache_alloc/free of its own cache, stamping every object and
 * checking the stamp on free. A second thread sends it SIGUSR1 with
 * pthread_kill() as fast as it can; the handler, which may interrupt the
 * main thread anywhere -- in an inline sheaf pop or push, in a slow path,
 * holding list_lock or the page node lock -- allocates with
 * kmalloc_nolock() (ZERO on some: checked zero; ACCOUNT on half, charged
 * to the thread's current group, as the main thread's ACCOUNT quarter
 * is), stamps, checks and frees with kfree_nolock(). Objects also cross over: some of the handler's go
 * to the main thread, which frees them with kfree(); some of the main
 * thread's go to the handler, which frees them with kfree_nolock().
 *
 * At the end (deterministic seed; the signal timing is not): no stamp was
 * damaged, no error was reported, the handler did succeed many times, and
 * after freeing everything every kmalloc cache and the test cache count as
 * many frees as allocations (live_objs == 0: every object accounted for,
 * deferred frees included once drained by a shrink), validate finds
 * nothing, the group's usage is back to 0, and ALLOC_NOLOCK_FAIL counts
 * at least the handler's failures.
 */
#include "../integration/check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#define HSLOTS 64          /* the handler's objects                   */
#define MSLOTS 512         /* the main thread's objects               */
#define XSLOTS 16          /* objects crossing over, each direction   */
#define MAX_SIZE 8192

struct hdr {               /* at the start of every object >= 16 bytes */
	uint32_t size;
	uint32_t check;
};

static uint32_t check_of(const void *p, size_t size)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull ^ size;
	return (uint32_t)(h ^ (h >> 32));
}

static void stamp(void *p, size_t size)
{
	unsigned char *b = p;
	if (size >= sizeof(struct hdr)) {
		struct hdr *h = p;
		h->size = (uint32_t)size;
		h->check = check_of(p, size);
		for (size_t i = sizeof(*h); i < size; i++)
			b[i] = (unsigned char)(i * 7 + size);
	} else {
		for (size_t i = 0; i < size; i++)
			b[i] = (unsigned char)(i * 7 + size);
	}
}

/* false if @p's stamp for @size is damaged */
static bool stamp_ok(const void *p, size_t size)
{
	const unsigned char *b = p;
	size_t i = 0;
	if (size >= sizeof(struct hdr)) {
		const struct hdr *h = p;
		if (h->size != size || h->check != check_of(p, size))
			return false;
		i = sizeof(*h);
	}
	for (; i < size; i++)
		if (b[i] != (unsigned char)(i * 7 + size))
			return false;
	return true;
}

/* The handler's state: only the handler touches hslot/hsize/hrng; the
 * crossings are atomics. */
static void *hslot[HSLOTS];
static size_t hsize[HSLOTS];
static uint64_t hrng;
static _Atomic(void *) to_main[XSLOTS];      /* handler -> main: kfree()  */
static _Atomic(size_t) to_main_size[XSLOTS];
static _Atomic(void *) to_handler[XSLOTS];   /* main -> handler: kfree_nolock() */
static _Atomic(size_t) to_handler_size[XSLOTS];
static atomic_ulong h_calls, h_allocs, h_fails, h_frees, h_cross_frees, h_bad;

static uint64_t h_next(void)
{
	uint64_t z = (hrng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t pick_size(uint64_t r)
{
	switch (r % 4) {
	case 0: return 1 + (r >> 8) % 64;
	case 1: return 1 + (r >> 8) % 256;
	case 2: return 1 + (r >> 8) % 2048;
	default: return 1 + (r >> 8) % MAX_SIZE;
	}
}

static void handler(int sig)
{
	(void)sig;
	int saved = errno;
	atomic_fetch_add_explicit(&h_calls, 1, memory_order_relaxed);
	for (int k = 0; k < 4; k++) {
		uint64_t r = h_next();
		unsigned int i = (unsigned int)(r % HSLOTS);
		if (hslot[i]) {
			if (!stamp_ok(hslot[i], hsize[i]))
				atomic_fetch_add(&h_bad, 1);
			unsigned int x = (unsigned int)((r >> 16) % XSLOTS);
			void *none = NULL;
			if ((r >> 24) % 4 == 0 &&
			    atomic_compare_exchange_strong(&to_main[x], &none, NULL)) {
				/* give it to the main thread (its kfree()) */
				atomic_store(&to_main_size[x], hsize[i]);
				atomic_store(&to_main[x], hslot[i]);
			} else {
				uslub_kfree_nolock(hslot[i]);
				atomic_fetch_add_explicit(&h_frees, 1, memory_order_relaxed);
			}
			hslot[i] = NULL;
			continue;
		}
		size_t size = pick_size(r >> 8);
		bool zero = (r >> 40) & 1, account = (r >> 41) & 1;
		void *p = uslub_kmalloc_nolock(size, (zero ? USLUB_GFP_ZERO : 0) |
						     (account ? USLUB_GFP_ACCOUNT : 0),
					       USLUB_NUMA_NO_NODE);
		if (!p) {
			atomic_fetch_add_explicit(&h_fails, 1, memory_order_relaxed);
			continue;
		}
		atomic_fetch_add_explicit(&h_allocs, 1, memory_order_relaxed);
		if (zero)
			for (size_t j = 0; j < size; j++)
				if (((unsigned char *)p)[j])
					atomic_fetch_add(&h_bad, 1);
		stamp(p, size);
		hslot[i] = p;
		hsize[i] = size;
	}
	/* one of the main thread's objects, freed here */
	unsigned int x = (unsigned int)(h_next() % XSLOTS);
	void *q = atomic_exchange(&to_handler[x], NULL);
	if (q) {
		if (!stamp_ok(q, atomic_load(&to_handler_size[x])))
			atomic_fetch_add(&h_bad, 1);
		uslub_kfree_nolock(q);
		atomic_fetch_add_explicit(&h_cross_frees, 1, memory_order_relaxed);
	}
	errno = saved;
}

static atomic_int stop;
static pthread_t main_thread;
static atomic_ulong signals_sent;

static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_kill(main_thread, SIGUSR1);
		atomic_fetch_add_explicit(&signals_sent, 1, memory_order_relaxed);
		if (atomic_load_explicit(&signals_sent, memory_order_relaxed) % 64 == 0) {
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(void)
{
	uint64_t seed = test_seed(20261126);
	struct rng rng = { seed };
	hrng = seed ^ 0x5555;

	/* before the handler can run: kmalloc_nolock never initializes */
	CHECK(uslub_kmalloc_nolock(64, 0, USLUB_NUMA_NO_NODE) == NULL);
	uslub_kfree(uslub_kmalloc(64, 0));
	uslub_cache_t *tc = uslub_cache_create("nolock_test", 200, 0, 0, NULL);
	CHECK(tc);
	/* a current group: the handler's USLUB_GFP_ACCOUNT half is charged
	 * to it straight, the main thread's quarter through its stock */
	uslub_group_t *grp = uslub_group_create(NULL, "nolock-stress", USLUB_GROUP_NO_LIMIT);
	CHECK(grp);
	uslub_group_set_current(grp);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	main_thread = pthread_self();
	pthread_t sig_th;
	CHECK(pthread_create(&sig_th, NULL, signaller, NULL) == 0);

	void *mslot[MSLOTS] = { 0 };
	size_t msize[MSLOTS] = { 0 };
	void *cslot[MSLOTS] = { 0 };
	unsigned long m_bad = 0, main_cross_frees = 0;
	long iters = scaled(1500000);
	for (long it = 0; it < iters; it++) {
		uint64_t r = rng_next(&rng);
		unsigned int i = (unsigned int)(r % MSLOTS);
		switch ((r >> 12) % 4) {
		case 0:
		case 1:
			if (mslot[i]) {
				if (!stamp_ok(mslot[i], msize[i]))
					m_bad++;
				unsigned int x = (unsigned int)((r >> 20) % XSLOTS);
				void *none = NULL;
				if ((r >> 30) % 8 == 0 &&
				    atomic_compare_exchange_strong(&to_handler[x], &none, NULL)) {
					atomic_store(&to_handler_size[x], msize[i]);
					atomic_store(&to_handler[x], mslot[i]);
				} else {
					uslub_kfree(mslot[i]);
				}
				mslot[i] = NULL;
			} else {
				msize[i] = pick_size(r >> 16);
				mslot[i] = uslub_kmalloc(msize[i], (r >> 50) % 4 ? 0 : USLUB_GFP_ACCOUNT);
				CHECK(mslot[i]);
				stamp(mslot[i], msize[i]);
			}
			break;
		case 2:
			if (cslot[i]) {
				if (!stamp_ok(cslot[i], 200))
					m_bad++;
				uslub_cache_free(tc, cslot[i]);
				cslot[i] = NULL;
			} else {
				cslot[i] = uslub_cache_alloc(tc, 0);
				CHECK(cslot[i]);
				stamp(cslot[i], 200);
			}
			break;
		default: {
			/* now and then a shrink: list_lock and the page node
			 * lock held a while, for the handler to find taken */
			if ((r >> 40) % 512 == 0)
				uslub_cache_shrink(uslub_kmalloc_cache(pick_size(r >> 16)));
			/* the handler's objects that crossed over: kfree() */
			unsigned int x = (unsigned int)((r >> 20) % XSLOTS);
			/* the handler fills a slot only while it is empty: read
			 * the size before emptying it */
			void *q = atomic_load(&to_main[x]);
			if (q) {
				size_t size = atomic_load(&to_main_size[x]);
				CHECK(atomic_exchange(&to_main[x], NULL) == q);
				if (!stamp_ok(q, size))
					m_bad++;
				uslub_kfree(q);
				main_cross_frees++;
			}
			break;
		}
		}
	}
	atomic_store(&stop, 1);
	CHECK(pthread_join(sig_th, NULL) == 0);
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &block, NULL) == 0);   /* a pending one stays pending */

	/* everything left: the handler's with kfree_nolock (from a normal
	 * context too), the rest with kfree/cache_free */
	for (unsigned int i = 0; i < HSLOTS; i++)
		if (hslot[i]) {
			if (!stamp_ok(hslot[i], hsize[i]))
				m_bad++;
			uslub_kfree_nolock(hslot[i]);
		}
	for (unsigned int x = 0; x < XSLOTS; x++) {
		void *q = atomic_exchange(&to_main[x], NULL);
		if (q)
			uslub_kfree(q);
		q = atomic_exchange(&to_handler[x], NULL);
		if (q)
			uslub_kfree_nolock(q);
	}
	for (unsigned int i = 0; i < MSLOTS; i++) {
		if (mslot[i]) {
			if (!stamp_ok(mslot[i], msize[i]))
				m_bad++;
			uslub_kfree(mslot[i]);
		}
		if (cslot[i])
			uslub_cache_free(tc, cslot[i]);
	}

	unsigned long calls = atomic_load(&h_calls), allocs = atomic_load(&h_allocs),
		      fails = atomic_load(&h_fails);
	printf("signals %lu, handler calls %lu: %lu kmalloc_nolock (%lu NULL), %lu "
	       "kfree_nolock, %lu of the main thread's objects freed there, %lu of the "
	       "handler's freed by kfree\n", atomic_load(&signals_sent), calls, allocs, fails,
	       atomic_load(&h_frees), atomic_load(&h_cross_frees), main_cross_frees);
	CHECK_EQ(atomic_load(&h_bad), 0);
	CHECK_EQ(m_bad, 0);
	CHECK(calls >= 100);
	CHECK(allocs >= calls);          /* most of 4 tries per call succeed */
	CHECK(atomic_load(&h_cross_frees) > 0);
	CHECK(main_cross_frees > 0);

	uint64_t nolock_fail = 0, deferred = 0;
	for (size_t size = 8; size <= MAX_SIZE; size *= 2) {
		uslub_cache_t *s = uslub_kmalloc_cache(size);
		CHECK(s);
		uslub_cache_shrink(s);   /* drains the deferred frees */
	}
	uslub_cache_t *prev = NULL;
	unsigned int ncaches = 0;
	for (size_t size = 1; size <= MAX_SIZE; size++) {
		uslub_cache_t *s = uslub_kmalloc_cache(size);
		if (s != prev) {
			prev = s;
			ncaches++;
			uint64_t st[USLUB_NR_STATS];
			uslub_cache_stats(s, st);
			CHECK_MSG(stat_allocs(st) == stat_frees(st), "%s: %llu allocs, %llu frees",
				  uslub_cache_name(s), (unsigned long long)stat_allocs(st),
				  (unsigned long long)stat_frees(st));
			nolock_fail += st[USLUB_ALLOC_NOLOCK_FAIL];
			deferred += st[USLUB_FREE_NOLOCK_DEFER];
			CHECK_EQ(uslub_cache_validate(s), 0);
		}
	}
	CHECK_EQ(ncaches, 13);
	printf("ALLOC_NOLOCK_FAIL %llu, FREE_NOLOCK_DEFER %llu\n", (unsigned long long)nolock_fail,
	       (unsigned long long)deferred);
	CHECK(nolock_fail >= fails);
	/* every charge given back (the main thread's stock drained) */
	uslub_group_drain_stock();
	CHECK_EQU(uslub_group_usage(grp), 0);
	uslub_group_set_current(NULL);
	CHECK_EQ(uslub_group_delete(grp), 0);
	uint64_t st[USLUB_NR_STATS];
	uslub_cache_stats(tc, st);
	CHECK_EQU(stat_allocs(st), stat_frees(st));
	CHECK_EQ(uslub_cache_validate(tc), 0);
	CHECK_EQ(uslub_cache_destroy(tc), 0);
	CHECK_EQ(uslub_error_count(), 0);
	printf("ok\n");
	return 0;
}
