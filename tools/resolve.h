/*
 * The `uslub` tool's symbolizer: the malloc family's call sites in an
 * allocinfo (caller tags, ext/caller_tag.c: "module+0xOFF" in the table,
 * "module" and "offset" members in JSON) turned into file:line and
 * function with binutils' addr2line, outside the profiled process.
 */
#ifndef USLUB_TOOL_RESOLVE_H
#define USLUB_TOOL_RESOLVE_H

#include <stddef.h>
#include <stdio.h>

typedef void (*resolve_emit_fn)(const char *str, size_t n, FILE *out);

/*
 * Write @len bytes of @text (a report, a snapshot or its allocinfo, table
 * or JSON) to @out through @emit, with every caller site it names
 * resolved: a table row "BYTES CALLS /module+0xOFF func:SYM" becomes
 * "BYTES CALLS FILE:LINE func:FUNCTION (/module+0xOFF)" and a JSON site
 * gains "source_file", "source_line" and "source_func". Where addr2line is
 * missing, or has no line for an address (no DWARF: a stripped module),
 * the text is left as it is; a missing addr2line is said once on stderr.
 */
void resolve_and_emit(const char *text, size_t len, FILE *out, resolve_emit_fn emit);

/*
 * A heap profile (folded stacks: "SYM (MODULE+0xOFF);...;... BYTES", the
 * library's USLUB_HEAP_PROFILE file) written to @out with each frame named
 * by its function: addr2line's (with the rules above: a regular file, a
 * line in the debug information), else the dynamic symbol the library
 * found, else MODULE's file name and the offset; a frame the library wrote
 * as "[unloaded] (MODULE+0xOFF)" gets " [unloaded]" after its name. Lines
 * that then name the
 * same frames are added up; sorted by bytes; the header comment kept.
 */
void resolve_folded(const char *text, size_t len, FILE *out, resolve_emit_fn emit);

/*
 * The @n frames of a heap dump, each a module's path and an offset (what
 * addr2line takes), named with the rules above: each one's function and
 * "file:line" (NULL where unknown) into @func and @file, valid until
 * resolve_frames_done(). Frames past the first 65536 distinct ones stay
 * unnamed.
 */
void resolve_frames(const char *const *module, const unsigned long *off, size_t n,
		    const char **func, const char **file);
void resolve_frames_done(void);

#endif
