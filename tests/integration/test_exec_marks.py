#!/usr/bin/env python3
"""100 execs in a row of a target with a scope, a mark and a value: the
old images' rows go with them. After the last exec /api/scopes,
/api/values, /metrics and the exit report hold one row per site, the last
image's (10 hits each), none named by a raw address. Before the fix the
BPF collector kept every image's marks and values: 100 stale rows of
each, named 0x....

usage: test_exec_marks.py QPROFD EDGE_TARGET [EXECS]"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import collector_args, Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, edge = sys.argv[1:3]
execs = int(sys.argv[3]) if len(sys.argv) > 3 else 100
require_root()
t = Failures("integration_exec_marks")


def run(collector):
    what = f"{collector}, {execs} execs"
    prog = Target([edge, "--mode", "execloop", "-n", str(execs)])
    d = Daemon(qprofd, ["--pid", str(prog.pid), *collector_args(qprofd, collector)])
    try:
        st = d.get("/api/status")[1]
        t.eq([x.get("collector") for x in st["targets"] if x["pid"] == prog.pid], [collector],
             f"{what}: the target's collector")
        prog.start()
        t.eq(prog.result().get("last_image"), prog.pid, f"{what}: the last image runs")
        lc = wait_for(lambda: (lambda l: l if l.get("execs", 0) >= execs else None)(
            d.get("/api/status")[1].get("lifecycle") or {}), timeout=30)
        t.check(lc is not None, f"{what}: every exec seen")

        def rows():
            sc = [r for r in d.get(f"/api/scopes?pid={prog.pid}")[1]["scopes"]]
            va = d.get(f"/api/values?pid={prog.pid}")[1]["values"]
            return sc, va

        # the last image's 10 hits of each site, once they are polled
        def settled():
            sc, va = rows()
            c = {(r["kind"], r["name"]): r["count"] for r in sc}
            ok = c.get(("mark", "edge_mark")) == 10 and c.get(("scope", "edge_work")) == 10 and \
                [v["count"] for v in va if v["name"] == "edge_value"] == [10]
            return (sc, va) if ok else None

        wait_for(settled, timeout=10)
        sc, va = rows()
        t.eq(sorted((r["kind"], r["name"], r["count"]) for r in sc),
             [("mark", "edge_mark", 10), ("scope", "edge_work", 10)], f"{what}: /api/scopes rows")
        t.eq([(v["name"], v["count"]) for v in va], [("edge_value", 10)], f"{what}: /api/values rows")
        st, _, body = d.request("GET", "/metrics")
        text = body.decode()
        mine = [ln for ln in text.splitlines() if not ln.startswith("#") and "0x" in ln]
        t.eq(mine[:3], [], f"{what}: /metrics names no site by address")
        marks = [ln for ln in text.splitlines() if not ln.startswith("#") and "name=\"edge_mark\"" in ln]
        t.check(1 <= len(marks) <= 2, f"{what}: /metrics has the mark once ({len(marks)} lines)")
        os.kill(prog.pid, signal.SIGUSR2)
        prog.proc.wait(timeout=30)

        def exited_ms():
            x = [x for x in d.get("/api/status")[1]["targets"] if x["pid"] == prog.pid]
            return x[0]["exited_ms"] if x and x[0]["state"] == "exited" else None

        ended = wait_for(exited_ms, timeout=15)
        t.check(ended is not None, f"{what}: the last image seen exited")

        def report():  # the last image's, not the one before its exec
            s, r = d.get(f"/api/report?pid={prog.pid}&format=json")
            return r if s == 200 and ended and r.get("exited_ms", 0) >= ended else None

        rep = wait_for(report, timeout=15)
        t.check(rep is not None, f"{what}: an exit report")
        if rep:
            names = sorted((r["kind"], r["name"], r["count"]) for r in rep["scopes"]["by_count"])
            t.eq(names, [("mark", "edge_mark", 10), ("scope", "edge_work", 10)],
                 f"{what}: the exit report's rows")
    finally:
        prog.kill()
        t.eq(d.stop(), 0, f"{what}: qprofd exits 0")


for collector in ("bpf", "ring"):
    run(collector)
sys.exit(t.done())
