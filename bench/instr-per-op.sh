#!/bin/sh
# Instructions per malloc+free, counted with callgrind.
#
#   bench/instr-per-op.sh [--build DIR] [VAR=VALUE ...] LIB [[VAR=VALUE ...] LIB ...]
#
# For each LIB runs build/bench/uslub-bench-churn (bench/churn.c: random
# replacement among 8192 live objects of 8..255 B) under
# `valgrind --tool=callgrind` with LD_PRELOAD=LIB, once with 300000 and
# once with 100000 operations, and prints (Ir(300k) - Ir(100k)) / 200000:
# the start-up (the dynamic loader, the allocator's initialization, the
# fill of the 8192 slots) is the same in both runs and cancels out.
#
# One operation is one free() and one malloc() plus the loop around them
# (a xorshift random number, the slot, the size, one byte written): the
# per-op count includes the loop's own ~35 instructions. The script prints
# that part too ("loop", main's own instructions counted the same way), and
# the difference ("alloc", the allocator's malloc+free).
#
# LIB "glibc" (or "none") runs without LD_PRELOAD. VAR=VALUE arguments go
# into the environment of every LIB after them, so both uslub modes can be
# counted in one call:
#
#   bench/instr-per-op.sh build/libuslub-malloc.so \
#       USLUB_CPU_SLABS=1 USLUB_KMALLOC_SHEAVES=0 build/libuslub-malloc.so
#
# (malloc's kmalloc caches keep their sheaves with USLUB_CPU_SLABS=1 alone
# while USLUB_KMALLOC_SHEAVES defaults to 1). A bare "--" clears the
# assignments given so far. Exit status: 0, 1 when a run failed, 2 on
# bad usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
hi=300000
lo=100000

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

[ $# -gt 0 ] || usage
if [ "$1" = "--build" ]; then
	[ $# -ge 2 ] || usage
	build=$2
	shift 2
fi
case "${1:-}" in -h|--help) usage ;; esac

churn="$build/bench/uslub-bench-churn"
[ -x "$churn" ] || { echo "instr-per-op: $churn not found (cmake --build $build)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "instr-per-op: valgrind not found (Debian: valgrind)" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "instr-per-op: callgrind_annotate not found" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/instr-per-op.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# count N ENV PRELOAD: prints "TOTAL MAIN" (Ir of the whole run, main's own Ir)
count() {
	out="$tmp/cg.$1"
	if [ -n "$3" ]; then
		env $2 LD_PRELOAD="$3" valgrind --tool=callgrind --callgrind-out-file="$out" \
			"$churn" "$1" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; return 1; }
	else
		env $2 valgrind --tool=callgrind --callgrind-out-file="$out" \
			"$churn" "$1" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; return 1; }
	fi
	callgrind_annotate --inclusive=no "$out" 2>/dev/null | awk '
		/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
		/:main / && /uslub-bench-churn\]/ { gsub(",", "", $1); main = $1 }
		END { if (total == "") exit 1; print total, (main == "" ? 0 : main) }'
}

envs=""
status=0
printf '%-44s %-40s %9s %7s %7s\n' "library" "environment" "instr/op" "loop" "alloc"
for arg in "$@"; do
	case "$arg" in
	--) envs=""; continue ;;
	*=*) envs="$envs $arg"; continue ;;
	esac
	lib=$arg
	case "$lib" in
	glibc|none) preload="" ;;
	*)
		[ -f "$lib" ] || { echo "instr-per-op: $lib: no such file" >&2; status=1; continue; }
		preload=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib") ;;
	esac
	if ! a=$(count $hi "$envs" "$preload") || ! b=$(count $lo "$envs" "$preload"); then
		echo "instr-per-op: $lib: the run failed" >&2
		status=1
		continue
	fi
	echo "$a $b" | awk -v lib="$lib" -v env="${envs# }" -v n=$((hi - lo)) '{
		per = ($1 - $3) / n; loop = ($2 - $4) / n
		printf "%-44s %-40s %9.1f %7.1f %7.1f\n", lib, (env == "" ? "-" : env), per, loop, per - loop
	}'
done
exit $status
