#!/bin/bash
# misuse_out_text (issue 25, item 7): text outputs are data. A program
# under uslub names a cache and loads a module from a path of its
# choosing, both with a newline, a fake table row (naming /etc/shadow) and
# terminal escape sequences. The report file (USLUB_REPORT), `uslub run
# --report`, and `uslub slabinfo PID` / `allocinfo PID` on its published
# snapshot must show them escaped (\n, \x1b): no raw control byte, no line
# of the program's making.
#
# Before the fix: the names went raw into the tables (the fake row was a
# line of its own) and `run --report` printed the report file as it was
# (escape sequences included, also those a program wrote there itself).
#
#   out_text.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 tool=$2 bin=$3
prog=$bin/misuse_prog_out_sites
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
T=$(mktemp -d) || exit 1
coproc_pid=
cleanup() {
	[ -n "$coproc_pid" ] && kill "$coproc_pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

fake='/etc/shadow 1 1 1 8 8 512 1 1 0 4096'
cache="cache"$'\n'"$fake"$'\e[2J\e]0;pwned\a'
cache_esc='cache\n'"$fake"'\x1b[2J\x1b]0;pwned\x07'
dir="$T/m"$'\n'"$fake"$'\e[31m'
dir_esc="$T/m"'\n'"$fake"'\x1b[31m'
mkdir -p "$dir" && cp "$bin/misuse_mod_out_site.so" "$dir/mod.so" || fail "setup"

# check WHAT FILE [SITE]: FILE holds no control byte but '\n' (C0, DEL),
# no line of the program's making, the cache name escaped, and with SITE
# the module's path escaped
check() {
	tr -d '\n' <"$2" | LC_ALL=C grep -q '[[:cntrl:]]' && fail "$1: a raw control byte"
	grep -q '^/etc/shadow' "$2" && fail "$1: a line of the program's making: $(grep -m1 '^/etc/shadow' "$2")"
	grep -qF "$cache_esc" "$2" || fail "$1: no escaped cache name in: $(head -c 4000 "$2")"
	if [ $# -gt 2 ]; then
		grep -qF "$dir_esc/mod.so+0x" "$2" || fail "$1: no escaped module path"
	fi
}

# 1. The report file at exit.
env USLUB_PROFILING=1 USLUB_REPORT="$T/report" LD_PRELOAD="$lib" "$prog" "$dir/mod.so" "$cache" ||
	fail "prog exited $?"
check "USLUB_REPORT" "$T/report" site

# 2. uslub run --report (the report file, shown by the tool).
"$tool" run --report --profile -- "$prog" "$dir/mod.so" "$cache" 2>"$T/run" || fail "run --report: $?"
grep -q '^uslub report: pid ' "$T/run" || fail "run --report: no report"
check "uslub run --report" "$T/run" site
# the tool unescapes the module's path to resolve its call site
if command -v addr2line >/dev/null; then
	grep -q "mod_out_site\.c:[0-9]* func:out_site_alloc (" "$T/run" ||
		fail "run --report: the site in the module with an escaped path is not resolved"
fi

# ... and a report file that a program wrote itself (it knows the name from
# USLUB_REPORT; dash ends with _exit(), so uslub writes no report over it):
# the tool shows it with its control bytes as '?'.
"$tool" run --report -- sh -c 'printf "\033]0;pwned\007\033[2J\n" >"${USLUB_REPORT%%%p}$$"' \
	2>"$T/run" || fail "run --report -- sh: $?"
grep -qF '?]0;pwned??[2J' "$T/run" || fail "run --report: a report file of the program's: $(cat -A "$T/run")"

# 3. uslub slabinfo PID and allocinfo PID on the published snapshot.
export USLUB_PUBLISH_ROOT="$T/pub"
mkdir -m 700 "$T/pub"
coproc PROG { exec env USLUB_PROFILING=1 USLUB_PUBLISH_MS=20 LD_PRELOAD="$lib" \
	"$prog" "$dir/mod.so" "$cache" wait 2>&1; }
coproc_pid=$PROG_PID
read -r -t 20 line <&"${PROG[0]}"
[ "$line" = ready ] || fail "prog did not start: '$line'"
snap="$T/pub/uslub-$(id -u)/$coproc_pid.txt"
# its first snapshot with the cache and the module's site: a snapshot's
# sections are printed one after the other while the program runs, so its
# slabinfo may predate the cache that its allocinfo's site came after
for i in $(seq 200); do
	grep -qF "mod.so+0x" "$snap" 2>/dev/null && grep -qF "$cache_esc" "$snap" && break
	sleep 0.05
done
"$tool" slabinfo "$coproc_pid" >"$T/slabinfo" 2>&1 || fail "uslub slabinfo: $(cat "$T/slabinfo")"
check "uslub slabinfo PID" "$T/slabinfo"
"$tool" allocinfo "$coproc_pid" >"$T/allocinfo" 2>&1 || fail "uslub allocinfo: $(cat "$T/allocinfo")"
grep -qF "$dir_esc/mod.so+0x" "$T/allocinfo" || fail "uslub allocinfo PID: no escaped module path"
grep -q '^/etc/shadow' "$T/allocinfo" && fail "uslub allocinfo PID: a line of the program's making"
exec {PROG[1]}>&-                 # stdin ends: prog exits
wait "$coproc_pid" 2>/dev/null
coproc_pid=
echo PASS
