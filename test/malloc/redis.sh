#!/usr/bin/env bash
# malloc_redis: a long-running multithreaded server on uslub under load
# from its own client. redis-server runs with libuslub-malloc LD_PRELOADed
# on 127.0.0.1 (a free port), 4 I/O threads that also read and parse
# queries (so argv objects are allocated on the I/O threads and freed on
# the main thread), no persistence, in a temp dir. While redis-benchmark
# drives it (50 clients, pipelines of 16: set, get, incr, lpush, lpop,
# hset, sadd, random keys), a data check writes about 500 strings of 1 B
# to 64 KiB of binary data (every size class, the page runs above 8 KiB),
# APPENDs to a third of them (realloc across classes), deletes and
# rewrites others, builds a list, a hash and a sorted set, and reads all
# of it back byte for byte (redis-cli --raw against what it wrote), again
# once the benchmark is done. Then FLUSHALL ASYNC (the lazyfree thread
# frees what the other threads allocated) and SHUTDOWN NOSAVE.
#
# Checks: every step's exit status and output; the server answered as
# our own process (INFO process_id), ran the benchmark's commands, used
# its I/O threads (io_threaded_reads_processed > 0); it exited 0; nothing
# on its stderr from uslub; the USLUB_REPORT written at its exit says
# "errors reported: 0" and that malloc's size-class caches served at least
# as many allocations as the benchmark sent requests, some of them from
# the classes above 8 KiB (values up to 64 KiB). (redis rewrites its argv and
# environ area with its process title: USLUB_REPORT is read at exit from
# uslub's copy of the environment, which this test checks too.) (Debian's redis links
# libjemalloc.so.2 but calls it through the plain malloc/calloc/realloc/
# free/malloc_usable_size names, which the preload takes over; it calls
# jemalloc itself only for mallctl/nallocx/malloc_stats_print, which
# allocate nothing of redis's: INFO memory's allocator_allocated, from
# jemalloc, stays at a few KiB while used_memory, measured through
# malloc_usable_size, is megabytes. Both are printed.)
#
# usage: redis.sh LIBUSLUB_MALLOC
# (REDIS_TEST_REQUESTS: requests per benchmark test, default 25000;
# REDIS_TEST_IOTHREADS: io-threads, default 4)
# Exit 0 on success, 1 on a failure, 77 (skip) when redis is not
# installed (scripts/install-deps.sh installs redis-tools).
set -u
lib=${1:?usage: redis.sh LIBUSLUB_MALLOC}
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
[ -f "$lib" ] || { echo "FAIL: $lib does not exist" >&2; exit 1; }
unset LD_PRELOAD USLUB_REPORT
export LC_ALL=C

REQUESTS=${REDIS_TEST_REQUESTS:-25000}   # per benchmark test (7 tests)
TESTS=set,get,incr,lpush,lpop,hset,sadd
NTESTS=7

# Debian: /usr/bin/redis-server (package redis-server) is a link to
# redis-check-rdb (package redis-tools), one binary that picks its role
# from argv[0]. Without the redis-server package, run redis-check-rdb
# through a link named redis-server.
server_bin=$(command -v redis-server || command -v redis-check-rdb || true)
cli=$(command -v redis-cli || true)
bench=$(command -v redis-benchmark || true)
if [ -z "$server_bin" ] || [ -z "$cli" ] || [ -z "$bench" ]; then
	echo "SKIP: redis-server/redis-check-rdb, redis-cli or redis-benchmark not installed" \
		"(scripts/install-deps.sh installs redis-tools)"
	exit 77
fi
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "FAIL: python3 is required (scripts/install-deps.sh installs it)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/uslub-redis.XXXXXX") || exit 1
srv_pid= bench_pid=
# children_of PID: their pids, from /proc (procps may be missing)
children_of() {
	local f l
	for f in /proc/[0-9]*/stat; do
		# pid (comm) state ppid ...; comm may hold blanks and parentheses
		read -r l <"$f" 2>/dev/null || continue
		l=${l##*) }
		l=${l#* }
		[ "${l%% *}" = "$1" ] && { f=${f#/proc/}; echo "${f%/stat}"; }
	done
}
cleanup() {
	[ -n "$bench_pid" ] && kill -9 "$bench_pid" 2>/dev/null
	if [ -n "$srv_pid" ] && kill -0 "$srv_pid" 2>/dev/null; then
		# redis (the child of our timeout), then timeout
		for c in $(children_of "$srv_pid"); do kill -9 "$c" 2>/dev/null; done
		kill -9 "$srv_pid" 2>/dev/null
	fi
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
ln -s "$server_bin" "$tmp/redis-server"

t0=$SECONDS
fail() {
	echo "FAIL: $*" >&2
	for f in server.log server.err bench.out; do
		[ -s "$tmp/$f" ] && { echo "--- $f (end):" >&2; tail -c 3000 "$tmp/$f" | tr '\r' '\n' >&2; }
	done
	exit 1
}
rcli() { timeout 60 "$cli" -h 127.0.0.1 -p "$port" "$@"; }
info() { rcli INFO "$1" | tr -d '\r' | sed -n "s/^$2://p"; }

# ---------------------------------------------------------------- start
# A free port: the kernel picks one; another test may take it before
# redis binds, so a bind failure retries with the next pick.
for attempt in 1 2 3 4 5; do
	port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
		fail "python3 could not find a free port"
	# timeout: the server cannot outlive a killed test by much
	timeout -k 5 240 env LD_PRELOAD="$lib" USLUB_REPORT="$tmp/report" \
		"$tmp/redis-server" --port "$port" --bind 127.0.0.1 --protected-mode yes \
		--save '' --appendonly no --dir "$tmp" --daemonize no \
		--logfile "$tmp/server.log" --io-threads ${REDIS_TEST_IOTHREADS:-4} --io-threads-do-reads yes \
		--lazyfree-lazy-user-flush yes \
		>"$tmp/server.out" 2>"$tmp/server.err" &
	srv_pid=$!
	up=0
	for i in $(seq 1 300); do    # 30 s: a loaded machine starts slowly
		kill -0 "$srv_pid" 2>/dev/null || break
		if [ "$(timeout 5 "$cli" -h 127.0.0.1 -p "$port" PING 2>/dev/null)" = PONG ]; then
			up=1
			break
		fi
		sleep 0.1
	done
	[ $up = 1 ] && break
	if ! kill -0 "$srv_pid" 2>/dev/null && grep -q 'Address already in use' "$tmp/server.log" 2>/dev/null; then
		wait "$srv_pid" 2>/dev/null
		srv_pid=
		echo "port $port taken before redis bound it; another"
		continue
	fi
	fail "redis-server did not come up on 127.0.0.1:$port"
done
[ $up = 1 ] || fail "no free port after 5 tries"
# The server that answers is ours: its pid is timeout's child.
rpid=$(info server process_id)
[ -n "$rpid" ] && [ "$(children_of "$srv_pid")" = "$rpid" ] ||
	fail "the server on port $port (pid ${rpid:-?}) is not the one started here"
version=$(info server redis_version)
echo "redis $version (pid $rpid) on 127.0.0.1:$port, $(info memory mem_allocator) linked, uslub preloaded ($((SECONDS - t0)) s)"
case $version in [0-5].*) fail "redis $version: io-threads need redis >= 6" ;; esac
[ "$(rcli CONFIG GET io-threads | tail -1)" = ${REDIS_TEST_IOTHREADS:-4} ] || fail "io-threads is not ${REDIS_TEST_IOTHREADS:-4}"

# ----------------------------------------------------------- data set
# cmds.resp: the writes (RESP for redis-cli --pipe); read.txt: the reads
# (one command a line); expect.out: what redis-cli --raw prints for them.
"$PY" - "$tmp" <<'EOF' || fail "generating the data set"
import random, sys
d = sys.argv[1]
rnd = random.Random(20261126)
pool = bytes(rnd.getrandbits(8) for _ in range(1 << 17)) * 2
def blob(n):
    off = rnd.randrange(1 << 17)
    return pool[off:off + n]
# sizes: 1..80 each, then every 4 % up to 64 KiB, then around each power of
# two (and the same less sds headers), then random
sizes = list(range(1, 81))
s = 80.0
while s < 65536:
    s *= 1.04
    sizes.append(min(int(s), 65536))
for k in range(3, 17):
    for delta in ((-17, -9, -5, -3, -2, -1, 0, 1, 2) if k < 13 else (-9, -1, 0)):
        sizes.append(max(1, min((1 << k) + delta, 65536)))
sizes += [rnd.choice((rnd.randrange(1, 512), rnd.randrange(1, 8192), rnd.randrange(1, 65537)))
          for _ in range(150)]
out = []
def cmd(*args):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in args]
    out.append(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
val = {}
keys = ["uslub:s:%d" % i for i in range(len(sizes))]
for k, n in zip(keys, sizes):
    val[k] = blob(n)
    cmd("SET", k, val[k])
for i, k in enumerate(keys):
    if i % 3 == 0:      # grow: realloc into another class
        extra = blob(rnd.choice((1, 7, 100, 3000, 12000)))
        val[k] += extra
        cmd("APPEND", k, extra)
    elif i % 5 == 1:    # gone
        del val[k]
        cmd("DEL", k)
    elif i % 7 == 2:    # replaced by a value of another size
        val[k] = blob(rnd.randrange(1, 16384))
        cmd("SET", k, val[k])
lst = [blob(rnd.randrange(1, 300)) for _ in range(2000)]
for i in range(0, len(lst), 100):
    cmd("RPUSH", "uslub:list", *lst[i:i + 100])
fields = ["f%d" % i for i in range(1000)]
hval = {f: blob(rnd.randrange(1, 200)) for f in fields}
for i in range(0, len(fields), 100):
    cmd("HSET", "uslub:hash", *[x for f in fields[i:i + 100] for x in (f, hval[f])])
zmem = ["m%05d" % i for i in range(1500)]
for i in range(0, len(zmem), 100):
    cmd("ZADD", "uslub:zset", *[x for j, m in enumerate(zmem[i:i + 100]) for x in (i + j, m)])
open(d + "/cmds.resp", "wb").write(b"".join(out))
with open(d + "/read.txt", "w") as f:
    f.write("MGET " + " ".join(keys) + "\n")
    f.write("LRANGE uslub:list 0 -1\n")
    f.write("HMGET uslub:hash " + " ".join(fields) + "\n")
    f.write("ZRANGE uslub:zset 0 -1 WITHSCORES\n")
    f.write("LLEN uslub:list\nHLEN uslub:hash\nZCARD uslub:zset\n")
with open(d + "/expect.out", "wb") as f:
    f.write(b"".join(val.get(k, b"") + b"\n" for k in keys))
    f.write(b"".join(v + b"\n" for v in lst))
    f.write(b"".join(hval[x] + b"\n" for x in fields))
    f.write(b"".join(b"%s\n%d\n" % (m.encode(), j) for j, m in enumerate(zmem)))
    f.write(b"%d\n%d\n%d\n" % (len(lst), len(fields), len(zmem)))
print("data set: %d strings (%d bytes), %d writes" % (len(keys), sum(map(len, val.values())), len(out)))
EOF

check_data() { # WHEN
	rcli --raw <"$tmp/read.txt" >"$tmp/read.out" 2>"$tmp/read.err" ||
		fail "reading the data set back ($1): redis-cli exited $?: $(head -c 300 "$tmp/read.err")"
	cmp -s "$tmp/read.out" "$tmp/expect.out" ||
		fail "the data set read back ($1) differs from what was written: $(cmp "$tmp/read.out" "$tmp/expect.out" 2>&1)"
	echo "data set read back ($1): $(wc -c <"$tmp/read.out") bytes, identical ($((SECONDS - t0)) s)"
}

# --------------------------------------------- load, and data under it
timeout 150 "$bench" -h 127.0.0.1 -p "$port" -q -n "$REQUESTS" -c 50 -P 16 -r 100000 -d 100 \
	-t "$TESTS" >"$tmp/bench.out" 2>&1 &
bench_pid=$!
rcli --pipe <"$tmp/cmds.resp" >"$tmp/pipe.out" 2>&1 || fail "redis-cli --pipe exited $?: $(tail -3 "$tmp/pipe.out")"
grep -q '^errors: 0, replies: ' "$tmp/pipe.out" || fail "redis-cli --pipe: $(tail -3 "$tmp/pipe.out")"
echo "data set written under load: $(tr -d '\r' <"$tmp/pipe.out" | tail -1) ($((SECONDS - t0)) s)"
check_data "under load"
wait "$bench_pid"
rc=$?
bench_pid=
[ $rc = 0 ] || fail "redis-benchmark exited $rc"
tr '\r' '\n' <"$tmp/bench.out" | grep -E '^[A-Z]+: [0-9.]+ requests per second' >"$tmp/bench.res"
[ "$(wc -l <"$tmp/bench.res")" = $NTESTS ] || fail "redis-benchmark: $NTESTS results expected"
echo "redis-benchmark, $REQUESTS requests per test ($((SECONDS - t0)) s):"
sed 's/^/    /' "$tmp/bench.res"
check_data "after the load"

cmds=$(info stats total_commands_processed)
reads=$(info stats io_threaded_reads_processed)
writes=$(info stats io_threaded_writes_processed)
used=$(info memory used_memory)
jem=$(info memory allocator_allocated)
echo "server: $cmds commands; I/O threads: $reads reads, $writes writes; used_memory $used bytes" \
	"(via malloc_usable_size), jemalloc's allocator_allocated ${jem:-n/a}"
[ "${cmds:-0}" -ge $((REQUESTS * NTESTS)) ] || fail "the server processed $cmds commands, < $((REQUESTS * NTESTS))"
[ "${reads:-0}" -gt 0 ] || fail "the I/O threads read nothing (io_threaded_reads_processed=$reads)"

# ------------------------------------------------ lazy free, shutdown
[ "$(rcli FLUSHALL ASYNC)" = OK ] || fail "FLUSHALL ASYNC"
for i in $(seq 1 300); do
	[ "$(info memory lazyfree_pending_objects)" = 0 ] && [ "$(rcli DBSIZE)" = 0 ] && break
	sleep 0.1
done
[ "$(info memory lazyfree_pending_objects)" = 0 ] || fail "lazy free did not finish"
rcli SHUTDOWN NOSAVE >/dev/null 2>&1     # no reply: the connection closes
wait "$srv_pid"
rc=$?
srv_pid=
[ $rc = 0 ] || fail "redis-server exited $rc (124: killed by timeout)"
grep -q 'ready to exit, bye bye' "$tmp/server.log" || fail "redis-server did not log a clean exit"
if grep -q 'uslub' "$tmp/server.err" "$tmp/server.out"; then
	fail "uslub wrote to the server's stderr: $(grep -h uslub "$tmp/server.err" "$tmp/server.out" | head -5)"
fi
[ -s "$tmp/report" ] || fail "no USLUB_REPORT written at the server's exit (was uslub loaded?)"
grep -qx 'errors reported: 0' "$tmp/report" ||
	fail "uslub reported errors: $(grep '^errors reported' "$tmp/report")"
# allocations served by malloc's size-class caches, from their stats; and
# those of the classes above 8 KiB (object size, column 4)
count_allocs() {
	awk -v min="$1" '/^malloc-/ { k = ($4 > min); next } /^[^ ]/ { k = 0 }
		k { for (i = 1; i <= NF; i++) if ($i ~ /^ALLOC_(FAST|SLOW)PATH=/) { sub(/.*=/, "", $i); n += $i } }
		END { print n + 0 }' "$tmp/report"
}
allocs=$(count_allocs 0)
mid=$(count_allocs 8192)
echo "uslub at the server's exit: $allocs allocations from malloc's caches ($mid above 8 KiB), errors reported: 0"
[ "$allocs" -ge $((REQUESTS * NTESTS)) ] ||
	fail "malloc's caches served $allocs allocations, fewer than the $((REQUESTS * NTESTS)) requests: redis does not allocate through uslub"
[ "$mid" -gt 0 ] || fail "no allocation from a malloc class above 8 KiB (values up to 64 KiB were stored)"
echo "PASS ($((SECONDS - t0)) s)"
