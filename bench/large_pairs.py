#!/usr/bin/python3
"""Large blocks' malloc+free pairs, interleaved medians (bench/large_pair.c).

  large_pairs.py [--rounds N] [--sizes 100000,1000000,...] [--touch 0,1,2]
                 NAME=LIB[,VAR=VALUE...] ...

Each NAME=LIB is a libuslub-malloc.so (or "none": no LD_PRELOAD) with the
environment it runs under, e.g.

  bench/large_pairs.py main=/tmp/base/libuslub-malloc.so \\
      stacks=build/libuslub-malloc.so \\
      depth0=build/libuslub-malloc.so,USLUB_STACK_DEPTH=0 \\
      prof0=build/libuslub-malloc.so,USLUB_PROFILING=0

Every round runs each size, touch and NAME once (about 0.12 s each, the
iterations from a first calibration run), so that the machine's drift
falls on all of them alike; prints the median ns per pair (thread CPU
time) and each NAME against the first.
"""
import argparse, os, statistics, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--sizes", default="100000,1000000,4000000,16000000")
ap.add_argument("--touch", default="0,1,2")
ap.add_argument("--prog", default=os.path.join(here, "..", "build", "bench", "uslub-bench-largepair"))
ap.add_argument("libs", nargs="+")
a = ap.parse_args()
modes = []
for spec in a.libs:
    name, _, rest = spec.partition("=")
    parts = rest.split(",")
    env = dict(p.split("=", 1) for p in parts[1:])
    if parts[0] != "none":
        env["LD_PRELOAD"] = os.path.abspath(parts[0])
    modes.append((name, env))
sizes = [int(s) for s in a.sizes.split(",")]
touches = [int(t) for t in a.touch.split(",")]


def run(env, size, touch, n):
    e = dict(os.environ)
    e.update(env)
    out = subprocess.run([a.prog, str(size), str(n), str(touch)], env=e,
                         capture_output=True, text=True, check=True).stdout
    return float(out)


est = {(s, t): run(modes[0][1], s, t, 200) for s in sizes for t in touches}
res = {}
for r in range(a.rounds):
    for s in sizes:
        for t in touches:
            n = max(30, int(0.12e9 / est[(s, t)]))
            for name, env in modes:
                res.setdefault((s, t, name), []).append(run(env, s, t, n))
names = [m[0] for m in modes]
print("%-9s %-6s " % ("size", "touch") + " ".join("%9s" % n for n in names))
for s in sizes:
    for t in touches:
        med = [statistics.median(res[(s, t, n)]) for n in names]
        print("%-9d %-6s " % (s, ["bare", "page", "memset"][t]) +
              " ".join("%9.0f" % x for x in med) + "  " +
              " ".join("%+.1f%%" % (100 * (x / med[0] - 1)) for x in med[1:]))
sys.stdout.flush()
