#!/usr/bin/env python3
"""Value histogram buckets polled by what changed: QPROF_VALUE of
1..60000 at one site (about 19,900 buckets) then /api/values twice. Both
answers exact (count, min, max; p50, p99, mean within the histogram's
0.013%), with the default ring of dirty keys and with one of 128 keys
(QPROF_DIRTY_RING_BYTES=4096), where the poll must fall back to reading
every bucket (a poll that trusted the ring would miss most of them).

usage: test_values_poll.py QPROFD MARKERS_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, markers = sys.argv[1:3]
require_root()
t = Failures("integration_values_poll")
N = 60000


def run(label, ring):
    if ring:
        os.environ["QPROF_DIRTY_RING_BYTES"] = str(ring)
    prog = Target([markers, "spread", str(N)])
    try:
        d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
    finally:
        os.environ.pop("QPROF_DIRTY_RING_BYTES", None)
    try:
        prog.start()
        prog.result()
        for n in (1, 2):
            st, body = d.get(f"/api/values?pid={prog.pid}")
            t.eq(st, 200, f"{label}: values answers ({n})")
            r = {v["name"]: v for v in body["values"]}.get("spread", {})
            t.eq((r.get("count"), r.get("min"), r.get("max")), (N, 1.0, float(N)),
                 f"{label}: count, min, max exact ({n})")
            for key, want in (("p50", N / 2), ("p99", 0.99 * N), ("mean", (N + 1) / 2)):
                got = r.get(key)
                t.check(got is not None and abs(got - want) <= want * 1.3e-4,
                        f"{label}: {key} within 0.013% of {want}: {got} ({n})")
        st, status = d.get("/api/status")
        t.eq(status["values"]["lost"], 0, f"{label}: no value lost")
        prog.finish()
    finally:
        prog.kill()
        t.eq(d.stop(), 0, f"{label}: qprofd exits 0")


run("default ring", None)
run("128 keys of ring", 4096)
sys.exit(t.done())
