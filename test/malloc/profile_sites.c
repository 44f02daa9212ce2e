/*
 * malloc_profile_sites' program: known call sites of malloc, in their own
 * functions, whose objects stay live until exit (so the report at exit
 * lists them): small_site() 1000 x 100 B, big_site() 10 x 64 KiB (the
 * largest malloc class), run_site() 3 x 1 MiB (kmalloc page runs),
 * map_site() 2 x 5 MiB (mappings; the second shrunk in place to 3 MiB by
 * realloc: its bytes follow, its call stays the site's); and
 * freed_site() 4 x 1 MiB freed at once (nothing left on it). Prints each
 * site's usable bytes (classes, run and mapping lengths), so the driver
 * (profile_sites.sh) can check the exact bytes; `hold FILE`
 * keeps it running (for `uslub allocinfo PID`) until FILE exists. Built with
 * -rdynamic (dladdr names the functions in the process) and -g (addr2line
 * names the lines in the tool). Only libc: uslub comes in by LD_PRELOAD.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *keep[1015];

__attribute__((noinline)) void small_site(void)
{
	for (int i = 0; i < 1000; i++)
		keep[i] = malloc(100);                  /* SITE small */
}

__attribute__((noinline)) void big_site(void)
{
	for (int i = 0; i < 10; i++)
		keep[1000 + i] = malloc(65536);          /* SITE big */
}

__attribute__((noinline)) void run_site(void)
{
	for (int i = 0; i < 3; i++)
		keep[1010 + i] = malloc(1 << 20);        /* SITE run */
}

__attribute__((noinline)) void map_site(void)
{
	for (int i = 0; i < 2; i++)
		keep[1013 + i] = malloc(5 << 20);        /* SITE map */
}

__attribute__((noinline)) void freed_site(void)
{
	void *p[4];
	for (int i = 0; i < 4; i++)
		p[i] = malloc(1 << 20);
	for (int i = 0; i < 4; i++)
		free(p[i]);
}

int main(int argc, char **argv)
{
	small_site();
	big_site();
	run_site();
	map_site();
	freed_site();
	void *shrunk = realloc(keep[1014], 3 << 20);  /* in place: a mapping shrinks */
	if (shrunk != keep[1014])
		return 2;
	for (int i = 0; i < 1015; i++)
		if (!keep[i])
			return 1;
	printf("small %zu\nbig %zu\nrun %zu\nmap %zu\n", malloc_usable_size(keep[0]),
	       malloc_usable_size(keep[1000]), 3 * malloc_usable_size(keep[1010]),
	       malloc_usable_size(keep[1013]) + malloc_usable_size(keep[1014]));
	fflush(stdout);
	/* hold FILE: stay (objects live, snapshots published) until FILE
	 * exists, 20 s at most */
	struct timespec ms10 = { 0, 10000000 };
	for (int i = 0; argc == 3 && i < 2000 && access(argv[2], F_OK); i++)
		nanosleep(&ms10, NULL);
	return 0;
}
