#!/usr/bin/env bash
# Build and run the kernel's userspace test harness on uslub
# (tools/testing/radix-tree: main idr-test multiorder xarray maple;
# tools/testing/vma: vma), linked with libuslub-ktest instead of the
# harness's own allocation shim (tools/testing/shared/linux.c and
# tools/lib/slab.c). README, "Running the kernel's test harness".
#
# usage: scripts/kernel-harness.sh [options] [KERNEL_SRC]
#   KERNEL_SRC      a kernel source tree (default: $USLUB_KERNEL_SRC, then
#                   build/linux-source-6.12; with --download, fetched there
#                   with `apt-get download linux-source-6.12`)
#   -b DIR          uslub's CMake build directory (default: build)
#   -t "T ..."      targets to run (default: main idr-test multiorder xarray
#                   maple vma)
#   --stock         also build and run the same targets on the stock shim,
#                   for comparison (pass/fail and run time)
#   --download      fetch the kernel source if none is found
#   -j N            make jobs (default: nproc)
#
# The kernel tree is not modified: the needed folders are copied (hard
# links where possible) under DIR/kernel-harness/, and the harness is
# built there with make variables only:
#   CFLAGS="-I<uslub>/include/uslub/ktest -I<uslub>/include"   (environment,
#                   so that shared.mk's CFLAGS += comes after: our
#                   <linux/slab.h> is found first)
#   LDLIBS="-L<build> -Wl,-rpath,<build> -luslub-ktest -luslub"  (environment)
#   make SHARED_OFILES="xarray-shared.o radix-tree.o idr.o find_bit.o
#                   bitmap.o hweight.o vsprintf.o"   (linux.o and slab.o out)
# Exit status: 0 if every target passed, 1 if one failed, 77 (skip) if no
# kernel source is available.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
build=build
targets="main idr-test multiorder xarray maple vma"
stock=0
download=0
jobs=$(nproc)
src=""
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-t) targets=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	--stock) stock=1; shift ;;
	--download) download=1; shift ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	-*) echo "kernel-harness: unknown option $1" >&2; exit 2 ;;
	*) src=$1; shift ;;
	esac
done
case $build in /*) ;; *) build=$here/$build ;; esac

# ---- the kernel source ------------------------------------------------
is_ksrc() {
	[ -f "$1/tools/testing/radix-tree/Makefile" ] && [ -f "$1/tools/testing/shared/shared.mk" ] &&
		[ -f "$1/lib/maple_tree.c" ]
}
if [ -z "$src" ]; then
	for c in "${USLUB_KERNEL_SRC:-}" "$build/linux-source-6.12"; do
		if [ -n "$c" ] && is_ksrc "$c"; then src=$c; break; fi
	done
fi
if [ -z "$src" ] && [ $download = 1 ]; then
	echo "kernel-harness: fetching linux-source-6.12 (apt-get download, about 150 MB)"
	mkdir -p "$build/ksrc-deb" &&
	(cd "$build/ksrc-deb" && apt-get download linux-source-6.12) &&
	deb=$(ls "$build"/ksrc-deb/linux-source-6.12_*.deb | head -1) &&
	rm -rf "$build/ksrc-deb/x" && dpkg-deb -x "$deb" "$build/ksrc-deb/x" &&
	tarball=$(ls "$build"/ksrc-deb/x/usr/src/linux-source-6.12.tar.* | head -1) &&
	tar -xf "$tarball" -C "$build" linux-source-6.12/tools linux-source-6.12/include \
		linux-source-6.12/lib linux-source-6.12/mm linux-source-6.12/arch/x86/include \
		linux-source-6.12/scripts &&
	src=$build/linux-source-6.12
	is_ksrc "${src:-/nonexistent}" || src=""
fi
if [ -z "$src" ] || ! is_ksrc "$src"; then
	echo "kernel-harness: SKIP: no kernel source (give a path, set USLUB_KERNEL_SRC," \
	     "or pass --download to fetch linux-source-6.12 into $build)"
	exit 77
fi
src=$(cd "$src" && pwd)
for lib in libuslub-ktest.so libuslub.so; do
	if [ ! -e "$build/$lib" ]; then
		echo "kernel-harness: $build/$lib is missing: build uslub first (make build)" >&2
		exit 2
	fi
done
if ! echo '#include <urcu.h>' | ${CC:-cc} -E -x c - >/dev/null 2>&1; then
	echo "kernel-harness: SKIP: liburcu headers missing (liburcu-dev)"
	exit 77
fi

# ---- a copy to build in ------------------------------------------------
copy_tree() {     # $1: destination
	rm -rf "$1"
	mkdir -p "$1"
	for d in tools include lib mm arch/x86/include scripts; do
		[ -e "$src/$d" ] || continue
		mkdir -p "$1/$(dirname "$d")"
		cp -al "$src/$d" "$1/$d" 2>/dev/null || cp -a "$src/$d" "$1/$d" || return 1
	done
}

# Debian's 6.12 source (6.12.x stable) calls vma_close() from mm/vma.c,
# but its tools/testing/vma/vma_internal.h lacks the empty stub upstream
# added with it, so `vma` does not link, on the stock shim either. Add the
# stub to the copy (both builds), and say so.
fix_vma_close() {  # $1: tree
	local h=$1/tools/testing/vma/vma_internal.h
	if grep -q 'vma_close(' "$1/mm/vma.c" && ! grep -q 'vma_close' "$h"; then
		# sed -i writes a new file: a hard-linked original stays as it was
		sed -i '$ s|^#endif|static inline void vma_close(struct vm_area_struct *vma)\n{\n}\n\n#endif|' "$h" &&
			grep -q 'vma_close' "$h" &&
			echo "kernel-harness: note: added the missing empty vma_close() stub to" \
			     "tools/testing/vma/vma_internal.h (a bug of this kernel tree, not of the allocator)"
	fi
}

# make variables that put libuslub-ktest in the shim's place
uslub_vars=(SHARED_OFILES="xarray-shared.o radix-tree.o idr.o find_bit.o bitmap.o hweight.o vsprintf.o")
uslub_cflags="-I$here/include/uslub/ktest -I$here/include"
uslub_ldlibs="-L$build -Wl,-rpath,$build -luslub-ktest -luslub"

build_one() {     # $1: tree, $2: uslub|stock
	local dir=$1 kind=$2 log=$1/build.log
	: >"$log"
	for t in radix-tree vma; do
		if [ "$kind" = uslub ]; then
			CFLAGS="$uslub_cflags" LDLIBS="$uslub_ldlibs" \
				make -C "$dir/tools/testing/$t" -j "$jobs" "${uslub_vars[@]}" \
				>>"$log" 2>&1 || return 1
		else
			make -C "$dir/tools/testing/$t" -j "$jobs" >>"$log" 2>&1 || return 1
		fi
	done
}

declare -A result time_s
run_one() {       # $1: tree, $2: kind, $3: target
	local dir=$1 kind=$2 t=$3 sub=radix-tree
	[ "$t" = vma ] && sub=vma
	local exe=$dir/tools/testing/$sub/$t log=$dir/$t.log
	if [ ! -x "$exe" ]; then
		result[$kind,$t]="FAIL (not built)"; time_s[$kind,$t]="-"; return 1
	fi
	local t0 t1 rc
	t0=$(date +%s.%N)
	(cd "$dir/tools/testing/$sub" && ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "./$t") \
		>"$log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	time_s[$kind,$t]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	local leak
	leak=$(grep -E '^nr_allocated = [1-9]' "$log" | head -1)
	if [ $rc -eq 0 ] && [ -z "$leak" ]; then
		result[$kind,$t]=PASS
	elif [ $rc -eq 0 ]; then
		result[$kind,$t]="FAIL ($leak)"
	else
		result[$kind,$t]="FAIL (exit $rc; $log)"
	fi
	[ "${result[$kind,$t]}" = PASS ]
}

kinds=uslub
[ $stock = 1 ] && kinds="uslub stock"
work=$build/kernel-harness
status=0
echo "kernel-harness: kernel source $src"
for kind in $kinds; do
	dir=$work/$kind
	echo "kernel-harness: [$kind] copying the tree to $dir"
	copy_tree "$dir" || { echo "kernel-harness: copy failed" >&2; exit 2; }
	fix_vma_close "$dir"
	echo "kernel-harness: [$kind] building radix-tree and vma (log: $dir/build.log)"
	if ! build_one "$dir" "$kind"; then
		echo "kernel-harness: [$kind] BUILD FAILED; the end of $dir/build.log:" >&2
		tail -30 "$dir/build.log" >&2
		[ "$kind" = uslub ] && status=1
		continue
	fi
	for t in $targets; do
		if run_one "$dir" "$kind" "$t"; then :; else [ "$kind" = uslub ] && status=1; fi
		echo "kernel-harness: [$kind] $t: ${result[$kind,$t]} (${time_s[$kind,$t]} s)"
	done
done

echo
printf '%-12s %-28s %8s' target "uslub (libuslub-ktest)" "time s"
[ $stock = 1 ] && printf ' | %-28s %8s' "stock shim (linux.c)" "time s"
echo
for t in $targets; do
	printf '%-12s %-28s %8s' "$t" "${result[uslub,$t]:-not run}" "${time_s[uslub,$t]:--}"
	[ $stock = 1 ] && printf ' | %-28s %8s' "${result[stock,$t]:-not run}" "${time_s[stock,$t]:--}"
	echo
done
exit $status
