# Issue 25, item 1 (e): a sweep deletes only what it proves is a stale
# uslub file (publish_dir.h, "What a sweep may delete"): a regular file of
# the directory's owner whose content starts with uslub's header for the
# pid in its name, of a process that is gone (no lock file), or whose lock
# file is stale; an empty temporary. A publisher's start sweep must leave
# alone files that only look like snapshots by name, a snapshot of a live
# process, another uid's file, a link, and a file next to a stale lock
# that is not a snapshot.
. "$(dirname "$0")/lib.sh" "$@"

D=$T/root/uslub-$(id -u)
mkdir -p "$T/root" && mkdir -m 700 "$D" || exit 1
sh -c 'exit 0' & dead=$!; wait $dead            # a pid that is gone
sh -c 'exit 0' & dead2=$!; wait $dead2
live=$$
live_start=$(sed 's/.*) //' /proc/$live/stat | cut -d' ' -f20)
hdr() { printf 'uslub pid %s (start time %s ticks), snapshot at 1.000\n' "$1" "$2"; }

# Kept: names of snapshots, not their content.
printf 'one\n' >"$D/1.txt"
printf '{"year":2024}\n' >"$D/2024.json"
printf 'seven\n' >"$D/7.txt"
# Kept: the snapshot of a live process (no lock file).
hdr $live "$live_start" >"$D/$live.txt"
# Kept: a link named like a snapshot, and what it points to.
printf 'precious\n' >"$T/victim"
ln -s "$T/victim" "$D/11.txt"
# Removed: the snapshots of a dead process, an empty temporary of it.
hdr $dead 12345 >"$D/$dead.txt"
printf '{"pid":%s,"start_time":12345,"time_ns":1}\n' $dead >"$D/$dead.json"
: >"$D/.$dead.txt.tmp"
# A stale lock: its snapshot goes, a file by a snapshot's name that is not
# one stays.
: >"$D/$dead2.lock"
hdr $dead2 1 >"$D/$dead2.txt"
printf 'not a snapshot\n' >"$D/$dead2.json"
# Kept (root only): a dead process's snapshot owned by another uid.
if [ "$(id -u)" = 0 ]; then
	dead3=$((dead2 + 100000))
	[ -d /proc/$dead3 ] || { hdr $dead3 1 >"$D/$dead3.txt"; chown 65534 "$D/$dead3.txt"; }
fi

USLUB_PUBLISH_MS=20 USLUB_PUBLISH_ROOT="$T/root" LD_PRELOAD="$MALLOC_LIB" \
	"$PROG" wait >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "the program exited with $rc"
for f in 1.txt 2024.json 7.txt $live.txt 11.txt $dead2.json ${dead3:+$dead3.txt}; do
	[ -e "$D/$f" ] || [ -L "$D/$f" ] || fail "the sweep removed $f"
done
[ "$(cat "$D/1.txt")" = one ] && [ "$(cat "$T/victim")" = precious ] || fail "content changed"
for f in $dead.txt $dead.json .$dead.txt.tmp $dead2.lock $dead2.txt; do
	[ -e "$D/$f" ] && fail "the sweep left the stale $f"
done
echo "ok: the sweep removed only proven stale snapshots"
