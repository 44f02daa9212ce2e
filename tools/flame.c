/*
 * flame.c — `uslub flame`: a flame graph of folded stacks, drawn as SVG by
 * the tool itself (no Perl, no browser script).
 *
 * Input: one stack a line, root first, frames separated by ';', then a
 * blank and its count ("main;parse;xmalloc 4096"): the folded format of
 * flamegraph.pl, speedscope and inferno, and of uslub's heap profiles.
 * Lines that start with '#' and blank lines are skipped. The same stack
 * on several lines adds up.
 *
 * Output: each frame is a box as wide as the counts of the stacks that go
 * through it, its callee boxes on top of it, the root ("all") at the
 * bottom; siblings are merged by name and sorted by name (flamegraph.pl's
 * order: the same profile always gives the same picture, and the
 * x-axis is not time). A box narrower than --min-width pixels is left
 * out with everything above it. Each box has a <title> (the frame, its
 * count and its share of the total: a tooltip in every SVG viewer) and as
 * much of its name as fits. Names are escaped for XML; control
 * characters and malformed UTF-8 are drawn as '?'.
 *
 * Bad input loses nothing it can keep: a line without a count is named
 * on stderr (the first few) and left out, the graph is drawn from the
 * rest, and the exit status is 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

/* A frame of the merged tree. Nodes live in one array; links are
 * indices (the array moves as it grows). */
struct fnode {
	const char *name;           /* into the input text, not terminated */
	uint32_t len;
	uint32_t parent;
	uint32_t child;             /* first child, or NONE */
	uint32_t next;              /* next sibling, or NONE */
	uint64_t total;             /* the counts of the stacks through it */
	double x;                   /* left edge, in counts from the root's */
	uint32_t depth;
};
#define NONE UINT32_MAX

struct ftree {
	struct fnode *n;
	size_t nr, cap;
	uint32_t max_depth;
};

static uint32_t node_new(struct ftree *t, uint32_t parent, const char *name, size_t len)
{
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct fnode *n = cap < NONE ? realloc(t->n, cap * sizeof(*n)) : NULL;
		if (!n)
			return NONE;
		t->n = n;
		t->cap = cap;
	}
	uint32_t i = (uint32_t)t->nr++;
	t->n[i] = (struct fnode){ .name = name, .len = (uint32_t)len, .parent = parent,
				  .child = NONE, .next = NONE,
				  .depth = parent == NONE ? 0 : t->n[parent].depth + 1 };
	if (parent != NONE) {
		t->n[i].next = t->n[parent].child;
		t->n[parent].child = i;
	}
	if (t->n[i].depth > t->max_depth)
		t->max_depth = t->n[i].depth;
	return i;
}

static uint32_t child_named(struct ftree *t, uint32_t parent, const char *name, size_t len)
{
	for (uint32_t c = t->n[parent].child; c != NONE; c = t->n[c].next)
		if (t->n[c].len == len && !memcmp(t->n[c].name, name, len))
			return c;
	return node_new(t, parent, name, len);
}

/* The count at the end of [@s, @e): its start, or NULL. */
static const char *count_of(const char *s, const char *e, uint64_t *v)
{
	const char *p = e;
	while (p > s && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\r'))
		p--;
	const char *end = p;
	while (p > s && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || end - p > 19 || p == s || (p[-1] != ' ' && p[-1] != '\t'))
		return NULL;
	uint64_t x = 0;
	for (const char *q = p; q < end; q++) {
		if (x > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return NULL;
		x = x * 10 + (uint64_t)(*q - '0');
	}
	*v = x;
	return p;
}

long folded_each(const char *text, size_t len, const char *who,
		 int (*fn)(void *arg, const char *s, const char *e, uint64_t count), void *arg)
{
	long bad = 0, line = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			e = end;
		line++;
		const char *s = p;
		p = e + 1;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		if (s == e || *s == '#' || (e - s == 1 && *s == '\r'))
			continue;
		uint64_t v = 0;
		const char *c = count_of(s, e, &v);
		const char *stack_end = c;
		while (stack_end && stack_end > s && (stack_end[-1] == ' ' || stack_end[-1] == '\t'))
			stack_end--;
		const char *frame = s;
		while (frame < stack_end && *frame == ';')
			frame++;
		int rc = !c || frame == stack_end ? 2 : fn(arg, s, stack_end, v);
		if (rc < 0)
			return -1;
		if (rc && ++bad <= 5)
			fprintf(stderr, "uslub %s: line %ld: %s: left out\n", who, line,
				rc == 2 ? "not \"frame;frame;... COUNT\"" : "its count overflows");
	}
	if (bad > 5)
		fprintf(stderr, "uslub %s: %ld lines left out in all\n", who, bad);
	return bad;
}

/* folded_each()'s step for the tree @arg: the stack [@s, @e) with @v. */
static int add_stack(void *arg, const char *s, const char *e, uint64_t v)
{
	struct ftree *t = arg;
	if (UINT64_MAX - t->n[0].total < v)
		return 1;
	uint32_t cur = 0;
	t->n[0].total += v;
	for (const char *f = s; f <= e;) {
		const char *fe = memchr(f, ';', (size_t)(e - f));
		if (!fe)
			fe = e;
		if (fe > f) {                   /* an empty frame (";;") is skipped */
			cur = child_named(t, cur, f, (size_t)(fe - f));
			if (cur == NONE)
				return -1;
			t->n[cur].total += v;
		}
		f = fe + 1;
	}
	return 0;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct fnode *n = arg;
	const struct fnode *x = &n[*(const uint32_t *)a], *y = &n[*(const uint32_t *)b];
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Sort every sibling list by name and set each box's left edge. Parents
 * come before their children in the array, so one pass in index order
 * sees each parent's x before its children need it. */
static int layout(struct ftree *t)
{
	uint32_t *tmp = malloc(sizeof(*tmp) * (t->nr ? t->nr : 1));
	if (!tmp)
		return -1;
	for (size_t i = 0; i < t->nr; i++) {
		size_t k = 0;
		for (uint32_t c = t->n[i].child; c != NONE; c = t->n[c].next)
			tmp[k++] = c;
		if (!k)
			continue;
		qsort_r(tmp, k, sizeof(*tmp), by_name, t->n);
		double x = t->n[i].x;
		for (size_t j = 0; j < k; j++) {
			t->n[tmp[j]].x = x;
			x += (double)t->n[tmp[j]].total;
			t->n[tmp[j]].next = j + 1 < k ? tmp[j + 1] : NONE;
		}
		t->n[i].child = tmp[0];
	}
	free(tmp);
	return 0;
}

/* @s (@n bytes) as XML character data, at most @max characters (a
 * character that does not fit ends it with ".."). */
static void xml_text(FILE *out, const char *s, size_t n, size_t max)
{
	size_t chars = 0, i = 0;
	while (i < n) {
		size_t k = safe_char((const unsigned char *)s + i, n - i);
		if (chars + 1 > max || (chars + 3 > max && i + (k ? k : 1) < n)) {
			fputs("..", out);
			return;
		}
		if (!k || s[i] == '\n' || s[i] == '\t') {
			fputc('?', out);
			k = 1;
		} else if (s[i] == '&') {
			fputs("&amp;", out);
		} else if (s[i] == '<') {
			fputs("&lt;", out);
		} else if (s[i] == '>') {
			fputs("&gt;", out);
		} else if (s[i] == '"') {
			fputs("&quot;", out);
		} else if (s[i] == '\'') {
			fputs("&apos;", out);
		} else {
			fwrite(s + i, 1, k, out);
		}
		i += k;
		chars++;
	}
}

/* flamegraph.pl's "hot" palette, from the name (the same frame has the
 * same colour in every graph). */
static void color_of(const char *s, size_t n, unsigned int *r, unsigned int *g, unsigned int *b)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	*r = 205 + (unsigned int)(h % 51);
	*g = (unsigned int)((h >> 16) % 231);
	*b = (unsigned int)((h >> 40) % 56);
}

#define FRAME_H 16
#define PAD_X 10
#define TOP 56
#define BOTTOM 10
#define CHAR_W 7.2

int flame_svg(const char *text, size_t len, FILE *out, const struct flame_opts *o)
{
	struct ftree t = { 0 };
	if (node_new(&t, NONE, "all", 3) == NONE)
		return -1;
	long bad = folded_each(text, len, "flame", add_stack, &t);
	if (bad < 0 || layout(&t)) {
		free(t.n);
		return -1;
	}
	double width = o->width;
	double inner = width - 2 * PAD_X;
	uint64_t total = t.n[0].total;
	double scale = total ? inner / (double)total : 0;
	unsigned int height = TOP + (t.max_depth + 1) * FRAME_H + BOTTOM;
	const char *unit = o->unit ? o->unit : "";

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%u\" viewBox=\"0 0 %.0f %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text { font-family: monospace; font-size: 12px; fill: #000; }\n"
		"rect.f { stroke: #fff; stroke-width: 0.5; }</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%u\" fill=\"#f8f8f4\"/>\n",
		width, height, width, height, width, height);
	fprintf(out, "<text x=\"%.1f\" y=\"22\" text-anchor=\"middle\" style=\"font-size: 17px\">",
		width / 2);
	xml_text(out, o->title, strlen(o->title), 200);
	fprintf(out, "</text>\n<text x=\"%.1f\" y=\"42\" text-anchor=\"middle\">", width / 2);
	if (total) {
		fprintf(out, "%" PRIu64 " ", total);
		xml_text(out, unit, strlen(unit), 40);
		fputs(" in all; a box's width is its share", out);
	} else {
		fputs("no samples", out);
	}
	fputs("</text>\n", out);

	for (size_t i = 0; i < t.nr && total; i++) {
		struct fnode *f = &t.n[i];
		double w = (double)f->total * scale;
		if (w < o->min_width)
			continue;
		/* a box whose caller was left out is left out too */
		bool shown = true;
		for (uint32_t p = f->parent; p != NONE; p = t.n[p].parent)
			if ((double)t.n[p].total * scale < o->min_width) {
				shown = false;
				break;
			}
		if (!shown)
			continue;
		double x = PAD_X + f->x * scale;
		double y = (double)height - BOTTOM - (f->depth + 1) * FRAME_H;
		unsigned int r, g, b;
		if (i == 0) {
			r = 210; g = 210; b = 200;
		} else {
			color_of(f->name, f->len, &r, &g, &b);
		}
		fputs("<g><title>", out);
		xml_text(out, f->name, f->len, 1000);
		fprintf(out, " (%" PRIu64 " ", f->total);
		xml_text(out, unit, strlen(unit), 40);
		fprintf(out, ", %.2f%%)</title><rect class=\"f\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
			"height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>",
			100.0 * (double)f->total / (double)total, x, y, w, FRAME_H - 1, r, g, b);
		size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0;
		if (fit >= 3) {
			fprintf(out, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + FRAME_H - 4);
			xml_text(out, f->name, f->len, fit);
			fputs("</text>", out);
		}
		fputs("</g>\n", out);
	}
	fputs("</svg>\n", out);
	free(t.n);
	return bad ? 1 : 0;
}

const char flame_help[] =
	"uslub flame [--title TEXT] [--unit NAME] [--width PX] [--min-width PX] [FILE]\n"
	"  Draw the folded stacks of FILE (standard input without one, or for -) as an\n"
	"  SVG flame graph on standard output. A line is a stack, root first, frames\n"
	"  separated by ';', then a blank and its count (\"main;parse;xmalloc 4096\", the\n"
	"  format of flamegraph.pl and speedscope, and of uslub's heap profiles); lines\n"
	"  starting with '#' are skipped. Each box is as wide as the counts of the\n"
	"  stacks through it, its callees on top; hover a box for its name, count and\n"
	"  share.\n"
	"    --title TEXT      the heading (default \"Flame graph\")\n"
	"    --unit NAME       what the counts are, for the labels (default \"bytes\")\n"
	"    --width PX        the picture's width (default 1200, 200..100000)\n"
	"    --min-width PX    leave out boxes narrower than this (default 0.1)\n"
	"  Exit status: 0; 1 when FILE cannot be read or a line has no count (those\n"
	"  lines are named on stderr and left out, the rest is drawn); 2 on bad usage.\n";

int cmd_flame(int argc, char **argv)
{
	struct flame_opts o = { .title = "Flame graph", .unit = "bytes", .width = 1200,
				.min_width = 0.1 };
	const char *file = NULL;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(flame_help, stdout);
			return 0;
		} else if (!strcmp(a, "--title") && v) {
			o.title = v;
			i++;
		} else if (!strcmp(a, "--unit") && v) {
			o.unit = v;
			i++;
		} else if (!strcmp(a, "--width") && v) {
			errno = 0;
			long w = strtol(v, &end, 10);
			if (errno || end == v || *end || w < 200 || w > 100000)
				return usage("flame: --width needs a number of pixels, 200..100000");
			o.width = (double)w;
			i++;
		} else if (!strcmp(a, "--min-width") && v) {
			errno = 0;
			double w = strtod(v, &end);
			if (errno || end == v || *end || !(w >= 0 && w <= 1000))
				return usage("flame: --min-width needs pixels, 0..1000");
			o.min_width = w;
			i++;
		} else if (a[0] == '-' && a[1]) {
			return usage("flame: unknown option or missing value '%s'", a);
		} else if (!file) {
			file = a;
		} else {
			return usage("flame: one FILE at most");
		}
	}
	size_t len = 0;
	char *text = read_input(file, &len, "flame");
	if (!text)
		return 1;
	int rc = flame_svg(text, len, stdout, &o);
	free(text);
	if (rc < 0) {
		fprintf(stderr, "uslub flame: out of memory\n");
		return 1;
	}
	return fflush(stdout) ? 1 : rc;
}
