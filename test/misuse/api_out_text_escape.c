/*
 * misuse_out_text_escape (issue 25, item 7): names a program chooses are
 * data in the text tables. A cache name, a group name and an allocation
 * site's file (here through #line) with a newline and terminal escape
 * sequences must come out escaped (\n, \x1b): never a raw control byte,
 * never a line of their own that a reader would take for a row (one
 * naming /etc/shadow was shown to root by `uslub slabinfo PID`).
 *
 * Before the fix: uslub_slabinfo_print() wrote "%-22s" of the raw name,
 * so the table held a line starting "/etc/shadow" and ESC bytes.
 */
#include "uslub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE "/etc/shadow 1 1 1 8 8 512 1 1 0 4096"
#define EVIL "evil\n" FAKE "\x1b[2J\x1b]0;pwned\x07\r\x7f\\"

static int failed;

static void fail(const char *what, const char *text)
{
	fprintf(stderr, "FAIL: %s\n--- output:\n%s\n---\n", what, text);
	failed = 1;
}

/* @print's output, NUL-terminated (malloc'ed; this test's malloc is libc's). */
static char *capture(void (*print)(FILE *f, int fmt))
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		perror("open_memstream");
		exit(1);
	}
	print(f, USLUB_FMT_TABLE);
	fclose(f);
	return text;
}

static void slabinfo(FILE *f, int fmt) { uslub_slabinfo_print(f, (enum uslub_format)fmt); }
static void groups(FILE *f, int fmt) { uslub_group_report_print(f, fmt); }
static void allocinfo(FILE *f, int fmt) { uslub_allocinfo_print(f, fmt); }

/* No control byte but '\n', no line starting with the fake row (or with
 * the text after a '\r'), and the escaped form is there. */
static void check(const char *what, const char *text, const char *escaped)
{
	char msg[256];
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f) {
			snprintf(msg, sizeof(msg), "%s: a raw control byte 0x%02x", what, *p);
			fail(msg, text);
			break;
		}
	for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, "/etc/shadow", 11)) {
			snprintf(msg, sizeof(msg), "%s: a line of the program's making", what);
			fail(msg, text);
			break;
		}
	if (!strstr(text, escaped)) {
		snprintf(msg, sizeof(msg), "%s: no escaped name \"%s\"", what, escaped);
		fail(msg, text);
	}
}

static void *tagged_alloc(uslub_cache_t *s);

int main(int argc, char **argv)
{
	/* allocinfo needs profiling from the start: run again with it on */
	if (!getenv("USLUB_PROFILING") || strcmp(getenv("USLUB_PROFILING"), "1")) {
		setenv("USLUB_PROFILING", "1", 1);
		execv("/proc/self/exe", argv);
		perror("execv /proc/self/exe");
		return 1;
	}
	const char *esc = "evil\\n" FAKE "\\x1b[2J\\x1b]0;pwned\\x07\\r\\x7f\\\\";

	/* a cache in use (a table row) and one unused (the "empty caches" line) */
	uslub_cache_t *s = uslub_cache_create(EVIL, 64, 0, 0, NULL);
	uslub_cache_t *u = uslub_cache_create("unused\n" FAKE, 64, 0, 0, NULL);
	if (!s || !u) {
		fprintf(stderr, "FAIL: uslub_cache_create of a name with control characters\n");
		return 1;
	}
	void *obj = tagged_alloc(s);
	if (!obj) {
		fprintf(stderr, "FAIL: allocation\n");
		return 1;
	}
	char *t = capture(slabinfo);
	check("slabinfo: a cache's row", t, esc);
	check("slabinfo: the empty caches", t, "unused\\n" FAKE);
	free(t);

	uslub_group_t *g = uslub_group_create(NULL, "grp\n" FAKE "\x1b[31m", SIZE_MAX);
	if (!g) {
		fprintf(stderr, "FAIL: uslub_group_create\n");
		return 1;
	}
	t = capture(groups);
	check("group report", t, "/grp\\n" FAKE "\\x1b[31m");
	free(t);

	if (uslub_profiling_enabled()) {
		t = capture(allocinfo);
		check("allocinfo: a site's file", t, "site\\n" FAKE "\\x1b[31m.c:");
		free(t);
	} else {
		fprintf(stderr, "FAIL: USLUB_PROFILING=1 did not turn profiling on\n");
		failed = 1;
	}

	uslub_cache_free(s, obj);
	uslub_group_delete(g);
	uslub_cache_destroy(s);
	uslub_cache_destroy(u);
	if (!failed)
		printf("PASS\n");
	return failed;
}

/* An allocation site whose file name the program chose (#line): the
 * allocinfo table names it. Last in this file: __FILE__ stays as it is. */
#line 1 "site\n/etc/shadow 1 1 1 8 8 512 1 1 0 4096\x1b[31m.c"
static void *tagged_alloc(uslub_cache_t *s)
{
	return uslub_cache_alloc(s, 0);
}
