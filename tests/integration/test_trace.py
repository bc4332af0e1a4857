#!/usr/bin/env python3
"""GET /api/trace and qprof-cli trace end to end (BPF collector): a program
with a known workload on two named threads, recorded while it runs. Exact
counts per scope name, mark, value and log; nesting consistent with depth;
timestamps monotonic per thread; thread and process names from the kernel;
the durations add up to /api/scopes' total exactly; one trace per target
(409); no seconds= is a 400 saying why, so are a bad format= or max_mb=
(at once); the cap drops and says how many;
a ring buffer too small loses records, and kept + lost = emitted exactly.

usage: test_trace.py QPROFD TRACE_TARGET QPROF_CLI"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_trace")
ITERS = 2000


def ns(us):
    """A 1234.567 us figure (three decimals) back to integer ns."""
    return int(round(us * 1000))


def start_trace(d, query, out):
    def run():
        st, _, body = d.request("GET", "/api/trace?" + query, timeout=120)
        out["status"] = st
        out["body"] = body
    th = threading.Thread(target=run)
    th.start()
    return th


def trace_active(d):
    return d.get("/api/status")[1]["trace"]["active"]


def check_trace(doc, prog_pid, mine, scopes_total):
    ev = doc["traceEvents"]
    other = doc["otherData"]
    t.eq(other["dropped_events"], 0, "nothing dropped")
    t.eq(other["lost_events"], 0, "nothing lost")
    t.eq(other["collector"], "bpf", "collector")
    meta = [e for e in ev if e["ph"] == "M"]
    rest = [e for e in ev if e["ph"] != "M"]
    t.eq(other["events"], len(rest), "otherData.events = the events written")
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    t.eq(procs, {prog_pid: "trace_target"}, "process_name from the kernel")
    t.eq(sorted(threads.values()), ["worker0", "worker1"], "thread_name of each worker (its comm)")
    by = collections.Counter((e["ph"], e.get("cat"), e["name"]) for e in rest)
    t.eq(by[("X", "scope", "outer")], 2 * ITERS, "X outer count")
    t.eq(by[("X", "scope", "inner")], 2 * ITERS, "X inner count")
    t.eq(by[("i", "mark", "tick")], ITERS // 10, "i tick count")
    t.eq(by[("C", "value", "level")], ITERS // 10, "C level count")
    t.eq(by[("i", "log", "log")], ITERS // 10, "i log count")
    t.eq(sum(by.values()), 4 * ITERS + 3 * (ITERS // 10), "no other event")
    t.eq(mine["outer"], 2 * ITERS, "program's own outer count")
    t.eq(mine["marks"], ITERS // 10, "program's own marks")
    levels = sorted(e["args"]["value"] for e in rest if e["ph"] == "C")
    t.eq(levels, [float(i) for i in range(0, ITERS, 10)], "counter values are the iterations")
    msgs = sorted(e["args"]["message"] for e in rest if e.get("cat") == "log")
    t.eq(msgs, sorted(f"iter {i}" for i in range(0, ITERS, 10)), "log messages in args")
    t.check(all(e["tid"] in threads for e in rest), "every event's thread is named")
    # timestamps: monotonic per thread in file order; events in the window
    last = {}
    mono = True
    for e in rest:
        if e["ts"] < last.get(e["tid"], 0):
            mono = False
        last[e["tid"]] = e["ts"]
    t.check(mono, "timestamps monotonic per thread")
    # nesting: a stack per thread
    stacks = collections.defaultdict(list)
    nest_ok = True
    for e in rest:
        if e["ph"] != "X":
            continue
        st = stacks[e["tid"]]
        b, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        while st and st[-1] <= b:
            st.pop()
        # the depth is the open scopes around it (the file carries none:
        # speedscope would append it to the frame's name)
        if {"outer": 0, "inner": 1}.get(e["name"]) != len(st) or (st and end > st[-1]) or "args" in e:
            nest_ok = False
        st.append(end)
    t.check(nest_ok, "nesting consistent: inner inside outer on its thread, depths 0 and 1")
    # the same instances as the aggregates: durations add up exactly
    for name in ("outer", "inner"):
        total = sum(ns(e["dur"]) for e in rest if e["ph"] == "X" and e["name"] == name)
        t.eq(total, scopes_total[name], f"sum of {name} durations = /api/scopes total_ns")


prog = Target([target_bin, "--mode", "trace", "--iters", str(ITERS)])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
try:
    st, status = d.get("/api/status")
    t.eq(status["trace"]["running"], True, "status: trace recorder running")
    t.eq(status["trace"]["active"], 0, "status: no trace yet")
    sessions0 = status["trace"]["sessions"]  # the calibration's, at start
    # bad requests
    st, body = d.get(f"/api/trace?pid={prog.pid}")
    t.eq(st, 400, "no seconds=: 400")
    t.check("seconds=" in body.get("error", ""), f"the 400 says seconds= is needed: {body}")
    for q, want in ((f"pid={prog.pid}&seconds=x", 400), ("pid=-1&seconds=1", 400),
                    ("pid=999999&seconds=1", 404), ("seconds=1&follow=1", 400)):
        st, _ = d.get("/api/trace?" + q)
        t.eq(st, want, f"/api/trace?{q}")
    # format= and max_mb= are checked before anything is recorded (at once,
    # no session started)
    for q, words in (("format=perfetto", "format must be chrome"), ("format=", "format must be chrome"),
                     ("max_mb=0", "max_mb must be an integer in 1..4096"),
                     ("max_mb=4097", "max_mb must be an integer"), ("max_mb=1.5", "max_mb must be"),
                     ("max_mb=", "max_mb must be")):
        st, body = d.get(f"/api/trace?pid={prog.pid}&seconds=300&{q}")
        t.check(st == 400 and words in (body or {}).get("error", ""), f"/api/trace?{q}: {st} {body}")
    t.eq(d.get("/api/status")[1]["trace"]["sessions"], sessions0, "no session started by a bad request")

    out = {}
    th = start_trace(d, f"pid={prog.pid}&seconds=5", out)
    t.check(wait_for(lambda: trace_active(d) == 1, timeout=20), "the trace is being recorded")
    st, body = d.get(f"/api/trace?pid={prog.pid}&seconds=1")
    t.eq(st, 409, "a second trace of the same target: 409")
    st, body = d.get("/api/trace?seconds=1")
    t.eq(st, 409, "a trace of every target while one is recorded: 409")
    prog.start()
    mine = prog.result()
    th.join()
    t.eq(out.get("status"), 200, f"trace answers 200 ({out.get('body', b'')[:200]!r})")
    st, scopes = d.get(f"/api/scopes?pid={prog.pid}")
    totals = {r["name"]: r["total_ns"] for r in scopes["scopes"] if r["kind"] == "scope"}
    try:
        doc = json.loads(out.get("body") or b"{}")
    except ValueError as e:
        doc = {}
        t.check(False, f"the trace is JSON: {e}")
    if t.check("traceEvents" in doc, "traceEvents"):
        check_trace(doc, prog.pid, mine, totals)
    st, status = d.get("/api/status")
    t.eq(status["trace"]["active"], 0, "status: the trace ended")
    t.eq(status["trace"]["sessions"] - sessions0, 1, "status: one more session")
    t.eq(status["trace"]["lost"], 0, "status: nothing lost")

    # the CLI: an idle target gives an empty, valid trace; usage errors
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "t.json")
        r = subprocess.run([cli, "--socket", d.sock, "trace", "-o", f, "--pid", str(prog.pid),
                            "--seconds", "1"], capture_output=True, text=True, timeout=60)
        t.eq(r.returncode, 0, f"qprof-cli trace exit code ({r.stderr.strip()})")
        t.check("0 events" in r.stderr, f"qprof-cli trace says how many events: {r.stderr.strip()}")
        with open(f) as fh:
            cdoc = json.load(fh)
        t.eq(cdoc["traceEvents"], [], "an idle window: no event")
        r = subprocess.run([cli, "--socket", d.sock, "trace", "--seconds", "1"], capture_output=True,
                           text=True, timeout=60)
        t.eq(r.returncode, 2, "qprof-cli trace without -o: usage error")
        r = subprocess.run([cli, "--socket", d.sock, "trace", "-o", f], capture_output=True, text=True,
                           timeout=60)
        t.eq(r.returncode, 1, "qprof-cli trace without --seconds on a BPF target fails")
        t.check("seconds=" in r.stderr, f"... saying why: {r.stderr.strip()}")
        r = subprocess.run([cli, "trace", "--help"], capture_output=True, text=True, timeout=60)
        t.eq(r.returncode, 0, "qprof-cli trace --help")
        t.check("Usage: qprof-cli trace" in r.stdout, "help text")
finally:
    prog.kill()
    d.stop()

# the cap: 100 events kept of a workload of known size, the rest counted
SMALL = 200
prog = Target([target_bin, "--mode", "trace", "--iters", str(SMALL)])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--trace-max-events", "100"])
try:
    out = {}
    th = start_trace(d, "seconds=4", out)
    t.check(wait_for(lambda: trace_active(d) == 1, timeout=20), "the capped trace is being recorded")
    prog.start()
    prog.result()
    th.join()
    t.eq(out.get("status"), 200, "capped trace answers 200")
    doc = json.loads(out.get("body") or b"{}")
    rest = [e for e in doc.get("traceEvents", []) if e["ph"] != "M"]
    total = 4 * SMALL + 3 * (SMALL // 10)
    t.eq(doc["otherData"]["events"], 100, "capped: 100 events kept")
    t.eq(doc["otherData"]["dropped_events"], total - 100, "capped: the rest counted as dropped")
    drop = [e for e in rest if e["name"] == "qprof: events dropped"]
    t.eq(len(drop), 1, "capped: one event says so in the timeline")
    if drop:
        t.eq(drop[0]["args"]["dropped_events"], total - 100, "capped: its count")
    t.eq(len(rest), 101, "capped: 100 events and the notice")
finally:
    prog.kill()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0")
    if t.failed:
        print(d.logtext(), file=sys.stderr)

# losses: a ring buffer of 4 KiB (about 85 records) against two threads
# emitting ~250 000 records/s between two drains 5 ms apart. What is kept
# plus what is counted lost is exactly what the program emitted.
os.environ["QPROF_TRACE_RB_BYTES"] = "4096"
prog = Target([target_bin, "--mode", "trace", "--iters", str(ITERS)])
try:
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
finally:
    del os.environ["QPROF_TRACE_RB_BYTES"]
try:
    st, status = d.get("/api/status")
    lost0 = status["trace"]["lost"]  # the calibration's, if its records did not fit
    out = {}
    th = start_trace(d, f"pid={prog.pid}&seconds=5", out)
    t.check(wait_for(lambda: trace_active(d) == 1, timeout=20), "the lossy trace is being recorded")
    prog.start()
    prog.result()
    th.join()
    t.eq(out.get("status"), 200, "lossy trace answers 200")
    doc = json.loads(out.get("body") or b"{}")
    other = doc.get("otherData", {})
    rest = [e for e in doc.get("traceEvents", []) if e["ph"] != "M" and e.get("cat") != "qprof"]
    lost = other.get("lost_events", 0)
    print(f"lossy trace: {other.get('events')} events kept, {lost} lost", flush=True)
    t.check(lost > 0, "a 4 KiB ring buffer loses records")
    t.eq(other.get("events", 0) + lost, 4 * ITERS + 3 * (ITERS // 10), "kept + lost = emitted, exactly")
    t.eq(len(rest), other.get("events"), "otherData.events = the events written")
    drop = [e for e in doc.get("traceEvents", []) if e.get("cat") == "qprof"]
    t.check(len(drop) == 1 and drop[0]["args"]["lost_events"] == lost, "the timeline says how many were lost")
    st, status = d.get("/api/status")
    t.eq(status["trace"]["lost"] - lost0, lost, "/api/status counts the same losses")
finally:
    prog.kill()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0")
    if t.failed:
        print(d.logtext(), file=sys.stderr)
sys.exit(t.done())
