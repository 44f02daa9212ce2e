#!/usr/bin/env bash
# Benchmark results stay out of the source tree, and the README's table of
# published figures is made by run.py --publish from a results JSON only.
# A real (tiny, ~2 s) run.py of B7 and B-meta (slab pages and layouts: no
# timing), then:
#   - its bench.json/bench.md are under BUILD/bench-results (the default)
#     and --out DIR; the source tree's `git status` is what it was;
#   - every file this test writes is in a folder of its own: the default
#     --out is checked on a second build folder (symbolic links to BUILD's
#     bench binaries), so BUILD/bench-results, where `make bench` left its
#     results, is byte for byte what it was;
#   - --publish refuses a quick run's JSON and leaves the README alone;
#   - --allow-quick --readme COPY rewrites only the marked block of a copy
#     of the README: one table row per target of the JSON (and one per
#     report without a target), figures as in the JSON; a second publish
#     changes nothing.
#
#   publish_test.sh <source dir> <build dir>
set -u
SRC=$1 BUILD=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok:   $*"; }
PY=python3
RUN=$SRC/bench/run.py
WORK=$(mktemp -d "${TMPDIR:-/tmp}/uslub-publish-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

status() { git -C "$SRC" status --porcelain --untracked-files=all 2>/dev/null; }
before=$(status)
# BUILD/bench-results: the last `make bench`'s results, which this test
# must neither delete nor rewrite (nothing there stays nothing there)
results() {
	[ -d "$BUILD/bench-results" ] || { echo "(no folder)"; return; }
	(cd "$BUILD/bench-results" && find . -type f -print0 | sort -z | xargs -0r sha256sum)
}
results_before=$(results)

tiny=(--only B7,B-meta --quick --peers uslub --rounds 1 --repeats 1 --no-plot)
# The default --out is BUILD/bench-results for the BUILD given: checked on
# a build folder of this test's own, whose bench/ is BUILD's.
FAKE=$WORK/build
mkdir -p "$FAKE"
ln -s "$BUILD/bench" "$FAKE/bench"
[ -e "$BUILD/CMakeCache.txt" ] && ln -s "$BUILD/CMakeCache.txt" "$FAKE/CMakeCache.txt"
if $PY "$RUN" --build "$FAKE" "${tiny[@]}" >"$WORK/run1.log" 2>&1 &&
   [ -s "$FAKE/bench-results/bench.json" ] && [ -s "$FAKE/bench-results/bench.md" ]; then
	pass "run.py writes BUILD/bench-results/bench.{json,md} by default"
else
	fail "run.py (default --out):"; tail -20 "$WORK/run1.log" | sed 's/^/    /'
fi
if $PY "$RUN" --build "$BUILD" "${tiny[@]}" --out "$WORK/out" >"$WORK/run2.log" 2>&1 &&
   [ -s "$WORK/out/bench.json" ]; then
	pass "run.py --out DIR writes DIR/bench.json"
else
	fail "run.py --out:"; tail -20 "$WORK/run2.log" | sed 's/^/    /'
fi
if [ -e "$SRC/bench/results" ]; then
	fail "$SRC/bench/results exists: results written into the source tree?"
fi
if [ "$(status)" = "$before" ]; then pass "the source tree's git status is unchanged"; else
	fail "the runs changed the source tree:"; diff <(echo "$before") <(status) | head -10; fi
if [ "$(results)" = "$results_before" ]; then
	pass "BUILD/bench-results is byte for byte what it was"
else
	fail "the runs changed BUILD/bench-results (make bench's results):"
	diff <(echo "$results_before") <(results) | head -10
fi

JSON=$WORK/out/bench.json
cp "$SRC/README.md" "$WORK/README.md"
if $PY "$RUN" --publish "$JSON" --readme "$WORK/README.md" >"$WORK/pub0.log" 2>&1; then
	fail "--publish accepted a quick run's JSON"
elif cmp -s "$SRC/README.md" "$WORK/README.md"; then
	pass "--publish refuses a quick run (exit 1, README untouched)"
else
	fail "--publish refused but changed the README"
fi

if $PY "$RUN" --publish "$JSON" --readme "$WORK/README.md" --allow-quick >"$WORK/pub1.log" 2>&1; then
	pass "--publish --allow-quick --readme COPY"
else
	fail "--publish:"; sed 's/^/    /' "$WORK/pub1.log"
fi
# Outside the block, the copy is the README as it was; inside, one row
# per target (text table rows of run.py's own listing) with the JSON's
# figures.
$PY - "$SRC/README.md" "$WORK/README.md" "$JSON" <<'PYEOF' || fails=$((fails + 1))
import json, re, sys
old, new, data = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
B, E = "<!-- bench:begin", "<!-- bench:end -->"
def split(t):
    a = t.index(B); b = t.index(E, a)
    return t[:a], t[a:b], t[b:]
oa, ob, oc = split(old)
na, nb, nc = split(new)
bad = 0
def check(cond, msg):
    global bad
    print(("ok:   " if cond else "FAIL: ") + msg)
    bad += not cond
check(oa == na and oc == nc, "only the block between the bench markers changed")
rows = [l for l in nb.splitlines() if l.startswith("| ") and not l.startswith("| bench |")]
want = [(size, t) for size, s in data["B7"]["sizes"].items() for t in s["targets"]]
b7 = [l for l in rows if l.startswith("| B7 |")]
check(len(b7) == len(want) and len(want) > 0,
      "%d B7 rows for the JSON's %d targets" % (len(b7), len(want)))
for (size, t), line in zip(want, b7):
    cells = [c.strip() for c in line.strip("|").split("|")]
    measured = "%.2fx (saving %.1f%%)" % (t["ratio"], t["saving_pct"])
    verdict = "PASS" if t["pass"] else "MISS"
    check(cells == ["B7", size + " B", t["target"], measured, verdict],
          "row %s matches the JSON (%s)" % (cells, measured))
check(any(l.startswith("| B-meta |") and "report" in l for l in rows),
      "B-meta (no target) has its report row")
check("(quick mode)" in nb and data["machine"]["git_commit"][:10] in nb,
      "the block names the mode and the commit")
sys.exit(1 if bad else 0)
PYEOF
cp "$WORK/README.md" "$WORK/README.once"
$PY "$RUN" --publish "$JSON" --readme "$WORK/README.md" --allow-quick >"$WORK/pub2.log" 2>&1
if cmp -s "$WORK/README.md" "$WORK/README.once" && grep -q "already shows" "$WORK/pub2.log"; then
	pass "publishing the same JSON again changes nothing"
else
	fail "second publish changed the README or said:"; sed 's/^/    /' "$WORK/pub2.log"
fi

if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "bench results and publishing: all checks passed"
