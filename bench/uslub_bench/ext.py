"""uslub against itself on the per-object extension and accounting: B5
(accounted against plain cache), B6 (allocation profiling exact, sampled
and off, with callgrind's instruction counts), B6-acc (sampled
allocinfo's accuracy), B7 (slab pages: one shared accounted cache against
one cache per group) and B-meta (where the extension goes): analysis and
text tables."""

import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile

from .config import (
    B56_BATCH, B56_PATTERNS, B5_LIMITS, B6ACC_LIMIT, B6ACC_MIN_SHARE, B6ACC_PEERS, B6_BASE,
    B6_EXPECT, B6_LIMITS, B6_MODE, B6_PEERS, B7_GROUPS, B7_MIN_SAVING, B7_MODES, B7_OBJS,
    BENCH_TITLES, BENCH_UNITS, BMETA_CACHES, BMETA_PROFILED, SKIPPED,
)
from .fmt import fmt_ext, fmt_ns, fmt_ratio, fmt_spread
from .stats import caches_of, paired_ratios, ratio_check, run_extras, stats_of, verdict_of


def analyse_b5(results, sizes):
    """B5: per size, results[("B5", size)]["uslub"]["series"]["<cache> <pattern>"]
    ["all"], cache plain or account, pattern pair or batch."""
    entry = {"title": BENCH_TITLES["B5"], "unit": BENCH_UNITS["B5"], "batch": B56_BATCH,
             "limits": dict(B5_LIMITS), "sizes": {}}
    checks_all = []
    for size in sizes:
        per = results[("B5", size)].get("uslub")
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {}, "ratios": {},
             "paired_ratio_median": {}, "targets": [], "caches": {}, "charge_check_ok": None}
        if per:
            for name, xs in per["series"].items():
                st = stats_of(xs["all"])
                s["median_ns"][name], s["p25_ns"][name], s["p75_ns"][name] = \
                    st["median"], st["p25"], st["p75"]
                s["samples_ns"][name] = xs["all"]
            s["caches"] = {k: {f: v.get(f) for f in LAYOUT_FIELDS}
                           for k, v in caches_of(per["runs"]).items()}
            s["charge_check_ok"] = all(r.get("charge_check", {}).get("ok", False)
                                       for r in per["runs"])
            s["runs"] = run_extras(per["runs"])
        med = s["median_ns"]
        for pat, label in B56_PATTERNS:
            a, p_ = med.get("account " + pat), med.get("plain " + pat)
            if a is not None and p_ is not None:
                s["ratios"]["account / plain, " + pat] = round(a / p_, 4)
                pr = paired_ratios(per["runs"], "account " + pat, "plain " + pat)
                if pr:
                    s["paired_ratio_median"][pat] = round(statistics.median(pr), 4)
            s["targets"].append(ratio_check(
                "accounted <= %.2fx plain (%s)" % (B5_LIMITS[pat], label), a, p_,
                B5_LIMITS[pat], pattern=pat))
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_b6(results, sizes):
    """B6: per size, results[("B6", size)][peer]["series"]["plain <pattern>"]
    ["all"], peer uslub-prof-on (exact), uslub-prof-sample (sampled) or
    uslub-prof-off. Series "<peer> <pattern>"; ratios "on / off, <pattern>"
    and "sample / off, <pattern>"; round_ratios[peer][pattern]."""
    entry = {"title": BENCH_TITLES["B6"], "unit": BENCH_UNITS["B6"], "batch": B56_BATCH,
             "limits": {p: dict(l) for p, l in B6_LIMITS.items()},
             "modes": {p: {"USLUB_PROFILING": v, "mode": B6_MODE[p],
                           "expect_profiling": B6_EXPECT[p]} for p, v in B6_PEERS},
             "sizes": {}}
    checks_all = []
    off = B6_BASE
    for size in sizes:
        per = results[("B6", size)]
        s = {"median_ns": {}, "p25_ns": {}, "p75_ns": {}, "samples_ns": {}, "ratios": {},
             "round_ratios": {}, "targets": [], "caches": {}, "tag_check_ok": None,
             "profiling": {}, "skipped": {}}
        for peer, _ in B6_PEERS:
            if peer not in per:
                why = SKIPPED.get(("B6", size, peer))
                if why:
                    s["skipped"][peer] = why
                continue
            for pat, _ in B56_PATTERNS:
                xs = per[peer]["series"].get("plain " + pat, {}).get("all")
                if not xs:
                    continue
                name = "%s %s" % (peer, pat)
                st = stats_of(xs)
                s["median_ns"][name], s["p25_ns"][name], s["p75_ns"][name] = \
                    st["median"], st["p25"], st["p75"]
                s["samples_ns"][name] = xs
            s["caches"][peer] = {f: caches_of(per[peer]["runs"]).get("plain", {}).get(f)
                                 for f in LAYOUT_FIELDS}
            # what each process said it ran (uslub_profiling_enabled())
            s["profiling"][peer] = sorted({r.get("profiling") for r in per[peer]["runs"]},
                                          key=str)
        present = [p for p, _ in B6_PEERS if p in per]
        if present:
            s["tag_check_ok"] = all(r.get("tag_check", {}).get("ok", False)
                                    for p in present for r in per[p]["runs"])
            s["runs"] = {p: run_extras(per[p]["runs"]) for p in present}
        med = s["median_ns"]
        for peer, key in (("uslub-prof-on", "on"), ("uslub-prof-sample", "sample")):
            what = "exact" if key == "on" else "sampled"
            for pat, label in B56_PATTERNS:
                a, b = med.get("%s %s" % (peer, pat)), med.get("%s %s" % (off, pat))
                if a is not None and b is not None:
                    s["ratios"]["%s / off, %s" % (key, pat)] = round(a / b, 4)
                    # round by round: the processes of one round ran back to back
                    s["round_ratios"].setdefault(peer, {})[pat] = [
                        round(statistics.median(x["series"]["plain " + pat]) /
                              statistics.median(y["series"]["plain " + pat]), 4)
                        for x, y in zip(per[peer]["runs"], per[off]["runs"])]
                limit = B6_LIMITS[peer][pat]
                c = ratio_check("%s profiling <= %.2fx off (%s)" % (what, limit, label), a, b,
                                limit, pattern=pat, peer=peer)
                if peer in s["skipped"]:
                    c["note"] = "skipped: " + s["skipped"][peer].split(" (")[0]
                s["targets"].append(c)
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_b6acc(results):
    """B6-acc: results[("B6-acc", 0)][peer]["runs"], peer uslub-prof-on (the
    exact figures, first round) and uslub-prof-sample (estimates, every
    round). Per site: the exact bytes, every estimate (rounds x repeats),
    their median and mean, the median's error, and the target for the
    sites holding more than B6ACC_MIN_SHARE of the bytes."""
    per = results.get(("B6-acc", 0), {})
    exact_peer, sample_peer = B6ACC_PEERS[0][0], B6ACC_PEERS[1][0]
    entry = {"title": BENCH_TITLES["B6-acc"], "unit": BENCH_UNITS["B6-acc"],
             "limit": B6ACC_LIMIT, "min_share": B6ACC_MIN_SHARE, "sites": {}, "targets": []}
    ex = per.get(exact_peer, {}).get("runs", [])
    sa = per.get(sample_peer, {}).get("runs", [])
    why = SKIPPED.get(("B6-acc", 0, sample_peer))
    if why:
        entry["skipped"] = why
    if not ex:
        why_ex = SKIPPED.get(("B6-acc", 0, exact_peer))
        entry["targets"].append({"target": "sampled estimate within %.0f%% of exact, every site "
                                 "> %.0f%% of the bytes" % (B6ACC_LIMIT * 100,
                                                           B6ACC_MIN_SHARE * 100),
                                 "ratio": None, "pass": None,
                                 "note": "the exact run is missing" +
                                 (" (skipped: %s)" % why_ex if why_ex else "")})
        entry["pass"] = None
        return entry
    if why:
        # one row, not one per site
        entry["targets"].append({"target": "every site > %.0f%%: sampled within %.0f%% of exact"
                                 % (B6ACC_MIN_SHARE * 100, B6ACC_LIMIT * 100),
                                 "ratio": None, "pass": None,
                                 "note": "skipped: " + why.split(" (")[0]})
    first = ex[0]
    total = first["total_bytes"]
    entry.update(total_bytes=total, objects=first["objects"],
                 exact_check_ok=all(r.get("exact_check", {}).get("ok") for r in ex),
                 sample_rate=(sa[0].get("sample_rate") if sa else None),
                 sample_runs=len(sa), repeats=(sa[0].get("repeats") if sa else None),
                 sample_env=dict(B6ACC_PEERS)[sample_peer])
    for i, st in enumerate(first["sites"]):
        exact = st["exact_bytes"]
        site = {"line": st["line"], "objects": st["objects"], "stride": st["stride"],
                "exact_bytes": exact, "share": round(exact / total, 4),
                "exact_reported": statistics.median(st["bytes"])}
        ests = [x for r in sa for x in r["sites"][i]["bytes"]]
        if ests:
            m = statistics.median(ests)
            site.update(estimates=ests, median=m, mean=round(statistics.mean(ests), 1),
                        error=round(abs(m / exact - 1), 4),
                        mean_error=round(abs(statistics.mean(ests) / exact - 1), 4))
            rate = entry.get("sample_rate")
            if rate:
                # one estimate's relative spread for Poisson-like sampling
                site["one_run_sigma"] = round(math.sqrt(rate / exact), 4)
        entry["sites"][st["site"]] = site
        if exact / total > B6ACC_MIN_SHARE and not why:
            c = {"target": "%s: sampled within %.0f%% of exact" % (st["site"], B6ACC_LIMIT * 100),
                 "limit": B6ACC_LIMIT, "site": st["site"]}
            if ests:
                c.update(ratio=site["error"], **{"pass": site["error"] <= B6ACC_LIMIT})
            else:
                c.update(ratio=None, note="not measured", **{"pass": None})
            entry["targets"].append(c)
    entry["pass"] = verdict_of(entry["targets"])
    return entry


LAYOUT_FIELDS = ("object_size", "stride", "align", "objs_per_slab", "order",
                 "pages_per_slab", "obj_ext", "obj_ext_size", "obj_ext_bytes",
                 "obj_ext_fields", "obj_ext_charge", "sheaf_capacity")
B7_POINT_FIELDS = ("caches", "objects", "slabs", "slab_pages", "slab_bytes",
                   "slot_objects", "ext_bytes_outside", "page_provider_bytes_in_slabs_delta",
                   "group_usage_sum", "group0_charged_objects", "group0_charged_bytes",
                   "setup_ms")


def analyse_b7(results, sizes):
    """B7: per size and N, the slab pages of both modes (median over the
    rounds; a layout is deterministic, so min and max show whether any
    round differed) and the saving 1 - shared / per-group."""
    entry = {"title": BENCH_TITLES["B7"], "unit": BENCH_UNITS["B7"], "objs_per_group": B7_OBJS,
             "groups": B7_GROUPS, "min_saving": B7_MIN_SAVING, "sizes": {}}
    checks_all = []
    for size in sizes:
        per = results[("B7", size)]
        s = {"groups": {}, "targets": []}
        for n in B7_GROUPS:
            key = str(n)
            pt = {}
            for m in B7_MODES:
                pts = [r["points"][key] for r in per.get(m, {}).get("runs", [])
                       if key in r.get("points", {})]
                if not pts:
                    continue
                pages = [x["slab_pages"] for x in pts]
                d = {f: pts[0].get(f) for f in B7_POINT_FIELDS}
                d.update(slab_pages=statistics.median(pages),
                         slab_pages_range=[min(pages), max(pages)], runs=len(pts),
                         layout=pts[0].get("layout"))
                d["setup_ms"] = round(statistics.median(x["setup_ms"] for x in pts), 2)
                pt[m] = d
            sh, pg = pt.get("shared"), pt.get("per-group")
            if sh and pg and pg["slab_pages"]:
                pt["saving_pct"] = round((1 - sh["slab_pages"] / pg["slab_pages"]) * 100, 2)
                # the same with the extension bytes kept outside the slabs
                with_ext = (sh["slab_bytes"] + sh["ext_bytes_outside"]) / \
                    (pg["slab_bytes"] + pg["ext_bytes_outside"])
                pt["saving_with_ext_pct"] = round((1 - with_ext) * 100, 2)
            c = ratio_check(">= %d%% fewer slab pages shared (N=%d)" % (
                B7_MIN_SAVING * 100, n), sh["slab_pages"] if sh else None,
                pg["slab_pages"] if pg else None, 1 - B7_MIN_SAVING, groups=n)
            c["saving_pct"] = pt.get("saving_pct")
            s["targets"].append(c)
            s["groups"][key] = pt
        checks_all += s["targets"]
        entry["sizes"][str(size)] = s
    entry["pass"] = verdict_of(checks_all)
    return entry


def analyse_bmeta(results):
    """B-meta: one row per cache of BMETA_CACHES, with the saving of an
    in-slab placement: the extension bytes per object an array would have
    cost (obj_ext_size) less what the cache keeps outside (obj_ext_bytes)."""
    entry = {"title": BENCH_TITLES["B-meta"], "unit": BENCH_UNITS["B-meta"],
             "note": "no SPEC target: a layout report", "caches": [], "pass": None}
    runs = results.get(("B-meta", 0), {}).get("uslub", {}).get("runs", [])
    if not runs:
        return entry
    expected = {label: kind for label, _, kind in BMETA_CACHES}
    specs = {label: spec for label, spec, _ in BMETA_CACHES}
    for c in runs[0].get("caches", []):
        in_slab = c["obj_ext"] in ("leftover", "padding")
        saving = c["obj_ext_size"] - c["obj_ext_bytes"] if in_slab else 0
        plain = c.get("plain", {})
        row = {k: c.get(k) for k in ("label",) + LAYOUT_FIELDS + (
            "hwcache_align", "align_asked", "slab_bytes", "leftover_bytes", "padding_bytes",
            "charged_objects", "charged_bytes")}
        row.update(spec=specs.get(c["label"]), seed003_kind=expected.get(c["label"]),
                   matches_seed003=c["obj_ext"] == expected.get(c["label"]),
                   in_slab=in_slab, saving_bytes_per_object=saving,
                   saving_pct_of_stride=round(saving * 100.0 / c["stride"], 2),
                   saving_bytes_per_slab=saving * c["objs_per_slab"],
                   same_layout_as_plain=(plain.get("stride") == c["stride"] and
                                         plain.get("objs_per_slab") == c["objs_per_slab"] and
                                         plain.get("order") == c["order"]),
                   plain={f: plain.get(f) for f in LAYOUT_FIELDS})
        entry["caches"].append(row)
    entry["profiling"] = runs[0].get("profiling")
    entry["sizes"] = bmeta_sizes(runs[0], results.get(("B-meta", 0), {}).get(
        BMETA_PROFILED, {}).get("runs", []))
    return entry


def _ext(c):
    """A cache's extension as B-meta shows it: placement, bytes of one
    extension, bytes per object outside the slab, the words, the charge."""
    return {"placement": c.get("obj_ext"), "ext_bytes": c.get("obj_ext_size") or 0,
            "outside_bytes": c.get("obj_ext_bytes") or 0, "fields": c.get("obj_ext_fields"),
            "charge": c.get("obj_ext_charge")}


def bmeta_sizes(off_run, prof_runs):
    """Linux 7.3's smaller extension: per-object metadata before (the
    two-word layout) and after, for each cache spec and kind. The profiling
    off run gives the accounted cache and the plain one (whose on-demand
    arrays a USLUB_GFP_ACCOUNT allocation made); the exact-profiling run
    the profiled cache (the plain twin: tag only) and the accounted one
    with both words, which is also the two-word layout's placement and
    bytes for that spec (the placement rule depends only on the geometry
    and the extension's size). A plain cache's on-demand arrays were two
    words (16 bytes) before."""
    if not prof_runs:
        return []
    prof = {c["label"]: c for c in prof_runs[0].get("caches", [])}
    rows = []
    for c in off_run.get("caches", []):
        p = prof.get(c["label"])
        if not p:
            continue
        two = _ext(p)                                   # both words: the old layout
        on_demand_before = {"placement": "on-demand", "ext_bytes": 16, "outside_bytes": 16,
                            "fields": "objcg+tag", "charge": c["plain"]["stride"] + 16}
        for kind, before, after in (
                ("plain (on demand)", on_demand_before, _ext(c["plain"])),
                ("accounted", two, _ext(c)),
                ("profiled", dict(two, charge=None), _ext(p["plain"])),
                ("accounted+profiled", two, two)):
            rows.append({"label": c["label"], "kind": kind, "stride": c["stride"],
                         "before": before, "after": after,
                         "saved_ext_bytes": before["ext_bytes"] - after["ext_bytes"],
                         "saved_outside_bytes": before["outside_bytes"] - after["outside_bytes"]})
    return rows


# B6's instruction counts (callgrind), beside its timings: B6 compares
# processes, whose per-process spread on a VM (ASLR, page placement) is
# larger than the sampled mode's cost, so the same loops are also counted
# under callgrind, which is exact. B6I_ITERS pairs (and objects in
# batches) per process, B6I_WARM first; both loops' instructions
# (inclusive) divided by the pairs or objects they ran.
B6I_ITERS = 200000
B6I_WARM = 20000
B6I_LOOPS = [("pair", "bench_b1_loop"), ("batch", "bench_b2_single_loop")]


def b6_instructions(peers, sizes):
    """{size: {peer: {pattern: instructions per pair/object}}}, or None
    without valgrind (callgrind_annotate) or the uslub peer."""
    if not (shutil.which("valgrind") and shutil.which("callgrind_annotate")):
        return None
    argv0 = next((a for p, a, _ in peers if p == "uslub"), None)
    if not argv0:
        return None
    out = {}
    loops_b = (B6I_ITERS + B56_BATCH - 1) // B56_BATCH
    warm_b = (B6I_WARM + B56_BATCH - 1) // B56_BATCH
    units = {"pair": B6I_WARM + B6I_ITERS, "batch": (warm_b + loops_b) * B56_BATCH}
    for size in sizes:
        for peer, val in B6_PEERS:
            for pat, fn in B6I_LOOPS:
                with tempfile.TemporaryDirectory() as d:
                    f = os.path.join(d, "cg.out")
                    env = dict(os.environ, USLUB_PROFILING=val)
                    r = subprocess.run(
                        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + f,
                         "--toggle-collect=" + fn, argv0, "--bench", "B6", "--size",
                         str(size), "--iters", str(B6I_ITERS), "--warmup", str(B6I_WARM),
                         "--repeats", "1", "--batch", str(B56_BATCH), "--expect-profiling",
                         str(B6_EXPECT[peer])],
                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    if r.returncode != 0 or not os.path.exists(f):
                        return None
                    a = subprocess.run(["callgrind_annotate", f], capture_output=True,
                                       text=True)
                    m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", a.stdout, re.M)
                    if not m:
                        return None
                    ir = int(m.group(1).replace(",", ""))
                out.setdefault(str(size), {}).setdefault(peer, {})[pat] = \
                    round(ir / units[pat], 2)
    return out


def print_b5(e, log):
    log("")
    log("%s  %s  (%s)" % ("B5", e["title"], e["unit"]))
    log("  one process per size holds both caches, the thread's current group has no limit; "
        "hot pair = B1's loop, batch = %d allocs then %d frees one by one" % (
            e["batch"], e["batch"]))
    log("  ratio = accounted / plain (ratio of medians); paired = median of the per-sample "
        "ratios inside each process; x! misses the target (%s)" % ", ".join(
            "%s <= %.2fx" % (label, e["limits"][pat]) for pat, label in B56_PATTERNS))
    for size, s in e["sizes"].items():
        c = s.get("caches", {})
        log("  %s B: plain cache extension %s; accounted %s%s" % (
            size, fmt_ext(c.get("plain")), fmt_ext(c.get("account")),
            "" if s.get("charge_check_ok") is not False else
            "  (warning: the charge check failed)"))
    log("  %-6s %-13s %9s %13s %9s %13s %7s %7s" % (
        "size", "pattern", "plain", "p25-p75", "account", "p25-p75", "ratio", "paired"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        missed = {t["pattern"] for t in s["targets"] if t["pass"] is False}
        for pat, label in B56_PATTERNS:
            r = s["ratios"].get("account / plain, " + pat)
            pr = s["paired_ratio_median"].get(pat)
            log("  %-6s %-13s %s %13s %s %13s %7s %7s" % (
                size + " B", label, fmt_ns(med.get("plain " + pat)),
                fmt_spread(s, "plain " + pat), fmt_ns(med.get("account " + pat)),
                fmt_spread(s, "account " + pat), fmt_ratio(r, pat in missed),
                "%.2fx" % pr if pr is not None else "-"))


def print_b6(e, log):
    off = B6_BASE
    log("")
    log("%s  %s  (%s)" % ("B6", e["title"], e["unit"]))
    log("  the same binary and plain cache, one process per mode and round, interleaved; "
        "patterns as B5")
    log("  mode = USLUB_PROFILING -> uslub_profiling_enabled() as the processes reported it "
        "(0 off, 1 exact, 2 sampled)")
    log("  ratio = mode / off (ratio of medians); rounds = min..max of the per-round ratios; "
        "x! misses the target (%s)" % "; ".join(
            "%s: %s" % (B6_MODE[p], ", ".join("%s <= %.2fx" % (label, e["limits"][p][pat])
                                              for pat, label in B56_PATTERNS))
            for p in e["limits"]))
    for size, s in e["sizes"].items():
        c = s.get("caches", {})
        log("  %s B: extension %s%s" % (
            size, "; ".join("%s: %s" % (B6_MODE[p], fmt_ext(c.get(p))) for p, _ in B6_PEERS
                            if p in c),
            "" if s.get("tag_check_ok") is not False else
            "  (warning: the allocation-tag check failed)"))
    log("  %-6s %-13s %-18s %-16s %9s %13s %7s %13s" % (
        "size", "pattern", "peer", "mode", "median", "p25-p75", "ratio", "rounds"))
    for size, s in e["sizes"].items():
        med = s["median_ns"]
        for pat, label in B56_PATTERNS:
            for peer, env in B6_PEERS:
                key = {"uslub-prof-on": "on", "uslub-prof-sample": "sample"}.get(peer)
                shown_mode = "%s -> %s" % (env, ",".join(
                    str(x) for x in s.get("profiling", {}).get(peer, [])) or "-")
                if peer in s.get("skipped", {}):
                    log("  %-6s %-13s %-18s %-16s skipped: %s" % (
                        size + " B", label, peer, env + " -> -", s["skipped"][peer]))
                    continue
                missed = any(t["pass"] is False for t in s["targets"]
                             if t.get("peer") == peer and t.get("pattern") == pat)
                rr = s["round_ratios"].get(peer, {}).get(pat)
                log("  %-6s %-13s %-18s %-16s %s %13s %7s %13s" % (
                    size + " B", label, peer, shown_mode, fmt_ns(med.get("%s %s" % (peer, pat))),
                    fmt_spread(s, "%s %s" % (peer, pat)),
                    fmt_ratio(s["ratios"].get("%s / off, %s" % (key, pat)), missed)
                    if key else "-",
                    "%.2f..%.2fx" % (min(rr), max(rr)) if rr else "-"))
    ins = e.get("instructions")
    if ins:
        log("  instructions per pair (hot pair) / per object (batch), callgrind, the "
            "same loops (%d after %d), loop included; ratio = mode / off:" % (
                B6I_ITERS, B6I_WARM))
        for size, per in ins.items():
            base = per.get(B6_BASE, {})
            log("  %-6s %s" % (size + " B", "   ".join(
                "%s %s" % (B6_MODE[p], ", ".join(
                    "%s %.1f%s" % (pat, per[p][pat],
                                   "" if p == B6_BASE or not base.get(pat) else
                                   " (%.3fx)" % (per[p][pat] / base[pat]))
                    for pat, _ in B56_PATTERNS if pat in per[p]))
                for p, _ in B6_PEERS if p in per)))
    elif "instructions" in e:
        log("  instructions: not counted (no valgrind)")


def print_b6acc(e, log):
    log("")
    log("%s  %s  (%s)" % ("B6-acc", e["title"], e["unit"]))
    if "total_bytes" not in e:
        log("  not measured: %s" % (e["targets"][0].get("note") if e["targets"] else "-"))
        return
    log("  %d call sites, %.1f MiB live in %d objects (uslub-bench-uslub --bench B6-acc); "
        "exact = USLUB_PROFILING=1 (one run; objects x stride: %s)" % (
            len(e["sites"]), e["total_bytes"] / 2**20, e["objects"],
            "checked" if e.get("exact_check_ok") else "MISMATCH"))
    if e.get("skipped"):
        log("  sampled (USLUB_PROFILING=%s): skipped: %s" % (e["sample_env"], e["skipped"]))
    elif e.get("sample_runs"):
        log("  sampled = USLUB_PROFILING=%s, rate %s B: median of %d estimates (%d processes x "
            "%s repeats); error = |median / exact - 1|, target <= %.0f%% for sites > %.0f%% of "
            "the bytes; sigma1 = sqrt(rate / exact), one estimate's expected spread" % (
                e["sample_env"], e.get("sample_rate"), e["sample_runs"] * (e["repeats"] or 0),
                e["sample_runs"], e["repeats"], e["limit"] * 100, e["min_share"] * 100))
    log("  %-18s %6s %9s %13s %13s %8s %8s %7s" % (
        "site", "share", "objects", "exact B", "sampled B", "error", "sigma1", ""))
    for name, st in e["sites"].items():
        target = st["share"] > e["min_share"]
        err = st.get("error")
        verdict = "" if not target or err is None else ("ok" if err <= e["limit"] else "MISS")
        log("  %-18s %5.1f%% %9d %13d %13s %8s %8s %7s" % (
            name, st["share"] * 100, st["objects"], st["exact_bytes"],
            "%d" % st["median"] if "median" in st else "-",
            "%.1f%%" % (err * 100) if err is not None else "-",
            "%.1f%%" % (st["one_run_sigma"] * 100) if "one_run_sigma" in st else "-",
            verdict if target else "(< %.0f%%)" % (e["min_share"] * 100)))


def print_b7(e, log):
    log("")
    log("%s  %s  (%s)" % ("B7", e["title"], e["unit"]))
    log("  N groups x %d objects; shared = one USLUB_ACCOUNT cache, each group allocating as "
        "the thread's current group;" % e["objs_per_group"])
    log("  per-group = one plain cache per group; slab pages = sum of num_slabs x "
        "pages_per_slab, every object held;")
    log("  saving = 1 - shared/per-group (target >= %d%%); +ext = the same counting the "
        "extension bytes kept outside the slabs" % (e["min_saving"] * 100))
    log("  %-6s %5s  %12s %15s %8s %8s   %s" % (
        "size", "N", "shared pages", "per-group pages", "saving", "+ext", "layout (objs/slab x pages/slab, extension)"))
    for size, s in e["sizes"].items():
        for n, pt in s["groups"].items():
            sh, pg = pt.get("shared"), pt.get("per-group")

            def pages(d):
                if not d:
                    return "-"
                lo, hi = d["slab_pages_range"]
                return ("%g" % d["slab_pages"]) + ("" if lo == hi else " (%d..%d)" % (lo, hi))
            lay = sh.get("layout") if sh else None
            log("  %-6s %5s  %12s %15s %8s %8s   %s" % (
                size + " B", n, pages(sh), pages(pg),
                "%.1f%%" % pt["saving_pct"] if "saving_pct" in pt else "-",
                "%.1f%%" % pt["saving_with_ext_pct"] if "saving_with_ext_pct" in pt else "-",
                "%d x %d, %s" % (lay["objs_per_slab"], lay["pages_per_slab"], fmt_ext(lay))
                if lay else "-"))


def print_bmeta(e, log):
    log("")
    log("%s  %s  (%s)" % ("B-meta", e["title"], e["unit"]))
    if not e["caches"]:
        log("  not measured")
        return
    log("  USLUB_ACCOUNT caches (profiling %s); ext = bytes of one extension; outside = bytes "
        "per object kept outside the slab" % ("on" if e.get("profiling") else "off"))
    log("  (obj_ext_bytes); saved = ext bytes per object an array would have taken, and as a "
        "% of the stride; same = same")
    log("  stride, objects per slab and order as the cache without USLUB_ACCOUNT")
    log("  %-22s %-8s %6s %6s %5s %4s %-9s %4s %7s %6s %6s  %-14s %s" % (
        "cache", "spec", "object", "stride", "objs", "ord", "placement", "ext", "outside",
        "saved", "%", "seed 003 kind", "same"))
    for c in e["caches"]:
        log("  %-22s %-8s %6d %6d %5d %4d %-9s %4d %7d %6d %5.2f%%  %-14s %s" % (
            c["label"], c["spec"] or "-", c["object_size"], c["stride"], c["objs_per_slab"],
            c["order"], c["obj_ext"], c["obj_ext_size"], c["obj_ext_bytes"],
            c["saving_bytes_per_object"], c["saving_pct_of_stride"],
            "%s (%s)" % (c["seed003_kind"] or "-", "yes" if c["matches_seed003"] else "NO"),
            "yes" if c["same_layout_as_plain"] else "no"))
    rows = e.get("sizes") or []
    if not rows:
        return
    log("")
    log("  Linux 7.3's smaller extension: bytes per object, before (two words: objcg and tag,")
    log("  the layout every extension had) -> after (only the words the cache can need).")
    log("  ext = one extension wherever it is; outside = of those, bytes outside the slab;")
    log("  plain: its on-demand arrays (a USLUB_GFP_ACCOUNT allocation), profiling off;")
    log("  accounted: profiling off; profiled: USLUB_PROFILING=1, not accounted")
    log("  %-22s %-19s %6s  %-24s %-9s %-9s %s" % (
        "cache", "kind", "stride", "placement", "ext", "outside", "words after"))
    for r in rows:
        b, a = r["before"], r["after"]
        log("  %-22s %-19s %6d  %-24s %-9s %-9s %s" % (
            r["label"], r["kind"], r["stride"],
            "%s -> %s" % (b["placement"], a["placement"]),
            "%d -> %d" % (b["ext_bytes"], a["ext_bytes"]),
            "%d -> %d" % (b["outside_bytes"], a["outside_bytes"]), a["fields"] or "-"))
