#!/usr/bin/env bash
# The `uslub` command: usage, help listing every USLUB_* option of the
# table in src/base/base.h, `uslub run` (exit status, exec failure, LD_PRELOAD,
# --report, --report-file, --profile, signals, no temp files left behind),
# the report's layout (one header, the empty caches on one line, a legend)
# and its way to the user (a CMD that closes stderr, one that ends with
# _exit: its last snapshot), slabinfo/allocinfo of a publishing process and
# their JSON (one document a line), bench from the build tree.
#
#   tool_test.sh <uslub> <libuslub-malloc.so> <src/base/base.h>
set -u
USLUB=$1 LIB=$2 BASE_H=$3

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok:   $*"; }

[ -x "$USLUB" ] || { echo "no tool $USLUB"; exit 1; }
[ -r "$LIB" ] || { echo "no library $LIB"; exit 1; }
[ -r "$BASE_H" ] || { echo "no $BASE_H"; exit 1; }
if [ "$(dirname "$(readlink -f "$LIB")")" != "$(dirname "$(readlink -f "$USLUB")")" ]; then
	fail "$LIB is not next to $USLUB: uslub run from the build tree will not find it"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/uslub-tool-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Every temporary file the tool makes goes here; it must be empty at the end.
export TMPDIR=$WORK/tmp
mkdir "$TMPDIR"
unset USLUB_LIBRARY USLUB_REPORT USLUB_PROFILING USLUB_PUBLISH_MS USLUB_VERBOSE
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

# expect STATUS NAME CMD...: run CMD, stdout/stderr in $WORK/out, $WORK/err.
expect() {
	local want=$1 name=$2
	shift 2
	"$@" >"$WORK/out" 2>"$WORK/err" </dev/null
	local got=$?
	if [ "$got" = "$want" ]; then
		pass "$name (exit $got)"
	else
		fail "$name: exit $got, expected $want; stderr:"
		sed 's/^/    /' "$WORK/err" | head -20
	fi
}
has() {   # has FILE REGEX NAME
	if grep -qE -- "$2" "$1"; then pass "$3"; else fail "$3: no /$2/ in:"; sed 's/^/    /' "$1" | head -20; fi
}

# ---- help and usage ---------------------------------------------------
# The option names of the USLUB_OPTIONS(X) table: the lines of the macro
# (up to the first one without a trailing backslash), X(NAME, ...) each.
opts=$(awk '/^#define USLUB_OPTIONS\(X\)/ { on = 1 }
	on { print; if ($0 !~ /\\[ \t]*$/) exit }' "$BASE_H" |
	grep -oE '^[[:space:]]*X\([A-Z0-9_]+' | sed -E 's/.*X\(//')
nopts=$(echo "$opts" | grep -c .)
if [ "$nopts" -ge 10 ]; then pass "parsed $nopts options from base.h"; else fail "parsed only $nopts options from $BASE_H"; fi

for h in "--help" "help" "-h"; do
	expect 0 "uslub $h" "$USLUB" $h
	cp "$WORK/out" "$WORK/help.$h"
	missing=""
	for o in $opts; do
		grep -q "USLUB_$o\b" "$WORK/help.$h" || missing="$missing USLUB_$o"
	done
	[ -z "$missing" ] && pass "uslub $h lists all $nopts options" || fail "uslub $h misses:$missing"
	for c in "uslub run" "uslub slabinfo" "uslub allocinfo" "uslub top" "uslub resolve" "uslub bench"; do
		grep -q "$c" "$WORK/help.$h" || fail "uslub $h does not show '$c'"
	done
done
expect 0 "uslub run --help" "$USLUB" run --help
missing=""
for o in $opts; do grep -q "USLUB_$o\b" "$WORK/out" || missing="$missing USLUB_$o"; done
[ -z "$missing" ] && pass "uslub run --help lists all options" || fail "uslub run --help misses:$missing"
has "$WORK/out" "--report" "uslub run --help shows --report"

# The tool links the core's option table only: no core constructor runs
# in it (USLUB_VERBOSE would print every option on stderr).
USLUB_VERBOSE=1 USLUB_PUBLISH_MS=10 "$USLUB" help >/dev/null 2>"$WORK/err"
[ -s "$WORK/err" ] && { fail "the tool itself ran the uslub core:"; head -5 "$WORK/err"; } ||
	pass "no uslub core initialization in the tool"

expect 2 "no command" "$USLUB"
has "$WORK/err" "usage:" "usage on stderr without a command"
expect 2 "unknown command" "$USLUB" frobnicate
has "$WORK/err" "usage:" "usage on stderr for an unknown command"
[ -s "$WORK/out" ] && fail "unknown command wrote to stdout"
expect 2 "run without CMD" "$USLUB" run
expect 2 "run --report without CMD" "$USLUB" run --report --
expect 2 "run with an unknown option" "$USLUB" run --frobnicate -- true
expect 2 "slabinfo without PID" "$USLUB" slabinfo
expect 2 "slabinfo bad PID" "$USLUB" slabinfo 12x
expect 2 "top -d 0" "$USLUB" top 1 -d 0

# ---- run: exit status, exec failure, LD_PRELOAD -------------------------
expect 0 "run -- true" "$USLUB" run -- true
expect 0 "run true (no --)" "$USLUB" run true
expect 3 "run -- sh -c 'exit 3'" "$USLUB" run -- sh -c 'exit 3'
expect 143 "run -- sh -c 'kill -TERM \$\$'" "$USLUB" run -- sh -c 'kill -TERM $$'
expect 127 "run -- /nonexistent" "$USLUB" run -- /nonexistent
has "$WORK/err" "/nonexistent" "exec failure names the command"
expect 127 "run --report -- /nonexistent" "$USLUB" run --report -- /nonexistent
has "$WORK/err" "/nonexistent" "exec failure names the command (--report)"
grep -q "uslub report: pid" "$WORK/err" && fail "a report for a command that never ran"
USLUB_LIBRARY=$WORK/no-such-lib.so "$USLUB" run -- true 2>"$WORK/err"
st=$?
[ $st -ne 0 ] && grep -q "no-such-lib" "$WORK/err" && pass "USLUB_LIBRARY missing: error ($st)" ||
	fail "USLUB_LIBRARY missing: exit $st, $(cat "$WORK/err")"

LD_PRELOAD=libm.so.6 "$USLUB" run -- sh -c 'echo "$LD_PRELOAD"' >"$WORK/out" 2>"$WORK/err"
libreal=$(readlink -f "$LIB")
[ "$(cat "$WORK/out")" = "$libreal:libm.so.6" ] && pass "LD_PRELOAD prepended" ||
	fail "LD_PRELOAD is '$(cat "$WORK/out")', expected '$libreal:libm.so.6'"
# Without --report the tool becomes CMD (same pid).
"$USLUB" run -- sh -c 'echo $$' >"$WORK/out" &
wpid=$!
wait $wpid
[ "$(cat "$WORK/out")" = "$wpid" ] && pass "run execs CMD in place" || fail "CMD pid $(cat "$WORK/out") != $wpid"

# ---- run --report ---------------------------------------------------------
prog='print(sum(len(str(i)) for i in range(100000)))'
plain=$($PY -c "$prog")
expect 0 "run --report -- python3" "$USLUB" run --report -- "$PY" -c "$prog"
[ "$(cat "$WORK/out")" = "$plain" ] && pass "--report: same stdout as the plain run" ||
	fail "--report: stdout '$(cat "$WORK/out")' != '$plain'"
has "$WORK/err" "^uslub report: pid [0-9]+ \(.*python3" "--report: header line, with the command"
[ "$(grep -c '^uslub report' "$WORK/err")" = 1 ] && pass "--report: one header" ||
	fail "--report: $(grep -c '^uslub report' "$WORK/err") header lines"
has "$WORK/err" "malloc-" "--report: malloc cache lines"
# The caches with nothing in them are named on one line, not printed as
# rows of zeros (python3 uses no kmalloc cache); every column is explained.
has "$WORK/err" "^[0-9]+ empty caches? \(no slabs, no objects, no activity\): .*kmalloc-" \
	"--report: the empty caches on one line"
for col in active num_objs live objsz perslab partial mem_used; do
	[ "$(grep -c "^# <$col> " "$WORK/err")" = 1 ] || fail "--report: no legend line for <$col>"
done

expect 0 "run --report --profile" "$USLUB" run --report --profile -- "$PY" -c "$prog"
has "$WORK/err" "kmalloc-" "--profile: kmalloc cache lines"
has "$WORK/err" "allocinfo" "--profile: allocinfo in the report"
has "$WORK/err" "^# <bytes> " "--profile: a legend under allocinfo"
[ "$(grep -c '^# <calls> ' "$WORK/err")" = 1 ] || fail "--profile: not one allocinfo legend"
expect 0 "run --report --profile=sample:4096" "$USLUB" run --report --profile=sample:4096 -- "$PY" -c "$prog"
has "$WORK/err" "sampled every 4096 bytes; figures are estimates" "--profile=sample: sampled allocinfo in the report"

expect 5 "run --report: exit status of CMD" "$USLUB" run --report -- "$PY" -c 'import sys; sys.exit(5)'
has "$WORK/err" "^uslub report: pid [0-9]+ \(" "--report after a non-zero exit"
# A tree: CMD starts two children, each of which leaves its own report.
expect 0 "run --report: a process tree" "$USLUB" run --report -- "$PY" -c \
	'import subprocess, sys; [subprocess.run([sys.executable, "-c", "0"]) for i in range(2)]'
has "$WORK/err" "^uslub report: pid [0-9]+ \(" "--report of a tree: CMD's report"
has "$WORK/err" "2 other processes of the tree" "--report counts the other reports"
expect 137 "run --report: CMD killed" "$USLUB" run --report -- sh -c 'kill -KILL $$'
has "$WORK/err" "left no report.*killed by signal 9" "--report: a killed CMD left no report"

# A CMD that ends with _exit() runs no exit handler, so it writes no report:
# --report shows its last published snapshot instead (the tool runs CMD
# with USLUB_PUBLISH_MS), says so, and removes the snapshot afterwards.
SHM=${USLUB_PUBLISH_ROOT:-/dev/shm}/uslub-$(id -u)
no_leftovers() {   # no_leftovers NAME: CMD's snapshot files are gone
	local p
	p=$(sed -n 's/^uslub report: pid \([0-9]*\) .*/\1/p' "$WORK/err" | head -1)
	if [ -n "$p" ] && ls "$SHM/$p".* "$SHM/.$p".* >/dev/null 2>&1; then
		fail "$1: the tool left the snapshot of $p in $SHM"
	fi
}
# Until CMD (the shell: $$) has published its first snapshot, for at most
# 10 s (a loaded machine may take more than a fixed sleep).
WAIT_SNAP="i=0; while [ \$i -lt 200 ] && [ ! -e $(printf '%q' "$SHM")/\$\$.json ]; do sleep 0.05; i=\$((i + 1)); done"
# dash: `sleep` runs in a child, then `echo` (a builtin) and _exit().
expect 0 "run --report -- sh -c (dash ends with _exit)" "$USLUB" run --report -- sh -c "$WAIT_SNAP; echo hi"
[ "$(cat "$WORK/out")" = hi ] || fail "sh -c: stdout '$(cat "$WORK/out")'"
has "$WORK/err" "^uslub report: pid [0-9]+ \(sh -c i=0; while .*; echo hi\), from its last snapshot \([0-9.]+ s before it ended\)$" \
	"sh -c: the last snapshot stands in for the report"
has "$WORK/err" "^\(it left no report at exit: it ended with _exit\(\)" "sh -c: it says why"
has "$WORK/err" "^malloc-[0-9]+ " "sh -c: the snapshot's cache rows"
[ "$(grep -c '^uslub report' "$WORK/err")" = 1 ] || fail "sh -c: not one header"
grep -q "left no report (it did not run" "$WORK/err" && fail "sh -c: the old message"
no_leftovers "sh -c"
expect 3 "run --report: python3 ending with os._exit(3)" "$USLUB" run --report -- "$PY" -c \
	"import os, time
for _ in range(200):
    if os.path.exists('$SHM/%d.json' % os.getpid()): break
    time.sleep(0.05)
os._exit(3)"
has "$WORK/err" "^uslub report: pid [0-9]+ \(.*os._exit.*\), from its last snapshot" "os._exit: its last snapshot"
no_leftovers "os._exit"
# A CMD killed after it published: the message, then its last snapshot.
expect 137 "run --report: CMD killed after a snapshot" "$USLUB" run --report -- sh -c "$WAIT_SNAP; kill -KILL \$\$"
has "$WORK/err" "^\(it left no report at exit: killed by signal 9 \(Killed\)\)$" "killed: says so"
has "$WORK/err" "^malloc-[0-9]+ " "killed: its last snapshot"
# USLUB_PUBLISH_MS of the user's own is kept: 0 turns the stand-in off.
USLUB_PUBLISH_MS=0 "$USLUB" run --report -- sh -c 'echo hi' >"$WORK/out" 2>"$WORK/err"
has "$WORK/err" "left no report and published no snapshot.*USLUB_PUBLISH_MS turned off" \
	"USLUB_PUBLISH_MS=0: no stand-in, and why"

# A CMD that closes its stderr at exit (coreutils' close_stdout: ls).
expect 0 "run --report -- ls (closes stderr at exit)" "$USLUB" run --report -- ls /
has "$WORK/err" "^uslub report: pid [0-9]+ \(ls /\)$" "ls: its report"
has "$WORK/err" "^# <live> " "ls: the whole report"
# --report-file - (USLUB_REPORT=-): to the stderr ls started with.
expect 0 "run --report-file - -- ls" "$USLUB" run --report-file - -- ls /
has "$WORK/err" "^uslub report: pid [0-9]+ \(its stderr was closed at exit: this is the stderr it started with\)$" \
	"--report-file - and ls: the report reaches the user"
has "$WORK/err" "^# <live> " "--report-file - and ls: the whole report"
expect 0 "run --report-file - -- python3 closing fd 2" "$USLUB" run --report-file - -- "$PY" -c \
	'import os, sys; sys.stderr.close(); os.close(2)'
has "$WORK/err" "^uslub report: pid [0-9]+ \(its stderr was closed" "fd 2 closed: the report reaches the user"
# The kept descriptor is close-on-exec: what CMD execs (here without a
# report of its own) has the descriptors it would have without uslub.
sh -c 'exec ls /proc/self/fd' >"$WORK/fds.plain" 2>/dev/null
"$USLUB" run --report-file - -- sh -c 'USLUB_REPORT= exec ls /proc/self/fd' >"$WORK/out" 2>/dev/null
cmp -s "$WORK/out" "$WORK/fds.plain" && pass "no descriptor leaks into exec'd programs" ||
	fail "descriptors seen by an exec'd program: $(tr '\n' ' ' <"$WORK/out"), not $(tr '\n' ' ' <"$WORK/fds.plain")"

# --report-file: each process keeps its own file, %p its pid.
expect 0 "run --report-file" "$USLUB" run --report-file "$WORK/rep.%p" -- "$PY" -c 'import os; print(os.getpid())'
rf="$WORK/rep.$(cat "$WORK/out")"
[ -s "$rf" ] && has "$rf" "kmalloc-" "--report-file wrote $rf" || fail "--report-file: no $rf"
expect 2 "--report and --report-file" "$USLUB" run --report --report-file x -- true

# Signals sent to the tool reach CMD; the temporary directory goes away.
"$USLUB" run --report -- sleep 30 2>"$WORK/err" &
tpid=$!
for _ in $(seq 50); do
	pgrep -P $tpid >/dev/null && break
	sleep 0.1
done
cpid=$(pgrep -P $tpid)
kill -TERM $tpid
wait $tpid
st=$?
[ $st = 143 ] && pass "SIGTERM forwarded: exit 143" || fail "SIGTERM to the tool: exit $st"
if [ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null; then
	fail "CMD survived the tool's SIGTERM"
	kill -KILL "$cpid"
fi

left=$(ls -A "$TMPDIR")
[ -z "$left" ] && pass "no temporary files left" || fail "left in TMPDIR: $left"

# ---- slabinfo / allocinfo of a publishing process -------------------------
# (A Python that exits normally on SIGTERM, so that its snapshot is removed.)
USLUB_PUBLISH_MS=50 USLUB_PROFILING=1 "$USLUB" run -- "$PY" -c \
	'import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); time.sleep(30)' &
spid=$!
for _ in $(seq 100); do
	[ -e $SHM/$spid.json ] && break
	sleep 0.05
done
expect 0 "slabinfo PID" "$USLUB" slabinfo $spid
has "$WORK/out" "kmalloc-" "slabinfo PID shows the kmalloc caches"
expect 0 "slabinfo PID --json" "$USLUB" slabinfo $spid --json
$PY -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/out" && pass "slabinfo --json is JSON" ||
	fail "slabinfo --json is not JSON"
[ "$(wc -l <"$WORK/out")" = 1 ] && pass "slabinfo --json is one line" ||
	fail "slabinfo --json spans $(wc -l <"$WORK/out") lines"
has "$WORK/out" '"name":"kmalloc-96"' "slabinfo --json keeps the empty caches"
expect 0 "top -n 2 -d 10" "$USLUB" top $spid -n 2 -d 10
# --json streams JSON Lines: one document a line, each one whole.
expect 0 "top --json -n 3 -d 10" "$USLUB" top $spid --json -n 3 -d 10
$PY -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 3, "%d lines" % len(lines)
for l in lines:
    assert "slabinfo" in json.loads(l)
' "$WORK/out" && pass "top --json: JSON Lines" || fail "top --json: not 3 JSON documents, one a line"
# allocinfo: shown when the snapshot has it, else a clear message (exit 1).
for j in "" --json; do
	"$USLUB" allocinfo $spid $j >"$WORK/out" 2>"$WORK/err"
	st=$?
	if [ $st = 0 ]; then
		has "$WORK/out" "allocinfo" "allocinfo $j"
		[ -n "$j" ] && { $PY -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/out" ||
			fail "allocinfo --json is not JSON"; }
		[ -n "$j" ] && { [ "$(wc -l <"$WORK/out")" = 1 ] || fail "allocinfo --json is not one line"; }
	elif [ $st = 1 ] && grep -q "no allocinfo" "$WORK/err"; then
		pass "allocinfo $j: not published (message)"
	else
		fail "allocinfo $j: exit $st: $(cat "$WORK/err")"
	fi
done
kill $spid; wait $spid
[ -e $SHM/$spid.txt ] && fail "the snapshot outlived the process"
expect 1 "slabinfo of an exited process" "$USLUB" slabinfo $spid
has "$WORK/err" "no process" "slabinfo: no process"
# Killed outright, a process leaves its snapshot: the tool says it is stale.
USLUB_PUBLISH_MS=50 "$USLUB" run -- sleep 30 &
spid=$!
for _ in $(seq 100); do
	[ -e $SHM/$spid.txt ] && break
	sleep 0.05
done
kill -KILL $spid; wait $spid 2>/dev/null
expect 1 "slabinfo of a killed process" "$USLUB" slabinfo $spid
has "$WORK/err" "no process" "slabinfo of a killed process: no process"
[ -e "$SHM/$spid.txt" ] && fail "the tool did not sweep the killed process's snapshot"

# ---- bench ----------------------------------------------------------------
expect 0 "bench --help (run.py's)" "$USLUB" bench --help
has "$WORK/out" "--quick" "bench --help is run.py's usage"

echo "$fails failure(s)"
[ $fails = 0 ]
