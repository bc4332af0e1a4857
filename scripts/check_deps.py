#!/usr/bin/env python3
"""check_deps.py [SOURCE_DIR] - the rule of dependencies of docs/internals/architecture.md ("The
tree"): an #include "..." in common/, daemon/ or cli/ may point only into its
own folder or into a folder of a lower layer, and the include graph between
files has no cycle. Prints each violation as FILE:LINE: and exits 1 if there
is any, 0 otherwise (ctest runs it as check_deps). It also fails on a source
file of those folders longer than MAX_LINES (the tree keeps files to one job,
about 600 lines at most).

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
# the order of QP_INCLUDE_DIRS in CMakeLists.txt, as the compiler searches
SEARCH = ["common", "daemon", "daemon/collect", "daemon/targets",
          "daemon/symbolize", "daemon/model", "daemon/export", "daemon/http",
          "bpf", "include"]
MAX_LINES = 650
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = {}      # relative path -> folder
    for folder in list(LAYERS) + list(BASE):
        d = os.path.join(root, folder)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                files[folder + "/" + name] = folder
    errors = []
    edges = {}
    for rel, folder in sorted(files.items()):
        if folder in BASE:
            continue
        rank = LAYERS[folder]
        with open(os.path.join(root, rel), encoding="utf-8",
                  errors="replace") as f:
            lines = f.readlines()
        if len(lines) > MAX_LINES:
            errors.append(f"{rel}: {len(lines)} lines (more than {MAX_LINES}:"
                          " split it by job)")
        for no, line in enumerate(lines, 1):
            m = INC.match(line)
            if not m:
                continue
            inc = m.group(1)
            if inc.endswith(".skel.h"):
                if folder not in SKEL_OK:
                    errors.append(f"{rel}:{no}: includes BPF skeleton {inc}"
                                  f" (only collect/ and targets/ may)")
                continue
            # resolve as the compiler does: own folder, then the tree
            cand = os.path.normpath(os.path.join(folder, inc))
            if cand not in files:
                if inc.startswith("qprof/"):
                    cand = "include/" + inc
                else:
                    # the include path's order (QP_INCLUDE_DIRS)
                    cand = next((d + "/" + inc for d in SEARCH
                                 if d + "/" + inc in files), None)
            if cand is None or cand not in files:
                errors.append(f"{rel}:{no}: {inc} not found in the tree")
                continue
            edges.setdefault(rel, set()).add(cand)
            tf = files[cand]
            if tf == folder or tf in BASE:
                continue
            if LAYERS[tf] >= rank or (folder == "cli" and tf != "common"):
                errors.append(f"{rel}:{no}: {folder}/ (layer {rank}) may not"
                              f" include {cand} ({tf}/, layer {LAYERS[tf]})")
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
    for e in errors:
        print(e)
    if errors:
        print(f"check_deps: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    print(f"check_deps: {len(files)} files, {sum(len(v) for v in edges.values())}"
          " includes, every one points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
