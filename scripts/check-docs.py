#!/usr/bin/env python3
"""The numbers the docs quote, checked against the constants in the code, and
references that must not appear (files that are not in the tree, work
tracking). Fails (exit 1) naming each disagreement.

Each CHECKS row: a doc, a pattern whose groups capture numbers, and for each
group an expression over the constants (#define NAME VALUE anywhere under
the source folders, macros resolved). Every match in the doc must agree, and
the pattern must match at least once (a reworded doc updates its row here).

Links to a section (`[x](#anchor)`, `[x](docs/y.md#anchor)`) and "as in
<Section>" must name a heading that exists.

usage: check-docs.py [ROOT]        (ROOT: the source tree, default .)
       check-docs.py --self-test   (proves each check fails on a bad tree)
       check-docs.py --needed PLUGIN ROOT
                                   every library PLUGIN needs at run time
                                   (readelf -d) is named in README.md
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE_DIRS = ("core", "observe", "profiler", "tuner", "web", "tui", "sim", "bench")

CHECKS = [
    # Block lengths and sample counts of the search (tuner/search).
    ("docs/tuner.md", r"\| the decision, blocks of (\d+) \|", ["ACL_SEARCH_CONVERGED_BLOCK"]),
    ("docs/tuner.md", r"Block length once settled: (\d+) calls", ["ACL_SEARCH_CONVERGED_BLOCK"]),
    ("docs/tuner.md", r"is at most (\d+) calls away", ["ACL_SEARCH_CONVERGED_BLOCK"]),
    ("docs/consensus.md", r"Converged blocks cover (\d+)\s+calls", ["ACL_SEARCH_CONVERGED_BLOCK"]),
    ("docs/consensus.md", r"asks once per (\d+) calls", ["ACL_SEARCH_CONVERGED_BLOCK"]),
    ("docs/tuner.md", r"a block of (\d+) calls, then up to (\d+) \(early verdicts\)",
     ["ACL_SEARCH_EARLY2_N", "ACL_SEARCH_EARLY_N"]),
    ("docs/tuner.md", r"first run for (\d+) calls", ["ACL_SEARCH_EARLY2_N"]),
    ("docs/tuner.md", r"more than (\d+\.\d+)x the best so far it is judged at once",
     ["ACL_SEARCH_EARLY2_REJECT"]),
    ("docs/tuner.md", r"After (\d+) samples, a median more than (\d+\.\d+)x",
     ["ACL_SEARCH_EARLY_N", "ACL_SEARCH_EARLY_REJECT"]),
    ("docs/tuner.md", r"Each candidate keeps up to (\d+) samples", ["ACL_SEARCH_MAX_SAMPLES"]),
    ("docs/tuner.md", r"At most (\d+) candidates judged and (\d+) x `samples_per_cand`",
     ["ACL_SEARCH_MAX_STEPS", "ACL_SEARCH_MAX_EXPLORE_MULT"]),
    # Validation (tuner/search/search_conv.c).
    ("docs/tuner.md", r"a new decision, blocks of (\d+) decision calls \+ (\d+) calls of NCCL's choice",
     ["ACL_VAL_RUN", "ACL_VAL_BLOCK"]),
    ("docs/tuner.md", r"runs in blocks of\s+(\d+)-(\d+) calls \((\d+) on average",
     ["ACL_VAL_RUN - ACL_VAL_RUN_JITTER", "ACL_VAL_RUN + ACL_VAL_RUN_JITTER", "ACL_VAL_RUN"]),
    ("docs/tuner.md", r"interleaved with blocks of (\d+) calls of cand 0", ["ACL_VAL_BLOCK"]),
    ("docs/tuner.md", r"the lag, up to (\d+) calls,", ["ACL_SEARCH_PLACE_MAX_PERIOD"]),
    ("docs/tuner.md", r"at the same place up to (\d+) periods back", ["ACL_SEARCH_PLACE_BACK"]),
    ("docs/tuner.md", r"standard error is below (\d\.\d+) of theirs", ["ACL_SEARCH_PLACE_SE_SHARE"]),
    ("docs/tuner.md", r"stragglers \(> (\d+\.\d+)x", ["ACL_VAL_STRAGGLER"]),
    ("docs/tuner.md", r"Looked at once per block from\s+(\d+) samples", ["ACL_VAL_MIN"]),
    ("docs/tuner.md", r"faster by (\d+(?:\.\d+)?) standard\s+errors", ["ACL_VAL_Z_KEEP"]),
    ("docs/tuner.md", r"by (\d+(?:\.\d+)?) SE at the last look \((\d+) samples",
     ["ACL_VAL_Z_LAST", "ACL_VAL_MAX"]),
    ("docs/tuner.md", r"after (\d+) challenger blocks", ["2 * ACL_VAL_MAX // ACL_VAL_BLOCK"]),
    ("docs/tuner.md", r"Then up to (\d+) challengers", ["ACL_REF_MAX_TRIES"]),
    # Settings quoted in prose (the README table is generated: check-settings.py).
    ("docs/consensus.md", r"`AUTOCCL_MAX_WORKLOADS` \(default (\d+)",
     ["ACL_CONFIG_MAX_WORKLOADS_DEFAULT"]),
    # Trace recorder (profiler/trace.h).
    ("docs/trace.md", r"lock-free bounded ring \((\d+)\s+records", ["ACL_TRACE_RING"]),
    ("docs/trace.md", r"A writer thread drains it every (\d+) ms", ["ACL_TRACE_FLUSH_MS"]),
    # Consensus (tuner/consensus).
    ("docs/consensus.md", r"ring of the last\s+(\d+) published blocks", ["ACL_CONS_RING"]),
    ("docs/consensus.md", r"older than the ring \(> (\d+) blocks", ["ACL_CONS_RING"]),
    ("docs/consensus.md", r"ring of (\d+) slots \(slot = call mod (\d+)\)",
     ["ACL_CONS_SLOTS", "ACL_CONS_SLOTS"]),
    ("docs/consensus.md", r"NCCL-default\s+blocks of (\d+) calls without stepping",
     ["ACL_CONS_WARM_SPAN"]),
    ("docs/consensus.md", r"NCCL's choice for (\d+) calls at a\s+time", ["ACL_CONS_DISABLED_SPAN"]),
    ("docs/consensus.md", r"thread, at most (\d+) connections", ["SRV_MAX_CONN"]),
    ("docs/consensus.md", r"took more than (\d+(?:\.\d+)?) times the fastest",
     ["ACL_CONS_SKEW_RATIO"]),
]

# Must not appear in docs or sources: files that are not in the tree, and
# work tracking (issue and session numbers mean nothing to a reader).
FORBIDDEN = [
    (r"DESIGN\.md", "DESIGN.md is not in the tree", ()),
    # The scripts that read the two-GPU matrix name its files as their input.
    (r"overhead\.jsonl", "overhead.jsonl is not in the tree (cite the doc with the figure)",
     ("sim/data/derive_traces.py", "sim/data/import_traces.sh")),
    (r"\b[Ii]ssues? #?\d+", "issue numbers are work tracking, not documentation", ()),
    (r"\b[Ss]ession \d+", "session numbers are work tracking, not documentation", ()),
]
FORBIDDEN_EXT = (".c", ".h", ".md", ".py", ".sh", ".build", ".js", ".def")
SKIP_DIRS = {".git", "subprojects", "node_modules", "corpus"}

DEFINE = re.compile(r"^\s*#\s*define\s+([A-Z_][A-Z0-9_]*)[ \t]+([^\n]*?)\s*(?:/\*.*)?$", re.M)


def constants(root):
    raw = {}
    for top in SOURCE_DIRS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
            for f in sorted(files):
                if f.endswith((".h", ".c")):
                    text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
                    # A #define continued with a backslash (clang-format breaks
                    # a long one after its name) is read as one line.
                    text = re.sub(r"[ \t]*\\\n[ \t]*", " ", text)
                    for m in DEFINE.finditer(text):
                        raw.setdefault(m.group(1), m.group(2))
    return raw


def value(expr, raw, depth=0):
    """A constant expression over the #defines, evaluated as Python."""
    if depth > 20:
        raise ValueError("macro loop in " + expr)
    def sub(m):
        name = m.group(0)
        if name in raw:
            return "(%r)" % value(raw[name], raw, depth + 1)
        raise KeyError(name)
    e = re.sub(r"(?<=[0-9.])(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?|[fF])\b", "", expr)
    e = re.sub(r"\((?:unsigned|int|double|float|uint\d+_t|size_t)\)", "", e)
    e = re.sub(r"\b[A-Z_][A-Z0-9_]*\b", sub, e)
    return eval(e, {"__builtins__": {}})


def check_numbers(root, checks=CHECKS):
    raw = constants(root)
    problems = []
    for doc, pattern, exprs in checks:
        path = os.path.join(root, doc)
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            problems.append("%s: %s" % (doc, e))
            continue
        matches = list(re.finditer(pattern, text))
        if not matches:
            problems.append("%s: no text matches %r (reworded? update scripts/check-docs.py)" %
                            (doc, pattern))
            continue
        try:
            want = [value(x, raw) for x in exprs]
        except (KeyError, ValueError, SyntaxError) as e:
            problems.append("%s: constant %s not found in the sources (renamed? update "
                            "scripts/check-docs.py)" % (doc, e))
            continue
        for m in matches:
            line = text.count("\n", 0, m.start()) + 1
            for got, w, x in zip(m.groups(), want, exprs):
                if abs(float(got) - float(w)) > 1e-9:
                    problems.append("%s:%d: says %s where %s = %s" % (doc, line, got, x, w))
    return problems


def check_forbidden(root):
    problems = []
    me = os.path.abspath(__file__)
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for f in sorted(files):
            p = os.path.join(d, f)
            if not f.endswith(FORBIDDEN_EXT) or os.path.abspath(p) == me:
                continue
            text = open(p, encoding="utf-8", errors="replace").read()
            rel = os.path.relpath(p, root)
            for pattern, why, allowed in FORBIDDEN:
                if rel in allowed:
                    continue
                for m in re.finditer(pattern, text):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append("%s:%d: %r: %s" % (rel, line, m.group(0), why))
    return problems


def slug(title):
    """GitHub's anchor for a heading."""
    t = re.sub(r"[`*_]", "", title.strip().lower())
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def headings(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)]


def check_sections(root):
    docs = [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs"))
        if f.endswith(".md"))
    problems = []
    for path in docs:
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        rel = os.path.relpath(path, root)
        own = headings(path)
        for m in re.finditer(r"\]\(([^)\s#]*\.md)?#([^)\s]+)\)", text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1))) \
                if m.group(1) else path
            if not os.path.exists(target):
                continue  # a missing file is another check's business
            if m.group(2) not in {slug(h) for h in headings(target)}:
                line = text.count("\n", 0, m.start()) + 1
                problems.append("%s:%d: link to #%s: no such section in %s" %
                                (rel, line, m.group(2), os.path.relpath(target, root)))
        for m in re.finditer(r"\bas in ([A-Z][A-Za-z]*(?: [a-z][A-Za-z]*)*)[).,;]", text):
            if m.group(1) not in own:
                line = text.count("\n", 0, m.start()) + 1
                problems.append("%s:%d: 'as in %s': no section of that name" %
                                (rel, line, m.group(1)))
    return problems


def check_ceiling(root):
    """The README's ceiling line and examples/fsdp_llama.py's ceiling mode set
    the same NCCL channel variables."""
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    m = re.search(r"^export (NCCL_M\w+NCHANNELS=\S+.*AUTOCCL_STOCK_CHANNELS=\S+)", readme, re.M)
    if not m:
        return ["README.md: no 'export NCCL_..NCHANNELS=.. AUTOCCL_STOCK_CHANNELS=..' line"]
    doc = set(re.findall(r"(NCCL_\w+NCHANNELS)=", m.group(1)))
    ex = open(os.path.join(root, "examples", "fsdp_llama.py"), encoding="utf-8").read()
    f = re.search(r"if mode == \"autoccl_ceiling\":\n(.*?)\n    return env", ex, re.S)
    if not f:
        return ["examples/fsdp_llama.py: no autoccl_ceiling branch in mode_env"]
    code = set(re.findall(r"\"(NCCL_\w+NCHANNELS)=", f.group(1)))
    if doc != code:
        return ["examples/fsdp_llama.py's ceiling mode sets %s, README.md's ceiling line %s" %
                (sorted(code), sorted(doc))]
    return []


# The C library's own parts need no package of their own.
LIBC = ("libc.so.", "libm.so.", "ld-linux", "libdl.so.", "libpthread.so.", "librt.so.")


def check_needed(plugin, root):
    if not shutil.which("readelf"):
        print("readelf not found (binutils): skipped")
        return 77
    out = subprocess.run(["readelf", "-d", plugin], capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    if not needed:
        print("%s: no NEEDED entries read" % plugin)
        return 1
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    missing = [n for n in needed if not n.startswith(LIBC) and "`%s`" % n not in readme]
    for n in missing:
        print("README.md does not name `%s`, which %s needs at run time" % (n, plugin))
    if missing:
        return 1
    print("README.md names every library the plugin needs: %s" % ", ".join(needed))
    return 0


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "core"))
        os.makedirs(os.path.join(tmp, "docs"))
        open(os.path.join(tmp, "core", "x.h"), "w").write(
            "#define ACL_A 1024u /* a */\n#define ACL_B (ACL_A * 2)\n#define ACL_C 1.5f\n")
        checks = [("docs/a.md", r"blocks of (\d+) calls", ["ACL_A"]),
                  ("docs/a.md", r"twice: (\d+), ratio (\d\.\d+)", ["ACL_B", "ACL_C"])]
        doc = os.path.join(tmp, "docs", "a.md")
        open(doc, "w").write("blocks of 1024 calls; twice: 2048, ratio 1.5\n")
        assert check_numbers(tmp, checks) == [], check_numbers(tmp, checks)
        open(doc, "w").write("blocks of 4096 calls; twice: 2048, ratio 1.5\n")
        assert any("says 4096" in p for p in check_numbers(tmp, checks))
        open(doc, "w").write("blocks of 1024 calls; twice: 2048, ratio 1.4\n")
        assert any("says 1.4" in p for p in check_numbers(tmp, checks))
        open(doc, "w").write("chunks of 1024 calls; twice: 2048, ratio 1.5\n")
        assert any("no text matches" in p for p in check_numbers(tmp, checks))
        assert any("not found" in p for p in
                   check_numbers(tmp, [("docs/a.md", r"chunks of (\d+)", ["ACL_GONE"])]))
        assert check_forbidden(tmp) == []
        open(os.path.join(tmp, "core", "y.c"), "w").write("/* see DESIGN.md (issue 7) */\n")
        probs = check_forbidden(tmp)
        assert len(probs) == 2, probs
        readme = os.path.join(tmp, "README.md")
        open(readme, "w").write("# T\n\n## Using it\n\nsee [u](#using-it), as in Using it.\n")
        assert check_sections(tmp) == [], check_sections(tmp)
        open(readme, "w").write("# T\n\nsee [u](#quick-start), as in Quick start.\n")
        assert len(check_sections(tmp)) == 2, check_sections(tmp)
        os.makedirs(os.path.join(tmp, "examples"))
        open(readme, "w").write("export NCCL_MIN_NCHANNELS=32 AUTOCCL_STOCK_CHANNELS=24\n")
        ex = os.path.join(tmp, "examples", "fsdp_llama.py")
        branch = '    if mode == "autoccl_ceiling":\n        env += [%s]\n    return env\n'
        open(ex, "w").write(branch % '"NCCL_MIN_NCHANNELS=%d" % c')
        assert check_ceiling(tmp) == [], check_ceiling(tmp)
        open(ex, "w").write(branch % '"NCCL_MIN_NCHANNELS=%d" % c, "NCCL_MAX_NCHANNELS=%d" % c')
        assert len(check_ceiling(tmp)) == 1, check_ceiling(tmp)
    print("check-docs self-test: every check fails on a bad input")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) == 4 and argv[1] == "--needed":
        return check_needed(argv[2], argv[3])
    root = argv[1] if len(argv) > 1 else "."
    problems = check_numbers(root) + check_forbidden(root) + check_sections(root) + \
        check_ceiling(root)
    for p in problems:
        print(p)
    if problems:
        print("check-docs: %d problem(s)" % len(problems))
        return 1
    print("check-docs: %d quoted numbers agree with the code; no stale references" % len(CHECKS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
