#!/usr/bin/env python3
"""uslub benchmark driver: runs uslub and its peers side by side.

uslub runs in both of its per-CPU models: "uslub" is the build as is
(per-CPU sheaves on every cache, the Linux 7.0 model and the default) and
"uslub-cpuslabs" the same binary or library with USLUB_CPU_SLABS=1 (the 6.x
cpu slab, cpu partial slabs and lockless remote free), in B1, B2, B4 and B8,
interleaved in the same rounds, each with its own target rows.

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
uslub's libuslub-malloc.so (B8: in both modes), jemalloc, both mimallocs
and tcmalloc.
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

import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

BENCH_TITLES = {
    "B1": "single alloc+free, same cache, hot",
    "B2": "bulk alloc+free vs one by one, same cache, hot",
    "B3": "fresh-slab allocation: deferred vs eager freelist",
    "B4": "remote free: one thread allocates, another frees",
    "B5": "accounted (USLUB_ACCOUNT) vs unaccounted cache, hot",
    "B6": "allocation profiling exact and sampled vs off (USLUB_PROFILING=1 / =sample / =0), "
          "hot",
    "B6-acc": "sampled allocinfo accuracy: per call site, sampled estimate vs exact bytes",
    "B7": "memory: N groups x a few objects, one shared accounted cache vs one cache per group",
    "B-meta": "metadata saved by in-slab placement of the per-object extension (seed 003)",
    "B-debug": "non-debug cache with a debug cache in the process (USLUB_DEBUG) vs none, hot",
    "B8": "malloc workloads: time, peak RSS and (large) page faults",
    "B9": "threads: RSS held in caches with 2, 64, 512 threads",
    "B-dfree": "the double-free check's cost: uslub with the free mark vs the same core "
               "without it",
    "B-rcu": "kfree_rcu (the rcu_free sheaf) vs liburcu's call_rcu + free per object",
}
BENCH_UNITS = {
    "B1": "ns per alloc+free pair",
    "B2": "ns per object: one alloc + one free",
    "B3": "ns per object: allocation only",
    "B4": "ns per object",
    "B5": "ns per alloc+free pair (hot pair), per object (batch)",
    "B6": "ns per alloc+free pair (hot pair), per object (batch)",
    "B6-acc": "live bytes per call site",
    "B7": "slab pages",
    "B-meta": "bytes per object",
    "B-debug": "ns per alloc+free pair (hot pair), per object (batch)",
    "B8": "ms per workload run; peak RSS (VmHWM) in MiB; large: minor page faults",
    "B9": "KiB of RSS held after every thread freed its objects",
    "B-dfree": "B1: ns per alloc+free pair; B8: ms per workload run",
    "B-rcu": "ns per object: the free after a grace period, callbacks included; "
             "process CPU time (the cost) and wall time",
}
BENCH_ORDER = ["B1", "B2", "B3", "B4", "B5", "B6", "B6-acc", "B7", "B-meta", "B-debug", "B8",
               "B9", "B-dfree", "B-rcu"]

# B-rcu (uslub-bench-rcu, built with the RCU component): one process runs
# the three methods interleaved, BRCU_REPEATS samples of BRCU_OBJECTS
# objects each, and prints each one's medians, in process CPU time (every
# thread's work, liburcu's worker included) and wall time; the target (the
# issue's: "kfree_rcu batched costs <= 0.5x call_rcu+free per object") is
# checked on the CPU time, the cost; the wall-time ratio is shown beside it.
BRCU_MODE = {"quick": (7, 100_000), "full": (15, 200_000)}
BRCU_LIMIT = 0.5


def run_brcu(build, mode_name):
    """B-rcu: run uslub-bench-rcu; None when it was not built."""
    exe = os.path.join(build, "bench", "uslub-bench-rcu")
    if not os.access(exe, os.X_OK):
        _log("bench: B-rcu skipped: %s not built (liburcu-dev missing?)" % exe)
        return None
    repeats, objects = BRCU_MODE[mode_name]
    _log("bench: B-rcu: %d interleaved samples of %d objects" % (repeats, objects))
    r = subprocess.run([exe, str(repeats), str(objects)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    if r.returncode != 0:
        _log("bench: B-rcu failed (%d): %s" % (r.returncode, r.stdout.strip()[-500:]))
        return None
    methods = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            m = json.loads(line)
            methods[m["method"]] = m
    e = {"title": BENCH_TITLES["B-rcu"], "unit": BENCH_UNITS["B-rcu"],
         "repeats": repeats, "objects": objects, "methods": methods, "targets": []}
    k = methods.get("kfree_rcu", {})
    for peer, what in (("call_rcu+glibc_free", "glibc free()"),
                       ("call_rcu+kfree", "uslub kfree()")):
        p_ = methods.get(peer, {})
        if not k or not p_.get("cpu_ns_per_obj"):
            continue
        ratio = k["cpu_ns_per_obj"] / p_["cpu_ns_per_obj"]
        e["targets"].append({"target": "kfree_rcu <= %.1fx call_rcu + %s (CPU)" % (
                                 BRCU_LIMIT, what),
                             "ratio": ratio, "pass": ratio <= BRCU_LIMIT,
                             "wall_ratio": k["wall_ns_per_obj"] / p_["wall_ns_per_obj"]})
    return e


def print_brcu(e, log):
    log("")
    log("%s  %s  (%s)" % ("B-rcu", e["title"], e["unit"]))
    log("  one process, liburcu's default flavour, %d interleaved samples of %d objects "
        "(64 B)" % (e["repeats"], e["objects"]))
    log("  %-22s %9s %9s  %s" % ("method", "cpu", "wall", "cpu samples"))
    for name, m in e["methods"].items():
        log("  %-22s %9.1f %9.1f  %s" % (name, m["cpu_ns_per_obj"], m["wall_ns_per_obj"],
                                         " ".join("%.0f" % x for x in m["cpu_samples"])))
    for t in e["targets"]:
        log("  %s: %.3fx (wall time: %.3fx)" % (t["target"], t["ratio"], t["wall_ratio"]))

# Both per-CPU models of uslub in one run. "uslub" is the build as is: every
# cache has per-CPU sheaves (Linux 7.0, the default). "uslub-cpuslabs" is the
# same binary or library with USLUB_CPU_SLABS=1 in its environment: the 6.x
# cpu slab, cpu freelist, cpu partial slabs and lockless remote free (no
# sheaves unless a cache asks for a sheaf_capacity). B1, B2, B4 and B8 run
# both, interleaved in the same rounds; each has its own target rows.
# B8 goes through malloc, whose kmalloc caches keep their sheaves in both
# models unless USLUB_KMALLOC_SHEAVES=0: its cpu-slab peer sets that too (an
# unknown USLUB_ variable is ignored, so this is harmless where the option
# does not exist). run_one() checks that the mode took (sheaf_capacity 0
# in the cpu-slab peer's result line); discover_suite() does the same for
# malloc once, through USLUB_VERBOSE's layout line of kmalloc-64.
CPUSLABS = "uslub-cpuslabs"
MIMALLOC3 = "mimalloc-3.4"      # the newest mimalloc, a peer (see MALLOC_PEERS)
CPUSLABS_ENV = {"USLUB_CPU_SLABS": "1"}
CPUSLABS_MALLOC_ENV = {"USLUB_CPU_SLABS": "1", "USLUB_KMALLOC_SHEAVES": "0"}
USLUB_SERIES = ["uslub", CPUSLABS]
USLUB_MODE = {"uslub": "per-CPU sheaves (Linux 7.0, the default)",
              CPUSLABS: "cpu slabs, USLUB_CPU_SLABS=1 (Linux 6.x)"}
# B2: the batch sizes of seed 001's table; the sheaf capacity each uslub
# peer asks for (--sheaves; 0: the cache's default, which is per-CPU sheaves
# of the kernel's default capacity, or none with USLUB_CPU_SLABS=1).
B2_NS = [1, 2, 3, 4, 8, 16, 30, 32, 34, 48, 64, 128, 158, 250]
B2_SHEAVES = {"uslub": 0, CPUSLABS: 0}
B2_PEERS = ["uslub", CPUSLABS, "dpdk"]
B2_MODES = [("bulk", "bulk"), ("single", "one-by-one")]
# B3: the four caches of each process (bench_uslub.c), as (random, eager).
B3_VARIANTS = ["eager-norandom", "deferred-norandom", "eager-random", "deferred-random"]
B3_LIMITS = {"norandom": 0.70, "random": 0.50}
# B5, B6: the two patterns, each process times both (bench_pairs_batches):
# B1's hot alloc+free pair, and Vlastimil Babka's batch (B56_BATCH objects
# allocated, then freed, one by one). B5: a plain and a USLUB_ACCOUNT cache
# in one process; B6: the same binary with USLUB_PROFILING=1 (exact),
# =sample (sampled, the default rate) and =0. The targets are issue 17's,
# per pattern: B5 accounted / plain; B6 each profiling mode / off.
B56_BATCH = 100
B56_PATTERNS = [("pair", "hot pair"), ("batch", "batch of %d" % B56_BATCH)]
B5_LIMITS = {"pair": 1.5, "batch": 1.25}
B6_PEERS = [("uslub-prof-on", "1"), ("uslub-prof-sample", "sample"), ("uslub-prof-off", "0")]
B6_BASE = "uslub-prof-off"
# what uslub_profiling_enabled() must say in each peer (--expect-profiling);
# the sampled peer's 2 missing (a build without the sampled mode, where
# "sample" is refused as bad text): its rows say "skipped"
B6_EXPECT = {"uslub-prof-on": 1, "uslub-prof-sample": 2, "uslub-prof-off": 0}
B6_MODE = {"uslub-prof-on": "exact", "uslub-prof-sample": "sampled", "uslub-prof-off": "off"}
B6_LIMITS = {"uslub-prof-on": {"pair": 1.5, "batch": 1.10},
             "uslub-prof-sample": {"pair": 1.05, "batch": 1.05}}
# B6-acc (uslub-bench-uslub --bench B6-acc): eight call sites holding known
# live bytes (16 B .. 32 KiB objects, B6acc_bytes in all), their allocinfo
# rows read while held, B6acc_repeats times per process. The exact peer
# runs once (its figures are the truth, checked against objects x stride
# in the child); the sampled one every round, each process with its own
# natural seed: the estimate per site is the median over rounds x repeats.
# Target: |median estimate / exact - 1| <= B6ACC_LIMIT for every site
# holding more than B6ACC_MIN_SHARE of the bytes.
B6ACC_PEERS = [("uslub-prof-on", "1"), ("uslub-prof-sample", "sample")]
B6ACC_ONCE = {"uslub-prof-on"}
B6ACC_LIMIT = 0.10
B6ACC_MIN_SHARE = 0.01
# runs that said {"skipped": why}: (bench, size, peer) -> why (their rows
# say so)
SKIPPED = {}
# B7: N groups each holding B7_OBJS objects; one process per mode and size,
# which measures every N (destroying its caches and groups in between).
B7_GROUPS = [100, 1000]
B7_OBJS = 4
B7_MODES = ["shared", "per-group"]
B7_MIN_SAVING = 0.40            # >= 40% fewer slab pages: shared/per-group <= 0.60
# B-meta: (label, cache spec for uslub-bench-uslub --caches, the placement
# seed 003 finds for a cache of that kind). SIZE[/ALIGN][+hw]; +hw is
# USLUB_HWCACHE_ALIGN. ext4_inode_cache (1184 B on x86-64, hwcache-aligned)
# has room for the array after its last object; xfs_inode (here 984 B in a
# 1024-byte stride) in each object's alignment padding; 64 B objects have
# neither, so their extensions go to a separate array.
BMETA_CACHES = [
    ("ext4_inode_cache-like", "1184+hw", "leftover"),
    ("xfs_inode-like", "984/64", "padding"),
    ("64B", "64", "array"),
]
ONCE = {"B-meta"}               # a layout, not a timing: first round only
# B-debug: each process times the plain cache "bench-plain-SIZE" with B5's
# patterns while the cache "bench-debug-other-SIZE" holds and allocates a
# few objects; USLUB_DEBUG makes that one a debug cache in the second peer
# only (None: the variable unset). Then each times the other cache itself:
# FZPU against the same cache without debugging (no target).
BDEBUG_SPEC = "FZPU,bench-debug*"
BDEBUG_PEERS = [("uslub-nodebug", None), ("uslub-debug-other", BDEBUG_SPEC)]
BDEBUG_LIMIT = 1.05
# B8, B9: uslub-bench-mallocsuite (bench_malloc_suite.c), one process per
# workload (B8) or thread count (B9), peer and round. uslub is the same
# binary with LD_PRELOAD of the build's libuslub-malloc.so.
B8_WORKLOADS = ["churn", "prodcons", "realloc", "mixed", "threads", "phases"]
B8_WHAT = {
    "churn": "1 thread: random replacement in 32768 live objects of 8..255 B, LIFO bursts",
    "prodcons": "2 producers allocate batches of 128 objects (8..511 B), 2 consumers free them",
    "realloc": "64 buffers grown by realloc: strings +1..64 B to <= 64 KiB, vectors x1.5 "
               "to <= 64 KiB or (1 in 256) 4 MiB",
    "mixed": "90% 8..511 B, 9.95% 1..64 KiB, 0.05% 256 KiB..4 MiB; short- and long-lived "
             "live sets; 5% calloc, 1% posix_memalign",
    "threads": "16 threads doing churn (2048 live objects each)",
    "phases": "phase 1 ~P MiB of 16..511 B, frees 99% (every 100th kept), purge wait, "
              "phase 2 a tenth of it in 512..8191 B",
    "large": "1 thread: 40 blocks (at --scale 1) of 1..32 MiB (log-uniform), each filled by memset "
             "and freed; 2 live at a time",
}
# The large-block row: a B8 workload run and printed with the others, but
# outside the geometric means (which stay over B8_WORKLOADS, comparable
# with earlier results); its own target is against glibc, in time and in
# minor page faults.
B8_LARGE = "large"
B8_LARGE_VS = "glibc"
B8_LARGE_LIMIT = 1.2
# B8's targets: the geometric mean time of uslub / peer <= limit for each
# (peer, limit); no workload's time above B8_WORST_LIMIT x B8_WORST_VS; the
# geometric mean peak RSS <= B8_RSS_LIMIT x each of B8_RSS_VS; phases
# returns memory.
B8_TIME_VS = [("mimalloc-3.4", 1.0), ("mimalloc", 1.0), ("jemalloc", 0.8)]
B8_WORST_VS = "mimalloc-3.4"
B8_WORST_LIMIT = 1.2
B8_RSS_VS = ["mimalloc-3.4"]
B8_RSS_LIMIT = 1.0
B8_VS = ["mimalloc-3.4", "mimalloc", "jemalloc"]    # the peers of the targets
B8_RETURNED = 0.5                       # phases: RSS after the frees < 50% of the peak
B9_THREADS = [2, 64, 512]
B9_VS = "mimalloc-3.4"
B9_LIMIT = 0.8
B9_MIN_SLOPE = 0.5                      # KiB per thread: below it a slope is "flat"
# B4's target: uslub / mimalloc (SPEC §3).
B4_VS = "mimalloc"
B4_LIMIT = 1.0
SUITE_PEERS = ["uslub", CPUSLABS, "glibc", "jemalloc", "mimalloc", MIMALLOC3, "tcmalloc"]
SUITE_OTHERS = [p for p in SUITE_PEERS if p not in USLUB_SERIES]
# B9 runs only the default mode (uslub): its 512-thread processes are long.
B9_SKIP = (CPUSLABS,)
USLUB_MALLOC_LIB = "libuslub-malloc.so"
SUITE_BENCHES = ("B8", "B9")
# filled by discover_peers(): [(peer, argv0, extra_env)] of the suite
SUITE = []
# filled by discover_suite(): uslub series -> kmalloc-64's sheaf capacity
SUITE_MODES = {}
# B-dfree: the double-free check's cost. Each round runs B1 (64 and 256 B)
# on uslub-bench-uslub and on uslub-bench-uslub-nomark, and each B8
# workload on uslub-bench-mallocsuite with LD_PRELOAD of libuslub-malloc.so
# and of libuslub-malloc-nomark.so: the same core with the free mark (as
# built) and compiled with USLUB_NO_FREE_MARK (bench/CMakeLists.txt), the
# two one after the other. Its configurations are ("B-dfree", (sub-bench,
# size or workload)); each runs the sub-bench's own command line and
# environment, so it measures what B1 and B8 measure. No target: a report.
BDFREE_PEERS = ["uslub", "uslub-nomark"]
BDFREE_SUBS = [("B1", 64), ("B1", 256)] + [("B8", w) for w in B8_WORKLOADS]
USLUB_NOMARK_BENCH = "uslub-bench-uslub-nomark"
USLUB_NOMARK_MALLOC_LIB = "libuslub-malloc-nomark.so"
# filled by discover_dfree(): sub-bench -> [(peer, argv0, extra_env)]
DFREE = {}

# Profiling is fixed per process by USLUB_PROFILING; the benchmarks that
# do not measure it run with it off, so they measure what they say.
NO_PROFILING = {"USLUB_PROFILING": "0"}

# Peer malloc libraries run through LD_PRELOAD: name -> sonames to look for
# in the system's library folders (Debian packages).
MALLOC_PEERS = [
    ("jemalloc", ["libjemalloc.so.2"]),
    ("mimalloc", ["libmimalloc.so.2"]),
    ("tcmalloc", ["libtcmalloc_minimal.so.4"]),
]
# mimalloc 3.4 (Debian has 2.0 only): libmimalloc.so.3.4 of the PyPI wheel
# cmeel-mimalloc, which bench/install-peers.sh BUILD unpacks into
# BUILD/peers/mimalloc-3.4/ (USLUB_BENCH_MIMALLOC3=/path/to/libmimalloc.so
# names another copy). run.py runs it once with MIMALLOC_VERBOSE=1 and
# takes it only when it says it is v3.4.x (the version goes to bench.json).
MIMALLOC3_DIR = os.path.join("peers", "mimalloc-3.4")
MIMALLOC3_ENV = "USLUB_BENCH_MIMALLOC3"
MIMALLOC3_WANT = "3.4."
# B1: uslub's malloc front end (malloc(size) + free under LD_PRELOAD of
# libuslub-malloc.so, the same loop as the malloc peers'), beside uslub's
# own cache API ("uslub"). B1 only.
USLUB_MALLOC = "uslub-malloc"
MALLOCS = ["glibc", "jemalloc", "mimalloc", MIMALLOC3, "tcmalloc"]
PEER_ORDER = ["uslub", CPUSLABS, "uslub-hardened", USLUB_MALLOC, "dpdk", "glibc", "jemalloc",
              "mimalloc", MIMALLOC3, "tcmalloc"]
# Variants of uslub's binary that peers_for() adds beside "uslub" (--peers
# uslub selects them too).
USLUB_VARIANTS = ("uslub-hardened", CPUSLABS)
# B1 also runs uslub with freelist hardening on for every cache
# (USLUB_FREELIST_HARDENED=1). The default (2) hardens every cache with
# sheaves, so "uslub" itself is hardened in B1; this variant says what
# hardening would cost the caches in cpu-slab mode too (informational).
HARDENED_ENV = {"USLUB_FREELIST_HARDENED": "1"}

# Debian packages of each peer (for the versions in bench.json).
PEER_PACKAGES = {
    "glibc": "libc6",
    "jemalloc": "libjemalloc2",
    "mimalloc": "libmimalloc2.0",
    "tcmalloc": "libtcmalloc-minimal4",
    "dpdk": "libdpdk-dev",
}

MODES = {
    # rounds: processes per peer and benchmark, interleaved;
    # repeats: samples taken inside each process (after a warm-up).
    # B2_objects: objects per sample, for each n and mode;
    # B3_bytes: bytes allocated per round (seed 000: 256 MiB).
    # B5_iters: B5/B6 pairs per sample, and objects per sample of the batch.
    # B6acc_bytes, B6acc_repeats: B6-acc's live bytes and repetitions per
    # process.
    # B8_rounds, B9_rounds: rounds of B8 and B9 (their processes are
    # longer; --rounds sets them too); B8_scale: the suite's --scale;
    # B8_phase1_mib, B8_purge_ms: the phases workload's phase 1 and wait.
    # Bdfree_rounds: rounds of B-dfree, its B1 and B8 parts alike (short
    # processes; the difference it measures is small).
    "quick": {"rounds": 5, "repeats": 3, "B1_iters": 5_000_000,
              "B4_objects": 1_500_000, "B2_objects": 500_000,
              "B3_bytes": 64 << 20, "B5_iters": 5_000_000,
              "B6acc_bytes": 64 << 20, "B6acc_repeats": 4,
              "B8_rounds": 2, "B9_rounds": 2, "B8_scale": 0.25, "B8_phase1_mib": 64,
              "B8_purge_ms": 1500, "Bdfree_rounds": 5, "timeout": 60},
    "full": {"rounds": 7, "repeats": 3, "B1_iters": 20_000_000,
             "B4_objects": 5_000_000, "B2_objects": 2_000_000,
             "B3_bytes": 256 << 20, "B5_iters": 20_000_000,
             "B6acc_bytes": 128 << 20, "B6acc_repeats": 8,
             "B8_rounds": 5, "B9_rounds": 5, "B8_scale": 1.0, "B8_phase1_mib": 200,
             "B8_purge_ms": 1500, "Bdfree_rounds": 9, "timeout": 180},
}

# What each benchmark runs: (bench, object size).
CONFIGS = [("B1", 64), ("B1", 256), ("B2", 64),
           ("B3", 16), ("B3", 32), ("B3", 64), ("B3", 128), ("B3", 256), ("B3", 512),
           ("B4", 64),
           ("B5", 64), ("B5", 256), ("B6", 64), ("B6", 256), ("B6-acc", 0),
           ("B7", 512), ("B7", 192), ("B-meta", 0), ("B-debug", 64), ("B-debug", 256)] + \
    [("B8", w) for w in B8_WORKLOADS + [B8_LARGE]] + [("B9", n) for n in B9_THREADS] + \
    [("B-dfree", sub) for sub in BDFREE_SUBS]
# Benchmarks with their own analysis and table (not one row per peer).
OWN = ("B2", "B3", "B5", "B6", "B6-acc", "B7", "B-meta", "B-debug", "B8", "B9", "B-dfree")


def _log(msg=""):
    print(msg, flush=True)


log = _log


def shown(path):
    """@path relative to the current directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


# ---------------------------------------------------------------------------
# Finding the binaries and the peers
# ---------------------------------------------------------------------------

def lib_dirs():
    dirs = ["/usr/lib/x86_64-linux-gnu"]
    arch = platform.machine()
    if arch and arch != "x86_64":
        dirs.insert(0, "/usr/lib/%s-linux-gnu" % arch)
    dirs += ["/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu"]
    return [d for d in dirs if os.path.isdir(d)]


def find_lib(sonames):
    for d in lib_dirs():
        for so in sonames:
            p = os.path.join(d, so)
            if os.path.isfile(p):
                return p
    return None


# filled by malloc_peer_lib(): peer -> (library or None, why it is missing)
MALLOC_LIBS = {}
# versions of peers that are not Debian packages (mimalloc-3.4), for bench.json
PEER_VERSIONS_EXTRA = {}


def mimalloc_version(lib, argv0):
    """The version mimalloc @lib says it is ("3.4.3"), from a run of @argv0
    --help under LD_PRELOAD=@lib with MIMALLOC_VERBOSE=1 (mimalloc prints
    its version when the process starts); and the line it was on. (None,
    why) when it says none."""
    env = dict(os.environ, LD_PRELOAD=lib, MIMALLOC_VERBOSE="1")
    try:
        r = subprocess.run([argv0, "--help"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "cannot run %s: %s" % (argv0, e)
    for line in r.stderr.splitlines():
        m = re.search(r"\bv(\d+\.\d+\.\d+)\b", line)
        if m:
            return m.group(1), line.strip()
    tail = r.stderr.strip().splitlines()[-1:] or ["no output"]
    return None, "no version in its MIMALLOC_VERBOSE=1 output (%s)" % tail[0][:200]


def malloc_peer_lib(build, peer, argv0):
    """The library a peer malloc is preloaded from: a Debian package's
    (MALLOC_PEERS) or, for mimalloc-3.4, BUILD/peers/mimalloc-3.4's (or
    $USLUB_BENCH_MIMALLOC3), checked to be mimalloc 3.4 by running @argv0
    under it. Returns (path or None, why it is missing); looked up once."""
    if peer in MALLOC_LIBS:
        return MALLOC_LIBS[peer]
    if peer != MIMALLOC3:
        sonames = dict(MALLOC_PEERS)[peer]
        lib = find_lib(sonames)
        got = (lib, None if lib else "%s not found in %s" % (
            " / ".join(sonames), ", ".join(lib_dirs())))
    else:
        cands = [os.environ[MIMALLOC3_ENV]] if os.environ.get(MIMALLOC3_ENV) else \
            sorted(glob.glob(os.path.join(build, MIMALLOC3_DIR, "libmimalloc.so.3.4*")),
                   key=len)
        lib = next((c for c in cands if os.path.isfile(c)), None)
        if not lib:
            got = (None, "%s not found (bench/install-peers.sh %s fetches it from the PyPI "
                   "wheel cmeel-mimalloc; or set %s)" % (
                       os.environ.get(MIMALLOC3_ENV) or
                       os.path.join(shown(build), MIMALLOC3_DIR, "libmimalloc.so.3.4"),
                       shown(build), MIMALLOC3_ENV))
        else:
            lib = os.path.abspath(lib)
            ver, line = mimalloc_version(lib, argv0)
            if not ver or not ver.startswith(MIMALLOC3_WANT):
                got = (None, "%s is not mimalloc %sx: %s" % (
                    shown(lib), MIMALLOC3_WANT, ("it says v%s" % ver) if ver else line))
            else:
                PEER_VERSIONS_EXTRA[MIMALLOC3] = "mimalloc %s (%s)" % (line, lib)
                got = (lib, None)
    MALLOC_LIBS[peer] = got
    return got


def find_binary(build, name):
    for p in (os.path.join(build, "bench", name), os.path.join(build, name)):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def discover_peers(build, wanted):
    """Returns [(peer, argv0, extra_env)], printing one line per skipped peer."""
    peers = []
    missing_required = False
    ub = find_binary(build, "uslub-bench-uslub")
    mb = find_binary(build, "uslub-bench-malloc")
    db = find_binary(build, "uslub-bench-dpdk")
    discover_suite(build, wanted)
    for peer in PEER_ORDER:
        if wanted and peer not in wanted and not (peer == USLUB_MALLOC and "uslub" in wanted):
            continue
        if peer in USLUB_VARIANTS:
            continue        # variants of uslub's binary, added by peers_for()
        if peer == "uslub":
            if not ub:
                log("bench: uslub-bench-uslub not found under %s (build it first)" % build)
                missing_required = True
                continue
            peers.append((peer, ub, {}))
        elif peer == USLUB_MALLOC:
            lib = find_build_lib(build, USLUB_MALLOC_LIB)
            if not mb or not lib:
                log("bench: skipping %s: %s not found under %s (not built yet?)" % (
                    USLUB_MALLOC, "uslub-bench-malloc" if not mb else USLUB_MALLOC_LIB, build))
                continue
            peers.append((peer, mb, {"LD_PRELOAD": lib}))
        elif peer == "dpdk":
            if not db:
                log("bench: skipping dpdk: uslub-bench-dpdk was not built "
                    "(pkg-config libdpdk not found at configure time)")
                continue
            peers.append((peer, db, {}))
        elif peer == "glibc":
            if not mb:
                log("bench: uslub-bench-malloc not found under %s (build it first)" % build)
                missing_required = True
                continue
            peers.append((peer, mb, {}))
        else:
            if not mb:
                continue
            lib, why = malloc_peer_lib(build, peer, mb)
            if not lib:
                log("bench: skipping %s: %s" % (peer, why))
                continue
            peers.append((peer, mb, {"LD_PRELOAD": lib}))
    return peers, missing_required


def find_build_lib(build, name):
    """A library the build made (libuslub-malloc*.so), or None."""
    for p in (os.path.join(build, name), os.path.join(build, "bench", name),
              os.path.join(build, "src", name), os.path.join(build, "src", "malloc", name)):
        if os.path.isfile(p):
            return p
    return None


def discover_dfree(build, wanted):
    """B-dfree's pairs into DFREE: B1 on uslub-bench-uslub and
    uslub-bench-uslub-nomark; B8 on uslub-bench-mallocsuite with LD_PRELOAD
    of libuslub-malloc.so and of libuslub-malloc-nomark.so. The same
    environment as B1's and B8's uslub. A part whose binaries are missing is
    skipped, with one line saying so."""
    DFREE.clear()
    if wanted and "uslub" not in wanted:
        log("bench: skipping B-dfree: it measures uslub (not in --peers)")
        return
    ub = find_binary(build, "uslub-bench-uslub")
    nb = find_binary(build, USLUB_NOMARK_BENCH)
    sb = find_binary(build, "uslub-bench-mallocsuite")
    lib = find_build_lib(build, USLUB_MALLOC_LIB)
    nlib = find_build_lib(build, USLUB_NOMARK_MALLOC_LIB)
    if ub and nb:
        DFREE["B1"] = [("uslub", ub, {}), ("uslub-nomark", nb, {})]
    if sb and lib and nlib:
        DFREE["B8"] = [("uslub", sb, {"LD_PRELOAD": lib}),
                       ("uslub-nomark", sb, {"LD_PRELOAD": nlib})]
    missing = [n for n, have in ((USLUB_NOMARK_BENCH, nb), (USLUB_NOMARK_MALLOC_LIB, nlib),
                                 ("uslub-bench-uslub", ub), ("uslub-bench-mallocsuite", sb),
                                 (USLUB_MALLOC_LIB, lib)) if not have]
    if missing:
        log("bench: %s B-dfree: %s not found under %s (bench/CMakeLists.txt builds the "
            "nomark pair; none in sanitizer builds)" % (
                "skipping" if not DFREE else "skipping part of",
                " / ".join(missing), build))


def discover_suite(build, wanted):
    """B8/B9's peers into SUITE: uslub-bench-mallocsuite as is (glibc) and
    with LD_PRELOAD of libuslub-malloc.so (uslub) and of each peer malloc.
    Prints one line per peer skipped."""
    del SUITE[:]
    sb = find_binary(build, "uslub-bench-mallocsuite")
    if not sb:
        log("bench: B8/B9: uslub-bench-mallocsuite not found under %s (build it first); "
            "skipping B8 and B9" % build)
        return
    for peer in SUITE_PEERS:
        if wanted and peer not in wanted and not (peer == CPUSLABS and "uslub" in wanted):
            continue
        if peer in USLUB_SERIES:
            lib = find_build_lib(build, USLUB_MALLOC_LIB)
            if not lib:
                if peer == "uslub":
                    log("bench: B8/B9: skipping uslub: %s not found under %s (not built yet?)"
                        % (USLUB_MALLOC_LIB, build))
                continue
            env = {"LD_PRELOAD": lib}
            if peer == CPUSLABS:
                env.update(CPUSLABS_MALLOC_ENV)
            SUITE.append((peer, sb, env))
        elif peer == "glibc":
            SUITE.append((peer, sb, {}))
        else:
            lib, why = malloc_peer_lib(build, peer, sb)
            if not lib:
                log("bench: B8/B9: skipping %s: %s" % (peer, why))
                continue
            SUITE.append((peer, sb, {"LD_PRELOAD": lib}))
    SUITE_MODES.clear()
    for peer, argv0, env in SUITE:
        if peer in USLUB_SERIES:
            SUITE_MODES[peer] = malloc_sheaf_capacity(argv0, env)
    got = SUITE_MODES.get(CPUSLABS)
    if got:
        log("bench: B8: warning: %s's kmalloc-64 has sheaf_capacity %d with %s: malloc "
            "does not run on cpu slabs, %s measures sheaves too" % (
                CPUSLABS, got, " ".join("%s=%s" % kv for kv in CPUSLABS_MALLOC_ENV.items()),
                CPUSLABS))


def malloc_sheaf_capacity(argv0, env):
    """The sheaf capacity of kmalloc-64 under LD_PRELOAD of libuslub-malloc.so
    with @env: one short run of the suite with USLUB_VERBOSE=1, whose layout
    line of each new cache says it. None when it cannot be told."""
    e = dict(os.environ, USLUB_VERBOSE="1", **env)
    try:
        r = subprocess.run([argv0, "--workload", "churn", "--scale", "0.001", "--label", "probe"],
                           env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in r.stderr.splitlines():
        if line.startswith("uslub: cache kmalloc-64:") and "sheaf_capacity" in line:
            try:
                return int(line.split("sheaf_capacity", 1)[1].split()[0])
            except (ValueError, IndexError):
                return None
    return None


# ---------------------------------------------------------------------------
# Machine information
# ---------------------------------------------------------------------------

def run_quiet(argv, cwd=None):
    try:
        r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=10)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(build):
    info = {
        "nproc": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "loadavg_start": list(os.getloadavg()),
    }
    commit = run_quiet(["git", "rev-parse", "HEAD"], cwd=REPO)
    if commit:
        info["git_commit"] = commit
        dirty = run_quiet(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO)
        info["git_dirty"] = bool(dirty)
    cache = os.path.join(build, "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_C_COMPILER:"):
                    cc = line.split("=", 1)[1].strip()
                    ver = run_quiet([cc, "--version"])
                    info["compiler"] = ver.splitlines()[0] if ver else cc
                elif line.startswith("CMAKE_BUILD_TYPE:"):
                    info["build_type"] = line.split("=", 1)[1].strip()
    except OSError:
        pass
    versions = {}
    if shutil.which("dpkg-query"):
        for peer, pkg in PEER_PACKAGES.items():
            v = run_quiet(["dpkg-query", "-W", "-f=${Version}", pkg])
            if v:
                versions[peer] = "%s %s" % (pkg, v)
    versions.update(PEER_VERSIONS_EXTRA)
    info["peer_versions"] = versions
    env = {k: v for k, v in os.environ.items() if k.startswith("USLUB_")}
    if env:
        info["uslub_env"] = env
    return info


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def bench_argv(argv0, peer, bench, size, mode):
    if bench == "B-dfree":
        return bench_argv(argv0, peer, size[0], size[1], mode)
    if bench == "B8":
        return [argv0, "--workload", size, "--scale", "%g" % mode["B8_scale"],
                "--phase1-mib", str(mode["B8_phase1_mib"]),
                "--purge-ms", str(mode["B8_purge_ms"]), "--label", peer]
    if bench == "B9":
        return [argv0, "--workload", "b9", "--threads", str(size), "--label", peer]
    if bench == "B2":
        argv = [argv0, "--bench", bench, "--size", str(size),
                "--iters", str(mode["B2_objects"]),
                "--ns", ",".join(str(n) for n in B2_NS)]
        if B2_SHEAVES.get(peer):
            argv += ["--sheaves", str(B2_SHEAVES[peer])]
        return argv + ["--repeats", str(mode["repeats"]), "--label", peer]
    if bench == "B3":
        return [argv0, "--bench", bench, "--size", str(size),
                "--bytes", str(mode["B3_bytes"]),
                "--repeats", str(mode["repeats"]), "--label", peer]
    if bench in ("B5", "B6", "B-debug"):
        argv = [argv0, "--bench", bench, "--size", str(size),
                "--iters", str(mode["B5_iters"]), "--batch", str(B56_BATCH),
                "--repeats", str(mode["repeats"]), "--label", peer]
        if bench == "B6":
            argv += ["--expect-profiling", str(B6_EXPECT[peer])]
        if bench == "B-debug":
            argv += ["--expect-debug", "0" if dict(BDEBUG_PEERS)[peer] is None else "1"]
        return argv
    if bench == "B6-acc":
        return [argv0, "--bench", bench, "--bytes", str(mode["B6acc_bytes"]),
                "--repeats", str(mode["B6acc_repeats"]),
                "--expect-profiling", str(B6_EXPECT[peer]), "--label", peer]
    if bench == "B7":
        return [argv0, "--bench", bench, "--size", str(size), "--mode", peer,
                "--groups", ",".join(str(n) for n in B7_GROUPS),
                "--objs", str(B7_OBJS), "--label", peer]
    if bench == "B-meta":
        return [argv0, "--bench", bench, "--label", peer, "--caches",
                ",".join("%s=%s" % (label, spec) for label, spec, _ in BMETA_CACHES)]
    iters = mode["B1_iters"] if bench == "B1" else mode["B4_objects"]
    return [argv0, "--bench", bench, "--size", str(size), "--iters", str(iters),
            "--repeats", str(mode["repeats"]), "--label", peer]


def peers_for(bench, peers, size=None):
    """The peers a benchmark runs on. B1, B4: all, uslub in both modes (and
    B1 with hardening). B2: the slab/mempool ones (uslub in both modes,
    DPDK); malloc has no bulk API. B3, B5,
    B-meta: uslub, which they compare with itself. B6: uslub with profiling
    exact, sampled and off; B6-acc: exact and sampled. B7: uslub in its two modes (shared, per-group). B-debug:
    uslub without USLUB_DEBUG and with it naming the other cache. B8, B9:
    the malloc suite's peers (SUITE), uslub through libuslub-malloc.so.
    B-dfree (@size is (sub-bench, size)): uslub and uslub-nomark (DFREE).
    uslub-cpuslabs: uslub's binary with CPUSLABS_ENV (B8: library, with
    CPUSLABS_MALLOC_ENV; B9 runs the default mode only)."""
    if bench == "B-dfree":
        return list(DFREE.get(size[0], []))
    if bench in SUITE_BENCHES:
        return [p for p in SUITE if bench != "B9" or p[0] not in B9_SKIP]
    if bench == "B2":
        out = []
        for p in peers:
            if p[0] == "uslub":
                out.append(p)
                out.append((CPUSLABS, p[1], dict(p[2], **CPUSLABS_ENV)))
            elif p[0] == "dpdk":
                out.append(p)
        return out
    if bench in ("B3", "B5", "B-meta"):
        return [(p[0], p[1], dict(p[2], **NO_PROFILING)) if bench != "B3" else p
                for p in peers if p[0] == "uslub"]
    if bench in ("B6", "B6-acc"):
        return [(name, p[1], dict(p[2], USLUB_PROFILING=val))
                for p in peers if p[0] == "uslub"
                for name, val in (B6_PEERS if bench == "B6" else B6ACC_PEERS)]
    if bench == "B7":
        return [(m, p[1], dict(p[2], **NO_PROFILING))
                for p in peers if p[0] == "uslub" for m in B7_MODES]
    if bench == "B-debug":
        return [(name, p[1], dict(p[2], USLUB_DEBUG=spec, **NO_PROFILING))
                for p in peers if p[0] == "uslub" for name, spec in BDEBUG_PEERS]
    if bench in ("B1", "B4"):
        out = []
        for p in peers:
            if p[0] == USLUB_MALLOC and bench != "B1":
                continue            # B1's malloc row only
            out.append(p)
            if p[0] == "uslub":
                out.append((CPUSLABS, p[1], dict(p[2], **CPUSLABS_ENV)))
                if bench == "B1":
                    out.append(("uslub-hardened", p[1], dict(p[2], **HARDENED_ENV)))
        return out
    return peers


def run_one(peer, argv0, extra_env, bench, size, mode):
    """Runs one process with @extra_env (a value None unsets the variable).
    Returns (result dict or None, error string or None)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for k, v in extra_env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    argv = bench_argv(argv0, peer, bench, size, mode)
    try:
        r = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           timeout=mode["timeout"])
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s: %s" % (mode["timeout"], " ".join(argv))
    except OSError as e:
        return None, "cannot run %s: %s" % (argv0, e)
    if r.returncode != 0:
        how = ("killed by signal %d" % -r.returncode) if r.returncode < 0 \
            else "exit status %d" % r.returncode
        tail = "\n".join(r.stderr.strip().splitlines()[-15:])
        return None, "%s %s %s: %s\n%s" % (peer, bench, config_label(bench, size), how, tail)
    res = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
            except ValueError:
                return None, "%s %s: bad output line: %s" % (peer, bench, line)
    if res and res.get("skipped"):
        return None, "skipped: %s %s: %s" % (peer, bench, res["skipped"])
    if not res or not (res.get("samples_ns") or res.get("series") or res.get("points")
                       or res.get("caches") or res.get("workload") or res.get("sites")):
        return None, "%s %s: no result line in the output" % (peer, bench)
    if bench in ("B6", "B6-acc") and res.get("profiling") != B6_EXPECT.get(peer):
        # the child checks this too (--expect-profiling) and exits with 3
        return None, "%s %s %s: USLUB_PROFILING=%s did not take (profiling %s, not %s)" % (
            peer, bench, config_label(bench, size), extra_env.get("USLUB_PROFILING"),
            res.get("profiling"), B6_EXPECT.get(peer))
    other = res.get("caches", {}).get("other", {}) if bench == "B-debug" else {}
    if bench == "B-debug" and other.get("debug") != (extra_env.get("USLUB_DEBUG") is not None):
        # the child checks this too (--expect-debug) and exits with 3
        return None, "%s B-debug %d B: USLUB_DEBUG=%s did not take (%s is %sa debug cache)" % (
            peer, size, extra_env.get("USLUB_DEBUG"), other.get("name"),
            "" if other.get("debug") else "not ")
    if extra_env.get("USLUB_CPU_SLABS") == "1" and res.get("sheaf_capacity"):
        # the cpu-slab peer got sheaves: it would measure the default mode
        return None, "%s %s %s: USLUB_CPU_SLABS=1 did not take (sheaf_capacity %s)" % (
            peer, bench, config_label(bench, size), res.get("sheaf_capacity"))
    if "LD_PRELOAD" in extra_env:
        lib = res.get("malloc_lib", "")
        want = os.path.basename(extra_env["LD_PRELOAD"]).split(".so")[0]
        # the very file preloaded, not another copy of the same name (two
        # mimallocs: libmimalloc.so.2 and mimalloc-3.4's libmimalloc.so.3.4)
        if want not in lib or (os.path.isabs(lib) and os.path.realpath(lib) !=
                               os.path.realpath(extra_env["LD_PRELOAD"])):
            return None, "preload-failed: %s: malloc comes from %s, not %s" % (
                peer, lib, extra_env["LD_PRELOAD"])
    if r.stderr.strip():
        res["stderr"] = r.stderr.strip()[-2000:]
    return res, None


def config_label(bench, size):
    """How one configuration is named in messages: "64 B", "churn", "512 threads"."""
    if bench == "B8":
        return str(size)
    if bench == "B9":
        return "%d threads" % size
    if bench == "B-dfree":
        return "%s %s" % (size[0], config_label(size[0], size[1]))
    return "%s B" % size


def once_peer(bench, peer, rnd):
    """A peer that runs in the first round only (B6-acc's exact one)."""
    return bench == "B6-acc" and peer in B6ACC_ONCE and rnd > 0


def rounds_of(bench, mode):
    """Rounds of one benchmark: B8 and B9 have their own count."""
    if bench in SUITE_BENCHES:
        return mode["%s_rounds" % bench]
    if bench == "B-dfree":
        return mode["Bdfree_rounds"]
    return mode["rounds"]


def add_series(into, series):
    """Merge a B2/B3 result line's series into @into. B2: {mode: {n:
    [samples]}}; B3: {variant: [samples]} (stored under the key "all")."""
    for name, v in series.items():
        dst = into.setdefault(name, {})
        if isinstance(v, dict):
            for key, xs in v.items():
                dst.setdefault(key, []).extend(xs)
        else:
            dst.setdefault("all", []).extend(v)


def series_summary(bench, series):
    """One progress-line summary of a B2/B3/B5/B6/B-debug run (medians of its
    samples)."""
    med = statistics.median
    if bench == "B5":
        parts = []
        for pat, label in B56_PATTERNS:
            a, b = series.get("plain " + pat), series.get("account " + pat)
            if a and b:
                parts.append("%s: plain %.2f account %.2f ns (%.2fx)" % (
                    label, med(a), med(b), med(b) / med(a)))
        return "; ".join(parts)
    if bench == "B6":
        return "; ".join("%s %.2f ns" % (label, med(series["plain " + pat]))
                         for pat, label in B56_PATTERNS if series.get("plain " + pat))
    if bench == "B-debug":
        return "; ".join("%s %.2f ns, other cache %.2f ns" % (
            label, med(series["plain " + pat]), med(series["other " + pat]))
            for pat, label in B56_PATTERNS
            if series.get("plain " + pat) and series.get("other " + pat))
    if bench == "B2":
        parts = []
        for mode, label in B2_MODES:
            m = series.get(mode, {})
            parts.append("%s %s ns" % (label, " ".join(
                "n=%s:%.2f" % (n, med(m[n])) for n in ("1", "16", "64", "250") if n in m)))
        return "; ".join(parts)
    return "  ".join("%s %.2f" % (v, med(series[v])) for v in B3_VARIANTS if v in series) + " ns"


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def result_summary(bench, res):
    """One progress-line summary of a B7/B-meta/B8/B9 run."""
    if bench == "B8":
        line = "%8.1f ms  peak RSS %7.1f MiB" % (res["time_ns"] / 1e6, res["peak_rss_kb"] / 1024)
        if res.get("workload") == "phases":
            line += "  after frees %.1f MiB (%.0f%% of peak), end %.1f MiB" % (
                res["rss_after_free_kb"] / 1024, res["after_free_frac"] * 100,
                res["rss_phase2_end_kb"] / 1024)
        return line
    if bench == "B9":
        return "held %7.1f MiB  (%.1f KiB/thread; baseline %.1f MiB)" % (
            res["rss_held_kb"] / 1024, res["rss_held_per_thread_kb"],
            res["rss_baseline_kb"] / 1024)
    if bench == "B6-acc":
        total = res.get("total_bytes") or 1
        return "%d sites, %.1f MiB: %s" % (len(res["sites"]), total / 2**20, " ".join(
            "%s:%+.1f%%" % (st["site"].split()[-2], 100.0 * (statistics.median(st["bytes"]) /
                                                           st["exact_bytes"] - 1))
            for st in res["sites"] if st["exact_bytes"] > B6ACC_MIN_SHARE * total))
    if bench == "B7":
        return "; ".join("N=%s: %d slab pages" % (n, p["slab_pages"])
                         for n, p in res.get("points", {}).items())
    return "; ".join("%s: %s, %d B outside" % (c["label"], c["obj_ext"], c["obj_ext_bytes"])
                     for c in res.get("caches", []))


def check_warnings(bench, size, res):
    """Warnings about a run whose premise did not hold (its figures are still
    reported): B5's charge check, B6's allocation-tag check."""
    out = []
    if bench == "B5" and not res.get("charge_check", {}).get("ok", True):
        out.append("B5 %d B: the charge check failed (%s): accounting may not be on"
                   % (size, json.dumps(res.get("charge_check"))))
    if bench in SUITE_BENCHES and res.get("misaligned"):
        out.append("%s %s %s: %d posix_memalign results not aligned as asked%s"
                   % (bench, config_label(bench, size), res.get("label"), res["misaligned"],
                      " (mimalloc 2.0.9's bug for size == alignment of 256..1024, its issue "
                      "#700)" if res.get("label") == "mimalloc" else ""))
    if bench == "B6" and not res.get("tag_check", {}).get("ok", True):
        out.append("B6 %d B %s: profiling %s but the call site %s in allocinfo"
                   % (size, res.get("peer"), {0: "off", 1: "exact", 2: "sampled"}.get(
                       res.get("profiling"), "?"),
                      "does not show up" if res.get("profiling") else "shows up"))
    if bench == "B6-acc" and res.get("exact_check", {}).get("ok") is False:
        out.append("B6-acc %s: exact profiling did not report every site's objects x stride"
                   % res.get("peer"))
    return out


def run_all(peers, configs, mode):
    """Interleaved rounds. Returns (results, failures, crashed)."""
    # results[(bench, size)][peer] = {"samples": [...], "runs": [...]}
    results = {c: {} for c in configs}
    failures = []
    crashed = False
    dead = set()           # (peer, bench, size) that failed: not run again
    warned = set()
    max_rounds = max([rounds_of(b, mode) for b, _ in configs] or [0])
    total = sum(len([p for p in peers_for(b, peers, sz) if not once_peer(b, p[0], rnd)])
                for rnd in range(max_rounds)
                for b, sz in configs if not (b in ONCE and rnd) and rnd < rounds_of(b, mode))
    step = 0
    t_start = time.time()
    for rnd in range(max_rounds):
        for (bench, size) in configs:
            cpeers = peers_for(bench, peers, size)
            if not cpeers or (bench in ONCE and rnd) or rnd >= rounds_of(bench, mode):
                continue
            # rotate the order every round so no peer always runs first
            k = (rnd + configs.index((bench, size))) % len(cpeers)
            order = cpeers[k:] + cpeers[:k]
            for (peer, argv0, extra_env) in order:
                if once_peer(bench, peer, rnd):
                    continue
                step += 1
                key = (peer, bench, size)
                if bench in ("B-meta", "B6-acc"):
                    prefix = "[%3d/%d] round %d/%d  %s  %s" % (
                        step, total, rnd + 1, mode["rounds"], bench, peer)
                elif bench in SUITE_BENCHES + ("B-dfree",):
                    prefix = "[%3d/%d] round %d/%d  %s %-11s %-9s" % (
                        step, total, rnd + 1, rounds_of(bench, mode), bench,
                        config_label(bench, size), peer)
                else:
                    prefix = "[%3d/%d] round %d/%d  %s %4d B  %-9s" % (
                        step, total, rnd + 1, mode["rounds"], bench, size, peer)
                if key in dead:
                    log(prefix + " skipped (failed before)")
                    continue
                res, err = run_one(peer, argv0, extra_env, bench, size, mode)
                if err:
                    dead.add(key)
                    if err.startswith("skipped"):
                        SKIPPED[(bench, size, peer)] = err.split(": ", 2)[-1]
                        log(prefix + " SKIPPED: " + err)
                        continue
                    failures.append(err)
                    if err.startswith("preload-failed"):
                        log(prefix + " SKIPPED: " + err)
                    else:
                        crashed = True
                        log(prefix + " FAILED: " + err)
                    continue
                wb, wsz = size if bench == "B-dfree" else (bench, size)
                for w in check_warnings(wb, wsz, res):
                    if w not in warned:         # once, not every round
                        warned.add(w)
                        log("bench: warning: " + w)
                if bench == "B-dfree":
                    # the round each run belongs to: the per-round ratios
                    res["round"] = rnd
                    slot = results[(bench, size)].setdefault(peer, {"samples": [], "runs": []})
                    slot["runs"].append(res)
                    if size[0] == "B8":
                        log(prefix + " " + result_summary("B8", res))
                    else:
                        slot["samples"].extend(res["samples_ns"])
                        log(prefix + " %9.2f ns  (median of this run's %d samples)" % (
                            statistics.median(res["samples_ns"]), len(res["samples_ns"])))
                    continue
                if bench in ("B7", "B-meta", "B6-acc") + SUITE_BENCHES:
                    slot = results[(bench, size)].setdefault(peer, {"runs": []})
                    slot["runs"].append(res)
                    log(prefix + " " + result_summary(bench, res))
                    continue
                if bench in OWN:
                    slot = results[(bench, size)].setdefault(
                        peer, {"series": {}, "runs": []})
                    add_series(slot["series"], res["series"])
                    slot["runs"].append(res)
                    log(prefix + " " + series_summary(bench, res["series"]))
                    continue
                slot = results[(bench, size)].setdefault(
                    peer, {"samples": [], "runs": []})
                slot["samples"].extend(res["samples_ns"])
                slot["runs"].append(res)
                log(prefix + " %9.2f ns  (median of this run's %d samples)" % (
                    statistics.median(res["samples_ns"]), len(res["samples_ns"])))
    log("bench: %d runs in %.1f s" % (step, time.time() - t_start))
    return results, failures, crashed


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------

def series_prefix(series):
    """How a target of @series is named: uslub's as before (no prefix), the
    cpu-slab mode's with "uslub-cpuslabs " in front."""
    return "" if series == "uslub" else series + " "


# B1's malloc row: uslub-malloc / the best malloc <= B1_MALLOC_LIMIT at
# the sizes B1_MALLOC_SIZES (the issue's malloc(64)); informational at the
# other sizes.
B1_MALLOC_LIMIT = 0.8
B1_MALLOC_SIZES = (64,)


def target_checks(bench, med, size=None):
    """Targets of SPEC §3 for one benchmark and size: list of dicts. One set
    per uslub mode (USLUB_SERIES; "series" says which): uslub's always, the
    cpu-slab mode's when it was measured; B1: and uslub-malloc's, when it
    was measured."""
    checks = []
    for series in USLUB_SERIES:
        if series != "uslub" and series not in med:
            continue
        checks += series_checks(bench, med, series)
    if bench == "B1" and USLUB_MALLOC in med:
        mallocs = {p: med[p] for p in MALLOCS if p in med}
        c = {"target": "%s malloc(%s)+free <= %.1fx the best malloc" % (
            USLUB_MALLOC, size, B1_MALLOC_LIMIT), "series": USLUB_MALLOC,
             "limit": B1_MALLOC_LIMIT}
        if size not in B1_MALLOC_SIZES:
            c["informational"] = True
        if not mallocs:
            c.update(peer="best malloc", ratio=None, peer_ns=None, pass_=None,
                     note="not measured (no malloc peer)")
        else:
            best = min(mallocs, key=mallocs.get)
            r = med[USLUB_MALLOC] / mallocs[best]
            c.update(target=c["target"] + " (%s)" % best, peer=best, ratio=round(r, 4),
                     peer_ns=round(mallocs[best], 4), pass_=r <= B1_MALLOC_LIMIT)
        c["pass"] = c.pop("pass_")
        checks.append(c)
    return checks


def series_checks(bench, med, series):
    u = med.get(series)
    pre = series_prefix(series)
    checks = []

    def check(name, peer, peer_ns, limit):
        c = {"target": pre + name, "series": series, "peer": peer, "limit": limit}
        if u is None or peer_ns is None:
            c.update(ratio=None, peer_ns=peer_ns, pass_=None,
                     note="not measured (%s missing)" % (series if u is None else peer))
        else:
            ratio = u / peer_ns
            c.update(ratio=round(ratio, 4), peer_ns=round(peer_ns, 4),
                     pass_=ratio <= limit)
        c["pass"] = c.pop("pass_")
        checks.append(c)

    if bench == "B1":
        check("<= 1.0x DPDK single get+put", "dpdk", med.get("dpdk"), 1.0)
        mallocs = {p: med[p] for p in MALLOCS if p in med}
        if mallocs:
            best = min(mallocs, key=mallocs.get)
            check("<= 0.8x the best malloc (%s)" % best, best, mallocs[best], 0.8)
            if series == "uslub" and med.get("uslub-hardened") is not None:
                # informational: hardening for every cache, cpu-slab ones too
                h = med["uslub-hardened"] / mallocs[best]
                checks.append({"target": "hardened <= 0.8x the best malloc (%s)" % best,
                               "series": "uslub-hardened", "peer": best, "limit": 0.8,
                               "ratio": round(h, 4), "peer_ns": round(mallocs[best], 4),
                               "pass": h <= 0.8, "informational": True})
        else:
            check("<= 0.8x the best malloc", "best malloc", None, 0.8)
    elif bench == "B4":
        check("<= %.1fx %s" % (B4_LIMIT, B4_VS), B4_VS, med.get(B4_VS), B4_LIMIT)
    return checks


def verdict_of(checks):
    """True when every check passed, False when one failed, None when
    something was not measured."""
    verdicts = [t["pass"] for t in checks if not t.get("informational")]
    if any(v is False for v in verdicts):
        return False
    if verdicts and all(v is True for v in verdicts):
        return True
    return None


def ratio_check(name, num, den, limit, **extra):
    """A target of the form num / den <= limit (num, den: medians or None)."""
    c = {"target": name, "limit": limit}
    c.update(extra)
    if num is None or den is None:
        c.update(ratio=None, pass_=None, note="not measured")
    else:
        c.update(ratio=round(num / den, 4), pass_=num / den <= limit)
    c["pass"] = c.pop("pass_")
    return c


def stats_of(xs):
    return {"median": round(statistics.median(xs), 4),
            "p25": round(quantile(xs, 0.25), 4), "p75": round(quantile(xs, 0.75), 4)}


def run_extras(runs, drop=("samples_ns", "series", "bench", "peer", "size")):
    return [{k: v for k, v in r.items() if k not in drop} for r in runs]


def analyse_b2(per, size):
    """B2: per[peer]["series"][mode][n] = samples. Series are named
    "<peer> bulk" and "<peer> one-by-one"."""
    ns = B2_NS
    caps = {}
    for p in B2_PEERS:
        if p in per and p.startswith("uslub"):
            caps[p] = sorted({r.get("sheaf_capacity") for r in per[p]["runs"]},
                             key=lambda x: -1 if x is None else x)
    entry = {"title": BENCH_TITLES["B2"], "unit": BENCH_UNITS["B2"], "size": size,
             "ns": ns, "sheaves_asked": dict(B2_SHEAVES),
             "modes": {p: USLUB_MODE[p] for p in USLUB_SERIES if p in per},
             "sheaf_capacity": caps, "n": {},
             "runs": {p: run_extras(per[p]["runs"]) for p in B2_PEERS if p in per}}
    checks_all = []
    for n in ns:
        key = str(n)
        med, p25, p75, samples = {}, {}, {}, {}
        for p in B2_PEERS:
            for mode, label in B2_MODES:
                xs = per.get(p, {}).get("series", {}).get(mode, {}).get(key)
                if not xs:
                    continue
                name = "%s %s" % (p, label)
                st = stats_of(xs)
                med[name], p25[name], p75[name] = st["median"], st["p25"], st["p75"]
                samples[name] = xs
        ratios = {}

        def ratio(a, b):
            if a in med and b in med:
                ratios["%s / %s" % (a, b)] = round(med[a] / med[b], 4)
        for p in B2_PEERS:
            ratio("%s bulk" % p, "%s one-by-one" % p)
        for p in USLUB_SERIES:
            ratio("%s bulk" % p, "dpdk bulk")
            ratio("%s one-by-one" % p, "dpdk one-by-one")
        checks = []
        for p in USLUB_SERIES:
            if p not in per:
                continue
            if n >= 16:
                checks.append(ratio_check(
                    "%s bulk <= 1.0x DPDK bulk" % p, med.get("%s bulk" % p),
                    med.get("dpdk bulk"), 1.0, n=n, series=p, peer="dpdk",
                    kind="vs_dpdk"))
            if 8 <= n <= 64:
                checks.append(ratio_check(
                    "%s bulk >= 2x faster than one-by-one" % p, med.get("%s bulk" % p),
                    med.get("%s one-by-one" % p), 0.5, n=n, series=p,
                    peer="%s one-by-one" % p, kind="vs_single"))
        checks_all += checks
        entry["n"][key] = {"median_ns": med, "p25_ns": p25, "p75_ns": p75,
                           "samples_ns": samples, "ratios": ratios, "targets": checks}
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_b3(results, sizes):
    """B3: per size, results[("B3", size)]["uslub"]["series"][variant]["all"]."""
    entry = {"title": BENCH_TITLES["B3"], "unit": BENCH_UNITS["B3"], "sizes": {}}
    checks_all = []
    for size in sizes:
        per = results[("B3", size)].get("uslub")
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {},
             "batch": {}, "ratios": {}, "delta_pct": {}, "targets": [], "fresh": None}
        if per:
            for v in B3_VARIANTS:
                xs = per["series"].get(v, {}).get("all")
                if not xs:
                    continue
                st = stats_of(xs)
                s["median_ns"][v], s["p25_ns"][v], s["p75_ns"][v] = \
                    st["median"], st["p25"], st["p75"]
                s["samples_ns"][v] = xs
            runs = per["runs"]
            for v in B3_VARIANTS:
                info = [r.get("variants", {}).get(v, {}) for r in runs]
                if info and info[0]:
                    s["batch"][v] = info[0].get("batch")
            s["fresh"] = all(i.get("fresh", False) for r in runs
                             for i in r.get("variants", {}).values())
            s["bytes_per_round"] = runs[0].get("bytes") if runs else None
            s["runs"] = run_extras(runs)
        med = s["median_ns"]
        for rnd in ("norandom", "random"):
            e, d = med.get("eager-" + rnd), med.get("deferred-" + rnd)
            if e is not None and d is not None:
                s["ratios"]["deferred-%s / eager-%s" % (rnd, rnd)] = round(d / e, 4)
                s["delta_pct"][rnd] = round((d / e - 1) * 100, 2)
            lim = B3_LIMITS[rnd]
            s["targets"].append(ratio_check(
                "deferred <= %.2fx eager (random %s)" % (lim, "off" if rnd == "norandom" else "on"),
                d, e, lim, random=rnd == "random"))
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def caches_of(runs):
    """The cache layouts a B5/B6 run reported (of its first run)."""
    return runs[0].get("caches", {}) if runs else {}


def paired_ratios(runs, num, den):
    """Per-sample ratios num/den inside each B5 process (the two caches'
    samples of one repeat ran back to back): a cross-check of the ratio of
    medians that drift between processes cannot touch."""
    out = []
    for r in runs:
        a, b = r.get("series", {}).get(num), r.get("series", {}).get(den)
        if a and b:
            out += [x / y for x, y in zip(a, b) if y]
    return out


def analyse_b5(results, sizes):
    """B5: per size, results[("B5", size)]["uslub"]["series"]["<cache> <pattern>"]
    ["all"], cache plain or account, pattern pair or batch."""
    entry = {"title": BENCH_TITLES["B5"], "unit": BENCH_UNITS["B5"], "batch": B56_BATCH,
             "limits": dict(B5_LIMITS), "sizes": {}}
    checks_all = []
    for size in sizes:
        per = results[("B5", size)].get("uslub")
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {}, "ratios": {},
             "paired_ratio_median": {}, "targets": [], "caches": {}, "charge_check_ok": None}
        if per:
            for name, xs in per["series"].items():
                st = stats_of(xs["all"])
                s["median_ns"][name], s["p25_ns"][name], s["p75_ns"][name] = \
                    st["median"], st["p25"], st["p75"]
                s["samples_ns"][name] = xs["all"]
            s["caches"] = {k: {f: v.get(f) for f in LAYOUT_FIELDS}
                           for k, v in caches_of(per["runs"]).items()}
            s["charge_check_ok"] = all(r.get("charge_check", {}).get("ok", False)
                                       for r in per["runs"])
            s["runs"] = run_extras(per["runs"])
        med = s["median_ns"]
        for pat, label in B56_PATTERNS:
            a, p_ = med.get("account " + pat), med.get("plain " + pat)
            if a is not None and p_ is not None:
                s["ratios"]["account / plain, " + pat] = round(a / p_, 4)
                pr = paired_ratios(per["runs"], "account " + pat, "plain " + pat)
                if pr:
                    s["paired_ratio_median"][pat] = round(statistics.median(pr), 4)
            s["targets"].append(ratio_check(
                "accounted <= %.2fx plain (%s)" % (B5_LIMITS[pat], label), a, p_,
                B5_LIMITS[pat], pattern=pat))
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_b6(results, sizes):
    """B6: per size, results[("B6", size)][peer]["series"]["plain <pattern>"]
    ["all"], peer uslub-prof-on (exact), uslub-prof-sample (sampled) or
    uslub-prof-off. Series "<peer> <pattern>"; ratios "on / off, <pattern>"
    and "sample / off, <pattern>"; round_ratios[peer][pattern]."""
    entry = {"title": BENCH_TITLES["B6"], "unit": BENCH_UNITS["B6"], "batch": B56_BATCH,
             "limits": {p: dict(l) for p, l in B6_LIMITS.items()},
             "modes": {p: {"USLUB_PROFILING": v, "mode": B6_MODE[p],
                           "expect_profiling": B6_EXPECT[p]} for p, v in B6_PEERS},
             "sizes": {}}
    checks_all = []
    off = B6_BASE
    for size in sizes:
        per = results[("B6", size)]
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {}, "ratios": {},
             "round_ratios": {}, "targets": [], "caches": {}, "tag_check_ok": None,
             "profiling": {}, "skipped": {}}
        for peer, _ in B6_PEERS:
            if peer not in per:
                why = SKIPPED.get(("B6", size, peer))
                if why:
                    s["skipped"][peer] = why
                continue
            for pat, _ in B56_PATTERNS:
                xs = per[peer]["series"].get("plain " + pat, {}).get("all")
                if not xs:
                    continue
                name = "%s %s" % (peer, pat)
                st = stats_of(xs)
                s["median_ns"][name], s["p25_ns"][name], s["p75_ns"][name] = \
                    st["median"], st["p25"], st["p75"]
                s["samples_ns"][name] = xs
            s["caches"][peer] = {f: caches_of(per[peer]["runs"]).get("plain", {}).get(f)
                                 for f in LAYOUT_FIELDS}
            # what each process said it ran (uslub_profiling_enabled())
            s["profiling"][peer] = sorted({r.get("profiling") for r in per[peer]["runs"]},
                                          key=str)
        present = [p for p, _ in B6_PEERS if p in per]
        if present:
            s["tag_check_ok"] = all(r.get("tag_check", {}).get("ok", False)
                                    for p in present for r in per[p]["runs"])
            s["runs"] = {p: run_extras(per[p]["runs"]) for p in present}
        med = s["median_ns"]
        for peer, key in (("uslub-prof-on", "on"), ("uslub-prof-sample", "sample")):
            what = "exact" if key == "on" else "sampled"
            for pat, label in B56_PATTERNS:
                a, b = med.get("%s %s" % (peer, pat)), med.get("%s %s" % (off, pat))
                if a is not None and b is not None:
                    s["ratios"]["%s / off, %s" % (key, pat)] = round(a / b, 4)
                    # round by round: the processes of one round ran back to back
                    s["round_ratios"].setdefault(peer, {})[pat] = [
                        round(statistics.median(x["series"]["plain " + pat]) /
                              statistics.median(y["series"]["plain " + pat]), 4)
                        for x, y in zip(per[peer]["runs"], per[off]["runs"])]
                limit = B6_LIMITS[peer][pat]
                c = ratio_check("%s profiling <= %.2fx off (%s)" % (what, limit, label), a, b,
                                limit, pattern=pat, peer=peer)
                if peer in s["skipped"]:
                    c["note"] = "skipped: " + s["skipped"][peer].split(" (")[0]
                s["targets"].append(c)
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_b6acc(results):
    """B6-acc: results[("B6-acc", 0)][peer]["runs"], peer uslub-prof-on (the
    exact figures, first round) and uslub-prof-sample (estimates, every
    round). Per site: the exact bytes, every estimate (rounds x repeats),
    their median and mean, the median's error, and the target for the
    sites holding more than B6ACC_MIN_SHARE of the bytes."""
    per = results.get(("B6-acc", 0), {})
    exact_peer, sample_peer = B6ACC_PEERS[0][0], B6ACC_PEERS[1][0]
    entry = {"title": BENCH_TITLES["B6-acc"], "unit": BENCH_UNITS["B6-acc"],
             "limit": B6ACC_LIMIT, "min_share": B6ACC_MIN_SHARE, "sites": {}, "targets": []}
    ex = per.get(exact_peer, {}).get("runs", [])
    sa = per.get(sample_peer, {}).get("runs", [])
    why = SKIPPED.get(("B6-acc", 0, sample_peer))
    if why:
        entry["skipped"] = why
    if not ex:
        why_ex = SKIPPED.get(("B6-acc", 0, exact_peer))
        entry["targets"].append({"target": "sampled estimate within %.0f%% of exact, every site "
                                 "> %.0f%% of the bytes" % (B6ACC_LIMIT * 100,
                                                           B6ACC_MIN_SHARE * 100),
                                 "ratio": None, "pass": None,
                                 "note": "the exact run is missing" +
                                 (" (skipped: %s)" % why_ex if why_ex else "")})
        entry["pass"] = None
        return entry
    if why:
        # one row, not one per site
        entry["targets"].append({"target": "every site > %.0f%%: sampled within %.0f%% of exact"
                                 % (B6ACC_MIN_SHARE * 100, B6ACC_LIMIT * 100),
                                 "ratio": None, "pass": None,
                                 "note": "skipped: " + why.split(" (")[0]})
    first = ex[0]
    total = first["total_bytes"]
    entry.update(total_bytes=total, objects=first["objects"],
                 exact_check_ok=all(r.get("exact_check", {}).get("ok") for r in ex),
                 sample_rate=(sa[0].get("sample_rate") if sa else None),
                 sample_runs=len(sa), repeats=(sa[0].get("repeats") if sa else None),
                 sample_env=dict(B6ACC_PEERS)[sample_peer])
    for i, st in enumerate(first["sites"]):
        exact = st["exact_bytes"]
        site = {"line": st["line"], "objects": st["objects"], "stride": st["stride"],
                "exact_bytes": exact, "share": round(exact / total, 4),
                "exact_reported": statistics.median(st["bytes"])}
        ests = [x for r in sa for x in r["sites"][i]["bytes"]]
        if ests:
            m = statistics.median(ests)
            site.update(estimates=ests, median=m, mean=round(statistics.mean(ests), 1),
                        error=round(abs(m / exact - 1), 4),
                        mean_error=round(abs(statistics.mean(ests) / exact - 1), 4))
            rate = entry.get("sample_rate")
            if rate:
                # one estimate's relative spread for Poisson-like sampling
                site["one_run_sigma"] = round(math.sqrt(rate / exact), 4)
        entry["sites"][st["site"]] = site
        if exact / total > B6ACC_MIN_SHARE and not why:
            c = {"target": "%s: sampled within %.0f%% of exact" % (st["site"], B6ACC_LIMIT * 100),
                 "limit": B6ACC_LIMIT, "site": st["site"]}
            if ests:
                c.update(ratio=site["error"], **{"pass": site["error"] <= B6ACC_LIMIT})
            else:
                c.update(ratio=None, note="not measured", **{"pass": None})
            entry["targets"].append(c)
    entry["pass"] = verdict_of(entry["targets"])
    return entry


def round_paired_ratios(num_runs, den_runs, series):
    """Per-sample ratios between the two processes of each round (sample r
    of one against sample r of the other: they ran back to back)."""
    out = []
    for x, y in zip(num_runs, den_runs):
        out += [a / b for a, b in zip(x["series"][series], y["series"][series]) if b]
    return out


def analyse_bdebug(results, sizes):
    """B-debug: per size, results[("B-debug", size)][peer]["series"]
    ["<cache> <pattern>"]["all"], peer uslub-nodebug or uslub-debug-other,
    cache plain (timed against the target; never a debug cache) or other (a
    debug cache in uslub-debug-other only). Series "<peer> <pattern>" and
    "<peer> other <pattern>"."""
    entry = {"title": BENCH_TITLES["B-debug"], "unit": BENCH_UNITS["B-debug"],
             "batch": B56_BATCH, "limit": BDEBUG_LIMIT, "debug_spec": BDEBUG_SPEC,
             "sizes": {}}
    checks_all = []
    other_iters = set()
    nodebug, debug = BDEBUG_PEERS[0][0], BDEBUG_PEERS[1][0]
    for size in sizes:
        per = results[("B-debug", size)]
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {}, "ratios": {},
             "paired_ratio_median": {}, "targets": [], "caches": {}}
        for peer, _ in BDEBUG_PEERS:
            if peer not in per:
                continue
            for pat, _ in B56_PATTERNS:
                for cache, name in (("plain", "%s %s" % (peer, pat)),
                                    ("other", "%s other %s" % (peer, pat))):
                    xs = per[peer]["series"].get("%s %s" % (cache, pat), {}).get("all")
                    if not xs:
                        continue
                    st = stats_of(xs)
                    s["median_ns"][name], s["p25_ns"][name], s["p75_ns"][name] = \
                        st["median"], st["p25"], st["p75"]
                    s["samples_ns"][name] = xs
            s["caches"][peer] = {k: {f: v.get(f) for f in ("name", "debug") + LAYOUT_FIELDS}
                                 for k, v in caches_of(per[peer]["runs"]).items()}
        if nodebug in per and debug in per:
            s["runs"] = {p: run_extras(per[p]["runs"]) for p in (nodebug, debug)}
        other_iters |= {r.get("other_iters") for v in per.values() for r in v["runs"]}
        med = s["median_ns"]
        for pat, label in B56_PATTERNS:
            a, b = med.get("%s %s" % (debug, pat)), med.get("%s %s" % (nodebug, pat))
            if a is not None and b is not None:
                s["ratios"]["debug-other / nodebug, " + pat] = round(a / b, 4)
                pr = round_paired_ratios(per[debug]["runs"], per[nodebug]["runs"],
                                         "plain " + pat)
                if pr:
                    s["paired_ratio_median"][pat] = round(statistics.median(pr), 4)
            d, p_ = med.get("%s other %s" % (debug, pat)), med.get("%s other %s" % (nodebug, pat))
            if d is not None and p_ is not None:
                s["ratios"]["debug cache / plain, " + pat] = round(d / p_, 4)
            s["targets"].append(ratio_check(
                "non-debug cache with a debug cache present <= %.2fx none (%s)" % (
                    BDEBUG_LIMIT, label), a, b, BDEBUG_LIMIT, pattern=pat))
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["other_iters"] = sorted(other_iters - {None})
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_bdfree(results, subs, mode):
    """B-dfree: per (sub-bench, size or workload), results[("B-dfree", sub)]
    [peer]: B1's samples ("samples") or B8's runs ("runs", time_ns), peer
    uslub (with the free mark) or uslub-nomark (without). Per row: the
    medians, with / without, the cost in %, and the ratios of the two
    processes of each round; the geometric means of the B1 and the B8
    rows."""
    mark, nomark = BDFREE_PEERS
    entry = {"title": BENCH_TITLES["B-dfree"], "unit": BENCH_UNITS["B-dfree"],
             "peers": {mark: "with the free mark (as built)",
                       nomark: "the same core compiled with USLUB_NO_FREE_MARK"},
             "rounds": mode["Bdfree_rounds"], "B1_iters": mode["B1_iters"],
             "B8_scale": mode["B8_scale"], "rows": {}, "geomean": {}, "targets": [],
             "note": "no target: what the double-free check costs", "pass": None}
    for sub in subs:
        b, x = sub
        per = results[("B-dfree", sub)]
        row = {"bench": b, "size" if b == "B1" else "workload": x,
               "unit": "ns per alloc+free pair" if b == "B1" else "ms per workload run",
               "median": {}, "p25": {}, "p75": {}, "rounds": {}, "round_values": {},
               "runs": {}}
        by_round = {}
        for p in BDFREE_PEERS:
            runs = per.get(p, {}).get("runs")
            if not runs:
                continue
            if b == "B1":
                xs = per[p]["samples"]
                rv = [statistics.median(r["samples_ns"]) for r in runs]
            else:
                xs = rv = [r["time_ns"] / 1e6 for r in runs]
                rs = [r["peak_rss_kb"] / 1024 for r in runs]
                row.setdefault("peak_rss_mib", {})[p] = round(statistics.median(rs), 3)
            st = stats_of(xs)
            row["median"][p], row["p25"][p], row["p75"][p] = st["median"], st["p25"], st["p75"]
            # the fastest sample: other load only adds time
            row.setdefault("min", {})[p] = round(min(xs), 4)
            row["rounds"][p] = len(runs)
            row["round_values"][p] = [round(v, 4) for v in rv]
            by_round[p] = {r.get("round"): v for r, v in zip(runs, rv)}
            if b == "B1":
                row["samples_ns"] = dict(row.get("samples_ns", {}), **{p: xs})
            row["runs"][p] = run_extras(runs, drop=("samples_ns", "bench", "peer", "size",
                                                    "workload", "label"))
        if not row["median"]:
            continue
        med = row["median"]
        if mark in med and nomark in med:
            r = med[mark] / med[nomark]
            row["ratio"] = round(r, 4)
            row["cost_pct"] = round((r - 1) * 100, 2)
            rr = [by_round[mark][k] / by_round[nomark][k] for k in sorted(by_round[mark])
                  if k in by_round[nomark] and by_round[nomark][k]]
            row["round_ratios"] = [round(v, 4) for v in rr]
            if rr:
                row["round_ratio_median"] = round(statistics.median(rr), 4)
            if "peak_rss_mib" in row and row["peak_rss_mib"].get(nomark):
                row["rss_ratio"] = round(row["peak_rss_mib"][mark] /
                                         row["peak_rss_mib"][nomark], 4)
        entry["rows"][config_label("B-dfree", sub)] = row
    for b in ("B1", "B8"):
        rows = [r for r in entry["rows"].values() if r["bench"] == b and "ratio" in r]
        if not rows:
            continue
        g = geomean([r["ratio"] for r in rows])
        gr = [r["round_ratio_median"] for r in rows if "round_ratio_median" in r]
        entry["geomean"][b] = {
            "ratio": round(g, 4), "cost_pct": round((g - 1) * 100, 2),
            "round_ratio_median": round(geomean(gr), 4) if len(gr) == len(rows) else None,
            "rows": len(rows), "of": len([s_ for s_ in subs if s_[0] == b])}
    return entry


LAYOUT_FIELDS = ("object_size", "stride", "align", "objs_per_slab", "order",
                 "pages_per_slab", "obj_ext", "obj_ext_size", "obj_ext_bytes",
                 "sheaf_capacity")
B7_POINT_FIELDS = ("caches", "objects", "slabs", "slab_pages", "slab_bytes",
                   "slot_objects", "ext_bytes_outside", "page_provider_bytes_in_slabs_delta",
                   "group_usage_sum", "group0_charged_objects", "group0_charged_bytes",
                   "setup_ms")


def analyse_b7(results, sizes):
    """B7: per size and N, the slab pages of both modes (median over the
    rounds; a layout is deterministic, so min and max show whether any
    round differed) and the saving 1 - shared / per-group."""
    entry = {"title": BENCH_TITLES["B7"], "unit": BENCH_UNITS["B7"], "objs_per_group": B7_OBJS,
             "groups": B7_GROUPS, "min_saving": B7_MIN_SAVING, "sizes": {}}
    checks_all = []
    for size in sizes:
        per = results[("B7", size)]
        s = {"groups": {}, "targets": []}
        for n in B7_GROUPS:
            key = str(n)
            pt = {}
            for m in B7_MODES:
                pts = [r["points"][key] for r in per.get(m, {}).get("runs", [])
                       if key in r.get("points", {})]
                if not pts:
                    continue
                pages = [x["slab_pages"] for x in pts]
                d = {f: pts[0].get(f) for f in B7_POINT_FIELDS}
                d.update(slab_pages=statistics.median(pages),
                         slab_pages_range=[min(pages), max(pages)], runs=len(pts),
                         layout=pts[0].get("layout"))
                d["setup_ms"] = round(statistics.median(x["setup_ms"] for x in pts), 2)
                pt[m] = d
            sh, pg = pt.get("shared"), pt.get("per-group")
            if sh and pg and pg["slab_pages"]:
                pt["saving_pct"] = round((1 - sh["slab_pages"] / pg["slab_pages"]) * 100, 2)
                # the same with the extension bytes kept outside the slabs
                with_ext = (sh["slab_bytes"] + sh["ext_bytes_outside"]) / \
                    (pg["slab_bytes"] + pg["ext_bytes_outside"])
                pt["saving_with_ext_pct"] = round((1 - with_ext) * 100, 2)
            c = ratio_check(">= %d%% fewer slab pages shared (N=%d)" % (
                B7_MIN_SAVING * 100, n), sh["slab_pages"] if sh else None,
                pg["slab_pages"] if pg else None, 1 - B7_MIN_SAVING, groups=n)
            c["saving_pct"] = pt.get("saving_pct")
            s["targets"].append(c)
            s["groups"][key] = pt
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_bmeta(results):
    """B-meta: one row per cache of BMETA_CACHES, with the saving of an
    in-slab placement: the extension bytes per object an array would have
    cost (obj_ext_size) less what the cache keeps outside (obj_ext_bytes)."""
    entry = {"title": BENCH_TITLES["B-meta"], "unit": BENCH_UNITS["B-meta"],
             "note": "no SPEC target: a layout report", "caches": [], "pass": None}
    runs = results.get(("B-meta", 0), {}).get("uslub", {}).get("runs", [])
    if not runs:
        return entry
    expected = {label: kind for label, _, kind in BMETA_CACHES}
    specs = {label: spec for label, spec, _ in BMETA_CACHES}
    for c in runs[0].get("caches", []):
        in_slab = c["obj_ext"] in ("leftover", "padding")
        saving = c["obj_ext_size"] - c["obj_ext_bytes"] if in_slab else 0
        plain = c.get("plain", {})
        row = {k: c.get(k) for k in ("label",) + LAYOUT_FIELDS + (
            "hwcache_align", "align_asked", "slab_bytes", "leftover_bytes", "padding_bytes",
            "charged_objects", "charged_bytes")}
        row.update(spec=specs.get(c["label"]), seed003_kind=expected.get(c["label"]),
                   matches_seed003=c["obj_ext"] == expected.get(c["label"]),
                   in_slab=in_slab, saving_bytes_per_object=saving,
                   saving_pct_of_stride=round(saving * 100.0 / c["stride"], 2),
                   saving_bytes_per_slab=saving * c["objs_per_slab"],
                   same_layout_as_plain=(plain.get("stride") == c["stride"] and
                                         plain.get("objs_per_slab") == c["objs_per_slab"] and
                                         plain.get("order") == c["order"]),
                   plain={f: plain.get(f) for f in LAYOUT_FIELDS})
        entry["caches"].append(row)
    entry["profiling"] = runs[0].get("profiling")
    return entry


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def analyse_b8(results, workloads, mode):
    """B8: per workload and peer, the median time and peak RSS over the
    rounds; uslub's ratios to each peer; their geometric means over the
    workloads, checked against the targets for B8_VS."""
    geo_ws = [w for w in workloads if w != B8_LARGE]
    entry = {"title": BENCH_TITLES["B8"], "unit": BENCH_UNITS["B8"],
             "scale": mode["B8_scale"], "phase1_mib": mode["B8_phase1_mib"],
             "purge_ms": mode["B8_purge_ms"], "returned_below": B8_RETURNED,
             "time_limits": {p: lim for p, lim in B8_TIME_VS},
             "worst_vs": B8_WORST_VS, "worst_limit": B8_WORST_LIMIT,
             "rss_vs": B8_RSS_VS, "rss_limit": B8_RSS_LIMIT,
             "large_vs": B8_LARGE_VS, "large_limit": B8_LARGE_LIMIT,
             "geomean_workloads": geo_ws, "workloads": {}}
    for w in workloads:
        per = results[("B8", w)]
        s = {"what": B8_WHAT.get(w, ""), "time_ms": {}, "time_ms_p25": {}, "time_ms_p75": {},
             "peak_rss_mib": {}, "peak_rss_mib_range": {}, "minflt": {}, "time_ratio": {},
             "rss_ratio": {}, "rounds": {}, "runs": {}}
        for p in SUITE_PEERS:
            runs = per.get(p, {}).get("runs")
            if not runs:
                continue
            ts = [r["time_ns"] / 1e6 for r in runs]
            rs = [r["peak_rss_kb"] / 1024 for r in runs]
            s["time_ms"][p] = round(statistics.median(ts), 3)
            s["time_ms_p25"][p] = round(quantile(ts, 0.25), 3)
            s["time_ms_p75"][p] = round(quantile(ts, 0.75), 3)
            s["peak_rss_mib"][p] = round(statistics.median(rs), 3)
            s["peak_rss_mib_range"][p] = [round(min(rs), 3), round(max(rs), 3)]
            # minor page faults of the workload function (older binaries: none)
            if all("minflt" in r for r in runs):
                s["minflt"][p] = statistics.median(r["minflt"] for r in runs)
            s["rounds"][p] = len(runs)
            s["runs"][p] = run_extras(runs, drop=("workload", "label", "malloc_lib"))
            if w == "phases":
                def med(key):
                    return statistics.median(r[key] for r in runs)
                frac = med("after_free_frac")
                s.setdefault("phases", {})[p] = {
                    "rss_phase1_peak_mib": round(med("rss_phase1_peak_kb") / 1024, 2),
                    "rss_after_free_nowait_mib": round(med("rss_after_free_nowait_kb") / 1024, 2),
                    "rss_after_free_mib": round(med("rss_after_free_kb") / 1024, 2),
                    "rss_phase2_end_mib": round(med("rss_phase2_end_kb") / 1024, 2),
                    "after_free_frac": round(frac, 4),
                    "memory_returned": frac < B8_RETURNED,
                    "returned_rounds": sum(1 for r in runs if r.get("memory_returned")),
                }
        # each uslub mode against the other peers: "time_ratio"/"rss_ratio"
        # are uslub's (the default mode); "series_ratios" the other modes'
        # ({mode: {"time": {peer: r}, "rss": {peer: r}}}); "mode_ratio" is
        # uslub / uslub-cpuslabs (time and rss)
        s["series_ratios"] = {}
        for series in USLUB_SERIES:
            if series not in s["time_ms"]:
                continue
            tr, rr = {}, {}
            for p in SUITE_OTHERS:
                if p in s["time_ms"]:
                    tr[p] = round(s["time_ms"][series] / s["time_ms"][p], 4)
                    rr[p] = round(s["peak_rss_mib"][series] / s["peak_rss_mib"][p], 4)
            if series == "uslub":
                s["time_ratio"], s["rss_ratio"] = tr, rr
            else:
                s["series_ratios"][series] = {"time": tr, "rss": rr}
        if w == B8_LARGE:
            # uslub's modes / glibc in time and minor page faults
            s["large_ratios"] = {}
            for series in USLUB_SERIES:
                d = {}
                if series in s["time_ms"] and B8_LARGE_VS in s["time_ms"]:
                    d["time"] = round(s["time_ms"][series] / s["time_ms"][B8_LARGE_VS], 4)
                if series in s["minflt"] and s["minflt"].get(B8_LARGE_VS):
                    d["minflt"] = round(s["minflt"][series] / s["minflt"][B8_LARGE_VS], 4)
                if d:
                    s["large_ratios"][series] = d
        if "uslub" in s["time_ms"] and CPUSLABS in s["time_ms"]:
            s["mode_ratio"] = {
                "time": round(s["time_ms"]["uslub"] / s["time_ms"][CPUSLABS], 4),
                "rss": round(s["peak_rss_mib"]["uslub"] / s["peak_rss_mib"][CPUSLABS], 4)}
        entry["workloads"][w] = s

    def ratios_of(series, w):
        s = entry["workloads"][w]
        if series == "uslub":
            return s["time_ratio"], s["rss_ratio"]
        d = s["series_ratios"].get(series, {})
        return d.get("time", {}), d.get("rss", {})

    # geomean: uslub's (as before); geomean_series: the other modes'. Over
    # geo_ws: the workloads but the large-block row (B8_LARGE), which has
    # its own target against glibc
    entry["geomean"], entry["geomean_series"] = {}, {}
    for series in USLUB_SERIES:
        geo = {}
        for p in SUITE_OTHERS:
            common = [w for w in geo_ws if p in ratios_of(series, w)[0]]
            if not common:
                continue
            worst = max(common, key=lambda w: ratios_of(series, w)[0][p])
            geo[p] = {"time": round(geomean([ratios_of(series, w)[0][p] for w in common]), 4),
                      "rss": round(geomean([ratios_of(series, w)[1][p] for w in common]), 4),
                      "worst_time": ratios_of(series, worst)[0][p], "worst_workload": worst,
                      "workloads": len(common), "of": len(geo_ws)}
        if series == "uslub":
            entry["geomean"] = geo
        elif geo:
            entry["geomean_series"][series] = geo
    both = [w for w in geo_ws if "mode_ratio" in entry["workloads"][w]]
    if both:
        entry["geomean_modes"] = {
            "time": round(geomean([entry["workloads"][w]["mode_ratio"]["time"] for w in both]), 4),
            "rss": round(geomean([entry["workloads"][w]["mode_ratio"]["rss"] for w in both]), 4),
            "workloads": len(both), "of": len(geo_ws)}
    targets = []
    for series in USLUB_SERIES:
        measured = any(series in e["time_ms"] for e in entry["workloads"].values())
        if series != "uslub" and not measured:
            continue
        geo = entry["geomean"] if series == "uslub" else entry["geomean_series"].get(series, {})
        targets += b8_targets(series, geo, measured, entry, geo_ws)
    entry["targets"] = targets
    entry["pass"] = verdict_of(targets)
    return entry


def b8_targets(series, geo, measured, entry, geo_ws):
    """B8's targets for one uslub mode: from its geometric means @geo (over
    @geo_ws), phases' memory return and the large-block row in @entry."""
    targets = []
    pre = series_prefix(series)

    def from_geo(name, p, key, limit, **extra):
        c = {"target": pre + name, "series": series, "peer": p, "metric": key,
             "limit": limit}
        c.update(extra)
        g = geo.get(p)
        if not g:
            c.update(ratio=None, note="not measured (%s missing)" % (
                series if not measured else p))
            c["pass"] = None
        else:
            c["ratio"] = g[key]
            if key == "worst_time":
                c["workload"] = g["worst_workload"]
                c["note"] = "worst: %s" % g["worst_workload"]
            if g["workloads"] < g["of"]:
                c["pass"] = None
                c["note"] = "only %d of %d workloads measured" % (g["workloads"], g["of"])
            else:
                c["pass"] = g[key] <= limit
        targets.append(c)

    for p, limit in B8_TIME_VS:
        from_geo("geometric mean time <= %.1fx %s" % (limit, p), p, "time", limit)
    from_geo("no workload's time above %.1fx %s" % (B8_WORST_LIMIT, B8_WORST_VS),
             B8_WORST_VS, "worst_time", B8_WORST_LIMIT)
    for p in B8_RSS_VS:
        from_geo("geometric mean peak RSS <= %.1fx %s" % (B8_RSS_LIMIT, p), p, "rss",
                 B8_RSS_LIMIT)
    # phases: the memory freed goes back (RSS after the purge wait below
    # B8_RETURNED of the peak)
    c = {"target": "%sphases returns memory (< %d%% of peak after the wait)" % (
        pre, B8_RETURNED * 100), "series": series, "limit": B8_RETURNED, "metric": "returned"}
    ph = entry["workloads"].get("phases", {}).get("phases", {}).get(series)
    if "phases" not in entry["workloads"]:
        c.update(ratio=None, note="not measured (phases not run)", pass_=None)
    elif not ph:
        c.update(ratio=None, note="not measured (%s missing)" % series, pass_=None)
    else:
        c.update(ratio=ph["after_free_frac"], pass_=ph["after_free_frac"] < B8_RETURNED)
    c["pass"] = c.pop("pass_")
    targets.append(c)
    # the large-block row against glibc: time and minor page faults
    lg = entry["workloads"].get(B8_LARGE)
    for key, what in (("time", "time"), ("minflt", "page faults")):
        c = {"target": "%s%s %s <= %.1fx %s" % (pre, B8_LARGE, what, B8_LARGE_LIMIT,
                                                B8_LARGE_VS),
             "series": series, "peer": B8_LARGE_VS, "metric": "large_" + key,
             "limit": B8_LARGE_LIMIT}
        r = (lg or {}).get("large_ratios", {}).get(series, {}).get(key)
        if lg is None:
            c.update(ratio=None, note="not measured (%s not run)" % B8_LARGE, pass_=None)
        elif r is None:
            c.update(ratio=None, note="not measured (%s missing)" % (
                series if series not in lg["time_ms"] else B8_LARGE_VS), pass_=None)
        else:
            c.update(ratio=r, pass_=r <= B8_LARGE_LIMIT)
        c["pass"] = c.pop("pass_")
        targets.append(c)
    return targets


def analyse_b9(results, threads):
    """B9: per peer and thread count, the median RSS held after the threads
    freed everything (above the baseline with the same threads started);
    the growth per thread from the fewest to the most threads, and uslub's
    against B9_VS's."""
    lo, hi = min(threads), max(threads)
    entry = {"title": BENCH_TITLES["B9"], "unit": BENCH_UNITS["B9"], "threads": threads,
             "limit": B9_LIMIT, "min_slope_kb": B9_MIN_SLOPE, "peers": {}}
    fields = ("rss_held_kb", "rss_baseline_kb", "rss_live_kb", "rss_cached_kb",
              "rss_joined_kb", "rss_nothreads_kb")
    for p in SUITE_PEERS:
        d = {f: {} for f in fields}
        d["held_kb_range"], d["rounds"] = {}, {}
        for n in threads:
            runs = results[("B9", n)].get(p, {}).get("runs")
            if not runs:
                continue
            for f in fields:
                d[f][str(n)] = statistics.median(r[f] for r in runs)
            held = [r["rss_held_kb"] for r in runs]
            d["held_kb_range"][str(n)] = [min(held), max(held)]
            d["rounds"][str(n)] = len(runs)
        if not d["rss_held_kb"]:
            continue
        h = d["rss_held_kb"]
        d["held_per_thread_kb"] = {k: round(v / int(k), 2) for k, v in h.items()}
        if str(lo) in h and str(hi) in h and hi > lo:
            d["slope_kb_per_thread"] = round((h[str(hi)] - h[str(lo)]) / (hi - lo), 3)
        entry["peers"][p] = d
    slopes = {p: d["slope_kb_per_thread"] for p, d in entry["peers"].items()
              if "slope_kb_per_thread" in d}
    entry["slope_ratios"] = {}
    if "uslub" in slopes:
        entry["slope_ratios"] = {p: round(slopes["uslub"] / v, 4) for p, v in slopes.items()
                                 if p != "uslub" and v >= B9_MIN_SLOPE}
    c = {"target": "RSS growth per thread <= %.1fx %s's" % (B9_LIMIT, B9_VS),
         "peer": B9_VS, "limit": B9_LIMIT}
    u, m = slopes.get("uslub"), slopes.get(B9_VS)
    if u is None or m is None:
        c.update(ratio=None, note="not measured (%s missing)" % ("uslub" if u is None else B9_VS),
                 pass_=None)
    elif m < B9_MIN_SLOPE:
        # the peer is flat: the ratio means nothing, uslub must be flat too
        c.update(ratio=None, note="%s flat (%.2f KiB/thread); uslub %.2f KiB/thread" % (
            B9_VS, m, u), pass_=u < B9_MIN_SLOPE)
    else:
        c.update(ratio=round(u / m, 4), pass_=u / m <= B9_LIMIT)
    c["slope_kb_per_thread"] = {"uslub": u, B9_VS: m}
    c["pass"] = c.pop("pass_")
    entry["targets"] = [c]
    entry["pass"] = verdict_of(entry["targets"])
    return entry


# B6's instruction counts (callgrind), beside its timings: B6 compares
# processes, whose per-process spread on a VM (ASLR, page placement) is
# larger than the sampled mode's cost, so the same loops are also counted
# under callgrind, which is exact. B6I_ITERS pairs (and objects in
# batches) per process, B6I_WARM first; both loops' instructions
# (inclusive) divided by the pairs or objects they ran.
B6I_ITERS = 200000
B6I_WARM = 20000
B6I_LOOPS = [("pair", "bench_b1_loop"), ("batch", "bench_b2_single_loop")]


def b6_instructions(peers, sizes):
    """{size: {peer: {pattern: instructions per pair/object}}}, or None
    without valgrind (callgrind_annotate) or the uslub peer."""
    if not (shutil.which("valgrind") and shutil.which("callgrind_annotate")):
        return None
    argv0 = next((a for p, a, _ in peers if p == "uslub"), None)
    if not argv0:
        return None
    out = {}
    loops_b = (B6I_ITERS + B56_BATCH - 1) // B56_BATCH
    warm_b = (B6I_WARM + B56_BATCH - 1) // B56_BATCH
    units = {"pair": B6I_WARM + B6I_ITERS, "batch": (warm_b + loops_b) * B56_BATCH}
    for size in sizes:
        for peer, val in B6_PEERS:
            for pat, fn in B6I_LOOPS:
                with tempfile.TemporaryDirectory() as d:
                    f = os.path.join(d, "cg.out")
                    env = dict(os.environ, USLUB_PROFILING=val)
                    r = subprocess.run(
                        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + f,
                         "--toggle-collect=" + fn, argv0, "--bench", "B6", "--size",
                         str(size), "--iters", str(B6I_ITERS), "--warmup", str(B6I_WARM),
                         "--repeats", "1", "--batch", str(B56_BATCH), "--expect-profiling",
                         str(B6_EXPECT[peer])],
                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    if r.returncode != 0 or not os.path.exists(f):
                        return None
                    a = subprocess.run(["callgrind_annotate", f], capture_output=True,
                                       text=True)
                    m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", a.stdout, re.M)
                    if not m:
                        return None
                    ir = int(m.group(1).replace(",", ""))
                out.setdefault(str(size), {}).setdefault(peer, {})[pat] = \
                    round(ir / units[pat], 2)
    return out


def analyse(results, configs, peers, mode):
    out = {}
    if any(b == "B2" for b, _ in configs):
        size = [sz for b, sz in configs if b == "B2"][0]
        out["B2"] = analyse_b2(results[("B2", size)], size)
    b3_sizes = [sz for b, sz in configs if b == "B3"]
    if b3_sizes:
        out["B3"] = analyse_b3(results, b3_sizes)
    for b, fn in (("B5", analyse_b5), ("B6", analyse_b6), ("B7", analyse_b7),
                  ("B-debug", analyse_bdebug)):
        sizes = [sz for b_, sz in configs if b_ == b]
        if sizes:
            out[b] = fn(results, sizes)
            if b == "B6":
                out[b]["instructions"] = b6_instructions(peers, sizes)
    if any(b == "B6-acc" for b, _ in configs):
        out["B6-acc"] = analyse_b6acc(results)
    if any(b == "B-meta" for b, _ in configs):
        out["B-meta"] = analyse_bmeta(results)
    workloads = [w for b, w in configs if b == "B8"]
    if workloads and SUITE:
        out["B8"] = analyse_b8(results, workloads, mode)
    nthreads = [n for b, n in configs if b == "B9"]
    if nthreads and SUITE:
        out["B9"] = analyse_b9(results, nthreads)
    dfree_subs = [sub for b, sub in configs if b == "B-dfree"]
    if dfree_subs and DFREE:
        out["B-dfree"] = analyse_bdfree(results, dfree_subs, mode)
    for (bench, size) in configs:
        if bench in OWN:
            continue
        entry = out.setdefault(bench, {
            "title": BENCH_TITLES[bench],
            "unit": BENCH_UNITS[bench],
            "sizes": {},
        })
        per = results[(bench, size)]
        med = {p: statistics.median(v["samples"]) for p, v in per.items()}
        s = {
            "median_ns": {p: round(med[p], 4) for p in PEER_ORDER if p in med},
            "p25_ns": {p: round(quantile(per[p]["samples"], 0.25), 4)
                       for p in PEER_ORDER if p in per},
            "p75_ns": {p: round(quantile(per[p]["samples"], 0.75), 4)
                       for p in PEER_ORDER if p in per},
            "samples_ns": {p: per[p]["samples"] for p in PEER_ORDER if p in per},
            "ratios": {},
            "targets": target_checks(bench, med, size),
            "runs": {p: [{k: v for k, v in r.items()
                          if k not in ("samples_ns", "bench", "peer", "size")}
                         for r in per[p]["runs"]]
                     for p in PEER_ORDER if p in per},
        }
        if "uslub" in med:
            s["ratios"] = {p: round(med["uslub"] / med[p], 4)
                           for p in PEER_ORDER if p in med and p != "uslub"}
        # the other modes' ratios to every peer but uslub's modes
        s["series_ratios"] = {
            series: {p: round(med[series] / med[p], 4) for p in PEER_ORDER
                     if p in med and p not in USLUB_SERIES + list(USLUB_VARIANTS) +
                     [USLUB_MALLOC]}
            for series in USLUB_SERIES[1:] if series in med}
        # B1: uslub's malloc / each malloc peer (the same loop, both malloc)
        if USLUB_MALLOC in med:
            s["malloc_ratios"] = {p: round(med[USLUB_MALLOC] / med[p], 4)
                                  for p in MALLOCS if p in med}
        entry["sizes"][str(size)] = s
    for bench, entry in out.items():
        if bench in OWN:
            continue
        # informational rows do not count; None: something was not measured
        entry["pass"] = verdict_of([t for s in entry["sizes"].values() for t in s["targets"]])
    return {b: out[b] for b in BENCH_ORDER if b in out}


def fmt_ns(x):
    return "%9.2f" % x if x is not None else "        -"


def target_rows(data):
    """Every target of @data (a run's results, as in bench.json) as a row:
    bench, config ("64 B", "n 16..250" or ""), target, measured, verdict
    and style (how the text table lays it out); benchmarks without a target
    give one "note" row. The text table (print_table) and the README's
    published table (publish_readme) are both made from these rows."""
    rows = []

    def row(bench, target, measured, verdict, style="plain", config="", size=""):
        rows.append({"bench": bench, "config": config, "size": size, "target": target,
                     "measured": measured, "verdict": verdict, "style": style})

    for bench in BENCH_ORDER:
        if bench not in data:
            continue
        if bench == "B2":
            for rng, name, checks in b2_target_groups(data["B2"]):
                measured = [t for t in checks if t["pass"] is not None]
                failed = [t["n"] for t in checks if t["pass"] is False]
                if failed:
                    verdict = "MISS at n = %s" % ",".join(str(n) for n in failed)
                elif measured and len(measured) == len(checks):
                    verdict = "PASS"
                else:
                    verdict = "SKIP"
                if measured:
                    worst = max(measured, key=lambda t: t["ratio"])
                    ratio = "max %.2fx (n %d)" % (worst["ratio"], worst["n"])
                else:
                    ratio = "not measured"
                row("B2", name, ratio, verdict, "b2", rng)
            continue
        if bench == "B-meta":
            row(bench, "no SPEC target (a layout report, above)", "", "", "note")
            continue
        if bench == "B-dfree":
            row(bench, "no target (the double-free check's cost, above)",
                "geomean cost " + ", ".join("%s %+.1f%%" % (b, g["cost_pct"])
                          for b, g in data[bench].get("geomean", {}).items()), "", "note")
            continue
        if bench == "B6-acc":
            for t in data[bench]["targets"]:
                if t["pass"] is None:
                    verdict, ratio = "SKIP", t.get("note", "")
                else:
                    verdict = "PASS" if t["pass"] else "MISS"
                    ratio = "err %.1f%%" % (t["ratio"] * 100)
                row(bench, t["target"], ratio, verdict)
            continue
        if bench == "B-rcu":
            for t in data[bench]["targets"]:
                row(bench, t["target"], "%.3fx" % t["ratio"], "PASS" if t["pass"] else "MISS")
            continue
        if bench in SUITE_BENCHES:
            for t in data[bench]["targets"]:
                if t["pass"] is None:
                    verdict = "SKIP"
                    ratio = ("%.2fx " % t["ratio"] if t.get("ratio") is not None else "") + \
                        t.get("note", "")
                else:
                    verdict = "PASS" if t["pass"] else "MISS"
                    if t.get("metric") == "returned":
                        ratio = "%.0f%% of peak" % (t["ratio"] * 100)
                    else:
                        ratio = "%.3fx" % t["ratio"] if t.get("ratio") is not None else \
                            t.get("note", "")
                    if t.get("workload"):
                        ratio += " (%s)" % t["workload"]
                row(bench, t["target"], ratio, verdict)
            continue
        for size, s in data[bench]["sizes"].items():
            for t in s["targets"]:
                if t["pass"] is None:
                    verdict, ratio = "SKIP", t.get("note", "")
                elif t.get("informational"):
                    verdict = "PASS (informational)" if t["pass"] else "MISS (informational)"
                    ratio = "%.2fx" % t["ratio"]
                else:
                    verdict = "PASS" if t["pass"] else "MISS"
                    ratio = "%.2fx" % t["ratio"]
                    if bench == "B7":
                        ratio = "%.2fx (saving %.1f%%)" % (t["ratio"], t["saving_pct"])
                row(bench, t["target"], ratio, verdict, "size", "%s B" % size, size)
    return rows


def print_table(data):
    """Print the ratio table and return its lines (for bench.md)."""
    lines = []

    def log(line):
        lines.append(line)
        _log(line)

    log("")
    log("uslub vs peers: median ns per operation; ratio = uslub / peer "
        "(< 1.00 means uslub is faster)")
    for bench in BENCH_ORDER:
        if bench not in data:
            continue
        if bench == "B2":
            print_b2(data["B2"], log)
            continue
        if bench == "B3":
            print_b3(data["B3"], log)
            continue
        if bench in OWN_PRINTERS:
            OWN_PRINTERS[bench](data[bench], log)
            continue
        e = data[bench]
        log("")
        log("%s  %s  (%s)" % (bench, e["title"], e["unit"]))
        modes = [m for m in USLUB_SERIES if any(m in s["median_ns"]
                                                 for s in e["sizes"].values())]
        for m in modes:
            log("  %-14s = %s" % (m, USLUB_MODE[m]))
        umalloc = any("malloc_ratios" in s for s in e["sizes"].values())
        if umalloc:
            log("  %-14s = malloc(size) + free, uslub-bench-malloc with LD_PRELOAD of %s "
                "(the malloc peers' loop)" % (USLUB_MALLOC, USLUB_MALLOC_LIB))
        log("  %-6s %-14s %9s %9s %9s %11s%s%s" % (
            "size", "allocator", "median", "p25", "p75", "uslub/peer",
            "".join(" %15s" % ("cpuslabs/peer" if m == CPUSLABS else m + "/peer")
                    for m in modes[1:]),
            " %15s" % "u-malloc/peer" if umalloc else ""))
        for size, s in e["sizes"].items():
            for p in PEER_ORDER:
                if p not in s["median_ns"]:
                    continue
                ratio = "-" if p == "uslub" else "%.2fx" % s["ratios"][p] \
                    if p in s["ratios"] else "-"
                more = ""
                for m in modes[1:]:
                    r = s.get("series_ratios", {}).get(m, {}).get(p)
                    more += " %15s" % ("%.2fx" % r if r is not None else "-")
                if umalloc:
                    r = s.get("malloc_ratios", {}).get(p)
                    more += " %15s" % ("%.2fx" % r if r is not None else "-")
                log(("  %-6s %-14s %s %s %s %11s%s" % (
                    size + " B", p, fmt_ns(s["median_ns"][p]), fmt_ns(s["p25_ns"][p]),
                    fmt_ns(s["p75_ns"][p]), ratio, more)).rstrip())
    log("")
    log("targets (SPEC §3):")
    rows = target_rows(data)
    width = max([36] + [len(r["target"]) for r in rows if r["style"] in ("size", "plain")])
    bwidth = max([2] + [len(r["bench"]) for r in rows if r["style"] in ("size", "plain")])
    for r in rows:
        if r["style"] == "b2":
            log("  B2 %-9s %-57s %-19s %s" % (r["config"], r["target"], r["measured"],
                                             r["verdict"]))
        elif r["style"] == "note":
            log("  %-11s %s" % (r["bench"], r["target"]))
        elif r["style"] == "size":
            log("  %-*s %4s B  %-*s %-8s %s" % (bwidth, r["bench"], r["size"], width,
                                                r["target"], r["measured"], r["verdict"]))
        else:
            log("  %-*s %6s  %-*s %-8s %s" % (bwidth, r["bench"], "", width, r["target"],
                                              r["measured"], r["verdict"]))
    return lines


def fmt_spread(s, name):
    """p25-p75 of one series, as "2.35-2.47"."""
    if name not in s["p25_ns"]:
        return "-"
    return "%.2f-%.2f" % (s["p25_ns"][name], s["p75_ns"][name])


def fmt_ext(c):
    """A cache layout's extension, e.g. "array, 16 B/obj outside"."""
    if not c or c.get("obj_ext") is None:
        return "?"
    if c["obj_ext"] == "none":
        return "none"
    return "%s %d B, %d B/obj outside" % (c["obj_ext"], c.get("obj_ext_size") or 0,
                                          c.get("obj_ext_bytes") or 0)


def print_b5(e, log):
    log("")
    log("%s  %s  (%s)" % ("B5", e["title"], e["unit"]))
    log("  one process per size holds both caches, the thread's current group has no limit; "
        "hot pair = B1's loop, batch = %d allocs then %d frees one by one" % (
            e["batch"], e["batch"]))
    log("  ratio = accounted / plain (ratio of medians); paired = median of the per-sample "
        "ratios inside each process; x! misses the target (%s)" % ", ".join(
            "%s <= %.2fx" % (label, e["limits"][pat]) for pat, label in B56_PATTERNS))
    for size, s in e["sizes"].items():
        c = s.get("caches", {})
        log("  %s B: plain cache extension %s; accounted %s%s" % (
            size, fmt_ext(c.get("plain")), fmt_ext(c.get("account")),
            "" if s.get("charge_check_ok") is not False else
            "  (warning: the charge check failed)"))
    log("  %-6s %-13s %9s %13s %9s %13s %7s %7s" % (
        "size", "pattern", "plain", "p25-p75", "account", "p25-p75", "ratio", "paired"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        missed = {t["pattern"] for t in s["targets"] if t["pass"] is False}
        for pat, label in B56_PATTERNS:
            r = s["ratios"].get("account / plain, " + pat)
            pr = s["paired_ratio_median"].get(pat)
            log("  %-6s %-13s %s %13s %s %13s %7s %7s" % (
                size + " B", label, fmt_ns(med.get("plain " + pat)),
                fmt_spread(s, "plain " + pat), fmt_ns(med.get("account " + pat)),
                fmt_spread(s, "account " + pat), fmt_ratio(r, pat in missed),
                "%.2fx" % pr if pr is not None else "-"))


def print_b6(e, log):
    off = B6_BASE
    log("")
    log("%s  %s  (%s)" % ("B6", e["title"], e["unit"]))
    log("  the same binary and plain cache, one process per mode and round, interleaved; "
        "patterns as B5")
    log("  mode = USLUB_PROFILING -> uslub_profiling_enabled() as the processes reported it "
        "(0 off, 1 exact, 2 sampled)")
    log("  ratio = mode / off (ratio of medians); rounds = min..max of the per-round ratios; "
        "x! misses the target (%s)" % "; ".join(
            "%s: %s" % (B6_MODE[p], ", ".join("%s <= %.2fx" % (label, e["limits"][p][pat])
                                              for pat, label in B56_PATTERNS))
            for p in e["limits"]))
    for size, s in e["sizes"].items():
        c = s.get("caches", {})
        log("  %s B: extension %s%s" % (
            size, "; ".join("%s: %s" % (B6_MODE[p], fmt_ext(c.get(p))) for p, _ in B6_PEERS
                            if p in c),
            "" if s.get("tag_check_ok") is not False else
            "  (warning: the allocation-tag check failed)"))
    log("  %-6s %-13s %-18s %-16s %9s %13s %7s %13s" % (
        "size", "pattern", "peer", "mode", "median", "p25-p75", "ratio", "rounds"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        for pat, label in B56_PATTERNS:
            for peer, env in B6_PEERS:
                key = {"uslub-prof-on": "on", "uslub-prof-sample": "sample"}.get(peer)
                shown_mode = "%s -> %s" % (env, ",".join(
                    str(x) for x in s.get("profiling", {}).get(peer, [])) or "-")
                if peer in s.get("skipped", {}):
                    log("  %-6s %-13s %-18s %-16s skipped: %s" % (
                        size + " B", label, peer, env + " -> -", s["skipped"][peer]))
                    continue
                missed = any(t["pass"] is False for t in s["targets"]
                             if t.get("peer") == peer and t.get("pattern") == pat)
                rr = s["round_ratios"].get(peer, {}).get(pat)
                log("  %-6s %-13s %-18s %-16s %s %13s %7s %13s" % (
                    size + " B", label, peer, shown_mode, fmt_ns(med.get("%s %s" % (peer, pat))),
                    fmt_spread(s, "%s %s" % (peer, pat)),
                    fmt_ratio(s["ratios"].get("%s / off, %s" % (key, pat)), missed)
                    if key else "-",
                    "%.2f..%.2fx" % (min(rr), max(rr)) if rr else "-"))
    ins = e.get("instructions")
    if ins:
        log("  instructions per pair (hot pair) / per object (batch), callgrind, the "
            "same loops (%d after %d), loop included; ratio = mode / off:" % (
                B6I_ITERS, B6I_WARM))
        for size, per in ins.items():
            base = per.get(B6_BASE, {})
            log("  %-6s %s" % (size + " B", "   ".join(
                "%s %s" % (B6_MODE[p], ", ".join(
                    "%s %.1f%s" % (pat, per[p][pat],
                                   "" if p == B6_BASE or not base.get(pat) else
                                   " (%.3fx)" % (per[p][pat] / base[pat]))
                    for pat, _ in B56_PATTERNS if pat in per[p]))
                for p, _ in B6_PEERS if p in per)))
    elif "instructions" in e:
        log("  instructions: not counted (no valgrind)")


def print_b6acc(e, log):
    log("")
    log("%s  %s  (%s)" % ("B6-acc", e["title"], e["unit"]))
    if "total_bytes" not in e:
        log("  not measured: %s" % (e["targets"][0].get("note") if e["targets"] else "-"))
        return
    log("  %d call sites, %.1f MiB live in %d objects (uslub-bench-uslub --bench B6-acc); "
        "exact = USLUB_PROFILING=1 (one run; objects x stride: %s)" % (
            len(e["sites"]), e["total_bytes"] / 2**20, e["objects"],
            "checked" if e.get("exact_check_ok") else "MISMATCH"))
    if e.get("skipped"):
        log("  sampled (USLUB_PROFILING=%s): skipped: %s" % (e["sample_env"], e["skipped"]))
    elif e.get("sample_runs"):
        log("  sampled = USLUB_PROFILING=%s, rate %s B: median of %d estimates (%d processes x "
            "%s repeats); error = |median / exact - 1|, target <= %.0f%% for sites > %.0f%% of "
            "the bytes; sigma1 = sqrt(rate / exact), one estimate's expected spread" % (
                e["sample_env"], e.get("sample_rate"), e["sample_runs"] * (e["repeats"] or 0),
                e["sample_runs"], e["repeats"], e["limit"] * 100, e["min_share"] * 100))
    log("  %-18s %6s %9s %13s %13s %8s %8s %7s" % (
        "site", "share", "objects", "exact B", "sampled B", "error", "sigma1", ""))
    for name, st in e["sites"].items():
        target = st["share"] > e["min_share"]
        err = st.get("error")
        verdict = "" if not target or err is None else ("ok" if err <= e["limit"] else "MISS")
        log("  %-18s %5.1f%% %9d %13d %13s %8s %8s %7s" % (
            name, st["share"] * 100, st["objects"], st["exact_bytes"],
            "%d" % st["median"] if "median" in st else "-",
            "%.1f%%" % (err * 100) if err is not None else "-",
            "%.1f%%" % (st["one_run_sigma"] * 100) if "one_run_sigma" in st else "-",
            verdict if target else "(< %.0f%%)" % (e["min_share"] * 100)))


def print_b7(e, log):
    log("")
    log("%s  %s  (%s)" % ("B7", e["title"], e["unit"]))
    log("  N groups x %d objects; shared = one USLUB_ACCOUNT cache, each group allocating as "
        "the thread's current group;" % e["objs_per_group"])
    log("  per-group = one plain cache per group; slab pages = sum of num_slabs x "
        "pages_per_slab, every object held;")
    log("  saving = 1 - shared/per-group (target >= %d%%); +ext = the same counting the "
        "extension bytes kept outside the slabs" % (e["min_saving"] * 100))
    log("  %-6s %5s  %12s %15s %8s %8s   %s" % (
        "size", "N", "shared pages", "per-group pages", "saving", "+ext", "layout (objs/slab x pages/slab, extension)"))
    for size, s in e["sizes"].items():
        for n, pt in s["groups"].items():
            sh, pg = pt.get("shared"), pt.get("per-group")

            def pages(d):
                if not d:
                    return "-"
                lo, hi = d["slab_pages_range"]
                return ("%g" % d["slab_pages"]) + ("" if lo == hi else " (%d..%d)" % (lo, hi))
            lay = sh.get("layout") if sh else None
            log("  %-6s %5s  %12s %15s %8s %8s   %s" % (
                size + " B", n, pages(sh), pages(pg),
                "%.1f%%" % pt["saving_pct"] if "saving_pct" in pt else "-",
                "%.1f%%" % pt["saving_with_ext_pct"] if "saving_with_ext_pct" in pt else "-",
                "%d x %d, %s" % (lay["objs_per_slab"], lay["pages_per_slab"], fmt_ext(lay))
                if lay else "-"))


def print_bmeta(e, log):
    log("")
    log("%s  %s  (%s)" % ("B-meta", e["title"], e["unit"]))
    if not e["caches"]:
        log("  not measured")
        return
    log("  USLUB_ACCOUNT caches (profiling %s); ext = bytes of one extension; outside = bytes "
        "per object kept outside the slab" % ("on" if e.get("profiling") else "off"))
    log("  (obj_ext_bytes); saved = ext bytes per object an array would have taken, and as a "
        "% of the stride; same = same")
    log("  stride, objects per slab and order as the cache without USLUB_ACCOUNT")
    log("  %-22s %-8s %6s %6s %5s %4s %-9s %4s %7s %6s %6s  %-14s %s" % (
        "cache", "spec", "object", "stride", "objs", "ord", "placement", "ext", "outside",
        "saved", "%", "seed 003 kind", "same"))
    for c in e["caches"]:
        log("  %-22s %-8s %6d %6d %5d %4d %-9s %4d %7d %6d %5.2f%%  %-14s %s" % (
            c["label"], c["spec"] or "-", c["object_size"], c["stride"], c["objs_per_slab"],
            c["order"], c["obj_ext"], c["obj_ext_size"], c["obj_ext_bytes"],
            c["saving_bytes_per_object"], c["saving_pct_of_stride"],
            "%s (%s)" % (c["seed003_kind"] or "-", "yes" if c["matches_seed003"] else "NO"),
            "yes" if c["same_layout_as_plain"] else "no"))


def print_bdebug(e, log):
    nodebug, debug = BDEBUG_PEERS[0][0], BDEBUG_PEERS[1][0]
    flags = e["debug_spec"].split(",")[0]
    log("")
    log("%s  %s  (%s)" % ("B-debug", e["title"], e["unit"]))
    log("  per round one process with USLUB_DEBUG=\"%s\" (%s), one without (%s); both time "
        "the plain cache" % (e["debug_spec"], debug, nodebug))
    log("  bench-plain-SIZE with B5's patterns while bench-debug-other-SIZE (a debug cache in "
        "%s only) holds objects" % debug)
    log("  and allocates a few before each timed loop; ratio = debug-other / nodebug (ratio "
        "of medians); paired = median")
    log("  of the per-sample ratios of the two processes of each round; x! misses <= %.2fx"
        % e["limit"])
    log("  %-6s %-13s %9s %13s %11s %13s %7s %7s" % (
        "size", "pattern", "nodebug", "p25-p75", "debug-other", "p25-p75", "ratio", "paired"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        missed = {t["pattern"] for t in s["targets"] if t["pass"] is False}
        for pat, label in B56_PATTERNS:
            pr = s["paired_ratio_median"].get(pat)
            log("  %-6s %-13s %s %13s %11s %13s %7s %7s" % (
                size + " B", label, fmt_ns(med.get("%s %s" % (nodebug, pat))),
                fmt_spread(s, "%s %s" % (nodebug, pat)),
                fmt_ns(med.get("%s %s" % (debug, pat))).strip(),
                fmt_spread(s, "%s %s" % (debug, pat)),
                fmt_ratio(s["ratios"].get("debug-other / nodebug, " + pat), pat in missed),
                "%.2fx" % pr if pr is not None else "-"))
    log("  no target: what %s costs the debug cache itself, bench-debug-other-SIZE in %s"
        % (flags, debug))
    log("  against the same cache in %s, the same loops, %s pairs / objects per sample" % (
        nodebug, "/".join(str(n) for n in e["other_iters"]) or "?"))
    log("  %-6s %-13s %9s %13s %9s %13s %8s   %s" % (
        "size", "pattern", flags, "p25-p75", "no debug", "p25-p75", "ratio",
        "stride x objs/slab with / without"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]

        def layout(peer):
            c = s["caches"].get(peer, {}).get("other")
            return "%d B x %d" % (c["stride"], c["objs_per_slab"]) if c else "-"
        for pat, label in B56_PATTERNS:
            r = s["ratios"].get("debug cache / plain, " + pat)
            line = "  %-6s %-13s %s %13s %s %13s %8s   %s" % (
                size + " B", label, fmt_ns(med.get("%s other %s" % (debug, pat))),
                fmt_spread(s, "%s other %s" % (debug, pat)),
                fmt_ns(med.get("%s other %s" % (nodebug, pat))),
                fmt_spread(s, "%s other %s" % (nodebug, pat)),
                "%.1fx" % r if r is not None else "-",
                "%s / %s" % (layout(debug), layout(nodebug)) if pat == "pair" else "")
            log(line.rstrip())


def short_peer(p):
    """A peer's name in the 12-character columns of B8's table."""
    return "u-cpuslabs" if p == CPUSLABS else p


# B8's ratio columns: "u/" or "c/" and at most 6 characters of the peer
RATIO_SHORT = {"mimalloc": "mimall", MIMALLOC3: "mi-3.4"}


def ratio_col(prefix, p):
    return prefix + RATIO_SHORT.get(p, p[:6])


def print_b8(e, log):
    ws = e["workloads"]
    peers = [p for p in SUITE_PEERS if any(p in s["time_ms"] for s in ws.values())]
    others = [p for p in peers if p not in USLUB_SERIES]
    # ratio columns: "u/" uslub / peer for every other peer; "c/" uslub-cpuslabs
    # / peer for the target peers (B8_VS; bench.json has them all)
    cols = [("uslub", p, ratio_col("u/", p)) for p in others] + \
        [(CPUSLABS, p, ratio_col("c/", p)) for p in others if p in B8_VS and CPUSLABS in peers]
    geo_ws = e.get("geomean_workloads", list(ws))

    def rat(s, series, p, metric):
        if series == "uslub":
            return s["time_ratio" if metric == "time" else "rss_ratio"].get(p)
        return s.get("series_ratios", {}).get(series, {}).get(metric, {}).get(p)

    def geo(series, p, metric):
        g = e["geomean"] if series == "uslub" else e.get("geomean_series", {}).get(series, {})
        return g.get(p, {}).get(metric)
    rounds = sorted({n for s in ws.values() for n in s["rounds"].values()})
    log("")
    log("%s  %s  (%s)" % ("B8", e["title"], e["unit"]))
    log("  uslub-bench-mallocsuite --scale %g, one process per workload, peer and round; "
        "median of %s rounds; ratio = uslub / peer" % (
            e["scale"], "/".join(str(r) for r in rounds) or "0"))
    for w, s in ws.items():
        what = s["what"].replace("~P MiB", "%d MiB" % e["phase1_mib"])
        log("  %-9s %s" % (w, what))
    for m in USLUB_SERIES:
        if m in peers:
            log("  %-10s = %s%s" % (short_peer(m), USLUB_MODE[m],
                                    " and USLUB_KMALLOC_SHEAVES=0 (malloc's kmalloc "
                                    "caches on cpu slabs too)" if m == CPUSLABS else ""))
    log("  u/ = uslub / peer, c/ = uslub-cpuslabs / peer; mode = uslub / uslub-cpuslabs"
        if CPUSLABS in peers else "  u/ = uslub / peer")
    if "mimalloc" in peers or MIMALLOC3 in peers:
        log("  mimalloc = Debian's 2.0 (mimall), %s = mimalloc 3.4 (mi-3.4)" % MIMALLOC3)
    if B8_LARGE in ws:
        log("  geomean = over %s; %s is outside it (its own targets: time and page faults "
            "vs %s)" % (", ".join(geo_ws), B8_LARGE, B8_LARGE_VS))
    mode_col = "uslub" in peers and CPUSLABS in peers
    hdr = "".join("%13s" % short_peer(p) for p in peers) + "   " + \
        "".join("%9s" % c[2] for c in cols) + ("%8s" % "mode" if mode_col else "")

    def row(w, s, key, metric, fmt):
        vals = "".join((fmt % s[key][p]) if p in s[key] else "%13s" % "-" for p in peers)
        rats = ""
        for series, p, _ in cols:
            r = rat(s, series, p, metric)
            rats += ("%8.2fx" % r) if r is not None else "%9s" % "-"
        if mode_col:
            r = s.get("mode_ratio", {}).get(metric)
            rats += ("%7.2fx" % r) if r is not None else "%8s" % "-"
        log("  %-14s%s   %s" % (w, vals, rats))
    for metric, key, label in (("time", "time_ms", "time, ms"),
                               ("rss", "peak_rss_mib", "peak RSS, MiB")):
        log("  %-14s%s" % (label, hdr))
        for w, s in ws.items():
            if w in geo_ws:
                row(w, s, key, metric, "%13.1f")
        g = ""
        for series, p, _ in cols:
            r = geo(series, p, metric)
            g += ("%8.2fx" % r) if r is not None else "%9s" % "-"
        if mode_col:
            r = e.get("geomean_modes", {}).get(metric)
            g += ("%7.2fx" % r) if r is not None else "%8s" % "-"
        log("  %-14s%s   %s" % ("geomean", " " * (13 * len(peers)), g))
        for w, s in ws.items():
            if w not in geo_ws:
                row(w, s, key, metric, "%13.1f")
    lg = ws.get(B8_LARGE)
    if lg and lg["minflt"]:
        log("  %s: minor page faults in the workload (getrusage ru_minflt; median), "
            "uslub's ratios to %s" % (B8_LARGE, B8_LARGE_VS))
        log("  %-14s%s" % ("page faults", "".join("%13s" % short_peer(p) for p in peers)))
        log("  %-14s%s" % (B8_LARGE, "".join(
            ("%13.0f" % lg["minflt"][p]) if p in lg["minflt"] else "%13s" % "-"
            for p in peers)))
        for series, d in lg.get("large_ratios", {}).items():
            log("  %-14s time %s, page faults %s" % (
                "%s/%s" % ("u" if series == "uslub" else "c", B8_LARGE_VS),
                fmt_ratio(d.get("time")).strip(), fmt_ratio(d.get("minflt")).strip()))
    ph = ws.get("phases", {}).get("phases")
    if ph:
        log("  phases: RSS in MiB at phase 1's peak, right after its frees, after the %d ms "
            "purge wait (%% of the peak, both above" % e["purge_ms"])
        log("  the RSS before phase 1; returned = below %d%%) and at the end of phase 2"
            % (e["returned_below"] * 100))
        log("  %-14s %9s %9s %9s %7s %9s  %s" % ("allocator", "peak", "freed", "waited", "%",
                                                "end", "returned"))
        for p in peers:
            if p not in ph:
                continue
            d = ph[p]
            log("  %-14s %9.1f %9.1f %9.1f %6.0f%% %9.1f  %s" % (
                p, d["rss_phase1_peak_mib"], d["rss_after_free_nowait_mib"],
                d["rss_after_free_mib"], d["after_free_frac"] * 100, d["rss_phase2_end_mib"],
                "yes" if d["memory_returned"] else "no"))


def print_b9(e, log):
    ns = [str(n) for n in e["threads"]]
    peers = [p for p in SUITE_PEERS if p in e["peers"]]
    log("")
    log("%s  %s  (%s)" % ("B9", e["title"], e["unit"]))
    log("  N threads each allocate 1000 objects of 16/32/64/128/256 B, free them all and wait; "
        "held = VmRSS then minus")
    log("  VmRSS with the same threads started but before they called malloc (baseline); "
        "median over the rounds;")
    log("  slope = (held(%s) - held(%s)) / %d per thread; ratio = uslub's slope / the peer's"
        % (ns[-1], ns[0], int(ns[-1]) - int(ns[0])))
    log("  %-12s %s %s %10s %11s" % (
        "allocator", "".join("%11s" % ("held N=" + n) for n in ns),
        "".join("%9s" % ("/thr " + n) for n in ns[-1:]), "slope KiB", "uslub/peer"))
    for p in peers:
        d = e["peers"][p]
        held = "".join(("%11.0f" % d["rss_held_kb"][n]) if n in d["rss_held_kb"]
                       else "%11s" % "-" for n in ns)
        pt = "".join(("%9.1f" % d["held_per_thread_kb"][n]) if n in d["held_per_thread_kb"]
                     else "%9s" % "-" for n in ns[-1:])
        sl = d.get("slope_kb_per_thread")
        r = e["slope_ratios"].get(p)
        log("  %-12s %s %s %10s %11s" % (p, held, pt, "%.1f" % sl if sl is not None else "-",
                                        "%.2fx" % r if r is not None else "-"))


def print_bdfree(e, log):
    mark, nomark = BDFREE_PEERS
    log("")
    log("%s  %s  (%s)" % ("B-dfree", e["title"], e["unit"]))
    log("  with = uslub as built (each free tests and writes the free mark, each allocation "
        "clears it); without = %s," % nomark)
    log("  the same core compiled with USLUB_NO_FREE_MARK; per round B1 on "
        "uslub-bench-uslub / %s (%d pairs" % (USLUB_NOMARK_BENCH, e["B1_iters"]))
    log("  per sample) and each B8 workload (--scale %g) under LD_PRELOAD of %s / %s," % (
        e["B8_scale"], USLUB_MALLOC_LIB, USLUB_NOMARK_MALLOC_LIB))
    log("  the two back to back, %d rounds; ratio = with / without (ratio of medians), "
        "cost = ratio - 1;" % e["rounds"])
    log("  rounds = median (min..max) of the per-round ratios; no target")
    log("  %-11s %9s %15s %9s %15s %7s %7s  %-20s %s" % (
        "", "with", "p25-p75", "without", "p25-p75", "ratio", "cost", "rounds",
        "peak RSS MiB w/wo"))
    for key, r in e["rows"].items():
        def spread(p):
            return "%.2f-%.2f" % (r["p25"][p], r["p75"][p]) if p in r["p25"] else "-"
        rr = r.get("round_ratios") or []
        rss = r.get("peak_rss_mib", {})
        log(("  %-11s %s %15s %s %15s %7s %7s  %-20s %s" % (
            key, fmt_ns(r["median"].get(mark)), spread(mark), fmt_ns(r["median"].get(nomark)),
            spread(nomark), fmt_ratio(r.get("ratio")),
            "%+.1f%%" % r["cost_pct"] if "cost_pct" in r else "-",
            "%.3fx (%.2f..%.2f)" % (r["round_ratio_median"], min(rr), max(rr)) if rr else "-",
            "%.1f/%.1f" % (rss[mark], rss[nomark]) if mark in rss and nomark in rss else
            "")).rstrip())
    for b, g in e["geomean"].items():
        log("  %-11s %9s %15s %9s %15s %7s %7s  %s" % (
            "geomean " + b, "", "", "", "", fmt_ratio(g["ratio"]), "%+.1f%%" % g["cost_pct"],
            ("%.3fx" % g["round_ratio_median"] if g.get("round_ratio_median") else "-") +
            ("" if g["rows"] == g["of"] else "  (%d of %d rows)" % (g["rows"], g["of"]))))


OWN_PRINTERS = {"B5": print_b5, "B6": print_b6, "B6-acc": print_b6acc, "B7": print_b7,
                "B-meta": print_bmeta,
                "B-debug": print_bdebug, "B8": print_b8, "B9": print_b9,
                "B-dfree": print_bdfree, "B-rcu": print_brcu}


def fmt_ratio(x, missed=False):
    if x is None:
        return "-"
    return "%.2fx%s" % (x, "!" if missed else " ")


def print_b2(e, log):
    runs = e.get("runs", {})
    caps = e.get("sheaf_capacity", {})

    def cap(p):
        c = caps.get(p)
        return "/".join("?" if x is None else str(x) for x in c) if c else "-"
    dpdk_cache = sorted({r.get("cache_size") for r in runs.get("dpdk", [])} - {None})
    log("")
    log("%s  %s  (%s)" % ("B2", e["title"], e["unit"]))
    log("  %d B objects, median of all samples; 1-by-1 = the same n done as n allocs "
        "then n frees" % e["size"])
    log("  uslub: %s, sheaf_capacity %s; uslub-cpuslabs: %s, sheaf_capacity %s; "
        "dpdk: get_bulk/put_bulk, %s-object lcore cache" % (
            USLUB_MODE["uslub"], cap("uslub"), USLUB_MODE[CPUSLABS], cap(CPUSLABS),
            "/".join(str(x) for x in dpdk_cache) or "?"))
    log("  x! = misses its target (see the targets below)")
    log("  %5s  %s  %s  %s  %s" % (
        "", "uslub (sheaves)".center(26, "-"), "uslub-cpuslabs".center(26, "-"),
        "dpdk".center(17, "-"), "bulk/dpdk bulk".center(15, "-")))
    log("  %5s  %8s %8s %8s  %8s %8s %8s  %8s %8s  %7s %7s" % (
        "n", "bulk", "1-by-1", "bulk/1b1", "bulk", "1-by-1", "bulk/1b1",
        "bulk", "1-by-1", "sheaves", "cpusl."))
    for key, s in e["n"].items():
        med = s["median_ns"]
        missed = {(t["series"], t["kind"]) for t in s["targets"] if t["pass"] is False}

        def m(name):
            return fmt_ns(med.get(name)).strip().rjust(8) if name in med else "       -"

        def r(a, b, series=None, kind=None, width=8):
            x = s["ratios"].get("%s / %s" % (a, b))
            return fmt_ratio(x, (series, kind) in missed).rjust(width)
        log("  %5s  %s %s %s  %s %s %s  %s %s  %s %s" % (
            key, m("uslub bulk"), m("uslub one-by-one"),
            r("uslub bulk", "uslub one-by-one", "uslub", "vs_single"),
            m(CPUSLABS + " bulk"), m(CPUSLABS + " one-by-one"),
            r(CPUSLABS + " bulk", CPUSLABS + " one-by-one", CPUSLABS, "vs_single"),
            m("dpdk bulk"), m("dpdk one-by-one"),
            r("uslub bulk", "dpdk bulk", "uslub", "vs_dpdk", 7),
            r(CPUSLABS + " bulk", "dpdk bulk", CPUSLABS, "vs_dpdk", 7)))


def b2_target_groups(e):
    """B2's per-n checks grouped by target: [(range, name, checks)]."""
    groups = {}
    for s in e["n"].values():
        for t in s["targets"]:
            groups.setdefault((t["kind"], t["series"], t["target"]), []).append(t)
    out = []
    for kind in ("vs_dpdk", "vs_single"):
        for series in USLUB_SERIES:
            for (k, se, name), checks in groups.items():
                if k == kind and se == series:
                    ns = [t["n"] for t in checks]
                    out.append(("n %d..%d" % (min(ns), max(ns)), name, checks))
    return out


def print_b3(e, log):
    log("")
    log("%s  %s  (%s)" % ("B3", e["title"], e["unit"]))
    mib = {s.get("bytes_per_round") for s in e["sizes"].values()} - {None}
    log("  alloc_bulk(objects per slab), every batch from a new slab, only the allocation "
        "timed; %s MiB per round" % "/".join("%g" % (b / 2**20) for b in sorted(mib)))
    log("  eager = USLUB_EAGER_FREELIST (whole freelist built when the slab is made, "
        "pre-7.1 kernel); deferred = the default")
    log("  %-14s  %s   %s" % ("", "random off".center(28, "-"), "random on".center(28, "-")))
    log("  %-6s %6s  %9s %9s %8s   %9s %9s %8s" % (
        "size", "batch", "eager", "deferred", "delta", "eager", "deferred", "delta"))
    stale = []
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        batches = sorted({b for b in s["batch"].values() if b})
        cols = []
        for rnd in ("norandom", "random"):
            d = s["delta_pct"].get(rnd)
            cols += [fmt_ns(med.get("eager-" + rnd)), fmt_ns(med.get("deferred-" + rnd)),
                     ("%+.1f%%" % d).rjust(8) if d is not None else "       -"]
        log("  %-6s %6s  %s %s %s   %s %s %s" % (
            size + " B", "/".join(str(b) for b in batches) or "-", *cols))
        if s.get("fresh") is False:
            stale.append(size)
    if stale:
        log("  warning: at %s B not every batch came from a new slab (see "
            "\"variants\" in bench.json): those rows do not measure fresh slabs only"
            % ", ".join(stale))


# ---------------------------------------------------------------------------
# Plot
# ---------------------------------------------------------------------------

PLOT_COLORS = {
    "uslub": "#d62728", CPUSLABS: "#ff9896", "uslub-hardened": "#8c564b",
    "dpdk": "#7f7f7f", "glibc": "#1f77b4",
    "jemalloc": "#2ca02c", "mimalloc": "#9467bd", MIMALLOC3: "#c5b0d5", "tcmalloc": "#ff7f0e",
    USLUB_MALLOC: "#e377c2",
}


def plot(data, png):
    """Grouped bar chart: one panel per benchmark and size, one bar per
    allocator. Raises ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(b, sz, s) for b in ("B1", "B4") if b in data
              for sz, s in data[b]["sizes"].items() if s["median_ns"]]
    extra = []          # second row: B2 and B3
    if "B2" in data and any(s["median_ns"] for s in data["B2"]["n"].values()):
        extra += [("B2", "ns"), ("B2", "ratio")]
    if "B3" in data and any(s["median_ns"] for s in data["B3"]["sizes"].values()):
        extra += [("B3", "norandom"), ("B3", "random")]
    own = []            # third row: B5, B6 (ratios), B7 (pages), B-debug (ratios)
    for b in ("B5", "B6"):
        if b in data and any(s["median_ns"] for s in data[b]["sizes"].values()):
            own.append(b)
    if "B7" in data and any(pt for s in data["B7"]["sizes"].values()
                            for pt in s["groups"].values()):
        own.append("B7")
    if "B-debug" in data and any(s["median_ns"] for s in data["B-debug"]["sizes"].values()):
        own.append("B-debug")
    if "B-dfree" in data and any("ratio" in r for r in data["B-dfree"]["rows"].values()):
        own.append("B-dfree")
    suite = []         # fourth row: B8 (time, peak RSS), B9
    if "B8" in data and any(s["time_ms"] for s in data["B8"]["workloads"].values()):
        suite += [("B8", "time"), ("B8", "rss")]
    if "B9" in data and data["B9"]["peers"]:
        suite.append(("B9", None))
    if not panels and not extra and not own and not suite:
        raise ValueError("nothing to plot")
    rows = [r for r in (panels, extra, own, suite) if r]
    ncols = max(len(r) for r in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(4.6 * ncols, 4.4 * len(rows)),
                             squeeze=False)
    for row, r in zip(axes, rows):
        for ax in row[len(r):]:
            ax.set_visible(False)
    if extra:
        for ax, (b, what) in zip(axes[rows.index(extra)], extra):
            if b == "B2":
                plot_b2(ax, data["B2"], what)
            else:
                plot_b3(ax, data["B3"], what)
    if own:
        for ax, b in zip(axes[rows.index(own)], own):
            if b == "B7":
                plot_b7(ax, data["B7"])
            elif b == "B-dfree":
                plot_bdfree(ax, data["B-dfree"])
            else:
                plot_b56(ax, data[b], b)
    if suite:
        for ax, (b, what) in zip(axes[rows.index(suite)], suite):
            if b == "B8":
                plot_b8(ax, data["B8"], what)
            else:
                plot_b9(ax, data["B9"])
    for ax, (b, sz, s) in zip(axes[0] if panels else [], panels):
        names = [p for p in PEER_ORDER if p in s["median_ns"]]
        vals = [s["median_ns"][p] for p in names]
        lo = [max(0.0, v - s["p25_ns"][p]) for p, v in zip(names, vals)]
        hi = [max(0.0, s["p75_ns"][p] - v) for p, v in zip(names, vals)]
        bars = ax.bar(range(len(names)), vals, yerr=[lo, hi], capsize=3,
                      color=[PLOT_COLORS.get(p, "#17becf") for p in names])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_title("%s %s B\n%s" % (b, sz, data[b]["title"]), fontsize=9)
        ax.set_ylabel(data[b]["unit"] + " (lower is better)", fontsize=8)
        if max(vals) / max(min(vals), 1e-9) > 25:
            ax.set_yscale("log")
        for bar, v, p, h in zip(bars, vals, names, hi):
            label = "%.1f" % v
            if p != "uslub" and p in s["ratios"]:
                label += "\n%.2fx" % s["ratios"][p]
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, v + h),
                        ha="center", va="bottom", fontsize=7,
                        xytext=(0, 2), textcoords="offset points")
        ax.margins(y=0.25)
    m = data.get("machine", {})
    fig.suptitle("uslub vs peers, median ns (labels: value, uslub/peer) — "
                 "%s, %s CPUs, %s, %s%s" % (
                     m.get("cpu_model", "?"), m.get("nproc", "?"),
                     m.get("date", "?")[:10], m.get("git_commit", "")[:10],
                     ", quick mode" if data.get("mode") == "quick" else ""),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def plot_b8(ax, e, what):
    """B8: per workload, uslub's ratio to each peer (time or peak RSS), with
    the geometric means and the target line; the peers' own values (log
    scale) when uslub was not measured."""
    ws = list(e["workloads"])
    key, rkey, metric, limit = (("time_ms", "time_ratio", "time",
                                 e.get("time_limits", {}).get(B8_WORST_VS, 1.0))
                                if what == "time" else
                                ("peak_rss_mib", "rss_ratio", "rss", e["rss_limit"]))
    have_uslub = any(e["workloads"][w][rkey] for w in ws)
    # bars: (series, peer); with uslub measured, uslub / each other peer and
    # uslub-cpuslabs / each target peer (hatched)
    bars = [("uslub", p) for p in SUITE_OTHERS if any(p in e["workloads"][w][key] for w in ws)]
    cpu = e.get("geomean_series", {}).get(CPUSLABS)
    if cpu:
        bars += [(CPUSLABS, p) for p in B8_VS if p in cpu]
    if not have_uslub:
        bars = [(None, p) for p in SUITE_PEERS if any(p in e["workloads"][w][key] for w in ws)]
    labels = ws + (["geomean"] if have_uslub else [])
    width = 0.8 / max(1, len(bars))
    for j, (series, p) in enumerate(bars):
        if series == "uslub":
            vals = [e["workloads"][w][rkey].get(p, 0) for w in ws] + \
                [e["geomean"].get(p, {}).get(metric, 0)]
        elif series:
            vals = [e["workloads"][w].get("series_ratios", {}).get(series, {})
                    .get(metric, {}).get(p, 0) for w in ws] + [cpu.get(p, {}).get(metric, 0)]
        else:
            vals = [e["workloads"][w][key].get(p, 0) for w in ws]
        xs = [i + (j - (len(bars) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, vals, width, color=PLOT_COLORS.get(p, "#17becf"),
               hatch="//" if series == CPUSLABS else None,
               label=("%s / %s" % (series, p)) if series else p)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    name = "time" if what == "time" else "peak RSS"
    if have_uslub:
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(limit, color="black", lw=1, ls=":")
        ax.set_ylabel("uslub / peer, %s (< 1: uslub better)" % name, fontsize=8)
        ax.set_title("B8 malloc workloads, %s: uslub / peer\n(target: geomean <= %.1fx "
                     "%s; geomean without %s)" % (name, limit, B8_WORST_VS, B8_LARGE),
                     fontsize=9)
    else:
        ax.set_yscale("log")
        ax.set_ylabel(("ms" if what == "time" else "MiB") + " (uslub not measured)", fontsize=8)
        ax.set_title("B8 malloc workloads, %s" % name, fontsize=9)
    ax.legend(fontsize=6)


def plot_b9(ax, e):
    """B9: RSS held against the number of threads, one line per peer."""
    ns = e["threads"]
    for p in SUITE_PEERS:
        d = e["peers"].get(p)
        if not d:
            continue
        pts = [(n, d["rss_held_kb"][str(n)] / 1024) for n in ns if str(n) in d["rss_held_kb"]]
        sl = d.get("slope_kb_per_thread")
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", ms=3,
                color=PLOT_COLORS.get(p, "#17becf"),
                label="%s (%s KiB/thread)" % (p, "%.0f" % sl if sl is not None else "?"))
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns], fontsize=7)
    ax.set_xlabel("threads (linear: the slope is the growth per thread)", fontsize=8)
    ax.set_ylabel("RSS held after the frees, MiB (lower is better)", fontsize=8)
    ax.set_title("B9 RSS held in per-thread caches\n(target: slope <= %s's)" % B9_VS,
                 fontsize=9)
    ax.legend(fontsize=6)


B2_STYLES = {
    "uslub": ("#d62728", "uslub (sheaves)"), CPUSLABS: ("#ff7f0e", "uslub-cpuslabs"),
    "dpdk": ("#7f7f7f", "dpdk"),
}


def plot_b2(ax, e, what):
    """B2 against n: ns per object (bulk solid, one-by-one dashed), or the
    ratios the targets are about, with the target lines."""
    ns = [int(k) for k in e["n"]]
    if what == "ns":
        for p in B2_PEERS:
            color, label = B2_STYLES[p]
            for mode, style in (("bulk", "-"), ("one-by-one", "--")):
                name = "%s %s" % (p, mode)
                pts = [(n, e["n"][str(n)]["median_ns"][name]) for n in ns
                       if name in e["n"][str(n)]["median_ns"]]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o",
                            ms=3, color=color, label="%s %s" % (label, mode))
        ax.set_ylabel("ns per object, alloc+free (lower is better)", fontsize=8)
        ax.set_title("B2 %d B: bulk (solid) vs one-by-one (dashed)" % e["size"], fontsize=9)
        ax.set_ylim(bottom=0)
    else:
        lines = [("%s bulk / %s one-by-one" % (p, p), p, "-", "bulk/1-by-1")
                 for p in USLUB_SERIES] + \
                [("%s bulk / dpdk bulk" % p, p, ":", "bulk/dpdk bulk") for p in USLUB_SERIES]
        for key, p, style, what_ in lines:
            pts = [(n, e["n"][str(n)]["ratios"][key]) for n in ns
                   if key in e["n"][str(n)]["ratios"]]
            if pts:
                color, label = B2_STYLES[p]
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o", ms=3,
                        color=color, label="%s %s" % (label, what_))
        ax.plot([8, 64], [0.5, 0.5], color="black", lw=1)
        ax.annotate("target bulk/1-by-1 <= 0.5 (n 8..64)", (8, 0.5), fontsize=6,
                    xytext=(0, -9), textcoords="offset points")
        ax.plot([16, max(ns)], [1.0, 1.0], color="black", lw=1, ls=":")
        ax.annotate("target bulk/dpdk <= 1.0 (n >= 16)", (16, 1.0), fontsize=6,
                    xytext=(0, 3), textcoords="offset points")
        ax.set_ylabel("ratio, log scale (lower is better for uslub)", fontsize=8)
        ax.set_title("B2 %d B: ratios and targets" % e["size"], fontsize=9)
        ax.set_yscale("log")
    ax.set_xscale("log")
    ticks = [n for n in ns if n in (1, 2, 4, 8, 16, 32, 64, 128, 250)] or ns
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(n) for n in ticks], fontsize=7)
    ax.minorticks_off()
    if what != "ns":
        lo, hi = ax.get_ylim()
        yt = [y for y in (0.1, 0.2, 0.3, 0.5, 1, 2, 3, 5, 10, 20, 50, 100) if lo <= y <= hi]
        ax.set_yticks(yt)
        ax.set_yticklabels(["%g" % y for y in yt], fontsize=7)
    ax.set_xlabel("n (objects per bulk call)", fontsize=8)
    ax.legend(fontsize=6)


def plot_b3(ax, e, rnd):
    """B3: eager and deferred bars per size, one panel per random setting."""
    sizes = [sz for sz, s in e["sizes"].items() if s["median_ns"]]
    width = 0.38
    for j, (kind, color) in enumerate((("eager", "#7f7f7f"), ("deferred", "#d62728"))):
        name = "%s-%s" % (kind, rnd)
        vals, lo, hi = [], [], []
        for sz in sizes:
            s = e["sizes"][sz]
            v = s["median_ns"].get(name, 0.0)
            vals.append(v)
            lo.append(max(0.0, v - s["p25_ns"].get(name, v)))
            hi.append(max(0.0, s["p75_ns"].get(name, v) - v))
        xs = [i + (j - 0.5) * width for i in range(len(sizes))]
        bars = ax.bar(xs, vals, width, yerr=[lo, hi], capsize=2, color=color, label=kind)
        if kind == "deferred":
            for bar, sz, v, h in zip(bars, sizes, vals, hi):
                d = e["sizes"][sz]["delta_pct"].get(rnd)
                if d is not None:
                    ax.annotate("%+.0f%%" % d, (bar.get_x() + bar.get_width() / 2, v + h),
                                ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(["%s B\n%s" % (sz, "/".join(str(b) for b in sorted(
        {x for x in e["sizes"][sz]["batch"].values() if x})) or "-") for sz in sizes],
        fontsize=7)
    ax.set_xlabel("object size / batch (objects per slab)", fontsize=8)
    ax.set_ylabel(e["unit"] + " (lower is better)", fontsize=8)
    ax.set_title("B3 fresh slabs, random %s: deferred vs eager\n(target: deferred <= %.2fx eager)"
                 % ("off" if rnd == "norandom" else "on", B3_LIMITS[rnd]), fontsize=9)
    ax.legend(fontsize=7)
    ax.margins(y=0.2)


# B5, B6, B-debug panels: the baseline's and the variant's series, their
# names in the legend, the key of their ratio, and what the panel compares.
B56_PLOTS = {
    "B5": ("plain %s", "account %s", ("plain", "accounted"), "account / plain, ",
           "accounted vs plain"),
    "B6": ("uslub-prof-off %s", ["uslub-prof-on %s", "uslub-prof-sample %s"],
           ("profiling off", "exact", "sampled"), ["on / off, ", "sample / off, "],
           "profiling exact, sampled vs off"),
    "B-debug": ("uslub-nodebug %s", "uslub-debug-other %s",
                ("no debug cache", "a debug cache beside"), "debug-other / nodebug, ",
                "plain cache, a debug cache beside vs none"),
}


def plot_b56(ax, e, bench):
    """B5 / B6 / B-debug: per size and pattern, the baseline and the measured
    variants side by side (median, p25-p75 whiskers), each variant labelled
    with its ratio to the baseline."""
    base, var, names, ratio_key, what = B56_PLOTS[bench]
    variants = var if isinstance(var, list) else [var]
    keys = ratio_key if isinstance(ratio_key, list) else [ratio_key]
    colors = ["#7f7f7f", "#d62728", "#1f77b4"]
    groups = [(sz, pat, label) for sz in e["sizes"] for pat, label in B56_PATTERNS]
    nbars = 1 + len(variants)
    width = 0.8 / nbars
    for j, fmt in enumerate([base] + variants):
        vals, lo, hi = [], [], []
        for sz, pat, _ in groups:
            s = e["sizes"][sz]
            v = s["median_ns"].get(fmt % pat, 0.0)
            vals.append(v)
            lo.append(max(0.0, v - s["p25_ns"].get(fmt % pat, v)))
            hi.append(max(0.0, s["p75_ns"].get(fmt % pat, v) - v))
        xs = [i + (j - (nbars - 1) / 2) * width for i in range(len(groups))]
        bars = ax.bar(xs, vals, width, yerr=[lo, hi], capsize=2, color=colors[j % 3],
                      label=names[j])
        if j >= 1:
            for bar, (sz, pat, _), v, h in zip(bars, groups, vals, hi):
                r = e["sizes"][sz]["ratios"].get(keys[j - 1] + pat)
                if r is not None:
                    ax.annotate("%.2fx" % r, (bar.get_x() + bar.get_width() / 2, v + h),
                                ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s B\n%s" % (sz, label) for sz, _, label in groups], fontsize=7)
    ax.set_ylabel("ns per pair / per object (lower is better)", fontsize=8)
    if "limits" in e and bench == "B6":
        target = "; ".join("%s: %s" % (B6_MODE[p], "/".join("%.2fx" % l[pat] for pat, _ in
                                                              B56_PATTERNS))
                           for p, l in e["limits"].items()) + " (pair/batch)"
    elif "limits" in e:
        target = "<= " + "/".join("%.2fx" % e["limits"][pat] for pat, _ in B56_PATTERNS) + \
            " (pair/batch)"
    else:
        target = "<= %.2fx" % e["limit"]
    ax.set_title("%s %s\n(target: %s)" % (bench, what, target), fontsize=9)
    ax.legend(fontsize=7)
    ax.margins(y=0.2)


def plot_bdfree(ax, e):
    """B-dfree: the cost of the free mark (with / without - 1, in %) per row
    and the geometric means, with the per-round min..max as whiskers."""
    rows = [(k, r) for k, r in e["rows"].items() if "ratio" in r]
    labels = [k for k, _ in rows] + ["geomean %s" % b for b in e["geomean"]]
    vals = [r["cost_pct"] for _, r in rows] + [g["cost_pct"] for g in e["geomean"].values()]
    lo, hi = [], []
    for _, r in rows:
        rr = r.get("round_ratios") or [r["ratio"]]
        lo.append(max(0.0, r["cost_pct"] - (min(rr) - 1) * 100))
        hi.append(max(0.0, (max(rr) - 1) * 100 - r["cost_pct"]))
    lo += [0.0] * len(e["geomean"])
    hi += [0.0] * len(e["geomean"])
    colors = ["#d62728" if k.startswith("B1") else "#1f77b4" for k, _ in rows] + \
        ["#7f7f7f"] * len(e["geomean"])
    ax.bar(range(len(labels)), vals, yerr=[lo, hi], capsize=2, color=colors)
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("cost, %: with / without the free mark - 1 (whiskers: rounds)", fontsize=8)
    ax.set_title("B-dfree: the double-free check's cost\n(B1 ns per pair, B8 ms per run; "
                 "no target)", fontsize=9)


def plot_b7(ax, e):
    """B7: slab pages of both modes per size and N (log scale), labelled
    with the saving."""
    groups = [(sz, n) for sz, s in e["sizes"].items() for n in s["groups"]]
    width = 0.38
    for j, (m, color) in enumerate((("per-group", "#7f7f7f"), ("shared", "#d62728"))):
        vals = [e["sizes"][sz]["groups"][n].get(m, {}).get("slab_pages", 0) or 0
                for sz, n in groups]
        xs = [i + (j - 0.5) * width for i in range(len(groups))]
        bars = ax.bar(xs, vals, width, color=color, label=m)
        if m == "shared":
            for bar, (sz, n), v in zip(bars, groups, vals):
                sv = e["sizes"][sz]["groups"][n].get("saving_pct")
                if sv is not None:
                    ax.annotate("-%.0f%%" % sv, (bar.get_x() + bar.get_width() / 2, v),
                                ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s B\nN=%s" % (sz, n) for sz, n in groups], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("slab pages, log scale (lower is better)", fontsize=8)
    ax.set_title("B7 %d objects per group: shared vs per-group caches\n"
                 "(target: >= %d%% fewer pages)" % (e["objs_per_group"],
                                                    e["min_saving"] * 100), fontsize=9)
    ax.legend(fontsize=7)
    ax.margins(y=0.2)


def make_plot(data, json_path, png):
    try:
        plot(data, png)
        return True
    except ImportError:
        pass
    other = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(other) and os.access(other, os.X_OK):
        r = subprocess.run([other, os.path.abspath(__file__), "--plot-only", json_path,
                            "--png", png], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0:
            return True
        log("bench: plotting with %s failed: %s" % (other, r.stdout.strip()[-500:]))
        return False
    log("bench: matplotlib not available (Debian: python3-matplotlib); skipping %s" % png)
    return False


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="CMake build directory (default: build)")
    ap.add_argument("--quick", action="store_true", help="short runs (under 2 minutes)")
    ap.add_argument("--rounds", type=int, help="processes per peer and benchmark")
    ap.add_argument("--repeats", type=int, help="samples per process")
    ap.add_argument("--only", help="comma-separated benchmarks (%s)" % ",".join(BENCH_ORDER))
    ap.add_argument("--peers", help="comma-separated peers (%s)" % ",".join(PEER_ORDER))
    ap.add_argument("--out", help="directory for bench.json, bench.md and bench.png "
                    "(default: BUILD/bench-results, never in the source tree)")
    ap.add_argument("--publish", metavar="JSON",
                    help="run nothing: rewrite the README's table of published figures "
                    "(between its bench markers) from this bench.json of a full run")
    ap.add_argument("--readme", default=os.path.join(REPO, "README.md"),
                    help="the README --publish rewrites (default: the source tree's)")
    ap.add_argument("--allow-quick", action="store_true",
                    help="--publish a quick run's bench.json too")
    ap.add_argument("--b3-mib", type=float,
                    help="B3: MiB allocated per round (default: quick %d, full %d)" % (
                        MODES["quick"]["B3_bytes"] >> 20, MODES["full"]["B3_bytes"] >> 20))
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--plot-only", metavar="JSON", help=argparse.SUPPRESS)
    ap.add_argument("--png", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.publish:
        return publish_readme(args.publish, args.readme, args.allow_quick)
    if args.plot_only:
        with open(args.plot_only) as f:
            data = json.load(f)
        try:
            plot(data, args.png or os.path.splitext(args.plot_only)[0] + ".png")
        except ImportError:
            print("matplotlib not available in %s" % sys.executable)
            return 3
        return 0

    mode_name = "quick" if args.quick else "full"
    mode = dict(MODES[mode_name])
    if args.rounds:
        mode["rounds"] = mode["B8_rounds"] = mode["B9_rounds"] = mode["Bdfree_rounds"] = \
            args.rounds
    if args.repeats:
        mode["repeats"] = args.repeats
    if args.b3_mib:
        mode["B3_bytes"] = int(args.b3_mib * (1 << 20))
    configs = CONFIGS
    if args.only:
        names = {b.upper(): b for b in BENCH_TITLES}
        only = {b.strip().upper() for b in args.only.split(",")}
        bad = only - set(names)
        if bad:
            ap.error("unknown benchmark(s): %s" % ", ".join(sorted(bad)))
        only = {names[b] for b in only}
        configs = [c for c in CONFIGS if c[0] in only]
    wanted = None
    if args.peers:
        wanted = {p.strip() for p in args.peers.split(",")}
        bad = wanted - set(PEER_ORDER)
        if bad:
            ap.error("unknown peer(s): %s" % ", ".join(sorted(bad)))

    build = args.build
    if not os.path.isdir(build) and os.path.isdir(os.path.join(REPO, build)):
        build = os.path.join(REPO, build)
    build = os.path.abspath(build)
    if not args.out:
        args.out = os.path.join(build, "bench-results")

    log("bench: %s mode, %d rounds x %d samples per peer; build %s" % (
        mode_name, mode["rounds"], mode["repeats"], build))
    peers, missing = discover_peers(build, wanted)
    if any(b == "B-dfree" for b, _ in configs):
        discover_dfree(build, wanted)
    if missing:
        return 1
    if not peers:
        log("bench: nothing to run")
        return 1
    log("bench: peers: " + ", ".join(
        p + (" (LD_PRELOAD=%s)" % e["LD_PRELOAD"] if e else "") for p, _, e in peers))
    if any(p == "uslub" for p, _, _ in peers):
        log("bench: uslub's modes: uslub = %s; %s = %s (B1, B2, B4; B8 with %s)" % (
            USLUB_MODE["uslub"], CPUSLABS, USLUB_MODE[CPUSLABS],
            " ".join("%s=%s" % kv for kv in CPUSLABS_MALLOC_ENV.items())))
    info = machine_info(build)
    log("bench: %s, %d CPUs, load %.2f" % (info["cpu_model"], info["nproc"],
                                           info["loadavg_start"][0]))
    busy = info["loadavg_start"][0]
    if busy > 0.5 * (info["nproc"] or 1):
        log("bench: warning: the machine is busy (load %.2f on %d CPUs); B4 needs "
            "two idle CPUs, expect noisy numbers" % (busy, info["nproc"]))
    if (info["nproc"] or 1) < 2:
        log("bench: one CPU only: B4's two threads share it (no pinning)")

    results, failures, crashed = run_all(peers, configs, mode)
    info["loadavg_end"] = list(os.getloadavg())

    data = {"machine": info, "mode": mode_name,
            "settings": dict({k: v for k, v in mode.items() if k != "timeout"},
                             B2_ns=B2_NS, B2_sheaves_asked=B2_SHEAVES,
                             cpuslabs_env=CPUSLABS_ENV, cpuslabs_malloc_env=CPUSLABS_MALLOC_ENV,
                             B56_batch=B56_BATCH, B7_groups=B7_GROUPS, B7_objs=B7_OBJS,
                             Bdebug_spec=BDEBUG_SPEC,
                             Bmeta_caches=["%s=%s" % (l_, s_) for l_, s_, _ in BMETA_CACHES]),
            "peers": {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                      for p, a, e in peers}}
    if SUITE and any(b in SUITE_BENCHES for b, _ in configs):
        data["suite_peers"] = {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                               for p, a, e in SUITE}
        # kmalloc-64's sheaf capacity under each uslub mode (0: cpu slabs)
        data["suite_modes"] = dict(SUITE_MODES)
    if DFREE and any(b == "B-dfree" for b, _ in configs):
        data["dfree_peers"] = {b: {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                                   for p, a, e in ps} for b, ps in DFREE.items()}
    data.update(analyse(results, configs, peers, mode))
    if not args.only or "B-rcu" in only:
        brcu = run_brcu(build, mode_name)
        if brcu:
            data["B-rcu"] = brcu
    if failures:
        data["failures"] = failures

    table = print_table(data)
    # B4's own two threads raise the 1-minute load by up to 2: only more
    # than that means other work ran alongside.
    if info["loadavg_end"][0] > (info["nproc"] or 1) + 0.5:
        log("")
        log("bench: warning: load average was %.2f at the end (%.2f at the start) "
            "on %d CPUs: other work ran alongside, %sis noisy; "
            "see p25/p75" % (info["loadavg_end"][0], info["loadavg_start"][0],
                             info["nproc"], "B4 especially " if "B4" in data else "timing "))

    os.makedirs(args.out, exist_ok=True)
    jpath = os.path.join(args.out, "bench.json")
    tmp = jpath + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, jpath)
    mpath = os.path.join(args.out, "bench.md")
    with open(mpath, "w") as f:
        f.write("# uslub benchmark results\n\n")
        f.write("Written by `%s` (%s mode) on %s, %s, %d CPUs, commit %s.\n\n" % (
            "make bench" if mode_name == "full" else "make bench-quick", mode_name,
            info.get("date", "?"), info.get("cpu_model", "?"), info.get("nproc") or 0,
            info.get("git_commit", "?")))
        f.write("```\n" + "\n".join(l for l in table).strip("\n") + "\n```\n")
        f.write("\n![benchmarks](bench.png)\n")
    log("")
    log("bench: wrote %s" % shown(jpath))
    log("bench: wrote %s" % shown(mpath))
    if mode_name == "full":
        log("bench: to publish these figures in the README: python3 bench/run.py "
            "--publish %s" % shown(jpath))
    if not args.no_plot:
        png = os.path.join(args.out, "bench.png")
        if make_plot(data, jpath, png):
            log("bench: wrote %s" % shown(png))
    if failures:
        log("bench: %d run(s) failed:" % len(failures))
        for f_ in failures:
            log("  " + f_.splitlines()[0])
    return 1 if crashed else 0


README_BEGIN = "<!-- bench:begin (generated by `make bench-publish` from a bench.json; do not edit) -->"
README_END = "<!-- bench:end -->"
README_BEGIN_PREFIX = "<!-- bench:begin"


def md_cell(text):
    return str(text).replace("|", "\\|").strip()


def published_table(data):
    """The README's one table of figures: every target row of @data (a
    full run's bench.json), with where and when it was measured."""
    info = data.get("machine", {})
    peers = info.get("peer_versions", {})
    out = ["Last published run: `%s` (%s mode), %s, %s, %d CPUs, Linux %s, "
           "commit %s%s, %s, %s." % (
               "make bench" if data.get("mode") == "full" else "make bench-quick",
               data.get("mode", "?"), info.get("date", "?")[:10],
               info.get("cpu_model", "?"), info.get("nproc") or 0, info.get("kernel", "?"),
               info.get("git_commit", "?")[:10], " (uncommitted changes)"
               if info.get("git_dirty") else "", info.get("build_type", "?"),
               info.get("compiler", "?"))]
    if peers:
        out[0] += " Peers: %s." % "; ".join(
            "%s %s" % (p, v.split(" (")[0]) for p, v in peers.items())
    out += ["",
            "Each ratio is the figure of uslub (or of the variant the target names) over "
            "the one its target compares it with (< 1.00x: faster or smaller); the "
            "per-benchmark tables behind the rows are in the run's `bench.md`.",
            "",
            "| bench | size / n | target | measured | verdict |",
            "|---|---|---|---|---|"]
    for r in target_rows(data):
        target, measured, verdict = r["target"], r["measured"], r["verdict"]
        if r["style"] == "note":
            target = data[r["bench"]].get("note", target)
            verdict = "report"
        out.append("| %s |" % " | ".join(md_cell(c) for c in (
            r["bench"], r["config"], target, measured or "-", verdict)))
    return out


def publish_readme(json_path, readme, allow_quick=False):
    """Rewrite the README's block between its bench markers with the table
    of @json_path: the README's only figures, never typed by hand. 0, or 1
    with a message."""
    try:
        with open(json_path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        log("bench: --publish: cannot read %s: %s" % (json_path, e))
        return 1
    if data.get("mode") != "full" and not allow_quick:
        log("bench: --publish: %s comes from a %s run; the README publishes full runs "
            "(`make bench`); --allow-quick to publish it anyway" % (
                json_path, data.get("mode", "?")))
        return 1
    try:
        with open(readme) as f:
            text = f.read()
    except OSError as e:
        log("bench: --publish: %s" % e)
        return 1
    a = text.find(README_BEGIN_PREFIX)
    b = text.find(README_END, a + 1) if a >= 0 else -1
    if a < 0 or b < 0 or text.find(README_BEGIN_PREFIX, a + 1) >= 0:
        log("bench: --publish: %s needs exactly one %s ... %s block" % (
            readme, README_BEGIN_PREFIX, README_END))
        return 1
    block = README_BEGIN + "\n\n" + "\n".join(published_table(data)) + "\n\n"
    new = text[:a] + block + text[b:]
    if new != text:
        tmp = readme + ".tmp"
        with open(tmp, "w") as f:
            f.write(new)
        os.replace(tmp, readme)
        log("bench: published %d rows of %s in %s" % (
            len(target_rows(data)), shown(json_path), shown(readme)))
    else:
        log("bench: %s already shows %s" % (shown(readme), shown(json_path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
