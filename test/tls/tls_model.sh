#!/usr/bin/env bash
# No dynamic TLS in the built libraries: every thread-local variable must be
# initial-exec. A general- or local-dynamic access calls __tls_get_addr
# (or a TLS descriptor's resolver), which after a dlclose() of a module with
# TLS updates the thread's DTV and free()s the unloaded module's block: into
# uslub, maybe under a uslub lock the thread holds (the self-deadlock that
# test/malloc/dlclose_tls.c reproduces). Run by CTest on each shared library.
#   - no undefined __tls_get_addr / ___tls_get_addr in the dynamic symbols,
#   - no dynamic-TLS relocations (DTPMOD/DTPOFF/DTPREL, TLSDESC),
#   - the PT_TLS segment (the static TLS every thread pays; it must fit in
#     glibc's surplus when the library is dlopen()ed) within a budget.
set -eu
command -v readelf >/dev/null || { echo "readelf missing: skipped"; exit 77; }
TLS_BUDGET=${TLS_BUDGET:-256}
status=0
for lib in "$@"; do
	name=$(basename "$lib")
	bad=$status
	status=0
	syms=$(readelf -W --dyn-syms "$lib" | awk '$7 == "UND" && ($8 ~ /^_?__tls_get_addr(@|$)/) { print $8 }')
	if [ -n "$syms" ]; then
		echo "FAIL $name: imports $syms (dynamic TLS access), called from:"
		objdump -d --no-show-raw-insn "$lib" 2>/dev/null |
			awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /call.*__tls_get_addr/ { print "       " fn }' |
			sort -u | head -20
		status=1
	fi
	relocs=$(readelf -W -r "$lib" | grep -E 'DTPMOD|DTPOFF|DTPREL|TLSDESC|TLSGD|TLSLD' || true)
	if [ -n "$relocs" ]; then
		echo "FAIL $name: dynamic-TLS relocations:"
		echo "$relocs" | head -20
		status=1
	fi
	memsz=$(readelf -W -l "$lib" | awk '$1 == "TLS" { print $6 }')
	memsz=$(( ${memsz:-0} ))
	if [ "$memsz" -gt "$TLS_BUDGET" ]; then
		echo "FAIL $name: PT_TLS is $memsz bytes, budget $TLS_BUDGET"
		status=1
	fi
	[ $status -ne 0 ] || echo "ok   $name: initial-exec TLS only ($memsz bytes of static TLS)"
	status=$((status | bad))
done
exit $status
