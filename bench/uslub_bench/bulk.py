"""B2 (bulk alloc+free against one by one) and B3 (fresh-slab allocation,
deferred against eager freelist): analysis and text tables."""

from .config import (
    B2_MODES, B2_NS, B2_PEERS, B2_SHEAVES, B3_LIMITS, B3_VARIANTS, BENCH_TITLES, BENCH_UNITS,
    CPUSLABS, USLUB_MODE, USLUB_SERIES,
)
from .fmt import fmt_ns, fmt_ratio
from .stats import ratio_check, run_extras, stats_of, verdict_of


def analyse_b2(per, size):
    """B2: per[peer]["series"][mode][n] = samples. Series are named
    "<peer> bulk" and "<peer> one-by-one"."""
    ns = B2_NS
    caps = {}
    for p in B2_PEERS:
        if p in per and p.startswith("uslub"):
            caps[p] = sorted({r.get("sheaf_capacity") for r in per[p]["runs"]},
                             key=lambda x: -1 if x is None else x)
    entry = {"title": BENCH_TITLES["B2"], "unit": BENCH_UNITS["B2"], "size": size,
             "ns": ns, "sheaves_asked": dict(B2_SHEAVES),
             "modes": {p: USLUB_MODE[p] for p in USLUB_SERIES if p in per},
             "sheaf_capacity": caps, "n": {},
             "runs": {p: run_extras(per[p]["runs"]) for p in B2_PEERS if p in per}}
    checks_all = []
    for n in ns:
        key = str(n)
        med, p25, p75, samples = {}, {}, {}, {}
        for p in B2_PEERS:
            for mode, label in B2_MODES:
                xs = per.get(p, {}).get("series", {}).get(mode, {}).get(key)
                if not xs:
                    continue
                name = "%s %s" % (p, label)
                st = stats_of(xs)
                med[name], p25[name], p75[name] = st["median"], st["p25"], st["p75"]
                samples[name] = xs
        ratios = {}

        def ratio(a, b):
            if a in med and b in med:
                ratios["%s / %s" % (a, b)] = round(med[a] / med[b], 4)
        for p in B2_PEERS:
            ratio("%s bulk" % p, "%s one-by-one" % p)
        for p in USLUB_SERIES:
            ratio("%s bulk" % p, "dpdk bulk")
            ratio("%s one-by-one" % p, "dpdk one-by-one")
        checks = []
        for p in USLUB_SERIES:
            if p not in per:
                continue
            if n >= 16:
                checks.append(ratio_check(
                    "%s bulk <= 1.0x DPDK bulk" % p, med.get("%s bulk" % p),
                    med.get("dpdk bulk"), 1.0, n=n, series=p, peer="dpdk",
                    kind="vs_dpdk"))
            if 8 <= n <= 64:
                checks.append(ratio_check(
                    "%s bulk >= 2x faster than one-by-one" % p, med.get("%s bulk" % p),
                    med.get("%s one-by-one" % p), 0.5, n=n, series=p,
                    peer="%s one-by-one" % p, kind="vs_single"))
        checks_all += checks
        entry["n"][key] = {"median_ns": med, "p25_ns": p25, "p75_ns": p75,
                           "samples_ns": samples, "ratios": ratios, "targets": checks}
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_b3(results, sizes):
    """B3: per size, results[("B3", size)]["uslub"]["series"][variant]["all"]."""
    entry = {"title": BENCH_TITLES["B3"], "unit": BENCH_UNITS["B3"], "sizes": {}}
    checks_all = []
    for size in sizes:
        per = results[("B3", size)].get("uslub")
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {},
             "batch": {}, "ratios": {}, "delta_pct": {}, "targets": [], "fresh": None}
        if per:
            for v in B3_VARIANTS:
                xs = per["series"].get(v, {}).get("all")
                if not xs:
                    continue
                st = stats_of(xs)
                s["median_ns"][v], s["p25_ns"][v], s["p75_ns"][v] = \
                    st["median"], st["p25"], st["p75"]
                s["samples_ns"][v] = xs
            runs = per["runs"]
            for v in B3_VARIANTS:
                info = [r.get("variants", {}).get(v, {}) for r in runs]
                if info and info[0]:
                    s["batch"][v] = info[0].get("batch")
            s["fresh"] = all(i.get("fresh", False) for r in runs
                             for i in r.get("variants", {}).values())
            s["bytes_per_round"] = runs[0].get("bytes") if runs else None
            s["runs"] = run_extras(runs)
        med = s["median_ns"]
        for rnd in ("norandom", "random"):
            e, d = med.get("eager-" + rnd), med.get("deferred-" + rnd)
            if e is not None and d is not None:
                s["ratios"]["deferred-%s / eager-%s" % (rnd, rnd)] = round(d / e, 4)
                s["delta_pct"][rnd] = round((d / e - 1) * 100, 2)
            lim = B3_LIMITS[rnd]
            s["targets"].append(ratio_check(
                "deferred <= %.2fx eager (random %s)" % (lim, "off" if rnd == "norandom" else "on"),
                d, e, lim, random=rnd == "random"))
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def print_b2(e, log):
    runs = e.get("runs", {})
    caps = e.get("sheaf_capacity", {})

    def cap(p):
        c = caps.get(p)
        return "/".join("?" if x is None else str(x) for x in c) if c else "-"
    dpdk_cache = sorted({r.get("cache_size") for r in runs.get("dpdk", [])} - {None})
    log("")
    log("%s  %s  (%s)" % ("B2", e["title"], e["unit"]))
    log("  %d B objects, median of all samples; 1-by-1 = the same n done as n allocs "
        "then n frees" % e["size"])
    log("  uslub: %s, sheaf_capacity %s; uslub-cpuslabs: %s, sheaf_capacity %s; "
        "dpdk: get_bulk/put_bulk, %s-object lcore cache" % (
            USLUB_MODE["uslub"], cap("uslub"), USLUB_MODE[CPUSLABS], cap(CPUSLABS),
            "/".join(str(x) for x in dpdk_cache) or "?"))
    log("  x! = misses its target (see the targets below)")
    log("  %5s  %s  %s  %s  %s" % (
        "", "uslub (sheaves)".center(26, "-"), "uslub-cpuslabs".center(26, "-"),
        "dpdk".center(17, "-"), "bulk/dpdk bulk".center(15, "-")))
    log("  %5s  %8s %8s %8s  %8s %8s %8s  %8s %8s  %7s %7s" % (
        "n", "bulk", "1-by-1", "bulk/1b1", "bulk", "1-by-1", "bulk/1b1",
        "bulk", "1-by-1", "sheaves", "cpusl."))
    for key, s in e["n"].items():
        med = s["median_ns"]
        missed = {(t["series"], t["kind"]) for t in s["targets"] if t["pass"] is False}

        def m(name):
            return fmt_ns(med.get(name)).strip().rjust(8) if name in med else "       -"

        def r(a, b, series=None, kind=None, width=8):
            x = s["ratios"].get("%s / %s" % (a, b))
            return fmt_ratio(x, (series, kind) in missed).rjust(width)
        log("  %5s  %s %s %s  %s %s %s  %s %s  %s %s" % (
            key, m("uslub bulk"), m("uslub one-by-one"),
            r("uslub bulk", "uslub one-by-one", "uslub", "vs_single"),
            m(CPUSLABS + " bulk"), m(CPUSLABS + " one-by-one"),
            r(CPUSLABS + " bulk", CPUSLABS + " one-by-one", CPUSLABS, "vs_single"),
            m("dpdk bulk"), m("dpdk one-by-one"),
            r("uslub bulk", "dpdk bulk", "uslub", "vs_dpdk", 7),
            r(CPUSLABS + " bulk", "dpdk bulk", CPUSLABS, "vs_dpdk", 7)))


def b2_target_groups(e):
    """B2's per-n checks grouped by target: [(range, name, checks)]."""
    groups = {}
    for s in e["n"].values():
        for t in s["targets"]:
            groups.setdefault((t["kind"], t["series"], t["target"]), []).append(t)
    out = []
    for kind in ("vs_dpdk", "vs_single"):
        for series in USLUB_SERIES:
            for (k, se, name), checks in groups.items():
                if k == kind and se == series:
                    ns = [t["n"] for t in checks]
                    out.append(("n %d..%d" % (min(ns), max(ns)), name, checks))
    return out


def print_b3(e, log):
    log("")
    log("%s  %s  (%s)" % ("B3", e["title"], e["unit"]))
    mib = {s.get("bytes_per_round") for s in e["sizes"].values()} - {None}
    log("  alloc_bulk(objects per slab), every batch from a new slab, only the allocation "
        "timed; %s MiB per round" % "/".join("%g" % (b / 2**20) for b in sorted(mib)))
    log("  eager = USLUB_EAGER_FREELIST (whole freelist built when the slab is made, "
        "pre-7.1 kernel); deferred = the default")
    log("  %-14s  %s   %s" % ("", "random off".center(28, "-"), "random on".center(28, "-")))
    log("  %-6s %6s  %9s %9s %8s   %9s %9s %8s" % (
        "size", "batch", "eager", "deferred", "delta", "eager", "deferred", "delta"))
    stale = []
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        batches = sorted({b for b in s["batch"].values() if b})
        cols = []
        for rnd in ("norandom", "random"):
            d = s["delta_pct"].get(rnd)
            cols += [fmt_ns(med.get("eager-" + rnd)), fmt_ns(med.get("deferred-" + rnd)),
                     ("%+.1f%%" % d).rjust(8) if d is not None else "       -"]
        log("  %-6s %6s  %s %s %s   %s %s %s" % (
            size + " B", "/".join(str(b) for b in batches) or "-", *cols))
        if s.get("fresh") is False:
            stale.append(size)
    if stale:
        log("  warning: at %s B not every batch came from a new slab (see "
            "\"variants\" in bench.json): those rows do not measure fresh slabs only"
            % ", ".join(stale))
