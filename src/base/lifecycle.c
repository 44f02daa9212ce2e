/*
 * The lifecycle table (base/lifecycle.h): thread exit (and fold) and fork
 * callbacks of every layer, run in rank order. The table is append-only; each run
 * sorts the entries it sees by rank on the stack (a stable insertion sort
 * of at most LIFECYCLE_MAX pointers), so readers need no lock.
 */
#include "base/lifecycle.h"
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lifecycle_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct uslub_lifecycle *table[LIFECYCLE_MAX];   /* lifecycle_lock to add */
static unsigned int nr_entries;                             /* release-stored */

/* The entries the forking thread's prefork ran (its thread-local copy is
 * the child's too), so that postfork runs exactly those. */
static __thread unsigned int fork_nr __tls_ie;

void _uslub_lifecycle_register(const struct uslub_lifecycle *e)
{
	uslub_mutex_lock(&lifecycle_lock, RANK_LIFECYCLE);
	unsigned int n = nr_entries;
	if (n == LIFECYCLE_MAX || e->rank < LIFECYCLE_UNLOCKED || e->rank >= RANK_NR) {
		_uslub_report("uslub: cannot register lifecycle entry %s (rank %d): %s\n",
			      e->name, e->rank, n == LIFECYCLE_MAX ? "the table is full" :
			      "no such rank");
		abort();
	}
	table[n] = e;
	__atomic_store_n(&nr_entries, n + 1, __ATOMIC_RELEASE);
	uslub_mutex_unlock(&lifecycle_lock, RANK_LIFECYCLE);
}

/* The first @n entries by rank, registration order within a rank. */
static void sorted(const struct uslub_lifecycle **out, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct uslub_lifecycle *e = table[i];
		unsigned int j = i;
		for (; j > 0 && out[j - 1]->rank > e->rank; j--)
			out[j] = out[j - 1];
		out[j] = e;
	}
}

enum thread_cb { THREAD_CB_EXIT, THREAD_CB_FOLD, THREAD_CB_LOST };

/* One per-thread callback of every entry that has it, in rank order. */
static void run_thread_cb(enum thread_cb which, void *area)
{
	const struct uslub_lifecycle *order[LIFECYCLE_MAX];
	unsigned int n = __atomic_load_n(&nr_entries, __ATOMIC_ACQUIRE);
	sorted(order, n);
	for (unsigned int i = 0; i < n; i++) {
		const struct uslub_lifecycle *e = order[i];
		void (*fn)(void *area) = which == THREAD_CB_EXIT ? e->thread_exit :
					 which == THREAD_CB_FOLD ? e->thread_fold : e->thread_lost;
		if (fn)
			fn(area);
	}
}

void _uslub_lifecycle_thread_exit(void *area)
{
	run_thread_cb(THREAD_CB_EXIT, area);
}

void _uslub_lifecycle_thread_fold(void *area)
{
	run_thread_cb(THREAD_CB_FOLD, area);
}

void _uslub_lifecycle_thread_lost(void *area)
{
	run_thread_cb(THREAD_CB_LOST, area);
}

/*
 * fork: the entries of LIFECYCLE_UNLOCKED rank (prefork: holding only
 * lifecycle_lock; postfork: holding nothing), then lifecycle_lock itself
 * (rank RANK_LIFECYCLE, before every other lock), then every other entry
 * in rank order; the postfork handlers undo it in reverse.
 */
void _uslub_lifecycle_prefork(void)
{
	const struct uslub_lifecycle *order[LIFECYCLE_MAX];
	uslub_mutex_lock(&lifecycle_lock, RANK_LIFECYCLE);
	unsigned int n = nr_entries;
	fork_nr = n;
	sorted(order, n);
	for (unsigned int i = 0; i < n; i++)
		if (order[i]->prefork)
			order[i]->prefork();
}

void _uslub_lifecycle_postfork_parent(void)
{
	const struct uslub_lifecycle *order[LIFECYCLE_MAX];
	unsigned int n = fork_nr, i = n;
	sorted(order, n);
	for (; i > 0 && order[i - 1]->rank != LIFECYCLE_UNLOCKED; i--)
		if (order[i - 1]->postfork_parent)
			order[i - 1]->postfork_parent();
	uslub_mutex_unlock(&lifecycle_lock, RANK_LIFECYCLE);
	for (; i > 0; i--)
		if (order[i - 1]->postfork_parent)
			order[i - 1]->postfork_parent();
}

/* Bumped first thing in a fork child: a once running in an older
 * generation lost its thread (struct uslub_once). */
static unsigned int fork_gen;            /* atomic */

void _uslub_once_slow(struct uslub_once *o, void (*fn)(void))
{
	for (;;) {
		unsigned int s = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE);
		if (s == 1)
			return;
		unsigned int mine = ((__atomic_load_n(&fork_gen, __ATOMIC_RELAXED) & 0x3fffffffu) + 1) << 1;
		if (s == mine) {         /* another thread of this process runs it */
			syscall(SYS_futex, &o->state, FUTEX_WAIT_PRIVATE, s, NULL, NULL, 0);
			continue;
		}
		/* not run, or its runner was lost by a fork: run it here */
		if (!__atomic_compare_exchange_n(&o->state, &s, mine, false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		fn();
		__atomic_store_n(&o->state, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &o->state, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
		return;
	}
}

void _uslub_lifecycle_postfork_child(void)
{
	__atomic_store_n(&fork_gen, fork_gen + 1, __ATOMIC_RELAXED);
	const struct uslub_lifecycle *order[LIFECYCLE_MAX];
	unsigned int n = fork_nr, i = n;
	sorted(order, n);
	for (; i > 0 && order[i - 1]->rank != LIFECYCLE_UNLOCKED; i--)
		if (order[i - 1]->postfork_child)
			order[i - 1]->postfork_child();
	uslub_mutex_reset(&lifecycle_lock, RANK_LIFECYCLE);
	for (; i > 0; i--)
		if (order[i - 1]->postfork_child)
			order[i - 1]->postfork_child();
}

void _uslub_lifecycle_init(void)
{
	pthread_atfork(_uslub_lifecycle_prefork, _uslub_lifecycle_postfork_parent,
		       _uslub_lifecycle_postfork_child);
}
