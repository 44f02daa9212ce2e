"""Number formatting shared by the text tables."""


def fmt_ns(x):
    return "%9.2f" % x if x is not None else "        -"


def fmt_spread(s, name):
    """p25-p75 of one series, as "2.35-2.47"."""
    if name not in s["p25_ns"]:
        return "-"
    return "%.2f-%.2f" % (s["p25_ns"][name], s["p75_ns"][name])


def fmt_ext(c):
    """A cache layout's extension, e.g. "array, 16 B/obj outside"."""
    if not c or c.get("obj_ext") is None:
        return "?"
    if c["obj_ext"] == "none":
        return "none"
    return "%s %d B, %d B/obj outside" % (c["obj_ext"], c.get("obj_ext_size") or 0,
                                          c.get("obj_ext_bytes") or 0)


def fmt_ratio(x, missed=False):
    if x is None:
        return "-"
    return "%.2fx%s" % (x, "!" if missed else " ")
