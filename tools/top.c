/*
 * uslub top PID: the caches of a running process in the manner of
 * slabtop/htop, from what it publishes with USLUB_PUBLISH_MS=<ms>.
 *
 * Every refresh loads the process's JSON snapshot through load() (the
 * checks of tools/uslub.c: directory, owner, pid, start time, lock) and
 * reads the few members it shows with json_member(). Rates are the
 * differences of two snapshots' counters over the difference of their
 * time_ns; a snapshot with the same time_ns as the last one (the publisher
 * did not write a new one yet) changes nothing.
 *
 * On a terminal (stdout, and keys from stdin when it is one too) it draws
 * a full screen with plain ANSI escapes on the alternate screen, keys read
 * without waiting (poll with the refresh timeout; termios without ICANON
 * and ECHO), and restores the terminal when it ends: on q, on SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT (then dies of the signal, as the shell
 * expects), around SIGTSTP (Ctrl-Z); SIGWINCH redraws at the new size.
 * The signal handlers only write the signal's number to a pipe that the
 * main loop polls (nothing else is safe in a handler).
 *
 * Otherwise (-n COUNT, --once, or stdout not a terminal) it prints plain
 * text frames without any escape sequence; --json prints the snapshots
 * themselves, each compacted onto one line (JSON Lines).
 *
 * Everything taken from the snapshot is text written by another process:
 * strings are unescaped and then every character that emit() would not
 * print (controls, ESC, malformed UTF-8) becomes '?', before any of it
 * reaches the terminal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

const char top_help[] =
	"uslub top PID [-d MS] [-n COUNT | --once] [--json] [--sort COL] [--view VIEW] [-r]\n"
	"  A full-screen view of a process's caches, in the manner of slabtop/htop,\n"
	"  refreshed every MS milliseconds (default 1000). Header: the process, the\n"
	"  snapshot's local time, totals, the refresh interval. One row per cache:\n"
	"    MEMORY        bytes in its slabs\n"
	"    ACTIVE/TOTAL  objects in use (allocated or in per-cpu caches) / in its slabs\n"
	"    ALLOC/s       allocations per second, FREE/s frees per second, between the\n"
	"                  last two snapshots\n"
	"    SLOW%         the share of those allocations that missed the per-cpu fast\n"
	"                  path: ALLOC_SLOWPATH (cpu-slab caches), plus BARN_GET and\n"
	"                  BARN_GET_FAIL (sheaf caches: both per-cpu sheaves were empty)\n"
	"    SLAB/s        objects per second that crossed the slab layer: flushed from\n"
	"                  sheaves to their slabs and refilled from them (SHEAF_FLUSH +\n"
	"                  SHEAF_REFILL; '-' for a cache without sheaves). A program that\n"
	"                  swings waves of objects shows it here until the barn follows\n"	"                  its swings (slabinfo's barn_limit)\n"
	"    OBJSZ         object size in bytes\n"
	"  Caches without objects and without activity are counted on one line.\n"
	"  Keys: q quit, space or p pause, s or > next sort column, < previous one,\n"
	"  m memory, o objects, a alloc/s, f free/s, w slow%, x slab/s, z object size,\n"
	"  n name,\n"
	"  r reverse, c caches, i allocinfo (call sites, when the process profiles:\n"
	"  USLUB_PROFILING=1 or sample), g accounting groups, arrows/PgUp/PgDn scroll,\n"
	"  h or ? the list of keys.\n"
	"    -n COUNT      print COUNT plain text frames, then exit (no escapes)\n"
	"    --once        one frame (-n 1); also plain frames when stdout is no terminal\n"
	"    --json        the snapshots themselves, one JSON document per line (a\n"
	"                  snapshot printed already is not printed again, unless no\n"
	"                  new one came for 2 s)\n"
	"    --sort COL    memory, objects, alloc, free, slow, slab, size or name\n"
	"    --view VIEW   caches, allocinfo or groups; -r reverses the order\n"
	"  Plain frames wait for the process's next snapshot (at most 2 s) so that the\n"
	"  first one has rates. In the allocinfo view m, o, a and n sort by bytes,\n"
	"  objects, growth per second and site; in the groups view m, f and n by usage,\n"
	"  failcnt and path (--sort takes those names too).\n"
	"  When the process exits or stops publishing, top says so and exits 0 (on a\n"
	"  terminal after a key, when keys are read from it). Exit status 1 when there\n"
	"  is no snapshot to start with. Call sites without a line (\"/lib+0xOFF\", in a\n"
	"  module without debug information at hand) are shown as they are: uslub\n"
	"  allocinfo PID resolves them with addr2line.\n";

/* ------------------------------------------------------------------------
 * strings and numbers from the snapshot
 * ---------------------------------------------------------------------- */

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fputs("uslub top: out of memory\n", stderr);
		exit(125);
	}
	return q;
}

/* @p (an array of @size-byte elements, @cap allocated) with room for
 * element @n: doubled when full. */
static void *room(void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	return xrealloc(p, *cap * size);
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

/* Append the UTF-8 encoding of @cp to @o. */
static char *put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

static int hex4(const char *p, unsigned long *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)p[i], d = c >= '0' && c <= '9' ? c - '0' :
			c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (unsigned long)d;
	}
	return 0;
}

/*
 * The JSON string [vs, ve) unescaped, then made safe to print on one line
 * (every character safe_char() refuses, and '\n' and '\t', become '?'):
 * a new string; "" for a value that is not a string.
 */
static char *clean_string(const char *vs, const char *ve)
{
	size_t n = ve > vs ? (size_t)(ve - vs) : 0;
	char *raw = xrealloc(NULL, n + 1), *o = raw;   /* unescaped is never longer */
	if (n >= 2 && vs[0] == '"' && ve[-1] == '"') {
		for (const char *p = vs + 1; p < ve - 1; p++) {
			if (*p != '\\') {
				*o++ = *p;
				continue;
			}
			if (++p >= ve - 1)
				break;
			unsigned long cp, lo;
			switch (*p) {
			case 'b': *o++ = '\b'; break;
			case 'f': *o++ = '\f'; break;
			case 'n': *o++ = '\n'; break;
			case 'r': *o++ = '\r'; break;
			case 't': *o++ = '\t'; break;
			case 'u':
				if (ve - 1 - p < 5 || hex4(p + 1, &cp)) {
					*o++ = '?';
					break;
				}
				p += 4;
				if (cp >= 0xd800 && cp < 0xdc00 && ve - 1 - p >= 7 && p[1] == '\\' &&
				    p[2] == 'u' && !hex4(p + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				} else if (cp >= 0xd800 && cp < 0xe000) {
					cp = '?';
				}
				o = put_utf8(o, cp);
				break;
			default: *o++ = *p; break;        /* \" \\ \/ */
			}
		}
	}
	size_t len = (size_t)(o - raw);
	char *out = xrealloc(NULL, len + 1), *w = out;
	for (size_t i = 0; i < len;) {
		size_t k = safe_char((const unsigned char *)raw + i, len - i);
		if (k && raw[i] != '\n' && raw[i] != '\t') {
			memcpy(w, raw + i, k);
			w += k;
			i += k;
		} else {
			*w++ = '?';
			i++;
		}
	}
	*w = '\0';
	free(raw);
	return out;
}

static char *jstr(const char *obj, const char *key)
{
	const char *vs, *ve;
	if (!json_member(obj, key, &vs, &ve))
		return xstrdup("");
	return clean_string(vs, ve);
}

static unsigned long long jull(const char *obj, const char *key)
{
	const char *vs, *ve;
	if (!json_member(obj, key, &vs, &ve) || *vs < '0' || *vs > '9')
		return 0;
	return strtoull(vs, NULL, 10);
}

static long long jll(const char *obj, const char *key)
{
	const char *vs, *ve;
	if (!json_member(obj, key, &vs, &ve))
		return 0;
	return strtoll(vs, NULL, 10);
}

/* The first element of the array at @v (NULL when empty or not an
 * array), and the one after @e. */
static const char *jfirst(const char *v)
{
	const char *p = skip_ws(v);
	if (*p != '[')
		return NULL;
	p = skip_ws(p + 1);
	return *p == ']' || !*p ? NULL : p;
}

static const char *jnext(const char *e)
{
	const char *p = skip_value(e);
	if (!p)
		return NULL;
	p = skip_ws(p);
	return *p == ',' ? skip_ws(p + 1) : NULL;
}

/* ------------------------------------------------------------------------
 * one snapshot
 * ---------------------------------------------------------------------- */

struct crow {                   /* a cache */
	char *name;
	int dup;                /* how many caches before it have its name */
	int sheaves;
	unsigned long long objsize, num_objs, active, live, mem, req;
	unsigned long long allocs, frees, slow, crossed;
	double arate, frate, slow_pct;  /* < 0: not known yet */
	double xrate;                   /* SLAB/s; < 0: not known or no sheaves */
	int idle;
};

struct site {                   /* an allocinfo call site */
	char *where;            /* file:line */
	char *func;
	long long bytes, calls;
	double brate;           /* bytes/s; NAN: not known */
};

struct grp {
	char *path;
	unsigned long long usage, limit, failcnt, reclaims;
	int limited;
};

struct gusage {
	char *group, *cache;
	unsigned long long objects, bytes;
};

struct frame {
	unsigned long long time_ns, start_time;
	unsigned long long in_slabs, reserved;
	struct crow *c;
	size_t nc;
	int ai;                 /* has allocinfo */
	char *ai_mode;
	unsigned long long ai_interval;
	long long ai_bytes, ai_calls;
	struct site *s;
	size_t ns;
	struct grp *g;
	size_t ng;
	struct gusage *u;
	size_t nu;
	size_t skip_c, skip_s, skip_g;  /* caches, sites, group rows past MAX_ROWS */
	size_t cap_c, cap_s, cap_g, cap_u;      /* allocated rows (room()) */
	double dt;              /* seconds since the snapshot the rates are from; 0: none */
	int percpu_cpu;         /* sheaves per CPU (USLUB_PERCPU=cpu), not per thread */
	unsigned long long percpu_ids;  /* then: the ids that have had sheaves */
};

static void frame_free(struct frame *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nc; i++)
		free(f->c[i].name);
	for (size_t i = 0; i < f->ns; i++) {
		free(f->s[i].where);
		free(f->s[i].func);
	}
	for (size_t i = 0; i < f->ng; i++)
		free(f->g[i].path);
	for (size_t i = 0; i < f->nu; i++) {
		free(f->u[i].group);
		free(f->u[i].cache);
	}
	free(f->c);
	free(f->s);
	free(f->g);
	free(f->u);
	free(f->ai_mode);
	free(f);
}

/* A counter of the "stats" object of a cache (0 when absent). */
static unsigned long long stat_of(const char *stats, const char *name)
{
	return stats ? jull(stats, name) : 0;
}

static void parse_cache(struct frame *f, const char *e)
{
	f->c = room(f->c, f->nc, &f->cap_c, sizeof(*f->c));
	struct crow *r = &f->c[f->nc];
	memset(r, 0, sizeof(*r));
	r->name = jstr(e, "name");      /* (dup: by number_dups()) */
	r->objsize = jull(e, "object_size");
	r->num_objs = jull(e, "num_objs");
	r->active = jull(e, "active_objs");
	r->live = jull(e, "live_objs");
	r->mem = jull(e, "memory_used");
	r->req = jull(e, "memory_requested");
	r->sheaves = jull(e, "sheaf_capacity") != 0;
	char *pm = jstr(e, "percpu_mode");      /* one mode per process */
	if (pm && !strcmp(pm, "cpu")) {
		f->percpu_cpu = 1;
		f->percpu_ids = jull(e, "percpu_ids");
	}
	free(pm);
	const char *ss, *se, *st = NULL;
	if (json_member(e, "stats", &ss, &se) && *ss == '{')
		st = ss;
	/* As slabinfo counts them (src/observe/stats.c): a sheaf cache's
	 * FASTPATH counters include its sheaves' (the PCS ones). */
	r->allocs = stat_of(st, "ALLOC_FASTPATH") + stat_of(st, "ALLOC_SLOWPATH") +
		    stat_of(st, "ALLOC_PCS");
	r->frees = stat_of(st, "FREE_FASTPATH") + stat_of(st, "FREE_SLOWPATH") +
		   stat_of(st, "FREE_PCS") + stat_of(st, "FREE_RCU_SHEAF");
	r->slow = stat_of(st, "ALLOC_SLOWPATH");
	if (r->sheaves)
		r->slow += stat_of(st, "BARN_GET") + stat_of(st, "BARN_GET_FAIL");
	r->crossed = stat_of(st, "SHEAF_FLUSH") + stat_of(st, "SHEAF_REFILL");
	r->arate = r->frate = r->slow_pct = r->xrate = -1;
	f->nc++;
}

static void parse_site(struct frame *f, const char *e)
{
	f->s = room(f->s, f->ns, &f->cap_s, sizeof(*f->s));
	struct site *s = &f->s[f->ns++];
	char *file = jstr(e, "file");
	unsigned long long line = jull(e, "line");
	size_t n = strlen(file) + 24;
	s->where = xrealloc(NULL, n);
	if (line)
		snprintf(s->where, n, "%s:%llu", file, line);
	else                    /* no line: "/module+0xOFF" (uslub allocinfo PID resolves it) */
		snprintf(s->where, n, "%s", file);
	free(file);
	s->func = jstr(e, "func");
	s->bytes = jll(e, "bytes");
	s->calls = jll(e, "calls");
	s->brate = NAN;
}

/*
 * At most this many rows of each kind (caches, call sites, groups, group
 * usage) are parsed from one snapshot: one written by a hostile process
 * may hold millions, and each refresh must stay quick enough for q and
 * the signals to be seen. The others are counted and said on the screen.
 */
#define MAX_ROWS 100000

/* The caches of @f in name order, and in snapshot order among equal
 * names: the order that number_dups() and rates() use. */
static int cache_name_cmp(const void *a, const void *b)
{
	const struct crow *x = *(const struct crow *const *)a, *y = *(const struct crow *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->dup - y->dup;
}

static const struct crow **by_name(const struct frame *f)
{
	const struct crow **idx = xrealloc(NULL, (f->nc + 1) * sizeof(*idx));
	for (size_t i = 0; i < f->nc; i++)
		idx[i] = &f->c[i];
	qsort(idx, f->nc, sizeof(*idx), cache_name_cmp);
	return idx;
}

/* Number the caches of one name in snapshot order (crow.dup): sorted by
 * name, then by position (dup holds the position until then). */
static void number_dups(struct frame *f)
{
	for (size_t i = 0; i < f->nc; i++)
		f->c[i].dup = (int)i;
	const struct crow **idx = by_name(f);
	int run = 0;
	for (size_t i = 0; i < f->nc; i++) {
		run = i && !strcmp(idx[i]->name, idx[i - 1]->name) ? run + 1 : 0;
		((struct crow *)idx[i])->dup = run;
	}
	free(idx);
}

static void parse_group(struct frame *f, const char *e)
{
	f->g = room(f->g, f->ng, &f->cap_g, sizeof(*f->g));
	struct grp *g = &f->g[f->ng++];
	g->path = jstr(e, "path");
	g->usage = jull(e, "usage");
	const char *ls, *le;
	g->limited = json_member(e, "limit", &ls, &le) && *ls >= '0' && *ls <= '9';
	g->limit = jull(e, "limit");
	g->failcnt = jull(e, "failcnt");
	g->reclaims = jull(e, "reclaims");
}

static void parse_usage(struct frame *f, const char *e)
{
	f->u = room(f->u, f->nu, &f->cap_u, sizeof(*f->u));
	struct gusage *u = &f->u[f->nu++];
	u->group = jstr(e, "group");
	u->cache = jstr(e, "cache");
	u->objects = jull(e, "objects");
	u->bytes = jull(e, "bytes");
}

/* Each object of the array member @key of @obj through @row (which adds
 * one row to @f), the first MAX_ROWS of them (*@n: the rows so far); the
 * rest counted in *@skipped. */
static void each_row(struct frame *f, const char *obj, const char *key, const size_t *n,
		     size_t *skipped, void (*row)(struct frame *f, const char *e))
{
	const char *vs, *ve;
	if (!json_member(obj, key, &vs, &ve))
		return;
	for (const char *e = jfirst(vs); e; e = jnext(e)) {
		if (*e != '{')
			continue;
		if (*n >= MAX_ROWS)
			(*skipped)++;
		else
			row(f, e);
	}
}

/* The snapshot @doc as a frame; NULL when it is not uslub's JSON. */
static struct frame *parse(const char *doc)
{
	const char *vs, *ve;
	struct frame *f = xrealloc(NULL, sizeof(*f));
	memset(f, 0, sizeof(*f));
	if (!json_member(doc, "time_ns", &vs, &ve) || !json_member(doc, "slabinfo", &vs, &ve)) {
		free(f);
		return NULL;
	}
	f->time_ns = jull(doc, "time_ns");
	f->start_time = jull(doc, "start_time");
	const char *si = vs, *ps, *pe;
	if (json_member(si, "page", &ps, &pe)) {
		f->in_slabs = jull(ps, "bytes_in_slabs");
		f->reserved = jull(ps, "bytes_reserved");
	}
	each_row(f, si, "caches", &f->nc, &f->skip_c, parse_cache);
	if (json_member(doc, "allocinfo", &vs, &ve) && *vs == '{') {
		const char *ai = vs;
		f->ai = 1;
		f->ai_mode = jstr(ai, "mode");
		f->ai_interval = jull(ai, "sample_interval");
		f->ai_bytes = jll(ai, "total_bytes");
		f->ai_calls = jll(ai, "total_calls");
		each_row(f, ai, "sites", &f->ns, &f->skip_s, parse_site);
	}
	if (json_member(doc, "groups", &vs, &ve) && *vs == '{') {
		each_row(f, vs, "groups", &f->ng, &f->skip_g, parse_group);
		each_row(f, vs, "usage", &f->nu, &f->skip_g, parse_usage);
	}
	number_dups(f);
	return f;
}

static int site_key_cmp(const void *a, const void *b)
{
	const struct site *x = *(const struct site *const *)a, *y = *(const struct site *const *)b;
	int c = strcmp(x->where, y->where);
	return c ? c : strcmp(x->func, y->func);
}

/* The rates of @f from the counters of the earlier snapshot @b. */
static void rates(struct frame *f, const struct frame *b)
{
	f->dt = b && f->time_ns > b->time_ns ? (double)(f->time_ns - b->time_ns) / 1e9 : 0;
	/* The same cache in @b: the same name and the same dup (sorted). */
	const struct crow **bidx = f->dt > 0 ? by_name(b) : NULL;
	for (size_t i = 0; i < f->nc; i++) {
		struct crow *r = &f->c[i];
		const struct crow *o = NULL;
		if (bidx) {
			const struct crow *key = r, **hit;
			hit = bsearch(&key, bidx, b->nc, sizeof(*bidx), cache_name_cmp);
			o = hit ? *hit : NULL;
		}
		/* A counter that went back: another cache of that name now. */
		if (o && r->allocs >= o->allocs && r->frees >= o->frees && r->slow >= o->slow) {
			unsigned long long da = r->allocs - o->allocs;
			r->arate = (double)da / f->dt;
			r->frate = (double)(r->frees - o->frees) / f->dt;
			r->slow_pct = da ? 100.0 * (double)(r->slow - o->slow) / (double)da : 0;
			if (r->slow_pct > 100)
				r->slow_pct = 100;
			if (r->sheaves && r->crossed >= o->crossed)
				r->xrate = (double)(r->crossed - o->crossed) / f->dt;
		}
		r->idle = !r->num_objs && !r->mem && r->arate <= 0 && r->frate <= 0;
	}
	free(bidx);
	if (f->dt > 0 && f->ns && b->ns) {
		const struct site **idx = xrealloc(NULL, b->ns * sizeof(*idx));
		for (size_t j = 0; j < b->ns; j++)
			idx[j] = &b->s[j];
		qsort(idx, b->ns, sizeof(*idx), site_key_cmp);
		for (size_t i = 0; i < f->ns; i++) {
			const struct site *key = &f->s[i];
			const struct site **o = bsearch(&key, idx, b->ns, sizeof(*idx), site_key_cmp);
			/* (in double: the figures are the process's, any value) */
			f->s[i].brate = ((double)f->s[i].bytes - (o ? (double)(*o)->bytes : 0)) / f->dt;
		}
		free(idx);
	}
}

/* ------------------------------------------------------------------------
 * state
 * ---------------------------------------------------------------------- */

enum view { V_CACHES, V_ALLOC, V_GROUPS, NR_VIEWS };
static const char *const view_names[NR_VIEWS] = { "caches", "allocinfo", "groups" };

/* The sort columns of each view: figures largest first, names in order
 * (r reverses either). */
struct column {
	char key;
	const char *name;       /* in the header */
};

static const struct column cache_cols[] = {
	{ 'm', "memory" }, { 'o', "objects" }, { 'a', "alloc" }, { 'f', "free" },
	{ 'w', "slow" }, { 'x', "slab" }, { 'z', "size" }, { 'n', "name" },
};
static const struct column site_cols[] = {
	{ 'm', "bytes" }, { 'o', "objects" }, { 'a', "growth" }, { 'n', "site" },
};
static const struct column group_cols[] = {
	{ 'm', "usage" }, { 'f', "failcnt" }, { 'n', "path" },
};
static const struct column *const view_cols[NR_VIEWS] = { cache_cols, site_cols, group_cols };
static const int view_ncols[NR_VIEWS] = {
	sizeof(cache_cols) / sizeof(cache_cols[0]), sizeof(site_cols) / sizeof(site_cols[0]),
	sizeof(group_cols) / sizeof(group_cols[0]),
};

static struct {
	long pid;
	long delay_ms;
	char cmdline[256];
	struct frame *cur, *base;
	enum view view;
	int sort[NR_VIEWS];
	int rev[NR_VIEWS];
	int paused, help, tty;
	int keys;               /* keys are read from stdin (a terminal) */
	int scroll;
	char ended[512];        /* why the process is gone; "" while it publishes */
	char note[256];         /* a one-off message for the status line */
	int rows, cols;
	int json_printed;       /* --json: a document was printed, of json_time */
	int json_again;         /* --json: print it even when it is that one */
	unsigned long long json_time;
} T;

static int sort_key(void)
{
	return view_cols[T.view][T.sort[T.view]].key;
}

/* The order of two figures: negative when @x comes first (the larger). */
static int order(double x, double y)
{
	return x > y ? -1 : x < y;
}

static int cmp_cache(const void *a, const void *b)
{
	const struct crow *x = *(const struct crow *const *)a, *y = *(const struct crow *const *)b;
	const struct column *col = &cache_cols[T.sort[V_CACHES]];
	int c = 0;
	switch (col->key) {
	case 'm': c = order((double)x->mem, (double)y->mem); break;
	case 'o': c = order((double)x->active, (double)y->active);
		  if (!c)
			  c = order((double)x->num_objs, (double)y->num_objs);
		  break;
	case 'a': c = order(x->arate, y->arate); break;
	case 'f': c = order(x->frate, y->frate); break;
	case 'w': c = order(x->slow_pct, y->slow_pct); break;
	case 'x': c = order(x->xrate, y->xrate); break;
	case 'z': c = order((double)x->objsize, (double)y->objsize); break;
	default: break;
	}
	if (!c)
		c = strcmp(x->name, y->name);
	if (!c)
		c = x->dup - y->dup;
	return T.rev[V_CACHES] ? -c : c;
}

static int cmp_site(const void *a, const void *b)
{
	const struct site *x = *(const struct site *const *)a, *y = *(const struct site *const *)b;
	int c = 0;
	switch (site_cols[T.sort[V_ALLOC]].key) {
	case 'm': c = order((double)x->bytes, (double)y->bytes); break;
	case 'o': c = order((double)x->calls, (double)y->calls); break;
	case 'a': c = order(isnan(x->brate) ? -1e300 : x->brate,
			    isnan(y->brate) ? -1e300 : y->brate);
		  break;
	default: break;
	}
	if (!c)
		c = strcmp(x->where, y->where);
	if (!c)
		c = strcmp(x->func, y->func);
	return T.rev[V_ALLOC] ? -c : c;
}

static int cmp_group(const void *a, const void *b)
{
	const struct grp *x = *(const struct grp *const *)a, *y = *(const struct grp *const *)b;
	int c = 0;
	switch (group_cols[T.sort[V_GROUPS]].key) {
	case 'm': c = order((double)x->usage, (double)y->usage); break;
	case 'f': c = order((double)x->failcnt, (double)y->failcnt); break;
	default: break;
	}
	if (!c)
		c = strcmp(x->path, y->path);
	return T.rev[V_GROUPS] ? -c : c;
}

/* ------------------------------------------------------------------------
 * formatting
 * ---------------------------------------------------------------------- */

/* Bytes: 1023, 12.3K, 4.0M, 1.2G (powers of 1024). */
static const char *fmt_bytes(char *b, size_t n, double v)
{
	static const char units[] = "KMGTP";
	if (v < 0)
		v = 0;
	if (v < 10000) {
		snprintf(b, n, "%.0f", v);
		return b;
	}
	int u = -1;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(b, n, v < 100 ? "%.1f%c" : "%.0f%c", v, units[u]);
	return b;
}

/* Counts and rates: 99999, 123.4k, 12.3M, 1.2G (powers of 1000). */
static const char *fmt_count(char *b, size_t n, double v)
{
	static const char units[] = "kMGTP";
	if (v < 0) {
		snprintf(b, n, "-");
		return b;
	}
	if (v < 100000) {
		snprintf(b, n, v > 0 && v < 10 && v != (double)(long long)v ? "%.1f" : "%.0f", v);
		return b;
	}
	int u = -1;
	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	snprintf(b, n, v < 100 ? "%.1f%c" : "%.0f%c", v, units[u]);
	return b;
}

/* The lines of a frame: head (kept at the top), body (scrolls), foot (at
 * the bottom of the screen). Escape sequences only on a terminal. */
struct lines {
	char **v;
	size_t n, cap;
};

static struct lines head, body, foot;

static void add(struct lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		fputs("uslub top: out of memory\n", stderr);
		exit(125);
	}
	va_end(ap);
	l->v = room(l->v, l->n, &l->cap, sizeof(*l->v));
	l->v[l->n++] = s;
}

static void clear_lines(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* Escapes, or nothing when not drawing on a terminal. */
#define ESC(s) (T.tty ? (s) : "")
#define REVERSE "\033[7m"
#define BOLD    "\033[1m"
#define UNDERLINE "\033[4m"
#define NORMAL  "\033[m"

static char *human_time(char *b, size_t n, unsigned long long ns)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(b, n, "%Y-%m-%d %H:%M:%S %Z", &tm))
		snprintf(b, n, "?");
	return b;
}

/* A column header cell, right-aligned in @width columns (left-aligned in
 * -@width); on a terminal the sort column's name is bold and underlined. */
static const char *cell(char *b, size_t n, const char *text, int width, char key)
{
	int sorted = key == sort_key();
	if (width < 0)
		snprintf(b, n, "%s%s%s%*s", sorted ? ESC(BOLD UNDERLINE) : "", text,
			 sorted ? ESC(NORMAL REVERSE) : "", -width - (int)strlen(text), "");
	else
		snprintf(b, n, "%*s%s%s%s", width - (int)strlen(text), "",
			 sorted ? ESC(BOLD UNDERLINE) : "", text, sorted ? ESC(NORMAL REVERSE) : "");
	return b;
}

static void header(void)
{
	const struct frame *f = T.cur;
	char ts[64], a[32], b[32], c[32], d[32];
	/* (the command line last: on a narrow screen it is what is cut) */
	add(&head, "uslub top - pid %ld  %s  every %.1f s%s%s%s%s  %s", T.pid,
	    human_time(ts, sizeof(ts), f->time_ns), (double)T.delay_ms / 1000,
	    T.paused ? "  " : "", T.paused ? ESC(REVERSE) : "", T.paused ? "PAUSED" : "",
	    T.paused ? ESC(NORMAL) : "", T.cmdline);
	size_t shown = 0, idle = 0;
	unsigned long long active = 0, total = 0, mem = 0, live = 0;
	double ar = 0, fr = 0, dslow = 0;
	int rated = 0;
	for (size_t i = 0; i < f->nc; i++) {
		const struct crow *r = &f->c[i];
		idle += r->idle;
		shown += !r->idle;
		active += r->active;
		total += r->num_objs;
		mem += r->mem;
		live += r->req;
		if (r->arate >= 0) {
			rated = 1;
			ar += r->arate;
			fr += r->frate;
			dslow += r->arate * r->slow_pct / 100;
		}
	}
	/* (what matters first: a narrow screen cuts the ends of the lines) */
	add(&head, "caches: %zu (%zu idle)  objects: %s/%s  in slabs: %s  live bytes: %s",
	    shown, idle, fmt_count(a, sizeof(a), (double)active),
	    fmt_count(b, sizeof(b), (double)total), fmt_bytes(c, sizeof(c), (double)mem),
	    fmt_bytes(d, sizeof(d), (double)live));
	char rate[128];
	if (rated)
		snprintf(rate, sizeof(rate), "alloc/s: %s  free/s: %s  slow: %.1f%%  over %.1f s",
			 fmt_count(a, sizeof(a), ar), fmt_count(b, sizeof(b), fr),
			 ar > 0 ? 100 * dslow / ar : 0.0, f->dt);
	else
		snprintf(rate, sizeof(rate), "alloc/s: -  free/s: -  (rates from the next snapshot)");
	char sheaves[48];
	if (f->percpu_cpu)
		snprintf(sheaves, sizeof(sheaves), "per CPU, %llu ids", f->percpu_ids);
	else
		snprintf(sheaves, sizeof(sheaves), "per thread");
	add(&head, "%s  sort: %s%s  view: %s  reserved: %s  sheaves: %s", rate,
	    view_cols[T.view][T.sort[T.view]].name, T.rev[T.view] ? " (reversed)" : "",
	    view_names[T.view], fmt_bytes(c, sizeof(c), (double)f->reserved), sheaves);
	add(&head, "%s", "");
}

static void caches_view(void)
{
	const struct frame *f = T.cur;
	char h[8][96];
	add(&head, "%s%s %s %s %s %s %s %s  %s%s", ESC(REVERSE),
	    cell(h[0], 96, "MEMORY", 8, 'm'), cell(h[1], 96, "ACTIVE/TOTAL", 17, 'o'),
	    cell(h[2], 96, "ALLOC/s", 9, 'a'), cell(h[3], 96, "FREE/s", 9, 'f'),
	    cell(h[4], 96, "SLOW%", 6, 'w'), cell(h[5], 96, "SLAB/s", 8, 'x'),
	    cell(h[6], 96, "OBJSZ", 7, 'z'), cell(h[7], 96, "NAME", -24, 'n'), ESC(NORMAL));
	const struct crow **rows = xrealloc(NULL, (f->nc + 1) * sizeof(*rows));
	size_t n = 0, idle = 0;
	for (size_t i = 0; i < f->nc; i++) {
		if (f->c[i].idle)
			idle++;
		else
			rows[n++] = &f->c[i];
	}
	qsort(rows, n, sizeof(*rows), cmp_cache);
	for (size_t i = 0; i < n; i++) {
		const struct crow *r = rows[i];
		char m[32], a[32], t[32], ar[32], fr[32], sl[16], xr[32], ot[80];
		fmt_count(a, sizeof(a), (double)r->active);
		fmt_count(t, sizeof(t), (double)r->num_objs);
		snprintf(ot, sizeof(ot), "%s/%s", a, t);
		if (r->slow_pct < 0 || r->arate <= 0)
			snprintf(sl, sizeof(sl), "-");
		else
			snprintf(sl, sizeof(sl), "%.1f", r->slow_pct);
		add(&body, "%8s %17s %9s %9s %6s %8s %7llu  %s", fmt_bytes(m, sizeof(m), (double)r->mem),
		    ot, fmt_count(ar, sizeof(ar), r->arate), fmt_count(fr, sizeof(fr), r->frate), sl,
		    fmt_count(xr, sizeof(xr), r->xrate), r->objsize, r->name);
	}
	free(rows);
	add(&foot, "%zu idle caches (no objects, no activity)", idle);
	if (f->skip_c)
		add(&foot, "%zu caches not shown (only the first %d of the snapshot are read)",
		    f->skip_c, MAX_ROWS);
	add(&foot, "SLOW%% = %% of ALLOC/s that missed the per-cpu fast path (cpu freelist or sheaf)");
}

static void alloc_view(void)
{
	const struct frame *f = T.cur;
	char h[5][96], a[32], b[32];
	if (!f->ai) {
		add(&head, "%s", "");
		add(&body, "No allocinfo in the snapshot: the process does not profile. Start it with "
		    "USLUB_PROFILING=1 (every object) or USLUB_PROFILING=sample (estimates), e.g.");
		add(&body, "  USLUB_PUBLISH_MS=500 uslub run --profile -- CMD");
		add(&foot, "%s", "");
		add(&foot, "c caches, g groups");
		return;
	}
	if (!strcmp(f->ai_mode, "sample"))
		add(&head, "allocinfo: sampled every %s bytes, figures are estimates; %s in %s "
		    "objects at %zu call site%s", fmt_bytes(a, sizeof(a), (double)f->ai_interval),
		    fmt_bytes(b, sizeof(b), (double)f->ai_bytes), fmt_count(h[0], 32, (double)f->ai_calls),
		    f->ns, f->ns == 1 ? "" : "s");
	else
		add(&head, "allocinfo: every object (%s); %s in %s objects at %zu call site%s",
		    f->ai_mode[0] ? f->ai_mode : "exact", fmt_bytes(b, sizeof(b), (double)f->ai_bytes),
		    fmt_count(h[0], 32, (double)f->ai_calls), f->ns, f->ns == 1 ? "" : "s");
	add(&head, "%s%s %s %s  %s %s%s", ESC(REVERSE), cell(h[0], 96, "BYTES", 9, 'm'),
	    cell(h[1], 96, "OBJECTS", 9, 'o'), cell(h[2], 96, "GROWTH/s", 10, 'a'),
	    cell(h[3], 96, "SITE", -40, 'n'), cell(h[4], 96, "FUNCTION", -12, 0), ESC(NORMAL));
	const struct site **rows = xrealloc(NULL, (f->ns + 1) * sizeof(*rows));
	for (size_t i = 0; i < f->ns; i++)
		rows[i] = &f->s[i];
	qsort(rows, f->ns, sizeof(*rows), cmp_site);
	for (size_t i = 0; i < f->ns; i++) {
		const struct site *s = rows[i];
		char by[32], ca[32], gr[32];
		if (isnan(s->brate))
			snprintf(gr, sizeof(gr), "-");
		else if (s->brate < 0)
			snprintf(gr, sizeof(gr), "-%s", fmt_bytes(a, sizeof(a), -s->brate));
		else
			snprintf(gr, sizeof(gr), "%s", fmt_bytes(a, sizeof(a), s->brate));
		add(&body, "%9s %9s %10s  %-40s %s", fmt_bytes(by, sizeof(by), (double)s->bytes),
		    fmt_count(ca, sizeof(ca), (double)s->calls), gr, s->where, s->func);
	}
	free(rows);
	add(&foot, "%s", "");
	if (f->skip_s)
		add(&foot, "%zu call sites not shown (only the first %d of the snapshot are read)",
		    f->skip_s, MAX_ROWS);
	add(&foot, "BYTES, OBJECTS: live at the call site; GROWTH/s: change of BYTES per second");
}

static void groups_view(void)
{
	const struct frame *f = T.cur;
	char h[5][96], a[32], b[32], c[32];
	add(&head, "accounting groups: %zu (the root included), %zu group/cache pairs", f->ng, f->nu);
	add(&head, "%s%s %s %s %s  %s%s", ESC(REVERSE), cell(h[0], 96, "USAGE", 9, 'm'),
	    cell(h[1], 96, "LIMIT", 9, 0), cell(h[2], 96, "FAILCNT", 9, 'f'),
	    cell(h[3], 96, "RECLAIMS", 9, 0), cell(h[4], 96, "GROUP", -24, 'n'), ESC(NORMAL));
	const struct grp **rows = xrealloc(NULL, (f->ng + 1) * sizeof(*rows));
	for (size_t i = 0; i < f->ng; i++)
		rows[i] = &f->g[i];
	qsort(rows, f->ng, sizeof(*rows), cmp_group);
	for (size_t i = 0; i < f->ng; i++) {
		const struct grp *g = rows[i];
		add(&body, "%9s %9s %9llu %9llu  %s", fmt_bytes(a, sizeof(a), (double)g->usage),
		    g->limited ? fmt_bytes(b, sizeof(b), (double)g->limit) : "max", g->failcnt,
		    g->reclaims, g->path);
	}
	free(rows);
	if (f->nu) {
		add(&body, "%s", "");
		add(&body, "%s%9s %9s  %-24s %s%s", ESC(REVERSE), "BYTES", "OBJECTS", "GROUP", "CACHE",
		    ESC(NORMAL));
		for (size_t i = 0; i < f->nu; i++)
			add(&body, "%9s %9s  %-24s %s", fmt_bytes(a, sizeof(a), (double)f->u[i].bytes),
			    fmt_count(c, sizeof(c), (double)f->u[i].objects), f->u[i].group,
			    f->u[i].cache);
	} else if (f->ng <= 1) {
		add(&body, "%s", "");
		add(&body, "No accounting group but the root: the process creates none "
		    "(uslub_group_create()).");
	}
	add(&foot, "%s", "");
	if (f->skip_g)
		add(&foot, "%zu group rows not shown (only the first %d of each list are read)",
		    f->skip_g, MAX_ROWS);
	add(&foot, "USAGE: bytes charged to the group and its descendants; FAILCNT: charges "
	    "refused at a limit");
}

/* Compose the frame into head, body and foot. */
static void compose(void)
{
	clear_lines(&head);
	clear_lines(&body);
	clear_lines(&foot);
	header();
	if (T.view == V_CACHES)
		caches_view();
	else if (T.view == V_ALLOC)
		alloc_view();
	else
		groups_view();
	if (!T.tty)
		return;
	if (T.help) {
		add(&foot, "keys: q quit  space/p pause  s > < sort column  r reverse  "
		    "arrows PgUp PgDn scroll  h close");
		add(&foot, "sort: m memory/bytes/usage  o objects  a alloc/s/growth  f free/s/failcnt  "
		    "w slow%%  x slab/s  z size  n name");
		add(&foot, "views: c caches  i allocinfo (call sites)  g accounting groups  "
		    "(ACTIVE: objects in use or cached per cpu)");
	}
	if (T.ended[0])
		add(&foot, "%s%s%s%s", ESC(REVERSE), T.ended, T.keys ? ": press any key to quit" : "",
		    ESC(NORMAL));
	else if (T.note[0])
		add(&foot, "%s%s%s", ESC(REVERSE), T.note, ESC(NORMAL));
	else if (!T.help)
		add(&foot, "q quit  p pause  s sort  r reverse  c caches  i allocinfo  g groups  "
		    "h help");
}

/* ------------------------------------------------------------------------
 * output
 * ---------------------------------------------------------------------- */

struct buf {
	char *b;
	size_t len, cap;
};

static void put(struct buf *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->b = xrealloc(o->b, o->cap);
	}
	memcpy(o->b + o->len, s, n);
	o->len += n;
}

static void puts_(struct buf *o, const char *s)
{
	put(o, s, strlen(s));
}

/* @line cut to @cols display columns (0: no limit; escape sequences take
 * none), padded with blanks to the width when it is reverse video. */
static void put_line(struct buf *o, const char *line, int cols)
{
	int w = 0, rev = !strncmp(line, REVERSE, strlen(REVERSE));
	const char *p = line;
	while (*p) {
		if (*p == '\033') {             /* ours: ESC [ ... letter */
			const char *q = p + 1;
			while (*q && !(*q >= '@' && *q <= '~' && q > p + 1))
				q++;
			if (*q)
				q++;
			put(o, p, (size_t)(q - p));
			p = q;
			continue;
		}
		if (((unsigned char)*p & 0xc0) != 0x80) {
			if (cols && w >= cols)
				break;
			w++;
		}
		put(o, p, 1);
		p++;
	}
	while (rev && cols && w++ < cols)
		put(o, " ", 1);
	while (!cols && o->len && o->b[o->len - 1] == ' ')      /* plain text */
		o->len--;
	if (T.tty)
		puts_(o, NORMAL);
}

static int write_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Draw the composed frame on the terminal, all of it in one write. */
static int draw(void)
{
	struct buf o = { 0 };
	char pos[32];
	int rows = T.rows, row = 1;
	int avail = rows - (int)head.n - (int)foot.n;
	if (avail < 1)
		avail = 1;
	int maxscroll = (int)body.n > avail ? (int)body.n - avail + 1 : 0;
	if (T.scroll > maxscroll)
		T.scroll = maxscroll;
	if (T.scroll < 0)
		T.scroll = 0;
	puts_(&o, "\033[H");
	for (size_t i = 0; i < head.n && row <= rows; i++, row++) {
		snprintf(pos, sizeof(pos), "\033[%d;1H", row);
		puts_(&o, pos);
		put_line(&o, head.v[i], T.cols);
		puts_(&o, "\033[K");
	}
	int more = (int)body.n - T.scroll > avail;
	for (int i = 0; i < avail && row <= rows; i++, row++) {
		size_t k = (size_t)(T.scroll + i);
		snprintf(pos, sizeof(pos), "\033[%d;1H", row);
		puts_(&o, pos);
		if (more && i == avail - 1) {
			char m[96];
			snprintf(m, sizeof(m), "... %d more (arrows, PgDn)",
				 (int)body.n - T.scroll - avail + 1);
			put_line(&o, m, T.cols);
		} else if (k < body.n) {
			put_line(&o, body.v[k], T.cols);
		}
		puts_(&o, "\033[K");
	}
	for (size_t i = 0; i < foot.n && row <= rows; i++, row++) {
		snprintf(pos, sizeof(pos), "\033[%d;1H", row);
		puts_(&o, pos);
		put_line(&o, foot.v[i], T.cols);
		puts_(&o, "\033[K");
	}
	puts_(&o, "\033[J");
	int ret = write_all(STDOUT_FILENO, o.b, o.len);
	free(o.b);
	return ret;
}

/* A plain text frame on stdout (no escapes, nothing cut). */
static int print_frame(int first)
{
	struct buf o = { 0 };
	if (!first)
		puts_(&o, "\n");
	struct lines *parts[] = { &head, &body, &foot };
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < parts[k]->n; i++) {
			put_line(&o, parts[k]->v[i], 0);
			puts_(&o, "\n");
		}
	int ret = write_all(STDOUT_FILENO, o.b, o.len);
	free(o.b);
	return ret;
}

/* ------------------------------------------------------------------------
 * loading
 * ---------------------------------------------------------------------- */

/* Why the snapshot is gone, for the message: the process exited (or its
 * pid now belongs to another), or it no longer publishes. */
static void why_gone(const char *detail)
{
	unsigned long long start;
	char stat[1024];
	int exited = _uslub_pubdir_start_time((pid_t)T.pid, &start) ||
		     (T.cur && T.cur->start_time && start != T.cur->start_time);
	if (!exited && _uslub_pubdir_read_proc((pid_t)T.pid, "stat", stat, sizeof(stat)) > 0) {
		const char *p = strrchr(stat, ')');
		exited = p && (p[2] == 'Z' || p[2] == 'X');
	}
	if (exited)
		snprintf(T.ended, sizeof(T.ended), "process %ld has exited", T.pid);
	else
		snprintf(T.ended, sizeof(T.ended), "process %ld stopped publishing%s%.300s%s",
			 T.pid, detail && *detail ? " (" : "", detail ? detail : "",
			 detail && *detail ? ")" : "");
}

/*
 * Load the next snapshot: 0 (T.cur is the newest), or -1 when there is
 * none any more (T.ended says why); with @json_out (print it as JSON
 * Lines), 1 when it is the one printed last time (not printed again). On the screen the messages of load()
 * are caught (through a pipe in place of stderr) for the status line.
 */
static int reload(int json_out)
{
	struct snapshot s;
	int saved = -1, pfd[2] = { -1, -1 };
	char msg[1024] = "";
	if (T.tty && !pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		fflush(stderr);
		saved = dup(STDERR_FILENO);
		if (saved < 0 || dup2(pfd[1], STDERR_FILENO) < 0) {
			if (saved >= 0)
				close(saved);
			saved = -1;
		}
	}
	int bad = load(&s, T.pid, PUB_JSON);
	if (saved >= 0) {
		fflush(stderr);
		dup2(saved, STDERR_FILENO);
		close(saved);
		ssize_t n = read(pfd[0], msg, sizeof(msg) - 1);
		msg[n > 0 ? n : 0] = '\0';
	}
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
	if (bad) {
		unload(&s);
		char *nl = strchr(msg, '\n');
		if (nl)
			*nl = '\0';
		for (char *c = msg; *c; c++)    /* one line, printable */
			if ((unsigned char)*c < ' ' || (unsigned char)*c >= 0x7f)
				*c = '?';
		why_gone(strncmp(msg, "uslub: ", 7) ? msg : msg + 7);
		return -1;
	}
	if (json_out) {
		/* A snapshot already printed (the publisher did not write a
		 * new one yet) is not printed again. */
		unsigned long long t = jull(s.doc, "time_ns");
		if (T.json_printed && t == T.json_time && !T.json_again) {
			unload(&s);
			return 1;
		}
		/* One line: the whitespace between the tokens goes; a byte
		 * below 0x20 inside a string (a raw newline or tab that the
		 * process wrote, not valid JSON) becomes \u00XX, so that every
		 * document is one line a JSON parser takes; the rest through
		 * emit() ('?' for what is not printable). */
		struct buf o = { 0 };
		int in_str = 0;
		for (const char *p = s.doc; *p; p++) {
			unsigned char c = (unsigned char)*p;
			if (in_str) {
				if (c == '\\' && p[1] && (unsigned char)p[1] >= 0x20) {
					put(&o, p++, 1);
				} else if (c == '"') {
					in_str = 0;
				} else if (c < 0x20) {
					char u[8];
					snprintf(u, sizeof(u), "\\u%04x", c);
					puts_(&o, u);
					continue;
				}
			} else if (c == '"') {
				in_str = 1;
			} else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
				continue;
			}
			put(&o, p, 1);
		}
		put(&o, "\n", 1);
		emit(o.b, o.len, stdout);
		free(o.b);
		fflush(stdout);
		unload(&s);
		T.json_printed = 1;
		T.json_time = t;
		return ferror(stdout) ? -1 : 0;
	}
	struct frame *f = parse(s.doc);
	unload(&s);
	if (!f) {                       /* keep what there is, say so */
		snprintf(T.note, sizeof(T.note), "the snapshot of process %ld is not uslub's JSON",
			 T.pid);
		if (T.cur)
			return 0;
		fprintf(stderr, "uslub top: %s\n", T.note);
		return -1;
	}
	if (T.cur && f->time_ns == T.cur->time_ns) {   /* not published again yet */
		frame_free(f);
		return 0;
	}
	rates(f, T.cur);
	frame_free(T.base);
	T.base = T.cur;
	T.cur = f;
	return 0;
}

/* The command line of the process, one line, safe to print. */
static void read_cmdline(void)
{
	char buf[sizeof(T.cmdline)];
	ssize_t n = _uslub_pubdir_read_proc((pid_t)T.pid, "cmdline", buf, sizeof(buf));
	if (n <= 0 && _uslub_pubdir_read_proc((pid_t)T.pid, "comm", buf, sizeof(buf)) <= 0) {
		snprintf(T.cmdline, sizeof(T.cmdline), "?");
		return;
	}
	n = (ssize_t)strlen(buf) > n ? (ssize_t)strlen(buf) : n;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i] || buf[i] == '\n')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	if ((size_t)n >= sizeof(buf) - 2 && n > 4)
		memcpy(buf + n - 3, "...", 3);
	/* clean_string() takes a JSON string: quote it (no escapes needed,
	 * a backslash or quote is only printed as it is). */
	char q[sizeof(buf) + 2];
	q[0] = '"';
	memcpy(q + 1, buf, (size_t)n);
	q[n + 1] = '"';
	for (ssize_t i = 1; i <= n; i++)
		if (q[i] == '\\' || q[i] == '"')
			q[i] = '\'';
	char *c = clean_string(q, q + n + 2);
	snprintf(T.cmdline, sizeof(T.cmdline), "%s", c);
	free(c);
}

/* ------------------------------------------------------------------------
 * the terminal
 * ---------------------------------------------------------------------- */

static struct termios saved_tio;
static int tio_fd = -1, tio_saved, screen_on;
static int sig_pipe[2] = { -1, -1 };
static const int term_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT };
#define NR_TERM_SIGNALS ((int)(sizeof(term_signals) / sizeof(term_signals[0])))

static void on_signal(int sig)
{
	int e = errno;
	unsigned char c = (unsigned char)sig;
	ssize_t w = write(sig_pipe[1], &c, 1);       /* full: one is enough */
	(void)w;
	errno = e;
}

static void term_size(void)
{
	struct winsize ws;
	T.rows = 24;
	T.cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		T.rows = ws.ws_row;
		T.cols = ws.ws_col;
	}
}

/* Into the full screen: keys without echo, one at a time; the alternate
 * screen, the cursor hidden. */
static void screen_enter(void)
{
	/* (stdin no terminal: keys typed at the screen, stdout's terminal,
	 * are not read but would still echo over the frame) */
	tio_fd = isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO;
	if (isatty(tio_fd) && !tcgetattr(tio_fd, &saved_tio)) {
		struct termios t = saved_tio;
		t.c_lflag &= (tcflag_t)~(ICANON | ECHO);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		if (!tcsetattr(tio_fd, TCSANOW, &t))
			tio_saved = 1;
	}
	const char *on = "\033[?1049h\033[?25l\033[H\033[2J";
	write_all(STDOUT_FILENO, on, strlen(on));
	screen_on = 1;
	term_size();
}

/* Back to the terminal as it was (also at exit()). */
static void screen_leave(void)
{
	if (screen_on) {
		const char *off = "\033[m\033[?25h\033[?1049l";
		write_all(STDOUT_FILENO, off, strlen(off));
		screen_on = 0;
	}
	if (tio_saved) {
		tcsetattr(tio_fd, TCSANOW, &saved_tio);
		tio_saved = 0;
	}
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_sort(char key)
{
	for (int i = 0; i < view_ncols[T.view]; i++)
		if (view_cols[T.view][i].key == key) {
			T.sort[T.view] = i;
			T.scroll = 0;
			return;
		}
	snprintf(T.note, sizeof(T.note), "no column for '%c' in the %s view (h: the keys)", key,
		 view_names[T.view]);
}

/* One key (or escape sequence) from @k; returns the bytes it used, and
 * sets *quit. */
static size_t key(const unsigned char *k, size_t n, int *quit)
{
	T.note[0] = '\0';
	if (T.ended[0]) {               /* the end is shown: any key quits */
		*quit = 1;
		return n;
	}
	if (k[0] == '\033') {
		/* ESC [ A/B/H/F, ESC [ 5~ / 6~, ESC O A/B/H/F */
		if (n >= 3 && (k[1] == '[' || k[1] == 'O')) {
			int page = T.rows > 10 ? T.rows - 8 : 1;
			switch (k[2]) {
			case 'A': T.scroll--; return 3;
			case 'B': T.scroll++; return 3;
			case 'H': T.scroll = 0; return 3;
			case 'F': T.scroll = INT_MAX / 2; return 3;
			case '5': T.scroll -= page; return n >= 4 ? 4 : 3;
			case '6': T.scroll += page; return n >= 4 ? 4 : 3;
			default: break;
			}
			size_t i = 2;                  /* skip an unknown sequence */
			while (i < n && !(k[i] >= '@' && k[i] <= '~'))
				i++;
			return i < n ? i + 1 : n;
		}
		return 1;
	}
	int nc = view_ncols[T.view];
	switch (k[0]) {
	case 'q': case 'Q':
		*quit = 1;
		break;
	case ' ': case 'p': case 'P':
		T.paused = !T.paused;
		break;
	case 's': case '>': case '.':
		T.sort[T.view] = (T.sort[T.view] + 1) % nc;
		T.scroll = 0;
		break;
	case '<': case ',':
		T.sort[T.view] = (T.sort[T.view] + nc - 1) % nc;
		T.scroll = 0;
		break;
	case 'm': case 'o': case 'a': case 'f': case 'w': case 'x': case 'z': case 'n':
		set_sort((char)k[0]);
		break;
	case 'r': case 'R':
		T.rev[T.view] = !T.rev[T.view];
		break;
	case 'c': T.view = V_CACHES; T.scroll = 0; break;
	case 'i': T.view = V_ALLOC; T.scroll = 0; break;
	case 'g': T.view = V_GROUPS; T.scroll = 0; break;
	case '\t': T.view = (T.view + 1) % NR_VIEWS; T.scroll = 0; break;
	case 'h': case 'H': case '?':
		T.help = !T.help;
		break;
	case 'j': T.scroll++; break;
	case 'k': T.scroll--; break;
	case 12:                        /* Ctrl-L: redraw from scratch */
		write_all(STDOUT_FILENO, "\033[2J", 4);
		break;
	default:
		break;
	}
	return 1;
}

/* Ctrl-Z: the terminal as it was, stop; on SIGCONT, the screen again. */
static void suspend(void)
{
	screen_leave();
	signal(SIGTSTP, SIG_DFL);
	raise(SIGTSTP);
	/* continued */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTSTP, &sa, NULL);
	screen_enter();
}

static int interactive(void)
{
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) {
		fprintf(stderr, "uslub top: pipe: %s\n", strerror(errno));
		return 125;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < NR_TERM_SIGNALS; i++)
		sigaction(term_signals[i], &sa, NULL);
	atexit(screen_leave);
	screen_enter();
	T.keys = isatty(STDIN_FILENO);
	int keys = T.keys;
	/* Without rates yet, the next snapshot is looked for sooner. */
	long long next = now_ms() + (T.cur->dt <= 0 && T.delay_ms > 100 ? 100 : T.delay_ms);
	int quit = 0, died = 0;
	while (!quit && !died) {
		compose();
		if (draw())
			break;                  /* the terminal is gone */
		if (T.ended[0] && !keys)
			break;                  /* no key will come: the end is drawn */
		struct pollfd p[2] = { { sig_pipe[0], POLLIN, 0 }, { STDIN_FILENO, POLLIN, 0 } };
		long long wait = T.ended[0] || T.paused ? -1 : next - now_ms();
		if (wait < 0 && !T.ended[0] && !T.paused)
			wait = 0;
		int r = poll(p, keys ? 2 : 1, wait > INT_MAX ? INT_MAX : (int)wait);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && (p[0].revents & POLLIN)) {
			unsigned char sigs[16];
			ssize_t n = read(sig_pipe[0], sigs, sizeof(sigs));
			for (ssize_t i = 0; i < n; i++) {
				if (sigs[i] == SIGWINCH || sigs[i] == SIGCONT)
					term_size();
				else if (sigs[i] == SIGTSTP)
					suspend();
				else
					died = sigs[i];
			}
		}
		if (r > 0 && keys && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			unsigned char k[64];
			ssize_t n = read(STDIN_FILENO, k, sizeof(k));
			if (n <= 0) {
				keys = T.keys = 0;      /* no more keys: go on without */
			} else {
				int was_paused = T.paused;
				for (size_t i = 0; i < (size_t)n && !quit;)
					i += key(k + i, (size_t)n - i, &quit);
				if (was_paused && !T.paused)
					next = now_ms();        /* fresh figures at once */
			}
		}
		if (!quit && !died && !T.paused && !T.ended[0] && now_ms() >= next) {
			reload(0);
			long long now = now_ms();
			next += T.delay_ms;
			if (next <= now)
				next = now + T.delay_ms;
			if (!T.ended[0] && T.cur->dt <= 0 && T.delay_ms > 100)
				next = now + 100;       /* no rates yet: look again soon */
		}
	}
	screen_leave();
	if (died) {                     /* die of it, as the shell expects */
		signal(died, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, died);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(died);
		return 128 + died;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * the command
 * ---------------------------------------------------------------------- */

static int parse_sort(const char *name)
{
	static const char *const alias[][2] = {
		{ "memory", "m" }, { "mem", "m" }, { "bytes", "m" }, { "usage", "m" },
		{ "objects", "o" }, { "objs", "o" }, { "alloc", "a" }, { "allocs", "a" },
		{ "growth", "a" }, { "free", "f" }, { "frees", "f" }, { "failcnt", "f" },
		{ "slow", "w" }, { "slab", "x" }, { "slabs", "x" }, { "size", "z" },
		{ "objsize", "z" }, { "name", "n" },
		{ "site", "n" }, { "path", "n" },
	};
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(name, alias[i][0]))
			return alias[i][1][0];
	return 0;
}

int cmd_top(int argc, char **argv)
{
	int json = 0, once = 0;
	long count = -1;
	const char *sort = NULL;
	memset(&T, 0, sizeof(T));
	T.pid = -1;
	T.delay_ms = 1000;
	T.view = V_CACHES;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		const char *val = NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return help("top");
		if ((!strcmp(a, "-d") || !strcmp(a, "-n") || !strcmp(a, "-s") ||
		     !strcmp(a, "--sort") || !strcmp(a, "--view")) && i + 1 < argc)
			val = argv[++i];
		else if (!strncmp(a, "--sort=", 7) || !strncmp(a, "--view=", 7))
			val = a + 7;
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--once")) {
			once = 1;
		} else if (!strcmp(a, "-r") || !strcmp(a, "--reverse")) {
			T.rev[0] = T.rev[1] = T.rev[2] = 1;
		} else if (!strcmp(a, "-d") && val) {
			T.delay_ms = strtol(val, &end, 10);
			if (*end || T.delay_ms <= 0 || T.delay_ms > 86400000)
				return usage("top: -d takes a positive number of ms, not '%s'", val);
		} else if (!strcmp(a, "-n") && val) {
			count = strtol(val, &end, 10);
			if (*end || count <= 0)
				return usage("top: -n takes a positive count, not '%s'", val);
		} else if (val && (!strcmp(a, "-s") || !strncmp(a, "--sort", 6))) {
			sort = val;
			if (!parse_sort(sort))
				return usage("top: --sort takes memory, objects, alloc, free, slow, size "
					     "or name, not '%s'", sort);
		} else if (val && !strncmp(a, "--view", 6)) {
			int v = 0;
			while (v < NR_VIEWS && strcmp(val, view_names[v]))
				v++;
			if (v == NR_VIEWS)
				return usage("top: --view takes caches, allocinfo or groups, not '%s'",
					     val);
			T.view = (enum view)v;
		} else if (T.pid < 0 && a[0] != '-') {
			T.pid = strtol(a, &end, 10);
			if (*end || T.pid <= 0 || T.pid > INT_MAX)
				return usage("'%s' is not a process id", a);
		} else {
			return usage("top: unexpected argument '%s'", a);
		}
	}
	if (T.pid < 0)
		return usage("top: which process? (PID)");
	if (once)
		count = 1;
	if (sort) {                     /* in every view that has the column */
		enum view v0 = T.view;
		for (int v = 0; v < NR_VIEWS; v++) {
			T.view = (enum view)v;
			set_sort((char)parse_sort(sort));
		}
		T.view = v0;
		T.note[0] = '\0';
	}
	read_cmdline();

	if (json) {
		/* COUNT documents, each a new snapshot: one that did not change
		 * since the last look is skipped (not counted), for at most 2 s
		 * (a process that writes none: the same one again, as the
		 * plain frames do). */
		long long printed = 0;
		for (long k = 0, tries = 0; count < 0 || k < count; tries++) {
			if (tries) {
				struct timespec d = { T.delay_ms / 1000, (T.delay_ms % 1000) * 1000000 };
				nanosleep(&d, NULL);
			}
			T.json_again = now_ms() - printed >= 2000;
			int r = reload(1);
			if (!r)
				printed = now_ms();
			if (r < 0) {
				if (!k || !T.ended[0])  /* none at all; or stdout failed */
					return 1;
				fprintf(stderr, "uslub top: %s\n", T.ended);
				return 0;
			}
			k += !r;
		}
		return 0;
	}

	/* The first snapshot, before the screen: its errors on stderr. */
	if (reload(0))
		return 1;
	/* Plain frames: the first one has rates too, from the process's next
	 * snapshot (looked for every 50 ms, for at most 2 s). */
	if ((count >= 0 || !isatty(STDOUT_FILENO)) && T.cur->dt <= 0) {
		for (int i = 0; i < 40 && T.cur->dt <= 0; i++) {
			struct timespec d = { 0, 50 * 1000000 };
			nanosleep(&d, NULL);
			if (reload(0))
				break;
		}
		if (T.ended[0]) {               /* gone meanwhile: what there was */
			compose();
			print_frame(1);
			printf("\n%s\n", T.ended);
			return 0;
		}
	}
	if (count < 0 && isatty(STDOUT_FILENO)) {
		T.tty = 1;
		return interactive();
	}
	signal(SIGPIPE, SIG_IGN);
	for (long k = 0; count < 0 || k < count; k++) {
		if (k) {
			struct timespec d = { T.delay_ms / 1000, (T.delay_ms % 1000) * 1000000 };
			nanosleep(&d, NULL);
			if (reload(0)) {
				printf("\n%s\n", T.ended);
				return 0;
			}
		}
		compose();
		if (print_frame(!k))
			return 1;
	}
	return 0;
}
