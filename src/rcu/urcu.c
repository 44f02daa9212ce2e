/*
 * urcu.c — libuslub-rcu: liburcu as uslub's grace-period provider, and
 * the kfree_rcu family of <uslub/rcu.h> (layer rcu, a library of its own
 * above the core: it calls only the core's public API).
 *
 * The flavour is liburcu's default one (`#include <urcu.h>`, -lurcu: the
 * memb flavour, sys_membarrier), the one the kernel's tools/testing
 * harness uses, so the program's rcu_read_lock() and the grace periods
 * uslub waits for are one RCU domain.
 *
 * What the core asks of a provider (include/uslub/types.h): call (the
 * core never calls it with a uslub lock held), synchronize, rcu_barrier.
 * liburcu says call_rcu() should be made from a registered thread; the
 * core may call it from any thread (a thread that never registered and
 * frees with kfree_rcu, one that exits, liburcu's own call_rcu worker,
 * which is registered), so a thread that is not registered is registered
 * around the call. The registration flag is liburcu's own per-thread
 * reader state (the layout of its public static header).
 *
 * fork: liburcu's call_rcu atfork helpers, registered after the core's
 * own handlers (uslub_gp_register() initializes the core first), so the
 * prepare handlers run liburcu's first (its workers pause, between our
 * callbacks, before uslub takes its locks) and the child ones run the
 * core's first (its flush of the threads the child lost only defers to
 * the provider; the next kfree_rcu or barrier hands it over once liburcu
 * has its worker back).
 */
#include <urcu.h>
#include <urcu/static/urcu-memb.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "uslub/rcu.h"

#define __public __attribute__((visibility("default")))

static void gp_call(struct uslub_rcu_head *head, void (*func)(struct uslub_rcu_head *head))
{
	/* liburcu's struct rcu_head and ours are two words: next, func */
	struct rcu_head *h = (struct rcu_head *)(void *)head;
	void (*f)(struct rcu_head *) = (void (*)(struct rcu_head *))(void (*)(void))func;
	if (URCU_TLS(urcu_memb_reader).registered) {
		call_rcu(h, f);
		return;
	}
	rcu_register_thread();
	call_rcu(h, f);
	rcu_unregister_thread();
}

static void gp_synchronize(void)
{
	synchronize_rcu();
}

static void gp_barrier(void)
{
	rcu_barrier();
}

static const struct uslub_gp_ops urcu_ops = {
	.name = "liburcu (memb)",
	.call = gp_call,
	.synchronize = gp_synchronize,
	.rcu_barrier = gp_barrier,
};

_Static_assert(sizeof(struct rcu_head) == sizeof(struct uslub_rcu_head),
	       "liburcu's rcu_head and uslub's have one layout");
_Static_assert(offsetof(struct rcu_head, func) == offsetof(struct uslub_rcu_head, func),
	       "liburcu's rcu_head and uslub's have one layout");

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_result;

static void init_once(void)
{
	if (uslub_gp_register(&urcu_ops)) {
		init_result = -1;
		return;
	}
	/* the default call_rcu worker now, with no uslub lock anywhere
	 * (creating it allocates and starts a thread) */
	(void)get_default_call_rcu_data();
	pthread_atfork(call_rcu_before_fork, call_rcu_after_fork_parent,
		       call_rcu_after_fork_child);
}

__public int uslub_rcu_init(void)
{
	pthread_once(&once, init_once);
	if (init_result)
		errno = EBUSY;
	return init_result;
}

__attribute__((constructor)) static void uslub_rcu_constructor(void)
{
	if (uslub_rcu_init())
		fprintf(stderr, "uslub: libuslub-rcu: another grace-period provider (%s) is "
			"registered; liburcu's is not\n", uslub_gp_provider());
}

__public void uslub_kvfree_call_rcu(void *head, void *ptr)
{
	uslub_gp_kvfree(ptr, (struct uslub_rcu_head *)head);
}

/* Any context: never calls liburcu (its call_rcu may register the
 * thread, create its worker, or reach glibc's __tls_get_addr: see
 * design.md §12); the core queues the head for a later drain. */
__public void uslub_kvfree_call_rcu_nolock(void *head, void *ptr)
{
	uslub_gp_kvfree_nolock(ptr, (struct uslub_rcu_head *)head);
}

__public void uslub_kvfree_rcu_mightsleep(void *ptr)
{
	uslub_gp_kvfree(ptr, NULL);
}

__public void uslub_kvfree_rcu_barrier(void)
{
	uslub_gp_barrier(NULL);
}

__public void uslub_kvfree_rcu_barrier_on_cache(struct kmem_cache *s)
{
	uslub_gp_barrier(s);
}
