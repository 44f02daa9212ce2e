/*
 * USLUB_DEBUG: the kernel's slub_debug / slab_debug syntax, parsed without
 * allocating (the text stays in environ).
 *
 *   USLUB_DEBUG=<flags>[,<cache>[,<cache>...]][;<flags>[,<cache>...]]...
 *
 * A block without a cache list sets the flags of every cache (the last
 * such block wins); a block with a list sets them for the caches it names,
 * and the first block naming a cache wins over everything else. A name
 * ending in '*' matches every cache whose name starts with the rest.
 * Flags are letters, either case: F Z P U T A O, X (uslub's: abort after
 * a detected corruption), and '-' for none. O applies to the caches of its
 * block (the kernel's is global): their red zones, poison and owner
 * tracking are dropped where they would raise the minimum slab order. An
 * empty flag field in a block (",cache", or a block ";" of its own) means
 * the default set F Z P U, as slub_debug with no options does; an empty or
 * unset USLUB_DEBUG means no debugging at all (the variable cannot be
 * given without a value, as slub_debug can: USLUB_DEBUG=FZPU or ";" asks
 * for the default set on every cache).
 *
 * Unknown flag letters and empty cache names (",,", a trailing ',') are
 * ignored; _uslub_debug_check() finds them so that option parsing
 * (options.c) reports the first one once, at startup.
 */
#include "base/base.h"
#include <string.h>

/* Flags of the block at @p (up to ',' ';' or the end); *@end: where the
 * flags stop; *@bad: the first unknown letter (if @bad and none yet). */
static unsigned int parse_flags(const char *p, const char **end, const char **bad)
{
	unsigned int f = 0;
	const char *q = p;
	for (; *q && *q != ',' && *q != ';'; q++) {
		switch (*q | 0x20) {                       /* lower case */
		case 'f': f |= USLUB_DBG_F; break;
		case 'z': f |= USLUB_DBG_Z; break;
		case 'p': f |= USLUB_DBG_P; break;
		case 'u': f |= USLUB_DBG_U; break;
		case 't': f |= USLUB_DBG_T; break;
		case 'a': f |= USLUB_DBG_A; break;
		case 'o': f |= USLUB_DBG_O; break;
		case 'x': f |= USLUB_DBG_X; break;
		default:
			if (*q == '-')
				f = 0;
			else if (*q != ' ' && bad && !*bad)
				*bad = q;
		}
	}
	*end = q;
	return q == p ? USLUB_DBG_DEFAULT : f;
}

/* The list entry [*p, *q) without the blanks around it. */
static size_t trim(const char **p, const char **q)
{
	while (*p < *q && **p == ' ')
		(*p)++;
	while (*q > *p && (*q)[-1] == ' ')
		(*q)--;
	return (size_t)(*q - *p);
}

/* Does the list entry [p, q) name @name? */
static bool name_matches(const char *p, const char *q, const char *name)
{
	size_t len = trim(&p, &q);
	if (!len)
		return false;
	if (p[len - 1] == '*')
		return !strncmp(name, p, len - 1);
	return strlen(name) == len && !strncmp(name, p, len);
}

unsigned int _uslub_debug_flags(const char *spec, const char *name)
{
	unsigned int global = 0;
	if (!spec || !*spec)
		return 0;
	const char *p = spec;
	for (;;) {
		if (!*p)
			break;                  /* an empty last block: nothing */
		const char *q;
		unsigned int f = parse_flags(p, &q, NULL);
		if (*q == ',') {                /* a block with a cache list */
			const char *e = q + 1;
			for (;;) {
				const char *s = e;
				while (*e && *e != ',' && *e != ';')
					e++;
				if (name && name_matches(s, e, name))
					return f;
				if (*e != ',')
					break;
				e++;
			}
			q = e;
		} else {
			global = f;
		}
		if (*q != ';')
			break;
		p = q + 1;
	}
	return global;
}

bool _uslub_debug_check(const char *spec, char *why, size_t whylen)
{
	const char *bad = NULL;
	if (whylen)
		why[0] = 0;
	if (!spec)
		return true;
	for (const char *p = spec; *p;) {
		const char *q;
		parse_flags(p, &q, &bad);
		if (bad) {
			char c[2] = { *bad, 0 };
			_uslub_str_append(why, whylen, "unknown flag '");
			_uslub_str_append(why, whylen, c);
			_uslub_str_append(why, whylen, "' ignored (flags: F Z P U T A O X -)");
			return false;
		}
		while (*q == ',') {            /* the cache list */
			const char *s = ++q;
			while (*q && *q != ',' && *q != ';')
				q++;
			const char *e = q;
			if (!trim(&s, &e)) {
				_uslub_str_append(why, whylen, "empty cache name ignored");
				return false;
			}
		}
		if (*q != ';')
			break;
		p = q + 1;
	}
	return true;
}
