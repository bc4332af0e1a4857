#!/usr/bin/env python3
"""gen_man.py - the man pages, made from the programs' own --help texts.

The prose of each page (description, files, examples, see also) is written
by hand in man/*.in; the synopsis, the options and, for qprof-cli, the
command list and one page per command (bpftool's convention:
qprof-cli-scopes(1), ...) come from running the built programs with --help.
So a flag added to a program's usage text is in its man page at the next
build, and the two cannot drift.

  gen_man.py --qprofd BIN --cli BIN --src MAN_DIR --out OUT_DIR --version V
  gen_man.py ... --check     regenerate into a temporary directory and
                             compare with OUT_DIR; also check that every
                             option of every --help is in its page.
                             Exit 0 when equal, 1 otherwise.
"""
import argparse
import filecmp
import os
import re
import subprocess
import sys
import tempfile

DATE = "2026-12-01"


def run_help(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=dict(os.environ, COLUMNS="80"))
    if p.returncode != 0:
        sys.exit("gen_man: %s exited %d: %s" % (" ".join(argv), p.returncode,
                                                  p.stderr.strip()))
    return p.stdout


def esc(text):
    """troff-escape a line of plain text."""
    t = text.replace("\\", "\\e")
    t = t.replace("-", "\\-")
    if t[:1] in (".", "'"):
        t = "\\&" + t
    return t


OPT_RE = re.compile(r"^  (-[^ ].*?)(?:\s{2,}(\S.*))?$")


def split_usage(help_text):
    """(synopsis lines, body lines): the Usage line and the indented lines
    right after it; the rest is the body."""
    lines = help_text.rstrip("\n").split("\n")
    if not lines or not lines[0].startswith("Usage: "):
        sys.exit("gen_man: --help does not start with 'Usage: '")
    syn = [lines[0][len("Usage: "):].strip()]
    i = 1
    while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
        syn.append(lines[i].strip())
        i += 1
    return syn, lines[i:]


def body_to_troff(lines):
    """Option lines (two spaces and a dash) become .TP entries, their
    indented continuations the entry's text; other indented lines keep
    their layout (.nf); plain lines are filled paragraphs."""
    out = []
    mode = None  # None, "opt", "nf", "p"

    def close():
        nonlocal mode
        if mode == "nf":
            out.append(".fi")
        mode = None

    for ln in lines:
        if not ln.strip():
            close()
            out.append(".PP")
            continue
        m = OPT_RE.match(ln)
        if m and not ln.startswith("   "):
            close()
            out.append(".TP")
            out.append(".B " + esc(m.group(1)))
            if m.group(2):
                out.append(esc(m.group(2)))
            mode = "opt"
            continue
        if mode == "opt" and ln.startswith("      "):
            out.append(esc(ln.strip()))
            continue
        if ln.startswith("  "):
            if mode != "nf":
                close()
                out.append(".nf")
                mode = "nf"
            out.append(esc(ln))
            continue
        if mode == "opt" or mode == "nf":
            close()
            out.append(".PP")
        mode = "p"
        out.append(esc(ln))
    close()
    # no empty paragraphs
    cleaned = []
    for x in out:
        if x == ".PP" and (not cleaned or cleaned[-1] in (".PP",)):
            continue
        cleaned.append(x)
    while cleaned and cleaned[-1] == ".PP":
        cleaned.pop()
    return "\n".join(cleaned)


def synopsis_troff(syn):
    return ".nf\n" + "\n".join(esc(s) for s in syn) + "\n.fi"


def options_of(help_text):
    """Every option token (--flag, -x) that the help's option lines name."""
    toks = set()
    for ln in help_text.split("\n"):
        m = OPT_RE.match(ln)
        if m and not ln.startswith("   "):
            toks.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", m.group(1)))
    return toks


def th(name, section, version, title):
    return ('.TH "%s" "%s" "%s" "qprof %s" "%s"\n'
            % (name.upper(), section, DATE, version, title))


def fill(template, values):
    def rep(m):
        key = m.group(1)
        if key not in values:
            sys.exit("gen_man: unknown placeholder @%s@" % key)
        return values[key]
    return re.sub(r"@([A-Z_]+)@", rep, template)


def cli_commands(cli_help):
    """(name, summary) of each command in qprof-cli --help's list."""
    cmds = []
    inside = False
    for ln in cli_help.split("\n"):
        if ln.strip() == "Commands:":
            inside = True
            continue
        if inside:
            if not ln.strip():
                break
            m = re.match(r"^  (\S+)\s+(.*)$", ln)
            if m:
                cmds.append((m.group(1), m.group(2)))
    if not cmds:
        sys.exit("gen_man: no command list in qprof-cli --help")
    return cmds


def generate(a, out):
    pages = {}
    # qprofd(8)
    h = run_help([a.qprofd, "--help"])
    syn, body = split_usage(h)
    tpl = open(os.path.join(a.src, "qprofd.8.in")).read()
    pages["man8/qprofd.8"] = (th("qprofd", 8, a.version, "qprof manual")
                              + fill(tpl, {"SYNOPSIS": synopsis_troff(syn),
                                           "OPTIONS": body_to_troff(body),
                                           "VERSION": a.version}), h)
    # qprof-cli(1) and one page per command
    ch = run_help([a.cli, "--help"])
    syn, body = split_usage(ch)
    cmds = cli_commands(ch)
    cmd_list = "\n".join(".TP\n.B %s\n%s;\nsee \\fBqprof\\-cli\\-%s\\fR(1)."
                         % (esc(n), esc(s), esc(n)) for n, s in cmds)
    opts = [ln for ln in body if OPT_RE.match(ln) and not ln.startswith("   ")]
    tpl = open(os.path.join(a.src, "qprof-cli.1.in")).read()
    see = ",\n".join("\\fBqprof\\-cli\\-%s\\fR(1)" % esc(n) for n, _ in cmds)
    pages["man1/qprof-cli.1"] = (th("qprof-cli", 1, a.version, "qprof manual")
                                 + fill(tpl, {"SYNOPSIS": synopsis_troff(syn),
                                              "COMMANDS": cmd_list,
                                              "OPTIONS": body_to_troff(opts),
                                              "COMMAND_PAGES": see,
                                              "VERSION": a.version}), ch)
    for n, summary in cmds:
        hh = run_help([a.cli, n, "--help"])
        syn, body = split_usage(hh)
        page = (th("qprof-cli-" + n, 1, a.version, "qprof manual")
                + ".SH NAME\nqprof\\-cli\\-%s \\- %s\n" % (esc(n), esc(summary))
                + ".SH SYNOPSIS\n" + synopsis_troff(syn) + "\n"
                + ".SH DESCRIPTION\n" + body_to_troff(body) + "\n"
                + ".SH GLOBAL OPTIONS\n"
                  "\\fB\\-\\-socket\\fR \\fIPATH\\fR and \\fB\\-\\-json\\fR may come "
                  "before or after the command; see \\fBqprof\\-cli\\fR(1).\n"
                + ".SH EXIT STATUS\n0 done, 1 failed, 2 bad usage.\n"
                + ".SH SEE ALSO\n\\fBqprof\\-cli\\fR(1), \\fBqprofd\\fR(8)\n")
        pages["man1/qprof-cli-%s.1" % n] = (page, hh)
    for rel, (text, _) in pages.items():
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return pages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qprofd", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--stamp")
    a = ap.parse_args()
    if not a.check:
        generate(a, a.out)
        if a.stamp:
            open(a.stamp, "w").write("")
        return 0
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        pages = generate(a, tmp)
        for rel, (text, helptext) in sorted(pages.items()):
            built = os.path.join(a.out, rel)
            if not os.path.exists(built):
                print("MISSING %s (not built)" % built)
                bad += 1
                continue
            if not filecmp.cmp(built, os.path.join(tmp, rel), shallow=False):
                print("STALE %s: differs from the programs' --help now" % built)
                bad += 1
            # every option of the help is in the page, as troff writes it
            for tok in sorted(options_of(helptext)):
                if esc(tok) not in text:
                    print("%s: option %s of --help not in the page" % (rel, tok))
                    bad += 1
        extra = []
        for d in ("man1", "man8"):
            p = os.path.join(a.out, d)
            for f in (os.listdir(p) if os.path.isdir(p) else []):
                if "%s/%s" % (d, f) not in pages:
                    extra.append("%s/%s" % (d, f))
        for e in extra:
            print("EXTRA %s: no such command any more" % e)
            bad += 1
        print("gen_man: %d pages checked, %d problems" % (len(pages), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
