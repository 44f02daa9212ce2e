/*
 * Allocation profiling (the kernel's CONFIG_MEM_ALLOC_PROFILING): one
 * static tag per call site, declared by the USLUB_ALLOC_HOOKS() macro
 * around every public allocation entry (uslub.h) in the ELF section
 * "uslub_alloc_tags". Each shared object registers its section from a
 * constructor; registration gives every tag an index. Counts are kept per
 * thread (struct uslub_thread.tagc[index], written by the owner only, like
 * the kernel's per-CPU tag counters) and folded into the tag's own atomics
 * when a thread exits; a report adds the two.
 */
#include "ext/ext.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_TAGS     65536         /* indices 1 .. MAX_TAGS-1; more sites: counted
                                      on the tag's atomics, not in reports    */
#define MAX_SECTIONS 256

__public __thread struct uslub_alloc_tag *uslub_alloc_tag_cur __tls_ie;

static pthread_mutex_t tags_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uslub_alloc_tag **tag_table;         /* [index], tags_lock to grow */
static unsigned int nr_tags;                       /* release-stored after table */
static struct uslub_alloc_tag *sections[MAX_SECTIONS];
static unsigned int nr_sections;

#define TAGC_BYTES ((size_t)MAX_TAGS * sizeof(struct tag_counter))

/* A thread's live bytes and objects of one tag (reports; racy reads of
 * the owner's counters, as the kernel's per-CPU sums are). */
static int64_t tag_counter_bytes(const struct tag_counter *c)
{
	return READ_ONCE(c->alloc_bytes) - READ_ONCE(c->free_bytes);
}

static int64_t tag_counter_calls(const struct tag_counter *c)
{
	return READ_ONCE(c->alloc_calls) - READ_ONCE(c->free_calls);
}

static bool exiting;              /* exit() has begun: no unload walks */

static void at_exit(void)
{
	WRITE_ONCE(exiting, true);
}

/* Give tags [start, stop) indices (tags_lock held). */
static void register_locked(struct uslub_alloc_tag *start, struct uslub_alloc_tag *stop)
{
	if (!tag_table) {
		void *m = _uslub_page_map(MAX_TAGS * sizeof(*tag_table));
		if (!m)
			return;
		tag_table = m;
	}
	unsigned int n = nr_tags;
	for (struct uslub_alloc_tag *t = start; t < stop && n + 1 < MAX_TAGS; t++) {
		if (READ_ONCE(t->index))
			continue;
		__atomic_store_n(&tag_table[++n], t, __ATOMIC_RELEASE);
		__atomic_store_n(&t->index, n, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&nr_tags, n, __ATOMIC_RELEASE);
}

__public void uslub_alloc_tags_register(struct uslub_alloc_tag *start, struct uslub_alloc_tag *stop)
{
	if (!start || stop <= start)
		return;
	uslub_mutex_lock(&tags_lock, RANK_TAGS);
	bool known = false;
	for (unsigned int i = 0; i < nr_sections; i++)
		known |= sections[i] == start;
	if (!known) {
		if (nr_sections < MAX_SECTIONS)
			sections[nr_sections++] = start;
		register_locked(start, stop);
	}
	uslub_mutex_unlock(&tags_lock, RANK_TAGS);
}

/* Live objects of every cache that point into [start, stop) lose their
 * tag (their counts stay with the tag, which leaves the reports). */
struct unload_walk {
	uintptr_t lo, hi;
};

static void unload_walk_cb(struct kmem_cache *s, struct slab *slab, void *arg)
{
	struct unload_walk *w = arg;
	if (!READ_ONCE(slab->obj_exts))
		return;
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	for (unsigned int i = 0; i < objects; i++) {
		struct obj_ext ext = _uslub_slab_obj_ext_idx(s, slab, i);
		struct uslub_alloc_tag *ref = obj_ext_tag(ext);
		if ((uintptr_t)ref >= w->lo && (uintptr_t)ref < w->hi)
			__atomic_compare_exchange_n(ext.tag, &ref, NULL, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

__public void uslub_alloc_tags_unregister(struct uslub_alloc_tag *start,
					  struct uslub_alloc_tag *stop)
{
	if (!start || stop <= start || READ_ONCE(exiting))
		return;            /* at exit the memory stays until the end */
	if (start == __start_uslub_alloc_tags)
		return;            /* uslub's own (the malloc front end's) stay
		                      until the end, for the report at exit */
	uslub_mutex_lock(&tags_lock, RANK_TAGS);
	bool known = false;
	for (unsigned int i = 0; i < nr_sections; i++)
		if (sections[i] == start) {
			sections[i] = sections[--nr_sections];
			known = true;
			break;
		}
	for (struct uslub_alloc_tag *t = start; known && t < stop; t++) {
		unsigned int idx = READ_ONCE(t->index);
		if (idx && idx <= nr_tags && tag_table[idx] == t)
			__atomic_store_n(&tag_table[idx], NULL, __ATOMIC_RELEASE);
	}
	uslub_mutex_unlock(&tags_lock, RANK_TAGS);
	if (!known || !(_uslub_profiling || _uslub_sampling))
		return;
	struct unload_walk w = { (uintptr_t)start, (uintptr_t)stop };
	uslub_mutex_lock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
	struct kmem_cache *s;
	list_for_each_entry(s, &_uslub_slab_caches, list)
		if ((s->hooks & HOOK_PROFILE) || _uslub_sampling)
			_uslub_for_each_slab(s, unload_walk_cb, &w);
	uslub_mutex_unlock(&_uslub_slab_mutex, RANK_SLAB_MUTEX);
}

/* The thread's counters are not set up yet, or the tag is not registered
 * (outside any section: C++; or its section's constructor has not run):
 * register it now. */
void _uslub_tag_add_slow(struct uslub_alloc_tag *tag, int64_t bytes, int64_t calls)
{
	struct uslub_thread *t = _uslub_tls.thread;
	unsigned int idx = __atomic_load_n(&tag->index, __ATOMIC_ACQUIRE);
	if (!idx && calls > 0) {
		uslub_mutex_lock(&tags_lock, RANK_TAGS);
		register_locked(tag, tag + 1);
		uslub_mutex_unlock(&tags_lock, RANK_TAGS);
		idx = __atomic_load_n(&tag->index, __ATOMIC_ACQUIRE);
	}
	if (t && idx) {
		if (!t->tagc) {
			void *m = _uslub_page_map(TAGC_BYTES);
			if (m)
				__atomic_store_n(&t->tagc, (struct tag_counter *)m, __ATOMIC_RELEASE);
		}
		if (t->tagc) {
			struct tag_counter *c = &t->tagc[idx];
			if (calls > 0 || (!calls && bytes >= 0)) {   /* a resize in place: calls 0 */
				SINGLE_WRITER_INC(c->alloc_bytes, bytes);
				SINGLE_WRITER_INC(c->alloc_calls, calls);
			} else {
				SINGLE_WRITER_INC(c->free_bytes, -bytes);
				SINGLE_WRITER_INC(c->free_calls, -calls);
			}
			return;
		}
	}
	__atomic_add_fetch(&tag->bytes, (uint64_t)bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&tag->calls, (uint64_t)calls, __ATOMIC_RELAXED);
}

/* Fold a thread's counters into the tags (thread_lock held, at its exit
 * or in a fork child that lost it: a report never sees them in both
 * places). The area keeps its zeroed counters. The lifecycle table's
 * thread_fold of the tags entry. */
static void tags_thread_fold(void *area)
{
	struct uslub_thread *t = area;
	struct tag_counter *c = READ_ONCE(t->tagc);
	if (!c)
		return;
	unsigned int n = __atomic_load_n(&nr_tags, __ATOMIC_ACQUIRE);
	for (unsigned int i = 1; i <= n; i++) {
		int64_t b = tag_counter_bytes(&c[i]), k = tag_counter_calls(&c[i]);
		if (!b && !k && !READ_ONCE(c[i].alloc_calls))
			continue;
		struct uslub_alloc_tag *tag = __atomic_load_n(&tag_table[i], __ATOMIC_ACQUIRE);
		if (tag) {         /* NULL: its shared object is gone */
			__atomic_add_fetch(&tag->bytes, (uint64_t)b, __ATOMIC_RELAXED);
			__atomic_add_fetch(&tag->calls, (uint64_t)k, __ATOMIC_RELAXED);
		}
		WRITE_ONCE(c[i].alloc_bytes, 0);
		WRITE_ONCE(c[i].alloc_calls, 0);
		WRITE_ONCE(c[i].free_bytes, 0);
		WRITE_ONCE(c[i].free_calls, 0);
	}
}

__public int uslub_profiling_enabled(void)
{
	_uslub_init();
	return _uslub_sampling ? 2 : _uslub_profiling ? 1 : 0;
}

__public size_t uslub_profiling_sample_interval(void)
{
	_uslub_init();
	return _uslub_sampling ? _uslub_sample_interval : 0;
}

/* USLUB_PROFILING's value when it is unset (or rejected): "0" (off),
 * "1" (exact) or "sample" (sampled every 512 KiB). Sampled: it costs the
 * inline allocation one predicted branch and the frees nothing (B6:
 * 1.002x the instructions of off per alloc+free pair), so allocinfo is
 * always there, as the kernel's is when compiled in. */
#define USLUB_PROFILING_DEFAULT "sample"
#define SAMPLE_INTERVAL_DEFAULT ((size_t)512 << 10)
#define SAMPLE_INTERVAL_MAX     ((size_t)1 << 30)

static bool word_is(const char *s, size_t len, const char *w)
{
	size_t n = strlen(w);
	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != w[i])
			return false;
	}
	return true;
}

/* Parse USLUB_PROFILING's @text: 0 off, 1 exact, 2 sampled (*@interval
 * set); -1 with the reason in @why. No allocation. */
static int parse_profiling(const char *text, size_t *interval, const char **why)
{
	size_t len = strlen(text);
	*interval = SAMPLE_INTERVAL_DEFAULT;
	if (word_is(text, len, "0") || word_is(text, len, "off") || word_is(text, len, "no") ||
	    word_is(text, len, "false"))
		return 0;
	if (word_is(text, len, "1") || word_is(text, len, "on") || word_is(text, len, "yes") ||
	    word_is(text, len, "true") || word_is(text, len, "exact"))
		return 1;
	if (word_is(text, len, "sample"))
		return 2;
	if (len < 7 || !word_is(text, 7, "sample:")) {
		*why = "expected 0, off, 1, on, exact, sample or sample:BYTES";
		return -1;
	}
	const char *num = text + 7;
	size_t n = len - 7, shift = 0;
	if (n) {
		char suf = num[n - 1];
		if (suf == 'k' || suf == 'K')
			shift = 10;
		else if (suf == 'm' || suf == 'M')
			shift = 20;
		else if (suf == 'g' || suf == 'G')
			shift = 30;
		if (shift)
			n--;
	}
	uint64_t v;
	int e = _uslub_parse_u64(num, n, SAMPLE_INTERVAL_MAX, &v);
	if (e || (v << shift) > SAMPLE_INTERVAL_MAX || !v) {
		*why = e == USLUB_NUM_EMPTY ? "no interval after sample:" :
		       e == USLUB_NUM_JUNK ? "the interval is not a decimal number (k, m, g suffixes)" :
		       "the interval is out of range (1 .. 1g bytes)";
		return -1;
	}
	*interval = (size_t)(v << shift);
	return 2;
}

/* Set the profiling mode from USLUB_PROFILING (the option table gives ""
 * when unset, and in secure-execution mode), reporting bad text once. */
static void profiling_init(void)
{
	const char *text = _uslub_option_str(USLUB_OPT_PROFILING);
	const char *why = NULL;
	size_t interval;
	int mode = parse_profiling(*text ? text : USLUB_PROFILING_DEFAULT, &interval, &why);
	if (mode < 0) {
		_uslub_report("uslub: ignoring USLUB_PROFILING=\"%s\": %s; using the default %s\n",
			      text, why, USLUB_PROFILING_DEFAULT);
		mode = parse_profiling(USLUB_PROFILING_DEFAULT, &interval, &why);
	}
	_uslub_profiling = mode == 1;
	_uslub_sampling = mode == 2;
	_uslub_sample_interval = mode == 2 ? interval : 0;
}

static int cmp_bytes(const void *a, const void *b)
{
	const struct uslub_allocinfo *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	int c = strcmp(x->file, y->file);
	return c ? c : (int)x->line - (int)y->line;
}

/* Every registered site with live objects, sorted; *@np = count. The
 * array is mmap'd (munmap with *@lenp). */
static struct uslub_allocinfo *collect(size_t *np, size_t *lenp)
{
	*np = 0;
	*lenp = 0;
	uslub_mutex_lock(&_uslub_thread_lock, RANK_THREAD);
	uslub_mutex_lock(&tags_lock, RANK_TAGS);
	unsigned int n = nr_tags;
	struct uslub_allocinfo *out = NULL;
	size_t len = ((size_t)n + 1) * sizeof(*out);
	if (n) {
		out = _uslub_page_map(len);
	}
	size_t k = 0;
	for (unsigned int i = 1; out && i <= n; i++) {
		struct uslub_alloc_tag *tag = tag_table[i];
		if (!tag)
			continue;           /* unloaded */
		int64_t bytes = (int64_t)__atomic_load_n(&tag->bytes, __ATOMIC_RELAXED);
		int64_t calls = (int64_t)__atomic_load_n(&tag->calls, __ATOMIC_RELAXED);
		struct uslub_thread *t;
		list_for_each_entry(t, &_uslub_threads, link) {
			struct tag_counter *c = __atomic_load_n(&t->tagc, __ATOMIC_ACQUIRE);
			if (c) {
				bytes += tag_counter_bytes(&c[i]);
				calls += tag_counter_calls(&c[i]);
			}
		}
		if (!bytes && !calls)
			continue;
		int slot = _uslub_caller_tag_slot(tag);
		if (slot != -1) {       /* a caller tag: named below, unlocked */
			out[k].file = NULL;
			out[k].func = NULL;
			out[k].line = (unsigned int)(slot + 2);
		} else {
			out[k].file = tag->file;
			out[k].func = tag->func;
			out[k].line = tag->line;
		}
		out[k].bytes = bytes;
		out[k].calls = calls;
		k++;
	}
	uslub_mutex_unlock(&tags_lock, RANK_TAGS);
	uslub_mutex_unlock(&_uslub_thread_lock, RANK_THREAD);
	/* caller tags (the malloc family's call sites): "module+0xOFF" and
	 * "symbol+0xOFF", line 0; dladdr() runs here, with no lock held */
	for (size_t i = 0; i < k; i++)
		if (!out[i].file) {
			_uslub_caller_tag_name((int)out[i].line - 2, &out[i].file, &out[i].func);
			out[i].line = 0;
		}
	if (out)
		qsort(out, k, sizeof(*out), cmp_bytes);
	*np = k;
	*lenp = out ? len : 0;
	return out;
}

__public size_t uslub_allocinfo(struct uslub_allocinfo *out, size_t max)
{
	_uslub_init();
	size_t n, len;
	struct uslub_allocinfo *all = collect(&n, &len);
	if (all) {
		if (out)
			memcpy(out, all, MIN(n, max) * sizeof(*out));
		_uslub_sys_munmap_or_park(all, len);
	}
	return n;
}

/* The table's legend, once under it (comment lines, as its header). */
static void allocinfo_legend(struct uslub_buf *b)
{
	_uslub_buf_printf(b,
		"# <bytes>  bytes allocated at the site and not freed yet%s\n"
		"# <calls>  objects allocated at the site and not freed yet (each allocation counts once)\n"
		"# <site>   the allocation call's file:line (a program's call site under LD_PRELOAD:\n"
		"#          /module+0xOFF, which the uslub tool resolves), <func> the function it is in\n",
		_uslub_sampling ? " (estimates: sampled allocations, scaled)" : "");
}

/* A caller tag's site "/module+0xOFF" (line 0) as JSON members the
 * `uslub` tool resolves with addr2line: "module" (the path) and "offset"
 * (the return address less the module's load bias). */
static void print_caller_json(struct uslub_buf *b, const struct uslub_allocinfo *a)
{
	if (a->line || a->file[0] != '/')
		return;
	const char *plus = strrchr(a->file, '+');
	if (!plus || plus[1] != '0' || plus[2] != 'x')
		return;
	char path[256];
	size_t len = MIN((size_t)(plus - a->file), sizeof(path) - 1);
	memcpy(path, a->file, len);
	path[len] = 0;
	_uslub_buf_printf(b, ",\"module\":");
	_uslub_buf_json_string(b, path);
	_uslub_buf_printf(b, ",\"offset\":%lu", strtoul(plus + 3, NULL, 16));
}

__public void uslub_allocinfo_print(FILE *f, int fmt)
{
	_uslub_init();
	size_t n, len;
	struct uslub_allocinfo *all = collect(&n, &len);
	int64_t bytes = 0, calls = 0;
	for (size_t i = 0; i < n; i++) {
		bytes += all[i].bytes;
		calls += all[i].calls;
	}
	/* formatted into a buffer, then written: the same path as slabinfo */
	struct uslub_buf b;
	memset(&b, 0, sizeof(b));
	if (fmt == USLUB_FMT_JSON || fmt == USLUB_FMT_JSON_VALUE) {
		_uslub_buf_printf(&b, "{\"profiling\":%s,", (_uslub_profiling || _uslub_sampling) ?
				  "true" : "false");
		if (_uslub_sampling)
			_uslub_buf_printf(&b, "\"mode\":\"sample\",\"sample_interval\":%zu,",
					  _uslub_sample_interval);
		else if (_uslub_profiling)
			_uslub_buf_printf(&b, "\"mode\":\"exact\",");
		_uslub_buf_printf(&b, "\"total_bytes\":%lld,\"total_calls\":%lld,\"sites\":[",
				  (long long)bytes, (long long)calls);
		for (size_t i = 0; i < n; i++) {
			_uslub_buf_printf(&b, "%s{\"bytes\":%lld,\"calls\":%lld,\"file\":",
					  i ? "," : "", (long long)all[i].bytes,
					  (long long)all[i].calls);
			_uslub_buf_json_string(&b, all[i].file);
			_uslub_buf_printf(&b, ",\"line\":%u,\"func\":", all[i].line);
			_uslub_buf_json_string(&b, all[i].func);
			print_caller_json(&b, &all[i]);
			_uslub_buf_printf(&b, "}");
		}
		_uslub_buf_printf(&b, "]}%s", fmt == USLUB_FMT_JSON ? "\n" : "");
	} else {
		if (_uslub_sampling)
			_uslub_buf_printf(&b, "allocinfo - profiling sampled every %zu bytes; figures "
					  "are estimates; %lld bytes in %lld objects\n",
					  _uslub_sample_interval, (long long)bytes, (long long)calls);
		else
			_uslub_buf_printf(&b, "allocinfo - profiling %s; %lld bytes in %lld objects\n",
					  _uslub_profiling ? "on" :
					  "off (USLUB_PROFILING=1 or sample)",
					  (long long)bytes, (long long)calls);
		_uslub_buf_printf(&b, "# %12s %10s <site> <func>\n", "<bytes>", "<calls>");
		for (size_t i = 0; i < n; i++) {
			/* a file, a module's path (a caller tag: module+0xOFF,
			 * ext/caller_tag.c) and a function are data (base.h) */
			_uslub_buf_printf(&b, "%14lld %10lld ", (long long)all[i].bytes,
					  (long long)all[i].calls);
			_uslub_buf_text(&b, all[i].file, 0);
			if (all[i].line)
				_uslub_buf_printf(&b, ":%u", all[i].line);
			_uslub_buf_printf(&b, " func:");
			_uslub_buf_text(&b, all[i].func, 0);
			_uslub_buf_printf(&b, "\n");
		}
		if (n)
			allocinfo_legend(&b);
	}
	if (all)
		_uslub_sys_munmap_or_park(all, len);
	_uslub_buf_write(&b, f);
}

static void tags_prefork(void);
static void tags_postfork_parent(void);
static void tags_postfork_child(void);

/* Called from _uslub_init(), options read, before any cache exists. */
void _uslub_ext_init(void)
{
	static const struct uslub_lifecycle e = {
		.name = "tags_lock",
		.rank = RANK_TAGS,
		.thread_fold = tags_thread_fold,
		.prefork = tags_prefork,
		.postfork_parent = tags_postfork_parent,
		.postfork_child = tags_postfork_child,
	};
	_uslub_lifecycle_register(&e);
	profiling_init();
	_uslub_stacks_init();
	atexit(at_exit);
	_uslub_memcg_init();
}

/* fork: tags_lock, after groups_lock (ext/memcg.c) */
static void tags_prefork(void)
{
	uslub_mutex_lock(&tags_lock, RANK_TAGS);
}

static void tags_postfork_parent(void)
{
	uslub_mutex_unlock(&tags_lock, RANK_TAGS);
}

static void tags_postfork_child(void)
{
	uslub_mutex_reset(&tags_lock, RANK_TAGS);
	_uslub_caller_tags_postfork_child();
}
