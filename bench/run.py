#!/usr/bin/env python3
"""uslub benchmark driver: runs uslub and its peers side by side.

uslub runs in both of its per-CPU models: "uslub" is the build as is
(per-CPU sheaves on every cache, the Linux 7.0 model and the default) and
"uslub-cpuslabs" the same binary or library with USLUB_CPU_SLABS=1 (the 6.x
cpu slab, cpu partial slabs and lockless remote free), in B1, B2, B4 and B8,
interleaved in the same rounds, each with its own target rows. A third
mode, "uslub-percpu", is the same binary or library with USLUB_PERCPU=cpu
(the sheaves of the rseq concurrency id, not of each thread), in B1, B8,
B9 and B-scale, with targets of its own against the per-thread mode and
mimalloc 3.4; where the machine has no rseq its rows say "not available
(no rseq)".

Runs B1 (single alloc+free, hot) and B4 (remote free) on uslub (both
modes), glibc malloc, jemalloc, mimalloc 2.0 (Debian), mimalloc 3.4 (the
"mimalloc-3.4" peer, from the cmeel-mimalloc wheel that install-peers.sh
unpacks under BUILD/peers), tcmalloc (LD_PRELOAD of uslub-bench-malloc) and
DPDK's rte_mempool, and B1 also on uslub's malloc front end (the same
uslub-bench-malloc under LD_PRELOAD of libuslub-malloc.so: "uslub-malloc");
B2 (bulk alloc+free against one by one) on uslub in both modes and DPDK; B3
(fresh-slab allocation, deferred against eager freelist) on uslub alone;
and uslub against itself: B5 (accounted against plain cache), B6
(allocation profiling, exact and sampled, against off), B6-acc (sampled
allocinfo's estimates against the exact figures, per call site), B7 (slab pages of many small
groups: one shared accounted cache against one cache per group),
B-meta (where accounted caches keep their per-object extension) and B-debug
(a plain cache with a slub_debug cache in the process against without).
B8 (malloc workloads: time, peak RSS, page faults; with the large-block
row "large") and B9 (RSS held in per-thread caches with 2, 64, 512
threads) run uslub-bench-mallocsuite as is (glibc) and with LD_PRELOAD of
uslub's libuslub-malloc.so (B8: in all three modes; B9: uslub and
uslub-percpu), jemalloc, both mimallocs
and tcmalloc.
B8 also has the threaded rows (tloop, mstress, larson, xmalloc; issue 29).
B-scale runs the suite's larson, xmalloc and threads (churn) workloads at
1, 2, 4, .. up to 4x the CPUs threads (--scale-threads MAX) on uslub in
each mode of config.BSCALE_USLUB_MODES and the suite's other peers, with
targets per thread count against mimalloc 3.4 (bench/scale-device.sh runs
it alone on a bigger machine).
B-dfree (what the double-free check costs) runs B1 on uslub-bench-uslub and
uslub-bench-uslub-nomark, and B8's workloads with LD_PRELOAD of
libuslub-malloc.so and libuslub-malloc-nomark.so: the same core with the
free mark and compiled without it (USLUB_NO_FREE_MARK).
R rounds interleaved round-robin across the peers, takes medians, prints a
ratio table (uslub time / peer time) with the SPEC §3 targets, and writes
bench.json, bench.md and bench.png to BUILD/bench-results/ (or --out DIR):
results are never written into the source tree. `--publish JSON` runs
nothing and rewrites the README's one table of published figures (between
its bench markers) from a full run's bench.json (`make bench-publish`).

Standard library only; matplotlib (for the PNG) is imported lazily, and if
this interpreter lacks it the plot is drawn by /usr/bin/python3 instead.

Exit status: 0 when every run completed (missed targets included: this is a
report), 1 when a benchmark binary crashed, timed out or is missing, 2 on
bad usage.
"""

import os
import sys

# The driver is the package uslub_bench beside this script (one module per
# benchmark family; its __init__ lists them). Nothing is written into the
# source tree, byte code included, as when this was one script.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from uslub_bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
