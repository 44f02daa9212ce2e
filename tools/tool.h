/*
 * What the files of the `uslub` command share: tools/uslub.c (the
 * commands, the snapshot loading and its checks, the JSON scanning) and
 * tools/top.c (`uslub top`). Not installed; the tool only.
 */
#ifndef USLUB_TOOL_H
#define USLUB_TOOL_H

#include <stddef.h>
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

/* Load and check the snapshot of @pid (its .json when @json, else .txt)
 * into @s: 0, or 1 after a message on stderr. unload() in both cases. */
int load(struct snapshot *s, long pid, int json);
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

#endif
