/*
 * Options: USLUB_<NAME> environment variables, parsed once from environ
 * (no getenv, no allocation) so they can be read before libc is fully up.
 * Values: decimal integers, with ON/YES/TRUE = 1 and OFF/NO/FALSE = 0;
 * options whose default is USLUB_OPT_STRING keep their text (a pointer
 * into environ).
 */
#include "base/base.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

extern char **environ;

struct uslub_option_desc {
	const char *name;
	long def;
	const char *doc;
};

static const struct uslub_option_desc options[USLUB_NR_OPTIONS] = {
#define USLUB_OPT_X(n, d, doc) [USLUB_OPT_##n] = { "USLUB_" #n, d, doc },
	USLUB_OPTIONS(USLUB_OPT_X)
#undef USLUB_OPT_X
};

static long values[USLUB_NR_OPTIONS];
static const char *strings[USLUB_NR_OPTIONS];
static int initialized;

static bool parse_value(const char *s, long *out)
{
	if (!strcasecmp(s, "on") || !strcasecmp(s, "yes") || !strcasecmp(s, "true")) {
		*out = 1;
		return true;
	}
	if (!strcasecmp(s, "off") || !strcasecmp(s, "no") || !strcasecmp(s, "false")) {
		*out = 0;
		return true;
	}
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end)
		return false;
	*out = v;
	return true;
}

void _uslub_options_init(void)
{
	if (__atomic_load_n(&initialized, __ATOMIC_ACQUIRE))
		return;
	long v[USLUB_NR_OPTIONS];
	const char *str[USLUB_NR_OPTIONS];
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		v[i] = options[i].def;
		str[i] = "";
	}
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "USLUB_", 6))
			continue;
		for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
			size_t n = strlen(options[i].name);
			if (strncmp(*e, options[i].name, n) || (*e)[n] != '=')
				continue;
			if (options[i].def == USLUB_OPT_STRING) {
				str[i] = *e + n + 1;
				continue;
			}
			if (!parse_value(*e + n + 1, &v[i]) || v[i] < 0) {
				_uslub_report("uslub: ignoring %s: not a non-negative integer or on/off\n", *e);
				v[i] = options[i].def;
			}
		}
	}
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		values[i] = v[i];
		strings[i] = str[i];
	}
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	if (values[USLUB_OPT_VERBOSE])
		for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
			if (options[i].def == USLUB_OPT_STRING)
				_uslub_report("uslub: %-22s = \"%s\" %s\n", options[i].name,
					      strings[i], options[i].doc);
			else
				_uslub_report("uslub: %-22s = %-6ld %s\n", options[i].name,
					      values[i], options[i].doc);
		}
}

const char *_uslub_option_str(enum uslub_option o)
{
	if (unlikely(!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)))
		_uslub_options_init();
	return strings[o];
}

long _uslub_option(enum uslub_option o)
{
	if (unlikely(!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)))
		_uslub_options_init();
	return values[o];
}

/* For `--help` style listings: every option, its default and meaning. */
__public void uslub_options_fprint(FILE *f);
void uslub_options_fprint(FILE *f)
{
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		if (options[i].def == USLUB_OPT_STRING)
			fprintf(f, "  %-24s default %-6s %s\n", options[i].name, "\"\"",
				options[i].doc);
		else
			fprintf(f, "  %-24s default %-6ld %s\n", options[i].name,
				options[i].def, options[i].doc);
	}
}

__public void uslub_options_print(void);
void uslub_options_print(void)
{
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		if (options[i].def == USLUB_OPT_STRING)
			_uslub_report("%-22s default \"\"    %s\n", options[i].name, options[i].doc);
		else
			_uslub_report("%-22s default %-6ld %s\n", options[i].name,
				      options[i].def, options[i].doc);
	}
}
