#!/usr/bin/env bash
# Install what building and testing uslub needs on a fresh Debian machine
# (compiler, clang, make, cmake, pkg-config, python3, sqlite3, redis-tools,
# tmux, binutils, liburcu-dev, libunwind-dev but on x86_64; the sanitizer runtimes come with gcc). A no-op when everything is present.
# Called by `make build`, so the README's two commands work on a bare
# machine.
set -euo pipefail
missing=()
command -v cc    >/dev/null 2>&1 || missing+=(build-essential)
command -v make  >/dev/null 2>&1 || missing+=(make)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)   # test/install
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)   # test/malloc/programs.sh
# test/malloc/redis.sh: redis-tools has redis-benchmark, redis-cli and the
# server binary itself (redis-check-rdb, run as redis-server); the
# redis-server package would add only the system service that starts it.
command -v redis-benchmark >/dev/null 2>&1 || missing+=(redis-tools)
command -v tmux  >/dev/null 2>&1 || missing+=(tmux)      # the `uslub top` screen test
# `uslub run --report --profile`'s file:line (addr2line) and
# test/malloc/profile_sites.sh; also objdump (test/fastpath)
command -v addr2line >/dev/null 2>&1 || missing+=(binutils)
command -v clang >/dev/null 2>&1 || missing+=(clang)     # make test-clang
# test/asan in the clang build: clang's ASan runtime (a recommendation of
# clang's package, so missing where clang came without recommends)
if command -v clang >/dev/null 2>&1 &&
   [ ! -f "$(clang -print-file-name=libclang_rt.asan-x86_64.a)" ]; then
	missing+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
fi
# liburcu (default flavour, -lurcu): the RCU component, libuslub-rcu, and
# its tests (test/rcu) and benchmark (B-rcu)
{ command -v cc >/dev/null 2>&1 && echo '#include <urcu.h>' | cc -E -x c - >/dev/null 2>&1; } ||
	missing+=(liburcu-dev)
# libunwind (libunwind.h, -lunwind): the stacks of sampled allocations
# other than on x86_64, where uslub walks the modules' .eh_frame itself
# (src/ext/stack.c; optional in the build, where a frame-pointer walk
# stands in, but its tests, test/malloc/heap_stacks.sh, want it)
[ "$(uname -m)" = x86_64 ] ||
	{ command -v cc >/dev/null 2>&1 && echo '#include <libunwind.h>' | cc -E -x c - >/dev/null 2>&1; } ||
	missing+=(libunwind-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "uslub: installing build dependencies: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
	echo "uslub: need ${missing[*]} (not root and no sudo): install them and retry" >&2; exit 1
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
