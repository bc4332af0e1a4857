#!/usr/bin/env python3
"""How much anyone may take of qprofd, through the
real socket with a bounded client:

- 16 follow=1 streams fill the long-poll slots too, and give them back when
  their clients hang up;
- 150 connections trickling their headers a byte at a time and 40 long
  polls (seconds=15) at once: GET /api/status still answers (within 2 s, a
  generous bound stated as such), exactly 16 long polls run and the other 24
  get 503 with a reason and Retry-After, and the daemon closes every
  trickling connection after its 10 s request deadline (not before 8 s, all
  by 25 s; libmicrohttpd's own timeout restarts at every byte);
- beyond 256 open connections a request gets 503 with a reason, not a
  silent close;
- seconds= out of 1..300 is clamped and the answer says so in
  X-Qprof-Seconds;
- a second qprofd on a live socket is refused before it touches any
  target (--pid of a process that does not exist: the error is the
  socket's, not the pid's).

usage: test_http_limits.py QPROFD SCOPE_TARGET QPROF_CLI"""
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, require_root  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_http_limits")
TRICKLE, LONG, LONG_CAP, DEADLINE = 150, 40, 16, 10


def connect(path):
    """A connection; a full listen backlog (EAGAIN on a unix socket) is
    retried for up to 10 s while the daemon accepts."""
    end = time.monotonic() + 10
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def read_response(s, timeout):
    """Status, headers and body of an answer on S (Connection: close)."""
    s.settimeout(timeout)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    hdrs = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
    return status, hdrs, body


def request(path, target):
    s = connect(path)
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
    return s


d = Daemon(qprofd, ["--collector", "bpf"])
try:
    # seconds= clamped, and said so
    for q, want in (("0", "1 (clamped from 0)"), ("-5", "1 (clamped from -5)")):
        st, hdrs, _ = d.request("GET", f"/api/scopes?seconds={q}")
        t.eq((st, hdrs.get("X-Qprof-Seconds")), (200, want), f"seconds={q}")
    st, hdrs, _ = d.request("GET", "/api/scopes?seconds=301&pid=4194000")  # 404 before waiting
    t.eq((st, hdrs.get("X-Qprof-Seconds")), (404, "300 (clamped from 301)"), "seconds=301")
    st, hdrs, _ = d.request("GET", "/api/scopes?seconds=1")
    t.eq((st, hdrs.get("X-Qprof-Seconds")), (200, None), "seconds=1: nothing to say")

    # a live socket is refused before any target is attached (a --pid of
    # a live process: one of no process is a usage error found even earlier)
    me = str(os.getpid())
    p = subprocess.run([qprofd, "--socket", d.sock, "--pid", me], capture_output=True, text=True,
                       timeout=60)
    t.eq(p.returncode, 1, "second daemon on a live socket exits 1")
    t.check("already listening" in p.stderr and f"--pid {me}" not in p.stderr,
            f"refused for the socket before the --pid: {p.stderr.strip()}")
    st, _ = d.get("/api/status")
    t.eq(st, 200, "the first daemon still serves")

    # slowloris and long polls at once
    t0 = time.monotonic()
    trickle = []
    for i in range(TRICKLE):
        s = connect(d.sock)
        s.sendall(b"GET /api/status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        s.setblocking(False)
        trickle.append({"s": s, "opened": time.monotonic(), "closed": None})
    longs = [request(d.sock, "/api/scopes?seconds=15") for _ in range(LONG)]
    answers = [None] * LONG  # (seconds after sending, status, headers, body), read by threads

    def read_long(i):
        try:
            answers[i] = (time.monotonic() - t0, *read_response(longs[i], 60))
        except OSError as e:
            answers[i] = (time.monotonic() - t0, 0, {}, str(e).encode())
    readers = [threading.Thread(target=read_long, args=(i,)) for i in range(LONG)]
    for r in readers:
        r.start()
    # a quick request gets through
    q0 = time.monotonic()
    st, body = d.get("/api/status", timeout=30)
    took = time.monotonic() - q0
    t.eq(st, 200, "status answers under slowloris + long polls")
    t.check(took < 2.0, f"status within 2 s (generous bound): {took:.3f} s")
    print(f"status under {TRICKLE} trickling + {LONG} long polls: {took * 1000:.1f} ms", flush=True)
    # trickle one byte per connection every 0.5 s until the daemon closes them
    while time.monotonic() - t0 < 25 and any(c["closed"] is None for c in trickle):
        for c in trickle:
            if c["closed"] is not None:
                continue
            try:
                r, _, _ = select.select([c["s"]], [], [], 0)
                if r and c["s"].recv(4096) == b"":
                    raise ConnectionResetError
                c["s"].send(b"a")
            except (BrokenPipeError, ConnectionResetError):
                c["closed"] = time.monotonic()
            except BlockingIOError:
                pass
        time.sleep(0.5)
    closed = [c["closed"] - c["opened"] for c in trickle if c["closed"] is not None]
    t.eq(len(closed), TRICKLE, "every trickling connection closed by the daemon within 25 s")
    if closed:
        t.check(min(closed) >= DEADLINE - 2, f"none closed before the deadline: first after {min(closed):.1f} s")
        print(f"trickling connections closed after {min(closed):.1f}..{max(closed):.1f} s", flush=True)
    for c in trickle:
        c["s"].close()
    for r in readers:
        r.join()
    for s in longs:
        s.close()
    refused = [a for a in answers if a[1] == 503]
    t.eq(sorted(a[1] for a in answers), [200] * LONG_CAP + [503] * (LONG - LONG_CAP),
         f"{LONG} long polls: {LONG_CAP} answered 200, the others 503")
    t.check(all(a[0] < 10 for a in refused), "503s came at once, not after the window (10 s bound)")
    t.check(all(a[2].get("retry-after") == "5" for a in refused), "503 carries Retry-After: 5")
    t.check(all(b"too many long polls" in a[3] and json.loads(a[3]).get("error") for a in refused),
            f"503 says why in JSON: {refused[0][3][:120] if refused else b''!r}")
    st, _, _ = d.request("GET", "/api/scopes?seconds=1")
    t.eq(st, 200, "long-poll slots given back")
    st, body = d.get("/api/status")
    h = body.get("http", {})
    t.eq((h.get("closed_overdue"), h.get("refused_long_polls"), h.get("long_polls")),
         (TRICKLE, LONG - LONG_CAP, 0), "status counts the closed and the refused")
    # follow=1 streams hold slots too, until their clients hang up
    follows = [request(d.sock, "/api/logs?follow=1") for _ in range(LONG_CAP)]
    heads = []
    for s in follows:
        s.settimeout(30)
        heads.append(s.recv(15))
    t.eq(heads, [b"HTTP/1.1 200 OK"] * LONG_CAP, f"{LONG_CAP} follow=1 streams open")
    st, hdrs, body = d.request("GET", "/api/scopes?seconds=1")
    t.eq(st, 503, "a window while 16 streams follow: 503")
    for s in follows:
        s.close()
    st = 0
    for _ in range(50):  # the daemon notices the hang-ups within a second or so
        st, _, _ = d.request("GET", "/api/scopes?seconds=1")
        if st == 200:
            break
        time.sleep(0.2)
    t.eq(st, 200, "slots of closed streams given back")
    # windows (seconds=300) whose clients hung up give their slots back
    # too: the wait looks at its client's socket once a second (it held
    # them for the 300 s before)
    gone = [request(d.sock, "/api/scopes?seconds=300" if i % 2 else "/pprof/profile?seconds=300")
            for i in range(LONG_CAP)]
    n_open = 0
    for _ in range(100):
        n_open = d.get("/api/status")[1].get("http", {}).get("long_polls")
        if n_open == LONG_CAP:
            break
        time.sleep(0.1)
    t.eq(n_open, LONG_CAP, f"{LONG_CAP} windows of 300 s open")
    st, _, _ = d.request("GET", "/api/scopes?seconds=1")
    t.eq(st, 503, "a window while 16 others wait: 503")
    t0 = time.monotonic()
    for s in gone:
        s.close()
    for _ in range(100):
        n_open = d.get("/api/status")[1].get("http", {}).get("long_polls")
        if n_open == 0:
            break
        time.sleep(0.1)
    t.eq(n_open, 0, "windows of clients gone away end")
    print(f"16 abandoned windows ended {time.monotonic() - t0:.1f} s after the hang-ups", flush=True)
    st, _, _ = d.request("GET", "/api/scopes?seconds=1")
    t.eq(st, 200, "a window after the abandoned ones: 200")
    log = d.logtext()
    t.check("sent no complete request within 10 s" in log, "closing overdue connections is logged")
    t.check("long poll refused with 503" in log, "refused long polls are logged")

    # beyond 256 open connections: 503 with a reason, not a silent close
    idle = [connect(d.sock) for _ in range(260)]
    time.sleep(0.5)
    s = request(d.sock, "/api/status")
    st, hdrs, body = read_response(s, 30)
    s.close()
    t.eq(st, 503, "a request beyond 256 connections gets 503")
    t.check(b"too many connections" in body, f"503 says why: {body[:100]!r}")
    for s in idle:
        s.close()
    ok, refusals = False, 1
    for _ in range(100):  # the daemon notices the closed connections
        st, body = d.get("/api/status")
        if st == 200:
            ok = True
            break
        refusals += 1
        time.sleep(0.1)
    t.check(ok, "status answers again once the connections are gone")
    if ok:
        t.eq(body["http"]["refused_connections"], refusals, "status counts the refused connections")
    t.eq(d.stop(), 0, "daemon exits 0")
finally:
    d.stop()
sys.exit(t.done())
