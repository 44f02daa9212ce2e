#!/usr/bin/env python3
"""`uslub pprof` (tools/pprof.c): folded stacks in, a pprof profile out.

The profile is read back by a decoder of our own (gzip, then the protocol
buffer's wire format, with profile.proto's field numbers): the string
table starts with "", the sample type is the one asked for, every sample's
locations name its stack's functions leaf first with the stack's count,
repeated stacks are separate samples that add up, ids resolve. Where Go is
installed, `go tool pprof -top` reads the same file and attributes each
caller's share. Bad lines: named on stderr, left out, exit 1.

  pprof_test.py TOOL
"""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

tool = sys.argv[1]
from pprof_decode import check, decode, failed, stack  # noqa: E402


tmp = tempfile.mkdtemp()
try:
    folded = os.path.join(tmp, "in.folded")
    with open(folded, "w") as f:
        f.write("# heap profile\nmain;caller_c;wrapper 4194304\nmain;caller_a;wrapper 524288\n"
                "main;caller_b;wrapper 2097152\nmain;caller_a;wrapper 524288\n"
                "main;we;ird \"names\" & <more> 7\n")
    out = os.path.join(tmp, "p.pb.gz")
    with open(out, "wb") as o:
        r = subprocess.run([tool, "pprof", "--type", "alloc_space", folded], stdout=o,
                           stderr=subprocess.PIPE)
    check("exit 0", r.returncode == 0 and not r.stderr)
    data = open(out, "rb").read()
    check("gzip", data[:2] == b"\x1f\x8b")
    p = decode(gzip.decompress(data))
    check("string 0 is empty", p["strings"][:1] == [""])
    check("sample type alloc_space/bytes", p["types"] == [("alloc_space", "bytes")])
    got = {}
    for locs, vals in p["samples"]:
        check("one value a sample", len(vals) == 1)
        got[stack(p, locs)] = got.get(stack(p, locs), 0) + vals[0]
    check("stacks and counts", got == {"main;caller_c;wrapper": 4194304,
                                       "main;caller_a;wrapper": 1048576,
                                       "main;caller_b;wrapper": 2097152,
                                       "main;we;ird \"names\" & <more>": 7})
    check("five samples", len(p["samples"]) == 5)
    check("functions interned", sorted(p["fn"].values()) ==
          sorted({"main", "caller_a", "caller_b", "caller_c", "wrapper", "we",
                  "ird \"names\" & <more>"}))

    with open(out, "wb") as o:
        r = subprocess.run([tool, "pprof", "--raw", "--type", "inuse_objects", folded],
                           stdout=o, stderr=subprocess.PIPE)
    p = decode(open(out, "rb").read())
    check("--raw, inuse_objects/count", r.returncode == 0 and
          p["types"] == [("inuse_objects", "count")])

    bad = os.path.join(tmp, "bad.folded")
    with open(bad, "w") as f:
        f.write("main;a 10\nno count\nmain;b 30\n")
    with open(out, "wb") as o:
        r = subprocess.run([tool, "pprof", bad], stdout=o, stderr=subprocess.PIPE)
    p = decode(gzip.decompress(open(out, "rb").read()))
    check("bad line: exit 1, named, the rest kept",
          r.returncode == 1 and b"line 2:" in r.stderr and len(p["samples"]) == 2)
    r = subprocess.run([tool, "pprof", "--type", "/x", folded], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    check("bad --type: exit 2", r.returncode == 2)

    go = shutil.which("go") or ("/usr/local/go/bin/go"
                                if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go:
        with open(out, "wb") as o:
            subprocess.run([tool, "pprof", folded], stdout=o, check=True)
        try:
            r = subprocess.run([go, "tool", "pprof", "-top", out], capture_output=True,
                               text=True, timeout=300)
            top = r.stdout
            check("go tool pprof -top reads it", r.returncode == 0 and "wrapper" in top)
            check("go tool pprof: caller_c 57.14%", any(
                "caller_c" in l and "57.14%" in l for l in top.splitlines()))
        except subprocess.TimeoutExpired:
            print("skip go tool pprof (timed out building)")
    else:
        print("skip go tool pprof (no Go)")
finally:
    shutil.rmtree(tmp)
sys.exit(1 if failed() else 0)
