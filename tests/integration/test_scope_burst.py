#!/usr/bin/env python3
"""A burst of first hits right after attach: 500 scope functions
under 2 parent scopes, 3 calls each = 3000 exits making 1000 new
(scope, parent) pairs within milliseconds. Every pair must have its exact
count (3), min <= p50 <= max, and nothing may be dropped. Twice: with the
default sizing, and with the preallocation cut to 61 pairs
(QPROF_PREALLOC_SITES=61), what main's per-CPU layout could preallocate on
a 64-CPU host (32 MiB / (8480 B x 64)): there main's qprofd lost 60-112
hits of this burst as map_full here; the chunks past the preallocated ones
come from the allocating map and must be exact too. A third time with a
ring of dirty keys too small for the burst (QPROF_DIRTY_RING_BYTES=4096:
128 keys), so that the poll falls back to reading every chunk. Each time,
500 more exits follow: every count must be exact again and (but for the
small ring) the polls must have read exactly the 501 chunks they hit, each
twice (the poll that drains its key, and the next one).

usage: test_scope_burst.py QPROFD BURST_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target_bin = sys.argv[1:3]
require_root()
t = Failures("integration_scope_burst")


def run(label, prealloc, ring=None):
    env = {"QPROF_PREALLOC_SITES": prealloc, "QPROF_DIRTY_RING_BYTES": ring}
    for k, v in env.items():
        if v is not None:
            os.environ[k] = str(v)
    prog = Target([target_bin])
    try:
        # uncalibrated: these scopes are empty, so with the probe cost taken
        # off their true duration (about 0 ns) the 0 < min check below
        # could not tell a min that was set from one never written
        d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--no-calibrate"])
    finally:
        for k in env:
            os.environ.pop(k, None)
    try:
        prog.start()
        mine = prog.result()
        t.eq((mine["functions"], mine["parents"], mine["reps"]), (500, 2, 3), f"{label}: program's figures")
        st, body = d.get(f"/api/scopes?pid={prog.pid}")
        t.eq(st, 200, f"{label}: scopes answers")
        st, status = d.get("/api/status")
        t.eq(st, 200, f"{label}: status answers")
        poll = status["scopes"].get("poll", {})
        if ring:
            # 1,000+ chunks dirty at once, 128 keys of room: the poll read them all
            t.check(poll.get("full_scans", 0) >= 1, f"{label}: a full scan was made ({poll})")
        # 2. one more hit of each s* under burst_a: the next poll reads those
        # 500 chunks and burst_a's, and nothing else (no full scan)
        d.get("/api/status")
        st, before = d.get("/api/status")
        prog.start()
        t.eq(prog.result(), {"touched": 500}, f"{label}: the program touched 500 pairs again")
        st, again = d.get(f"/api/scopes?pid={prog.pid}")
        st, after = d.get("/api/status")
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
    got = {(r["name"], r["parent"]): r["count"] for r in again["scopes"]}
    want = {(f"s{i:03d}", "burst_a"): 4 for i in range(500)}
    want.update({(f"s{i:03d}", "burst_b"): 3 for i in range(500)})
    want.update({("burst_a", None): 4, ("burst_b", None): 3})
    wrong = sorted((k, got.get(k), v) for k, v in want.items() if got.get(k) != v)
    t.eq(wrong[:5], [], f"{label}: after 501 more exits, every count exact (first 5 wrong)")
    p0, p1 = before["scopes"]["poll"], after["scopes"]["poll"]
    if not ring:
        t.eq(p1["full_scans"] - p0["full_scans"], 0, f"{label}: no full scan after the burst")
        # each chunk hit is read by the poll that drains its key and once
        # more by the next (qp_dirty_drain in dirty_keys.c): two polls here
        t.eq(p1["chunks_read"] - p0["chunks_read"], 2 * 501,
             f"{label}: the polls after the burst read the 501 chunks hit (twice each), and no idle one")
    t.eq(after["scopes"]["events"], 3006 + 501, f"{label}: events after 501 more exits")


run("default sizing", None)
run("61 pairs preallocated (main on 64 CPUs)", 61)
run("128 dirty keys of room (full scans)", None, 4096)
sys.exit(t.done())
