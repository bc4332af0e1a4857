#!/usr/bin/env python3
"""CPU samples over many distinct stacks (losses climbed
without bound because the kernel's stack map was never cleared and filled
up). A program walks random call paths with 2^20 distinct stacks, sampled at
999 Hz until at least 20,000 samples: more distinct stacks than the old stack
map held (16,384). Then: no sample lost, and the folded counts of the target
add up exactly to the samples qprofd counted.

usage: test_cpu_stacks.py QPROFD SCOPE_TARGET QPROF_CLI STACKS_TARGET"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, _, cli, stacks_bin = sys.argv[1:5]
require_root()
t = Failures("integration_cpu_stacks")
WANT = 20000
OLD_MAP = 16384

prog = subprocess.Popen([stacks_bin], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
_started.append(prog)
pid = json.loads(prog.stdout.readline())["pid"]
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(pid), "--frequency", "999"])
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    # a generous bound, not a measurement: on a loaded 2-CPU machine 20,000
    # samples at 999 Hz take 10-40 s
    deadline = time.time() + 240
    samples = 0
    while time.time() < deadline:
        st, status = d.get("/api/status")
        samples = status["cpu"]["samples"]
        if samples >= WANT:
            break
        time.sleep(1)
    t.check(samples >= WANT, f"{WANT} samples within 240 s (got {samples})")
    os.kill(pid, signal.SIGKILL)
    prog.wait()
    time.sleep(0.2)
    # the folded read drains the sample ring; /api/status shows the figures
    # of the last drain (it never waits for one), so it is read after it
    st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid}", timeout=120)
    t.eq(st, 200, "folded answers")
    st, status = d.get("/api/status")
    cpu = status["cpu"]
    lines = body.decode().splitlines()
    total = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines)
    print(f"samples {cpu['samples']}, lost {cpu['lost']}, distinct folded stacks {len(lines)}")
    t.eq(cpu["lost"], 0, "no sample lost")
    t.eq(total, cpu["samples"], "the folded counts add up to the samples counted")
    t.eq(cpu["aged"], 0, "nothing aged out in a short run (a key ages after 600 s idle)")
    t.check(len(lines) > OLD_MAP,
            f"more distinct stacks than the old stack map held ({len(lines)} > {OLD_MAP})")
    t.check("+0xffffffffffffffff" not in body.decode(),
            "no frame at address -1 (a stack ends at its first 0, as the stack map's did)")
    deep = sum(1 for ln in lines if ln.count("path_") >= 15)
    t.check(deep * 2 > len(lines), f"most stacks are the deep paths ({deep} of {len(lines)})")
    st, status = d.get("/api/status")
    t.eq(status["cpu"]["samples"], cpu["samples"], "no sample after the target died")

    # detaching drops its samples and frees its stacks; a second target is
    # then profiled from a clean table, still without loss
    st, _ = d.delete(f"/api/targets/{pid}")
    t.eq(st, 200, "detach the dead target")
    st, status = d.get("/api/status")
    print(f"CPU table: {cpu['table_bytes']} bytes before the detach, "
          f"{status['cpu']['table_bytes']} after")
    # its frames are freed; the arrays keep their capacity
    t.check(0 < status["cpu"]["table_bytes"] < cpu["table_bytes"] - 8 * WANT,
            "the detached target's stacks leave the table's bytes")
    prog2 = subprocess.Popen([stacks_bin], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _started.append(prog2)
    pid2 = json.loads(prog2.stdout.readline())["pid"]
    st, _ = d.post("/api/targets", {"pid": pid2})
    t.eq(st, 201, "attach a second target")
    before = cpu["samples"]
    deadline = time.time() + 120
    while time.time() < deadline:
        st, status = d.get("/api/status")
        if status["cpu"]["samples"] - before >= 3000:
            break
        time.sleep(0.5)
    os.kill(pid2, signal.SIGKILL)
    prog2.wait()
    time.sleep(0.2)
    st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid2}", timeout=120)
    st, status = d.get("/api/status")
    lines2 = body.decode().splitlines()
    total2 = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines2)
    print(f"second target: samples {status['cpu']['samples'] - before}, folded {total2}")
    t.eq(status["cpu"]["lost"], 0, "no sample lost after a detach")
    t.eq(total2, status["cpu"]["samples"] - before, "the second target's folded counts = its samples")
    t.check(total2 >= 3000, f"the second target was sampled ({total2})")
finally:
    if prog.poll() is None:
        prog.kill()
        prog.wait()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
sys.exit(t.done())
