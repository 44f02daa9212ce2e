/*
 * The lifecycle table: what each layer does at thread exit and around
 * fork(), in one ranked list instead of calls threaded through the layers.
 *
 * An entry has a rank and optional callbacks. Its rank is the rank of the
 * lock its fork callbacks take and release (enum uslub_lock_rank, the
 * contract's order at the top of src/slub/slub.h), or LIFECYCLE_UNLOCKED
 * for an entry that must run with no uslub lock held at all. One entry
 * per lock rank that fork takes; entries of one rank run in registration
 * order (reverse for the postfork callbacks).
 *
 *   prefork          in rank order (LIFECYCLE_UNLOCKED first, holding
 *                    only lifecycle_lock; then the outermost lock
 *                    first): each takes its locks with
 *                    uslub_mutex_lock(), or uslub_mutex_lock_nest() for a
 *                    rank with a lock per cache or per node
 *   postfork_parent  in reverse order: releases them (uslub_mutex_unlock*)
 *   postfork_child   in reverse order: resets them (uslub_mutex_reset*:
 *                    re-initialized, since threads that waited on them are
 *                    gone); when an entry's child callback runs, the locks
 *                    of every later rank are free again and those of its
 *                    own and earlier ranks are still held; the
 *                    LIFECYCLE_UNLOCKED entries run last, with none held
 *                    (they may allocate, create threads)
 *   thread_exit      in rank order, from the thread's key destructor, with
 *                    no uslub lock held; @area is the thread's cpu area
 *                    (struct uslub_thread). An entry of a lock rank takes
 *                    that lock itself.
 *   thread_fold      in rank order, with thread_lock held (the contract's
 *                    1), for a thread's area at its exit (after every
 *                    thread_exit of an earlier rank) and, in a fork child,
 *                    for each thread the child lost: per-thread state
 *                    folded in the same step as the flush of the area's
 *                    cpu slots, so that a report holding thread_lock never
 *                    sees it in two places. Takes no lock ranked at or
 *                    before thread_lock.
 *   thread_lost      in a fork child, in rank order, for each thread the
 *                    child lost, after its thread_fold and with
 *                    thread_lock held: what that thread's thread_exit
 *                    would have given back.
 *
 * There is no init callback: the init order (options, failslab, ext, page,
 * src/init.c's init_once_fn) is an order of dependencies, not
 * the lock order, so it stays explicit; each layer's init registers its
 * entries. The library's one pthread_atfork() registration is made by
 * _uslub_lifecycle_init().
 *
 * Registration never allocates: the table is a static array of
 * LIFECYCLE_MAX entries (a full table aborts with a report). An entry is
 * caller-owned static storage, registered once, never removed.
 * Registration takes lifecycle_lock (RANK_LIFECYCLE, the outermost lock),
 * which fork holds, so a layer registering while another thread forks
 * waits, and its lock is not taken behind fork's back; call it with no
 * uslub lock held. thread_exit reads the table without the lock
 * (entries are published with release order).
 */
#ifndef USLUB_LIFECYCLE_H
#define USLUB_LIFECYCLE_H

#include "base/base.h"

#define LIFECYCLE_UNLOCKED (-1)  /* rank of an entry run with no uslub lock held */
#define LIFECYCLE_MAX 32

struct uslub_lifecycle {
	const char *name;                 /* for reports */
	int rank;                         /* enum uslub_lock_rank, or LIFECYCLE_UNLOCKED */
	void (*thread_exit)(void *area);
	void (*thread_fold)(void *area);
	void (*thread_lost)(void *area);
	void (*prefork)(void);
	void (*postfork_parent)(void);
	void (*postfork_child)(void);
};

/* Add @e to the table (no uslub lock held; never allocates). */
__internal void _uslub_lifecycle_register(const struct uslub_lifecycle *e);
/* The library's pthread_atfork() registration (once, from _uslub_init()). */
__internal void _uslub_lifecycle_init(void);
/* The handlers (exported for the tests). */
__internal void _uslub_lifecycle_prefork(void);
__internal void _uslub_lifecycle_postfork_parent(void);
__internal void _uslub_lifecycle_postfork_child(void);
/* Every entry's thread_exit, in rank order (the key destructor). */
__internal void _uslub_lifecycle_thread_exit(void *area);
/* Every entry's thread_fold / thread_lost, in rank order (thread_lock
 * held: slub/thread.c). */
__internal void _uslub_lifecycle_thread_fold(void *area);
__internal void _uslub_lifecycle_thread_lost(void *area);

/*
 * A one-time initialization that a fork child finishes (pthread_once's
 * job, without relying on the C library for the fork case). A thread of
 * the parent caught inside @fn by fork() does not exist in the child, so
 * the child must not wait for it: _uslub_lifecycle_postfork_child() bumps
 * the process's fork generation first thing, and a once found running in
 * an older generation is taken over and run again. glibc's pthread_once
 * does the same; ThreadSanitizer's interceptor of it does not (a child of
 * a parent that forked while a worker created a bucket cache waited
 * forever: stress_fork under TSan). @fn must cope with a half-done run
 * before it (a cache created twice is one leaked cache, not a fault).
 *
 *   state: 0 not run; 1 done; ((gen % 2^30) + 1) * 2 running in
 *   generation gen. Waiters sleep on the word (futex) and are woken when
 *   it turns 1.
 */
struct uslub_once {
	unsigned int state;
};
#define USLUB_ONCE_INIT { 0 }

__internal void _uslub_once_slow(struct uslub_once *o, void (*fn)(void));

static inline void _uslub_once(struct uslub_once *o, void (*fn)(void))
{
	if (__builtin_expect(__atomic_load_n(&o->state, __ATOMIC_ACQUIRE) != 1, 0))
		_uslub_once_slow(o, fn);
}

#endif /* USLUB_LIFECYCLE_H */
