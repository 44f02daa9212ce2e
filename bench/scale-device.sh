#!/usr/bin/env bash
# B-scale on a bigger machine, in one prepared step: runs
#   python3 bench/run.py --only B-scale --scale-threads MAX --rounds R
# on an already-built build folder (nothing is built or downloaded: the
# machine may have no network), and writes bench.json, bench.md and
# bench.png under $OUT/scale when OUT is set, else BUILD/bench-results-scale.
#
# Usage: bench/scale-device.sh [BUILD] [MAX_THREADS] [ROUNDS]
#   BUILD        the build folder (default: build); it must hold
#                bench/uslub-bench-mallocsuite and libuslub-malloc.so, and
#                BUILD/peers/mimalloc-3.4/ (bench/install-peers.sh) for the
#                mimalloc-3.4 peer, or set USLUB_BENCH_MIMALLOC3
#   MAX_THREADS  the largest thread count (default 64: 1, 2, 4, .., 64)
#   ROUNDS       interleaved rounds per point (default 2)
# Peers the machine lacks (jemalloc, tcmalloc, mimalloc 2.0 are Debian
# packages) are skipped with a line each. Sized for a 16-core machine: 3
# workloads x 7 thread counts x up to 7 peers x 2 rounds, about 300
# processes of 0.1..1 s, under 8 minutes; each process has run.py's 180 s
# limit. Exit status: run.py's (0 when every run completed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
max=${2:-64}
rounds=${3:-2}
if [ ! -x "$build/bench/uslub-bench-mallocsuite" ]; then
	echo "scale-device: $build/bench/uslub-bench-mallocsuite not found (build first)" >&2
	exit 2
fi
out=${OUT:+$OUT/scale}
out=${out:-$build/bench-results-scale}
mkdir -p "$out"
echo "scale-device: $(nproc) CPUs, $(uname -r), B-scale up to $max threads, $rounds rounds -> $out"
exec python3 "$here/run.py" --build "$build" --only B-scale --scale-threads "$max" \
	--rounds "$rounds" --out "$out"
