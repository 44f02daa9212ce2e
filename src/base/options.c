/*
 * Options: USLUB_<NAME> environment variables, parsed once from environ
 * (no getenv, no allocation, no stdio) so they can be read before libc is
 * fully up, from inside the first malloc.
 *
 * Numeric options: decimal digits only, 0 up to the option's maximum (the
 * table in base.h), or ON/YES/TRUE = 1 and OFF/NO/FALSE = 0 (any case);
 * USLUB_BACKGROUND_THREAD also takes AUTO = 2, its default.
 * Anything else (empty, a sign, white space before or after, junk, a value
 * above the maximum, however many digits) is reported once, naming the
 * variable, the text and the reason, and the default is used. Options
 * whose default is USLUB_OPT_STRING keep their text (copied out of
 * environ, see string_pool). When a variable appears twice in the
 * environment the first wins, as with getenv.
 *
 * Secure execution: in a set-uid, set-gid or file-capability program
 * (getauxval(AT_SECURE) != 0, where glibc ignores its own MALLOC_
 * tunables) the environment belongs to a less privileged caller, so no
 * USLUB_ variable is read at all and nothing is printed about them: every
 * option keeps its default and every string option is "". Everything that
 * reads an option (USLUB_REPORT, USLUB_DEBUG, USLUB_FAILSLAB,
 * USLUB_PUBLISH_MS, ...) goes through this table, so this is the one place
 * that decides.
 */
#include "base/base.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

extern char **environ;

struct uslub_option_desc {
	const char *name;
	long def;
	long max;
	const char *doc;
};

static const struct uslub_option_desc options[USLUB_NR_OPTIONS] = {
#define USLUB_OPT_X(n, d, m, doc) [USLUB_OPT_##n] = { "USLUB_" #n, d, m, doc },
	USLUB_OPTIONS(USLUB_OPT_X)
#undef USLUB_OPT_X
};

/* Every numeric default lies within its range (checked at compile time). */
#define USLUB_OPT_X(n, d, m, doc) \
	_Static_assert((d) == USLUB_OPT_STRING || ((d) >= 0 && (d) <= (m)), \
		       "USLUB_" #n ": default outside 0..max");
USLUB_OPTIONS(USLUB_OPT_X)
#undef USLUB_OPT_X

static long values[USLUB_NR_OPTIONS];
static const char *strings[USLUB_NR_OPTIONS];
/* The string options' text, copied out of environ at initialization: a
 * program may overwrite its environment strings later (setproctitle, as
 * in redis-server, nginx or postgres, reuses the argv + environ area for
 * the process title), and USLUB_REPORT is read again at exit. A value that
 * does not fit (longer than any path) keeps pointing into environ. */
static char string_pool[16384];
static int initialized;
static bool reported;           /* only the first initializer reports */

/* ---- small string helpers (no stdio) ------------------------------------ */

char *_uslub_str_append(char *buf, size_t len, const char *s)
{
	if (!len)
		return buf;
	size_t k = strnlen(buf, len - 1);
	while (*s && k + 1 < len)
		buf[k++] = *s++;
	buf[k] = 0;
	return buf;
}

char *_uslub_str_append_u64(char *buf, size_t len, uint64_t v)
{
	char d[24];
	size_t i = sizeof(d) - 1;
	d[i] = 0;
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return _uslub_str_append(buf, len, d + i);
}

char *_uslub_str_append_long(char *buf, size_t len, long v)
{
	if (v < 0) {
		_uslub_str_append(buf, len, "-");
		return _uslub_str_append_u64(buf, len, -(uint64_t)v);
	}
	return _uslub_str_append_u64(buf, len, (uint64_t)v);
}

/* ASCII, whatever the locale: is [@s, @s + @len) the word @w, in any case? */
static bool word_is(const char *s, size_t len, const char *w)
{
	size_t i = 0;
	for (; i < len && w[i]; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != w[i])
			return false;
	}
	return i == len && !w[i];
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int _uslub_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	if (!len)
		return USLUB_NUM_EMPTY;
	uint64_t v = 0;
	bool big = false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return USLUB_NUM_JUNK;
		unsigned int d = (unsigned int)(s[i] - '0');
		if (big || v > (UINT64_MAX - d) / 10)
			big = true;          /* keep looking for junk */
		else
			v = v * 10 + d;
	}
	if (big || v > max)
		return USLUB_NUM_RANGE;
	*out = v;
	return 0;
}

/* ---- one option --------------------------------------------------------- */

bool _uslub_parse_option(enum uslub_option o, const char *text, long *out, char *why,
			 size_t whylen)
{
	const struct uslub_option_desc *d = &options[o];
	size_t len = strlen(text);
	const char *reason = NULL;
	if (whylen)
		why[0] = 0;
	if (d->def == USLUB_OPT_STRING) {
		reason = "not a numeric option";
	} else if (!len) {
		reason = "empty value";
	} else if (is_space(text[0])) {
		reason = "white space before the value";
	} else if (is_space(text[len - 1])) {
		reason = "white space after the value";
	} else if (word_is(text, len, "on") || word_is(text, len, "yes") ||
		   word_is(text, len, "true")) {
		*out = 1;
		return true;
	} else if (word_is(text, len, "off") || word_is(text, len, "no") ||
		   word_is(text, len, "false")) {
		*out = 0;
		return true;
	} else if (o == USLUB_OPT_BACKGROUND_THREAD && word_is(text, len, "auto")) {
		*out = USLUB_BG_AUTO;        /* page.c: the thread once the program has one */
		return true;
	} else {
		bool neg = text[0] == '-' && len > 1;
		uint64_t v;
		int err = _uslub_parse_u64(text + neg, len - neg, (uint64_t)d->max, &v);
		if (!err && !neg) {
			*out = (long)v;
			return true;
		}
		if (err == USLUB_NUM_JUNK) {
			reason = o == USLUB_OPT_BACKGROUND_THREAD ?
				 "not a decimal number or on/off/yes/no/true/false/auto" :
				 "not a decimal number or on/off/yes/no/true/false";
		} else {
			_uslub_str_append(why, whylen, "out of range (0..");
			_uslub_str_append_long(why, whylen, d->max);
			_uslub_str_append(why, whylen, ")");
			return false;
		}
	}
	_uslub_str_append(why, whylen, reason);
	return false;
}

/* Does environment entry @e set option @i? Its value then. */
static const char *match(const char *e, int i)
{
	size_t n = strlen(options[i].name);
	if (strncmp(e, options[i].name, n) || e[n] != '=')
		return NULL;
	return e + n + 1;
}

void _uslub_options_from_env(char *const *env, bool secure, bool report, long *v,
			     const char **str)
{
	bool seen[USLUB_NR_OPTIONS] = { false };
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		v[i] = options[i].def;
		str[i] = "";
	}
	if (secure)
		return;         /* the caller's environment: not ours to obey */
	for (char *const *e = env; e && *e; e++) {
		if (strncmp(*e, "USLUB_", 6))
			continue;
		for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
			const char *text = match(*e, i);
			if (!text || seen[i])
				continue;
			seen[i] = true;
			if (options[i].def == USLUB_OPT_STRING) {
				str[i] = text;
				continue;
			}
			char why[96];
			if (!_uslub_parse_option((enum uslub_option)i, text, &v[i], why, sizeof(why))) {
				v[i] = options[i].def;
				if (report)
					_uslub_report("uslub: ignoring %s=\"%s\": %s; using the default %ld\n",
						      options[i].name, text, why, options[i].def);
			}
		}
	}
	if (report && *str[USLUB_OPT_DEBUG]) {
		char why[128];
		if (!_uslub_debug_check(str[USLUB_OPT_DEBUG], why, sizeof(why)))
			_uslub_report("uslub: USLUB_DEBUG=\"%s\": %s\n", str[USLUB_OPT_DEBUG], why);
	}
}

bool _uslub_secure_exec(void)
{
	return getauxval(AT_SECURE) != 0;
}

void _uslub_options_init(void)
{
	if (__atomic_load_n(&initialized, __ATOMIC_ACQUIRE))
		return;
	long v[USLUB_NR_OPTIONS];
	const char *str[USLUB_NR_OPTIONS];
	/* Racing initializers compute the same values; one reports. */
	bool report = !__atomic_exchange_n(&reported, true, __ATOMIC_RELAXED);
	_uslub_options_from_env(environ, _uslub_secure_exec(), report, v, str);
	size_t used = 0;
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		values[i] = v[i];
		strings[i] = str[i];
		size_t n = strlen(str[i]) + 1;
		if (n > 1 && n <= sizeof(string_pool) - used) {
			memcpy(string_pool + used, str[i], n);
			strings[i] = string_pool + used;
			used += n;
		}
	}
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	if (report && values[USLUB_OPT_VERBOSE])
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

long _uslub_option_default(enum uslub_option o)
{
	return options[o].def;
}

long _uslub_option_max(enum uslub_option o)
{
	return options[o].max;
}

const char *_uslub_option_name(enum uslub_option o)
{
	return options[o].name;
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
			fprintf(f, "  %-24s default %-6ld %s (0..%ld)\n", options[i].name,
				options[i].def, options[i].doc, options[i].max);
	}
}

__public void uslub_options_print(void);
void uslub_options_print(void)
{
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		if (options[i].def == USLUB_OPT_STRING)
			_uslub_report("%-22s default \"\"    %s\n", options[i].name, options[i].doc);
		else
			_uslub_report("%-22s default %-6ld %s (0..%ld)\n", options[i].name,
				      options[i].def, options[i].doc, options[i].max);
	}
}
