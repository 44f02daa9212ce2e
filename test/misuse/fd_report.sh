# Issue 25, item 1 (d): USLUB_REPORT=- keeps a copy of stderr at fd >= 1000.
# The program dup2()s its own file over that number, forks twice (each
# child writes through the number), closes stderr and exits. The children
# must find their descriptor open, the report never goes into the
# program's file, and uslub says once (in the parent) what happened.
. "$(dirname "$0")/lib.sh" "$@"

USLUB_REPORT=- LD_PRELOAD="$MALLOC_LIB" "$PROG" dup2report "$T/file" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "the program exited with $rc (4: a child could not write its file)"
printf 'program\nchild\nchild\n' >"$T/want"
cmp -s "$T/want" "$T/file" || fail "the program's file holds: $(head -c 300 "$T/file" | tr '\n' '|')"
n=$(grep -c 'USLUB_REPORT=-: the program closed or reused fd' "$T/err")
[ "$n" = 1 ] || fail "said $n times that the stderr copy was taken (want 1)"
echo "ok: the program's file at the kept number is the program's"
