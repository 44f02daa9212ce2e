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
# The lookup path of a function whose first conditional branch is the
# free record's miss: the instructions up to that branch, then those from
# its target to the next ret (the lookup, laid out after the record's ret,
# falls through to its own ret on a hit).
general() { branches "$1" 1; }
# branches FUNC D: the instructions from FUNC's entry following the first
# conditional branch of each of D stretches (each to its target, laid out
# later), then to the next ret
branches() {
	awk -v f="<$1>:" -v depth="$2" '$2 == f { on = 1; next }
		on && /^$/ { on = 0 }
		on && /\t/ {
			split($1, a, ":"); addr = a[1]; sub(/^ +/, "", addr); sub(/^0+/, "", addr)
			n++; A[n] = addr; T[n] = $0; I[addr] = n
		}
		END {
			pc = 1; lvl = 0; k = 0
			while (pc >= 1 && pc <= n) {
				k++
				if (lvl < depth && T[pc] ~ /\tj(ae|b|a|be|e|ne|l|g|le|ge|s|ns) /) {
					nw = split(T[pc], w, " "); tgt = w[nw - 1]
					sub(/^0+/, "", tgt)
					if (!(tgt in I)) exit
					pc = I[tgt]; lvl++; continue
				}
				if (lvl == depth && T[pc] ~ /\tret/) { print k; exit }
				pc++
			}
		}' "$dis"
}
status=0
# measure(COUNTER, FUNC, BUDGET, [ALIAS], LABEL, PATH): FUNC's count by
# COUNTER (hot or general) against BUDGET; an alias at the same address
# (uslub_cache_alloc = _noprof, malloc = __libc_malloc) may be the name
# objdump prints
measure() {
	local n; n=$($1 "$2")
	if [ -z "$n" ] && [ -n "$4" ]; then n=$($1 "$4"); fi
	if [ -z "$n" ]; then echo "FAIL $2$5: not found or no ret"; status=1; return; fi
	if [ "$n" -gt "$3" ]; then
		echo "FAIL $2$5: $n instructions on the $6 path, budget $3"; status=1
	else
		echo "ok   $2$5: $n instructions on the $6 path (budget $3)"
	fi
}
check() { measure hot "$1" "$2" "${3:-}" "" hot; }
check_general() { measure general "$1" "$2" "${3:-}" " (lookup)" lookup; }
# Sheaf mode (Linux 7.0, every cache by default; objdump of the gcc -O2
# build, counted to the first ret, which includes the miss branches laid
# out before it):
# alloc (18): the NULL cache test (2), gfp bits (2), the fast slot (GOT
#        load of the TLS offset, the cache's fast_offset, the %fs-relative
#        add of the thread's cpu_base: 3; a cache whose inline paths are
#        off has the dead slot's, whose main is empty: no test of its own),
#        main and its size (2), "empty" (2), the pop (3: the size stored
#        first, then the object loaded), the ALLOC_PCS counter, which is
#        also sampled profiling's countdown (2: one add to memory and a
#        `js` on its sign to the miss path, cache/sample.c), the free
#        mark's clear (1), ret (1)
# free (30): the free record's hit (cache.h free_to_pcs_record(): the
#        slab this slot last freed into, struct free_record): the NULL
#        cache test (2), the fast slot (3), the record's range (4), object
#        start (Lemire's divisibility test, slab_offset_is_start(): 3), the
#        main sheaf's room (4), the record's epoch against the cache's (3),
#        the free mark's test and store (4), the push (4), FREE_PCS (1),
#        ret; two register moves. A miss tail-calls cache_free_lookup.
# cache_free_lookup (59): the fast slot's room (the dead slot is full:
#        inline paths off), the descriptor lookup (ownership byte, the
#        page's PG_slab_page, and from the same descriptor line the cache,
#        compared to this one, and the slab word: objects bytes and
#        generation, struct page's tail copies), the offset, object start,
#        one node, the mark, the push (which loads the entry it writes
#        over), and the record's note (free_record_note(): a hot push, the
#        object freed right after it was taken from there, goes out of
#        line, where a slab's second one in a row makes it the record)
check uslub_cache_alloc_noprof 18
check uslub_cache_free 30
check cache_free_lookup 59
# The malloc front end (libuslub-malloc.so; objdump may name the aliases
# __libc_malloc and __libc_free, at the same addresses):
# malloc (22): size <= 1 KiB (2), the table entry (3: (n + 7) >> 3, lea,
#        load), NULL (2: caches not made yet; the sentinel cpu area is
#        all zeros then, so no stand-in cache could reach an empty sheaf),
#        the fast slot (3), main and its size (2), empty (2), the pop (3),
#        the ALLOC_PCS counter and sampled countdown (2: add, js, as
#        above), the free mark's clear (1), ret (1); the 1-64 KiB index
#        (bsr and two shifts) is laid out after the ret
# free (28): the thread's free record (_uslub_tls.last_slot, the slot of
#        the kmalloc/malloc cache it last recorded: 2, a load that
#        does not wait for the pointer), the record's range (4), its cache
#        (1), object start (3), room (4), epoch (3), the mark (4), the push
#        (4), FREE_PCS (1), ret; the rest is inline, laid out after that
#        ret:
# free's lookup after it (60): the record's test up to its miss branch
#        (7), then the ownership byte (its index range is the
#        canonical-address test), the page's descriptor and PG_slab_page,
#        from its line the cache and the slab word, the cache's fast slot
#        (the dead one, full, while its inline paths are off), room,
#        offset, object start, one node, the mark, the push (with the
#        entry it writes over), the hot push's note; a miss tail-calls
#        _uslub_free_slab_miss with the caller's address, read from the
#        stack only there
if [ -n "$mlib" ]; then
	objdump -d --no-show-raw-insn "$mlib" > "$dis"
	check malloc 22 __libc_malloc
	check free 28 __libc_free
	check_general free 60 __libc_free
fi
exit $status
