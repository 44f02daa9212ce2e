/*
 * sample.c — sampled allocation profiling (USLUB_PROFILING=sample[:BYTES]),
 * as tcmalloc and jemalloc do it: no cache has the profiling hook; each
 * cpu slot of each cache keeps two countdowns (kmem_cache_cpu: the inline
 * sheaf pop's, folded into its ALLOC_PCS counter, and sample_left for
 * every other allocation), and an allocation whose countdown turns
 * negative is sampled: the call site's tag goes in its extension (an
 * on-demand array for a cache without extensions) and the tag's counters
 * get the estimate the object stands for. Each countdown is drawn as a
 * geometric number of objects with p = 1 - exp(-S / interval) (S the
 * cache's stride), so every object is sampled with probability p,
 * independently (a Poisson process over the slot's allocated bytes), and
 * weighing a sample by 1/p objects and S/p bytes makes the per-site sums
 * unbiased estimates.
 *
 * The free side costs the fast paths nothing: a slab holding a live
 * sampled object has PG_slab_page cleared on every page descriptor, so
 * free()/kfree() (free_object()) and kmem_cache_free (slab_free()) miss
 * to their slow paths, which untag (_uslub_sample_free()); the last
 * sampled object's free sets the bit again. The bit flips and the tag
 * stores are serialized by the slab's node list_lock, which already
 * serializes the other writers of the head page's flags word
 * (PG_workingset); the tag counters are updated outside it.
 */
#include "cache/internal.h"
#include <time.h>

/* A tag for allocations that came without one (the _noprof entries, the
 * malloc front end's hits): registered on first use. */
static struct uslub_alloc_tag untagged = { "(untagged)", "(untagged)", 0, 0, 0, 0, 0 };

/* ---- arithmetic without libm ------------------------------------------ */

/* e^x for x <= 0 (x >= -745): x = k ln2 + r, |r| <= ln2 / 2, Taylor. */
static double sample_exp(double x)
{
	if (x < -700.0)
		return 0.0;
	const double ln2 = 0.6931471805599453094;
	long k = (long)(x / ln2 - 0.5);          /* round to nearest (x <= 0) */
	double r = x - (double)k * ln2;
	double term = 1.0, sum = 1.0;
	for (int i = 1; i < 20; i++) {
		term *= r / i;
		sum += term;
	}
	/* times 2^k: through the exponent bits (k >= -1010 here) */
	union { double d; uint64_t u; } v = { .d = sum };
	long e = (long)((v.u >> 52) & 0x7ff) + k;
	if (e <= 0)
		return 0.0;
	v.u = (v.u & ~(0x7ffull << 52)) | ((uint64_t)e << 52);
	return v.d;
}

/* ln(x) for x > 0 (normal): x = m 2^e, m in [1, 2), ln m = 2 atanh(z). */
static double sample_log(double x)
{
	union { double d; uint64_t u; } v = { .d = x };
	long e = (long)((v.u >> 52) & 0x7ff) - 1023;
	v.u = (v.u & ~(0x7ffull << 52)) | (1023ull << 52);
	double m = v.d;
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	double z = (m - 1.0) / (m + 1.0), z2 = z * z, term = z, sum = 0.0;
	for (int i = 1; i < 40; i += 2) {
		sum += term / i;
		term *= z2;
	}
	return 2.0 * sum + (double)e * 0.6931471805599453094;
}

/* ---- the per-thread generator ----------------------------------------- */

static unsigned long threads_seeded;       /* atomic: the test seed's stream index */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* xorshift64*, seeded per thread: from the thread area's address and the
 * clock, or (USLUB_PROFILING_SEED, tests) from the seed and the order in
 * which threads first sample. */
static uint64_t sample_rand(void)
{
	uint64_t x = _uslub_tls.sample_rnd;
	if (unlikely(!x)) {
		long seed = _uslub_option(USLUB_OPT_PROFILING_SEED);
		uint64_t s;
		if (seed) {
			s = (uint64_t)seed * 0x100000001b3ull +
			    __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			s = (uint64_t)(uintptr_t)&_uslub_tls ^ (uint64_t)ts.tv_nsec ^
			    ((uint64_t)ts.tv_sec << 32);
		}
		x = splitmix(&s);
		if (!x)
			x = 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	_uslub_tls.sample_rnd = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- countdowns and weights ------------------------------------------- */

/* Objects of stride @size left unsampled before the next sample: a
 * geometric draw, floor(ln U / ln(1 - p)) with ln(1 - p) = -size / I. */
static uint64_t draw(size_t size)
{
	double rate = (double)size / (double)_uslub_sample_interval;
	if (rate >= 20.0)                       /* p == 1 in doubles */
		return 0;
	/* U in (0, 1]: 53 random bits, never 0 */
	double u = ((double)(sample_rand() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double g = -sample_log(u) / rate;
	if (g >= 4e18)
		return (uint64_t)4e18;
	return (uint64_t)g;
}

static uint64_t weight_salt;             /* atomic; set once, never 0 */

/* The process's salt for the weights' rounding: from USLUB_PROFILING_SEED
 * (tests) or the clock. */
static uint64_t get_salt(void)
{
	uint64_t s = __atomic_load_n(&weight_salt, __ATOMIC_RELAXED);
	if (likely(s))
		return s;
	long seed = _uslub_option(USLUB_OPT_PROFILING_SEED);
	uint64_t x;
	if (seed) {
		x = (uint64_t)seed ^ 0x5a5a5a5a5a5a5a5aull;
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)&s;
	}
	uint64_t v = splitmix(&x) | 1, zero = 0;
	__atomic_compare_exchange_n(&weight_salt, &zero, v, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	return __atomic_load_n(&weight_salt, __ATOMIC_RELAXED);
}

/* @w rounded up with probability frac(w), the coin a function of @h
 * (uniform bits): floor(w) or floor(w) + 1, w on average. */
static int64_t round_by(double w, uint64_t h)
{
	int64_t f = (int64_t)w;
	double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
	return f + (u < w - (double)f);
}

/* What sampled object @obj of stride @size stands for: 1/p objects and
 * size/p bytes, p = 1 - exp(-size / I), each rounded to an integer, up or
 * down at random (so the rounding adds no bias: 1/p = 1.58 for an object
 * as large as the interval) with the coin a hash of the object's address
 * and the process's salt: the same at the sample and at its free. */
static void weights(size_t size, const void *obj, int64_t *bytes, int64_t *calls)
{
	double rate = (double)size / (double)_uslub_sample_interval;
	double p = rate >= 20.0 ? 1.0 : 1.0 - sample_exp(-rate);
	if (rate < 1e-6)
		p = rate * (1.0 - rate / 2.0);  /* no cancellation */
	uint64_t x = (uint64_t)(uintptr_t)obj ^ get_salt();
	uint64_t h1 = splitmix(&x), h2 = splitmix(&x);
	*bytes = round_by((double)size / p, h1);
	*calls = round_by(1.0 / p, h2);
}

/* ---- kmalloc's page runs and mappings ---------------------------------- */

/*
 * A page run or mapping is sampled when the thread's countdown of large
 * blocks' bytes runs out in it (sample_large(), internal.h: a
 * subtraction). The countdown is drawn as an exponential number of bytes,
 * mean L (large_interval(), below): a Poisson process over the thread's
 * large bytes, so a block of len bytes holds a point with p = 1 -
 * exp(-len / L), independently of the others; the points after the first
 * in a block are dropped, and by memorylessness the next countdown is
 * drawn afresh from the block's end. The draw is taken on every sample
 * (nearly every block of 32 MiB and more at the default L), so it is
 * cheap: a table-driven logarithm; and the weights (len / p, 1 / p) are
 * cached per length.
 */
__thread int64_t _uslub_large_left __tls_ie;    /* bytes to the next sampled block */

/* The mean bytes between samples of large blocks: USLUB_LARGE_RATE_SHIFT
 * (slub.h) doublings of the interval (8 MiB at the default 512 KiB; 16 times the
 * weight a sample of the same block would have at the interval). A walk
 * costs ~250 ns, and at the interval itself it was +7 to +10% on a loop
 * that writes once per page of 1 to 16 MB blocks (every 4 MB block
 * walked); at 8 MiB the walks cost at most one per 8 MiB of large blocks
 * on average, against the 2048 pages of 8 MiB (~13 us to write each once):
 * about 2%. */
static inline size_t large_interval(void)
{
	return _uslub_sample_interval << USLUB_LARGE_RATE_SHIFT;
}

/* ln(1 + i/128) and 128 / (128 + i), filled once */
static double ln_c[128], inv_c[128];
static struct uslub_once ln_once = USLUB_ONCE_INIT;

static void ln_fill(void)
{
	for (int i = 0; i < 128; i++) {
		double c = 1.0 + i / 128.0;
		ln_c[i] = sample_log(c);
		inv_c[i] = 1.0 / c;
	}
}

/* ln(x) for x in (0, 1]: x = m 2^e, m in [1, 2) = c (1 + r), c = 1 + i/128
 * from m's top bits, 0 <= r < 1/128, ln(1 + r) to r^5 (error < 1e-13). */
static double fast_log(double x)
{
	_uslub_once(&ln_once, ln_fill);
	union { double d; uint64_t u; } v = { .d = x };
	long e = (long)((v.u >> 52) & 0x7ff) - 1023;
	unsigned int i = (unsigned int)(v.u >> 45) & 127;
	v.u = (v.u & ~(0x7ffull << 52)) | (1023ull << 52);
	double r = (v.d - (1.0 + i / 128.0)) * inv_c[i];
	double poly = r * (1.0 + r * (-0.5 + r * (1.0 / 3 + r * (-0.25 + r * 0.2))));
	return (double)e * 0.6931471805599453094 + ln_c[i] + poly;
}

/* bytes of large blocks to the next sample: exponential, mean L (>= 1) */
static int64_t draw_bytes(void)
{
	double u = ((double)(sample_rand() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double g = -fast_log(u) * (double)large_interval();
	return g >= 4e18 ? (int64_t)4e18 : (int64_t)g + 1;
}

/* The countdown ran out (or was never drawn: it was 0 before this block,
 * which a drawn countdown never is). */
bool _uslub_sample_large_slow(size_t len)
{
	int64_t left = _uslub_large_left;
	if (left + (int64_t)len == 0) {
		left = draw_bytes() - (int64_t)len;
		if (left > 0) {                 /* the thread's first large block */
			_uslub_large_left = left;
			return false;
		}
	}
	_uslub_large_left = draw_bytes();       /* memoryless: the rest is dropped */
	return true;
}

/* The weights of a sampled large block by its length: len / p and 1 / p
 * as doubles, computed once per length (a direct-mapped table, an entry
 * claimed once and never replaced: a length that collides is computed
 * every time, to the same values). */
#define LARGE_WEIGHTS 64
static struct {
	uint64_t len;                   /* 0 free; claimed: len | 1 busy, len | 2 ready */
	double bytes, calls;
} large_weights[LARGE_WEIGHTS];

static void large_weights_compute(size_t len, double *bytes, double *calls)
{
	double rate = (double)len / (double)large_interval();
	double p = rate >= 20.0 ? 1.0 : 1.0 - sample_exp(-rate);
	if (rate < 1e-6)
		p = rate * (1.0 - rate / 2.0);  /* no cancellation */
	*bytes = (double)len / p;
	*calls = 1.0 / p;
}

void _uslub_sample_large_weights(size_t len, uintptr_t addr, int64_t *bytes, int64_t *calls)
{
	double wb, wc;
	uint64_t key = (uint64_t)len << 2;          /* lengths are page multiples */
	unsigned int i = (unsigned int)((len >> 12) * 0x9e3779b97f4a7c15ull >> 58);
	uint64_t cur = __atomic_load_n(&large_weights[i].len, __ATOMIC_ACQUIRE);
	if (likely(cur == (key | 2))) {
		wb = large_weights[i].bytes;
		wc = large_weights[i].calls;
	} else {
		large_weights_compute(len, &wb, &wc);
		if (!cur && len <= (SIZE_MAX >> 2) &&
		    __atomic_compare_exchange_n(&large_weights[i].len, &cur, key | 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			large_weights[i].bytes = wb;
			large_weights[i].calls = wc;
			__atomic_store_n(&large_weights[i].len, key | 2, __ATOMIC_RELEASE);
		}
	}
	/* rounded up or down by coins from the block's address: the same at
	 * its free, len / p and 1 / p on average */
	uint64_t x = (uint64_t)addr ^ get_salt();
	uint64_t h1 = splitmix(&x), h2 = splitmix(&x);
	*bytes = round_by(wb, h1);
	*calls = round_by(wc, h2);
}

/* The inline countdowns are set to INT64_MAX - k: k more ticks stay
 * non-negative, the one after turns it negative. */
static __always_inline uint64_t armed_value(uint64_t k)
{
	return (uint64_t)INT64_MAX - k;
}

/* Set the sheaf pop's countdown to @w, keeping ALLOC_PCS (stat[ALLOC_PCS] +
 * pcs_adjust) as it is, minus @uncount (a pop the inline path counted and
 * did not do). Owner only; readers retry on an odd sample_seq. */
static void pcs_rearm(struct kmem_cache_cpu *c, uint64_t w, uint64_t uncount)
{
	uint64_t old = c->stat[USLUB_ALLOC_PCS];
	/* a seqlock without fences (cpu_alloc_pcs()): odd, then the data
	 * as releases (ordered after the odd seq), then even */
	__atomic_store_n(&c->sample_seq, c->sample_seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->stat[USLUB_ALLOC_PCS], w, __ATOMIC_RELEASE);
	__atomic_store_n(&c->pcs_adjust, (int64_t)((uint64_t)c->pcs_adjust + old - w - uncount),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&c->sample_seq, c->sample_seq + 1, __ATOMIC_RELEASE);
}

/* Arm both countdowns of the owner's slot @c (first sampled-mode miss). */
static void arm(struct kmem_cache *s, struct kmem_cache_cpu *c)
{
	/* what the slot counted before counts on, at the same rate */
	pcs_rearm(c, armed_value(draw(s->size)), 0);
	WRITE_ONCE(c->sample_left, (int64_t)armed_value(draw(s->size)));
	WRITE_ONCE(c->sample_armed, 1);
}

/* ---- tagging and untagging -------------------------------------------- */

static void set_slab_pages(struct slab *slab, bool on)
{
	struct page *page = slab_page(slab);
	unsigned int n = 1u << page_order(page);
	for (unsigned int i = 0; i < n; i++) {
		unsigned long f = READ_ONCE(page[i].flags);
		WRITE_ONCE(page[i].flags, on ? f | PG_slab_page : f & ~PG_slab_page);
	}
}

/* Record @obj of @s (just allocated, the caller's) as sampled, with the
 * call site's @tag. Under OOM (no extension array) it goes unsampled. */
static void sample_object(struct kmem_cache *s, void *obj, struct uslub_alloc_tag *tag)
{
	uintptr_t caller = (uintptr_t)tag & USLUB_CALLER_DEFERRED ?
			   (uintptr_t)tag & ~USLUB_CALLER_DEFERRED : 0;
	tag = _uslub_tag_resolve(tag);          /* malloc's deferred caller (ext.h) */
	struct slab *slab = virt_to_slab(obj);
	if (unlikely(!slab) || (s->flags & SLAB_NO_OBJ_EXT))
		return;
	struct obj_ext ext = slab_obj_ext(s, slab, obj);
	if (!ext.tag)           /* no array yet, or an objcg-only slab: widen it */
		ext = _uslub_slab_obj_ext_alloc(s, slab, obj, OBJ_EXT_TAG);
	if (unlikely(!ext.tag))
		return;
	if (!tag)
		tag = &untagged;
	/* its stack (ext/stack.c), walked here, before the node lock: the
	 * extension holds the stack's tag, which knows the call site's */
	struct uslub_alloc_tag *stag = _uslub_stack_tag(tag, caller, tag == &untagged);
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	node_lock(n);
	WRITE_ONCE(*ext.tag, stag ? stag : tag);
	if (READ_ONCE(slab_page(slab)->flags) & PG_slab_page) {
		set_slab_pages(slab, false);
		slab_epoch_bump(s);     /* before the object is handed out: no
		                           free record skips its untag */
	}
	node_unlock(n);
	/* cpu-slab mode: the thread's own cpu slab's free range skips the
	 * lookup; close it (set_cpu_slab() keeps it closed for such a slab) */
	if (this_cpu_is_real()) {
		struct kmem_cache_cpu *c = this_cpu(s);
		if (READ_ONCE(c->slab) == slab && READ_ONCE(c->slab_bytes))
			WRITE_ONCE(c->slab_bytes, 0);
		/* the epoch bump voided every free record of @s: this
		 * thread's own is set again at once when it names another
		 * slab (frees in allocation order, a queue's, would find one
		 * again only on a hot push: B6's batch of 64-byte objects
		 * went from 1.02x to 1.35x the instructions of profiling
		 * off); _uslub_free_record_set() checks what it rests on.
		 * Naming this slab, it waits for the sample's free
		 * (_uslub_sample_free()) */
		struct slab *rs = c->rec.addr ? virt_to_slab(c->rec.addr) : NULL;
		if (rs && rs != slab)
			_uslub_free_record_set(s, c, rs);
	}
	int64_t bytes, calls;
	weights(s->size, obj, &bytes, &calls);
	tag_add(tag, bytes, calls);
	_uslub_stack_add(stag, bytes, calls);
}

/* The free of @x (of @slab of @s, or NULL: looked up) by a path that
 * missed because its page lacks PG_slab_page: if it is sampled, take its
 * estimate off its tag, and give the slab its bit back when it was the
 * last sampled object there. Anything that is not a valid object of @s is
 * left to the caller's checks: NULL; else @x's slab. */
struct slab *_uslub_sample_free(struct kmem_cache *s, struct slab *slab, void *x)
{
	if (!slab) {
		slab = virt_to_slab(x);
		if (!slab || READ_ONCE(slab->slab_cache) != s)
			return NULL;
	}
	if (!obj_is_valid(s, slab, x))
		return NULL;
	if (READ_ONCE(virt_to_page(x)->flags) & PG_slab_page)
		return slab;
	struct obj_ext ext = slab_obj_ext(s, slab, x);
	if (!obj_ext_tag(ext))
		return slab;            /* not sampled: nothing changes */
	struct kmem_cache_node *n = get_node(s, slab_nid(slab));
	node_lock(n);
	struct uslub_alloc_tag *tag = __atomic_exchange_n(ext.tag, NULL, __ATOMIC_RELAXED);
	bool any = false;
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	for (unsigned int i = 0; i < objects && !any; i++)
		any = obj_ext_tag(slab_obj_ext_idx(s, slab, i)) != NULL;
	if (!any)
		set_slab_pages(slab, true);
	node_unlock(n);
	if (!any) {
		_uslub_cpu_slab_reopen(s, slab);
		/* the slab is a plain one again: this thread's free record,
		 * voided when the sample was taken (sample_object()), may name
		 * it again at once (the frees around the sampled one, a
		 * queue's in allocation order, would find it only on a hot
		 * push) */
		if (this_cpu_is_real()) {
			struct kmem_cache_cpu *c = this_cpu(s);
			if (c->rec.epoch != __atomic_load_n(&s->slab_epoch, __ATOMIC_ACQUIRE))
				_uslub_free_record_set(s, c, slab);
		}
	}
	if (tag) {              /* NULL: its shared object was unloaded */
		int64_t bytes, calls;
		weights(s->size, x, &bytes, &calls);
		struct uslub_alloc_tag *site = _uslub_stack_caller(tag);
		_uslub_stack_add(site != tag ? tag : NULL, -bytes, -calls);
		tag_add(site, -bytes, -calls);
	}
	return slab;
}

/* ---- the allocation side ---------------------------------------------- */

/* The objects p[0, n) were just taken and the slot's sample_left ticked
 * by n: sample every one whose tick turned it negative. */
static void sample_ticked(struct kmem_cache *s, struct kmem_cache_cpu *c, size_t n, void **p,
			  struct uslub_alloc_tag *tag)
{
	for (;;) {
		uint64_t left = (uint64_t)c->sample_left;
		if ((int64_t)left >= 0)
			return;
		uint64_t after = left - (uint64_t)INT64_MIN;   /* ticks after the sampled one */
		if (after >= n)                 /* before this batch: its first object */
			after = n - 1;
		sample_object(s, p[n - 1 - after], tag);
		WRITE_ONCE(c->sample_left, (int64_t)(armed_value(draw(s->size)) + after));
	}
}

/* Per-CPU mode's pop fired the countdown of slot @c after taking @obj
 * (cache.h alloc_from_pcpu(): the pop comes first there, so the counter
 * never goes back): rearm, as the miss path below does for a fired
 * inline pop, and sample @obj. */
void *_uslub_sample_popped(struct kmem_cache *s, struct kmem_cache_cpu *c, void *obj)
{
	uint64_t w = c->stat[USLUB_ALLOC_PCS];
	pcs_rearm(c, armed_value(draw(s->size)), w - (uint64_t)INT64_MIN);
	free_mark_clear0(obj);
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	uslub_alloc_tag_cur = NULL;
	sample_object(s, obj, tag);
	return obj;
}

/*
 * The alloc miss path in sampled mode (from _uslub_slab_alloc_miss()): tick
 * the slot's countdown for this call (unless an inline pop declined it
 * after ticking its own), take the object the plain miss path gives, and
 * sample it if the countdown fired. The first call on a slot arms it.
 */
void *_uslub_sample_alloc_miss(struct kmem_cache *s, uslub_gfp_t gfp, int node,
			       size_t orig_size, uintptr_t addr)
{
	bool fire = false;
	struct kmem_cache_cpu *c = this_cpu(s);
	if (this_cpu_is_real() && c->sample_armed) {
		uint64_t w = c->stat[USLUB_ALLOC_PCS];
		struct slab_sheaf *main = c->main;
		if ((int64_t)w < 0 && main->size && !pcs_off(s) && !gfp &&
		    node == USLUB_NUMA_NO_NODE) {
			/* the inline sheaf pop fired (and counted itself): do
			 * that pop here, so ALLOC_PCS never goes backwards;
			 * uncount only the pops declined before it (a cpu
			 * freelist served them: a cpu-slab cache with sheaves) */
			pcs_rearm(c, armed_value(draw(s->size)), w - (uint64_t)INT64_MIN);
			unsigned int n = main->size - 1;
			main->size = n;
			void *obj = main->objects[n];
			free_mark_clear0(obj);
			struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
			uslub_alloc_tag_cur = NULL;
			sample_object(s, obj, tag);
			return obj;
		}
		if ((int64_t)w < 0) {
			/* the inline sheaf pop fired: it counted pops it did
			 * not do (the first turned the word to INT64_MIN; more
			 * than one when a cpu freelist served the calls in
			 * between: a cpu-slab cache with sheaves); the pop
			 * below counts itself */
			pcs_rearm(c, armed_value(draw(s->size)), w - (uint64_t)INT64_MIN + 1);
			fire = true;
		} else {
			uint64_t left = (uint64_t)c->sample_left;
			if ((int64_t)left >= 0)         /* not ticked by the inline pop */
				left++;
			if ((int64_t)left < 0) {
				left = armed_value(draw(s->size));
				fire = true;
			}
			WRITE_ONCE(c->sample_left, (int64_t)left);
		}
	}
	struct uslub_alloc_tag *tag = uslub_alloc_tag_cur;
	void *obj = _uslub_slab_alloc_miss_plain(s, gfp, node, orig_size, addr);
	if (!obj || !this_cpu_is_real())
		return obj;
	uslub_alloc_tag_cur = NULL;             /* taken (or stale for a later call) */
	c = this_cpu(s);
	if (unlikely(!c->sample_armed)) {
		/* the slot's first call: armed now, and this call ticks it */
		arm(s, c);
		uint64_t left = (uint64_t)c->sample_left + 1;
		if ((int64_t)left < 0) {
			left = armed_value(draw(s->size));
			fire = true;
		}
		WRITE_ONCE(c->sample_left, (int64_t)left);
	}
	if (fire)
		sample_object(s, obj, tag);
	return obj;
}

/*
 * Bulk allocation in sampled mode: p[0, n) were taken; tick the slot's
 * countdown by n (when @tick: the inline bulk pop ticked it already) and
 * sample the objects it fires on, with the thread's current tag.
 */
int _uslub_sample_bulk(struct kmem_cache *s, size_t n, void **p, struct uslub_alloc_tag *tag,
		       bool tick)
{
	if (!_uslub_sampling || !n || !this_cpu_is_real())
		return (int)n;
	struct kmem_cache_cpu *c = this_cpu(s);
	if (unlikely(!c->sample_armed)) {
		arm(s, c);
		tick = true;
	}
	if (tick)
		WRITE_ONCE(c->sample_left, (int64_t)((uint64_t)c->sample_left + n));
	sample_ticked(s, c, n, p, tag);
	return (int)n;
}
