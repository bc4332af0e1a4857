#!/usr/bin/env python3
"""--binary: every process running the file, present and future, becomes a
target; detaching one of them stops counting it without touching the others.

usage: test_binary.py QPROFD SCOPE_TARGET QPROF_CLI"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_binary")
ITERS = 200
before = Target([target_bin, "--mode", "nested", "--iters", str(ITERS)])
d = Daemon(qprofd, ["--collector", "bpf", "--binary", os.path.realpath(target_bin)])
after = None
try:
    st, status = d.get("/api/status")
    t.eq([b["binary"] for b in status["binaries"]], [os.path.realpath(target_bin)], "binary listed")
    pids = [x["pid"] for x in status["targets"]]
    t.check(before.pid in pids, "a process running before attach is a target")
    after = Target([target_bin, "--mode", "nested", "--iters", str(ITERS)])
    ok = wait_for(lambda: after.pid in [x["pid"] for x in d.get("/api/status")[1]["targets"]], timeout=10)
    t.check(ok, "a process started after attach becomes a target")
    # detach the first one before it runs: its scopes are not counted
    st, _ = d.delete(f"/api/targets/{before.pid}")
    t.eq(st, 200, "detach one process of a binary")
    before.start()
    after.start()
    before.result()
    after.result()
    st, body = d.get("/api/scopes")
    by_pid = {}
    for r in body["scopes"]:
        by_pid.setdefault(r["pid"], 0)
        by_pid[r["pid"]] += r["count"]
    t.eq(by_pid.get(before.pid), None, "detached process not counted")
    t.eq(by_pid.get(after.pid), 2 * ITERS * 3 + 2 * (ITERS // 10), "events of the process started later")
    st, _ = d.get(f"/api/scopes?pid={before.pid}")
    t.eq(st, 404, "detached pid is not a target")
finally:
    before.finish()
    if after:
        after.finish()
    t.eq(d.stop(), 0, "qprofd exits 0")

# --max-exited: exited targets beyond the limit are dropped, oldest first, counted
d = Daemon(qprofd, ["--collector", "bpf", "--binary", os.path.realpath(target_bin), "--max-exited", "1"])
try:
    progs = [Target([target_bin, "--mode", "idle", "--exit"]) for _ in range(3)]
    pids = [p.pid for p in progs]
    ok = wait_for(lambda: set(pids) <= {x["pid"] for x in d.get("/api/status")[1]["targets"]}, timeout=10)
    t.check(ok, "three processes adopted")
    for p in progs:
        p.start()
        p.proc.wait(timeout=30)

    def settled():
        st = d.get("/api/status")[1]
        exited = [x["pid"] for x in st["targets"] if x["state"] == "exited"]
        return (exited, st["exited_targets_forgotten"]) if len(exited) == 1 and not \
            [x for x in st["targets"] if x["pid"] in pids and x["state"] == "running"] else None

    got = wait_for(settled, timeout=15)
    t.check(got is not None, f"one exited target kept: {d.get('/api/status')[1]['targets']}")
    if got:
        t.eq(got[1], 2, "two exited targets forgotten and counted")
        t.check(got[0][0] in pids, "the kept one is one of them")
finally:
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
