/*
 * The `uslub` tool's symbolizer (resolve.h): caller sites to file:line.
 *
 * A process profiled under LD_PRELOAD names the program's malloc call
 * sites by module and offset (ext/caller_tag.c: the return address less
 * the module's load bias, which is what addr2line takes for a shared
 * object, a PIE and a fixed-address executable alike). DWARF line tables
 * are read here, outside the process: one `addr2line -f -C -e MODULE
 * ADDR...` per module, on the address of the call instruction (the return
 * address less one), with the tool's LD_PRELOAD removed from its
 * environment.
 */
#define _GNU_SOURCE
#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SITES      65536
#define ADDRS_PER_CALL 512

struct site {
	char *module;
	unsigned long off;
	char *file;             /* "path:line", NULL unknown */
	char *func;             /* NULL unknown */
	char *sym;              /* the ELF symbol around it, when func is unknown */
	int text;               /* @module as a text table shows it: escaped */
};

static struct site *sites;
static size_t nr_sites;
static bool want_symbols;       /* resolve_frames(): ELF symbols too */

/* The value of the lowercase hex digit @c, or -1 (the library writes
 * lowercase). */
static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A text row's caller site: @line (to @end, no '\n') is
 * "BYTES CALLS /module+0xOFF func:SYM"; the site's span and its module's
 * length, or 0. */
static int row_site(const char *line, const char *end, const char **ss, const char **se,
		    size_t *modlen, unsigned long *off)
{
	const char *p = line;
	for (int field = 0; field < 2; field++) {
		while (p < end && *p == ' ')
			p++;
		if (p < end && *p == '-')
			p++;
		const char *d = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		if (p == d || p >= end || *p != ' ')
			return 0;
	}
	while (p < end && *p == ' ')
		p++;
	if (p >= end || *p != '/')
		return 0;
	const char *f = memmem(p, (size_t)(end - p), " func:", 6);
	if (!f)
		return 0;
	const char *plus = NULL;
	for (const char *q = p; q < f; q++)
		if (*q == '+')
			plus = q;
	if (!plus || f - plus < 4 || plus[1] != '0' || plus[2] != 'x')
		return 0;
	unsigned long v = 0;
	for (const char *q = plus + 3; q < f; q++) {
		int h = hexval(*q);
		if (h < 0)
			return 0;
		v = v << 4 | (unsigned long)h;
	}
	*ss = p;
	*se = f;
	*modlen = (size_t)(plus - p);
	*off = v;
	return 1;
}

/* A JSON site's "module":"PATH","offset":N at @p (which points at
 * "\"module\":"): PATH decoded into @buf; the end of N, or NULL. */
static const char *json_site(const char *p, const char *end, char *buf, size_t len,
			     unsigned long *off)
{
	p += 9;                                 /* "module": */
	if (p >= end || *p != '"')
		return NULL;
	size_t k = 0;
	for (p++; p < end && *p != '"'; p++) {
		char c = *p;
		if (c == '\\') {
			if (++p >= end || (*p != '\\' && *p != '"' && *p != '/'))
				return NULL;    /* other escapes: not a path we resolve */
			c = *p;
		}
		if (k + 1 >= len)
			return NULL;
		buf[k++] = c;
	}
	buf[k] = 0;
	if (p >= end || strncmp(p, "\",\"offset\":", 11))
		return NULL;
	p += 11;
	const char *d = p;
	unsigned long v = 0;
	while (p < end && *p >= '0' && *p <= '9')
		v = v * 10 + (unsigned long)(*p++ - '0');
	if (p == d)
		return NULL;
	*off = v;
	return p;
}

/* FNV-1a over @n bytes of @s, from @h. */
static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* sites[] by (module, offset): open addressing, twice MAX_SITES slots,
 * each a site's index + 1 (0: empty). */
static unsigned int site_index[2 * MAX_SITES];

static uint64_t site_hash(const char *module, size_t modlen, unsigned long off)
{
	return hash_bytes(0xcbf29ce484222325ull ^ off * 0x9e3779b97f4a7c15ull, module, modlen);
}

/* The slot of (module, offset) in site_index: its site's, or the empty
 * one where it would go. */
static unsigned int *site_slot(const char *module, size_t modlen, unsigned long off)
{
	size_t mask = 2 * MAX_SITES - 1, i = site_hash(module, modlen, off) & mask;
	for (;; i = (i + 1) & mask) {
		unsigned int k = site_index[i];
		if (!k)
			return &site_index[i];
		const struct site *s = &sites[k - 1];
		if (s->off == off && !strncmp(s->module, module, modlen) && !s->module[modlen])
			return &site_index[i];
	}
}

static struct site *find(const char *module, size_t modlen, unsigned long off)
{
	unsigned int k = *site_slot(module, modlen, off);
	return k ? &sites[k - 1] : NULL;
}

static void add(const char *module, size_t modlen, unsigned long off, int text)
{
	if (nr_sites >= MAX_SITES)
		return;
	unsigned int *slot = site_slot(module, modlen, off);
	if (*slot)
		return;
	char *m = strndup(module, modlen);
	if (!m)
		return;
	sites[nr_sites++] = (struct site){ m, off, NULL, NULL, NULL, text };
	*slot = (unsigned int)nr_sites;
}

/* Every caller site @text names, into sites[]. */
static void scan(const char *text, size_t len)
{
	const char *end = text + len;
	char path[4096];
	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;
		const char *ss, *se;
		size_t modlen;
		unsigned long off;
		if (row_site(l, le, &ss, &se, &modlen, &off))
			add(ss, modlen, off, 1);
		l = nl ? nl + 1 : end;
	}
	for (const char *p = text; (p = memmem(p, (size_t)(end - p), "\"module\":", 9)); p++) {
		unsigned long off;
		if (json_site(p, end, path, sizeof(path), &off))
			add(path, strlen(path), off, 0);
	}
}

/* A module's path as a text table shows it (the library escapes a name's
 * control bytes and backslashes: \n \t \r \\ \xHH, base/report.c), as it
 * is, in @buf; NULL when it does not fit or is no such text. */
static const char *unescape(const char *s, char *buf, size_t len)
{
	size_t k = 0;
	for (; *s; s++) {
		char c = *s;
		if (c == '\\') {
			int hi, lo;
			switch (*++s) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '\\': c = '\\'; break;
			case 'x':
				hi = hexval(s[1]);
				lo = hi < 0 ? -1 : hexval(s[2]);
				if (lo < 0)
					return NULL;
				c = (char)(hi << 4 | lo);
				s += 2;
				break;
			default:
				return NULL;
			}
		}
		if (k + 1 >= len)
			return NULL;
		buf[k++] = c;
	}
	buf[k] = '\0';
	return buf;
}

/* The path of @name in $PATH, or NULL. */
static char *in_path(const char *name)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/bin:/bin";
	static char buf[4096];
	for (const char *p = path; *p;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n && (size_t)snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, name) < sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return buf;
		p += n + (c ? 1 : 0);
	}
	return NULL;
}

/* Run addr2line on sites[idx[0..n)] (one module, read from @file); fill
 * file and func. */
static void run_addr2line(const char *prog, const char *file, size_t *idx, size_t n)
{
	char **argv = calloc(n + 7, sizeof(*argv));
	char *addrs = malloc(n * 24);
	if (!argv || !addrs)
		goto out;
	int a = 0;
	argv[a++] = (char *)"addr2line";
	argv[a++] = (char *)"-f";
	argv[a++] = (char *)"-C";
	argv[a++] = (char *)"-e";
	argv[a++] = (char *)file;
	for (size_t i = 0; i < n; i++) {
		unsigned long off = sites[idx[i]].off;
		snprintf(addrs + i * 24, 24, "0x%lx", off ? off - 1 : 0);   /* the call */
		argv[a++] = addrs + i * 24;
	}
	argv[a] = NULL;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		goto out;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		goto out;
	}
	if (pid == 0) {
		int dn = open("/dev/null", O_RDWR);
		if (dn >= 0) {
			dup2(dn, 0);
			dup2(dn, 2);
		}
		dup2(pfd[1], 1);
		unsetenv("LD_PRELOAD");         /* `uslub run` set it for CMD */
		unsetenv("USLUB_REPORT");
		execv(prog, argv);
		_exit(127);
	}
	close(pfd[1]);
	size_t cap = 4096, len = 0;
	char *out = malloc(cap);
	for (ssize_t r = 1; out && r > 0;) {
		if (len + 1024 > cap) {
			char *o = realloc(out, cap * 2);
			if (!o)
				break;
			out = o;
			cap *= 2;
		}
		r = read(pfd[0], out + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			r = 1;
		else if (r > 0)
			len += (size_t)r;
	}
	close(pfd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!out)
		goto out;
	out[len] = 0;
	/* two lines per address: the function, then FILE:LINE */
	char *p = out;
	for (size_t i = 0; i < n && *p; i++) {
		char *fn = p, *e = strchr(p, '\n');
		if (!e)
			break;
		*e = 0;
		char *fl = e + 1;
		e = strchr(fl, '\n');
		if (!e)
			break;
		*e = 0;
		p = e + 1;
		char *disc = strstr(fl, " (discriminator");
		if (disc)
			*disc = 0;
		struct site *s = &sites[idx[i]];
		/* a function without a line is addr2line's guess from the
		 * nearest symbol (a stripped module): dladdr's name stays */
		char *colon = strrchr(fl, ':');
		if (strncmp(fl, "??", 2) && colon && colon[1] >= '1' && colon[1] <= '9') {
			s->file = strdup(fl);
			if (strcmp(fn, "??"))
				s->func = strdup(fn);
		}
	}
	free(out);
out:
	free(argv);
	free(addrs);
}

static int by_module(const void *a, const void *b)
{
	const struct site *x = &sites[*(const size_t *)a], *y = &sites[*(const size_t *)b];
	int c = strcmp(x->module, y->module);
	return c ? c : (x->off > y->off) - (x->off < y->off);
}

/*
 * The file addr2line reads for @module, whose path comes from the profiled
 * process (its report or published snapshot). Only a regular file: the
 * path is opened with O_PATH (which opens no device and waits on no FIFO)
 * and checked on that descriptor. As an ordinary user that is all (the
 * tool may read what that user may anyway). As root (uslub allocinfo PID
 * of another user's process) it would parse a file that user chose with
 * root's privileges: there the file must also be owned by root and
 * writable by no one else (the system's programs and libraries). The
 * checked file is then opened for reading through its descriptor and
 * addr2line gets /proc/self/fd/N (*@fd = N, inherited: the caller closes
 * it), so it cannot be swapped between the check and the read. NULL: skip
 * it (*@refused counts those refused as root).
 */
static const char *module_file(const char *module, char *buf, size_t len, int *fd,
			       int *refused)
{
	*fd = -1;
	int pf = open(module, O_PATH | O_CLOEXEC);
	if (pf < 0)
		return NULL;
	struct stat st;
	int ok = !fstat(pf, &st) && S_ISREG(st.st_mode);
	if (ok && geteuid() == 0 && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		(*refused)++;
		ok = 0;
	}
	if (ok) {
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pf);
		*fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY);   /* no O_CLOEXEC */
	}
	close(pf);
	if (*fd < 0)
		return NULL;
	snprintf(buf, len, "/proc/self/fd/%d", *fd);
	return buf;
}


/*
 * The function symbols of an ELF file (the module addr2line read, @fd):
 * for the sites idx[0..n) addr2line named no function for (no debug
 * information: a stripped library), the symbol whose [value, value +
 * size) holds the call (the offset less one), from .symtab, else
 * .dynsym: what dladdr() would name in the process, found outside it
 * (the heap dump's frames carry no name). ELF64, this machine's byte
 * order; the headers and tables read (pread: a file that shrinks after
 * its size was taken reads short, never faults), every offset checked
 * against the file's size.
 */
struct fsym {
	unsigned long lo, hi;
	const char *name;
};

static int by_lo(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* @len bytes at @off of @fd, malloc'ed (NULL: out of the file, or short:
 * a file that shrank). */
static void *read_at(int fd, uint64_t off, uint64_t len, uint64_t size)
{
	if (off > size || len > size - off || len > (1u << 30))
		return NULL;
	char *p = malloc(len ? len : 1);
	size_t got = 0;
	while (p && got < len) {
		ssize_t r = pread(fd, p + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(p);
			return NULL;
		}
		got += (size_t)r;
	}
	return p;
}

static void elf_symbols(int fd, size_t *idx, size_t n)
{
	size_t need = 0;
	for (size_t i = 0; i < n; i++)
		need += !sites[idx[i]].func;
	struct stat st;
	Elf64_Ehdr eh;
	if (!need || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr))
		return;
	uint64_t size = (uint64_t)st.st_size;
	Elf64_Shdr *sh = read_at(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size);
	const Elf64_Shdr *tab = NULL;
	for (unsigned int i = 0; sh && i < eh.e_shnum; i++)
		if ((sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !tab)) &&
		    sh[i].sh_link < eh.e_shnum)
			tab = &sh[i];
	Elf64_Sym *sym = tab ? read_at(fd, tab->sh_offset, tab->sh_size, size) : NULL;
	char *str = sym ? read_at(fd, sh[tab->sh_link].sh_offset, sh[tab->sh_link].sh_size, size)
			: NULL;
	size_t nsym = str ? tab->sh_size / sizeof(Elf64_Sym) : 0, strsz = str ? sh[tab->sh_link].sh_size : 0;
	size_t k = 0;
	struct fsym *fs = nsym ? calloc(nsym, sizeof(*fs)) : NULL;
	for (size_t i = 0; fs && i < nsym; i++) {
		unsigned int type = ELF64_ST_TYPE(sym[i].st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[i].st_shndx == SHN_UNDEF ||
		    !sym[i].st_size || sym[i].st_name >= strsz ||
		    !memchr(str + sym[i].st_name, 0, strsz - sym[i].st_name) || !str[sym[i].st_name])
			continue;
		fs[k++] = (struct fsym){ sym[i].st_value, sym[i].st_value + sym[i].st_size,
					 str + sym[i].st_name };
	}
	if (fs)
		qsort(fs, k, sizeof(*fs), by_lo);
	for (size_t i = 0; fs && i < n; i++) {
		struct site *s = &sites[idx[i]];
		unsigned long a = s->off ? s->off - 1 : 0;
		size_t lo = 0, hi = k;          /* the last symbol starting at or below a */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (fs[mid].lo <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* symbols may nest (aliases, a .cold part): the nearest few */
		for (size_t j = lo; !s->func && !s->sym && j-- > 0 && lo - j <= 8;)
			if (a < fs[j].hi)
				s->sym = strdup(fs[j].name);
	}
	free(fs);
	free(str);
	free(sym);
	free(sh);
}

static void resolve_all(void)
{
	static int warned, warned_root;
	int refused = 0;
	const char *prog = in_path("addr2line");
	if (!prog) {
		if (!warned++)
			fprintf(stderr, "uslub: addr2line (binutils) is not installed: the program's "
				"call sites are shown as module+offset and symbol, without "
				"file:line\n");
		if (!want_symbols)
			return;                 /* the ELF symbols still name functions */
	}
	char progbuf[4096];
	snprintf(progbuf, sizeof(progbuf), "%s", prog ? prog : "");
	size_t *idx = malloc(nr_sites * sizeof(*idx));
	if (!idx)
		return;
	for (size_t i = 0; i < nr_sites; i++)
		idx[i] = i;
	qsort(idx, nr_sites, sizeof(*idx), by_module);
	for (size_t i = 0; i < nr_sites;) {
		size_t j = i;
		while (j < nr_sites && j - i < ADDRS_PER_CALL &&
		       !strcmp(sites[idx[j]].module, sites[idx[i]].module))
			j++;
		char fdpath[64], path[4096];
		int fd = -1;
		const char *module = sites[idx[i]].module, *file = NULL;
		if (sites[idx[i]].text)
			module = unescape(module, path, sizeof(path));
		if (module)
			file = module_file(module, fdpath, sizeof(fdpath), &fd, &refused);
		if (file && prog)
			run_addr2line(progbuf, file, idx + i, j - i);
		if (file && want_symbols)
			elf_symbols(fd, idx + i, j - i);
		if (fd >= 0)
			close(fd);
		i = j;
	}
	free(idx);
	if (refused && !warned_root++)
		fprintf(stderr, "uslub: %d module%s not owned by root (or writable by others) left "
			"unresolved: run as root, the tool lets addr2line read only root's files; "
			"run it as the process's user to resolve them\n", refused,
			refused == 1 ? "" : "s");
}

static void emit_str(resolve_emit_fn emit, FILE *out, const char *s)
{
	emit(s, strlen(s), out);
}

/* @s as the contents of a JSON string. */
static void emit_json_str(resolve_emit_fn emit, FILE *out, const char *s)
{
	for (; *s; s++) {
		char e[8];
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			snprintf(e, sizeof(e), "\\%c", c);
		else if (c < 0x20)
			snprintf(e, sizeof(e), "\\u%04x", c);
		else
			snprintf(e, sizeof(e), "%c", c);
		emit_str(emit, out, e);
	}
}

/* A table row "BYTES CALLS REST" (uslub_allocinfo_print()'s "%14lld
 * %10lld %s"): its numbers and where REST starts; 0 if @l is no row. */
static int parse_row(const char *l, const char *le, long long *bytes, long long *calls,
		     const char **rest)
{
	const char *p = l;
	long long v[2];
	for (int f = 0; f < 2; f++) {
		while (p < le && *p == ' ')
			p++;
		int neg = p < le && *p == '-';
		p += neg;
		const char *d = p;
		long long x = 0;
		while (p < le && *p >= '0' && *p <= '9') {
			int dig = *p++ - '0';   /* saturates: a hostile row's 23 digits */
			x = x > (LLONG_MAX - dig) / 10 ? LLONG_MAX : x * 10 + dig;
		}
		if (p == d || p >= le || *p != ' ')
			return 0;
		v[f] = neg ? -x : x;
	}
	if (++p >= le)
		return 0;
	*bytes = v[0];
	*calls = v[1];
	*rest = p;
	return 1;
}

static long long sat_add(long long a, long long b)
{
	long long r;
	return __builtin_add_overflow(a, b, &r) ? (b > 0 ? LLONG_MAX : LLONG_MIN) : r;
}

struct row {
	long long bytes, calls;
	char *key;              /* "FILE:LINE func:F" resolved, else the row's text */
	char *site;             /* the first module+0xOFF merged here (resolved) */
	int more;               /* other addresses merged into it */
};

static int by_bytes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->key, y->key);
}

/*
 * A run of table rows [@bs, @be): the resolved ones written as
 * "FILE:LINE func:FUNCTION (/module+0xOFF)"; rows that resolve to the same
 * line and function (one source call site compiled to several calls:
 * an unrolled loop, an inlined function) merged into one, bytes and
 * objects added ("(/module+0xOFF, +N more)"), and the run sorted by bytes
 * again. A run with nothing resolved is written as it is.
 */
static void flush_rows(const char *bs, const char *be, FILE *out, resolve_emit_fn emit)
{
	size_t n = 0, k = 0;
	int any = 0;
	for (const char *l = bs; l < be; l++)
		n += *l == '\n';
	struct row *rows = calloc(n + 1, sizeof(*rows));
	size_t mask = 1;                     /* the rows by key: open addressing */
	while (mask < 2 * (n + 1))
		mask <<= 1;
	size_t *by_key = calloc(mask--, sizeof(*by_key));   /* row index + 1 */
	if (!rows || !by_key) {
		free(rows);
		free(by_key);
		emit(bs, (size_t)(be - bs), out);
		return;
	}
	for (const char *l = bs; l < be;) {
		const char *nl = memchr(l, '\n', (size_t)(be - l));
		const char *le = nl ? nl : be, *rest, *ss, *se;
		long long bytes, calls;
		size_t modlen;
		unsigned long off;
		struct site *s;
		char *key = NULL, *site = NULL;
		if (!parse_row(l, le, &bytes, &calls, &rest))
			break;                      /* cannot happen: a run of rows */
		if (row_site(l, le, &ss, &se, &modlen, &off) && (s = find(ss, modlen, off)) &&
		    s->file) {
			if (asprintf(&key, "%s func:%s", s->file, s->func ? s->func : "?") < 0)
				key = NULL;
			site = strndup(ss, (size_t)(se - ss));
			any = 1;
		} else {
			key = strndup(rest, (size_t)(le - rest));
		}
		l = nl ? nl + 1 : be;
		if (!key) {
			free(site);
			continue;
		}
		size_t h = (size_t)hash_bytes(0xcbf29ce484222325ull, key, strlen(key)) & mask;
		while (by_key[h] && strcmp(rows[by_key[h] - 1].key, key))
			h = (h + 1) & mask;
		size_t i = by_key[h] ? by_key[h] - 1 : k;
		if (i < k) {                        /* the same source site */
			rows[i].bytes = sat_add(rows[i].bytes, bytes);
			rows[i].calls = sat_add(rows[i].calls, calls);
			rows[i].more += site != NULL;
			free(key);
			free(site);
		} else {
			rows[k++] = (struct row){ bytes, calls, key, site, 0 };
			by_key[h] = k;
		}
	}
	if (!any) {
		emit(bs, (size_t)(be - bs), out);
	} else {
		qsort(rows, k, sizeof(*rows), by_bytes);
		for (size_t i = 0; i < k; i++) {
			char num[64];
			snprintf(num, sizeof(num), "%14lld %10lld ", rows[i].bytes, rows[i].calls);
			emit_str(emit, out, num);
			emit_str(emit, out, rows[i].key);
			if (rows[i].site) {
				emit_str(emit, out, " (");
				emit_str(emit, out, rows[i].site);
				if (rows[i].more) {
					snprintf(num, sizeof(num), ", +%d more", rows[i].more);
					emit_str(emit, out, num);
				}
				emit_str(emit, out, ")");
			}
			emit_str(emit, out, "\n");
		}
	}
	for (size_t i = 0; i < k; i++) {
		free(rows[i].key);
		free(rows[i].site);
	}
	free(rows);
	free(by_key);
}

static void rewrite(const char *text, size_t len, FILE *out, resolve_emit_fn emit)
{
	const char *end = text + len, *done = text, *run = NULL;
	char path[4096];
	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end, *rest;
		long long bytes, calls;
		int is_row = nl && parse_row(l, le, &bytes, &calls, &rest);
		if (is_row && !run) {
			emit(done, (size_t)(l - done), out);
			run = l;
		} else if (!is_row && run) {
			flush_rows(run, l, out, emit);
			done = l;
			run = NULL;
		}
		l = nl ? nl + 1 : end;
	}
	if (run) {
		flush_rows(run, end, out, emit);
		done = end;
	}
	for (const char *p = done; (p = memmem(p, (size_t)(end - p), "\"module\":", 9)); p++) {
		unsigned long off;
		const char *e = json_site(p, end, path, sizeof(path), &off);
		struct site *s;
		if (!e || !(s = find(path, strlen(path), off)) || !s->file)
			continue;
		emit(done, (size_t)(e - done), out);
		const char *colon = strrchr(s->file, ':');
		emit_str(emit, out, ",\"source_file\":\"");
		char *f = strndup(s->file, (size_t)(colon - s->file));
		if (f)
			emit_json_str(emit, out, f);
		free(f);
		emit_str(emit, out, "\",\"source_line\":");
		char num[24];
		snprintf(num, sizeof(num), "%lu", strtoul(colon + 1, NULL, 10));
		emit_str(emit, out, num);
		if (s->func) {
			emit_str(emit, out, ",\"source_func\":\"");
			emit_json_str(emit, out, s->func);
			emit_str(emit, out, "\"");
		}
		done = e;
		p = e - 1;
	}
	emit(done, (size_t)(end - done), out);
}

/* Forget the sites of the last text resolved. */
static void sites_clear(void)
{
	for (size_t i = 0; i < nr_sites; i++) {
		free(sites[i].module);
		free(sites[i].file);
		free(sites[i].func);
		free(sites[i].sym);
	}
	free(sites);
	sites = NULL;
	nr_sites = 0;
}


void resolve_and_emit(const char *text, size_t len, FILE *out, resolve_emit_fn emit)
{
	sites = calloc(MAX_SITES, sizeof(*sites));
	nr_sites = 0;
	memset(site_index, 0, sizeof(site_index));
	if (sites)
		scan(text, len);
	if (nr_sites)
		resolve_all();
	if (nr_sites)
		rewrite(text, len, out, emit);
	else
		emit(text, len, out);
	sites_clear();
}

/* ---- heap profiles: folded stacks --------------------------------------- */

/* A frame [@f, @fe) of a heap profile (ext/stack.c): "SYM (MODULE+0xOFF)",
 * "(MODULE+0xOFF)" or "0xADDR". Its symbol's span (may be empty) and its
 * site's module span and offset; 0 when it names no module. */
static int folded_frame(const char *f, const char *fe, const char **se, const char **ms,
			size_t *modlen, unsigned long *off)
{
	if (fe - f < 6 || fe[-1] != ')')
		return 0;
	const char *open = NULL, *plus = NULL;
	for (const char *q = fe - 1; q >= f; q--)
		if (*q == '(' && (q == f || q[-1] == ' ')) {
			open = q;
			break;
		}
	if (!open)
		return 0;
	for (const char *q = open; q < fe; q++)
		if (*q == '+')
			plus = q;
	if (!plus || plus[1] != '0' || plus[2] != 'x' || plus == open + 1)
		return 0;
	unsigned long v = 0;
	for (const char *q = plus + 3; q < fe - 1; q++) {
		int h = hexval(*q);
		if (h < 0)
			return 0;
		v = v << 4 | (unsigned long)h;
	}
	*se = open > f ? open - 1 : f;
	*ms = open + 1;
	*modlen = (size_t)(plus - open - 1);
	*off = v;
	return 1;
}

/* The name a frame gets in the resolved profile, appended to @buf
 * (length *@k, capacity @cap): the function addr2line names (with a
 * line: from the debug information), else the module's dynamic symbol
 * the library wrote, else the ELF symbol around it (elf_symbols()), else
 * the module's file name and the offset. */
static void folded_name(const char *f, const char *fe, char *buf, size_t *k, size_t cap)
{
	const char *se, *ms;
	size_t modlen, n;
	unsigned long off;
	char tmp[600];
	const char *name = tmp;
	struct site *s;
	bool unloaded = false;
	if (!folded_frame(f, fe, &se, &ms, &modlen, &off)) {
		n = (size_t)(fe - f);
		name = f;
	} else if ((unloaded = se - f == 10 && !memcmp(f, "[unloaded]", 10)) &&
		   (s = find(ms, modlen, off)) && (s->func || s->sym)) {
		n = (size_t)snprintf(tmp, sizeof(tmp), "%s [unloaded]", s->func ? s->func : s->sym);
		if (n >= sizeof(tmp))
			n = sizeof(tmp) - 1;
	} else if ((s = find(ms, modlen, off)) && s->func) {
		name = s->func;
		n = strlen(name);
	} else if (se > f && !unloaded) {
		n = (size_t)(se - f);
		name = f;
	} else if (s && s->sym) {
		name = s->sym;
		n = strlen(name);
	} else {
		const char *base = ms;
		for (const char *q = ms; q < ms + modlen; q++)
			if (*q == '/')
				base = q + 1;
		n = (size_t)snprintf(tmp, sizeof(tmp), "%.*s+0x%lx%s", (int)(ms + modlen - base), base,
				     off, unloaded ? " [unloaded]" : "");
		if (n >= sizeof(tmp))
			n = sizeof(tmp) - 1;
	}
	for (size_t i = 0; i < n && *k + 1 < cap; i++)      /* ';' separates frames */
		buf[(*k)++] = name[i] == ';' ? ':' : name[i];
	buf[*k] = 0;
}

struct folded {
	char *stack;
	long long count;
};

static int by_count(const void *a, const void *b)
{
	const struct folded *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->stack, y->stack);
}

void resolve_folded(const char *text, size_t len, FILE *out, resolve_emit_fn emit)
{
	const char *end = text + len;
	size_t nlines = 1;
	for (const char *p = text; p < end; p++)
		nlines += *p == '\n';
	sites = calloc(MAX_SITES, sizeof(*sites));
	nr_sites = 0;
	memset(site_index, 0, sizeof(site_index));
	struct folded *rows = calloc(nlines, sizeof(*rows));
	size_t mask = 1;
	while (mask < 2 * nlines)
		mask <<= 1;
	size_t *by_key = calloc(mask--, sizeof(*by_key));
	size_t cap = 1 << 16, k = 0;
	char *buf = malloc(cap);
	if (!sites || !rows || !by_key || !buf) {
		emit(text, len, out);
		goto out;
	}
	/* every frame's site, then addr2line once per module */
	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end, *sp = le;
		while (sp > l && sp[-1] != ' ')
			sp--;
		for (const char *f = l; *l != '#' && f < sp;) {
			const char *fe = memchr(f, ';', (size_t)(sp - f));
			const char *ffe = fe ? fe : sp - 1, *se, *ms;
			size_t modlen;
			unsigned long off;
			if (folded_frame(f, ffe, &se, &ms, &modlen, &off))
				add(ms, modlen, off, 0);
			f = fe ? fe + 1 : sp;
		}
		l = nl ? nl + 1 : end;
	}
	want_symbols = true;
	if (nr_sites)
		resolve_all();
	want_symbols = false;
	/* each line with its frames named; lines that name the same frames
	 * (return addresses in the same functions) added up */
	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end, *sp = le;
		while (sp > l && sp[-1] != ' ')
			sp--;
		if (*l == '#' || sp == l || sp == le) {
			if (*l == '#' && !k)
				emit(l, (size_t)(le - l) + (nl != NULL), out);   /* the header */
			l = nl ? nl + 1 : end;
			continue;
		}
		long long count = strtoll(sp, NULL, 10);
		size_t bl = 0;
		buf[0] = 0;
		for (const char *f = l; f < sp;) {
			const char *fe = memchr(f, ';', (size_t)(sp - f));
			folded_name(f, fe ? fe : sp - 1, buf, &bl, cap);
			if (fe && bl + 1 < cap) {
				buf[bl++] = ';';
				buf[bl] = 0;
			}
			f = fe ? fe + 1 : sp;
		}
		size_t h = (size_t)hash_bytes(0xcbf29ce484222325ull, buf, bl) & mask;
		while (by_key[h] && strcmp(rows[by_key[h] - 1].stack, buf))
			h = (h + 1) & mask;
		if (by_key[h]) {
			rows[by_key[h] - 1].count = sat_add(rows[by_key[h] - 1].count, count);
		} else if ((rows[k].stack = strdup(buf))) {
			rows[k++].count = count;
			by_key[h] = k;
		}
		l = nl ? nl + 1 : end;
	}
	qsort(rows, k, sizeof(*rows), by_count);
	for (size_t i = 0; i < k; i++) {
		char num[32];
		emit_str(emit, out, rows[i].stack);
		snprintf(num, sizeof(num), " %lld\n", rows[i].count);
		emit_str(emit, out, num);
	}
out:
	for (size_t i = 0; rows && i < k; i++)
		free(rows[i].stack);
	free(rows);
	free(by_key);
	free(buf);
	sites_clear();
}

/* ---- frames of a heap dump ---------------------------------------------- */

void resolve_frames(const char *const *module, const unsigned long *off, size_t n,
		    const char **func, const char **file)
{
	sites = calloc(MAX_SITES, sizeof(*sites));
	nr_sites = 0;
	memset(site_index, 0, sizeof(site_index));
	for (size_t i = 0; sites && i < n; i++)
		add(module[i], strlen(module[i]), off[i], 0);
	want_symbols = true;
	if (nr_sites)
		resolve_all();
	want_symbols = false;
	for (size_t i = 0; i < n; i++) {
		struct site *s = sites ? find(module[i], strlen(module[i]), off[i]) : NULL;
		func[i] = s ? s->func ? s->func : s->sym : NULL;
		file[i] = s ? s->file : NULL;
	}
}

void resolve_frames_done(void)
{
	sites_clear();
}
