#!/usr/bin/env bash
# `uslub top PID` on a real screen: tmux (a private server, 120x40) runs it
# against top_workload (caches top_busy: busy; top_big: the most memory;
# accounting group top_group; profiling on), and the screen is read back
# with capture-pane:
#   - the header: pid, command, a human local timestamp (not an epoch);
#     the alternate screen is on while top runs;
#   - rows: both caches, top_big first (memory), top_busy with non-zero
#     alloc and free rates; the sort keys (a: top_busy first; n: names in
#     order; r: reversed) change the first row;
#   - pause (p) freezes the timestamp and the rates, p again resumes;
#   - views: i shows the workload's call site, g its group, h the keys;
#   - a resize (SIGWINCH) redraws to the new size;
#   - q exits 0 and restores the terminal: alternate screen left, cursor
#     shown, echo and canonical mode back (stty); Ctrl-C and SIGTERM
#     restore it too and end with the signal's status; Ctrl-Z leaves the
#     screen while stopped, fg brings it back;
#   - the process exiting is said on the screen, any key quits (exit 0);
#   - plain frames: -n, --once and a pipe print no escape sequence; --json
#     prints one JSON document per line; a process that exits ends the
#     frames with a message and exit 0.
#
#   top_test.sh <uslub> <top_workload>
# Skips (77) when tmux is not installed.
set -u
USLUB=$1 WL=$2
command -v tmux >/dev/null 2>&1 || { echo "tmux not installed: skipped"; exit 77; }
[ -x "$USLUB" ] || { echo "no tool $USLUB"; exit 1; }
[ -x "$WL" ] || { echo "no workload $WL"; exit 1; }

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok:   $*"; }
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/uslub-top-test.XXXXXX")
SOCK="uslub-top-test-$$"
TM() { tmux -L "$SOCK" -f /dev/null "$@"; }
wpid="" fpid=""
cleanup() {
	TM kill-server 2>/dev/null
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
	[ -n "$fpid" ] && kill "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
unset USLUB_PUBLISH_MS USLUB_PROFILING USLUB_REPORT
SHM=${USLUB_PUBLISH_ROOT:-/dev/shm}/uslub-$(id -u)

# wait_file PATH: 0 once PATH exists, 1 after 15 s
wait_file() {
	for _ in $(seq 300); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

start_workload() {
	USLUB_PUBLISH_MS=100 USLUB_PROFILING=1 "$WL" >"$WORK/wl.out" &
	wpid=$!
	wait_file "$SHM/$wpid.json" && return 0
	fail "the workload (pid $wpid) publishes nothing in $SHM"
	exit 1
}

screen() { TM capture-pane -p -t "$1"; }
# wait_for SESSION REGEX [TENTHS]: until the screen matches (1 when not).
wait_for() {
	for _ in $(seq "${3:-50}"); do
		screen "$1" | grep -qE -- "$2" && return 0
		sleep 0.1
	done
	return 1
}
# The rows of the table: the lines after the column header, up to the
# first blank line.
rows() { screen "$1" | awk '/ MEMORY .* NAME/ { on = 1; next } on && /^ *$/ { exit } on'; }
first_name() { rows "$1" | head -1 | awk '{ print $NF }'; }
busy_field() { rows "$1" | awk -v f="$2" '$NF == "top_busy" { print $f }'; }

# A shell that runs `uslub top ARGS`, then says how it ended and how the
# terminal is (stty), and stays for capture-pane. The shell ignores SIGINT
# (Ctrl-C reaches the whole foreground group); top sets its own handler.
open_top() {   # open_top SESSION ARGS...
	local s=$1
	shift
	TM new-session -d -s "$s" -x 120 -y 40 \
		"trap '' INT; ${TOP_PRE:-}$(printf '%q ' "$USLUB" top "$@") ${TOP_IN:-}; echo TOP-EXIT-\$?; stty -a | tr ' ' '\\n' | grep -E '^-?(icanon|echo)\$' | tr '\\n' ' '; echo; sleep 60" ||
		{ fail "tmux new-session"; exit 1; }
}
stty_ok() {    # stty_ok SESSION NAME: canonical mode and echo restored
	if screen "$1" | grep -qE '(^| )icanon echo( |$)'; then pass "$2: echo and canonical mode restored"
	else fail "$2: terminal modes not restored:"; screen "$1" | grep -E 'icanon|TOP-EXIT' | sed 's/^/    /'; fi
}
alt_on() { TM display -p -t "$1" '#{alternate_on}'; }

start_workload
P=$wpid

# ---- the screen --------------------------------------------------------------
S=top1
open_top $S $P -d 200
wait_for $S "top_busy" 50 && pass "screen shows top_busy" || { fail "no top_busy on the screen:"; screen $S | sed 's/^/    /'; }
[ "$(alt_on $S)" = 1 ] && pass "alternate screen on" || fail "alternate screen not on while top runs"
h=$(screen $S | head -1)
echo "$h" | grep -qE "^uslub top - pid $P .*top_workload" && pass "header: pid and command" ||
	fail "header: '$h'"
echo "$h" | grep -qE '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}' && pass "header: human timestamp" ||
	fail "header without a date and time: '$h'"
echo "$h" | grep -qE '[0-9]{10}' && fail "header has an epoch-like number: '$h'"
screen $S | sed -n 2p | grep -qE 'caches: [0-9]+.*objects: .*in slabs: .*live bytes: ' &&
	pass "header: totals" || fail "no totals line: $(screen $S | sed -n 2p)"
screen $S | grep -q "every 0.2 s" && pass "header: the refresh interval" || fail "no refresh interval"
rows $S | grep -q ' top_big$' && pass "top_big on a row" || fail "no top_big row"
[ "$(first_name $S)" = top_big ] && pass "sorted by memory: top_big first" ||
	fail "first row '$(first_name $S)', expected top_big"

ok=0
for _ in $(seq 50); do
	a=$(busy_field $S 3) f=$(busy_field $S 4)
	if [ -n "$a" ] && [ "$a" != "-" ] && [ "$a" != 0 ] && [ "$f" != "-" ] && [ "$f" != 0 ]; then ok=1; break; fi
	sleep 0.1
done
[ $ok = 1 ] && pass "top_busy rates: alloc $a/s, free $f/s" ||
	{ fail "top_busy rates not non-zero: '$a' '$f'"; rows $S | sed 's/^/    /'; }
for _ in $(seq 30); do   # (its 2048 objects may be in the first interval)
	big=$(rows $S | awk '$NF == "top_big" { print $3 }')
	[ "$big" = 0 ] && break
	sleep 0.1
done
[ "$big" = 0 ] && pass "top_big (idle after its start): alloc rate 0" || fail "top_big alloc rate '$big'"

TM send-keys -t $S a
wait_for $S "sort: alloc" 30 && [ "$(first_name $S)" = top_busy ] && pass "key a: top_busy first" ||
	fail "key a: first row '$(first_name $S)'"
TM send-keys -t $S n
wait_for $S "sort: name" 30
names=$(rows $S | awk '{ print $NF }')
if [ "$(echo "$names" | LC_ALL=C sort)" = "$names" ] && [ "$(echo "$names" | wc -l)" -ge 2 ]; then
	pass "key n: rows in name order"
else
	fail "key n: rows not by name: $(echo $names)"
fi
TM send-keys -t $S r
wait_for $S "sort: name \(reversed\)" 30
names_r=$(rows $S | awk '{ print $NF }')
[ "$names_r" = "$(echo "$names" | tac)" ] && pass "key r: reversed" || fail "key r: $(echo $names_r)"
TM send-keys -t $S r m
wait_for $S "sort: memory" 30 && [ "$(first_name $S)" = top_big ] && pass "key m: top_big first again" ||
	fail "key m: first row '$(first_name $S)'"
TM send-keys -t $S s
wait_for $S "sort: objects" 30 && pass "key s: next column (objects)" || fail "key s"
TM send-keys -t $S '<'
wait_for $S "sort: memory" 30 && pass "key <: previous column" || fail "key <"

# pause: the timestamp and the figures stay
TM send-keys -t $S p
wait_for $S "PAUSED" 30 && pass "key p: paused" || fail "key p: no PAUSED"
before=$(screen $S | grep -v PAUSED_NEVER)
sleep 1.6
after=$(screen $S)
[ "$before" = "$after" ] && pass "paused: the screen (timestamp, rates) is frozen" ||
	{ fail "paused screen changed:"; diff <(echo "$before") <(echo "$after") | head -10 | sed 's/^/    /'; }
t0=$(screen $S | head -1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}')
TM send-keys -t $S ' '
ok=0
for _ in $(seq 30); do
	t1=$(screen $S | head -1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}')
	if ! screen $S | grep -q PAUSED && [ "$t1" != "$t0" ]; then ok=1; break; fi
	sleep 0.1
done
[ $ok = 1 ] && pass "space: resumed ($t0 -> $t1)" || fail "not resumed: $t0 -> $t1"

# views and help
TM send-keys -t $S i
wait_for $S "top_workload\.c:[0-9]+ +main" 30 && pass "key i: allocinfo shows the workload's call site" ||
	{ fail "key i: no call site:"; screen $S | sed 's/^/    /' | head -12; }
TM send-keys -t $S g
wait_for $S "/top_group +top_big" 30 && pass "key g: the group and its cache" ||
	{ fail "key g: no /top_group:"; screen $S | sed 's/^/    /' | head -16; }
TM send-keys -t $S c h
wait_for $S "^keys: q quit" 30 && wait_for $S "top_busy" 10 && pass "keys c, h: caches view with the key help" ||
	fail "keys c, h"
TM send-keys -t $S h

# resize (SIGWINCH)
TM resize-window -t $S -x 90 -y 25 2>/dev/null || TM resize-pane -t $S -x 90 -y 25
ok=0
for _ in $(seq 30); do
	scr=$(screen $S)
	long=$(echo "$scr" | awk 'length($0) > 90' | wc -l)
	if [ "$(echo "$scr" | wc -l)" -le 25 ] && [ "$long" = 0 ] &&
	   echo "$scr" | tail -1 | grep -q "q quit"; then ok=1; break; fi
	sleep 0.1
done
[ $ok = 1 ] && pass "resize to 90x25: redrawn, the key line at the bottom" ||
	{ fail "resize:"; echo "$scr" | sed 's/^/    /'; }

TM send-keys -t $S q
wait_for $S "TOP-EXIT-0" 30 && pass "q: exit 0" || { fail "q: no exit 0:"; screen $S | sed 's/^/    /'; }
[ "$(alt_on $S)" = 0 ] && pass "q: alternate screen left" || fail "q: still on the alternate screen"
[ "$(TM display -p -t $S '#{cursor_flag}')" = 1 ] && pass "q: cursor shown" || fail "q: cursor hidden"
screen $S | grep -q "top_busy" && fail "q: top's rows left on the normal screen"
wait_for $S "icanon" 20
stty_ok $S q

# Ctrl-C and SIGTERM restore the terminal, and end with the signal
S=top2
open_top $S $P -d 200
wait_for $S "top_busy" 50
TM send-keys -t $S C-c
wait_for $S "TOP-EXIT-130" 30 && pass "Ctrl-C: ended by SIGINT (130)" || { fail "Ctrl-C:"; screen $S | sed 's/^/    /'; }
[ "$(alt_on $S)" = 0 ] && pass "Ctrl-C: alternate screen left" || fail "Ctrl-C: still on the alternate screen"
wait_for $S "icanon" 20
stty_ok $S Ctrl-C
S=top3
open_top $S $P -d 200
wait_for $S "top_busy" 50
tpid=$(pgrep -f "top $P -d 200" | while read -r p; do
	[ "$(readlink /proc/$p/exe)" = "$(readlink -f "$USLUB")" ] && echo $p; done | head -1)
if [ -n "$tpid" ]; then
	kill -TERM "$tpid"
	wait_for $S "TOP-EXIT-143" 30 && pass "SIGTERM: ended by SIGTERM (143)" || { fail "SIGTERM:"; screen $S | sed 's/^/    /'; }
	[ "$(alt_on $S)" = 0 ] && pass "SIGTERM: alternate screen left" || fail "SIGTERM: still on the alternate screen"
	wait_for $S "icanon" 20
	stty_ok $S SIGTERM
else
	fail "cannot find the pid of uslub top"
fi

# Ctrl-Z in a shell with job control: the terminal back while stopped, the
# screen again after fg
S=top5
TM new-session -d -s $S -x 120 -y 40 "bash --norc --noprofile -i" || fail "tmux new-session (bash)"
sleep 0.3
TM send-keys -t $S "$(printf '%q ' "$USLUB" top $P -d 200)" Enter
wait_for $S "top_busy" 50
TM send-keys -t $S C-z
wait_for $S "Stopped" 30 && [ "$(alt_on $S)" = 0 ] && pass "Ctrl-Z: stopped, alternate screen left" ||
	{ fail "Ctrl-Z:"; screen $S | grep -v '^$' | sed 's/^/    /'; }
TM send-keys -t $S "fg" Enter
sleep 0.3
wait_for $S "top_busy" 30 && [ "$(alt_on $S)" = 1 ] && pass "fg: the screen again" || fail "fg: no screen"
TM send-keys -t $S q
for _ in $(seq 50); do [ "$(alt_on $S)" = 0 ] && break; sleep 0.1; done
[ "$(alt_on $S)" = 0 ] && pass "q after fg: alternate screen left" || fail "q after fg"

# ---- plain frames --------------------------------------------------------------
"$USLUB" top $P -n 2 -d 150 >"$WORK/plain" 2>"$WORK/err"
st=$?
[ $st = 0 ] && pass "-n 2: exit 0" || fail "-n 2: exit $st: $(cat "$WORK/err")"
[ "$(grep -c '^uslub top - pid' "$WORK/plain")" = 2 ] && pass "-n 2: two frames" || fail "-n 2: $(grep -c '^uslub top' "$WORK/plain") frames"
grep -q $'\033' "$WORK/plain" && fail "-n 2: escape sequences in plain frames" || pass "-n 2: no escape sequence"
grep -qE ' top_busy$' "$WORK/plain" && pass "-n 2: top_busy row" || fail "-n 2: no top_busy row"
"$USLUB" top $P --once --view groups >"$WORK/once" 2>&1
[ "$(grep -c '^uslub top - pid' "$WORK/once")" = 1 ] && grep -q '/top_group' "$WORK/once" &&
	pass "--once --view groups: one frame with the group" || { fail "--once:"; sed 's/^/    /' "$WORK/once"; }
timeout 5 "$USLUB" top $P -d 200 >"$WORK/pipe" 2>&1
grep -q '^uslub top - pid' "$WORK/pipe" && ! grep -q $'\033' "$WORK/pipe" &&
	pass "stdout a pipe: plain frames" || fail "stdout a pipe: $(head -c 300 "$WORK/pipe" | cat -v)"
"$USLUB" top $P --json -n 3 -d 150 >"$WORK/jsonl" 2>"$WORK/err"
[ "$(wc -l <"$WORK/jsonl")" = 3 ] && $PY -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert d["pid"] == int(sys.argv[2]) and "slabinfo" in d, d.keys()
' "$WORK/jsonl" $P && pass "--json -n 3: three JSON documents, one per line" ||
	{ fail "--json -n 3: not JSON Lines"; head -c 300 "$WORK/jsonl"; }
"$USLUB" top $P -n 1 --sort alloc >"$WORK/sorted"
awk '/ MEMORY .* NAME/ { getline; print $NF; exit }' "$WORK/sorted" | grep -qx top_busy &&
	pass "--sort alloc: top_busy first" || { fail "--sort alloc:"; sed 's/^/    /' "$WORK/sorted"; }
"$USLUB" top $P -n 2 -d 150 --sort slab >"$WORK/slab"
grep -q " SLAB/s .* NAME" "$WORK/slab" &&
	awk '/ SLAB\/s .* NAME/ { getline; if ($6 ~ /^[0-9.]+[kMGTP]?$|^-$/) ok = 1 } END { exit !ok }' "$WORK/slab" &&
	pass "--sort slab: the SLAB/s column, a rate or -" ||
	{ fail "--sort slab:"; sed 's/^/    /' "$WORK/slab"; }
"$USLUB" top $P --sort frobs >/dev/null 2>&1
[ $? = 2 ] && pass "--sort with an unknown column: usage (2)" || fail "--sort frobs accepted"

# ---- the process exits ---------------------------------------------------------
S=top4
open_top $S $P -d 200
wait_for $S "top_busy" 50
"$USLUB" top $P -n 100 -d 100 >"$WORK/batch" 2>"$WORK/batch.err" &
bpid=$!
for _ in $(seq 100); do   # (its first frame: it has its first snapshot)
	grep -q '^uslub top - pid' "$WORK/batch" && break
	sleep 0.1
done
kill -TERM $P
wait $P
wpid=""
wait_for $S "process $P has exited" 30 && pass "screen: the process has exited" ||
	{ fail "screen after the exit:"; screen $S | tail -4 | sed 's/^/    /'; }
TM send-keys -t $S x
wait_for $S "TOP-EXIT-0" 30 && pass "after the exit: a key quits, exit 0" || fail "after the exit: $(screen $S | tail -3)"
wait $bpid
st=$?
[ $st = 0 ] && grep -q "process $P has exited" "$WORK/batch" && pass "frames: the exit said, exit 0" ||
	{ fail "frames after the exit: exit $st"; tail -3 "$WORK/batch"; cat "$WORK/batch.err"; }
"$USLUB" top $P --once >/dev/null 2>&1
[ $? = 1 ] && pass "top of a process that is gone: exit 1" || fail "top of a gone process: not 1"

# ---- crafted snapshots ---------------------------------------------------------
# A forger publishes as itself, as the publisher does (src/observe/publish_dir.h):
# its <pid>.lock held with a POSIX record lock, <pid>.json renamed into place.
cat >"$WORK/forge.py" <<'EOF'
# forge.py ROOT MODE: publish crafted snapshots every 0.2 s (a new time_ns)
#   many:    120000 caches, half of them named "dup", counters growing:
#            more than top reads (100000); quadratic work would take minutes
#   hostile: a cache name with a raw newline, tab and ^A (not valid JSON), a
#            call site without a line, one whose bytes swing between the ends
#            of a long long
import fcntl, os, sys, time
root, mode = sys.argv[1], sys.argv[2]
d = os.path.join(root, "uslub-%d" % os.geteuid())
os.makedirs(d, mode=0o700, exist_ok=True)
os.chmod(root, 0o700)
os.chmod(d, 0o700)
pid = os.getpid()
start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
lk = os.open(os.path.join(d, "%d.lock" % pid), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(lk, fcntl.LOCK_EX | fcntl.LOCK_NB)
n = 0
while True:
    n += 1
    sites = ""
    if mode == "many":
        caches = ",".join('{"name":"%s","object_size":8,"num_objs":1,"memory_used":4096,'
                          '"stats":{"ALLOC_FASTPATH":%d}}' % ("dup" if i % 2 else "c%d" % i, n * i)
                          for i in range(120000))
    else:
        caches = ('{"name":"evil\nname\tx\x01","object_size":8,"num_objs":1,"memory_used":4096},'
                  '{"name":"plain","object_size":16,"num_objs":1,"memory_used":8192}')
        big = "9223372036854775807" if n % 2 else "-9223372036854775808"
        sites = (',"allocinfo":{"mode":"exact","total_bytes":1,"total_calls":1,"sites":['
                 '{"file":"/lib/x.so+0x1234","line":0,"func":"","bytes":100,"calls":1},'
                 '{"file":"src/a.c","line":7,"func":"f","bytes":%s,"calls":1}]}' % big)
    doc = ('{"pid":%d,"start_time":%d,"time_ns":%d,"slabinfo":{"caches":[%s]}%s}\n'
           % (pid, start, time.time_ns(), caches, sites))
    tmp = os.path.join(d, ".%d.json.tmp" % pid)
    with open(tmp, "w") as f:
        f.write(doc)
    os.chmod(tmp, 0o600)
    os.rename(tmp, os.path.join(d, "%d.json" % pid))
    time.sleep(0.2)
EOF
ROOT="$WORK/root"
mkdir -p "$ROOT"
forge() {      # forge MODE: sets fpid, once its first snapshot is there
	USLUB_PUBLISH_ROOT="$ROOT" $PY "$WORK/forge.py" "$ROOT" "$1" &
	fpid=$!
	wait_file "$ROOT/uslub-$(id -u)/$fpid.json" || fail "the forger ($1) publishes nothing"
}
TOP_PRE="env USLUB_PUBLISH_ROOT=$(printf '%q' "$ROOT") "

# Many caches: every refresh O(n log n), at most 100000 read, q seen at once.
forge many
t0=$(date +%s)
USLUB_PUBLISH_ROOT="$ROOT" "$USLUB" top $fpid -n 2 -d 200 >"$WORK/many" 2>"$WORK/err"
st=$? t1=$(date +%s)
[ $st = 0 ] && grep -q '^20000 caches not shown' "$WORK/many" &&
	[ "$(grep -c ' dup$' "$WORK/many")" -ge 2 ] &&
	pass "120000 caches: -n 2 in $((t1 - t0)) s, 20000 said not shown" ||
	{ fail "120000 caches: exit $st after $((t1 - t0)) s"; tail -3 "$WORK/many"; cat "$WORK/err"; }
[ $((t1 - t0)) -le 30 ] || fail "120000 caches: -n 2 took $((t1 - t0)) s"
S=top6
open_top $S $fpid -d 200
wait_for $S "caches not shown" 300 && pass "120000 caches on the screen" ||
	{ fail "120000 caches: no screen"; screen $S | tail -3 | sed 's/^/    /'; }
sleep 1                 # (refreshes going on)
TM send-keys -t $S q
wait_for $S "TOP-EXIT-0" 50 && pass "120000 caches: q seen within 5 s" ||
	{ fail "120000 caches: q not seen"; screen $S | tail -3 | sed 's/^/    /'; }
kill $fpid; wait $fpid 2>/dev/null

# A raw newline in a name: --json still writes one JSON document per line,
# each a new snapshot (-d shorter than the publisher's 0.2 s).
forge hostile
USLUB_PUBLISH_ROOT="$ROOT" "$USLUB" top $fpid --json -n 3 -d 50 >"$WORK/hj" 2>"$WORK/err"
st=$?
[ $st = 0 ] && [ "$(wc -l <"$WORK/hj")" = 3 ] && $PY -c '
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1])]
assert docs[0]["slabinfo"]["caches"][0]["name"] == "evil\nname\tx\x01", docs[0]
assert len({d["time_ns"] for d in docs}) == 3, [d["time_ns"] for d in docs]
' "$WORK/hj" && pass "--json: a raw newline in a name escaped; 3 documents, 3 snapshots" ||
	{ fail "--json with a raw newline (exit $st)"; head -c 600 "$WORK/hj" | cat -v; cat "$WORK/err"; }
# A site without a line: no ":0"; growth of huge figures (UBSan: no overflow).
USLUB_PUBLISH_ROOT="$ROOT" "$USLUB" top $fpid --view allocinfo -n 2 -d 200 >"$WORK/ai" 2>"$WORK/err"
st=$?
[ $st = 0 ] && grep -qE ' /lib/x\.so\+0x1234 *$' "$WORK/ai" && ! grep -q 'x1234:0' "$WORK/ai" &&
	grep -qE ' src/a\.c:7 +f$' "$WORK/ai" && ! grep -q 'runtime error' "$WORK/err" &&
	pass "allocinfo: a site without a line has no ':0'; huge growth fine" ||
	{ fail "allocinfo of crafted sites (exit $st)"; sed 's/^/    /' "$WORK/ai" | tail -6; cat "$WORK/err"; }
# stdin not a terminal: when the process exits, top ends by itself (exit 0).
S=top7
TOP_IN="</dev/null" open_top $S $fpid -d 200
wait_for $S " plain$" 50 && pass "stdin /dev/null: the screen" || fail "stdin /dev/null: no screen"
kill $fpid; wait $fpid 2>/dev/null; fpid=""
wait_for $S "TOP-EXIT-0" 50 && pass "stdin /dev/null: exit 0 when the process is gone, no key" ||
	{ fail "stdin /dev/null: top waits"; screen $S | tail -3 | sed 's/^/    /'; }
[ "$(alt_on $S)" = 0 ] || fail "stdin /dev/null: still on the alternate screen"
wait_for $S "icanon" 20
stty_ok $S "stdin /dev/null"

echo "$fails failure(s)"
[ $fails = 0 ]
