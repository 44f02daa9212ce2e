"""What the driver runs and how: the benchmarks' names, titles and units, the
peers, each benchmark family's settings and targets' limits, the quick and
full modes, the configurations (CONFIGS), and the tables discovery fills
in (SUITE, SUITE_MODES, DFREE, SKIPPED). Every other module imports from
here; this one imports nothing of the package."""

import os


# bench/ (this package's parent), the source tree, and the driver script
# (make_plot() runs it again under another python3 for the PNG)
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(HERE)
RUN_PY = os.path.join(HERE, "run.py")

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
    "B-scale": "scaling: malloc workloads at 1, 2, 4, .. up to 4x the CPUs threads",
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
    "B-scale": "ms per workload run (a fixed total of operations shared by the threads); "
               "peak RSS (VmHWM) in MiB",
}
BENCH_ORDER = ["B1", "B2", "B3", "B4", "B5", "B6", "B6-acc", "B7", "B-meta", "B-debug", "B8",
               "B9", "B-scale", "B-dfree", "B-rcu"]

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
# The third mode, "uslub-percpu": the same binary or library with
# USLUB_PERCPU=cpu, whose sheaves belong to the thread's rseq concurrency id
# (mm_cid, else the CPU) instead of to each thread, so the memory they
# cache is bounded by CPUs, not threads. B1, B8, B9 and B-scale run it,
# interleaved in the same rounds. Without rseq (or on several NUMA nodes)
# the library stays per thread with a one-line note: discover_percpu()
# probes that once and then leaves the mode out, its rows and targets
# saying "not available (no rseq)" (PERCPU_STATE); run_one() checks every
# run's "percpu_mode" (the result lines of bench_uslub.c and
# bench_malloc_suite.c give it) is "cpu".
PERCPU = "uslub-percpu"
PERCPU_ENV = {"USLUB_PERCPU": "cpu"}
# filled by discover_percpu(): {"available": True/False, "why": text when
# not, "percpu_ids": ids the probe used}; empty until probed
PERCPU_STATE = {}
USLUB_SERIES = ["uslub", CPUSLABS, PERCPU]
USLUB_MODE = {"uslub": "per-CPU sheaves (Linux 7.0, the default), each thread's own",
              CPUSLABS: "cpu slabs, USLUB_CPU_SLABS=1 (Linux 6.x)",
              PERCPU: "per-CPU sheaves of the rseq id (mm_cid), USLUB_PERCPU=cpu"}
# The per-CPU mode's own targets (issue text): per-CPU / per-thread mode
# time <= PERCPU_COST_LIMIT on B1 and the B8 geomean, <= PERCPU_OVERSUB_LIMIT
# on the threaded B8 workloads (PERCPU_THREADED) that run more threads than
# the machine has CPUs; those workloads against mimalloc 3.4 (time <=
# PERCPU_THREADED_TIME_LIMIT, peak RSS <= PERCPU_THREADED_RSS_LIMIT); B9
# flat: slope <= PERCPU_B9_SLOPE KiB per thread from the fewest to the most
# threads, and held at the fewest <= the per-thread mode's (ratio <=
# PERCPU_B9_FEWEST_LIMIT). B-scale's targets are every mode's
# (BSCALE_USLUB_MODES).
PERCPU_COST_LIMIT = 1.10
PERCPU_OVERSUB_LIMIT = 1.0
PERCPU_THREADED = ["threads", "tloop", "mstress", "larson", "xmalloc"]
PERCPU_THREADED_VS = MIMALLOC3
PERCPU_THREADED_TIME_LIMIT = 1.0
PERCPU_THREADED_RSS_LIMIT = 0.8
PERCPU_B9_SLOPE = 5.0
PERCPU_B9_FEWEST_LIMIT = 1.0
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
# filled by run_all(): bench -> peer -> wall seconds of its processes (what
# each peer costs the run; bench.json's "run_seconds")
RUN_SECONDS = {}
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
# neither, so their extensions go to a separate array. B-meta runs with
# profiling off, where an accounted cache's extension is one word.
BMETA_CACHES = [
    ("ext4_inode_cache-like", "1184+hw", "leftover"),
    ("xfs_inode-like", "984/64", "padding"),
    ("64B", "64", "array"),
    # 120 B in a 128-byte stride: 8 bytes of padding, room for the one-word
    # extension of Linux 7.3 but not for the two-word one (an array before)
    ("120B-in-128", "120/64", "padding"),
]
# B-meta's second process: exact profiling (USLUB_PROFILING=1), where the
# plain twin is a profiled cache (a tag-only extension) and the accounted
# cache has both words: the two-word layout of every extension before
# Linux 7.3, so its placement and bytes are the "before" of each row.
BMETA_PROFILED = "uslub-prof"
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
    "waves-lifo": "1 thread: 200 waves (at --scale 1) of 50000 objects of 8..128 B allocated, "
                  "then all freed, last first",
    "waves-fifo": "the same waves, each freed first allocated first",
    "waves-shuffle": "the same waves, each freed in a seeded shuffled order",
    "waves-4t": "4 threads, 51 waves each of 50000 objects; the order (lifo, fifo, shuffle) "
                "rotates per wave",
    "tloop": "4 threads each a fixed loop over its own 1024 blocks: free a random one, "
             "allocate 8 B..32 KiB (log-uniform by octave)",
    "mstress": "40 rounds of 8 threads living ~1 ms: allocate 8..511 B (1/64: 1..64 KiB), "
               "swap objects through shared slots, free, exit",
    "larson": "4 threads replace random objects (8..511 B) of a live set of 1000, swapping "
              "sets through a mailbox every 2000: frees of other threads' objects",
    "xmalloc": "2 producer threads allocate 8..511 B, each one's consumer thread frees them",
}
# The large-block row: a B8 workload run and printed with the others, but
# outside the geometric means (which stay over B8_WORKLOADS, comparable
# with earlier results); its own target is against glibc, in time and in
# minor page faults.
B8_LARGE = "large"
B8_LARGE_VS = "glibc"
B8_LARGE_LIMIT = 1.2
# The waves rows: programs that allocate and free in waves (sh6bench- and
# sh8bench-like: K objects allocated, then all freed, again and again), so
# every wave's objects swing through the slab layer. Run and printed with
# the others, outside the geometric means like the large-block row; each
# has its own target, its time against mimalloc 3.4's.
B8_WAVES = ["waves-lifo", "waves-fifo", "waves-shuffle", "waves-4t"]
B8_WAVES_VS = "mimalloc-3.4"
B8_WAVES_LIMIT = 1.0
# The threaded rows (issue 29): programs like an external suite's threaded
# benchmarks, each added with the cause of uslub's time it reproduces
# (bench/README.md, "The threaded rows"): tloop (glibc bench-malloc-thread-
# like), mstress (short-lived threads in rounds), larson and xmalloc
# (objects freed by other threads). Outside the geometric means, each with
# its own target: time <= B8_THREADED_LIMIT x B8_THREADED_VS.
B8_THREADED = ["tloop", "mstress", "larson", "xmalloc"]
B8_THREADED_VS = "mimalloc-3.4"
B8_THREADED_LIMIT = 1.0
# the rows outside the geometric means (and outside the worst-workload
# target), each with targets of its own: (row, peer, time limit)
B8_OWN_ROWS = [B8_LARGE] + B8_WAVES + B8_THREADED
B8_ROW_TARGETS = [(w, B8_WAVES_VS, B8_WAVES_LIMIT) for w in B8_WAVES] + \
    [(w, B8_THREADED_VS, B8_THREADED_LIMIT) for w in B8_THREADED]
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
SUITE_PEERS = ["uslub", CPUSLABS, PERCPU, "glibc", "jemalloc", "mimalloc", MIMALLOC3, "tcmalloc"]
SUITE_OTHERS = [p for p in SUITE_PEERS if p not in USLUB_SERIES]
# B9 runs the default mode (uslub) and the per-CPU mode (uslub-percpu, whose
# target it is), not the cpu-slab mode: its 512-thread processes are long.
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
# B-scale: the malloc suite's threaded workloads at 1, 2, 4, .. threads up
# to BSCALE_FACTOR x the CPUs (os.cpu_count(); --scale-threads MAX sets
# the last), each a fixed total of operations divided among the threads,
# so the time against the thread count is the scaling curve (on N CPUs
# it should fall to N threads and stay flat beyond). (name, the suite's
# --workload): larson (live sets handed between threads), xmalloc (one
# producer per consumer) and churn (each thread its own live set: the
# suite's "threads").
BSCALE = "B-scale"
BSCALE_WORKLOADS = [("larson", "larson"), ("xmalloc", "xmalloc"), ("churn", "threads")]
BSCALE_FACTOR = 4
# uslub's modes in B-scale: (peer, environment added to LD_PRELOAD of
# libuslub-malloc.so). One row per mode; a mode chosen by an environment
# variable is one more row here (an unknown USLUB_ variable is ignored, so
# a row for a mode the library lacks would measure the default mode: the
# per-CPU one is checked, PERCPU_STATE and run_one()).
BSCALE_USLUB_MODES = [
    ("uslub", {}),
    (CPUSLABS, CPUSLABS_MALLOC_ENV),
    (PERCPU, PERCPU_ENV),
]
# Targets, per uslub mode and workload: at every thread count, time <=
# BSCALE_TIME_LIMIT x and peak RSS <= BSCALE_RSS_LIMIT x BSCALE_VS's.
BSCALE_VS = MIMALLOC3
BSCALE_TIME_LIMIT = 1.0
BSCALE_RSS_LIMIT = 0.8
# filled by discover_bscale(): [(peer, argv0, extra_env)], uslub's modes first
BSCALE_PEERS = []


def bscale_threads(max_threads=None):
    """B-scale's thread counts: 1, 2, 4, .. below @max_threads (default
    BSCALE_FACTOR x the CPUs), then @max_threads itself."""
    top = max_threads or BSCALE_FACTOR * (os.cpu_count() or 1)
    out, n = [], 1
    while n < top:
        out.append(n)
        n *= 2
    return out + [top]


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
PEER_ORDER = ["uslub", CPUSLABS, PERCPU, "uslub-hardened", USLUB_MALLOC, "dpdk", "glibc", "jemalloc",
              "mimalloc", MIMALLOC3, "tcmalloc"]
# Variants of uslub's binary that peers_for() adds beside "uslub" (--peers
# uslub selects them too).
USLUB_VARIANTS = ("uslub-hardened", CPUSLABS, PERCPU)
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
    # Bscale_rounds, Bscale_scale: B-scale's rounds and the suite's --scale.
    "quick": {"rounds": 5, "repeats": 3, "B1_iters": 5_000_000,
              "B4_objects": 1_500_000, "B2_objects": 500_000,
              "B3_bytes": 64 << 20, "B5_iters": 5_000_000,
              "B6acc_bytes": 64 << 20, "B6acc_repeats": 4,
              "B8_rounds": 2, "B9_rounds": 2, "B8_scale": 0.25, "B8_phase1_mib": 64,
              "B8_purge_ms": 1500, "Bdfree_rounds": 5, "Bscale_rounds": 2,
              "Bscale_scale": 0.05, "timeout": 60},
    "full": {"rounds": 7, "repeats": 3, "B1_iters": 20_000_000,
             "B4_objects": 5_000_000, "B2_objects": 2_000_000,
             "B3_bytes": 256 << 20, "B5_iters": 20_000_000,
             "B6acc_bytes": 128 << 20, "B6acc_repeats": 8,
             "B8_rounds": 5, "B9_rounds": 5, "B8_scale": 1.0, "B8_phase1_mib": 200,
             "B8_purge_ms": 1500, "Bdfree_rounds": 9, "Bscale_rounds": 3,
             "Bscale_scale": 1.0, "timeout": 180},
}

# What each benchmark runs: (bench, object size).
CONFIGS = [("B1", 64), ("B1", 256), ("B2", 64),
           ("B3", 16), ("B3", 32), ("B3", 64), ("B3", 128), ("B3", 256), ("B3", 512),
           ("B4", 64),
           ("B5", 64), ("B5", 256), ("B6", 64), ("B6", 256), ("B6-acc", 0),
           ("B7", 512), ("B7", 192), ("B-meta", 0), ("B-debug", 64), ("B-debug", 256)] + \
    [("B8", w) for w in B8_WORKLOADS + B8_OWN_ROWS] + [("B9", n) for n in B9_THREADS] + \
    [(BSCALE, (w, n)) for w, _ in BSCALE_WORKLOADS for n in bscale_threads()] + \
    [("B-dfree", sub) for sub in BDFREE_SUBS]
# Benchmarks with their own analysis and table (not one row per peer).
OWN = ("B2", "B3", "B5", "B6", "B6-acc", "B7", "B-meta", "B-debug", "B8", "B9", "B-dfree",
       BSCALE)


def _log(msg=""):
    print(msg, flush=True)


log = _log


def shown(path):
    """@path relative to the current directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
