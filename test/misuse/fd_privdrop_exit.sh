#!/bin/bash
# misuse_fd_privdrop_exit (issue 25, item 8, review R1): a root process that
# publishes, drops privileges (setuid) and exits before its publisher's
# next round. The publisher never saw the new euid, and the exit handler
# removed files only with the euid unchanged: the process stopped
# publishing without a word and left root's files behind. Now the exit
# says it, once, as the publisher would have (the files are left to
# root's next sweep: uid 65534 cannot remove them), and that sweep takes
# them.
#
# Before the fix: nothing on stderr.
#
#   fd_privdrop_exit.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 prog=$3/misuse_prog_fd_drop next=$3/misuse_prog_fd_daemon
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
[ "$(id -u)" = 0 ] || { echo "skipped: needs root"; exit 77; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/  stderr: /' "$T/err"; exit 1; }
mkdir -m 755 "$T/pub"
export USLUB_PUBLISH_ROOT="$T/pub"
USLUB_PUBLISH_MS=60000 LD_PRELOAD="$lib" "$prog" >"$T/out" 2>"$T/err" ||
	fail "helper exited $?"
pid=$(cat "$T/out")
[ -n "$pid" ] || fail "no pid"
grep -q "^uslub: USLUB_PUBLISH_MS: the process's euid changed from 0 to 65534, which cannot write $T/pub/uslub-0: stopped publishing; its files there ($pid.txt, $pid.json, $pid.lock) cannot be removed (Permission denied): they are left to the next sweep in that directory" "$T/err" ||
	fail "no message for the drop"
[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line"
# root's next publisher sweeps them at its start
USLUB_PUBLISH_MS=20 LD_PRELOAD="$lib" "$next" wait >/dev/null 2>"$T/err" || fail "root's next publisher: $?"
left=$(ls -A "$T/pub/uslub-0" | grep -E "^\.?$pid\.")
[ -z "$left" ] || fail "root's sweep left: $left"
echo PASS
