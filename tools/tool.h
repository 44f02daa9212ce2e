/*
 * What the files of the `uslub` command share: tools/uslub.c (the
 * commands, the snapshot loading and its checks, the JSON scanning) and
 * tools/top.c (`uslub top`). Not installed; the tool only.
 */
#ifndef USLUB_TOOL_H
#define USLUB_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../src/observe/publish_dir.h"

/* Exit statuses of the tool's own failures (those of CMD pass through). */
#define EXIT_USAGE   2

/* A published snapshot, loaded and checked by load() (tools/uslub.c). */
struct snapshot {
	long pid;
	unsigned int uid;
	int dfd;                        /* the checked directory, or -1 */
	char dir[PUBDIR_PATH_MAX];
	char path[PUBDIR_PATH_MAX + 32];
	char *doc;                      /* the file, NUL-terminated */
	size_t len;
};

/* Load and check the snapshot of @pid (@kind: PUB_TXT, PUB_JSON or
 * PUB_HEAP) into @s: 0, or 1 after a message on stderr. unload() in both
 * cases. */
int load(struct snapshot *s, long pid, int kind);
void unload(struct snapshot *s);

/* The length of the character at @s (at most @n bytes) when it may be
 * printed as it is (printable ASCII, '\n', '\t', well-formed UTF-8 from
 * U+00A0 on), else 0: print '?' for the byte. emit() prints through it. */
size_t safe_char(const unsigned char *s, size_t n);
size_t _uslub_text_char(const unsigned char *s, size_t n);     /* src/base/report.c */
void emit(const char *str, size_t n, FILE *out);

/* JSON scanning: blanks skipped, the end of the value at @p (NULL when it
 * is malformed), and the member @key of the object starting at @doc. */
const char *skip_ws(const char *p);
const char *skip_value(const char *p);
int json_member(const char *doc, const char *key, const char **vs, const char **ve);

/* The usage on stderr after a message when @fmt: EXIT_USAGE. */
int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int help(const char *topic);

/* tools/top.c */
extern const char top_help[];
int cmd_top(int argc, char **argv);

/* The whole file @fd (NUL-terminated, malloc'ed, at most 256 MiB) or
 * NULL with errno (tools/uslub.c). */
char *slurp_fd(int fd, size_t *lenp);
/* The whole of @file (NULL or "-": standard input) as slurp_fd() gives
 * it, or NULL after "uslub @who: cannot read FILE: why" on stderr. */
char *read_input(const char *file, size_t *lenp, const char *who);
/* Room in the array *@p (*@cap entries of @size bytes) for entry @n:
 * doubled (from 64) when full; false when out of memory (*@p kept). */
bool grow_array(void **p, size_t *cap, size_t n, size_t size);

/* tools/flame.c: folded stacks ("root;caller;leaf COUNT" a line; '#'
 * lines and blank ones skipped): @fn(@arg, the stack [s, e), its count)
 * for each line, which returns 0, 1 (its count overflows: left out) or
 * -1 (stop: out of memory); a line without a count or a frame is left
 * out. The first five left out are named on stderr as "uslub @who: line
 * N: ...". The number left out, or -1. */
long folded_each(const char *text, size_t len, const char *who,
		 int (*fn)(void *arg, const char *s, const char *e, uint64_t count), void *arg);

/* tools/flame.c: an SVG flame graph of folded stacks. */
struct flame_opts {
	const char *title;
	const char *unit;               /* what the counts are ("bytes") */
	double width;                   /* pixels */
	double min_width;               /* boxes narrower are left out */
};
/* Draw the folded stacks of @text (@len bytes) on @out: 0, 1 when lines
 * were left out (named on stderr), -1 when out of memory. */
int flame_svg(const char *text, size_t len, FILE *out, const struct flame_opts *o);
extern const char flame_help[];
int cmd_flame(int argc, char **argv);

/* tools/pprof.c: a pprof profile (profile.proto), built by interning and
 * written gzip'ed. Ids start at 1; 0 is "none" (a location without a
 * mapping). Sample values: one per sample type, in the order they were
 * added; locations leaf first. pprof_write(): 0, or -1 with errno. */
struct pprof;
struct pprof *pprof_new(void);
void pprof_free(struct pprof *p);
int64_t pprof_str(struct pprof *p, const char *s, size_t n);
void pprof_sample_type(struct pprof *p, const char *type, const char *unit);
void pprof_period(struct pprof *p, const char *type, const char *unit, int64_t period);
void pprof_comment(struct pprof *p, const char *text);
void pprof_default_type(struct pprof *p, const char *type);
uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *file, const char *build_id);
uint64_t pprof_function(struct pprof *p, const char *name, size_t n, const char *file);
uint64_t pprof_location(struct pprof *p, uint64_t mapping, uint64_t address, uint64_t function,
			int64_t line);
void pprof_sample(struct pprof *p, const uint64_t *locs, size_t n, const int64_t *values);
int pprof_write(struct pprof *p, FILE *out, bool gzip);
/* The folded stacks of @text as a profile of one sample type on @out: 0,
 * 1 when lines were left out (named on stderr), -1 with errno. */
int pprof_from_folded(const char *text, size_t len, FILE *out, const char *type,
		      const char *unit, bool gzip);
extern const char pprof_help[];
int cmd_pprof(int argc, char **argv);

/* tools/heap.c: heap dumps (USLUB_HEAP_DUMP: the library's ext/stack.c).
 * heap_format_of(): the format an output's name asks for (FILE.svg, a
 * flame graph; FILE.pb.gz or FILE.pb, a pprof profile; else folded
 * stacks), *@stem its length without that extension. heap_dump_emit():
 * the dump @text (@len bytes; of @pid, 0 unknown) to @f in @format, its
 * frames named; @alloc: the bytes allocated (else in use; a pprof profile
 * has both, @alloc its default). 0, or -1 (said on stderr as @who when
 * the text is no dump). */
enum heap_format { HEAP_FOLDED, HEAP_SVG, HEAP_PPROF_GZ, HEAP_PPROF };
enum heap_format heap_format_of(const char *out, size_t *stem);
int heap_dump_emit(const char *text, size_t len, FILE *f, enum heap_format format, bool alloc,
		   long pid, const char *who);
extern const char heap_help[];
int cmd_heap(int argc, char **argv);

#endif
