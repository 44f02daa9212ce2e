#!/bin/bash
# malloc_report: USLUB_REPORT at exit. A path that cannot be opened or
# written gives one message naming the file and the real cause (strerror
# of the failing call's errno); %p becomes the pid; - is stderr; the path
# survives the program overwriting its environment.
#
#   report.sh PROG       (PROG: a program linked with libuslub-malloc)
set -u
prog=$1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- stderr:"; head -c 2000 "$T/err"; echo; exit 1; }

# run REPORT-VALUE: stderr in $T/err; C messages (env -i: no locale)
run() { env -i PATH=/usr/bin:/bin USLUB_REPORT="$1" "$prog" run 0 >"$T/out" 2>"$T/err"; }
expect_msg() { # REPORT-VALUE MESSAGE
	run "$1"
	grep -qxF "$2" "$T/err" || fail "USLUB_REPORT=\"$1\": want the line: $2"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "USLUB_REPORT=\"$1\": more than one line on stderr"
}

expect_msg "$T/no/such/dir/r" "uslub: USLUB_REPORT: cannot open \"$T/no/such/dir/r\": No such file or directory"
expect_msg "$T" "uslub: USLUB_REPORT: cannot open \"$T\": Is a directory"
if [ -w /dev/full ]; then
	expect_msg /dev/full 'uslub: USLUB_REPORT: cannot write "/dev/full": No space left on device'
fi
long=$(printf 'd%.0s' $(seq 5000))
run "$T/$long"
grep -q '^uslub: USLUB_REPORT: cannot open "/.*\.\.\.d*": File name too long$' "$T/err" ||
	fail "a 5000-byte USLUB_REPORT: no 'File name too long' message"
if [ "$(id -u)" != 0 ]; then
	touch "$T/ro" && chmod 400 "$T/ro"
	expect_msg "$T/ro" "uslub: USLUB_REPORT: cannot open \"$T/ro\": Permission denied"
fi

# what works: %p, and - for stderr
run "$T/r.%p"
pid=$(sed -n 's/^pid=//p' "$T/out")
[ -s "$T/r.$pid" ] && grep -q "^uslub report: pid $pid" "$T/r.$pid" || fail "%p: no $T/r.$pid"
[ ! -s "$T/err" ] || fail "a good USLUB_REPORT printed on stderr"
run -
grep -q '^uslub report: pid ' "$T/err" || fail "USLUB_REPORT=-: no report on stderr"
[ "$(grep -c '^uslub report' "$T/err")" = 1 ] || fail "USLUB_REPORT=-: not one header"
grep -q '^# <live> ' "$T/err" || fail "USLUB_REPORT=-: no legend under the table"
grep -q 'closed at exit' "$T/err" && fail "USLUB_REPORT=-: a note about a stderr that was open"
# - when the program has closed stderr by then (coreutils' close_stdout):
# the stderr it started with, and a note that says so
env -i PATH=/usr/bin:/bin USLUB_REPORT=- "$prog" closestderr >"$T/out" 2>"$T/err" ||
	fail "closestderr exited $?"
grep -q '^uslub report: pid [0-9]* (its stderr was closed at exit: this is the stderr it started with)$' "$T/err" ||
	fail "USLUB_REPORT=- and stderr closed at exit: no report on the stderr it started with"
grep -q '^# <active> ' "$T/err" || fail "USLUB_REPORT=- and stderr closed at exit: a partial report"
# - the copy of stderr is the process's own: a daemon child (fds 0-2 on
# /dev/null) does not hold its parent's stderr pipe open, so a pipeline
# reading it ends when the parent exits, not when the daemon does (3 s)
start=$(date +%s%N)
env -i PATH=/usr/bin:/bin USLUB_REPORT=- "$prog" daemon 2>&1 | cat >"$T/err"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $ms -lt 2500 ] || fail "USLUB_REPORT=-: a daemon child held the stderr pipe open ($ms ms)"
grep -q '^uslub report: pid' "$T/err" || fail "USLUB_REPORT=- with a daemon child: no report"
# - a process started with no stderr at all writes its report nowhere, and
# runs as without USLUB_REPORT (its exit status, its output)
env -i PATH=/usr/bin:/bin USLUB_REPORT=- "$prog" run 0 >"$T/out" 2>&- ||
	fail "USLUB_REPORT=- with no stderr: exit status $?"
grep -q '^pid=' "$T/out" || fail "USLUB_REPORT=- with no stderr: no output"
grep -q 'uslub report' "$T/out" && fail "USLUB_REPORT=- with no stderr: the report went to stdout"
# the value is kept from the start: a program that overwrites its
# environment strings (setproctitle in redis-server) still gets its report
env -i PATH=/usr/bin:/bin USLUB_REPORT="$T/clobbered" "$prog" clobberenv >"$T/out" 2>"$T/err" ||
	fail "clobberenv exited $?"
grep -q '^uslub report: pid ' "$T/clobbered" ||
	fail "environ overwritten after start: no report in $T/clobbered"
[ ! -s "$T/err" ] || fail "environ overwritten after start: output on stderr"
echo "PASS"
