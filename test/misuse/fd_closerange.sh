# Issue 25, item 1 (a, b): a daemon closes every inherited descriptor
# (close_range(3, ~0U, 0)) and opens its own data directory at the number
# the publisher kept for its directory; the directory holds files named like
# snapshots without a .lock (1.txt, 2024.json, 7.txt). None of them is
# touched (neither by the parent's publisher nor by the start sweep of a
# fork child's, which inherits the number); the snapshots keep going to the
# publish root; the publisher says once what happened; at exit every
# <pid>.* file of parent and child is gone from the publish root.
. "$(dirname "$0")/lib.sh" "$@"

mkdir "$T/root" "$T/data" || exit 1
printf 'one\n' >"$T/data/1.txt"
printf '{"year":2024}\n' >"$T/data/2024.json"
printf 'seven\n' >"$T/data/7.txt"
(cd "$T/data" && ls -A && cat ./*) >"$T/before"

USLUB_PUBLISH_MS=20 USLUB_PUBLISH_ROOT="$T/root" LD_PRELOAD="$MALLOC_LIB" \
	"$PROG" closerange "$T/data" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "the program exited with $rc (3: no fresh snapshot after close_range)"
(cd "$T/data" && ls -A && cat ./*) >"$T/after"
cmp -s "$T/before" "$T/after" || fail "the program's directory changed: $(diff "$T/before" "$T/after" | tr '\n' ' ')"
read -r parent child <"$T/out" || fail "no pids from the program"
left=$(ls -A "$T/root/uslub-$(id -u)")
[ -z "$left" ] || fail "left in the publish root after exit: $left"
n=$(grep -c 'the program closed or reused fd' "$T/err")
[ "$n" = 1 ] || fail "said $n times that the descriptors were taken (want 1)"
echo "ok: data directory untouched, snapshots went on in the publish root, nothing left (parent $parent, child $child)"
