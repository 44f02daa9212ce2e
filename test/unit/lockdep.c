/*
 * The lifecycle table and lock-order checking.
 *
 * In every build: the table runs prefork in rank order (the
 * LIFECYCLE_UNLOCKED entries first, entries of one rank in registration
 * order) and both postfork handlers in reverse, and a multi-threaded
 * process with caches, sheaves, accounting and huge kmallocs in use forks
 * children that allocate, free, start a thread (not under TSan, which
 * refuses that) and exit 0.
 *
 * With USLUB_LOCKDEP (the sanitizer builds; there the fork above runs
 * every fork handler under the check too): taking a lock of an earlier
 * rank while holding a later one aborts with a report, the contract's
 * order passes, a batch of one rank (uslub_mutex_lock_nest) passes only
 * under its nest lock and never mixed with a lock of that rank taken
 * alone, and releasing a lock not held aborts.
 */
#include "slub/slub.h"
#include "unit.h"
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the table's order ------------------------------------------------ */

#define LOG_MAX 32
struct log {
	char c[LOG_MAX + 1];
	unsigned int n;
};
static struct log pre_log, parent_log, child_log;
static unsigned int unlocked_held_child = ~0u;   /* _uslub_locks_held seen */
static unsigned int list_held_pre;

static void log_add(struct log *l, char c)
{
	if (l->n < LOG_MAX)
		l->c[l->n++] = c;
	l->c[l->n] = 0;
}

#define TEST_ENTRY(letter, r)                                                   \
	static void pre_##letter(void) { log_add(&pre_log, #letter[0]); }        \
	static void parent_##letter(void) { log_add(&parent_log, #letter[0]); }  \
	static void child_##letter(void) { log_add(&child_log, #letter[0]); }    \
	static const struct uslub_lifecycle entry_##letter = {                   \
		.name = "test " #letter, .rank = (r), .prefork = pre_##letter,   \
		.postfork_parent = parent_##letter, .postfork_child = child_##letter, \
	}

TEST_ENTRY(a, RANK_LIST);
TEST_ENTRY(b, RANK_THREAD);
TEST_ENTRY(d, RANK_FAILSLAB);
TEST_ENTRY(e, RANK_LIST);

/* c: no lock held after fork; in prefork only lifecycle_lock */
static unsigned int unlocked_held_pre = ~0u;
static void pre_c(void)
{
	unlocked_held_pre = _uslub_locks_held;
	log_add(&pre_log, 'c');
}
static void parent_c(void) { log_add(&parent_log, 'c'); }
static void child_c(void)
{
	unlocked_held_child = _uslub_locks_held;
	log_add(&child_log, 'c');
}
static const struct uslub_lifecycle entry_c = {
	.name = "test c", .rank = LIFECYCLE_UNLOCKED, .prefork = pre_c,
	.postfork_parent = parent_c, .postfork_child = child_c,
};

/* f: runs after the real list_lock entry: every lock up to list_lock held */
static void pre_f(void)
{
	list_held_pre = _uslub_locks_held;
	log_add(&pre_log, 'f');
}
static const struct uslub_lifecycle entry_f = {
	.name = "test f", .rank = RANK_LIST, .prefork = pre_f,
};

static void reset_logs(void)
{
	memset(&pre_log, 0, sizeof(pre_log));
	memset(&parent_log, 0, sizeof(parent_log));
	memset(&child_log, 0, sizeof(child_log));
}

static void test_order(void)
{
	uslub_cache_t *s = uslub_cache_create("lockdep_order", 64, 0, 0, NULL);
	CHECK(s);
	void *p = uslub_cache_alloc(s, 0);     /* a cpu area, caches, nodes */
	CHECK(p);
	_uslub_lifecycle_register(&entry_a);
	_uslub_lifecycle_register(&entry_b);
	_uslub_lifecycle_register(&entry_c);
	_uslub_lifecycle_register(&entry_d);
	_uslub_lifecycle_register(&entry_e);
	_uslub_lifecycle_register(&entry_f);
	CHECK_EQ(_uslub_locks_held, 0);

	reset_logs();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* prefork in rank order; the child's handlers in reverse, the
		 * unlocked entry last with no lock held */
		int ok = !strcmp(pre_log.c, "cbaefd") && !strcmp(child_log.c, "deabc") &&
			 parent_log.n == 0 && unlocked_held_child == 0 &&
			 _uslub_locks_held == 0;
		if (!ok)
			fprintf(stderr, "child: pre %s child %s held %u/%u\n", pre_log.c,
				child_log.c, unlocked_held_child, _uslub_locks_held);
		void *q = uslub_cache_alloc(s, 0);
		ok = ok && q;
		uslub_cache_free(s, q);
		_exit(ok ? 0 : 1);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (strcmp(pre_log.c, "cbaefd") || strcmp(parent_log.c, "deabc"))
		fprintf(stderr, "parent: pre %s parent %s\n", pre_log.c, parent_log.c);
	CHECK(!strcmp(pre_log.c, "cbaefd"));
	CHECK(!strcmp(parent_log.c, "deabc"));
	CHECK_EQ(child_log.n, 0);
	CHECK_EQ(unlocked_held_pre, 1);         /* lifecycle_lock */
	/* lifecycle, pub, flush, thread, slab_mutex, groups, tags, a barn per
	 * sheaf cache and node (every cache but the boot and bucket caches,
	 * unless USLUB_CPU_SLABS=1), and every cache's list_lock per node */
	CHECK(list_held_pre > 7);
	CHECK_EQ(_uslub_locks_held, 0);
	uslub_cache_free(s, p);
	CHECK_EQ(uslub_cache_destroy(s), 0);
}

/* ---- fork from a busy multi-threaded process -------------------------- */

#define NTHREADS 3
#define FORKS 20
static uslub_cache_t *plain, *sheaved;
static uslub_group_t *group;
static volatile int stop_workers;

static void *worker(void *arg)
{
	unsigned long long seed = (unsigned long long)(uintptr_t)arg;
	void *keep[64] = { 0 };
	uslub_group_set_current(group);
	while (!__atomic_load_n(&stop_workers, __ATOMIC_RELAXED)) {
		unsigned int k = (unsigned int)(unit_rand(&seed) % 64);
		unsigned int what = (unsigned int)(unit_rand(&seed) % 4);
		if (keep[k]) {
			if (k % 4 == 0)
				uslub_cache_free(plain, keep[k]);
			else if (k % 4 == 1)
				uslub_cache_free(sheaved, keep[k]);
			else
				uslub_kfree(keep[k]);
			keep[k] = NULL;
			continue;
		}
		if (k % 4 == 0)
			keep[k] = uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT);
		else if (k % 4 == 1)
			keep[k] = uslub_cache_alloc(sheaved, 0);
		else
			keep[k] = uslub_kmalloc(what == 0 && k == 2 ? (4u << 20) : 24 + k * 40,
						USLUB_GFP_ACCOUNT);
	}
	for (unsigned int k = 0; k < 64; k++) {
		if (!keep[k])
			continue;
		if (k % 4 == 0)
			uslub_cache_free(plain, keep[k]);
		else if (k % 4 == 1)
			uslub_cache_free(sheaved, keep[k]);
		else
			uslub_kfree(keep[k]);
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	void *p[32];
	for (int i = 0; i < 32; i++)
		CHECK((p[i] = uslub_cache_alloc(sheaved, 0)));
	for (int i = 0; i < 32; i++)
		uslub_cache_free(sheaved, p[i]);
	return arg;
}

static void test_busy_fork(void)
{
	struct uslub_cache_args args = { .sheaf_capacity = 16 };
	plain = uslub_cache_create("lockdep_plain", 96, 0, 0, NULL);
	sheaved = uslub_cache_create_args("lockdep_sheaved", 200, &args, 0);
	group = uslub_group_create(NULL, "lockdep", SIZE_MAX);
	CHECK(plain && sheaved && group);
	/* the kmalloc caches exist before the threads race to use them (the
	 * inline kmalloc path reads _uslub_kmalloc_caches[] plainly while
	 * kmalloc_init_once stores it: TSan reports a first use racing it) */
	uslub_kfree(uslub_kmalloc(64, 0));
	pthread_t th[NTHREADS];
	for (uintptr_t i = 0; i < NTHREADS; i++)
		CHECK(!pthread_create(&th[i], NULL, worker, (void *)(i + 1)));
	for (int f = 0; f < FORKS; f++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			alarm(20);      /* a lock left held across fork: a failure */
			void *p[100];
			for (int i = 0; i < 100; i++) {
				p[i] = i % 3 == 0 ? uslub_cache_alloc(plain, USLUB_GFP_ACCOUNT) :
				       i % 3 == 1 ? uslub_cache_alloc(sheaved, 0) :
				       uslub_kmalloc(i == 2 ? (4u << 20) : 8u * (unsigned)i, 0);
				if (!p[i])
					_exit(2);
			}
			for (int i = 0; i < 100; i++) {
				if (i % 3 == 0)
					uslub_cache_free(plain, p[i]);
				else if (i % 3 == 1)
					uslub_cache_free(sheaved, p[i]);
				else
					uslub_kfree(p[i]);
			}
#if !defined(USLUB_TSAN) && !defined(USLUB_ASAN_BUILD)   /* base/base.h */
			/* TSan refuses threads in a multi-threaded fork's child,
			 * and ASan's own allocator can be left locked there by a
			 * parent thread (pthread_create callocs): both sanitized
			 * builds run the child's work on this thread */
			pthread_t t;
			if (pthread_create(&t, NULL, child_thread, NULL) || pthread_join(t, NULL))
				_exit(3);
#else
			child_thread(NULL);
#endif
			_exit(_uslub_locks_held == 0 ? 0 : 4);
		}
		int status;
		CHECK(waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "fork %d: child status %#x\n", f, status);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	__atomic_store_n(&stop_workers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(!pthread_join(th[i], NULL));
	CHECK_EQ(_uslub_locks_held, 0);
}

/* ---- lockdep ---------------------------------------------------------- */

#ifdef USLUB_LOCKDEP
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return status;
}

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t list_lock2 = PTHREAD_MUTEX_INITIALIZER;

static void in_order(void)
{
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_unlock(&list_lock, RANK_LIST);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
}

static void inverted(void)
{
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);   /* must abort */
}

static void two_list_locks(void)
{
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_lock(&list_lock2, RANK_LIST);                /* must abort */
}

static void batch_nested(void)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock_nest(&list_lock, RANK_LIST, RANK_SLAB_MUTEX);
	uslub_mutex_lock_nest(&list_lock2, RANK_LIST, RANK_SLAB_MUTEX);
	uslub_mutex_unlock_nest(&list_lock2, RANK_LIST);
	uslub_mutex_unlock_nest(&list_lock, RANK_LIST);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	_exit(_uslub_locks_held == 0 ? 0 : 1);
}

static void batch_without_nest_lock(void)
{
	uslub_mutex_lock_nest(&list_lock, RANK_LIST, RANK_SLAB_MUTEX);  /* must abort */
}

static void alone_then_batch(void)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock(&list_lock, RANK_LIST);
	uslub_mutex_lock_nest(&list_lock2, RANK_LIST, RANK_SLAB_MUTEX);  /* must abort */
}

static void batch_then_alone(void)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock_nest(&list_lock, RANK_LIST, RANK_SLAB_MUTEX);
	uslub_mutex_lock(&list_lock2, RANK_LIST);                /* must abort */
}

static void release_unheld(void)
{
	uslub_mutex_lock(&list_lock, RANK_LIST);
	pthread_mutex_unlock(&list_lock);
	_uslub_locks_held--;
	_uslub_lockdep_release(RANK_LIST);
	_uslub_lockdep_release(RANK_LIST);                       /* must abort */
}

static void leaf_under_slab_mutex(void)
{
	/* failslab_lock is taken under slab_mutex (failslab.c: apply) */
	static pthread_mutex_t leaf = PTHREAD_MUTEX_INITIALIZER;
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock(&leaf, RANK_FAILSLAB);
	uslub_mutex_unlock(&leaf, RANK_FAILSLAB);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

static void pub_under_thread_lock(void)
{
	static pthread_mutex_t pub = PTHREAD_MUTEX_INITIALIZER;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&pub, RANK_PUB);                         /* must abort */
}

static void check_aborts(void (*fn)(void))
{
	int st = in_child(fn);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

static void check_passes(void (*fn)(void))
{
	int st = in_child(fn);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_lockdep(void)
{
	check_passes(in_order);
	check_aborts(inverted);
	check_aborts(two_list_locks);
	check_passes(batch_nested);
	check_aborts(batch_without_nest_lock);
	check_aborts(alone_then_batch);
	check_aborts(batch_then_alone);
	check_aborts(release_unheld);
	check_passes(leaf_under_slab_mutex);
	check_aborts(pub_under_thread_lock);
}
#endif

int main(void)
{
#ifdef USLUB_LOCKDEP
	test_lockdep();
#endif
	test_order();
	test_busy_fork();
	printf("lockdep: ok%s\n",
#ifdef USLUB_LOCKDEP
	       ""
#else
	       " (lifecycle only: not built with USLUB_LOCKDEP)"
#endif
	);
	return 0;
}
