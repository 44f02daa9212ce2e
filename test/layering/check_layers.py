#!/usr/bin/env python3
"""The layering check: no file of the core calls up (src/README.md, "Layers").

Reads the layer table (the ```uslub-layers block of src/README.md), the
core's sources (set(USLUB_SOURCES ...) in CMakeLists.txt) and src/malloc/
malloc.c, and runs `nm` on their object files in the CMake build tree
(CMakeFiles/uslub_objs.dir/<source>.o, CMakeFiles/uslub_malloc.dir/...).
A symbol undefined in file A and defined in file B is an edge A -> B. An
edge is allowed when B's layer is A's, or has a lower number; it is an
upward call when B's number is higher, or equal under another name (a
sibling: ext and sheaf, kmalloc and observe).

src/ktest/ (libuslub-ktest, the kernel harness's hooks) is a library of
its own on uslub's public API: besides the layer rule, every symbol it
takes from the core must be a public one (uslub_*, exported), never an
internal _uslub_ one (a static link would let it reach those).

Every upward call must be listed in test/layering/known_upward_calls.txt
(the known debt), and every line there must still be one: the check fails
on a new upward call and on a listed one that no longer exists, so the
list only shrinks, and stays true.

usage: check_layers.py BUILD_DIR [--source DIR] [--nm NM] [--print-upward]
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys

ALLOWLIST = "test/layering/known_upward_calls.txt"
# The one init file's layer (src/init.c): the exception both ways. It is
# the top layer, so it may call every layer; and every layer may call
# into it (_uslub_init(), the process init run once on first use).
INIT_LAYER = "init"
# Layers that are separate libraries on the public API only.
PUBLIC_ONLY = {"ktest"}
# Symbols that are never an edge between files: provided by the linker or
# the toolchain (the alloc-tag section bounds are weak references in every
# file that includes uslub/types.h).
IGNORED = re.compile(r"^(_GLOBAL_OFFSET_TABLE_|__(start|stop)_uslub_alloc_tags|"
                     r"__dso_handle|__tls_get_addr)$")


def fail(msg):
    print("layering: " + msg, file=sys.stderr)
    sys.exit(2)


def read_layers(readme):
    """[(name, number, [path, ...])] from the ```uslub-layers block."""
    try:
        text = open(readme, encoding="utf-8").read()
    except OSError as e:
        fail(f"cannot read the layer table: {e}")
    m = re.search(r"^```uslub-layers[ \t]*\n(.*?)^```", text, re.M | re.S)
    if not m:
        fail(f"no ```uslub-layers block in {readme}")
    layers = []
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        if line[0] != "layer" or len(line) < 3 or not line[2].isdigit():
            fail(f"{readme}: uslub-layers line {n}: expected "
                 f"'layer <name> <number> [<path> ...]', got {' '.join(line)!r}")
        layers.append((line[1], int(line[2]), line[3:]))
    if len({l[0] for l in layers}) != len(layers):
        fail(f"{readme}: a layer is named twice in the uslub-layers block")
    return layers


def layer_of(path, layers):
    """The layer of the most specific (longest) path matching @path."""
    best, best_len = None, -1
    for name, num, paths in layers:
        for p in paths:
            hit = path.startswith(p) if p.endswith("/") else fnmatch.fnmatchcase(path, p)
            if hit and len(p) > best_len:
                best, best_len = (name, num), len(p)
    return best


def core_sources(cmakelists):
    text = open(cmakelists, encoding="utf-8").read()
    m = re.search(r"set\(USLUB_SOURCES\s+(.*?)\)", text, re.S)
    if not m:
        fail(f"no set(USLUB_SOURCES ...) in {cmakelists}")
    return [s for s in m.group(1).split() if not s.startswith("#")]


def nm_symbols(nm, obj):
    """(defined, undefined) global symbol names of one object file."""
    try:
        out = subprocess.run([nm, "-P", obj], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"{nm} -P {obj}: {e}")
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2 or IGNORED.match(f[0]):
            continue
        name, kind = f[0], f[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRGSCVWiu":     # global: text, data, bss, rodata, weak, ...
            defined.add(name)
    return defined, undefined


def read_allowlist(path):
    """{(caller, symbol, callee)} from lines 'caller -> symbol (callee)'."""
    entries = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        fail(f"cannot read the allowlist: {e}")
    pat = re.compile(r"^(\S+)\s+->\s+(\S+)\s+\((\S+)\)$")
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = pat.match(line)
        if not m:
            fail(f"{path}:{n}: expected 'caller_file -> symbol (callee_file)', got {line!r}")
        entries[m.groups()] = n
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", help="the CMake build directory")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", ".."), help="the source tree (default: this script's)")
    ap.add_argument("--nm", default=os.environ.get("NM", "nm"))
    ap.add_argument("--print-upward", action="store_true",
                    help="print every upward call in the allowlist's format and exit 0")
    args = ap.parse_args()
    src = os.path.normpath(args.source)

    layers = read_layers(os.path.join(src, "src", "README.md"))
    files = [(s, "uslub_objs") for s in core_sources(os.path.join(src, "CMakeLists.txt"))]
    for m in ("malloc.c", "classes.c"):   # the malloc front end: not in sanitizer builds
        if os.path.exists(os.path.join(args.build, "CMakeFiles", "uslub_malloc.dir", "src", "malloc", m + ".o")):
            files.append(("src/malloc/" + m, "uslub_malloc"))
    # libuslub-rcu (only where liburcu is installed)
    if os.path.exists(os.path.join(args.build, "CMakeFiles", "uslub_rcu_objs.dir", "src", "rcu", "urcu.c.o")):
        files.append(("src/rcu/urcu.c", "uslub_rcu_objs"))

    # libuslub-ktest (src/ktest): built in every flavour
    for m in ("ktest.c",):
        if os.path.exists(os.path.join(args.build, "CMakeFiles", "uslub_ktest_objs.dir", "src", "ktest", m + ".o")):
            files.append(("src/ktest/" + m, "uslub_ktest_objs"))

    where = {}                 # symbol -> defining file
    uses = {}                  # file -> undefined symbols
    file_layer = {}
    for f, target in files:
        lay = layer_of(f, layers)
        if not lay:
            fail(f"{f} is in no layer: add its folder (or the file) to the "
                 f"uslub-layers block of src/README.md")
        file_layer[f] = lay
        obj = os.path.join(args.build, "CMakeFiles", target + ".dir", f + ".o")
        if not os.path.exists(obj):
            fail(f"no object file {obj}: build first (make build)")
        defined, undefined = nm_symbols(args.nm, obj)
        uses[f] = undefined
        for s in defined:
            where.setdefault(s, f)

    upward = {}                # (caller, symbol, callee) -> why
    for f, syms in uses.items():
        (ln, lnum) = file_layer[f]
        for s in syms:
            g = where.get(s)
            if g is None or g == f:
                continue       # libc, or the linker's
            (gn, gnum) = file_layer[g]
            if gn == ln or gnum < lnum:
                continue
            if gn == INIT_LAYER:
                continue       # _uslub_init(): init on first use, from any layer
            kind = "sibling" if gnum == lnum else "upward"
            upward[(f, s, g)] = f"{f} ({ln} {lnum}) -> {s} in {g} ({gn} {gnum}): {kind}"

    private = []               # a public-only layer using an internal symbol
    for f, syms in uses.items():
        if file_layer[f][0] not in PUBLIC_ONLY:
            continue
        for s in sorted(syms):
            g = where.get(s)
            if g is not None and g != f and not s.startswith("uslub_"):
                private.append(f"{f} -> {s} in {g}: not public API")
    if private:
        print(f"layering: FAIL: {', '.join(sorted(PUBLIC_ONLY))} may call only the public "
              f"API (uslub_*):", file=sys.stderr)
        for line in private:
            print("  " + line, file=sys.stderr)
        return 1

    if args.print_upward:
        for k in sorted(upward):
            print(f"{k[0]} -> {k[1]} ({k[2]})")
        return 0

    allow_path = os.path.join(src, ALLOWLIST)
    allowed = read_allowlist(allow_path)
    new = sorted(k for k in upward if k not in allowed)
    gone = sorted((allowed[k], k) for k in allowed if k not in upward)
    if new:
        print(f"layering: FAIL: {len(new)} new call(s) up or sideways through the layers "
              f"(src/README.md, \"Layers\"):", file=sys.stderr)
        for k in new:
            print("  " + upward[k], file=sys.stderr)
        print("Call down instead (move the code to the right layer, or have the higher\n"
              "layer pass what is needed down). If it really is debt to keep for now, add\n"
              f"these lines, under a comment saying why, to {ALLOWLIST}:", file=sys.stderr)
        for k in new:
            print(f"  {k[0]} -> {k[1]} ({k[2]})", file=sys.stderr)
    if gone:
        print(f"layering: FAIL: {len(gone)} line(s) of {ALLOWLIST} no longer exist "
              f"(the debt is paid, or the symbol moved): remove them, or fix them:",
              file=sys.stderr)
        for n, k in gone:
            print(f"  line {n}: {k[0]} -> {k[1]} ({k[2]})", file=sys.stderr)
    if new or gone:
        return 1
    print(f"layering: ok: {len(files)} files, {len(upward)} known upward call(s) "
          f"({ALLOWLIST}), none new")
    return 0


if __name__ == "__main__":
    sys.exit(main())
