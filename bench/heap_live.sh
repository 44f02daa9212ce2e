#!/bin/bash
# How long `uslub heap PID` takes on a live process holding 10^7 objects
# (about 1 GiB; issue 30's target: under a second): the process
# (uslub-bench-heaphold, under LD_PRELOAD of libuslub-malloc.so in sampled
# mode, publishing with USLUB_PUBLISH_MS=200 into a private
# USLUB_PUBLISH_ROOT) allocates, says ready, and waits; once a dump taken
# after that is published, `uslub heap PID` (folded stacks) and
# `uslub heap -o x.pb.gz PID` are timed N times each (wall), and the
# medians printed with the process's RSS, its stacks and the top of the
# profile. Writes nothing outside a temporary directory.
#
#   bench/heap_live.sh [BUILD] [N] [OBJECTS]    (default build, 5, 10000000)
set -u
build=${1:-build}
n=${2:-5}
objs=${3:-10000000}
tool=$build/uslub
lib=$(readlink -f "$build/libuslub-malloc.so")
hold=$build/bench/uslub-bench-heaphold
[ -x "$tool" ] && [ -f "$lib" ] && [ -x "$hold" ] || { echo "heap_live.sh: build first ($build)"; exit 1; }
T=$(mktemp -d) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT
mkdir -m 700 "$T/pub"
export USLUB_PUBLISH_ROOT=$T/pub
mkfifo "$T/in"
USLUB_PUBLISH_MS=200 LD_PRELOAD="$lib" "$hold" "$objs" <"$T/in" >"$T/out" 2>&1 &
pid=$!
exec 3>"$T/in"
for _ in $(seq 600); do grep -q ready "$T/out" && break; sleep 0.1; done
grep -q ready "$T/out" || { echo "heap_live.sh: the process never got ready: $(cat "$T/out")"; exit 1; }
ready=$(date +%s.%N)
# when the dump in FILE was taken: its header's "heap dump at SECONDS"
# (the time is read before the stacks are: a later one holds all that
# was allocated before it), 0 without one
dumped() { sed -n '1s/.*heap dump at \([0-9.]*\).*/\1/p' "$1" 2>/dev/null | grep . || echo 0; }
dump="$T/pub/uslub-$(id -u)/$pid.heap"
for _ in $(seq 100); do          # a dump written after "ready"
	[ -f "$dump" ] && awk -v m="$(dumped "$dump")" -v r="$ready" 'BEGIN { exit !(m > r) }' &&
		break
	sleep 0.1
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
timed() {       # COMMAND...: seconds (wall) of one run
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || { echo "heap_live.sh: failed: $*" >&2; echo 999; return; }
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f\n", d / 1e9 }'
}
folded=$(for ((i = 0; i < n; i++)); do timed "$tool" heap "$pid"; done | median)
pprof=$(for ((i = 0; i < n; i++)); do timed "$tool" heap -o "$T/x.pb.gz" "$pid"; done | median)
rss=$(awk '/VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$pid/status")
read -r _ nobj bytes <"$T/out"
printf 'process: %s objects, %s bytes requested, RSS %s; dump %s bytes, %s stacks\n' \
	"$nobj" "$bytes" "$rss" "$(stat -c %s "$dump")" "$(grep -c '^stack' "$dump")"
printf '%-40s %8s s (median of %d)   target < 1 s: %s\n' "uslub heap PID (folded)" "$folded" "$n" \
	"$(awk -v t="$folded" 'BEGIN { print t < 1 ? "met" : "MISSED" }')"
printf '%-40s %8s s (median of %d)   target < 1 s: %s\n' "uslub heap -o x.pb.gz PID" "$pprof" "$n" \
	"$(awk -v t="$pprof" 'BEGIN { print t < 1 ? "met" : "MISSED" }')"
echo "the profile (uslub heap PID):"
"$tool" heap "$pid" | cut -c1-160
exec 3>&-
wait "$pid"
pid=
