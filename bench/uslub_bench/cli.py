"""The driver's command line (bench/run.py): parse the options, discover the
peers, run the rounds, analyse, print the table, write bench.json, bench.md
and bench.png."""

import argparse
import json
import os
import sys

from .bulk import analyse_b2, analyse_b3
from .config import (
    B2_NS, B2_SHEAVES, B56_BATCH, B7_GROUPS, B7_OBJS, BDEBUG_SPEC, BENCH_ORDER, BENCH_TITLES,
    BMETA_CACHES, BSCALE, BSCALE_PEERS, BSCALE_USLUB_MODES, BSCALE_WORKLOADS, CONFIGS, CPUSLABS, CPUSLABS_ENV, CPUSLABS_MALLOC_ENV, DFREE, MODES, PEER_ORDER,
    PERCPU, PERCPU_ENV, PERCPU_STATE, REPO, RUN_SECONDS, SUITE, SUITE_BENCHES, SUITE_MODES, USLUB_MODE, bscale_threads, log, shown,
)
from .debug import analyse_bdebug, analyse_bdfree
from .ext import analyse_b5, analyse_b6, analyse_b6acc, analyse_b7, analyse_bmeta, b6_instructions
from .hotpath import hot_paths
from .peers import discover_bscale, discover_dfree, discover_peers, machine_info
from .plot import make_plot, plot
from .publish import publish_readme
from .rcu import run_brcu
from .runner import run_all
from .scale import analyse_bscale
from .single import analyse_single
from .suite import analyse_b8, analyse_b9
from .table import print_table


DESCRIPTION = "uslub benchmark driver: runs uslub and its peers side by side."


def analyse(results, configs, peers, mode):
    out = {}
    if any(b == "B2" for b, _ in configs):
        size = [sz for b, sz in configs if b == "B2"][0]
        out["B2"] = analyse_b2(results[("B2", size)], size)
    b3_sizes = [sz for b, sz in configs if b == "B3"]
    if b3_sizes:
        out["B3"] = analyse_b3(results, b3_sizes)
    for b, fn in (("B5", analyse_b5), ("B6", analyse_b6), ("B7", analyse_b7),
                  ("B-debug", analyse_bdebug)):
        sizes = [sz for b_, sz in configs if b_ == b]
        if sizes:
            out[b] = fn(results, sizes)
            if b == "B6":
                out[b]["instructions"] = b6_instructions(peers, sizes)
    if any(b == "B6-acc" for b, _ in configs):
        out["B6-acc"] = analyse_b6acc(results)
    if any(b == "B-meta" for b, _ in configs):
        out["B-meta"] = analyse_bmeta(results)
    workloads = [w for b, w in configs if b == "B8"]
    if workloads and SUITE:
        out["B8"] = analyse_b8(results, workloads, mode)
    nthreads = [n for b, n in configs if b == "B9"]
    if nthreads and SUITE:
        out["B9"] = analyse_b9(results, nthreads)
    if any(b == BSCALE for b, _ in configs) and BSCALE_PEERS:
        out[BSCALE] = analyse_bscale(results, configs, mode)
    dfree_subs = [sub for b, sub in configs if b == "B-dfree"]
    if dfree_subs and DFREE:
        out["B-dfree"] = analyse_bdfree(results, dfree_subs, mode)
    analyse_single(results, configs, out)
    return {b: out[b] for b in BENCH_ORDER if b in out}


def main():
    ap = argparse.ArgumentParser(description=DESCRIPTION)
    ap.add_argument("--build", default="build", help="CMake build directory (default: build)")
    ap.add_argument("--quick", action="store_true", help="short runs (under 2 minutes)")
    ap.add_argument("--rounds", type=int, help="processes per peer and benchmark")
    ap.add_argument("--repeats", type=int, help="samples per process")
    ap.add_argument("--only", help="comma-separated benchmarks (%s)" % ",".join(BENCH_ORDER))
    ap.add_argument("--peers", help="comma-separated peers (%s)" % ",".join(PEER_ORDER))
    ap.add_argument("--out", help="directory for bench.json, bench.md and bench.png "
                    "(default: BUILD/bench-results, never in the source tree)")
    ap.add_argument("--publish", metavar="JSON",
                    help="run nothing: rewrite the README's table of published figures "
                    "(between its bench markers) from this bench.json of a full run")
    ap.add_argument("--readme", default=os.path.join(REPO, "README.md"),
                    help="the README --publish rewrites (default: the source tree's)")
    ap.add_argument("--allow-quick", action="store_true",
                    help="--publish a quick run's bench.json too")
    ap.add_argument("--b3-mib", type=float,
                    help="B3: MiB allocated per round (default: quick %d, full %d)" % (
                        MODES["quick"]["B3_bytes"] >> 20, MODES["full"]["B3_bytes"] >> 20))
    ap.add_argument("--scale-threads", type=int, metavar="MAX",
                    help="B-scale: the largest thread count (default %d: %dx the CPUs)" % (
                        bscale_threads()[-1], bscale_threads()[-1] // (os.cpu_count() or 1)))
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--plot-only", metavar="JSON", help=argparse.SUPPRESS)
    ap.add_argument("--png", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.publish:
        return publish_readme(args.publish, args.readme, args.allow_quick)
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
        mode["rounds"] = mode["B8_rounds"] = mode["B9_rounds"] = mode["Bdfree_rounds"] = \
            mode["Bscale_rounds"] = args.rounds
    if args.repeats:
        mode["repeats"] = args.repeats
    if args.b3_mib:
        mode["B3_bytes"] = int(args.b3_mib * (1 << 20))
    configs = CONFIGS
    if args.scale_threads:
        if args.scale_threads < 1:
            ap.error("--scale-threads must be at least 1")
        configs = [c for c in configs if c[0] != BSCALE]
        configs += [(BSCALE, (w, n)) for w, _ in BSCALE_WORKLOADS
                    for n in bscale_threads(args.scale_threads)]
    if args.only:
        names = {b.upper(): b for b in BENCH_TITLES}
        only = {b.strip().upper() for b in args.only.split(",")}
        bad = only - set(names)
        if bad:
            ap.error("unknown benchmark(s): %s" % ", ".join(sorted(bad)))
        only = {names[b] for b in only}
        configs = [c for c in configs if c[0] in only]
    wanted = None
    if args.peers:
        wanted = {p.strip() for p in args.peers.split(",")}
        bad = wanted - set(PEER_ORDER) - {m for m, _ in BSCALE_USLUB_MODES}
        if bad:
            ap.error("unknown peer(s): %s" % ", ".join(sorted(bad)))

    build = args.build
    if not os.path.isdir(build) and os.path.isdir(os.path.join(REPO, build)):
        build = os.path.join(REPO, build)
    build = os.path.abspath(build)
    if not args.out:
        args.out = os.path.join(build, "bench-results")

    log("bench: %s mode, %d rounds x %d samples per peer; build %s" % (
        mode_name, mode["rounds"], mode["repeats"], build))
    peers, missing = discover_peers(build, wanted)
    if any(b == "B-dfree" for b, _ in configs):
        discover_dfree(build, wanted)
    if any(b == BSCALE for b, _ in configs):
        discover_bscale(build, wanted)
    if missing:
        return 1
    if not peers:
        log("bench: nothing to run")
        return 1
    log("bench: peers: " + ", ".join(
        p + (" (LD_PRELOAD=%s)" % e["LD_PRELOAD"] if e else "") for p, _, e in peers))
    if any(p == "uslub" for p, _, _ in peers):
        log("bench: uslub's modes: uslub = %s; %s = %s (B1, B2, B4; B8 with %s); %s = %s "
            "(B1, B8, B9, B-scale)%s" % (
                USLUB_MODE["uslub"], CPUSLABS, USLUB_MODE[CPUSLABS],
                " ".join("%s=%s" % kv for kv in CPUSLABS_MALLOC_ENV.items()), PERCPU,
                USLUB_MODE[PERCPU], "" if PERCPU_STATE.get("available") is not False
                else ": " + PERCPU_STATE.get("label", "not available")))
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
            "settings": dict({k: v for k, v in mode.items() if k != "timeout"},
                             B2_ns=B2_NS, B2_sheaves_asked=B2_SHEAVES,
                             cpuslabs_env=CPUSLABS_ENV, cpuslabs_malloc_env=CPUSLABS_MALLOC_ENV,
                             percpu_env=PERCPU_ENV,
                             B56_batch=B56_BATCH, B7_groups=B7_GROUPS, B7_objs=B7_OBJS,
                             Bdebug_spec=BDEBUG_SPEC,
                             Bmeta_caches=["%s=%s" % (l_, s_) for l_, s_, _ in BMETA_CACHES]),
            "peers": {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                      for p, a, e in peers}}
    if PERCPU_STATE:
        # whether USLUB_PERCPU=cpu took here (discover_percpu's probe)
        data["percpu"] = dict(PERCPU_STATE)
    # wall seconds of each peer's processes per benchmark (what a peer costs)
    data["run_seconds"] = {b: {p: round(t, 2) for p, t in spent.items()}
                           for b, spent in RUN_SECONDS.items()}
    if SUITE and any(b in SUITE_BENCHES for b, _ in configs):
        data["suite_peers"] = {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                               for p, a, e in SUITE}
        # kmalloc-64's sheaf capacity under each uslub mode (0: cpu slabs)
        data["suite_modes"] = dict(SUITE_MODES)
    if BSCALE_PEERS and any(b == BSCALE for b, _ in configs):
        data["bscale_peers"] = {p: dict(e) for p, _, e in BSCALE_PEERS}
    if DFREE and any(b == "B-dfree" for b, _ in configs):
        data["dfree_peers"] = {b: {p: (e.get("LD_PRELOAD") or os.path.relpath(a, REPO))
                                   for p, a, e in ps} for b, ps in DFREE.items()}
    data.update(analyse(results, configs, peers, mode))
    # the hot paths' instructions (callgrind's too, but not in --quick)
    data["hot_paths"] = hot_paths(build, data, callgrind=mode_name == "full")
    if not args.only or "B-rcu" in only:
        brcu = run_brcu(build, mode_name)
        if brcu:
            data["B-rcu"] = brcu
    if failures:
        data["failures"] = failures

    table = print_table(data)
    # B4's own two threads raise the 1-minute load by up to 2: only more
    # than that means other work ran alongside.
    if info["loadavg_end"][0] > (info["nproc"] or 1) + 0.5:
        log("")
        log("bench: warning: load average was %.2f at the end (%.2f at the start) "
            "on %d CPUs: other work ran alongside, %sis noisy; "
            "see p25/p75" % (info["loadavg_end"][0], info["loadavg_start"][0],
                             info["nproc"], "B4 especially " if "B4" in data else "timing "))

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
    if mode_name == "full":
        log("bench: to publish these figures in the README: python3 bench/run.py "
            "--publish %s" % shown(jpath))
    if not args.no_plot:
        png = os.path.join(args.out, "bench.png")
        if make_plot(data, jpath, png):
            log("bench: wrote %s" % shown(png))
    if failures:
        log("bench: %d run(s) failed:" % len(failures))
        for f_ in failures:
            log("  " + f_.splitlines()[0])
    return 1 if crashed else 0
