#!/bin/bash
# misuse_fd_publisher_signals (review R1 of issue 25, item 1's class: a
# thread of uslub's must not take what is the program's): the publisher
# thread (USLUB_PUBLISH_MS) is created with every signal blocked, as the
# purge thread is. A process-directed signal goes to some thread that does
# not block it: a program that blocks SIGTERM and sigwait()s for it (the
# usual way a daemon takes its signals in one place) was killed by the
# SIGTERM's default action on the publisher thread, and the program's
# handlers could run on uslub's thread.
#
# Before the fix: the helper died of SIGTERM (exit status 143).
#
#   fd_publisher_signals.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 prog=$3/misuse_prog_fd_sigwait
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
mkdir -m 700 "$T/pub"
USLUB_PUBLISH_ROOT="$T/pub" USLUB_PUBLISH_MS=20 LD_PRELOAD="$lib" "$prog" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] && [ "$(cat "$T/out")" = "sigwait: 15" ] || {
	echo "FAIL: exit status $rc (143: SIGTERM reached a thread of uslub's), out: $(cat "$T/out")"
	sed 's/^/  stderr: /' "$T/err"; exit 1; }
left=$(ls -A "$T/pub/uslub-$(id -u)")
[ -z "$left" ] || { echo "FAIL: left behind: $left"; exit 1; }
echo PASS
