/*
 * ext_plugin: a shared object loaded by ext/dlclose.c. It allocates
 * through a tagged call site of its own (uslub.h's constructor registers
 * its "uslub_alloc_tags" section on dlopen, the destructor unregisters it
 * on dlclose). Linked against the shared libuslub, as its loader is.
 */
#include "uslub.h"

/* The site's file and line (copy them: they go away with dlclose). */
const char *plugin_site(unsigned int *line);

static unsigned int site_line;

const char *plugin_site(unsigned int *line)
{
	*line = site_line;
	return __FILE__;
}

void *plugin_alloc(uslub_cache_t *s);

void *plugin_alloc(uslub_cache_t *s)
{
	site_line = __LINE__; return uslub_cache_alloc(s, 0);
}
