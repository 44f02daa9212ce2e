#!/usr/bin/env python3
"""malloc_heap_dump's check of a pprof profile that `uslub heap -o FILE.pb.gz`
wrote from the dump of heap_stacks' program (known callers):

  heap_dump_pprof.py FILE.pb.gz PROG DEFAULT_TYPE [INTERVAL]

The four sample types in pprof's order for heaps, DEFAULT_TYPE the default;
the period the sampling interval; the first mapping the program, with the
build id its ELF note has; each caller's stacks (caller_X;alloc_wrapper,
resolved to functions with file and line) within 4 sd of the true bytes and
objects, in use and allocated (caller_freed: none in use, 4 MiB allocated);
every location inside its mapping.
"""
import gzip
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tool"))
from pprof_decode import check, decode, failed  # noqa: E402

path, prog, default = sys.argv[1], sys.argv[2], sys.argv[3]
interval = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
def build_id(elf):
    """the GNU build id of ELF's notes (64-bit little-endian), hex"""
    import struct
    data = open(elf, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    for i in range(shnum):
        typ, = struct.unpack_from("<I", data, shoff + i * shentsize + 4)
        if typ != 7:                                        # SHT_NOTE
            continue
        off, size = struct.unpack_from("<QQ", data, shoff + i * shentsize + 0x18)
        p = off
        while p + 12 <= off + size:
            nsz, dsz, t = struct.unpack_from("<III", data, p)
            name = data[p + 12:p + 12 + nsz]
            d = p + 12 + (nsz + 3) // 4 * 4
            if t == 3 and name == b"GNU\0":
                return data[d:d + dsz].hex()
            p = d + (dsz + 3) // 4 * 4
    return ""


p = decode(gzip.decompress(open(path, "rb").read()))
check("sample types", p["types"] == [("alloc_objects", "count"), ("alloc_space", "bytes"),
                                     ("inuse_objects", "count"), ("inuse_space", "bytes")])
check("default type " + default, p["default"] == default)
check("period %d" % interval, p["period"] == interval)
first = p["maps"].get(1)
check("first mapping is the program", first is not None and
      os.path.realpath(first[3]) == os.path.realpath(prog))
bid = build_id(prog)
check("its build id %s" % bid, first is not None and bid and first[4] == bid)
inside = all(p["loc_map"][l] == 0 or
             p["maps"][p["loc_map"][l]][0] <= p["loc_addr"][l] < p["maps"][p["loc_map"][l]][1]
             for l in p["loc"])
check("every location inside its mapping", inside)

MiB = 1 << 20
totals = {}
for locs, vals in p["samples"]:
    names = [p["fn"][p["loc"][l]] for l in locs]
    if len(names) >= 2 and names[0] == "alloc_wrapper":
        t = totals.setdefault(names[1], [0, 0, 0, 0])
        for i in range(4):
            t[i] += vals[i]
wrapper_fn = [f for f, n in p["fn"].items() if n == "alloc_wrapper"]
check("alloc_wrapper has its source file",
      bool(wrapper_fn) and p["fn_file"][wrapper_fn[0]].endswith("heap_stacks.c"))
wrapper_lines = [p["loc_line"][l] for l in p["loc"] if p["loc"][l] in wrapper_fn]
check("alloc_wrapper's locations have lines", bool(wrapper_lines) and min(wrapper_lines) > 0)


def near(got, want, unit):
    # the estimate's sd: sqrt(bytes * interval) in bytes; in objects of 64 B
    sd = math.sqrt(want * unit * interval) / unit
    return abs(got - want) <= 4 * sd


for caller, mib in (("caller_one", 1), ("caller_two", 2), ("caller_four", 4), ("caller_freed", 4)):
    t = totals.get(caller, [0, 0, 0, 0])
    inuse = 0 if caller == "caller_freed" else mib * MiB
    check("%s alloc_space %d ~ %d" % (caller, t[1], mib * MiB), near(t[1], mib * MiB, 1))
    check("%s alloc_objects %d ~ %d" % (caller, t[0], mib * MiB // 64),
          near(t[0], mib * MiB // 64, 64))
    if inuse:
        check("%s inuse_space %d ~ %d" % (caller, t[3], inuse), near(t[3], inuse, 1))
        check("%s inuse_objects %d ~ %d" % (caller, t[2], inuse // 64), near(t[2], inuse // 64, 64))
    else:
        check("%s nothing in use" % caller, t[2] == 0 and t[3] == 0)
sys.exit(1 if failed() else 0)
