#!/usr/bin/env python3
"""GET /api/trace and qprof-cli trace for ring-collector targets (qprofd
--ring): the same known workload as test_trace.py (two named threads,
2000 x outer{10 us, inner{5 us}} each, and on worker0 every 10th iteration
a mark, a value and a log line).

1. seconds=N: exact counts per name, nesting against depth, monotonic times
   per thread, the kernel's thread names (the threads have exited by the
   end of the trace), durations adding up exactly to /api/scopes' totals,
   collector "ring"; the slowest instances of outer name their threads
   after the threads exited.
2. No seconds=: the flight recorder answers the same events at once (and
   qprof-cli trace without --seconds writes them); a second daemon with
   --flight-events 1000 keeps exactly the last 1000 instances.
3. Spans across threads in the flight recorder: 500 round trips of
   spans_target as "b"/"n"/"e" events, 500 of each, paired by id.

usage: test_trace_ring.py QPROFD TRACE_TARGET QPROF_CLI SPANS_TARGET"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin, cli, spans_bin = sys.argv[1:5]
require_root()
t = Failures("integration_trace_ring")
ITERS = 2000
TOTAL = 4 * ITERS + 3 * (ITERS // 10)


def ns(us):
    return int(round(us * 1000))


def collector_of(d, pid):
    st, status = d.get("/api/status")
    tg = [x for x in status["targets"] if x["pid"] == pid]
    return tg[0]["collector"] if tg else None


def check_events(doc, what, totals=None):
    ev = doc["traceEvents"]
    other = doc["otherData"]
    rest = [e for e in ev if e["ph"] != "M"]
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    t.eq(other["collector"], "ring", f"{what}: collector")
    t.eq(other["dropped_events"], 0, f"{what}: nothing dropped")
    t.eq(other["lost_events"], 0, f"{what}: nothing lost")
    t.eq(other["events"], len(rest), f"{what}: otherData.events = the events written")
    by = collections.Counter((e["ph"], e.get("cat"), e["name"]) for e in rest)
    t.eq(by[("X", "scope", "outer")], 2 * ITERS, f"{what}: X outer")
    t.eq(by[("X", "scope", "inner")], 2 * ITERS, f"{what}: X inner")
    t.eq(by[("i", "mark", "tick")], ITERS // 10, f"{what}: i tick")
    t.eq(by[("C", "value", "level")], ITERS // 10, f"{what}: C level")
    t.eq(by[("i", "log", "log")], ITERS // 10, f"{what}: i log")
    t.eq(sum(by.values()), TOTAL, f"{what}: no other event")
    t.eq(sorted(threads.values()), ["worker0", "worker1"], f"{what}: thread names, read while they lived")
    levels = sorted(e["args"]["value"] for e in rest if e["ph"] == "C")
    t.eq(levels, [float(i) for i in range(0, ITERS, 10)], f"{what}: counter values")
    last, mono = {}, True
    for e in rest:
        if e["ts"] < last.get(e["tid"], 0):
            mono = False
        last[e["tid"]] = e["ts"]
    t.check(mono, f"{what}: timestamps monotonic per thread")
    stacks, nest_ok = collections.defaultdict(list), True
    for e in rest:
        if e["ph"] != "X":
            continue
        st = stacks[e["tid"]]
        b, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        while st and st[-1] <= b:
            st.pop()
        if {"outer": 0, "inner": 1}.get(e["name"]) != len(st) or (st and end > st[-1]) or "args" in e:
            nest_ok = False
        st.append(end)
    t.check(nest_ok, f"{what}: nesting: outer at depth 0, inner at 1, no args")
    if totals:
        for name in ("outer", "inner"):
            total = sum(ns(e["dur"]) for e in rest if e["ph"] == "X" and e["name"] == name)
            t.eq(total, totals[name], f"{what}: sum of {name} durations = /api/scopes total_ns")


# 1 and 2: a window, then the flight recorder
prog = Target([target_bin, "--mode", "trace", "--iters", str(ITERS)])
d = Daemon(qprofd, ["--ring", "--pid", str(prog.pid)])
try:
    t.eq(collector_of(d, prog.pid), "ring", "the target is on the ring collector")
    out = {}

    def run():
        st, _, body = d.request("GET", f"/api/trace?pid={prog.pid}&seconds=5", timeout=120)
        out["status"], out["body"] = st, body
    th = threading.Thread(target=run)
    th.start()
    t.check(wait_for(lambda: d.get("/api/status")[1]["trace"]["active"] == 1, timeout=20),
            "the trace is being recorded")
    prog.start()
    mine = prog.result()
    th.join()
    t.eq(mine["outer"], 2 * ITERS, "the program's own count")
    t.eq(out.get("status"), 200, f"trace answers 200 ({out.get('body', b'')[:200]!r})")
    st, scopes = d.get(f"/api/scopes?pid={prog.pid}")
    totals = {r["name"]: r["total_ns"] for r in scopes["scopes"] if r["kind"] == "scope"}
    doc = json.loads(out.get("body") or b"{}")
    if t.check("traceEvents" in doc, "a window trace"):
        check_events(doc, "window", totals)
    # the flight recorder, at once
    st, _, body = d.request("GET", f"/api/trace?pid={prog.pid}")
    t.eq(st, 200, f"no seconds=: the flight recorder ({body[:200]!r})")
    if st == 200:
        check_events(json.loads(body), "flight recorder", totals)
    st, _, body = d.request("GET", "/api/trace")
    t.eq(st, 200, "no pid=, no seconds=: every ring target's recorder")
    # the CLI without --seconds
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "flight.json")
        r = subprocess.run([cli, "--socket", d.sock, "trace", "-o", f, "--pid", str(prog.pid)],
                           capture_output=True, text=True, timeout=60)
        t.eq(r.returncode, 0, f"qprof-cli trace without --seconds ({r.stderr.strip()})")
        t.check(f"{TOTAL} events" in r.stderr, f"qprof-cli says how many: {r.stderr.strip()}")
        with open(f) as fh:
            check_events(json.load(fh), "qprof-cli flight")
        r = subprocess.run([cli, "--socket", d.sock, "trace", "-o", f, "--pid", str(prog.pid), "--seconds",
                            "1"], capture_output=True, text=True, timeout=60)
        t.eq(r.returncode, 0, f"qprof-cli trace --seconds 1 of the idle target ({r.stderr.strip()})")
        t.check("0 events" in r.stderr, f"an idle window: {r.stderr.strip()}")
    st, status = d.get("/api/status")
    t.eq(status["trace"]["active"], 0, "no trace left running")
    # the start-up lines in a user's words: no chunk counts, no /proc path
    log = d.logtext()
    dl = [ln for ln in log.splitlines() if "libraries loaded later (dlopen) are probed as they load" in ln]
    t.check(dl and all("the dynamic loader /" in ln and "/proc/" not in ln for ln in dl),
            f"the loader's line names the file: {dl}")
    t.check("scope figures: room for 4096 scopes (one per process, scope and caller; --max-sites for more)"
            in log and "chunks preallocated" not in log, "the scope maps' line in words")
    # a ring target needs no calibration (measured when a target first
    # needs the BPF collector: integration_lazy_progs reads that line)
    t.check(not [ln for ln in log.splitlines() if "own cost" in ln], "no calibration for a ring target")
    # the slowest instances keep their threads' names after the threads exited
    st, slow = d.get(f"/api/scopes/slowest?pid={prog.pid}&name=outer&n=8")
    threads = {i.get("thread") for i in (slow or {}).get("instances", slow.get("items", []) if slow else [])}
    t.check(st == 200 and threads and threads <= {"worker0", "worker1"},
            f"slow: the exited threads' names kept: {st} {sorted(map(str, threads))}")
finally:
    prog.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")
    if t.failed:
        print(d.logtext(), file=sys.stderr)

# 2b. a small flight recorder keeps exactly the last N instances
prog = Target([target_bin, "--mode", "trace", "--iters", str(ITERS)])
d = Daemon(qprofd, ["--ring", "--flight-events", "1000", "--pid", str(prog.pid)])
try:
    prog.start()
    prog.result()
    want = 4 * ITERS + 2 * (ITERS // 10)  # instances: scopes, marks, values
    wait_for(lambda: sum(r["count"] for r in d.get(f"/api/scopes?pid={prog.pid}")[1]["scopes"]
                         if r["kind"] == "scope") >= 4 * ITERS, 10, 0.05)
    st, _, body = d.request("GET", f"/api/trace?pid={prog.pid}")
    t.eq(st, 200, "the small flight recorder answers")
    doc = json.loads(body) if st == 200 else {"traceEvents": []}
    rest = [e for e in doc["traceEvents"] if e["ph"] != "M" and e.get("cat") != "log"]
    t.eq(len(rest), 1000, f"--flight-events 1000: the last 1000 of {want} instances")
    st, _ = d.get("/api/trace?pid=1&seconds=1")
    t.eq(st, 404, "pid 1 is no target: 404")
finally:
    prog.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")

# 3. spans across threads in the ring's flight recorder
prog = Target([spans_bin, "--mode", "roundtrip", "--n", "500"])
d = Daemon(qprofd, ["--ring", "--pid", str(prog.pid)])
try:
    prog.start()
    prog.result()
    wait_for(lambda: any(r["name"] == "order_rt" and r["count"] >= 500
                         for r in d.get(f"/api/scopes?pid={prog.pid}")[1]["scopes"]), 10, 0.05)
    st, _, body = d.request("GET", f"/api/trace?pid={prog.pid}")
    t.eq(st, 200, "spans: the flight recorder answers")
    doc = json.loads(body) if st == 200 else {"traceEvents": []}
    sp = [e for e in doc["traceEvents"] if e.get("cat") == "span"]
    by = collections.Counter((e["ph"], e["name"]) for e in sp)
    t.eq(by[("b", "order_rt")], 500, "500 b order_rt")
    t.eq(by[("e", "order_rt")], 500, "500 e order_rt")
    t.eq(by[("n", "order_rt")], 500, "500 n order_rt (step sent)")
    t.eq(len(sp), 1500, "no other span event")
    t.check(all(e["args"]["step"] == "sent" for e in sp if e["ph"] == "n"), "steps named in args")
    begins = {e["id2"]["local"]: ns(e["ts"]) for e in sp if e["ph"] == "b"}
    ends = {e["id2"]["local"]: ns(e["ts"]) for e in sp if e["ph"] == "e"}
    t.eq(len(begins), 500, "500 ids")
    t.eq(set(begins), set(ends), "each b has its e (same id)")
    t.check(all(ends[i] - begins[i] >= 50000 for i in begins), "each span lasts the 50 us slept")
    t.check(all(e["scope"] == "order_rt" for e in sp), "the id's scope is the span's name")
finally:
    prog.finish()
    prog.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
