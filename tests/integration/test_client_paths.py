#!/usr/bin/env python3
"""Paths a client names are the files the client sees, and qprofd never
profiles itself. From an unprivileged client (uid 65534 on the unix socket):

- /proc/self/exe, /proc/thread-self/exe: 403 (they name whoever reads them);
- /proc/QPROFD_PID/exe, and a symlink of the client's to /proc/self/exe:
  403 (a magic link is never followed for a client);
- qprofd's own executable by its real path: 403 (qprofd maps it, yet it is
  never a target), and {"pid": qprofd's pid}: 403;
- a client in a mount namespace of its own where DIR/app is another file
  than qprofd's DIR/app (which a process runs): 404 saying the two differ,
  nothing attached;
- the executable of a running process by its path: 201 (what may be named
  still is), and detached again;
- from root, /proc/self/exe: 403 as well.

After all of it no target is qprofd itself, and the only binary target was
the one asked for. About 5 s. usage: test_client_paths.py QPROFD SCOPE_TARGET CPU_TARGET"""
import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, scope_bin, cpu_bin = sys.argv[1:4]
require_root()
t = Failures("integration_client_paths")
CLONE_NEWNS = 0x00020000


def as_client(d, method, path, body=None, uid=65534, in_ns=None):
    """One request over the unix socket from a child of uid UID, after
    IN_NS() ran in it (as root, in a mount namespace of its own when
    given): (status, body)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            if in_ns:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.unshare(CLONE_NEWNS):
                    raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
                subprocess.run(["mount", "--make-rprivate", "/"], check=True)
                in_ns()
            if uid:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(d.sock)
            data = json.dumps(body).encode() if body is not None else b""
            s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
            os.write(w, out)
        except BaseException as e:  # noqa: B902 - the child reports whatever happened
            os.write(w, f"HTTP/1.1 599 child\r\n\r\n{json.dumps({'error': repr(e)})}".encode())
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    head, _, payload = out.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    try:
        return status, json.loads(payload) if payload else None
    except ValueError:
        return status, payload


def targets(d):
    """{"targets": [...], "binaries": [...]} of /api/status."""
    _, body = d.get("/api/status")
    return body


work = tempfile.mkdtemp(prefix="qprof-paths-")
os.chmod(work, 0o755)
d = Daemon(qprofd, [])
os.chmod(d.sock, 0o666)
os.chmod(d.dir, 0o755)
runner = None
try:
    own = os.path.realpath(f"/proc/{d.proc.pid}/exe")
    link = os.path.join(work, "link")
    os.symlink("/proc/self/exe", link)
    for what, path in (("/proc/self/exe", "/proc/self/exe"),
                       ("/proc/thread-self/exe", "/proc/thread-self/exe"),
                       ("//proc/./self/exe", "//proc/./self/exe"),
                       ("qprofd's /proc/PID/exe", f"/proc/{d.proc.pid}/exe"),
                       ("a symlink to /proc/self/exe", link),
                       ("qprofd's own executable", own)):
        st, body = as_client(d, "POST", "/api/targets", {"binary": path})
        t.eq(st, 403, f"unprivileged, {what}: {body}")
    st, body = as_client(d, "POST", "/api/targets", {"pid": d.proc.pid})
    t.eq(st, 403, f"unprivileged, qprofd's pid: {body}")
    st, body = as_client(d, "POST", "/api/targets", {"binary": "/proc/self/exe"}, uid=0)
    t.eq(st, 403, f"root, /proc/self/exe: {body}")

    # a path that names another file for the client than for qprofd
    app_dir = os.path.join(work, "app")
    os.mkdir(app_dir)
    os.chmod(app_dir, 0o755)
    app = os.path.join(app_dir, "app")
    shutil.copy(scope_bin, app)
    os.chmod(app, 0o755)
    runner = Target([app, "--iters", "5"])  # qprofd's DIR/app runs: a client may name it

    def client_view():
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "none", app_dir], check=True)
        shutil.copy(cpu_bin, app)
        os.chmod(app, 0o755)

    st, body = as_client(d, "POST", "/api/targets", {"binary": app}, in_ns=client_view)
    t.eq(st, 404, f"another file at that path for the client: {body}")
    t.check("another file for qprofd than for the client" in (body or {}).get("error", ""),
            f"the answer says why: {body}")
    t.eq(targets(d).get("binaries", []), [], "nothing attached")

    # what may be named still is
    st, body = as_client(d, "POST", "/api/targets", {"binary": app})
    t.eq(st, 201, f"unprivileged, the executable of a running process: {body}")
    tl = targets(d)
    t.eq([b["binary"] for b in tl.get("binaries", [])], [app], "the binary asked for")
    t.check(all(x["pid"] != d.proc.pid for x in tl.get("targets", [])), "qprofd is no target")
    st, _, _ = d.request("DELETE", "/api/targets?binary=" + app)
    t.eq(st, 200, "detached")
    runner.start()
    runner.result()
    t.eq(runner.finish(), 0, "its process exits 0")
    t.check(d.proc.poll() is None, "qprofd alive")
finally:
    if runner:
        runner.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")
    shutil.rmtree(work, ignore_errors=True)
sys.exit(t.done())
