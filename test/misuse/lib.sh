# Sourced by the misuse tier's shell tests of the fd_ family, not a test
# itself (CMakeLists.txt leaves it out): their arguments, the helper
# program, a private folder T removed at exit, and fail(), which shows
# what the program said on $T/err.
#   . "$(dirname "$0")/lib.sh" "$@"        # MALLOC_LIB TOOL BINDIR
MALLOC_LIB=$1 TOOL=$2 BINDIR=$3
[ -n "$MALLOC_LIB" ] || { echo "skipped: no preload library in this build"; exit 77; }
PROG=$BINDIR/misuse_prog_fd_daemon
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL${how:+ ($how)}: $*"; [ -f "$T/err" ] && sed 's/^/  stderr: /' "$T/err"; exit 1; }
