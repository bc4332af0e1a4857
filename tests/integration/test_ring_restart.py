#!/usr/bin/env python3
"""A restarted qprofd picks up the rings of a live target (the ring
collector), and /metrics gives each target's ring losses as status does.

One thread of ring_restart_target writes flat scopes at a paced rate all
along, counting from its own ring's head the scopes written whole into the
ring. The first qprofd is stopped mid-run; while none runs nothing is
written (the semaphore is down); a second qprofd, started on the same pid,
finds the ring when it announces itself again. From the point it takes
over its accounting is exact, per ring and in scopes:

    base + read + lost == tail == head      (quiescent: the writer paused)
    base + before_attach == the head the ring had when it started
    counted + lost_scopes == the scopes written whole since

(base: the records already gone from the ring at its first read;
before_attach: the older records still in it, read and set aside; the
ring's first record, the THREAD record naming its owner, is read as part
of no session while it is still in the ring.)

- `restart` mode: 262,144-record rings at 100,000 scopes/s, the first qprofd
  stopped by SIGTERM, then the second by SIGKILL and a third started: both
  take-overs exact, nothing estimated.
- `lapped` mode: 4,096-record rings at 100,000 scopes/s (the ring laps every
  20 ms): the second qprofd may find the ring already lapped by its own
  session. The arithmetic still holds; what it could not read is counted
  lost (an upper bound, flagged estimated when it is one).
- both: the per-target series of /metrics (qprof_ring_records_read_total,
  qprof_ring_records_lost_total, qprof_ring_events_lost_total{kind},
  qprof_ring_lost_estimated) equal targets[].ring of /api/status.

usage: test_ring_restart.py QPROFD RING_RESTART_TARGET restart|lapped"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root, wait_for  # noqa: E402

qprofd, target_bin, mode = sys.argv[1:4]
require_root()
t = Failures(f"integration_ring_{mode}")
RATE = 100000


class Prog:
    def __init__(self):
        self.p = subprocess.Popen([target_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        _started.append(self.p)
        self.pid = self.cmd("pid")["pid"]

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def quit(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)


def ring_of(d, pid):
    _, s = d.get("/api/status")
    tg = next((x for x in s["targets"] if x["pid"] == pid), None)
    return tg["ring"] if tg else None


def counted(d, pid):
    _, body = d.get(f"/api/scopes?pid={pid}")
    return sum(r["count"] for r in body.get("scopes", []) if r["name"] == "steady")


def settle(d, prog, head, timeout=30):
    def done():
        r = ring_of(d, prog.pid)
        return r and r["head"] == head and r["unread"] == 0
    wait_for(done, timeout, 0.05)
    return ring_of(d, prog.pid)


def metrics_match(d, prog, tag):
    """/metrics per target == targets[].ring of /api/status (quiescent)."""
    r = ring_of(d, prog.pid)
    _, _, body = d.request("GET", "/metrics")
    text = body.decode()
    lab = f'pid="{prog.pid}",exe="{os.path.basename(target_bin)}"'

    def series(name, extra=""):
        m = re.search(r"^" + name + r"\{" + re.escape(lab + extra) + r"\} (\S+)$", text, re.M)
        return float(m.group(1)) if m else None
    t.eq(series("qprof_ring_records_read_total"), r["read"], f"{tag}: metrics records read == status")
    t.eq(series("qprof_ring_records_lost_total"), r["lost"], f"{tag}: metrics records lost == status")
    for kind, key in (("scope", "lost_scopes"), ("scope_partial", "lost_scopes_partial"),
                      ("mark", "lost_marks"), ("value", "lost_values"), ("other_record", "lost_other_records")):
        t.eq(series("qprof_ring_events_lost_total", f',kind="{kind}"'), r[key],
             f"{tag}: metrics lost {kind} == status {key}")
    t.eq(series("qprof_ring_lost_estimated"), 1 if r["lost_estimated"] else 0,
         f"{tag}: metrics lost_estimated == status")


def take_over(prog, old, args, sig, tag, exact):
    """Stop OLD by SIG mid-run, start a qprofd with ARGS, check it."""
    old.stop(sig)
    gap = prog.cmd("mark")          # the head stands still: nothing recorded
    new = Daemon(qprofd, args)
    time.sleep(1.5)                 # writes under the new qprofd
    end = prog.cmd("pause")
    r = settle(new, prog, end["head"])
    c = counted(new, prog.pid)
    one = next((x for x in r["list"] if x["tid"] == end["tid"]), None)
    t.check(one is not None, f"{tag}: the new qprofd found the ring of tid {end['tid']}")
    t.eq(r["head"], end["head"], f"{tag}: the daemon's head is the program's")
    t.eq(r["unread"], 0, f"{tag}: nothing unread")
    t.eq(r["base"] + r["read"] + r["lost"], r["head"], f"{tag}: base + read + lost == head")
    if one:
        t.eq(one["base"] + one["read"] + one["lost"], one["head"], f"{tag}: the ring adds up")
    t.check(end["full"] > 0, f"{tag}: scopes written under the new qprofd ({end['full']})")
    if exact:
        t.eq(r["base"] + r["before_attach"] + (1 if r["base"] == 0 else 0), gap["head"],
             f"{tag}: base + before_attach is what the ring held before the take-over")
        t.eq(c + r["lost_scopes"], end["full"], f"{tag}: counted + lost_scopes == written since")
        t.eq(r["lost_estimated"], False, f"{tag}: nothing estimated")
    else:
        # what the new qprofd could not read is counted, never dropped: the
        # count and the loss bracket what was written
        t.check(r["base"] + r["before_attach"] <= gap["head"],
                f"{tag}: base + before_attach {r['base'] + r['before_attach']} <= the head before, {gap['head']}")
        t.check(c <= end["full"] <= c + r["lost_scopes"] + r["lost_scopes_partial"],
                f"{tag}: counted {c} <= written {end['full']} <= counted + lost "
                f"{c + r['lost_scopes'] + r['lost_scopes_partial']}")
        if one and one["start_unknown"]:
            t.eq(r["lost_estimated"], True, f"{tag}: a ring found lapped: the loss flagged estimated")
    metrics_match(new, prog, tag)
    print(f"{tag}: head before {gap['head']}, written since {end['full']} (+{end['partial']} in part), "
          f"counted {c}; base {r['base']} read {r['read']} (before attach {r['before_attach']}) lost {r['lost']} "
          f"(scopes {r['lost_scopes']}), "
          f"start_unknown {one and one['start_unknown']}, estimated {r['lost_estimated']}", flush=True)
    prog.cmd("resume")
    return new


prog = Prog()
args = ["--pid", str(prog.pid)]
first = args + (["--ring-records", "4096"] if mode == "lapped" else [])
d = Daemon(qprofd, first)
try:
    start = prog.cmd(f"start {RATE}")
    t.eq(start["nrec"], 4096 if mode == "lapped" else 262144, "the ring has the size the first qprofd asked")
    time.sleep(1.0)
    paused = prog.cmd("pause")
    settle(d, prog, paused["head"])
    metrics_match(d, prog, "first qprofd")
    prog.cmd("resume")
    d = take_over(prog, d, args, signal.SIGTERM, "after SIGTERM", mode == "restart")
    if mode == "restart":
        time.sleep(0.5)
        d = take_over(prog, d, args, signal.SIGKILL, "after SIGKILL", True)
finally:
    d.stop()
    prog.quit()
sys.exit(t.done())
