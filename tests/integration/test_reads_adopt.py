#!/usr/bin/env python3
"""A read never writes: a GET does not make a process a target.

qprofd attaches --binary to a shared library (liblifecycle_lib.so). A
process that maps it through its executable's link is found only by the
poll loop's /proc rescan (no exec or fork record names it), so between its
start and the next rescan its scopes are counted by the kernel while it is
not a target yet. To hold that moment open, the poll loop is frozen: strace
delays every rt_sigtimedwait of qprofd (the poll loop's and the exec
thread's tick) by 60 s, and logs every file any thread of qprofd opens,
handler threads included (strace -f follows the server's new ones).

While frozen, the process runs its 1000 scopes, and GET /api/scopes,
/api/values, /api/status and /api/targets are asked. Then:
  - the process is not a target (no GET adopted it);
  - no thread of qprofd opened a file of /proc/PID/ (no GET read its maps,
    comm, exe or stat);
and once strace is gone, the poll loop adopts it within its period (the
rescan runs every second; the test allows 10 s and prints the time), and
its 1000 scopes, counted before the adoption, are in /api/scopes.

usage: test_reads_adopt.py QPROFD LIFECYCLE_TARGET LIFECYCLE_LIB"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import SKIP, Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, lt, lib = sys.argv[1:4]
lib = os.path.realpath(lib)
require_root()
t = Failures("integration_reads_adopt")
if not shutil.which("strace"):
    print("SKIP: strace is not installed (scripts/install-deps.sh)", flush=True)
    sys.exit(SKIP)
SCOPES = 1000


def targets(d):
    return [x["pid"] for x in d.get("/api/targets")[1]["targets"]]


d = Daemon(qprofd, ["--collector", "bpf", "--binary", lib])
prog = None
tracer = None
try:
    log = os.path.join(d.dir, "strace.txt")
    tracer = subprocess.Popen(["strace", "-f", "-qq", "-p", str(d.proc.pid), "-o", log,
                               "-e", "trace=openat,open,rt_sigtimedwait",
                               "-e", "inject=rt_sigtimedwait:delay_enter=60000000"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # attached, and the poll loop (qprofd's main thread) held in its
    # delayed wait: in tracing stop ("t") at every look over half a second
    def main_state():
        try:
            with open(f"/proc/{d.proc.pid}/task/{d.proc.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "?"

    def frozen():
        for _ in range(10):
            if main_state() != "t":
                return False
            time.sleep(0.05)
        return True
    t.check(wait_for(frozen, timeout=30, step=0.1), "the poll loop is held by strace")
    t.check(tracer.poll() is None, "strace runs")
    polls_before = open(log).read().count("rt_sigtimedwait(")
    prog = Target([lt, "--mode", "libfork", "-n", "0", "-m", "0"])
    prog.start()
    res = prog.result()
    t.eq(res.get("exit_0"), 0, "the process ran its scopes (no child asked for)")
    for path in ("/api/scopes", "/api/values", "/api/status", "/api/targets",
                 f"/api/scopes?pid={prog.pid}"):
        st, _ = d.get(path)
        t.eq(st, 404 if "pid=" in path else 200, f"GET {path} answers while the poll loop is frozen")
    t.check(prog.pid not in targets(d), "no GET made the process a target")
    text = open(log).read()
    # the poll loop did not step meanwhile: no rt_sigtimedwait of it returned
    steps = text.count("rt_sigtimedwait(") - polls_before
    t.check(steps <= 2, f"the poll loop stayed frozen ({steps} waits began meanwhile)")
    opened = [ln for ln in text.splitlines() if re.search(rf'"/proc/{prog.pid}/', ln)]
    t.eq(opened, [], f"no thread of qprofd opened a file of /proc/{prog.pid}/ for a GET")
finally:
    if tracer is not None and tracer.poll() is None:
        tracer.send_signal(signal.SIGINT)	# detaches: the delayed waits go on
        try:
            tracer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()
try:
    if prog is not None:
        t0 = time.monotonic()
        ok = wait_for(lambda: prog.pid in targets(d), timeout=10)
        took = time.monotonic() - t0
        print(f"adopted by the poll loop {took:.2f} s after strace detached", flush=True)
        t.check(ok, "the poll loop adopts the process once it runs again")
        st, body = d.get(f"/api/scopes?pid={prog.pid}")
        t.eq(st, 200, "its scopes answer once it is a target")
        n = sum(r["count"] for r in body.get("scopes", []) if r.get("name") == "lib_work")
        t.eq(n, SCOPES, "its scopes counted before the adoption are all there")
finally:
    if prog is not None:
        prog.finish()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
