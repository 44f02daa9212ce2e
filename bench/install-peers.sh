#!/usr/bin/env bash
# Install the benchmark peers that are missing:
#   Debian packages: jemalloc, mimalloc (2.0), tcmalloc (gperftools), DPDK,
#   pkg-config, matplotlib;
#   mimalloc 3.4 (the peer "mimalloc-3.4"): Debian has no 3.x, so its
#   libmimalloc.so.3.4 is taken from the PyPI wheel cmeel-mimalloc (pip
#   download, no install) and unpacked under BUILD/peers/mimalloc-3.4/,
#   where bench/run.py --build BUILD looks for it.
# Usage: bench/install-peers.sh [BUILD]   (default: build)
# A no-op (one line each) when all are present. Never fails the build: a peer
# it cannot install is reported and then skipped by bench/run.py.
# Called by `make bench`; USLUB_BENCH_NO_INSTALL=1 turns installing off.
set -u

BUILD_DIR=${1:-build}
# pip requirement of the mimalloc 3.4 wheel: the peer is named for 3.4
MIMALLOC3_REQ="cmeel-mimalloc>=3.4,<3.5"

# mimalloc 3.4 from the cmeel-mimalloc wheel into $BUILD_DIR/peers/mimalloc-3.4.
# No root needed. Prints one line; returns 0 whatever happens.
install_mimalloc3() {
	local dest="$BUILD_DIR/peers/mimalloc-3.4" lib
	lib=$(ls "$dest"/libmimalloc.so.3.4* 2>/dev/null | head -n 1)
	if [ -n "$lib" ]; then
		echo "bench: mimalloc 3.4 present ($lib)"
		return 0
	fi
	if [ -n "${USLUB_BENCH_NO_INSTALL:-}" ]; then
		echo "bench: mimalloc 3.4 not installed (installing is off): skipping mimalloc-3.4"
		return 0
	fi
	local py=python3
	if ! command -v "$py" >/dev/null 2>&1 || ! "$py" -m pip --version >/dev/null 2>&1; then
		echo "bench: mimalloc 3.4 not installed (no python3 -m pip): skipping mimalloc-3.4"
		return 0
	fi
	local tmp
	tmp=$(mktemp -d) || return 0
	if ! "$py" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$MIMALLOC3_REQ" \
	    >"$tmp/pip.log" 2>&1; then
		echo "bench: mimalloc 3.4 not installed (pip download $MIMALLOC3_REQ failed:" \
			"$(tail -n 1 "$tmp/pip.log")): skipping mimalloc-3.4"
		rm -rf "$tmp"
		return 0
	fi
	local whl
	whl=$(ls "$tmp"/cmeel_mimalloc-*.whl 2>/dev/null | head -n 1)
	# the wheel holds the library as cmeel.prefix/lib/libmimalloc.so.3.4 (and
	# two copies under the shorter names); only that one file is taken
	if [ -z "$whl" ] || ! "$py" - "$whl" "$dest" <<'PY'
import os, re, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist()
             if re.search(r"/lib/libmimalloc\.so\.3\.4(\.[0-9]+)*$", n)]
    if not names:
        sys.exit(1)
    n = max(names, key=len)
    os.makedirs(dest, exist_ok=True)
    out = os.path.join(dest, os.path.basename(n))
    with z.open(n) as src, open(out + ".tmp", "wb") as dst:
        dst.write(src.read())
    os.chmod(out + ".tmp", 0o755)
    os.replace(out + ".tmp", out)
PY
	then
		echo "bench: mimalloc 3.4 not installed (no libmimalloc.so.3.4 in" \
			"${whl:-the download}): skipping mimalloc-3.4"
		rm -rf "$tmp"
		return 0
	fi
	echo "bench: mimalloc 3.4 installed from $(basename "$whl") into $dest"
	rm -rf "$tmp"
	return 0
}

# package  peer it provides (for the messages)
PEERS=(
	"libjemalloc-dev:jemalloc"
	"libmimalloc-dev:mimalloc"
	"libgoogle-perftools-dev:tcmalloc"
	"libdpdk-dev:dpdk (rte_mempool)"
	"pkg-config:pkg-config (to find dpdk)"
	"python3-matplotlib:the plot (bench.png)"
	"valgrind:B6's instruction counts (callgrind)"
)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

install_mimalloc3

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "bench: not a Debian system (no dpkg-query): not installing peers; run.py skips any it cannot find"
	exit 0
fi

missing=()
for e in "${PEERS[@]}"; do
	installed "${e%%:*}" || missing+=("${e%%:*}")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "bench: all Debian peers installed (jemalloc, mimalloc, tcmalloc, dpdk, matplotlib, valgrind)"
	exit 0
fi

report_skipped() {
	for e in "${PEERS[@]}"; do
		installed "${e%%:*}" || echo "bench: ${e%%:*} not installed ($1): skipping ${e#*:}"
	done
}

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO="sudo -n"
	else
		report_skipped "not root and no password-less sudo"
		exit 0
	fi
fi
if [ -n "${USLUB_BENCH_NO_INSTALL:-}" ] || ! command -v apt-get >/dev/null 2>&1; then
	report_skipped "installing is off or there is no apt-get"
	exit 0
fi

echo "bench: installing missing peers: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null 2>&1 || echo "bench: apt-get update failed; trying the install anyway"
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
	# all at once failed (one unknown package?): try them one by one
	for p in "${missing[@]}"; do
		$SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || true
	done
fi
report_skipped "apt-get install failed"

# A newly installed libdpdk-dev is only seen when CMake configures again:
# make the next `cmake --build` re-run the configure step.
case " ${missing[*]} " in
*" libdpdk-dev "* | *" pkg-config "*)
	installed libdpdk-dev && touch "$(dirname "$0")/CMakeLists.txt" ;;
esac
exit 0
