#!/usr/bin/env python3
"""Compiled CFI tables are built once per file, however many processes map it.

Eight targets at once: four of the C qsort program and four of the C++
std::sort one (idle, waiting for a signal), attached one after the other
as CPU-only targets under the default --unwind dwarf. Once the CFI worker
has read the mappings of all eight (cpu.unwind.kernel.tables.processes),
the tables compiled must be exactly the distinct files the eight map
executable (counted here from their /proc/PID/maps by device and inode,
and the vDSO), each found loaded again for every other process that maps
it (hits), none refused, and the kernel memory the same as with the first
of each program alone. Then, detached, the tables stay loaded for reuse
(no process maps them) and the processes count drops to 0.

usage: test_cfi_shared.py QPROFD QSORT_NOFP SORT_CXX"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root, wait_for  # noqa: E402

qprofd, c_bin, cxx_bin = sys.argv[1:4]
require_root()
t = Failures("integration_cfi_shared")
N = 4  # processes of each program


def exec_files(pid):
    """The distinct executable files PID maps (device:inode), and the vDSO."""
    files = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 5 or "x" not in parts[1]:
                continue
            if len(parts) >= 6 and parts[5] == "[vdso]":
                files.add("vdso")
            elif parts[4] != "0" and len(parts) >= 6 and parts[5].startswith("/"):
                files.add(f"{parts[3]}:{parts[4]}")
    return files


def tables(d):
    st, status = d.get("/api/status")
    return status["cpu"]["unwind"]["kernel"]["tables"], status


progs = []
d = Daemon(qprofd, ["--collector", "bpf", "--frequency", "99"])
try:
    tb, status = tables(d)
    if not status["cpu"]["running"] or not status["cpu"]["unwind"]["kernel"]["running"]:
        print("SKIP: CPU sampling or the walk in the kernel unavailable here", flush=True)
        sys.exit(77)
    for binary in [c_bin] * N + [cxx_bin] * N:
        p = subprocess.Popen([binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        _started.append(p)
        progs.append((p, json.loads(p.stdout.readline())["pid"]))
    want = set()
    alone = {}
    for i, (p, pid) in enumerate(progs):
        want |= exec_files(pid)
        st, _ = d.post("/api/targets", {"pid": pid})
        t.eq(st, 201, f"process {i + 1} attached")
        if i in (0, N):
            # the first of each program alone: what its files take
            before = len(want)
            t.check(wait_for(lambda: tables(d)[0]["processes"] == i + 1, timeout=60),
                    f"the mappings of process {i + 1} read")
            tb, _ = tables(d)
            alone[i] = tb["bytes"]
            print(f"after the first {'C' if i == 0 else 'C++'} process: {tb}", flush=True)
            t.eq(tb["builds"], before, f"one table per file of the first {i + 1} processes")
    t.check(wait_for(lambda: tables(d)[0]["processes"] == 2 * N, timeout=60),
            f"the mappings of all {2 * N} processes read")
    tb, _ = tables(d)
    print(f"{2 * N} processes, {len(want)} distinct files: {tb}", flush=True)
    t.eq(tb["builds"], len(want), f"one table built per distinct file for {2 * N} processes")
    t.eq(tb["files"], len(want), "one table loaded per distinct file")
    t.eq(tb["refused"], 0, "no file refused")
    t.eq(tb["no_room"], 0, "room for every table")
    t.eq(tb["evictions"], 0, "nothing evicted")
    t.eq(tb["bytes"], alone[N], f"{2 * N} processes take the kernel memory of one of each program")
    shared = sum(len(exec_files(pid)) for _, pid in progs) - len(want)
    t.check(tb["hits"] >= shared, f"every other mapping of a file found its table loaded ({tb['hits']} hits, "
            f">= {shared})")
    for _, pid in progs:
        st, _ = d.delete(f"/api/targets/{pid}")
        t.eq(st, 200, f"pid {pid} detached")
    t.check(wait_for(lambda: tables(d)[0]["processes"] == 0, timeout=30), "no process left in the tables")
    tb, _ = tables(d)
    t.eq(tb["files"], len(want), "detached: the tables stay loaded for reuse")
    t.eq(tb["builds"], len(want), "detached: nothing built again")
finally:
    for p, _ in progs:
        if p.poll() is None:
            p.kill()
            p.wait()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
sys.exit(t.done())
