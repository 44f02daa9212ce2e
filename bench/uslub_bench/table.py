"""The console table (also bench.md's body): every benchmark's own table in
BENCH_ORDER, then one row per target (target_rows, which the README's
published table is made from too)."""

from .bulk import b2_target_groups, print_b2, print_b3
from .config import BENCH_ORDER, BSCALE, SUITE_BENCHES, _log
from .debug import print_bdebug, print_bdfree
from .ext import print_b5, print_b6, print_b6acc, print_b7, print_bmeta
from .hotpath import print_hot_paths
from .rcu import print_brcu
from .scale import bscale_target_row, print_bscale
from .single import print_single
from .suite import print_b8, print_b9


def target_rows(data):
    """Every target of @data (a run's results, as in bench.json) as a row:
    bench, config ("64 B", "n 16..250" or ""), target, measured, verdict
    and style (how the text table lays it out); benchmarks without a target
    give one "note" row. The text table (print_table) and the README's
    published table (publish_readme) are both made from these rows."""
    rows = []

    def row(bench, target, measured, verdict, style="plain", config="", size=""):
        rows.append({"bench": bench, "config": config, "size": size, "target": target,
                     "measured": measured, "verdict": verdict, "style": style})

    for bench in BENCH_ORDER:
        if bench not in data:
            continue
        if bench == "B2":
            for rng, name, checks in b2_target_groups(data["B2"]):
                measured = [t for t in checks if t["pass"] is not None]
                failed = [t["n"] for t in checks if t["pass"] is False]
                if failed:
                    verdict = "MISS at n = %s" % ",".join(str(n) for n in failed)
                elif measured and len(measured) == len(checks):
                    verdict = "PASS"
                else:
                    verdict = "SKIP"
                if measured:
                    worst = max(measured, key=lambda t: t["ratio"])
                    ratio = "max %.2fx (n %d)" % (worst["ratio"], worst["n"])
                else:
                    ratio = "not measured"
                row("B2", name, ratio, verdict, "b2", rng)
            continue
        if bench == "B-meta":
            row(bench, "no SPEC target (a layout report, above)", "", "", "note")
            continue
        if bench == "B-dfree":
            row(bench, "no target (the double-free check's cost, above)",
                "geomean cost " + ", ".join("%s %+.1f%%" % (b, g["cost_pct"])
                          for b, g in data[bench].get("geomean", {}).items()), "", "note")
            continue
        if bench == "B6-acc":
            for t in data[bench]["targets"]:
                if t["pass"] is None:
                    verdict, ratio = "SKIP", t.get("note", "")
                else:
                    verdict = "PASS" if t["pass"] else "MISS"
                    ratio = "err %.1f%%" % (t["ratio"] * 100)
                row(bench, t["target"], ratio, verdict)
            continue
        if bench == BSCALE:
            for t in data[bench]["targets"]:
                measured, verdict = bscale_target_row(t)
                row(bench, t["target"], measured, verdict)
            continue
        if bench == "B-rcu":
            for t in data[bench]["targets"]:
                row(bench, t["target"], "%.3fx" % t["ratio"], "PASS" if t["pass"] else "MISS")
            continue
        if bench in SUITE_BENCHES:
            for t in data[bench]["targets"]:
                if t["pass"] is None:
                    verdict = "SKIP"
                    ratio = ("%.2fx " % t["ratio"] if t.get("ratio") is not None else "") + \
                        t.get("note", "")
                else:
                    verdict = "PASS" if t["pass"] else "MISS"
                    if t.get("metric") == "returned":
                        ratio = "%.0f%% of peak" % (t["ratio"] * 100)
                    elif t.get("metric") == "slope_kb":
                        ratio = "%.1f KiB/thread" % t["ratio"]
                    else:
                        ratio = "%.3fx" % t["ratio"] if t.get("ratio") is not None else \
                            t.get("note", "")
                    if t.get("workload"):
                        ratio += " (%s)" % t["workload"]
                row(bench, t["target"], ratio, verdict)
            continue
        for size, s in data[bench]["sizes"].items():
            for t in s["targets"]:
                if t["pass"] is None:
                    verdict, ratio = "SKIP", t.get("note", "")
                elif t.get("informational"):
                    verdict = "PASS (informational)" if t["pass"] else "MISS (informational)"
                    ratio = "%.2fx" % t["ratio"]
                else:
                    verdict = "PASS" if t["pass"] else "MISS"
                    ratio = "%.2fx" % t["ratio"]
                    if bench == "B7":
                        ratio = "%.2fx (saving %.1f%%)" % (t["ratio"], t["saving_pct"])
                row(bench, t["target"], ratio, verdict, "size", "%s B" % size, size)
    return rows


def print_table(data):
    """Print the ratio table and return its lines (for bench.md)."""
    lines = []

    def log(line):
        lines.append(line)
        _log(line)

    log("")
    log("uslub vs peers: median ns per operation; ratio = uslub / peer "
        "(< 1.00 means uslub is faster)")
    for bench in BENCH_ORDER:
        if bench not in data:
            continue
        if bench == "B2":
            print_b2(data["B2"], log)
            continue
        if bench == "B3":
            print_b3(data["B3"], log)
            continue
        if bench in OWN_PRINTERS:
            OWN_PRINTERS[bench](data[bench], log)
            continue
        print_single(bench, data[bench], log)
        if bench == "B1" and data.get("hot_paths"):
            # each hot path's instructions under its B1 time
            print_hot_paths(data["hot_paths"], log)
    if "B1" not in data and data.get("hot_paths"):
        print_hot_paths(data["hot_paths"], log)
    log("")
    log("targets (SPEC §3):")
    rows = target_rows(data)
    width = max([36] + [len(r["target"]) for r in rows if r["style"] in ("size", "plain")])
    bwidth = max([2] + [len(r["bench"]) for r in rows if r["style"] in ("size", "plain")])
    for r in rows:
        if r["style"] == "b2":
            log("  B2 %-9s %-57s %-19s %s" % (r["config"], r["target"], r["measured"],
                                             r["verdict"]))
        elif r["style"] == "note":
            log("  %-11s %s" % (r["bench"], r["target"]))
        elif r["style"] == "size":
            log("  %-*s %4s B  %-*s %-8s %s" % (bwidth, r["bench"], r["size"], width,
                                                r["target"], r["measured"], r["verdict"]))
        else:
            log("  %-*s %6s  %-*s %-8s %s" % (bwidth, r["bench"], "", width, r["target"],
                                              r["measured"], r["verdict"]))
    return lines


OWN_PRINTERS = {"B5": print_b5, "B6": print_b6, "B6-acc": print_b6acc, "B7": print_b7,
                "B-meta": print_bmeta,
                "B-debug": print_bdebug, "B8": print_b8, "B9": print_b9,
                "B-dfree": print_bdfree, "B-rcu": print_brcu, BSCALE: print_bscale}
