/* Reports to stderr without allocating: vsnprintf into a stack buffer.
 * Text for a FILE built under a lock: an mmap'ed buffer (struct uslub_buf). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE         /* mremap */
#endif
#include "base/base.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *_uslub_errstr(int e)
{
	const char *s = strerrordesc_np(e);
	return s ? s : "unknown error";
}

__thread unsigned int _uslub_locks_held __tls_ie;

static void vreport(const char *fmt, va_list ap)
{
	char buf[1024];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	for (int off = 0; off < n;) {
		ssize_t w = write(STDERR_FILENO, buf + off, n - off);
		if (w <= 0)
			break;
		off += (int)w;
	}
}

void _uslub_report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

static unsigned long error_count;

void _uslub_report_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&error_count, 1, __ATOMIC_RELAXED);
	if (_uslub_option(USLUB_OPT_ABORT_ON_ERROR))
		abort();
}

void _uslub_count_error(bool abort_too)
{
	__atomic_add_fetch(&error_count, 1, __ATOMIC_RELAXED);
	if (abort_too || _uslub_option(USLUB_OPT_ABORT_ON_ERROR))
		abort();
}

__public unsigned long uslub_error_count(void)
{
	return __atomic_load_n(&error_count, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------
 * struct uslub_buf: formatted under locks, written to a FILE after them
 * ---------------------------------------------------------------------- */
#define BUF_MIN (64u << 10)

/* Room for @need more bytes; false when memory ran out (b->cut). */
static bool buf_reserve(struct uslub_buf *b, size_t need)
{
	if (b->cut)
		return false;                   /* nothing after a gap */
	if (b->len + need <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : BUF_MIN;
	while (cap < b->len + need)
		cap *= 2;
	void *p = b->p ? mremap(b->p, b->cap, cap, MREMAP_MAYMOVE)
		       : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		b->cut = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void buf_putc(struct uslub_buf *b, char ch)
{
	if (buf_reserve(b, 1))
		b->p[b->len++] = ch;
}

void _uslub_buf_printf(struct uslub_buf *b, const char *fmt, ...)
{
	if (b->cut)
		return;
	size_t room = b->cap - b->len;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= room) {            /* did not fit (with its NUL) */
		if (!buf_reserve(b, (size_t)n + 1))
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void _uslub_buf_json_string(struct uslub_buf *b, const char *str)
{
	buf_putc(b, '"');
	for (const char *p = str; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\')
			_uslub_buf_printf(b, "\\%c", ch);
		else if (ch < 0x20)
			_uslub_buf_printf(b, "\\u%04x", ch);
		else
			buf_putc(b, (char)ch);
	}
	buf_putc(b, '"');
}

/*
 * Text outputs are data. A name the program chose (a cache's, a group's,
 * a module's path, an allocation site's file or function) goes into
 * tables that others read (the report file, published snapshots shown to
 * root by `uslub slabinfo PID`): it must neither drive the reader's
 * terminal (ESC and CSI sequences, other controls) nor start a line of
 * its own (a fake row). _uslub_text_char() passes printable ASCII and
 * well-formed UTF-8 from U+00A0 on (no C1 controls); escape_step() writes
 * every other byte as \n \t \r or \xHH, and a backslash as \\, so
 * that every backslash in the output starts an escape.
 */
size_t _uslub_text_char(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c >= 0x20 && c < 0x7f)
		return 1;
	size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 :
		     c >= 0xc2 && c <= 0xdf ? 2 : 0;
	unsigned long cp = len == 4 ? c & 0x07u : len == 3 ? c & 0x0fu : c & 0x1fu;
	size_t k = 1;
	for (; len && k < len && k < n && (s[k] & 0xc0) == 0x80; k++)
		cp = cp << 6 | (s[k] & 0x3fu);
	bool ok = len && k == len && cp >= 0xa0 && cp <= 0x10ffff &&
		  !(cp >= 0xd800 && cp <= 0xdfff) &&
		  !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000);
	return ok ? len : 0;
}

/* The next character of @s (@n > 0 bytes left) as it is written, in @e;
 * its length. *@used: the bytes of @s it stands for. */
static size_t escape_step(const unsigned char *s, size_t n, char e[4], size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = s[0] == '\\' ? 0 : _uslub_text_char(s, n);
	if (k) {
		memcpy(e, s, k);
		*used = k;
		return k;
	}
	*used = 1;
	e[0] = '\\';
	switch (s[0]) {
	case '\n': e[1] = 'n'; return 2;
	case '\t': e[1] = 't'; return 2;
	case '\r': e[1] = 'r'; return 2;
	case '\\': e[1] = '\\'; return 2;
	}
	e[1] = 'x';
	e[2] = hex[s[0] >> 4];
	e[3] = hex[s[0] & 15];
	return 4;
}

size_t _uslub_escape(char *out, size_t len, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t w = 0;
	if (!len)
		return 0;
	for (size_t i = 0, used; i < n && s[i]; i += used) {
		char e[4];
		size_t k = escape_step(s + i, n - i, e, &used);
		if (w + k >= len)
			break;                  /* cut at a character */
		memcpy(out + w, e, k);
		w += k;
	}
	out[w] = '\0';
	return w;
}

void _uslub_buf_text(struct uslub_buf *b, const char *str, unsigned int width)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), w = 0;
	for (size_t i = 0, used; i < n; i += used) {
		char e[4];
		size_t k = escape_step(s + i, n - i, e, &used);
		if (!buf_reserve(b, k))
			return;
		memcpy(b->p + b->len, e, k);
		b->len += k;
		w += k;
	}
	for (; w < width; w++)                  /* as %-*s: left-justified */
		buf_putc(b, ' ');
}

/* Write the text to @f (no uslub lock held) and free the buffer. */
void _uslub_buf_write(struct uslub_buf *b, FILE *f)
{
	_uslub_lockdep_assert_unlocked("writing to a FILE");
	if (b->len)
		fwrite(b->p, 1, b->len, f);
	if (b->cut)
		fputs("\n(uslub: out of memory: output cut short)\n", f);
	if (b->p)
		_uslub_sys_munmap_or_park(b->p, b->cap);
	b->p = NULL;
	b->len = b->cap = 0;
	b->cut = false;
}

#ifdef USLUB_LOCKDEP
/* Lock-order checking for the test builds: per thread, how many locks of
 * each rank are held, and how many of those were taken as one of a batch
 * (uslub_mutex_lock_nest: the fork handlers hold hundreds at once). */
static __thread unsigned int lockdep_held[RANK_NR] __tls_ie;
static __thread unsigned int lockdep_nested[RANK_NR] __tls_ie;
static const char *const rank_names[RANK_NR] = {
	"lifecycle_lock", "pub_lock", "flush_lock", "thread_lock", "slab_mutex", "groups_lock",
	"tags_lock", "barn.lock", "list_lock", "page_node.lock", "reserve_lock", "huge_lock",
	"failslab_lock", "purge_lock",
};
static_assert(ARRAY_SIZE(rank_names) == RANK_NR, "a name for every lock rank");

static __cold __attribute__((noreturn)) void lockdep_fail(const char *what, enum uslub_lock_rank r,
							  int k)
{
	if (k >= 0)
		_uslub_report("uslub: lock order violated: %s %s while holding %s\n", what,
			      rank_names[r], rank_names[k]);
	else
		_uslub_report("uslub: lock order violated: %s %s\n", what, rank_names[r]);
	abort();
}

/* > 0 inside an any-context call (kmalloc_nolock, kfree_nolock): only
 * trylocks may be taken. A signal handler's call nests on whatever the
 * thread was doing; its increments and decrements pair up, so even one
 * that interrupts the thread's own read-modify-write leaves it right. */
static __thread unsigned int lockdep_nolock __tls_ie;

void _uslub_lockdep_nolock_enter(void)
{
	lockdep_nolock++;
}

void _uslub_lockdep_nolock_exit(void)
{
	lockdep_nolock--;
}

void _uslub_lockdep_try_acquired(enum uslub_lock_rank r)
{
	lockdep_held[r]++;          /* no order check: a trylock never waits */
}

void _uslub_lockdep_acquire(enum uslub_lock_rank r)
{
	if (lockdep_nolock)
		lockdep_fail("taking (blocking, in an any-context call)", r, -1);
	for (int k = r; k < RANK_NR; k++)
		if (lockdep_held[k])
			lockdep_fail("taking", r, k);
	lockdep_held[r]++;
}

void _uslub_lockdep_acquire_nest(enum uslub_lock_rank r, enum uslub_lock_rank nest)
{
	if (nest >= r || !lockdep_held[nest])
		lockdep_fail("taking a batch of", r, -1);   /* without its nest lock */
	for (int k = r + 1; k < RANK_NR; k++)
		if (lockdep_held[k])
			lockdep_fail("taking", r, k);
	if (lockdep_held[r] != lockdep_nested[r])
		lockdep_fail("taking a batch of", r, r);    /* one was taken alone */
	lockdep_held[r]++;
	lockdep_nested[r]++;
}

void _uslub_lockdep_release(enum uslub_lock_rank r)
{
	if (lockdep_held[r] == lockdep_nested[r])       /* none, or only batch ones */
		lockdep_fail("releasing (not held, or held in a batch)", r, -1);
	lockdep_held[r]--;
}

void _uslub_lockdep_release_nest(enum uslub_lock_rank r)
{
	if (!lockdep_nested[r])
		lockdep_fail("releasing a batch lock (none held)", r, -1);
	lockdep_held[r]--;
	lockdep_nested[r]--;
}

void _uslub_lockdep_assert_unlocked(const char *what)
{
	for (int k = 0; k < RANK_NR; k++)
		if (lockdep_held[k]) {
			_uslub_report("uslub: %s with %s held (may enter the libc allocator or the "
				      "dynamic loader)\n", what, rank_names[k]);
			abort();
		}
}
#endif
