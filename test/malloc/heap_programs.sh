#!/usr/bin/env bash
# Heap profiles of real programs (issue 30): Debian's python3 and the
# sqlite3 shell under `uslub run --heap-profile`, whose allocations go
# through wrappers (_PyObject_Malloc / PyMem, sqlite3Malloc). Their
# stacks must reach past the wrapper into the code that asked:
#   python3  a stack through the interpreter's evaluation loop
#            (_PyEval_EvalFrameDefault) and, in another, sqlite3_step
#            above sqlite3Malloc (the sqlite3 module)
#   sqlite3  a stack with sqlite3_step above sqlite3Malloc
# and each profile is written as folded stacks, and as a flame graph
# whose widest box under the root holds at least 1 MiB.
#   heap_programs.sh LIB TOOL
set -u
lib=$1 tool=$2
walker=$(bash "$(dirname "$0")/stack_walker.sh" "$lib")
[ -n "$walker" ] && [ "$walker" != "frame pointers" ] ||
	{ echo "SKIP: $lib walks stacks by frame pointers (${walker:-none})"; exit 77; }
py=$(command -v python3) && sq=$(command -v sqlite3) ||
	{ echo "SKIP: python3 or sqlite3 missing"; exit 77; }
"$py" -c 'import sqlite3' 2>/dev/null || { echo "SKIP: python3 has no sqlite3 module"; exit 77; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export USLUB_LIBRARY="$lib" USLUB_PROFILING_SEED=7
# a stack (a line of FILE) with frame A somewhere above frame B
above() { awk -v a="$2" -v b="$3" '
	/^#/ { next }
	{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";"); ia = ib = 0
	  for (i = 1; i <= n; i++) { g = f[i]; sub(/ \(.*$/, "", g)
	    if (g == a && !ia) ia = i; if (g == b) ib = i }
	  if (ia && ib && ia < ib) found = 1 }
	END { exit !found }' "$1"; }

cat > "$T/prog.py" <<'PY'
import json, sqlite3
db = sqlite3.connect(":memory:")
db.execute("create table t (id integer primary key, text)")
db.executemany("insert into t values (?, ?)", ((i, "row %d" % i * 8) for i in range(40000)))
index = {r[0]: json.dumps({"id": r[0], "text": r[1]}) for r in db.execute("select * from t")}
blobs = [bytearray(4096) for _ in range(1000)]
PY
timeout 120 "$tool" run --profile=sample:65536 --heap-profile "$T/py.folded" -- "$py" "$T/prog.py" \
	2>"$T/py.err" || fail "python3 under uslub run failed: $(head -5 "$T/py.err")"
[ -s "$T/py.folded.alloc" ] || fail "python3: no FILE.alloc"
above "$T/py.folded.alloc" _PyEval_EvalFrameDefault PyByteArray_Resize ||
above "$T/py.folded.alloc" _PyEval_EvalFrameDefault _PyObject_Malloc ||
	fail "python3: no stack through the evaluation loop to an allocation: $(sort -t' ' -k2 -n -r "$T/py.folded.alloc" | head -3 | cut -c1-400)"
above "$T/py.folded.alloc" sqlite3_step sqlite3Malloc ||
	fail "python3: no stack from sqlite3_step to sqlite3Malloc"

printf 'create table t(x);\nwith recursive c(i) as (select 1 union all select i+1 from c where i<40000) insert into t select printf("%%0200d", i) from c;\nselect count(*) from t;\n' > "$T/s.sql"
timeout 120 "$tool" run --profile=sample:65536 --heap-profile "$T/sq.folded" -- "$sq" :memory: \
	<"$T/s.sql" >"$T/sq.out" 2>"$T/sq.err" || fail "sqlite3 under uslub run failed: $(head -5 "$T/sq.err")"
grep -q '^40000$' "$T/sq.out" || fail "sqlite3: wrong output: $(head -3 "$T/sq.out")"
above "$T/sq.folded.alloc" sqlite3_step sqlite3Malloc ||
	fail "sqlite3: no stack from sqlite3_step to sqlite3Malloc: $(sort -t' ' -k2 -n -r "$T/sq.folded.alloc" | head -3 | cut -c1-400)"

timeout 120 "$tool" run --profile=sample:65536 --heap-profile "$T/sq.svg" -- "$sq" :memory: \
	<"$T/s.sql" >/dev/null 2>"$T/svg.err" || fail "sqlite3 --heap-profile FILE.svg failed"
tail -1 "$T/sq.alloc.svg" | grep -q '^</svg>$' || fail "sqlite3: FILE.alloc.svg is not a whole SVG"
w=$(sed -n 's/^<g><title>sqlite3_step (\([0-9]*\) bytes.*/\1/p' "$T/sq.alloc.svg" | sort -n | tail -1)
[ "${w:-0}" -ge 1048576 ] || fail "sqlite3: sqlite3_step's box holds ${w:-no} bytes, want >= 1 MiB"
echo "PASS: python3 and sqlite3 heap profiles reach past their allocator wrappers"
