#!/usr/bin/env python3
"""The ring collector (the default) through spans across threads, exec and
fork, by --pid and by --binary.

- 1,000 spans begun on one thread and ended on another
  (spans_target roundtrip): order_rt counted exactly 1,000 times, its step
  1,000 times, nothing dropped, under --pid and under --binary (where they
  were counted twice: once by the BPF span probes, once from the ring).
- A ring target that execs comes back on the ring: by --pid (default, and
  asked by POST "collector": "ring" of a qprofd --collector bpf), and by
  --binary; the old image's report and the new image's rows exact.
- fork: the children of a --binary ring target are ring targets, each
  counted exactly for its own scopes (not its copy of the parent's
  records); the children of a --pid ring target exit 0 and are no targets.

usage: test_ring_lifecycle.py QPROFD SPANS_TARGET LIFECYCLE_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, spans_bin, lt = sys.argv[1:4]
spans_bin, lt = os.path.realpath(spans_bin), os.path.realpath(lt)
require_root()
t = Failures("integration_ring_lifecycle")
LINGER = "150"  # ms a process waits before its exec or exit: the drain (1 ms) reads all first


def status(d):
    return d.get("/api/status")[1]


def target_of(d, pid):
    return next((x for x in status(d)["targets"] if x["pid"] == pid), None)


def rows(d, pid):
    _, body = d.get(f"/api/scopes?pid={pid}")
    return {(r["kind"], r["name"], r["parent"]): r["count"] for r in body["scopes"]}


def settle(d, pid, key, want, timeout=20):
    """Wait for KEY to reach WANT, then a little more: a count that goes on
    past it (a second collector counting the same events) shows."""
    wait_for(lambda: rows(d, pid).get(key, 0) >= want, timeout, 0.05)
    wait_for(lambda: False, 0.3, 0.1)
    return rows(d, pid)


# --- 1. spans across threads on the ring, --pid and --binary ---------------------------
N = 1000
for how in ("pid", "binary"):
    if how == "pid":
        prog = Target([spans_bin, "--mode", "roundtrip", "--n", str(N)])
        d = Daemon(qprofd, ["--pid", str(prog.pid)])
    else:
        d = Daemon(qprofd, ["--binary", spans_bin])
        prog = Target([spans_bin, "--mode", "roundtrip", "--n", str(N)])
        wait_for(lambda: target_of(d, prog.pid), 10)
    try:
        tg = target_of(d, prog.pid)
        t.eq(tg and tg["collector_reason"], "ring (default)", f"spans, --{how}: on the ring by default")
        prog.start()
        own = prog.result()
        t.eq(own["count"], N, f"spans, --{how}: the program made {N} round trips")
        r = settle(d, prog.pid, ("async_span", "order_rt", None), N)
        t.eq(r.get(("async_span", "order_rt", None)), N, f"spans, --{how}: order_rt counted once each")
        t.eq(r.get(("async_span", "sent", "order_rt")), N, f"spans, --{how}: step sent counted once each")
        t.eq(r.get(("scope", "strat_work", None)), N, f"spans, --{how}: strat_work")
        t.eq(r.get(("scope", "gw_work", None)), N, f"spans, --{how}: gw_work")
        sc = status(d)["scopes"]
        t.eq(sc["dropped"], 0, f"spans, --{how}: nothing dropped {sc['dropped_by_reason']}")
        tg = target_of(d, prog.pid)
        # 2 block scopes x 2 records + 3 span markers x 3 records per round trip
        t.eq(((tg or {}).get("ring") or {}).get("records"), N * (2 * 2 + 3 * 3),
             f"spans, --{how}: every marker came through the ring")
    finally:
        d.stop()
        prog.kill()


# --- 2. exec on the ring -----------------------------------------------------------------
def exec_case(how, n=300, m=500):
    args = [lt, "--mode", "exec", "-n", str(n), "-m", str(m), "--linger-ms", LINGER]
    why = "ring (default)"
    if how == "binary":
        d = Daemon(qprofd, ["--binary", lt])
        prog = Target(args)
        wait_for(lambda: target_of(d, prog.pid), 10)
    elif how == "pid":
        prog = Target(args)
        d = Daemon(qprofd, ["--pid", str(prog.pid)])
    else:  # asked for by POST on a daemon whose default is bpf
        prog = Target(args)
        d = Daemon(qprofd, ["--collector", "bpf"])
        st, _ = d.post("/api/targets", {"pid": prog.pid, "collector": "ring"})
        t.eq(st, 201, "exec, POST ring: attached")
        why = "ring (asked)"
    try:
        tg = target_of(d, prog.pid)
        t.eq(tg and tg["collector_reason"], why, f"exec, {how}: before the exec")
        prog.start()
        t.eq(prog.result(), {"before_exec": n}, f"exec, {how}: first image ran")
        t.eq(prog.result(), {"after_exec": m, "pid": prog.pid}, f"exec, {how}: second image ran")
        key = ("scope", "after_exec", None)
        wait_for(lambda: rows(d, prog.pid).get(key, 0) >= m and
                 rows(d, prog.pid).get(("scope", "lib_work", None), 0) >= m, 20, 0.05)
        tg = target_of(d, prog.pid)
        t.eq(tg and tg["collector"], "ring", f"exec, {how}: the new image on the ring")
        t.eq(tg and tg["collector_reason"], why, f"exec, {how}: after the exec, why")
        r = rows(d, prog.pid)
        t.eq(r.get(key), m, f"exec, {how}: after_exec exact")
        t.eq(r.get(("scope", "lib_work", None)), m, f"exec, {how}: lib_work exact")
        t.eq(((tg or {}).get("ring") or {}).get("records"), 4 * m, f"exec, {how}: through the ring")
        st, rep = d.get(f"/api/report?pid={prog.pid}&format=json")
        t.eq(st, 200, f"exec, {how}: a report of the first image")
        if st == 200:
            got = {x["name"]: x["count"] for x in rep["scopes"]["by_total"]}
            t.eq(got, {"before_exec": n}, f"exec, {how}: the first image's report exact")
        t.eq(status(d)["scopes"]["dropped"], 0, f"exec, {how}: nothing dropped")
    finally:
        prog.kill()
        t.eq(d.stop(), 0, f"exec, {how}: qprofd exits 0")


exec_case("pid")
exec_case("post")
exec_case("binary")


# --- 3. fork on the ring -------------------------------------------------------------------
def fork_case(how, n=20, m=1000):
    args = [lt, "--mode", "fork", "-n", str(n), "-m", str(m), "--linger-ms", LINGER]
    if how == "binary":
        d = Daemon(qprofd, ["--binary", lt])
        prog = Target(args)
        wait_for(lambda: target_of(d, prog.pid), 10)
    else:
        prog = Target(args)
        d = Daemon(qprofd, ["--pid", str(prog.pid)])
    try:
        prog.start()
        res = prog.result()
        t.eq(res["exit_0"], n, f"fork, {how}: every child exited 0 ({res})")
        key = ("scope", "work", None)
        if how == "pid":
            c = settle(d, prog.pid, key, 1000)
            t.eq(c.get(key), 1000, "fork, pid: the parent's own scopes")
            kids = [x for x in status(d)["targets"] if x["pid"] != prog.pid]
            t.eq(kids, [], "fork, pid: the children of a --pid target are no targets")
            return
        kids = wait_for(lambda: (lambda k: k if len(k) == n else None)(
            [x for x in status(d)["targets"] if x["pid"] != prog.pid]), 20)
        t.check(kids is not None, "fork, binary: every child is a target")
        kids = kids or []
        t.eq(sorted({x["collector_reason"] for x in kids}), ["ring (default)"],
             "fork, binary: the children on the ring")
        _, body = d.get("/api/scopes")
        by = {}
        for r in body["scopes"]:
            if r["name"] == "work":
                by[r["pid"]] = by.get(r["pid"], 0) + r["count"]
        t.eq(by.get(prog.pid), 1000, "fork, binary: the parent's scopes")
        t.eq(sorted(v for p, v in by.items() if p != prog.pid), [m] * n,
             "fork, binary: each child counted exactly for its own scopes")
        t.eq(status(d)["scopes"]["dropped"], 0, "fork, binary: nothing dropped")
    finally:
        prog.finish()
        t.eq(d.stop(), 0, f"fork, {how}: qprofd exits 0")


fork_case("binary")
fork_case("pid")
sys.exit(t.done())
