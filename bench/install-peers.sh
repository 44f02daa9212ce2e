#!/usr/bin/env bash
# Install the benchmark peers (Debian packages) that are missing:
#   jemalloc, mimalloc, tcmalloc (gperftools), DPDK, pkg-config, matplotlib.
# A no-op (one line) when all are present. Never fails the build: a peer it
# cannot install is reported and then skipped by bench/run.py.
# Called by `make bench`; USLUB_BENCH_NO_INSTALL=1 turns installing off.
set -u

# package  peer it provides (for the messages)
PEERS=(
	"libjemalloc-dev:jemalloc"
	"libmimalloc-dev:mimalloc"
	"libgoogle-perftools-dev:tcmalloc"
	"libdpdk-dev:dpdk (rte_mempool)"
	"pkg-config:pkg-config (to find dpdk)"
	"python3-matplotlib:the plot (bench.png)"
)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "bench: not a Debian system (no dpkg-query): not installing peers; run.py skips any it cannot find"
	exit 0
fi

missing=()
for e in "${PEERS[@]}"; do
	installed "${e%%:*}" || missing+=("${e%%:*}")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "bench: all peers installed (jemalloc, mimalloc, tcmalloc, dpdk, matplotlib)"
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
