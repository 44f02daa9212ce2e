#!/bin/bash
# misuse_out_run_header (issue 25, item 7, review R1): `uslub run --report`
# names the command in its header ("uslub report: pid N (CMD ARGS)") and
# in its other lines; the command and its arguments are text like any
# other name the tool prints: no control byte, no DEL, no C1 control
# (U+009B is CSI to a terminal that takes C1, as raw 0x9b is), no
# malformed UTF-8; well-formed UTF-8 (é) stays.
#
# Before the fix: only bytes below 0x20 were replaced (by a space);
# U+009B, 0x9b and DEL reached the terminal as they were.
#
#   out_run_header.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 tool=$2 prog=$3/misuse_prog_out_sites
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; head -c 2000 "$T/err" | cat -A; echo; exit 1; }
name=$'\xc2\x9b31m\x7f\x9b\x1b[2J\xc3\xa9'          # C1 CSI, DEL, raw CSI, ESC (a space), é
ln -s "$prog" "$T/p$name"
"$tool" run --report -- "$T/p$name" "arg$name" 2>"$T/err" || fail "run --report: $?"
head=$(grep -a '^uslub report: pid ' "$T/err") || fail "no report header"
case "$head" in
*$'\xc2\x9b'* | *$'\x7f'* | *$'\x9b'* | *$'\x1b'*) fail "a control byte in the header";;
esac
[[ "$head" == *"p??31m?? [2J"$'\xc3\xa9 arg'* ]] || fail "header not as expected: $head"
echo PASS
