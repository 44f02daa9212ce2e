"""B1 (single alloc+free, hot) and B4 (remote free): one row per peer and
size, the SPEC targets of each uslub mode (target_checks) and the malloc
front end's row."""

import statistics

from .config import (
    B4_LIMIT, B4_VS, BENCH_TITLES, BENCH_UNITS, CPUSLABS, MALLOCS, OWN, PEER_ORDER,
    PERCPU, PERCPU_COST_LIMIT, PERCPU_STATE, USLUB_MALLOC, USLUB_MALLOC_LIB, USLUB_MODE,
    USLUB_SERIES, USLUB_VARIANTS,
)
from .fmt import fmt_ns
from .stats import quantile, series_prefix, verdict_of


# B1's malloc row: uslub-malloc / the best malloc <= B1_MALLOC_LIMIT at
# the sizes B1_MALLOC_SIZES (the malloc(64)); informational at the
# other sizes.
B1_MALLOC_LIMIT = 0.8
B1_MALLOC_SIZES = (64,)


def percpu_cost_target(size=None):
    """The name of B1's per-CPU mode target: its time against the per-thread
    mode's (uslub's)."""
    return "%s <= %.2fx uslub (the per-thread mode)" % (PERCPU, PERCPU_COST_LIMIT)


def target_checks(bench, med, size=None):
    """Targets of SPEC §3 for one benchmark and size: list of dicts. One set
    per uslub mode (USLUB_SERIES; "series" says which): uslub's always, the
    other modes' when they were measured (the per-CPU mode's B1 row says
    "not available" where discover_percpu() found no rseq); B1: and
    uslub-malloc's, when it was measured."""
    checks = []
    for series in USLUB_SERIES:
        if series != "uslub" and series not in med:
            if series == PERCPU and bench == "B1" and PERCPU_STATE.get("available") is False:
                checks.append({"target": percpu_cost_target(size), "series": PERCPU,
                               "peer": "uslub", "limit": PERCPU_COST_LIMIT, "ratio": None,
                               "peer_ns": None, "pass": None,
                               "note": PERCPU_STATE.get("label", "not available")})
            continue
        checks += series_checks(bench, med, series)
    if bench == "B1" and USLUB_MALLOC in med:
        mallocs = {p: med[p] for p in MALLOCS if p in med}
        c = {"target": "%s malloc(%s)+free <= %.1fx the best malloc" % (
            USLUB_MALLOC, size, B1_MALLOC_LIMIT), "series": USLUB_MALLOC,
             "limit": B1_MALLOC_LIMIT}
        if size not in B1_MALLOC_SIZES:
            c["informational"] = True
        if not mallocs:
            c.update(peer="best malloc", ratio=None, peer_ns=None, pass_=None,
                     note="not measured (no malloc peer)")
        else:
            best = min(mallocs, key=mallocs.get)
            r = med[USLUB_MALLOC] / mallocs[best]
            c.update(target=c["target"] + " (%s)" % best, peer=best, ratio=round(r, 4),
                     peer_ns=round(mallocs[best], 4), pass_=r <= B1_MALLOC_LIMIT)
        c["pass"] = c.pop("pass_")
        checks.append(c)
    return checks


def series_checks(bench, med, series):
    u = med.get(series)
    pre = series_prefix(series)
    checks = []

    def check(name, peer, peer_ns, limit):
        c = {"target": pre + name, "series": series, "peer": peer, "limit": limit}
        if u is None or peer_ns is None:
            c.update(ratio=None, peer_ns=peer_ns, pass_=None,
                     note="not measured (%s missing)" % (series if u is None else peer))
        else:
            ratio = u / peer_ns
            c.update(ratio=round(ratio, 4), peer_ns=round(peer_ns, 4),
                     pass_=ratio <= limit)
        c["pass"] = c.pop("pass_")
        checks.append(c)

    if bench == "B1" and series == PERCPU:
        # the per-CPU mode's cost: its time against the per-thread mode's
        check("<= %.2fx uslub (the per-thread mode)" % PERCPU_COST_LIMIT, "uslub",
              med.get("uslub"), PERCPU_COST_LIMIT)
    if bench == "B1":
        check("<= 1.0x DPDK single get+put", "dpdk", med.get("dpdk"), 1.0)
        mallocs = {p: med[p] for p in MALLOCS if p in med}
        if mallocs:
            best = min(mallocs, key=mallocs.get)
            check("<= 0.8x the best malloc (%s)" % best, best, mallocs[best], 0.8)
            if series == "uslub" and med.get("uslub-hardened") is not None:
                # informational: hardening for every cache, cpu-slab ones too
                h = med["uslub-hardened"] / mallocs[best]
                checks.append({"target": "hardened <= 0.8x the best malloc (%s)" % best,
                               "series": "uslub-hardened", "peer": best, "limit": 0.8,
                               "ratio": round(h, 4), "peer_ns": round(mallocs[best], 4),
                               "pass": h <= 0.8, "informational": True})
        else:
            check("<= 0.8x the best malloc", "best malloc", None, 0.8)
    elif bench == "B4":
        check("<= %.1fx %s" % (B4_LIMIT, B4_VS), B4_VS, med.get(B4_VS), B4_LIMIT)
    return checks


def analyse_single(results, configs, out):
    """B1, B4 (every benchmark without a module of its own, OWN): into
    @out[bench]["sizes"][size], each peer's median, p25, p75 and samples,
    uslub / peer ratios for each uslub mode (and uslub-malloc / each
    malloc), the targets; then each benchmark's verdict."""
    for (bench, size) in configs:
        if bench in OWN:
            continue
        entry = out.setdefault(bench, {
            "title": BENCH_TITLES[bench],
            "unit": BENCH_UNITS[bench],
            "sizes": {},
        })
        per = results[(bench, size)]
        med = {p: statistics.median(v["samples"]) for p, v in per.items()}
        s = {
            "median_ns": {p: round(med[p], 4) for p in PEER_ORDER if p in med},
            "p25_ns": {p: round(quantile(per[p]["samples"], 0.25), 4)
                       for p in PEER_ORDER if p in per},
            "p75_ns": {p: round(quantile(per[p]["samples"], 0.75), 4)
                       for p in PEER_ORDER if p in per},
            "samples_ns": {p: per[p]["samples"] for p in PEER_ORDER if p in per},
            "ratios": {},
            "targets": target_checks(bench, med, size),
            "runs": {p: [{k: v for k, v in r.items()
                          if k not in ("samples_ns", "bench", "peer", "size")}
                         for r in per[p]["runs"]]
                     for p in PEER_ORDER if p in per},
        }
        if "uslub" in med:
            s["ratios"] = {p: round(med["uslub"] / med[p], 4)
                           for p in PEER_ORDER if p in med and p != "uslub"}
        # the other modes' ratios to every peer but uslub's modes
        s["series_ratios"] = {
            series: {p: round(med[series] / med[p], 4) for p in PEER_ORDER
                     if p in med and p not in USLUB_SERIES + list(USLUB_VARIANTS) +
                     [USLUB_MALLOC]}
            for series in USLUB_SERIES[1:] if series in med}
        # the per-CPU mode against the per-thread one (the uslub row's
        # column of the per-CPU mode)
        if PERCPU in med and "uslub" in med:
            s["series_ratios"][PERCPU]["uslub"] = round(med[PERCPU] / med["uslub"], 4)
        # B1: uslub's malloc / each malloc peer (the same loop, both malloc)
        if USLUB_MALLOC in med:
            s["malloc_ratios"] = {p: round(med[USLUB_MALLOC] / med[p], 4)
                                  for p in MALLOCS if p in med}
        entry["sizes"][str(size)] = s
    for bench, entry in out.items():
        if bench in OWN:
            continue
        if bench == "B1" and PERCPU_STATE.get("available") is False:
            entry["percpu_unavailable"] = {"label": PERCPU_STATE.get("label"),
                                           "why": PERCPU_STATE.get("why")}
        # informational rows do not count; None: something was not measured
        entry["pass"] = verdict_of([t for s in entry["sizes"].values() for t in s["targets"]])


def print_single(bench, e, log):
    """B1's or B4's table: one row per size and peer, median, p25, p75 and
    the ratio of each uslub mode (and of uslub-malloc) to the peer."""
    log("")
    log("%s  %s  (%s)" % (bench, e["title"], e["unit"]))
    modes = [m for m in USLUB_SERIES if any(m in s["median_ns"]
                                             for s in e["sizes"].values())]
    for m in modes:
        log("  %-14s = %s" % (m, USLUB_MODE[m]))
    if PERCPU not in modes and e.get("percpu_unavailable"):
        log("  %-14s = %s: %s" % (PERCPU, e["percpu_unavailable"]["label"],
                                  e["percpu_unavailable"]["why"]))
    if PERCPU in modes:
        log("  %-14s   its column's uslub row: %s / uslub, the per-thread mode" % ("", PERCPU))
    umalloc = any("malloc_ratios" in s for s in e["sizes"].values())
    if umalloc:
        log("  %-14s = malloc(size) + free, uslub-bench-malloc with LD_PRELOAD of %s "
            "(the malloc peers' loop)" % (USLUB_MALLOC, USLUB_MALLOC_LIB))
    log("  %-6s %-14s %9s %9s %9s %11s%s%s" % (
        "size", "allocator", "median", "p25", "p75", "uslub/peer",
        "".join(" %15s" % ({CPUSLABS: "cpuslabs/peer", PERCPU: "percpu/peer"}.get(m, m + "/peer"))
                for m in modes[1:]),
        " %15s" % "u-malloc/peer" if umalloc else ""))
    for size, s in e["sizes"].items():
        for p in PEER_ORDER:
            if p not in s["median_ns"]:
                continue
            ratio = "-" if p == "uslub" else "%.2fx" % s["ratios"][p] \
                if p in s["ratios"] else "-"
            more = ""
            for m in modes[1:]:
                r = s.get("series_ratios", {}).get(m, {}).get(p)
                more += " %15s" % ("%.2fx" % r if r is not None else "-")
            if umalloc:
                r = s.get("malloc_ratios", {}).get(p)
                more += " %15s" % ("%.2fx" % r if r is not None else "-")
            log(("  %-6s %-14s %s %s %s %11s%s" % (
                size + " B", p, fmt_ns(s["median_ns"][p]), fmt_ns(s["p25_ns"][p]),
                fmt_ns(s["p75_ns"][p]), ratio, more)).rstrip())
