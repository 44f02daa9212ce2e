#!/bin/bash
# malloc_heap_stacks: the sampled mode's allocation stacks (src/ext/stack.c)
# and the heap profile (USLUB_HEAP_PROFILE, `uslub run --heap-profile`),
# under LD_PRELOAD, with heap_stacks.c's known stacks: one wrapper
# (alloc_wrapper) called by caller_one, caller_two and caller_four (1, 2
# and 4 MiB kept, in 64-byte objects) and caller_freed (4 MiB, all freed).
# USLUB_PROFILING=sample:4096 with a fixed USLUB_PROFILING_SEED, so each
# run is the same. An estimate must lie within 4 standard deviations of
# the true bytes B: sqrt(B x 4096) (a Poisson sample of 64-byte objects,
# each sampled one weighing 64/p bytes, p = 1 - exp(-64/4096)).
#   - known: the in-use file (the leak profile) has each caller's stack
#     ending "caller_X (...);alloc_wrapper (...)" (uslub's own frames
#     trimmed: no leaf in libuslub-malloc), within bounds; caller_freed
#     has no bytes in use but its 4 MiB in FILE.alloc; the files are
#     0600 with the header comment; frames are root first (main before
#     caller_X);
#   - big (USLUB_PROFILING=sample:256: large blocks are sampled 16 times
#     less often, every 4 KiB on average, so every block of 80 KiB and
#     more is sampled, weighing its length): caller_big's page runs and mapping
#     count their usable bytes exactly, in use and allocated, its freed
#     page runs allocated only, and the mapping it resized (realloc) after
#     its stack was recorded allocated only (the stack gives it up);
#   - threads: each caller in its own thread: the same bounds;
#   - fork: the child (caller_four, then exit()) writes its own profile
#     (%p), which holds its 4 MiB and the 1 MiB it inherited (caller_one);
#     the parent's has caller_one and caller_two and not caller_four;
#   - dlclose: a plugin loaded and unloaded 40 times, allocating through
#     its own malloc call each time, while another thread samples all
#     along: no deadlock or crash (timeout), and the blocks kept from it
#     (its caller, plugin_round, is the program's) within bounds in the
#     in-use profile written after the unloads;
#   - signal: a SIGPROF handler that allocates (sampled: walked from a
#     signal frame) while the main thread alternates allocation, with
#     the signal blocked (malloc is async-signal-safe as far as glibc's
#     is), and work without malloc, for 1 s: no deadlock (alarm and
#     timeout), the handler's allocations have stacks of their own (leaf
#     on_signal) in FILE.alloc;
#   - `uslub run --heap-profile FILE`: FILE and FILE.alloc with frames
#     named by function; FILE.svg and FILE.pb.gz: a flame graph and a
#     pprof profile instead, each caller's box within bounds (addr2line, the program is built with -g), the
#     callers within bounds; `uslub resolve` of a library-written file
#     names them too.
#
#   heap_stacks.sh PROG LIB TOOL PLUGIN
set -u
prog=$1 lib=$2 tool=$3 plugin=$4
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/h.*; do [ -f "$f" ] && { echo "--- $f:"; cut -c1-300 "$f" | head -20; }; done; exit 1; }
MiB=1048576
# the frame-pointer walk (a build without an .eh_frame walker) stops inside uslub,
# which is built without frame pointers: the call site alone (unit_stack
# checks that); these stacks need the modules' .eh_frame
walker=$(bash "$(dirname "$0")/stack_walker.sh" "$lib")
[ -n "$walker" ] && [ "$walker" != "frame pointers" ] ||
	{ echo "SKIP: $lib walks stacks by frame pointers (${walker:-none})"; exit 77; }

# bytes of the stacks in FILE whose leaf is LEAF and whose frame above it
# is PARENT (frames "NAME (...)" or, resolved, "NAME"); "" PARENT: any
sum() {
	awk -v leaf="$2" -v parent="$3" '
	function name(f) { sub(/ \(.*$/, "", f); return f }
	/^#/ { next }
	{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
	  if (name(f[n]) == leaf && (parent == "" || (n > 1 && name(f[n - 1]) == parent))) t += c }
	END { printf "%.0f\n", t }' "$1"
}
# FILE CALLER TRUE_BYTES WHAT: the estimate within 4 sd
within() {
	local got
	got=$(sum "$1" alloc_wrapper "$2")
	awk -v g="$got" -v b="$3" 'BEGIN { d = g - b; if (d < 0) d = -d; exit !(d <= 4 * sqrt(b * 4096)) }' ||
		fail "$4: $2: $got bytes, want $3 +- $(awk -v b="$3" 'BEGIN { printf "%d", 4 * sqrt(b * 4096) }')"
}
absent() {
	local got
	got=$(sum "$1" alloc_wrapper "$2")
	[ "$got" = 0 ] || fail "$3: $2 has $got bytes, want none"
}
run() { # MODE [ARG]
	timeout 60 env USLUB_PROFILING=sample:${SAMPLE:-4096} USLUB_PROFILING_SEED=12345 \
		USLUB_HEAP_PROFILE="$T/h.%p" LD_PRELOAD="$lib" "$prog" "$@" >"$T/$1.out" 2>"$T/$1.err" ||
		fail "$1: the program failed (exit $?): $(head -5 "$T/$1.err")"
}
only() { # the one in-use profile a run left
	local f n=0
	for f in "$T"/h.*; do
		case $f in *.alloc) ;; *) [ -f "$f" ] && { one=$f; n=$((n + 1)); };; esac
	done
	[ $n = 1 ] || fail "$1: $n heap profiles, want 1"
}

# ---- known -----------------------------------------------------------------
run known
only known
f=$one
[ -f "$f.alloc" ] || fail "known: no $f.alloc"
[ "$(stat -c %a "$f")" = 600 ] && [ "$(stat -c %a "$f.alloc")" = 600 ] || fail "known: not 0600"
head -1 "$f" | grep -q '^# uslub heap profile, pid [0-9]*: bytes in use' || fail "known: header"
head -1 "$f.alloc" | grep -q '^# uslub heap profile, pid [0-9]*: bytes allocated' || fail "known: .alloc header"
within "$f" caller_one $MiB known
within "$f" caller_two $((2 * MiB)) known
within "$f" caller_four $((4 * MiB)) known
absent "$f" caller_freed "known (in use)"
within "$f.alloc" caller_freed $((4 * MiB)) "known (allocated)"
within "$f.alloc" caller_four $((4 * MiB)) "known (allocated)"
grep -v '^#' "$f" | awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";"); print f[n] }' |
	grep -q 'libuslub-malloc' && fail "known: a stack's leaf is in libuslub-malloc (not trimmed)"
grep 'caller_one (' "$f" | grep -q '^.*main (.*;caller_one (.*;alloc_wrapper (' ||
	fail "known: caller_one's stack is not root first (main ... caller_one;alloc_wrapper)"
rm -f "$T"/h.*

# ---- big -------------------------------------------------------------------
SAMPLE=256 run big
only big
f=$one
big=$(sed -n 's/^big //p' "$T/big.out")
resized=$(sed -n 's/^resized //p' "$T/big.out")
[ -n "$big" ] && [ -n "$resized" ] || fail "big: no output"
[ "$(sum "$f" alloc_wrapper caller_big)" = "$big" ] ||
	fail "big: caller_big (page runs, a mapping): $(sum "$f" alloc_wrapper caller_big) bytes in use, want exactly $big"
[ "$(sum "$f.alloc" alloc_wrapper caller_big)" = $((big + 64 * 131072 + resized)) ] ||
	fail "big: caller_big allocated $(sum "$f.alloc" alloc_wrapper caller_big) bytes, want $((big + 64 * 131072 + resized))"
rm -f "$T"/h.*

# ---- threads ---------------------------------------------------------------
run threads
only threads
within "$one" caller_one $MiB threads
within "$one" caller_two $((2 * MiB)) threads
within "$one" caller_four $((4 * MiB)) threads
absent "$one" caller_freed threads
within "$one.alloc" caller_freed $((4 * MiB)) "threads (allocated)"
rm -f "$T"/h.*

# ---- fork --------------------------------------------------------------------
run fork
child=$(sed -n 's/^child //p' "$T/fork.out")
[ -n "$child" ] && [ -f "$T/h.$child" ] || fail "fork: the child ($child) wrote no profile of its own"
parent=
for p in "$T"/h.*; do
	case $p in *.alloc|"$T/h.$child") ;; *) parent=$p;; esac
done
[ -n "$parent" ] || fail "fork: the parent wrote no profile"
within "$T/h.$child" caller_four $((4 * MiB)) "fork (child)"
within "$T/h.$child" caller_one $MiB "fork (child, inherited)"
absent "$T/h.$child" caller_two "fork (child)"
within "$parent" caller_one $MiB "fork (parent)"
within "$parent" caller_two $((2 * MiB)) "fork (parent)"
absent "$parent" caller_four "fork (parent)"
rm -f "$T"/h.*

# ---- signal --------------------------------------------------------------------
start=$(date +%s)
run signal
[ $(( $(date +%s) - start )) -lt 30 ] || fail "signal: took $(( $(date +%s) - start )) s"
n=$(sed -n 's/^signals //p' "$T/signal.out")
[ "${n:-0}" -gt 0 ] || fail "signal: no signal was handled"
only signal
[ "$(sum "$one.alloc" on_signal "")" -gt 0 ] ||
	fail "signal: no stack ends in the handler (on_signal) in $one.alloc ($n signals)"
[ "$(sum "$one.alloc" alloc_wrapper caller_freed)" -gt 0 ] || fail "signal: no caller_freed stack"
raw=$one.alloc
cp "$raw" "$T/raw.alloc"
rm -f "$T"/h.*

# ---- dlclose -----------------------------------------------------------------------
# the plugin's frames (unloaded before the output) are named after what
# is mapped there then, or left as addresses; the frame that called it,
# plugin_round, is the program's: its stacks hold the kept bytes
start=$(date +%s)
run dlclose "$plugin"
[ $(( $(date +%s) - start )) -lt 30 ] || fail "dlclose: took $(( $(date +%s) - start )) s"
kept=$(sed -n 's/^kept //p' "$T/dlclose.out")
only dlclose
got=$(grep -v '^#' "$one" | grep 'plugin_round (' | awk '{ t += $NF } END { printf "%.0f", t }')
awk -v g="$got" -v b="$kept" 'BEGIN { d = g - b; if (d < 0) d = -d; exit !(d <= 4 * sqrt(b * 4096)) }' ||
	fail "dlclose: plugin_round's stacks hold $got bytes, want $kept +- 4 sd"
rm -f "$T"/h.*

# ---- the tool --------------------------------------------------------------------
USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=12345 USLUB_LIBRARY="$lib" \
	"$tool" run --heap-profile "$T/tool.heap" -- "$prog" known >"$T/tool.out" 2>"$T/tool.err" ||
	fail "uslub run --heap-profile failed: $(cat "$T/tool.err")"
[ -f "$T/tool.heap" ] && [ -f "$T/tool.heap.alloc" ] || fail "tool: no FILE and FILE.alloc: $(cat "$T/tool.err")"
within "$T/tool.heap" caller_one $MiB tool
within "$T/tool.heap" caller_two $((2 * MiB)) tool
within "$T/tool.heap" caller_four $((4 * MiB)) tool
within "$T/tool.heap.alloc" caller_freed $((4 * MiB)) "tool (allocated)"
grep -q '[;^]caller_one;alloc_wrapper [0-9]*$' "$T/tool.heap" ||
	fail "tool: frames not named by function: $(grep caller_one "$T/tool.heap" | head -1 | cut -c1-300)"
# the same as a flame graph (FILE.svg, FILE.alloc.svg: uslub flame) and a
# pprof profile (FILE.pb.gz: uslub heap, the four sample types in one;
# malloc_heap_dump checks its figures): each caller's box holds its
# bytes; the profile names the functions
USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=12345 USLUB_LIBRARY="$lib" \
	"$tool" run --heap-profile "$T/tool.svg" -- "$prog" known >"$T/tool.out" 2>"$T/tool.err" ||
	fail "uslub run --heap-profile FILE.svg failed: $(cat "$T/tool.err")"
[ -f "$T/tool.svg" ] && [ -f "$T/tool.alloc.svg" ] || fail "tool: no FILE.svg and FILE.alloc.svg"
tail -1 "$T/tool.svg" | grep -q '^</svg>$' || fail "tool: FILE.svg is not a whole SVG"
box() { sed -n "s/^<g><title>$2 (\([0-9]*\) bytes.*/\1/p" "$1" | awk '{ t += $1 } END { printf "%.0f", t }'; }
for c in caller_one:$MiB caller_two:$((2 * MiB)) caller_four:$((4 * MiB)); do
	got=$(box "$T/tool.svg" "${c%%:*}")
	awk -v g="$got" -v b="${c#*:}" 'BEGIN { d = g - b; if (d < 0) d = -d; exit !(d <= 4 * sqrt(b * 4096)) }' ||
		fail "tool (svg): ${c%%:*}'s box holds $got bytes, want ${c#*:} +- 4 sd"
done
[ "$(box "$T/tool.alloc.svg" caller_freed)" -gt 0 ] || fail "tool (svg): caller_freed not in FILE.alloc.svg"
USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=12345 USLUB_LIBRARY="$lib" \
	"$tool" run --heap-profile "$T/tool.pb.gz" -- "$prog" known >"$T/tool.out" 2>"$T/tool.err" ||
	fail "uslub run --heap-profile FILE.pb.gz failed: $(cat "$T/tool.err")"
[ -f "$T/tool.pb.gz" ] || fail "tool: no FILE.pb.gz"
[ -f "$T/tool.alloc.pb.gz" ] && fail "tool: FILE.alloc.pb.gz (the one profile has both views)"
for w in alloc_objects alloc_space inuse_objects inuse_space caller_four alloc_wrapper; do
	gzip -dc "$T/tool.pb.gz" | grep -aq "$w" || fail "tool (pprof): no $w in the profile"
done
if command -v addr2line >/dev/null; then
	"$tool" resolve "$T/raw.alloc" >"$T/resolved" || fail "uslub resolve of a heap profile failed"
	grep -q 'on_signal [0-9]*$' "$T/resolved" || fail "resolve: no stack ending in on_signal"
	grep -q '(/' "$T/resolved" && fail "resolve: a frame is left unnamed: $(grep '(/' "$T/resolved" | head -1 | cut -c1-300)"
fi
"$tool" run --heap-profile -- true 2>/dev/null && fail "tool: --heap-profile -- CMD took -- for the FILE"
echo "PASS: heap profile stacks (known callers within 4 sd, leak view, threads, fork, signal, tool, svg, pprof)"
