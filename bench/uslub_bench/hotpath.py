"""The hot paths' instruction counts, beside B1's times: one row per hot
path (the typed cache pair, uslub_cache_alloc_noprof + uslub_cache_free in
BUILD/libuslub.so; the malloc pair, malloc + free in
BUILD/libuslub-malloc.so) with

  - its static instructions up to and including the first `ret` of each
    function in `objdump -d --no-show-raw-insn` (what
    test/fastpath/fastpath_size.sh counts and budgets: its hot() awk);
  - where valgrind is installed (and not in --quick mode), the allocator's
    instructions per alloc+free counted by callgrind with the loop's own
    share subtracted: for the malloc pair, bench/instr-per-op.sh's "alloc"
    column (the churn loop, 8..255 B, 8192 live objects); for the typed
    pair, B1's loop (bench_b1_loop, 64 B) counted the same way (two runs,
    300000 and 100000 pairs, so the start-up cancels out);
  - B1's median time of the same pair (uslub 64 B, uslub-malloc 64 B).

Anything missing (objdump, valgrind, a library, B1 not run) makes its cell
None ("n/a" in the table), never a failed run.
"""

import os
import re
import shutil
import subprocess
import tempfile

from .config import HERE, USLUB_MALLOC, USLUB_MALLOC_LIB, log
from .fmt import fmt_ns
from .peers import find_binary, find_build_lib

# (name, library, B1 peer whose 64 B median is its time, the functions,
# each with the other name objdump may print for it: an alias at the same
# address)
HOT_PATHS = [
    ("typed cache pair, 64 B", "libuslub.so", "uslub",
     [("uslub_cache_alloc_noprof", "uslub_cache_alloc"), ("uslub_cache_free", None)]),
    ("malloc(64)+free", USLUB_MALLOC_LIB, USLUB_MALLOC,
     [("malloc", "__libc_malloc"), ("free", "__libc_free")]),
]
HOT_SIZE = "64"
# callgrind: operations of the long and the short run (instr-per-op.sh's)
CG_HI = 300000
CG_LO = 100000
CG_TIMEOUT = 300


def disassemble(lib):
    """objdump -d --no-show-raw-insn of @lib, or None."""
    if not shutil.which("objdump") or not lib:
        return None
    try:
        r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def instr_to_ret(dis, fn):
    """Instructions of function @fn in the disassembly @dis up to and
    including its first ret (fastpath_size.sh's hot()), or None."""
    on = False
    n = 0
    want = "<%s>:" % fn
    for line in dis.splitlines():
        if not on:
            f = line.split()
            on = len(f) >= 2 and f[1] == want
            continue
        if not line:
            return None
        if "\t" in line:
            n += 1
            if re.search(r"\tret", line):
                return n
    return None


def _callgrind_totals(argv, env, toggle, fn):
    """(Ir of the run, Ir of @fn itself) under callgrind, collecting
    inside @toggle only when given; None when the run fails."""
    with tempfile.TemporaryDirectory(prefix="uslub-hotpath.") as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out]
        if toggle:
            cmd.append("--toggle-collect=" + toggle)
        try:
            r = subprocess.run(cmd + argv, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=CG_TIMEOUT)
            if r.returncode != 0 or not os.path.exists(out):
                return None
            a = subprocess.run(["callgrind_annotate", "--inclusive=no", out],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
    total = own = None
    for line in a.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = ir
        elif re.search(r":%s( |$)" % re.escape(fn), line) and own is None:
            own = ir
    if total is None:
        return None
    return total, own or 0


def callgrind_typed(build):
    """The typed pair: B1's loop (64 B, uslub-bench-uslub) under callgrind,
    collecting inside bench_b1_loop only, CG_HI and CG_LO pairs after the
    same warm-up. {"per_op", "loop", "alloc"} or None."""
    exe = find_binary(build, "uslub-bench-uslub")
    if not exe:
        return None
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    got = []
    for n in (CG_HI, CG_LO):
        t = _callgrind_totals([exe, "--bench", "B1", "--size", HOT_SIZE, "--iters", str(n),
                               "--warmup", "1000", "--repeats", "1", "--label", "uslub"],
                              env, "bench_b1_loop", "bench_b1_loop")
        if not t:
            return None
        got.append(t)
    per = (got[0][0] - got[1][0]) / (CG_HI - CG_LO)
    loop = (got[0][1] - got[1][1]) / (CG_HI - CG_LO)
    return {"per_op": round(per, 1), "loop": round(loop, 1), "alloc": round(per - loop, 1)}


def callgrind_malloc(build, lib):
    """The malloc pair: bench/instr-per-op.sh on @lib (the churn loop).
    {"per_op", "loop", "alloc"} (its instr/op, loop and alloc columns) or
    None."""
    script = os.path.join(HERE, "instr-per-op.sh")
    try:
        r = subprocess.run(["sh", script, "--build", build, lib], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=2 * CG_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        log("bench: hot paths: instr-per-op.sh failed: %s" % r.stderr.strip()[-300:])
        return None
    for line in r.stdout.splitlines()[1:]:
        f = line.split()
        if len(f) >= 5 and f[0] == lib:
            try:
                return {"per_op": float(f[-3]), "loop": float(f[-2]), "alloc": float(f[-1])}
            except ValueError:
                return None
    return None


def hot_paths(build, data, callgrind):
    """The hot-path rows for bench.json: [{name, function, library,
    instr_to_ret, instr_each, time_ns, time_of, callgrind_per_op,
    callgrind, callgrind_note}]; callgrind_per_op is the allocator's
    instructions per op (callgrind's "alloc"), callgrind_note why it is
    None. @data: the analysed results (B1's medians); @callgrind: count
    with callgrind too (when valgrind is installed; not in --quick)."""
    rows = []
    have_cg = callgrind and shutil.which("valgrind") and shutil.which("callgrind_annotate")
    why = None if have_cg else "not counted in --quick mode" if not callgrind else \
        "valgrind (callgrind_annotate) not installed"
    for name, libname, peer, fns in HOT_PATHS:
        lib = find_build_lib(build, libname)
        dis = disassemble(lib)
        each = {}
        for fn, alias in fns:
            n = instr_to_ret(dis, fn) if dis else None
            if n is None and alias and dis:
                n = instr_to_ret(dis, alias)
            each[fn] = n
        total = sum(each.values()) if all(v is not None for v in each.values()) else None
        b1 = data.get("B1", {}).get("sizes", {}).get(HOT_SIZE, {})
        t = b1.get("median_ns", {}).get(peer)
        cg = None
        cg_why = why or ("%s not found under %s" % (libname, build) if not lib else None)
        if not cg_why:
            log("bench: hot paths: counting %s's instructions with callgrind" % name)
            cg = callgrind_typed(build) if peer == "uslub" else callgrind_malloc(build, lib)
            if not cg:
                cg_why = "the callgrind run failed"
        rows.append({"name": name, "function": " + ".join(fn for fn, _ in fns),
                     "library": os.path.basename(lib) if lib else libname,
                     "instr_to_ret": total, "instr_each": each,
                     "time_ns": t, "time_of": "B1 %s B %s" % (HOT_SIZE, peer),
                     "callgrind_per_op": cg["alloc"] if cg else None, "callgrind": cg,
                     "callgrind_note": cg_why})
    return rows


def print_hot_paths(rows, log):
    """The hot-path rows of the console table, under B1's."""
    log("")
    log("hot paths  (instructions beside B1's median ns, 64 B)")
    log("  instr to ret = static instructions of each function up to its first ret "
        "(objdump; what fastpath_size budgets)")
    log("  callgrind = the allocator's instructions per alloc+free, the loop's share "
        "subtracted (typed: B1's loop; malloc: instr-per-op.sh's churn loop, 8..255 B)")
    log("  %-24s %-44s %12s %9s %10s" % ("hot path", "functions", "instr to ret", "median",
                                          "callgrind"))
    for r in rows:
        each = r["instr_each"]
        if r["instr_to_ret"] is None:
            instr = "n/a"
        else:
            instr = "%s=%d" % ("+".join(str(each[f]) for f in each), r["instr_to_ret"])
        cg = r["callgrind_per_op"]
        log(("  %-24s %-44s %12s %s %10s" % (
            r["name"], r["function"], instr,
            fmt_ns(r["time_ns"]) if r["time_ns"] is not None else "      n/a",
            "%.1f" % cg if cg is not None else "n/a")).rstrip())
    notes = sorted({r["callgrind_note"] for r in rows if r.get("callgrind_note")})
    if notes:
        log("  callgrind n/a: %s" % "; ".join(notes))
