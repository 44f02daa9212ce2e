"""B1 (single alloc+free, hot) and B4 (remote free): one row per peer and
size, the SPEC targets of each uslub mode (target_checks) and the malloc
front end's row."""

from .config import B4_LIMIT, B4_VS, MALLOCS, USLUB_MALLOC, USLUB_SERIES
from .stats import series_prefix


# B1's malloc row: uslub-malloc / the best malloc <= B1_MALLOC_LIMIT at
# the sizes B1_MALLOC_SIZES (the malloc(64)); informational at the
# other sizes.
B1_MALLOC_LIMIT = 0.8
B1_MALLOC_SIZES = (64,)


def target_checks(bench, med, size=None):
    """Targets of SPEC §3 for one benchmark and size: list of dicts. One set
    per uslub mode (USLUB_SERIES; "series" says which): uslub's always, the
    cpu-slab mode's when it was measured; B1: and uslub-malloc's, when it
    was measured."""
    checks = []
    for series in USLUB_SERIES:
        if series != "uslub" and series not in med:
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
