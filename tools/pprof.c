/*
 * pprof.c — profiles in pprof's format (github.com/google/pprof,
 * proto/profile.proto): a builder that interns strings, functions and
 * locations, encodes the protocol buffer by hand (varints and
 * length-delimited fields: no protobuf library) and writes it gzip'ed
 * (stored deflate blocks and CRC-32: no zlib), which `go tool pprof`,
 * speedscope and the other pprof readers take as it is. And `uslub pprof`,
 * which turns folded stacks into such a profile.
 *
 * The encoding, field numbers from profile.proto:
 *   Profile   1 sample_type (ValueType)  2 sample  3 mapping  4 location
 *             5 function  6 string_table  9 time_nanos  11 period_type
 *             12 period  13 comment  14 default_sample_type
 *   ValueType 1 type  2 unit (string indices)
 *   Sample    1 location_id (packed, leaf first)  2 value (packed)
 *   Mapping   1 id  2 memory_start  3 memory_limit  4 file_offset
 *             5 filename  6 build_id  7 has_functions
 *   Location  1 id  2 mapping_id  3 address  4 line (Line: 1 function_id
 *             2 line)
 *   Function  1 id  2 name  3 system_name  4 filename
 * String 0 is "" (the format requires it); ids start at 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* ---- a growable byte buffer and the wire format ----------------------- */

struct buf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const void *src, size_t n)
{
	if (b->oom || !n)       /* an empty buffer's NULL: nothing to copy */
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		unsigned char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void varint(struct buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;
	do {
		t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	put(b, t, n);
}

/* field @f as a varint (wire type 0); zero is left out, as proto3 does */
static void field_u(struct buf *b, unsigned int f, uint64_t v)
{
	if (!v)
		return;
	varint(b, (uint64_t)f << 3);
	varint(b, v);
}

/* field @f, length-delimited (wire type 2) */
static void field_bytes(struct buf *b, unsigned int f, const void *p, size_t n)
{
	varint(b, (uint64_t)f << 3 | 2);
	varint(b, n);
	put(b, p, n);
}

static void field_msg(struct buf *b, unsigned int f, struct buf *m)
{
	field_bytes(b, f, m->p, m->len);
	b->oom |= m->oom;
	m->len = 0;
}

/* ---- the builder ------------------------------------------------------- */

struct pstr {                   /* string_table entries, by hash */
	char *s;
	size_t n;
};

struct pfunc {
	int64_t name, file;
};

struct ploc {
	uint64_t mapping, address, function;
	int64_t line;
};

/* An open-addressing index of interned entries by their hash: each slot
 * an entry's id (index + 1), 0 empty; at most half full. */
struct index {
	uint32_t *slot;
	uint64_t *key;              /* the hash of each slot's entry */
	size_t cap;
};

struct pprof {
	int64_t default_type;
	struct pstr *str;
	size_t nstr, capstr;
	uint32_t *shash;            /* open addressing: index + 1, 0 empty */
	size_t shcap;
	struct pfunc *fn;
	size_t nfn, capfn;
	struct ploc *loc;
	size_t nloc, caploc;
	struct index fnx, locx;     /* fn[] and loc[] by content */
	struct buf mappings;        /* encoded Mapping messages */
	uint64_t nmap;
	struct buf samples;         /* encoded Sample messages */
	struct buf types;           /* encoded ValueType messages */
	unsigned int ntypes;
	int64_t period_type, period_unit, period;
	int64_t comment;
	bool oom;
};

static uint64_t hash(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}


int64_t pprof_str(struct pprof *p, const char *s, size_t n)
{
	if (p->oom)
		return 0;
	if ((p->nstr + 1) * 2 > p->shcap) {
		size_t cap = p->shcap ? p->shcap * 2 : 1024;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h) {
			p->oom = true;
			return 0;
		}
		for (size_t i = 0; i < p->nstr; i++) {
			size_t j = hash(p->str[i].s, p->str[i].n, 1469598103934665603ull) & (cap - 1);
			while (h[j])
				j = (j + 1) & (cap - 1);
			h[j] = (uint32_t)i + 1;
		}
		free(p->shash);
		p->shash = h;
		p->shcap = cap;
	}
	size_t j = hash(s, n, 1469598103934665603ull) & (p->shcap - 1);
	for (; p->shash[j]; j = (j + 1) & (p->shcap - 1)) {
		struct pstr *e = &p->str[p->shash[j] - 1];
		if (e->n == n && !memcmp(e->s, s, n))
			return (int64_t)p->shash[j] - 1;
	}
	char *copy = malloc(n + 1);
	if (!copy || !grow_array((void **)&p->str, &p->capstr, p->nstr, sizeof(*p->str))) {
		free(copy);
		p->oom = true;
		return 0;
	}
	memcpy(copy, s, n);
	copy[n] = 0;
	p->str[p->nstr] = (struct pstr){ copy, n };
	p->shash[j] = (uint32_t)++p->nstr;
	return (int64_t)p->nstr - 1;
}

struct pprof *pprof_new(void)
{
	struct pprof *p = calloc(1, sizeof(*p));
	if (p && pprof_str(p, "", 0) != 0) {
		pprof_free(p);
		return NULL;
	}
	return p;
}

void pprof_free(struct pprof *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstr; i++)
		free(p->str[i].s);
	free(p->str);
	free(p->shash);
	free(p->fn);
	free(p->loc);
	free(p->fnx.slot);
	free(p->fnx.key);
	free(p->locx.slot);
	free(p->locx.key);
	free(p->mappings.p);
	free(p->samples.p);
	free(p->types.p);
	free(p);
}

void pprof_sample_type(struct pprof *p, const char *type, const char *unit)
{
	struct buf m = { 0 };
	field_u(&m, 1, (uint64_t)pprof_str(p, type, strlen(type)));
	field_u(&m, 2, (uint64_t)pprof_str(p, unit, strlen(unit)));
	field_msg(&p->types, 1, &m);
	p->oom |= m.oom;
	free(m.p);
	p->ntypes++;
}

void pprof_period(struct pprof *p, const char *type, const char *unit, int64_t period)
{
	p->period_type = pprof_str(p, type, strlen(type));
	p->period_unit = pprof_str(p, unit, strlen(unit));
	p->period = period;
}

void pprof_comment(struct pprof *p, const char *text)
{
	p->comment = pprof_str(p, text, strlen(text));
}

uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *file, const char *build_id)
{
	struct buf m = { 0 };
	uint64_t id = ++p->nmap;
	field_u(&m, 1, id);
	field_u(&m, 2, start);
	field_u(&m, 3, limit);
	field_u(&m, 4, offset);
	field_u(&m, 5, (uint64_t)pprof_str(p, file, strlen(file)));
	if (build_id)
		field_u(&m, 6, (uint64_t)pprof_str(p, build_id, strlen(build_id)));
	field_u(&m, 7, 1);          /* has_functions: the locations name them */
	field_msg(&p->mappings, 3, &m);
	p->oom |= m.oom;
	free(m.p);
	return id;
}

/* The slot of @x for an entry hashed @h, where @same(@arg, id) tells an
 * entry of that hash is it: its id's slot, or the empty one where it
 * goes; NULL when out of memory. @n: the entries so far. */
static uint32_t *index_slot(struct index *x, size_t n, uint64_t h,
			    bool (*same)(const struct pprof *p, uint32_t id, const void *arg),
			    const struct pprof *p, const void *arg)
{
	if ((n + 1) * 2 > x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 1024;
		uint32_t *slot = calloc(cap, sizeof(*slot));
		uint64_t *key = calloc(cap, sizeof(*key));
		if (!slot || !key) {
			free(slot);
			free(key);
			return NULL;
		}
		for (size_t i = 0; i < x->cap; i++) {
			if (!x->slot[i])
				continue;
			size_t j = x->key[i] & (cap - 1);
			while (slot[j])
				j = (j + 1) & (cap - 1);
			slot[j] = x->slot[i];
			key[j] = x->key[i];
		}
		free(x->slot);
		free(x->key);
		x->slot = slot;
		x->key = key;
		x->cap = cap;
	}
	size_t j = h & (x->cap - 1);
	for (; x->slot[j]; j = (j + 1) & (x->cap - 1))
		if (x->key[j] == h && same(p, x->slot[j], arg))
			return &x->slot[j];
	x->key[j] = h;
	return &x->slot[j];
}

static bool same_fn(const struct pprof *p, uint32_t id, const void *arg)
{
	const struct pfunc *a = &p->fn[id - 1], *b = arg;
	return a->name == b->name && a->file == b->file;
}

static bool same_loc(const struct pprof *p, uint32_t id, const void *arg)
{
	return !memcmp(&p->loc[id - 1], arg, sizeof(struct ploc));
}

uint64_t pprof_function(struct pprof *p, const char *name, size_t n, const char *file)
{
	struct pfunc f = { pprof_str(p, name, n), file ? pprof_str(p, file, strlen(file)) : 0 };
	uint32_t *slot = index_slot(&p->fnx, p->nfn, hash(&f, sizeof(f), 1469598103934665603ull),
				    same_fn, p, &f);
	if (slot && *slot)
		return *slot;
	if (!slot || !grow_array((void **)&p->fn, &p->capfn, p->nfn, sizeof(*p->fn))) {
		p->oom = true;
		return 0;
	}
	p->fn[p->nfn++] = f;
	*slot = (uint32_t)p->nfn;
	return p->nfn;
}

uint64_t pprof_location(struct pprof *p, uint64_t mapping, uint64_t address, uint64_t function,
			int64_t line)
{
	struct ploc l = { mapping, address, function, line };  /* no padding: hashed whole */
	uint32_t *slot = index_slot(&p->locx, p->nloc, hash(&l, sizeof(l), 1469598103934665603ull),
				    same_loc, p, &l);
	if (slot && *slot)
		return *slot;
	if (!slot || !grow_array((void **)&p->loc, &p->caploc, p->nloc, sizeof(*p->loc))) {
		p->oom = true;
		return 0;
	}
	p->loc[p->nloc++] = l;
	*slot = (uint32_t)p->nloc;
	return p->nloc;
}

/* The sample type readers show first (pprof's default_sample_type). */
void pprof_default_type(struct pprof *p, const char *type)
{
	p->default_type = pprof_str(p, type, strlen(type));
}

void pprof_sample(struct pprof *p, const uint64_t *locs, size_t n, const int64_t *values)
{
	struct buf m = { 0 }, packed = { 0 };
	for (size_t i = 0; i < n; i++)
		varint(&packed, locs[i]);
	field_bytes(&m, 1, packed.p, packed.len);
	packed.len = 0;
	for (unsigned int i = 0; i < p->ntypes; i++)
		varint(&packed, (uint64_t)values[i]);
	field_bytes(&m, 2, packed.p, packed.len);
	m.oom |= packed.oom;
	field_msg(&p->samples, 2, &m);
	p->oom |= m.oom;
	free(m.p);
	free(packed.p);
}

/* ---- gzip without zlib ------------------------------------------------- */

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	crc = ~crc;
	for (size_t i = 0; i < n; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static void le32(unsigned char *d, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		d[i] = (unsigned char)(v >> (8 * i));
}

/* RFC 1952 around RFC 1951 stored blocks (BTYPE 00, at most 65535 bytes
 * each). */
static int write_gzip(FILE *out, const unsigned char *p, size_t n)
{
	static const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff };
	if (fwrite(hdr, 1, sizeof(hdr), out) != sizeof(hdr))
		return -1;
	size_t off = 0;
	do {
		size_t k = n - off < 65535 ? n - off : 65535;
		unsigned char bh[5] = { off + k == n ? 1 : 0, (unsigned char)k,
					(unsigned char)(k >> 8), (unsigned char)~k,
					(unsigned char)(~k >> 8) };
		if (fwrite(bh, 1, 5, out) != 5 || fwrite(p + off, 1, k, out) != k)
			return -1;
		off += k;
	} while (off < n);
	unsigned char tail[8];
	le32(tail, crc32_update(0, p, n));
	le32(tail + 4, (uint32_t)n);
	return fwrite(tail, 1, 8, out) == 8 ? 0 : -1;
}

int pprof_write(struct pprof *p, FILE *out, bool gzip)
{
	struct buf b = { 0 }, m = { 0 };
	put(&b, p->types.p, p->types.len);
	put(&b, p->samples.p, p->samples.len);
	put(&b, p->mappings.p, p->mappings.len);
	for (size_t i = 0; i < p->nloc; i++) {
		struct ploc *l = &p->loc[i];
		struct buf line = { 0 };
		field_u(&m, 1, i + 1);
		field_u(&m, 2, l->mapping);
		field_u(&m, 3, l->address);
		if (l->function) {
			field_u(&line, 1, l->function);
			field_u(&line, 2, (uint64_t)l->line);
			field_msg(&m, 4, &line);
		}
		m.oom |= line.oom;
		free(line.p);
		field_msg(&b, 4, &m);
	}
	for (size_t i = 0; i < p->nfn; i++) {
		field_u(&m, 1, i + 1);
		field_u(&m, 2, (uint64_t)p->fn[i].name);
		field_u(&m, 3, (uint64_t)p->fn[i].name);
		field_u(&m, 4, (uint64_t)p->fn[i].file);
		field_msg(&b, 5, &m);
	}
	for (size_t i = 0; i < p->nstr; i++)
		field_bytes(&b, 6, p->str[i].s, p->str[i].n);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	field_u(&b, 9, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	if (p->period_type || p->period_unit) {
		field_u(&m, 1, (uint64_t)p->period_type);
		field_u(&m, 2, (uint64_t)p->period_unit);
		field_msg(&b, 11, &m);
		field_u(&b, 12, (uint64_t)p->period);
	}
	if (p->comment) {
		varint(&b, 13 << 3);
		varint(&b, (uint64_t)p->comment);
	}
	if (p->default_type)
		field_u(&b, 14, (uint64_t)p->default_type);
	b.oom |= m.oom || p->oom;
	free(m.p);
	int rc = -1;
	if (!b.oom)
		rc = gzip ? write_gzip(out, b.p, b.len)
			  : (fwrite(b.p, 1, b.len, out) == b.len ? 0 : -1);
	if (b.oom)
		errno = ENOMEM;
	free(b.p);
	return rc;
}

/* ---- uslub pprof: folded stacks in, a profile out ---------------------- */

const char pprof_help[] =
	"uslub pprof [--type NAME[/UNIT]] [--raw] [FILE]\n"
	"  Turn the folded stacks of FILE (standard input without one, or for -; a line\n"
	"  a stack, root first, frames separated by ';', then a blank and its count, as\n"
	"  for uslub flame) into a pprof profile on standard output, gzip'ed (--raw: the\n"
	"  bare protocol buffer), for `go tool pprof`, speedscope and the other pprof\n"
	"  readers. Each frame becomes a function of that name; the same stack on\n"
	"  several lines adds up.\n"
	"    --type NAME[/UNIT]  the sample type (default inuse_space/bytes; the UNIT\n"
	"                        defaults to bytes for *_space, count for *_objects)\n"
	"  Exit status: 0; 1 when FILE cannot be read or a line has no count (named on\n"
	"  stderr and left out); 2 on bad usage.\n";

/* folded_each()'s step for a profile being built (struct folded_pprof):
 * one sample of the stack [@s, @e), leaf first, with @v. */
struct folded_pprof {
	struct pprof *p;
	uint64_t *locs;
	size_t cap;
};

static int add_sample(void *arg, const char *s, const char *e, uint64_t v)
{
	struct folded_pprof *fp = arg;
	if (v > INT64_MAX)
		return 1;
	size_t n = 0;
	for (const char *f = s; f < e;) {
		const char *fe = memchr(f, ';', (size_t)(e - f));
		if (!fe)
			fe = e;
		const char *te = fe;
		while (te > f && (te[-1] == ' ' || te[-1] == '\t'))
			te--;
		if (te > f) {
			if (n == fp->cap) {
				size_t cap = fp->cap ? 2 * fp->cap : 64;
				uint64_t *nl = realloc(fp->locs, cap * sizeof(*nl));
				if (!nl)
					return -1;
				fp->locs = nl;
				fp->cap = cap;
			}
			uint64_t fn = pprof_function(fp->p, f, (size_t)(te - f), NULL);
			fp->locs[n++] = pprof_location(fp->p, 0, 0, fn, 0);
		}
		f = fe + 1;
	}
	if (!n)
		return 2;
	for (size_t i = 0; i < n / 2; i++) {            /* leaf first */
		uint64_t t = fp->locs[i];
		fp->locs[i] = fp->locs[n - 1 - i];
		fp->locs[n - 1 - i] = t;
	}
	int64_t value = (int64_t)v;
	pprof_sample(fp->p, fp->locs, n, &value);
	return fp->p->oom ? -1 : 0;
}

int pprof_from_folded(const char *text, size_t len, FILE *out, const char *type,
		      const char *unit, bool gzip)
{
	struct pprof *p = pprof_new();
	long bad = -1;
	if (p) {
		pprof_sample_type(p, type, unit);
		struct folded_pprof fp = { .p = p };
		bad = folded_each(text, len, "pprof", add_sample, &fp);
		free(fp.locs);
	}
	int rc = bad < 0 ? -1 : pprof_write(p, out, gzip);
	pprof_free(p);
	if (bad < 0)
		errno = ENOMEM;
	return rc < 0 ? -1 : bad ? 1 : 0;
}

int cmd_pprof(int argc, char **argv)
{
	const char *type = "inuse_space", *file = NULL;
	bool raw = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(pprof_help, stdout);
			return 0;
		} else if (!strcmp(a, "--type") && i + 1 < argc) {
			type = argv[++i];
		} else if (!strcmp(a, "--raw")) {
			raw = true;
		} else if (a[0] == '-' && a[1]) {
			return usage("pprof: unknown option or missing value '%s'", a);
		} else if (!file) {
			file = a;
		} else {
			return usage("pprof: one FILE at most");
		}
	}
	char name[128];
	const char *slash = strchr(type, '/');
	size_t nlen = slash ? (size_t)(slash - type) : strlen(type);
	const char *unit = slash ? slash + 1 : NULL;
	if (!nlen || nlen >= sizeof(name) || (unit && !*unit))
		return usage("pprof: --type needs NAME or NAME/UNIT");
	memcpy(name, type, nlen);
	name[nlen] = 0;
	if (!unit)
		unit = nlen > 8 && !strcmp(name + nlen - 8, "_objects") ? "count" : "bytes";
	if (!raw && isatty(1)) {
		fprintf(stderr, "uslub pprof: standard output is a terminal; redirect it to a "
			"file (the profile is binary)\n");
		return EXIT_USAGE;
	}
	size_t len = 0;
	char *text = read_input(file, &len, "pprof");
	if (!text)
		return 1;
	int rc = pprof_from_folded(text, len, stdout, name, unit, !raw);
	free(text);
	if (rc < 0 || fflush(stdout)) {
		fprintf(stderr, "uslub pprof: cannot write the profile: %s\n", strerror(errno));
		return 1;
	}
	return rc;
}
