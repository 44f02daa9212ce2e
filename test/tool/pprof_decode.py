"""A decoder of pprof profiles (profile.proto, after gunzip), of our own:
the protocol buffer's wire format with profile.proto's field numbers.
Used by the tests of `uslub pprof` and `uslub heap`, with their check()."""

_fails = 0


def check(name, ok):
    """print "ok" or "FAIL" and the check's name; failed() counts the FAILs"""
    global _fails
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        _fails += 1


def failed():
    return _fails


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of one message: ints, or bytes for wire type 2"""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, wt, v))
    return out


def packed(b):
    i, out = 0, []
    while i < len(b):
        v, i = varint(b, i)
        out.append(v)
    return out


def decode(data):
    """A profile's sample types, samples (locations, values), locations
    (id: function id), functions (id: name), files of functions (id:
    file), location lines and mappings (id: start, limit, offset, file,
    build id), the default sample type and the period"""
    p = {"types": [], "samples": [], "loc": {}, "fn": {}, "strings": [], "fn_file": {},
         "loc_line": {}, "loc_map": {}, "loc_addr": {}, "maps": {}, "default": "",
         "period": 0}
    for f, wt, v in fields(data):
        if f == 6:
            p["strings"].append(v.decode())
    S = p["strings"]
    for f, wt, v in fields(data):
        m = dict((ff, vv) for ff, _, vv in fields(v)) if wt == 2 and f != 6 else None
        if f == 1:
            p["types"].append((S[m.get(1, 0)], S[m.get(2, 0)]))
        elif f == 2:
            locs = packed(m.get(1, b""))
            vals = packed(m.get(2, b""))
            p["samples"].append((locs, vals))
        elif f == 3:
            p["maps"][m[1]] = (m.get(2, 0), m.get(3, 0), m.get(4, 0), S[m.get(5, 0)],
                               S[m.get(6, 0)])
        elif f == 4:
            line = dict((ff, vv) for ff, _, vv in fields(m[4])) if 4 in m else {}
            p["loc"][m[1]] = line.get(1, 0)
            p["loc_line"][m[1]] = line.get(2, 0)
            p["loc_map"][m[1]] = m.get(2, 0)
            p["loc_addr"][m[1]] = m.get(3, 0)
        elif f == 5:
            p["fn"][m[1]] = S[m.get(2, 0)]
            p["fn_file"][m[1]] = S[m.get(4, 0)]
        elif f == 12:
            p["period"] = v
        elif f == 14:
            p["default"] = S[v]
    return p


def stack(p, locs):
    return ";".join(p["fn"][p["loc"][l]] for l in reversed(locs))
