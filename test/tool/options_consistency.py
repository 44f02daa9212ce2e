#!/usr/bin/env python3
"""The one options table against its documentation.

The table is USLUB_OPTIONS(X) in src/base/base.h (materialized in
src/base/options.c; `uslub help` prints it through uslub_options_fprint),
and the USLUB_DEBUG letters are the cases of parse_flags() in
src/base/debug_opts.c. This test extracts both from the source and checks:

  - `uslub --help` lists every option of the table, with the table's
    default (and range, for numeric ones), and no USLUB_ variable in its
    option list that is not in the table (USLUB_LIBRARY, the tool's own,
    aside);
  - the README's "Environment variables" table has one row per option of
    the table, no row for anything else, and for numeric options the
    table's default and range 0..max;
  - every USLUB_DEBUG letter (and '-') is explained in the help text's
    USLUB_DEBUG line, in the README's USLUB_DEBUG row and in the parser's
    own message for an unknown letter (debug_opts.c), and shown by
    slabinfo's debug column (src/observe/stats.c).

Adding an option to the table (or a letter to the parser) without
documenting it fails here.

  options_consistency.py --source SRC_DIR --tool BUILD/uslub
"""

import argparse
import re
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok:   " + msg)


def table_options(base_h):
    """[(name, default, max)] of USLUB_OPTIONS(X): default None for text."""
    text = open(base_h).read()
    m = re.search(r"^#define USLUB_OPTIONS\(X\)[^\n]*\\\n((?:[^\n]*\\\n)*[^\n]*\n)", text, re.M)
    if not m:
        sys.exit("no #define USLUB_OPTIONS(X) in %s" % base_h)
    opts = []
    for line in m.group(1).splitlines():
        x = re.match(r"\s*X\(\s*([A-Z0-9_]+)\s*,\s*([^,]+?)\s*,\s*([^,]+?)\s*,", line)
        if not x:
            if line.strip().rstrip("\\").strip():
                fail("base.h: cannot read the table line: %s" % line.strip()[:80])
            continue
        name, d, mx = x.groups()
        if d == "USLUB_OPT_STRING":
            opts.append(("USLUB_" + name, None, None))
        else:
            opts.append(("USLUB_" + name, int(d, 0), int(mx, 0)))
    return opts


def debug_letters(debug_opts_c):
    """The letters parse_flags() accepts (upper case), and its message."""
    text = open(debug_opts_c).read()
    m = re.search(r"static unsigned int parse_flags\(.*?\n}\n", text, re.S)
    if not m:
        sys.exit("no parse_flags() in %s" % debug_opts_c)
    letters = [c.upper() for c in re.findall(r"case '([a-z])':", m.group(0))]
    if "'-'" in m.group(0):
        letters.append("-")
    msg = re.search(r'"\' ignored \(flags: ([^)]*)\)"', text)
    return letters, msg.group(1).split() if msg else None


def letter_documented(text, letter):
    """Is @letter explained in @text: "X abort ...", "- none", "`-` none"?"""
    if letter == "-":
        return re.search(r"(?:^|[\s,;(])`?-`? none", text) is not None
    return re.search(r"(?:^|[\s,;(])`?%s`? [a-z]" % re.escape(letter), text) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--tool", required=True, help="the built uslub command")
    args = ap.parse_args()
    src = args.source.rstrip("/")

    opts = table_options(src + "/src/base/base.h")
    names = [o[0] for o in opts]
    if len(opts) < 10:
        fail("read only %d options from base.h" % len(opts))
    else:
        ok("%d options in the table (src/base/base.h)" % len(opts))
    letters, msg_letters = debug_letters(src + "/src/base/debug_opts.c")
    if len(letters) < 8:
        fail("read only %d USLUB_DEBUG letters from debug_opts.c: %s" % (len(letters), letters))
    else:
        ok("USLUB_DEBUG letters in debug_opts.c: %s" % " ".join(letters))

    # ---- uslub --help -----------------------------------------------------
    r = subprocess.run([args.tool, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env={"PATH": "/usr/bin:/bin"})
    if r.returncode != 0:
        fail("uslub --help: exit %d: %s" % (r.returncode, r.stderr.strip()[:300]))
    helptext = r.stdout
    # the option list: "  USLUB_NAME   default D   doc (0..MAX)"
    help_opts = {}
    for line in helptext.splitlines():
        m = re.match(r"  (USLUB_[A-Z0-9_]+)\s+default\s+(\S+)\s+(.*)$", line)
        if m:
            help_opts[m.group(1)] = (m.group(2), m.group(3))
    for name, d, mx in opts:
        if name not in help_opts:
            fail("uslub --help does not list %s" % name)
            continue
        hd, doc = help_opts[name]
        if d is None:
            if hd != '""':
                fail("uslub --help: %s default %s, the table's is text (\"\")" % (name, hd))
        elif hd != str(d) or not doc.endswith("(0..%d)" % mx):
            fail("uslub --help: %s default %s, range %s; the table's: %d, 0..%d" % (
                name, hd, doc[doc.rfind("("):], d, mx))
    extra = sorted(set(help_opts) - set(names))
    if extra:
        fail("uslub --help lists options the table lacks: %s" % ", ".join(extra))
    if not failures:
        ok("uslub --help lists every option with its default and range")

    # ---- README ------------------------------------------------------------
    readme = open(src + "/README.md").read()
    rows = {}
    for line in readme.splitlines():
        m = re.match(r"\|\s*`(USLUB_[A-Z0-9_]+)`\s*\|([^|]*)\|([^|]*)\|(.*)\|\s*$", line)
        if m:
            if m.group(1) in rows:
                fail("README: two rows for %s" % m.group(1))
            rows[m.group(1)] = (m.group(2).strip(), m.group(3).strip(), m.group(4))
    nfail = len(failures)
    for name, d, mx in opts:
        if name not in rows:
            fail("README: no row for %s in the environment variables table" % name)
            continue
        rd, rv, _ = rows[name]
        if d is not None and (rd != str(d) or rv != "0..%d" % mx):
            fail("README: %s default %s, values %s; the table's: %d, 0..%d" % (
                name, rd, rv, d, mx))
        if d is None and rv not in ("text", "path"):
            fail("README: %s is a text option; its values column says %s" % (name, rv))
    for name in sorted(set(rows) - set(names)):
        fail("README documents %s, which is not in the options table" % name)
    if len(failures) == nfail:
        ok("README: one row per option, numeric defaults and ranges as in the table")

    # ---- USLUB_DEBUG letters -------------------------------------------------
    help_debug = help_opts.get("USLUB_DEBUG", ("", ""))[1]
    readme_debug = rows.get("USLUB_DEBUG", ("", "", ""))[2]
    stats = open(src + "/src/observe/stats.c").read()
    m = re.search(r'letters\[\]\s*=\s*"([A-Z]+)"', stats)
    shown = m.group(1) if m else ""
    nfail = len(failures)
    for c in letters:
        if not letter_documented(help_debug, c):
            fail("uslub --help: USLUB_DEBUG letter %s is not explained" % c)
        if not letter_documented(readme_debug, c):
            fail("README: USLUB_DEBUG letter %s is not explained in its row" % c)
        if msg_letters is not None and c not in msg_letters:
            fail("debug_opts.c: the unknown-flag message's list lacks %s" % c)
        if c != "-" and c not in shown:
            fail("src/observe/stats.c: slabinfo's debug letters lack %s" % c)
    if msg_letters is None:
        fail("debug_opts.c: no \"(flags: ...)\" message found")
    else:
        for c in sorted(set(msg_letters) - set(letters)):
            fail("debug_opts.c: the message lists %s, which parse_flags() does not take" % c)
    if len(failures) == nfail:
        ok("every USLUB_DEBUG letter explained in --help and the README, listed by the "
           "parser's message and slabinfo")

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("options table, --help and README agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
