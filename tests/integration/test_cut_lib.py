#!/usr/bin/env python3
"""A target's library cut or rewritten under qprofd while qprofd unwinds
and names the target's samples in it.

cut_target spins in cut_spin, a block of 4,096 distinct instructions in
the test's own copy of cut_lib, so that samples keep landing at addresses
whose unwind rule qprofd has not read yet. qprofd samples it at 999 Hz and
unwinds every sample from a stack copy with libdwfl (--unwind dwarf-copy).
Once qprofd has unwound a few hundred of its samples, the test either
truncates the library just after its code (mode "truncate": its CFI, its
section headers and its names are gone; the target keeps its code pages,
and reads nothing else of the library) or overwrites the same bytes with
random ones in place (mode "rewrite", same inode, same size).

A file that shrinks while mapped raises SIGBUS in whoever reads a page past
its new end; qprofd used to map the files it unwound with. Now: qprofd is
still running 3 s later and answers; samples are still taken (>= 100 more);
the target is detached and attached again (a new view of its files, read
from the cut or garbled library) and sampled for 2 s more; its folded
profile answers 200; qprofd exits 0 on SIGTERM (not killed by a signal);
the target is alive throughout (the test did not harm it either).

usage: test_cut_lib.py QPROFD CUT_TARGET CUT_LIB truncate|rewrite"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qptest  # noqa: E402
from qptest import Daemon, Failures, require_root, wait_for  # noqa: E402

qprofd, target_bin, lib_src, MODE = sys.argv[1:5]
require_root()
t = Failures(f"integration_cut_lib ({MODE})")


def load_segments(path):
    """(offset, filesz, flags) of each PT_LOAD, by readelf."""
    out = subprocess.run(["readelf", "-lW", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    segs = []
    for ln in out.splitlines():
        f = ln.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[4], 16), " ".join(f[6:-1])))
    return segs


def section(path, name):
    out = subprocess.run(["readelf", "-SW", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    for ln in out.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", ln)
        if m and m.group(1) == name:
            return int(m.group(2), 16), int(m.group(3), 16)
    return None


def unwind(d):
    return d.get("/api/status")[1]["cpu"]["unwind"]


def samples(d):
    return d.get("/api/status")[1]["cpu"]["samples"]


work = tempfile.mkdtemp(prefix="qprof-cut-")
qptest._dirs.append(work)
lib = os.path.join(work, "libcut.so")
shutil.copyfile(lib_src, lib)
segs = load_segments(lib)
text = [s for s in segs if "E" in s[2]]
after = [s for s in segs if text and s[0] > text[0][0]]
eh = section(lib, ".eh_frame")
if not text or not after or not eh:
    print(f"FAIL: the library's layout is not the one the test needs: {segs}, .eh_frame {eh}", flush=True)
    sys.exit(1)
cut = min(s[0] for s in after)
size = os.path.getsize(lib)
t.check(text[0][0] + text[0][1] <= cut <= eh[0],
        f"the cut ({cut:#x}) is after the code ({text[0]}) and before .eh_frame ({eh[0]:#x})")

d = Daemon(qprofd, ["--collector", "bpf", "--frequency", "999", "--unwind", "dwarf-copy"])
prog = qptest.Target([target_bin, lib])
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    st, _ = d.post("/api/targets", {"pid": prog.pid})
    t.eq(st, 201, "the target is attached")
    u0 = unwind(d)
    ok = wait_for(lambda: unwind(d)["complete"] - u0["complete"] >= 300, timeout=120, step=0.2)
    u1 = unwind(d)
    t.check(ok, f"qprofd unwinds the target's samples before the cut ({u1['complete'] - u0['complete']} walks)")
    s1 = samples(d)
    if MODE == "truncate":
        os.truncate(lib, cut)
    else:
        with open(lib, "r+b") as f:
            os.pwrite(f.fileno(), os.urandom(size - cut), cut)
    print(f"{MODE}: {lib} at {cut:#x} of {size:#x} bytes, after {s1} samples", flush=True)

    def died():
        return d.proc.poll() is not None or prog.proc.poll() is not None

    wait_for(died, timeout=3, step=0.1)
    t.eq(d.proc.poll(), None, f"{MODE}: qprofd is still running 3 s after the cut")
    t.eq(prog.proc.poll(), None, f"{MODE}: the target is still running")
    if d.proc.poll() is None:
        s2 = samples(d)
        t.check(s2 - s1 >= 100, f"{MODE}: samples taken after the cut ({s2 - s1})")
        # a new view of the target's files: read from the cut or garbled one
        t.eq(d.delete(f"/api/targets/{prog.pid}")[0], 200, f"{MODE}: detach")
        t.eq(d.post("/api/targets", {"pid": prog.pid})[0], 201, f"{MODE}: attach again")
        wait_for(died, timeout=2, step=0.1)
        t.eq(d.proc.poll(), None, f"{MODE}: qprofd runs on with a view of the changed file")
    if d.proc.poll() is None:
        s3 = samples(d)
        t.check(s3 - s2 >= 50, f"{MODE}: samples after attaching again ({s3 - s2})")
        st, _, body = d.request("GET", f"/api/cpu/folded?pid={prog.pid}", timeout=120)
        t.eq(st, 200, f"{MODE}: the folded profile answers")
        t.check(len(body.splitlines()) >= 1, f"{MODE}: the folded profile has stacks")
        u2 = unwind(d)
        print(f"{MODE}: unwind figures after: {u2}", flush=True)
        t.check(u2["complete"] + u2["partial"] > u1["complete"] + u1["partial"],
                f"{MODE}: walks go on after the cut")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
finally:
    prog.kill()
    code = d.stop()
    t.eq(code, 0, f"{MODE}: qprofd exits 0 on SIGTERM (not killed by a signal: {code})")
sys.exit(t.done())
