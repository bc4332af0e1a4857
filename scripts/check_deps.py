#!/usr/bin/env python3
"""check_deps.py [SOURCE_DIR] [--build BUILD_DIR] [--tests-mirror] - the rule of dependencies of
docs/internals/architecture.md ("The tree"). Prints each violation as
FILE:LINE: (or the CMake target's name) and exits 1 if there is any, 0
otherwise (ctest runs it as check_deps, with the build).

Read from the sources:
  - an #include "..." in common/, daemon/ or cli/ may point only into its own
    folder or into a folder of a lower layer, and the include graph between
    files has no cycle;
  - a header of another folder is included by its stage's name
    ("collect/cpu_table.h", "bpf/scopes.h", "qprof/ring.h"), and no include
    names "../" (scripts/stage_includes.py writes them so), in tests/ and
    bench/ too;
  - no source file of those folders is longer than MAX_LINES (the tree keeps
    files to one job, about 600 lines at most);
  - below http/, no code names the server's request or reply, the daemon's
    struct or the router (qp_request, qp_response, struct qprofd, qp_http_*,
    qp_route_*, qp_reply_*): the model and what it reads never know HTTP
    exists (a window's wait is passed to them explicitly); and no stage
    keeps per-thread state (__thread, _Thread_local) but the files of
    THREAD_LOCAL_ALLOWED: state a caller cannot see passed in is how a
    lower stage comes to depend on who calls it;
  - a handler file of http/ that takes its services (includes "services.h")
    does not include "qprofd.h": it sees the narrow interfaces it uses, not
    the daemon's state.
Read from the build (--build: BUILD/qprof_targets.txt, every target's
sources, links and include path as cmake configured them, and the stage
archives):
  - each stage's library (qprof_<stage>) holds the files of its folder, links
    only stage libraries of lower layers and has on its include path only the
    include folders of those stages (build/stage_inc/<stage>) and its own;
    qprof-cli links only qprof_common;
  - every test and bench program links at most one stage library (the stage
    it tests), and its own sources include headers of that stage and the
    stages below it only;
  - with TESTS_MIRROR (or --tests-mirror), a test program's own sources
    lie in tests/<the stage it links>/ (tests/collect/, ...; tests/cli/,
    tests/qprof/), or in integration/, fixtures/, symfix/, fuzz/;
  - inside a stage, no circle of files calling each other (file A defines a
    function file B calls, and B, or a file B calls, one that A calls), read
    with nm from the archive's objects.

Layers, lowest first (a folder may include its own folder and lower ones):
  0  common/            shared by qprofd and qprof-cli
  1  daemon/collect/    BPF objects -> snapshots
  1  daemon/symbolize/  addresses -> names
  2  daemon/targets/    who is watched (drives collect/, asks symbolize/)
  3  daemon/model/      plain structs and windowing
  4  daemon/export/     model -> bytes
  5  daemon/http/       server, router, handlers
  6  daemon/            main.c: wires the stages
  1  cli/               qprof-cli (common/ only)
bpf/*.h and include/qprof/ (the BPF ABI and the marker header) are below
everything. BPF skeletons (*.skel.h, generated) may be included only by
collect/ and targets/.
"""
import os
import re
import subprocess
import sys

LAYERS = {
    "common": 0,
    "daemon/collect": 1,
    "daemon/symbolize": 1,
    "daemon/targets": 2,
    "daemon/model": 3,
    "daemon/export": 4,
    "daemon/http": 5,
    "daemon": 6,
    "cli": 1,
}
BASE = {"bpf": -1, "include/qprof": -1}
SKEL_OK = {"daemon/collect", "daemon/targets"}
# the prefix a header of each folder is included with from another folder
PREFIX = {"common": "common", "daemon/collect": "collect",
          "daemon/symbolize": "symbolize", "daemon/targets": "targets",
          "daemon/model": "model", "daemon/export": "export",
          "daemon/http": "http", "bpf": "bpf", "cli": "cli"}
BY_PREFIX = {v: k for k, v in PREFIX.items()}
STAGE_LIBS = {"qprof_" + PREFIX[f]: f for f in LAYERS
              if f in PREFIX and f != "cli"}
# folders of programs that test or measure the stages
TEST_DIRS = ["tests", "bench"]
# The layout of tests/ mirrors daemon/ (--build): a test program's own
# sources lie in tests/<its stage>/ (tests/collect/ for a test linking
# qprof_collect, ...; tests/cli/ for qprof-cli's, tests/qprof/ for the marker
# header's, which link at most qprof_common), or in one of TESTS_AROUND, and
# there is no tests/unit/. Off (False) until the tree is moved: the lead's
# move_tests.sh sets it to True; --tests-mirror switches it on for one run.
TESTS_MIRROR = True
TESTS_AROUND = {"integration", "fixtures", "symfix", "fuzz", "scripts", "otlp"}
SKIP_DIRS = {"corpus_cfi", "corpus_dwarf", "corpus_http", "corpus_parsers",
             "corpus_symbolize"}
EXTS = (".c", ".h", ".cpp", ".cc", ".hpp")
MAX_LINES = 650
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Circles of calls allowed: (folder, frozenset of files) -> why. A circle
# inside one of these sets passes; a new one, or one that grows past its
# set, fails. None is left: a new entry needs a reason a maintainer would
# accept (two files that call each other are one job in two files, or two
# jobs that need a helper below both).
CALL_CIRCLES_ALLOWED = {
}


# Per-thread variables a stage may keep, each with its reason.
THREAD_LOCAL_ALLOWED = {
    "common/util.c": "qp_lock() adds the time the calling thread waited for"
                     " locks; the router reads the sum around each request",
}
# What only http/ and main.c may name (comments and strings aside).
HTTP_NAMES = re.compile(r"\b(qp_request|qp_response|qprofd|qprofd_\w+|"
                        r"qp_http_\w+|qp_route_\w+|qp_reply_\w+)\b")
THREAD_LOCAL = re.compile(r"\b(__thread|_Thread_local|thread_local)\b")
CODE_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                        r"'(?:\\.|[^'\\\n])*'", re.S)


def code_only(text):
    """TEXT with comments and string and character literals blanked (newlines
    kept, so that line numbers stay)"""
    return CODE_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def check_services(rel, folder, incs, errors):
    """a handler file on services sees no struct qprofd"""
    if folder != "daemon/http":
        return
    names = [inc for _, inc in incs]
    if "services.h" in names and "qprofd.h" in names:
        no = [n for n, inc in incs if inc == "qprofd.h"][0]
        errors.append(f"{rel}:{no}: includes qprofd.h and services.h: a"
                      " handler on services sees only them (services.c"
                      " takes them out of the daemon's state)")


def check_names(root, rel, folder, errors):
    """the HTTP names and per-thread state rules of one file"""
    if folder in BASE or folder == "cli":
        return
    try:
        with open(os.path.join(root, rel), errors="replace") as f:
            code = code_only(f.read())
    except OSError:
        return
    below_http = LAYERS[folder] < LAYERS["daemon/http"]
    for no, line in enumerate(code.split("\n"), 1):
        m = HTTP_NAMES.search(line) if below_http else None
        if m:
            errors.append(f"{rel}:{no}: {folder}/ names {m.group(1)}: only"
                          " http/ knows the server (pass what is needed, a"
                          " wait or a deadline, explicitly)")
        m = THREAD_LOCAL.search(line)
        if m and rel not in THREAD_LOCAL_ALLOWED:
            errors.append(f"{rel}:{no}: per-thread state ({m.group(1)}):"
                          " pass it to the callee instead (or add the file"
                          " to THREAD_LOCAL_ALLOWED, with its reason)")


def allowed(folder):
    """the folders a file of FOLDER may include (its own too)"""
    if folder == "cli":
        return {"cli", "common"}
    rank = LAYERS[folder]
    return {f for f, r in LAYERS.items() if r < rank and f != "cli"} | {folder}


def tree_files(root):
    files = {}      # relative path -> folder
    for folder in list(LAYERS) + list(BASE):
        d = os.path.join(root, folder)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                files[folder + "/" + name] = folder
    return files


def test_files(root):
    out = []
    for top in TEST_DIRS:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
            for n in sorted(names):
                if n.endswith(EXTS):
                    out.append(os.path.relpath(os.path.join(d, n), root))
    return out


def resolve(root, files, folder, inc):
    """(target file or None, complaint or None) for an include in FOLDER"""
    if inc.startswith("../") or "/../" in inc:
        return None, f"{inc}: no \"../\" in an include (name the stage:" \
            " scripts/stage_includes.py)"
    own = os.path.normpath(os.path.join(folder, inc))
    if os.path.isfile(os.path.join(root, own)):
        return own, None
    head, _, rest = inc.partition("/")
    if head in BY_PREFIX and rest:
        cand = BY_PREFIX[head] + "/" + rest
        if cand in files or os.path.isfile(os.path.join(root, cand)):
            return cand, None
        return None, f"{inc} not found in the tree"
    if inc.startswith("qprof/") and os.path.isfile(
            os.path.join(root, "include", inc)):
        return "include/" + inc, None
    if folder.split("/")[0] == "tests" and os.path.isfile(
            os.path.join(root, "tests", inc)):
        return "tests/" + inc, None
    for f in list(LAYERS) + list(BASE) + ["include"]:
        if os.path.isfile(os.path.join(root, f, inc)):
            return None, (f"{inc} is in {f}/: include it as "
                          f"\"{PREFIX.get(f, f)}/{inc}\" "
                          "(scripts/stage_includes.py)")
    return None, f"{inc} not found in the tree"


def includes(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8",
              errors="replace") as f:
        lines = f.readlines()
    found = []
    for no, line in enumerate(lines, 1):
        m = INC.match(line)
        if m:
            found.append((no, m.group(1)))
    return lines, found


def check_sources(root, errors):
    files = tree_files(root)
    edges = {}
    for rel, folder in sorted(files.items()):
        if folder in BASE:
            continue
        rank = LAYERS[folder]
        lines, incs = includes(root, rel)
        check_names(root, rel, folder, errors)
        if not rel.endswith("/services.c"):
            check_services(rel, folder, incs, errors)
        if len(lines) > MAX_LINES:
            errors.append(f"{rel}: {len(lines)} lines (more than {MAX_LINES}:"
                          " split it by job)")
        for no, inc in incs:
            if inc.endswith(".skel.h"):
                if folder not in SKEL_OK:
                    errors.append(f"{rel}:{no}: includes BPF skeleton {inc}"
                                  f" (only collect/ and targets/ may)")
                continue
            cand, why = resolve(root, files, folder, inc)
            if cand is None:
                errors.append(f"{rel}:{no}: {why}")
                continue
            edges.setdefault(rel, set()).add(cand)
            tf = files.get(cand, os.path.dirname(cand))
            if tf == folder or tf in BASE or tf == "include/qprof":
                continue
            if tf not in LAYERS or tf not in allowed(folder):
                errors.append(f"{rel}:{no}: {folder}/ (layer {rank}) may not"
                              f" include {cand} ({tf}/, layer "
                              f"{LAYERS.get(tf, '?')})")
    # the tests' and benches' own files: stage names, no ../
    for rel in test_files(root):
        folder = os.path.dirname(rel)
        for no, inc in includes(root, rel)[1]:
            if inc.endswith(".skel.h") or inc == "vmlinux.h":
                continue
            cand, why = resolve(root, files, folder, inc)
            if cand is None and ("../" in inc or "include it as" in why):
                errors.append(f"{rel}:{no}: {why}")
    # cycles between files
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                cyc = stack[stack.index(m):] + [m]
                errors.append("include cycle: " + " -> ".join(cyc))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    return files, sum(len(v) for v in edges.values())


# ---- the build: BUILD/qprof_targets.txt (cmake/QprofTargetsDump.cmake) ----

DUMP = "qprof_targets.txt"


def load_targets(build):
    """({"source": ..., "build": ...}, {name: target}) or (None, why)"""
    path = os.path.join(build, DUMP)
    if not os.path.isfile(path):
        return None, (f"{path}: missing (configure the tree with cmake first:"
                      " the top CMakeLists.txt writes it)")
    paths = {}
    targets = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, rest = line.rstrip("\n").partition(" ")
            key, _, value = rest.partition(" ")
            if name == "@":
                paths[{"SOURCE_DIR": "source",
                       "BINARY_DIR": "build"}.get(key, key)] = value
                continue
            t = targets.setdefault(name, {"name": name})
            if key in ("SOURCES", "LINKS", "INCLUDES"):
                t[key.lower()] = [v for v in value.split(";") if v]
            else:
                t[key.lower()] = value
    if "source" not in paths or "build" not in paths:
        return None, f"{path}: no SOURCE_DIR/BINARY_DIR lines"
    for t in targets.values():
        srcs = []
        for s in t.get("sources", []):
            if "$<" in s:
                continue
            a = s if os.path.isabs(s) else os.path.join(t.get("dir", ""), s)
            r = rel_to(a, paths["source"])
            srcs.append(r if r is not None else os.path.normpath(a))
        t["sources"] = srcs
    return (paths, targets), None


def target_includes(t):
    return t.get("includes", [])


def rel_to(path, base):
    path = os.path.normpath(path)
    base = os.path.normpath(base)
    if path == base or path.startswith(base + "/"):
        return os.path.relpath(path, base)
    return None


def check_include_dirs(name, t, ok_stages, srcdir, stage_inc, errors):
    """only stage_inc/<s> of OK_STAGES, never a source folder of the tree"""
    for p in sorted(set(target_includes(t))):
        s = rel_to(p, stage_inc)
        if s is not None:
            s = s.split("/")[0]
            if s != "bpf" and s not in ok_stages:
                errors.append(f"{name}: has stage_inc/{s} on its include "
                              f"path (may use: {', '.join(sorted(ok_stages))})")
            continue
        r = rel_to(p, srcdir)
        if r is None or r.startswith("tests") or r == "include" \
                or r.startswith("include/") or r.startswith("bench") \
                or r.startswith("examples"):
            continue
        if r == "." or r.split("/")[0] in ("common", "daemon", "cli", "bpf"):
            errors.append(f"{name}: has the source folder {r}/ on its include"
                          " path (a stage's headers come through "
                          "build/stage_inc/<stage>)")


def check_tests_layout(root, name, stage, srcs, own, errors):
    """TESTS_MIRROR: the program NAME testing STAGE keeps its sources in
    tests/<stage>/ (or cli/, qprof/ for what links qprof_common at most)"""
    if stage is None or stage == "common":
        ok = {"common", "cli", "qprof"} if stage else {"cli", "qprof"}
    else:
        ok = {PREFIX[stage]}
    if any(s.split("/")[0] == "cli" for s in srcs):
        ok = {"cli"}
    for s in own:
        parts = s.split("/")
        if parts[0] != "tests" or len(parts) < 3 or parts[1] in TESTS_AROUND:
            continue
        if parts[1] not in ok:
            errors.append(f"{name}: {s} is not in tests/{'/, tests/'.join(sorted(ok))}/"
                          f" (tests/ mirrors daemon/: a test of "
                          f"{stage + '/' if stage else 'no stage'} lives there)")


def check_build(root, build, files, errors):
    got, why = load_targets(build)
    if got is None:
        errors.append(why)
        return 0
    paths, targets = got
    srcdir = paths["source"]
    stage_inc = os.path.join(paths["build"], "stage_inc")
    by_name = targets
    prefix_of = {f: PREFIX[f] for f in STAGE_LIBS.values()}

    def stage_deps(t):
        return sorted(set(d for d in t.get("links", []) if d in STAGE_LIBS))

    def sources(t):
        return t.get("sources", [])

    # (a) one library per stage, linking down only
    for lib, folder in sorted(STAGE_LIBS.items()):
        t = by_name.get(lib)
        if t is None:
            errors.append(f"{lib}: no such library in the build ({folder}/'s"
                          " stage)")
            continue
        ok = allowed(folder)
        for d in stage_deps(t):
            if STAGE_LIBS[d] not in ok - {folder}:
                errors.append(f"{lib}: links {d} ({STAGE_LIBS[d]}/, layer "
                              f"{LAYERS[STAGE_LIBS[d]]}); {folder}/ is layer "
                              f"{LAYERS[folder]}")
        srcs = sources(t)
        for s in srcs:
            if os.path.dirname(s) != folder:
                errors.append(f"{lib}: holds {s}, not a file of {folder}/")
        for rel, f in files.items():
            if f == folder and rel.endswith(".c") and rel not in srcs:
                errors.append(f"{lib}: {rel} is not in its stage's library")
        check_include_dirs(lib, t, {prefix_of[f] for f in ok}, srcdir,
                           stage_inc, errors)
    for prog, ok in (("qprof-cli", {"qprof_common"}),):
        t = by_name.get(prog)
        if t is None:
            continue
        for d in stage_deps(t):
            if d not in ok:
                errors.append(f"{prog}: links {d} (it may link only "
                              f"{', '.join(sorted(ok))})")
        check_include_dirs(prog, t, {"common", "cli"}, srcdir, stage_inc,
                           errors)
    # (b) test and bench programs: one stage, its headers and those below
    ntests = 0
    for t in sorted(targets.values(), key=lambda x: x["name"]):
        if t.get("type") != "EXECUTABLE":
            continue
        srcs = sources(t)
        own = [s for s in srcs if s.split("/")[0] in TEST_DIRS]
        if not own:
            continue
        ntests += 1
        libs = stage_deps(t)
        if len(libs) > 1:
            errors.append(f"{t['name']}: links {len(libs)} stage libraries "
                          f"({', '.join(libs)}): a test links the one stage "
                          "it tests")
        stage = STAGE_LIBS[libs[-1]] if libs else None
        ok = allowed(stage) if stage else set()
        if stage == "common":
            ok = ok | {"cli"}
        for s in srcs:
            folder = os.path.dirname(s)
            if s in own:
                for no, inc in includes(root, s)[1]:
                    cand, _ = resolve(root, files, folder, inc)
                    if cand is None:
                        continue
                    tf = files.get(cand, os.path.dirname(cand))
                    if tf in LAYERS and tf not in ok:
                        errors.append(
                            f"{s}:{no}: {t['name']} tests "
                            f"{stage + '/' if stage else 'no stage'}: may "
                            f"not include {cand} ({tf}/)")
            elif folder in LAYERS and folder not in ok:
                errors.append(f"{t['name']}: compiles {s} ({folder}/) but "
                              f"tests {stage + '/' if stage else 'no stage'}")
        check_include_dirs(t["name"], t, {PREFIX[f] for f in ok if f in
                                          PREFIX}, srcdir, stage_inc, errors)
        if TESTS_MIRROR:
            check_tests_layout(root, t["name"], stage, srcs, own, errors)
    if TESTS_MIRROR and os.path.isdir(os.path.join(root, "tests", "unit")):
        errors.append("tests/unit/: still there (tests/ mirrors daemon/: each"
                      " test in the folder of the stage it tests)")
    # (c) no circle of calls between the files of a stage
    for lib, folder in sorted(STAGE_LIBS.items()):
        t = by_name.get(lib)
        if t is None:
            continue
        ar = t.get("file")
        if not ar:
            errors.append(f"{lib}: no archive in the build")
            continue
        if not os.path.isfile(ar):
            errors.append(f"{ar}: not built (build the tree before "
                          "check_deps)")
            continue
        check_calls(lib, folder, ar, errors)
    return ntests


def member_name(m):
    return m[:-2] if m.endswith(".o") else m


def check_calls(lib, folder, ar, errors):
    try:
        out = subprocess.run(["nm", "-A", ar], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        errors.append(f"{ar}: nm failed: {e}")
        return
    defs = {}       # function -> file
    uses = {}       # file -> functions it calls from elsewhere
    for line in out.splitlines():
        head, _, sym = line.rpartition(" ")
        parts = line.split(":")
        if len(parts) < 3:
            continue
        member = member_name(parts[-2] if len(parts) > 3 else parts[1])
        fields = head.split(":")[-1].split()
        kind = fields[-1] if fields else ""
        if kind in ("T", "W"):
            defs[sym] = member
        elif kind == "U":
            uses.setdefault(member, set()).add(sym)
    edges = {}
    why = {}
    for a, syms in uses.items():
        for s in sorted(syms):
            b = defs.get(s)
            if b and b != a:
                edges.setdefault(a, set()).add(b)
                why.setdefault((a, b), s)
    # strongly connected components (Tarjan)
    index = {}
    low = {}
    on = set()
    stack = []
    sccs = []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    for comp in sccs:
        key = (folder, frozenset(comp))
        if any(k[0] == folder and key[1] <= k[1]
               for k in CALL_CIRCLES_ALLOWED):
            continue
        calls = "; ".join(f"{a} calls {why[(a, b)]}() of {b}"
                          for a in comp for b in sorted(edges.get(a, ()))
                          if b in comp)
        errors.append(f"{folder}/: call circle between {', '.join(comp)}"
                      f" ({calls})")


def main():
    global TESTS_MIRROR
    args = sys.argv[1:]
    build = None
    if "--tests-mirror" in args:
        args.remove("--tests-mirror")
        TESTS_MIRROR = True
    if "--build" in args:
        i = args.index("--build")
        if i + 1 >= len(args):
            print("usage: check_deps.py [SOURCE_DIR] [--build BUILD_DIR]"
                  " [--tests-mirror]",
                  file=sys.stderr)
            return 2
        build = args[i + 1]
        del args[i:i + 2]
    root = os.path.abspath(args[0] if args else
                           os.path.join(os.path.dirname(__file__), ".."))
    errors = []
    files, nincs = check_sources(root, errors)
    ntests = None
    if build is not None:
        ntests = check_build(root, os.path.abspath(build), files, errors)
    for e in errors:
        print(e)
    if errors:
        print(f"check_deps: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    msg = f"check_deps: {len(files)} files, {nincs} includes, every one points down"
    if ntests is not None:
        msg += (f"; {len(STAGE_LIBS)} stage libraries link down, "
                f"{ntests} test programs link one stage each, no call circle")
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
