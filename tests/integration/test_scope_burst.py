#!/usr/bin/env python3
"""A burst of first hits right after attach (issue 14): 500 scope functions
under 2 parent scopes, 3 calls each = 3000 exits making 1000 new
(scope, parent) pairs within milliseconds. Every pair must have its exact
count (3), min <= p50 <= max, and nothing may be dropped. Twice: with the
default sizing, and with the preallocation cut to 61 pairs
(QPROF_PREALLOC_SITES=61), what main's per-CPU layout could preallocate on
a 64-CPU host (32 MiB / (8480 B x 64)): there main's qprofd lost 60-112
hits of this burst as map_full here; the chunks past the preallocated ones
come from the allocating map and must be exact too.

usage: test_scope_burst.py QPROFD BURST_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target_bin = sys.argv[1:3]
require_root()
t = Failures("integration_scope_burst")


def run(label, prealloc):
    if prealloc is not None:
        os.environ["QPROF_PREALLOC_SITES"] = str(prealloc)
    prog = Target([target_bin])
    try:
        d = Daemon(qprofd, ["--pid", str(prog.pid)])
    finally:
        os.environ.pop("QPROF_PREALLOC_SITES", None)
    try:
        prog.start()
        mine = prog.result()
        t.eq((mine["functions"], mine["parents"], mine["reps"]), (500, 2, 3), f"{label}: program's figures")
        st, body = d.get(f"/api/scopes?pid={prog.pid}")
        t.eq(st, 200, f"{label}: scopes answers")
        st, status = d.get("/api/status")
        t.eq(st, 200, f"{label}: status answers")
    finally:
        prog.finish()
        prog.kill()
        t.eq(d.stop(), 0, f"{label}: qprofd exits 0")
    rows = [r for r in body["scopes"] if r["name"].startswith("s")]
    got = {(r["name"], r["parent"]): r for r in rows}
    want = {(f"s{i:03d}", p) for i in range(500) for p in ("burst_a", "burst_b")}
    t.eq(len(rows), len(got), f"{label}: one row per (scope, parent)")
    t.eq(sorted(want - set(got))[:5], [], f"{label}: pairs missing (first 5)")
    t.eq(sorted(set(got) - want)[:5], [], f"{label}: pairs the program did not make (first 5)")
    exact = sum(1 for k in want if k in got and got[k]["count"] == 3)
    t.eq(exact, 1000, f"{label}: pairs with their exact count of 3")
    bad = [k for k, r in got.items() if not (0 < r["min_ns"] <= r["p50_ns"] <= r["max_ns"])]
    t.eq(bad[:5], [], f"{label}: min <= p50 <= max (first 5 that are not)")
    bad = [k for k, r in got.items() if r["total_ns"] < 3 * r["min_ns"] or r["total_ns"] > 3 * r["max_ns"]]
    t.eq(bad[:5], [], f"{label}: 3 min <= total <= 3 max (first 5 that are not)")
    parents = {(r["name"], r["parent"]): r["count"] for r in body["scopes"] if r["name"].startswith("burst")}
    t.eq(parents, {("burst_a", None): 3, ("burst_b", None): 3}, f"{label}: the parent scopes")
    sc = status["scopes"]
    t.eq(sc["dropped_by_reason"]["map_full"], 0, f"{label}: map_full drops")
    t.eq(sc["dropped"], 0, f"{label}: drops")
    t.eq(sc["events"], 3006, f"{label}: events (3000 + 6 parent exits)")
    print(f"{label}: {exact} of 1000 pairs exact, {sc['dropped']} dropped, {sc['events']} events",
          flush=True)


run("default sizing", None)
run("61 pairs preallocated (main on 64 CPUs)", 61)
sys.exit(t.done())
