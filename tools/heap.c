/*
 * `uslub heap`: the heap dump of a live process (<pid>.heap, which its
 * publisher writes: src/observe/publish.c) or of a file
 * (USLUB_HEAP_PROFILE=FILE.heap), its frames named, as folded stacks, an
 * SVG flame graph or a pprof profile with the four sample types of a heap
 * profile, its mappings (build ids) and each frame's function, file and
 * line. `uslub run --heap-profile` writes its files through
 * heap_dump_emit().
 *
 * The dump's lines (ext/stack.c, dump()):
 *   uslub-heap 1 INTERVAL
 *   module I BIAS LO HI OFFSET BUILD_ID STATE PATH
 *   stack ALLOC_OBJS ALLOC_BYTES INUSE_OBJS INUSE_BYTES FRAME...   (leaf first)
 *   other ALLOC_OBJS ALLOC_BYTES INUSE_OBJS INUSE_BYTES
 * FRAME is "I+0xOFF" (module I, OFF what addr2line takes) or "0xPC";
 * other lines ('#' comments, the publisher's header) are skipped.
 *
 * Folded stacks and flame graphs go through the library's own folded
 * form ("(PATH+0xOFF)", "[unloaded] (PATH+0xOFF)", "0xPC") and
 * resolve_folded(), as a USLUB_HEAP_PROFILE file would; the pprof
 * profile names its frames with resolve_frames().
 */
#define _GNU_SOURCE
#include "tool.h"
#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { AO, AB, IO, IB, NR_VALUES };

struct hmod {
	char *path;
	unsigned long bias, lo, hi, offset;
	char build_id[65];
	bool unloaded;
	uint64_t map;                   /* its pprof mapping, 0 until used */
};

struct hframe {
	long mod;                       /* -1: off is the address */
	unsigned long off;
};

struct hstack {
	int64_t v[NR_VALUES];
	size_t first, n;                /* in fr[] */
};

struct dump {
	unsigned long interval;
	struct hmod *mods;
	size_t nmods, capmods;
	struct hstack *st;
	size_t nst, capst;
	struct hframe *fr;
	size_t nfr, capfr;
	int64_t other[NR_VALUES];
	bool has_other, versioned;
	long bad;
};


static void dump_free(struct dump *d)
{
	for (size_t i = 0; i < d->nmods; i++)
		free(d->mods[i].path);
	free(d->mods);
	free(d->st);
	free(d->fr);
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The next blank-separated word of [*p, e): its span, or false. */
static bool word(const char **p, const char *e, const char **ws, const char **we)
{
	const char *q = *p;
	while (q < e && *q == ' ')
		q++;
	*ws = q;
	while (q < e && *q != ' ')
		q++;
	*we = q;
	*p = q;
	return *we > *ws;
}

static bool num_hex(const char *s, const char *e, unsigned long *v)
{
	if (e - s < 3 || s[0] != '0' || s[1] != 'x')
		return false;
	unsigned long x = 0;
	for (s += 2; s < e; s++) {
		int h = hexval(*s);
		if (h < 0 || x >> 60)
			return false;
		x = x << 4 | (unsigned long)h;
	}
	*v = x;
	return true;
}

static bool num_dec(const char *s, const char *e, int64_t *v)
{
	if (s == e)
		return false;
	int64_t x = 0;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9' || x > (INT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (*s - '0');
	}
	*v = x;
	return true;
}

/* The four counts of a stack or other line. */
static bool counts(const char **p, const char *e, int64_t *v)
{
	const char *ws, *we;
	for (int i = 0; i < NR_VALUES; i++)
		if (!word(p, e, &ws, &we) || !num_dec(ws, we, &v[i]))
			return false;
	return true;
}

static bool module_line(struct dump *d, const char *p, const char *e)
{
	const char *ws, *we;
	int64_t idx;
	struct hmod m;
	memset(&m, 0, sizeof(m));
	if (!word(&p, e, &ws, &we) || !num_dec(ws, we, &idx) || (size_t)idx != d->nmods ||
	    !word(&p, e, &ws, &we) || !num_hex(ws, we, &m.bias) ||
	    !word(&p, e, &ws, &we) || !num_hex(ws, we, &m.lo) ||
	    !word(&p, e, &ws, &we) || !num_hex(ws, we, &m.hi) ||
	    !word(&p, e, &ws, &we) || !num_hex(ws, we, &m.offset) ||
	    !word(&p, e, &ws, &we) || (size_t)(we - ws) >= sizeof(m.build_id))
		return false;
	if (we - ws != 1 || *ws != '-') {
		for (const char *q = ws; q < we; q++)
			if (hexval(*q) < 0)
				return false;
		memcpy(m.build_id, ws, (size_t)(we - ws));
	}
	if (!word(&p, e, &ws, &we))
		return false;
	if (we - ws == 8 && !memcmp(ws, "unloaded", 8))
		m.unloaded = true;
	else if (we - ws != 6 || memcmp(ws, "loaded", 6))
		return false;
	if (!word(&p, e, &ws, &we) || p != e || !(m.path = malloc((size_t)(we - ws) + 1)))
		return false;
	size_t k = 0;
	for (const char *q = ws; q < we; q++) {
		int hi, lo;
		if (*q == '%' && we - q >= 3 && (hi = hexval(q[1])) >= 0 && (lo = hexval(q[2])) >= 0) {
			m.path[k++] = (char)(hi << 4 | lo);
			q += 2;
		} else {
			m.path[k++] = *q;
		}
	}
	m.path[k] = 0;
	if (!grow_array((void **)&d->mods, &d->capmods, d->nmods, sizeof(m))) {
		free(m.path);
		return false;
	}
	d->mods[d->nmods++] = m;
	return true;
}

static bool stack_line(struct dump *d, const char *p, const char *e)
{
	struct hstack s = { .first = d->nfr };
	const char *ws, *we;
	if (!counts(&p, e, s.v))
		return false;
	while (word(&p, e, &ws, &we)) {
		struct hframe f = { -1, 0 };
		const char *plus = memchr(ws, '+', (size_t)(we - ws));
		int64_t m;
		if (plus ? !num_dec(ws, plus, &m) || (size_t)m >= d->nmods ||
			   !num_hex(plus + 1, we, &f.off)
			 : !num_hex(ws, we, &f.off)) {
			d->nfr = s.first;
			return false;
		}
		if (plus)
			f.mod = (long)m;
		if (!grow_array((void **)&d->fr, &d->capfr, d->nfr, sizeof(f)))
			return false;
		d->fr[d->nfr++] = f;
	}
	s.n = d->nfr - s.first;
	if (!s.n || !grow_array((void **)&d->st, &d->capst, d->nst, sizeof(s))) {
		d->nfr = s.first;
		return false;
	}
	d->st[d->nst++] = s;
	return true;
}

/* Parse the dump @text into @d: 0, or -1 (not a dump: said on stderr,
 * as @who). Lines that do not parse are counted (d->bad) and the first
 * five named. */
static int dump_parse(const char *text, size_t len, struct dump *d, const char *who)
{
	memset(d, 0, sizeof(*d));
	const char *end = text + len;
	long lineno = 0;
	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end, *p = l, *ws, *we;
		lineno++;
		l = nl ? nl + 1 : end;
		if (!word(&p, le, &ws, &we))
			continue;
		size_t n = (size_t)(we - ws);
		bool ok = true;
		if (n == 10 && !memcmp(ws, "uslub-heap", 10)) {
			int64_t version, interval;
			ok = word(&p, le, &ws, &we) && num_dec(ws, we, &version) && version == 1 &&
			     word(&p, le, &ws, &we) && num_dec(ws, we, &interval);
			if (!ok) {
				fprintf(stderr, "uslub %s: line %ld: a heap dump of another version of "
					"uslub\n", who, lineno);
				return -1;
			}
			d->interval = (unsigned long)interval;
			d->versioned = true;
		} else if (!d->versioned) {
			continue;               /* comments, the publisher's header */
		} else if (n == 6 && !memcmp(ws, "module", 6)) {
			ok = module_line(d, p, le);
		} else if (n == 5 && !memcmp(ws, "stack", 5)) {
			ok = stack_line(d, p, le);
		} else if (n == 5 && !memcmp(ws, "other", 5)) {
			ok = counts(&p, le, d->other) && !word(&p, le, &ws, &we);
			d->has_other = ok;
		} else if (*ws != '#') {
			ok = false;
		}
		if (!ok && d->bad++ < 5)
			fprintf(stderr, "uslub %s: line %ld: not a line of a heap dump: %.*s\n", who,
				lineno, (int)(le - ws < 80 ? le - ws : 80), ws);
	}
	if (!d->versioned) {
		const char *no = memmem(text, len, "# no stacks", 11);
		fprintf(stderr, "uslub %s: %s\n", who, no ? "the dump has no stacks: they are "
			"sampled profiling's (USLUB_PROFILING=sample) with USLUB_STACK_DEPTH > 0" :
			"not a uslub heap dump (no \"uslub-heap 1\" line)");
		return -1;
	}
	return 0;
}

/* ---- folded stacks, flame graphs ---------------------------------------- */

/* @s in the folded form's frame: ';' and control bytes as '?'. */
static void put_safe(FILE *m, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		fputc(c == ';' || c < 0x20 || c == 0x7f ? '?' : c, m);
	}
}

/* The folded stacks of @view (AB or IB), frames as the library writes
 * them (ext/stack.c, put_frame()), into @m. */
static void dump_folded(const struct dump *d, FILE *m, int view, long pid)
{
	fprintf(m, "# uslub heap profile%s%.0ld: %s; folded stacks (root first, leaf last) "
		"and a count, the estimated bytes (sampled every %lu bytes)\n",
		pid ? ", pid " : "", pid, view == IB ? "bytes in use (allocated and not freed)" :
		"bytes allocated in all", d->interval);
	for (size_t i = 0; i < d->nst; i++) {
		const struct hstack *s = &d->st[i];
		if (s->v[view] <= 0)
			continue;
		for (size_t k = s->n; k-- > 0;) {
			const struct hframe *f = &d->fr[s->first + k];
			if (f->mod < 0) {
				fprintf(m, "0x%lx", f->off);
			} else {
				const struct hmod *md = &d->mods[f->mod];
				fputs(md->unloaded ? "[unloaded] (" : "(", m);
				put_safe(m, md->path);
				fprintf(m, "+0x%lx)", f->off);
			}
			fputc(k ? ';' : ' ', m);
		}
		fprintf(m, "%lld\n", (long long)s->v[view]);
	}
	if (d->has_other && d->other[view] > 0)
		fprintf(m, "<no stack> %lld\n", (long long)d->other[view]);
}

/* ---- pprof -------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static int dump_pprof(struct dump *d, FILE *out, bool gzip, bool alloc, long pid)
{
	static const char *const types[NR_VALUES][2] = {
		[AO] = { "alloc_objects", "count" }, [AB] = { "alloc_space", "bytes" },
		[IO] = { "inuse_objects", "count" }, [IB] = { "inuse_space", "bytes" },
	};
	struct pprof *p = pprof_new();
	const char **mod = calloc(d->nfr + 1, sizeof(*mod));
	unsigned long *off = calloc(d->nfr + 1, sizeof(*off));
	const char **func = calloc(d->nfr + 1, sizeof(*func));
	const char **file = calloc(d->nfr + 1, sizeof(*file));
	uint64_t *locs = calloc(d->nfr + 1, sizeof(*locs));
	size_t nres = 0;
	int rc = -1;
	if (!p || !mod || !off || !func || !file || !locs)
		goto out;
	for (int i = 0; i < NR_VALUES; i++)
		pprof_sample_type(p, types[i][0], types[i][1]);
	pprof_period(p, "space", "bytes", (int64_t)d->interval);
	pprof_default_type(p, alloc ? "alloc_space" : "inuse_space");
	char comment[96];
	snprintf(comment, sizeof(comment), "uslub heap profile%s%.0ld, sampled every %lu bytes",
		 pid ? " of pid " : "", pid, d->interval);
	pprof_comment(p, comment);
	for (size_t i = 0; i < d->nfr; i++)
		if (d->fr[i].mod >= 0) {
			mod[nres] = d->mods[d->fr[i].mod].path;
			off[nres++] = d->fr[i].off;
		}
	resolve_frames(mod, off, nres, func, file);
	if (d->nmods)                   /* readers take the first mapping for the program's */
		d->mods[0].map = pprof_mapping(p, d->mods[0].lo & ~4095ul, d->mods[0].hi,
					       d->mods[0].offset & ~4095ul, d->mods[0].path,
					       d->mods[0].build_id[0] ? d->mods[0].build_id : NULL);
	/* each frame's location: its module's mapping, its address there,
	 * its function and line (interned by the builder) */
	char name[700], src[600];
	for (size_t i = 0, r = 0; i < d->nfr; i++) {
		struct hframe *f = &d->fr[i];
		uint64_t map = 0, addr = f->off;
		int64_t line = 0;
		const char *srcfile = NULL;
		if (f->mod < 0) {
			snprintf(name, sizeof(name), "0x%lx", f->off);
		} else {
			struct hmod *m = &d->mods[f->mod];
			if (!m->map)
				m->map = pprof_mapping(p, m->lo & ~4095ul, m->hi, m->offset & ~4095ul,
						       m->path, m->build_id[0] ? m->build_id : NULL);
			map = m->map;
			addr = m->bias + f->off;
			const char *fn = func[r], *fl = file[r];
			r++;
			const char *colon = fl ? strrchr(fl, ':') : NULL;
			if (colon && colon[1] >= '1' && colon[1] <= '9') {
				snprintf(src, sizeof(src), "%.*s", (int)(colon - fl), fl);
				srcfile = src;
				line = strtoll(colon + 1, NULL, 10);
			}
			if (fn)
				snprintf(name, sizeof(name), "%s%s", fn, m->unloaded ? " [unloaded]" : "");
			else
				snprintf(name, sizeof(name), "%s+0x%lx%s", base_name(m->path), f->off,
					 m->unloaded ? " [unloaded]" : "");
		}
		locs[i] = pprof_location(p, map, addr, pprof_function(p, name, strlen(name), srcfile),
					 line);
	}
	for (size_t i = 0; i < d->nst; i++)
		pprof_sample(p, locs + d->st[i].first, d->st[i].n, d->st[i].v);
	if (d->has_other) {
		uint64_t loc = pprof_location(p, 0, 0, pprof_function(p, "<no stack>", 10, NULL), 0);
		pprof_sample(p, &loc, 1, d->other);
	}
	rc = pprof_write(p, out, gzip);
out:
	resolve_frames_done();
	pprof_free(p);
	free(mod);
	free(off);
	free(func);
	free(file);
	free(locs);
	return rc;
}

/* ---- the outputs -------------------------------------------------------- */

enum heap_format heap_format_of(const char *out, size_t *stem)
{
	static const struct { const char *ext; enum heap_format f; } exts[] = {
		{ ".svg", HEAP_SVG }, { ".pb.gz", HEAP_PPROF_GZ }, { ".pb", HEAP_PPROF },
	};
	size_t n = strlen(out);
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t k = strlen(exts[i].ext);
		if (n > k && !strcmp(out + n - k, exts[i].ext)) {
			*stem = n - k;
			return exts[i].f;
		}
	}
	*stem = n;
	return HEAP_FOLDED;
}

/* The parsed dump @d to @f in @format (heap_dump_emit()); frees it. */
static int dump_emit(struct dump *d, FILE *f, enum heap_format format, bool alloc, long pid)
{
	int rc = -1;
	if (format == HEAP_PPROF_GZ || format == HEAP_PPROF) {
		rc = dump_pprof(d, f, format == HEAP_PPROF_GZ, alloc, pid);
		dump_free(d);
		return rc;
	}
	char *folded = NULL, *named = NULL;
	size_t flen = 0, nlen = 0;
	FILE *m = open_memstream(&folded, &flen);
	if (m) {
		dump_folded(d, m, alloc ? AB : IB, pid);
		if (fclose(m))
			goto out;
	} else {
		goto out;
	}
	if (format == HEAP_FOLDED) {
		resolve_folded(folded, flen, f, emit);
		rc = 0;
		goto out;
	}
	if (!(m = open_memstream(&named, &nlen)))
		goto out;
	resolve_folded(folded, flen, m, emit);
	if (fclose(m))
		goto out;
	struct flame_opts o = { .title = alloc ? "uslub heap profile: bytes allocated"
					       : "uslub heap profile: bytes in use",
				.unit = "bytes", .width = 1200, .min_width = 0.1 };
	rc = flame_svg(named, nlen, f, &o) < 0 ? -1 : 0;
out:
	free(folded);
	free(named);
	dump_free(d);
	return rc;
}

int heap_dump_emit(const char *text, size_t len, FILE *f, enum heap_format format, bool alloc,
		   long pid, const char *who)
{
	struct dump d;
	if (dump_parse(text, len, &d, who))
		return -1;
	return dump_emit(&d, f, format, alloc, pid);
}

/* ---- uslub heap --------------------------------------------------------- */

const char heap_help[] =
	"uslub heap [--alloc] [-o OUT] PID|FILE\n"
	"  The heap profile of a running process (PID, started with USLUB_PUBLISH_MS=<ms>\n"
	"  in sampled mode, the default: it publishes its heap dump at most once a\n"
	"  second, /dev/shm/uslub-<euid>/<pid>.heap, private to its uid) or of a dump\n"
	"  FILE (USLUB_HEAP_PROFILE=FILE.heap), each frame named by its function\n"
	"  (addr2line, the rules of uslub resolve); a frame of a module unloaded before\n"
	"  the dump is marked [unloaded].\n"
	"    (default)           folded stacks of the bytes in use on standard output\n"
	"    --alloc             of the bytes allocated in all instead\n"
	"    -o OUT              to OUT: OUT.svg a flame graph; OUT.pb.gz (OUT.pb not\n"
	"                        gzip'ed) a pprof profile with the four sample types\n"
	"                        (alloc_objects, alloc_space, inuse_objects, inuse_space;\n"
	"                        --alloc makes alloc_space the default), the modules as\n"
	"                        mappings with their build ids, and each frame's\n"
	"                        function, file and line; else folded stacks\n"
	"  Exit status: 0; 1 when there is no dump (said why) or it cannot be written;\n"
	"  2 on bad usage.\n";

int cmd_heap(int argc, char **argv)
{
	const char *out = NULL, *arg = NULL;
	bool alloc = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(heap_help, stdout);
			return 0;
		} else if (!strcmp(a, "--alloc")) {
			alloc = true;
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (a[0] == '-' && a[1] && strcmp(a, "--")) {
			return usage("heap: unknown option or missing value '%s'", a);
		} else if (!strcmp(a, "--") && i + 1 < argc && !arg) {
			arg = argv[++i];
		} else if (!arg) {
			arg = a;
		} else {
			return usage("heap: one PID or FILE");
		}
	}
	if (!arg)
		return usage("heap: a PID or a FILE");
	size_t stem;
	enum heap_format format = out ? heap_format_of(out, &stem) : HEAP_FOLDED;
	char *text = NULL;
	size_t len = 0;
	long pid = 0;
	struct snapshot s;
	bool live = arg[0] >= '1' && arg[0] <= '9' && strspn(arg, "0123456789") == strlen(arg) &&
		    access(arg, F_OK);
	if (live) {
		pid = strtol(arg, NULL, 10);
		if (load(&s, pid, PUB_HEAP)) {
			unload(&s);
			return 1;
		}
		text = s.doc;
		len = s.len;
		s.doc = NULL;
		unload(&s);
	} else {
		if (!(text = read_input(arg, &len, "heap")))
			return 1;
		const char *p = strstr(text, ", pid ");   /* the dump's own header */
		if (p && p < text + 200)
			pid = strtol(p + 6, NULL, 10);
	}
	/* the dump first: OUT is neither made nor touched for a bad one */
	struct dump d;
	int rc = dump_parse(text, len, &d, "heap");
	free(text);
	if (rc)
		return 1;
	struct stat st;
	bool made = out && lstat(out, &st) && errno == ENOENT;
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f) {
		fprintf(stderr, "uslub heap: cannot write %s: %s\n", out, strerror(errno));
		dump_free(&d);
		return 1;
	}
	rc = dump_emit(&d, f, format, alloc, pid);
	int werr = out ? fclose(f) : fflush(f);
	if (rc && made)
		unlink(out);                    /* nothing half written stays, of ours */
	if (rc || werr) {
		if (!rc)
			fprintf(stderr, "uslub heap: cannot write %s: %s\n", out ? out : "standard "
				"output", strerror(errno));
		return 1;
	}
	return 0;
}
