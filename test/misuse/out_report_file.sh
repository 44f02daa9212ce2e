#!/bin/bash
# misuse_out_report_file (issue 25, item 6): the report file is a name
# from the environment (USLUB_REPORT) or a flag (uslub run --report-file),
# often predictable (/tmp/report.%p): another user may have put a
# symbolic link, a hard link or a file of theirs there. uslub follows no
# symbolic link at the last component, writes no file owned by another
# user and no file with another hard link, truncates nothing it then
# refuses, and says why on stderr. A file it creates is 0600.
#
# Before the fix: fopen(path, "w") followed the link and truncated its
# target (a root-only 0600 file was overwritten).
#
#   out_report_file.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 tool=$2 prog=$3/misuse_prog_out_sites
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
chmod 711 "$T"
fail() { echo "FAIL: $*"; echo "--- stderr:"; head -c 2000 "$T/err"; echo; exit 1; }

# run REPORT-VALUE: a program under uslub with USLUB_REPORT (it ends with
# exit(), which writes the report); stderr in $T/err
run() { env -i PATH=/usr/bin:/bin LD_PRELOAD="$lib" USLUB_REPORT="$1" "$prog" 2>"$T/err" ||
	fail "USLUB_REPORT=$1: exit status $?"; }
# intact FILE TEXT: FILE still holds TEXT only
intact() { [ "$(cat "$1")" = "$2" ] || fail "$1 was written: $(head -c 200 "$1")"; }
says() { grep -q "$1" "$T/err" || fail "no message matching: $1"; }

# A file of the user's own, a symbolic link to it, a hard link to it.
echo secret >"$T/own"
chmod 600 "$T/own"
ln -s "$T/own" "$T/symlink"
ln "$T/own" "$T/hardlink"
run "$T/symlink"
intact "$T/own" secret
says "^uslub: USLUB_REPORT: cannot open \"$T/symlink\": it is a symbolic link, which uslub does not follow"
[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line on stderr"
run "$T/hardlink"
intact "$T/own" secret
says "^uslub: USLUB_REPORT: cannot open \"$T/hardlink\": it has 2 hard links"
rm "$T/hardlink"

# Another user's file (root only: chown), directly and through a link.
if [ "$(id -u)" = 0 ] && chown nobody "$T/own" 2>/dev/null; then
	uid=$(stat -c %u "$T/own")
	run "$T/own"
	intact "$T/own" secret
	says "^uslub: USLUB_REPORT: cannot open \"$T/own\": it belongs to uid $uid, not to this process's user (uid 0); left as it was$"
	run "$T/symlink"
	intact "$T/own" secret
	says "symbolic link"
	# uslub run --report-file takes the same path
	"$tool" run --report-file "$T/symlink" -- "$prog" 2>"$T/err" ||
		fail "uslub run --report-file: exit status $?"
	intact "$T/own" secret
	says "cannot open \"$T/symlink\": it is a symbolic link"
	"$tool" run --report-file "$T/own" -- "$prog" 2>"$T/err" ||
		fail "uslub run --report-file: exit status $?"
	intact "$T/own" secret
	says "cannot open \"$T/own\": it belongs to uid $uid"
	# a FIFO of another user's, with a reader (fd 9), is refused too
	mkfifo "$T/fifo" && chown nobody "$T/fifo"
	exec 9<>"$T/fifo"
	run "$T/fifo"
	exec 9<&-
	says "cannot open \"$T/fifo\": it belongs to uid $uid"
	# without a reader: opening it does not wait for one (O_NONBLOCK)
	run "$T/fifo"
	says "cannot open \"$T/fifo\": No such device or address"
else
	"$tool" run --report-file "$T/symlink" -- "$prog" 2>"$T/err" ||
		fail "uslub run --report-file: exit status $?"
	intact "$T/own" secret
	says "cannot open \"$T/symlink\": it is a symbolic link"
fi

# What works: a new file (0600), a file of the user's own (truncated,
# then written), a device (/dev/null), --report-file.
run "$T/new.%p"
f=$(ls "$T"/new.* 2>/dev/null | head -1)
[ -n "$f" ] && grep -q '^uslub report: pid ' "$f" || fail "no report in $T/new.PID"
[ "$(stat -c %a "$f")" = 600 ] || fail "$f created with mode $(stat -c %a "$f"), not 600"
[ ! -s "$T/err" ] || fail "a good USLUB_REPORT printed on stderr"
head -c 300000 /dev/zero | tr '\0' x >"$T/mine"
run "$T/mine"
grep -q '^uslub report: pid ' "$T/mine" || fail "no report in a file of the user's own"
grep -q xxxx "$T/mine" && fail "a file of the user's own was not truncated first"
run /dev/null
[ ! -s "$T/err" ] || fail "USLUB_REPORT=/dev/null printed on stderr"
"$tool" run --report-file "$T/rf" -- "$prog" 2>"$T/err" || fail "run --report-file: $?"
grep -q '^uslub report: pid ' "$T/rf" || fail "uslub run --report-file: no report"
echo PASS
