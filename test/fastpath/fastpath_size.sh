#!/usr/bin/env bash
# Locks the fast paths against regressions: the instructions of
# uslub_cache_alloc and uslub_cache_free up to their first `ret` (the hot
# path; the slow paths are tail calls after it) must not grow past the
# budget below. Run by CTest on the shared library of a normal build, and
# (second argument, optional) on the malloc front end's malloc and free.
set -eu
lib=$1
mlib=${2:-}
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
# Sheaf mode (Linux 7.0, every cache by default; objdump of the gcc -O2
# build, counted to the first ret, which includes the miss branches laid
# out before it):
# alloc (21): the NULL cache test (2), gfp bits (2), the cpu slot (GOT
#        load of the TLS offset, the cache's slot offset, the %fs-relative
#        add of the thread's cpu_base: 3), main and its size (2), "empty"
#        (2), "inline paths off" (load, compare, branch: 3), the pop (2:
#        the size stored first, then the object loaded),
#        the ALLOC_PCS counter, which is also sampled profiling's countdown
#        (2: one add to memory and a `js` on its sign to the miss path,
#        cache/sample.c; never taken unless USLUB_PROFILING=sample armed
#        it), the free mark's clear (1), ret and the result move (2)
# free (62): the NULL cache test (2), the cpu slot (3), the main sheaf's
#        room (3) and inline paths on (3), both before any lookup (a
#        hooked cache misses at once), free_object()'s lookup (16 since
#        sampled profiling, 19 with virt_to_slab before: canonical
#        address, ownership bit, the page's descriptor and PG_slab_page,
#        which a slab holding a sampled object lacks, then compound_head),
#        this cache (2), the offset inside the slab's objects
#        (7), object start (reciprocal multiply and back, 32-bit: 5), one
#        node (2), the free mark's test and store (5), the push (5),
#        FREE_PCS (1), one callee-saved register (2), the miss branch's
#        caller address and tail call
check uslub_cache_alloc_noprof 21
check uslub_cache_free 62
# The malloc front end (libuslub-malloc.so; objdump may name the aliases
# __libc_malloc and __libc_free, at the same addresses):
# malloc (25): size <= 1 KiB (2), the table entry (3: (n + 7) >> 3, lea,
#        load), NULL (2: caches not made yet), the cpu slot (3), main and
#        its size (2), empty (2), inline paths off (3), the pop (3), the
#        ALLOC_PCS counter and sampled countdown (2: add, js, as above),
#        the free mark's clear (1), ret (1); the
#        1-64 KiB index (bsr and two shifts) is laid out after the ret
# free (59): canonical address and ownership bit (9), the page's
#        descriptor and its flags word, PG_slab_page (6), the slot from the
#        flags' high half (3), compound_head and slab_cache (2), main, its
#        size and room (4), inline paths on (3), the offset inside the
#        slab's objects (7), object start (5), one node (2), the free
#        mark's test and store (6), the push (5), FREE_PCS (1), ret
if [ -n "$mlib" ]; then
	objdump -d --no-show-raw-insn "$mlib" > "$dis"
	check malloc 25 __libc_malloc
	check free 59 __libc_free
fi
exit $status
