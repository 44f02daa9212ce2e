"""Running the benchmark processes: each one's command line (bench_argv) and
peers (peers_for), one process with its checks (run_one), and the
interleaved rounds over every configuration (run_all)."""

import json
import os
import statistics
import subprocess
import time

from .config import (
    B2_MODES, B2_NS, B2_SHEAVES, B3_VARIANTS, B56_BATCH, B56_PATTERNS, B6ACC_MIN_SHARE,
    B6ACC_ONCE, B6ACC_PEERS, B6_EXPECT, B6_PEERS, B7_GROUPS, B7_MODES, B7_OBJS, B9_SKIP,
    BDEBUG_PEERS, BMETA_CACHES, BMETA_PROFILED, BSCALE, BSCALE_PEERS, BSCALE_WORKLOADS, CPUSLABS, CPUSLABS_ENV, DFREE, HARDENED_ENV, NO_PROFILING, ONCE,
    OWN, PERCPU, PERCPU_ENV, PERCPU_STATE, RUN_SECONDS, SKIPPED, SUITE, SUITE_BENCHES, USLUB_MALLOC, log,
)


def bench_argv(argv0, peer, bench, size, mode):
    if bench == "B-dfree":
        return bench_argv(argv0, peer, size[0], size[1], mode)
    if bench == "B8":
        return [argv0, "--workload", size, "--scale", "%g" % mode["B8_scale"],
                "--phase1-mib", str(mode["B8_phase1_mib"]),
                "--purge-ms", str(mode["B8_purge_ms"]), "--label", peer]
    if bench == "B9":
        return [argv0, "--workload", "b9", "--threads", str(size), "--label", peer]
    if bench == BSCALE:
        return [argv0, "--workload", dict(BSCALE_WORKLOADS)[size[0]], "--threads", str(size[1]),
                "--scale", "%g" % mode["Bscale_scale"], "--label", peer]
    if bench == "B2":
        argv = [argv0, "--bench", bench, "--size", str(size),
                "--iters", str(mode["B2_objects"]),
                "--ns", ",".join(str(n) for n in B2_NS)]
        if B2_SHEAVES.get(peer):
            argv += ["--sheaves", str(B2_SHEAVES[peer])]
        return argv + ["--repeats", str(mode["repeats"]), "--label", peer]
    if bench == "B3":
        return [argv0, "--bench", bench, "--size", str(size),
                "--bytes", str(mode["B3_bytes"]),
                "--repeats", str(mode["repeats"]), "--label", peer]
    if bench in ("B5", "B6", "B-debug"):
        argv = [argv0, "--bench", bench, "--size", str(size),
                "--iters", str(mode["B5_iters"]), "--batch", str(B56_BATCH),
                "--repeats", str(mode["repeats"]), "--label", peer]
        if bench == "B6":
            argv += ["--expect-profiling", str(B6_EXPECT[peer])]
        if bench == "B-debug":
            argv += ["--expect-debug", "0" if dict(BDEBUG_PEERS)[peer] is None else "1"]
        return argv
    if bench == "B6-acc":
        return [argv0, "--bench", bench, "--bytes", str(mode["B6acc_bytes"]),
                "--repeats", str(mode["B6acc_repeats"]),
                "--expect-profiling", str(B6_EXPECT[peer]), "--label", peer]
    if bench == "B7":
        return [argv0, "--bench", bench, "--size", str(size), "--mode", peer,
                "--groups", ",".join(str(n) for n in B7_GROUPS),
                "--objs", str(B7_OBJS), "--label", peer]
    if bench == "B-meta":
        return [argv0, "--bench", bench, "--label", peer, "--caches",
                ",".join("%s=%s" % (label, spec) for label, spec, _ in BMETA_CACHES)]
    iters = mode["B1_iters"] if bench == "B1" else mode["B4_objects"]
    return [argv0, "--bench", bench, "--size", str(size), "--iters", str(iters),
            "--repeats", str(mode["repeats"]), "--label", peer]


def peers_for(bench, peers, size=None):
    """The peers a benchmark runs on. B1, B4: all, uslub in both modes (and
    B1 with hardening). B2: the slab/mempool ones (uslub in both modes,
    DPDK); malloc has no bulk API. B3, B5,
    B-meta: uslub, which they compare with itself. B6: uslub with profiling
    exact, sampled and off; B6-acc: exact and sampled. B7: uslub in its two modes (shared, per-group). B-debug:
    uslub without USLUB_DEBUG and with it naming the other cache. B8, B9:
    the malloc suite's peers (SUITE), uslub through libuslub-malloc.so.
    B-dfree (@size is (sub-bench, size)): uslub and uslub-nomark (DFREE).
    B-scale: uslub's modes (BSCALE_USLUB_MODES) and the suite's other peers
    (BSCALE_PEERS).
    uslub-cpuslabs: uslub's binary with CPUSLABS_ENV (B8: library, with
    CPUSLABS_MALLOC_ENV; not in B9). uslub-percpu: uslub's binary (B1) or
    library (B8, B9, B-scale) with PERCPU_ENV, where discover_percpu()
    found it takes."""
    if bench == "B-dfree":
        return list(DFREE.get(size[0], []))
    if bench == BSCALE:
        return list(BSCALE_PEERS)
    if bench in SUITE_BENCHES:
        return [p for p in SUITE if bench != "B9" or p[0] not in B9_SKIP]
    if bench == "B2":
        out = []
        for p in peers:
            if p[0] == "uslub":
                out.append(p)
                out.append((CPUSLABS, p[1], dict(p[2], **CPUSLABS_ENV)))
            elif p[0] == "dpdk":
                out.append(p)
        return out
    if bench in ("B3", "B5", "B-meta"):
        out = [(p[0], p[1], dict(p[2], **NO_PROFILING)) if bench != "B3" else p
               for p in peers if p[0] == "uslub"]
        if bench == "B-meta":   # the profiled caches, and the two-word layout
            out += [(BMETA_PROFILED, p[1], dict(p[2], USLUB_PROFILING="1"))
                    for p in peers if p[0] == "uslub"]
        return out
    if bench in ("B6", "B6-acc"):
        return [(name, p[1], dict(p[2], USLUB_PROFILING=val))
                for p in peers if p[0] == "uslub"
                for name, val in (B6_PEERS if bench == "B6" else B6ACC_PEERS)]
    if bench == "B7":
        return [(m, p[1], dict(p[2], **NO_PROFILING))
                for p in peers if p[0] == "uslub" for m in B7_MODES]
    if bench == "B-debug":
        return [(name, p[1], dict(p[2], USLUB_DEBUG=spec, **NO_PROFILING))
                for p in peers if p[0] == "uslub" for name, spec in BDEBUG_PEERS]
    if bench in ("B1", "B4"):
        out = []
        for p in peers:
            if p[0] == USLUB_MALLOC and bench != "B1":
                continue            # B1's malloc row only
            out.append(p)
            if p[0] == "uslub":
                out.append((CPUSLABS, p[1], dict(p[2], **CPUSLABS_ENV)))
                if bench == "B1":
                    if PERCPU_STATE.get("available"):
                        out.append((PERCPU, p[1], dict(p[2], **PERCPU_ENV)))
                    out.append(("uslub-hardened", p[1], dict(p[2], **HARDENED_ENV)))
        return out
    return peers


def run_one(peer, argv0, extra_env, bench, size, mode):
    """Runs one process with @extra_env (a value None unsets the variable).
    Returns (result dict or None, error string or None)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for k, v in extra_env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    argv = bench_argv(argv0, peer, bench, size, mode)
    try:
        r = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           timeout=mode["timeout"])
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s: %s" % (mode["timeout"], " ".join(argv))
    except OSError as e:
        return None, "cannot run %s: %s" % (argv0, e)
    if r.returncode != 0:
        how = ("killed by signal %d" % -r.returncode) if r.returncode < 0 \
            else "exit status %d" % r.returncode
        tail = "\n".join(r.stderr.strip().splitlines()[-15:])
        return None, "%s %s %s: %s\n%s" % (peer, bench, config_label(bench, size), how, tail)
    res = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
            except ValueError:
                return None, "%s %s: bad output line: %s" % (peer, bench, line)
    if res and res.get("skipped"):
        return None, "skipped: %s %s: %s" % (peer, bench, res["skipped"])
    if not res or not (res.get("samples_ns") or res.get("series") or res.get("points")
                       or res.get("caches") or res.get("workload") or res.get("sites")):
        return None, "%s %s: no result line in the output" % (peer, bench)
    if bench in ("B6", "B6-acc") and res.get("profiling") != B6_EXPECT.get(peer):
        # the child checks this too (--expect-profiling) and exits with 3
        return None, "%s %s %s: USLUB_PROFILING=%s did not take (profiling %s, not %s)" % (
            peer, bench, config_label(bench, size), extra_env.get("USLUB_PROFILING"),
            res.get("profiling"), B6_EXPECT.get(peer))
    other = res.get("caches", {}).get("other", {}) if bench == "B-debug" else {}
    if bench == "B-debug" and other.get("debug") != (extra_env.get("USLUB_DEBUG") is not None):
        # the child checks this too (--expect-debug) and exits with 3
        return None, "%s B-debug %d B: USLUB_DEBUG=%s did not take (%s is %sa debug cache)" % (
            peer, size, extra_env.get("USLUB_DEBUG"), other.get("name"),
            "" if other.get("debug") else "not ")
    if extra_env.get("USLUB_CPU_SLABS") == "1" and res.get("sheaf_capacity"):
        # the cpu-slab peer got sheaves: it would measure the default mode
        return None, "%s %s %s: USLUB_CPU_SLABS=1 did not take (sheaf_capacity %s)" % (
            peer, bench, config_label(bench, size), res.get("sheaf_capacity"))
    if extra_env.get("USLUB_PERCPU") == "cpu" and res.get("percpu_mode") != "cpu":
        # the per-CPU peer stayed per thread: it would measure the default mode
        return None, "%s %s %s: USLUB_PERCPU=cpu did not take (percpu_mode %s)%s" % (
            peer, bench, config_label(bench, size), res.get("percpu_mode"),
            (": " + r.stderr.strip().splitlines()[-1]) if r.stderr.strip() else "")
    if "LD_PRELOAD" in extra_env:
        lib = res.get("malloc_lib", "")
        want = os.path.basename(extra_env["LD_PRELOAD"]).split(".so")[0]
        # the very file preloaded, not another copy of the same name (two
        # mimallocs: libmimalloc.so.2 and mimalloc-3.4's libmimalloc.so.3.4)
        if want not in lib or (os.path.isabs(lib) and os.path.realpath(lib) !=
                               os.path.realpath(extra_env["LD_PRELOAD"])):
            return None, "preload-failed: %s: malloc comes from %s, not %s" % (
                peer, lib, extra_env["LD_PRELOAD"])
    if r.stderr.strip():
        res["stderr"] = r.stderr.strip()[-2000:]
    return res, None


def config_label(bench, size):
    """How one configuration is named in messages: "64 B", "churn", "512 threads"."""
    if bench == "B8":
        return str(size)
    if bench == "B9":
        return "%d threads" % size
    if bench == "B-dfree":
        return "%s %s" % (size[0], config_label(size[0], size[1]))
    if bench == BSCALE:
        return "%s %dt" % size
    return "%s B" % size


def once_peer(bench, peer, rnd):
    """A peer that runs in the first round only (B6-acc's exact one)."""
    return bench == "B6-acc" and peer in B6ACC_ONCE and rnd > 0


def rounds_of(bench, mode):
    """Rounds of one benchmark: B8 and B9 have their own count."""
    if bench in SUITE_BENCHES:
        return mode["%s_rounds" % bench]
    if bench == BSCALE:
        return mode["Bscale_rounds"]
    if bench == "B-dfree":
        return mode["Bdfree_rounds"]
    return mode["rounds"]


def add_series(into, series):
    """Merge a B2/B3 result line's series into @into. B2: {mode: {n:
    [samples]}}; B3: {variant: [samples]} (stored under the key "all")."""
    for name, v in series.items():
        dst = into.setdefault(name, {})
        if isinstance(v, dict):
            for key, xs in v.items():
                dst.setdefault(key, []).extend(xs)
        else:
            dst.setdefault("all", []).extend(v)


def series_summary(bench, series):
    """One progress-line summary of a B2/B3/B5/B6/B-debug run (medians of its
    samples)."""
    med = statistics.median
    if bench == "B5":
        parts = []
        for pat, label in B56_PATTERNS:
            a, b = series.get("plain " + pat), series.get("account " + pat)
            if a and b:
                parts.append("%s: plain %.2f account %.2f ns (%.2fx)" % (
                    label, med(a), med(b), med(b) / med(a)))
        return "; ".join(parts)
    if bench == "B6":
        return "; ".join("%s %.2f ns" % (label, med(series["plain " + pat]))
                         for pat, label in B56_PATTERNS if series.get("plain " + pat))
    if bench == "B-debug":
        return "; ".join("%s %.2f ns, other cache %.2f ns" % (
            label, med(series["plain " + pat]), med(series["other " + pat]))
            for pat, label in B56_PATTERNS
            if series.get("plain " + pat) and series.get("other " + pat))
    if bench == "B2":
        parts = []
        for mode, label in B2_MODES:
            m = series.get(mode, {})
            parts.append("%s %s ns" % (label, " ".join(
                "n=%s:%.2f" % (n, med(m[n])) for n in ("1", "16", "64", "250") if n in m)))
        return "; ".join(parts)
    return "  ".join("%s %.2f" % (v, med(series[v])) for v in B3_VARIANTS if v in series) + " ns"


def result_summary(bench, res):
    """One progress-line summary of a B7/B-meta/B8/B9 run."""
    if bench in ("B8", BSCALE):
        line = "%8.1f ms  peak RSS %7.1f MiB" % (res["time_ns"] / 1e6, res["peak_rss_kb"] / 1024)
        if res.get("workload") == "phases":
            line += "  after frees %.1f MiB (%.0f%% of peak), end %.1f MiB" % (
                res["rss_after_free_kb"] / 1024, res["after_free_frac"] * 100,
                res["rss_phase2_end_kb"] / 1024)
        return line
    if bench == "B9":
        return "held %7.1f MiB  (%.1f KiB/thread; baseline %.1f MiB)" % (
            res["rss_held_kb"] / 1024, res["rss_held_per_thread_kb"],
            res["rss_baseline_kb"] / 1024)
    if bench == "B6-acc":
        total = res.get("total_bytes") or 1
        return "%d sites, %.1f MiB: %s" % (len(res["sites"]), total / 2**20, " ".join(
            "%s:%+.1f%%" % (st["site"].split()[-2], 100.0 * (statistics.median(st["bytes"]) /
                                                           st["exact_bytes"] - 1))
            for st in res["sites"] if st["exact_bytes"] > B6ACC_MIN_SHARE * total))
    if bench == "B7":
        return "; ".join("N=%s: %d slab pages" % (n, p["slab_pages"])
                         for n, p in res.get("points", {}).items())
    return "; ".join("%s: %s, %d B outside" % (c["label"], c["obj_ext"], c["obj_ext_bytes"])
                     for c in res.get("caches", []))


def check_warnings(bench, size, res):
    """Warnings about a run whose premise did not hold (its figures are still
    reported): B5's charge check, B6's allocation-tag check."""
    out = []
    if bench == "B5" and not res.get("charge_check", {}).get("ok", True):
        out.append("B5 %d B: the charge check failed (%s): accounting may not be on"
                   % (size, json.dumps(res.get("charge_check"))))
    if bench in SUITE_BENCHES and res.get("misaligned"):
        out.append("%s %s %s: %d posix_memalign results not aligned as asked%s"
                   % (bench, config_label(bench, size), res.get("label"), res["misaligned"],
                      " (mimalloc 2.0.9's bug for size == alignment of 256..1024, its issue "
                      "#700)" if res.get("label") == "mimalloc" else ""))
    if bench == "B6" and not res.get("tag_check", {}).get("ok", True):
        out.append("B6 %d B %s: profiling %s but the call site %s in allocinfo"
                   % (size, res.get("peer"), {0: "off", 1: "exact", 2: "sampled"}.get(
                       res.get("profiling"), "?"),
                      "does not show up" if res.get("profiling") else "shows up"))
    if bench == "B6-acc" and res.get("exact_check", {}).get("ok") is False:
        out.append("B6-acc %s: exact profiling did not report every site's objects x stride"
                   % res.get("peer"))
    return out


def run_all(peers, configs, mode):
    """Interleaved rounds. Returns (results, failures, crashed)."""
    # results[(bench, size)][peer] = {"samples": [...], "runs": [...]}
    results = {c: {} for c in configs}
    failures = []
    crashed = False
    dead = set()           # (peer, bench, size) that failed: not run again
    warned = set()
    max_rounds = max([rounds_of(b, mode) for b, _ in configs] or [0])
    total = sum(len([p for p in peers_for(b, peers, sz) if not once_peer(b, p[0], rnd)])
                for rnd in range(max_rounds)
                for b, sz in configs if not (b in ONCE and rnd) and rnd < rounds_of(b, mode))
    step = 0
    t_start = time.time()
    for rnd in range(max_rounds):
        for (bench, size) in configs:
            cpeers = peers_for(bench, peers, size)
            if not cpeers or (bench in ONCE and rnd) or rnd >= rounds_of(bench, mode):
                continue
            # rotate the order every round so no peer always runs first
            k = (rnd + configs.index((bench, size))) % len(cpeers)
            order = cpeers[k:] + cpeers[:k]
            for (peer, argv0, extra_env) in order:
                if once_peer(bench, peer, rnd):
                    continue
                step += 1
                key = (peer, bench, size)
                if bench in ("B-meta", "B6-acc"):
                    prefix = "[%3d/%d] round %d/%d  %s  %s" % (
                        step, total, rnd + 1, mode["rounds"], bench, peer)
                elif bench in SUITE_BENCHES + ("B-dfree", BSCALE):
                    prefix = "[%3d/%d] round %d/%d  %s %-11s %-9s" % (
                        step, total, rnd + 1, rounds_of(bench, mode), bench,
                        config_label(bench, size), peer)
                else:
                    prefix = "[%3d/%d] round %d/%d  %s %4d B  %-9s" % (
                        step, total, rnd + 1, mode["rounds"], bench, size, peer)
                if key in dead:
                    log(prefix + " skipped (failed before)")
                    continue
                t_run = time.time()
                res, err = run_one(peer, argv0, extra_env, bench, size, mode)
                spent = RUN_SECONDS.setdefault(bench, {})
                spent[peer] = spent.get(peer, 0.0) + time.time() - t_run
                if err:
                    dead.add(key)
                    if err.startswith("skipped"):
                        SKIPPED[(bench, size, peer)] = err.split(": ", 2)[-1]
                        log(prefix + " SKIPPED: " + err)
                        continue
                    failures.append(err)
                    if err.startswith("preload-failed"):
                        log(prefix + " SKIPPED: " + err)
                    else:
                        crashed = True
                        log(prefix + " FAILED: " + err)
                    continue
                wb, wsz = size if bench == "B-dfree" else (bench, size)
                for w in check_warnings(wb, wsz, res):
                    if w not in warned:         # once, not every round
                        warned.add(w)
                        log("bench: warning: " + w)
                if bench == "B-dfree":
                    # the round each run belongs to: the per-round ratios
                    res["round"] = rnd
                    slot = results[(bench, size)].setdefault(peer, {"samples": [], "runs": []})
                    slot["runs"].append(res)
                    if size[0] == "B8":
                        log(prefix + " " + result_summary("B8", res))
                    else:
                        slot["samples"].extend(res["samples_ns"])
                        log(prefix + " %9.2f ns  (median of this run's %d samples)" % (
                            statistics.median(res["samples_ns"]), len(res["samples_ns"])))
                    continue
                if bench in ("B7", "B-meta", "B6-acc", BSCALE) + SUITE_BENCHES:
                    slot = results[(bench, size)].setdefault(peer, {"runs": []})
                    slot["runs"].append(res)
                    log(prefix + " " + result_summary(bench, res))
                    continue
                if bench in OWN:
                    slot = results[(bench, size)].setdefault(
                        peer, {"series": {}, "runs": []})
                    add_series(slot["series"], res["series"])
                    slot["runs"].append(res)
                    log(prefix + " " + series_summary(bench, res["series"]))
                    continue
                slot = results[(bench, size)].setdefault(
                    peer, {"samples": [], "runs": []})
                slot["samples"].extend(res["samples_ns"])
                slot["runs"].append(res)
                log(prefix + " %9.2f ns  (median of this run's %d samples)" % (
                    statistics.median(res["samples_ns"]), len(res["samples_ns"])))
    log("bench: %d runs in %.1f s" % (step, time.time() - t_start))
    for bench, spent in RUN_SECONDS.items():
        log("bench: %s: %.1f s: %s" % (bench, sum(spent.values()), ", ".join(
            "%s %.1f s" % (p, t) for p, t in sorted(spent.items(), key=lambda kv: -kv[1]))))
    return results, failures, crashed
