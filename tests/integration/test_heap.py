#!/usr/bin/env python3
"""Heap profiling end to end, on heap_target's known allocations
with one sample per 8 KiB on average: keep_blocks keeps 8 MiB in 4 KiB
blocks, churn allocates and frees 200 MiB, keep_calloc keeps 16 MiB from
calloc. In-use by function within 15 % for the keepers and < 1 MiB for the
churner, the churner's allocated space within 15 % of 200 MiB, go tool
pprof -sample_index=inuse_space -top reads /pprof/heap, growth names the
keepers. A window holds what was allocated in it (keep_more: 4 MiB through
posix_memalign and realloc) and not what came before; a window without
allocation is a 404 that says so (and nothing since attach is the same
404, qprof-cli heap exits 1 with its words, --pid taken from the only
target); heap turned on for a process attached without it (200; twice: 409); a process that exits during a window is
answered with a note; a static binary without symbols gets a 422 saying
what is and is not traced (its growth is traced); full maps are counted.

usage: test_heap.py QPROFD QPROF_CLI HEAP_TARGET HEAP_STATIC"""
import json
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root, wait_for  # noqa: E402

qprofd, cli, target_bin, static_bin = sys.argv[1:5]
require_root()
t = Failures("integration_heap")
MiB = 1 << 20


class HeapTarget:
    def __init__(self, path):
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        _started.append(self.proc)
        self.pid = json.loads(self.proc.stdout.readline())["pid"]

    def cmd(self, c):
        self.proc.stdin.write(c + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()


def folded(d, pid, kind, seconds=None):
    q = f"/api/heap/flamegraph?pid={pid}&kind={kind}&renderer=folded"
    if seconds:
        q += f"&seconds={seconds}"
    st, hdr, body = d.request("GET", q, timeout=60 + (seconds or 0))
    return st, hdr, body.decode()


def by_function(text, names):
    """Bytes of the stacks holding each name (each stack counted once per name)."""
    got = {n: 0 for n in names}
    total = 0
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        total += int(n)
        for name in names:
            if name in frames:
                got[name] += int(n)
    return got, total


FUNCS = ("keep_blocks", "churn", "keep_calloc", "keep_more")

# ---- the workload -----------------------------------------------------------
prog = HeapTarget(target_bin)
d = Daemon(qprofd, ["--collector", "bpf", "--heap-interval", "8192"])
try:
    # attached without its heap first: heap then turned on for the target
    st, body = d.post("/api/targets", {"pid": prog.pid})
    t.eq(st, 201, f"attach without heap: {body}")
    st, _, text = folded(d, prog.pid, "growth")
    t.eq(st, 404, f"heap not profiled yet: 404 ({text.strip()})")
    st, body = d.post("/api/targets", {"pid": prog.pid, "heap": True})
    t.eq(st, 200, f"heap turned on for a target already attached: {body}")
    t.eq((body or {}).get("pid"), prog.pid, "the answer is the target")
    st, again = d.post("/api/targets", {"pid": prog.pid, "heap": True})
    t.check(st == 409 and "profiled already" in again.get("error", ""), f"twice: 409 that says so: {st} {again}")
    st, other = d.post("/api/targets", {"pid": prog.pid, "heap": True, "collector": "ring"})
    t.check(st == 409 and "already a target" in other.get("error", ""),
            f"heap with other keys for a target: the 409 as before: {st} {other}")
    # nothing grew yet: qprof-cli heap (no --pid: the only target) says so,
    # with and without --seconds alike (a 404, exit 1)
    for extra in ([], ["--seconds", "1"]):
        r = subprocess.run([cli, "--socket", d.sock, "heap", "--kind", "growth", *extra],
                           capture_output=True, text=True, timeout=60)
        t.check(r.returncode == 1 and r.stdout == "" and "did not grow its heap" in r.stderr
                and f"process {prog.pid} " in r.stderr, f"heap --kind growth {extra}: {r.returncode} {r.stderr!r}")
    heap = (body or {}).get("heap", {})
    t.check(heap.get("functions", 0) >= 4, f"allocator entry points probed: {heap}")
    t.check("malloc" in heap.get("traced", "") and "libc.so" in heap.get("traced", ""),
            f"malloc of libc traced: {heap.get('traced')}")
    st, status = d.get("/api/status")
    t.eq(status["heap"]["interval_bytes"], 8192, "status: interval")
    t.eq([x["pid"] for x in status["heap"]["targets"]], [prog.pid], "status: heap targets")

    t.eq(prog.cmd("work"), "ok work", "workload ran")
    st, hdr, text = folded(d, prog.pid, "inuse")
    t.eq(st, 200, f"in-use folded: {text[:300]}")
    inuse, _ = by_function(text, FUNCS)
    print(f"in use: {inuse}", flush=True)
    t.near(inuse["keep_blocks"], 8 * MiB, 0.15, "in use under keep_blocks")
    t.near(inuse["keep_calloc"], 16 * MiB, 0.15, "in use under keep_calloc")
    t.check(inuse["churn"] < MiB, f"in use under churn < 1 MiB: {inuse['churn']}")
    st, hdr, text = folded(d, prog.pid, "alloc")
    alloc, _ = by_function(text, FUNCS)
    print(f"allocated: {alloc}", flush=True)
    t.near(alloc["churn"], 200 * MiB, 0.15, "allocated under churn")
    t.near(alloc["keep_blocks"], 8 * MiB, 0.15, "allocated under keep_blocks")
    st, hdr, text = folded(d, prog.pid, "growth")
    growth, _ = by_function(text, FUNCS)
    print(f"growth: {growth}", flush=True)
    t.check(growth["keep_blocks"] >= 7 * MiB, f"growth under keep_blocks >= 7 MiB: {growth}")
    t.check(growth["keep_calloc"] >= 15 * MiB, f"growth under keep_calloc >= 15 MiB: {growth}")
    t.check(growth["churn"] < MiB, f"churn reuses its block, no growth: {growth}")
    st, status = d.get("/api/status")
    c = status["heap"]["counters"]
    t.check(c["calls"] >= 2048 + 51200 + 256, f"allocating calls counted: {c}")
    t.eq(c["missed_returns"], 0, "no missed return")
    t.eq(c["live_full"] + c["stacks_full"], 0, "nothing lost to full maps")

    # pprof, as go tool pprof reads it
    st, hdr, raw = d.request("GET", f"/pprof/heap?pid={prog.pid}")
    t.eq(st, 200, "/pprof/heap")
    t.check(raw[:2] == b"\x1f\x8b", "/pprof/heap is gzip")
    path = os.path.join(d.dir, "heap.pb.gz")
    with open(path, "wb") as f:
        f.write(raw)
    go = shutil.which("go")
    if go:
        env = {**os.environ, "HOME": d.dir, "GOCACHE": d.dir + "/gocache"}
        out = subprocess.run([go, "tool", "pprof", "-sample_index=inuse_space", "-top", path],
                             capture_output=True, text=True, timeout=300, env=env)
        t.eq(out.returncode, 0, f"go tool pprof reads it ({out.stderr[-300:]})")
        rows = [ln.split() for ln in out.stdout.splitlines() if ln.strip().endswith(("keep_calloc", "keep_blocks"))]
        t.eq(sorted(r[-1] for r in rows), ["keep_blocks", "keep_calloc"], f"-top names the keepers: {out.stdout[-600:]}")
        t.check(rows and rows[0][-1] == "keep_calloc", f"keep_calloc first: {rows}")
        out = subprocess.run([go, "tool", "pprof", "-sample_index=alloc_space", "-top", path],
                             capture_output=True, text=True, timeout=300, env=env)
        first = [ln.split()[-1] for ln in out.stdout.splitlines() if ln.strip().endswith(FUNCS)][:1]
        t.eq(first, ["churn"], f"alloc_space: churn first ({out.stdout[-400:]})")
    else:
        print("note: go is not installed; pprof checked as gzip only", flush=True)
    st, hdr, raw = d.request("GET", f"/pprof/growth?pid={prog.pid}")
    t.check(st == 200 and raw[:2] == b"\x1f\x8b", f"/pprof/growth: {st}")
    # the CLI
    out = subprocess.run([cli, "--socket", d.sock, "heap", "--pid", str(prog.pid), "--kind", "inuse"],
                         capture_output=True, text=True, timeout=60)
    got, _ = by_function(out.stdout, FUNCS)
    t.check(out.returncode == 0 and got["keep_calloc"] > 0, f"qprof-cli heap: {out.returncode} {out.stderr}")
    svg = os.path.join(d.dir, "heap.svg")
    out = subprocess.run([cli, "--socket", d.sock, "heap", "--pid", str(prog.pid), "-o", svg],
                         capture_output=True, text=True, timeout=60)
    t.check(out.returncode == 0 and "keep_calloc" in open(svg).read(), f"qprof-cli heap -o x.svg: {out.stderr}")

    # a window: what was made in it, live at its end; nothing before
    res = {}

    def window():
        res["w"] = folded(d, prog.pid, "inuse", seconds=2)

    th = threading.Thread(target=window)
    th.start()
    wait_for(lambda: False, timeout=0.5)
    t.eq(prog.cmd("more"), "ok more", "keep_more ran")
    th.join()
    st, hdr, text = res["w"]
    t.eq(st, 200, f"window: {text[:200]}")
    win, _ = by_function(text, FUNCS)
    print(f"window: {win}", flush=True)
    t.near(win["keep_more"], 4 * MiB, 0.15, "window: keep_more's 4 MiB (posix_memalign, realloc)")
    t.eq(win["keep_blocks"] + win["keep_calloc"] + win["churn"], 0, "window: nothing made before it")
    # a window without allocation: a clear message
    st, hdr, body = d.request("GET", f"/api/heap/flamegraph?pid={prog.pid}&seconds=1")
    msg = json.loads(body).get("error", "") if body else ""
    t.eq(st, 404, "empty window: 404")
    t.check("no allocation" in msg and "1 s window" in msg, f"empty window says so: {msg}")
    # bad input
    st, _, body = d.request("GET", f"/api/heap/flamegraph?pid={prog.pid}&kind=leaks")
    t.eq(st, 400, "kind=leaks: 400")
    st, _, body = d.request("GET", "/pprof/heap")
    t.eq(st, 400, "/pprof/heap without pid: 400")

    # a process that exits during the window: answered, with a note
    res.clear()
    th = threading.Thread(target=window)
    th.start()
    wait_for(lambda: False, timeout=0.5)
    t.eq(prog.cmd("more"), "ok more", "keep_more again")
    prog.cmd("exit")
    prog.proc.wait(timeout=10)
    th.join()
    st, hdr, text = res["w"]
    t.eq(st, 200, "exit during the window: answered")
    t.check("exited" in hdr.get("X-Qprof-Note", ""), f"...with a note: {hdr.get('X-Qprof-Note')}")
    win, _ = by_function(text, FUNCS)
    t.near(win["keep_more"], 4 * MiB, 0.15, "the exited process's window holds keep_more")
    st, status = d.get("/api/status")
    ht = [x for x in status["heap"]["targets"] if x["pid"] == prog.pid]
    t.check(ht and ht[0]["tracing"] is False, f"exited: no longer traced, figures kept: {ht}")
    st, _ = d.delete(f"/api/targets/{prog.pid}")
    t.eq(st, 200, "detach")
    st, _, _ = d.request("GET", f"/pprof/heap?pid={prog.pid}")
    t.eq(st, 404, "detached: 404")
    st, status = d.get("/api/status")
    t.eq(status["heap"]["targets"], [], "detached: no heap target")

    # a static binary without symbols: no allocator to probe, growth traced
    stat = HeapTarget(static_bin)
    st, body = d.post("/api/targets", {"pid": stat.pid, "heap": True})
    t.eq(st, 201, f"static binary attached: {body}")
    note = ((body or {}).get("heap") or {}).get("note") or ""
    t.eq(((body or {}).get("heap") or {}).get("functions"), 0, "static: no entry point probed")
    t.check("no allocator entry point" in note and "growth" in note, f"static: says what is traced: {note}")
    t.eq(stat.cmd("work"), "ok work", "static workload ran")
    st, _, body = d.request("GET", f"/pprof/heap?pid={stat.pid}")
    msg = json.loads(body).get("error", "") if body else ""
    t.eq(st, 422, "static: /pprof/heap is 422")
    t.check("no allocator entry point" in msg, f"static: 422 says why: {msg}")
    st, hdr, text = folded(d, stat.pid, "growth")
    _, gtotal = by_function(text, FUNCS)
    t.check(st == 200 and 23 * MiB <= gtotal <= 30 * MiB, f"static: growth traced ({st}, {gtotal} bytes)")
    stat.cmd("exit")
finally:
    d.stop()

# ---- full maps: counted, and said ---------------------------------------------
# 64 live allocations; 3 stacks: the one of lost stacks (made at attach),
# keep_blocks', churn's: keep_calloc's allocations count under the first
prog = HeapTarget(target_bin)
d = Daemon(qprofd, ["--collector", "bpf", "--heap", "--pid", str(prog.pid), "--heap-interval", "8192",
                    "--heap-live", "64", "--heap-stacks", "3"])
try:
    st, status = d.get("/api/status")
    t.eq(status["heap"]["by_default"], True, "--heap: by default")
    t.eq([x["pid"] for x in status["heap"]["targets"]], [prog.pid], "--heap --pid: heap target")
    t.eq(prog.cmd("work"), "ok work", "workload ran (small maps)")
    st, status = d.get("/api/status")
    c = status["heap"]["counters"]
    print(f"small maps: {c}", flush=True)
    t.check(c["live_full"] > 0, f"live_full counted: {c}")
    t.check(c["stacks_full"] > 0, f"stacks_full counted: {c}")
    st, hdr, text = folded(d, prog.pid, "inuse")
    note = hdr.get("X-Qprof-Note", "")
    t.check("--heap-live full" in note and "--heap-stacks full" in note, f"the answer says so: {note}")
    _, total = by_function(text, FUNCS)
    t.check(total < 24 * MiB, f"in use short, as said: {total}")
    st, hdr, text = folded(d, prog.pid, "alloc")
    lost = sum(int(ln.rpartition(" ")[2]) for ln in text.splitlines() if "[stack not kept: --heap-stacks full]" in ln)
    t.near(lost, 16 * MiB, 0.15, "allocated: keep_calloc's 16 MiB under [stack not kept] (the third stack)")
    prog.cmd("exit")
finally:
    d.stop()
sys.exit(t.done())
