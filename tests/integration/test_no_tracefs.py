#!/usr/bin/env python3
"""qprofd on a host without tracefs or debugfs (a container, a hardened
service, a fresh install): the test runs itself in a private mount
namespace where every tracefs and debugfs mount is unmounted and empty
read-only tmpfs lie over /sys/kernel/tracing and /sys/kernel/debug, so that
nothing can reach tracefs. Every attach path must work there:

- qprofd --heap --pid P at start-up: scopes counted exactly (outer, inner
  against the program's own counts), CPU samples naming its function,
  off-CPU stacks of its idle loop, its threads listed with stacks, heap
  probes attached;
- POST "heap": true on a heap workload: 8 MiB kept in use within 15 %,
  the heap's growth (brk/mmap probes) under the keeper >= 7 MiB;
- POST "collector": "ring" on an ABI-2 program: its scopes counted exactly;
- a second POST of a target with "heap": 409, the target as it was (its
  heap still traced, no scope counted wrongly: exit_without_enter 0);
- --no-uprobe-multi (libbpf's USDT attach, a perf-event uprobe per site):
  the scopes counted exactly.

About 20 s. usage: test_no_tracefs.py QPROFD SCOPE_TARGET HEAP_TARGET RING_TARGET"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from qptest import Daemon, Failures, Target, _started, require_root, wait_for  # noqa: E402

require_root()
if "--inside" not in sys.argv:
    if not shutil.which("unshare"):
        print("SKIP: unshare (util-linux) is missing", flush=True)
        sys.exit(77)
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable,
                          os.path.abspath(__file__), *sys.argv[1:], "--inside"])

qprofd, scope_bin, heap_bin, ring_bin = sys.argv[1:5]
t = Failures("integration_no_tracefs")
MiB = 1 << 20
HIDDEN = ("tracefs", "debugfs")


def mounts():
    """(mount point, fs type) of this namespace, from mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            out.append((left.split()[4], right.split()[0]))
    return out


# ---- the namespace: no tracefs, no debugfs, nothing to mount them on --------
for _ in range(16):  # stacked mounts (tracefs inside debugfs) come off one by one
    hit = [mp for mp, fs in mounts() if fs in HIDDEN]
    if not hit:
        break
    for mp in sorted(hit, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], check=False)
for mp in ("/sys/kernel/tracing", "/sys/kernel/debug"):
    if os.path.isdir(mp):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=4k,mode=0555", "none", mp], check=True)
left = [(mp, fs) for mp, fs in mounts() if fs in HIDDEN]
t.eq(left, [], "no tracefs or debugfs mounted in the test's namespace")
t.eq(os.listdir("/sys/kernel/tracing") if os.path.isdir("/sys/kernel/tracing") else [], [],
     "/sys/kernel/tracing is empty")
t.check(not os.path.exists("/sys/kernel/debug/tracing/uprobe_events"), "no uprobe_events to write")


def rows_of(d, pid):
    st, body = d.get(f"/api/scopes?pid={pid}")
    return {(r["name"], r["parent"]): r for r in (body or {}).get("scopes", [])} if st == 200 else {}


def folded_weight(text, frame):
    total = 0
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        if any(frame in f for f in stack.split(";")):
            total += int(n)
    return total


def drops(d):
    _, s = d.get("/api/status")
    return s["scopes"]["dropped_by_reason"]


# ---- start-up: --heap --pid, scopes, CPU, off-CPU, threads ------------------
prog = Target([scope_bin, "--iters", "400"])
d = Daemon(qprofd, ["--heap", "--heap-interval", "8192", "--frequency", "999", "--pid", str(prog.pid)])
try:
    st, status = d.get("/api/status")
    t.eq([x["state"] for x in status["targets"]], ["running"], "qprofd --heap --pid: the target runs")
    t.eq([x["pid"] for x in status["heap"]["targets"]], [prog.pid], "its heap is profiled")
    prog.start()
    mine = prog.result()
    rows = wait_for(lambda: (lambda r: r if r.get(("inner", "outer"), {}).get("count") == mine["inner_n"]
                             else None)(rows_of(d, prog.pid)), 20, 0.1) or rows_of(d, prog.pid)
    t.eq(rows.get(("outer", None), {}).get("count"), mine["outer_n"], "outer counted exactly")
    t.eq(rows.get(("inner", "outer"), {}).get("count"), mine["inner_n"], "inner counted exactly")

    st, _, body = d.request("GET", f"/api/cpu/folded?pid={prog.pid}")
    w = folded_weight(body.decode(), "nested_thread")
    t.check(st == 200 and w > 0, f"CPU samples name nested_thread ({st}, weight {w})")

    st, _, body = d.request("GET", f"/api/offcpu/folded?pid={prog.pid}&seconds=1", timeout=30)
    text = body.decode()
    w = sum(int(line.rpartition(" ")[2]) for line in text.splitlines() if line.strip())
    t.check(st == 200 and w > 0 and "main" in text,
            f"off-CPU stacks of the idle loop ({st}, {w} ns): {text[:200]!r}")

    st, th = d.get(f"/api/threads?pid={prog.pid}")
    n = len((th or {}).get("threads", []))
    frames = sum(len(x.get("stack", [])) for x in (th or {}).get("threads", []))
    t.check(st == 200 and n == 1 and frames > 0, f"threads: {st}, {n} thread(s), {frames} frame(s)")

    # the same target again with the heap: refused, and the target as it was
    st, body = d.post("/api/targets", {"pid": prog.pid, "heap": True})
    t.eq(st, 409, f"a second attach with the heap: {body}")
    st, status = d.get("/api/status")
    t.eq([x["pid"] for x in status["heap"]["targets"] if x["tracing"]], [prog.pid],
         "its heap is still traced")
    t.eq([x["state"] for x in status["targets"]], ["running"], "still one running target")
    dr = drops(d)
    t.eq(dr.get("exit_without_enter"), 0, f"no scope half attached or detached: {dr}")
    prog.finish()

    # ---- POST "heap": true on a workload -----------------------------------
    hp = subprocess.Popen([heap_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    _started.append(hp)
    hpid = json.loads(hp.stdout.readline())["pid"]
    st, body = d.post("/api/targets", {"pid": hpid, "heap": True})
    t.eq(st, 201, f"attach with the heap: {body}")
    t.check((body or {}).get("heap", {}).get("functions", 0) >= 4, f"allocator probed: {body}")
    hp.stdin.write("work\n")
    hp.stdin.flush()
    t.eq(hp.stdout.readline().strip(), "ok work", "the heap workload ran")
    st, _, body = d.request("GET", f"/api/heap/flamegraph?pid={hpid}&kind=inuse&renderer=folded")
    kept = folded_weight(body.decode(), "keep_blocks")
    t.check(st == 200 and abs(kept - 8 * MiB) <= 0.15 * 8 * MiB, f"keep_blocks in use: {kept} bytes ({st})")
    st, _, body = d.request("GET", f"/api/heap/flamegraph?pid={hpid}&kind=growth&renderer=folded")
    grown = folded_weight(body.decode(), "keep_blocks")
    t.check(st == 200 and grown >= 7 * MiB, f"growth under keep_blocks: {grown} bytes ({st})")
    hp.stdin.write("exit\n")
    hp.stdin.flush()
    hp.wait(timeout=30)

    # ---- the ring collector ------------------------------------------------
    rp = subprocess.Popen([ring_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    _started.append(rp)

    def rcmd(line):
        rp.stdin.write(line + "\n")
        rp.stdin.flush()
        return json.loads(rp.stdout.readline())

    rpid = rcmd("pid")["pid"]
    st, body = d.post("/api/targets", {"pid": rpid, "collector": "ring"})
    t.eq((st, (body or {}).get("collector")), (201, "ring"), f"attach on the ring: {body}")
    mine = rcmd("run 2000")
    got = wait_for(lambda: rows_of(d, rpid).get(("outer", None), {}).get("count", 0) >= mine["n"], 20, 0.1)
    t.eq(rows_of(d, rpid).get(("outer", None), {}).get("count"), mine["n"], "ring: outer counted exactly")
    rp.stdin.write("quit\n")
    rp.stdin.flush()
    rp.wait(timeout=30)

    log = d.logtext()
    t.check("failed to determine tracepoint" not in log and "uprobe_events" not in log,
            "libbpf never looked for tracefs files")
    t.check("heap growth: the raw syscall tracepoints" in log, "the heap's growth on the raw tracepoints")
finally:
    code = d.stop()
t.eq(code, 0, "qprofd exits 0 on SIGTERM")

# ---- libbpf's USDT attach (one perf-event uprobe per site) ------------------
prog = Target([scope_bin, "--iters", "200"])
d = Daemon(qprofd, ["--no-uprobe-multi", "--pid", str(prog.pid)])
try:
    prog.start()
    mine = prog.result()
    rows = wait_for(lambda: (lambda r: r if r.get(("inner", "outer"), {}).get("count") == mine["inner_n"]
                             else None)(rows_of(d, prog.pid)), 20, 0.1) or rows_of(d, prog.pid)
    t.eq(rows.get(("outer", None), {}).get("count"), mine["outer_n"], "--no-uprobe-multi: outer exact")
    t.eq(rows.get(("inner", "outer"), {}).get("count"), mine["inner_n"], "--no-uprobe-multi: inner exact")
    prog.finish()
finally:
    code = d.stop()
t.eq(code, 0, "qprofd --no-uprobe-multi exits 0")
sys.exit(t.done())
