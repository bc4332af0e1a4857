#!/usr/bin/env python3
"""Snapshot, then build: no lock that GET /api/status needs is held across
slow work. While a trace model of over a million events is named and
sorted (GET /api/trace of a ring target's flight recorder, asked again and
again), a 5 s CPU window of 999 Hz samples is unwound (the samples carry
stack copies: --unwind dwarf, the default) and an exit report is written,
GET /api/status is asked every 20 ms over one kept-alive connection.

What is asserted is measured inside qprofd: the time each status request's
thread spent waiting for the daemon's shared locks (the registry's, the CPU
collector's; http.routes[].lock_wait_us of /api/status, a histogram), whose
99th percentile over the requests made during the load must stay under
50 ms, corrected for coordinated omission (a request that waited W stands
also for those a 20 ms schedule would have sent meanwhile: one poller
alone sees a lock held for a second as one slow answer in hundreds). That figure does not grow when the machine is merely loaded (a
thread waiting for a CPU is not waiting for a lock), so it cannot flake on
a busy 2-core CI machine; with a lock held while the trace is sorted it is
seconds. The client's wall-clock times, and the handler's own time inside
qprofd, are printed beside it, not gated (they include the scheduler's).

usage: test_lock_wait.py QPROFD STACKS_TARGET RING_EXACT_TARGET"""
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, UnixHTTPConnection, _started, require_root, wait_for  # noqa: E402

qprofd, stacks_bin, ring_bin = sys.argv[1:4]
require_root()
t = Failures("integration_lock_wait")
LOCK_P99_US = 50000   # the bound on the lock waits' 99th percentile
INTERVAL_US = 20000   # the status is asked every 20 ms
EVENTS = 1100000      # scopes the ring target runs: the trace holds over a million


def start_stacks():
    # niced: its spinning threads must not starve qprofd on a 2-CPU machine
    p = subprocess.Popen([stacks_bin], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         preexec_fn=lambda: os.nice(19))
    _started.append(p)
    return p, json.loads(p.stdout.readline())["pid"]


def status_route(status):
    for r in status["http"].get("routes", []):
        if r["route"] == "/api/status":
            return r
    return None


def buckets(route, key):
    return {le: n for le, n in (route[key]["buckets"] if route else [])}


def corrected(hist, interval_us):
    """The waits as a client asking every INTERVAL_US regardless of answers
    would have seen them (HdrHistogram's correction for coordinated
    omission): a status request that waited W for a lock stands also for
    the requests not asked meanwhile, which would have waited W - interval,
    W - 2 interval, ... A lone poller otherwise sees a lock held for a
    second as one slow answer in hundreds, under any percentile."""
    out = dict(hist)
    for le, n in hist.items():
        v = le - interval_us
        while v > 0:
            out[v] = out.get(v, 0) + n
            v -= interval_us
    return out


def quantile(hist, q):
    """The bound of the bucket holding the Q-th fraction (as qprofd's p99)."""
    n = sum(hist.values())
    want, seen = max(1, int(q * n + 0.999999)), 0
    for le in sorted(hist):
        seen += hist[le]
        if seen >= want:
            return le
    return 0


prog_a, pid_a = start_stacks()
prog_b, pid_b = start_stacks()
ring = subprocess.Popen([ring_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
_started.append(ring)


def ring_cmd(line, timeout=120):
    ring.stdin.write(line + "\n")
    ring.stdin.flush()
    return json.loads(ring.stdout.readline())


pid_r = ring_cmd("pid")["pid"]
d = Daemon(qprofd, ["--pid", str(pid_a), "--pid", str(pid_b), "--pid", str(pid_r), "--frequency", "999",
                    "--ring-records", str(1 << 21), "--flight-events", str(EVENTS)])
reports = os.path.join(d.dir, "reports")
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    # a million scopes into the ring target's flight recorder
    res = ring_cmd(f"burst 1 {EVENTS}")
    t.eq(res["written"], EVENTS, "the ring target ran its scopes")
    wait_for(lambda: sum(r["count"] for r in d.get(f"/api/scopes?pid={pid_r}")[1].get("scopes", [])
                         if r["name"] == "exact") >= EVENTS, timeout=120, step=0.5)
    wait_for(lambda: d.get("/api/status")[1]["cpu"]["samples"] >= 2000, timeout=60, step=0.5)

    results = multiprocessing.Queue()

    def trace_loop(stop_at):
        # the trace model built again and again: each names and sorts the
        # flight recorder's million events
        n = 0
        while time.monotonic() < stop_at:
            c = UnixHTTPConnection(d.sock, 300)
            t0 = time.monotonic()
            c.request("GET", f"/api/trace?pid={pid_r}")
            r = c.getresponse()
            events, tail = 0, b""
            while True:
                chunk = r.read(1 << 20)
                if not chunk:
                    break
                events += (tail + chunk).count(b'"ph":') - tail.count(b'"ph":')
                tail = chunk[-8:]
            c.close()
            results.put(("trace", r.status, events, time.monotonic() - t0))
            n += 1

    def window():
        t0 = time.monotonic()
        st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid_a}&seconds=5", timeout=300)
        results.put(("window", st, len(body.splitlines()), time.monotonic() - t0))

    def report_written():
        if not os.path.isdir(reports):
            return None
        for n in os.listdir(reports):
            if n.startswith(f"{pid_b}-") and os.path.exists(os.path.join(reports, n, "summary.txt")):
                return n
        return None

    st, before = d.get("/api/status")
    lock0 = buckets(status_route(before), "lock_wait_us")
    hand0 = buckets(status_route(before), "handling_us")
    tracer = multiprocessing.Process(target=trace_loop, args=(time.monotonic() + 8,))
    tracer.start()
    time.sleep(1.0)   # the first trace is being built
    win = multiprocessing.Process(target=window)
    win.start()
    time.sleep(1.0)
    os.kill(pid_b, signal.SIGKILL)   # its report is written while the window and traces run
    prog_b.wait()
    conn = UnixHTTPConnection(d.sock, 120)
    lat = []
    deadline = time.monotonic() + 240   # a generous bound on the whole, not a measurement
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        conn.request("GET", "/api/status")
        r = conn.getresponse()
        body = r.read()
        lat.append((time.monotonic() - t0) * 1000.0)
        t.eq(r.status, 200, "status answers")
        last = json.loads(body)
        if not tracer.is_alive() and not win.is_alive() and report_written():
            break
        time.sleep(0.02)
    conn.close()
    tracer.join(timeout=300)
    win.join(timeout=60)
    got = {}
    while not results.empty():
        name, st, n, secs = results.get()
        got.setdefault(name, []).append((st, n, secs))
    traces = got.get("trace", [])
    print("traces: " + ", ".join(f"{st} {n} events {s:.1f} s" for st, n, s in traces))
    t.check(len(traces) >= 1, "a trace was built during the load")
    t.check(all(st == 200 for st, _, _ in traces), "every trace answers 200")
    t.check(traces and max(n for _, n, _ in traces) >= 1000000, "a trace holds over a million events")
    wst, wlines, wsecs = got.get("window", [(0, 0, 0)])[0]
    t.eq(wst, 200, "the 5 s window answers")
    t.check(wlines > 10, f"the window holds stacks ({wlines})")
    rep = report_written()
    t.check(rep is not None, f"B's report was written (in {reports})")

    # inside qprofd: the status requests made during the load (after minus before)
    route = status_route(last)
    t.check(route is not None, "/api/status has its figures in http.routes")
    lock = {le: n - lock0.get(le, 0) for le, n in buckets(route, "lock_wait_us").items()}
    hand = {le: n - hand0.get(le, 0) for le, n in buckets(route, "handling_us").items()}
    lock = {le: n for le, n in lock.items() if n}
    nreq = sum(lock.values())
    lockc = corrected(lock, INTERVAL_US)
    p99 = quantile(lockc, 0.99)
    lat.sort()
    print(f"status during the load: {nreq} requests; inside qprofd: lock waits p99 {p99 / 1000:.1f} ms "
          f"(as asked every {INTERVAL_US // 1000} ms: {sum(lockc.values())} requests; uncorrected "
          f"{quantile(lock, 0.99) / 1000:.1f} ms) "
          f"(bound {LOCK_P99_US / 1000:.0f} ms), max {max(lock) / 1000 if lock else 0:.1f} ms; handling p99 "
          f"{quantile(hand, 0.99) / 1000:.1f} ms; at the client: median {lat[len(lat) // 2]:.1f} ms, "
          f"p99 {lat[(len(lat) * 99) // 100]:.1f} ms, max {lat[-1]:.1f} ms (printed, not gated)", flush=True)
    t.check(nreq >= 50, f"status asked often enough during the load ({nreq} times)")
    t.check(p99 < LOCK_P99_US, f"99 % of the status requests waited under {LOCK_P99_US / 1000:.0f} ms "
            f"for locks (99th percentile {p99 / 1000:.1f} ms)")
finally:
    for p in (prog_a, prog_b):
        if p.poll() is None:
            p.kill()
            p.wait()
    if ring.poll() is None:
        ring.stdin.write("quit\n")
        ring.stdin.flush()
        try:
            ring.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ring.kill()
            ring.wait()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
