#!/bin/bash
# `uslub resolve` (tools/resolve.c) on hostile reports: the module paths
# and numbers come from the profiled process, which may be another user's.
#   - a row naming a FIFO, /dev/zero or a directory as its module: the
#     tool neither waits on nor reads it (O_PATH, regular files only): it
#     ends at once and leaves the row as it was;
#   - 100,000 rows (a big program's allocinfo, or a forged one): resolved
#     in well under the 20 s guard (the rows and sites are hashed; the
#     linear merge took 33 s);
#   - 23-digit numbers: saturated, no overflow (UBSan in the ASan build);
#   - a row whose module resolves (this script's bash, when it has line
#     information, is not required: only that nothing is lost): every
#     input row is in the output.
#
#   resolve_test.sh TOOL
set -u
tool=$1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok:   $*"; }

mkfifo "$T/fifo"
mkdir "$T/dir"
{
	echo "allocinfo - profiling on; 300 bytes in 3 objects"
	echo "#      <bytes>    <calls> <site> <func>"
	echo "           100          1 $T/fifo+0x1234 func:f1+0x4"
	echo "           100          1 /dev/zero+0x1234 func:f2+0x4"
	echo "           100          1 $T/dir+0x1234 func:f3+0x4"
} >"$T/special"
if timeout 10 "$tool" resolve "$T/special" >"$T/out" 2>"$T/err"; then
	pass "special files as modules: resolve ends"
else
	fail "special files as modules: resolve failed or hung (rc $?)"
fi
for m in "$T/fifo" /dev/zero "$T/dir"; do
	grep -q "^ *100 *1 $m+0x1234 func:f" "$T/out" || fail "the row of $m is not left as it was"
done

awk 'BEGIN { print "allocinfo - profiling on; many"; print "#      <bytes>    <calls> <site> <func>"
	for (i = 0; i < 100000; i++) printf "%14d %10d /nonexistent/mod%d+0x%x func:f%d+0x1\n", 100000 - i, 1, i % 7, i, i }' \
	>"$T/many"
start=$(date +%s%N)
if timeout 20 "$tool" resolve "$T/many" >"$T/out" 2>"$T/err"; then
	pass "100000 rows resolved in $(( ($(date +%s%N) - start) / 1000000 )) ms"
else
	fail "100000 rows: not done in 20 s (rc $?)"
fi
[ "$(grep -c ' func:f' "$T/out")" = 100000 ] || fail "100000 rows: $(grep -c ' func:f' "$T/out") in the output"

{
	echo "allocinfo - profiling on; huge"
	echo "#      <bytes>    <calls> <site> <func>"
	echo "99999999999999999999999 99999999999999999999999 /bin/sh+0x10 func:a+0x1"
	echo "99999999999999999999999 1 /bin/sh+0x10 func:a+0x1"
	echo "-99999999999999999999999 -1 /nonexistent+0x10 func:b+0x1"
} >"$T/huge"
if "$tool" resolve "$T/huge" >"$T/out" 2>"$T/err"; then
	pass "23-digit numbers: no crash"
else
	fail "23-digit numbers: rc $?"; cat "$T/err"
fi
grep -q "runtime error" "$T/err" && fail "23-digit numbers: $(grep -m1 'runtime error' "$T/err")"

[ $fails = 0 ] && echo PASS || exit 1
