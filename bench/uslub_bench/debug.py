"""B-debug (a plain cache with a slub_debug cache in the process against
without) and B-dfree (the double-free check's cost: the core with the free
mark against without): analysis and text tables."""

import statistics

from .config import (
    B56_BATCH, B56_PATTERNS, BDEBUG_LIMIT, BDEBUG_PEERS, BDEBUG_SPEC, BDFREE_PEERS, BENCH_TITLES,
    BENCH_UNITS, USLUB_MALLOC_LIB, USLUB_NOMARK_BENCH, USLUB_NOMARK_MALLOC_LIB,
)
from .ext import LAYOUT_FIELDS
from .fmt import fmt_ns, fmt_ratio, fmt_spread
from .runner import config_label
from .stats import (
    caches_of, geomean, ratio_check, round_paired_ratios, run_extras, stats_of, verdict_of,
)


def analyse_bdebug(results, sizes):
    """B-debug: per size, results[("B-debug", size)][peer]["series"]
    ["<cache> <pattern>"]["all"], peer uslub-nodebug or uslub-debug-other,
    cache plain (timed against the target; never a debug cache) or other (a
    debug cache in uslub-debug-other only). Series "<peer> <pattern>" and
    "<peer> other <pattern>"."""
    entry = {"title": BENCH_TITLES["B-debug"], "unit": BENCH_UNITS["B-debug"],
             "batch": B56_BATCH, "limit": BDEBUG_LIMIT, "debug_spec": BDEBUG_SPEC,
             "sizes": {}}
    checks_all = []
    other_iters = set()
    nodebug, debug = BDEBUG_PEERS[0][0], BDEBUG_PEERS[1][0]
    for size in sizes:
        per = results[("B-debug", size)]
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {}, "ratios": {},
             "paired_ratio_median": {}, "targets": [], "caches": {}}
        for peer, _ in BDEBUG_PEERS:
            if peer not in per:
                continue
            for pat, _ in B56_PATTERNS:
                for cache, name in (("plain", "%s %s" % (peer, pat)),
                                    ("other", "%s other %s" % (peer, pat))):
                    xs = per[peer]["series"].get("%s %s" % (cache, pat), {}).get("all")
                    if not xs:
                        continue
                    st = stats_of(xs)
                    s["median_ns"][name], s["p25_ns"][name], s["p75_ns"][name] = \
                        st["median"], st["p25"], st["p75"]
                    s["samples_ns"][name] = xs
            s["caches"][peer] = {k: {f: v.get(f) for f in ("name", "debug") + LAYOUT_FIELDS}
                                 for k, v in caches_of(per[peer]["runs"]).items()}
        if nodebug in per and debug in per:
            s["runs"] = {p: run_extras(per[p]["runs"]) for p in (nodebug, debug)}
        other_iters |= {r.get("other_iters") for v in per.values() for r in v["runs"]}
        med = s["median_ns"]
        for pat, label in B56_PATTERNS:
            a, b = med.get("%s %s" % (debug, pat)), med.get("%s %s" % (nodebug, pat))
            if a is not None and b is not None:
                s["ratios"]["debug-other / nodebug, " + pat] = round(a / b, 4)
                pr = round_paired_ratios(per[debug]["runs"], per[nodebug]["runs"],
                                         "plain " + pat)
                if pr:
                    s["paired_ratio_median"][pat] = round(statistics.median(pr), 4)
            d, p_ = med.get("%s other %s" % (debug, pat)), med.get("%s other %s" % (nodebug, pat))
            if d is not None and p_ is not None:
                s["ratios"]["debug cache / plain, " + pat] = round(d / p_, 4)
            s["targets"].append(ratio_check(
                "non-debug cache with a debug cache present <= %.2fx none (%s)" % (
                    BDEBUG_LIMIT, label), a, b, BDEBUG_LIMIT, pattern=pat))
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["other_iters"] = sorted(other_iters - {None})
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_bdfree(results, subs, mode):
    """B-dfree: per (sub-bench, size or workload), results[("B-dfree", sub)]
    [peer]: B1's samples ("samples") or B8's runs ("runs", time_ns), peer
    uslub (with the free mark) or uslub-nomark (without). Per row: the
    medians, with / without, the cost in %, and the ratios of the two
    processes of each round; the geometric means of the B1 and the B8
    rows."""
    mark, nomark = BDFREE_PEERS
    entry = {"title": BENCH_TITLES["B-dfree"], "unit": BENCH_UNITS["B-dfree"],
             "peers": {mark: "with the free mark (as built)",
                       nomark: "the same core compiled with USLUB_NO_FREE_MARK"},
             "rounds": mode["Bdfree_rounds"], "B1_iters": mode["B1_iters"],
             "B8_scale": mode["B8_scale"], "rows": {}, "geomean": {}, "targets": [],
             "note": "no target: what the double-free check costs", "pass": None}
    for sub in subs:
        b, x = sub
        per = results[("B-dfree", sub)]
        row = {"bench": b, "size" if b == "B1" else "workload": x,
               "unit": "ns per alloc+free pair" if b == "B1" else "ms per workload run",
               "median": {}, "p25": {}, "p75": {}, "rounds": {}, "round_values": {},
               "runs": {}}
        by_round = {}
        for p in BDFREE_PEERS:
            runs = per.get(p, {}).get("runs")
            if not runs:
                continue
            if b == "B1":
                xs = per[p]["samples"]
                rv = [statistics.median(r["samples_ns"]) for r in runs]
            else:
                xs = rv = [r["time_ns"] / 1e6 for r in runs]
                rs = [r["peak_rss_kb"] / 1024 for r in runs]
                row.setdefault("peak_rss_mib", {})[p] = round(statistics.median(rs), 3)
            st = stats_of(xs)
            row["median"][p], row["p25"][p], row["p75"][p] = st["median"], st["p25"], st["p75"]
            # the fastest sample: other load only adds time
            row.setdefault("min", {})[p] = round(min(xs), 4)
            row["rounds"][p] = len(runs)
            row["round_values"][p] = [round(v, 4) for v in rv]
            by_round[p] = {r.get("round"): v for r, v in zip(runs, rv)}
            if b == "B1":
                row["samples_ns"] = dict(row.get("samples_ns", {}), **{p: xs})
            row["runs"][p] = run_extras(runs, drop=("samples_ns", "bench", "peer", "size",
                                                    "workload", "label"))
        if not row["median"]:
            continue
        med = row["median"]
        if mark in med and nomark in med:
            r = med[mark] / med[nomark]
            row["ratio"] = round(r, 4)
            row["cost_pct"] = round((r - 1) * 100, 2)
            rr = [by_round[mark][k] / by_round[nomark][k] for k in sorted(by_round[mark])
                  if k in by_round[nomark] and by_round[nomark][k]]
            row["round_ratios"] = [round(v, 4) for v in rr]
            if rr:
                row["round_ratio_median"] = round(statistics.median(rr), 4)
            if "peak_rss_mib" in row and row["peak_rss_mib"].get(nomark):
                row["rss_ratio"] = round(row["peak_rss_mib"][mark] /
                                         row["peak_rss_mib"][nomark], 4)
        entry["rows"][config_label("B-dfree", sub)] = row
    for b in ("B1", "B8"):
        rows = [r for r in entry["rows"].values() if r["bench"] == b and "ratio" in r]
        if not rows:
            continue
        g = geomean([r["ratio"] for r in rows])
        gr = [r["round_ratio_median"] for r in rows if "round_ratio_median" in r]
        entry["geomean"][b] = {
            "ratio": round(g, 4), "cost_pct": round((g - 1) * 100, 2),
            "round_ratio_median": round(geomean(gr), 4) if len(gr) == len(rows) else None,
            "rows": len(rows), "of": len([s_ for s_ in subs if s_[0] == b])}
    return entry


def print_bdebug(e, log):
    nodebug, debug = BDEBUG_PEERS[0][0], BDEBUG_PEERS[1][0]
    flags = e["debug_spec"].split(",")[0]
    log("")
    log("%s  %s  (%s)" % ("B-debug", e["title"], e["unit"]))
    log("  per round one process with USLUB_DEBUG=\"%s\" (%s), one without (%s); both time "
        "the plain cache" % (e["debug_spec"], debug, nodebug))
    log("  bench-plain-SIZE with B5's patterns while bench-debug-other-SIZE (a debug cache in "
        "%s only) holds objects" % debug)
    log("  and allocates a few before each timed loop; ratio = debug-other / nodebug (ratio "
        "of medians); paired = median")
    log("  of the per-sample ratios of the two processes of each round; x! misses <= %.2fx"
        % e["limit"])
    log("  %-6s %-13s %9s %13s %11s %13s %7s %7s" % (
        "size", "pattern", "nodebug", "p25-p75", "debug-other", "p25-p75", "ratio", "paired"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        missed = {t["pattern"] for t in s["targets"] if t["pass"] is False}
        for pat, label in B56_PATTERNS:
            pr = s["paired_ratio_median"].get(pat)
            log("  %-6s %-13s %s %13s %11s %13s %7s %7s" % (
                size + " B", label, fmt_ns(med.get("%s %s" % (nodebug, pat))),
                fmt_spread(s, "%s %s" % (nodebug, pat)),
                fmt_ns(med.get("%s %s" % (debug, pat))).strip(),
                fmt_spread(s, "%s %s" % (debug, pat)),
                fmt_ratio(s["ratios"].get("debug-other / nodebug, " + pat), pat in missed),
                "%.2fx" % pr if pr is not None else "-"))
    log("  no target: what %s costs the debug cache itself, bench-debug-other-SIZE in %s"
        % (flags, debug))
    log("  against the same cache in %s, the same loops, %s pairs / objects per sample" % (
        nodebug, "/".join(str(n) for n in e["other_iters"]) or "?"))
    log("  %-6s %-13s %9s %13s %9s %13s %8s   %s" % (
        "size", "pattern", flags, "p25-p75", "no debug", "p25-p75", "ratio",
        "stride x objs/slab with / without"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]

        def layout(peer):
            c = s["caches"].get(peer, {}).get("other")
            return "%d B x %d" % (c["stride"], c["objs_per_slab"]) if c else "-"
        for pat, label in B56_PATTERNS:
            r = s["ratios"].get("debug cache / plain, " + pat)
            line = "  %-6s %-13s %s %13s %s %13s %8s   %s" % (
                size + " B", label, fmt_ns(med.get("%s other %s" % (debug, pat))),
                fmt_spread(s, "%s other %s" % (debug, pat)),
                fmt_ns(med.get("%s other %s" % (nodebug, pat))),
                fmt_spread(s, "%s other %s" % (nodebug, pat)),
                "%.1fx" % r if r is not None else "-",
                "%s / %s" % (layout(debug), layout(nodebug)) if pat == "pair" else "")
            log(line.rstrip())


def print_bdfree(e, log):
    mark, nomark = BDFREE_PEERS
    log("")
    log("%s  %s  (%s)" % ("B-dfree", e["title"], e["unit"]))
    log("  with = uslub as built (each free tests and writes the free mark, each allocation "
        "clears it); without = %s," % nomark)
    log("  the same core compiled with USLUB_NO_FREE_MARK; per round B1 on "
        "uslub-bench-uslub / %s (%d pairs" % (USLUB_NOMARK_BENCH, e["B1_iters"]))
    log("  per sample) and each B8 workload (--scale %g) under LD_PRELOAD of %s / %s," % (
        e["B8_scale"], USLUB_MALLOC_LIB, USLUB_NOMARK_MALLOC_LIB))
    log("  the two back to back, %d rounds; ratio = with / without (ratio of medians), "
        "cost = ratio - 1;" % e["rounds"])
    log("  rounds = median (min..max) of the per-round ratios; no target")
    log("  %-11s %9s %15s %9s %15s %7s %7s  %-20s %s" % (
        "", "with", "p25-p75", "without", "p25-p75", "ratio", "cost", "rounds",
        "peak RSS MiB w/wo"))
    for key, r in e["rows"].items():
        def spread(p):
            return "%.2f-%.2f" % (r["p25"][p], r["p75"][p]) if p in r["p25"] else "-"
        rr = r.get("round_ratios") or []
        rss = r.get("peak_rss_mib", {})
        log(("  %-11s %s %15s %s %15s %7s %7s  %-20s %s" % (
            key, fmt_ns(r["median"].get(mark)), spread(mark), fmt_ns(r["median"].get(nomark)),
            spread(nomark), fmt_ratio(r.get("ratio")),
            "%+.1f%%" % r["cost_pct"] if "cost_pct" in r else "-",
            "%.3fx (%.2f..%.2f)" % (r["round_ratio_median"], min(rr), max(rr)) if rr else "-",
            "%.1f/%.1f" % (rss[mark], rss[nomark]) if mark in rss and nomark in rss else
            "")).rstrip())
    for b, g in e["geomean"].items():
        log("  %-11s %9s %15s %9s %15s %7s %7s  %s" % (
            "geomean " + b, "", "", "", "", fmt_ratio(g["ratio"]), "%+.1f%%" % g["cost_pct"],
            ("%.3fx" % g["round_ratio_median"] if g.get("round_ratio_median") else "-") +
            ("" if g["rows"] == g["of"] else "  (%d of %d rows)" % (g["rows"], g["of"]))))
