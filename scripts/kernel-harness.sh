#!/usr/bin/env bash
# Build and run the kernel's userspace test harness on uslub: every folder
# of tools/testing that builds with the harness's shared.mk (radix-tree:
# main idr-test multiorder xarray maple; vma: vma; on 7.x trees also
# rbtree: rbtree_test interval_tree_test), linked with libuslub-ktest
# instead of the harness's own allocation shim (tools/testing/shared/
# linux.c and tools/lib/slab.c). README, "Running the kernel's test
# harness".
#
# usage: scripts/kernel-harness.sh [options] [KERNEL_SRC ...]
#   KERNEL_SRC      kernel source trees, each run in turn (default: those
#                   of $USLUB_KERNEL_SRC (':'-separated), build/linux-source-6.12
#                   and build/linux-source-7.2 that exist; with --download,
#                   the missing build/ ones are fetched first)
#   -b DIR          uslub's CMake build directory (default: build)
#   -t "T ..."      only these targets (default: every target of every
#                   harness folder, read from the tree's Makefiles)
#   --stock         also build and run the same targets on the kernel's own
#                   shim, side by side (pass/fail, run time, ratio)
#   --download      fetch Debian's linux-source-6.12 (this machine's apt
#                   sources) and linux-source-7.2 (Debian unstable, through
#                   a private sources list and lists folder under DIR:
#                   the machine's apt setup is not touched) into DIR
#   -j N            make jobs (default: nproc)
#
# The kernel tree is not modified: the needed folders are copied (hard
# links where possible) under DIR/kernel-harness/<version>/, and the
# harness is built there with make variables only:
#   CFLAGS="-I<uslub>/include/uslub/ktest -I<uslub>/include"   (environment,
#                   so that shared.mk's CFLAGS += comes after: our
#                   <linux/slab.h> is found first, and includes the tree's)
#   LDLIBS="-L<build> -Wl,-rpath,<build> -luslub-ktest -luslub-rcu -luslub"
#                   (environment; -luslub-rcu where it was built)
#   make SHARED_OFILES="<the tree's SHARED_OFILES without linux.o, slab.o>"
# Each uslub run must exit 0, print no leak line (nr_allocated = N > 0),
# and libuslub-ktest's exit line must say its caches validated clean with
# no uslub error reported.
# Exit status: 0 if every target passed on uslub, 1 if one failed, 77
# (skip) if no kernel source is available.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
build=build
only=""
stock=0
download=0
jobs=$(nproc)
srcs=()
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-t) only=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	--stock) stock=1; shift ;;
	--download) download=1; shift ;;
	-h|--help) sed -n '2,40p' "$0"; exit 0 ;;
	-*) echo "kernel-harness: unknown option $1" >&2; exit 2 ;;
	*) srcs+=("$1"); shift ;;
	esac
done
case $build in /*) ;; *) build=$here/$build ;; esac

# ---- the kernel sources --------------------------------------------------
is_ksrc() {
	[ -f "$1/tools/testing/shared/shared.mk" ] && [ -f "$1/lib/maple_tree.c" ] &&
		[ -f "$1/Makefile" ]
}

# fetch linux-source-$1 into $build/linux-source-$1; $2: "sid" for Debian
# unstable through a private apt configuration, else the machine's apt
fetch_source() {
	local v=$1 suite=$2 dir=$build/ksrc-deb apt=()
	mkdir -p "$dir" || return 1
	if [ "$suite" = sid ]; then
		local conf=$dir/apt-sid
		mkdir -p "$conf/lists/partial" "$conf/cache/archives/partial"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		     "http://deb.debian.org/debian sid main" >"$conf/sources.list"
		apt=(-o "Dir::Etc::SourceList=$conf/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
		     -o "Dir::State::Lists=$conf/lists" -o "Dir::Cache=$conf/cache")
		echo "kernel-harness: apt-get update of Debian unstable's lists (private, under $conf)"
		apt-get "${apt[@]}" -q update >"$conf/update.log" 2>&1 ||
			{ tail -5 "$conf/update.log" >&2; return 1; }
	fi
	echo "kernel-harness: fetching linux-source-$v (apt-get download, about 160 MB)"
	(cd "$dir" && apt-get "${apt[@]}" download "linux-source-$v") || return 1
	local deb
	deb=$(ls "$dir"/linux-source-"$v"_*.deb 2>/dev/null | tail -1)
	[ -n "$deb" ] || return 1
	rm -rf "$dir/x" && dpkg-deb -x "$deb" "$dir/x" || return 1
	local tarball
	tarball=$(ls "$dir"/x/usr/src/linux-source-"$v".tar.* | head -1)
	tar -xf "$tarball" -C "$build" "linux-source-$v/Makefile" "linux-source-$v/tools" \
		"linux-source-$v/include" "linux-source-$v/lib" "linux-source-$v/mm" \
		"linux-source-$v/arch/x86/include" "linux-source-$v/scripts" || return 1
	rm -rf "$dir/x"
	is_ksrc "$build/linux-source-$v"
}

if [ ${#srcs[@]} -eq 0 ]; then
	IFS=: read -r -a env_srcs <<<"${USLUB_KERNEL_SRC:-}"
	for c in "${env_srcs[@]}"; do
		[ -n "$c" ] && is_ksrc "$c" && srcs+=("$c")
	done
	for v in 6.12 7.2; do
		c=$build/linux-source-$v
		if ! is_ksrc "$c" && [ $download = 1 ]; then
			suite=""
			[ "$v" = 7.2 ] && suite=sid
			fetch_source "$v" "$suite" || echo "kernel-harness: could not fetch linux-source-$v" >&2
		fi
		is_ksrc "$c" && srcs+=("$c")
	done
fi
if [ ${#srcs[@]} -eq 0 ]; then
	echo "kernel-harness: SKIP: no kernel source (give a path, set USLUB_KERNEL_SRC," \
	     "or pass --download to fetch linux-source-6.12 and -7.2 into $build)"
	exit 77
fi
for s in "${srcs[@]}"; do
	if ! is_ksrc "$s"; then
		echo "kernel-harness: $s is not a kernel source tree with tools/testing/shared" >&2
		exit 2
	fi
done
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

# ---- one tree ------------------------------------------------------------
tree_version() {  # the tree's top Makefile: VERSION.PATCHLEVEL.SUBLEVEL
	awk -F' *= *' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
		$1 == "SUBLEVEL" { s = $2 } END { printf "%s.%s.%s", v, p, s }' "$1/Makefile"
}

copy_tree() {     # $1: source, $2: destination
	rm -rf "$2"
	mkdir -p "$2"
	for d in Makefile tools include lib mm arch/x86/include scripts; do
		[ -e "$1/$d" ] || continue
		mkdir -p "$2/$(dirname "$d")"
		cp -al "$1/$d" "$2/$d" 2>/dev/null || cp -a "$1/$d" "$2/$d" || return 1
	done
}

# Debian's 6.12 source (6.12.x stable) calls vma_close() from mm/vma.c,
# but its tools/testing/vma lacks the empty stub upstream added with it,
# so `vma` does not link, on the stock shim either. Add the stub to the
# copy (both builds), and say so.
fix_vma_close() {  # $1: tree
	local h=$1/tools/testing/vma/vma_internal.h
	[ -f "$h" ] || return 0
	if grep -q 'vma_close(' "$1/mm/vma.c" && ! grep -rq 'vma_close' "$1/tools/testing/vma"; then
		# sed -i writes a new file: a hard-linked original stays as it was
		sed -i '$ s|^#endif|static inline void vma_close(struct vm_area_struct *vma)\n{\n}\n\n#endif|' "$h" &&
			grep -q 'vma_close' "$h" &&
			echo "kernel-harness: note: added the missing empty vma_close() stub to" \
			     "tools/testing/vma/vma_internal.h (a bug of this kernel tree, not of the allocator)"
	fi
}

# Debian's 7.2 tree converted lib/rbtree_test.c and lib/interval_tree_test.c
# to the 7.x typed allocators (kmalloc_objs) and <linux/printk.h>'s
# pr_warn, but not tools/testing: `rbtree` does not compile, on the stock
# shim either. Give the copy a <linux/printk.h> (both builds) and the
# stock shim's header kmalloc_objs (uslub's harness header has the typed
# allocators), and say so.
fix_rbtree() {    # $1: tree, $2: kind
	local t=$1/tools/testing
	[ -f "$t/rbtree/Makefile" ] || return 0
	if grep -q 'linux/printk.h' "$1/lib/interval_tree_test.c" 2>/dev/null &&
	   [ ! -e "$1/tools/include/linux/printk.h" ] && [ ! -e "$t/shared/linux/printk.h" ]; then
		printf '%s\n' '/* added by uslub scripts/kernel-harness.sh: the tree lacks it */' \
			'#include <linux/kernel.h>' '#ifndef pr_warn' '#define pr_warn printk' \
			'#endif' >"$t/shared/linux/printk.h"
		echo "kernel-harness: note: added tools/testing/shared/linux/printk.h (pr_warn)," \
		     "which lib/interval_tree_test.c includes and this tree lacks"
	fi
	local h=$1/tools/include/linux/slab.h
	if [ "$2" = stock ] && grep -q 'kmalloc_objs' "$1/lib/rbtree_test.c" 2>/dev/null &&
	   ! grep -q 'kmalloc_objs' "$h"; then
		# sed -i writes a new file: a hard-linked original stays as it was
		sed -i '$ s|^#endif|#define kmalloc_objs(T, n, ...) ((typeof(T) *)kmalloc_array((n), sizeof(T), GFP_KERNEL))\n#endif|' "$h" &&
			echo "kernel-harness: note: added kmalloc_objs() to the stock shim's" \
			     "tools/include/linux/slab.h, which lib/rbtree_test.c calls and it lacks"
	fi
}

# The harness folders: those whose Makefile includes the shared shim.
harness_dirs() {  # $1: tree
	local m
	for m in "$1"/tools/testing/*/Makefile; do
		grep -q '^include \.\./shared/shared\.mk' "$m" && basename "$(dirname "$m")"
	done
}

# A make variable of a harness folder, as make itself evaluates it.
make_var() {      # $1: folder, $2: variable
	make --no-print-directory -s -C "$1" -f Makefile -f - uslub-print-var <<EOF 2>/dev/null
uslub-print-var:
	@echo \$($2)
EOF
}

uslub_cflags="-I$here/include/uslub/ktest -I$here/include"
uslub_ldlibs="-L$build -Wl,-rpath,$build -luslub-ktest -luslub"
# SLAB_TYPESAFE_BY_RCU caches (7.x's vm_area_struct) need a grace-period
# provider: libuslub-rcu, on the liburcu the harness links anyway
[ -e "$build/libuslub-rcu.so" ] &&
	uslub_ldlibs="-L$build -Wl,-rpath,$build -luslub-ktest -luslub-rcu -luslub"

build_one() {     # $1: tree copy, $2: uslub|stock, $3: folders
	local dir=$1 kind=$2 log=$1/build.log d ok=0
	: >"$log"
	for d in $3; do
		# shared.mk's generated headers first: some folders' objects (7.2's
		# vma main.o) do not depend on them, a race under make -j
		make -C "$dir/tools/testing/$d" generated/autoconf.h generated/map-shift.h \
			generated/bit-length.h >>"$log" 2>&1
		if [ "$kind" = uslub ]; then
			local shared
			shared=$(make_var "$dir/tools/testing/$d" SHARED_OFILES)
			shared=$(echo " $shared " | sed -e 's/ linux\.o / /; s/ slab\.o / /')
			CFLAGS="$uslub_cflags" LDLIBS="$uslub_ldlibs" \
				make -C "$dir/tools/testing/$d" -j "$jobs" SHARED_OFILES="$shared" \
				>>"$log" 2>&1 || ok=1
		else
			make -C "$dir/tools/testing/$d" -j "$jobs" >>"$log" 2>&1 || ok=1
		fi
	done
	return $ok
}

declare -A result time_s cpu_s
run_one() {       # $1: tree copy, $2: kind, $3: folder, $4: target, $5: key
	local dir=$1 kind=$2 sub=$3 t=$4 key=$5
	local exe=$dir/tools/testing/$sub/$t log=$dir/$t.log
	if [ ! -x "$exe" ]; then
		result[$key]="FAIL (not built)"; time_s[$key]="-"; cpu_s[$key]="-"; return 1
	fi
	local rc real user sys
	# wall and CPU (user + system) seconds, by bash's time keyword
	{ TIMEFORMAT='%R %U %S'; time (cd "$dir/tools/testing/$sub" &&
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "./$t" >"$log" 2>&1); } 2>"$log.time"
	rc=$?
	# the last line: bash's job report of a crash ("Aborted") comes first
	read -r real user sys < <(tail -1 "$log.time")
	time_s[$key]=$(awk -v r="$real" 'BEGIN { printf "%.1f", r }')
	cpu_s[$key]=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
	local leak bad=""
	leak=$(grep -E '^nr_allocated = [1-9]' "$log" | head -1)
	if [ "$kind" = uslub ]; then
		# libuslub-ktest's exit line: validated clean, no uslub error
		bad=$(grep -oE 'uslub-ktest: at exit:.*' "$log" |
			grep -vE ' 0 inconsistencies; 0 uslub errors' | head -1)
		[ -z "$bad" ] && bad=$(grep -E '^uslub: ' "$log" | head -1)
	fi
	if [ $rc -eq 0 ] && [ -z "$leak" ] && [ -z "$bad" ]; then
		result[$key]=PASS
	elif [ $rc -ne 0 ]; then
		result[$key]="FAIL (exit $rc; $log)"
	elif [ -n "$leak" ]; then
		result[$key]="FAIL ($leak)"
	else
		result[$key]="FAIL ($bad)"
	fi
	[ "${result[$key]}" = PASS ]
}

kinds=uslub
[ $stock = 1 ] && kinds="uslub stock"
status=0
tables=""
for src in "${srcs[@]}"; do
	src=$(cd "$src" && pwd)
	ver=$(tree_version "$src")
	dirs=$(harness_dirs "$src" | tr '\n' ' ')
	echo "kernel-harness: kernel $ver ($src): harness folders $dirs"
	declare -A folder_of=()
	targets=()
	for kind in $kinds; do
		dir=$build/kernel-harness/$ver/$kind
		echo "kernel-harness: [$ver $kind] copying the tree to $dir"
		copy_tree "$src" "$dir" || { echo "kernel-harness: copy failed" >&2; exit 2; }
		fix_vma_close "$dir"
		fix_rbtree "$dir" "$kind"
		if [ ${#targets[@]} -eq 0 ]; then
			for d in $dirs; do
				for t in $(make_var "$dir/tools/testing/$d" TARGETS); do
					if [ -z "$only" ] || [[ " $only " == *" $t "* ]]; then
						targets+=("$t")
						folder_of[$t]=$d
					fi
				done
			done
		fi
		echo "kernel-harness: [$ver $kind] building $dirs(log: $dir/build.log)"
		if ! build_one "$dir" "$kind" "$dirs"; then
			echo "kernel-harness: [$ver $kind] a build failed; the end of $dir/build.log:" >&2
			tail -20 "$dir/build.log" >&2
		fi
		for t in "${targets[@]}"; do
			key="$ver,$kind,$t"
			if run_one "$dir" "$kind" "${folder_of[$t]}" "$t" "$key"; then :; else
				[ "$kind" = uslub ] && status=1
			fi
			echo "kernel-harness: [$ver $kind] $t: ${result[$key]} (${time_s[$key]} s," \
			     "CPU ${cpu_s[$key]} s)"
			[ "$kind" = uslub ] && [ -f "$dir/$t.log" ] &&
				grep -oE 'uslub-ktest: .*' "$dir/$t.log" | sed 's/^/    /'
		done
	done
	ratio() {  # a / b, or - where either is missing or 0
		awk -v a="$1" -v b="$2" \
			'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
	}
	tables+=$'\n'"kernel $ver (times in seconds: wall, CPU = user + system)"$'\n'
	tables+=$(printf '%-20s %-28s %7s %7s' target "uslub (libuslub-ktest)" wall CPU)
	[ $stock = 1 ] && tables+=$(printf ' | %-28s %7s %7s | %5s %5s' "stock shim (linux.c)" \
		wall CPU "wall×" "CPU×")
	tables+=$'\n'
	for t in "${targets[@]}"; do
		u="$ver,uslub,$t" k="$ver,stock,$t"
		tables+=$(printf '%-20s %-28s %7s %7s' "$t" "${result[$u]:-not run}" \
			"${time_s[$u]:--}" "${cpu_s[$u]:--}")
		if [ $stock = 1 ]; then
			tables+=$(printf ' | %-28s %7s %7s | %5s %5s' "${result[$k]:-not run}" \
				"${time_s[$k]:--}" "${cpu_s[$k]:--}" \
				"$(ratio "${time_s[$u]:--}" "${time_s[$k]:--}")" \
				"$(ratio "${cpu_s[$u]:--}" "${cpu_s[$k]:--}")")
		fi
		tables+=$'\n'
	done
	# the whole harness: the sums of the targets both kinds ran
	sum() {    # $1: kind, $2: array name
		local t total=0 v
		for t in "${targets[@]}"; do
			v=$(eval echo "\${$2[$ver,$1,$t]:--}")
			[ "$v" = - ] && continue
			total=$(awk -v a="$total" -v b="$v" 'BEGIN { printf "%.1f", a + b }')
		done
		echo "$total"
	}
	tables+=$(printf '%-20s %-28s %7s %7s' "all targets" "" "$(sum uslub time_s)" \
		"$(sum uslub cpu_s)")
	if [ $stock = 1 ]; then
		tables+=$(printf ' | %-28s %7s %7s | %5s %5s' "" "$(sum stock time_s)" \
			"$(sum stock cpu_s)" "$(ratio "$(sum uslub time_s)" "$(sum stock time_s)")" \
			"$(ratio "$(sum uslub cpu_s)" "$(sum stock cpu_s)")")
	fi
	tables+=$'\n'
	unset folder_of
done
echo "$tables"
exit $status
