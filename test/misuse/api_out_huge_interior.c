/*
 * misuse_out_huge_interior (issue 25, item 8, review R1): a pointer inside
 * a kmalloc mapping above 2 MiB (a huge block), not at its start, gets
 * the cause a pointer inside a page run gets ("inside ..., not its
 * start"), named as passed, from every entry point: kfree, ksize,
 * krealloc, kfree_rcu, kfree_rcu_mightsleep; the block stays live and is
 * freed afterwards without a word. A pointer inside such a block freed
 * before (kept for reuse) is "a pointer into ... freed before".
 *
 * Before the fix every one of them said "a pointer uslub did not
 * allocate", as for a global's address: a page run's interior was named,
 * a huge block's was not.
 */
#include "uslub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "capture.h"

int main(void)
{
	char want[200];
	if (uslub_gp_register(&ops)) {
		fprintf(stderr, "FAIL: uslub_gp_register\n");
		return 1;
	}
	char *blk = uslub_kmalloc(4u << 20, 0);
	if (!blk) {
		fprintf(stderr, "FAIL: kmalloc(4 MiB)\n");
		return 1;
	}
	static const char *const ops_names[] = {
		"free", "size", "realloc", "kfree_rcu", "kfree_rcu_mightsleep",
	};
	unsigned long errors = uslub_error_count();
	for (int op = 0; op < 5; op++) {
		/* not page aligned, and page aligned */
		for (int k = 0; k < 2; k++) {
			char *p = blk + (k ? 0x200000 : 0x1010);
			start();
			switch (op) {
			case 0: uslub_kfree(p); break;
			case 1: (void)uslub_ksize(p); break;
			case 2: (void)uslub_krealloc_noprof(p, 100, 0); break;
			case 3: uslub_gp_kvfree(p, (struct uslub_rcu_head *)(p + 0x10)); break;
			case 4: uslub_gp_kvfree(p, NULL); break;
			}
			uslub_gp_barrier(NULL);
			const char *t = stop();
			snprintf(want, sizeof(want), "uslub: %s of %p: inside a huge block (a mapping "
				 "above 2 MiB), not its start", ops_names[op], (void *)p);
			expect(ops_names[op], t, want, true);
			expect(ops_names[op], t, "did not allocate", false);
		}
	}
	if (uslub_error_count() - errors != 10) {
		fprintf(stderr, "FAIL: %lu errors counted, want 10\n", uslub_error_count() - errors);
		failed = 1;
	}
	/* the block is still live: its start is freed quietly */
	start();
	blk[(4u << 20) - 1] = 1;
	uslub_kfree(blk);
	const char *t = stop();
	expect("kfree of the block's start", t, "uslub:", false);

	/* inside it once freed (kept for reuse, when it is): freed memory,
	 * not "did not allocate" */
	start();
	uslub_kfree(blk + 0x1010);
	t = stop();
	snprintf(want, sizeof(want), "uslub: free of %p: ", (void *)(blk + 0x1010));
	expect("free inside a freed huge block", t, want, true);
	if (strstr(t, "not inside any allocation"))
		expect("free inside a freed huge block", t, "a huge block freed before", true);

	if (!failed)
		printf("PASS\n");
	return failed;
}
