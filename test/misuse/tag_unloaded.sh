#!/bin/bash
# misuse_tag_unloaded (issue 25, item 5): call-site names that outlive
# their module, and modules opened by a relative path
# (src/ext/caller_tag.c). prog_tag_unloaded.c opens two modules by
# relative path, leaves their directory, allocates 12 MiB from one (kept
# live) and 3 MiB from the other, unloads the first and loads a third in
# its place (when the loader reuses it). The report at exit, in exact and
# in sampled profiling:
#   - the unloaded module's 12 MiB (12 blocks) are one site named by its
#     real path, "/DIR/misuse_mod_tag_gone.so+0xOFF func:<unloaded:
#     /DIR/misuse_mod_tag_gone.so>": not the main program's, not the
#     newcomer's function (before: dladdr at report time named whatever
#     was mapped there, or the bare address);
#   - the kept module's 3 MiB by its real path and function (before: the
#     main executable's path, the loader having "./misuse_mod_tag_kept.so");
#   - no row names the newcomer (misuse_mod_tag_other.so, tag_other_spin);
#   - a second newcomer, the gone module's code under another name, loaded
#     in its place after a new call site was claimed, allocates 2 MiB from
#     the gone module's very address: one row of its own, named by its
#     path and function, the gone module's row still exactly 12 MiB
#     (the slot of an unloaded module's address is retired, not reused);
#   - `uslub resolve` (with addr2line) reads the right files: both rows
#     name their module's source line (the lines marked SITE).
#   tag_unloaded.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 tool=$2 bindir=$3
[ -n "$lib" ] || { echo "no preload library (sanitizer build): skipped"; exit 77; }
# the real path of a module opened by a relative path, once the program
# has left that directory, comes from /proc/self/map_files
range=$(head -1 /proc/$$/maps | cut -d" " -f1)
[ -n "$(readlink "/proc/$$/map_files/$range" 2>/dev/null)" ] ||
	{ echo "/proc/self/map_files is not readable here: skipped"; exit 77; }
src=$(cd "$(dirname "$0")" && pwd)
dir=$(realpath "$bindir") || exit 1
prog=$dir/misuse_prog_tag_unloaded
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- report:"; cat "$T/r" 2>/dev/null | head -40; exit 1; }

gone=$dir/misuse_mod_tag_gone.so kept=$dir/misuse_mod_tag_kept.so
again=$dir/misuse_mod_tag_again.so
mib=$((1 << 20))
# the rows whose site is MODULE+0x.., added up: "BYTES CALLS FUNC" (the
# first row's func, from " func:" to the end of the line)
rows() { awk -v m="$2+0x" 'index($3, m) == 1 { b += $1; c += $2;
	if (!f) { f = $0; sub(/^.* func:/, "", f) } } END { if (c) print b, c, f }' "$1"; }

for mode in 1 sample:4096; do
	env USLUB_PROFILING=$mode USLUB_PROFILING_SEED=3 USLUB_REPORT="$T/r" LD_PRELOAD="$lib" \
		"$prog" "$dir" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 77 ] && { cat "$T/err"; exit 77; }
	[ $rc = 0 ] || { cat "$T/err"; fail "$mode: the program failed ($rc)"; }
	grep -q '^allocinfo - profiling' "$T/r" || fail "$mode: no allocinfo in the report"
	echo "$mode: $(cat "$T/out")"
	r=$(rows "$T/r" "$gone")
	[ "$r" = "$((12 * mib)) 12 <unloaded: $gone>" ] ||
		fail "$mode: the unloaded module's sites: '$r', want '$((12 * mib)) 12 <unloaded: $gone>'"
	r=$(rows "$T/r" "$kept")
	case "$r" in "$((3 * mib)) 3 tag_kept_alloc+0x"*) ;;
	*) fail "$mode: the kept module's sites: '$r', want $((3 * mib)) bytes in 3 at tag_kept_alloc";;
	esac
	r=$(rows "$T/r" "$again")
	case "$r" in "$((2 * mib)) 2 tag_again_alloc+0x"*) ;;
	*) fail "$mode: the second newcomer's sites: '$r', want $((2 * mib)) bytes in 2 at tag_again_alloc";;
	esac
	! grep -q 'misuse_mod_tag_other\|tag_other_spin' "$T/r" ||
		fail "$mode: a row names the module loaded after the unload"
	grep -q "$((12 * mib)) .*$prog+0x" "$T/r" && fail "$mode: the main program holds 12 MiB"
done

if command -v addr2line >/dev/null; then
	"$tool" resolve "$T/r" >"$T/res" 2>"$T/err" || fail "uslub resolve failed: $(cat "$T/err")"
	for m in gone kept again; do
		line=$(grep -n "SITE $m" "$src/mod_tag_$m.c" | cut -d: -f1)
		grep -Eq "mod_tag_$m\.c:$line .*\($dir/misuse_mod_tag_$m\.so\+0x" "$T/res" ||
			{ cp "$T/res" "$T/r"; fail "uslub resolve: no row mod_tag_$m.c:$line"; }
	done
fi
echo PASS
