#!/bin/bash
# misuse_tag_replaced (issue 25, item 5, a variant the first fix
# missed): a plugin rebuilt and reloaded from the same path. The caller
# tags' module identity was the load bias and the loader's name, so the
# rebuilt file, loaded again at the same place under the same name, was
# the same module: the first build's 12 MiB, still live, were named
# after the new build's function at their offset, one that never
# allocates (tag_plug_never_allocates). The identity now includes the
# mapped file (device, inode, mtime), so they read
# "<unloaded: DIR/plug.so>". A module opened twice and closed once stays
# named by its function. Exact and sampled profiling.
#   tag_replaced.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 bindir=$3
[ -n "$lib" ] || { echo "no preload library (sanitizer build): skipped"; exit 77; }
range=$(head -1 /proc/$$/maps | cut -d" " -f1)
[ -n "$(readlink "/proc/$$/map_files/$range" 2>/dev/null)" ] ||
	{ echo "/proc/self/map_files is not readable here: skipped"; exit 77; }
dir=$(realpath "$bindir") || exit 1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- report:"; grep -A20 '^allocinfo' "$T/r" 2>/dev/null; exit 1; }
mib=$((1 << 20))
rows() { awk -v m="$2+0x" 'index($3, m) == 1 { b += $1; c += $2;
	if (!f) { f = $0; sub(/^.* func:/, "", f) } } END { if (c) print b, c, f }' "$1"; }

for mode in 1 sample:4096; do
	cp "$dir/misuse_mod_tag_plug_v1.so" "$T/plug.so" &&
	cp "$dir/misuse_mod_tag_plug_v1.so" "$T/same.so" || exit 1
	env USLUB_PROFILING=$mode USLUB_PROFILING_SEED=3 USLUB_REPORT="$T/r" LD_PRELOAD="$lib" \
		"$dir/misuse_prog_tag_replaced" "$T" "$dir/misuse_mod_tag_plug_v2.so" \
		>"$T/out" 2>"$T/err" || { cat "$T/err"; fail "$mode: the program failed"; }
	grep -q '^allocinfo - profiling' "$T/r" || fail "$mode: no allocinfo in the report"
	echo "$mode: $(cat "$T/out")"
	r=$(rows "$T/r" "$T/plug.so")
	[ "$r" = "$((12 * mib)) 12 <unloaded: $T/plug.so>" ] ||
		fail "$mode: the replaced plugin's first build: '$r', want '$((12 * mib)) 12 <unloaded: $T/plug.so>'"
	! grep -q tag_plug_never_allocates "$T/r" ||
		fail "$mode: a row names the rebuilt plugin's function that never allocates"
	r=$(rows "$T/r" "$T/same.so")
	case "$r" in "$((3 * mib)) 3 tag_plug_alloc+0x"*) ;;
	*) fail "$mode: the module opened twice, closed once: '$r'" ;; esac
	echo "$mode: ok: $(grep -F "$T/plug.so+" "$T/r" | head -1)"
	rm -f "$T/r" "$T/plug.so" "$T/same.so"
done
echo "tag_replaced: ok"
