#!/usr/bin/env python3
"""debuginfod: fleet_target copied, its debug file split off with objcopy
--only-keep-debug and the copy stripped (--strip-all keeps the build-id
note), so nothing on this host names its functions. Debian's own server
(`debuginfod -F DIR -p PORT`, package debuginfod) serves the debug file
on loopback, after four servers of this test that fail each in its way:
a closed port, one that takes the connection and never answers, one that
answers 3 MiB of noise (the cap is 1 MiB), one that answers a real ELF
file of another build-id, one that answers the stripped file itself (the
build-id asked for, but neither symbols nor DWARF). Asserted:

A. qprofd --debuginfod "CLOSED SILENT NOISE WRONG BARE REAL" --debuginfod-timeout 4
   --debuginfod-max-mb 1: while the silent server holds the fetch,
   /api/status answers in under 2 s (a stall would cost the 4 s timeout)
   and the folded profile has fleet_target+0x... frames and none of
   work_one/two/three; then the build-id's outcome is "fetched", after at
   least the 4 s timeout, with every server's reason (connection refused,
   no answer within 4 s, larger than 1048576 bytes, not the build-id asked
   for, neither .symtab nor .debug_info, the bytes fetched); the file in CACHE/.build-id/xx/rest.debug is
   the server's, byte for byte, and no temporary file is left; the folded
   profile then names work_one, work_two, work_three and worker_loop, and
   go tool pprof -lines names fleet_target.c lines (when go is installed).
B. The real server stopped, qprofd restarted on the same cache: the names
   are there at once and the build-id is not asked for.
C. In the same qprofd, a second copy whose build-id note differs by one
   byte (in no cache): its outcome is "failed" with the refused connection
   as its reason, status answers at once, its frames stay unnamed;
   qprof-cli status says so in its debuginfod lines.

usage: test_debuginfod.py QPROFD FLEET_TARGET QPROF_CLI"""
import http.server
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target, cli = sys.argv[1:4]
require_root()
t = Failures("integration_debuginfod")
for tool in ("debuginfod", "objcopy", "strip", "readelf"):
    if not shutil.which(tool):
        print(f"SKIP: {tool} is not installed (scripts/install-deps.sh: debuginfod, binutils)",
              flush=True)
        sys.exit(77)
FUNCS = ("work_one", "work_two", "work_three", "worker_loop")
TIMEOUT_S = 4

work = tempfile.mkdtemp(prefix="qprof-dbgf-")
os.makedirs(os.path.join(work, "bin"))
os.makedirs(os.path.join(work, "srv"))
binary = os.path.join(work, "bin", "fleet_target")
debug = os.path.join(work, "srv", "fleet_target.debug")
shutil.copy(target, binary)
subprocess.run(["objcopy", "--only-keep-debug", binary, debug], check=True)
subprocess.run(["strip", "--strip-all", binary], check=True)
notes = subprocess.run(["readelf", "-n", binary], capture_output=True, text=True).stdout
bid = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
sections = subprocess.run(["readelf", "-S", "-W", binary], capture_output=True, text=True).stdout
t.check(".symtab" not in sections and ".debug_info" not in sections,
        "the stripped copy has neither .symtab nor .debug_info")
with open(debug, "rb") as f:
    debug_bytes = f.read()
children = []
T0 = time.monotonic()


def phase(name):
    print(f"{time.monotonic() - T0:6.1f} s  {name}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Silent:
    """Takes every connection and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            c, _ = self.sock.accept()
            self.held.append(c)


def answering(body_for):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = body_for(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


rng = random.Random(28)
noise = rng.randbytes(3 << 20)
with open("/bin/true", "rb") as f:
    other_elf = f.read()
closed = free_port()
silent = Silent()
noisy = answering(lambda path: noise)
wrong = answering(lambda path: other_elf)
with open(binary, "rb") as f:
    stripped = f.read()
bare = answering(lambda path: stripped)

real = free_port()
srv_log = open(os.path.join(work, "debuginfod.log"), "w")
server = subprocess.Popen(["debuginfod", "-F", os.path.join(work, "srv"), "-p", str(real),
                           "-d", os.path.join(work, "debuginfod.sqlite")],
                          stdout=srv_log, stderr=subprocess.STDOUT)
children.append(server)


def served():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{real}/buildid/{bid}/debuginfo",
                                    timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


if not wait_for(served, timeout=60, step=0.3):
    print(f"debuginfod did not serve the debug file:\n{open(srv_log.name).read()[-2000:]}")
    server.kill()
    sys.exit(1)

phase("debuginfod serves the debug file")
prog = Target([binary])
prog.start()
# the same program under another build-id: the last byte of its note changed
binary2 = os.path.join(work, "bin", "fleet_target2")
with open(binary, "rb") as f:
    image = bytearray(f.read())
at = image.find(bytes.fromhex(bid))
t.check(at > 0 and image.find(bytes.fromhex(bid), at + 1) < 0, "the build-id is in the file once")
image[at + len(bid) // 2 - 1] ^= 0xFF
bid2 = image[at:at + len(bid) // 2].hex()
with open(binary2, "wb") as f:
    f.write(image)
os.chmod(binary2, 0o755)
prog2 = Target([binary2])
prog2.start()


def status(d):
    t0 = time.monotonic()
    st, body = d.get("/api/status", timeout=30)
    return time.monotonic() - t0, body["debuginfod"]


def outcome(d, which=None):
    _, s = status(d)
    for o in s["recent"]:
        if o["build_id"] == (which or bid):
            return o
    return None


def folded(d, p=None):
    st, _, data = d.request("GET", f"/api/cpu/folded?pid={(p or prog).pid}")
    t.eq(st, 200, "GET /api/cpu/folded")
    return data.decode()


def named(text):
    return all(f in text for f in FUNCS)


def start(urls, cache, more=()):
    pids = [a for p in (prog.pid, *more) for a in ("--pid", str(p))]
    return Daemon(qprofd, [*pids, "--frequency", "499", "--debuginfod", urls,
                           "--debuginfod-cache", cache, "--debuginfod-timeout", str(TIMEOUT_S),
                           "--debuginfod-max-mb", "1"])


cache = os.path.join(work, "cache")
rel = os.path.join(".build-id", bid[:2], bid[2:] + ".debug")
try:
    # ---- A: four bad servers, then the real one
    urls = " ".join(f"http://127.0.0.1:{p}" for p in (closed, silent.port, noisy, wrong, bare, real))
    d = start(urls, cache)
    phase("A: qprofd up")
    fetching = wait_for(lambda: status(d)[1]["fetching"] == bid, timeout=30)
    t.check(fetching, "the target's build-id is being fetched")
    worst = 0.0
    text = ""
    for _ in range(3):  # while the silent server holds the fetch
        took, s = status(d)
        worst = max(worst, took)
        text = folded(d)
        time.sleep(0.4)
    t.check(worst < TIMEOUT_S / 2, f"status answers while the silent server holds the fetch "
            f"(slowest {worst:.2f} s, the timeout is {TIMEOUT_S} s)")
    t.check(status(d)[1]["fetching"] == bid, "still fetching after those requests")
    t.check("fleet_target+0x" in text and not any(f in text for f in FUNCS),
            "before the fetch the target's frames are unnamed")
    o = wait_for(lambda: outcome(d), timeout=8 * TIMEOUT_S + 30, step=0.2)
    phase("A: the outcome")
    t.check(o is not None, "the build-id has an outcome")
    if o:
        t.eq(o["result"], "fetched", f"outcome ({o['reason']})")
        t.eq(o["bytes"], len(debug_bytes), "bytes fetched")
        t.check(o["ms"] >= TIMEOUT_S * 1000, f"the silent server cost its timeout ({o['ms']} ms)")
        t.check(o["ms"] < 8 * TIMEOUT_S * 1000, f"and no more than the file's bound ({o['ms']} ms)")
        why = o["reason"].split("; ")
        t.eq(len(why), 6, f"one reason per server: {o['reason']}")
        if len(why) == 6:
            t.check(re.search(r"connect|refused", why[0], re.I), f"closed port: {why[0]}")
            t.check(f"no answer within {TIMEOUT_S} s" in why[1], f"silent server: {why[1]}")
            t.check("refused: larger than 1048576 bytes" in why[2], f"noise: {why[2]}")
            t.check("not the one asked for" in why[3], f"another ELF file: {why[3]}")
            t.check("neither .symtab nor .debug_info" in why[4], f"the stripped file: {why[4]}")
            t.check(why[5].endswith(f"{len(debug_bytes)} bytes"), f"real server: {why[5]}")
    _, s = status(d)
    t.check(s["timeouts"] >= 1 and s["fetched"] >= 1 and s["pending"] == 0,
            f"counters: timeouts {s['timeouts']}, fetched {s['fetched']}, pending {s['pending']}")
    t.check(s["fetched_bytes"] >= len(debug_bytes), "fetched_bytes")
    try:
        with open(os.path.join(cache, rel), "rb") as f:
            t.check(f.read() == debug_bytes, "the cached file is the server's, byte for byte")
    except OSError as e:
        t.check(False, f"the cached file: {e}")
    left = [n for n in os.listdir(cache) if n.startswith(".tmp")]
    t.eq(left, [], "no temporary file left in the cache")
    text = wait_for(lambda: (lambda x: x if named(x) else "")(folded(d)), timeout=10)
    t.check(named(text), "after the fetch the target's functions are named "
            f"({', '.join(f for f in FUNCS if f not in (text or ''))} missing)")
    go = shutil.which("go")
    if go:
        st, _, pb = d.request("GET", f"/pprof/profile?seconds=1&pid={prog.pid}")
        path = os.path.join(work, "cpu.pb.gz")
        with open(path, "wb") as f:
            f.write(pb)
        env = {**os.environ, "HOME": work, "GOCACHE": os.path.join(work, "gocache")}
        out = subprocess.run([go, "tool", "pprof", "-lines", "-top", path], capture_output=True,
                             text=True, timeout=300, env=env).stdout
        t.check(re.search(r"work_(one|two|three) \S*fleet_target\.c:\d+", out),
                f"go tool pprof -lines names source lines:\n{out[-800:]}")
    else:
        print("note: go is not installed: source lines not checked through pprof")
    d.stop()
    phase("A: done")

    # ---- B and C: the server stopped, the same cache; a second copy of
    # another build-id (one byte of its note changed) is in no cache
    server.terminate()
    server.wait(timeout=30)
    d = start(f"http://127.0.0.1:{real}", cache, [prog2.pid])
    text = wait_for(lambda: (lambda x: x if named(x) else "")(folded(d)), timeout=10)
    t.check(named(text), "restarted on the cache: the functions are named")
    t.check(outcome(d) is None, "and the build-id is not asked for")
    o = wait_for(lambda: outcome(d, bid2), timeout=30, step=0.2)
    t.check(o is not None and o["result"] == "failed" and re.search(r"connect", o["reason"], re.I),
            f"server stopped: failed, and says why ({o})")
    took, s = status(d)
    t.check(took < TIMEOUT_S / 2, f"status answers ({took:.2f} s)")
    t.check(s["failed"] >= 1 and s["fetched"] == 0, f"failed {s['failed']}, fetched {s['fetched']}")
    text = folded(d, prog2)
    t.check("fleet_target2+0x" in text and not any(f in text for f in FUNCS),
            "the second copy's frames stay unnamed")
    out = subprocess.run([cli, "status"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "QPROF_SOCKET": d.sock}).stdout
    t.check(re.search(r"^debuginfod: 0 fetched \(0 bytes\), 0 missing, \d+ failed, 0 refused, "
                      r"0 pending$", out, re.M), f"qprof-cli status: the counters\n{out}")
    t.check(re.search(r"^  no debug file for \S*/fleet_target2 \(failed\): \S+: .*connect", out,
                      re.M | re.I), "qprof-cli status: why fleet_target2 is not named")
    d.stop()
    phase("B, C: done")
finally:
    prog.finish()
    prog2.finish()
    for c in children:
        if c.poll() is None:
            c.terminate()
            c.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)
sys.exit(t.done())
