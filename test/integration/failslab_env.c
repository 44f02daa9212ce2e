/*
 * Fault injection configured from the environment at startup:
 * USLUB_FAILSLAB=probability=100,interval=4,cache-filter=1 and
 * USLUB_DEBUG=A,fs-env-* (set by CTest): caches matching fs-env-* fail
 * every 4th allocation call from the first one created, others never.
 * Without those variables the test skips.
 */
#include "check.h"

int main(void)
{
	const char *fs = getenv("USLUB_FAILSLAB"), *dbg = getenv("USLUB_DEBUG");
	if (!fs || !dbg || strcmp(dbg, "A,fs-env-*")) {
		printf("failslab_env: skipped (run by CTest with USLUB_FAILSLAB/USLUB_DEBUG)\n");
		return 77;
	}
	uslub_cache_t *a = uslub_cache_create("fs-env-a", 48, 0, 0, NULL);
	uslub_cache_t *b = uslub_cache_create("other", 48, 0, 0, NULL);
	CHECK(a && b);
	void *pa[100], *pb[100];
	int fa = 0, fb = 0;
	for (int i = 0; i < 100; i++) {
		pa[i] = uslub_cache_alloc(a, USLUB_GFP_KERNEL);
		pb[i] = uslub_cache_alloc(b, USLUB_GFP_KERNEL);
		CHECK_MSG(!pa[i] == ((i + 1) % 4 == 0), "call %d of fs-env-a", i);
		fa += !pa[i];
		fb += !pb[i];
	}
	CHECK_EQ(fa, 25);
	CHECK_EQ(fb, 0);
	CHECK_EQU(uslub_failslab_injected(), 25);
	for (int i = 0; i < 100; i++) {
		uslub_cache_free(a, pa[i]);
		uslub_cache_free(b, pb[i]);
	}
	CHECK_EQ(uslub_cache_destroy(a), 0);
	CHECK_EQ(uslub_cache_destroy(b), 0);
	printf("failslab_env: ok: fs-env-a failed every 4th of 100 calls, other none\n");
	return 0;
}
