#!/usr/bin/env python3
"""Values, logs and marks end to end, against exactly known sequences:
QPROF_VALUE statistics (non-finite values counted apart), QPROF_MARK counts
in /api/scopes, QPROF_LOG messages in order at a moderate rate, a message cut
at the limit and marked, a flood where received + counted losses = sent, and
a follow=1 stream that delivers messages as they come and survives a client
that hangs up.

usage: test_markers.py QPROFD SCOPE_TARGET QPROF_CLI MARKERS_TARGET"""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, _, cli, markers = sys.argv[1:5]
require_root()
t = Failures("integration_markers")


def ndjson(body):
    return [json.loads(l) for l in body.decode().splitlines() if l.strip()]


# values and marks
prog = Target([markers, "values"])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
try:
    prog.start()
    prog.result()
    st, body = d.get(f"/api/values?pid={prog.pid}")
    t.eq(st, 200, "values answers")
    rows = {r["name"]: r for r in body["values"]}
    v = rows.get("v")
    if t.check(v is not None, "value v listed"):
        t.eq(v["count"], 1000, "finite count")
        t.eq((v["nan"], v["pos_inf"], v["neg_inf"]), (3, 2, 1), "non-finite counted apart")
        t.eq((v["min"], v["max"]), (1.0, 1000.0), "exact min and max")
        t.eq(v["last"], 1000.0, "last")
        t.near(v["mean"], 500.5, 0.001, "mean")
        t.near(v["p50"], 500, 0.001, "p50")
        t.near(v["p99"], 990, 0.001, "p99")
        t.check(v["file"].endswith("markers_target.c") and v["line"] > 0, "file and line")
    st, body = d.get(f"/api/scopes?pid={prog.pid}")
    marks = [r for r in body["scopes"] if r["kind"] == "mark"]
    t.eq([(m["name"], m["count"]) for m in marks], [("tick", 777)], "mark counted exactly")
    if marks:
        t.eq(marks[0]["p50_ns"], None, "a mark has no durations")
        t.check(marks[0]["rate_per_s"] > 0, "a mark has a rate")
    st, hdrs, body = d.request("GET", "/metrics")
    t.eq(st, 200, "/metrics answers")
    t.check(hdrs.get("Content-Type", "").startswith("text/plain; version=0.0.4"), "Prometheus content type")
    text = body.decode()
    exe = os.path.basename(markers)
    t.check(f'qprof_value{{exe="{exe}",name="v",quantile="1"}} 1000\n' in text, "metrics: value max")
    t.check(f'qprof_value_count{{exe="{exe}",name="v"}} 1000\n' in text, "metrics: value count")
    t.check(f'qprof_events_total{{exe="{exe}",name="tick",kind="mark"}} 777\n' in text, "metrics: mark count")
    t.check("qprof_up 1\n" in text and "# TYPE qprof_events_total counter" in text, "metrics header")
    out = subprocess.run([cli, "--socket", d.sock, "values", "--pid", str(prog.pid)],
                         capture_output=True, text=True, timeout=60)
    t.eq(out.returncode, 0, "qprof-cli values")
    t.check(" v " in out.stdout and "1000" in out.stdout and "500.5" in out.stdout,
            f"qprof-cli values shows v: {out.stdout!r}")
finally:
    prog.finish()
    t.eq(d.stop(), 0, "qprofd exits 0")

# logs at a moderate rate: all of them, in order; the long one cut and marked
N = 2000
prog = Target([markers, "logs", str(N)])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
try:
    # a follow stream opened before the messages exist
    fs = socket.socket(socket.AF_UNIX)
    fs.connect(d.sock)
    fs.sendall(f"GET /api/logs?pid={prog.pid}&follow=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    prog.start()
    prog.result()
    ok = wait_for(lambda: d.get("/api/status")[1]["logs"]["received"] >= N + 1, timeout=20)
    t.check(ok, "all messages received")
    st, _, body = d.request("GET", f"/api/logs?pid={prog.pid}")
    t.eq(st, 200, "logs answers")
    lines = ndjson(body)
    msgs = [l for l in lines if "seq" in l]
    t.eq(len(msgs), N + 1, "every message delivered")
    t.eq([m["message"] for m in msgs[:N]], [f"msg {i}" for i in range(N)], "in order, none missing")
    t.eq(sorted(m["seq"] for m in msgs), [m["seq"] for m in msgs], "sequence increases")
    t.check(all(m["pid"] == prog.pid and m["tid"] == prog.pid for m in msgs), "pid and tid")
    t.check(all(m["file"].endswith("markers_target.c") and m["function"] == "main" for m in msgs),
            "file and function")
    if msgs:
        last = msgs[-1]
        t.eq(last["truncated"], True, "the long message is marked truncated")
        t.eq(len(last["message"]), 255, "cut at the limit (255 characters + NUL)")
        t.check(last["message"].startswith("long xxx"), "the cut message keeps its start")
    # since= gives only what is newer
    st, _, body = d.request("GET", f"/api/logs?since={msgs[N - 10]['seq']}")
    t.eq(len([l for l in ndjson(body) if "seq" in l]), 10, "since= returns the newer ones")
    # the follow stream got them too (chunked); then the client hangs up
    fs.settimeout(10)
    got = b""
    deadline = time.time() + 15
    while got.count(b'"seq"') < N + 1 and time.time() < deadline:
        try:
            chunk = fs.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        got += chunk
    t.check(got.startswith(b"HTTP/1.1 200"), "follow stream answers 200")
    t.eq(got.count(b'"seq"'), N + 1, "follow stream delivered every message as it came")
    fs.close()
    for bad, want in (("/api/logs?since=-1", 400), ("/api/logs?follow=2", 400), ("/api/logs?since=x", 400)):
        st, _, _ = d.request("GET", bad)
        t.eq(st, want, f"GET {bad}")
    out = subprocess.run([cli, "--socket", d.sock, "logs", "--pid", str(prog.pid)],
                         capture_output=True, text=True, timeout=60)
    t.eq(out.returncode, 0, "qprof-cli logs")
    t.eq(out.stdout.count("\n"), N + 1, "qprof-cli logs prints every message")
    t.check("msg 1999" in out.stdout and "[...]" in out.stdout, "qprof-cli logs shows text and the cut mark")
    st, status = d.get("/api/status")
    t.eq(st, 200, "daemon fine after a client hung up mid-stream")
finally:
    prog.finish()
    t.eq(d.stop(), 0, "qprofd exits 0 with a follow stream closed")

# a flood: received + counted losses = sent
N = 300000
prog = Target([markers, "flood", str(N)])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
try:
    prog.start()
    prog.result()
    time.sleep(1)
    st, _, body = d.request("GET", "/api/logs", timeout=120)
    lines = ndjson(body)
    received = len([l for l in lines if "seq" in l])
    lost = sum(l.get("lost", 0) for l in lines)
    st, status = d.get("/api/status")
    t.eq(received + lost, N, f"flood: received {received} + lost {lost} = sent")
    t.check(received > 0, "flood: some messages received")
    print(f"flood: {N} sent, {received} received, {lost} lost "
          f"(kernel {status['logs']['lost']})", flush=True)
finally:
    prog.finish()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
