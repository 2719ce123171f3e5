#!/usr/bin/env python3
"""README.md's table of AUTOCCL_* variables against the one settings table
(core/settings.def, as the program lists it), and the sources against both.
Fails (exit 1) when

  - the README has a row that the table lacks, lacks one that it has, or a
    row differs from the one generated from the table;
  - a source file or doc names an AUTOCCL_* variable that the table lacks.

usage: check-settings.py LIST_SETTINGS ROOT            check
       check-settings.py LIST_SETTINGS ROOT --write    rewrite README's table
       check-settings.py --self-test                   prove each check fails

LIST_SETTINGS is the build's tests/core/acl-list-settings (one row a line,
tab-separated: name, type, default, range, accepted, unit, reader, doc).
"""
import os
import re
import subprocess
import sys
import tempfile

BEGIN = "<!-- settings table: generated from core/settings.def by scripts/check-settings.py --write -->"
END = "<!-- end of settings table -->"
HEADER = ["| variable | default | accepted | unit | read by | meaning |",
          "|---|---|---|---|---|---|"]
NAME = re.compile(r"\bAUTOCCL_[A-Z0-9_]*[A-Z0-9]\b")
# Names of programs in usage lines (`replay_bench.py AUTOCCL_SIM`), not variables,
PLACEHOLDERS = {"AUTOCCL_SIM", "AUTOCCL_TOP", "AUTOCCL_BENCH",
                "AUTOCCL_NOT_A_SETTING"}  # the last: a test of the unknown-name path
SCANNED = (".c", ".h", ".py", ".sh", ".md", ".build", ".def", ".js")
SKIP_DIRS = {".git", "build", "subprojects", "node_modules"}


def load_rows(lister):
    out = subprocess.run([lister], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) != 8:
            raise SystemExit("check-settings: malformed row from %s: %r" % (lister, line))
        rows.append(dict(zip(("name", "type", "default", "range", "accepted", "unit", "reader",
                              "doc"), f)))
    return rows


def human_bytes(v):
    for sfx in ("", "K", "M", "G", "T"):
        if v < 1024 or v % 1024 or sfx == "T":
            return "%d%s" % (v, sfx)
        v //= 1024
    return str(v)


def esc(s):
    return s.replace("|", "\\|")


def md_row(r):
    if r["type"] in ("enum", "int", "bytes") and r["range"]:
        if r["type"] == "enum":
            accepted = " \\| ".join("`%s`" % c for c in r["range"].split("|"))
        else:
            lo, hi = r["range"].split("..")
            if r["type"] == "bytes":
                accepted = "%s–%s (suffix K, M, G, T)" % (human_bytes(int(lo)), human_bytes(int(hi)))
            else:
                accepted = "%s–%s" % (lo, hi)
    else:
        accepted = r["accepted"]
    dflt = r["default"]
    if r["type"] in ("enum", "int", "bytes") and re.fullmatch(r"-?[0-9]+[KMGT]?|[a-z]+", dflt):
        dflt = "`%s`" % dflt
    elif r["type"] == "string" and re.fullmatch(r"[0-9.]+", dflt):
        dflt = "`%s`" % dflt
    return "| `%s` | %s | %s | %s | %s | %s |" % (r["name"], esc(dflt), esc(accepted)
                                                 if r["type"] != "enum" else accepted,
                                                 r["unit"], r["reader"], esc(r["doc"]))


def generate(rows):
    return [BEGIN] + HEADER + [md_row(r) for r in rows] + [END]


def readme_rows(text):
    """The README's table rows by variable name; None if the markers are missing."""
    if BEGIN not in text or END not in text:
        return None
    body = text[text.index(BEGIN):text.index(END)].splitlines()
    found = {}
    for line in body:
        m = re.match(r"\| `(AUTOCCL_[A-Z0-9_]+)` \|", line)
        if m:
            found[m.group(1)] = line
    return found


def check_readme(rows, text):
    problems = []
    have = readme_rows(text)
    if have is None:
        return ["README.md: no settings table (markers %r ... %r)" % (BEGIN, END)]
    want = {r["name"]: md_row(r) for r in rows}
    for name in want:
        if name not in have:
            problems.append("README.md: missing row for %s (in core/settings.def)" % name)
        elif have[name] != want[name]:
            problems.append("README.md: row for %s differs from core/settings.def:\n  has  %s\n"
                            "  want %s" % (name, have[name], want[name]))
    for name in have:
        if name not in want:
            problems.append("README.md: extra row for %s (not in core/settings.def)" % name)
    return problems


def check_sources(rows, root):
    known = {r["name"] for r in rows}
    problems = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for f in sorted(files):
            if not f.endswith(SCANNED) or f == os.path.basename(__file__):
                continue
            p = os.path.join(d, f)
            try:
                text = open(p, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            for m in NAME.finditer(text):
                name = m.group(0)
                if name in known or name in PLACEHOLDERS:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                problems.append("%s:%d: %s is not in core/settings.def" %
                                (os.path.relpath(p, root), line, name))
    return problems


def write_readme(rows, path):
    text = open(path, encoding="utf-8").read()
    new = "\n".join(generate(rows))
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + new + text[text.index(END) + len(END):]
    else:
        raise SystemExit("check-settings: %s has no markers; add %r and %r" % (path, BEGIN, END))
    open(path, "w", encoding="utf-8").write(text)


def self_test():
    rows = [dict(name="AUTOCCL_A", type="int", default="5", range="0..9", accepted="x",
                 unit="calls", reader="plugin", doc="a"),
            dict(name="AUTOCCL_B", type="enum", default="on", range="on|off", accepted="x",
                 unit="", reader="plugin", doc="b")]
    good = "intro\n" + "\n".join(generate(rows)) + "\nafter\n"
    assert check_readme(rows, good) == [], check_readme(rows, good)
    missing = good.replace(md_row(rows[1]) + "\n", "")
    assert any("missing row for AUTOCCL_B" in p for p in check_readme(rows, missing))
    extra = good.replace(END, "| `AUTOCCL_C` | x | x | x | x | x |\n" + END)
    assert any("extra row for AUTOCCL_C" in p for p in check_readme(rows, extra))
    changed = good.replace("| a |", "| A |")
    assert any("differs" in p for p in check_readme(rows, changed))
    assert check_readme(rows, "no table") != []
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "x.c"), "w").write('getenv("AUTOCCL_A"); getenv("AUTOCCL_Z");\n')
        probs = check_sources(rows, tmp)
        assert len(probs) == 1 and "AUTOCCL_Z" in probs[0], probs
    print("check-settings self-test: every check fails on a bad input")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--write"):
        sys.stderr.write(__doc__)
        return 2
    rows = load_rows(argv[1])
    root = argv[2]
    readme = os.path.join(root, "README.md")
    if len(argv) == 4:
        write_readme(rows, readme)
    problems = check_readme(rows, open(readme, encoding="utf-8").read())
    problems += check_sources(rows, root)
    for p in problems:
        print(p)
    if problems:
        print("check-settings: %d problem(s); `scripts/check-settings.py %s %s --write` "
              "regenerates README.md's table" % (len(problems), argv[1], root))
        return 1
    print("check-settings: %d settings; README.md and the sources agree" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
