#!/usr/bin/env bash
# Locks the fast paths against regressions: the instructions of
# uslub_cache_alloc and uslub_cache_free up to their first `ret` (the hot
# path; the slow paths are tail calls after it) must not grow past the
# budget below. Run by CTest on the shared library of a normal build.
set -eu
lib=$1
command -v objdump >/dev/null || { echo "objdump missing: skipped"; exit 0; }
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
objdump -d --no-show-raw-insn "$lib" > "$dis"
hot() {   # instructions of function $1 up to and including its first ret
	awk -v f="<$1>:" '$2 == f { on = 1; next }
			on && /^$/ { exit }
			on && /\t/ { n++; if ($0 ~ /\tret/) { print n; exit } }' "$dis"
}
status=0
check() {
	local n; n=$(hot "$1")
	# an alias at the same address (uslub_cache_alloc = _noprof) may be
	# the name objdump prints
	if [ -z "$n" ] && [ -n "${3:-}" ]; then n=$(hot "$3"); fi
	if [ -z "$n" ]; then echo "FAIL $1: not found or no ret"; status=1; return; fi
	if [ "$n" -gt "$2" ]; then
		echo "FAIL $1: $n instructions on the hot path, budget $2"; status=1
	else
		echo "ok   $1: $n instructions on the hot path (budget $2)"
	fi
}
# alloc: pop + one test for "empty freelist, gfp bits or fast paths off"
#        (hardened caches) + the node test + clearing the free mark (1:
#        word 0, a constant offset)
# free:  push + range + object start + the free-mark test and store (4:
#        the mark's load, compare, branch, store; the naive x != head
#        test it replaced was 2)
# both:  + a NULL cache test (2: test, branch to a cold report)
check uslub_cache_alloc_noprof 18
check uslub_cache_free 30
exit $status
