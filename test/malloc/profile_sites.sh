#!/bin/bash
# malloc_profile_sites: allocation profiling under LD_PRELOAD names the
# program's own call sites (src/ext/caller_tag.c), not malloc's.
#   - USLUB_PROFILING=1 (exact), the report at exit (USLUB_REPORT=FILE):
#     small_site's row has exactly 1000 objects and 1000 x its class's
#     bytes, big_site's 10 and 10 x 64 KiB, each by function name
#     (symbol+offset: dladdr, the program is built with -rdynamic) and by
#     module+offset (the program's path); no row names malloc.c;
#     run_site's kmalloc page runs (3 x 1 MiB) and map_site's mappings
#     (5 MiB and, after a realloc in place, 3 MiB) count their lengths
#     exactly, freed_site's freed runs nothing;
#   - USLUB_PROFILING=sample:4096 (fixed seed): both rows, with estimates
#     within [1/2, 2] of the exact bytes; page runs and mappings exactly
#     (every one is recorded);
#   - `uslub resolve FILE` (and standard input) of that report: the rows
#     name the file and line (with addr2line); a missing FILE exits 1;
#     as root, a copy of the program owned by another user, or writable
#     by others, is left unresolved, with a note (addr2line parses only
#     root's files for root);
#   - `uslub run --report --profile`: with addr2line (binutils) installed,
#     the two rows name profile_sites.c and the line of each malloc call
#     (the lines marked "SITE" in the source), with the function, one row
#     per line with the exact bytes (an unrolled loop's calls merged);
#     without it, the tool says addr2line is missing;
#   - `uslub allocinfo PID --json` of the program held running (published
#     snapshots, USLUB_PUBLISH_MS): small_site's site has "module" (the
#     program) and "offset", and with addr2line "source_file",
#     "source_line" (the marked line) and "source_func"; the table form
#     names the file and line too.
#
#   profile_sites.sh PROG LIB TOOL SRC
set -u
prog=$1 lib=$2 tool=$3 src=$4
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- report:"; cat "$T/r" 2>/dev/null | head -40; exit 1; }

# the allocinfo rows whose func is NAME+0x.. (in-process names), added
# up: "BYTES CALLS SITE" (SITE: the first row's; a compiler may unroll a
# loop into several calls, each its own return address)
row() { awk -v f="func:$2+0x" 'index($4, f) == 1 { b += $1; c += $2; if (!s) s = $3 }
	END { if (s) print b, c, s }' "$1"; }

env USLUB_PROFILING=1 USLUB_REPORT="$T/r" LD_PRELOAD="$lib" "$prog" >"$T/out" ||
	fail "the program failed under LD_PRELOAD"
small=$(sed -n 's/^small //p' "$T/out")
big=$(sed -n 's/^big //p' "$T/out")
[ -n "$small" ] && [ -n "$big" ] || fail "no usable sizes printed (not on uslub?)"
grep -q '^allocinfo - profiling on' "$T/r" || fail "exact: no allocinfo in the report"
r=$(row "$T/r" small_site); set -- $r
[ -n "$r" ] || fail "exact: no row for small_site"
[ "$2" = 1000 ] && [ "$1" = $((1000 * small)) ] ||
	fail "exact: small_site: $1 bytes in $2 objects, want $((1000 * small)) in 1000"
case "$3" in "$prog"+0x*) ;; *) fail "exact: small_site's site is '$3', not $prog+0xOFF";; esac
r=$(row "$T/r" big_site); set -- $r
[ -n "$r" ] || fail "exact: no row for big_site"
[ "$2" = 10 ] && [ "$1" = $((10 * big)) ] ||
	fail "exact: big_site: $1 bytes in $2 objects, want $((10 * big)) in 10"
! grep -q 'malloc/malloc.c' "$T/r" || fail "exact: a row still names malloc.c"
run=$(sed -n 's/^run //p' "$T/out")
map=$(sed -n 's/^map //p' "$T/out")
# page runs and mappings: their lengths, exactly, in both modes
large_rows() {     # MODE
	local mode=$1 r
	r=$(row "$T/r" run_site); set -- $r
	[ "$1 $2" = "$run 3" ] || fail "$mode: run_site: '$r', want $run bytes in 3 blocks"
	r=$(row "$T/r" map_site); set -- $r
	[ "$1 $2" = "$map 2" ] || fail "$mode: map_site: '$r', want $map bytes in 2 blocks"
	r=$(row "$T/r" freed_site); set -- $r
	[ -z "$r" ] || [ "$1 $2" = "0 0" ] || fail "$mode: freed_site: '$r', want nothing"
}
large_rows exact

# a report written without the tool: `uslub resolve FILE` (and stdin)
if command -v addr2line >/dev/null; then
	cp "$T/r" "$T/raw"
	line=$(grep -n "SITE small" "$src" | cut -d: -f1)
	"$tool" resolve "$T/raw" >"$T/res" || fail "uslub resolve FILE failed"
	grep -Eq "^ +[0-9]+ +1000 [^ ]*$(basename "$src"):$line func:small_site \($prog\+0x" "$T/res" ||
		{ cp "$T/res" "$T/r"; fail "uslub resolve: no row $(basename "$src"):$line func:small_site"; }
	"$tool" resolve <"$T/raw" | cmp -s - "$T/res" || fail "uslub resolve < FILE differs from FILE"
	"$tool" resolve "$T/raw" "$T/none" >/dev/null 2>"$T/err"
	[ $? = 1 ] && grep -q "cannot read $T/none" "$T/err" || fail "uslub resolve: a missing FILE is not an error"
fi

# as root, addr2line reads only root's files: a program owned by another
# user (or writable by others) stays unresolved, and the tool says why
if command -v addr2line >/dev/null && [ "$(id -u)" = 0 ]; then
	for how in owner mode; do
		cp "$prog" "$T/other" && chmod 755 "$T/other"
		if [ $how = owner ]; then chown 65534 "$T/other"; else chmod o+w "$T/other"; fi
		env USLUB_PROFILING=1 USLUB_REPORT="$T/raw" LD_PRELOAD="$lib" "$T/other" >/dev/null ||
			fail "the program's copy failed"
		"$tool" resolve "$T/raw" >"$T/res" 2>"$T/err" || fail "uslub resolve ($how) failed"
		grep -Eq "^ +[0-9]+ +1000 $T/other\+0x[0-9a-f]+ func:small_site\+0x" "$T/res" ||
			{ cp "$T/res" "$T/r"; fail "uslub resolve as root resolved a module ($how) not root's"; }
		grep -q "not owned by root (or writable by others) left unresolved" "$T/err" ||
			fail "uslub resolve as root: no word on the module ($how) left unresolved"
		rm -f "$T/other"
	done
fi

env USLUB_PROFILING=sample:4096 USLUB_PROFILING_SEED=11 USLUB_REPORT="$T/r" LD_PRELOAD="$lib" \
	"$prog" >"$T/out" || fail "the program failed (sampled)"
grep -q '^allocinfo - profiling sampled every 4096 bytes' "$T/r" || fail "sampled: no allocinfo"
for s in "small_site $((1000 * small))" "big_site $((10 * big))"; do
	set -- $s
	name=$1 want=$2
	r=$(row "$T/r" "$name"); set -- $r
	[ -n "$r" ] || fail "sampled: no row for $name"
	[ "$1" -ge $((want / 2)) ] && [ "$1" -le $((want * 2)) ] ||
		fail "sampled: $name: $1 bytes, want $want within [1/2, 2]"
done
large_rows sampled

# the tool: file:line through addr2line
"$tool" run --report --profile -- "$prog" >"$T/out" 2>"$T/r" || fail "uslub run failed"
if command -v addr2line >/dev/null; then
	base=$(basename "$src")
	for name in small big; do
		line=$(grep -n "SITE $name" "$src" | cut -d: -f1)
		# one row per source line: several calls compiled from it are
		# merged by the tool ("+N more")
		grep -Eq "^ +[0-9]+ +[0-9]+ [^ ]*$base:$line func:${name}_site \\($prog\\+0x[0-9a-f]+(, \\+[0-9]+ more)?\\)$" "$T/r" ||
			fail "uslub run: no row $base:$line func:${name}_site (module+offset)"
		[ "$(grep -c "$base:$line func:${name}_site " "$T/r")" = 1 ] ||
			fail "uslub run: $base:$line is not one row"
	done
	want_small=$((1000 * small)) want_big=$((10 * big))
	for name in small big; do
		line=$(grep -n "SITE $name" "$src" | cut -d: -f1)
		eval want=\$want_$name
		calls=$([ $name = small ] && echo 1000 || echo 10)
		grep -Eq "^ +$want +$calls [^ ]*$base:$line func:${name}_site " "$T/r" ||
			fail "uslub run: $base:$line: not $want bytes in $calls objects"
	done
else
	grep -q 'addr2line (binutils) is not installed' "$T/r" ||
		fail "uslub run: addr2line is missing and the tool does not say so"
	row "$T/r" small_site | grep -q . || fail "uslub run: no row for small_site"
fi

# a live process: `uslub allocinfo PID`, JSON and table
env USLUB_PROFILING=1 USLUB_PUBLISH_MS=50 LD_PRELOAD="$lib" "$prog" hold "$T/go" >"$T/out" &
pid=$!
# small_site's sites added up, from the JSON in $T/j: "BYTES CALLS"
small_sum() { grep -o '{[^{}]*"func":"small_site+0x[^{}]*}' "$T/j" |
	sed 's/.*"bytes":\([0-9]*\),"calls":\([0-9]*\),.*/\1 \2/' |
	awk '{ b += $1; c += $2 } END { print b, c }'; }
# a snapshot taken after the program allocated everything (it prints the
# sizes then; a snapshot may also be taken halfway through small_site)
ok=
for i in $(seq 200); do
	if grep -q '^map ' "$T/out" && "$tool" allocinfo "$pid" --json >"$T/j" 2>/dev/null &&
	   [ "$(small_sum)" = "$((1000 * small)) 1000" ]; then
		ok=1
		break
	fi
	sleep 0.05
done
"$tool" allocinfo "$pid" >"$T/t" 2>&1
touch "$T/go"
wait "$pid"
cp "$T/j" "$T/r"
[ -n "$ok" ] ||
	fail "allocinfo --json: small_site's sites: $(small_sum) bytes and calls after 10 s, want $((1000 * small)) 1000"
site=$(grep -o '{[^{}]*"func":"small_site+0x[^{}]*}' "$T/j" | head -1)
echo "$site" | grep -q "\"module\":\"$prog\",\"offset\":[0-9]" ||
	fail "allocinfo --json: small_site's site has no module and offset: $site"
if command -v addr2line >/dev/null; then
	line=$(grep -n "SITE small" "$src" | cut -d: -f1)
	echo "$site" | grep -Eq "\"source_file\":\"[^\"]*$(basename "$src")\",\"source_line\":$line,\"source_func\":\"small_site\"" ||
		fail "allocinfo --json: small_site's site has no source_file/line/func: $site"
	cp "$T/t" "$T/r"
	grep -Eq "^ +[0-9]+ +1000 [^ ]*$(basename "$src"):$line func:small_site \(" "$T/t" ||
		fail "uslub allocinfo $pid: no row $(basename "$src"):$line func:small_site"
fi
echo PASS
