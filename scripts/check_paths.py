#!/usr/bin/env python3
"""check_paths.py [SOURCE_DIR] - no file of the repository cites a path
outside it.

Looked for in every file git tracks (or, outside a git checkout, every
file under SOURCE_DIR but build directories), text files only:
- a relative path (one or more ../ and a name) that leaves the
  repository from the file's own folder;
- a markdown link whose target, resolved from the file's folder, leaves
  the repository;
- an absolute path under the development machines' work tree (the
  folder named in WORK below);
- the name of a document in capitals (a capitalised name ending in .md, as design notes are
  named) of which the repository has no file;
- a tracker's issue number ("issue" and a number), which means nothing to
  a reader of the repository: say what the code does and why instead.

--links also reports markdown links to files that do not exist (not an
error by default: documents may link pages another change adds).

Exit 0 when nothing is found, 1 otherwise (each finding printed as
FILE:LINE: what).
"""
import os
import re
import subprocess
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
check_links = "--links" in sys.argv
root = os.path.realpath(args[0] if args else ".")


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, fs in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("build", ".git"))]
        for f in fs:
            files.append(os.path.relpath(os.path.join(d, f), root))
    return files


files = tracked_files()
basenames = {os.path.basename(f) for f in files}
REL = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.-][\w./-]*)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
WORK_DIR = "/" + "work" + "/"  # spelt in two parts so this file does not cite it
WORK = re.compile(r"(?<![\w.-])" + re.escape(WORK_DIR) + r"[\w./-]*")
ISSUE = re.compile(r"\b[Ii]ssues? ?#?[0-9]+\b")
DOCNAME = re.compile(r"(?<![\w./-])([A-Z][A-Z_]+\.md)\b")

findings = 0
dangling = 0


def inside(path):
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


for rel in files:
    path = os.path.join(root, rel)
    if not os.path.isfile(path) or os.path.islink(path):
        continue
    try:
        data = open(path, "rb").read(1 << 20)
    except OSError:
        continue
    if b"\0" in data:
        continue  # binary
    text = data.decode("utf-8", "replace")
    here = os.path.dirname(path)
    for n, line in enumerate(text.split("\n"), 1):
        for m in REL.finditer(line):
            if not inside(os.path.join(here, m.group(1))):
                print("%s:%d: %s leaves the repository" % (rel, n, m.group(1)))
                findings += 1
        if rel.endswith(".md"):
            for m in LINK.finditer(line):
                t = m.group(1)
                if re.match(r"[a-z]+:", t):
                    continue  # https:, file:, man:
                target = os.path.join(root, t.lstrip("/")) if t.startswith("/") \
                    else os.path.join(here, t)
                if not inside(target):
                    print("%s:%d: link %s leaves the repository" % (rel, n, t))
                    findings += 1
                elif check_links and not os.path.exists(target):
                    print("%s:%d: link %s: no such file (yet)" % (rel, n, t))
                    dangling += 1
        for m in WORK.finditer(line):
            print("%s:%d: %s is outside the repository" % (rel, n, m.group(0)))
            findings += 1
        for m in ISSUE.finditer(line):
            print("%s:%d: '%s' names an issue of the tracker" % (rel, n, m.group(0)))
            findings += 1
        for m in DOCNAME.finditer(line):
            if m.group(1) not in basenames:
                print("%s:%d: %s is not in the repository" % (rel, n, m.group(1)))
                findings += 1

print("check_paths: %d files, %d paths outside the repository%s"
      % (len(files), findings,
         (", %d links to missing files" % dangling) if check_links else ""))
sys.exit(1 if findings else 0)
