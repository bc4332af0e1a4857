#!/usr/bin/env python3
"""Races at attach: processes that exit while (or just before) qprofd attaches
to them, and zombies. Every answer is 201, 404 (the process is gone) or 400
(nothing left to attach to), as JSON; never a 500, never a hang. Afterwards
the daemon still answers, every target it took reaches "exited", and it
holds no uprobe links for them.

usage: test_attach_race.py QPROFD SCOPE_TARGET QPROF_CLI"""
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin = sys.argv[1:3]
require_root()
t = Failures("integration_attach_race")
ROUNDS = 30
TIMEOUT = 30  # seconds per request: more is a hang


def attach(d, pid):
    """POST /api/targets {"pid": pid} -> (status, parsed body or raw bytes)."""
    st, _, data = d.request("POST", "/api/targets", body=json.dumps({"pid": pid}),
                            headers={"Content-Type": "application/json"}, timeout=TIMEOUT)
    try:
        return st, json.loads(data)
    except ValueError:
        return st, data


def check_answer(st, body, what):
    """201 with the target, or a JSON error with an allowed status."""
    if st == 201:
        t.check(isinstance(body, dict) and body.get("pid"), f"{what}: 201 names the target: {body!r}")
        return
    err = body.get("error") if isinstance(body, dict) else None
    t.check(isinstance(err, str) and err, f"{what}: {st} with a JSON error: {body!r}")
    err = err or ""
    if st == 404:
        t.check("exited" in err or "no such process" in err, f"{what}: 404 says why: {err!r}")
    else:
        t.check(st == 400, f"{what}: status {st} (want 201, 404 or 400): {err!r}")


def daemon_prog_ids(pid):
    """The ids of the BPF programs the daemon holds open (from /proc fdinfo)."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def uprobe_links(d):
    """perf_event or uprobe_multi links (bpftool 7.1 prints the latter as
    type 12) of `bpftool link show` that run the daemon's scope programs (not the CPU sampler's perf events). None when bpftool
    cannot tell."""
    ids = daemon_prog_ids(d.proc.pid)
    try:
        p = subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True,
                           timeout=30)
        links = json.loads(p.stdout)
        p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                           timeout=30)
        progs = json.loads(p.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    ids &= {pr.get("id") for pr in progs if pr.get("name") in ("scope_enter", "scope_exit")}
    return sum(1 for ln in links
               if ln.get("type") in ("perf_event", "uprobe_multi", 12) and ln.get("prog_id") in ids)


def is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def target_states(d):
    st, body = d.get("/api/targets", timeout=TIMEOUT)
    if st != 200:
        return {}
    return {x["pid"]: x["state"] for x in body.get("targets", [])}


d = Daemon(qprofd, ["--collector", "bpf"])
keeper = Target([target_bin, "--mode", "idle"])  # stays: its links must stay too
procs = []
added = []
answers = {}
rng = random.Random(20240611)
try:
    st, body = attach(d, keeper.pid)
    t.eq(st, 201, "attach a long-lived target")
    have_bpftool = uprobe_links(d) is not None
    base = uprobe_links(d) if have_bpftool else None
    if have_bpftool:
        t.check(base > 0, f"bpftool shows the long-lived target's uprobe links ({base})")

    for i in range(ROUNDS):
        p = Target([target_bin, "--mode", "idle", "--exit"])
        procs.append(p)
        how = i % 3
        if how == 0:
            # the signal first, the request right after: it exits meanwhile
            p.start()
            st, body = attach(d, p.pid)
        elif how == 1:
            # the signal lands while the daemon attaches (an attach takes some ms)
            delay = rng.uniform(0, 0.04)
            timer = threading.Timer(delay, p.start)
            timer.start()
            st, body = attach(d, p.pid)
            timer.join()
        else:
            # exited and reaped before the request: the pid is gone
            p.start()
            p.proc.wait(timeout=30)
            st, body = attach(d, p.pid)
        what = f"round {i} (pid {p.pid}, case {how})"
        check_answer(st, body, what)
        msg = body.get("error", "") if isinstance(body, dict) else str(body)
        key = f"{st} " + re.sub(r"\d+", "N", msg)
        answers[key[:120]] = answers.get(key[:120], 0) + 1
        if st == 201:
            added.append(p.pid)
        t.eq(p.proc.wait(timeout=30), 0, f"{what}: the target exited by itself")
    print("answers:", json.dumps(answers, indent=1), flush=True)

    # the daemon is fine and took note of every exit
    st, status = d.get("/api/status", timeout=TIMEOUT)
    t.eq(st, 200, "status answers after the races")

    def all_exited():
        states = target_states(d)
        return all(states.get(pid) == "exited" for pid in added)
    t.check(wait_for(all_exited, timeout=10), f"every added target is 'exited' within 10 s: "
            f"{ {pid: s for pid, s in target_states(d).items() if pid in added} }")
    t.eq(target_states(d).get(keeper.pid), "running", "the long-lived target is still running")

    # no uprobe links left for exited targets: just the long-lived one's
    if have_bpftool:
        t.eq(uprobe_links(d), base, "uprobe links after the races (only the running target's)")
    for pid in added:
        st, body = d.delete(f"/api/targets/{pid}")
        t.eq(st, 200, f"detach exited target {pid}")

    # a zombie: a child of ours that has exited but is not reaped yet
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        t.check(wait_for(lambda: is_zombie(child), timeout=10), f"forked child {child} is a zombie")
        st, body = attach(d, child)
        print(f"zombie (python fork): {st} {body!r}", flush=True)
        t.check(400 <= st < 500, f"attach a zombie: 4xx, got {st} {body!r}")
        t.check(isinstance(body, dict) and isinstance(body.get("error"), str),
                f"attach a zombie: JSON error: {body!r}")
    finally:
        os.waitpid(child, 0)

    # a zombie of a program that has probes: its maps are gone already
    z = Target([target_bin, "--mode", "idle", "--exit"])
    procs.append(z)
    z.start()
    t.check(wait_for(lambda: is_zombie(z.pid), timeout=10), f"scope_target {z.pid} is a zombie")
    st, body = attach(d, z.pid)
    print(f"zombie (scope_target): {st} {body!r}", flush=True)
    t.check(400 <= st < 500, f"attach a zombie scope_target: 4xx, got {st} {body!r}")
    t.check(isinstance(body, dict) and isinstance(body.get("error"), str),
            f"attach a zombie scope_target: JSON error: {body!r}")
    z.proc.wait(timeout=30)
    if st == 201:  # should not happen; do not leave it behind
        d.delete(f"/api/targets/{z.pid}")

    # the long-lived target goes: no links at all then
    st, _ = d.delete(f"/api/targets/{keeper.pid}")
    t.eq(st, 200, "detach the long-lived target")
    if have_bpftool:
        t.eq(uprobe_links(d), 0, "no uprobe links left once nothing runs")
    st, _ = d.get("/api/status", timeout=TIMEOUT)
    t.eq(st, 200, "status answers at the end")
finally:
    keeper.kill()
    for p in procs:
        p.kill()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0")
    log = d.logtext()
    bad = [ln for ln in log.splitlines() if "error" in ln.lower()]
    t.check(not bad, "the daemon log has no error: " + " | ".join(bad[:5]))
sys.exit(t.done())
