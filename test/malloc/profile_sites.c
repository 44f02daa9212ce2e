/*
 * malloc_profile_sites' program: two known call sites of malloc, in two
 * functions, whose objects stay live until exit (so the report at exit
 * lists them): small_site() 1000 x 100 B, big_site() 10 x 64 KiB (the
 * largest malloc class). Prints each site's usable size (its class), so
 * the driver (profile_sites.sh) can check the exact bytes; `hold FILE`
 * keeps it running (for `uslub allocinfo PID`) until FILE exists. Built with
 * -rdynamic (dladdr names the functions in the process) and -g (addr2line
 * names the lines in the tool). Only libc: uslub comes in by LD_PRELOAD.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *keep[1010];

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

int main(int argc, char **argv)
{
	small_site();
	big_site();
	for (int i = 0; i < 1010; i++)
		if (!keep[i])
			return 1;
	printf("small %zu\nbig %zu\n", malloc_usable_size(keep[0]), malloc_usable_size(keep[1000]));
	fflush(stdout);
	/* hold FILE: stay (objects live, snapshots published) until FILE
	 * exists, 20 s at most */
	struct timespec ms10 = { 0, 10000000 };
	for (int i = 0; argc == 3 && i < 2000 && access(argv[2], F_OK); i++)
		nanosleep(&ms10, NULL);
	return 0;
}
