"""B-scale (the malloc suite's threaded workloads at 1, 2, 4, .. threads up
to 4x the CPUs): analysis, targets, the text table and its plot panels."""

import statistics

from .config import (
    BENCH_TITLES, BENCH_UNITS, BSCALE, BSCALE_RSS_LIMIT, BSCALE_TIME_LIMIT, BSCALE_USLUB_MODES,
    BSCALE_VS, BSCALE_WORKLOADS, CPUSLABS, PERCPU, PERCPU_STATE, SUITE_OTHERS,
)
from .stats import quantile, run_extras


def bscale_series():
    """The peers of B-scale in table order: uslub's modes, then the others."""
    return [m for m, _ in BSCALE_USLUB_MODES] + SUITE_OTHERS


def analyse_bscale(results, configs, mode):
    """Per workload, thread count and peer: the median time and peak RSS
    over the rounds (with p25/p75 of the time); each uslub mode's ratios
    to every other peer; per uslub mode and workload the targets (time <=
    BSCALE_TIME_LIMIT x and RSS <= BSCALE_RSS_LIMIT x BSCALE_VS's at every
    thread count)."""
    sizes = [sz for b, sz in configs if b == BSCALE]
    uslubs = [m for m, _ in BSCALE_USLUB_MODES]
    entry = {"title": BENCH_TITLES[BSCALE], "unit": BENCH_UNITS[BSCALE],
             "scale": mode["Bscale_scale"], "vs": BSCALE_VS, "time_limit": BSCALE_TIME_LIMIT,
             "rss_limit": BSCALE_RSS_LIMIT,
             "uslub_modes": {m: env for m, env in BSCALE_USLUB_MODES},
             "threads": sorted({n for _, n in sizes}),
             "workloads": {}}
    if PERCPU_STATE.get("available") is False:
        entry["percpu_unavailable"] = {"label": PERCPU_STATE.get("label"),
                                       "why": PERCPU_STATE.get("why")}
    for w, suite_w in BSCALE_WORKLOADS:
        ns = [n for w_, n in sizes if w_ == w]
        if not ns:
            continue
        e = {"suite_workload": suite_w, "threads": ns, "time_ms": {}, "time_ms_p25": {},
             "time_ms_p75": {}, "peak_rss_mib": {}, "time_ratio": {}, "rss_ratio": {},
             "runs": {}}
        for n in ns:
            key = str(n)
            for p, slot in results.get((BSCALE, (w, n)), {}).items():
                runs = slot.get("runs")
                if not runs:
                    continue
                ts = [r["time_ns"] / 1e6 for r in runs]
                e["time_ms"].setdefault(p, {})[key] = round(statistics.median(ts), 3)
                e["time_ms_p25"].setdefault(p, {})[key] = round(quantile(ts, 0.25), 3)
                e["time_ms_p75"].setdefault(p, {})[key] = round(quantile(ts, 0.75), 3)
                e["peak_rss_mib"].setdefault(p, {})[key] = round(
                    statistics.median(r["peak_rss_kb"] / 1024 for r in runs), 3)
                e["runs"].setdefault(p, {})[key] = run_extras(
                    runs, drop=("workload", "label", "malloc_lib"))
        # {uslub mode: {peer: {threads: ratio}}}
        for u in uslubs:
            for metric, src in (("time_ratio", "time_ms"), ("rss_ratio", "peak_rss_mib")):
                mine = e[src].get(u, {})
                for p, theirs in e[src].items():
                    if p == u:
                        continue
                    e[metric].setdefault(u, {})[p] = {
                        k: round(v / theirs[k], 4) for k, v in mine.items() if theirs.get(k)}
        e["targets"] = bscale_targets(e, uslubs, w)
        entry["workloads"][w] = e
    entry["targets"] = [t for e in entry["workloads"].values() for t in e["targets"]]
    fails = [t["pass"] for t in entry["targets"]]
    entry["pass"] = False if False in fails else (True if fails and None not in fails else None)
    return entry


def bscale_targets(e, uslubs, w):
    """Per uslub mode: time and RSS against BSCALE_VS at every thread count;
    met when every measured thread count is within the limit (a count the
    peer or the mode did not run makes the row "not measured")."""
    out = []
    off = PERCPU_STATE.get("label") if PERCPU_STATE.get("available") is False else None
    for u in uslubs:
        if u == PERCPU and off:
            # no rseq: the mode was not run, its rows say why
            out += [{"target": "%s %s %s <= %.1fx %s at every thread count" % (
                u, w, what, limit, BSCALE_VS), "series": u, "workload": w, "peer": BSCALE_VS,
                "metric": metric, "limit": limit, "ratio": None, "pass": None, "note": off}
                for metric, limit, what in (("time", BSCALE_TIME_LIMIT, "time"),
                                            ("rss", BSCALE_RSS_LIMIT, "peak RSS"))]
            continue
        if u not in e["time_ms"]:
            continue
        for metric, key, limit, what in (("time", "time_ratio", BSCALE_TIME_LIMIT, "time"),
                                         ("rss", "rss_ratio", BSCALE_RSS_LIMIT, "peak RSS")):
            c = {"target": "%s%s %s <= %.1fx %s at every thread count" % (
                "" if u == "uslub" else u + " ", w, what, limit, BSCALE_VS),
                 "series": u, "workload": w, "peer": BSCALE_VS, "metric": metric,
                 "limit": limit}
            r = e[key].get(u, {}).get(BSCALE_VS, {})
            missing = [n for n in e["threads"] if str(n) not in r]
            if not r or missing:
                c.update(ratio=None, pass_=None, note="not measured (%s missing)" % (
                    BSCALE_VS if not r else "threads " + ",".join(map(str, missing))))
            else:
                worst = max(r, key=lambda k: r[k])
                c.update(ratio=r[worst], threads=int(worst),
                         missed_at=[int(k) for k in r if r[k] > limit],
                         pass_=r[worst] <= limit)
            c["pass"] = c.pop("pass_")
            out.append(c)
    return out


def bscale_target_row(t):
    """(measured, verdict) of one B-scale target for the targets table."""
    if t["pass"] is None:
        return t.get("note", "not measured"), "SKIP"
    measured = "max %.2fx (%d thr)" % (t["ratio"], t["threads"])
    if t["pass"]:
        return measured, "met"
    return measured, "missed at %s threads" % ",".join(str(n) for n in t["missed_at"])


def print_bscale(e, log):
    peers = [p for p in bscale_series()
             if any(p in w["time_ms"] for w in e["workloads"].values())]
    uslubs = [m for m, _ in BSCALE_USLUB_MODES if m in peers]
    log("")
    log("%s  %s  (%s)" % (BSCALE, e["title"], e["unit"]))
    log("  uslub-bench-mallocsuite --workload W --threads N --scale %g; one process per "
        "workload, thread count, peer and round; medians" % e["scale"])
    log("  larson: live sets handed between threads; xmalloc: N/2 producer->consumer pairs; "
        "churn: each thread its own live set (the suite's threads)")
    short = {u: {"uslub": "u", CPUSLABS: "c", PERCPU: "p"}.get(u, u.replace("uslub-", "")[:6])
             for u in uslubs}
    for m in uslubs:
        env = e["uslub_modes"].get(m) or {}
        log("  %-14s = libuslub-malloc.so%s (%s/ columns)" % (
            m, (" with " + " ".join("%s=%s" % kv for kv in env.items())) if env else "",
            short[m]))
    if PERCPU not in uslubs and e.get("percpu_unavailable"):
        log("  %-14s = %s: %s" % (PERCPU, e["percpu_unavailable"]["label"],
                                  e["percpu_unavailable"]["why"]))
    cols = "".join("%12s" % p[:11] for p in peers)
    for w, we in e["workloads"].items():
        for metric, src, label, ratio_key in (("time", "time_ms", "time, ms", "time_ratio"),
                                              ("rss", "peak_rss_mib", "peak RSS, MiB",
                                               "rss_ratio")):
            rhead = "".join("%10s" % ("%s/mi-3.4" % short[u]) for u in uslubs)
            log("  %-8s %-13s%s %s" % (w, label, cols, rhead))
            for n in we["threads"]:
                k = str(n)
                vals = "".join(("%12.1f" % we[src][p][k]) if k in we[src].get(p, {})
                               else "%12s" % "-" for p in peers)
                rats = ""
                for u in uslubs:
                    r = we[ratio_key].get(u, {}).get(e["vs"], {}).get(k)
                    rats += ("%9.2fx" % r) if r is not None else "%10s" % "-"
                log("  %-8s %-13s%s %s" % ("", "%d threads" % n, vals, rats))
    log("  targets: uslub / %s <= %.1fx in time and <= %.1fx in peak RSS at every thread "
        "count" % (e["vs"], e["time_limit"], e["rss_limit"]))
    for t in e["targets"]:
        measured, verdict = bscale_target_row(t)
        log("    %-58s %-20s %s" % (t["target"], measured, verdict))


def plot_bscale(ax, e, w, colors):
    """One panel: the median time of every peer against the thread count
    (log2 x axis), p25-p75 whiskers."""
    we = e["workloads"][w]
    for p in bscale_series():
        if p not in we["time_ms"]:
            continue
        ks = [str(n) for n in we["threads"] if str(n) in we["time_ms"][p]]
        xs = [int(k) for k in ks]
        ys = [we["time_ms"][p][k] for k in ks]
        lo = [max(0.0, y - we["time_ms_p25"][p][k]) for y, k in zip(ys, ks)]
        hi = [max(0.0, we["time_ms_p75"][p][k] - y) for y, k in zip(ys, ks)]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2,
                    lw=2 if p.startswith("uslub") else 1, label=p,
                    color=colors.get(p, "#17becf"))
    ax.set_xscale("log", base=2)
    ax.set_xticks(we["threads"])
    ax.set_xticklabels([str(n) for n in we["threads"]])
    ax.set_xlabel("threads", fontsize=8)
    ax.set_ylabel("ms per run (lower is better)", fontsize=8)
    ax.set_title("%s %s: time vs threads" % (BSCALE, w), fontsize=9)
    ax.legend(fontsize=6)
