#!/usr/bin/env python3
"""No lock held across slow work (issue 8): while CPU profiles are built
(a 5 s window, GET /api/cpu/folded?seconds=5, and a whole-run flame graph,
over thousands of distinct stacks) and an exit report (five files and an
SVG) is written, GET /api/status answers within 100 ms, every time.

Two programs walk random call paths (2^20 distinct stacks) sampled at
4000 Hz: A keeps running and is profiled for 5 s; B collects samples for a
few seconds and is killed, so its report is written, and its flame graph
asked for, during A's window. The
status is asked every 20 ms from before the window starts until the window,
the flame graphs and B's report are all done. The bound is the issue's:
100 ms for the slowest status answer (a generous one for a request that
takes a lock and reads a few counters: ~1-5 ms here). Before this change
the registry lock was held while a profile was built and a report written,
and the slowest status answer waited for them (seconds on main).

usage: test_lock_latency.py QPROFD STACKS_TARGET"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root, wait_for  # noqa: E402

qprofd, stacks_bin = sys.argv[1:3]
require_root()
t = Failures("integration_lock_latency")
BOUND_MS = 100.0


def start_prog():
    # niced: its two spinning threads must not starve qprofd and this client
    # on a 2-CPU machine (the latency measured is the lock's, not the CPU's)
    p = subprocess.Popen([stacks_bin], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         preexec_fn=lambda: os.nice(19))
    _started.append(p)
    return p, json.loads(p.stdout.readline())["pid"]


prog_a, pid_a = start_prog()
prog_b, pid_b = start_prog()
d = Daemon(qprofd, ["--pid", str(pid_a), "--pid", str(pid_b), "--frequency", "4000"])
reports = os.path.join(d.dir, "reports")
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    # samples on many distinct stacks first, so that a build has work to do
    wait_for(lambda: d.get("/api/status")[1]["cpu"]["samples"] >= 12000, timeout=60, step=0.5)

    slow = {}   # what each slow request answered and how long it took

    def window():
        t0 = time.monotonic()
        st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid_a}&seconds=5", timeout=120)
        slow["window"] = (st, len(body.splitlines()), time.monotonic() - t0)

    def flame():
        t0 = time.monotonic()
        st, _, body = d.request("GET", f"/api/cpu/flamegraph?pid={pid_b}", timeout=120)
        slow["flamegraph"] = (st, len(body), time.monotonic() - t0)

    def report_written():
        if not os.path.isdir(reports):
            return None
        for n in os.listdir(reports):
            if n.startswith(f"{pid_b}-") and os.path.exists(os.path.join(reports, n, "summary.txt")):
                return n
        return None

    lat = []
    threads = [threading.Thread(target=window)]
    threads[0].start()
    time.sleep(1.0)
    os.kill(pid_b, signal.SIGKILL)   # its report is written while A's window runs
    prog_b.wait()
    # and B's whole-run flame graph is built meanwhile too
    threads.append(threading.Thread(target=flame))
    threads[1].start()
    deadline = time.monotonic() + 180  # a generous bound on the whole, not a measurement
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        st, status = d.get("/api/status", timeout=60)
        lat.append((time.monotonic() - t0) * 1000.0)
        t.eq(st, 200, "status answers")
        if not any(th.is_alive() for th in threads) and report_written():
            break
        time.sleep(0.02)
    for th in threads:
        th.join(timeout=120)
    rep = report_written()
    t.check(rep is not None, f"B's report was written (in {reports})")
    if rep:
        for f in ("summary.txt", "report.json", "scopes.json", "cpu.folded", "cpu.svg"):
            t.check(os.path.getsize(os.path.join(reports, rep, f)) > 0, f"report file {f} not empty")
        with open(os.path.join(reports, rep, "cpu.folded")) as f:
            t.check(len(f.readlines()) > 1000, "B's report holds thousands of stacks")
    t.eq(slow.get("window", (0,))[0], 200, "the 5 s window answers")
    t.check(slow.get("window", (0, 0))[1] > 100, "the window holds hundreds of stacks")
    t.eq(slow.get("flamegraph", (0,))[0], 200, "B's flame graph answers")
    lat.sort()
    print("slow requests: " + ", ".join(f"{k} {v[2] * 1000:.0f} ms" for k, v in sorted(slow.items())))
    print(f"status: {len(lat)} answers during them, median {lat[len(lat) // 2]:.1f} ms, "
          f"max {lat[-1]:.1f} ms (bound {BOUND_MS:.0f} ms)", flush=True)
    t.check(len(lat) >= 50, f"status asked often enough ({len(lat)} times)")
    t.check(lat[-1] < BOUND_MS, f"every status answered within {BOUND_MS:.0f} ms (max {lat[-1]:.1f} ms)")
    t.check(f"report of pid {pid_b}" in d.logtext(), "the report is logged")
finally:
    for p in (prog_a, prog_b):
        if p.poll() is None:
            p.kill()
            p.wait()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
