#!/usr/bin/env python3
"""Scope latency end to end: qprofd attached by pid to a program with
busy-wait scopes of known durations, nested, on two threads. Counts must be
exact, means within 5% + 5 us of what the program measured itself (its clock holds the probe hits whole); a window counts
only its own events; the target's exit keeps its data; detach drops it; a
clean shutdown leaves no BPF program behind.

usage: test_scopes.py QPROFD SCOPE_TARGET QPROF_CLI"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_scopes")
ITERS = 1000

prog = Target([target_bin, "--mode", "nested", "--iters", str(ITERS), "--rt"])
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])


def prog_ids(pid):
    """BPF programs the daemon holds (from /proc/PID/fdinfo)."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


ours = prog_ids(d.proc.pid)
try:
    st, status = d.get("/api/status")
    t.eq(st, 200, "status answers")
    tg = status["targets"]
    t.eq(len(tg), 1, "one target")
    t.eq(tg[0]["pid"], prog.pid, "target pid")
    t.eq(tg[0]["state"], "running", "target running")
    t.eq(tg[0]["comm"], "scope_target", "target comm")
    notes = subprocess.run(["readelf", "-n", target_bin], capture_output=True, text=True).stdout
    t.eq(tg[0]["probes"], notes.count("Provider: qprof"), "probe sites = qprof notes per readelf")
    for k in ("version", "uptime_ms", "cpu", "scopes"):
        t.check(k in status, f"status has {k}")

    prog.start()
    mine = prog.result()  # the program's own figures, after its threads joined
    st, body = d.get(f"/api/scopes?pid={prog.pid}")
    t.eq(st, 200, "scopes answers")
    rows = {(r["name"], r["parent"]): r for r in body["scopes"]}
    names = sorted(rows)
    t.eq(names, sorted([("outer", None), ("inner", "outer"), ("slow_function", None), ("span", None)]),
         "scope rows (name, parent)")
    want = {("outer", None): ("outer", 2 * ITERS), ("inner", "outer"): ("inner", 2 * ITERS),
            ("slow_function", None): ("func", 2 * (ITERS // 10)), ("span", None): ("span", 2 * ITERS)}
    for key, (short, n) in want.items():
        r = rows.get(key)
        if not t.check(r is not None, f"row {key} present"):
            continue
        t.eq(r["count"], n, f"{key} count")
        t.eq(mine[f"{short}_n"], n, f"program's own {short} count")
        # the program's own clock reads around the markers, so it holds
        # both probe hits whole (1 to 2.5 us each on this VM, a trap and the
        # BPF program); qprofd's duration holds only the part the calibration
        # takes off: within 5 % plus 5 us (one CI run: 61.1 against 64.8 us
        # for a 60 us busy loop, calibration 1,062 ns)
        own = mine[f"{short}_mean"]
        t.check(abs(r["mean_ns"] - own) <= 0.05 * own + 5000,
                f"{key} mean vs the program's own: got {r['mean_ns']}, want {own} within 5 % + 5 us")
        t.check(r["min_ns"] <= r["p50_ns"] <= r["p90_ns"] <= r["p99_ns"] <= r["p999_ns"] <= r["max_ns"],
                f"{key} min <= p50 <= p90 <= p99 <= p99.9 <= max")
        t.near(r["mean_ns"] * r["count"], r["total_ns"], 0.0001, f"{key} mean * count = total")
        t.eq(r["kind"], "scope", f"{key} kind")
        t.eq(r["pid"], prog.pid, f"{key} pid")
    if ("outer", None) in rows:
        r = rows[("outer", None)]
        t.eq(r["file"].endswith("scope_target.c"), True, "outer file")
        t.eq(r["function"], "nested_thread", "outer function")
        # the probes' cost is subtracted (calibration) and a percentile is
        # given within its bucket (1/32 wide): a busy wait of 100 us may show
        # a little less
        t.check(r["p50_ns"] >= 100000 * (1 - 1 / 32), f"outer p50 {r['p50_ns']} >= its 100 us busy wait - 1/32")
        # busy waits: a right-skewed distribution whose median is below the mean
        t.check(r["p50_ns"] <= 1.05 * mine["outer_mean"], "outer p50 at most the measured mean + 5%")
    if ("slow_function", None) in rows:
        p50 = rows[("slow_function", None)]["p50_ns"]
        t.check(300000 * (1 - 1 / 32) <= p50 <= 1.05 * mine["func_mean"],
                f"slow_function p50 {p50} in [300 us - 1/32, mean + 5%]")

    st, status = d.get("/api/status")
    t.eq(status["scopes"]["events"], 2 * ITERS * 3 + 2 * (ITERS // 10), "events counted")
    t.eq(status["scopes"]["dropped"], 0, "nothing dropped")
    t.eq(status["scopes"]["sites"], 4, "sites")

    # the CLI's table names every scope, with units
    out = subprocess.run([cli, "--socket", d.sock, "scopes", "--pid", str(prog.pid)],
                         capture_output=True, text=True, timeout=60)
    t.eq(out.returncode, 0, f"qprof-cli scopes exit code ({out.stderr.strip()})")
    for name in ("outer", "inner", "slow_function", "span"):
        t.check(name in out.stdout, f"qprof-cli scopes shows {name}")
    t.check("us" in out.stdout or "ms" in out.stdout, "qprof-cli scopes uses human units")

    # Prometheus: the same figures
    st, _, body = d.request("GET", "/metrics")
    text = body.decode()
    exe = os.path.basename(target_bin)
    t.check(f'qprof_scope_duration_seconds_count{{exe="{exe}",scope="outer",parent="",kind="scope"}} {2 * ITERS}\n'
            in text, "metrics: outer count")
    t.check(f'qprof_scope_duration_seconds_bucket{{exe="{exe}",scope="inner",parent="outer",kind="scope",le="+Inf"}} '
            f'{2 * ITERS}\n' in text, "metrics: inner count under outer")

    # a window with no activity: nothing in it
    st, body = d.get(f"/api/scopes?pid={prog.pid}&seconds=1")
    t.eq(st, 200, "window answers")
    t.eq(body["scopes"], [], "an idle window is empty")

    # the target exits: kept, state exited, data intact
    t.eq(prog.finish(), 0, "program exit code")
    ok = wait_for(lambda: d.get("/api/status")[1]["targets"][0]["state"] == "exited", timeout=10)
    t.check(ok, "target state becomes exited")
    st, body = d.get(f"/api/scopes?pid={prog.pid}")
    t.eq(sum(r["count"] for r in body["scopes"]), 2 * ITERS * 3 + 2 * (ITERS // 10),
         "data kept after exit")

    # detach: gone with its data
    st, body = d.delete(f"/api/targets/{prog.pid}")
    t.eq(st, 200, "detach")
    st, body = d.get(f"/api/scopes?pid={prog.pid}")
    t.eq(st, 404, "scopes of a detached pid")
    st, status = d.get("/api/status")
    t.eq(status["targets"], [], "no targets after detach")
finally:
    prog.kill()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    t.check(not os.path.exists(d.sock), "socket removed at shutdown")
    t.check(len(ours) >= 3, f"the daemon held its BPF programs: {sorted(ours)}")

    def left_loaded():
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
        return {p["id"] for p in json.loads(out or "[]")} & ours

    # the kernel frees a program after an RCU grace period: allow it a few seconds
    left = wait_for(lambda: not left_loaded(), timeout=10) and set() or left_loaded()
    t.eq(sorted(left), [], "none of the daemon's BPF programs is left loaded after shutdown")
    if t.failed:
        print(d.logtext(), file=sys.stderr)
sys.exit(t.done())
