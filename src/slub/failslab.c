/*
 * Fault injection, the kernel's failslab (Documentation/fault-injection):
 * make allocations fail on purpose, for users' own tests and for ours.
 *
 *   USLUB_FAILSLAB=probability=<percent>,interval=<n>,times=<n|-1>,
 *                  space=<bytes>,seed=<n>,ignore-gfp-wait=<0|1>,
 *                  cache-filter=<0|1>,verbose=<0|1>
 *
 * or uslub_failslab_configure() with the same text. Values are decimal
 * digits only (times also takes -1), within each key's range; a spec with
 * an empty field, an unknown key, an empty or malformed value or one out
 * of range is rejected as a whole, with one message saying which field and
 * why, and changes nothing (from the environment: fault injection stays
 * off). A key given twice: the last wins. An allocation call
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
 *
 * A cache may also carry its own hook (uslub_cache_set_fail_hook(): the
 * kernel harness's non-kernel budget, src/ktest/), asked first, outside
 * failslab_lock; such a cache keeps FASTPATH_OFF_DEBUG while the hook is
 * set, whatever the global policy is.
 */
#include "slub/slub.h"
#include "slub/failslab.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A leaf, last in the lock order (RANK_FAILSLAB): taken under slab_mutex
 * (apply) and from any allocation, nothing taken or reported under it. */
static pthread_mutex_t failslab_lock = PTHREAD_MUTEX_INITIALIZER;
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

/* The keys, their ranges, where they go. */
enum fs_key { FS_PROBABILITY, FS_INTERVAL, FS_TIMES, FS_SPACE, FS_SEED, FS_IGNORE_GFP_WAIT,
	      FS_CACHE_FILTER, FS_VERBOSE, FS_NR };
static const struct {
	const char *key;
	uint64_t min, max;            /* min 0 or 1; times alone also takes -1 */
} fs_keys[FS_NR] = {
	[FS_PROBABILITY]     = { "probability", 0, 100 },
	[FS_INTERVAL]        = { "interval", 1, LONG_MAX },
	[FS_TIMES]           = { "times", 0, LONG_MAX },
	[FS_SPACE]           = { "space", 0, LONG_MAX },
	[FS_SEED]            = { "seed", 0, UINT64_MAX },
	[FS_IGNORE_GFP_WAIT] = { "ignore-gfp-wait", 0, 1 },
	[FS_CACHE_FILTER]    = { "cache-filter", 0, 1 },
	[FS_VERBOSE]         = { "verbose", 0, 1 },
};

/* why = "<key>: <what>" (the key as written, at most 32 bytes of it) */
static bool fs_bad(char *why, size_t whylen, const char *key, size_t klen, const char *what)
{
	char k[40];
	size_t n = MIN(klen, sizeof(k) - 8);
	memcpy(k, key, n);
	k[n] = 0;
	if (n < klen)
		_uslub_str_append(k, sizeof(k), "...");
	_uslub_str_append(why, whylen, "\"");
	_uslub_str_append(why, whylen, k);
	_uslub_str_append(why, whylen, "\": ");
	_uslub_str_append(why, whylen, what);
	return false;
}

bool _uslub_failslab_parse(const char *spec, struct failslab *a, char *why, size_t whylen)
{
	struct failslab n = { .interval = 1, .times = -1 };
	if (whylen)
		why[0] = 0;
	if (!spec) {
		_uslub_str_append(why, whylen, "no spec");
		return false;
	}
	for (const char *p = spec; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (!len) {
			_uslub_str_append(why, whylen, "empty field (\",,\" or a ',' at either end)");
			return false;
		}
		const char *eq = memchr(p, '=', len);
		if (!eq)
			return fs_bad(why, whylen, p, len, "not key=value");
		size_t klen = (size_t)(eq - p);
		int k = 0;
		while (k < FS_NR && (strlen(fs_keys[k].key) != klen ||
				     strncmp(p, fs_keys[k].key, klen)))
			k++;
		if (k == FS_NR)
			return fs_bad(why, whylen, p, klen,
				      "unknown key (probability, interval, times, space, seed, "
				      "ignore-gfp-wait, cache-filter, verbose)");
		const char *val = eq + 1;
		size_t vlen = len - klen - 1;
		uint64_t v = 0;
		int err;
		if (k == FS_TIMES && vlen == 2 && !strncmp(val, "-1", 2))
			err = 0, v = UINT64_MAX;     /* unlimited */
		else
			err = _uslub_parse_u64(val, vlen, fs_keys[k].max, &v);
		if (!err && v < fs_keys[k].min)     /* interval=0 */
			err = USLUB_NUM_RANGE;
		if (err) {
			char r[64] = "";
			if (err == USLUB_NUM_EMPTY) {
				_uslub_str_append(r, sizeof(r), "empty value");
			} else if (err == USLUB_NUM_JUNK) {
				_uslub_str_append(r, sizeof(r), "not a decimal number");
				if (k == FS_TIMES)
					_uslub_str_append(r, sizeof(r), " or -1");
			} else {
				_uslub_str_append(r, sizeof(r), "out of range (");
				_uslub_str_append(r, sizeof(r), k == FS_TIMES ? "-1" : "");
				if (k != FS_TIMES)
					_uslub_str_append_u64(r, sizeof(r), fs_keys[k].min);
				_uslub_str_append(r, sizeof(r), "..");
				_uslub_str_append_u64(r, sizeof(r), fs_keys[k].max);
				_uslub_str_append(r, sizeof(r), ")");
			}
			return fs_bad(why, whylen, p, klen, r);
		}
		switch (k) {
		case FS_PROBABILITY: n.probability = (long)v; break;
		case FS_INTERVAL: n.interval = (unsigned long)v; break;
		case FS_TIMES: n.times = v == UINT64_MAX ? -1 : (long)v; break;
		case FS_SPACE: n.space = (long)v; break;
		case FS_SEED: n.seed = v; break;
		case FS_IGNORE_GFP_WAIT: n.ignore_gfp_wait = (int)v; break;
		case FS_CACHE_FILTER: n.cache_filter = (int)v; break;
		case FS_VERBOSE: n.verbose = (int)v; break;
		}
		if (!e)
			break;
		p = e + 1;
		if (!*p) {
			_uslub_str_append(why, whylen, "empty field (\",,\" or a ',' at either end)");
			return false;
		}
	}
	*a = n;
	return true;
}

/* May @s fail at all? (Internal caches never.) */
static bool cache_eligible(const struct kmem_cache *s)
{
	return !(s->flags & SLAB_NO_OBJ_EXT);
}

/* Fault injection on or off for every user cache (slab_mutex held). */
static void arm_caches_locked(bool on)
{
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list) {
		if (!cache_eligible(s))
			continue;
		if (on || READ_ONCE(s->fail_hook))
			fastpath_off_set(s, FASTPATH_OFF_DEBUG);
		else
			fastpath_off_clear(s, FASTPATH_OFF_DEBUG);
	}
}

static void apply(const struct failslab *a)
{
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	uslub_mutex_lock(&failslab_lock, RANK_FAILSLAB);
	attr = *a;
	calls = 0;
	draws = 0;
	bool on = a->probability > 0;
	WRITE_ONCE(active, on);
	uslub_mutex_unlock(&failslab_lock, RANK_FAILSLAB);
	arm_caches_locked(on);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

/* At init, before any cache exists: USLUB_FAILSLAB. */
static const struct uslub_lifecycle failslab_lifecycle;

void _uslub_failslab_init(void)
{
	const char *spec = _uslub_option_str(USLUB_OPT_FAILSLAB);
	struct failslab a;
	char why[160];
	_uslub_lifecycle_register(&failslab_lifecycle);
	if (!*spec)
		return;
	if (!_uslub_failslab_parse(spec, &a, why, sizeof(why))) {
		_uslub_report("uslub: ignoring USLUB_FAILSLAB=\"%s\": %s; fault injection stays off\n",
			      spec, why);
		return;
	}
	attr = a;
	active = a.probability > 0;
}

/* A new cache: armed if fault injection is on (slab_mutex not held). */
unsigned int _uslub_failslab_cache_fastpath_off(const struct kmem_cache *s)
{
	return READ_ONCE(active) && cache_eligible(s) ? FASTPATH_OFF_DEBUG : 0;
}

bool _uslub_should_failslab(struct kmem_cache *s, uslub_gfp_t gfp, size_t n)
{
	uslub_fail_hook_fn hook = __atomic_load_n(&s->fail_hook, __ATOMIC_ACQUIRE);
	if (hook && hook(s, gfp, n, READ_ONCE(s->fail_hook_arg))) {
		ATOMIC_ADD(injected, 1);
		return true;
	}
	if (!READ_ONCE(active) || !cache_eligible(s))
		return false;
	size_t size = n * s->object_size;
	bool fail = false, verbose;
	uslub_mutex_lock(&failslab_lock, RANK_FAILSLAB);
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
	verbose = attr.verbose;
	uslub_mutex_unlock(&failslab_lock, RANK_FAILSLAB);
	if (fail && verbose)
		_uslub_report("uslub: failslab: failing an allocation of %zu bytes from %s\n",
			      size, s->name);
	return fail;
}

__public int uslub_failslab_configure(const char *spec)
{
	_uslub_init();
	struct failslab a;
	char why[160];
	if (!_uslub_failslab_parse(spec, &a, why, sizeof(why))) {
		if (spec)
			_uslub_report("uslub: failslab \"%s\": %s; not changed\n", spec, why);
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

__public int uslub_cache_set_fail_hook(uslub_cache_t *s, uslub_fail_hook_fn fn, void *arg)
{
	if (cache_bad(s, __func__))
		return -1;
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	WRITE_ONCE(s->fail_hook_arg, fn ? arg : NULL);
	__atomic_store_n(&s->fail_hook, fn, __ATOMIC_RELEASE);
	if (fn || (READ_ONCE(active) && cache_eligible(s)))
		fastpath_off_set(s, FASTPATH_OFF_DEBUG);
	else
		fastpath_off_clear(s, FASTPATH_OFF_DEBUG);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	return 0;
}

__public void *uslub_cache_fail_hook_arg(const uslub_cache_t *s)
{
	return s && __atomic_load_n(&s->fail_hook, __ATOMIC_ACQUIRE) ? READ_ONCE(s->fail_hook_arg)
								     : NULL;
}

/* fork: failslab_lock, the last rank */
static void failslab_prefork(void)
{
	uslub_mutex_lock(&failslab_lock, RANK_FAILSLAB);
}

static void failslab_postfork_parent(void)
{
	uslub_mutex_unlock(&failslab_lock, RANK_FAILSLAB);
}

static void failslab_postfork_child(void)
{
	uslub_mutex_reset(&failslab_lock, RANK_FAILSLAB);
}

static const struct uslub_lifecycle failslab_lifecycle = {
	.name = "failslab_lock",
	.rank = RANK_FAILSLAB,
	.prefork = failslab_prefork,
	.postfork_parent = failslab_postfork_parent,
	.postfork_child = failslab_postfork_child,
};
