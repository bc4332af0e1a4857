#!/usr/bin/env python3
"""A target that exited is never answered for by the process that took its
pid after it. scope_target is attached and its threads listed; it is
killed and reaped, qprofd sees it exited, and pid_reuse makes an unrelated
process ("intruder", two threads, one spinning in intruder_spin) on that
very pid with clone3(set_tid). Then:

- /api/threads?pid=P and /api/thread/stacks?pid=P answer 404 ("has exited") and name
  nothing of the intruder;
- the exited target's scope figures are still its own (/api/scopes: the
  counts of its run), /api/status shows it exited with its comm;
- a CPU window of pid P names nothing of the intruder;
- a new attach of P is the intruder (a new target, state running), and
  then /api/threads lists the intruder's threads: 3, named.

About 10 s. usage: test_pid_reuse.py QPROFD SCOPE_TARGET PID_REUSE"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, _started, require_root, wait_for  # noqa: E402

qprofd, scope_bin, reuse_bin = sys.argv[1:4]
require_root()
t = Failures("integration_pid_reuse")


def target_of(d, pid):
    _, s = d.get("/api/status")
    return next((x for x in s["targets"] if x["pid"] == pid), None)


prog = Target([scope_bin, "--iters", "200"])
pid = prog.pid
d = Daemon(qprofd, ["--frequency", "999"])
intruder = None
try:
    st, body = d.post("/api/targets", {"pid": pid})
    t.eq(st, 201, f"attach: {body}")
    prog.start()
    mine = prog.result()
    st, th = d.get(f"/api/threads?pid={pid}")
    t.check(st == 200 and [x["name"] for x in th["threads"]] == ["scope_target"],
            f"the live target's threads: {st} {th and [x['name'] for x in th['threads']]}")
    rows = wait_for(lambda: {(r["name"], r["parent"]): r["count"]
                             for r in d.get(f"/api/scopes?pid={pid}")[1]["scopes"]}
                    .get(("outer", None)) == mine["outer_n"], 20, 0.1)
    t.check(rows, "outer counted before the exit")

    prog.kill()  # SIGKILL and reaped: the pid is free
    t.check(wait_for(lambda: (target_of(d, pid) or {}).get("state") == "exited", 20, 0.05),
            f"qprofd sees the target exited: {target_of(d, pid)}")

    intruder = subprocess.Popen([reuse_bin, str(pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    _started.append(intruder)
    line = intruder.stdout.readline()
    if not line:
        err = intruder.stderr.read()
        t.check(False, f"pid_reuse could not take pid {pid}: {err}")
        sys.exit(t.done())
    t.eq(json.loads(line)["pid"], pid, "the intruder has the target's pid")
    with open(f"/proc/{pid}/comm") as f:
        t.eq(f.read().strip(), "intruder", "pid P is the intruder now")

    for path in (f"/api/threads?pid={pid}", f"/api/thread/stacks?pid={pid}"):
        st, _, body = d.request("GET", path)
        t.check(st == 404 and b"has exited" in body, f"{path} of the exited target: {st} {body[:200]!r}")
        t.check(b"intruder" not in body, f"{path} names nothing of the intruder")

    st, body = d.get(f"/api/scopes?pid={pid}")
    got = {(r["name"], r["parent"]): r["count"] for r in (body or {}).get("scopes", [])}
    t.eq((st, got.get(("outer", None)), got.get(("inner", "outer"))), (200, mine["outer_n"], mine["inner_n"]),
         "the exited target's scopes are its own")
    tg = target_of(d, pid)
    t.eq((tg or {}).get("state"), "exited", "still listed as exited")
    t.eq((tg or {}).get("comm"), "scope_target", "with its own comm")

    st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid}&seconds=1", timeout=30)
    t.check(b"intruder" not in body, f"the CPU window of pid {pid} names nothing of the intruder ({st})")

    # the intruder as a target of its own: then its threads are its
    st, body = d.delete(f"/api/targets/{pid}")
    t.check(st in (200, 204), f"detach the exited target: {st} {body}")
    st, body = d.post("/api/targets", {"pid": pid})
    t.eq(st, 201, f"attach the process now at pid {pid}: {body}")
    st, th = d.get(f"/api/threads?pid={pid}")
    names = sorted(x["name"] for x in (th or {}).get("threads", []))
    t.eq((st, names), (200, ["intruder", "intruder-t", "intruder-t"]), "the new target's own threads")
finally:
    if intruder and intruder.poll() is None:
        intruder.kill()
        intruder.wait()
    code = d.stop()
t.eq(code, 0, "qprofd exits 0")
sys.exit(t.done())
