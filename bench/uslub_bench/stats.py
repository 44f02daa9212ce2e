"""Statistics shared by the benchmark families: quantiles, medians with
their spread, geometric means, per-process paired ratios, and the target
checks' form (ratio_check) and verdict (verdict_of)."""

import math
import statistics


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def series_prefix(series):
    """How a target of @series is named: uslub's as before (no prefix), the
    cpu-slab mode's with "uslub-cpuslabs " in front."""
    return "" if series == "uslub" else series + " "


def verdict_of(checks):
    """True when every check passed, False when one failed, None when
    something was not measured."""
    verdicts = [t["pass"] for t in checks if not t.get("informational")]
    if any(v is False for v in verdicts):
        return False
    if verdicts and all(v is True for v in verdicts):
        return True
    return None


def ratio_check(name, num, den, limit, **extra):
    """A target of the form num / den <= limit (num, den: medians or None)."""
    c = {"target": name, "limit": limit}
    c.update(extra)
    if num is None or den is None:
        c.update(ratio=None, pass_=None, note="not measured")
    else:
        c.update(ratio=round(num / den, 4), pass_=num / den <= limit)
    c["pass"] = c.pop("pass_")
    return c


def stats_of(xs):
    return {"median": round(statistics.median(xs), 4),
            "p25": round(quantile(xs, 0.25), 4), "p75": round(quantile(xs, 0.75), 4)}


def run_extras(runs, drop=("samples_ns", "series", "bench", "peer", "size")):
    return [{k: v for k, v in r.items() if k not in drop} for r in runs]


def caches_of(runs):
    """The cache layouts a B5/B6 run reported (of its first run)."""
    return runs[0].get("caches", {}) if runs else {}


def paired_ratios(runs, num, den):
    """Per-sample ratios num/den inside each B5 process (the two caches'
    samples of one repeat ran back to back): a cross-check of the ratio of
    medians that drift between processes cannot touch."""
    out = []
    for r in runs:
        a, b = r.get("series", {}).get(num), r.get("series", {}).get(den)
        if a and b:
            out += [x / y for x, y in zip(a, b) if y]
    return out


def round_paired_ratios(num_runs, den_runs, series):
    """Per-sample ratios between the two processes of each round (sample r
    of one against sample r of the other: they ran back to back)."""
    out = []
    for x, y in zip(num_runs, den_runs):
        out += [a / b for a, b in zip(x["series"][series], y["series"][series]) if b]
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
