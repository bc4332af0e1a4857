#!/usr/bin/env python3
"""stage_includes.py [--check] [SOURCE_DIR] - write every #include "..." of the
tree in its one canonical form (docs/internals/architecture.md, "How the build
enforces it"):

  - a header of the includer's own folder:        "x.h"
  - a header of a daemon stage or of common/:     "<stage>/x.h"
        (common, collect, symbolize, targets, model, export, http)
  - a BPF contract of bpf/ (outside bpf/):         "bpf/x.h"
  - a header of cli/ (outside cli/):               "cli/x.h"
  - the marker headers of include/qprof/:          "qprof/x.h"
  - tests/testlib.h from anywhere under tests/:    "testlib.h"

The build puts only the stages a library may use on its include path (one
folder per stage under the build tree, holding a link named after the stage),
so an include written in another form either does not compile or reaches a
header it must not; check_deps refuses "../" in an include.

Old forms are read as the compiler read them before the stages had their own
include folders (the including file's folder, then the tree's folders in the
order they were on the include path), so the script can be run again at any
time: after a merge that adds files or includes, it rewrites only those.
--check lists what it would change and exits 1 if anything would.
"""
import os
import re
import sys

# folder -> prefix of its headers when included from another folder
PREFIX = {
    "common": "common",
    "daemon/collect": "collect",
    "daemon/symbolize": "symbolize",
    "daemon/targets": "targets",
    "daemon/model": "model",
    "daemon/export": "export",
    "daemon/http": "http",
    "bpf": "bpf",
    "cli": "cli",
}
BY_PREFIX = {v: k for k, v in PREFIX.items()}
# the include path of the tree before the stage folders, in its order
OLD_SEARCH = ["common", "daemon", "daemon/collect", "daemon/targets",
              "daemon/symbolize", "daemon/model", "daemon/export",
              "daemon/http", "bpf", "include"]
# extra folders test and bench targets had on their own include path
TEST_SEARCH = ["tests", "cli"]
# where includes are rewritten (bpf/ and include/ keep their own forms)
ROOTS = ["common", "daemon", "cli", "tests", "bench", "examples"]
SKIP_DIRS = {"build", "corpus_cfi", "corpus_dwarf", "corpus_http",
             "corpus_parsers", "corpus_symbolize"}
EXTS = (".c", ".h", ".cpp", ".cc", ".hpp")
INC = re.compile(r'^(\s*#\s*include\s+)"([^"]+)"(.*)$')


def sources(root):
    for top in ROOTS:
        base = os.path.join(root, top)
        for d, dirs, names in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS
                             and not x.startswith("build"))
            for n in sorted(names):
                if n.endswith(EXTS):
                    yield os.path.relpath(os.path.join(d, n), root)


def exists(root, rel):
    return os.path.isfile(os.path.join(root, rel))


def resolve(root, folder, inc):
    """the file (relative to root) an include names, or None"""
    own = os.path.normpath(os.path.join(folder, inc))
    if not own.startswith("..") and exists(root, own):
        return own
    head, _, rest = inc.partition("/")
    if head in BY_PREFIX and rest and exists(root, BY_PREFIX[head] + "/" + rest):
        return BY_PREFIX[head] + "/" + rest
    if inc.startswith("qprof/") and exists(root, "include/" + inc):
        return "include/" + inc
    search = list(OLD_SEARCH)
    if folder.split("/")[0] in ("tests", "bench", "examples"):
        search = TEST_SEARCH + search
    for d in search:
        if exists(root, d + "/" + inc):
            return d + "/" + inc
    return None


def canonical(folder, target):
    tdir, name = os.path.split(target)
    if tdir == folder:
        return name
    if tdir in PREFIX:
        return PREFIX[tdir] + "/" + name
    if tdir.startswith("include/"):
        return target[len("include/"):]
    if tdir == "tests" and folder.split("/")[0] == "tests":
        return name
    # a sub-folder of the includer's own (tests -> tests/collect/x), or a
    # folder with no prefix: relative to the includer, if that needs no "../"
    rel = os.path.relpath(target, folder)
    if not rel.startswith(".."):
        return rel
    return None


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    root = os.path.abspath(args[0] if args else
                           os.path.join(os.path.dirname(__file__), ".."))
    changes = 0
    unresolved = []
    for rel in sources(root):
        folder = os.path.dirname(rel)
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.readlines()
        out = []
        touched = False
        for no, line in enumerate(lines, 1):
            m = INC.match(line.rstrip("\n"))
            if not m:
                out.append(line)
                continue
            inc = m.group(2)
            target = resolve(root, folder, inc)
            if target is None:
                # generated headers (*.skel.h, vmlinux.h) and the like
                if "../" in inc:
                    unresolved.append(f"{rel}:{no}: {inc} not found")
                out.append(line)
                continue
            want = canonical(folder, target)
            if want is None:
                unresolved.append(f"{rel}:{no}: {inc} ({target}) has no form"
                                  " without ../")
                out.append(line)
                continue
            if want != inc:
                changes += 1
                touched = True
                print(f"{rel}:{no}: \"{inc}\" -> \"{want}\"")
                nl = "\n" if line.endswith("\n") else ""
                line = f'{m.group(1)}"{want}"{m.group(3)}{nl}'
            out.append(line)
        if touched and not check:
            with open(path, "w", encoding="utf-8",
                      errors="surrogateescape") as f:
                f.writelines(out)
    for u in unresolved:
        print(u)
    verb = "would change" if check else "changed"
    print(f"stage_includes: {verb} {changes} include(s)"
          + (f", {len(unresolved)} left as they are" if unresolved else ""),
          file=sys.stderr)
    if check and (changes or unresolved):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
