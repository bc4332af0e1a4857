#!/usr/bin/env python3
"""Thread stacks without stopping the process: threads_target's
three named threads, one sleeping in qt_sleeping_here (nanosleep), one
blocked in pthread_cond_wait under qt_waiting_here, one spinning in
qt_spinning_here. GET /api/threads lists every thread with the kernel's
names and those functions in their stacks; /api/thread/stacks and
`qprof-cli threads` say the same as text. Never stopped: TracerPid stays 0,
the spinner makes no voluntary context switch while 20 requests read it (a
stop or a ptrace stop would make one), no thread is ever seen stopped
(state T or t). Its loop rate, per second and per nanosecond of its own CPU
time, before and during the requests is printed, not judged: on this shared
2-vCPU VM it moves by tens of percent from run to run whatever qprofd
does. Bad input: 400/404.

usage: test_threads.py QPROFD THREADS_TARGET QPROF_CLI"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, require_root  # noqa: E402

qprofd, target, cli = sys.argv[1:4]
require_root()
t = Failures("integration_threads")

prog = subprocess.Popen([target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
pid = prog.pid


def task_comm(tid):
    with open(f"/proc/{pid}/task/{tid}/comm") as f:
        return f.read().strip()


def status_field(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def spins():
    prog.stdin.write("r\n")
    prog.stdin.flush()
    return int(prog.stdout.readline())


def oncpu_ns(tid):
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


def window(tid, work):
    """loops per CPU-ns of the spinner and per wall second while WORK runs"""
    a, c0, t0 = spins(), oncpu_ns(tid), time.monotonic()
    work()
    b, c1, t1 = spins(), oncpu_ns(tid), time.monotonic()
    return (b - a) / max(c1 - c0, 1), (b - a) / (t1 - t0)


d = None
try:
    t.eq(prog.stdout.readline().strip(), "ready", "target ready")
    names = {task_comm(tid): int(tid) for tid in os.listdir(f"/proc/{pid}/task")}
    spinner = names.get("qt-spinner")
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(pid)])
    time.sleep(0.3)  # the sleeper and the waiter are in their calls

    before_cpu, before_wall = window(spinner, lambda: time.sleep(1.0))
    vcsw = f"/proc/{pid}/task/{spinner}/status"
    v0 = status_field(vcsw, "voluntary_ctxt_switches")
    bodies, tracer, stopped = [], [], []

    def requests():
        for _ in range(20):
            st, body = d.get(f"/api/threads?pid={pid}")
            t.eq(st, 200, "threads answers 200")
            bodies.append(body)
            tracer.append(status_field(f"/proc/{pid}/status", "TracerPid"))
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    st_letter = f.read().rsplit(")", 1)[1].split()[0]
                if st_letter in ("T", "t"):
                    stopped.append((tid, st_letter))

    during_cpu, during_wall = window(spinner, requests)
    v1 = status_field(vcsw, "voluntary_ctxt_switches")
    print(f"spinner loops per CPU-ns before {before_cpu:.3f}, during {during_cpu:.3f}; per wall s "
          f"before {before_wall:.0f}, during {during_wall:.0f}", flush=True)
    t.eq(set(tracer), {0}, "TracerPid stays 0 while the threads are read")
    t.eq(v1 - v0, 0, "the spinner made no voluntary context switch (never stopped)")
    t.check(not stopped, f"no thread seen stopped during the requests: {stopped}")

    body = bodies[-1]
    rows = {r["name"]: r for r in body["threads"]}
    t.eq(body["pid"], pid, "pid")
    t.eq(sorted(r["tid"] for r in body["threads"]), sorted(names.values()), "every thread, by tid")
    t.eq({r["tid"]: r["name"] for r in body["threads"]}, {v: k for k, v in names.items()},
         "names as the kernel has them")
    for name, funcs, state in (("qt-sleeper", ["qt_sleeping_here", "clock_nanosleep"], "S"),
                               ("qt-waiter", ["qt_waiting_here", "pthread_cond_wait"], "S"),
                               ("qt-spinner", ["qt_spinning_here"], "R")):
        r = rows.get(name, {})
        stack = [f["name"] for f in r.get("stack", [])]
        for fn in funcs:
            t.check(any(s.startswith(fn) for s in stack), f"{name}'s stack names {fn}: {stack}")
        t.eq(r.get("state"), state, f"{name}'s state")
        user = [f for f in r.get("stack", []) if not f["kernel"]]
        t.check(any(f["name"].startswith("start_thread") for f in user),
                f"{name}'s user stack reaches start_thread: {[f['name'] for f in user]}")
    # the running thread: registers and stack taken together at a tick of
    # its own CPU time (within 50 ms), else said to be from its last entry
    spun = [next((r for r in bd["threads"] if r["name"] == "qt-spinner"), {}) for bd in bodies]
    nsampled = sum(1 for r in spun if r.get("sampled"))
    print(f"the spinner was on a CPU when iterated, and sampled, in {nsampled} of {len(spun)} answers"
          " (else it was preempted: its saved registers match its stack)", flush=True)
    extra = 0
    while not nsampled and extra < 50:  # a loaded machine may keep it off the CPUs
        extra += 1
        st, bd = d.get(f"/api/threads?pid={pid}")
        nsampled += sum(1 for r in bd["threads"] if r["name"] == "qt-spinner" and r["sampled"])
    t.check(nsampled >= 1, f"the running spinner is sampled at a tick of its own CPU time "
            f"({extra} more requests)")
    for r in spun:
        if r.get("sampled"):
            t.check(any(f["name"].startswith("qt_spinning_here") for f in r["stack"]),
                    "a sampled spinner's stack names qt_spinning_here")
    t.check(not any(r.get("sampled") or r.get("on_cpu") for bd in bodies for r in bd["threads"]
                    if r["name"] in ("qt-sleeper", "qt-waiter")),
            "sleeping threads are read from their saved registers, never sampled")
    sleeper = rows.get("qt-sleeper", {}).get("stack", [])
    t.check(any(f["kernel"] and "nanosleep" in f["name"] for f in sleeper),
            "the sleeper's kernel stack is in a nanosleep")
    t.check(rows.get("qt-spinner", {}).get("cpu_ms", 0) > 100, "the spinner's CPU time counts")
    # every answer names the same functions: nothing flaky about reading them
    for n, bd in enumerate(bodies):
        rr = {r["name"]: [f["name"] for f in r["stack"]] for r in bd["threads"]}
        t.check(any(s.startswith("qt_waiting_here") for s in rr.get("qt-waiter", [])),
                f"answer {n}: the waiter's stack names qt_waiting_here")

    st, hdrs, text = d.request("GET", f"/api/thread/stacks?pid={pid}")
    text = text.decode()
    t.eq(st, 200, "thread/stacks answers 200")
    t.check(hdrs.get("Content-Type", "").startswith("text/plain"), "text/plain")
    for name, tid in names.items():
        t.check(f"Thread {tid} ({name}):" in text, f"text has 'Thread {tid} ({name}):'")
    t.check("qt_sleeping_here" in text and "qt_spinning_here" in text, "text names the functions")

    out = subprocess.run([cli, "--socket", d.sock, "threads", "--pid", str(pid)],
                         capture_output=True, text=True, timeout=60)
    t.eq(out.returncode, 0, "qprof-cli threads exits 0")
    t.check("Thread" in out.stdout and "(qt-waiter):" in out.stdout and "qt_waiting_here" in out.stdout,
            "qprof-cli threads prints the waiter and its function")
    out = subprocess.run([cli, "--socket", d.sock, "threads"], capture_output=True, text=True, timeout=60)
    t.eq(out.returncode, 0, "qprof-cli threads without --pid: the one target")
    out = subprocess.run([cli, "--socket", d.sock, "threads", "--pid", "x"], capture_output=True, text=True)
    t.eq(out.returncode, 2, "qprof-cli threads --pid x: usage error")

    for q, want in (("pid=abc", 400), ("pid=0", 400), ("pid=999999999", 404), ("pid=99999999999", 400), ("pid=4000000", 404),
                    (f"pid={pid}&n=1", 400), ("pid=1", 404)):
        st, _ = d.get(f"/api/threads?{q}")
        t.eq(st, want, f"/api/threads?{q}")
    st, _, _ = d.request("POST", f"/api/threads?pid={pid}")
    t.eq(st, 405, "POST /api/threads")

    prog.stdin.close()
    prog.wait(timeout=30)
    st, _ = d.get(f"/api/threads?pid={pid}")
    t.check(st in (404,), f"an exited target: 404 (got {st})")
finally:
    if prog.poll() is None:
        prog.kill()
        prog.wait()
    if d:
        t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
