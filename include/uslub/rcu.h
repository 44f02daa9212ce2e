/*
 * <uslub/rcu.h> — RCU-deferred freeing on uslub: the kernel's kfree_rcu(),
 * kvfree_rcu(), kfree_rcu_nolock(), kfree_rcu_mightsleep(),
 * kvfree_rcu_mightsleep(), kvfree_rcu_barrier() and
 * kvfree_rcu_barrier_on_cache(), and the
 * grace periods of SLAB_TYPESAFE_BY_RCU caches. <uslub/slab.h> includes
 * it, so kernel code calls kfree_rcu() as it does with <linux/slab.h>.
 *
 * Linking: these live in libuslub-rcu (built when liburcu is installed:
 * Debian's liburcu-dev), not in the core. Link
 *     -luslub-rcu -luslub -lurcu        (or pkg-config uslub-rcu)
 * A program that calls kfree_rcu() and does not link libuslub-rcu does not
 * link ("undefined reference to uslub_kvfree_call_rcu"): uslub never frees
 * such an object without a grace period. libuslub-rcu registers liburcu
 * with the core from its constructor; a program that uses only
 * SLAB_TYPESAFE_BY_RCU (no symbol of libuslub-rcu) links it with
 * -Wl,--no-as-needed or calls uslub_rcu_init() first. Without it, creating
 * a SLAB_TYPESAFE_BY_RCU cache fails: "needs libuslub-rcu (liburcu)" on
 * stderr, NULL with errno EINVAL.
 *
 * The RCU flavour: liburcu's default, the memb flavour (`#include <urcu.h>`
 * and -lurcu: the same as the kernel's tools/testing harness). The
 * program's readers use that header's rcu_read_lock()/rcu_read_unlock(),
 * and uslub's grace periods are the ones its synchronize_rcu() waits for:
 * one RCU domain. (A program that includes <urcu-qsbr.h>, <urcu-bp.h>,
 * <urcu/urcu-mb.h> or <urcu/urcu-signal.h> instead uses another domain,
 * which uslub's grace periods do not wait for: not supported.)
 *
 * Threads: as liburcu requires, every thread that calls rcu_read_lock()
 * registers first with rcu_register_thread() and unregisters with
 * rcu_unregister_thread() before it exits. A thread that never registered
 *   - may call kfree_rcu() and the barriers: uslub registers it around the
 *     call_rcu() it makes (liburcu asks call_rcu()'s callers to be
 *     registered), and unregisters it after;
 *   - must not read RCU-protected objects: its rcu_read_lock() is not
 *     seen by grace periods (liburcu's rule), so what it reads may be freed
 *     (kfree_rcu) or reused by another cache (TYPESAFE_BY_RCU) under it.
 *
 * Semantics (the kernel's):
 *   kfree_rcu(ptr, field), kvfree_rcu(ptr, field): free ptr after a grace
 *     period; field is a struct rcu_head (two words) in *ptr at an offset
 *     below 4096. Never blocks; callable inside rcu_read_lock(). ptr may be
 *     NULL. Objects of caches with per-CPU sheaves (every cache by default)
 *     go to the thread's rcu_free sheaf, and a full sheaf takes one
 *     call_rcu() (so an object waits for the grace period of the last one
 *     its sheaf takes); others (slub_debug, accounting or profiling hooks,
 *     the 6.x cpu-slab model, page runs) get one call_rcu() each.
 *   kfree_rcu_mightsleep(ptr), kvfree_rcu_mightsleep(ptr): the same without
 *     an rcu_head; where the object cannot go to an rcu_free sheaf it
 *     waits for a grace period (synchronize_rcu()) and frees it: never
 *     inside rcu_read_lock().
 *   kvfree_rcu_barrier(): every kfree_rcu() made before it (any thread) has
 *     freed its object when it returns (partly filled rcu_free sheaves are
 *     handed over first). kvfree_rcu_barrier_on_cache(s): the same for the
 *     objects of s. kmem_cache_destroy() of a cache given to kfree_rcu, or
 *     of a TYPESAFE_BY_RCU cache, waits like this by itself. Never call
 *     them inside rcu_read_lock() or from an RCU callback.
 *   kfree_rcu_nolock(ptr, field) (7.3): kfree_rcu() from any context: a
 *     signal handler (also one that interrupted this thread inside uslub
 *     or inside liburcu), re-entrantly, with any lock held. Only the
 *     two-argument form (a headless one would allocate). It never calls
 *     liburcu, allocates, blocks or changes errno: the rcu_head is pushed
 *     on a lock-free list, which an ordinary context hands to call_rcu()
 *     (one each, no rcu_free sheaf): the next kfree_rcu(), the barriers,
 *     kmem_cache_shrink() and destroy, a thread's exit, or the end of one
 *     of uslub's callbacks in liburcu's worker. kvfree_rcu_barrier()
 *     waits for these objects too. For what kmalloc_nolock() or any
 *     kmalloc()/kmem_cache_alloc() returned; ptr may be NULL.
 *   A partly filled rcu_free sheaf is handed to call_rcu(), never freed
 *   early, when its thread exits, on kmem_cache_shrink() and destroy, and
 *   in a fork() child for the threads the child does not have.
 *
 * Callbacks run in liburcu's call_rcu worker thread.
 */
#ifndef USLUB_RCU_H
#define USLUB_RCU_H

#include "types.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libuslub-rcu's entries (what the macros below call). */
void uslub_kvfree_call_rcu(void *head, void *ptr);
void uslub_kvfree_call_rcu_nolock(void *head, void *ptr);
void uslub_kvfree_rcu_mightsleep(void *ptr);
void uslub_kvfree_rcu_barrier(void);
void uslub_kvfree_rcu_barrier_on_cache(struct kmem_cache *s);
/* Register liburcu with the core (the library constructor does it):
 * 0, or -1 (errno EBUSY) when another provider is registered. */
int uslub_rcu_init(void);

#ifdef __cplusplus
}
#define USLUB_RCU_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define USLUB_RCU_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* kfree_rcu(ptr, field) with the kernel's checks: the field is two words
 * (a struct rcu_head) at an offset below 4096. */
#define uslub_kvfree_rcu_2(ptr, rhf)                                           \
	do {                                                                   \
		__typeof__(ptr) uslub_rcu_p_ = (ptr);                          \
		USLUB_RCU_STATIC_ASSERT(offsetof(__typeof__(*(ptr)), rhf) < 4096, \
					"kfree_rcu: the rcu_head is 4 KiB or more into the object"); \
		USLUB_RCU_STATIC_ASSERT(sizeof(uslub_rcu_p_->rhf) == 2 * sizeof(void *), \
					"kfree_rcu: the field is not a struct rcu_head"); \
		if (uslub_rcu_p_)                                              \
			uslub_kvfree_call_rcu((void *)&uslub_rcu_p_->rhf,      \
					      (void *)uslub_rcu_p_);           \
	} while (0)

/* kfree_rcu_nolock(ptr, rhf): the same checks, the any-context entry. */
#define uslub_kfree_rcu_nolock_2(ptr, rhf)                                     \
	do {                                                                   \
		__typeof__(ptr) uslub_rcu_p_ = (ptr);                          \
		USLUB_RCU_STATIC_ASSERT(offsetof(__typeof__(*(ptr)), rhf) < 4096, \
					"kfree_rcu_nolock: the rcu_head is 4 KiB or more into the object"); \
		USLUB_RCU_STATIC_ASSERT(sizeof(uslub_rcu_p_->rhf) == 2 * sizeof(void *), \
					"kfree_rcu_nolock: the field is not a struct rcu_head"); \
		if (uslub_rcu_p_)                                              \
			uslub_kvfree_call_rcu_nolock((void *)&uslub_rcu_p_->rhf, \
						     (void *)uslub_rcu_p_);    \
	} while (0)

#ifndef kfree_rcu
#define kfree_rcu(ptr, rhf) uslub_kvfree_rcu_2(ptr, rhf)
#endif
#ifndef kfree_rcu_nolock
#define kfree_rcu_nolock(ptr, rhf) uslub_kfree_rcu_nolock_2(ptr, rhf)
#endif
#ifndef kvfree_rcu
#define kvfree_rcu(ptr, rhf) uslub_kvfree_rcu_2(ptr, rhf)
#endif
#ifndef kfree_rcu_mightsleep
#define kfree_rcu_mightsleep(ptr) uslub_kvfree_rcu_mightsleep((void *)(ptr))
#endif
#ifndef kvfree_rcu_mightsleep
#define kvfree_rcu_mightsleep(ptr) uslub_kvfree_rcu_mightsleep((void *)(ptr))
#endif
#ifndef kvfree_rcu_barrier
#define kvfree_rcu_barrier() uslub_kvfree_rcu_barrier()
#endif
#ifndef kvfree_rcu_barrier_on_cache
#define kvfree_rcu_barrier_on_cache(s) uslub_kvfree_rcu_barrier_on_cache(s)
#endif

#endif /* USLUB_RCU_H */
