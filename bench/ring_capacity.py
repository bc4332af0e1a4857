#!/usr/bin/env python3
"""bench/ring_capacity.py - the highest paced rate per thread that the ring
collector keeps exact (nothing lost) for SECS seconds, on 1 and 2 threads,
with qprofd's CPU at that rate (a share of one core, from /proc/PID/stat).
Runs tests/ring_exact_target under a qprofd of its own (--ring, the default
--ring-records unless RING_RECORDS is set), rates tried upwards from RATES;
each run is checked by arithmetic (counted + lost_scopes == written) and
its loss printed. Figures are printed, never judged by the exit status.

  bench/ring_capacity.py [BUILD_DIR]   SECS=60 RATES=250000,500000,1000000,2000000,3000000
                                       THREADS=1,2 RING_RECORDS=N
Needs root."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))
qprofd = os.environ.get("QPROFD", os.path.join(build, "daemon", "qprofd"))
target = os.path.join(build, "tests", "ring_exact_target")
secs = float(os.environ.get("SECS", "60"))
rates = [int(x) for x in os.environ.get("RATES", "250000,500000,1000000,2000000,3000000").split(",")]
threads = [int(x) for x in os.environ.get("THREADS", "1,2").split(",")]
tick = os.sysconf("SC_CLK_TCK")
for f in (qprofd, target):
    if not os.access(f, os.X_OK):
        sys.exit(f"missing {f}: cmake --build {build}")


def get(sock, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(sock)
    s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / tick


def one(nt, rate):
    d = tempfile.mkdtemp(prefix="qprof-ringcap-")
    sock = os.path.join(d, "q.sock")
    prog = subprocess.Popen([target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    prog.stdin.write("pid\n")
    prog.stdin.flush()
    pid = json.loads(prog.stdout.readline())["pid"]
    args = [qprofd, "--socket", sock, "--report-dir", os.path.join(d, "r"), "--ring", "--pid", str(pid)]
    if os.environ.get("RING_RECORDS"):
        args += ["--ring-records", os.environ["RING_RECORDS"]]
    q = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):  # until it serves and its CPU sampler is loaded
            if os.path.exists(sock):
                try:
                    if not get(sock, "/api/status").get("cpu", {}).get("starting"):
                        break
                except OSError:
                    pass
            time.sleep(0.05)
        c0, t0 = cpu_s(q.pid), time.time()
        prog.stdin.write(f"paced {nt} {rate} {secs}\n")
        prog.stdin.flush()
        res = json.loads(prog.stdout.readline())
        c1, t1 = cpu_s(q.pid), time.time()
        heads = sum(res["heads"])
        for _ in range(600):
            tg = next(x for x in get(sock, "/api/status")["targets"] if x["pid"] == pid)
            if tg["ring"]["head"] == heads and tg["ring"]["unread"] == 0:
                break
            time.sleep(0.05)
        r = tg["ring"]
        counted = sum(x["count"] for x in get(sock, f"/api/scopes?pid={pid}")["scopes"] if x["name"] == "exact")
        exact = counted + r["lost_scopes"] == res["written"]
        return dict(written=res["written"], counted=counted, lost=r["lost_scopes"], arithmetic=exact,
                    cpu=(c1 - c0) / (t1 - t0), records=res["records"][0])
    finally:
        prog.stdin.write("quit\n")
        prog.stdin.flush()
        prog.wait(timeout=30)
        q.terminate()
        q.wait(timeout=30)


with open("/proc/loadavg") as f:
    load = f.read().split()[0]
print(f"ring capacity, {secs:.0f} s a run, load average {load} on {os.cpu_count()} CPUs, "
      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
for nt in threads:
    best = None
    for rate in rates:
        r = one(nt, rate)
        print(f"  {nt} thread(s) x {rate:>9,}/s: written {r['written']:,}, counted {r['counted']:,}, "
              f"lost {r['lost']:,} scopes, counted + lost == written: {r['arithmetic']}, "
              f"qprofd {100 * r['cpu']:.1f} % of a core, rings of {r['records']:,} records", flush=True)
        if r["lost"]:
            break
        best = (rate, r["cpu"])
    if best:
        print(f"{nt} thread(s): exact up to {best[0]:,} scopes/s per thread (qprofd {100 * best[1]:.1f} % of a core)",
              flush=True)
    else:
        print(f"{nt} thread(s): not exact at {rates[0]:,} scopes/s per thread", flush=True)
