/*
 * init.c — process init order: the one file that knows every layer
 * (src/README.md, "Layers"). _uslub_init() runs init_once_fn() once per
 * process, from the library constructor or from whichever layer's entry
 * point is first (init on first use: any layer may call _uslub_init()).
 *
 * Each layer's init registers its lifecycle entries (base/lifecycle.h);
 * the order below is the order of dependencies, the table's the lock
 * order (the contract, slub/slub.h).
 */
#include "slub/slub.h"
#include "base/lifecycle.h"
#include "ext/ext.h"
#include "sheaf/sheaf.h"
#include "cache/cache.h"
#include <pthread.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The page layer's background purge thread is never created while this
 * thread initializes uslub (pthread_create may call malloc). */
static bool purge_may_start(void)
{
	return !_uslub_tls.init_depth;
}

/* Each layer's init registers its lifecycle entries (base/lifecycle.h);
 * this order is the order of dependencies, the table's the lock order. */
static void init_once_fn(void)
{
	_uslub_tls.init_depth++;
	_uslub_options_init();
	_uslub_failslab_init();
	_uslub_ext_init();
	_uslub_page_init();
	_uslub_pcpu_init();          /* the mode: after the nodes are known */
	_uslub_thread_lifecycle_init();
	_uslub_slub_lifecycle_init();
	_uslub_sheaf_lifecycle_init();
	_uslub_debug_lifecycle_init();
	_uslub_nolock_lifecycle_init();
	_uslub_thread_key_init();
	_uslub_lifecycle_init();
	_uslub_slub_init();
	_uslub_purge_set_start_check(purge_may_start);
	_uslub_tls.init_depth--;
}

void _uslub_init(void)
{
	pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor)) static void uslub_constructor(void)
{
	_uslub_init();
	_uslub_publish_init();
}
