#!/usr/bin/env python3
"""Which BPF programs qprofd holds, as the kernel lists them (each program
id in /proc/QPROFD/fdinfo, its name from `bpftool prog show id N`), for
targets of each kind. The BPF collector's programs are loaded the first
time a target needs them, the heap profiler with the first heap target:

- qprofd --pid of a ring target (edge_target: markers of ABI 2 with a
  QPROF_LOG) holds the ring's ring_register, log_probe (its logs go through
  BPF), the lifecycle and CPU programs, and none of scope_enter,
  scope_exit, mark_probe, value_probe, the span programs, thread_exit or a
  heap program; the calibration says it was not measured yet.
- A second target POSTed with "collector": "bpf" brings scope_enter,
  scope_exit and thread_exit, the programs of the sites it has (mark_probe,
  value_probe and the span programs stay unloaded: it has no such sites),
  its scopes are counted, and the
  calibration is done (20,000 empty scopes) before it is attached.
- "heap": true on a third target brings the heap programs.

usage: test_lazy_progs.py QPROFD EDGE_TARGET SCOPE_TARGET"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, edge_bin, scope_bin = sys.argv[1:4]
require_root()
t = Failures("integration_lazy_progs")

SCOPES = {"scope_enter", "scope_exit", "mark_probe", "value_probe", "thread_exit"}
SPANS = {"usdt_span_begin", "usdt_span_end", "async_begin", "async_step", "async_end"}


def programs(pid):
    """The names of the BPF programs process PID holds (kernel names are cut
    at 15 characters)."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(line.split()[1])
        except OSError:
            pass
    names = set()
    for i in ids:
        r = subprocess.run(["bpftool", "-j", "prog", "show", "id", i], capture_output=True, text=True)
        if r.returncode == 0:
            names.add(json.loads(r.stdout)["name"])
    return names


def heap_names(names):
    return {n for n in names if n.startswith("heap_")}


edge = Target([edge_bin, "--mode", "forkhold"])
d = Daemon(qprofd, ["--pid", str(edge.pid)])
try:
    _, st = d.get("/api/status")
    tg = next((x for x in st["targets"] if x["pid"] == edge.pid), None)
    t.check(tg is not None and tg["collector"] == "ring", f"edge_target on the ring: {tg and tg['collector']}")
    have = programs(d.proc.pid)
    print("ring target only:", " ".join(sorted(have)), flush=True)
    for want in ("ring_register", "log_probe", "lc_fork", "lc_exec", "do_sample", "off_switch"):
        t.check(want in have, f"{want} loaded for a ring target")
    t.eq(sorted(have & SCOPES), [], "no program of the BPF collector's scopes, marks and values")
    t.eq(sorted(have & SPANS), [], "no span program")
    t.eq(sorted(heap_names(have)), [], "no heap program")
    cal = st["calibration"]
    t.check(not cal["done"] and "not measured yet" in cal.get("error", ""),
            f"calibration not run for a ring target: {cal}")

    # a target on the BPF collector: its programs, the calibration first
    bpf = Target([scope_bin, "--mode", "nested", "--iters", "50"])
    st, body = d.post("/api/targets", {"pid": bpf.pid, "collector": "bpf"})
    t.eq(st, 201, f"POST collector bpf: {body}")
    have = programs(d.proc.pid)
    print("with a BPF target:", " ".join(sorted(have)), flush=True)
    # the programs of the kinds of site the target has: scope_target has
    # scopes, no mark and no value
    t.eq(sorted({"scope_enter", "scope_exit", "thread_exit"} - have), [], "scope_enter, scope_exit, thread_exit loaded")
    t.eq(sorted(have & {"mark_probe", "value_probe"}), [], "no mark or value program: the target has no such site")
    t.eq(sorted(have & SPANS), [], "still no span program (no span site)")
    t.eq(sorted(heap_names(have)), [], "still no heap program")
    _, st = d.get("/api/status")
    cal = st["calibration"]
    t.check(cal["done"], f"calibration done before the BPF target: {cal}")
    t.eq(cal["samples"], 20000, "calibration samples (2 rounds counted of 3)")
    # the calibration's start-up line, in a user's words
    t.check(re.search(r"the probes' own cost: \d+ ns \(an empty scope timed 20000 times: \d+ to \d+ ns for 8 in "
                      r"10\), taken off every duration the BPF collector measures", d.logtext()) is not None,
            "the calibration's line in words")
    bpf.start()
    bpf.result()

    def outer():
        _, b = d.get(f"/api/scopes?pid={bpf.pid}")
        return {(r["name"], r["parent"]): r["count"] for r in b["scopes"]}
    wait_for(lambda: outer().get(("outer", None)) == 100, timeout=20)
    c = outer()
    t.eq(c.get(("outer", None)), 100, "the BPF target's outer scopes (2 threads x 50)")
    t.eq(c.get(("inner", "outer")), 100, "its inner scopes")

    # a heap target: the heap programs come with it
    heap = Target([edge_bin, "--mode", "forkhold"])
    st, body = d.post("/api/targets", {"pid": heap.pid, "heap": True})
    t.eq(st, 201, f"POST heap: {body}")
    have = programs(d.proc.pid)
    t.check("heap_malloc" in have and "heap_free" in have, f"heap programs loaded: {sorted(heap_names(have))}")
    heap.kill()
    edge.kill()
finally:
    d.stop()
sys.exit(t.done())
