#!/usr/bin/env python3
"""The CPU sampler loads while qprofd serves.

qprofd answers once its targets are attached; the CPU sampler, whose
stack-walking programs are most of the verifier's work, goes on loading on
a thread of its own and is published a moment later. This test starts
`qprofd --pid P` on a program that burns CPU (cpu_target, spinning from the
start) and polls from the first answer on:

  - the first /api/status that answers has P attached and running, and its
    "cpu" says either running or starting (with the reason), never stopped;
  - while it says starting, /api/cpu/folded?pid=P answers 503 with the
    reason, `qprof-cli status` prints "starting", and
    `qprof-cli folded --pid P` waits for the sampler instead of failing;
  - the status turns to running within 60 s, and then P, attached before
    the sampler existed, is sampled: /api/cpu/folded?pid=P names the three
    work functions after 2 s (the publish added the targets it found);
  - a second target attached after the publish is sampled too;
  - `qprofd --pid P --heap` (which waits for the sampler: the heap walks
    with its tables) answers with the sampler running at its first answer.

Whether a poll catches the starting state depends on the machine's speed;
the test says which it saw, and checks the rest either way.

usage: test_cpu_late.py QPROFD QPROF_CLI CPU_TARGET"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, cli, cpu_target = sys.argv[1:4]
require_root()
t = Failures("integration_cpu_late")


def spinner():
    p = subprocess.Popen([cpu_target], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _started.append(p)
    pid = json.loads(p.stdout.readline())["pid"]
    os.kill(pid, signal.SIGUSR1)
    return p, pid


def folded_names(d, pid):
    st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid}", timeout=60)
    names = set()
    if st == 200:
        for line in body.decode().splitlines():
            for f in line.rpartition(" ")[0].split(";"):
                names.add(f.split(" ")[0])
    return st, body, names


p1, pid1 = spinner()
d = Daemon(qprofd, ["--pid", str(pid1)], wait_cpu=False)
st, status = d.get("/api/status")
t.eq(st, 200, "the first status answers")
mine = [x for x in status.get("targets", []) if x.get("pid") == pid1]
t.check(len(mine) == 1 and mine[0].get("state") == "running", f"--pid {pid1} attached at the first answer: {mine}")
cpu = status.get("cpu", {})
t.check(cpu.get("running") is True or (cpu.get("starting") is True and "still loading" in cpu.get("error", "")),
        f"the CPU sampler is running or says it is starting: {cpu}")
saw_starting = False
deadline = time.time() + 60
while time.time() < deadline:
    st, status = d.get("/api/status")
    cpu = status.get("cpu", {})
    if cpu.get("running"):
        break
    t.eq(cpu.get("starting"), True, f"not running: starting ({cpu})")
    saw_starting = True
    st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid1}")
    if st == 503:
        t.check(b"still loading" in body, f"503 while starting says why: {body[:200]!r}")
        out = subprocess.run([cli, "--socket", d.sock, "status"], capture_output=True, text=True, timeout=30)
        if "cpu sampling: running" not in out.stdout:
            t.check("cpu sampling: starting" in out.stdout, f"qprof-cli status says starting: {out.stdout[:300]}")
        out = subprocess.run([cli, "--socket", d.sock, "folded", "--pid", str(pid1)], capture_output=True,
                             text=True, timeout=60)
        t.eq(out.returncode, 0, f"qprof-cli folded waits for the sampler: {out.stderr.strip()}")
    else:
        t.eq(st, 200, "the folded profile: 503 while starting, else 200")
    time.sleep(0.02)
print(f"the starting state was {'seen' if saw_starting else 'not seen (the sampler was quicker)'}", flush=True)
t.eq(status.get("cpu", {}).get("running"), True, "the CPU sampler runs within 60 s")
ready = None
for line in d.logtext().splitlines():
    if "CPU sampler ready" in line:
        ready = line
t.check(ready is not None, "qprofd logs when the CPU sampler is ready")
time.sleep(2.0)
st, body, names = folded_names(d, pid1)
t.eq(st, 200, "the folded profile of the target attached before the sampler")
t.check({"work_one", "work_two", "work_three"} <= names,
        f"that target is sampled: its three functions named ({sorted(names)[:12]})")

p2, pid2 = spinner()
st, _ = d.post("/api/targets", {"pid": pid2})
t.eq(st, 201, "a second target attached after the publish")
time.sleep(2.0)
st, body, names = folded_names(d, pid2)
t.check(st == 200 and {"work_one", "work_two", "work_three"} <= names,
        f"the second target is sampled ({st}, {sorted(names)[:12]})")
d.stop()
for p in (p1, p2):
    p.kill()
    p.wait()

# --heap: the sampler is waited for (the heap walks with its tables)
p3, pid3 = spinner()
d = Daemon(qprofd, ["--pid", str(pid3), "--heap"], wait_cpu=False)
st, status = d.get("/api/status")
cpu = status.get("cpu", {})
t.check(cpu.get("running") is True, f"--heap: the CPU sampler runs at the first answer ({cpu})")
d.stop()
p3.kill()
p3.wait()
sys.exit(t.done())
