#!/bin/bash
# malloc_setuid: a set-uid root program linked with libuslub-malloc, run by
# nobody with every USLUB_ variable set to a hostile value, must behave as
# if none were set (secure execution: getauxval(AT_SECURE) != 0):
#   - USLUB_REPORT at a root-only 0600 file leaves it untouched, at a new
#     file in a root-only 0700 directory creates nothing;
#   - USLUB_DEBUG=T traces nothing, USLUB_VERBOSE=1 dumps nothing, junk
#     values give no message: nothing at all on stderr;
#   - USLUB_FAILSLAB=probability=100,times=-1: no allocation fails;
#   - USLUB_PUBLISH_MS=1: no /dev/shm/uslub-<euid>/<pid>.* snapshot;
#   - USLUB_MALLOC_ABORT=0: an invalid free still aborts;
#   - the slab layout (USLUB_MAX_ORDER, _MIN_OBJECTS, _DEBUG, ...) is the
#     one of a run without any USLUB_ variable.
# Controls: the same binary run by root (not secure) with the same
# variables shows each effect, so the checks above prove something.
# Needs root (to chown/chmod the copy and to switch to nobody) and a file
# system that honours set-uid bits; skips (77) otherwise, saying why.
#
#   setuid.sh PROG BASE_H      (BASE_H: src/base/base.h, the option table)
set -u
prog=$1
base_h=$2

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -n "${T:-}" ] && for f in "$T"/*.out "$T"/*.err; do
	[ -s "$f" ] && { echo "--- $f"; head -c 3000 "$f"; echo; }; done; exit 1; }

[ "$(id -u)" = 0 ] || skip "not run as root: cannot install a set-uid root copy or run it as nobody"
command -v setpriv >/dev/null || skip "setpriv (util-linux) not installed"
getent passwd nobody >/dev/null || skip "no user nobody"
group=nogroup
getent group nogroup >/dev/null || group=nobody
getent group $group >/dev/null || skip "no group nogroup or nobody"
as_nobody() { setpriv --reuid=nobody --regid=$group --clear-groups -- "$@"; }

# A directory on a file system that honours set-uid bits, reachable by nobody.
T=
for base in /tmp "$(dirname "$prog")"; do
	"$prog" nosuid "$base" || { echo "note: $base is mounted nosuid"; continue; }
	d=$(mktemp -d -p "$base" uslub-setuid.XXXXXX) || continue
	chmod 755 "$d"
	if as_nobody test -x "$d"; then T=$d; break; fi
	echo "note: nobody cannot reach $d"
	rm -rf "$d"
done
[ -n "$T" ] || skip "no directory on a file system without nosuid that nobody can reach"
trap 'rm -rf "$T"' EXIT

cp "$prog" "$T/prog"
chown root:root "$T/prog"
chmod 4755 "$T/prog"
mkdir -m 700 "$T/rootonly"
printf 'root secret\n' >"$T/secret"
chmod 600 "$T/secret"
touch -d '2001-01-01 00:00:00' "$T/secret"
secret_before=$(stat -c '%s %Y %u %a' "$T/secret"; sha256sum <"$T/secret")

# Every option in the table gets a hostile, non-default value.
declare -A hostile=(
	[DECAY_MS]=0 [FAKE_NODES]=3 [CPU_PARTIAL]=0 [MAX_ORDER]=0 [MIN_ORDER]=2
	[MIN_OBJECTS]=1 [FREELIST_RANDOM]=1 [FREELIST_HARDENED]=1 [CPU_SLABS]=1
	[KMALLOC_SHEAVES]=0 [KMALLOC_PARTITIONS]=1 [PROFILING]=sample:1 [PROFILING_SEED]=7 [ACCOUNT_BATCH]=0 [DEBUG]=T
	[FAILSLAB]=probability=100,times=-1 [PUBLISH_MS]=1 [PUBLISH_ROOT]=/tmp [ABORT_ON_ERROR]=1
	[VERBOSE]=1 [REPORT]="$T/secret" [MALLOC_ABORT]=0 [BACKGROUND_THREAD]=0 [THP]=2
	[ASAN]=0 [PERCPU]=cpu [STACK_DEPTH]=1 [HEAP_PROFILE]="$T/rootonly/heap.%p"
)
names=$(sed -n 's/^[[:space:]]*X(\([A-Z_]*\),.*/\1/p' "$base_h")
[ -n "$names" ] || fail "no options found in $base_h"
for n in $names; do
	[ -n "${hostile[$n]+x}" ] || fail "USLUB_$n has no hostile value in setuid.sh: add one"
done
# env arguments: every option hostile ("none" first: none), then overrides
# NAME=VALUE ("NAME=" drops it); NUL separated
envs() {
	local -A v
	if [ "${1:-}" = none ]; then shift; else
		for n in $names; do v[$n]=${hostile[$n]}; done
	fi
	for o in "$@"; do
		if [ -z "${o#*=}" ]; then unset "v[${o%%=*}]"; else v[${o%%=*}]=${o#*=}; fi
	done
	for n in "${!v[@]}"; do printf 'USLUB_%s=%s\0' "$n" "${v[$n]}"; done
}
# run NAME secure|plain ENV-ARGS... -- PROG-ARGS...: stdout, stderr, rc in $T
run() {
	local name=$1 mode=$2
	shift 2
	local e=()
	while [ "$1" != -- ]; do e+=("$1"); shift; done
	shift
	local -a env_list
	mapfile -d '' env_list < <(envs "${e[@]}")
	if [ "$mode" = secure ]; then
		env -i PATH=/usr/bin:/bin "${env_list[@]}" \
			setpriv --reuid=nobody --regid=$group --clear-groups -- \
			"$T/prog" "$@" >"$T/$name.out" 2>"$T/$name.err"
	else
		env -i PATH=/usr/bin:/bin "${env_list[@]}" \
			"$T/prog" "$@" >"$T/$name.out" 2>"$T/$name.err"
	fi
	echo $? >"$T/$name.rc"
}
val() { sed -n "s/^$2=//p" "$T/$1.out"; }
layout() { awk '/^layout:/ { on = 1 } on && $1 ~ /^k?malloc-/ { print $1, $4, $5, $6, $7 }' "$T/$1.out"; }
expect() { # NAME KEY VALUE
	[ "$(val "$1" "$2")" = "$3" ] || fail "$1: $2=$(val "$1" "$2"), want $3"
}

# ---- secure runs: nobody, set-uid root -------------------------------------
run clean secure none -- run 200
[ "$(cat "$T/clean.rc")" = 0 ] || fail "clean: exit $(cat "$T/clean.rc")"
[ "$(val clean secure)" = 1 ] || skip "the set-uid copy did not run in secure mode (AT_SECURE=$(val clean secure)): set-uid execution not possible here"
[ -n "$(layout clean)" ] || fail "clean: no kmalloc layout in the output"

check_secure() { # NAME: nothing any variable could cause
	local n=$1
	[ "$(cat "$T/$n.rc")" = 0 ] || fail "$n: exit $(cat "$T/$n.rc")"
	[ ! -s "$T/$n.err" ] || fail "$n: printed on stderr (trace, option dump or messages)"
	expect "$n" secure 1
	expect "$n" alloc_failures 0
	expect "$n" injected 0
	expect "$n" published 0
	local pid
	pid=$(val "$n" pid)
	ls /dev/shm/uslub-*/"$pid".* >/dev/null 2>&1 && fail "$n: /dev/shm/uslub-*/$pid.* exists"
	ls /tmp/uslub-*/"$pid".* >/dev/null 2>&1 && fail "$n: /tmp/uslub-*/$pid.* exists"
	[ "$(layout "$n")" = "$(layout clean)" ] || fail "$n: slab layout differs from a run without USLUB_ variables"
	[ "$(stat -c '%s %Y %u %a' "$T/secret"; sha256sum <"$T/secret")" = "$secret_before" ] ||
		fail "$n: the root-only file USLUB_REPORT named was touched"
	[ -z "$(ls -A "$T/rootonly")" ] || fail "$n: a file was created in the root-only directory"
}
run hostile secure -- run 200
check_secure hostile
# without fault injection, which would also stop the report and snapshots
run hostile_nofs secure FAILSLAB= -- run 200
check_secure hostile_nofs
run hostile_dir secure FAILSLAB= "REPORT=$T/rootonly/new.%p" -- run 200
check_secure hostile_dir
junk=()
for n in $names; do
	case ${hostile[$n]} in [0-9]*) junk+=("$n=99999999999999999999 x");; esac
done
run junk secure "${junk[@]}" "REPORT=$T/secret" -- run 50
check_secure junk
run badfree secure -- badfree
[ "$(cat "$T/badfree.rc")" != 0 ] && [ -z "$(val badfree survived_bad_free)" ] ||
	fail "badfree: USLUB_MALLOC_ABORT=0 was obeyed in a set-uid program (exit $(cat "$T/badfree.rc"))"

# ---- controls: root, not secure: each variable takes effect ----------------
run c_hostile plain FAILSLAB= -- run 3000
n=c_hostile
[ "$(cat "$T/$n.rc")" = 0 ] || fail "$n: exit $(cat "$T/$n.rc")"
expect $n secure 0
grep -q '^uslub: USLUB_VERBOSE' "$T/$n.err" || fail "$n: USLUB_VERBOSE=1 printed no option dump"
grep -qE '^TRACE k?malloc-' "$T/$n.err" || fail "$n: USLUB_DEBUG=T traced nothing"
expect $n published 1
grep -q '^uslub report' "$T/secret" || fail "$n: USLUB_REPORT did not write the report"
ls "$T"/rootonly/heap.* >/dev/null 2>&1 || fail "$n: USLUB_HEAP_PROFILE wrote no heap profile"
rm -f "$T"/rootonly/heap.*
[ "$(layout $n)" != "$(layout clean)" ] || fail "$n: the layout options changed nothing"

run c_failslab plain none FAILSLAB=probability=100,times=-1 -- run 0
n=c_failslab
[ "$(val $n alloc_failures)" -gt 0 ] && [ "$(val $n injected)" -gt 0 ] ||
	fail "$n: USLUB_FAILSLAB made no allocation fail"

run c_badfree plain none MALLOC_ABORT=0 "REPORT=$T/rootonly/new.%p" -- badfree
expect c_badfree survived_bad_free 1
[ -n "$(ls -A "$T/rootonly")" ] || fail "c_badfree: USLUB_REPORT created nothing in the root-only directory"

run c_junk plain "${junk[@]}" REPORT= FAILSLAB= -- run 0
grep -q '^uslub: ignoring USLUB_DECAY_MS="99999999999999999999 x"' "$T/c_junk.err" ||
	fail "c_junk: no message for a junk USLUB_DECAY_MS"

echo "PASS: a set-uid program ignored $(echo $names | wc -w) USLUB_ variables (checked in $T); root's runs obeyed them"
