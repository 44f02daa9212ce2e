/*
 * Fault injection, the kernel's failslab (Documentation/fault-injection):
 * make allocations fail on purpose, for users' own tests and for ours.
 *
 *   USLUB_FAILSLAB=probability=<percent>,interval=<n>,times=<n|-1>,
 *                  space=<bytes>,seed=<n>,ignore-gfp-wait=<0|1>,
 *                  cache-filter=<0|1>,verbose=<0|1>
 *
 * or uslub_failslab_configure() with the same text. An allocation call
 * (one per bulk or prefill call) of a cache that may fail goes through
 * should_fail(), in the kernel's order: the cache filter (only caches
 * with the 'A' debug flag, from USLUB_DEBUG or uslub_cache_set_failslab,
 * when cache-filter=1), ignore-gfp-wait (only USLUB_GFP_NOWAIT/ATOMIC
 * calls), times left, space (the first <space> bytes never fail), then
 * every <interval>-th call that got this far, then with <probability>
 * percent. The random draws come from <seed> (deterministic for one
 * thread's sequence of calls). A failed call returns NULL (0 for bulk)
 * with ENOMEM, exactly as out of memory would, and takes nothing.
 *
 * Caches take the check only while fault injection is configured: it sets
 * FASTPATH_OFF_DEBUG in every user cache (internal caches, those created
 * with SLAB_NO_OBJ_EXT, never fail), so the fast paths pay nothing
 * otherwise.
 */
#include "cache/slub.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct failslab {
	long probability;             /* percent, 0..100                        */
	unsigned long interval;       /* every n-th eligible call (1: each)     */
	long times;                   /* failures left; -1 unlimited            */
	long space;                   /* bytes that pass before any failure     */
	uint64_t seed;
	int ignore_gfp_wait;
	int cache_filter;
	int verbose;
};

static pthread_mutex_t failslab_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf lock */
static struct failslab attr = { .interval = 1, .times = -1 };
static bool active;                   /* configured with probability > 0     */
static unsigned long calls;           /* eligible calls (interval counter)   */
static unsigned long draws;           /* random draws made                   */
static unsigned long injected;        /* failures injected (atomic read)     */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Parse @spec into @a; false (with a report) on a malformed one. */
static bool parse(const char *spec, struct failslab *a)
{
	struct failslab n = { .interval = 1, .times = -1 };
	const char *p = spec;
	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (!eq)
			goto bad;
		size_t klen = (size_t)(eq - p);
		char *end;
		long long v = strtoll(eq + 1, &end, 0);
		if (end != p + len)
			goto bad;
#define KEY(k) (klen == sizeof(k) - 1 && !strncmp(p, k, klen))
		if (KEY("probability") && v >= 0 && v <= 100)
			n.probability = (long)v;
		else if (KEY("interval") && v >= 1)
			n.interval = (unsigned long)v;
		else if (KEY("times") && v >= -1)
			n.times = (long)v;
		else if (KEY("space") && v >= 0)
			n.space = (long)v;
		else if (KEY("seed"))
			n.seed = (uint64_t)v;
		else if (KEY("ignore-gfp-wait") && (v == 0 || v == 1))
			n.ignore_gfp_wait = (int)v;
		else if (KEY("cache-filter") && (v == 0 || v == 1))
			n.cache_filter = (int)v;
		else if (KEY("verbose") && (v == 0 || v == 1))
			n.verbose = (int)v;
		else
			goto bad;
#undef KEY
		p = e ? e + 1 : NULL;
	}
	*a = n;
	return true;
bad:
	_uslub_report("uslub: failslab \"%s\": expected key=value pairs among probability "
		      "(0..100), interval (>= 1), times (>= -1), space, seed, ignore-gfp-wait, "
		      "cache-filter, verbose (0/1); not changed\n", spec);
	return false;
}

/* May @s fail at all? (Internal caches never.) */
static bool cache_eligible(const struct kmem_cache *s)
{
	return !(s->flags & SLAB_NO_OBJ_EXT);
}

/* Fault injection on or off for every user cache (slab_mutex held). */
static void arm_caches_locked(bool on)
{
	struct list_head *pos;
	for (pos = _uslub_slab_caches.next; pos != &_uslub_slab_caches; pos = pos->next) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		if (!cache_eligible(s))
			continue;
		if (on)
			__atomic_fetch_or(&s->fastpath_off, FASTPATH_OFF_DEBUG, __ATOMIC_SEQ_CST);
		else
			__atomic_fetch_and(&s->fastpath_off, ~FASTPATH_OFF_DEBUG, __ATOMIC_SEQ_CST);
	}
}

static void apply(const struct failslab *a)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	pthread_mutex_lock(&failslab_lock);
	attr = *a;
	calls = 0;
	draws = 0;
	bool on = a->probability > 0;
	WRITE_ONCE(active, on);
	pthread_mutex_unlock(&failslab_lock);
	arm_caches_locked(on);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

/* At init, before any cache exists: USLUB_FAILSLAB. */
void _uslub_failslab_init(void)
{
	const char *spec = _uslub_option_str(USLUB_OPT_FAILSLAB);
	struct failslab a;
	if (*spec && parse(spec, &a)) {
		attr = a;
		active = a.probability > 0;
	}
}

/* A new cache: armed if fault injection is on (slab_mutex not held). */
unsigned int _uslub_failslab_cache_fastpath_off(const struct kmem_cache *s)
{
	return READ_ONCE(active) && cache_eligible(s) ? FASTPATH_OFF_DEBUG : 0;
}

bool _uslub_should_failslab(struct kmem_cache *s, uslub_gfp_t gfp, size_t size)
{
	if (!READ_ONCE(active) || !cache_eligible(s))
		return false;
	bool fail = false;
	pthread_mutex_lock(&failslab_lock);
	if (attr.cache_filter && !(READ_ONCE(s->debug) & USLUB_DBG_A))
		goto out;
	if (attr.ignore_gfp_wait && !(gfp & USLUB_GFP_NOWAIT))
		goto out;
	if (attr.times == 0)
		goto out;
	if (attr.space > (long)size) {
		attr.space -= (long)size;
		goto out;
	}
	if (attr.interval > 1 && ++calls % attr.interval)
		goto out;
	if ((long)(mix64(attr.seed + ++draws * 0x9e3779b97f4a7c15ull) % 100) >= attr.probability)
		goto out;
	if (attr.times > 0)
		attr.times--;
	fail = true;
	ATOMIC_ADD(injected, 1);
out:
	bool verbose = attr.verbose;
	pthread_mutex_unlock(&failslab_lock);
	if (fail && verbose)
		_uslub_report("uslub: failslab: failing an allocation of %zu bytes from %s\n",
			      size, s->name);
	return fail;
}

__public int uslub_failslab_configure(const char *spec)
{
	_uslub_init();
	struct failslab a;
	if (!spec || !parse(spec, &a)) {
		errno = EINVAL;
		return -1;
	}
	apply(&a);
	return 0;
}

__public unsigned long uslub_failslab_injected(void)
{
	return READ_ONCE(injected);
}

__public void uslub_cache_set_failslab(uslub_cache_t *s, int on)
{
	if (!s)
		return;
	if (on)
		__atomic_fetch_or(&s->debug, USLUB_DBG_A, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&s->debug, ~USLUB_DBG_A, __ATOMIC_RELAXED);
}

/* fork: taken after slab_mutex (slub.c's handlers) */
void _uslub_failslab_prefork(void)
{
	pthread_mutex_lock(&failslab_lock);
}

void _uslub_failslab_postfork_parent(void)
{
	pthread_mutex_unlock(&failslab_lock);
}

void _uslub_failslab_postfork_child(void)
{
	pthread_mutex_init(&failslab_lock, NULL);
}
