/*
 * uslub_cache_set_fail_hook(): a per-cache injection hook beside the
 * global failslab policy. The hook is asked once per allocation call with
 * the call's gfp and object count (single, bulk, prefill), a refusal fails
 * the call with ENOMEM and takes nothing, it is counted as an injected
 * failure, it survives the global policy being armed and disarmed, other
 * caches are not affected, and removing it restores plain behaviour.
 */
#include "check.h"

struct seen {
	int calls;
	size_t last_nr;
	uslub_gfp_t last_gfp;
	uslub_cache_t *last_s;
	int refuse;             /* refuse calls with USLUB_GFP_NOWAIT */
};

static int hook(uslub_cache_t *s, uslub_gfp_t gfp, size_t nr, void *arg)
{
	struct seen *w = arg;

	w->calls++;
	w->last_nr = nr;
	w->last_gfp = gfp;
	w->last_s = s;
	return w->refuse && (gfp & USLUB_GFP_NOWAIT);
}

static uint64_t live_objs(uslub_cache_t *s)
{
	struct uslub_slabinfo si;
	uslub_cache_slabinfo(s, &si);
	return si.live_objs;
}

int main(void)
{
	uslub_cache_t *s = uslub_cache_create("fail_hook", 64, 0, 0, NULL);
	uslub_cache_t *other = uslub_cache_create("fail_hook_other", 64, 0, 0, NULL);
	struct seen w = { 0 };
	void *p[8];
	CHECK(s && other);
	CHECK(uslub_cache_fail_hook_arg(s) == NULL);

	CHECK_EQ(uslub_cache_set_fail_hook(s, hook, &w), 0);
	CHECK(uslub_cache_fail_hook_arg(s) == &w);

	/* asked for every call, with its gfp and count; GFP_KERNEL passes */
	void *o = uslub_cache_alloc(s, USLUB_GFP_KERNEL);
	CHECK(o);
	CHECK_EQ(w.calls, 1);
	CHECK_EQU(w.last_nr, 1);
	CHECK(w.last_s == s && w.last_gfp == USLUB_GFP_KERNEL);
	uslub_cache_free(s, o);
	CHECK_EQ(uslub_cache_alloc_bulk(s, USLUB_GFP_KERNEL, 8, p), 8);
	CHECK_EQ(w.calls, 2);
	CHECK_EQU(w.last_nr, 8);
	uslub_cache_free_bulk(s, 8, p);

	/* refusals: NULL/0 with ENOMEM, nothing taken, counted */
	w.refuse = 1;
	unsigned long inj = uslub_failslab_injected();
	uint64_t live = live_objs(s);
	errno = 0;
	CHECK(uslub_cache_alloc(s, USLUB_GFP_NOWAIT) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK_EQ(uslub_cache_alloc_bulk(s, USLUB_GFP_ATOMIC, 8, p), 0);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQU(w.last_nr, 8);
	if (uslub_cache_sheaf_capacity(s)) {
		errno = 0;
		CHECK(uslub_cache_prefill_sheaf(s, USLUB_GFP_NOWAIT, 4) == NULL);
		CHECK_EQ(errno, ENOMEM);
		CHECK_EQU(w.last_nr, 4);
	}
	CHECK_EQU(live_objs(s), live);
	CHECK(uslub_failslab_injected() >= inj + 2);
	/* a blocking call still passes; the other cache never asks */
	o = uslub_cache_alloc(s, USLUB_GFP_KERNEL);
	CHECK(o);
	uslub_cache_free(s, o);
	int calls = w.calls;
	o = uslub_cache_alloc(other, USLUB_GFP_NOWAIT);
	CHECK(o);
	uslub_cache_free(other, o);
	CHECK_EQ(w.calls, calls);

	/* the global policy on and off leaves the hook armed */
	CHECK_EQ(uslub_failslab_configure("probability=0"), 0);
	CHECK_EQ(uslub_failslab_configure("probability=100,times=0"), 0);
	CHECK_EQ(uslub_failslab_configure("probability=0"), 0);
	CHECK(uslub_cache_alloc(s, USLUB_GFP_NOWAIT) == NULL);
	CHECK_EQ(w.calls, calls + 1);

	/* removed: never asked again, allocations pass */
	CHECK_EQ(uslub_cache_set_fail_hook(s, NULL, &w), 0);
	CHECK(uslub_cache_fail_hook_arg(s) == NULL);
	calls = w.calls;
	for (int i = 0; i < 100; i++) {
		o = uslub_cache_alloc(s, USLUB_GFP_NOWAIT);
		CHECK(o);
		uslub_cache_free(s, o);
	}
	CHECK_EQ(w.calls, calls);
	CHECK_EQ(uslub_cache_validate(s), 0);

	/* bad caches */
	errno = 0;
	CHECK_EQ(uslub_cache_set_fail_hook(NULL, hook, &w), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(uslub_cache_destroy(s), 0);
	CHECK_EQ(uslub_cache_destroy(other), 0);
	printf("fail_hook: ok\n");
	return 0;
}
