"""B8 (the malloc workloads: time, peak RSS, page faults) and B9 (RSS held
in per-thread caches): analysis, targets and text tables."""

import os
import statistics

from .config import (
    B8_LARGE, B8_LARGE_LIMIT, B8_LARGE_VS, B8_OWN_ROWS, B8_RETURNED, B8_RSS_LIMIT, B8_RSS_VS,
    B8_ROW_TARGETS, B8_THREADED, B8_THREADED_LIMIT, B8_THREADED_VS, B8_TIME_VS, B8_VS, B8_WAVES,
    B8_WAVES_LIMIT, B8_WAVES_VS, B8_WHAT, B8_WORST_LIMIT, B8_WORST_VS, B9_LIMIT, B9_MIN_SLOPE,
    B9_VS, BENCH_TITLES,
    BENCH_UNITS, CPUSLABS, MIMALLOC3, PERCPU, PERCPU_B9_FEWEST_LIMIT, PERCPU_B9_SLOPE,
    PERCPU_COST_LIMIT, PERCPU_OVERSUB_LIMIT, PERCPU_STATE, PERCPU_THREADED, PERCPU_THREADED_RSS_LIMIT,
    PERCPU_THREADED_TIME_LIMIT, PERCPU_THREADED_VS, SUITE_OTHERS, SUITE_PEERS, USLUB_MODE,
    USLUB_SERIES,
)
from .fmt import fmt_ratio
from .stats import geomean, quantile, run_extras, series_prefix, verdict_of


def analyse_b8(results, workloads, mode):
    """B8: per workload and peer, the median time and peak RSS over the
    rounds; uslub's ratios to each peer; their geometric means over the
    workloads, checked against the targets for B8_VS. The rows of
    B8_OWN_ROWS (large, the waves, the threaded rows) stay outside the
    geometric means, each with targets of its own."""
    geo_ws = [w for w in workloads if w not in B8_OWN_ROWS]
    entry = {"title": BENCH_TITLES["B8"], "unit": BENCH_UNITS["B8"],
             "scale": mode["B8_scale"], "phase1_mib": mode["B8_phase1_mib"],
             "purge_ms": mode["B8_purge_ms"], "returned_below": B8_RETURNED,
             "time_limits": {p: lim for p, lim in B8_TIME_VS},
             "worst_vs": B8_WORST_VS, "worst_limit": B8_WORST_LIMIT,
             "rss_vs": B8_RSS_VS, "rss_limit": B8_RSS_LIMIT,
             "large_vs": B8_LARGE_VS, "large_limit": B8_LARGE_LIMIT,
             "waves_vs": B8_WAVES_VS, "waves_limit": B8_WAVES_LIMIT,
             "threaded_vs": B8_THREADED_VS, "threaded_limit": B8_THREADED_LIMIT,
             "geomean_workloads": geo_ws, "workloads": {}}
    for w in workloads:
        per = results[("B8", w)]
        s = {"what": B8_WHAT.get(w, ""), "time_ms": {}, "time_ms_p25": {}, "time_ms_p75": {},
             "peak_rss_mib": {}, "peak_rss_mib_range": {}, "minflt": {}, "time_ratio": {},
             "rss_ratio": {}, "rounds": {}, "runs": {}}
        for p in SUITE_PEERS:
            runs = per.get(p, {}).get("runs")
            if not runs:
                continue
            ts = [r["time_ns"] / 1e6 for r in runs]
            rs = [r["peak_rss_kb"] / 1024 for r in runs]
            s["time_ms"][p] = round(statistics.median(ts), 3)
            s["time_ms_p25"][p] = round(quantile(ts, 0.25), 3)
            s["time_ms_p75"][p] = round(quantile(ts, 0.75), 3)
            s["peak_rss_mib"][p] = round(statistics.median(rs), 3)
            s["peak_rss_mib_range"][p] = [round(min(rs), 3), round(max(rs), 3)]
            # minor page faults of the workload function (older binaries: none)
            if all("minflt" in r for r in runs):
                s["minflt"][p] = statistics.median(r["minflt"] for r in runs)
            s["rounds"][p] = len(runs)
            s["runs"][p] = run_extras(runs, drop=("workload", "label", "malloc_lib"))
            if w == "phases":
                def med(key):
                    return statistics.median(r[key] for r in runs)
                frac = med("after_free_frac")
                s.setdefault("phases", {})[p] = {
                    "rss_phase1_peak_mib": round(med("rss_phase1_peak_kb") / 1024, 2),
                    "rss_after_free_nowait_mib": round(med("rss_after_free_nowait_kb") / 1024, 2),
                    "rss_after_free_mib": round(med("rss_after_free_kb") / 1024, 2),
                    "rss_phase2_end_mib": round(med("rss_phase2_end_kb") / 1024, 2),
                    "after_free_frac": round(frac, 4),
                    "memory_returned": frac < B8_RETURNED,
                    "returned_rounds": sum(1 for r in runs if r.get("memory_returned")),
                }
        # each uslub mode against the other peers: "time_ratio"/"rss_ratio"
        # are uslub's (the default mode); "series_ratios" the other modes'
        # ({mode: {"time": {peer: r}, "rss": {peer: r}}}); "mode_ratio" is
        # uslub / uslub-cpuslabs (time and rss)
        s["series_ratios"] = {}
        for series in USLUB_SERIES:
            if series not in s["time_ms"]:
                continue
            tr, rr = {}, {}
            for p in SUITE_OTHERS:
                if p in s["time_ms"]:
                    tr[p] = round(s["time_ms"][series] / s["time_ms"][p], 4)
                    rr[p] = round(s["peak_rss_mib"][series] / s["peak_rss_mib"][p], 4)
            if series == "uslub":
                s["time_ratio"], s["rss_ratio"] = tr, rr
            else:
                s["series_ratios"][series] = {"time": tr, "rss": rr}
        if w == B8_LARGE:
            # uslub's modes / glibc in time and minor page faults
            s["large_ratios"] = {}
            for series in USLUB_SERIES:
                d = {}
                if series in s["time_ms"] and B8_LARGE_VS in s["time_ms"]:
                    d["time"] = round(s["time_ms"][series] / s["time_ms"][B8_LARGE_VS], 4)
                if series in s["minflt"] and s["minflt"].get(B8_LARGE_VS):
                    d["minflt"] = round(s["minflt"][series] / s["minflt"][B8_LARGE_VS], 4)
                if d:
                    s["large_ratios"][series] = d
        if "uslub" in s["time_ms"] and CPUSLABS in s["time_ms"]:
            s["mode_ratio"] = {
                "time": round(s["time_ms"]["uslub"] / s["time_ms"][CPUSLABS], 4),
                "rss": round(s["peak_rss_mib"]["uslub"] / s["peak_rss_mib"][CPUSLABS], 4)}
        # the per-CPU mode against the per-thread one: uslub-percpu / uslub
        if "uslub" in s["time_ms"] and PERCPU in s["time_ms"]:
            s["percpu_ratio"] = {
                "time": round(s["time_ms"][PERCPU] / s["time_ms"]["uslub"], 4),
                "rss": round(s["peak_rss_mib"][PERCPU] / s["peak_rss_mib"]["uslub"], 4)}
        # the workload's threads (its result line's "threads"; 1 without)
        nthr = {r.get("threads", 1) for slot in per.values() for r in slot.get("runs", [])}
        if nthr:
            s["threads"] = max(nthr)
        entry["workloads"][w] = s

    def ratios_of(series, w):
        s = entry["workloads"][w]
        if series == "uslub":
            return s["time_ratio"], s["rss_ratio"]
        d = s["series_ratios"].get(series, {})
        return d.get("time", {}), d.get("rss", {})

    # geomean: uslub's (as before); geomean_series: the other modes'. Over
    # geo_ws: the workloads but the large-block row (B8_LARGE), which has
    # its own target against glibc
    entry["geomean"], entry["geomean_series"] = {}, {}
    for series in USLUB_SERIES:
        geo = {}
        for p in SUITE_OTHERS:
            common = [w for w in geo_ws if p in ratios_of(series, w)[0]]
            if not common:
                continue
            worst = max(common, key=lambda w: ratios_of(series, w)[0][p])
            geo[p] = {"time": round(geomean([ratios_of(series, w)[0][p] for w in common]), 4),
                      "rss": round(geomean([ratios_of(series, w)[1][p] for w in common]), 4),
                      "worst_time": ratios_of(series, worst)[0][p], "worst_workload": worst,
                      "workloads": len(common), "of": len(geo_ws)}
        if series == "uslub":
            entry["geomean"] = geo
        elif geo:
            entry["geomean_series"][series] = geo
    pc = [w for w in geo_ws if "percpu_ratio" in entry["workloads"][w]]
    if pc:
        entry["geomean_percpu"] = {
            "time": round(geomean([entry["workloads"][w]["percpu_ratio"]["time"] for w in pc]),
                          4),
            "rss": round(geomean([entry["workloads"][w]["percpu_ratio"]["rss"] for w in pc]), 4),
            "workloads": len(pc), "of": len(geo_ws)}
    entry["nproc"] = os.cpu_count() or 1
    if PERCPU_STATE.get("available") is False:
        entry["percpu_unavailable"] = {"label": PERCPU_STATE.get("label"),
                                       "why": PERCPU_STATE.get("why")}
    both = [w for w in geo_ws if "mode_ratio" in entry["workloads"][w]]
    if both:
        entry["geomean_modes"] = {
            "time": round(geomean([entry["workloads"][w]["mode_ratio"]["time"] for w in both]), 4),
            "rss": round(geomean([entry["workloads"][w]["mode_ratio"]["rss"] for w in both]), 4),
            "workloads": len(both), "of": len(geo_ws)}
    targets = []
    for series in USLUB_SERIES:
        measured = any(series in e["time_ms"] for e in entry["workloads"].values())
        if series != "uslub" and not measured:
            continue
        geo = entry["geomean"] if series == "uslub" else entry["geomean_series"].get(series, {})
        targets += b8_targets(series, geo, measured, entry, geo_ws)
        targets += b8_row_targets(series, entry)
    targets += b8_percpu_targets(entry)
    entry["targets"] = targets
    entry["pass"] = verdict_of(targets)
    return entry


def b8_targets(series, geo, measured, entry, geo_ws):
    """B8's targets for one uslub mode: from its geometric means @geo (over
    @geo_ws), phases' memory return and the large-block row in @entry."""
    targets = []
    pre = series_prefix(series)

    def from_geo(name, p, key, limit, **extra):
        c = {"target": pre + name, "series": series, "peer": p, "metric": key,
             "limit": limit}
        c.update(extra)
        g = geo.get(p)
        if not g:
            c.update(ratio=None, note="not measured (%s missing)" % (
                series if not measured else p))
            c["pass"] = None
        else:
            c["ratio"] = g[key]
            if key == "worst_time":
                c["workload"] = g["worst_workload"]
                c["note"] = "worst: %s" % g["worst_workload"]
            if g["workloads"] < g["of"]:
                c["pass"] = None
                c["note"] = "only %d of %d workloads measured" % (g["workloads"], g["of"])
            else:
                c["pass"] = g[key] <= limit
        targets.append(c)

    for p, limit in B8_TIME_VS:
        from_geo("geometric mean time <= %.1fx %s" % (limit, p), p, "time", limit)
    from_geo("no workload's time above %.1fx %s" % (B8_WORST_LIMIT, B8_WORST_VS),
             B8_WORST_VS, "worst_time", B8_WORST_LIMIT)
    for p in B8_RSS_VS:
        from_geo("geometric mean peak RSS <= %.1fx %s" % (B8_RSS_LIMIT, p), p, "rss",
                 B8_RSS_LIMIT)
    # phases: the memory freed goes back (RSS after the purge wait below
    # B8_RETURNED of the peak)
    c = {"target": "%sphases returns memory (< %d%% of peak after the wait)" % (
        pre, B8_RETURNED * 100), "series": series, "limit": B8_RETURNED, "metric": "returned"}
    ph = entry["workloads"].get("phases", {}).get("phases", {}).get(series)
    if "phases" not in entry["workloads"]:
        c.update(ratio=None, note="not measured (phases not run)", pass_=None)
    elif not ph:
        c.update(ratio=None, note="not measured (%s missing)" % series, pass_=None)
    else:
        c.update(ratio=ph["after_free_frac"], pass_=ph["after_free_frac"] < B8_RETURNED)
    c["pass"] = c.pop("pass_")
    targets.append(c)
    # the large-block row against glibc: time and minor page faults
    lg = entry["workloads"].get(B8_LARGE)
    for key, what in (("time", "time"), ("minflt", "page faults")):
        c = {"target": "%s%s %s <= %.1fx %s" % (pre, B8_LARGE, what, B8_LARGE_LIMIT,
                                                B8_LARGE_VS),
             "series": series, "peer": B8_LARGE_VS, "metric": "large_" + key,
             "limit": B8_LARGE_LIMIT}
        r = (lg or {}).get("large_ratios", {}).get(series, {}).get(key)
        if lg is None:
            c.update(ratio=None, note="not measured (%s not run)" % B8_LARGE, pass_=None)
        elif r is None:
            c.update(ratio=None, note="not measured (%s missing)" % (
                series if series not in lg["time_ms"] else B8_LARGE_VS), pass_=None)
        else:
            c.update(ratio=r, pass_=r <= B8_LARGE_LIMIT)
        c["pass"] = c.pop("pass_")
        targets.append(c)
    return targets


def b8_row_targets(series, entry):
    """The targets of the rows with one of their own (B8_ROW_TARGETS: the
    waves rows, metric "waves_time", and the threaded rows, "row_time")
    for one uslub mode: each one's time <= its limit x its peer's (the
    median times' ratio, as every B8 ratio); none for a row that did not
    run (--only, an older configuration)."""
    targets = []
    pre = series_prefix(series)
    for w, vs, limit in B8_ROW_TARGETS:
        s = entry["workloads"].get(w)
        if s is None:
            continue
        c = {"target": "%s%s time <= %.1fx %s" % (pre, w, limit, vs),
             "series": series, "peer": vs,
             "metric": "waves_time" if w in B8_WAVES else "row_time", "limit": limit}
        if series == "uslub":
            r = s["time_ratio"].get(vs)
        else:
            r = s["series_ratios"].get(series, {}).get("time", {}).get(vs)
        if r is None:
            c.update(ratio=None, note="not measured (%s missing)" % (
                series if series not in s["time_ms"] else vs), pass_=None)
        else:
            c.update(ratio=r, pass_=r <= limit)
        c["pass"] = c.pop("pass_")
        targets.append(c)
    return targets


def b8_percpu_targets(entry):
    """The per-CPU mode's own B8 targets: its geometric mean time <=
    PERCPU_COST_LIMIT x the per-thread mode's (uslub's, over the same
    workloads); on each threaded workload (PERCPU_THREADED) that runs more
    threads than the machine has CPUs, time <= PERCPU_OVERSUB_LIMIT x
    uslub's; on each threaded workload, time <= PERCPU_THREADED_TIME_LIMIT
    x and peak RSS <= PERCPU_THREADED_RSS_LIMIT x PERCPU_THREADED_VS's (the
    time rows B8_ROW_TARGETS already has are not repeated). All ratios of
    medians over the rounds. Without the mode (no rseq) each says so."""
    ws = entry["workloads"]
    measured = any(PERCPU in s["time_ms"] for s in ws.values())
    off = PERCPU_STATE.get("label") if PERCPU_STATE.get("available") is False else None
    if not measured and not off:
        return []
    pre = PERCPU + " "
    targets = []

    def add(name, ratio, limit, missing, **extra):
        c = {"target": pre + name, "series": PERCPU, "limit": limit}
        c.update(extra)
        if off:
            c.update(ratio=None, note=off, pass_=None)
        elif ratio is None:
            c.update(ratio=None, note="not measured (%s missing)" % missing, pass_=None)
        else:
            c.update(ratio=ratio, pass_=ratio <= limit)
        c["pass"] = c.pop("pass_")
        targets.append(c)

    g = entry.get("geomean_percpu")
    add("geometric mean time <= %.2fx uslub (the per-thread mode)" % PERCPU_COST_LIMIT,
        g["time"] if g else None, PERCPU_COST_LIMIT, PERCPU if not g else "",
        peer="uslub", metric="percpu_cost")
    if g and g["workloads"] < g["of"] and not off:
        targets[-1].update({"pass": None, "note": "only %d of %d workloads measured" % (
            g["workloads"], g["of"])})
    ncpu = entry.get("nproc", 1)
    own_time = {(w, vs, lim) for w, vs, lim in B8_ROW_TARGETS}
    for w in PERCPU_THREADED:
        s = ws.get(w)
        if s is None:
            continue
        nthr = s.get("threads")
        if off or (nthr and nthr > ncpu):
            add("%s time <= %.1fx uslub (%s threads > %d CPUs)" % (
                w, PERCPU_OVERSUB_LIMIT, nthr or "?", ncpu),
                s.get("percpu_ratio", {}).get("time"), PERCPU_OVERSUB_LIMIT,
                PERCPU if PERCPU not in s["time_ms"] else "uslub", peer="uslub",
                metric="percpu_cost", workload_row=w)
        for metric, limit, what in (("time", PERCPU_THREADED_TIME_LIMIT, "time"),
                                    ("rss", PERCPU_THREADED_RSS_LIMIT, "peak RSS")):
            if metric == "time" and (w, PERCPU_THREADED_VS, limit) in own_time:
                continue        # b8_row_targets has it
            r = s["series_ratios"].get(PERCPU, {}).get(metric, {}).get(PERCPU_THREADED_VS)
            add("%s %s <= %.1fx %s" % (w, what, limit, PERCPU_THREADED_VS), r, limit,
                PERCPU if PERCPU not in s["time_ms"] else PERCPU_THREADED_VS,
                peer=PERCPU_THREADED_VS, metric="row_" + metric, workload_row=w)
    return targets


def analyse_b9(results, threads):
    """B9: per peer and thread count, the median RSS held after the threads
    freed everything (above the baseline with the same threads started);
    the growth per thread from the fewest to the most threads, and uslub's
    against B9_VS's."""
    lo, hi = min(threads), max(threads)
    entry = {"title": BENCH_TITLES["B9"], "unit": BENCH_UNITS["B9"], "threads": threads,
             "limit": B9_LIMIT, "min_slope_kb": B9_MIN_SLOPE, "peers": {}}
    fields = ("rss_held_kb", "rss_baseline_kb", "rss_live_kb", "rss_cached_kb",
              "rss_joined_kb", "rss_nothreads_kb")
    for p in SUITE_PEERS:
        d = {f: {} for f in fields}
        d["held_kb_range"], d["rounds"] = {}, {}
        for n in threads:
            runs = results[("B9", n)].get(p, {}).get("runs")
            if not runs:
                continue
            for f in fields:
                d[f][str(n)] = statistics.median(r[f] for r in runs)
            held = [r["rss_held_kb"] for r in runs]
            d["held_kb_range"][str(n)] = [min(held), max(held)]
            d["rounds"][str(n)] = len(runs)
        if not d["rss_held_kb"]:
            continue
        h = d["rss_held_kb"]
        d["held_per_thread_kb"] = {k: round(v / int(k), 2) for k, v in h.items()}
        if str(lo) in h and str(hi) in h and hi > lo:
            d["slope_kb_per_thread"] = round((h[str(hi)] - h[str(lo)]) / (hi - lo), 3)
        entry["peers"][p] = d
    slopes = {p: d["slope_kb_per_thread"] for p, d in entry["peers"].items()
              if "slope_kb_per_thread" in d}
    entry["slope_ratios"] = {}
    if "uslub" in slopes:
        entry["slope_ratios"] = {p: round(slopes["uslub"] / v, 4) for p, v in slopes.items()
                                 if p != "uslub" and v >= B9_MIN_SLOPE}
    entry["targets"] = [b9_slope_vs(slopes, "uslub")]
    if PERCPU in entry["peers"] or PERCPU_STATE.get("available") is False:
        entry["targets"] += b9_percpu_targets(entry, slopes, lo, hi)
    entry["pass"] = verdict_of(entry["targets"])
    return entry


def b9_slope_vs(slopes, series):
    """B9's target for one uslub mode: its RSS growth per thread <= B9_LIMIT
    x B9_VS's (flat where the peer is flat)."""
    pre = "" if series == "uslub" else series + " "
    c = {"target": "%sRSS growth per thread <= %.1fx %s's" % (pre, B9_LIMIT, B9_VS),
         "series": series, "peer": B9_VS, "limit": B9_LIMIT}
    u, m = slopes.get(series), slopes.get(B9_VS)
    if series == PERCPU and PERCPU_STATE.get("available") is False:
        c.update(ratio=None, note=PERCPU_STATE.get("label"), pass_=None)
    elif u is None or m is None:
        c.update(ratio=None, note="not measured (%s missing)" % (series if u is None else B9_VS),
                 pass_=None)
    elif m < B9_MIN_SLOPE:
        # the peer is flat: the ratio means nothing, uslub must be flat too
        c.update(ratio=None, note="%s flat (%.2f KiB/thread); %s %.2f KiB/thread" % (
            B9_VS, m, series, u), pass_=u < B9_MIN_SLOPE)
    else:
        c.update(ratio=round(u / m, 4), pass_=u / m <= B9_LIMIT)
    c["slope_kb_per_thread"] = {series: u, B9_VS: m}
    c["pass"] = c.pop("pass_")
    return c


def b9_percpu_targets(entry, slopes, lo, hi):
    """The per-CPU mode's B9 targets: its RSS growth per thread against
    B9_VS's (as uslub's); flat: <= PERCPU_B9_SLOPE KiB per thread from @lo
    to @hi threads; and held at @lo threads <= PERCPU_B9_FEWEST_LIMIT x the
    per-thread mode's (medians over the rounds). Without the mode (no rseq)
    each says so."""
    off = PERCPU_STATE.get("label") if PERCPU_STATE.get("available") is False else None
    out = [b9_slope_vs(slopes, PERCPU)]
    if off:
        entry["percpu_unavailable"] = {"label": off, "why": PERCPU_STATE.get("why")}
    c = {"target": "%s RSS growth per thread <= %g KiB (flat, %d to %d threads)" % (
        PERCPU, PERCPU_B9_SLOPE, lo, hi), "series": PERCPU, "metric": "slope_kb",
         "limit": PERCPU_B9_SLOPE}
    sl = slopes.get(PERCPU)
    if off:
        c.update(ratio=None, note=off, pass_=None)
    elif sl is None:
        c.update(ratio=None, note="not measured (%s at %d and %d threads missing)" % (
            PERCPU, lo, hi), pass_=None)
    else:
        c.update(ratio=sl, pass_=sl <= PERCPU_B9_SLOPE)
    c["pass"] = c.pop("pass_")
    out.append(c)
    c = {"target": "%s held at %d threads <= %.1fx uslub's (the per-thread mode)" % (
        PERCPU, lo, PERCPU_B9_FEWEST_LIMIT), "series": PERCPU, "peer": "uslub",
         "limit": PERCPU_B9_FEWEST_LIMIT, "threads": lo}
    a = entry["peers"].get(PERCPU, {}).get("rss_held_kb", {}).get(str(lo))
    b = entry["peers"].get("uslub", {}).get("rss_held_kb", {}).get(str(lo))
    if off:
        c.update(ratio=None, note=off, pass_=None)
    elif a is None or b is None:
        c.update(ratio=None, note="not measured (%s missing)" % (PERCPU if a is None else "uslub"),
                 pass_=None)
    elif b <= 0:
        c.update(ratio=None, note="uslub held %g KiB" % b, pass_=a <= b)
    else:
        c.update(ratio=round(a / b, 4), pass_=a / b <= PERCPU_B9_FEWEST_LIMIT,
                 held_kb={PERCPU: a, "uslub": b})
    c["pass"] = c.pop("pass_")
    out.append(c)
    return out


def short_peer(p):
    """A peer's name in the 12-character columns of B8's table."""
    return {CPUSLABS: "u-cpuslabs", PERCPU: "u-percpu"}.get(p, p)


# B8's ratio columns: "u/" or "c/" and at most 6 characters of the peer
RATIO_SHORT = {"mimalloc": "mimall", MIMALLOC3: "mi-3.4"}


def ratio_col(prefix, p):
    return prefix + RATIO_SHORT.get(p, p[:6])


def print_b8(e, log):
    ws = e["workloads"]
    peers = [p for p in SUITE_PEERS if any(p in s["time_ms"] for s in ws.values())]
    others = [p for p in peers if p not in USLUB_SERIES]
    # ratio columns: "u/" uslub / peer for every other peer; "c/" uslub-cpuslabs
    # / peer for the target peers (B8_VS; bench.json has them all); "p/"
    # uslub-percpu / mimalloc 3.4 (its own targets' peer; "p/u": / uslub)
    cols = [("uslub", p, ratio_col("u/", p)) for p in others] + \
        [(CPUSLABS, p, ratio_col("c/", p)) for p in others if p in B8_VS and CPUSLABS in peers] + \
        [(PERCPU, p, ratio_col("p/", p)) for p in others
         if p == PERCPU_THREADED_VS and PERCPU in peers]
    geo_ws = e.get("geomean_workloads", list(ws))

    def rat(s, series, p, metric):
        if series == "uslub":
            return s["time_ratio" if metric == "time" else "rss_ratio"].get(p)
        return s.get("series_ratios", {}).get(series, {}).get(metric, {}).get(p)

    def geo(series, p, metric):
        g = e["geomean"] if series == "uslub" else e.get("geomean_series", {}).get(series, {})
        return g.get(p, {}).get(metric)
    rounds = sorted({n for s in ws.values() for n in s["rounds"].values()})
    log("")
    log("%s  %s  (%s)" % ("B8", e["title"], e["unit"]))
    log("  uslub-bench-mallocsuite --scale %g, one process per workload, peer and round; "
        "median of %s rounds; ratio = uslub / peer" % (
            e["scale"], "/".join(str(r) for r in rounds) or "0"))
    wwidth = max([9] + [len(w) for w in ws])
    for w, s in ws.items():
        what = s["what"].replace("~P MiB", "%d MiB" % e["phase1_mib"])
        log("  %-*s %s" % (wwidth, w, what))
    for m in USLUB_SERIES:
        if m in peers:
            log("  %-10s = %s%s" % (short_peer(m), USLUB_MODE[m],
                                    " and USLUB_KMALLOC_SHEAVES=0 (malloc's kmalloc "
                                    "caches on cpu slabs too)" if m == CPUSLABS else ""))
    if PERCPU not in peers and e.get("percpu_unavailable"):
        log("  %-10s = %s: %s" % (short_peer(PERCPU), e["percpu_unavailable"]["label"],
                                  e["percpu_unavailable"]["why"]))
    log("  u/ = uslub / peer" + (", c/ = uslub-cpuslabs / peer" if CPUSLABS in peers else "") +
        (", p/ = uslub-percpu / peer" if PERCPU in peers else "") +
        ("; mode = uslub / uslub-cpuslabs" if CPUSLABS in peers and "uslub" in peers else "") +
        ("; p/u = uslub-percpu / uslub (per-CPU over per-thread sheaves)"
         if PERCPU in peers and "uslub" in peers else ""))
    if "mimalloc" in peers or MIMALLOC3 in peers:
        log("  mimalloc = Debian's 2.0 (mimall), %s = mimalloc 3.4 (mi-3.4)" % MIMALLOC3)
    if B8_LARGE in ws:
        log("  geomean = over %s; %s is outside it (its own targets: time and page faults "
            "vs %s)" % (", ".join(geo_ws), B8_LARGE, B8_LARGE_VS))
    waves = [w for w in B8_WAVES if w in ws]
    if waves:
        log("  %s: outside the geomean too (their own targets: time <= %.1fx %s each)" % (
            ", ".join(waves), B8_WAVES_LIMIT, B8_WAVES_VS))
    threaded = [w for w in B8_THREADED if w in ws]
    if threaded:
        log("  %s: the threaded rows, outside the geomean (their own targets: time <= %.1fx "
            "%s each)" % (", ".join(threaded), B8_THREADED_LIMIT, B8_THREADED_VS))
    mode_col = "uslub" in peers and CPUSLABS in peers
    pu_col = "uslub" in peers and PERCPU in peers
    hdr = "".join("%13s" % short_peer(p) for p in peers) + "   " + \
        "".join("%9s" % c[2] for c in cols) + ("%8s" % "mode" if mode_col else "") + \
        ("%8s" % "p/u" if pu_col else "")

    def row(w, s, key, metric, fmt):
        vals = "".join((fmt % s[key][p]) if p in s[key] else "%13s" % "-" for p in peers)
        rats = ""
        for series, p, _ in cols:
            r = rat(s, series, p, metric)
            rats += ("%8.2fx" % r) if r is not None else "%9s" % "-"
        if mode_col:
            r = s.get("mode_ratio", {}).get(metric)
            rats += ("%7.2fx" % r) if r is not None else "%8s" % "-"
        if pu_col:
            r = s.get("percpu_ratio", {}).get(metric)
            rats += ("%7.2fx" % r) if r is not None else "%8s" % "-"
        log("  %-14s%s   %s" % (w, vals, rats))
    for metric, key, label in (("time", "time_ms", "time, ms"),
                               ("rss", "peak_rss_mib", "peak RSS, MiB")):
        log("  %-14s%s" % (label, hdr))
        for w, s in ws.items():
            if w in geo_ws:
                row(w, s, key, metric, "%13.1f")
        g = ""
        for series, p, _ in cols:
            r = geo(series, p, metric)
            g += ("%8.2fx" % r) if r is not None else "%9s" % "-"
        if mode_col:
            r = e.get("geomean_modes", {}).get(metric)
            g += ("%7.2fx" % r) if r is not None else "%8s" % "-"
        if pu_col:
            r = e.get("geomean_percpu", {}).get(metric)
            g += ("%7.2fx" % r) if r is not None else "%8s" % "-"
        log("  %-14s%s   %s" % ("geomean", " " * (13 * len(peers)), g))
        for w, s in ws.items():
            if w not in geo_ws:
                row(w, s, key, metric, "%13.1f")
    lg = ws.get(B8_LARGE)
    if lg and lg["minflt"]:
        log("  %s: minor page faults in the workload (getrusage ru_minflt; median), "
            "uslub's ratios to %s" % (B8_LARGE, B8_LARGE_VS))
        log("  %-14s%s" % ("page faults", "".join("%13s" % short_peer(p) for p in peers)))
        log("  %-14s%s" % (B8_LARGE, "".join(
            ("%13.0f" % lg["minflt"][p]) if p in lg["minflt"] else "%13s" % "-"
            for p in peers)))
        for series, d in lg.get("large_ratios", {}).items():
            log("  %-14s time %s, page faults %s" % (
                "%s/%s" % ({"uslub": "u", CPUSLABS: "c", PERCPU: "p"}.get(series, series),
                           B8_LARGE_VS),
                fmt_ratio(d.get("time")).strip(), fmt_ratio(d.get("minflt")).strip()))
    ph = ws.get("phases", {}).get("phases")
    if ph:
        log("  phases: RSS in MiB at phase 1's peak, right after its frees, after the %d ms "
            "purge wait (%% of the peak, both above" % e["purge_ms"])
        log("  the RSS before phase 1; returned = below %d%%) and at the end of phase 2"
            % (e["returned_below"] * 100))
        log("  %-14s %9s %9s %9s %7s %9s  %s" % ("allocator", "peak", "freed", "waited", "%",
                                                "end", "returned"))
        for p in peers:
            if p not in ph:
                continue
            d = ph[p]
            log("  %-14s %9.1f %9.1f %9.1f %6.0f%% %9.1f  %s" % (
                p, d["rss_phase1_peak_mib"], d["rss_after_free_nowait_mib"],
                d["rss_after_free_mib"], d["after_free_frac"] * 100, d["rss_phase2_end_mib"],
                "yes" if d["memory_returned"] else "no"))


def print_b9(e, log):
    ns = [str(n) for n in e["threads"]]
    peers = [p for p in SUITE_PEERS if p in e["peers"]]
    log("")
    log("%s  %s  (%s)" % ("B9", e["title"], e["unit"]))
    log("  N threads each allocate 1000 objects of 16/32/64/128/256 B, free them all and wait; "
        "held = VmRSS then minus")
    log("  VmRSS with the same threads started but before they called malloc (baseline); "
        "median over the rounds;")
    log("  slope = (held(%s) - held(%s)) / %d per thread; ratio = uslub's slope / the peer's"
        % (ns[-1], ns[0], int(ns[-1]) - int(ns[0])))
    if PERCPU in peers:
        log("  %s = %s" % (PERCPU, USLUB_MODE[PERCPU]))
    elif e.get("percpu_unavailable"):
        log("  %s = %s: %s" % (PERCPU, e["percpu_unavailable"]["label"],
                               e["percpu_unavailable"]["why"]))
    log("  %-12s %s %s %10s %11s" % (
        "allocator", "".join("%11s" % ("held N=" + n) for n in ns),
        "".join("%9s" % ("/thr " + n) for n in ns[-1:]), "slope KiB", "uslub/peer"))
    for p in peers:
        d = e["peers"][p]
        held = "".join(("%11.0f" % d["rss_held_kb"][n]) if n in d["rss_held_kb"]
                       else "%11s" % "-" for n in ns)
        pt = "".join(("%9.1f" % d["held_per_thread_kb"][n]) if n in d["held_per_thread_kb"]
                     else "%9s" % "-" for n in ns[-1:])
        sl = d.get("slope_kb_per_thread")
        r = e["slope_ratios"].get(p)
        log("  %-12s %s %s %10s %11s" % (p, held, pt, "%.1f" % sl if sl is not None else "-",
                                        "%.2fx" % r if r is not None else "-"))
