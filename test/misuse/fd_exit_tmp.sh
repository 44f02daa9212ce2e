#!/bin/bash
# misuse_fd_exit_tmp (review R1 of issue 25, item 1: files left in
# /dev/shm at exit): the publisher makes no temporary once uslub's exit
# handler has removed this process's files. Before the fix it checked
# nothing before making the next one, so an exit that ended while it was
# writing left .<pid>.json.tmp behind (python3 running subprocess.run 21
# times with USLUB_PUBLISH_MS=1: 3 runs in 20); the helper's module ends
# the process the moment such a temporary appears after uslub's exit
# handler.
#
#   fd_exit_tmp.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 prog=$3/misuse_prog_fd_exit_tmp mod=$3/misuse_mod_fd_exit_tmp.so
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/pub"
for i in 1 2 3; do
	USLUB_PUBLISH_ROOT="$T/pub" USLUB_PUBLISH_MS=1 LD_PRELOAD="$lib:$mod" "$prog" >"$T/out" 2>"$T/err" ||
		{ echo "FAIL: helper exited $?"; cat "$T/err"; exit 1; }
	pid=$(cat "$T/out")
	left=$(ls -A "$T/pub/uslub-$(id -u)" | grep -E "^\.?$pid\.")
	[ -z "$left" ] || { echo "FAIL: left behind by pid $pid: $(echo $left)"; exit 1; }
done
echo PASS
