#!/usr/bin/env python3
"""A leaf loop that keeps data in the x86-64 red zone, with a marker in it,
computes under qprofd what it computes without it (both collectors): on
Linux >= 6.18 a uprobe on a nop5 becomes a call that writes 32 bytes below
%rsp.
  - built with the ABI-1 header (a bare nop5; gcc -O2 keeps the loop's
    values below %rsp): qprofd refuses to probe it, saying why;
  - built with the current header (the marker keeps the compiler out of the
    red zone): probed on the BPF collector (the nop5 optimised into a call)
    and on the ring collector, exact mark counts, the same result.
Each run is bounded (a corrupted loop bound never ends: 60 s, then failed).

usage: test_redzone.py QPROFD TARGET_ABI1 TARGET_ABI2"""
import os
import re
import select
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, abi1, abi2 = sys.argv[1:4]
N = 2000000
require_root()
t = Failures("integration_redzone")


def result(prog, timeout=60):
    """The target's result line, or None when it does not come in TIMEOUT s."""
    r, _, _ = select.select([prog.proc.stdout], [], [], timeout)
    return prog.result() if r else None


def red_zone_used(path):
    """Instructions of leaf() that address memory below %rsp: through %rsp,
    or through %rbp once %rbp is %rsp, deeper than the pushes since."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                         text=True).stdout
    body = out.split("<leaf>:\n", 1)[1].split("\n\n", 1)[0] if "<leaf>:\n" in out else ""
    n, fp, pushes, moved, deepest = 0, False, 0, False, 0
    for ln in body.splitlines():
        if "mov    %rsp,%rbp" in ln:
            fp = True
        elif fp and "push" in ln:
            pushes += 1
        if re.search(r"(sub|and|lea) +[^,]+,%rsp$", ln):
            moved = True
        if "lea " in ln:
            continue
        if re.search(r"-0x[0-9a-f]+\(%rsp\)", ln):
            n += 1
        m = re.search(r"-0x([0-9a-f]+)\(%rbp\)", ln)
        if fp and m:
            deepest = max(deepest, int(m.group(1), 16))
    if fp and not moved and deepest > 8 * pushes:
        n += 1
    return n


def reference(binary):
    prog = Target([binary, str(N)])
    try:
        prog.start()
        return result(prog)
    finally:
        prog.finish()
        prog.kill()


t.check(red_zone_used(abi1) > 0, "the ABI-1 build keeps data below %rsp in leaf() (the case tested)")
t.eq(red_zone_used(abi2), 0, "the current header's build keeps nothing below %rsp in leaf()")
ref1, ref2 = reference(abi1), reference(abi2)
t.check(ref1 is not None and ref1 == ref2, f"reference results without qprofd agree: {ref1} {ref2}")

for flags in (["--collector", "bpf"], ["--ring"]):
    name = "ring" if "--ring" in flags else "bpf"
    # ABI 1: refused, the program untouched
    prog = Target([abi1, str(N)])
    d = None
    try:
        d = Daemon(qprofd, ["--pid", str(prog.pid), *flags])
        text = d.logtext()
    except RuntimeError as e:  # qprofd --pid ends when it cannot attach its target
        text = str(e)
    t.check("red zone" in text and "leaf" in text,
            f"{name}: the refusal names the function and the red zone: {text.strip()[-400:]}")
    prog.start()
    got = result(prog)
    t.eq(got, ref1, f"{name}: ABI-1 leaf computes what it computes without qprofd")
    prog.finish()
    prog.kill()
    if d:
        d.stop()

    # ABI 2: probed (BPF: the nop5 becomes a call; ring: records), exact
    prog = Target([abi2, str(N)])
    d = Daemon(qprofd, ["--pid", str(prog.pid), *flags])
    try:
        wait_for(lambda: d.get("/api/status")[1].get("targets"), timeout=20)
        prog.start()
        got = result(prog)
        t.eq(got, ref2, f"{name}: current-header leaf computes what it computes without qprofd")

        def marks():
            st, body = d.get(f"/api/scopes?pid={prog.pid}")
            rows = (body or {}).get("scopes", []) if st == 200 else []
            return sum(r.get("count", 0) for r in rows if r.get("name") == "rz_mark")
        if "--ring" in flags:
            # flat out, the ring laps its reader: counted up to N (exact
            # accounting of rings is tested by integration_ring*)
            got_marks = wait_for(lambda: marks(), timeout=30, step=0.2)
            t.check(0 < got_marks <= N, f"{name}: marks counted: {got_marks} of {N}")
        else:
            wait_for(lambda: marks() >= N, timeout=30, step=0.2)
            t.eq(marks(), N, f"{name}: every mark counted")
    finally:
        prog.finish()
        prog.kill()
        t.eq(d.stop(), 0, f"{name}: qprofd exits 0")
sys.exit(t.done())
