#!/usr/bin/env python3
"""The demo's strategy (examples/strategy.c) on the default collector, the
ring, for a few seconds, started after qprofd (--binary), so that no scope
or span of it began before the attach: its two values spread over more histogram buckets
than --max-sites allows scope rows (set to its least here, 16, twice the
strategy's 8 rows, so that a short run is enough), and none of them may take
a scope's room. The status shows no scope dropped but what the ring itself
lost (normally nothing; else only the spans whose begins were in what it
lost): no `map_full`, the span across threads `order_to_fill` and its steps
have their rows, values and marks lost are 0, and the text status says
"0 dropped", with no reason, when the JSON counts none.

usage: test_ring_status.py QPROFD QPROF_CLI STRATEGY"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, require_root, wait_for  # noqa: E402

qprofd, cli, strategy = sys.argv[1:4]
require_root()
t = Failures("integration_ring_status")


def run(max_sites, seconds):
    """(JSON status, text status, scope names) after SECONDS of the strategy."""
    d = Daemon(qprofd, ["--binary", os.path.realpath(strategy), "--max-sites", str(max_sites)])
    prog = subprocess.Popen([strategy, "--threads", "2", "--rate", "20000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def values_seen():
            st, v = d.get("/api/values")
            return st == 200 and sum(r.get("count", 0) for r in (v or {}).get("values", [])) >= 20000
        t.check(wait_for(values_seen, timeout=60, step=0.2), "the strategy's values reach qprofd")
        time.sleep(seconds)
        st, status = d.get("/api/status")
        t.eq(st, 200, "GET /api/status")
        st, scopes = d.get("/api/scopes")
        t.eq(st, 200, "GET /api/scopes")
        text = subprocess.run([cli, "--socket", d.sock, "status"], capture_output=True, text=True,
                              timeout=60)
        t.eq(text.returncode, 0, "qprof-cli status")
        names = {r.get("name") for r in (scopes or {}).get("scopes", [])}
        if os.environ.get("QP_DUMP"):
            print(status, scopes, file=sys.stderr)
        return status, text.stdout, names, d.logtext()
    finally:
        d.stop()
        prog.terminate()
        prog.wait(timeout=30)


def scopes_line(text):
    return next((ln for ln in text.splitlines() if ln.startswith("scopes:")), "")


status, text, names, log = run(16, 3)
sc = status["scopes"]
targets = status.get("targets", [])
t.check(targets and all(x.get("collector") == "ring" for x in targets),
        f"the strategy runs on the ring: {[x.get('collector') for x in targets]}")
reasons = sc.get("dropped_by_reason", {})
t.eq(reasons.get("map_full", 0), 0, "map_full with room for every row")
ring_lost = reasons.get("ring_lost", 0)
if ring_lost == 0:
    t.eq(sc.get("dropped", 0), 0, f"nothing lost, nothing dropped: {reasons}")
else:
    # records the ring lost (counted) may have held the begins of spans
    # whose ends came later: those ends are the loss's, nothing else is
    follow = ("ring_lost", "span_end_without_begin", "span_step_without_begin")
    t.check(all(v == 0 for k, v in reasons.items() if k not in follow),
            f"with {ring_lost} scopes lost on the ring, no other drop: {reasons}")
t.eq(status.get("values", {}).get("lost", status.get("values_lost", 0)), 0, "values lost")
t.eq(status.get("marks", {}).get("lost", status.get("marks_lost", 0)), 0, "marks lost")
for want in ("order_to_fill", "on_wire", "acked", "calc_ma"):
    t.check(want in names, f"scope row {want} present: {sorted(n for n in names if n)}")
line = scopes_line(text)
t.check(line != "", f"the text status has a scopes line:\n{text}")
m = re.search(r"(\d+)(k|M)? dropped", line)
shown = int(m.group(1)) if m and not m.group(2) else None
t.check(m is not None, f"the text status's scopes line says what was dropped: {line!r}")
if sc.get("dropped", 0) == 0:
    t.check(shown == 0 and "(" not in line, f"nothing dropped, and the text says 0: {line!r}")
else:
    t.check(m is not None and shown != 0, f"{sc['dropped']} dropped, and the text says so: {line!r}")
print(f"ring_status: {line.strip()} (ring lost {ring_lost})", flush=True)

sys.exit(t.done())
