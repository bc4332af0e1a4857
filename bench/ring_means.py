#!/usr/bin/env python3
"""bench/ring_means.py - ring durations against the program's own clock:
scopes of about 1 us and 20 us on two threads (bench/ring_means.c), the
ring's means against the program's own figure (the time between its first
and last clock read inside each scope; goal: within 3 % + 30 ns), every
scope counted. Prints the figures and the load; needs root. A preemption
between a marker's time stamp and the program's first or last clock read
would lengthen the ring's figure alone: the program's workers run
SCHED_FIFO, and it says how many scopes were disturbed anyway (their time
from just outside the scope over 2 us more than inside it). Also the ctest
integration_ring_means (exit 0 when every check passes, 1 otherwise, 77
without root).

usage: bench/ring_means.py BUILD_DIR"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "integration"))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build")
qprofd, target_bin = os.path.join(build, "daemon", "qprofd"), os.path.join(build, "bench", "ring_means")
with open("/proc/loadavg") as f:
    print("load", " ".join(f.read().split()[:3]), flush=True)
K = 8000
require_root()
t = Failures("ring_means")
prog = Target([target_bin, str(K)])
d = Daemon(qprofd, ["--pid", str(prog.pid)])  # the default collector: the ring
try:
    st, status = d.get("/api/status")
    tg = [x for x in status.get("targets", []) if x.get("pid") == prog.pid]
    t.check(tg and tg[0].get("collector") == "ring", "the target runs on the ring collector")
    prog.start()
    mine = prog.result()

    def rows():
        st, body = d.get(f"/api/scopes?pid={prog.pid}")
        return {r["name"]: r for r in (body or {}).get("scopes", [])} if st == 200 else {}
    wait_for(lambda: rows().get("means_short", {}).get("count", 0) >= mine["short_count"] and
             rows().get("means_long", {}).get("count", 0) >= mine["long_count"], timeout=20, step=0.2)
    r = rows()
    print(f"workers SCHED_FIFO: {bool(mine.get('fifo'))}; scopes disturbed between a marker and the "
          f"program's clock: {mine.get('disturbed')} ({mine.get('disturbed_ns', 0) / 1000:.1f} us in all)",
          flush=True)
    for name, own, outer, n in (("means_short", mine["short_mean"], mine["short_outer"], mine["short_count"]),
                                ("means_long", mine["long_mean"], mine["long_outer"], mine["long_count"])):
        row = r.get(name, {})
        got = row.get("mean_ns") or 0
        tol = 0.03 * own + 30
        print(f"{name}: ring mean {got:.1f} ns, program {own:.1f} ns inside the scope "
              f"({outer:.1f} from outside it), difference {got - own:+.1f} ns (tolerance {tol:.1f})",
              flush=True)
        t.eq(row.get("count"), n, f"{name}: every scope counted")
        t.check(abs(got - own) <= tol, f"{name}: mean {got:.1f} ns within {tol:.1f} ns of {own:.1f}")
finally:
    prog.finish()
    prog.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
