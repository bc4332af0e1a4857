#!/usr/bin/env python3
"""No registry lock across an attach or a detach: while processes
with 8194 probe sites each are attached and detached, several at once,
GET /api/status answers often, 95 % of the answers within 100 ms and the
slowest within 1 s.

Four copies of sites_target (each its own file, so each attach parses its
own notes and descriptors) run. Three workers each attach one of them
(POST /api/targets {"pid"}), wait half a second and detach it (DELETE);
two more workers attach the fourth at the same moment: exactly one gets
201 and the other 409 (the pid is reserved while its files are parsed
and attached without the lock). Meanwhile the status is asked every 20 ms
over one kept-alive connection (see test_lock_latency.py for why one
connection). The bound is the issue's,
100 ms, generous for a request that takes a lock and reads a few counters;
it holds for the 95th percentile: one answer in 53 took 116 ms in a CI run
on a VM with a load average of 9 from other builds, where the thread waited
for a CPU, not a lock (see test_lock_latency.py, which timed that inside
qprofd). The slowest answer gets a generous wall-time bound, 1 s.
With the registry lock held across them (main before this change), the
status waited for them: 3 answers in the whole run, the slowest 1.02 s
(attaches took 0.4-1.0 s, detaches 0.2-0.5 s on this loaded VM).

usage: test_attach_latency.py QPROFD SITES_TARGET"""
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, UnixHTTPConnection, _started, require_root  # noqa: E402

qprofd, sites_bin = sys.argv[1:3]
require_root()
t = Failures("integration_attach_latency")
BOUND_MS = 100.0      # the 95th percentile
MAX_MS = 1000.0       # the slowest: a generous bound on wall time, not a measurement
SITES = 8196  # 8194 scope sites, the ring_register probe and the ring_config note of marker ABI 2

tmp = tempfile.mkdtemp(prefix="qprof-sites-")
progs, pids = [], []
for i in range(4):
    path = os.path.join(tmp, f"sites{i}")
    shutil.copy(sites_bin, path)   # another inode: parsed on its own
    # niced: the programs must not starve qprofd and this client on 2 CPUs
    p = subprocess.Popen([path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         preexec_fn=lambda: os.nice(19))
    _started.append(p)
    progs.append(p)
    pids.append(json.loads(p.stdout.readline())["pid"])
d = Daemon(qprofd, ["--collector", "bpf"])
try:
    results = multiprocessing.Queue()

    def attach_detach(pid):
        t0 = time.monotonic()
        st, body = d.post("/api/targets", {"pid": pid})
        t1 = time.monotonic()
        results.put(("attach", pid, st, (body or {}).get("probes"), t1 - t0))
        time.sleep(0.5)
        t0 = time.monotonic()
        st, body = d.delete(f"/api/targets/{pid}")
        results.put(("detach", pid, st, (body or {}).get("state"), time.monotonic() - t0))

    def attach_only(pid):
        t0 = time.monotonic()
        st, body = d.post("/api/targets", {"pid": pid})
        results.put(("race", pid, st, (body or {}).get("probes") if st == 201 else (body or {}).get("error"),
                     time.monotonic() - t0))

    conn = UnixHTTPConnection(d.sock, 60)
    conn.request("GET", "/api/status")
    conn.getresponse().read()
    workers = [multiprocessing.Process(target=attach_detach, args=(pid,)) for pid in pids[:3]]
    workers += [multiprocessing.Process(target=attach_only, args=(pids[3],)) for _ in range(2)]
    for w in workers:
        w.start()
    lat = []
    deadline = time.monotonic() + 180   # a generous bound on the whole, not a measurement
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        conn.request("GET", "/api/status")
        r = conn.getresponse()
        r.read()
        lat.append((time.monotonic() - t0) * 1000.0)
        t.eq(r.status, 200, "status answers")
        if not any(w.is_alive() for w in workers):
            break
        time.sleep(0.02)
    for w in workers:
        w.join(timeout=60)
    got = []
    while not results.empty():
        got.append(results.get())
    for pid in pids[:3]:
        a = [g for g in got if g[0] == "attach" and g[1] == pid]
        dt = [g for g in got if g[0] == "detach" and g[1] == pid]
        t.check(len(a) == 1 and a[0][2] == 201 and a[0][3] == SITES,
                f"pid {pid} attached with {SITES} sites ({a})")
        t.check(len(dt) == 1 and dt[0][2] == 200 and dt[0][3] == "detached", f"pid {pid} detached ({dt})")
    race = sorted(g[2] for g in got if g[0] == "race")
    t.eq(race, [201, 409], "two attaches of one pid at once: one 201, one 409")
    t.check(any(g[0] == "race" and g[2] == 201 and g[3] == SITES for g in got),
            f"the winner has {SITES} sites")
    st, status = d.get("/api/status")
    t.eq(sorted(x["pid"] for x in status["targets"]), [pids[3]], "only the raced pid is a target")
    st, sc = d.get(f"/api/scopes?pid={pids[3]}")
    hot = [s for s in sc["scopes"] if s["name"] == "hot"]
    t.check(len(hot) == 1 and hot[0]["count"] > 0, f"the raced pid's scope 'hot' is counted ({hot})")
    st, body = d.delete(f"/api/targets/{pids[3]}")
    t.eq(st, 200, "the raced pid detaches")
    print("attach/detach: " + ", ".join(f"{g[0]} {g[1]} {g[2]} {g[4] * 1000:.0f} ms" for g in sorted(got)))
    lat.sort()
    p95 = lat[(len(lat) * 95) // 100] if lat else float("inf")
    print(f"status: {len(lat)} answers during them, median {lat[len(lat) // 2]:.1f} ms, "
          f"95th percentile {p95:.1f} ms (bound {BOUND_MS:.0f} ms), max {lat[-1]:.1f} ms "
          f"(bound {MAX_MS:.0f} ms)", flush=True)
    t.check(len(lat) >= 20, f"status asked often enough ({len(lat)} times)")
    t.check(p95 < BOUND_MS, f"95 % of the status answers within {BOUND_MS:.0f} ms (95th percentile {p95:.1f} ms)")
    t.check(lat[-1] < MAX_MS, f"every status answered within {MAX_MS:.0f} ms (max {lat[-1]:.1f} ms)")
    conn.close()
finally:
    for p in progs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
