#!/usr/bin/env python3
"""Per-instance migrations, page faults and irq time of the slowest
instances, under both scope collectors, on kev_target.c: 500
instances of scope "tick" pinned to one CPU under SCHED_FIFO, every 50th
(offset 10) faulting K = 64 new pages, every 50th (offset 35) moving itself
to the other CPU, both then spinning 2 ms. Each of the 20 special instances
is found among the 32 slowest by the program's own time stamps around it,
and shows exactly K page faults and 0 migrations (faulters) or exactly 1
migration and 0 page faults (movers); every other kept instance after the
warm-up shows 0 and 0; irq_ns is a number >= 0 in all. The ring collector
(figures from kev_ring and the intervals' migrations) and the BPF collector
(counters in the scope frames) must give the same figures; /api/status
counts the ring's kernel events and no loss.

About 10 s. usage: test_slow_kernel.py QPROFD KEV_TARGET"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import SKIP, Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
if os.cpu_count() < 2:
    print("SKIP: needs two CPUs to migrate between")
    sys.exit(SKIP)
t = Failures("integration_slow_kernel")
K = 64
FAULT, MIGRATE = 1, 2


def match(inst, res):
    """The special instances of RES with their kept instance (or None)."""
    out = []
    for kind, t0, t1 in res["special"]:
        # the ring's stamps are the TSC mapped to CLOCK_MONOTONIC: allow 20 us
        m = [i for i in inst if t0 - 20000 <= i["start_ns"] <= t1]
        out.append((kind, t0, m[0] if len(m) == 1 else None))
    return out


def run(ring):
    name = "ring" if ring else "bpf"
    prog = Target([target, "500", str(K)])
    d = Daemon(qprofd, ["--collector", "ring" if ring else "bpf", "--pid", str(prog.pid)])
    figures = []
    try:
        st, status = d.get("/api/status")
        tg = [x for x in status["targets"] if x["pid"] == prog.pid]
        t.check(tg and tg[0].get("collector") == name, f"{name}: collector {tg}")
        t.eq(status["offcpu"]["running"], True, f"{name}: kernel events traced")
        prog.start()
        res = prog.result()
        print(f"{name}: program: fifo {res['fifo']}, {res['faulters']} faulters, {res['migrators']} movers",
              flush=True)
        t.eq((res["faulters"], res["migrators"]), (10, 10), f"{name}: special instances made")
        inst = []

        def all_special():
            nonlocal inst
            st, body = d.get(f"/api/scopes/slowest?pid={prog.pid}&name=tick&n=32")
            inst = body["instances"] if st == 200 else []
            return len(inst) == 32 and all(m for _, _, m in match(inst, res))
        t.check(wait_for(all_special, timeout=20), f"{name}: the 20 special instances among the 32 slowest")
        special = set()
        offs = []
        partial = 0
        mover_miss = []
        for kind, t0, i in match(inst, res):
            if not t.check(i is not None, f"{name}: instance at {t0} kept"):
                continue
            if i["partial"]:
                # kernel events were lost while it ran (counted): not exact
                partial += 1
                print(f"{name}: partial instance at {t0}: {i['page_faults']} faults, {i['migrations']} migrations",
                      flush=True)
                continue
            special.add(i["start_ns"])
            offs.append(i["start_ns"] - t0)
            want = (K, 0) if kind == FAULT else (0, 1)
            what = "faulter" if kind == FAULT else "mover"
            if ring and kind != FAULT and (i["page_faults"], i["migrations"]) == (0, 0) and not mover_miss:
                # the known miss (docs/guide/offcpu.md, tests): one of
                # ten ring movers, twice in about 30 loaded runs; a second fails
                mover_miss.append(t0)
                print(f"  KNOWN MISS: ring mover at {t0} shows 0 migrations; start {i['start_ns']} "
                      f"dur {i['dur_ns']} waits {[(w['at_ns'] - i['start_ns'], w['ns'], w['reason']) for w in i['off_cpu']]}",
                      flush=True)
                continue
            if not t.eq((i["page_faults"], i["migrations"]), want,
                        f"{name}: {what} at {t0}: (page faults, migrations)"):
                print(f"  start {i['start_ns']} dur {i['dur_ns']} waits "
                      f"{[(w['at_ns'] - i['start_ns'], w['ns'], w['reason']) for w in i['off_cpu']]}", flush=True)
            t.check(isinstance(i["irq_ns"], int) and i["irq_ns"] >= 0, f"{name}: {what} irq_ns {i['irq_ns']}")
            figures.append((kind, i["page_faults"], i["migrations"]))
        t.check(partial <= 2, f"{name}: at most 2 of 20 instances partial ({partial})")
        print(f"{name}: instance start - program's stamp before it, ns: {sorted(offs)}", flush=True)
        others = [i for i in inst if i["start_ns"] not in special and i["start_ns"] > res["warm_end"]]
        t.check(len(others) >= 1, f"{name}: ordinary instances kept too ({len(others)})")
        for i in others:
            t.eq((i["page_faults"], i["migrations"]), (0, 0),
                 f"{name}: ordinary instance at {i['start_ns']} ({i['dur_ns']} ns): (page faults, migrations)")
            t.check(isinstance(i["irq_ns"], int) and i["irq_ns"] >= 0, f"{name}: ordinary irq_ns {i['irq_ns']}")
        oc = d.get("/api/status")[1]["offcpu"]
        slow = oc["slow"]
        print(f"{name}: status offcpu {oc}", flush=True)
        if ring:
            # at least the faults of the 10 faulters came through kev_ring
            t.check(slow["kevents"] >= 10 * K, f"ring: kernel events remembered {slow['kevents']} >= {10 * K}")
            t.eq(slow["kevents_lost"], 0, "ring: no kernel event lost")
        else:
            t.eq(slow["kevents"], 0, "bpf: no kernel event of a ring thread")
        prog.finish()
    finally:
        if t.failed:
            print(d.logtext()[-2000:], end="")
        d.stop()
    return sorted(figures)


ring = run(True)
bpf = run(False)
# instances not partial under both collectors: equal figures
t.check(all(f in bpf for f in ring) and all(f in ring for f in bpf),
        f"the ring collector's figures = the BPF collector's: {ring} against {bpf}")
sys.exit(t.done())
