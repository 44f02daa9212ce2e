/*
 * Allocation stacks: the sampled mode's stack per sampled allocation
 * (USLUB_PROFILING=sample), interned in a fixed table, for the heap
 * profile (folded stacks: USLUB_HEAP_PROFILE, `uslub run --heap-profile`).
 * Exact mode keeps its one frame per allocation (the kernel's semantics);
 * a sample is rare (one per USLUB_PROFILING interval, 512 KiB by
 * default), so it can afford a walk of the call chain.
 *
 * Capture (_uslub_stack_tag(), from sample.c's cold path, before the
 * sample takes the slab's node lock): up to USLUB_STACK_DEPTH (64) return
 * addresses. On x86_64 our own walk of the modules' call frame
 * information (walk(), below; no dependency): so it walks through code
 * built without frame pointers (a Debian python3 or sqlite3), each
 * frame's layout at a return address parsed once and kept in one global
 * lock-free table (64 KiB of .bss at most), no memory per thread.
 * Elsewhere libunwind's unw_backtrace() where uslub was built with it
 * (USLUB_HAVE_LIBUNWIND, an optional dependency as liburcu is). Without
 * either, the
 * frame-pointer walk, bounded by the thread's stack (glibc:
 * [sp, __libc_stack_end) for the main thread, [sp, pthread_self()) for
 * the others, whose descriptor sits at the top of their stack block),
 * each frame above the one before and 8-aligned; a walk that stops short
 * keeps the call site alone, which, uslub's own frames keeping no frame
 * pointer at -O2, is what it gives as built (ThreadSanitizer builds walk
 * frame pointers, which the sanitizer builds keep).
 *
 * Why our own walk (measured on this machine, Xeon model 207, 2 vCPUs
 * shared, load ~4: medians of 5, ns per walk at 13 / 64 frames; memory
 * each new thread adds once it walked, 256 threads):
 *   - libunwind 1.6.2's unw_backtrace(): 145 / 603 ns (1346 / 5167
 *     instructions), but its fast path keeps a per-thread trace cache, a
 *     hash table it mmaps per thread and whose pages each walk touches:
 *     B9 (USLUB_STACK_DEPTH=64, 256 threads) held 236-248 KiB a thread
 *     against 196 with stacks off;
 *   - unw_init_local() + unw_step(): 6-7 us / 29-30 us with the global
 *     or the per-thread caching policy, 18 / 82 us with none: its cache
 *     lock blocks signals, two rt_sigprocmask calls a frame, whatever the
 *     policy (this build has no per-thread cache in TLS: libunwind.so's
 *     TLS is 16 bytes); no memory per thread but 4 KiB more of stack;
 *   - libgcc's _Unwind_Backtrace, which parses the FDEs again on every
 *     walk: 8 us for 15 frames, 33 us for 64;
 *   - this walk: 103 / 506 ns (878 / 3805 instructions), no memory per
 *     thread (B9: 195.9 KiB a thread with stacks and without), the same
 *     stacks as unw_backtrace's (python3's and sqlite3's heap profiles
 *     with one seed: the same lines, frame for frame);
 *   - a frame-pointer walk: 3-5 ns a frame, but it stops at the first
 *     frame of code without frame pointers, which is the wrapper the
 *     stack is for.
 *
 * Safety: nothing here allocates or takes a uslub lock. A capture is
 * never made with a uslub lock held (the stack is then left out: the
 * "<no stack>" bucket) and never nested: a signal handler that allocates
 * while its thread is in a capture counts its sample there. Memory is
 * read only where it is known to be (the live stack) or through
 * process_vm_readv() (read_mem(): no descriptor, no fault on memory not
 * mapped readable when the walk first reads its page). The walk's one lock is the loader's
 * (dl_iterate_phdr(): a return address not in the layouts' table, and
 * every 64th walk of a thread), which dlclose does not hold while it runs
 * destructors that free. fork: prefork closes a gate and waits for the
 * captures in flight (microseconds) to end (libunwind, where it walks,
 * takes locks of its own, its memory pool on a cache miss, which a fork
 * in another thread would leave held in the child); the captures that
 * find the gate closed go to "<no stack>". dlclose: the layouts (and
 * libunwind's caches) are emptied when the loader's unload count moved
 * (checked every 64th walk of a thread); a layout kept a little longer
 * for an unloaded module's code can only make a wrong stack. libunwind,
 * where it walks: its memory reader is replaced (read_word()) and the
 * pipes its setup opens are closed (unwinder_init()).
 *
 * The table: STACKS slots, claimed lock-free (a compare-and-swap of the
 * slot's hash, then the frames, then "ready" with release); a lookup
 * compares hash, caller, depth and frames of ready slots only, so a slot
 * being written (by a thread that a signal interrupted, or a thread lost
 * to fork) is passed over, never waited for: the same stack may then get
 * a second slot, which the output adds up. Past STACKS_LIMIT slots (or
 * STACK_PROBES probes) a new stack counts in "other". It is .bss: pages
 * never touched cost nothing.
 *
 * Each slot embeds a struct uslub_alloc_tag: a sampled object's extension
 * points to its stack's tag (not registered, never counted by tag_add()),
 * and the stack keeps the call site's own tag, so that the sample's free
 * (_uslub_sample_free()) takes the estimate off both. Only call-site tags
 * that are never freed get stacks (the malloc family's caller tags, the
 * untagged tag, the library's own): a static tag of a shared object that
 * is unloaded is cleared from the extensions by its unload walk, which a
 * stack's pointer to it would escape.
 *
 * Output (uslub_heap_profile_print(), never under a lock): folded stacks,
 * one line per stack, root first, leaf last, ';' between frames, then a
 * space and the estimated bytes. A frame is "SYMBOL (MODULE+0xOFFSET)",
 * the module the one mapped there when the stack was interned (the
 * module table, below), the offset the return address less its load
 * bias (what addr2line takes), SYMBOL dladdr()'s dynamic symbol when
 * there is one; "[unloaded] (MODULE+0xOFFSET)" in a module unloaded
 * since. Or the dump (USLUB_HEAP_DUMP: dump()), every count and the
 * modules, which `uslub heap` and `uslub run --heap-profile` name with
 * the rules of `uslub resolve`.
 */
#define _GNU_SOURCE
#include <sys/stat.h>         /* before slub.h, whose stat() is a macro */
#include "ext/ext.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__x86_64__) && !defined(USLUB_WALK_FP)
#define EH_WALK                 /* our own walk of the modules' .eh_frame */
#define WALKER "the modules' .eh_frame"
#elif defined(USLUB_HAVE_LIBUNWIND)
#define WALKER "libunwind"
#define UNW_WALK                /* libunwind's unw_backtrace() */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#else
#define WALKER "frame pointers"
#endif

#define STACK_BITS    14
#define STACKS        (1u << STACK_BITS)
#define STACKS_LIMIT  (STACKS * 3 / 4)
#define STACK_PROBES  64
#define CAPTURE_MAX   (USLUB_STACK_DEPTH_MAX + 24)   /* + uslub's own frames */

struct stack {
	struct uslub_alloc_tag tag;     /* what a sampled object's extension holds */
	uint64_t hash;                  /* 0 free; claimed by compare-and-swap */
	unsigned int ready;             /* release: the fields below written */
	unsigned int depth;
	unsigned int epoch;             /* the module table's when interned */
	struct uslub_alloc_tag *caller; /* the call site's tag (allocinfo's) */
	int64_t alloc_bytes, alloc_objs, free_bytes, free_objs;   /* atomics */
	uintptr_t frames[USLUB_STACK_DEPTH_MAX];                  /* leaf first */
};

static struct stack stacks[STACKS];
static unsigned int used;
static unsigned int limit = STACKS_LIMIT;       /* tests lower it */
/* samples without a stack: the table full, a lock held, a nested or
 * gated capture, a tag that gets none */
static int64_t other_alloc_bytes, other_alloc_objs, other_free_bytes, other_free_objs;
static unsigned int depth_max;                  /* USLUB_STACK_DEPTH */

/* fork: the gate and the captures in flight */
static unsigned int gate;
static unsigned int inflight;
static __thread unsigned char in_capture __tls_ie;

/* uslub's own code, trimmed from the leaf end when the caller's return
 * address is not known (a shared object only: linked into the program,
 * the range would be the program's) */
static uintptr_t own_lo, own_hi;
static unsigned long long seen_subs;            /* the loader's unload count */
static uintptr_t mod_busy;                      /* the module table's updater (below):
						 * its pthread_self(), 0 none */

/* ---- capture ------------------------------------------------------------ */

static int own_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t a = (uintptr_t)data;
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || a - lo >= ph->p_memsz)
			continue;
		if (info->dlpi_name && info->dlpi_name[0]) {
			own_lo = lo;
			own_hi = lo + ph->p_memsz;
		}
		return 1;
	}
	return 0;
}

extern void *__libc_stack_end;

/* The top of the stack that @sp is in (glibc: the main thread's
 * __libc_stack_end, a thread's descriptor, at the top of its stack
 * block), or @sp (nothing above it is known: a stack of the program's
 * own, a signal stack). */
static uintptr_t stack_top(uintptr_t sp)
{
	uintptr_t hi = (uintptr_t)__libc_stack_end;
	if (sp < hi && hi - sp <= ((uintptr_t)1 << 30))
		return hi;
	hi = (uintptr_t)pthread_self();
	if (sp < hi && hi - sp <= ((uintptr_t)1 << 30))
		return hi;
	return sp;
}

/* The loader's counts of modules loaded and unloaded (dl_iterate_phdr()'s
 * dlpi_adds, dlpi_subs: its first entry says them). */
struct loader_counts {
	unsigned long long adds, subs;
};

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct loader_counts *c = data;
	c->adds = info->dlpi_adds;
	c->subs = info->dlpi_subs;
	return 1;
}

#if defined(EH_WALK) || defined(UNW_WALK)
static __thread unsigned int walks_left __tls_ie;   /* to the next unload check */

/* Every 64th walk of a thread: has a module been unloaded since the last
 * look? The walker then forgets its layouts: one kept for an unloaded
 * module's code can only make a wrong stack (nothing unmapped is read),
 * and asking the loader costs its lock. */
static bool unload_seen(void)
{
	if (walks_left--)
		return false;
	walks_left = 63;
	struct loader_counts c = { 0, 0 };
	dl_iterate_phdr(counts_cb, &c);
	if (c.subs == __atomic_load_n(&seen_subs, __ATOMIC_RELAXED))
		return false;
	__atomic_store_n(&seen_subs, c.subs, __ATOMIC_RELAXED);
	return true;
}
#endif

#ifdef EH_WALK
/*
 * The walk of the modules' .eh_frame, our own (x86_64): the call frame
 * information gcc and clang emit, interpreted for the three registers a
 * walk needs (the CFA's, rbp, the return address), each frame's layout
 * at a return address kept in one global table (layouts[]: no table per
 * thread).
 *
 * Memory: a word of the live stack (from walk()'s own frame to the top
 * of the stack being walked) is read as it is; anything else (a module's
 * .eh_frame_hdr and .eh_frame, a frame on another stack) through
 * process_vm_readv() on this process, which fails cleanly on memory that
 * is not mapped readable (a module unloaded under the walk), and the page
 * is then trusted for the rest of the walk (GOOD_PAGES of them; a page
 * unmapped later, dlclose, is never trusted from an older walk).
 */
#define GOOD_PAGES 8
struct reader {
	uintptr_t lo, hi;               /* the live stack */
	uintptr_t good[GOOD_PAGES];
	unsigned int next;
};
static pid_t self_pid;

static bool page_good(const struct reader *r, uintptr_t page)
{
	if (!page)                      /* the empty slots' value: never good */
		return false;
	for (unsigned int i = 0; i < GOOD_PAGES; i++)
		if (r->good[i] == page)
			return true;
	return false;
}

/* @n (1..8) bytes at @a into @dst: false when they are not readable */
static bool read_mem(struct reader *r, uintptr_t a, void *dst, size_t n)
{
	uintptr_t first = a & ~(uintptr_t)4095, last = (a + n - 1) & ~(uintptr_t)4095;
	if ((a >= r->lo && a < r->hi && r->hi - a >= n) ||
	    (page_good(r, first) && page_good(r, last))) {
		memcpy(dst, (const void *)a, n);
		return true;
	}
	struct iovec local = { dst, n }, remote = { (void *)a, n };
	if (!first || a + n < a ||
	    process_vm_readv(self_pid, &local, 1, &remote, 1, 0) != (ssize_t)n)
		return false;
	r->good[r->next++ % GOOD_PAGES] = first;
	r->good[r->next++ % GOOD_PAGES] = last;
	return true;
}

/* A word of the stack: the live stack's inline, the rest by read_mem() */
static inline bool read_word(struct reader *r, uintptr_t a, uintptr_t *v)
{
	if (a >= r->lo && a < r->hi && r->hi - a >= sizeof(*v)) {
		memcpy(v, (const void *)a, sizeof(*v));
		return true;
	}
	uintptr_t t;            /* @v's address kept from escaping: a register */
	if (!read_mem(r, a, &t, sizeof(t)))
		return false;
	*v = t;
	return true;
}

/* A parse of a module's unwind tables: p the next byte; bad once a read
 * failed or the data is not what is understood (the parse then ends) */
struct cur {
	struct reader *r;
	uintptr_t p;
	bool bad;
};

static uint64_t get(struct cur *c, size_t n)
{
	uint64_t v = 0;                 /* little endian */
	if (c->bad || !read_mem(c->r, c->p, &v, n))
		c->bad = true;
	c->p += n;
	return v;
}

static uint64_t uleb(struct cur *c)
{
	uint64_t v = 0;
	for (unsigned int shift = 0; !c->bad; shift += 7) {
		uint64_t b = get(c, 1);
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		if (!(b & 0x80) || shift > 70)
			break;
	}
	return v;
}

static int64_t sleb(struct cur *c)
{
	uint64_t v = 0, b = 0;
	unsigned int shift = 0;
	do {
		b = get(c, 1);
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad && shift < 70);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

#define PE_OMIT    0xff
#define PE_PCREL   0x10
#define PE_DATAREL 0x30

/* A pointer of encoding @enc (DW_EH_PE_*), relative to the field's own
 * address (pcrel) or @data (datarel); indirect ones are left unread (a
 * personality routine's: skipped) */
static uintptr_t encoded(struct cur *c, unsigned int enc, uintptr_t data)
{
	uintptr_t at = c->p, v;
	if (enc == PE_OMIT)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: v = get(c, 8); break;
	case 0x01: v = uleb(c); break;
	case 0x02: v = get(c, 2); break;
	case 0x03: v = get(c, 4); break;
	case 0x04: v = get(c, 8); break;
	case 0x09: v = (uintptr_t)sleb(c); break;
	case 0x0a: v = (uintptr_t)(int64_t)(int16_t)get(c, 2); break;
	case 0x0b: v = (uintptr_t)(int64_t)(int32_t)get(c, 4); break;
	case 0x0c: v = get(c, 8); break;
	default: c->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case PE_PCREL: v += at; break;
	case PE_DATAREL: v += data; break;
	default: c->bad = true;
	}
	return v;
}

/* A frame's layout at a return address: the CFA is rsp's or rbp's value
 * (before the call) plus cfa_off; the return address is at CFA - ra_neg,
 * the caller's rbp at CFA - rbp_neg (L_RBP_SAVED), unchanged (neither
 * flag) or not known (L_RBP_LOST). */
#define L_VALID     0x01
#define L_STOP      0x02        /* the outermost frame, or one not walked */
#define L_CFA_RBP   0x04
#define L_RBP_SAVED 0x08
#define L_RBP_LOST  0x10
struct layout {
	uint8_t flags, ra_neg;
	uint16_t rbp_neg;
	uint32_t cfa_off;
};

/* The row the CFA program builds for the three registers */
enum { R_SAME, R_OFF, R_UNDEF, R_OTHER };
struct row {
	int cfa_reg;                    /* DWARF: 6 rbp, 7 rsp, -1 other */
	int64_t cfa_off;
	uint8_t rbp, ra;                /* R_* */
	int64_t rbp_off, ra_off;
};

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA  16

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	unsigned int fde_enc;
	bool signal, z;
	uintptr_t insns, end;
};

/* The CIE at @at */
static bool read_cie(struct reader *r, uintptr_t at, struct cie *ci)
{
	struct cur c = { r, at, false };
	uint64_t len = get(&c, 4);
	if (len == 0xffffffffu)
		len = get(&c, 8);
	ci->end = c.p + len;
	if (get(&c, 4) != 0)            /* a CIE's id in .eh_frame */
		return false;
	unsigned int version = (unsigned int)get(&c, 1);
	char aug[8];
	unsigned int k = 0;
	for (;;) {
		char ch = (char)get(&c, 1);
		if (c.bad || k == sizeof(aug))
			return false;
		aug[k++] = ch;
		if (!ch)
			break;
	}
	if (version == 4) {             /* address and segment sizes */
		if (get(&c, 1) != 8 || get(&c, 1) != 0)
			return false;
	} else if (version != 1 && version != 3) {
		return false;
	}
	ci->code_align = uleb(&c);
	ci->data_align = sleb(&c);
	ci->ra_reg = version == 1 ? get(&c, 1) : uleb(&c);
	ci->fde_enc = 0;                /* absptr */
	ci->signal = false;
	ci->z = aug[0] == 'z';
	if (ci->z) {
		uint64_t n = uleb(&c);
		uintptr_t aug_end = c.p + n;
		for (k = 1; aug[k] && !c.bad; k++) {
			if (aug[k] == 'R') {
				ci->fde_enc = (unsigned int)get(&c, 1);
			} else if (aug[k] == 'P') {
				encoded(&c, (unsigned int)get(&c, 1) & 0x7f, 0);
			} else if (aug[k] == 'L') {
				get(&c, 1);
			} else if (aug[k] == 'S') {
				ci->signal = true;
			} else {
				break;          /* the rest is skipped by its length */
			}
		}
		c.p = aug_end;
	} else if (aug[0]) {
		return false;
	}
	ci->insns = c.p;
	return !c.bad && ci->ra_reg == DW_RA && ci->insns <= ci->end;
}

#define STATES 8                /* DW_CFA_remember_state's depth */

/* @v times @f, wrapping (garbage data must not be undefined behaviour) */
static inline int64_t scaled(uint64_t v, int64_t f)
{
	return (int64_t)(v * (uint64_t)f);
}

static void rule(struct row *w, uint64_t reg, uint8_t how, int64_t off)
{
	if (reg == DW_RBP) {
		w->rbp = how;
		w->rbp_off = off;
	} else if (reg == DW_RA) {
		w->ra = how;
		w->ra_off = off;
	}
}

/* Run the CFA program [c->p, end) from location @loc until the row for
 * @pc is built (an advance past @pc ends it); @init: the CIE's row (for
 * DW_CFA_restore), NULL while running the CIE's own program */
static void run_cfa(struct cur *c, uintptr_t end, const struct cie *ci, uintptr_t loc,
		    uintptr_t pc, struct row *w, const struct row *init)
{
	struct row saved[STATES];
	unsigned int depth = 0;
	while (c->p < end && !c->bad) {
		unsigned int op = (unsigned int)get(c, 1), low = op & 0x3f;
		uint64_t reg, adv = 0;
		switch (op >> 6) {
		case 1:                 /* DW_CFA_advance_loc */
			adv = low;
			goto advance;
		case 2:                 /* DW_CFA_offset */
			rule(w, low, R_OFF, scaled(uleb(c), ci->data_align));
			continue;
		case 3:                 /* DW_CFA_restore */
			if (!init)
				c->bad = true;
			else if (low == DW_RBP)
				w->rbp = init->rbp, w->rbp_off = init->rbp_off;
			else if (low == DW_RA)
				w->ra = init->ra, w->ra_off = init->ra_off;
			continue;
		}
		switch (op) {
		case 0x00:              /* DW_CFA_nop */
			break;
		case 0x01:              /* DW_CFA_set_loc */
			loc = encoded(c, ci->fde_enc, 0);
			if (loc > pc)
				return;
			break;
		case 0x02: adv = get(c, 1); goto advance;
		case 0x03: adv = get(c, 2); goto advance;
		case 0x04: adv = get(c, 4); goto advance;
		case 0x05:              /* DW_CFA_offset_extended */
			reg = uleb(c);
			rule(w, reg, R_OFF, scaled(uleb(c), ci->data_align));
			break;
		case 0x06:              /* DW_CFA_restore_extended */
			reg = uleb(c);
			if (!init)
				c->bad = true;
			else if (reg == DW_RBP)
				w->rbp = init->rbp, w->rbp_off = init->rbp_off;
			else if (reg == DW_RA)
				w->ra = init->ra, w->ra_off = init->ra_off;
			break;
		case 0x07:              /* DW_CFA_undefined */
			rule(w, uleb(c), R_UNDEF, 0);
			break;
		case 0x08:              /* DW_CFA_same_value */
			rule(w, uleb(c), R_SAME, 0);
			break;
		case 0x09:              /* DW_CFA_register */
			reg = uleb(c);
			uleb(c);
			rule(w, reg, R_OTHER, 0);
			break;
		case 0x0a:              /* DW_CFA_remember_state */
			if (depth == STATES)
				c->bad = true;
			else
				saved[depth++] = *w;
			break;
		case 0x0b:              /* DW_CFA_restore_state (the CFA too) */
			if (!depth)
				c->bad = true;
			else
				*w = saved[--depth];
			break;
		case 0x0c:              /* DW_CFA_def_cfa */
			reg = uleb(c);
			w->cfa_reg = reg == DW_RBP || reg == DW_RSP ? (int)reg : -1;
			w->cfa_off = (int64_t)uleb(c);
			break;
		case 0x0d:              /* DW_CFA_def_cfa_register */
			reg = uleb(c);
			w->cfa_reg = reg == DW_RBP || reg == DW_RSP ? (int)reg : -1;
			break;
		case 0x0e:              /* DW_CFA_def_cfa_offset */
			w->cfa_off = (int64_t)uleb(c);
			break;
		case 0x0f:              /* DW_CFA_def_cfa_expression */
			c->p += uleb(c);
			w->cfa_reg = -1;
			break;
		case 0x10:              /* DW_CFA_expression */
		case 0x16:              /* DW_CFA_val_expression */
			reg = uleb(c);
			c->p += uleb(c);
			rule(w, reg, R_OTHER, 0);
			break;
		case 0x11:              /* DW_CFA_offset_extended_sf */
			reg = uleb(c);
			rule(w, reg, R_OFF, scaled((uint64_t)sleb(c), ci->data_align));
			break;
		case 0x12:              /* DW_CFA_def_cfa_sf */
			reg = uleb(c);
			w->cfa_reg = reg == DW_RBP || reg == DW_RSP ? (int)reg : -1;
			w->cfa_off = scaled((uint64_t)sleb(c), ci->data_align);
			break;
		case 0x13:              /* DW_CFA_def_cfa_offset_sf */
			w->cfa_off = scaled((uint64_t)sleb(c), ci->data_align);
			break;
		case 0x14:              /* DW_CFA_val_offset */
			reg = uleb(c);
			uleb(c);
			rule(w, reg, R_OTHER, 0);
			break;
		case 0x15:              /* DW_CFA_val_offset_sf */
			reg = uleb(c);
			sleb(c);
			rule(w, reg, R_OTHER, 0);
			break;
		case 0x2e:              /* DW_CFA_GNU_args_size */
			uleb(c);
			break;
		case 0x2f:              /* DW_CFA_GNU_negative_offset_extended */
			reg = uleb(c);
			rule(w, reg, R_OFF, scaled(0 - uleb(c), ci->data_align));
			break;
		default:
			c->bad = true;
		}
		continue;
advance:
		loc += adv * ci->code_align;
		if (loc > pc)
			return;
	}
}

/* The FDE of @pc, looked up in its module's .eh_frame_hdr (the binary
 * search table gcc's and the other linkers' --eh-frame-hdr write) */
struct find {
	uintptr_t pc, fde;
	struct reader *r;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *f = data;
	uintptr_t hdr = 0;
	bool in = false;
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && f->pc - lo < ph->p_memsz)
			in = true;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = lo;
	}
	if (!in)
		return 0;
	if (!hdr)
		return 1;
	struct cur c = { f->r, hdr, false };
	if (get(&c, 1) != 1)
		return 1;
	unsigned int ptr_enc = (unsigned int)get(&c, 1), count_enc = (unsigned int)get(&c, 1),
		     table_enc = (unsigned int)get(&c, 1);
	encoded(&c, ptr_enc, hdr);      /* .eh_frame itself: not needed */
	uintptr_t count = encoded(&c, count_enc, hdr), table = c.p;
	if (c.bad || table_enc != (PE_DATAREL | 0x0b) || !count)
		return 1;
	/* entries of (initial location, FDE), int32 each, from hdr */
	uintptr_t lo = 0, hi = count;
	while (hi - lo > 1) {
		uintptr_t mid = lo + (hi - lo) / 2;
		c.p = table + mid * 8;
		uintptr_t at = hdr + (uintptr_t)(int64_t)(int32_t)get(&c, 4);
		if (f->pc < at)
			hi = mid;
		else
			lo = mid;
	}
	c.p = table + lo * 8;
	uintptr_t first = hdr + (uintptr_t)(int64_t)(int32_t)get(&c, 4);
	uintptr_t fde = hdr + (uintptr_t)(int64_t)(int32_t)get(&c, 4);
	if (!c.bad && f->pc >= first)
		f->fde = fde;
	return 1;
}

/* The layout of the frame whose code returns to @ra (parsed: the slow
 * path, once per return address while it stays in layouts[]) */
static __attribute__((noinline, cold)) struct layout parse_layout(struct reader *r, uintptr_t ra)
{
	struct layout l = { L_VALID | L_STOP, 0, 0, 0 };
	uintptr_t pc = ra - 1;          /* the call instruction's */
	struct find f = { pc, 0, r };
	dl_iterate_phdr(find_cb, &f);
	if (!f.fde)
		return l;
	struct cur c = { r, f.fde, false };
	uint64_t len = get(&c, 4);
	if (len == 0xffffffffu)
		len = get(&c, 8);
	uintptr_t end = c.p + len, id_at = c.p;
	uint32_t id = (uint32_t)get(&c, 4);
	struct cie ci;
	if (c.bad || !id || !read_cie(r, id_at - id, &ci) || ci.signal)
		return l;
	uintptr_t start = encoded(&c, ci.fde_enc, 0);
	uintptr_t range = encoded(&c, ci.fde_enc & 0x0f, 0);
	if (c.bad || pc - start >= range)
		return l;
	if (ci.z)                       /* the augmentation data (LSDA): skipped */
		c.p += uleb(&c);
	struct row init = { -1, 0, R_SAME, R_SAME, 0, 0 }, w;
	struct cur ic = { r, ci.insns, false };
	run_cfa(&ic, ci.end, &ci, 0, UINTPTR_MAX, &init, NULL);
	w = init;
	run_cfa(&c, end, &ci, start, pc, &w, &init);
	if (ic.bad || c.bad || w.cfa_reg < 0 || w.cfa_off < 8 || w.cfa_off > UINT32_MAX ||
	    w.ra == R_OTHER || w.rbp == R_OTHER)
		return l;
	if (w.ra == R_UNDEF)            /* the outermost frame */
		return l;
	if (w.ra != R_OFF || w.ra_off >= 0 || w.ra_off < -255)
		return l;
	if (w.rbp == R_OFF && (w.rbp_off >= 0 || w.rbp_off < -65535))
		return l;
	l.flags = L_VALID | (w.cfa_reg == DW_RBP ? L_CFA_RBP : 0) |
		  (w.rbp == R_OFF ? L_RBP_SAVED : w.rbp == R_UNDEF ? L_RBP_LOST : 0);
	l.cfa_off = (uint32_t)w.cfa_off;
	l.ra_neg = (uint8_t)-w.ra_off;
	l.rbp_neg = w.rbp == R_OFF ? (uint16_t)-w.rbp_off : 0;
	return l;
}

/*
 * The layouts, one global table of LAYOUTS return addresses (direct
 * mapped, 16 bytes a slot: .bss, 64 KiB at most for the process, however
 * many threads walk). Lock-free: a slot is two words, the layout and the
 * return address xor'ed with it, each stored and loaded whole; a reader
 * takes the slot when the two match its return address, so a slot being
 * rewritten by another thread (between its two stores) reads as a miss,
 * never as another address's layout. Emptied when a module was unloaded
 * (walk()).
 */
#define LAYOUT_BITS 12
#define LAYOUTS     (1u << LAYOUT_BITS)
static struct { uint64_t key, val; } layouts[LAYOUTS];

static inline uint64_t layout_word(struct layout l)
{
	return l.flags | (uint64_t)l.ra_neg << 8 | (uint64_t)l.rbp_neg << 16 | (uint64_t)l.cfa_off << 32;
}

static inline unsigned int layout_slot(uintptr_t ra)
{
	return (unsigned int)((ra * 0x9e3779b97f4a7c15ull) >> (64 - LAYOUT_BITS));
}

static struct layout layout_of(struct reader *r, uintptr_t ra)
{
	unsigned int i = layout_slot(ra);
	uint64_t val = __atomic_load_n(&layouts[i].val, __ATOMIC_RELAXED);
	uint64_t key = __atomic_load_n(&layouts[i].key, __ATOMIC_RELAXED);
	struct layout l;
	if (!(val & L_VALID) || (key ^ val) != ra) {
		l = parse_layout(r, ra);
		val = layout_word(l);
		__atomic_store_n(&layouts[i].val, val, __ATOMIC_RELAXED);
		__atomic_store_n(&layouts[i].key, ra ^ val, __ATOMIC_RELAXED);
		return l;
	}
	l.flags = (uint8_t)val;
	l.ra_neg = (uint8_t)(val >> 8);
	l.rbp_neg = (uint16_t)(val >> 16);
	l.cfa_off = (uint32_t)(val >> 32);
	return l;
}

static void layouts_flush(void)
{
	for (unsigned int i = 0; i < LAYOUTS; i++)
		__atomic_store_n(&layouts[i].val, 0, __ATOMIC_RELAXED);
}

/* The walk: from walk()'s return address, each frame's CFA from its
 * layout, the return address and the caller's rbp read from the stack
 * below that CFA; it stops at the outermost frame, at a frame whose
 * layout is not known or not understood (a signal frame, a CFA by
 * expression: the PLT's, stack realignment), a read that fails, or a CFA
 * that does not move up the stack. */
static __attribute__((noinline)) unsigned int walk(uintptr_t *pcs, unsigned int max)
{
	/* its frame pointer: gcc and clang keep one where it is asked for */
	uintptr_t *fp = __builtin_frame_address(0);
	if (unload_seen())
		layouts_flush();
	struct reader r;
	r.lo = (uintptr_t)&r < (uintptr_t)fp ? (uintptr_t)&r : (uintptr_t)fp;
	r.hi = stack_top(r.lo);
	memset(r.good, 0, sizeof(r.good));
	r.next = 0;
	/* walk()'s caller's registers, saved by walk()'s own prologue */
	uintptr_t pc = fp[1], sp = (uintptr_t)(fp + 2), bp = fp[0];
	bool bp_known = true;
	unsigned int n = 0;
	while (n < max && pc) {
		pcs[n++] = pc;
		struct layout l = layout_of(&r, pc);
		if (l.flags & L_STOP)
			break;
		uintptr_t cfa;
		if (l.flags & L_CFA_RBP) {
			if (!bp_known)
				break;
			cfa = bp + l.cfa_off;
		} else {
			cfa = sp + l.cfa_off;
		}
		if (cfa <= sp || cfa < l.ra_neg || !read_word(&r, cfa - l.ra_neg, &pc))
			break;
		if (l.flags & L_RBP_SAVED)
			bp_known = cfa >= l.rbp_neg && read_word(&r, cfa - l.rbp_neg, &bp);
		else if (l.flags & L_RBP_LOST)
			bp_known = false;
		sp = cfa;
	}
	return n;
}
#elif defined(UNW_WALK)
/*
 * libunwind's reader of the process's memory, replaced. Its own (x86_64
 * Ginit.c) validates every address once unw_step() has begun (the slow
 * path, a frame not in its per-thread cache) by write()ing a byte of it
 * into a pipe it opened at its setup, and reopens that pipe, closing the
 * two descriptor numbers it had, when a read from it fails: in a program
 * that closed them and opened files there since (a daemon), it would
 * read a byte of the program's file and close it. This reader opens
 * nothing: a word of the live stack (from its own frame to the top of
 * the stack being walked) is read as it is; any
 * other (the modules' .eh_frame, a frame on another stack, whatever a
 * frame-chain guess points at) through process_vm_readv() on this
 * process, which fails cleanly on memory that is not mapped readable,
 * and the page is then trusted for the rest of the walk (a page
 * unmapped later, dlclose, is never trusted from an older walk).
 */
#define GOOD_PAGES 8
static __thread uintptr_t walk_hi __tls_ie;
static __thread uintptr_t good[GOOD_PAGES] __tls_ie;
static __thread unsigned int good_next __tls_ie;
static pid_t self_pid;

static bool page_good(uintptr_t page)
{
	for (unsigned int i = 0; i < GOOD_PAGES; i++)
		if (good[i] == page)
			return true;
	return false;
}

static int read_word(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
		     void *arg)
{
	uintptr_t a = (uintptr_t)addr, first = a & ~(uintptr_t)4095,
		  last = (a + sizeof(*val) - 1) & ~(uintptr_t)4095;
	/* the live stack, from here (the walk's own frames too) up */
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	bool live = a >= sp && a + sizeof(*val) <= walk_hi;
	if (write) {
		/* the fast trace's setup of a frame writes the registers
		 * of its context, which is on the walk's own stack */
		if (!live)
			return -UNW_EINVAL;
		memcpy((void *)a, val, sizeof(*val));
		return 0;
	}
	if (live || (page_good(first) && page_good(last))) {
		memcpy(val, (const void *)a, sizeof(*val));
		return 0;
	}
	struct iovec local = { val, sizeof(*val) }, remote = { (void *)a, sizeof(*val) };
	if (!first || process_vm_readv(self_pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(*val))
		return -UNW_EINVAL;
	good[good_next++ % GOOD_PAGES] = first;
	good[good_next++ % GOOD_PAGES] = last;
	return 0;
}

static unsigned int walk(uintptr_t *pcs, unsigned int max)
{
	uintptr_t here = 0;
	if (unload_seen())              /* libunwind's layouts go */
		unw_flush_cache(unw_local_addr_space, 0, 0);
	walk_hi = stack_top((uintptr_t)&here);
	memset(good, 0, sizeof(good));
	int n = unw_backtrace((void **)pcs, (int)max);
	return n > 0 ? (unsigned int)n : 0;
}
#else
/* The frame-pointer walk, within the thread's stack (see the top); its
 * own frame pointer kept by __builtin_frame_address() (gcc and clang). */
static __attribute__((noinline)) unsigned int walk(uintptr_t *pcs, unsigned int max)
{
	uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)&fp, hi = stack_top(lo);
	unsigned int n = 0;
	while (n < max) {
		uintptr_t f = (uintptr_t)fp;
		if (f < lo || f + 2 * sizeof(uintptr_t) > hi || (f & (sizeof(uintptr_t) - 1)))
			break;
		uintptr_t ret = fp[1];
		if (!ret)
			break;
		pcs[n++] = ret;
		lo = f + 2 * sizeof(uintptr_t);
		fp = (uintptr_t *)fp[0];
	}
	return n;
}
#endif

#ifdef UNW_WALK
/* The two lowest free descriptor numbers, which the next pipe takes. */
static bool probe_fds(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return false;
	close(fds[0]);
	close(fds[1]);
	return true;
}

/* @fds, when they are now the two ends of one pipe, O_NONBLOCK and
 * close-on-exec: libunwind's, closed. */
static void close_pipe(const int fds[2])
{
	struct stat st[2];
	for (int i = 0; i < 2; i++) {
		int fl = fcntl(fds[i], F_GETFL), fd = fcntl(fds[i], F_GETFD);
		if (fl < 0 || fd < 0 || !(fl & O_NONBLOCK) || !(fd & FD_CLOEXEC) ||
		    fstat(fds[i], &st[i]) || !S_ISFIFO(st[i].st_mode))
			return;
	}
	if (st[0].st_ino != st[1].st_ino || st[0].st_dev != st[1].st_dev)
		return;
	close(fds[0]);
	close(fds[1]);
}
#endif

/* The unwinder's first use (its one-time setup, the main thread's
 * cache) here, not inside the first sampled malloc. libunwind's setup
 * (1.6) opens a pipe (O_NONBLOCK, O_CLOEXEC) for its address checks, in
 * each of its two builds (the local one unw_backtrace() uses, the
 * generic one unw_get_accessors() sets up): its reader is replaced
 * (read_word()), so they are never used, and they would be two of the
 * program's descriptors (ls /proc/self/fd would list them; a program
 * may count on its numbers). Each takes the two lowest free numbers,
 * found just before: closed after, when they are such a pipe. */
static void unwinder_init(void)
{
	uintptr_t f[8];
#if defined(EH_WALK)
	self_pid = getpid();
	walk(f, 8);             /* the main thread's layouts */
#elif defined(UNW_WALK)
	self_pid = getpid();
	int local[2], generic[2];
	bool known = probe_fds(local);
	walk(f, 8);             /* libunwind's local setup: its pipe */
	bool known2 = probe_fds(generic);
	unw_accessors_t *acc = unw_get_accessors(unw_local_addr_space);   /* another */
	if (acc)
		acc->access_mem = read_word;
	if (known)
		close_pipe(local);
	if (known2)
		close_pipe(generic);
	walk(f, 8);
#else
	walk(f, 8);
#endif
}

/* fork, before: close the gate, wait for the captures in flight (the
 * forking thread's own, when fork() was called from a signal handler
 * inside one, excepted). */
static void stacks_prefork(void)
{
	__atomic_store_n(&gate, 1, __ATOMIC_SEQ_CST);
	unsigned int mine = in_capture;
	while (__atomic_load_n(&inflight, __ATOMIC_SEQ_CST) > mine)
		sched_yield();
}

static void stacks_postfork_parent(void)
{
	__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
}

static void stacks_postfork_child(void)
{
#if defined(EH_WALK) || defined(UNW_WALK)
	self_pid = getpid();
#endif
	__atomic_store_n(&inflight, in_capture, __ATOMIC_RELAXED);  /* the others are gone */
	/* an updater lost to fork; not this thread's own (a fork from a
	 * signal handler inside its update, which goes on after it) */
	if (__atomic_load_n(&mod_busy, __ATOMIC_RELAXED) != (uintptr_t)pthread_self())
		__atomic_store_n(&mod_busy, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
}

/* The call chain, leaf first, with uslub's own frames taken off: from
 * the frame that is @caller (the allocation entry's return address) when
 * it is known, else from the first frame outside uslub's shared object.
 * 0 when no capture could be made. */
static unsigned int capture(uintptr_t *out, uintptr_t caller)
{
	uintptr_t pcs[CAPTURE_MAX];
	if (in_capture || _uslub_locks_held)
		return 0;
	in_capture = 1;
	__atomic_add_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
	unsigned int n = 0;
	if (!__atomic_load_n(&gate, __ATOMIC_SEQ_CST))
		n = walk(pcs, CAPTURE_MAX);
	__atomic_sub_fetch(&inflight, 1, __ATOMIC_RELEASE);
	in_capture = 0;
	unsigned int i = 0;
	if (caller) {
		while (i < n && pcs[i] != caller)
			i++;
		if (i == n) {                   /* the walk stopped short */
			out[0] = caller;
			return 1;
		}
	} else {
		while (i < n && pcs[i] - own_lo < own_hi - own_lo)
			i++;
	}
	unsigned int k = MIN(n - i, depth_max);
	memcpy(out, pcs + i, k * sizeof(*out));
	return k;
}

/* Tests (white-box): a walk from the caller, leaf first, uslub's own
 * frames kept; 0 inside a capture of this thread. */
unsigned int _uslub_stacks_walk(uintptr_t *pcs, unsigned int max)
{
	if (in_capture)
		return 0;
	in_capture = 1;
	unsigned int n = walk(pcs, max);
	in_capture = 0;
	return n;
}

/* ---- the modules ----------------------------------------------------- */

/*
 * Every module (the program, each shared object) a stack's frame may be
 * in, as the loader listed it, kept after it is unloaded: a frame of a
 * dlclose'd plugin is still named by its file and offset, and said to
 * be unloaded. The table is brought up to date (modules_check()) when
 * the loader's counts of loads and unloads moved, looked at before a new
 * stack is interned (a stack's frames are in modules listed by then) and
 * before each output. A module is an entry from its load (the table's
 * epoch then, born) to the first update that no longer finds it (died);
 * a stack records the epoch it was interned at, and its frame is looked
 * up in the module mapped there at that epoch, so a later module at the
 * same addresses does not take an older stack's frames. The same file
 * at the same place again is the same entry (alive again when no other
 * module was mapped there meanwhile: a plugin loaded and unloaded in a
 * loop takes one entry).
 *
 * Written by one updater at a time (mod_busy, its thread; a thread that
 * finds it taken waits for it a little, bounded, then goes on with the
 * table as it is), read
 * lock-free: an entry is whole before nr_modules counts it (release);
 * died is an atomic. MODULES entries and their paths in a fixed pool,
 * .bss: a module that does not fit is left out (its frames are then
 * named by dladdr() while it is loaded, else by address).
 */
#define MODULES       1024
#define MODULE_PATHS  (96u << 10)
#define ALIVE         (~0u)

struct module {
	uintptr_t bias;                 /* the load bias: addr2line's offset is pc - bias */
	uintptr_t lo, hi;               /* its PT_LOAD segments' span */
	uintptr_t offset;               /* the file offset mapped at lo */
	unsigned int path;              /* in module_paths */
	unsigned int born, died;        /* epochs: listed in [born, died) */
	unsigned char build_id_len;
	unsigned char build_id[32];
};

static struct module modules[MODULES];
static unsigned int nr_modules;                 /* release: entries below are whole */
static char module_paths[MODULE_PATHS] = "?";   /* "?" at 0: no room for the name */
static unsigned int paths_used = 2;
static unsigned int mod_epoch;
static unsigned long long mod_adds, mod_subs;   /* the loader's counts at the update */
static unsigned char mod_seen[MODULES];         /* the updater's */


/* The GNU build id of the module at @bias, from its PT_NOTE segments
 * (mapped: they are in its first PT_LOAD). */
static bool in_load(const struct dl_phdr_info *info, uintptr_t vaddr, size_t len)
{
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr &&
		    len <= ph->p_memsz && vaddr - ph->p_vaddr <= ph->p_memsz - len)
			return true;
	}
	return false;
}

static void module_build_id(struct module *m, const struct dl_phdr_info *info)
{
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_NOTE || !in_load(info, ph->p_vaddr, ph->p_memsz))
			continue;
		size_t pad = ph->p_align == 8 ? 8 : 4;  /* notes are padded to their alignment */
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_memsz;
		while (end - p >= 12) {
			uint32_t nsz, dsz, type;
			memcpy(&nsz, p, 4);
			memcpy(&dsz, p + 4, 4);
			memcpy(&type, p + 8, 4);
			const unsigned char *name = p + 12, *desc = name + ((nsz + pad - 1) & ~(pad - 1));
			if (nsz > (size_t)(end - name) || dsz > (size_t)(end - desc))
				break;
			if (type == 3 /* NT_GNU_BUILD_ID */ && nsz == 4 && !memcmp(name, "GNU", 4) &&
			    dsz && dsz <= sizeof(m->build_id)) {
				memcpy(m->build_id, desc, dsz);
				m->build_id_len = (unsigned char)dsz;
				return;
			}
			p = desc + ((dsz + pad - 1) & ~(pad - 1));
		}
	}
}

static unsigned int path_store(const char *s)
{
	size_t n = strlen(s) + 1;
	if (n > MODULE_PATHS - paths_used)
		return 0;
	unsigned int at = paths_used;
	memcpy(module_paths + at, s, n);
	paths_used += (unsigned int)n;
	return at;
}

struct refresh {
	char exe[4096];
	unsigned int epoch;             /* the new entries' */
	bool changed;
	struct loader_counts c;
};

static int refresh_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct refresh *r = data;
	r->c.adds = info->dlpi_adds;
	r->c.subs = info->dlpi_subs;
	uintptr_t lo = UINTPTR_MAX, hi = 0, off = 0;
	for (unsigned int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo) {
			lo = a;
			off = ph->p_offset;
		}
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi <= lo)
		return 0;
	/* the program: its name is empty (the first entry); the vdso has one */
	const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : r->exe;
	unsigned int n = __atomic_load_n(&nr_modules, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < n; i++) {
		struct module *m = &modules[i];
		/* a module whose name found no room (path 0) by its place */
		if (m->bias == info->dlpi_addr && m->lo == lo && m->hi == hi &&
		    __atomic_load_n(&m->died, __ATOMIC_RELAXED) == ALIVE &&
		    (!m->path || !strcmp(module_paths + m->path, path))) {
			mod_seen[i] = 1;
			return 0;
		}
	}
	/* the same file at the same place again (a plugin reloaded): its
	 * entry lives again, unless another module was mapped there since */
	for (unsigned int i = n; i-- > 0;) {
		struct module *m = &modules[i];
		if (m->hi <= lo || hi <= m->lo)
			continue;
		if (m->bias != info->dlpi_addr || m->lo != lo || m->hi != hi || !m->path ||
		    strcmp(module_paths + m->path, path))
			break;                  /* the latest there is another */
		__atomic_store_n(&m->died, ALIVE, __ATOMIC_RELEASE);
		mod_seen[i] = 1;
		r->changed = true;
		return 0;
	}
	if (n == MODULES)
		return 0;
	struct module *m = &modules[n];
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	m->offset = off;
	m->path = path_store(path);
	m->born = r->epoch;
	m->died = ALIVE;
	module_build_id(m, info);
	mod_seen[n] = 1;
	__atomic_store_n(&nr_modules, n + 1, __ATOMIC_RELEASE);
	r->changed = true;
	return 0;
}

/* Bring the table up to date when the loader's counts moved (see the
 * top of this part). No uslub lock is held: dl_iterate_phdr() takes the
 * loader's. */
static void modules_check(void)
{
	struct loader_counts c = { 0, 0 };
	uintptr_t none = 0, me = (uintptr_t)pthread_self();
	dl_iterate_phdr(counts_cb, &c);
	if (c.adds == __atomic_load_n(&mod_adds, __ATOMIC_ACQUIRE) &&
	    c.subs == __atomic_load_n(&mod_subs, __ATOMIC_ACQUIRE))
		return;
	/* another thread updating: its update may miss what this one is
	 * about to intern (loaded since it began), so wait a little for it
	 * (bounded: it may wait for the loader's lock, which a thread that
	 * a signal handler interrupted may hold) and look again */
	for (int tries = 0; !__atomic_compare_exchange_n(&mod_busy, &none, me, false,
							 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	     tries++) {
		if (none == me || tries == 100)
			return;                 /* nested (a signal handler), or too long */
		sched_yield();
		none = 0;
	}
	if (c.adds == __atomic_load_n(&mod_adds, __ATOMIC_ACQUIRE) &&
	    c.subs == __atomic_load_n(&mod_subs, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&mod_busy, 0, __ATOMIC_RELEASE);
		return;                 /* the other's update covered it */
	}
	static struct refresh r;        /* the updater's: mod_busy */
	if (!r.exe[0]) {
		ssize_t k = readlink("/proc/self/exe", r.exe, sizeof(r.exe) - 1);
		r.exe[k > 0 ? k : 0] = 0;
	}
	unsigned int n = __atomic_load_n(&nr_modules, __ATOMIC_RELAXED);
	memset(mod_seen, 0, n);
	r.changed = false;
	r.epoch = __atomic_load_n(&mod_epoch, __ATOMIC_RELAXED) + 1;
	dl_iterate_phdr(refresh_cb, &r);
	for (unsigned int i = 0; i < n; i++)
		if (!mod_seen[i] && __atomic_load_n(&modules[i].died, __ATOMIC_RELAXED) == ALIVE) {
			__atomic_store_n(&modules[i].died, r.epoch, __ATOMIC_RELEASE);
			r.changed = true;
		}
	if (r.changed)
		__atomic_store_n(&mod_epoch, r.epoch, __ATOMIC_RELEASE);
	__atomic_store_n(&mod_adds, r.c.adds, __ATOMIC_RELEASE);
	__atomic_store_n(&mod_subs, r.c.subs, __ATOMIC_RELEASE);
	__atomic_store_n(&mod_busy, 0, __ATOMIC_RELEASE);
}

/* The module @pc was in at epoch @ep (the stack's), among the first @n
 * entries: the entry listed then, else the one mapped there now; NULL
 * when none (an address, not a guess). */
static const struct module *module_at(uintptr_t pc, unsigned int ep, unsigned int n)
{
	const struct module *alive = NULL;
	for (unsigned int i = 0; i < n; i++) {
		const struct module *m = &modules[i];
		if (pc - m->lo >= m->hi - m->lo)
			continue;
		unsigned int died = __atomic_load_n(&m->died, __ATOMIC_ACQUIRE);
		if (m->born <= ep && ep < died)
			return m;
		if (died == ALIVE)
			alive = m;
	}
	return alive;
}

static bool module_alive(const struct module *m)
{
	return __atomic_load_n(&m->died, __ATOMIC_ACQUIRE) == ALIVE;
}

/* ---- the table ---------------------------------------------------------- */

static uint64_t stack_hash(const struct uslub_alloc_tag *caller, const uintptr_t *f,
			   unsigned int n)
{
	uint64_t h = (uint64_t)(uintptr_t)caller * 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned int i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

static struct stack *intern(struct uslub_alloc_tag *caller, const uintptr_t *f, unsigned int n)
{
	uint64_t h = stack_hash(caller, f, n);
	unsigned int i = (unsigned int)(h >> (64 - STACK_BITS));
	bool checked = false;
	for (unsigned int p = 0; p < STACK_PROBES; p++, i = (i + 1) & (STACKS - 1)) {
		struct stack *st = &stacks[i];
		uint64_t k = __atomic_load_n(&st->hash, __ATOMIC_ACQUIRE);
		if (!k) {
			if (__atomic_load_n(&used, __ATOMIC_RELAXED) >= READ_ONCE(limit))
				return NULL;
			if (!checked) {         /* a new stack: its modules listed */
				modules_check();
				checked = true;
			}
			if (__atomic_compare_exchange_n(&st->hash, &k, h, false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				__atomic_add_fetch(&used, 1, __ATOMIC_RELAXED);
				st->tag.file = "<stack>";
				st->tag.func = caller->func;
				st->caller = caller;
				st->depth = n;
				st->epoch = __atomic_load_n(&mod_epoch, __ATOMIC_ACQUIRE);
				memcpy(st->frames, f, n * sizeof(*f));
				__atomic_store_n(&st->ready, 1, __ATOMIC_RELEASE);
				return st;
			}
		}
		if (k == h && __atomic_load_n(&st->ready, __ATOMIC_ACQUIRE) && st->caller == caller &&
		    st->depth == n && !memcmp(st->frames, f, n * sizeof(*f)))
			return st;
	}
	return NULL;
}

static struct stack *stack_of(const struct uslub_alloc_tag *tag)
{
	if ((const void *)tag < (const void *)stacks || (const void *)tag >= (const void *)(stacks + STACKS))
		return NULL;
	return container_of(tag, struct stack, tag);
}

struct uslub_alloc_tag *_uslub_stack_tag(struct uslub_alloc_tag *tag, uintptr_t caller,
				       bool stable)
{
	uintptr_t f[USLUB_STACK_DEPTH_MAX];
	struct stack *st = NULL;
	if (!caller)
		caller = _uslub_caller_tag_addr(tag);
	stable |= caller || _uslub_caller_tag_slot(tag) != -1 ||
		  (tag >= __start_uslub_alloc_tags && tag < __stop_uslub_alloc_tags);
	if (depth_max && stable) {
		unsigned int n = capture(f, caller);
		if (n)
			st = intern(tag, f, n);
	}
	return st ? &st->tag : NULL;
}

void _uslub_stack_add(struct uslub_alloc_tag *stag, int64_t bytes, int64_t objs)
{
	struct stack *st = stag ? stack_of(stag) : NULL;
	int64_t *b, *o;
	if (bytes >= 0) {
		b = st ? &st->alloc_bytes : &other_alloc_bytes;
		o = st ? &st->alloc_objs : &other_alloc_objs;
	} else {
		b = st ? &st->free_bytes : &other_free_bytes;
		o = st ? &st->free_objs : &other_free_objs;
		bytes = -bytes;
		objs = -objs;
	}
	__atomic_add_fetch(b, bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(o, objs, __ATOMIC_RELAXED);
}

struct uslub_alloc_tag *_uslub_stack_caller(struct uslub_alloc_tag *tag)
{
	struct stack *st = stack_of(tag);
	return st ? st->caller : tag;
}

bool _uslub_is_stack_tag(const struct uslub_alloc_tag *tag)
{
	return stack_of(tag) != NULL;
}

/* Tests (white-box): 1 when stacks are walked through code without
 * frame pointers (.eh_frame, ours or libunwind's), 0 with frame
 * pointers. */
int _uslub_stacks_unwinder(void)
{
#if defined(EH_WALK) || defined(UNW_WALK)
	return 1;
#else
	return 0;
#endif
}

/* Tests (white-box): lower the table's limit to @n stacks (0: back to the
 * default); returns the stacks interned so far. */
unsigned int _uslub_stacks_limit(unsigned int n)
{
	WRITE_ONCE(limit, n && n < STACKS_LIMIT ? n : STACKS_LIMIT);
	return __atomic_load_n(&used, __ATOMIC_RELAXED);
}

void _uslub_stacks_init(void)
{
	static const struct uslub_lifecycle e = {
		.name = "allocation stacks (capture gate)",
		.rank = LIFECYCLE_UNLOCKED,
		.prefork = stacks_prefork,
		.postfork_parent = stacks_postfork_parent,
		.postfork_child = stacks_postfork_child,
	};
	depth_max = (unsigned int)_uslub_option(USLUB_OPT_STACK_DEPTH);
	if (!_uslub_sampling || !depth_max)
		return;
	_uslub_lifecycle_register(&e);
	dl_iterate_phdr(own_cb, (void *)(uintptr_t)&_uslub_stacks_init);
	struct loader_counts lc = { 0, 0 };
	dl_iterate_phdr(counts_cb, &lc);
	seen_subs = lc.subs;
	modules_check();
	unwinder_init();
}

/* ---- output ------------------------------------------------------------- */

/* @s into @b with the folded format's separators and control bytes
 * replaced ('?'). */
static void put_safe(struct uslub_buf *b, const char *s)
{
	char tmp[512];
	size_t k = 0;
	for (; *s && k + 1 < sizeof(tmp); s++) {
		unsigned char c = (unsigned char)*s;
		tmp[k++] = c == ';' || c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	tmp[k] = 0;
	_uslub_buf_printf(b, "%s", tmp);
}

/* A frame of a folded stack: "SYMBOL (MODULE+0xOFFSET)" (see the top),
 * "[unloaded] (MODULE+0xOFFSET)" in a module unloaded since, "0xADDR"
 * in none known. */
static void put_frame(struct uslub_buf *b, uintptr_t pc, unsigned int ep)
{
	const struct module *m = module_at(pc, ep, __atomic_load_n(&nr_modules, __ATOMIC_ACQUIRE));
	Dl_info info;
	struct link_map *lm = NULL;
	if (!m) {               /* not in the table (full): the loader's view */
		if (dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
		    lm->l_name && lm->l_name[0]) {
			_uslub_buf_printf(b, "(");
			put_safe(b, lm->l_name);
			_uslub_buf_printf(b, "+0x%lx)", (unsigned long)(pc - (uintptr_t)lm->l_addr));
		} else {
			_uslub_buf_printf(b, "0x%lx", (unsigned long)pc);
		}
		return;
	}
	if (!module_alive(m)) {
		_uslub_buf_printf(b, "[unloaded] ");
	} else if (dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
		   (uintptr_t)lm->l_addr == m->bias && info.dli_sname && info.dli_saddr) {
		put_safe(b, info.dli_sname);
		_uslub_buf_printf(b, " ");
	}
	_uslub_buf_printf(b, "(");
	put_safe(b, module_paths + m->path);
	_uslub_buf_printf(b, "+0x%lx)", (unsigned long)(pc - m->bias));
}

/* @s with every byte that is not printable ASCII, a blank or '%' written
 * as %XX: a path as one word of the dump. */
static void put_word(struct uslub_buf *b, const char *s)
{
	char tmp[3 * 4096 + 4];                 /* a path of PATH_MAX, each byte escaped */
	size_t k = 0;
	for (; *s && k + 4 < sizeof(tmp); s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= 0x20 || c >= 0x7f || c == '%')
			k += (size_t)snprintf(tmp + k, sizeof(tmp) - k, "%%%02X", c);
		else
			tmp[k++] = (char)c;
	}
	tmp[k] = 0;
	_uslub_buf_printf(b, "%s", tmp);
}

/*
 * The dump (USLUB_HEAP_DUMP): every count of every stack and the modules
 * their frames are in, for `uslub heap` to name and turn into folded
 * stacks, a flame graph or a pprof profile. Lines:
 *   # ...                                     comments
 *   uslub-heap 1 INTERVAL                     the format's version, the sampling interval
 *   module I BIAS LO HI OFFSET BUILD_ID STATE PATH
 *       I from 0; hex numbers; BUILD_ID hex or -; STATE loaded or
 *       unloaded; PATH %XX-escaped (bytes <= ' ', >= 0x7f, '%')
 *   stack ALLOC_OBJS ALLOC_BYTES INUSE_OBJS INUSE_BYTES FRAME...
 *       leaf first; FRAME "I+0xOFF" (module I, OFF = pc - BIAS) or
 *       "0xPC" (in no module listed)
 *   other ALLOC_OBJS ALLOC_BYTES INUSE_OBJS INUSE_BYTES   (samples without a stack)
 */
static void dump(struct uslub_buf *b)
{
	_uslub_buf_printf(b, "uslub-heap 1 %zu\n", _uslub_sample_interval);
	unsigned int n = __atomic_load_n(&nr_modules, __ATOMIC_ACQUIRE);
	for (unsigned int i = 0; i < n; i++) {
		const struct module *m = &modules[i];
		_uslub_buf_printf(b, "module %u 0x%lx 0x%lx 0x%lx 0x%lx ", i, (unsigned long)m->bias,
				  (unsigned long)m->lo, (unsigned long)m->hi,
				  (unsigned long)m->offset);
		for (unsigned int k = 0; k < m->build_id_len; k++)
			_uslub_buf_printf(b, "%02x", m->build_id[k]);
		_uslub_buf_printf(b, "%s %s ", m->build_id_len ? "" : "-",
				  module_alive(m) ? "loaded" : "unloaded");
		put_word(b, module_paths + m->path);
		_uslub_buf_printf(b, "\n");
	}
	for (unsigned int i = 0; i < STACKS; i++) {
		struct stack *st = &stacks[i];
		if (!__atomic_load_n(&st->hash, __ATOMIC_ACQUIRE) ||
		    !__atomic_load_n(&st->ready, __ATOMIC_ACQUIRE))
			continue;
		int64_t ao = __atomic_load_n(&st->alloc_objs, __ATOMIC_RELAXED);
		int64_t ab = __atomic_load_n(&st->alloc_bytes, __ATOMIC_RELAXED);
		int64_t fo = __atomic_load_n(&st->free_objs, __ATOMIC_RELAXED);
		int64_t fb = __atomic_load_n(&st->free_bytes, __ATOMIC_RELAXED);
		if (ab <= 0)
			continue;
		_uslub_buf_printf(b, "stack %lld %lld %lld %lld", (long long)ao, (long long)ab,
				  (long long)MAX(ao - fo, 0), (long long)MAX(ab - fb, 0));
		for (unsigned int d = 0; d < st->depth; d++) {
			uintptr_t pc = st->frames[d];
			const struct module *m = module_at(pc, st->epoch, n);   /* a module line */
			if (m)
				_uslub_buf_printf(b, " %u+0x%lx", (unsigned int)(m - modules),
						  (unsigned long)(pc - m->bias));
			else
				_uslub_buf_printf(b, " 0x%lx", (unsigned long)pc);
		}
		_uslub_buf_printf(b, "\n");
	}
	int64_t ao = __atomic_load_n(&other_alloc_objs, __ATOMIC_RELAXED);
	int64_t ab = __atomic_load_n(&other_alloc_bytes, __ATOMIC_RELAXED);
	int64_t fo = __atomic_load_n(&other_free_objs, __ATOMIC_RELAXED);
	int64_t fb = __atomic_load_n(&other_free_bytes, __ATOMIC_RELAXED);
	if (ab > 0)
		_uslub_buf_printf(b, "other %lld %lld %lld %lld\n", (long long)ao, (long long)ab,
				  (long long)MAX(ao - fo, 0), (long long)MAX(ab - fb, 0));
}

__public void uslub_heap_profile_print(FILE *f, int view)
{
	_uslub_init();
	_uslub_lockdep_assert_unlocked("dladdr()");
	struct uslub_buf b;
	memset(&b, 0, sizeof(b));
	bool inuse = view == USLUB_HEAP_INUSE;
	if (view == USLUB_HEAP_DUMP)
		_uslub_buf_printf(&b, "# uslub heap dump, pid %d: the sampled allocations' stacks "
				  "(sampled every %zu bytes, page runs and mappings every %zu; walked "
				  "by %s) and their modules; `uslub heap FILE` turns it into folded "
				  "stacks, a flame graph or a pprof profile\n", (int)getpid(),
				  _uslub_sample_interval,
				  _uslub_sample_interval << USLUB_LARGE_RATE_SHIFT, WALKER);
	else
		_uslub_buf_printf(&b, "# uslub heap profile, pid %d: %s; folded stacks (root first, "
				  "leaf last) and a count, the estimated bytes (sampled every %zu "
				  "bytes, page runs and mappings every %zu; stacks walked by %s)\n",
				  (int)getpid(), inuse ? "bytes in use (allocated and not freed)" :
				  "bytes allocated in all", _uslub_sample_interval,
				  _uslub_sample_interval << USLUB_LARGE_RATE_SHIFT, WALKER);
	if (!_uslub_sampling) {
		_uslub_buf_printf(&b, "# no stacks: they are sampled mode's (USLUB_PROFILING=sample)\n");
		_uslub_buf_write(&b, f);
		return;
	}
	modules_check();
	if (view == USLUB_HEAP_DUMP) {
		dump(&b);
		_uslub_buf_write(&b, f);
		return;
	}
	for (unsigned int i = 0; i < STACKS; i++) {
		struct stack *st = &stacks[i];
		if (!__atomic_load_n(&st->hash, __ATOMIC_ACQUIRE) ||
		    !__atomic_load_n(&st->ready, __ATOMIC_ACQUIRE))
			continue;
		int64_t v = __atomic_load_n(&st->alloc_bytes, __ATOMIC_RELAXED);
		if (inuse)
			v -= __atomic_load_n(&st->free_bytes, __ATOMIC_RELAXED);
		if (v <= 0)
			continue;
		for (unsigned int d = st->depth; d-- > 0;) {
			put_frame(&b, st->frames[d], st->epoch);
			_uslub_buf_printf(&b, d ? ";" : "");
		}
		_uslub_buf_printf(&b, " %lld\n", (long long)v);
	}
	int64_t v = __atomic_load_n(&other_alloc_bytes, __ATOMIC_RELAXED);
	if (inuse)
		v -= __atomic_load_n(&other_free_bytes, __ATOMIC_RELAXED);
	if (v > 0)
		_uslub_buf_printf(&b, "<no stack> %lld\n",
				  (long long)v);
	_uslub_buf_write(&b, f);
}
