#!/usr/bin/env python3
"""check_doc_commands.py QPROFD QPROF_CLI SOURCE_DIR [MAN_DIR] - every
qprofd and qprof-cli command that the README, the user guide, the
references and the man pages show exists and parses.

- An example (a command line in a code block or a `code span`, as a user
  would type it) is run with --help appended: the programs parse their
  options left to right and stop at --help with exit 0, so an unknown
  command, an unknown option or an option missing its value fails (exit 2).
  Placeholders (N, PID, $(pidof x), ...) become valid values first.
- A synopsis (a line with [optional] or (a | b) groups, or "...") is not
  run: each option it names must be in the --help of its program (and of
  its command, for qprof-cli).

Prints each command checked and exits 1 when any fails.
"""
import glob
import os
import re
import subprocess
import sys

if len(sys.argv) < 4:
    sys.exit(__doc__)
QPROFD, CLI, SRC = sys.argv[1:4]
MAN = sys.argv[4] if len(sys.argv) > 4 else None

help_cache = {}


def help_of(argv):
    key = tuple(argv)
    if key not in help_cache:
        p = subprocess.run(argv + ["--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        help_cache[key] = p.stdout if p.returncode == 0 else None
    return help_cache[key]


cli_help = help_of([CLI]) or ""
COMMANDS = set()
inside = False
for ln in cli_help.split("\n"):
    if ln.strip() == "Commands:":
        inside = True
        continue
    if inside:
        if not ln.strip():
            break
        COMMANDS.add(ln.split()[0])
if not COMMANDS:
    sys.exit("check_doc_commands: no command list in %s --help" % CLI)


def sources():
    """(name, [candidate lines]) of each document."""
    files = [os.path.join(SRC, "README.md")]
    for d in ("docs/guide", "docs/reference"):
        files += sorted(glob.glob(os.path.join(SRC, d, "*.md")))
    files.append(os.path.join(SRC, "docs/install.md"))
    for f in files:
        if not os.path.exists(f):
            continue
        text = open(f).read()
        lines = []
        # fenced code blocks
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
            blines = block.split("\n")
            listing = bool(blines) and re.match(r"\s*qprof-cli .*COMMAND", blines[0])
            for b in blines:
                if listing and re.match(r"  [a-z]", b) and b.split()[0] in COMMANDS:
                    # a command list under a qprof-cli synopsis: keep the
                    # command part, not its description
                    lines.append("qprof-cli " + re.split(r"\s{3,}", b.strip())[0] + " [")
                else:
                    lines.append(b)
        # code spans
        for span in re.findall(r"`([^`\n]+)`", text):
            lines.append(span)
        yield os.path.relpath(f, SRC), lines
    if MAN:
        for f in sorted(glob.glob(os.path.join(MAN, "man*", "*.[18]"))):
            text = open(f).read()
            lines = []
            sec = None
            nf = False
            for ln in text.split("\n"):
                if ln.startswith(".SH "):
                    sec = ln[4:].strip()
                elif ln.startswith(".nf"):
                    nf = True
                elif ln.startswith(".fi"):
                    nf = False
                elif nf and sec in ("SYNOPSIS", "EXAMPLES"):
                    lines.append(ln.replace("\\-", "-").replace("\\e", "\\"))
            yield "man/" + os.path.relpath(f, MAN), lines


def split_shell(line):
    """LINE cut at ;, &&, || and pipes, but not at a | inside [...] or
    (...) (a synopsis's alternatives)."""
    segs, cur, depth, i = [], "", 0, 0
    while i < len(line):
        c = line[i]
        if c in "[(":
            depth += 1
        elif c in "])":
            depth = max(0, depth - 1)
        if depth == 0 and (line.startswith("&&", i) or line.startswith("||", i)):
            segs.append(cur)
            cur = ""
            i += 2
            continue
        if depth == 0 and c in ";|":
            segs.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    segs.append(cur)
    return segs


def commands_in(line):
    """The qprofd / qprof-cli command lines in LINE."""
    line = re.sub(r"\s#.*$", "", line)           # a comment
    for seg in split_shell(line):
        seg = seg.strip().rstrip("&").strip()
        seg = re.sub(r"^(\$ |sudo )+", "", seg)
        words = seg.split()
        if not words:
            continue
        prog = os.path.basename(words[0])
        if prog in ("qprofd", "qprof-cli") and len(words) > 1:
            yield prog, seg


PLACEHOLDER = {
    "N": "1", "PID": "1", "HZ": "99", "MS": "100", "B": "4096", "S": "1",
    "SEQ": "1", "ADDR:PORT": "127.0.0.1:6464", "MODE": "dwarf",
}


def example_argv(prog, seg):
    seg = re.sub(r"\$\([^)]*\)", "1", seg)         # $(pidof strategy)
    seg = re.sub(r'"?\$\{?\w+\}?"?', "1", seg)      # "$pid", $N
    words = seg.split()[1:]
    out = []
    for w in words:
        out.append(PLACEHOLDER.get(w, w))
    return [QPROFD if prog == "qprofd" else CLI] + out


def is_synopsis(seg):
    return bool(re.search(r"\[|\(.*\|.*\)|\.\.\.|\bCOMMAND\b|\|", seg))


failures = 0
checked = 0
for doc, lines in sources():
    for line in lines:
        for prog, seg in commands_in(line):
            binary = QPROFD if prog == "qprofd" else CLI
            if is_synopsis(seg):
                words = seg.split()[1:]
                cmd = None
                if prog == "qprof-cli":
                    bare = [w for w in words if re.match(r"^[a-z][a-z-]*$", w)]
                    if bare and bare[0] not in COMMANDS:
                        print("FAIL %s: %s: no command '%s'" % (doc, seg, bare[0]))
                        failures += 1
                        continue
                    cmd = bare[0] if bare else None
                h = help_of([binary, cmd] if cmd else [binary])
                if h is None:
                    print("FAIL %s: %s: %s --help fails" % (doc, seg, prog))
                    failures += 1
                    continue
                glob_h = help_of([binary]) or ""
                for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b", seg):
                    if flag not in h and flag not in glob_h:
                        print("FAIL %s: %s: %s not in %s%s --help"
                              % (doc, seg, flag, prog, " " + cmd if cmd else ""))
                        failures += 1
                checked += 1
                continue
            argv = example_argv(prog, seg)
            if "--help" not in argv:
                argv.append("--help")
            p = subprocess.run(argv, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            checked += 1
            if p.returncode != 0:
                print("FAIL %s: %s (exit %d: %s)" % (doc, seg, p.returncode,
                                                     p.stderr.strip()[:200]))
                failures += 1
            else:
                print("ok   %s: %s" % (doc, seg))
print("check_doc_commands: %d commands checked, %d failed" % (checked, failures))
if checked < 20:
    print("check_doc_commands: too few commands found (%d): the extraction broke" % checked)
    sys.exit(1)
sys.exit(1 if failures else 0)
