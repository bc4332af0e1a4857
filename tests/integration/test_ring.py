#!/usr/bin/env python3
"""The ring collector end to end (marker ABI 2, qprofd --ring).

- 2 threads x N x { outer ~20 us { inner ~1 us }, mark }: counts exact,
  parents right, means within 3 % + 30 ns of the program's own clock, no
  record lost, no drop.
- The same program through POST "collector": "bpf": counts exact there too;
  bad "collector" values refused; an ABI-1 build gets the BPF collector with
  a note even under --ring.
- 10 000 threads created and joined two at a time while attached: two rings
  reused, the program's RSS and the daemon's rings bounded, every scope
  counted.
- Forged ring_register announcements (unmapped, huge, no header) and a ring
  scribbled with garbage: counted, the daemon answers, figures of the real
  scopes intact.
- SIGKILL of qprofd while a thread writes flat out: the kernel lowers the
  semaphore (read by the program) and the ring's head stops moving.

usage: test_ring.py QPROFD RING_TARGET SCOPE_TARGET_ABI1"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, _started, require_root, wait_for  # noqa: E402

qprofd, ring_bin, abi1_bin = sys.argv[1:4]
require_root()
t = Failures("integration_ring")
N = 5000  # per thread


class Prog:
    """ring_target: one command a line, one JSON answer a line."""

    def __init__(self):
        self.p = subprocess.Popen([ring_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        _started.append(self.p)
        info = self.cmd("pid")
        self.pid, self.sem_addr = info["pid"], info["sem_addr"]

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def quit(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)

    def semaphore(self):
        """qprof_ring_semaphore read from outside, in /proc/PID/mem."""
        with open(f"/proc/{self.pid}/mem", "rb") as f:
            f.seek(self.sem_addr)
            return int.from_bytes(f.read(2), "little")


def rows_of(d, pid):
    st, body = d.get(f"/api/scopes?pid={pid}")
    t.eq(st, 200, "scopes answers")
    return {(r["name"], r["parent"]): r for r in body["scopes"]}


def target_of(d, pid):
    _, s = d.get("/api/status")
    return next((x for x in s["targets"] if x["pid"] == pid), None), s


def wait_count(d, pid, key, want, timeout=20):
    """The drain is asynchronous: wait until the row reaches WANT."""
    wait_for(lambda: rows_of(d, pid).get(key, {}).get("count", 0) >= want, timeout, 0.1)
    return rows_of(d, pid).get(key, {})


def check_means(rows, mine, tag):
    for name, parent, own in (("outer", None, mine["outer_mean"]), ("inner", "outer", mine["inner_mean"])):
        got = rows.get((name, parent), {}).get("mean_ns") or 0
        tol = 0.03 * own + 30
        t.check(abs(got - own) <= tol,
                f"{tag}: {name} mean {got:.1f} ns vs the program's {own:.1f} ns (tolerance {tol:.1f})")
        print(f"{tag}: {name} mean {got:.1f} ns, program {own:.1f} ns (outside "
              f"{mine[name + '_out']:.1f}, inside {mine[name + '_in']:.1f}), diff {got - own:+.1f} ns",
              flush=True)


prog = Prog()
d = Daemon(qprofd, ["--ring", "--pid", str(prog.pid)])
try:
    tg, status = target_of(d, prog.pid)
    t.eq(tg["collector"], "ring", "--ring: the target's collector")
    t.eq(tg["collector_note"], None, "no note for an ABI-2 program")
    t.eq(status["ring"]["running"], True, "status: ring collector running")
    t.eq(status["ring"]["default"], True, "status: ring is the default")
    nreg = subprocess.run(["readelf", "-n", ring_bin], capture_output=True,
                          text=True).stdout.count("Name: ring_register")
    t.eq(nreg, 2, "ring_target has two ring_register sites (the markers' and its forger)")
    t.eq(prog.semaphore(), nreg, "semaphore raised while attached: one per uprobe")

    # exact counts and means against the program's own clock
    mine = prog.cmd(f"run {N}")
    t.eq(mine["n"], 2 * N, "the program ran its scopes")
    outer = wait_count(d, prog.pid, ("outer", None), 2 * N)
    rows = rows_of(d, prog.pid)
    t.eq(sorted(rows), sorted([("outer", None), ("inner", "outer"), ("tick", None)]),
         "rows (name, parent)")
    t.eq(outer.get("count"), 2 * N, "outer count exact")
    t.eq(rows.get(("inner", "outer"), {}).get("count"), 2 * N, "inner count exact")
    t.eq(rows.get(("tick", None), {}).get("count"), 2 * N, "mark count exact")
    check_means(rows, mine, "ring")
    r = rows.get(("inner", "outer"), {})
    t.check(r.get("min_ns", 0) <= r.get("p50_ns", 0) <= r.get("max_ns", 0), "inner min <= p50 <= max")
    tg, status = target_of(d, prog.pid)
    ring = tg["ring"]
    t.eq(ring["lost"], 0, "no record lost")
    t.eq(ring["garbage"], 0, "no garbage")
    t.eq(status["scopes"]["dropped"], 0, "no drop")
    t.check(ring["rings"] >= 2, f"the workers' rings drained ({ring['rings']})")
    # 2N outer, inner (enter + exit each) and marks, + THREAD records not counted
    t.eq(ring["records"], 2 * N * 5, "records read = what the workers wrote")
    records0 = ring["records"]

    # values through the ring: the BPF value probe is not attached
    res = prog.cmd("values 1000")
    t.eq(res["value_sem"], 0, "ring target: the BPF value probe is not attached")

    def level(name):
        _, vb = d.get(f"/api/values?pid={prog.pid}")
        return next((v for v in vb["values"] if v["name"] == name), None)
    vn = wait_for(lambda: level("level_nan"), 10, 0.1) or {}
    t.eq(vn.get("nan"), 1, "values: the NaN counted apart")
    t.eq(vn.get("count"), 0, "values: no finite value there")
    v = level("level") or {}
    t.eq(v.get("count"), 1000, "values: count exact")
    t.eq(v.get("min"), 0, "values: min")
    t.eq(v.get("max"), 999, "values: max")
    t.check(abs((v.get("mean") or 0) - 499.5) <= 0.5, f"values: mean {v.get('mean')} ~ 499.5")

    # 10 000 threads while attached
    rss0 = prog.cmd("threads 2")["rss_kb"]
    res = prog.cmd("threads 10000")
    t.eq(res["rings"], 2, "10 000 threads, two alive at once: two rings reused")
    t.check(res["rss_kb"] - rss0 < 16 * 1024,
            f"program RSS bounded: {rss0} -> {res['rss_kb']} KiB")
    ts = wait_count(d, prog.pid, ("thread_scope", None), 10002)
    t.eq(ts.get("count"), 10002, "every thread's scope counted")
    tg, _ = target_of(d, prog.pid)
    t.check(tg["ring"]["rings"] <= 6, f"daemon drains a bounded number of rings ({tg['ring']['rings']})")
    t.eq(tg["ring"]["lost"], 0, "no record lost with 10 000 threads")

    # forged announcements and a scribbled ring
    _, s0 = d.get("/api/status")
    prog.cmd("forge")
    wait_for(lambda: d.get("/api/status")[1]["ring"]["bad"] >= s0["ring"]["bad"] + 3, 10, 0.1)
    _, s1 = d.get("/api/status")
    t.eq(s1["ring"]["bad"] - s0["ring"]["bad"], 3, "forged announcements counted bad")
    prog.cmd("scribble 4000")
    wait_for(lambda: target_of(d, prog.pid)[0]["ring"]["garbage"] > 0, 10, 0.1)
    tg, _ = target_of(d, prog.pid)
    t.check(tg["ring"]["garbage"] > 0, f"scribbled records counted garbage ({tg['ring']['garbage']})")
    rows = rows_of(d, prog.pid)
    t.eq(rows.get(("outer", None), {}).get("count"), 2 * N, "outer intact after garbage")
    t.eq(rows.get(("main_scope", None), {}).get("count"), 1, "the main thread's scope counted")
    t.eq(d.proc.poll(), None, "daemon alive after forged and garbage input")

    # SIGKILL mid-run: the semaphore drops, the markers stop writing
    prog.cmd("spin")
    h0 = prog.cmd("state")
    time.sleep(0.2)
    h1 = prog.cmd("state")
    t.eq(h0["sem"], nreg, "semaphore raised while spinning attached")
    t.check(h1["spin_head"] > h0["spin_head"], "the spinner writes its ring")
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(timeout=30)
    s = wait_for(lambda: prog.cmd("state")["sem"] == 0, 10, 0.05)
    t.check(s, "semaphore back to 0 after SIGKILL of qprofd")
    t.eq(prog.semaphore(), 0, "semaphore 0 in /proc/PID/mem")
    a = prog.cmd("state")["spin_head"]
    time.sleep(0.3)
    b = prog.cmd("state")["spin_head"]
    t.eq(b, a, "the markers stopped writing")
    t.check(prog.cmd("stop")["spun"] > 0, "the spinner kept running")
finally:
    d.stop()
    prog.quit()

# the BPF collector on the same program, and POST "collector" checks
prog = Prog()
d = Daemon(qprofd, ["--ring"])
try:
    st, body = d.post("/api/targets", {"pid": prog.pid, "collector": "fast"})
    t.eq(st, 400, "collector 'fast' refused")
    st, body = d.post("/api/targets", {"binary": ring_bin, "collector": "fast"})
    t.eq(st, 400, "collector 'fast' for a binary refused (a binary on the ring: integration_ring_more)")
    st, body = d.post("/api/targets", {"pid": prog.pid, "collector": "bpf"})
    t.eq(st, 201, "POST collector bpf")
    t.eq(body.get("collector"), "bpf", "answer says bpf")
    t.eq(prog.semaphore(), 0, "BPF collector: ring semaphore stays 0")
    mine = prog.cmd("run 500")
    rows = rows_of(d, prog.pid)
    t.eq(rows.get(("outer", None), {}).get("count"), 1000, "bpf: outer count exact")
    t.eq(rows.get(("inner", "outer"), {}).get("count"), 1000, "bpf: inner count exact")
    t.eq(rows.get(("tick", None), {}).get("count"), 1000, "bpf: mark count exact")
    d.delete(f"/api/targets/{prog.pid}")
    st, body = d.post("/api/targets", {"pid": prog.pid, "collector": "ring"})
    t.eq(st, 201, "POST collector ring after detach")
    t.eq(body.get("collector"), "ring", "answer says ring")
    prog.cmd("run 200")
    c = wait_count(d, prog.pid, ("outer", None), 400).get("count")
    t.eq(c, 400, "ring after bpf: outer counts only its own run")
    t.check(prog.semaphore() > 0, "ring target: semaphore raised")
    st, _ = d.delete(f"/api/targets/{prog.pid}")
    t.eq(st, 200, "ring target detached")
    t.check(wait_for(lambda: prog.semaphore() == 0, 10, 0.05), "detached: semaphore back to 0")
    st, body = d.post("/api/targets", {"pid": prog.pid})
    t.eq(body.get("collector"), "ring", "--ring default again")

    # an ABI-1 program gets the BPF collector with a note, even under --ring
    old = Target([abi1_bin, "--mode", "nested", "--iters", "50"])
    st, body = d.post("/api/targets", {"pid": old.pid})
    t.eq(st, 201, "ABI-1 program attached")
    t.eq(body.get("collector"), "bpf", "ABI-1 program: bpf collector")
    t.check("ABI 1" in (body.get("collector_note") or ""), f"ABI-1 note: {body.get('collector_note')}")
    old.start()
    old.result()
    r = rows_of(d, old.pid)
    t.eq(r.get(("outer", None), {}).get("count"), 100, "ABI-1 program: outer counted by BPF")
    old.finish()
    t.check(prog.semaphore() > 0, "attached again: semaphore raised")
    d.stop()
    t.eq(prog.semaphore(), 0, "qprofd stopped (SIGTERM): semaphore back to 0")
finally:
    d.stop()
    prog.quit()
sys.exit(t.done())
