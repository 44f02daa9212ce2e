#!/bin/bash
# misuse_fd_exec_leftover (issue 25, item 1, review R1): a process that
# published and then exec'd a program under uslub that ended before its
# own publisher was set up (a fork child running a short program, as a
# shell or python's subprocess does) left <pid>.txt, <pid>.json and
# <pid>.lock in /dev/shm/uslub-<uid> after it exited: the new image's exit
# handler removed only what it had published itself. It now removes the
# files of its pid, which can only be an earlier image's.
#
# Before the fix: the three files were still there (by hand, with
# `sh -c 'prog'` run 40 times, 35 of 40 runs left them); the helper
# makes the new image exit before its setup every time.
#
#   fd_exec_leftover.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 prog=$3/misuse_prog_fd_exec
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
T=$(mktemp -d) || exit 1
child=
# whether PID still runs (a zombie does not)
alive() { [ -n "$1" ] && [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
cleanup() {
	for i in $(seq 100); do   # the helper's child lets go within 5 s
		alive "$child" || break
		sleep 0.05
	done
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; sed 's/^/  stderr: /' "$T/err"; exit 1; }
mkdir -m 700 "$T/pub"
for try in 1 2 3 4 5; do
	env USLUB_PUBLISH_MS=20 USLUB_PUBLISH_ROOT="$T/pub" LD_PRELOAD="$lib" \
		"$prog" "$T/pub" start >"$T/out" 2>"$T/err"
	rc=$?
	read -r pid child <"$T/out"
	[ -n "$child" ] || fail "helper printed no pids (exit status $rc)"
	[ $rc = 5 ] || break              # 5: its publisher won the race
		for i in $(seq 100); do alive "$child" || break; sleep 0.05; done
done
[ $rc = 0 ] || fail "helper exited $rc"
left=$(cd "$T/pub/uslub-$(id -u)" && ls -A | grep -E "^\.?$pid\.")
[ -z "$left" ] || fail "left behind by pid $pid: $(echo $left)"
[ ! -s "$T/err" ] || fail "something on stderr"
echo PASS
