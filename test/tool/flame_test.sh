#!/usr/bin/env bash
# `uslub flame` (tools/flame.c): folded stacks in, an SVG flame graph out.
#   widths      three callers of one wrapper with 1, 2 and 4 MiB: their
#               boxes' widths are in that ratio, side by side, in name
#               order, the wrapper on top of each; repeated stacks add up
#   escaping    a frame named <script>&"x" appears escaped, never raw
#   bad lines   a line without a count is named on stderr, left out, the
#               rest drawn, exit 1; empty input: "no samples", exit 0
#   deep        a stack of 20000 frames (no recursion to overflow)
#   usage       bad options exit 2, an unreadable file 1
set -u
tool=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

# the box of frame $2 (its <title> starts with it) at depth y $3: "x width"
box() { grep -F "<title>$2 (" "$1" | grep -F "y=\"$3\"" |
	sed -n 's/.* x="\([0-9.]*\)" y="[0-9]*" width="\([0-9.]*\)".*/\1 \2/p' | head -1; }

cat > "$T/in.folded" <<'F'
# heap profile: bytes in use
main;caller_c;wrapper 4194304
main;caller_a;wrapper 524288
main;caller_b;wrapper 2097152
main;caller_a;wrapper 524288
F
"$tool" flame --title "three callers" "$T/in.folded" > "$T/out.svg" 2> "$T/err"
check "exit 0" '[ $? -eq 0 ] && [ ! -s "$T/err" ]'
check "an SVG document" 'head -1 "$T/out.svg" | grep -q "^<?xml" && tail -1 "$T/out.svg" | grep -q "^</svg>$"'
if command -v python3 >/dev/null; then
	check "well-formed XML" 'python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$T/out.svg"'
fi
# depths: all at the bottom (y 104 in a 130 px picture of 4 levels)
h=$(sed -n 's/.*<svg [^>]* height="\([0-9]*\)".*/\1/p' "$T/out.svg")
ya=$((h - 10 - 3 * 16)); yw=$((h - 10 - 4 * 16))
read -r xa wa <<<"$(box "$T/out.svg" caller_a $ya)"
read -r xb wb <<<"$(box "$T/out.svg" caller_b $ya)"
read -r xc wc <<<"$(box "$T/out.svg" caller_c $ya)"
read -r xw ww <<<"$(grep -F "<title>wrapper (" "$T/out.svg" | grep -F "x=\"$xa\" y=\"$yw\"" |
	sed -n 's/.* x="\([0-9.]*\)" y="[0-9]*" width="\([0-9.]*\)".*/\1 \2/p')"
check "three caller boxes" '[ -n "${wa:-}" ] && [ -n "${wb:-}" ] && [ -n "${wc:-}" ]'
check "widths 1:2:4, the whole width" 'awk -v a="$wa" -v b="$wb" -v c="$wc" "BEGIN {
	exit !(b / a > 1.999 && b / a < 2.001 && c / a > 3.999 && c / a < 4.001 &&
	       a + b + c > 1179.9 && a + b + c < 1180.1) }"'
check "in name order, side by side" 'awk -v xa="$xa" -v wa="$wa" -v xb="$xb" -v wb="$wb" -v xc="$xc" "BEGIN {
	exit !(xa < xb && xb < xc && (xa + wa - xb) ^ 2 < 0.01 && (xb + wb - xc) ^ 2 < 0.01) }"'
check "the wrapper on top of caller_a, as wide" '[ "$xw" = "$xa" ] && [ "$ww" = "$wa" ]'
check "the title" 'grep -q ">three callers</text>" "$T/out.svg"'
check "the total" 'grep -q ">7340032 bytes in all" "$T/out.svg"'

printf 'main;<script>&"x";b 100\nmain;ok 100\n' > "$T/esc.folded"
"$tool" flame "$T/esc.folded" > "$T/esc.svg"
check "escaped" 'grep -q "&lt;script&gt;&amp;&quot;x&quot;" "$T/esc.svg" && ! grep -q "<script" "$T/esc.svg"'

printf 'main;a 10\nno count here\nmain;b 30\n;; 5\n' > "$T/bad.folded"
"$tool" flame "$T/bad.folded" > "$T/bad.svg" 2> "$T/err"
check "bad lines: exit 1" '[ $? -eq 1 ]'
check "bad lines: named" 'grep -q "line 2:" "$T/err" && grep -q "line 4:" "$T/err"'
check "bad lines: the rest drawn" 'grep -q "<title>a (10 bytes" "$T/bad.svg" && grep -q "<title>b (30 bytes" "$T/bad.svg" && tail -1 "$T/bad.svg" | grep -q "</svg>"'
: > "$T/empty.folded"
"$tool" flame "$T/empty.folded" > "$T/empty.svg"
check "empty: exit 0, no samples" '[ $? -eq 0 ] && grep -q ">no samples<" "$T/empty.svg"'

awk 'BEGIN { s = "root"; for (i = 0; i < 20000; i++) s = s ";f" i; print s " 7" }' > "$T/deep.folded"
"$tool" flame --min-width 0 "$T/deep.folded" > "$T/deep.svg"
check "deep: exit 0" '[ $? -eq 0 ]'
check "deep: every frame" '[ "$(grep -c "<rect class=\"f\"" "$T/deep.svg")" -eq 20002 ]'

"$tool" flame --width 5 "$T/in.folded" > /dev/null 2>&1
check "usage: --width 5 exits 2" '[ $? -eq 2 ]'
"$tool" flame --bogus "$T/in.folded" > /dev/null 2>&1
check "usage: unknown option exits 2" '[ $? -eq 2 ]'
"$tool" flame "$T/missing.folded" > /dev/null 2> "$T/err"
check "unreadable file: exit 1, named" '[ $? -eq 1 ] && grep -q "missing.folded" "$T/err"'
"$tool" flame < "$T/in.folded" > "$T/stdin.svg"
check "standard input" 'cmp -s "$T/stdin.svg" "$T/out.svg" || diff <(sed 1,7d "$T/stdin.svg") <(sed 1,7d "$T/out.svg") >/dev/null'
"$tool" help flame | grep -q "folded stacks" || { echo "FAIL help flame"; fail=1; }
exit $fail
