#!/bin/bash
# misuse_out_report_dirlink (issue 25, item 6, review R1): the report file's
# directories are walked too. USLUB_REPORT=/tmp/x/shadow, /tmp/x being
# another user's symbolic link to /etc in sticky, world-writable /tmp,
# must not make a root process truncate /etc/shadow: the last component's
# checks (O_NOFOLLOW, owner, one link) all pass for root's own file. uslub
# follows a link among the directories only where the kernel's
# fs.protected_symlinks would (it may be off): not another user's link in
# a sticky directory that others may write.
#
# Before the fix: the target (a root-only 0600 file) was truncated and
# overwritten with the report, by USLUB_REPORT and `uslub run
# --report-file` alike.
#
#   out_report_dirlink.sh MALLOC_LIB TOOL BINDIR
set -u
lib=$1 tool=$2 prog=$3/misuse_prog_out_sites
[ -n "$lib" ] || exit 77          # sanitizer build: no preload library
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (a link of another user's)"; exit 77; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; echo "--- stderr:"; head -c 2000 "$T/err"; echo; exit 1; }
run() { env -i PATH=/usr/bin:/bin LD_PRELOAD="$lib" USLUB_REPORT="$1" "$prog" 2>"$T/err" ||
	fail "USLUB_REPORT=$1: exit status $?"; }
intact() { [ "$(cat "$1")" = "$2" ] || fail "$1 was written: $(head -c 200 "$1")"; }
says() { grep -q "$1" "$T/err" || fail "no message matching: $1"; }

mkdir -m 700 "$T/secret"
echo secret >"$T/secret/shadow"
chmod 600 "$T/secret/shadow"
mkdir -m 1777 "$T/tmp"                           # as /tmp
ln -s "$T/secret" "$T/tmp/x"
chown -h nobody "$T/tmp/x" 2>/dev/null || { echo "skipped: no user nobody"; exit 77; }
uid=$(stat -c %u "$T/tmp/x")

run "$T/tmp/x/shadow"
intact "$T/secret/shadow" secret
says "^uslub: USLUB_REPORT: cannot open \"$T/tmp/x/shadow\": .*$T/tmp/x is another user's symbolic link (uid $uid) in a sticky directory others may write, which uslub does not follow"
[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line on stderr"
# the same through a longer way, and through --report-file
run "$T/tmp/../tmp/./x/shadow"
intact "$T/secret/shadow" secret
says "symbolic link (uid $uid)"
"$tool" run --report-file "$T/tmp/x/shadow" -- "$prog" 2>"$T/err" ||
	fail "uslub run --report-file: exit status $?"
intact "$T/secret/shadow" secret
says "symbolic link (uid $uid)"

# What the kernel's rule allows still works: a link of the process's own
# user in that directory, and another user's link in a directory that is
# not sticky (whoever may write it could write the file's name anyway).
ln -s "$T/secret" "$T/tmp/mine"
run "$T/tmp/mine/report.%p"
ls "$T/secret"/report.* >/dev/null 2>&1 || fail "no report through the user's own link"
[ ! -s "$T/err" ] || fail "a link of the user's own printed on stderr"
mkdir -m 755 "$T/plain"
ln -s "$T/secret" "$T/plain/y"
chown -h nobody "$T/plain/y"
run "$T/plain/y/other"
grep -q '^uslub report: pid ' "$T/secret/other" || fail "no report through a link in a directory that is not sticky"
echo PASS
