#!/bin/bash
# What walks the sampled stacks of the malloc front end LIB, as its heap
# profile's header says: "the modules' .eh_frame" (x86_64), "libunwind",
# or "frame pointers" (which stop at uslub's own frames: the heap tests
# skip). Prints it; nothing when LIB wrote no profile.
#   stack_walker.sh LIB
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
env USLUB_PROFILING=sample USLUB_HEAP_PROFILE="$T/probe" LD_PRELOAD="$1" true >/dev/null 2>&1
sed -n 's/.*stacks walked by \([^)]*\)).*/\1/p' "$T/probe" 2>/dev/null | head -1
