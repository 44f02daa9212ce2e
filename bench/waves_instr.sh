#!/bin/sh
# The waves workloads counted in instructions (callgrind), and the slabs
# uslub makes as the waves go on.
#
#   bench/waves_instr.sh [--build DIR] [--waves LO,HI] [--slab-waves N]
#                        [--only instr|slabs]
#
# Part 1 ("instr"): for each single-thread waves workload of
# uslub-bench-mallocsuite (waves-lifo, waves-fifo, waves-shuffle: waves of
# 50,000 objects of 8..128 B, all allocated then all freed; see
# bench_malloc_suite.c) runs it under `valgrind --tool=callgrind` with
# LD_PRELOAD of uslub's malloc (BUILD/libuslub-malloc.so), of mimalloc 3.4
# (BUILD/peers/mimalloc-3.4/libmimalloc.so.3.4, which
# `bench/install-peers.sh BUILD` fetches) and of Debian's mimalloc 2.0
# (libmimalloc.so.2) when present; a library that is missing gets a
# "skipped" line. Each is run twice, with LO and HI waves (default 4 and
# 12), and the figures are the differences of the two runs divided by the
# difference of their objects: the start-up (the dynamic loader, the
# allocator's initialization, the program's own set-up) is the same in
# both and cancels out, and so does the first wave, the one that makes the
# memory in the first place.
#
# The allocator's instructions are the run's total Ir minus the Ir of the
# code of the benchmark binary itself (the waves loop: random sizes, the
# bytes written and checked, the shuffle). They are counted per ELF object
# from the callgrind profile itself: each cost line belongs to the object
# named by the last "ob=" line before it (names compressed as "(id) name"
# are expanded, cost lines after a "calls=" line are inclusive costs of a
# call and are not self cost). That is robust where callgrind_annotate's
# per-function listing is not: it files inlined code under the header it
# came from ("slab.h:free") and prints the object in brackets only on some
# lines, and it drops functions below its threshold. What remains (the
# preloaded allocator, and whatever it calls in libc or the kernel's vDSO)
# is the allocator's cost of one malloc + one free per object.
#
#   workload       allocator      Ir/object  bench  alloc  alloc/mi-3.4
#
# Ir/object: all instructions per object (one malloc, one free, the loop);
# bench: the benchmark binary's share; alloc = Ir/object - bench;
# alloc/mi-3.4: this allocator's alloc over mimalloc 3.4's (uslub's row is
# the ratio to compare; below 1: fewer instructions than mimalloc 3.4).
#
# For uslub the HI run also gets USLUB_REPORT (uslub's slabinfo with its
# SLUB counters, written to a file at exit; src/malloc/malloc.c), from
# which the counters of every cache are summed: SHEAF_FLUSH (objects
# flushed from a sheaf to slabs), SHEAF_REFILL (objects refilled into a
# sheaf from slabs), ALLOC_SLAB (slabs made) and FREE_SLAB (slabs given
# back). "flush+refill Ir/obj" is the inclusive Ir of the sheaf flush and
# refill paths over the objects flushed plus refilled: the inclusive Ir of
# flush_sheaf and refill_sheaf (src/sheaf/sheaf.c) when the profile has
# them; they are static and usually inlined, and then of what they call,
# _uslub_free_to_slabs and _uslub_refill_objects (src/slub/bulk.c; the
# line names the functions used). Inclusive = the function's self cost
# plus the inclusive cost of its calls, from the same profile.
#
# Part 2 ("slabs"): waves-lifo under uslub without valgrind, with N and 2N
# waves (default N = 20), each with USLUB_REPORT: ALLOC_SLAB and FREE_SLAB
# summed over the caches, and the ratio ALLOC_SLAB(2N) / ALLOC_SLAB(N). An
# allocator that keeps what one wave needed for the next makes its slabs
# in the first wave: the ratio is then near 1 (the target is <= 1.2); one
# that makes and discards slabs on every wave doubles them (~2).
#
# Needs valgrind (Debian: valgrind) for part 1. Exit status: 0, 1 when a
# run failed or uslub's library or the benchmark binary is missing, 2 on
# bad usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
lo=4
hi=12
slab_waves=20
only=""
waves_per_scale=200     # WV_WAVES in bench_malloc_suite.c: waves at --scale 1

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	--waves) [ $# -ge 2 ] || usage; lo=${2%,*}; hi=${2#*,}; shift 2 ;;
	--slab-waves) [ $# -ge 2 ] || usage; slab_waves=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
	-h|--help) usage ;;
	*) usage ;;
	esac
done
case "$lo$hi$slab_waves" in *[!0-9]*|"") usage ;; esac
[ "$lo" -ge 1 ] && [ "$hi" -gt "$lo" ] && [ "$slab_waves" -ge 1 ] || usage
case "$only" in ""|instr|slabs) ;; *) usage ;; esac

build=$(cd "$build" && pwd)
suite="$build/bench/uslub-bench-mallocsuite"
uslub="$build/libuslub-malloc.so"
mi3="$build/peers/mimalloc-3.4/libmimalloc.so.3.4"
mi2=""
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
	if [ -e "$d/libmimalloc.so.2" ]; then
		mi2="$d/libmimalloc.so.2"
		break
	fi
done
[ -x "$suite" ] || { echo "waves_instr: $suite not found (cmake --build $build)" >&2; exit 1; }
# callgrind names objects by their real path
suite=$(readlink -f "$suite" 2>/dev/null || echo "$suite")
[ -f "$uslub" ] || { echo "waves_instr: $uslub not found (cmake --build $build)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/waves-instr.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

# scale WAVES: the --scale that gives WAVES waves (scaled() truncates:
# aim a little above)
scale() {
	awk -v w="$1" -v k="$waves_per_scale" 'BEGIN { printf "%.9f", (w + 0.01) / k }'
}

# field NAME FILE: a numeric field of the suite's JSON line
field() {
	sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p" "$2"
}

# counters FILE: "SHEAF_FLUSH SHEAF_REFILL ALLOC_SLAB FREE_SLAB" summed
# over every cache of a USLUB_REPORT file
counters() {
	awk '{ for (i = 1; i <= NF; i++) {
		k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v)
		if (k in want) sum[k] += v } }
	BEGIN { want["SHEAF_FLUSH"]; want["SHEAF_REFILL"]; want["ALLOC_SLAB"]; want["FREE_SLAB"] }
	END { printf "%d %d %d %d\n", sum["SHEAF_FLUSH"], sum["SHEAF_REFILL"],
		sum["ALLOC_SLAB"], sum["FREE_SLAB"] }' "$1"
}

# profile CALLGRIND_OUT BINARY: "TOTAL BINARY_SELF" and then "FN INCLUSIVE"
# for each function named in $fns (0 when absent), one per line
profile() {
	awk -v bin="$2" -v fns="$fns" '
	# expand a compressed name: "(id) name" defines id, "(id)" refers to it
	function expand(kind, s,    id) {
		if (match(s, /^\([0-9]+\)/)) {
			id = substr(s, 2, RLENGTH - 2)
			s = substr(s, RLENGTH + 1)
			sub(/^ /, "", s)
			if (s != "")
				names[kind, id] = s
			else
				s = names[kind, id]
		}
		return s
	}
	/^ob=/ { ob = expand("ob", substr($0, 4)); next }
	/^cob=/ { expand("ob", substr($0, 5)); next }
	/^fn=/ { fn = expand("fn", substr($0, 4)); next }
	/^cfn=/ { expand("fn", substr($0, 5)); next }
	/^calls=/ { incall = 1; next }
	/^(summary|totals):/ { total = $2; next }
	/^[0-9+*-]/ {
		c = $2 + 0
		if (incall) {
			incl[fn] += c       # a call: inclusive cost of the callee
			incall = 0
			next
		}
		self_ob[ob] += c
		incl[fn] += c
		sum += c
		next
	}
	END {
		if (total == "")
			total = sum
		printf "%d %d\n", total, self_ob[bin]
		n = split(fns, f, " ")
		for (i = 1; i <= n; i++)
			printf "%s %d\n", f[i], incl[f[i]]
	}' "$1"
}

fns="flush_sheaf refill_sheaf _uslub_free_to_slabs _uslub_refill_objects"

# cg TAG WORKLOAD WAVES PRELOAD [REPORT]: run under callgrind (with
# USLUB_REPORT=REPORT when given); writes $tmp/TAG.json (the result line)
# and $tmp/TAG.prof (profile's output)
cg() {
	tag=$1 pre=$4 rep=${5:-}
	set -- valgrind --tool=callgrind --callgrind-out-file="$tmp/$tag.cg" "$suite" \
		--workload "$2" --scale "$(scale "$3")" --label "$tag"
	# USLUB_DECAY_MS: valgrind runs the program some 50 times slower,
	# and uslub's decay (after which a barn raised by the waves is
	# lowered and kept empty slabs are discarded, and within which a
	# refill after a flush counts as a swing) is wall-clock time: scaled
	# by the same factor, the runs see what a native run sees
	if [ -n "$rep" ]; then
		set -- env USLUB_DECAY_MS=50000 USLUB_REPORT="$rep" LD_PRELOAD="$pre" "$@"
	else
		set -- env USLUB_DECAY_MS=50000 LD_PRELOAD="$pre" "$@"
	fi
	if ! "$@" >"$tmp/$tag.json" 2>"$tmp/$tag.log"; then
		tail -n 20 "$tmp/$tag.log" >&2
		return 1
	fi
	grep -q '"ok":true' "$tmp/$tag.json" || { cat "$tmp/$tag.json" >&2; return 1; }
	profile "$tmp/$tag.cg" "$suite" >"$tmp/$tag.prof"
	# no Ir in the benchmark's own code: it was not found in the profile
	# (another name for the binary), and the subtraction would be wrong
	if [ "$(sed -n '1s/^[0-9]* //p' "$tmp/$tag.prof")" = 0 ]; then
		echo "waves_instr: no instructions of $suite in the profile of $tag" >&2
		return 1
	fi
}

if [ "$only" != slabs ]; then
	command -v valgrind >/dev/null || { echo "waves_instr: valgrind not found (Debian: valgrind)" >&2; exit 1; }
	echo "waves: the allocator's instructions per object (one malloc + one free), callgrind;"
	echo "  the difference of a $hi-wave and a $lo-wave run of 50000 objects each (start-up and the first wave cancel)"
	printf '%-14s %-14s %10s %7s %7s %13s\n' workload allocator Ir/object bench alloc alloc/mi-3.4
	: >"$tmp/sheaf_lines"
	for w in waves-lifo waves-fifo waves-shuffle; do
		mi3_alloc=""
		for peer in mimalloc-3.4 mimalloc-2.0 uslub; do
			case $peer in
			uslub) lib=$uslub ;;
			mimalloc-3.4) lib=$mi3 ;;
			mimalloc-2.0) lib=$mi2 ;;
			esac
			if [ -z "$lib" ] || [ ! -f "$lib" ]; then
				printf '%-14s %-14s skipped: %s not found\n' "$w" "$peer" \
					"${lib:-libmimalloc.so.2}"
				continue
			fi
			lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
			# uslub: USLUB_REPORT in both runs (the report's own cost at
			# exit cancels out); the HI run's counters are used
			replo="" rep=""
			if [ "$peer" = uslub ]; then
				replo="$tmp/report.$w.lo" rep="$tmp/report.$w"
			fi
			if ! cg "$peer.$w.lo" "$w" "$lo" "$lib" "$replo" ||
			   ! cg "$peer.$w.hi" "$w" "$hi" "$lib" "$rep"; then
				echo "waves_instr: $w under $peer: the run failed" >&2
				status=1
				continue
			fi
			olo=$(field total_objects "$tmp/$peer.$w.lo.json")
			ohi=$(field total_objects "$tmp/$peer.$w.hi.json")
			set -- $(head -n 1 "$tmp/$peer.$w.lo.prof") $(head -n 1 "$tmp/$peer.$w.hi.prof")
			line=$(awk -v tl="$1" -v bl="$2" -v th="$3" -v bh="$4" -v n=$((ohi - olo)) \
				-v mi="$mi3_alloc" -v w="$w" -v p="$peer" 'BEGIN {
				per = (th - tl) / n; b = (bh - bl) / n; a = per - b
				r = mi == "" ? "-" : sprintf("%.2fx", a / mi)
				printf "%-14s %-14s %10.1f %7.1f %7.1f %13s|%.3f\n", w, p, per, b, a, r, a
			}')
			echo "${line%|*}"
			[ "$peer" = mimalloc-3.4 ] && mi3_alloc=${line#*|}
			if [ "$peer" = uslub ]; then
				set -- $(counters "$rep")
				flushed=$1 refilled=$2 slabs=$3 freed=$4
				fl=$(awk '$1 == "flush_sheaf" { print $2 }' "$tmp/$peer.$w.hi.prof")
				rf=$(awk '$1 == "refill_sheaf" { print $2 }' "$tmp/$peer.$w.hi.prof")
				fln=flush_sheaf rfn=refill_sheaf
				if [ "${fl:-0}" -eq 0 ]; then
					fln=_uslub_free_to_slabs
					fl=$(awk '$1 == "_uslub_free_to_slabs" { print $2 }' "$tmp/$peer.$w.hi.prof")
				fi
				if [ "${rf:-0}" -eq 0 ]; then
					rfn=_uslub_refill_objects
					rf=$(awk '$1 == "_uslub_refill_objects" { print $2 }' "$tmp/$peer.$w.hi.prof")
				fi
				awk -v w="$w" -v f="$flushed" -v r="$refilled" -v fl="$fl" -v rf="$rf" \
					-v s="$slabs" -v d="$freed" -v o="$ohi" 'BEGIN {
					printf "%-14s %10d %10d %11d %11d %9s %10d %9d %9d\n", w, f, r, fl, rf,
						f + r ? sprintf("%.1f", (fl + rf) / (f + r)) : "-", s, d, o
				}' >>"$tmp/sheaf_lines"
				names="$fln + $rfn"
			fi
		done
	done
	if [ -s "$tmp/sheaf_lines" ]; then
		echo
		echo "uslub's sheaf flush and refill paths in the $hi-wave runs (USLUB_REPORT's counters, every cache;"
		echo "  inclusive Ir of $names)"
		printf '%-14s %10s %10s %11s %11s %9s %10s %9s %9s\n' workload flushed refilled \
			"flush Ir" "refill Ir" "Ir/obj" ALLOC_SLAB FREE_SLAB objects
		cat "$tmp/sheaf_lines"
		echo "  Ir/obj = flush+refill instructions per object flushed or refilled"
	fi
fi

if [ "$only" != instr ]; then
	[ "$only" = slabs ] || echo
	n=$slab_waves
	n2=$((2 * n))
	echo "waves-lifo under uslub (no valgrind): slabs made over $n waves vs $n2 waves"
	printf '%-8s %10s %10s %10s\n' waves ALLOC_SLAB FREE_SLAB objects
	ok=1
	for k in $n $n2; do
		if ! env USLUB_REPORT="$tmp/slabs.$k" LD_PRELOAD="$uslub" "$suite" --workload waves-lifo \
			--scale "$(scale "$k")" --label uslub >"$tmp/slabs.$k.json" 2>"$tmp/slabs.$k.log" ||
			! grep -q '"ok":true' "$tmp/slabs.$k.json"; then
			cat "$tmp/slabs.$k.log" "$tmp/slabs.$k.json" >&2
			echo "waves_instr: waves-lifo with $k waves: the run failed" >&2
			status=1
			ok=0
			continue
		fi
		set -- $(counters "$tmp/slabs.$k")
		printf '%-8s %10d %10d %10d\n' "$(field waves "$tmp/slabs.$k.json")" "$3" "$4" \
			"$(field total_objects "$tmp/slabs.$k.json")"
		eval "slabs_$k=$3"
	done
	if [ $ok = 1 ]; then
		eval "a=\$slabs_$n b=\$slabs_$n2"
		awk -v a="$a" -v b="$b" -v n="$n" -v n2="$n2" 'BEGIN {
			r = a ? b / a : 0
			printf "ALLOC_SLAB(%d waves) / ALLOC_SLAB(%d waves) = %.2f (target <= 1.2: %s)\n",
				n2, n, r, r <= 1.2 ? "met" : "missed"
		}'
	fi
fi
exit $status
