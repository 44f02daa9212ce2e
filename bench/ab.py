#!/usr/bin/env python3
"""A/B of two uslub builds on the hot paths: B1 (64 B hot pair: the typed
cache, and malloc(64)+free through the preloaded library) and B8 (the
malloc workloads). Each round runs every case once under A and once under
B, in alternating order, one process each; the table gives the medians
and the ratio B / A (below 1: B is faster), then each hot path's static
instructions to its first ret in A and B (run.py's hot-path rows, from
the package bench/uslub_bench). For "did this change cost anything",
where `make bench` compares uslub with its peers.

  python3 bench/ab.py OLD NEW [--rounds N] [--quick]

OLD and NEW are build folders (BUILD/bench/uslub-bench-*, BUILD/libuslub-
malloc.so) or folders holding those four files side by side. Timings on
a shared machine are noisy: count instructions (../shared/tools/
instr-per-op.sh, callgrind) where the ratio is within a few percent.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from uslub_bench.config import B8_WORKLOADS as B8  # noqa: E402
from uslub_bench.hotpath import HOT_PATHS, disassemble, instr_to_ret  # noqa: E402

BINS = ["uslub-bench-uslub", "uslub-bench-malloc", "uslub-bench-mallocsuite",
        "libuslub-malloc.so"]
# where each hot path's code is in the four files: the typed pair is linked
# statically into uslub-bench-uslub
HOT_FILES = {"libuslub.so": "uslub-bench-uslub"}


def locate(root):
    found = {}
    for name in BINS:
        for d in (os.path.join(root, "bench"), root):
            p = os.path.join(d, name)
            if os.path.exists(p):
                found[name] = os.path.realpath(p)
                break
        else:
            sys.exit(f"ab.py: no {name} under {root}")
    return found


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    lines = [l for l in out.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def cases(quick):
    iters = "500000" if quick else "2000000"
    yield ("B1 typed 64 B (ns/pair)",
           lambda b: ([b["uslub-bench-uslub"], "--bench", "B1", "--size", "64",
                       "--iters", iters, "--repeats", "3"], {}),
           lambda j: statistics.median(j["samples_ns"]))
    yield ("B1 malloc(64)+free (ns/pair)",
           lambda b: ([b["uslub-bench-malloc"], "--bench", "B1", "--size", "64",
                       "--iters", iters, "--repeats", "3"],
                      {"LD_PRELOAD": b["libuslub-malloc.so"]}),
           lambda j: statistics.median(j["samples_ns"]))
    for w in B8:
        yield (f"B8 {w} (ms)",
               lambda b, w=w: ([b["uslub-bench-mallocsuite"], "--workload", w, "--seed", "1"]
                               + (["--quick"] if quick else ["--scale", "0.25"]),
                               {"LD_PRELOAD": b["libuslub-malloc.so"]}),
               lambda j: j["time_ns"] / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    builds = {"A": locate(a.old), "B": locate(a.new)}
    rows = list(cases(a.quick))
    got = {(name, k): [] for name, _, _ in rows for k in builds}
    for r in range(a.rounds):
        order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
        for name, mk, pick in rows:
            for k in order:
                cmd, extra = mk(builds[k])
                env = dict(os.environ, **extra)
                got[(name, k)].append(pick(run_json(cmd, env)))
    print(f"A = {a.old}\nB = {a.new}\n{a.rounds} rounds, medians, alternating order\n")
    print(f"{'case':34} {'A':>10} {'B':>10} {'B/A':>7}")
    ratios = []
    for name, _, _ in rows:
        ma = statistics.median(got[(name, "A")])
        mb = statistics.median(got[(name, "B")])
        ratios.append(mb / ma)
        print(f"{name:34} {ma:10.2f} {mb:10.2f} {mb / ma:7.3f}")
    b8 = ratios[2:]
    print(f"{'B8 geometric mean':34} {'':10} {'':10} "
          f"{statistics.geometric_mean(b8):7.3f}")
    print(f"\n{'instructions to the first ret':34} {'A':>10} {'B':>10} {'B-A':>7}")
    for name, lib, _, fns in HOT_PATHS:
        counts = {}
        for k, b in builds.items():
            dis = disassemble(b[HOT_FILES.get(lib, lib)])
            n = [dis and (instr_to_ret(dis, fn) or (alias and instr_to_ret(dis, alias)))
                 for fn, alias in fns]
            counts[k] = sum(n) if all(n) else None
        a_, b_ = counts["A"], counts["B"]
        print(f"{name:34} {a_ if a_ is not None else 'n/a':>10} "
              f"{b_ if b_ is not None else 'n/a':>10} "
              f"{b_ - a_ if a_ is not None and b_ is not None else '-':>7}")


if __name__ == "__main__":
    main()
