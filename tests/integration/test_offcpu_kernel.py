#!/usr/bin/env python3
"""Off-CPU stacks walked in the kernel by compiled CFI tables, on a program
built -O2 without frame pointers (offcpu_nofp.cpp, a CPU-only target):
three threads blocking in a sleep (sleep_path -> std::this_thread::sleep_for
-> clock_nanosleep), a std::mutex wait (lock_path -> pthread_mutex_lock ->
the futex) and a read on a pipe (read_path -> read). For each thread, from
/api/offcpu/folded: >= 95 % of its off-CPU time is under its blocking
function with its callers (the thread function, start_thread), and that
time is within 10 % of the program's own measure of the time spent in
those calls. /api/status: the switch-outs were walked in the kernel (>= 95
% kept; a walk that falls back keeps frame pointers, as before).

About 10 s. usage: test_offcpu_kernel.py QPROFD OFFCPU_NOFP"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
t = Failures("integration_offcpu_kernel")
RUN_S = 4
# thread name, its function, the blocking function it calls
CASES = (("sleeper", "sleeper_main", "sleep_path"), ("locker", "locker_main", "lock_path"),
         ("reader", "reader_main", "read_path"))


def named(frame, name):
    return frame == name or frame.startswith(name + "(")


def attributed(lines, thread, caller, callee):
    """The thread's off-CPU ns, and those under CALLER -> CALLEE with
    start_thread below them."""
    total = under = 0
    for line in lines:
        stack, _, w = line.rpartition(" ")
        frames = stack.split(";")
        if frames[0] != thread:
            continue
        w = int(w)
        total += w
        try:
            a = frames.index("start_thread")
            b = next(i for i, f in enumerate(frames) if named(f, caller))
            c = next(i for i, f in enumerate(frames) if named(f, callee))
        except (ValueError, StopIteration):
            continue
        if a < b < c:
            under += w
    return total, under


d = Daemon(qprofd, ["--collector", "bpf"])
prog = None
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    if not status["offcpu"]["running"]:
        print("SKIP: off-CPU tracing unavailable here", flush=True)
        sys.exit(77)
    t.eq(status["cpu"]["unwind"]["kernel"]["running"], True, "the kernel walks (--unwind dwarf, the default)")
    prog = subprocess.Popen([target], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _started.append(prog)
    pid = json.loads(prog.stdout.readline())["pid"]
    st, _ = d.post("/api/targets", {"pid": pid})
    t.eq(st, 201, "attached")
    # the tables are loaded before the threads start (they would be
    # walked by frame pointers until then)
    deadline = time.time() + 60
    while time.time() < deadline:
        st, status = d.get("/api/status")
        if status["cpu"]["unwind"]["kernel"]["tables"]["processes"] >= 1:
            break
        time.sleep(0.1)
    os.kill(pid, signal.SIGUSR1)
    time.sleep(RUN_S)
    os.kill(pid, signal.SIGUSR2)
    truth = json.loads(prog.stdout.readline())
    prog.wait(timeout=30)
    st, _, body = d.request("GET", f"/api/offcpu/folded?pid={pid}", timeout=120)
    t.eq(st, 200, "off-CPU folded answers")
    lines = body.decode().splitlines()
    for thread, caller, callee in CASES:
        total, under = attributed(lines, thread, caller, callee)
        print(f"{thread}: off-CPU {total} ns, under {caller} -> {callee} {under} ns, "
              f"the program's own {truth[callee]} ns", flush=True)
        t.check(total > 0 and under >= 0.95 * total,
                f"{thread}: >= 95 % of its off-CPU time under start_thread -> {caller} -> {callee} "
                f"({under}/{total})")
        t.near(under, truth[callee], 0.10, f"{thread}: {callee}'s off-CPU time against the program's")
    st, status = d.get("/api/status")
    k = status["cpu"]["unwind"]["kernel"]["offcpu"]
    print(f"off-CPU walks: {k}", flush=True)
    t.check(k["walks"] >= 3 * RUN_S * 500, f"switch-outs walked in the kernel ({k['walks']})")
    t.check(k["kept"] >= 0.95 * k["walks"], f">= 95 % of them kept ({k['kept']}/{k['walks']}: {k['ends']})")
    t.eq(k["ends"]["loop"], 0, "no loop on real stacks")
    if t.failed:
        top = sorted(lines, key=lambda l: -int(l.rpartition(" ")[2]))[:12]
        print("\n".join(x[:400] for x in top), file=sys.stderr)
finally:
    if prog is not None and prog.poll() is None:
        prog.kill()
        prog.wait()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
sys.exit(t.done())
