#!/usr/bin/env python3
"""Many scope aggregates made at once while every CPU spins (the cause of
the integration_scopes 199/200 flake): 4 SCHED_FIFO threads, pinned across
the CPUs, make 16 + 256 (site, parent) keys within milliseconds, with the CPU
sampler at 999 Hz. A map that allocates per new entry fails with -ENOMEM
then (its per-CPU memory pool is refilled by a kworker the spinning threads
starve) and loses hits as map_full; the preallocated map loses none, so
every count is exact. A second daemon preallocates only 100 entries: the
other keys go to the allocating map, and every hit is then either counted
or counted as map_full, never silently lost, with one row per key.

usage: test_scope_keys.py QPROFD KEYS_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target_bin = sys.argv[1:3]
require_root()
t = Failures("integration_scope_keys")
REPS = 20
NAMES = [f"k{i}" for i in range(16)]


def run(prealloc):
    """One daemon and one keys_target run: (program's figures, rows, status)."""
    if prealloc is not None:
        os.environ["QPROF_PREALLOC_SITES"] = str(prealloc)
    prog = Target([target_bin, "--threads", "4", "--reps", str(REPS)])
    try:
        d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--frequency", "999"])
    finally:
        os.environ.pop("QPROF_PREALLOC_SITES", None)
    try:
        prog.start()
        mine = prog.result()
        st, body = d.get(f"/api/scopes?pid={prog.pid}")
        t.eq(st, 200, "scopes answers")
        st, status = d.get("/api/status")
        t.eq(st, 200, "status answers")
        return mine, body["scopes"], status["scopes"]
    finally:
        prog.finish()
        prog.kill()
        t.eq(d.stop(), 0, "qprofd exits 0")


# 1. default sizing: all 272 keys preallocated, every hit counted
mine, rows, sc = run(None)
per_key, nkeys = mine["per_key"], mine["keys"]
t.eq((per_key, nkeys), (4 * REPS, 272), "program's own figures")
want = {(n, None): per_key for n in NAMES}
want.update({(i, j): per_key for j in NAMES for i in NAMES})
got = {(r["name"], r["parent"]): r["count"] for r in rows}
t.eq(len(rows), len(got), "one row per (name, parent)")
t.eq(sorted(set(want) - set(got), key=str)[:8], [], "(name, parent) rows missing (first 8)")
t.eq(sorted(set(got) - set(want), key=str)[:8], [], "(name, parent) rows not made by the program")
t.eq(len(got), 272, "rows")
wrong = sorted((k, v) for k, v in got.items() if want.get(k) != v)
t.eq(wrong[:8], [], f"every row counts {per_key} (rows with another count, first 8)")
t.eq(sc["events"], nkeys * per_key, "events counted")
t.eq(sc["dropped_by_reason"]["map_full"], 0, "no hit lost for want of an aggregate")
t.eq(sc["dropped_by_reason"]["stack_unavailable"], 0, "every thread stack available")
t.eq(sc["dropped"], 0, "nothing dropped")

# 2. 100 preallocated, 172 keys in the allocating map: counted or said lost
mine, rows, sc = run(100)
got = {(r["name"], r["parent"]): r["count"] for r in rows}
t.eq(len(rows), len(got), "small prealloc: one row per (name, parent)")
t.check(set(got) <= set(want), "small prealloc: only the program's (name, parent) rows")
t.check(len(got) >= 100, f"small prealloc: at least the 100 preallocated keys have rows ({len(got)})")
t.check(all(0 < c <= per_key for c in got.values()), f"small prealloc: no row over {per_key}")
why = sc["dropped_by_reason"]
print(f"small prealloc: {len(got)} rows, {sc['events']} hits counted, {why['map_full']} map_full", flush=True)
t.eq(sc["events"] + why["map_full"], nkeys * per_key,
     f"small prealloc: counted + map_full = every hit ({sc['events']} + {why['map_full']})")
t.eq(sc["events"], sum(got.values()), "small prealloc: events = sum of the rows")
t.eq(sc["dropped"], why["map_full"], "small prealloc: no other drop")
sys.exit(t.done())
