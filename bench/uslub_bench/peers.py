"""Finding the build's binaries and libraries and the peers (DPDK, the
system's malloc libraries, mimalloc 3.4 under BUILD/peers), and the
machine information that goes into bench.json."""

import datetime
import glob
import os
import platform
import re
import shutil
import subprocess

from .config import (
    BSCALE_PEERS, BSCALE_USLUB_MODES, CPUSLABS, CPUSLABS_MALLOC_ENV, DFREE, MALLOC_PEERS, MIMALLOC3, MIMALLOC3_DIR, MIMALLOC3_ENV,
    MIMALLOC3_WANT, PEER_ORDER, PEER_PACKAGES, PERCPU, PERCPU_ENV, PERCPU_STATE, REPO, SUITE,
    SUITE_MODES, SUITE_PEERS,
    USLUB_MALLOC, USLUB_MALLOC_LIB, USLUB_NOMARK_BENCH, USLUB_NOMARK_MALLOC_LIB, USLUB_SERIES,
    USLUB_VARIANTS, log, shown,
)


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


# filled by malloc_peer_lib(): peer -> (library or None, why it is missing)
MALLOC_LIBS = {}
# versions of peers that are not Debian packages (mimalloc-3.4), for bench.json
PEER_VERSIONS_EXTRA = {}


def mimalloc_version(lib, argv0):
    """The version mimalloc @lib says it is ("3.4.3"), from a run of @argv0
    --help under LD_PRELOAD=@lib with MIMALLOC_VERBOSE=1 (mimalloc prints
    its version when the process starts); and the line it was on. (None,
    why) when it says none."""
    env = dict(os.environ, LD_PRELOAD=lib, MIMALLOC_VERBOSE="1")
    try:
        r = subprocess.run([argv0, "--help"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "cannot run %s: %s" % (argv0, e)
    for line in r.stderr.splitlines():
        m = re.search(r"\bv(\d+\.\d+\.\d+)\b", line)
        if m:
            return m.group(1), line.strip()
    tail = r.stderr.strip().splitlines()[-1:] or ["no output"]
    return None, "no version in its MIMALLOC_VERBOSE=1 output (%s)" % tail[0][:200]


def malloc_peer_lib(build, peer, argv0):
    """The library a peer malloc is preloaded from: a Debian package's
    (MALLOC_PEERS) or, for mimalloc-3.4, BUILD/peers/mimalloc-3.4's (or
    $USLUB_BENCH_MIMALLOC3), checked to be mimalloc 3.4 by running @argv0
    under it. Returns (path or None, why it is missing); looked up once."""
    if peer in MALLOC_LIBS:
        return MALLOC_LIBS[peer]
    if peer != MIMALLOC3:
        sonames = dict(MALLOC_PEERS)[peer]
        lib = find_lib(sonames)
        got = (lib, None if lib else "%s not found in %s" % (
            " / ".join(sonames), ", ".join(lib_dirs())))
    else:
        cands = [os.environ[MIMALLOC3_ENV]] if os.environ.get(MIMALLOC3_ENV) else \
            sorted(glob.glob(os.path.join(build, MIMALLOC3_DIR, "libmimalloc.so.3.4*")),
                   key=len)
        lib = next((c for c in cands if os.path.isfile(c)), None)
        if not lib:
            got = (None, "%s not found (bench/install-peers.sh %s fetches it from the PyPI "
                   "wheel cmeel-mimalloc; or set %s)" % (
                       os.environ.get(MIMALLOC3_ENV) or
                       os.path.join(shown(build), MIMALLOC3_DIR, "libmimalloc.so.3.4"),
                       shown(build), MIMALLOC3_ENV))
        else:
            lib = os.path.abspath(lib)
            ver, line = mimalloc_version(lib, argv0)
            if not ver or not ver.startswith(MIMALLOC3_WANT):
                got = (None, "%s is not mimalloc %sx: %s" % (
                    shown(lib), MIMALLOC3_WANT, ("it says v%s" % ver) if ver else line))
            else:
                PEER_VERSIONS_EXTRA[MIMALLOC3] = "mimalloc %s (%s)" % (line, lib)
                got = (lib, None)
    MALLOC_LIBS[peer] = got
    return got


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
    discover_percpu(build, wanted)
    discover_suite(build, wanted)
    for peer in PEER_ORDER:
        if wanted and peer not in wanted and not (peer == USLUB_MALLOC and "uslub" in wanted):
            continue
        if peer in USLUB_VARIANTS:
            continue        # variants of uslub's binary, added by peers_for()
        if peer == "uslub":
            if not ub:
                log("bench: uslub-bench-uslub not found under %s (build it first)" % build)
                missing_required = True
                continue
            peers.append((peer, ub, {}))
        elif peer == USLUB_MALLOC:
            lib = find_build_lib(build, USLUB_MALLOC_LIB)
            if not mb or not lib:
                log("bench: skipping %s: %s not found under %s (not built yet?)" % (
                    USLUB_MALLOC, "uslub-bench-malloc" if not mb else USLUB_MALLOC_LIB, build))
                continue
            peers.append((peer, mb, {"LD_PRELOAD": lib}))
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
            if not mb:
                continue
            lib, why = malloc_peer_lib(build, peer, mb)
            if not lib:
                log("bench: skipping %s: %s" % (peer, why))
                continue
            peers.append((peer, mb, {"LD_PRELOAD": lib}))
    return peers, missing_required


def find_build_lib(build, name):
    """A library the build made (libuslub-malloc*.so), or None."""
    for p in (os.path.join(build, name), os.path.join(build, "bench", name),
              os.path.join(build, "src", name), os.path.join(build, "src", "malloc", name)):
        if os.path.isfile(p):
            return p
    return None


def discover_dfree(build, wanted):
    """B-dfree's pairs into DFREE: B1 on uslub-bench-uslub and
    uslub-bench-uslub-nomark; B8 on uslub-bench-mallocsuite with LD_PRELOAD
    of libuslub-malloc.so and of libuslub-malloc-nomark.so. The same
    environment as B1's and B8's uslub. A part whose binaries are missing is
    skipped, with one line saying so."""
    DFREE.clear()
    if wanted and "uslub" not in wanted:
        log("bench: skipping B-dfree: it measures uslub (not in --peers)")
        return
    ub = find_binary(build, "uslub-bench-uslub")
    nb = find_binary(build, USLUB_NOMARK_BENCH)
    sb = find_binary(build, "uslub-bench-mallocsuite")
    lib = find_build_lib(build, USLUB_MALLOC_LIB)
    nlib = find_build_lib(build, USLUB_NOMARK_MALLOC_LIB)
    if ub and nb:
        DFREE["B1"] = [("uslub", ub, {}), ("uslub-nomark", nb, {})]
    if sb and lib and nlib:
        DFREE["B8"] = [("uslub", sb, {"LD_PRELOAD": lib}),
                       ("uslub-nomark", sb, {"LD_PRELOAD": nlib})]
    missing = [n for n, have in ((USLUB_NOMARK_BENCH, nb), (USLUB_NOMARK_MALLOC_LIB, nlib),
                                 ("uslub-bench-uslub", ub), ("uslub-bench-mallocsuite", sb),
                                 (USLUB_MALLOC_LIB, lib)) if not have]
    if missing:
        log("bench: %s B-dfree: %s not found under %s (bench/CMakeLists.txt builds the "
            "nomark pair; none in sanitizer builds)" % (
                "skipping" if not DFREE else "skipping part of",
                " / ".join(missing), build))


def discover_suite(build, wanted):
    """B8/B9's peers into SUITE: uslub-bench-mallocsuite as is (glibc) and
    with LD_PRELOAD of libuslub-malloc.so (uslub) and of each peer malloc.
    Prints one line per peer skipped."""
    del SUITE[:]
    sb = find_binary(build, "uslub-bench-mallocsuite")
    if not sb:
        log("bench: B8/B9: uslub-bench-mallocsuite not found under %s (build it first); "
            "skipping B8 and B9" % build)
        return
    for peer in SUITE_PEERS:
        if wanted and peer not in wanted and not (peer in (CPUSLABS, PERCPU) and
                                                  "uslub" in wanted):
            continue
        if peer == PERCPU and not PERCPU_STATE.get("available"):
            continue            # no rseq: discover_percpu() said so
        if peer in USLUB_SERIES:
            lib = find_build_lib(build, USLUB_MALLOC_LIB)
            if not lib:
                if peer == "uslub":
                    log("bench: B8/B9: skipping uslub: %s not found under %s (not built yet?)"
                        % (USLUB_MALLOC_LIB, build))
                continue
            env = {"LD_PRELOAD": lib}
            if peer == CPUSLABS:
                env.update(CPUSLABS_MALLOC_ENV)
            elif peer == PERCPU:
                env.update(PERCPU_ENV)
            SUITE.append((peer, sb, env))
        else:
            got = suite_other_peer(build, peer, sb, "B8/B9")
            if got:
                SUITE.append(got)
    SUITE_MODES.clear()
    for peer, argv0, env in SUITE:
        if peer in USLUB_SERIES:
            SUITE_MODES[peer] = malloc_sheaf_capacity(argv0, env)
    got = SUITE_MODES.get(CPUSLABS)
    if got:
        log("bench: B8: warning: %s's kmalloc-64 has sheaf_capacity %d with %s: malloc "
            "does not run on cpu slabs, %s measures sheaves too" % (
                CPUSLABS, got, " ".join("%s=%s" % kv for kv in CPUSLABS_MALLOC_ENV.items()),
                CPUSLABS))


def suite_other_peer(build, peer, sb, what):
    """One malloc peer other than uslub on the malloc suite @sb: glibc (no
    preload) or a peer malloc's library (LD_PRELOAD), as (peer, argv0,
    extra_env); None, with one line naming @what, when it is missing."""
    if peer == "glibc":
        return (peer, sb, {})
    lib, why = malloc_peer_lib(build, peer, sb)
    if not lib:
        log("bench: %s: skipping %s: %s" % (what, peer, why))
        return None
    return (peer, sb, {"LD_PRELOAD": lib})


def discover_bscale(build, wanted):
    """B-scale's peers into BSCALE_PEERS: the malloc suite with LD_PRELOAD of
    libuslub-malloc.so once per row of BSCALE_USLUB_MODES (its environment
    added; --peers uslub selects every mode), then the other suite peers.
    Prints one line per peer skipped."""
    del BSCALE_PEERS[:]
    sb = find_binary(build, "uslub-bench-mallocsuite")
    if not sb:
        log("bench: B-scale: uslub-bench-mallocsuite not found under %s; skipping B-scale"
            % build)
        return
    lib = find_build_lib(build, USLUB_MALLOC_LIB)
    for peer, env in BSCALE_USLUB_MODES:
        if wanted and peer not in wanted and "uslub" not in wanted:
            continue
        if peer == PERCPU and not PERCPU_STATE.get("available"):
            continue            # no rseq: discover_percpu() said so
        if not lib:
            log("bench: B-scale: skipping %s: %s not found under %s" % (
                peer, USLUB_MALLOC_LIB, build))
            continue
        BSCALE_PEERS.append((peer, sb, dict(env, LD_PRELOAD=lib)))
    for peer in SUITE_PEERS:
        if peer in USLUB_SERIES or (wanted and peer not in wanted):
            continue
        got = suite_other_peer(build, peer, sb, "B-scale")
        if got:
            BSCALE_PEERS.append(got)


PERCPU_NOTE = "USLUB_PERCPU=cpu: sheaves stay per thread"


def discover_percpu(build, wanted):
    """Whether USLUB_PERCPU=cpu takes on this machine, into PERCPU_STATE: one
    short run of the malloc suite under libuslub-malloc.so (else of B1's
    binary) with it, whose result line must say "percpu_mode":"cpu". Where
    the library stays per thread (no rseq: an old C library,
    GLIBC_TUNABLES=glibc.pthread.rseq=0, seccomp; several NUMA nodes) it
    prints PERCPU_NOTE and why on stderr: the mode is then left out of every
    benchmark and its rows say "not available (no rseq)" (or the reason)."""
    PERCPU_STATE.clear()
    if wanted and PERCPU not in wanted and "uslub" not in wanted:
        return
    sb = find_binary(build, "uslub-bench-mallocsuite")
    lib = find_build_lib(build, USLUB_MALLOC_LIB)
    ub = find_binary(build, "uslub-bench-uslub")
    if sb and lib:
        argv, env = [sb, "--workload", "churn", "--scale", "0.001", "--label", PERCPU], \
            dict(PERCPU_ENV, LD_PRELOAD=lib)
    elif ub:
        argv, env = [ub, "--bench", "B1", "--size", "64", "--iters", "1000", "--warmup", "100",
                     "--repeats", "1", "--label", PERCPU], dict(PERCPU_ENV)
    else:
        return
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.update(env)
    try:
        r = subprocess.run(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        out, err = r.stdout, r.stderr
    except (OSError, subprocess.SubprocessError) as ex:
        out, err = "", str(ex)
    mode, ids = None, None
    for line in out.splitlines():
        m = re.search(r'"percpu_mode":"(\w+)"', line)
        if m:
            mode = m.group(1)
            n = re.search(r'"percpu_ids":(\d+)', line)
            ids = int(n.group(1)) if n else None
    note = next((l.strip() for l in err.splitlines() if PERCPU_NOTE in l), None)
    if mode == "cpu":
        PERCPU_STATE.update(available=True, percpu_ids=ids)
        return
    if note:
        why = note.split(PERCPU_NOTE, 1)[1].lstrip(": ")
    elif mode:
        why = "percpu_mode %s with USLUB_PERCPU=cpu and no note (a library without the " \
              "per-CPU mode?)" % mode
    else:
        why = "the probe gave no percpu_mode (%s)" % (
            (err.strip().splitlines() or ["no output"])[-1][:200])
    label = "not available (no rseq)" if "rseq" in why else "not available (%s)" % why
    PERCPU_STATE.update(available=False, why=why, label=label)
    log("bench: %s: %s: %s; its rows say so" % (PERCPU, label, why))


def malloc_sheaf_capacity(argv0, env):
    """The sheaf capacity of kmalloc-64 under LD_PRELOAD of libuslub-malloc.so
    with @env: one short run of the suite with USLUB_VERBOSE=1, whose layout
    line of each new cache says it. None when it cannot be told."""
    e = dict(os.environ, USLUB_VERBOSE="1", **env)
    try:
        r = subprocess.run([argv0, "--workload", "churn", "--scale", "0.001", "--label", "probe"],
                           env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in r.stderr.splitlines():
        if line.startswith("uslub: cache kmalloc-64:") and "sheaf_capacity" in line:
            try:
                return int(line.split("sheaf_capacity", 1)[1].split()[0])
            except (ValueError, IndexError):
                return None
    return None


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
    versions.update(PEER_VERSIONS_EXTRA)
    info["peer_versions"] = versions
    env = {k: v for k, v in os.environ.items() if k.startswith("USLUB_")}
    if env:
        info["uslub_env"] = env
    return info
