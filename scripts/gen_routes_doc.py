#!/usr/bin/env python3
"""gen_routes_doc.py [--check] [SOURCE_DIR] - the table of HTTP routes of
docs/internals/architecture.md ("Routes"), generated from the router's route
table (daemon/http/http_routes.c): for each route and method, the handler,
the http/ file that defines it, the model/ functions it calls (directly or
through helpers of http/), the services it calls (functions declared in a
*_service.h header of a stage: the narrow interfaces a handler gets instead
of the daemon's state), the export/ functions that write its answer, and
what it calls of collect/, symbolize/ and targets/ without the model or a
service. Only the project's functions (qp_*) are listed.
Without --check it rewrites the table between the page's markers; with
--check it exits 1 if the page's table is not what the code says (ctest
docs_routes_table).
"""
import glob
import os
import re
import sys

DOC = "docs/internals/architecture.md"
BEGIN = "<!-- routes: begin (scripts/gen_routes_doc.py writes this table) -->"
END = "<!-- routes: end -->"
ROUTE = re.compile(r'\{\s*"([^"]+)",\s*(\w+),\s*(\w+),\s*(\w+),\s*"[^"]*"\s*\}')
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
SKIP = {"if", "for", "while", "switch", "return", "sizeof", "NULL"}


def strip_comments(s):
    s = re.sub(r'/\*.*?\*/', ' ', s, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', s)


def functions(path):
    """name -> body of each function defined in a C file"""
    src = strip_comments(open(path, encoding="utf-8", errors="replace").read())
    out = {}
    for m in re.finditer(r'^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(([^;{}]*)\)\s*\{',
                         src, flags=re.M):
        depth, i = 1, m.end()
        while depth and i < len(src):
            if src[i] == "{":
                depth += 1
            elif src[i] == "}":
                depth -= 1
            i += 1
        out[m.group(1)] = src[m.end():i]
    return out


OURS = re.compile(r"^qp_[a-z]")


def declared(folder, pattern="*.h"):
    names = set()
    for h in glob.glob(os.path.join(folder, pattern)):
        src = strip_comments(open(h, encoding="utf-8", errors="replace").read())
        for line in src.split(";"):
            if "#define" in line:
                continue
            for m in CALL.finditer(line):
                if OURS.match(m.group(1)):
                    names.add(m.group(1))
    return names


def table(root):
    http = os.path.join(root, "daemon", "http")
    defs = {}
    for c in sorted(glob.glob(os.path.join(http, "*.c"))):
        for name, body in functions(c).items():
            defs.setdefault(name, (os.path.basename(c), body))
    model = declared(os.path.join(root, "daemon", "model"))
    export = declared(os.path.join(root, "daemon", "export"))
    below, service = set(), set()
    for f in ("collect", "symbolize", "targets", "model", "export"):
        service |= declared(os.path.join(root, "daemon", f), "*_service.h")
    for f in ("collect", "symbolize", "targets"):
        below |= declared(os.path.join(root, "daemon", f))
    below -= model | export | service
    model -= service
    export -= service
    rt = open(os.path.join(http, "http_routes.c"), encoding="utf-8").read()
    start = rt.index("routes[] = {")
    rows = []
    for m in ROUTE.finditer(rt, start):
        path = m.group(1)
        for method, fn in zip(("GET", "POST", "DELETE"), m.groups()[1:]):
            if fn == "NULL":
                continue
            seen = set()
            found = {"model": [], "service": [], "export": [], "below": []}

            def walk(name, depth):
                if name in seen or name not in defs or depth > 4:
                    return
                seen.add(name)
                for c in CALL.finditer(defs[name][1]):
                    callee = c.group(1)
                    if callee in SKIP:
                        continue
                    if callee in model and not callee.endswith("_free"):
                        if callee not in found["model"]:
                            found["model"].append(callee)
                    elif callee in service:
                        if callee not in found["service"]:
                            found["service"].append(callee)
                    elif callee in export:
                        if callee not in found["export"]:
                            found["export"].append(callee)
                    elif callee in defs:
                        walk(callee, depth + 1)
                    elif callee in below:
                        if callee not in found["below"]:
                            found["below"].append(callee)

            walk(fn, 0)
            where = defs.get(fn, ("?", ""))[0]
            rows.append((path, method, fn, where, found["model"],
                         found["service"], found["export"], found["below"]))
    lines = ["| route | method | handler | file (`daemon/http/`) | model |"
             " service | export | below the model |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for path, method, fn, where, mod, svc, exp, low in rows:
        def cell(xs):
            return ", ".join(f"`{x}`" for x in xs) if xs else "—"
        lines.append(f"| `{path.replace('*', '{pid}')}` | {method} | `{fn}` |"
                     f" `{where}` | {cell(mod)} | {cell(svc)} | {cell(exp)} |"
                     f" {cell(low)} |")
    return "\n".join(lines) + "\n"


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    root = os.path.abspath(args[0] if args else
                           os.path.join(os.path.dirname(__file__), ".."))
    doc = os.path.join(root, DOC)
    text = open(doc, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        print(f"{DOC}: no markers {BEGIN} ... {END}", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    old, tail = rest.split(END, 1)
    new = "\n" + table(root)
    if old == new:
        print(f"{DOC}: the routes table is current")
        return 0
    if check:
        print(f"{DOC}: the routes table is not what daemon/http/ says; run "
              "scripts/gen_routes_doc.py", file=sys.stderr)
        for line in sorted(set(new.splitlines()) ^ set(old.splitlines())):
            print(("+ " if line in new.splitlines() else "- ") + line)
        return 1
    with open(doc, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + new + END + tail)
    print(f"{DOC}: routes table written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
