#!/usr/bin/env python3
"""uslub benchmark driver: runs uslub and its peers side by side.

Runs B1 (single alloc+free, hot) and B4 (remote free) on uslub, glibc malloc,
jemalloc, mimalloc, tcmalloc (LD_PRELOAD of uslub-bench-malloc) and DPDK's
rte_mempool, R rounds interleaved round-robin across the peers, takes
medians, prints a ratio table (uslub time / peer time) with the SPEC §3
targets, and writes bench/results/bench.json and bench/results/bench.png.

Standard library only; matplotlib (for the PNG) is imported lazily, and if
this interpreter lacks it the plot is drawn by /usr/bin/python3 instead.

Exit status: 0 when every run completed (missed targets included: this is a
report), 1 when a benchmark binary crashed, timed out or is missing, 2 on
bad usage.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

BENCH_TITLES = {
    "B1": "single alloc+free, same cache, hot",
    "B4": "remote free: one thread allocates, another frees",
}
BENCH_UNITS = {
    "B1": "ns per alloc+free pair",
    "B4": "ns per object",
}

# Peer malloc libraries run through LD_PRELOAD: name -> sonames to look for.
MALLOC_PEERS = [
    ("jemalloc", ["libjemalloc.so.2"]),
    ("mimalloc", ["libmimalloc.so.2"]),
    ("tcmalloc", ["libtcmalloc_minimal.so.4"]),
]
MALLOCS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
PEER_ORDER = ["uslub", "dpdk", "glibc", "jemalloc", "mimalloc", "tcmalloc"]

# Debian packages of each peer (for the versions in bench.json).
PEER_PACKAGES = {
    "glibc": "libc6",
    "jemalloc": "libjemalloc2",
    "mimalloc": "libmimalloc2.0",
    "tcmalloc": "libtcmalloc-minimal4",
    "dpdk": "libdpdk-dev",
}

MODES = {
    # rounds: processes per peer and benchmark, interleaved;
    # repeats: samples taken inside each process (after a warm-up).
    "quick": {"rounds": 5, "repeats": 3, "B1_iters": 5_000_000,
              "B4_objects": 1_500_000, "timeout": 60},
    "full": {"rounds": 7, "repeats": 3, "B1_iters": 20_000_000,
             "B4_objects": 5_000_000, "timeout": 180},
}

# What each benchmark runs: (bench, object size).
CONFIGS = [("B1", 64), ("B1", 256), ("B4", 64)]


def _log(msg=""):
    print(msg, flush=True)


log = _log


def shown(path):
    """@path relative to the current directory when it is below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


# ---------------------------------------------------------------------------
# Finding the binaries and the peers
# ---------------------------------------------------------------------------

def lib_dirs():
    dirs = ["/usr/lib/x86_64-linux-gnu"]
    arch = platform.machine()
    if arch and arch != "x86_64":
        dirs.insert(0, "/usr/lib/%s-linux-gnu" % arch)
    dirs += ["/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu"]
    return [d for d in dirs if os.path.isdir(d)]


def find_lib(sonames):
    for d in lib_dirs():
        for so in sonames:
            p = os.path.join(d, so)
            if os.path.isfile(p):
                return p
    return None


def find_binary(build, name):
    for p in (os.path.join(build, "bench", name), os.path.join(build, name)):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def discover_peers(build, wanted):
    """Returns [(peer, argv0, extra_env)], printing one line per skipped peer."""
    peers = []
    missing_required = False
    ub = find_binary(build, "uslub-bench-uslub")
    mb = find_binary(build, "uslub-bench-malloc")
    db = find_binary(build, "uslub-bench-dpdk")
    for peer in PEER_ORDER:
        if wanted and peer not in wanted:
            continue
        if peer == "uslub":
            if not ub:
                log("bench: uslub-bench-uslub not found under %s (build it first)" % build)
                missing_required = True
                continue
            peers.append((peer, ub, {}))
        elif peer == "dpdk":
            if not db:
                log("bench: skipping dpdk: uslub-bench-dpdk was not built "
                    "(pkg-config libdpdk not found at configure time)")
                continue
            peers.append((peer, db, {}))
        elif peer == "glibc":
            if not mb:
                log("bench: uslub-bench-malloc not found under %s (build it first)" % build)
                missing_required = True
                continue
            peers.append((peer, mb, {}))
        else:
            sonames = dict(MALLOC_PEERS)[peer]
            if not mb:
                continue
            lib = find_lib(sonames)
            if not lib:
                log("bench: skipping %s: %s not found in %s" %
                    (peer, " / ".join(sonames), ", ".join(lib_dirs())))
                continue
            peers.append((peer, mb, {"LD_PRELOAD": lib}))
    return peers, missing_required


# ---------------------------------------------------------------------------
# Machine information
# ---------------------------------------------------------------------------

def run_quiet(argv, cwd=None):
    try:
        r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=10)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(build):
    info = {
        "nproc": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "loadavg_start": list(os.getloadavg()),
    }
    commit = run_quiet(["git", "rev-parse", "HEAD"], cwd=REPO)
    if commit:
        info["git_commit"] = commit
        dirty = run_quiet(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO)
        info["git_dirty"] = bool(dirty)
    cache = os.path.join(build, "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_C_COMPILER:"):
                    cc = line.split("=", 1)[1].strip()
                    ver = run_quiet([cc, "--version"])
                    info["compiler"] = ver.splitlines()[0] if ver else cc
                elif line.startswith("CMAKE_BUILD_TYPE:"):
                    info["build_type"] = line.split("=", 1)[1].strip()
    except OSError:
        pass
    versions = {}
    if shutil.which("dpkg-query"):
        for peer, pkg in PEER_PACKAGES.items():
            v = run_quiet(["dpkg-query", "-W", "-f=${Version}", pkg])
            if v:
                versions[peer] = "%s %s" % (pkg, v)
    info["peer_versions"] = versions
    env = {k: v for k, v in os.environ.items() if k.startswith("USLUB_")}
    if env:
        info["uslub_env"] = env
    return info


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def bench_argv(argv0, peer, bench, size, mode):
    iters = mode["B1_iters"] if bench == "B1" else mode["B4_objects"]
    return [argv0, "--bench", bench, "--size", str(size), "--iters", str(iters),
            "--repeats", str(mode["repeats"]), "--label", peer]


def run_one(peer, argv0, extra_env, bench, size, mode):
    """Runs one process. Returns (result dict or None, error string or None)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(extra_env)
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
        return None, "%s %s %d B: %s\n%s" % (peer, bench, size, how, tail)
    res = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
            except ValueError:
                return None, "%s %s: bad output line: %s" % (peer, bench, line)
    if not res or not res.get("samples_ns"):
        return None, "%s %s: no result line in the output" % (peer, bench)
    if "LD_PRELOAD" in extra_env:
        lib = res.get("malloc_lib", "")
        want = os.path.basename(extra_env["LD_PRELOAD"]).split(".so")[0]
        if want not in lib:
            return None, "preload-failed: %s: malloc comes from %s, not %s" % (
                peer, lib, extra_env["LD_PRELOAD"])
    if r.stderr.strip():
        res["stderr"] = r.stderr.strip()[-2000:]
    return res, None


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def run_all(peers, configs, mode):
    """Interleaved rounds. Returns (results, failures, crashed)."""
    # results[(bench, size)][peer] = {"samples": [...], "runs": [...]}
    results = {c: {} for c in configs}
    failures = []
    crashed = False
    dead = set()           # (peer, bench, size) that failed: not run again
    total = mode["rounds"] * len(configs) * len(peers)
    step = 0
    t_start = time.time()
    for rnd in range(mode["rounds"]):
        for (bench, size) in configs:
            # rotate the order every round so no peer always runs first
            k = (rnd + configs.index((bench, size))) % len(peers)
            order = peers[k:] + peers[:k]
            for (peer, argv0, extra_env) in order:
                step += 1
                key = (peer, bench, size)
                prefix = "[%3d/%d] round %d/%d  %s %4d B  %-9s" % (
                    step, total, rnd + 1, mode["rounds"], bench, size, peer)
                if key in dead:
                    log(prefix + " skipped (failed before)")
                    continue
                res, err = run_one(peer, argv0, extra_env, bench, size, mode)
                if err:
                    dead.add(key)
                    failures.append(err)
                    if err.startswith("preload-failed"):
                        log(prefix + " SKIPPED: " + err)
                    else:
                        crashed = True
                        log(prefix + " FAILED: " + err)
                    continue
                slot = results[(bench, size)].setdefault(
                    peer, {"samples": [], "runs": []})
                slot["samples"].extend(res["samples_ns"])
                slot["runs"].append(res)
                log(prefix + " %9.2f ns  (median of this run's %d samples)" % (
                    statistics.median(res["samples_ns"]), len(res["samples_ns"])))
    log("bench: %d runs in %.1f s" % (step, time.time() - t_start))
    return results, failures, crashed


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------

def target_checks(bench, med):
    """Targets of SPEC §3 for one benchmark and size: list of dicts."""
    u = med.get("uslub")
    checks = []

    def check(name, peer, peer_ns, limit):
        c = {"target": name, "peer": peer, "limit": limit}
        if u is None or peer_ns is None:
            c.update(ratio=None, peer_ns=peer_ns, pass_=None,
                     note="not measured (%s missing)" % ("uslub" if u is None else peer))
        else:
            ratio = u / peer_ns
            c.update(ratio=round(ratio, 4), peer_ns=round(peer_ns, 4),
                     pass_=ratio <= limit)
        c["pass"] = c.pop("pass_")
        checks.append(c)

    if bench == "B1":
        check("<= 1.0x DPDK single get+put", "dpdk", med.get("dpdk"), 1.0)
        mallocs = {p: med[p] for p in MALLOCS if p in med}
        if mallocs:
            best = min(mallocs, key=mallocs.get)
            check("<= 0.8x the best malloc (%s)" % best, best, mallocs[best], 0.8)
        else:
            check("<= 0.8x the best malloc", "best malloc", None, 0.8)
    elif bench == "B4":
        check("<= 1.0x mimalloc", "mimalloc", med.get("mimalloc"), 1.0)
    return checks


def analyse(results, configs, peers):
    out = {}
    for (bench, size) in configs:
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
            "targets": target_checks(bench, med),
            "runs": {p: [{k: v for k, v in r.items()
                          if k not in ("samples_ns", "bench", "peer", "size")}
                         for r in per[p]["runs"]]
                     for p in PEER_ORDER if p in per},
        }
        if "uslub" in med:
            s["ratios"] = {p: round(med["uslub"] / med[p], 4)
                           for p in PEER_ORDER if p in med and p != "uslub"}
        entry["sizes"][str(size)] = s
    for bench, entry in out.items():
        verdicts = [t["pass"] for s in entry["sizes"].values() for t in s["targets"]]
        if any(v is False for v in verdicts):
            entry["pass"] = False
        elif verdicts and all(v is True for v in verdicts):
            entry["pass"] = True
        else:
            entry["pass"] = None   # something was not measured
    return out


def fmt_ns(x):
    return "%9.2f" % x if x is not None else "        -"


def print_table(data):
    """Print the ratio table and return its lines (for bench.md)."""
    lines = []

    def log(line):
        lines.append(line)
        _log(line)

    log("")
    log("uslub vs peers: median ns per operation; ratio = uslub / peer "
        "(< 1.00 means uslub is faster)")
    for bench in ("B1", "B4"):
        if bench not in data:
            continue
        e = data[bench]
        log("")
        log("%s  %s  (%s)" % (bench, e["title"], e["unit"]))
        log("  %-6s %-10s %9s %9s %9s %11s" % ("size", "allocator", "median",
                                              "p25", "p75", "uslub/peer"))
        for size, s in e["sizes"].items():
            for p in PEER_ORDER:
                if p not in s["median_ns"]:
                    continue
                ratio = "-" if p == "uslub" else "%.2fx" % s["ratios"][p] \
                    if p in s["ratios"] else "-"
                log("  %-6s %-10s %s %s %s %11s" % (
                    size + " B", p, fmt_ns(s["median_ns"][p]), fmt_ns(s["p25_ns"][p]),
                    fmt_ns(s["p75_ns"][p]), ratio))
    log("")
    log("targets (SPEC §3):")
    for bench in ("B1", "B4"):
        if bench not in data:
            continue
        for size, s in data[bench]["sizes"].items():
            for t in s["targets"]:
                if t["pass"] is None:
                    verdict, ratio = "SKIP", t.get("note", "")
                else:
                    verdict = "PASS" if t["pass"] else "FAIL"
                    ratio = "%.2fx" % t["ratio"]
                log("  %s %4s B  %-36s %-8s %s" % (bench, size, t["target"], ratio, verdict))
    return lines


# ---------------------------------------------------------------------------
# Plot
# ---------------------------------------------------------------------------

PLOT_COLORS = {
    "uslub": "#d62728", "dpdk": "#7f7f7f", "glibc": "#1f77b4",
    "jemalloc": "#2ca02c", "mimalloc": "#9467bd", "tcmalloc": "#ff7f0e",
}


def plot(data, png):
    """Grouped bar chart: one panel per benchmark and size, one bar per
    allocator. Raises ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(b, sz, s) for b in ("B1", "B4") if b in data
              for sz, s in data[b]["sizes"].items() if s["median_ns"]]
    if not panels:
        raise ValueError("nothing to plot")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.4),
                             squeeze=False)
    for ax, (b, sz, s) in zip(axes[0], panels):
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


def make_plot(data, json_path, png):
    try:
        plot(data, png)
        return True
    except ImportError:
        pass
    other = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(other) and os.access(other, os.X_OK):
        r = subprocess.run([other, os.path.abspath(__file__), "--plot-only", json_path,
                            "--png", png], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0:
            return True
        log("bench: plotting with %s failed: %s" % (other, r.stdout.strip()[-500:]))
        return False
    log("bench: matplotlib not available (Debian: python3-matplotlib); skipping %s" % png)
    return False


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="CMake build directory (default: build)")
    ap.add_argument("--quick", action="store_true", help="short runs (under 2 minutes)")
    ap.add_argument("--rounds", type=int, help="processes per peer and benchmark")
    ap.add_argument("--repeats", type=int, help="samples per process")
    ap.add_argument("--only", help="comma-separated benchmarks (B1,B4)")
    ap.add_argument("--peers", help="comma-separated peers (%s)" % ",".join(PEER_ORDER))
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="directory for bench.json and bench.png")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--plot-only", metavar="JSON", help=argparse.SUPPRESS)
    ap.add_argument("--png", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.plot_only:
        with open(args.plot_only) as f:
            data = json.load(f)
        try:
            plot(data, args.png or os.path.splitext(args.plot_only)[0] + ".png")
        except ImportError:
            print("matplotlib not available in %s" % sys.executable)
            return 3
        return 0

    mode_name = "quick" if args.quick else "full"
    mode = dict(MODES[mode_name])
    if args.rounds:
        mode["rounds"] = args.rounds
    if args.repeats:
        mode["repeats"] = args.repeats
    configs = CONFIGS
    if args.only:
        only = {b.strip().upper() for b in args.only.split(",")}
        bad = only - set(BENCH_TITLES)
        if bad:
            ap.error("unknown benchmark(s): %s" % ", ".join(sorted(bad)))
        configs = [c for c in CONFIGS if c[0] in only]
    wanted = None
    if args.peers:
        wanted = {p.strip() for p in args.peers.split(",")}
        bad = wanted - set(PEER_ORDER)
        if bad:
            ap.error("unknown peer(s): %s" % ", ".join(sorted(bad)))

    build = args.build
    if not os.path.isdir(build) and os.path.isdir(os.path.join(REPO, build)):
        build = os.path.join(REPO, build)
    build = os.path.abspath(build)

    log("bench: %s mode, %d rounds x %d samples per peer; build %s" % (
        mode_name, mode["rounds"], mode["repeats"], build))
    peers, missing = discover_peers(build, wanted)
    if missing:
        return 1
    if not peers:
        log("bench: nothing to run")
        return 1
    log("bench: peers: " + ", ".join(
        p + (" (LD_PRELOAD=%s)" % e["LD_PRELOAD"] if e else "") for p, _, e in peers))
    info = machine_info(build)
    log("bench: %s, %d CPUs, load %.2f" % (info["cpu_model"], info["nproc"],
                                           info["loadavg_start"][0]))
    busy = info["loadavg_start"][0]
    if busy > 0.5 * (info["nproc"] or 1):
        log("bench: warning: the machine is busy (load %.2f on %d CPUs); B4 needs "
            "two idle CPUs, expect noisy numbers" % (busy, info["nproc"]))
    if (info["nproc"] or 1) < 2:
        log("bench: one CPU only: B4's two threads share it (no pinning)")

    results, failures, crashed = run_all(peers, configs, mode)
    info["loadavg_end"] = list(os.getloadavg())

    data = {"machine": info, "mode": mode_name,
            "settings": {k: v for k, v in mode.items() if k != "timeout"},
            "peers": {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                      for p, a, e in peers}}
    data.update(analyse(results, configs, peers))
    if failures:
        data["failures"] = failures

    table = print_table(data)
    # B4's own two threads raise the 1-minute load by up to 2: only more
    # than that means other work ran alongside.
    if info["loadavg_end"][0] > (info["nproc"] or 1) + 0.5:
        log("")
        log("bench: warning: load average was %.2f at the end (%.2f at the start) "
            "on %d CPUs: other work ran alongside, B4 especially is noisy; "
            "see p25/p75" % (info["loadavg_end"][0], info["loadavg_start"][0],
                             info["nproc"]))

    os.makedirs(args.out, exist_ok=True)
    jpath = os.path.join(args.out, "bench.json")
    tmp = jpath + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, jpath)
    mpath = os.path.join(args.out, "bench.md")
    with open(mpath, "w") as f:
        f.write("# uslub benchmark results\n\n")
        f.write("Written by `%s` (%s mode) on %s, %s, %d CPUs, commit %s.\n\n" % (
            "make bench" if mode_name == "full" else "make bench-quick", mode_name,
            info.get("date", "?"), info.get("cpu_model", "?"), info.get("nproc") or 0,
            info.get("git_commit", "?")))
        f.write("```\n" + "\n".join(l for l in table).strip("\n") + "\n```\n")
        f.write("\n![benchmarks](bench.png)\n")
    log("")
    log("bench: wrote %s" % shown(jpath))
    log("bench: wrote %s" % shown(mpath))
    if mode_name == "full" and os.path.abspath(args.out) == os.path.join(REPO, "bench", "results"):
        update_readme(table, info)
    if not args.no_plot:
        png = os.path.join(args.out, "bench.png")
        if make_plot(data, jpath, png):
            log("bench: wrote %s" % shown(png))
    if failures:
        log("bench: %d run(s) failed:" % len(failures))
        for f_ in failures:
            log("  " + f_.splitlines()[0])
    return 1 if crashed else 0


README_BEGIN = "<!-- bench:begin (written by bench/run.py in full mode) -->"
README_END = "<!-- bench:end -->"


def update_readme(table, info):
    """Put the measured table between the README's bench markers, so the
    README shows the figures of the last full run, never typed ones."""
    path = os.path.join(REPO, "README.md")
    try:
        text = open(path).read()
    except OSError:
        return
    a, b = text.find(README_BEGIN), text.find(README_END)
    if a < 0 or b < a:
        return
    block = (README_BEGIN + "\n\nLast `make bench` (%s, %s, %d CPUs, commit %s):\n\n```\n%s\n```\n\n"
             "![benchmarks](bench/results/bench.png)\n\n" % (
                 info.get("date", "?")[:10], info.get("cpu_model", "?"),
                 info.get("nproc") or 0, info.get("git_commit", "?")[:10],
                 "\n".join(table).strip("\n")))
    with open(path, "w") as f:
        f.write(text[:a] + block + text[b:])
    log("bench: updated the table in %s" % shown(path))


if __name__ == "__main__":
    sys.exit(main())
