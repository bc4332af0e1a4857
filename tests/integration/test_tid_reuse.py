#!/usr/bin/env python3
"""A tid used again never carries an earlier thread's name.

tid_reuse_target runs scope "reuse_work" 10 times (2 ms each) on a thread
named "old-thread", which exits; then 10 times on a thread named
"new-thread" made on the same tid (ns_last_pid; with the ring collector it
takes the first thread's ring from the free list, so the ring's owner tid
does not change). qprofd keys the names it read by tid and thread start
time (/proc/PID/task/TID/stat), and names each instance by the thread that
had the tid at its time:

  - GET /api/scopes/slowest: all 20 instances kept, each of that tid; the
    10 that began before the boundary (between the first thread's end and
    the second's start) are "old-thread", the 10 after it "new-thread";
  - GET /api/trace?seconds=...: not asked (a trace names a (pid, tid) once).

Exits 77 when the tid could not be had again (another process of the host
took it 5000 times in a row).

usage: test_tid_reuse.py QPROFD TID_REUSE_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import SKIP, Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
t = Failures("integration_tid_reuse")
N = 10
prog = Target([target, str(N)])
d = Daemon(qprofd, ["--collector", "ring", "--pid", str(prog.pid)])
skip = False
try:
    st, status = d.get("/api/status")
    tg = [x for x in status["targets"] if x["pid"] == prog.pid]
    t.check(tg and tg[0].get("collector") == "ring", "the ring collector times the target")
    prog.start()
    res = prog.result()
    print(f"target: {res}", flush=True)
    if not res["tid"]:
        print("SKIP: the tid could not be had again", flush=True)
        skip = True
    else:
        tid, boundary = res["tid"], res["boundary_ns"]

        def all_kept():
            st, b = d.get(f"/api/scopes/slowest?pid={prog.pid}&name=reuse_work&n=32")
            return b if st == 200 and len(b["instances"]) == 2 * N else None
        b = wait_for(all_kept, timeout=15, step=0.2)
        if t.check(b is not None, f"the {2 * N} instances are kept"):
            inst = b["instances"]
            t.eq(sorted({i["tid"] for i in inst}), [tid], "every instance is of the one tid")
            before = sorted(i["thread"] for i in inst if i["start_ns"] < boundary)
            after = sorted(i["thread"] for i in inst if i["start_ns"] >= boundary)
            t.eq(before, ["old-thread"] * N, "the first thread's instances carry its name")
            t.eq(after, ["new-thread"] * N, "the second thread's instances carry its own name, not the first's")
finally:
    prog.finish()
    t.eq(d.stop(), 0, "qprofd exits 0")
if skip and not t.failed:
    sys.exit(SKIP)
sys.exit(t.done())
