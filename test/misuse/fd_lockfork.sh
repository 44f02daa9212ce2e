# Issue 25, item 1 (c): the program dup2()s its own pipe over the number of
# the publisher's lock file and forks. The fork child's restart of the
# publisher must not close it (the child writes through it), the parent
# keeps publishing (it takes its lock again), says so once (not again in
# the child), and leaves nothing behind.
. "$(dirname "$0")/lib.sh" "$@"

mkdir "$T/root" || exit 1
USLUB_PUBLISH_MS=20 USLUB_PUBLISH_ROOT="$T/root" LD_PRELOAD="$MALLOC_LIB" \
	"$PROG" dup2lock >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "the program exited with $rc (4: the child could not write its pipe; 5: the pipe lost data)"
left=$(ls -A "$T/root/uslub-$(id -u)")
[ -z "$left" ] || fail "left in the publish root after exit: $left"
n=$(grep -c 'the program closed or reused fd' "$T/err")
[ "$n" = 1 ] || fail "said $n times that the lock descriptor was taken (want 1)"
echo "ok: the program's pipe at the old lock number stayed open in the child"
