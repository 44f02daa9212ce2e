#!/usr/bin/env bash
# malloc_programs: real programs from Debian packages with libuslub-malloc
# LD_PRELOADed, each compared with a plain run of the same command:
#   python3 (allocation-heavy: dicts, lists, strings, big ints, json round
#     trip, sorting; once with pymalloc, once with PYTHONMALLOC=malloc so
#     that every object goes through malloc; and a threaded run:
#     ThreadPoolExecutor + producer/consumer threads handing objects over),
#   python3 ending with exit status 3,
#   sqlite3 (50k rows built, indexed, updated, deleted, aggregated,
#     integrity_check),
#   sort --parallel=4 with a small buffer (threads and merges),
#   xz -T4 compress and decompress, gzip, tar (when installed),
#   perl (hashes, regexes, sorting),
#   cmake -P (a C++ program: lists, strings, regexes, hashes),
#   c++ -O2 -S of an STL-heavy file (the driver and cc1plus, a C++
#     program, under LD_PRELOAD; the assembly compared).
# For each: the same exit status, the same stdout byte for byte, the same
# stderr, a non-empty output, and proof that uslub served it: the run with
# USLUB_REPORT=<file> leaves a slabinfo report at exit that names kmalloc
# caches.
#
# usage: programs.sh LIBUSLUB_MALLOC [CMAKE]
# Exit 0 when every case passed, 1 on a failure, 77 when nothing could run.
# python3 and sqlite3 are required (scripts/install-deps.sh installs them);
# the other programs are skipped when missing.
set -u
lib=${1:?usage: programs.sh LIBUSLUB_MALLOC [CMAKE]}
cmake_bin=${2:-$(command -v cmake || true)}
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
if [ ! -f "$lib" ]; then
	echo "FAIL: $lib does not exist" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/uslub-programs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
unset LD_PRELOAD USLUB_REPORT

if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3 || true); fi
SQLITE=$(command -v sqlite3 || true)

passed=0 failed=0 skipped=0

fail() {
	echo "FAIL: $*" >&2
	failed=$((failed + 1))
}

# run_case NAME EXPECTED_RC STDIN CMD...: the command plain, then under
# LD_PRELOAD with USLUB_REPORT, with STDIN (a file, or - for /dev/null).
run_case() {
	local name=$1 want=$2 in=$3
	shift 3
	[ "$in" = - ] && in=/dev/null
	local d=$tmp/$name
	mkdir -p "$d"
	local t0=$SECONDS
	"$@" <"$in" >"$d/plain.out" 2>"$d/plain.err"
	local rc_plain=$?
	LD_PRELOAD=$lib USLUB_REPORT=$d/report "$@" <"$in" >"$d/uslub.out" 2>"$d/uslub.err"
	local rc_uslub=$?
	local ok=1
	if [ "$rc_plain" != "$want" ]; then
		fail "$name: the plain run exited $rc_plain (expected $want): a broken case, stderr:"
		head -c 2000 "$d/plain.err" >&2
		return
	fi
	if [ ! -s "$d/plain.out" ]; then
		fail "$name: the plain run printed nothing"
		return
	fi
	if [ "$rc_uslub" != "$rc_plain" ]; then
		fail "$name: exit status $rc_uslub under uslub, $rc_plain plain"
		ok=0
	fi
	if ! cmp -s "$d/plain.out" "$d/uslub.out"; then
		fail "$name: stdout differs under uslub ($(wc -c <"$d/uslub.out") vs $(wc -c <"$d/plain.out") bytes)"
		if [ "$(wc -c <"$d/plain.out")" -lt 100000 ]; then
			diff "$d/plain.out" "$d/uslub.out" | head -20 >&2
		else
			cmp "$d/plain.out" "$d/uslub.out" >&2
		fi
		ok=0
	fi
	if ! cmp -s "$d/plain.err" "$d/uslub.err"; then
		fail "$name: stderr differs under uslub:"
		diff "$d/plain.err" "$d/uslub.err" | head -20 >&2
		ok=0
	fi
	if [ ! -s "$d/report" ]; then
		fail "$name: no USLUB_REPORT file written at exit (was uslub loaded?)"
		ok=0
	elif ! grep -qE '^malloc-[0-9k]+ +[1-9]' "$d/report"; then
		fail "$name: the USLUB_REPORT file shows no malloc class cache in use:"
		head -5 "$d/report" >&2
		ok=0
	fi
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
		echo "ok   $name ($((SECONDS - t0)) s, $(wc -c <"$d/plain.out") bytes of output)"
	fi
}

skip() {
	echo "skip $1: $2 not installed"
	skipped=$((skipped + 1))
}

# ---------------------------------------------------------------- python3
cat >"$tmp/heavy.py" <<'EOF'
import hashlib, json, sys
h = hashlib.sha256()
# dicts of lists, strings, nested dicts
d = {}
for i in range(60000):
    d["k%d" % i] = [i, str(i) * (i % 7 + 1), {"sq": i * i, "s": "x" * (i % 50)}]
for i in range(0, 60000, 3):
    del d["k%d" % i]
h.update(repr(sorted(d.items())[:1000]).encode())
# list growth, slicing, sorting, string building
lst = [(i * 7919) % 100003 for i in range(200000)]
lst.sort()
h.update(bytes(str(lst[::997]), "ascii"))
parts = []
for i in range(50000):
    parts.append("%x-%s" % (i, "abc" * (i % 13)))
s = "|".join(parts)
h.update(s.encode())
h.update(s.upper().replace("A", "aa").encode())
# big ints
f = 1
for i in range(2, 3000):
    f *= i
h.update(hex(f).encode())
p = pow(3, 20000) - pow(7, 9000)
h.update(hex(p % (1 << 4000)).encode())
# json round trip
doc = {"items": [{"id": i, "name": "n%d" % i, "tags": ["t%d" % (i % 17)] * (i % 5),
                  "v": i / 7} for i in range(20000)]}
text = json.dumps(doc, sort_keys=True)
back = json.loads(text)
assert back == doc
h.update(text.encode())
# sets, tuples, bytes
st = {(i % 1000, str(i % 333)) for i in range(100000)}
h.update(str(len(st)).encode())
b = bytearray()
for i in range(20000):
    b += bytes([i % 256]) * (i % 11)
h.update(hashlib.md5(b).digest())
print(len(d), len(lst), len(s), f.bit_length(), len(text), len(st), len(b))
print(h.hexdigest())
EOF

cat >"$tmp/threads.py" <<'EOF'
import hashlib, json, queue, random, threading
from concurrent.futures import ThreadPoolExecutor

def work(i):
    rnd = random.Random(i)
    data = [str(rnd.random()) * (i % 5 + 1) for _ in range(1500)]
    d = {s: [len(s), s[::-1]] for s in data}
    blob = json.dumps(d, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()

with ThreadPoolExecutor(max_workers=8) as ex:
    results = list(ex.map(work, range(160)))
print(hashlib.sha256("".join(results).encode()).hexdigest())

# producers build objects, consumers (other threads) check and drop them
q = queue.Queue(maxsize=256)
sums = [0] * 4
def producer(k):
    for i in range(15000):
        q.put((k, i, [i] * (i % 20), "p%d-%d" % (k, i) * (i % 4)))
    q.put(None)
def consumer(k):
    while True:
        item = q.get()
        if item is None:
            break
        pk, i, lst, s = item
        assert len(lst) == i % 20 and all(x == i for x in lst)
        sums[k] += pk * 1000003 + i + len(s)
ps = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
cs = [threading.Thread(target=consumer, args=(k,)) for k in range(4)]
for t in ps + cs:
    t.start()
for t in ps + cs:
    t.join()
print(sum(sums))
EOF

if [ -n "$PY" ]; then
	run_case python_heavy 0 - "$PY" -s "$tmp/heavy.py"
	run_case python_heavy_pymalloc_off 0 - env PYTHONMALLOC=malloc "$PY" -s "$tmp/heavy.py"
	run_case python_threads 0 - env PYTHONMALLOC=malloc "$PY" -s "$tmp/threads.py"
	run_case python_exit3 3 - "$PY" -s -c 'import sys; x = [str(i) for i in range(100000)]; print(len(x)); sys.exit(3)'
else
	fail "python3 is required (scripts/install-deps.sh installs it)"
fi

# ---------------------------------------------------------------- sqlite3
cat >"$tmp/db.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 50000)
INSERT INTO t SELECT x, (x * 7919) % 1000,
       printf('%08d-%s', (x * 104729) % 99991, substr('abcdefghijklmnop', x % 16 + 1)),
       x * 0.5 FROM n;
CREATE INDEX ia ON t(a);
CREATE INDEX ib ON t(b);
SELECT count(*), sum(a), min(b), max(b), round(avg(c), 3) FROM t;
SELECT a, count(*), sum(c) FROM t GROUP BY a ORDER BY 2 DESC, 1 LIMIT 5;
SELECT group_concat(b, ',') FROM (SELECT b FROM t WHERE a = 7 ORDER BY b LIMIT 20);
UPDATE t SET b = b || b || b WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
CREATE TABLE u AS SELECT a, group_concat(b) AS g FROM t GROUP BY a;
SELECT count(*), sum(length(b)), max(length(g)) FROM t, (SELECT max(g) AS g FROM u);
SELECT t.a, count(*) FROM t JOIN u ON u.a = t.a WHERE t.b LIKE '%abc%' GROUP BY t.a ORDER BY t.a LIMIT 5;
SELECT b FROM t ORDER BY b DESC LIMIT 3;
PRAGMA integrity_check;
EOF
if [ -n "$SQLITE" ]; then
	run_case sqlite3 0 "$tmp/db.sql" "$SQLITE"
else
	fail "sqlite3 is required (scripts/install-deps.sh installs it)"
fi

# ------------------------------------------------- sort, xz, gzip, tar
awk 'BEGIN { x = 12345; for (i = 0; i < 300000; i++) {
	x = (x * 1103515245 + 12345) % 2147483648
	printf "%d %s line%d\n", x % 100000, substr("qwertyuiopasdfghjklzxcvbnm", x % 20 + 1, 6), i } }' \
	>"$tmp/lines.txt"
if command -v sort >/dev/null 2>&1; then
	run_case sort_parallel 0 - sort --parallel=4 -S 2M -T "$tmp" "$tmp/lines.txt"
	run_case sort_numeric 0 - sort --parallel=4 -S 4M -T "$tmp" -k1,1n -k2,2r "$tmp/lines.txt"
else
	skip sort sort
fi
if command -v xz >/dev/null 2>&1; then
	run_case xz_compress 0 - xz -T4 -3 --block-size=512KiB -c "$tmp/lines.txt"
	xz -T4 -3 --block-size=512KiB -c "$tmp/lines.txt" >"$tmp/lines.xz"
	run_case xz_decompress 0 - xz -T4 -d -c "$tmp/lines.xz"
else
	skip xz xz-utils
fi
if command -v gzip >/dev/null 2>&1; then
	run_case gzip 0 - gzip -6 -c "$tmp/lines.txt"
else
	skip gzip gzip
fi
if command -v tar >/dev/null 2>&1; then
	mkdir -p "$tmp/tree/a/b"
	for i in $(seq 1 50); do echo "file $i" >"$tmp/tree/a/f$i"; done
	cp "$tmp/heavy.py" "$tmp/db.sql" "$tmp/tree/a/b/"
	touch -d '2020-01-01 00:00:00' "$tmp/tree" "$tmp/tree/a" "$tmp/tree/a/b" "$tmp/tree/a"/* "$tmp/tree/a/b"/*
	run_case tar 0 - tar --sort=name --owner=0 --group=0 --numeric-owner -C "$tmp/tree" -cf - .
else
	skip tar tar
fi

# ---------------------------------------------------------------- perl
cat >"$tmp/heavy.pl" <<'EOF'
use strict; use warnings;
my %h; my @l;
for my $i (0 .. 80000) {
    my $k = sprintf("k%05d", ($i * 7919) % 100003);
    $h{$k} = [$i, "v" x ($i % 17), { n => $i }];
    push @l, $k if $i % 3;
}
delete $h{$_} for grep { /7$/ } keys %h;
my @s = sort { $a cmp $b } @l;
my $str = join(",", map { "$_=" . scalar(@{ $h{$_} || [] }) } @s[0 .. 999]);
(my $r = $str) =~ s/k(\d+)/<$1>/g;
my $big = join("", map { chr(65 + $_ % 26) x ($_ % 9) } 0 .. 40000);
my @words = split /(?<=Z)/, $big;
print scalar(keys %h), " ", scalar(@s), " ", length($r), " ", scalar(@words), "\n";
print unpack("%32C*", $str), " ", unpack("%32C*", $r), " ", unpack("%32C*", $big), "\n";
EOF
if command -v perl >/dev/null 2>&1; then
	run_case perl 0 - perl "$tmp/heavy.pl"
else
	skip perl perl
fi

# ------------------------------------------------------ cmake -P (C++)
cat >"$tmp/heavy.cmake" <<'EOF'
set(acc "")
set(L "")
foreach(i RANGE 1 2500)
  math(EXPR sq "${i} * ${i} % 9973")
  list(APPEND L "item-${sq}-${i}")
  string(APPEND acc "${i}:${sq},")
endforeach()
list(SORT L)
list(REVERSE L)
list(LENGTH L n)
list(REMOVE_DUPLICATES L)
list(LENGTH L nu)
string(SHA256 h "${acc}")
list(JOIN L ";" joined)
string(MD5 h2 "${joined}")
string(REGEX REPLACE "([0-9]+):" "<\\1>" r "${acc}")
string(LENGTH "${r}" rl)
string(TOUPPER "${joined}" up)
string(FIND "${up}" "ITEM-0-" pos)
file(WRITE "${OUT}" "${joined}")
file(READ "${OUT}" back)
string(COMPARE EQUAL "${back}" "${joined}" same)
message(STATUS "${n} ${nu} ${rl} ${pos} ${same}")
message(STATUS "${h}")
message(STATUS "${h2}")
EOF
if [ -n "$cmake_bin" ] && [ -x "$cmake_bin" ]; then
	run_case cmake_script 0 - "$cmake_bin" -DOUT="$tmp/cmake.txt" -P "$tmp/heavy.cmake"
else
	skip cmake_script cmake
fi

# ------------------------------------------- c++ -S (cc1plus: C++, GCC)
cat >"$tmp/stl.cc" <<'EOF'
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>
int f(int n)
{
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < n; i++)
		m[std::to_string(i)].push_back(i);
	int s = 0;
	for (auto &kv : m)
		s += std::accumulate(kv.second.begin(), kv.second.end(), 0);
	return s;
}
EOF
if command -v c++ >/dev/null 2>&1; then
	run_case cxx_compile 0 - c++ -O2 -S -o - "$tmp/stl.cc"
else
	skip cxx_compile c++
fi

echo "malloc_programs: $passed passed, $failed failed, $skipped skipped"
[ $failed -gt 0 ] && exit 1
[ $passed -eq 0 ] && exit 77
exit 0
