#!/usr/bin/env python3
"""Many targets exiting at once: N processes attached with --pid, all
ended together (they read one pipe, whose write end the test closes).
All of them must be seen exited (/api/status), reported (a report
directory each) and detached (qprofd holds no more BPF link than a qprofd
without targets) within a bound, and a SIGTERM sent in the middle of such
a storm must end qprofd within a bound. The poll loop used to close each
exited target's links one target after the other, each waiting for the
kernel's grace periods: 150 BPF targets exiting, 113 seen exited after
40 s; 200 ring targets, none after 12 s; a SIGTERM not obeyed in 20 s.

The bounds are generous (a loaded CI machine): the figures measured are
printed; bench/lifecycle.sh measures them against a baseline.

usage: test_exit_storm.py QPROFD EDGE_TARGET N BOUND_S COLLECTOR [sigterm]
(sigterm: also the SIGTERM in the middle of a storm)"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qptest  # noqa: E402
from qptest import collector_args, Daemon, Failures, require_root, wait_for  # noqa: E402

qprofd, edge = sys.argv[1:3]
N = int(sys.argv[3])
BOUND = float(sys.argv[4])
COLLECTOR = sys.argv[5]
SIGTERM = sys.argv[6:] == ["sigterm"]
require_root()
t = Failures(f"integration_exit_storm ({sys.argv[5]})")


def spawn(n):
    """N holders on one pipe: (pids, write end, Popen objects)."""
    r, w = os.pipe()
    procs = []
    for _ in range(n):
        p = subprocess.Popen([edge, "--mode", "hold"], stdin=r, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        qptest._started.append(p)
        procs.append(p)
    os.close(r)
    pids = [json.loads(p.stdout.readline())["pid"] for p in procs]
    return pids, w, procs


def bpf_links(pid):
    """The uprobe links qprofd holds (its descriptors): the targets' probes.
    A program loaded when a target first needs it keeps its tracepoint link
    with qprofd, so tracepoint links are left out."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf_link":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                n += any(ln.startswith("link_type:") and "uprobe" in ln for ln in f)
        except OSError:
            pass
    return n


def baseline_links(collector):
    d = Daemon(qprofd, [*collector_args(qprofd, collector), "--no-calibrate"])
    try:
        return bpf_links(d.proc.pid)
    finally:
        d.stop()


def storm(collector, base):
    what = f"{collector}, {N} targets"
    pids, w, procs = spawn(N)
    args = [*collector_args(qprofd, collector), "--no-calibrate"]
    for p in pids:
        args += ["--pid", str(p)]
    d = Daemon(qprofd, args)
    try:
        st = d.get("/api/status")[1]
        t.eq(sorted(x["pid"] for x in st["targets"] if x["state"] == "running"), sorted(pids),
             f"{what}: all attached")
        held = bpf_links(d.proc.pid)
        t.check(held > base, f"{what}: the targets hold links ({held} against {base} without)")
        t0 = time.monotonic()
        os.close(w)
        for p in procs:
            p.wait(timeout=30)

        def exited():
            s = d.get("/api/status", timeout=120)[1]
            return sum(x["state"] == "exited" for x in s["targets"]) == N

        seen = wait_for(exited, timeout=120, step=0.05)
        t_seen = time.monotonic() - t0
        reports = os.path.join(d.dir, "reports")

        def reported():
            try:
                return len(os.listdir(reports)) >= N
            except OSError:
                return False

        rep = wait_for(reported, timeout=120, step=0.05)
        t_rep = time.monotonic() - t0
        det = wait_for(lambda: bpf_links(d.proc.pid) <= base, timeout=120, step=0.05)
        t_det = time.monotonic() - t0
        print(f"{what}: seen exited in {t_seen:.2f} s, reported in {t_rep:.2f} s, "
              f"detached in {t_det:.2f} s", flush=True)
        t.check(seen and t_seen <= BOUND, f"{what}: all seen exited within {BOUND} s ({t_seen:.2f} s)")
        t.check(rep and t_rep <= BOUND, f"{what}: all reported within {BOUND} s ({t_rep:.2f} s)")
        t.check(det and t_det <= BOUND, f"{what}: all detached within {BOUND} s ({t_det:.2f} s, "
                f"{bpf_links(d.proc.pid)} links against {base})")
    finally:
        t.eq(d.stop(), 0, f"{what}: qprofd exits 0")


def sigterm_mid_storm(collector):
    what = f"{collector}, SIGTERM while {N} targets exit"
    pids, w, procs = spawn(N)
    args = [*collector_args(qprofd, collector), "--no-calibrate"]
    for p in pids:
        args += ["--pid", str(p)]
    d = Daemon(qprofd, args)
    os.close(w)
    time.sleep(0.3)  # the poll loop meets the exits
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    try:
        code = d.proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        code = None
    took = time.monotonic() - t0
    print(f"{what}: qprofd ended in {took:.2f} s", flush=True)
    t.eq(code, 0, f"{what}: qprofd exits 0")
    t.check(took <= BOUND, f"{what}: SIGTERM obeyed within {BOUND} s ({took:.2f} s)")
    for p in procs:
        p.wait(timeout=30)


storm(COLLECTOR, baseline_links(COLLECTOR))
if SIGTERM:
    sigterm_mid_storm(COLLECTOR)
sys.exit(t.done())
