#!/usr/bin/env python3
"""Source lines and inlined frames end to end: srcline_target (-O2 -g)
spends its time in mix(), a static inline function inlined into burn(),
sampled at 999 Hz for 3 s. Asserted:

- folded stacks: burn;mix_[i] (mix marked as inlined) holds >= 80 % of the
  samples under burn;
- pprof, decoded here: the main executable is the first mapping, with
  has_filenames, has_line_numbers, has_inline_frames; every location where
  mix is inlined has two Lines, innermost first: mix (Function.filename
  srcline_target.c, absolute) on its loop's lines (LINE_MIX_LOOP or
  LINE_MIX_BODY, found in the source; the body's line at least a quarter
  of mix's samples), then burn at the line of the call (LINE_BURN_CALL);
- go tool pprof -lines -top names srcline_target.c:LINE_MIX_BODY and
  srcline_target.c:LINE_BURN_CALL; go tool pprof -list burn prints the
  source line of the call. go is required (scripts/install-deps.sh
  installs golang-go).

usage: test_srcline.py QPROFD SRCLINE_TARGET SOURCE"""
import gzip
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402
from pbwire import packed, pairs as fields  # noqa: E402

qprofd, target_bin, source = sys.argv[1:4]
require_root()
t = Failures("integration_srcline")


def marked_line(mark):
    """The line ending in the comment /* MARK */, and its code."""
    with open(source) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"/* {mark} */"):
                return n, text.split("/*")[0].strip()
    raise SystemExit(f"{source}: no {mark}")


LINE_MIX, _ = marked_line("LINE_MIX_BODY")
LINE_LOOP, _ = marked_line("LINE_MIX_LOOP")
LINE_CALL, CALL_TEXT = marked_line("LINE_BURN_CALL")


def decode(raw):
    p = {"strings": [], "samples": [], "mappings": [], "locations": {}, "functions": {}}
    for f, v in fields(raw):
        if f == 6:
            p["strings"].append(v.decode(errors="replace"))
        elif f == 2:
            s = {"locs": [], "values": []}
            for f2, v2 in fields(v):
                if f2 == 1:
                    s["locs"] += packed(v2)
                elif f2 == 2:
                    s["values"] += packed(v2)
            p["samples"].append(s)
        elif f == 3:
            p["mappings"].append(dict(fields(v)))
        elif f == 4:
            loc = {"lines": []}
            for f2, v2 in fields(v):
                if f2 == 4:
                    ln = dict(fields(v2))
                    loc["lines"].append((ln.get(1, 0), ln.get(2, 0)))
                else:
                    loc[f2] = v2
            p["locations"][loc.get(1, 0)] = loc
        elif f == 5:
            fn = dict(fields(v))
            p["functions"][fn.get(1, 0)] = fn
    return p


prog = Target([target_bin])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--frequency", "999"])
try:
    prog.start()
    st, _, body = d.request("GET", f"/api/cpu/folded?pid={prog.pid}&seconds=3", timeout=60)
    t.eq(st, 200, "folded answers")
    under_burn = inl = 0
    for line in body.decode().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if "burn" in frames:
            under_burn += int(n)
            i = frames.index("burn")
            if i + 1 < len(frames) and frames[i + 1] == "mix_[i]":
                inl += int(n)
    t.check(under_burn >= 300, f"samples under burn in 3 s at 999 Hz: {under_burn}")
    t.check(inl >= 0.8 * under_burn, f"burn;mix_[i] in folded: {inl} of {under_burn}")

    st, _, body = d.request("GET", f"/pprof/profile?pid={prog.pid}")
    t.eq(st, 200, "pprof answers")
    p = decode(gzip.decompress(body))
    S = p["strings"]
    exe = os.path.realpath(target_bin)
    m0 = p["mappings"][0] if p["mappings"] else {}
    t.eq(S[m0.get(5, 0)], exe, "the main executable is the first mapping")
    t.check(m0.get(8) == 1 and m0.get(9) == 1 and m0.get(10) == 1,
            f"its has_filenames, has_line_numbers, has_inline_frames: {m0.get(8)}, {m0.get(9)}, {m0.get(10)}")
    t.check(len(S[m0.get(6, 0)]) == 40, f"its build id: {S[m0.get(6, 0)]!r}")

    def fname(fid):
        return S[p["functions"][fid].get(2, 0)]

    def ffile(fid):
        return S[p["functions"][fid].get(4, 0)]

    weight = {}
    for s in p["samples"]:
        for lid in s["locs"]:
            weight[lid] = weight.get(lid, 0) + s["values"][0]
    mix_locs = [(lid, loc) for lid, loc in p["locations"].items()
                if loc["lines"] and fname(loc["lines"][0][0]) == "mix"]
    t.check(len(mix_locs) > 0, "locations where mix is inlined")
    bad = [loc["lines"] for _, loc in mix_locs
           if len(loc["lines"]) != 2 or fname(loc["lines"][1][0]) != "burn" or loc["lines"][1][1] != LINE_CALL]
    t.check(not bad, f"each is [mix, burn:{LINE_CALL}], innermost first: {bad[:3]}")
    files = {ffile(loc["lines"][0][0]) for _, loc in mix_locs}
    t.check(files == {os.path.realpath(source)} or all(f.endswith("/srcline_target.c") and f.startswith("/")
                                                       for f in files),
            f"mix's Function.filename is the source file: {files}")
    # every address of mix is on one of its loop's two lines; GCC 12 puts
    # about half the samples on each (the counter's increment and compare
    # are the for line's)
    mix_lines = {loc["lines"][0][1] for _, loc in mix_locs}
    t.check(mix_lines <= {LINE_LOOP, LINE_MIX}, f"mix's lines are {LINE_LOOP} and {LINE_MIX}: {mix_lines}")
    on_body = sum(weight.get(lid, 0) for lid, loc in mix_locs if loc["lines"][0][1] == LINE_MIX)
    in_mix = sum(weight.get(lid, 0) for lid, _ in mix_locs)
    t.check(in_mix > 0 and on_body >= 0.25 * in_mix, f"mix's samples on line {LINE_MIX}: {on_body} of {in_mix}")

    go = shutil.which("go") or ("/usr/lib/go/bin/go" if os.path.exists("/usr/lib/go/bin/go") else None)
    t.check(go is not None, "go is installed (scripts/install-deps.sh installs golang-go)")
    if go:
        path = os.path.join(d.dir, "srcline.pb.gz")
        open(path, "wb").write(body)
        env = {**os.environ, "HOME": d.dir, "GOCACHE": d.dir + "/gocache"}
        # cwd: pprof trims a source path after any directory named like the
        # basename of its search path (the cwd: ctest's is .../tests)
        out = subprocess.run([go, "tool", "pprof", "-lines", "-top", path], capture_output=True,
                             text=True, timeout=300, env=env, cwd=d.dir)
        t.eq(out.returncode, 0, f"go tool pprof -lines -top ({out.stderr[-300:]})")
        t.check(f"srcline_target.c:{LINE_MIX}" in out.stdout,
                f"-lines -top names srcline_target.c:{LINE_MIX}: {out.stdout[-800:]}")
        out = subprocess.run([go, "tool", "pprof", "-lines", "-top", "-cum", path], capture_output=True,
                             text=True, timeout=300, env=env, cwd=d.dir)
        t.check(f"burn {os.path.realpath(source)}:{LINE_CALL}" in out.stdout or
                f"srcline_target.c:{LINE_CALL}" in out.stdout,
                f"-lines -top -cum names burn at srcline_target.c:{LINE_CALL}: {out.stdout[-800:]}")
        out = subprocess.run([go, "tool", "pprof", "-list", "^burn$", path], capture_output=True,
                             text=True, timeout=300, env=env, cwd=d.dir)
        t.eq(out.returncode, 0, f"go tool pprof -list burn ({out.stderr[-300:]})")
        t.check(CALL_TEXT in out.stdout, f"-list burn prints the line of the call: {out.stdout[-1200:]}")
finally:
    prog.finish()
    t.eq(d.stop(), 0, "qprofd exits 0")
    if t.failed:
        print(d.logtext(), file=sys.stderr)
sys.exit(t.done())
