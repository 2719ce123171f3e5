#!/usr/bin/env python3
"""The field table (observe/fields.def) against the code that spells keys:
fails (exit 1) when

  - the table itself is wrong: a row ID twice, a Prometheus family twice, a
    family without a type or a type without a family, a family name that
    Prometheus refuses, or
  - the dashboard (web/assets/app.js) reads a property that is neither a key
    of the table, nor a name the script sets itself, nor one of the browser
    and JavaScript names listed below (a misspelt or a removed key), or
  - autoccl-top (tui/*.c) or the renderers (observe/*.c) spell a JSON key or
    a family as a string literal instead of taking it from the table, or
  - docs/api.md does not name a key or a family of the table.

usage: check-fields.py [ROOT]        (ROOT: the source tree, default .)
       check-fields.py --self-test   (proves each check fails on a bad tree)
"""
import os
import re
import sys
import tempfile

ROW = re.compile(r'ACL_FIELD\(\s*(\w+)\s*,\s*(\w+)\s*,\s*"([^"]*)"\s*,\s*"([^"]*)"\s*,\s*(\w+)\s*,')
TYPES = ("NONE", "GAUGE", "COUNTER", "HISTOGRAM")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")

# Names app.js reads that are the browser's or JavaScript's, not the API's
# (a name that is also a key is not listed: the table answers for it).
JS_NAMES = set("""
    abort abs addEventListener all appendChild arc assign background beginPath body ceil
    className clearRect clientWidth CLOSED concat createElement createTextNode dataset
    devicePixelRatio error fill fillRect fillStyle fillText filter find floor font forEach get
    getContext getElementById has height hidden hostname includes isArray isInteger join json
    length lineTo lineWidth location log10 map max message min moveTo now ok onerror onopen PI
    pow push readyState reduce replaceChildren round search set setTransform signal size some
    status stroke strokeStyle style tBodies textContent title toFixed value width
""".split())

# JSON keys or family names spelled in C: "key": inside a literal, a family
# name, or a literal handed to a getter that reads a key.
C_KEY_LITERAL = re.compile(r'\\"[a-z_][a-z0-9_]*\\":')
C_FAMILY = re.compile(r'"autoccl_[a-z0-9_]+')
C_GETTER = re.compile(r'(?:get_(?:str|dbl|i64|int|bool|cand)\(\s*\w+\s*,\s*\w+\s*,|'
                      r'json_object_get\(\s*[^,()]+(?:\([^()]*\))?[^,()]*,)\s*"')


def table(root):
    path = os.path.join(root, "observe", "fields.def")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    rows = ROW.findall(text)
    errors = []
    ids, metrics = set(), set()
    for rid, obj, key, metric, typ in rows:
        if rid in ids:
            errors.append(f"fields.def: row {rid} twice")
        ids.add(rid)
        if typ not in TYPES:
            errors.append(f"fields.def: {rid}: type {typ}, not one of {', '.join(TYPES)}")
        if bool(metric) != (typ != "NONE"):
            errors.append(f"fields.def: {rid}: a family needs a type and a type a family")
        if metric:
            if metric in metrics:
                errors.append(f"fields.def: family {metric} twice")
            metrics.add(metric)
            if not METRIC_NAME.match(metric):
                errors.append(f"fields.def: {rid}: {metric!r} is not a Prometheus name")
        if not key and not metric:
            errors.append(f"fields.def: {rid}: neither a key nor a family")
    if not rows:
        errors.append("fields.def: no rows")
    return rows, errors


def js_strip(src):
    """The script without comments and string contents (quotes kept), so
    that words in them are not taken for property reads."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "'\"`":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def js_reads(src):
    """{name: first line} of the properties the script reads, and the names
    it defines itself (object literal keys, assigned properties)."""
    code = js_strip(src)
    lines = [0]
    for m in re.finditer("\n", code):
        lines.append(m.end())

    def line(pos):
        lo, hi = 0, len(lines)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if lines[mid] <= pos else (lo, mid)
        return lo + 1

    reads = {}
    for m in re.finditer(r"(?<!\.)\.\s*([A-Za-z_$][\w$]*)", code):  # not ...spread
        if m.start() > 0 and code[m.start() - 1].isdigit():
            continue  # 1.5
        reads.setdefault(m.group(1), line(m.start()))
    own = set(re.findall(r"[{,]\s*([A-Za-z_$][\w$]*)\s*(?=:(?!:)|[,}])", code))
    own |= set(re.findall(r"\.([A-Za-z_$][\w$]*)\s*=(?!=)", code))
    return reads, own


def check(root, out=sys.stdout):
    rows, errors = table(root)
    keys = {key for _, _, key, _, _ in rows if key}
    with open(os.path.join(root, "docs", "api.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for rid, _, key, metric, _ in rows:
        if key and f'"{key}"' not in doc and f"`{key}`" not in doc:
            errors.append(f"docs/api.md: key {key!r} (fields.def {rid}) is not documented")
        if metric and metric not in doc:
            errors.append(f"docs/api.md: family {metric} (fields.def {rid}) is not documented")
    app = os.path.join(root, "web", "assets", "app.js")
    with open(app, encoding="utf-8") as fh:
        reads, own = js_reads(fh.read())
    unknown = sorted((ln, k) for k, ln in reads.items()
                     if k not in keys and k not in own and k not in JS_NAMES)
    for ln, k in unknown:
        errors.append(f"web/assets/app.js:{ln}: reads .{k}: not a key of observe/fields.def "
                      "(nor a name app.js sets, nor a browser name listed in "
                      "scripts/check-fields.py)")
    nc = 0
    for top in ("tui", "observe"):
        d = os.path.join(root, top)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if not f.endswith(".c"):
                continue
            nc += 1
            rel = f"{top}/{f}"
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                for n, text in enumerate(fh, 1):
                    for pat, what in ((C_KEY_LITERAL, "a JSON key"), (C_FAMILY, "a family"),
                                      (C_GETTER, "a JSON key")):
                        m = pat.search(text)
                        if m:
                            errors.append(f"{rel}:{n}: {what} spelled as a literal "
                                          f"({m.group(0).strip()}...); take it from "
                                          "observe/fields.def (ACL_KEY, acl_fields)")
    for e in errors:
        print("check-fields: " + e, file=sys.stderr)
    used = sum(1 for k in reads if k in keys)
    print(f"check-fields: {len(keys)} keys; app.js reads {used} of them and {len(reads) - used} "
          f"other names; {nc} C files; {len(errors)} problem(s)", file=out)
    return 1 if errors else 0


def self_test():
    """A small clean tree passes; each break fails."""
    good_def = ('ACL_FIELD(SPEEDUP, WORKLOAD, "speedup", "autoccl_speedup", GAUGE, "h")\n'
                'ACL_FIELD(STATE, WORKLOAD, "state", "", NONE, "")\n')
    base = {
        "observe/fields.def": good_def,
        "observe/render.c": 'KEY(sb, ", ", SPEEDUP);\n',
        "tui/model.c": "get_dbl(c, o, ACL_KEY(SPEEDUP), &w->speedup);\n",
        "docs/api.md": '`speedup`, "state": autoccl_speedup\n',
        "web/assets/app.js": "// w.typo in a comment\nconst t = { saved: 1 };\n"
                             "cell(tr, w.speedup.toFixed(3), 'x.y');\nt.saved; w.state;\n",
    }
    cases = {
        "clean": ({}, 0),
        "js-typo": ({"web/assets/app.js": base["web/assets/app.js"] + "w.speedupp;\n"}, 1),
        "js-removed-key": ({"observe/fields.def": good_def.split("\n")[0] + "\n"}, 1),
        "c-getter-literal": ({"tui/model.c": 'get_dbl(c, o, "speedup", &w->speedup);\n'}, 1),
        "c-object-get-literal": ({"tui/host.c": 'json_object_get(doc, "processes");\n'}, 1),
        "c-key-literal": ({"observe/report.c": 'acl_sb_puts(sb, ", \\"speedup\\": ");\n'}, 1),
        "c-family-literal": ({"observe/render_metrics.c": 'head(m, "autoccl_x", "gauge");\n'}, 1),
        "dup-family": ({"observe/fields.def": good_def +
                        'ACL_FIELD(X, PROM, "", "autoccl_speedup", GAUGE, "h")\n'}, 1),
        "family-no-type": ({"observe/fields.def": good_def +
                            'ACL_FIELD(X, PROM, "", "autoccl_x", NONE, "")\n'}, 1),
        "doc-missing": ({"docs/api.md": "`speedup` autoccl_speedup\n"}, 1),
        "dup-row": ({"observe/fields.def": good_def +
                     'ACL_FIELD(STATE, WORKLOAD, "state", "", NONE, "")\n'}, 1),
    }
    bad = 0
    with open(os.devnull, "w") as null:
        for name, (extra, want) in cases.items():
            d = tempfile.mkdtemp(prefix="acl-fields-")
            files = dict(base)
            files.update(extra)
            for path, text in files.items():
                os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(d, path), "w") as fh:
                    fh.write(text)
            stderr, sys.stderr = sys.stderr, null
            try:
                got = check(d, out=null)
            finally:
                sys.stderr = stderr
            ok = got == want
            bad += not ok
            print(f"self-test {name}: exit {got}, want {want}: {'ok' if ok else 'WRONG'}")
    return 1 if bad else 0


def main(argv):
    args = argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return check(args[0] if args else ".")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
