#!/usr/bin/env python3
"""Many targets exiting at once: N processes attached with --pid, all
ended together (they read one pipe, whose write end the test closes).
The poll loop used to close each exited target's links one target after
the other, each waiting for the kernel's grace periods (150 BPF targets
exiting: 113 seen exited after 40 s; 200 ring targets: none after 12 s; a
SIGTERM not obeyed in 20 s), then wrote the reports with an fsync a file.

The test sees each target's exit itself (a pidfd each, polled together)
and reads from /api/status when qprofd saw it exited (exited_ms), wrote
its report (reported_ms) and had its links let go by the kernel
(released_ms), on the same wall clock: each of the three, for every
target, within BOUND_S of that target's exit (when the test saw it, or
qprofd if earlier), timed by qprofd itself (how fast the test polls the
status does not count); REPORT_S (BOUND_S unless given) for the reports,
which are real work (five files and a flame graph each, on a real disk).
Every report is complete on disk (its five files), and qprofd holds no more uprobe link than a qprofd
without targets. A qprofd without those figures in its status is timed
from outside instead (the test's polling counts then). With "sigterm", a
SIGTERM sent while N targets exit must end qprofd within BOUND_S too: from
the signal to the exit seen by a pidfd, qprofd's own "stopped in" printed.

usage: test_exit_storm.py QPROFD EDGE_TARGET N BOUND_S[,REPORT_S] COLLECTOR [sigterm]"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qptest  # noqa: E402
from qptest import collector_args, Daemon, Failures, require_root, wait_for  # noqa: E402

qprofd, edge = sys.argv[1:3]
N = int(sys.argv[3])
BOUND, _, REPORT_BOUND = sys.argv[4].partition(",")
BOUND = float(BOUND)
REPORT_BOUND = float(REPORT_BOUND or BOUND)
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


def exits(procs, timeout=60):
    """Wall-clock time of each pid's exit, as its pidfd says (polled together)."""
    fds = {os.pidfd_open(p.pid): p.pid for p in procs}
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    seen = {}
    deadline = time.monotonic() + timeout
    while fds and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            seen[fds.pop(fd)] = time.time()
            poller.unregister(fd)
            os.close(fd)
    for fd in fds:
        os.close(fd)
    return seen


REPORT_FILES = ("scopes.json", "cpu.folded", "cpu.svg", "report.json", "summary.txt")


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
        timed = all("reported_ms" in x and "released_ms" in x for x in st["targets"])
        held = bpf_links(d.proc.pid)
        t.check(held > base, f"{what}: the targets hold links ({held} against {base} without)")
        t0 = time.monotonic()
        os.close(w)
        gone = exits(procs)
        t.eq(len(gone), N, f"{what}: the test saw every target exit")
        for p in procs:
            p.wait(timeout=30)
        reports = os.path.join(d.dir, "reports")

        def done():
            s = d.get("/api/status", timeout=120)[1]["targets"]
            if timed:
                return all(x["state"] == "exited" and x["reported_ms"] and x["released_ms"] for x in s) and s
            return sum(x["state"] == "exited" for x in s) == N and s

        def reported():
            try:
                return sum(os.path.exists(os.path.join(reports, r, "summary.txt"))
                           for r in os.listdir(reports)) >= N
            except OSError:
                return False

        final = wait_for(done, timeout=120, step=0.05)
        t_seen = time.monotonic() - t0
        rep = wait_for(reported, timeout=120, step=0.05)
        t_rep = time.monotonic() - t0
        det = wait_for(lambda: bpf_links(d.proc.pid) <= base, timeout=120, step=0.05)
        t_det = time.monotonic() - t0
        t.check(final and rep and det, f"{what}: every target exited, reported and detached in the end")
        if timed and final:
            # each exit: when the test saw it, or qprofd if first (the
            # test's own poll may lag; neither sees an exit before it is)
            when = {x["pid"]: min(gone[x["pid"]], x["exited_ms"] / 1e3) for x in final if x["pid"] in gone}
            lag = {k: max(x[k] / 1e3 - when[x["pid"]] for x in final if x["pid"] in when)
                   for k in ("exited_ms", "reported_ms", "released_ms")}
            seen_s, rep_s, det_s = lag["exited_ms"], lag["reported_ms"], lag["released_ms"]
            how = "after each target's exit, by qprofd's clock"
        else:
            seen_s, rep_s, det_s = t_seen, t_rep, t_det
            how = "after the pipe closed, polled by the test"
        print(f"{what}: seen exited within {seen_s:.2f} s, reported within {rep_s:.2f} s, "
              f"links let go within {det_s:.2f} s ({how}; load {os.getloadavg()[0]:.1f})", flush=True)
        for ln in d.logtext().splitlines():
            if "exit reports written" in ln:
                print(f"{what}: qprofd: {ln.strip()}", flush=True)
        t.check(seen_s <= BOUND, f"{what}: all seen exited within {BOUND} s ({seen_s:.2f} s)")
        t.check(rep_s <= REPORT_BOUND, f"{what}: all reported within {REPORT_BOUND} s ({rep_s:.2f} s)")
        t.check(det_s <= BOUND, f"{what}: all detached within {BOUND} s ({det_s:.2f} s)")
        try:
            dirs = os.listdir(reports)
        except OSError:
            dirs = []
        whole = sum(all(os.path.isfile(os.path.join(reports, r, f)) for f in REPORT_FILES) for r in dirs)
        t.eq((len(dirs), whole), (N, N), f"{what}: one complete report a target (its {len(REPORT_FILES)} files)")
        tmp = [f for r in dirs for f in os.listdir(os.path.join(reports, r)) if f.startswith(".")]
        t.eq(tmp, [], f"{what}: no temporary file left in the reports")
    finally:
        t.eq(d.stop(), 0, f"{what}: qprofd exits 0")


def sigterm_mid_storm(collector):
    what = f"{collector}, SIGTERM while {N} targets exit"
    pids, w, procs = spawn(N)
    args = [*collector_args(qprofd, collector), "--no-calibrate"]
    for p in pids:
        args += ["--pid", str(p)]
    d = Daemon(qprofd, args)
    pidfd = os.pidfd_open(d.proc.pid)
    os.close(w)
    time.sleep(0.3)  # the poll loop meets the exits
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    ended = select.select([pidfd], [], [], 120)[0]
    took = time.monotonic() - t0
    os.close(pidfd)
    try:
        code = d.proc.wait(timeout=10 if ended else 1)
    except subprocess.TimeoutExpired:
        code = None
    own = re.search(r"stopped in ([0-9.]+) ms", d.logtext())
    print(f"{what}: qprofd ended in {took:.2f} s (its own count from the signal's handling: "
          f"{own.group(1) + ' ms' if own else 'none'}; load {os.getloadavg()[0]:.1f})", flush=True)
    t.eq(code, 0, f"{what}: qprofd exits 0")
    t.check(took <= BOUND, f"{what}: SIGTERM obeyed within {BOUND} s ({took:.2f} s)")
    for p in procs:
        p.wait(timeout=30)


storm(COLLECTOR, baseline_links(COLLECTOR))
if SIGTERM:
    sigterm_mid_storm(COLLECTOR)
sys.exit(t.done())
