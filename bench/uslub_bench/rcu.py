"""B-rcu: kfree_rcu (the rcu_free sheaf) against liburcu's call_rcu + free,
one process (uslub-bench-rcu) that runs the methods interleaved."""

import json
import os
import subprocess

from .config import BENCH_TITLES, BENCH_UNITS, _log


# B-rcu (uslub-bench-rcu, built with the RCU component): one process runs
# the three methods interleaved, BRCU_REPEATS samples of BRCU_OBJECTS
# objects each, and prints each one's medians, in process CPU time (every
# thread's work, liburcu's worker included) and wall time; the target (the
# issue's: "kfree_rcu batched costs <= 0.5x call_rcu+free per object") is
# checked on the CPU time, the cost; the wall-time ratio is shown beside it.
BRCU_MODE = {"quick": (7, 100_000), "full": (15, 200_000)}
BRCU_LIMIT = 0.5


def run_brcu(build, mode_name):
    """B-rcu: run uslub-bench-rcu; None when it was not built."""
    exe = os.path.join(build, "bench", "uslub-bench-rcu")
    if not os.access(exe, os.X_OK):
        _log("bench: B-rcu skipped: %s not built (liburcu-dev missing?)" % exe)
        return None
    repeats, objects = BRCU_MODE[mode_name]
    _log("bench: B-rcu: %d interleaved samples of %d objects" % (repeats, objects))
    r = subprocess.run([exe, str(repeats), str(objects)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    if r.returncode != 0:
        _log("bench: B-rcu failed (%d): %s" % (r.returncode, r.stdout.strip()[-500:]))
        return None
    methods = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            m = json.loads(line)
            methods[m["method"]] = m
    e = {"title": BENCH_TITLES["B-rcu"], "unit": BENCH_UNITS["B-rcu"],
         "repeats": repeats, "objects": objects, "methods": methods, "targets": []}
    k = methods.get("kfree_rcu", {})
    for peer, what in (("call_rcu+glibc_free", "glibc free()"),
                       ("call_rcu+kfree", "uslub kfree()")):
        p_ = methods.get(peer, {})
        if not k or not p_.get("cpu_ns_per_obj"):
            continue
        ratio = k["cpu_ns_per_obj"] / p_["cpu_ns_per_obj"]
        e["targets"].append({"target": "kfree_rcu <= %.1fx call_rcu + %s (CPU)" % (
                                 BRCU_LIMIT, what),
                             "ratio": ratio, "pass": ratio <= BRCU_LIMIT,
                             "wall_ratio": k["wall_ns_per_obj"] / p_["wall_ns_per_obj"]})
    return e


def print_brcu(e, log):
    log("")
    log("%s  %s  (%s)" % ("B-rcu", e["title"], e["unit"]))
    log("  one process, liburcu's default flavour, %d interleaved samples of %d objects "
        "(64 B)" % (e["repeats"], e["objects"]))
    log("  %-22s %9s %9s  %s" % ("method", "cpu", "wall", "cpu samples"))
    for name, m in e["methods"].items():
        log("  %-22s %9.1f %9.1f  %s" % (name, m["cpu_ns_per_obj"], m["wall_ns_per_obj"],
                                         " ".join("%.0f" % x for x in m["cpu_samples"])))
    for t in e["targets"]:
        log("  %s: %.3fx (wall time: %.3fx)" % (t["target"], t["ratio"], t["wall_ratio"]))
