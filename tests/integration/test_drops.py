#!/usr/bin/env python3
"""Faults a program can commit against the scope stack, each counted exactly
as dropped and none corrupting the figures: an exit without an enter, an exit
that skips an open scope, nesting past the kept depth, a thread that exits
inside a scope, a QPROF_SCOPE_BEGIN begun again before its END (which lives
beside the stack: it neither blocks nor re-parents later scopes).

usage: test_drops.py QPROFD SCOPE_TARGET QPROF_CLI [QPROFD_OPTION...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
extra = sys.argv[4:]  # e.g. --no-uprobe-multi
require_root()
t = Failures("integration_drops")
prog = Target([target_bin, "--mode", "misbehave"])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), *extra])
try:
    prog.start()
    prog.result()
    st, status = d.get("/api/status")
    why = status["scopes"]["dropped_by_reason"]
    t.eq(why["exit_without_enter"], 1, "exit without enter")
    t.eq(why["out_of_order"], 1, "scope skipped by an out-of-order exit")
    t.eq(why["too_deep"], 8, "enters past the depth limit (40 - 32)")
    t.eq(why["thread_exit"], 1, "scope open when its thread exited")
    t.eq(why["map_full"], 0, "no map full")
    t.eq(why["stack_unavailable"], 0, "every thread stack available (no other tracer running)")
    t.eq(why["begin_unended"], 1, "SCOPE_BEGIN b begun again before its END")
    t.eq(status["scopes"]["dropped"], 12, "dropped total")
    st, body = d.get(f"/api/scopes?pid={prog.pid}")
    counts = {}
    for r in body["scopes"]:
        counts[(r["name"], r["parent"])] = r["count"]
    # a: measured once; b, orphan_end, never_closed: never measured
    t.eq(counts.get(("a", None)), 1, "span a measured once")
    t.check(("b", "a") not in counts and ("b", None) not in counts, "span b not measured")
    # deep: 32 frames kept, all 32 measured; one top-level, 31 under deep
    t.eq(counts.get(("deep", None)), 1, "outermost deep")
    t.eq(counts.get(("deep", "deep")), 31, "nested deep frames measured")
    # b is open (in a begin slot) while these run: not their parent
    t.eq(counts.get(("oo_outer", None)), 1, "the scope whose exit skipped 'lost', at top level")
    t.check(("lost", "oo_outer") not in counts, "the skipped scope not measured")
    t.eq(status["scopes"]["events"], 34, "events: a + oo_outer + 32 deep")
    for r in body["scopes"]:
        t.check(r["min_ns"] <= r["max_ns"] and r["mean_ns"] <= r["max_ns"], f"{r['name']} figures sane")
finally:
    prog.finish()
    prog.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
