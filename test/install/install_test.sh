#!/usr/bin/env bash
# `make install` into a prefix of one's own, used the way the README's
# "Install" section says: `make install-only PREFIX=...` (what `make install
# PREFIX=...` runs after building), then a small program built against the
# prefix both ways, pkg-config (PKG_CONFIG_PATH, -Wl,-rpath or
# LD_LIBRARY_PATH) and CMake (CMAKE_PREFIX_PATH, find_package(uslub)), run;
# `<prefix>/bin/uslub run -- ...` preloading the prefix's malloc library;
# and DESTDIR staging (nothing written to PREFIX itself, the staged tree
# usable where it lies: uslub.pc and the CMake package are relocatable).
#
#   install_test.sh <source dir> <build dir> <C compiler>
set -u
SRC=$1 BUILD=$2 CC=$3

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok:   $*"; }

for t in make cmake pkg-config; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip: no $t (scripts/install-deps.sh installs it)"; exit 77; }
done
[ -f "$BUILD/CMakeCache.txt" ] || { echo "no build tree $BUILD"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/uslub-install-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
P=$WORK/prefix
unset PKG_CONFIG_PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH LD_PRELOAD USLUB_LIBRARY \
	USLUB_REPORT USLUB_PUBLISH_MS USLUB_DEBUG DESTDIR PREFIX

# ---- make install-only PREFIX=... ----------------------------------------
if make -s -C "$SRC" install-only BUILD="$BUILD" PREFIX="$P" >"$WORK/install.log" 2>&1; then
	pass "make install-only PREFIX=$P"
else
	fail "make install-only PREFIX=$P:"; sed 's/^/    /' "$WORK/install.log" | tail -20
	exit 1
fi
if grep -q "/usr/local" "$WORK/install.log"; then
	fail "PREFIX ignored: something went to /usr/local"; grep /usr/local "$WORK/install.log" | head -5
fi
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(find "$P" -name uslub.pc -path '*/pkgconfig/*' | head -1)")
if [ -f "$PKG_CONFIG_PATH/uslub.pc" ]; then pass "uslub.pc in $PKG_CONFIG_PATH"; else
	fail "no uslub.pc under $P"; exit 1; fi
LIBDIR=$(readlink -f "$(pkg-config --variable=libdir uslub)")
INCDIR=$(readlink -f "$(pkg-config --variable=includedir uslub)")
for f in "$LIBDIR/libuslub.so" "$LIBDIR/libuslub.a" "$LIBDIR/libuslub-malloc.so" \
	 "$INCDIR/uslub.h" "$INCDIR/uslub/slab.h" "$LIBDIR/cmake/uslub/uslubConfig.cmake" \
	 "$P/bin/uslub"; do
	if [ -e "$f" ]; then pass "installed ${f#"$P"/}"; else fail "missing $f"; fi
done
if [ "$(readlink -f "$LIBDIR")" = "$(readlink -f "$P")/${LIBDIR##*/}" ] ||
   [ "$(readlink -f "$INCDIR")" = "$(readlink -f "$P/include")" ]; then
	pass "pkg-config's paths are inside the prefix"
else
	fail "pkg-config says libdir=$LIBDIR includedir=$INCDIR, outside $P"
fi

# ---- the program -----------------------------------------------------------
cat >"$WORK/hello.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <uslub.h>

struct conn { int id; char name[52]; };

int main(void)
{
	uslub_cache_t *s = uslub_cache_create("conn", sizeof(struct conn), 0,
					      USLUB_HWCACHE_ALIGN, NULL);
	if (!s)
		return 1;
	struct conn *c = uslub_cache_alloc(s, USLUB_GFP_KERNEL | USLUB_GFP_ZERO);
	if (!c || c->id || !uslub_owns(c))
		return 2;
	strcpy(c->name, "installed");
	char *k = uslub_kmalloc(100, USLUB_GFP_KERNEL);
	if (!k || uslub_ksize(k) < 100)
		return 3;
	uslub_kfree(k);
	printf("uslub %s ok\n", c->name);
	uslub_cache_free(s, c);
	if (uslub_cache_validate(s) != 0 || uslub_cache_destroy(s) != 0)
		return 4;
	return 0;
}
C

# runs NAME CMD...: CMD prints "uslub installed ok" and exits 0
runs() {
	local name=$1
	shift
	local out
	out=$("$@" 2>&1)
	local rc=$?
	if [ $rc = 0 ] && [ "$out" = "uslub installed ok" ]; then pass "$name"; else
		fail "$name: exit $rc, output:"; printf '%s\n' "$out" | sed 's/^/    /' | head -10; fi
}
# resolves BINARY: the loader takes libuslub.so from the prefix (with the
# environment given before it, e.g. env LD_LIBRARY_PATH=...)
resolves() {
	local lib
	lib=$("$@" 2>/dev/null | awk '/libuslub\.so/ { print $3 }')
	if [ -n "$lib" ] && [ "$(readlink -f "$lib")" = "$(readlink -f "$LIBDIR/libuslub.so")" ]; then
		pass "${*: -1}: libuslub.so from the prefix"
	else
		fail "${*: -1}: libuslub.so resolves to '$lib', not $LIBDIR"
	fi
}

# pkg-config, with an rpath: runs as is
# shellcheck disable=SC2046
if "$CC" -o "$WORK/hello-pc" "$WORK/hello.c" $(pkg-config --cflags --libs uslub) \
	-Wl,-rpath,"$LIBDIR" 2>"$WORK/cc.err"; then
	pass "cc \$(pkg-config --cflags --libs uslub) -Wl,-rpath,\$(pkg-config --variable=libdir uslub)"
	runs "pkg-config build (rpath) runs" "$WORK/hello-pc"
	resolves ldd "$WORK/hello-pc"
else
	fail "pkg-config build:"; sed 's/^/    /' "$WORK/cc.err" | head -20
fi
# pkg-config, no rpath: LD_LIBRARY_PATH
# shellcheck disable=SC2046
if "$CC" -o "$WORK/hello-pc-norpath" "$WORK/hello.c" $(pkg-config --cflags --libs uslub) \
	2>"$WORK/cc.err"; then
	runs "pkg-config build (LD_LIBRARY_PATH) runs" env LD_LIBRARY_PATH="$LIBDIR" "$WORK/hello-pc-norpath"
	resolves env LD_LIBRARY_PATH="$LIBDIR" ldd "$WORK/hello-pc-norpath"
else
	fail "pkg-config build without rpath:"; sed 's/^/    /' "$WORK/cc.err" | head -20
fi
# static, through pkg-config's paths (its private libraries: libunwind
# when uslub was built with it)
if "$CC" -o "$WORK/hello-static" "$WORK/hello.c" $(pkg-config --cflags uslub) \
	"$LIBDIR/libuslub.a" -lpthread $(pkg-config --static --libs-only-l uslub | sed 's/-luslub//') \
	2>"$WORK/cc.err"; then
	runs "static build runs" "$WORK/hello-static"
else
	fail "static build:"; sed 's/^/    /' "$WORK/cc.err" | head -20
fi

# CMake: find_package(uslub) with CMAKE_PREFIX_PATH; uslub::uslub and
# uslub::uslub_static. CMake gives the build tree's binaries an rpath to
# the imported library's folder, so they run as they are.
mkdir -p "$WORK/cm"
cp "$WORK/hello.c" "$WORK/cm/"
cat >"$WORK/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(hello C)
find_package(uslub 0.1 REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE uslub::uslub)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE uslub::uslub_static)
CM
if (unset PKG_CONFIG_PATH; cmake -S "$WORK/cm" -B "$WORK/cm/build" -DCMAKE_C_COMPILER="$CC" \
	-DCMAKE_PREFIX_PATH="$P" && cmake --build "$WORK/cm/build") >"$WORK/cmake.log" 2>&1; then
	pass "cmake -DCMAKE_PREFIX_PATH=<prefix>: find_package(uslub), uslub::uslub, uslub::uslub_static"
	runs "CMake build (uslub::uslub) runs" "$WORK/cm/build/hello"
	resolves ldd "$WORK/cm/build/hello"
	runs "CMake build (uslub::uslub_static) runs" "$WORK/cm/build/hello_static"
else
	fail "CMake build:"; sed 's/^/    /' "$WORK/cmake.log" | tail -20
fi

# ---- <prefix>/bin/uslub run ------------------------------------------------
if "$P/bin/uslub" run -- true; then pass "$P/bin/uslub run -- true"; else
	fail "<prefix>/bin/uslub run -- true: exit $?"; fi
pre=$("$P/bin/uslub" run -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
if [ "$(readlink -f "${pre%%:*}")" = "$(readlink -f "$LIBDIR/libuslub-malloc.so")" ]; then
	pass "uslub run preloads the prefix's libuslub-malloc.so"
else
	fail "uslub run preloads '$pre', not $LIBDIR/libuslub-malloc.so"
fi
if "$P/bin/uslub" run --report -- python3 -c 'print(len(str(list(range(10**4)))))' \
	>/dev/null 2>"$WORK/report.err" &&
   grep -q "kmalloc-\|malloc-" "$WORK/report.err"; then
	pass "uslub run --report from the prefix prints a report"
else
	fail "uslub run --report from the prefix:"; sed 's/^/    /' "$WORK/report.err" | head -10
fi

# ---- DESTDIR staging --------------------------------------------------------
STAGE=$WORK/stage
DP=$WORK/not-there/opt/uslub
if make -s -C "$SRC" install-only BUILD="$BUILD" PREFIX="$DP" DESTDIR="$STAGE" \
	>"$WORK/install2.log" 2>&1; then
	if [ -e "$WORK/not-there" ]; then
		fail "DESTDIR ignored: files written to $DP itself"
	elif [ -f "$STAGE$DP/bin/uslub" ] &&
	     pc=$(find "$STAGE$DP" -name uslub.pc -path '*/pkgconfig/*' | head -1) && [ -n "$pc" ]; then
		pass "make install-only DESTDIR=... PREFIX=...: staged under DESTDIR"
		# relocatable: the staged tree works where it lies
		# shellcheck disable=SC2046
		if "$CC" -o "$WORK/hello-staged" "$WORK/hello.c" \
			$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs uslub) 2>"$WORK/cc.err"; then
			runs "staged tree: pkg-config build runs (LD_LIBRARY_PATH)" env \
				LD_LIBRARY_PATH="$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir uslub)" \
				"$WORK/hello-staged"
		else
			fail "staged tree pkg-config build:"; sed 's/^/    /' "$WORK/cc.err" | head -10
		fi
	else
		fail "DESTDIR=$STAGE PREFIX=$DP: nothing under $STAGE$DP"
	fi
else
	fail "make install-only DESTDIR=... PREFIX=...:"; sed 's/^/    /' "$WORK/install2.log" | tail -20
fi

if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all install checks passed"
