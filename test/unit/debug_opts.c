/*
 * USLUB_DEBUG parsing (base/debug_opts.c) against the kernel's slub_debug
 * rules: global blocks, cache lists, first matching list wins, '*'
 * prefixes, '-', case, the empty flag field meaning F Z P U.
 */
#include "base/base.h"
#include "unit.h"
#include <string.h>

#define F USLUB_DBG_F
#define Z USLUB_DBG_Z
#define P USLUB_DBG_P
#define U USLUB_DBG_U
#define T USLUB_DBG_T
#define A USLUB_DBG_A
#define O USLUB_DBG_O

static void expect(const char *spec, const char *name, unsigned int want)
{
	unsigned int got = _uslub_debug_flags(spec, name);
	if (got != want) {
		fprintf(stderr, "USLUB_DEBUG=\"%s\" for \"%s\": got %#x, want %#x\n", spec, name,
			got, want);
		exit(1);
	}
}

int main(void)
{
	/* nothing set, nothing on */
	expect(NULL, "dentry", 0);
	expect("", "dentry", 0);
	/* one global block */
	expect("FZ", "dentry", F | Z);
	expect("fzpu", "any", F | Z | P | U);
	expect("T", "x", T);
	expect("A", "x", A);
	expect("O", "x", O);
	expect("-", "x", 0);
	expect("FZ-P", "x", P);                 /* '-' clears what came before */
	/* empty flag field: the default set */
	expect(",dentry", "dentry", USLUB_DBG_DEFAULT);
	expect(",dentry", "inode", 0);
	/* a cache list */
	expect("Z,dentry,inode", "dentry", Z);
	expect("Z,dentry,inode", "inode", Z);
	expect("Z,dentry,inode", "inodes", 0);
	expect("Z,dentry,inode", "dent", 0);
	/* wildcard prefix */
	expect("P,kmalloc-*", "kmalloc-64", P);
	expect("P,kmalloc-*", "kmalloc-", P);
	expect("P,kmalloc-*", "kmalloc", 0);
	expect("P,*", "anything", P);
	/* global plus exceptions (the kernel doc's example) */
	expect("FZ;-,zs_handle,zspage", "dentry", F | Z);
	expect("FZ;-,zs_handle,zspage", "zs_handle", 0);
	expect("FZ;-,zs_handle,zspage", "zspage", 0);
	/* the first block naming a cache wins; the last global block wins */
	expect("U,a;Z,a", "a", U);
	expect("U,a;Z,a", "b", 0);
	expect("F;Z", "b", Z);
	expect("F,x;P;T,y", "x", F);
	expect("F,x;P;T,y", "y", T);
	expect("F,x;P;T,y", "z", P);
	/* spaces around names are ignored; an unknown letter is ignored */
	expect("Z, dentry , inode", "dentry", Z);
	expect("ZQ", "x", Z);
	/* trailing separators */
	expect("Z;", "x", Z);
	expect("Z,a,", "a", Z);
	printf("debug_opts: ok\n");
	return 0;
}
