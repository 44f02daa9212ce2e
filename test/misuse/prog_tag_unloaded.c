/*
 * misuse_tag_unloaded's program (tag_unloaded.sh), under LD_PRELOAD with
 * profiling on. argv[1]: the directory of the modules.
 *   - in that directory, dlopen("./misuse_mod_tag_gone.so") and
 *     dlopen("./misuse_mod_tag_kept.so") (relative paths), then chdir("/")
 *     before either allocates;
 *   - the gone module allocates 12 x 1 MiB, kept live; the kept one
 *     3 x 1 MiB;
 *   - the gone module is dlclose()d (and really unmapped: RTLD_NOLOAD
 *     finds nothing), then misuse_mod_tag_other.so is loaded (by its
 *     absolute path), in the same place if the loader reuses the hole,
 *     and its function runs (it allocates nothing);
 *   - a new call site of this program allocates (a claim: uslub notices
 *     the unload there), the newcomer is unloaded and
 *     misuse_mod_tag_again.so (the gone module's code under another name)
 *     is loaded in the same place if the hole is reused, and allocates
 *     2 x 1 MiB, kept live, from the gone module's very address;
 * and exits with everything live: the report at exit (USLUB_REPORT) must
 * name the gone module's 12 MiB as unloaded, with its real path, never as
 * the newcomer's function, the kept module's 3 MiB by its real path, and
 * the second newcomer's 2 MiB on a row of its own. Prints "same_place 1"
 * when the newcomer took the gone module's place, "same_site 1" when the
 * second newcomer allocated from the gone module's address.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*alloc_fn)(size_t);

/* a call site of its own, used once: a block above 64 KiB, whose tag is
 * looked up in sampled mode too (a claim) */
__attribute__((noinline)) static void fresh_site(void)
{
	void *p = malloc(1 << 20);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

static uintptr_t base_of(void *h)
{
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) || !lm)
		return 0;
	return (uintptr_t)lm->l_addr;
}

int main(int argc, char **argv)
{
	static void *keep[17];
	char other[PATH_MAX];
	if (argc != 2 || chdir(argv[1]))
		return 2;
	if (!realpath("misuse_mod_tag_other.so", other))
		return 2;
	void *gone = dlopen("./misuse_mod_tag_gone.so", RTLD_NOW | RTLD_LOCAL);
	void *kept = dlopen("./misuse_mod_tag_kept.so", RTLD_NOW | RTLD_LOCAL);
	if (!gone || !kept) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	if (chdir("/"))
		return 2;
	alloc_fn ga = (alloc_fn)dlsym(gone, "tag_gone_alloc");
	alloc_fn ka = (alloc_fn)dlsym(kept, "tag_kept_alloc");
	if (!ga || !ka)
		return 2;
	for (int i = 0; i < 12; i++)
		keep[i] = ga(1 << 20);
	for (int i = 0; i < 3; i++)
		keep[12 + i] = ka(1 << 20);
	for (int i = 0; i < 15; i++)
		if (!keep[i])
			return 3;
	uintptr_t gone_base = base_of(gone);
	uintptr_t gone_off = (uintptr_t)ga - gone_base;
	if (dlclose(gone))
		return 4;
	if (dlopen("./misuse_mod_tag_gone.so", RTLD_NOW | RTLD_NOLOAD)) {
		fprintf(stderr, "misuse_mod_tag_gone.so was not unloaded\n");
		return 77;
	}
	void *o = dlopen(other, RTLD_NOW | RTLD_LOCAL);
	if (!o)
		return 5;
	alloc_fn spin = (alloc_fn)dlsym(o, "tag_other_spin");
	if (!spin)
		return 5;
	spin(1);
	int same_place = base_of(o) == gone_base;

	fresh_site();
	char again_path[PATH_MAX];
	if (!realpath(argv[1], again_path) || strlen(again_path) + 32 >= sizeof(again_path))
		return 2;
	strcat(again_path, "/misuse_mod_tag_again.so");
	if (dlclose(o))
		return 6;
	void *again = dlopen(again_path, RTLD_NOW | RTLD_LOCAL);
	alloc_fn aa = again ? (alloc_fn)dlsym(again, "tag_again_alloc") : NULL;
	if (!aa)
		return 6;
	for (int i = 0; i < 2; i++)
		if (!(keep[15 + i] = aa(1 << 20)))
			return 3;
	printf("same_place %d\nsame_site %d\n", same_place,
	       (uintptr_t)aa == gone_base + gone_off);
	fflush(stdout);
	return 0;
}
