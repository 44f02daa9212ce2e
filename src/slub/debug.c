/*
 * debug.c — slub_debug's per-object side: putting an object in its free or
 * allocated state (red zones, poison), checking it, owner tracking, and the
 * reports (SLUB's "BUG cache: what" block: the damaged range, the slab, the
 * object, its recorded owners symbolized with dladdr(), a hexdump of the
 * red zones, the object and its padding, then what was fixed).
 *
 * The debug paths that call these (every alloc and free of a debug cache,
 * under the node's list_lock), isolation and validate are in debug_paths.c and validate.c; the
 * layout is in calculate_sizes() there and in struct kmem_cache.
 *
 * Nothing here allocates from uslub or malloc: report lines are formatted
 * on the stack into a per-thread mmap'ed buffer and written with write(2)
 * once no uslub lock is held (see "Report output" below).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE         /* dladdr, sched_getcpu */
#endif
#include "slub/slub.h"
#include "base/lifecycle.h"
#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Report output. Reports are made under list_lock (and the page lock, in
 * validate), where dladdr() must not run: it takes the dynamic loader's
 * lock, which a thread running a dlopen() constructor holds while it may
 * allocate. So report lines go to a per-thread buffer, owners' addresses
 * as placeholders (\1 + 16 hex digits + \2), and _uslub_debug_flush()
 * writes them out, symbolized, once the caller holds no uslub lock
 * (symbolized first, then written under flush_lock, which is taken only
 * with no uslub lock held and holds nothing but write(2): rank
 * RANK_FLUSH, before thread_lock; it is counted in _uslub_locks_held like
 * every lock, which asserts nothing while it is held). A full buffer, an abort, or a flush from a debug alloc/free
 * nested in a section holding a uslub lock (_uslub_locks_held) writes it
 * out unsymbolized. The thread-local variables here are initial-exec, as
 * all of the library's: a dynamic-TLS access (__tls_get_addr) under
 * list_lock may free() an unloaded module's TLS block into this cache.
 */
#define RBUF_SIZE (128u << 10)
#define SYM_MARK_LEN 18
static __thread char *rbuf __tls_ie;            /* mmap'ed on a thread's first report */
static __thread size_t rlen __tls_ie;
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDERR_FILENO, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Copy [p, p + n) to @out (at most @cap bytes), placeholders made
 * "func+0x.. (file)" when @symbolize, else "0x...". Returns the length. */
static size_t render(const char *p, size_t n, char *out, size_t cap, bool symbolize)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < cap;) {
		if (p[i] == '\1' && i + SYM_MARK_LEN <= n && p[i + SYM_MARK_LEN - 1] == '\2') {
			char hex[17], sym[256];
			memcpy(hex, p + i + 1, 16);
			hex[16] = 0;
			uintptr_t addr = (uintptr_t)strtoull(hex, NULL, 16);
			if (symbolize)
				_uslub_debug_symbolize(addr, sym, sizeof(sym));
			else
				snprintf(sym, sizeof(sym), "0x%lx", (unsigned long)addr);
			size_t m = MIN(strlen(sym), cap - k);
			memcpy(out + k, sym, m);
			k += m;
			i += SYM_MARK_LEN;
		} else {
			out[k++] = p[i++];
		}
	}
	return k;
}

static void flush_raw(void)
{
	char out[4096];
	size_t i = 0;
	while (i < rlen) {
		/* cut between lines, so no placeholder is split */
		size_t n = MIN(rlen - i, (size_t)1024);
		while (i + n < rlen && n > 1 && rbuf[i + n - 1] != '\n')
			n--;
		write_all(out, render(rbuf + i, n, out, sizeof(out), false));
		i += n;
	}
	rlen = 0;
}

void _uslub_debug_flush(void)
{
	if (likely(!rlen))
		return;
	if (unlikely(_uslub_locks_held)) {
		/* a debug alloc/free nested in a locked section (a struct
		 * freed under thread_lock or slab_mutex): no dladdr() */
		flush_raw();
		return;
	}
	char *out = mmap(NULL, 2 * RBUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (out == MAP_FAILED) {
		flush_raw();
		return;
	}
	size_t n = render(rbuf, rlen, out, 2 * RBUF_SIZE, true);
	rlen = 0;
	uslub_mutex_lock(&flush_lock, RANK_FLUSH);
	write_all(out, n);
	uslub_mutex_unlock(&flush_lock, RANK_FLUSH);
	_uslub_sys_munmap_or_park(out, 2 * RBUF_SIZE);
}

void _uslub_debug_emit(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	if (!rbuf) {
		void *m = mmap(NULL, RBUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (m == MAP_FAILED) {
			char out[1024];
			write_all(out, render(line, (size_t)n, out, sizeof(out), false));
			return;
		}
		rbuf = m;
	}
	if (rlen + (size_t)n > RBUF_SIZE)
		flush_raw();
	memcpy(rbuf + rlen, line, (size_t)n);
	rlen += (size_t)n;
}
#define emit _uslub_debug_emit

static uint64_t now_ns(void)
{
	return monotonic_ns(CLOCK_MONOTONIC);
}

/* The thread's id, cached (a fork child's thread gets a new one: cleared
 * before fork by debug_prefork()). */
static __thread int cached_tid __tls_ie;

static int current_tid(void)
{
	if (unlikely(!cached_tid))
		cached_tid = (int)syscall(SYS_gettid);
	return cached_tid;
}

static struct track *get_track(const struct kmem_cache *s, void *obj, enum track_item item)
{
	return (struct track *)((char *)obj + s->track_offset) + item;
}

static unsigned int *orig_size_slot(const struct kmem_cache *s, void *obj)
{
	return (unsigned int *)((char *)obj + s->orig_size_offset);
}

static unsigned int get_orig_size(const struct kmem_cache *s, void *obj)
{
	if (!(s->debug & USLUB_DBG_Z))
		return s->object_size;
	unsigned int v = *orig_size_slot(s, obj);
	return v <= s->object_size ? v : s->object_size;
}

/* ------------------------------------------------------------------------
 * Object states
 * ---------------------------------------------------------------------- */
void _uslub_debug_init_object(struct kmem_cache *s, void *obj, uint8_t val)
{
	char *p = obj;
	if (s->debug & USLUB_DBG_Z) {
		memset(p - s->red_left_pad, val, s->red_left_pad);
		memset(p + s->object_size, val, s->offset - s->object_size);
	}
	if ((s->debug & USLUB_DBG_P) && val == SLUB_RED_INACTIVE) {
		memset(p, POISON_FREE, s->object_size - 1);
		p[s->object_size - 1] = (char)POISON_END;
	}
}

void _uslub_debug_init_slab(struct kmem_cache *s, struct slab *slab, unsigned int objects)
{
	if (s->debug & USLUB_DBG_P)
		memset(slab_address(slab), POISON_INUSE, PAGE_SIZE << slab_order(slab));
	char *base = slab_obj_base(s, slab);
	for (unsigned int i = 0; i < objects; i++) {
		char *obj = base + (size_t)i * s->size;
		_uslub_debug_init_object(s, obj, SLUB_RED_INACTIVE);
		if (s->debug & USLUB_DBG_U)
			memset(get_track(s, obj, TRACK_ALLOC), 0, 2 * sizeof(struct track));
		if (s->debug & USLUB_DBG_Z)
			*orig_size_slot(s, obj) = s->object_size;
	}
}

void _uslub_debug_set_track(struct kmem_cache *s, void *obj, enum track_item item, uintptr_t addr)
{
	if (!(s->debug & USLUB_DBG_U))
		return;
	struct track *t = get_track(s, obj, item);
	t->addr = addr;
	t->when_ns = now_ns();
	t->tid = current_tid();
	t->cpu = sched_getcpu();
}

void _uslub_debug_set_orig_size(struct kmem_cache *s, void *obj, unsigned int size)
{
	if (!(s->debug & USLUB_DBG_Z) || size > s->object_size)
		return;
	memset((char *)obj + size, SLUB_RED_ACTIVE, s->object_size - size);
	__atomic_store_n(orig_size_slot(s, obj), size, __ATOMIC_RELEASE);  /* guard, then size */
}

/* ------------------------------------------------------------------------
 * Reports
 * ---------------------------------------------------------------------- */
void _uslub_debug_symbolize(uintptr_t addr, char *buf, size_t len)
{
	Dl_info info;
	_uslub_lockdep_assert_unlocked("dladdr()");
	if (!addr) {
		snprintf(buf, len, "(unknown)");
		return;
	}
	if (!dladdr((void *)addr, &info) || !info.dli_fname) {
		snprintf(buf, len, "0x%lx", (unsigned long)addr);
		return;
	}
	const char *file = strrchr(info.dli_fname, '/');
	file = file ? file + 1 : info.dli_fname;
	if (info.dli_sname && info.dli_saddr)
		snprintf(buf, len, "%s+0x%lx (%s)", info.dli_sname,
			 (unsigned long)(addr - (uintptr_t)info.dli_saddr), file);
	else
		snprintf(buf, len, "%s+0x%lx", file, (unsigned long)(addr - (uintptr_t)info.dli_fbase));
}

static void print_track(const char *what, const struct track *t, uint64_t now)
{
	if (!t->addr) {
		emit("INFO: %s: no record\n", what);
		return;
	}
	emit("INFO: %s in \1%016lx\2 age=%llu ms tid=%d cpu=%d\n", what, (unsigned long)t->addr,
	     (unsigned long long)((now - t->when_ns) / 1000000), t->tid, t->cpu);
}

/* 16 bytes a line: offset label, address, hex, ASCII. */
static void print_section(const char *label, const void *start, size_t len)
{
	const unsigned char *p = start;
	for (size_t off = 0; off < len; off += 16) {
		char hex[16 * 3 + 1], ascii[17];
		size_t n = MIN(len - off, (size_t)16), k = 0;
		for (size_t i = 0; i < 16; i++) {
			if (i < n)
				k += (size_t)snprintf(hex + k, sizeof(hex) - k, "%02x ", p[off + i]);
			else
				k += (size_t)snprintf(hex + k, sizeof(hex) - k, "   ");
			ascii[i] = i < n ? ((p[off + i] >= 0x20 && p[off + i] < 0x7f) ? (char)p[off + i] : '.')
					 : ' ';
		}
		ascii[16] = 0;
		emit("%-8s %p: %s %s\n", label, (const void *)(p + off), hex, ascii);
	}
}

static void print_trailer(struct kmem_cache *s, struct slab *slab, void *obj)
{
	char *p = obj;
	uint64_t cnt = slab_counters(slab);
	emit("INFO: Slab %p objects=%u used=%u fp=%p node=%d%s\n", slab_address(slab),
		      FC_OBJECTS(cnt), FC_INUSE(cnt), fl_ptr(s, slab, FC_FREELIST(cnt)), slab_nid(slab),
		      (READ_ONCE(slab->__page_flags) & PG_isolated) ? " isolated" : "");
	emit("INFO: Object %p @offset=%zu index=%u object_size=%u stride=%u\n", obj,
		      (size_t)(p - (char *)slab_address(slab)), obj_to_index(s, slab, obj),
		      s->object_size, s->size);
	if (s->debug & USLUB_DBG_U) {
		uint64_t now = now_ns();
		print_track("Allocated", get_track(s, obj, TRACK_ALLOC), now);
		print_track("Freed", get_track(s, obj, TRACK_FREE), now);
	}
	if (s->red_left_pad)
		print_section("Redzone", p - s->red_left_pad, s->red_left_pad);
	print_section("Object", p, MIN((size_t)s->object_size, (size_t)PAGE_SIZE));
	if (s->debug & USLUB_DBG_Z)
		print_section("Redzone", p + s->object_size, s->offset - s->object_size);
	size_t meta = MAX((size_t)s->offset, (size_t)s->object_size);
	if (s->inuse > meta)      /* free pointer (when outside), owners, request size */
		print_section("Metadata", p + meta, s->inuse - meta);
	size_t end = s->size - s->red_left_pad;
	if (end > s->inuse)
		print_section("Padding", p + s->inuse, end - s->inuse);
}

/* Count one error; before an abort, the report goes out (unsymbolized:
 * locks may be held). */
static void count_error(struct kmem_cache *s)
{
	bool abort_too = (s->debug & USLUB_DBG_X) || (s->flags & SLAB_ABORT_ON_ERROR) ||
			 _uslub_option(USLUB_OPT_ABORT_ON_ERROR);
	if (abort_too)
		flush_raw();
	_uslub_count_error(abort_too);
}

void _uslub_debug_object_err(struct kmem_cache *s, struct slab *slab, void *obj, const char *bug,
			     const char *fmt, ...)
{
	char info[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(info, sizeof(info), fmt, ap);
	va_end(ap);
	emit("=============================================================================\n"
		      "BUG %s: %s\n"
		      "-----------------------------------------------------------------------------\n"
		      "\nINFO: %s\n", s->name, bug, info);
	print_trailer(s, slab, obj);
	count_error(s);
}

void _uslub_debug_slab_err(struct kmem_cache *s, struct slab *slab, const char *bug,
			   const char *fmt, ...)
{
	char info[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(info, sizeof(info), fmt, ap);
	va_end(ap);
	uint64_t cnt = slab_counters(slab);
	emit("=============================================================================\n"
	     "BUG %s: %s\n"
	     "-----------------------------------------------------------------------------\n"
	     "\nINFO: %s\nINFO: Slab %p objects=%u used=%u fp=%p node=%d\n", s->name, bug, info,
	     slab_address(slab), FC_OBJECTS(cnt), FC_INUSE(cnt),
	     fl_ptr(s, slab, FC_FREELIST(cnt)), slab_nid(slab));
	count_error(s);
}

void _uslub_debug_isolated(struct kmem_cache *s, struct slab *slab)
{
	uint64_t cnt = slab_counters(slab);
	emit("FIX %s: slab %p isolated: never allocated from again (%u of %u objects "
		      "in use)\n\n", s->name, slab_address(slab), FC_INUSE(cnt), FC_OBJECTS(cnt));
}

void _uslub_debug_trace(struct kmem_cache *s, struct slab *slab, void *obj, bool alloc)
{
	uint64_t cnt = slab_counters(slab);
	emit("TRACE %s %s %p inuse=%u fp=%p\n", s->name, alloc ? "alloc" : "free", obj,
		      FC_INUSE(cnt), fl_ptr(s, slab, FC_FREELIST(cnt)));
	if (!alloc)
		print_section("Object", obj, MIN((size_t)s->object_size, (size_t)64));
}

void _uslub_debug_print_leak(struct kmem_cache *s, struct slab *slab, void *obj)
{
	if (s->debug & USLUB_DBG_U) {
		struct track *t = get_track(s, obj, TRACK_ALLOC);
		emit("INFO: %s: object %p @offset=%zu left at destroy, allocated in \1%016lx\2 "
		     "age=%llu ms tid=%d\n", s->name, obj,
		     (size_t)((char *)obj - (char *)slab_address(slab)), (unsigned long)t->addr,
		     (unsigned long long)((now_ns() - t->when_ns) / 1000000), t->tid);
		return;
	}
	emit("INFO: %s: object %p @offset=%zu left at destroy (no owner tracking: "
	     "USLUB_DEBUG=U)\n", s->name, obj, (size_t)((char *)obj - (char *)slab_address(slab)));
}

/* fork: flush_lock. The forking thread forgets its cached id first, so
 * that the child's copy of it asks again, before anything in the child
 * records an owner (the child's flush of the other threads' cpu state
 * runs before this entry's postfork_child). */
static void debug_prefork(void)
{
	cached_tid = 0;
	uslub_mutex_lock(&flush_lock, RANK_FLUSH);
}

static void debug_postfork_parent(void)
{
	uslub_mutex_unlock(&flush_lock, RANK_FLUSH);
}

static void debug_postfork_child(void)
{
	uslub_mutex_reset(&flush_lock, RANK_FLUSH);
}

void _uslub_debug_lifecycle_init(void)
{
	static const struct uslub_lifecycle e = {
		.name = "flush_lock",
		.rank = RANK_FLUSH,
		.prefork = debug_prefork,
		.postfork_parent = debug_postfork_parent,
		.postfork_child = debug_postfork_child,
	};
	_uslub_lifecycle_register(&e);
}

/* ------------------------------------------------------------------------
 * Checks
 * ---------------------------------------------------------------------- */

/* The first byte of [start, start + len) that is not @val (the last one
 * compared with @last), or NULL. */
static unsigned char *check_bytes(unsigned char *start, size_t len, uint8_t val, uint8_t last)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (start[i] != val)
			return start + i;
	if (len && start[len - 1] != last)
		return start + len - 1;
	return NULL;
}

/* One region: report it, restore it. */
static bool check_region(struct kmem_cache *s, struct slab *slab, void *obj, const char *what,
			 void *start, size_t len, uint8_t val, uint8_t last)
{
	unsigned char *fault = check_bytes(start, len, val, last);
	if (likely(!fault))
		return true;
	unsigned char *s8 = start, *end = fault;
	for (size_t i = len; i-- > 0;)
		if (s8[i] != (i == len - 1 ? last : val)) {
			end = s8 + i;
			break;
		}
	char bug[64];
	snprintf(bug, sizeof(bug), "%s overwritten", what);
	_uslub_debug_object_err(s, slab, obj, bug,
				"%p-%p @offset=%zu. First byte 0x%02x instead of 0x%02x", (void *)fault,
				(void *)end, (size_t)(fault - (unsigned char *)slab_address(slab)),
				*fault, fault + 1 == (unsigned char *)start + len ? last : val);
	memset(start, val, len);
	if (len)
		((unsigned char *)start)[len - 1] = last;
	emit("FIX %s: Restoring %s %p-%p=0x%02x\n", s->name, what, start,
		      (void *)((char *)start + len - 1), val);
	return false;
}

unsigned int _uslub_debug_check_object(struct kmem_cache *s, struct slab *slab, void *obj,
				       uint8_t val)
{
	char *p = obj;
	unsigned int bad = 0;
	if (s->debug & USLUB_DBG_Z) {
		bad += !check_region(s, slab, obj, "Left Redzone", p - s->red_left_pad, s->red_left_pad,
				   val, val);
		bad += !check_region(s, slab, obj, "Right Redzone", p + s->object_size,
				   s->offset - s->object_size, val, val);
		unsigned int orig = get_orig_size(s, obj);
		if (val == SLUB_RED_ACTIVE && orig < s->object_size)
			bad += !check_region(s, slab, obj, "kmalloc Redzone", p + orig,
					   s->object_size - orig, val, val);
	}
	if (s->debug & USLUB_DBG_P) {
		if (val == SLUB_RED_INACTIVE)
			bad += !check_region(s, slab, obj, "Poison", p, s->object_size, POISON_FREE,
					   POISON_END);
		size_t end = s->size - s->red_left_pad;
		if (end > s->inuse)
			bad += !check_region(s, slab, obj, "Object padding", p + s->inuse, end - s->inuse,
					   POISON_INUSE, POISON_INUSE);
	}
	if (val == SLUB_RED_INACTIVE) {
		void *fp = get_freepointer(s, obj);
		if (fp && !obj_is_valid(s, slab, fp)) {
			_uslub_debug_object_err(s, slab, obj, "Freepointer corrupt",
						"free pointer of free object %p is %p, not an "
						"object of the slab", obj, fp);
			set_freepointer(s, obj, NULL);
			emit("FIX %s: freelist cut at %p\n", s->name, obj);
			bad++;
		}
	}
	return bad;
}

/* ------------------------------------------------------------------------
 * kmem_dump_obj(): where a pointer points, and who owns its object
 * ---------------------------------------------------------------------- */
static void dump_owner(const char *what, const struct track *t, uint64_t now)
{
	char sym[160];
	if (!t->addr) {
		_uslub_report("uslub:   %s: not recorded\n", what);
		return;
	}
	_uslub_debug_symbolize(t->addr, sym, sizeof(sym));
	_uslub_report("uslub:   %s at %s, thread %d, cpu %d, %llu ms ago\n", what, sym, t->tid,
		      t->cpu, (unsigned long long)((now - t->when_ns) / 1000000));
}

/* One report, formatted on the stack and written to stderr (nothing
 * allocated, no uslub lock taken; dladdr() symbolizes the owners). */
__public bool uslub_kmem_dump_obj(const void *object)
{
	struct slab *slab = object ? virt_to_slab(object) : NULL;
	struct kmem_cache *s = slab ? READ_ONCE(slab->slab_cache) : NULL;
	if (!s)
		return false;
	const char *base = slab_obj_base(s, slab);
	unsigned int objects = FC_OBJECTS(slab_counters(slab));
	ptrdiff_t rel = (const char *)object - base;
	unsigned int idx = rel < 0 ? 0 : (unsigned int)((size_t)rel / s->size);
	if (idx >= objects)
		idx = objects - 1;
	const char *start = base + (size_t)idx * s->size;
	_uslub_report("uslub: kmem_dump_obj: %p is in object %u of a slab of cache %s: object at "
		      "%p, offset %td into it, object size %u (stride %u), slab %p (order %u)\n",
		      object, idx, s->name, (const void *)start, (const char *)object - start,
		      s->object_size, s->size, slab_address(slab), slab_order(slab));
	if (s->debug & USLUB_DBG_U) {
		uint64_t now = now_ns();
		dump_owner("allocated", get_track(s, (void *)start, TRACK_ALLOC), now);
		dump_owner("last freed", get_track(s, (void *)start, TRACK_FREE), now);
	} else {
		_uslub_report("uslub:   owners not tracked (slub_debug U, SLAB_STORE_USER)\n");
	}
	return true;
}
