#!/bin/bash
# malloc_heap_dump: the heap dump (USLUB_HEAP_DUMP, ext/stack.c) and
# `uslub heap` (tools/heap.c), with heap_stacks' program (heap_stacks.c:
# a wrapper's known callers) at a fixed seed and a 4 KiB interval:
#   - USLUB_HEAP_PROFILE=FILE.heap writes the dump alone (0600): its
#     version line, the program as module 0, its stacks;
#   - `uslub heap FILE`: folded stacks named by function, each caller's
#     bytes in use within 4 sd, caller_freed none; --alloc: 4 MiB;
#   - `uslub heap FILE -o OUT.pb.gz`: a pprof profile with the four sample
#     types, the program's mapping and build id, every caller's objects
#     and bytes (heap_dump_pprof.py; go tool pprof -top where Go is);
#   - dlclose: a plugin loaded and unloaded 40 times is one module entry,
#     "unloaded"; its frames are named and marked "[unloaded]" (the tool)
#     or "[unloaded] (PATH+0xOFF)" (the library's folded stacks);
#   - live: a process publishing (USLUB_PUBLISH_MS, a private
#     USLUB_PUBLISH_ROOT) answers `uslub heap PID` with its callers; when
#     it exits its dump goes, and the tool says so; a process without
#     stacks publishes none, and the tool says why;
#   - bad input: not a dump, a dump of another version, bad lines named,
#     usage.
#   heap_dump.sh PROG LIB TOOL PLUGIN
prog=$1 lib=$2 tool=$3 plugin=$4
here=$(dirname "$0")
T=$(mktemp -d) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
MiB=1048576
walker=$(bash "$(dirname "$0")/stack_walker.sh" "$lib")
[ -n "$walker" ] && [ "$walker" != "frame pointers" ] ||
	{ echo "SKIP: $lib walks stacks by frame pointers (${walker:-none})"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# bytes of the named stacks in FILE whose leaf is alloc_wrapper and whose
# frame above it is CALLER
sum() {
	awk -v parent="$2" '
	/^#/ { next }
	{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
	  if (f[n] == "alloc_wrapper" && n > 1 && f[n - 1] == parent) t += c }
	END { printf "%.0f\n", t }' "$1"
}
within() { # FILE CALLER TRUE_BYTES WHAT
	local got
	got=$(sum "$1" "$2")
	awk -v g="$got" -v b="$3" 'BEGIN { d = g - b; if (d < 0) d = -d; exit !(d <= 4 * sqrt(b * 4096)) }' ||
		fail "$4: $2: $got bytes, want $3 +- 4 sd"
}
run() { # OUT MODE [ARG]: the program under uslub, its dump(s) to $T/OUT.%p.heap
	local out=$1
	shift
	timeout 60 env USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=12345 \
		USLUB_HEAP_PROFILE="$T/$out.%p.heap" LD_PRELOAD="$lib" "$prog" "$@" >"$T/$out.out" \
		2>"$T/$out.err" || fail "$1: the program failed (exit $?): $(head -5 "$T/$out.err")"
}

# ---- the dump of known callers -------------------------------------------------
run k known
set -- "$T"/k.*.heap
[ $# = 1 ] && [ -f "$1" ] || fail "known: want one dump, got: $*"
dump=$1
[ "$(stat -c %a "$dump")" = 600 ] || fail "known: the dump is not 0600"
ls "$T"/k.* | grep -q '\.alloc' && fail "known: a .heap FILE gets the dump alone"
head -1 "$dump" | grep -q '^# uslub heap dump, pid [0-9]*:' || fail "known: header: $(head -1 "$dump")"
grep -qx 'uslub-heap 1 4096' "$dump" || fail "known: no version line"
grep -q "^module 0 0x[0-9a-f]* 0x[0-9a-f]* 0x[0-9a-f]* 0x[0-9a-f]* [0-9a-f]* loaded $(readlink -f "$prog")\$" "$dump" ||
	fail "known: module 0 is not the program: $(grep -m1 '^module 0' "$dump")"
[ "$(grep -c '^stack [0-9]* [0-9]* [0-9]* [0-9]*\( [0-9]*+0x[0-9a-f]*\| 0x[0-9a-f]*\)*$' "$dump")" = "$(grep -c '^stack' "$dump")" ] ||
	fail "known: a stack line out of format"

"$tool" heap "$dump" >"$T/k.folded" 2>"$T/k.terr" || fail "uslub heap FILE failed: $(cat "$T/k.terr")"
head -1 "$T/k.folded" | grep -q '^# uslub heap profile, pid [0-9]*: bytes in use' || fail "heap: header"
within "$T/k.folded" caller_one $MiB "heap (in use)"
within "$T/k.folded" caller_two $((2 * MiB)) "heap (in use)"
within "$T/k.folded" caller_four $((4 * MiB)) "heap (in use)"
[ "$(sum "$T/k.folded" caller_freed)" = 0 ] || fail "heap: caller_freed in use"
"$tool" heap --alloc "$dump" >"$T/k.alloc" || fail "uslub heap --alloc failed"
within "$T/k.alloc" caller_freed $((4 * MiB)) "heap --alloc"
within "$T/k.alloc" caller_four $((4 * MiB)) "heap --alloc"

"$tool" heap -o "$T/k.pb.gz" "$dump" 2>"$T/k.terr" || fail "uslub heap -o FILE.pb.gz failed: $(cat "$T/k.terr")"
"$py" "$here/heap_dump_pprof.py" "$T/k.pb.gz" "$prog" inuse_space >"$T/k.py" ||
	fail "the pprof profile: $(grep FAIL "$T/k.py")"
"$tool" heap --alloc -o "$T/ka.pb" "$dump" || fail "uslub heap --alloc -o FILE.pb failed"
gzip -c "$T/ka.pb" >"$T/ka.pb.gz"
"$py" "$here/heap_dump_pprof.py" "$T/ka.pb.gz" "$prog" alloc_space >"$T/ka.py" ||
	fail "the pprof profile (--alloc, .pb): $(grep FAIL "$T/ka.py")"
"$tool" heap -o "$T/k.svg" "$dump" || fail "uslub heap -o FILE.svg failed"
grep -q '<title>caller_four' "$T/k.svg" || fail "heap -o FILE.svg: no caller_four box"
go=$(command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; })
if [ -n "$go" ]; then
	top=$(timeout 120 "$go" tool pprof -top -sample_index=alloc_objects "$T/k.pb.gz" 2>&1) ||
		fail "go tool pprof -top: $top"
	echo "$top" | grep -q 'Type: alloc_objects' || fail "go tool pprof: no alloc_objects: $top"
	echo "$top" | grep -q "File: $(basename "$prog")" || fail "go tool pprof: the program is not the main file: $top"
	echo "$top" | grep -q 'alloc_wrapper' || fail "go tool pprof: no alloc_wrapper: $top"
else
	echo "skip go tool pprof (no Go)"
fi

# ---- dlclose: frames of an unloaded module ------------------------------------
run d dlclose "$plugin"
dump=$(echo "$T"/d.*.heap)
[ "$(grep -c "^module .*/$(basename "$plugin")\$" "$dump")" = 1 ] ||
	fail "dlclose: the plugin is not one module entry: $(grep -c "$(basename "$plugin")" "$dump")"
grep -q "^module .* unloaded .*/$(basename "$plugin")\$" "$dump" || fail "dlclose: the plugin is not unloaded"
"$tool" heap --alloc "$dump" >"$T/d.alloc" || fail "dlclose: uslub heap failed"
grep -q ';plugin_round;plugin_alloc \[unloaded\] [0-9]*$' "$T/d.alloc" ||
	fail "dlclose: no plugin_alloc [unloaded] frame under plugin_round: $(grep -v '^#' "$T/d.alloc" | head -3)"
got=$(grep 'plugin_alloc \[unloaded\]' "$T/d.alloc" | awk '{ t += $NF } END { printf "%.0f", t }')
want=$((40 * 2048 * 64))
awk -v g="$got" -v b="$want" 'BEGIN { d = g - b; if (d < 0) d = -d; exit !(d <= 4 * sqrt(b * 4096)) }' ||
	fail "dlclose: plugin_alloc allocated $got bytes, want $want +- 4 sd"
timeout 60 env USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=12345 USLUB_HEAP_PROFILE="$T/f.%p" \
	LD_PRELOAD="$lib" "$prog" dlclose "$plugin" >/dev/null 2>&1 || fail "dlclose (folded): the program failed"
grep -q "^.*;\[unloaded\] ([^;]*$(basename "$plugin")+0x[0-9a-f]*) [0-9]*$" "$T"/f.*.alloc ||
	fail "dlclose (folded): no [unloaded] (PLUGIN+0xOFF) leaf: $(grep -v '^#' "$T"/f.*.alloc | head -2 | cut -c1-300)"

# ---- live: uslub heap PID --------------------------------------------------------
mkdir -m 700 "$T/pub"
export USLUB_PUBLISH_ROOT=$T/pub
mkfifo "$T/in"
USLUB_PUBLISH_MS=100 USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=12345 LD_PRELOAD="$lib" \
	"$prog" hold <"$T/in" >"$T/live.out" 2>"$T/live.err" &
pid=$!
exec 3>"$T/in"
for _ in $(seq 100); do
	grep -q ready "$T/live.out" 2>/dev/null && break
	sleep 0.1
done
grep -q ready "$T/live.out" || fail "live: the program never got ready: $(cat "$T/live.err")"
ready=$(date +%s.%N)
# when the dump in FILE was taken: its header's "heap dump at SECONDS"
# (the time is read before the stacks are: a later one holds all that
# was allocated before it), 0 without one
dumped() { sed -n '1s/.*heap dump at \([0-9.]*\).*/\1/p' "$1" 2>/dev/null | grep . || echo 0; }
# a dump written after "ready": every caller whole in it (the program
# allocates nothing after that)
published="$T/pub/uslub-$(id -u)/$pid.heap"
for _ in $(seq 100); do
	[ -f "$published" ] && awk -v m="$(dumped "$published")" -v r="$ready" 'BEGIN { exit !(m > r) }' &&
		break
	sleep 0.1
done
awk -v m="$(dumped "$published")" -v r="$ready" 'BEGIN { exit !(m > r) }' ||
	fail "live: no heap dump published after ready in 10 s: $(cat "$T/live.err")"
"$tool" heap "$pid" >"$T/live.folded" 2>"$T/live.terr" || fail "live: uslub heap PID: $(cat "$T/live.terr")"
within "$T/live.folded" caller_one $MiB "live"
within "$T/live.folded" caller_four $((4 * MiB)) "live"
"$tool" heap -o "$T/live.pb.gz" "$pid" || fail "live: uslub heap -o FILE.pb.gz PID failed"
"$py" "$here/heap_dump_pprof.py" "$T/live.pb.gz" "$prog" inuse_space >"$T/live.py" ||
	fail "live: the pprof profile: $(grep FAIL "$T/live.py")"
exec 3>&-
wait "$pid" || fail "live: the program failed"
ls "$T/pub/uslub-$(id -u)/" | grep -q "^$pid\.heap" && fail "live: the dump stayed after exit"
"$tool" heap "$pid" >/dev/null 2>"$T/gone.err" && fail "live: a heap of a process gone"
pid=
# no stacks: no dump, and the tool says why
USLUB_PUBLISH_MS=100 USLUB_STACK_DEPTH=0 LD_PRELOAD="$lib" "$prog" hold <"$T/in" >"$T/ns.out" 2>&1 &
pid=$!
exec 3>"$T/in"
for _ in $(seq 100); do
	[ -e "$T/pub/uslub-$(id -u)/$pid.json" ] && break
	sleep 0.1
done
"$tool" heap "$pid" >/dev/null 2>"$T/ns.err" && fail "no stacks: uslub heap PID succeeded"
grep -q 'publishes no heap dump' "$T/ns.err" || fail "no stacks: the tool says: $(cat "$T/ns.err")"
exec 3>&-
wait "$pid"
pid=
unset USLUB_PUBLISH_ROOT

# ---- bad input -------------------------------------------------------------------
printf 'hello\n' >"$T/bad"
"$tool" heap "$T/bad" >/dev/null 2>"$T/bad.err"; rc=$?
[ $rc = 1 ] && grep -q 'not a uslub heap dump' "$T/bad.err" || fail "bad: exit $rc: $(cat "$T/bad.err")"
echo precious >"$T/keep"
"$tool" heap -o "$T/keep" "$T/bad" 2>/dev/null && fail "bad: -o OUT of a bad dump succeeded"
[ "$(cat "$T/keep")" = precious ] || fail "bad: -o OUT was touched for a bad dump"
printf 'uslub-heap 2 4096\n' >"$T/v2"
"$tool" heap "$T/v2" >/dev/null 2>"$T/v2.err"; rc=$?
[ $rc = 1 ] && grep -q 'another version' "$T/v2.err" || fail "version 2: exit $rc: $(cat "$T/v2.err")"
dump=$(echo "$T"/k.*.heap)
{ cat "$dump"; echo "stack 1 2 3"; echo "stack 1 64 1 64 9999+0x10"; echo "junk"; } >"$T/lines"
"$tool" heap "$T/lines" >"$T/lines.out" 2>"$T/lines.err" || fail "bad lines: the dump was refused"
[ "$(grep -c 'not a line of a heap dump' "$T/lines.err")" = 3 ] || fail "bad lines: $(cat "$T/lines.err")"
within "$T/lines.out" caller_four $((4 * MiB)) "bad lines"
"$tool" heap >/dev/null 2>&1; [ $? = 2 ] || fail "usage: no argument"
"$tool" heap --bogus "$dump" >/dev/null 2>&1; [ $? = 2 ] || fail "usage: unknown option"
"$tool" heap -o "$T/nodir/x.svg" "$dump" 2>/dev/null && fail "an output that cannot be written"
"$tool" help heap | grep -q 'uslub heap' || fail "help heap"
echo "PASS"
