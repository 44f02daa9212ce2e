#!/bin/bash
# The cost of allocation profiling under LD_PRELOAD (`uslub run`), on real
# programs: wall time of each workload with profiling off
# (USLUB_PROFILING=0), sampled (--profile=sample), exact (--profile) and
# exact with the report at exit (--report --profile: allocinfo's call sites
# resolved with dladdr in the process and addr2line in the tool), as
# medians of N interleaved runs (off, sample, exact, report, off, ...) of
# the wall time and of the CPU time (user + sys: steadier on a loaded
# machine), and each mode's ratio to off. Workloads: python3's json (the README's example) and,
# when sqlite3 is installed, an in-memory sqlite3 build-index-and-query.
# Prints a table; writes nothing.
#
#   bench/profile_cost.sh [USLUB_TOOL] [N]      (default build/uslub, 5)
set -u
tool=${1:-build/uslub}
n=${2:-5}
py=$(command -v python3.11 || command -v python3)
py=$(readlink -f "$py")            # the interpreter, not a wrapper script
sql="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
INSERT INTO t SELECT x, hex(randomblob(16)), x % 97 FROM c;
CREATE INDEX ti ON t(b); SELECT c, count(*), max(b) FROM t GROUP BY c ORDER BY 2 DESC LIMIT 1;"
run_py() { "$tool" run $1 -- "$py" -c 'import json; print(len(json.dumps({i: str(i) * 8 for i in range(200000)})))'; }
run_sql() { "$tool" run $1 -- sqlite3 :memory: "CREATE TABLE t(a, b, c); $sql"; }

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

measure() {     # NAME FN
	local name=$1 fn=$2 mode i r u y
	declare -A wall cpu
	for ((i = 0; i < n; i++)); do
		for mode in off sample exact report; do
			case $mode in
			off) opt=;; sample) opt=--profile=sample;; exact) opt=--profile;;
			report) opt="--report --profile";;
			esac
			read -r r u y < <( { TIMEFORMAT='%3R %3U %3S'
				if [ $mode = off ]; then
					time USLUB_PROFILING=0 $fn "" >/dev/null 2>&1
				else
					time $fn "$opt" >/dev/null 2>&1
				fi; } 2>&1 )
			wall[$mode]+="$r "
			cpu[$mode]+="$(awk -v u="$u" -v y="$y" 'BEGIN { print u + y }') "
		done
	done
	local m line="$name"
	for m in off sample exact report; do
		local w c
		w=$(echo ${wall[$m]} | tr ' ' '\n' | median)
		c=$(echo ${cpu[$m]} | tr ' ' '\n' | median)
		line+=" $m $w $c"
	done
	echo "$line" | awk '{
		printf "%-8s wall (s): off %.3f  sample %.3f %.2fx  exact %.3f %.2fx  exact+report %.3f %.2fx\n",
		       $1, $3, $6, $6 / $3, $9, $9 / $3, $12, $12 / $3
		printf "%-8s cpu  (s): off %.3f  sample %.3f %.2fx  exact %.3f %.2fx  exact+report %.3f %.2fx\n",
		       "", $4, $7, $7 / $4, $10, $10 / $4, $13, $13 / $4 }'
}
echo "profiling cost under uslub run ($tool), medians of $n interleaved runs, $(nproc) cpus"
measure python3 run_py
if command -v sqlite3 >/dev/null; then
	measure sqlite3 run_sql
else
	echo "sqlite3: not installed, skipped"
fi
