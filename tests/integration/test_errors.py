#!/usr/bin/env python3
"""Bad input through the real socket and at start: every case gets a JSON
error with the right status (or a clear message and exit code), never a
crash or a hang; the daemon still answers afterwards.

usage: test_errors.py QPROFD SCOPE_TARGET QPROF_CLI"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_errors")


def err(d, method, path, body=None, want=400, what=""):
    st, hdrs, data = d.request(method, path, body=body)
    t.eq(st, want, f"{what or method + ' ' + path} status")
    try:
        obj = json.loads(data)
        t.check(isinstance(obj.get("error"), str) and obj["error"], f"{what or path}: JSON error message")
    except ValueError:
        t.check(False, f"{what or path}: body is JSON: {data[:100]!r}")
    return hdrs


d = Daemon(qprofd, ["--collector", "bpf"])
prog = Target([target_bin, "--mode", "idle"])
try:
    # attach errors
    err(d, "POST", "/api/targets", json.dumps({"pid": 4194304 + 17}), 404, "unknown pid")
    err(d, "POST", "/api/targets", json.dumps({"pid": -3}), 400, "negative pid")
    err(d, "POST", "/api/targets", json.dumps({"pid": "12"}), 400, "pid as a string")
    err(d, "POST", "/api/targets", json.dumps({"pid": 1.5}), 400, "pid as a float")
    err(d, "POST", "/api/targets", json.dumps({"pid": 1, "binary": "/bin/true"}), 400, "pid and binary")
    err(d, "POST", "/api/targets", json.dumps({}), 400, "neither pid nor binary")
    err(d, "POST", "/api/targets", json.dumps({"pid": 1, "colour": "red"}), 400, "unknown field")
    err(d, "POST", "/api/targets", json.dumps([1, 2]), 400, "array body")
    err(d, "POST", "/api/targets", "{\"pid\": ", 400, "malformed JSON")
    err(d, "POST", "/api/targets", "", 400, "empty body")
    err(d, "POST", "/api/targets", "{\"pid\": 1, \"pid\": 2}", 400, "duplicate keys")
    err(d, "POST", "/api/targets", "[" * 100000, 413, "oversized body")
    # a process without probes is a CPU-only target
    st, tv = d.post("/api/targets", {"pid": os.getpid()})
    t.eq(st, 201, "a process without probes is attached for CPU samples")
    t.eq(tv.get("cpu_only") if isinstance(tv, dict) else None, True, "and said to be CPU only")
    st, _ = d.delete(f"/api/targets/{os.getpid()}")
    t.eq(st, 200, "the CPU-only target detaches")
    err(d, "POST", "/api/targets", json.dumps({"binary": "/bin/true"}), 400, "binary without probes")
    err(d, "POST", "/api/targets", json.dumps({"binary": "/etc/passwd"}), 422, "not an ELF file")
    err(d, "POST", "/api/targets", json.dumps({"binary": "/no/such/file"}), 404, "missing binary")
    err(d, "POST", "/api/targets", json.dumps({"binary": "relative/path"}), 400, "relative binary")
    err(d, "POST", "/api/targets", json.dumps({"binary": 7}), 400, "binary not a string")
    st, hdrs, data = d.request("POST", "/api/targets", body=json.dumps({"binary": "/a" * 3000}))
    t.eq(st, 400, "binary path of 6000 bytes")
    t.check(b"1..4095 bytes" in data, f"a path too long says how long one may be: {data[:120]!r}")
    err(d, "POST", "/api/targets", json.dumps({"pid": prog.pid, "usdt": ["python:gc__start"]}), 400,
        "a usdt probe the process does not have")
    err(d, "POST", "/api/targets", json.dumps({"pid": prog.pid, "usdt": "app:x"}), 400, "usdt not an array")
    err(d, "POST", "/api/targets", json.dumps({"pid": prog.pid, "usdt": ["a:b"] * 65}), 400, "too many usdt")
    err(d, "POST", "/api/targets", json.dumps({"binary": "/bin/true", "usdt": ["a:b"]}), 400,
        "binary target with a usdt probe it does not have")

    # a real attach, then a duplicate
    st, body = d.post("/api/targets", {"pid": prog.pid})
    t.eq(st, 201, "attach by API")
    t.eq(body.get("pid"), prog.pid, "attach answer names the pid")
    err(d, "POST", "/api/targets", json.dumps({"pid": prog.pid}), 409, "attach twice")
    # a %00 in the path is not decoded: it used to cut the path, and this
    # detached the target
    err(d, "DELETE", f"/api/targets/{prog.pid}%00x", None, 400, "detach a pid followed by %00")
    st, status = d.get("/api/status")
    t.check(any(x["pid"] == prog.pid and x["state"] == "running" for x in status["targets"]),
            "the target is still attached after DELETE .../PID%00x")

    # routes and methods
    err(d, "GET", "/api/nothing", None, 404, "unknown route")
    err(d, "GET", "/", None, 404, "root")
    hdrs = err(d, "PUT", "/api/status", None, 405, "PUT status")
    t.eq(hdrs.get("Allow"), "GET", "405 carries Allow")
    err(d, "DELETE", "/api/scopes", None, 405, "DELETE scopes")
    err(d, "GET", "/api/targets/123", None, 405, "GET a target path")
    err(d, "DELETE", "/api/targets/4194999", None, 404, "detach a pid that is not a target")
    err(d, "DELETE", "/api/targets/abc", None, 400, "detach a non-number")
    err(d, "DELETE", "/api/targets/-1", None, 400, "detach a negative pid")
    err(d, "POST", "/metrics", None, 405, "POST metrics")
    err(d, "GET", "/metrics?x=1", None, 400, "metrics takes no parameter")
    err(d, "POST", "/api/values", None, 405, "POST values")
    err(d, "GET", "/api/values?pid=abc", None, 400, "values pid not a number")
    err(d, "PUT", "/pprof/profile", None, 405, "PUT pprof")

    # query strings
    err(d, "GET", "/api/scopes?seconds=abc", None, 400, "seconds not a number")
    err(d, "GET", "/api/scopes?seconds=1e3", None, 400, "seconds as float")
    err(d, "GET", "/api/scopes?seconds=99999999999999999999999", None, 400, "seconds overflow")
    err(d, "GET", "/api/scopes?pid=abc", None, 400, "pid not a number")
    err(d, "GET", "/api/scopes?pid=4194999", None, 404, "pid not a target")
    err(d, "GET", "/api/scopes?bogus=1", None, 400, "unknown parameter")
    # the whole query string is read: a second value, a %00 inside a value or
    # a key without '=' would otherwise be ignored (the first value read,
    # the value cut at the NUL, the key taken as absent)
    for path, what in ((f"/api/scopes?pid={prog.pid}&pid=4194999", "pid given twice"),
                       (f"/api/scopes?pid={prog.pid}%00x", "pid with a NUL byte"),
                       ("/api/logs?follow", "follow without a value"),
                       ("/api/scopes?seconds=1&seconds=abc", "seconds given twice"),
                       (f"/api/cpu/flamegraph?pid={prog.pid}&renderer=flamegraph&renderer=callgraph",
                        "renderer given twice"),
                       ("/pprof/profile?" + "&".join(f"scope=s{i}" if i == 0 else f"x{i}=1" for i in range(33)),
                        "33 parameters")):
        err(d, "GET", path, None, 400, what)
    st, hdrs, data = d.request("GET", f"/api/scopes?pid={prog.pid}&pid=1")
    t.check(b"given more than once" in data, f"a repeated key is named: {data[:120]!r}")
    st, hdrs, data = d.request("DELETE", "/api/targets?binary=/a&binary=/b")
    t.eq(st, 400, "DELETE with binary given twice")
    # the empty-profile note quotes scope=: a CR LF in it must neither drop
    # the note (an empty profile unmarked) nor add a header
    st, hdrs, data = d.request("GET", "/api/cpu/folded?scope=a%0d%0aX-Evil:%20yes")
    t.eq(st, 200, "folded of a scope holding CR LF")
    t.eq(hdrs.get("X-Qprof-Note"), "no samples inside scope 'a??X-Evil: yes' (unknown scope, or never on CPU)",
         "the note is there, its control bytes as '?'")
    t.check("X-Evil" not in hdrs, "no header injected")
    p = subprocess.run([cli, "--socket", d.sock, "folded", "--scope", "a\r\nb"], capture_output=True, text=True,
                       timeout=60)
    t.eq(p.returncode, 1, "qprof-cli folded of a scope holding CR LF: empty profile, exit 1")
    st, body = d.get("/api/scopes?seconds=-5")  # clamped to 1 s
    t.eq(st, 200, "seconds below range is clamped")
    st, body = d.get("/api/scopes?pid=%d" % prog.pid)
    t.eq(st, 200, "scopes of a target")

    # garbage on the socket does not hurt the daemon
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    s.sendall(b"\x00\xff GARBAGE \r\n\r\n" * 100)
    s.settimeout(10)
    try:
        s.recv(4096)
    except OSError:
        pass
    s.close()
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    s.close()  # connect and hang up
    st, status = d.get("/api/status")
    t.eq(st, 200, "daemon still answers after garbage")

    # a second daemon on the same socket refuses to start
    p = subprocess.run([qprofd, "--socket", d.sock], capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 1, "second daemon on a live socket exits 1")
    t.check("already listening" in p.stderr, f"second daemon says why: {p.stderr.strip()}")
    st, status = d.get("/api/status")
    t.eq(st, 200, "first daemon still serves")

    # command-line errors
    for args, what in ((["--pid", "abc"], "--pid abc"), (["--pid", "0"], "--pid 0"),
                       (["--frequency", "0"], "--frequency 0"), (["--bogus"], "unknown option"),
                       (["--metrics-max-sets", "0"], "--metrics-max-sets 0"),
                       (["--metrics-max-sets", "1000001"], "--metrics-max-sets 1000001"),
                       (["extra"], "stray argument")):
        p = subprocess.run([qprofd, *args], capture_output=True, text=True, timeout=30)
        t.eq(p.returncode, 2, f"qprofd {what} exits 2")
        t.check(p.stderr.strip() != "", f"qprofd {what} says why")
    p = subprocess.run([qprofd, "--socket", d.sock + ".x", "--pid", "4194999"],
                       capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 2, "qprofd --pid of a missing process exits 2 (checked before anything is loaded)")
    t.check("no such process" in p.stderr, f"and says so: {p.stderr.strip()}")
    p = subprocess.run([qprofd, "--help"], capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 0, "qprofd --help")
    t.check("--binary" in p.stdout, "help lists --binary")
finally:
    prog.kill()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0")

# --listen: loopback TCP besides the socket; anything else refused
port_sock = socket.socket()
port_sock.bind(("127.0.0.1", 0))
port = port_sock.getsockname()[1]
port_sock.close()
d3 = Daemon(qprofd, ["--collector", "bpf", "--listen", f"127.0.0.1:{port}"])
try:
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/api/status")
    r = c.getresponse()
    t.eq(r.status, 200, "--listen serves the API on loopback TCP")
    t.check(b'"version"' in r.read(), "status over TCP")
    c.close()
finally:
    t.eq(d3.stop(), 0, "daemon with --listen exits 0")
for spec in ("0.0.0.0:1234", "10.0.0.1:1234", "127.0.0.1:0", "127.0.0.1", "localhost:80"):
    p = subprocess.run([qprofd, "--socket", os.path.join(d.dir, "l.sock"), "--listen", spec],
                       capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 1, f"--listen {spec} refused")
    t.check("--listen" in p.stderr, f"--listen {spec}: says why")

# a stale socket file left by a dead daemon is replaced
stale_dir = d.dir
stale = os.path.join(stale_dir, "stale.sock")
s = socket.socket(socket.AF_UNIX)
s.bind(stale)
s.close()  # the file stays, nobody listens
d2 = Daemon(qprofd, ["--collector", "bpf"], sock=stale)
st, _ = d2.get("/api/status")
t.eq(st, 200, "daemon replaced a stale socket")
t.eq(d2.stop(), 0, "second daemon exits 0")
# a path that is not a socket is not replaced
notsock = os.path.join(stale_dir, "regular")
open(notsock, "w").write("keep me")
p = subprocess.run([qprofd, "--socket", notsock], capture_output=True, text=True, timeout=30)
t.eq(p.returncode, 1, "socket path that is a regular file: exit 1")
t.eq(open(notsock).read(), "keep me", "the regular file is untouched")
sys.exit(t.done())
