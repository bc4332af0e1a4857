#!/usr/bin/env python3
"""qprofd under a Type=notify unit: with $NOTIFY_SOCKET
set, it sends READY=1 once its socket answers, and STOPPING=1 when SIGTERM
starts its shutdown; it then exits 0. The notify socket is a datagram socket
of the test, as systemd's is.

usage: test_sd_notify.py QPROFD SCOPE_TARGET QPROF_CLI"""
import os
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Failures, Target, UnixHTTPConnection, _started, require_root  # noqa: E402

qprofd, target_bin, _ = sys.argv[1:4]
require_root()
t = Failures("integration_sd_notify")
tmp = tempfile.mkdtemp(prefix="qprof-notify-")
nsock = os.path.join(tmp, "notify")
api = os.path.join(tmp, "qprofd.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
srv.bind(nsock)
srv.settimeout(60)  # a generous bound on start-up, not a measurement


def recv():
    try:
        return srv.recv(4096).decode()
    except socket.timeout:
        return ""


prog = Target([target_bin, "--mode", "nested", "--iters", "10"])
env = dict(os.environ, NOTIFY_SOCKET=nsock)
p = subprocess.Popen([qprofd, "--socket", api, "--report-dir", os.path.join(tmp, "reports"),
                      "--pid", str(prog.pid)], env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
_started.append(p)
try:
    msg = recv()
    if not msg and p.poll() == 3:
        print("SKIP: BPF cannot be loaded here", flush=True)
        sys.exit(77)
    fields = dict(ln.split("=", 1) for ln in msg.splitlines() if "=" in ln)
    t.eq(fields.get("READY"), "1", f"READY=1 sent: {msg!r}")
    t.eq(fields.get("MAINPID"), str(p.pid), "MAINPID is qprofd's pid")
    t.check(api in fields.get("STATUS", ""), f"STATUS names the socket: {fields.get('STATUS')!r}")
    # ready means the socket answers at that moment
    c = UnixHTTPConnection(api, 10)
    try:
        c.request("GET", "/api/status")
        t.eq(c.getresponse().status, 200, "the API answers when READY=1 arrives")
    finally:
        c.close()
    p.send_signal(signal.SIGTERM)
    msg = recv()
    t.check("STOPPING=1" in msg.splitlines(), f"STOPPING=1 on SIGTERM: {msg!r}")
    t.eq(p.wait(timeout=60), 0, "qprofd exits 0")
    srv.settimeout(0.5)
    t.eq(recv(), "", "nothing more after STOPPING=1")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
    prog.kill()
    srv.close()
    for f in (nsock,):
        if os.path.exists(f):
            os.unlink(f)
    subprocess.run(["rm", "-rf", tmp])
    if t.failed and p.stderr:
        print(p.stderr.read()[-2000:], file=sys.stderr)
sys.exit(t.done())
