#!/usr/bin/env python3
"""A child forked while its parent is attached: once qprofd detaches the
parent, or dies of SIGKILL, every USDT semaphore of both processes is back
at 0 (read through /proc/PID/mem), with either collector.

The kernel turns a hit uprobe on a nop5 into a call that fork copies into
the child; qprofd writes such a site back to its nop5 in the child (else it
would crash there), and the kernel, finding no breakpoint there when the
uprobe goes, never lowers the child's semaphore that fork copied raised.
Before qprofd lowered it with the nop5: the child's qprof_log_semaphore
(bpf) and qprof_ring_semaphore (ring) stayed at 1 for ever.

usage: test_fork_semaphores.py QPROFD EDGE_TARGET"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import collector_args, Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, edge = sys.argv[1:3]
require_root()
t = Failures("integration_fork_semaphores")
NAMES = ("log_sem", "value_sem", "ring_sem")


def sems(pid, addrs):
    """{name: value} of the semaphores of PID, None if it is gone."""
    try:
        with open(f"/proc/{pid}/mem", "rb") as f:
            out = {}
            for n in NAMES:
                f.seek(addrs[n])
                out[n] = struct.unpack("<H", f.read(2))[0]
            return out
    except OSError:
        return None


def run(collector, ending):
    what = f"{collector}, {ending}"
    prog = Target([edge, "--mode", "forkhold"])
    d = Daemon(qprofd, ["--pid", str(prog.pid), *collector_args(qprofd, collector)])
    child = None
    try:
        prog.start()
        res = prog.result()
        child = res["child"]
        up = sems(prog.pid, res)
        t.check(up is not None and any(up.values()),
                f"{what}: a semaphore of the parent is raised while attached ({up})")
        st = d.get("/api/status")[1]
        t.eq([x.get("collector") for x in st["targets"] if x["pid"] == prog.pid], [collector],
             f"{what}: the parent's collector")
        # the child is stopped until its sites are repaired
        lc = wait_for(lambda: (lambda l: l if l.get("children_resumed", 0) >= 1 else None)(
            d.get("/api/status")[1].get("lifecycle") or {}), timeout=10) or {}
        t.check(lc.get("sites_restored_nop", 0) >= 1, f"{what}: the child's sites were repaired ({lc})")
        t.eq(lc.get("semaphore_writes_failed"), 0, f"{what}: no semaphore write failed")
        if ending == "detach":
            st, _ = d.delete(f"/api/targets/{prog.pid}")
            t.eq(st, 200, f"{what}: DELETE of the parent")
        else:
            d.proc.kill()
            d.proc.wait()

        def all_down():
            a, b = sems(prog.pid, res), sems(child, res)
            return (a, b) if a is not None and b is not None and not any(a.values()) \
                and not any(b.values()) else None

        wait_for(all_down, timeout=15)
        for who, pid in (("parent", prog.pid), ("child", child)):
            v = sems(pid, res)
            t.check(v is not None, f"{what}: the {who} is alive")
            for n in NAMES:
                t.eq(v.get(n) if v else None, 0, f"{what}: the {who}'s {n} after the end")
    finally:
        if child:
            try:
                os.kill(child, 9)
            except ProcessLookupError:
                pass
        prog.kill()
        if ending == "detach":
            t.eq(d.stop(), 0, f"{what}: qprofd exits 0")


for collector in ("bpf", "ring"):
    for ending in ("detach", "sigkill"):
        run(collector, ending)
sys.exit(t.done())
