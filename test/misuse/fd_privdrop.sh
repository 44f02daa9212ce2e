# Issue 25, item 8 (c): a root process publishes, then drops privileges
# (setuid, or seteuid and back). The publisher can no longer write root's
# directory: it says so once, stops, and lets go of its lock, so root's
# next sweep (here a publisher's start) removes the files it could not; after
# seteuid back to root the exit removes them itself.
. "$(dirname "$0")/lib.sh" "$@"
[ "$(id -u)" = 0 ] || { echo "skipped: needs root"; exit 77; }
trap 'exec 3>&- 2>/dev/null; rm -rf "$T"' EXIT
D=$T/root/uslub-0
mkdir "$T/root" || exit 1
export USLUB_PUBLISH_ROOT="$T/root"

for how in setuid seteuid; do
	rm -f "$T/in" "$T/out" "$T/err"
	mkfifo "$T/in" || exit 1
	USLUB_PUBLISH_MS=20 LD_PRELOAD="$MALLOC_LIB" "$PROG" drop $how <"$T/in" >"$T/out" 2>"$T/err" &
	bg=$!
	exec 3>"$T/in"
	for i in $(seq 500); do
		grep -q 'euid changed' "$T/err" 2>/dev/null && break
		kill -0 $bg 2>/dev/null || break
		sleep 0.01
	done
	grep -q 'euid changed from 0 to 65534' "$T/err" || { exec 3>&-; wait $bg; fail "no message after the drop"; }
	pid=$(cat "$T/out")
	if [ $how = setuid ]; then
		# The lock is let go: the start sweep of root's next publisher
		# takes the files now, while the program still runs.
		USLUB_PUBLISH_MS=20 LD_PRELOAD="$MALLOC_LIB" "$PROG" wait >/dev/null 2>"$T/err2" ||
			fail "root's next publisher: $(cat "$T/err2")"
		[ -e "$D/$pid.txt" ] || [ -e "$D/$pid.lock" ] && fail "root's sweep left the files"
	fi
	exec 3>&-
	wait $bg || fail "the program exited with $?"
	left=$(ls -A "$D")
	[ -z "$left" ] || fail "left in root's directory after exit: $left"
	n=$(grep -c 'euid changed' "$T/err")
	[ "$n" = 1 ] || fail "said $n times (want 1)"
done
echo "ok: a privilege drop is said once and root's files are removed"
