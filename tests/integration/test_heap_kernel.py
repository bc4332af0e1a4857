#!/usr/bin/env python3
"""Heap stacks walked in the kernel by the CPU sampler's compiled CFI
tables, on programs built -O2 without frame pointers and without markers:
heap_nofp.c (callers that allocate through glibc's strdup and through a
wrapper of their own) and heap_nofp.cpp (libstdc++'s std::vector, std::map
and std::string, all through operator new). Each runs once as a target of
the BPF collector and once of the ring collector. One sample per KiB on
average (every allocation here is one of at least 1,000 bytes, so nearly
every one is sampled): the in-use bytes under each allocating caller, with
run_work and main beneath it in that order, are within 10 % of the
program's own count; the churner holds under 5 % of the total. Status: the
sampled allocations were walked in the kernel (cpu.unwind.kernel.heap,
>= 95 % kept). Before, every such stack was the allocator, its caller's
return address and garbage (frame pointers).

About 20 s. usage: test_heap_kernel.py QPROFD HEAP_NOFP_C HEAP_NOFP_CXX"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, prog_c, prog_cxx = sys.argv[1:4]
require_root()
t = Failures("integration_heap_kernel")


def named(frame, name):
    return frame == name or frame.startswith(name + "(")


def under(text, caller):
    """In-use bytes of the stacks with main -> run_work -> CALLER (root first)."""
    got = 0
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        try:
            a = next(i for i, f in enumerate(frames) if named(f, "main"))
            b = next(i for i, f in enumerate(frames) if named(f, "run_work"))
            c = next(i for i, f in enumerate(frames) if named(f, caller))
        except StopIteration:
            continue
        if a < b < c:
            got += int(n)
    return got


def run(d, path, collector):
    proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    _started.append(proc)
    label = f"{os.path.basename(path)} ({collector})"
    try:
        pid = json.loads(proc.stdout.readline())["pid"]
        st, body = d.post("/api/targets", {"pid": pid, "heap": True, "collector": collector})
        t.eq(st, 201, f"{label}: attached with its heap: {body}")
        # its mappings in the kernel's tables before it allocates
        deadline = time.time() + 60
        while time.time() < deadline:
            st, status = d.get("/api/status")
            if status["cpu"]["unwind"]["kernel"]["tables"]["processes"] >= 1:
                break
            time.sleep(0.1)
        st, status = d.get("/api/status")
        before = status["cpu"]["unwind"]["kernel"]["heap"]
        proc.stdin.write("work\n")
        proc.stdin.flush()
        line = proc.stdout.readline().strip()
        t.check(line.startswith("ok "), f"{label}: the workload ran: {line!r}")
        truth = json.loads(line[3:])
        st, _, body = d.request("GET", f"/api/heap/flamegraph?pid={pid}&kind=inuse&renderer=folded", timeout=120)
        t.eq(st, 200, f"{label}: in-use folded answers")
        text = body.decode()
        total = sum(int(x.rpartition(" ")[2]) for x in text.splitlines() if x.strip())
        for caller, want in truth.items():
            got = under(text, caller)
            print(f"{label}: in use under main -> run_work -> {caller}: {got} bytes, the program's own {want}",
                  flush=True)
            if want:
                t.near(got, want, 0.10, f"{label}: in use under {caller}")
            else:
                t.check(got < 0.05 * total, f"{label}: {caller} holds < 5 % of the in-use total ({got}/{total})")
        st, status = d.get("/api/status")
        k = status["cpu"]["unwind"]["kernel"]["heap"]
        walks, kept = k["walks"] - before["walks"], k["kept"] - before["kept"]
        print(f"{label}: heap walks {walks}, kept {kept}: {k['ends']}", flush=True)
        t.check(walks >= 5000, f"{label}: sampled allocations walked in the kernel ({walks})")
        t.check(kept >= 0.95 * walks, f"{label}: >= 95 % of them kept ({kept}/{walks})")
        if t.failed:
            top = sorted(text.splitlines(), key=lambda x: -int(x.rpartition(" ")[2]))[:8]
            print("\n".join(x[:400] for x in top), file=sys.stderr)
        st, _ = d.delete(f"/api/targets/{pid}")
        t.eq(st, 200, f"{label}: detached")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


d = Daemon(qprofd, ["--heap-interval", "1024"])
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    t.eq(status["cpu"]["unwind"]["kernel"]["running"], True, "the kernel walks (--unwind dwarf, the default)")
    for path in (prog_c, prog_cxx):
        for collector in ("bpf", "ring"):
            run(d, path, collector)
finally:
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
sys.exit(t.done())
