"""bench.png: one panel per benchmark (matplotlib, imported lazily; when this
interpreter lacks it, /usr/bin/python3 runs run.py --plot-only)."""

import os
import subprocess
import sys

from .config import (
    B2_PEERS, B3_LIMITS, B56_PATTERNS, B6_MODE, B8_LARGE, B8_VS, B8_WORST_VS, B9_VS, CPUSLABS,
    BSCALE, MIMALLOC3, PEER_ORDER, PERCPU, RUN_PY, SUITE_OTHERS, SUITE_PEERS, USLUB_MALLOC, USLUB_SERIES,
    log,
)
from .scale import plot_bscale


PLOT_COLORS = {
    "uslub": "#d62728", CPUSLABS: "#ff9896", PERCPU: "#bcbd22", "uslub-hardened": "#8c564b",
    "dpdk": "#7f7f7f", "glibc": "#1f77b4",
    "jemalloc": "#2ca02c", "mimalloc": "#9467bd", MIMALLOC3: "#c5b0d5", "tcmalloc": "#ff7f0e",
    USLUB_MALLOC: "#e377c2",
}


def plot(data, png):
    """Grouped bar chart: one panel per benchmark and size, one bar per
    allocator. Raises ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(b, sz, s) for b in ("B1", "B4") if b in data
              for sz, s in data[b]["sizes"].items() if s["median_ns"]]
    extra = []          # second row: B2 and B3
    if "B2" in data and any(s["median_ns"] for s in data["B2"]["n"].values()):
        extra += [("B2", "ns"), ("B2", "ratio")]
    if "B3" in data and any(s["median_ns"] for s in data["B3"]["sizes"].values()):
        extra += [("B3", "norandom"), ("B3", "random")]
    own = []            # third row: B5, B6 (ratios), B7 (pages), B-debug (ratios)
    for b in ("B5", "B6"):
        if b in data and any(s["median_ns"] for s in data[b]["sizes"].values()):
            own.append(b)
    if "B7" in data and any(pt for s in data["B7"]["sizes"].values()
                            for pt in s["groups"].values()):
        own.append("B7")
    if "B-debug" in data and any(s["median_ns"] for s in data["B-debug"]["sizes"].values()):
        own.append("B-debug")
    if "B-dfree" in data and any("ratio" in r for r in data["B-dfree"]["rows"].values()):
        own.append("B-dfree")
    suite = []         # fourth row: B8 (time, peak RSS), B9
    if "B8" in data and any(s["time_ms"] for s in data["B8"]["workloads"].values()):
        suite += [("B8", "time"), ("B8", "rss")]
    if "B9" in data and data["B9"]["peers"]:
        suite.append(("B9", None))
    # fifth row: B-scale, one panel per workload (time against threads)
    scale = [w for w, we in data.get(BSCALE, {}).get("workloads", {}).items() if we["time_ms"]]
    if not panels and not extra and not own and not suite and not scale:
        raise ValueError("nothing to plot")
    rows = [r for r in (panels, extra, own, suite, scale) if r]
    ncols = max(len(r) for r in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(4.6 * ncols, 4.4 * len(rows)),
                             squeeze=False)
    for row, r in zip(axes, rows):
        for ax in row[len(r):]:
            ax.set_visible(False)
    if extra:
        for ax, (b, what) in zip(axes[rows.index(extra)], extra):
            if b == "B2":
                plot_b2(ax, data["B2"], what)
            else:
                plot_b3(ax, data["B3"], what)
    if own:
        for ax, b in zip(axes[rows.index(own)], own):
            if b == "B7":
                plot_b7(ax, data["B7"])
            elif b == "B-dfree":
                plot_bdfree(ax, data["B-dfree"])
            else:
                plot_b56(ax, data[b], b)
    if suite:
        for ax, (b, what) in zip(axes[rows.index(suite)], suite):
            if b == "B8":
                plot_b8(ax, data["B8"], what)
            else:
                plot_b9(ax, data["B9"])
    if scale:
        for ax, w in zip(axes[rows.index(scale)], scale):
            plot_bscale(ax, data[BSCALE], w, PLOT_COLORS)
    for ax, (b, sz, s) in zip(axes[0] if panels else [], panels):
        names = [p for p in PEER_ORDER if p in s["median_ns"]]
        vals = [s["median_ns"][p] for p in names]
        lo = [max(0.0, v - s["p25_ns"][p]) for p, v in zip(names, vals)]
        hi = [max(0.0, s["p75_ns"][p] - v) for p, v in zip(names, vals)]
        bars = ax.bar(range(len(names)), vals, yerr=[lo, hi], capsize=3,
                      color=[PLOT_COLORS.get(p, "#17becf") for p in names])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_title("%s %s B\n%s" % (b, sz, data[b]["title"]), fontsize=9)
        ax.set_ylabel(data[b]["unit"] + " (lower is better)", fontsize=8)
        if max(vals) / max(min(vals), 1e-9) > 25:
            ax.set_yscale("log")
        for bar, v, p, h in zip(bars, vals, names, hi):
            label = "%.1f" % v
            if p != "uslub" and p in s["ratios"]:
                label += "\n%.2fx" % s["ratios"][p]
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, v + h),
                        ha="center", va="bottom", fontsize=7,
                        xytext=(0, 2), textcoords="offset points")
        ax.margins(y=0.25)
    m = data.get("machine", {})
    fig.suptitle("uslub vs peers, median ns (labels: value, uslub/peer) — "
                 "%s, %s CPUs, %s, %s%s" % (
                     m.get("cpu_model", "?"), m.get("nproc", "?"),
                     m.get("date", "?")[:10], m.get("git_commit", "")[:10],
                     ", quick mode" if data.get("mode") == "quick" else ""),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def plot_b8(ax, e, what):
    """B8: per workload, uslub's ratio to each peer (time or peak RSS), with
    the geometric means and the target line; the peers' own values (log
    scale) when uslub was not measured."""
    ws = list(e["workloads"])
    key, rkey, metric, limit = (("time_ms", "time_ratio", "time",
                                 e.get("time_limits", {}).get(B8_WORST_VS, 1.0))
                                if what == "time" else
                                ("peak_rss_mib", "rss_ratio", "rss", e["rss_limit"]))
    have_uslub = any(e["workloads"][w][rkey] for w in ws)
    # bars: (series, peer); with uslub measured, uslub / each other peer and
    # uslub-cpuslabs / each target peer (hatched)
    bars = [("uslub", p) for p in SUITE_OTHERS if any(p in e["workloads"][w][key] for w in ws)]
    cpu = e.get("geomean_series", {}).get(CPUSLABS)
    if cpu:
        bars += [(CPUSLABS, p) for p in B8_VS if p in cpu]
    # the per-CPU mode against mimalloc 3.4 (its targets' peer), cross-hatched
    pcpu = e.get("geomean_series", {}).get(PERCPU)
    if pcpu and MIMALLOC3 in pcpu:
        bars.append((PERCPU, MIMALLOC3))
    if not have_uslub:
        bars = [(None, p) for p in SUITE_PEERS if any(p in e["workloads"][w][key] for w in ws)]
    labels = ws + (["geomean"] if have_uslub else [])
    width = 0.8 / max(1, len(bars))
    for j, (series, p) in enumerate(bars):
        if series == "uslub":
            vals = [e["workloads"][w][rkey].get(p, 0) for w in ws] + \
                [e["geomean"].get(p, {}).get(metric, 0)]
        elif series:
            vals = [e["workloads"][w].get("series_ratios", {}).get(series, {})
                    .get(metric, {}).get(p, 0) for w in ws] + \
                [e["geomean_series"][series].get(p, {}).get(metric, 0)]
        else:
            vals = [e["workloads"][w][key].get(p, 0) for w in ws]
        xs = [i + (j - (len(bars) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, vals, width, color=PLOT_COLORS.get(p, "#17becf"),
               hatch={CPUSLABS: "//", PERCPU: "xx"}.get(series),
               label=("%s / %s" % (series, p)) if series else p)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    name = "time" if what == "time" else "peak RSS"
    if have_uslub:
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(limit, color="black", lw=1, ls=":")
        ax.set_ylabel("uslub / peer, %s (< 1: uslub better)" % name, fontsize=8)
        geo_ws = [w for w in ws if w in e.get("geomean_workloads", ws)]
        outside = "of the first %d" % len(geo_ws) if len(ws) - len(geo_ws) > 1 else \
            "without %s" % B8_LARGE
        ax.set_title("B8 malloc workloads, %s: uslub / peer\n(target: geomean <= %.1fx "
                     "%s; geomean %s)" % (name, limit, B8_WORST_VS, outside), fontsize=9)
    else:
        ax.set_yscale("log")
        ax.set_ylabel(("ms" if what == "time" else "MiB") + " (uslub not measured)", fontsize=8)
        ax.set_title("B8 malloc workloads, %s" % name, fontsize=9)
    ax.legend(fontsize=6)


def plot_b9(ax, e):
    """B9: RSS held against the number of threads, one line per peer."""
    ns = e["threads"]
    for p in SUITE_PEERS:
        d = e["peers"].get(p)
        if not d:
            continue
        pts = [(n, d["rss_held_kb"][str(n)] / 1024) for n in ns if str(n) in d["rss_held_kb"]]
        sl = d.get("slope_kb_per_thread")
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", ms=3,
                color=PLOT_COLORS.get(p, "#17becf"),
                label="%s (%s KiB/thread)" % (p, "%.0f" % sl if sl is not None else "?"))
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns], fontsize=7)
    ax.set_xlabel("threads (linear: the slope is the growth per thread)", fontsize=8)
    ax.set_ylabel("RSS held after the frees, MiB (lower is better)", fontsize=8)
    ax.set_title("B9 RSS held in per-thread caches\n(target: slope <= %s's)" % B9_VS,
                 fontsize=9)
    ax.legend(fontsize=6)


B2_STYLES = {
    "uslub": ("#d62728", "uslub (sheaves)"), CPUSLABS: ("#ff7f0e", "uslub-cpuslabs"),
    PERCPU: ("#bcbd22", "uslub-percpu"),
    "dpdk": ("#7f7f7f", "dpdk"),
}


def plot_b2(ax, e, what):
    """B2 against n: ns per object (bulk solid, one-by-one dashed), or the
    ratios the targets are about, with the target lines."""
    ns = [int(k) for k in e["n"]]
    if what == "ns":
        for p in B2_PEERS:
            color, label = B2_STYLES[p]
            for mode, style in (("bulk", "-"), ("one-by-one", "--")):
                name = "%s %s" % (p, mode)
                pts = [(n, e["n"][str(n)]["median_ns"][name]) for n in ns
                       if name in e["n"][str(n)]["median_ns"]]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o",
                            ms=3, color=color, label="%s %s" % (label, mode))
        ax.set_ylabel("ns per object, alloc+free (lower is better)", fontsize=8)
        ax.set_title("B2 %d B: bulk (solid) vs one-by-one (dashed)" % e["size"], fontsize=9)
        ax.set_ylim(bottom=0)
    else:
        lines = [("%s bulk / %s one-by-one" % (p, p), p, "-", "bulk/1-by-1")
                 for p in USLUB_SERIES] + \
                [("%s bulk / dpdk bulk" % p, p, ":", "bulk/dpdk bulk") for p in USLUB_SERIES]
        for key, p, style, what_ in lines:
            pts = [(n, e["n"][str(n)]["ratios"][key]) for n in ns
                   if key in e["n"][str(n)]["ratios"]]
            if pts:
                color, label = B2_STYLES[p]
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o", ms=3,
                        color=color, label="%s %s" % (label, what_))
        ax.plot([8, 64], [0.5, 0.5], color="black", lw=1)
        ax.annotate("target bulk/1-by-1 <= 0.5 (n 8..64)", (8, 0.5), fontsize=6,
                    xytext=(0, -9), textcoords="offset points")
        ax.plot([16, max(ns)], [1.0, 1.0], color="black", lw=1, ls=":")
        ax.annotate("target bulk/dpdk <= 1.0 (n >= 16)", (16, 1.0), fontsize=6,
                    xytext=(0, 3), textcoords="offset points")
        ax.set_ylabel("ratio, log scale (lower is better for uslub)", fontsize=8)
        ax.set_title("B2 %d B: ratios and targets" % e["size"], fontsize=9)
        ax.set_yscale("log")
    ax.set_xscale("log")
    ticks = [n for n in ns if n in (1, 2, 4, 8, 16, 32, 64, 128, 250)] or ns
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(n) for n in ticks], fontsize=7)
    ax.minorticks_off()
    if what != "ns":
        lo, hi = ax.get_ylim()
        yt = [y for y in (0.1, 0.2, 0.3, 0.5, 1, 2, 3, 5, 10, 20, 50, 100) if lo <= y <= hi]
        ax.set_yticks(yt)
        ax.set_yticklabels(["%g" % y for y in yt], fontsize=7)
    ax.set_xlabel("n (objects per bulk call)", fontsize=8)
    ax.legend(fontsize=6)


def plot_b3(ax, e, rnd):
    """B3: eager and deferred bars per size, one panel per random setting."""
    sizes = [sz for sz, s in e["sizes"].items() if s["median_ns"]]
    width = 0.38
    for j, (kind, color) in enumerate((("eager", "#7f7f7f"), ("deferred", "#d62728"))):
        name = "%s-%s" % (kind, rnd)
        vals, lo, hi = [], [], []
        for sz in sizes:
            s = e["sizes"][sz]
            v = s["median_ns"].get(name, 0.0)
            vals.append(v)
            lo.append(max(0.0, v - s["p25_ns"].get(name, v)))
            hi.append(max(0.0, s["p75_ns"].get(name, v) - v))
        xs = [i + (j - 0.5) * width for i in range(len(sizes))]
        bars = ax.bar(xs, vals, width, yerr=[lo, hi], capsize=2, color=color, label=kind)
        if kind == "deferred":
            for bar, sz, v, h in zip(bars, sizes, vals, hi):
                d = e["sizes"][sz]["delta_pct"].get(rnd)
                if d is not None:
                    ax.annotate("%+.0f%%" % d, (bar.get_x() + bar.get_width() / 2, v + h),
                                ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(["%s B\n%s" % (sz, "/".join(str(b) for b in sorted(
        {x for x in e["sizes"][sz]["batch"].values() if x})) or "-") for sz in sizes],
        fontsize=7)
    ax.set_xlabel("object size / batch (objects per slab)", fontsize=8)
    ax.set_ylabel(e["unit"] + " (lower is better)", fontsize=8)
    ax.set_title("B3 fresh slabs, random %s: deferred vs eager\n(target: deferred <= %.2fx eager)"
                 % ("off" if rnd == "norandom" else "on", B3_LIMITS[rnd]), fontsize=9)
    ax.legend(fontsize=7)
    ax.margins(y=0.2)


# B5, B6, B-debug panels: the baseline's and the variant's series, their
# names in the legend, the key of their ratio, and what the panel compares.
B56_PLOTS = {
    "B5": ("plain %s", "account %s", ("plain", "accounted"), "account / plain, ",
           "accounted vs plain"),
    "B6": ("uslub-prof-off %s", ["uslub-prof-on %s", "uslub-prof-sample %s"],
           ("profiling off", "exact", "sampled"), ["on / off, ", "sample / off, "],
           "profiling exact, sampled vs off"),
    "B-debug": ("uslub-nodebug %s", "uslub-debug-other %s",
                ("no debug cache", "a debug cache beside"), "debug-other / nodebug, ",
                "plain cache, a debug cache beside vs none"),
}


def plot_b56(ax, e, bench):
    """B5 / B6 / B-debug: per size and pattern, the baseline and the measured
    variants side by side (median, p25-p75 whiskers), each variant labelled
    with its ratio to the baseline."""
    base, var, names, ratio_key, what = B56_PLOTS[bench]
    variants = var if isinstance(var, list) else [var]
    keys = ratio_key if isinstance(ratio_key, list) else [ratio_key]
    colors = ["#7f7f7f", "#d62728", "#1f77b4"]
    groups = [(sz, pat, label) for sz in e["sizes"] for pat, label in B56_PATTERNS]
    nbars = 1 + len(variants)
    width = 0.8 / nbars
    for j, fmt in enumerate([base] + variants):
        vals, lo, hi = [], [], []
        for sz, pat, _ in groups:
            s = e["sizes"][sz]
            v = s["median_ns"].get(fmt % pat, 0.0)
            vals.append(v)
            lo.append(max(0.0, v - s["p25_ns"].get(fmt % pat, v)))
            hi.append(max(0.0, s["p75_ns"].get(fmt % pat, v) - v))
        xs = [i + (j - (nbars - 1) / 2) * width for i in range(len(groups))]
        bars = ax.bar(xs, vals, width, yerr=[lo, hi], capsize=2, color=colors[j % 3],
                      label=names[j])
        if j >= 1:
            for bar, (sz, pat, _), v, h in zip(bars, groups, vals, hi):
                r = e["sizes"][sz]["ratios"].get(keys[j - 1] + pat)
                if r is not None:
                    ax.annotate("%.2fx" % r, (bar.get_x() + bar.get_width() / 2, v + h),
                                ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s B\n%s" % (sz, label) for sz, _, label in groups], fontsize=7)
    ax.set_ylabel("ns per pair / per object (lower is better)", fontsize=8)
    if "limits" in e and bench == "B6":
        target = "; ".join("%s: %s" % (B6_MODE[p], "/".join("%.2fx" % l[pat] for pat, _ in
                                                              B56_PATTERNS))
                           for p, l in e["limits"].items()) + " (pair/batch)"
    elif "limits" in e:
        target = "<= " + "/".join("%.2fx" % e["limits"][pat] for pat, _ in B56_PATTERNS) + \
            " (pair/batch)"
    else:
        target = "<= %.2fx" % e["limit"]
    ax.set_title("%s %s\n(target: %s)" % (bench, what, target), fontsize=9)
    ax.legend(fontsize=7)
    ax.margins(y=0.2)


def plot_bdfree(ax, e):
    """B-dfree: the cost of the free mark (with / without - 1, in %) per row
    and the geometric means, with the per-round min..max as whiskers."""
    rows = [(k, r) for k, r in e["rows"].items() if "ratio" in r]
    labels = [k for k, _ in rows] + ["geomean %s" % b for b in e["geomean"]]
    vals = [r["cost_pct"] for _, r in rows] + [g["cost_pct"] for g in e["geomean"].values()]
    lo, hi = [], []
    for _, r in rows:
        rr = r.get("round_ratios") or [r["ratio"]]
        lo.append(max(0.0, r["cost_pct"] - (min(rr) - 1) * 100))
        hi.append(max(0.0, (max(rr) - 1) * 100 - r["cost_pct"]))
    lo += [0.0] * len(e["geomean"])
    hi += [0.0] * len(e["geomean"])
    colors = ["#d62728" if k.startswith("B1") else "#1f77b4" for k, _ in rows] + \
        ["#7f7f7f"] * len(e["geomean"])
    ax.bar(range(len(labels)), vals, yerr=[lo, hi], capsize=2, color=colors)
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("cost, %: with / without the free mark - 1 (whiskers: rounds)", fontsize=8)
    ax.set_title("B-dfree: the double-free check's cost\n(B1 ns per pair, B8 ms per run; "
                 "no target)", fontsize=9)


def plot_b7(ax, e):
    """B7: slab pages of both modes per size and N (log scale), labelled
    with the saving."""
    groups = [(sz, n) for sz, s in e["sizes"].items() for n in s["groups"]]
    width = 0.38
    for j, (m, color) in enumerate((("per-group", "#7f7f7f"), ("shared", "#d62728"))):
        vals = [e["sizes"][sz]["groups"][n].get(m, {}).get("slab_pages", 0) or 0
                for sz, n in groups]
        xs = [i + (j - 0.5) * width for i in range(len(groups))]
        bars = ax.bar(xs, vals, width, color=color, label=m)
        if m == "shared":
            for bar, (sz, n), v in zip(bars, groups, vals):
                sv = e["sizes"][sz]["groups"][n].get("saving_pct")
                if sv is not None:
                    ax.annotate("-%.0f%%" % sv, (bar.get_x() + bar.get_width() / 2, v),
                                ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s B\nN=%s" % (sz, n) for sz, n in groups], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("slab pages, log scale (lower is better)", fontsize=8)
    ax.set_title("B7 %d objects per group: shared vs per-group caches\n"
                 "(target: >= %d%% fewer pages)" % (e["objs_per_group"],
                                                    e["min_saving"] * 100), fontsize=9)
    ax.legend(fontsize=7)
    ax.margins(y=0.2)


def make_plot(data, json_path, png):
    try:
        plot(data, png)
        return True
    except ImportError:
        pass
    other = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(other) and os.access(other, os.X_OK):
        r = subprocess.run([other, RUN_PY, "--plot-only", json_path,
                            "--png", png], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0:
            return True
        log("bench: plotting with %s failed: %s" % (other, r.stdout.strip()[-500:]))
        return False
    log("bench: matplotlib not available (Debian: python3-matplotlib); skipping %s" % png)
    return False
