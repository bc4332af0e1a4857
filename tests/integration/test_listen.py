#!/usr/bin/env python3
"""Who may talk to qprofd: a throw-away non-root
user, created here and removed at the end, talks to --listen (and to the
unix socket): GET works; POST/DELETE are refused without a token (403), with
no or a wrong token (401), and go through with the right one; a foreign
Host or Origin, Sec-Fetch-Site: cross-site and a text/plain POST are
refused; mutating requests are logged with the peer; the token file must be
root's, 0600, not a symlink; kernel addresses go to root on the unix socket
only (/pprof/symbol, pprof locations).

usage: test_listen.py QPROFD SCOPE_TARGET QPROF_CLI"""
import gzip
import http.client
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402
from pbwire import fields  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_listen")
USER = f"qpt{os.getpid() % 100000}"
TOKEN = "tok-" + os.urandom(12).hex()
# the system's python: the one running this test may live under /root
USER_PY = shutil.which("python3", path="/usr/bin:/bin") or sys.executable

# The client, run as USER: one HTTP request over TCP (port) or a unix
# socket (path); prints {"status", "headers", "body"}.
CLIENT = r'''
import http.client, json, socket, sys
a = json.loads(sys.argv[1])
class U(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(30)
        self.sock.connect(a["unix"])
if a.get("unix"):
    c = U("localhost", timeout=30)
else:
    c = http.client.HTTPConnection("127.0.0.1", a["port"], timeout=30)
c.putrequest(a["method"], a["path"], skip_host=True, skip_accept_encoding=True)
for k, v in a["headers"].items():
    c.putheader(k, v)
body = a.get("body")
if body is not None:
    c.putheader("Content-Length", str(len(body.encode())))
c.endheaders(body.encode() if body is not None else None)
r = c.getresponse()
print(json.dumps({"status": r.status, "headers": dict(r.getheaders()),
                  "body": r.read().decode("utf-8", "replace")}))
'''


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def as_user(port, method, path, headers=None, body=None, host=True, unix=None):
    """One request as USER; host=True sends Host: 127.0.0.1:PORT."""
    h = dict(headers or {})
    if host and "Host" not in h:
        h["Host"] = f"127.0.0.1:{port}" if not unix else "localhost"
    arg = json.dumps({"port": port, "unix": unix, "method": method, "path": path, "headers": h,
                      "body": body})
    pw = pwd.getpwnam(USER)
    p = subprocess.run([USER_PY, "-c", CLIENT, arg], user=pw.pw_uid, group=pw.pw_gid,
                       extra_groups=[], cwd="/", capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin"})
    if p.returncode:
        raise RuntimeError(f"client as {USER} failed: {p.stderr}")
    return json.loads(p.stdout)


def targets(d):
    st, body = d.get("/api/status")
    return [x["pid"] for x in body["targets"]]


def kernel_symbol():
    """(address, name) of a kernel text symbol, from root's /proc/kallsyms."""
    with open("/proc/kallsyms") as f:
        for line in f:
            addr, kind, name = line.split()[:3]
            if kind in "tT" and int(addr, 16) and name == "schedule":
                return int(addr, 16), name
    return None


def location_addresses(gz):
    """Addresses of every Location (Profile field 4, Location field 3)."""
    out = []
    for f, wt, v in fields(gzip.decompress(gz)):
        if f == 4 and wt == 2:
            out.append(next((x for g, w, x in fields(v) if g == 3 and w == 0), 0))
    return out


KERNEL = 0xFFFF800000000000

subprocess.run(["userdel", USER], capture_output=True)  # a leftover of an aborted run
r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    "--user-group", USER], capture_output=True, text=True)
if r.returncode:
    print(f"cannot create a test user: {r.stderr}", flush=True)
    sys.exit(1)
prog = Target([target_bin, "--mode", "idle"])
try:
    uid = pwd.getpwnam(USER).pw_uid

    # 1. --listen without a token: read-only over TCP
    port = free_port()
    d = Daemon(qprofd, ["--collector", "bpf", "--listen", f"127.0.0.1:{port}", "--all", "--frequency", "499"])
    try:
        r = as_user(port, "GET", "/api/status")
        t.eq(r["status"], 200, "non-root GET /api/status over TCP")
        r = as_user(port, "GET", "/api/status", host=False, headers={"Host": f"localhost:{port}"})
        t.eq(r["status"], 200, "Host localhost:PORT accepted")
        r = as_user(port, "POST", "/api/targets", {"Content-Type": "application/json"},
                    json.dumps({"pid": prog.pid}))
        t.eq(r["status"], 403, "non-root POST /api/targets over TCP without a token configured")
        t.check("token-file" in json.loads(r["body"])["error"], f"403 says why: {r['body'].strip()}")
        t.eq(targets(d), [], "nothing attached by the refused POST")
        st, _ = d.post("/api/targets", {"pid": prog.pid})
        t.eq(st, 201, "root attaches over the unix socket")
        r = as_user(port, "DELETE", f"/api/targets/{prog.pid}")
        t.eq(r["status"], 403, "non-root DELETE over TCP without a token configured")
        t.eq(targets(d), [prog.pid], "the target is still attached")
        # DNS rebinding, cross-site requests
        r = as_user(port, "GET", "/api/status", host=False, headers={"Host": f"evil.example:{port}"})
        t.eq(r["status"], 403, "foreign Host refused")
        t.check("Host 'evil.example" in r["body"], f"403 names the Host: {r['body'].strip()}")
        r = as_user(port, "GET", "/api/status", host=False)
        t.eq(r["status"], 403, "no Host over TCP refused")
        r = as_user(port, "GET", "/api/status", {"Origin": "http://evil.example"})
        t.eq(r["status"], 403, "foreign Origin refused")
        r = as_user(port, "GET", "/api/status", {"Origin": f"http://127.0.0.1:{port}"})
        t.eq(r["status"], 200, "the daemon's own Origin accepted")
        r = as_user(port, "GET", "/api/status", {"Sec-Fetch-Site": "cross-site"})
        t.eq(r["status"], 403, "Sec-Fetch-Site: cross-site refused")
        # kernel addresses: not resolved for a TCP client, resolved for root on the socket
        ks = kernel_symbol()
        t.check(ks is not None, "a kernel symbol in /proc/kallsyms")
        if ks:
            body = f"0x{ks[0]:x}"
            r = as_user(port, "POST", "/pprof/symbol", {"Content-Type": "text/plain"}, body)
            t.eq(r["status"], 200, "POST /pprof/symbol over TCP (it only reads)")
            t.eq(r["body"], f"0x{ks[0]:016x}\t??\n", "kernel address not resolved over TCP")
            st, _, data = d.request("POST", "/pprof/symbol", body=body)
            t.eq((st, data.decode()), (200, f"0x{ks[0]:016x}\t{ks[1]}\n"),
                 "kernel address resolved for root on the unix socket")
        # pprof: kernel locations carry address 0 unless the client is root on the socket
        stop = threading.Event()

        def syscalls():  # kernel time to sample
            with open("/dev/zero", "rb", buffering=0) as z:
                while not stop.is_set():
                    z.read(1 << 20)
        th = threading.Thread(target=syscalls)
        th.start()
        try:
            time.sleep(2.5)
        finally:
            stop.set()
            th.join()
        st, _, prof_root = d.request("GET", "/pprof/profile")
        r = as_user(port, "GET", "/api/cpu/folded")
        t.eq((st, r["status"]), (200, 200), "pprof over the socket, folded over TCP")
        kaddr = re.findall(r"0x[fF]{4}[89a-fA-F][0-9a-fA-F]{11}\b", r["body"])
        t.eq(kaddr, [], "no kernel address in folded stacks over TCP")
        root_k = [a for a in location_addresses(prof_root) if a >= KERNEL]
        t.check(len(root_k) > 0, f"root's pprof has kernel addresses ({len(root_k)})")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # root, but over TCP
        c.request("GET", "/pprof/profile")
        resp = c.getresponse()
        prof_tcp = resp.read()
        c.close()
        t.eq(resp.status, 200, "pprof over TCP")
        tcp_addrs = location_addresses(prof_tcp)
        t.check(len(tcp_addrs) > 0, "pprof over TCP has locations")
        t.eq([a for a in tcp_addrs if a >= KERNEL], [], "no kernel address in pprof over TCP")
        t.check(tcp_addrs.count(0) > 0, "kernel locations over TCP have address 0")
        # a non-root peer on the unix socket: logged with its uid, not privileged
        os.chmod(d.dir, 0o711)
        os.chmod(d.sock, 0o666)
        r = as_user(port, "DELETE", "/api/targets/4194000", unix=d.sock)
        t.eq(r["status"], 404, "non-root DELETE over the unix socket reaches the route")
        if ks:
            r = as_user(port, "POST", "/pprof/symbol", {}, f"0x{ks[0]:x}", unix=d.sock)
            t.eq(r["body"], f"0x{ks[0]:016x}\t??\n", "kernel address not resolved for a non-root peer")
        log = d.logtext()
        t.check(f"POST /api/targets from 127.0.0.1:" in log and "(no token configured) -> 403" in log,
                "refused TCP POST logged with the address")
        t.check(f"DELETE /api/targets/4194000 from uid {uid} gid " in log,
                "unix DELETE logged with the peer's uid")
        t.check("POST /api/targets from uid 0 gid 0 pid " in log and "-> 201" in log,
                "root's attach logged with uid 0")
        t.eq(d.stop(), 0, "daemon exits 0")
    finally:
        d.stop()

    # 2. --token-file: mutating routes with the right token only
    tokdir = os.path.join(d.dir, "tok")
    os.mkdir(tokdir, 0o755)
    tokfile = os.path.join(tokdir, "token")
    with open(tokfile, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(tokfile, 0o600)
    port = free_port()
    d2 = Daemon(qprofd, ["--collector", "bpf", "--listen", f"127.0.0.1:{port}", "--token-file", tokfile])
    try:
        js = {"Content-Type": "application/json"}
        body = json.dumps({"pid": prog.pid})
        r = as_user(port, "POST", "/api/targets", js, body)
        t.eq(r["status"], 401, "POST without the token")
        t.eq(r["headers"].get("WWW-Authenticate"), 'Bearer realm="qprofd"', "401 names the scheme")
        r = as_user(port, "POST", "/api/targets", {**js, "Authorization": "Bearer " + TOKEN + "x"}, body)
        t.eq(r["status"], 401, "POST with a wrong token")
        t.eq(targets(d2), [], "nothing attached without the token")
        auth = {"Authorization": "Bearer " + TOKEN}
        r = as_user(port, "POST", "/api/targets", {**auth, "Content-Type": "text/plain"}, body)
        t.eq(r["status"], 415, "text/plain POST refused even with the token")
        r = as_user(port, "POST", "/api/targets", {**auth, "Origin": "http://evil.example", **js}, body)
        t.eq(r["status"], 403, "cross-origin POST refused even with the token")
        t.eq(targets(d2), [], "nothing attached by refused requests")
        r = as_user(port, "POST", "/api/targets", {**auth, **js}, body)
        t.eq(r["status"], 201, "POST with the token attaches")
        t.eq(targets(d2), [prog.pid], "attached")
        r = as_user(port, "DELETE", f"/api/targets/{prog.pid}", auth)
        t.eq(r["status"], 200, "DELETE with the token detaches")
        t.eq(targets(d2), [], "detached")
        t.check("(token matched) -> 201" in d2.logtext(), "attach over TCP logged with the token check")
        t.eq(d2.stop(), 0, "daemon with a token exits 0")
    finally:
        d2.stop()

    # 3. token files qprofd refuses (exit 2, a reason, nothing served)
    def refused(path, why, what):
        sock = os.path.join(tokdir, "r.sock")
        p = subprocess.run([qprofd, "--socket", sock, "--listen", f"127.0.0.1:{free_port()}",
                            "--token-file", path], capture_output=True, text=True, timeout=30)
        t.eq(p.returncode, 2, f"{what}: exit 2")
        t.check(why in p.stderr, f"{what}: says '{why}': {p.stderr.strip()}")
        t.check(not os.path.exists(sock), f"{what}: no socket made")
    os.chmod(tokfile, 0o644)
    refused(tokfile, "mode 0644", "world-readable token file")
    os.chmod(tokfile, 0o600)
    os.chown(tokfile, uid, -1)
    refused(tokfile, "not root", "token file owned by a user")
    os.chown(tokfile, 0, -1)
    link = os.path.join(tokdir, "link")
    os.symlink(tokfile, link)
    refused(link, "symbolic link", "token file through a symlink")
    with open(os.path.join(tokdir, "short"), "w") as f:
        f.write("abc\n")
    os.chmod(os.path.join(tokdir, "short"), 0o600)
    refused(os.path.join(tokdir, "short"), "16..512 bytes", "a 3-byte token")
    p = subprocess.run([qprofd, "--socket", os.path.join(tokdir, "x.sock"), "--token-file", tokfile],
                       capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 2, "--token-file without --listen: exit 2")
finally:
    prog.kill()
    r = subprocess.run(["userdel", USER], capture_output=True, text=True)
    t.eq(r.returncode, 0, f"test user removed {r.stderr.strip()}")
sys.exit(t.done())
