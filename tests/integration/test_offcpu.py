#!/usr/bin/env python3
"""Off-CPU profiles, the scopes' kernel figures and the slowest instances,
end to end on offcpu_target.c:

1. slow: 500 instances of scope "tick", about 20 us each, every 50th
   sleeping 2 ms in sleep_2ms(), every 50th (offset 25) spinning 2 ms in
   spin_2ms(), CPU sampled at 1999 Hz. The 20 slowest instances are exactly
   the 10 sleepers (>= 1.8 ms off the CPU, blocked, stack naming
   sleep_2ms) and the 10 spinners (samples naming spin_2ms); the 21st is an
   ordinary one; 32 are kept. The row's off_cpu_ns equals the measured
   sleeps within 10 %; so does the weight of sleep_2ms in the off-CPU
   folded stacks, the flame graph and the CLI; pprof is gzip with the
   off_cpu sample type.
2. contend: a thread sharing a CPU with a spinner and moving between CPUs
   every 10 ms: the row's involuntary switches, voluntary switches and
   migrations within 5 % of the thread's own /proc counts over the scope;
   page faults of 2048 new pages within 5 % of getrusage's; the exit
   report's table of kernel figures gives the rows' exact figures.
3. Bad input: unknown scope 404, n=0 and n=1e9 400, no name 400, a target
   whose scope never ran 404, a pid that is no target 404.
4. The ring collector: the same slowest and off-CPU weight, the row's
   off_cpu_ns within 10 % of the sleeps; and part 2 again under
   "--ring": the same counts within 5 % (the figures come from the ring
   header's open scopes).
5. Bounds: with QPROF_OFF_RB_BYTES=4096 a burst of 40,000 switches loses
   intervals, counted in /api/status, and kept + lost covers every switch
   the two threads made.

About 15 s. usage: test_offcpu.py QPROFD QPROF_CLI OFFCPU_TARGET"""
import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, cli, target = sys.argv[1:4]
require_root()
t = Failures("integration_offcpu")


def row(d, pid, name):
    st, body = d.get(f"/api/scopes?pid={pid}")
    rows = [r for r in (body or {}).get("scopes", []) if r["name"] == name]
    return rows[0] if st == 200 and len(rows) == 1 else None


def folded_weight(text, frame):
    total = 0
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        if frame in stack.split(";"):
            total += int(n)
    return total


MACHINERY = ("bpf_prog_", "bpf_trace_run", "__traceiter_", "__bpf_trace_")


def machinery_left(stacks, what):
    """The stacks are taken inside qprofd's own sched_switch program: its
    frames (the program, bpf_trace_runN, the tracepoint's iterator) are left
    out, so each kernel part ends where the kernel switched (__schedule)."""
    bad = [s for s in stacks if any(f.removesuffix("_[k]").startswith(MACHINERY)
                                    for f in s.rpartition(" ")[0 if s.rpartition(" ")[0] else 2].split(";"))]
    t.eq(len(bad), 0, f"{what}: stacks with qprofd's tracing frames (first: {bad[:1]})")
    leaves = [s.rpartition(" ")[0].split(";")[-1].removesuffix("_[k]") if s.rpartition(" ")[0]
              else s.split(";")[-1].removesuffix("_[k]") for s in stacks if s]
    t.check(stacks == [] or "__schedule" in leaves,
            f"{what}: a kernel part ends in __schedule (leaves: {sorted(set(leaves))[:8]})")


def slow_part():
    prog = Target([target, "slow", "500"])
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--frequency", "1999"])
    try:
        st, status = d.get("/api/status")
        t.eq(status["offcpu"]["running"], True, "kernel events traced")
        prog.start()
        res = prog.result()
        sleep_ns = res["sleep_ns"]
        print(f"slow: {res}", flush=True)
        t.eq(res["sleeps"], 10, "sleeps made")
        r = wait_for(lambda: (lambda x: x if x and x["count"] == 500 else None)(row(d, prog.pid, "tick")))
        t.check(r is not None, "tick row with 500 instances")
        if r:
            t.near(r["off_cpu_ns"], sleep_ns, 0.10, "tick off_cpu_ns against the measured sleeps")
            t.check(r["voluntary_switches"] >= 10, f"voluntary switches {r['voluntary_switches']} >= 10")

        st, body = d.get(f"/api/scopes/slowest?pid={prog.pid}&name=tick&n=32")
        t.eq(st, 200, "slowest answered")
        inst = body["instances"] if st == 200 else []
        t.eq(body.get("kept") if body else None, 32, "instances kept (the reservoir's bound)")
        t.eq(len(inst), 32, "n=32 instances")
        sleepers = spinners = 0
        for k, i in enumerate(inst[:20]):
            blocked = [w for w in i["off_cpu"] if w["reason"] == "blocked"
                       and "sleep_2ms" in w["stack"]]
            spun = [s for s in i["samples"] if "spin_2ms" in s["stack"].split(";")]
            if blocked and i["off_cpu_ns"] >= 1800000:
                sleepers += 1
            elif spun:
                spinners += 1
            else:
                t.check(False, f"instance {k} ({i['dur_ns']} ns) is neither a sleeper nor a spinner: {i}")
        t.eq(sleepers, 10, "sleepers among the 20 slowest")
        t.eq(spinners, 10, "spinners among the 20 slowest")
        if len(inst) > 20:
            t.check(inst[20]["dur_ns"] < 1000000, f"the 21st is ordinary: {inst[20]['dur_ns']} ns")
            t.check(all(inst[j]["dur_ns"] >= inst[j + 1]["dur_ns"] for j in range(len(inst) - 1)),
                    "slowest first")
        for i in inst[:20]:
            # the waits joined lie inside the instance (its duration is
            # calibrated: a few hundred ns shorter than the real one)
            t.check(i["off_cpu_ns"] <= i["dur_ns"] + 5000, f"off-CPU {i['off_cpu_ns']} within the "
                    f"instance's {i['dur_ns']} ns")
            t.check(all(i["start_ns"] <= w["at_ns"] and w["at_ns"] + w["ns"] <= i["start_ns"] + i["dur_ns"] + 5000
                        for w in i["off_cpu"]), "each wait inside its instance")

        st, _, body = d.request("GET", f"/api/offcpu/folded?pid={prog.pid}&scope=tick")
        t.eq(st, 200, "off-CPU folded")
        machinery_left(body.decode().splitlines(), "off-CPU folded")
        machinery_left([";".join(reversed(w["stack"])) if isinstance(w["stack"], list) else w["stack"]
                        for i in inst for w in i["off_cpu"]], "slow instances' waits")
        w = folded_weight(body.decode(), "sleep_2ms")
        t.near(w, sleep_ns, 0.10, "sleep_2ms weight in the off-CPU folded stacks")
        st, _, svg = d.request("GET", f"/api/offcpu/flamegraph?pid={prog.pid}&scope=tick")
        t.eq(st, 200, "off-CPU flame graph")
        m = re.findall(r"<title>sleep_2ms \((\d+) ns, ", svg.decode())
        t.check(len(m) >= 1, "the flame graph names sleep_2ms in ns")
        if m:
            t.near(sum(int(x) for x in m), sleep_ns, 0.10, "sleep_2ms weight in the flame graph")
        st, _, pb = d.request("GET", f"/pprof/offcpu?pid={prog.pid}")
        t.eq(st, 200, "off-CPU pprof")
        raw = gzip.decompress(pb) if st == 200 else b""
        t.check(b"off_cpu" in raw and b"sleep_2ms" in raw, "pprof: off_cpu sample type, sleep_2ms")
        out = subprocess.run([cli, "--socket", d.sock, "offcpu", "--pid", str(prog.pid), "--scope", "tick"],
                             capture_output=True, text=True, timeout=60)
        t.eq(out.returncode, 0, "qprof-cli offcpu")
        t.near(folded_weight(out.stdout, "sleep_2ms"), sleep_ns, 0.10, "qprof-cli offcpu weight")
        out = subprocess.run([cli, "--socket", d.sock, "slow", "tick", "-n", "20"],
                             capture_output=True, text=True, timeout=60)
        t.eq(out.returncode, 0, "qprof-cli slow tick")
        t.check("sleep_2ms" in out.stdout and "spin_2ms" in out.stdout and "blocked" in out.stdout,
                "qprof-cli slow names both functions and the reason")
        t.eq(out.stdout.count("\n#"), 20, "qprof-cli slow: 20 instances")

        # bad input
        for q, want in ((f"pid={prog.pid}&name=nosuch", 404), (f"pid={prog.pid}&name=tick&n=0", 400),
                        (f"pid={prog.pid}&name=tick&n=1000000000", 400), (f"pid={prog.pid}", 400),
                        (f"pid={prog.pid}&name=contended", 404), ("pid=999999999&name=tick", 404),
                        (f"pid={os.getpid()}&name=tick", 404), (f"pid={prog.pid}&name=tick&x=1", 400)):
            st, body = d.get(f"/api/scopes/slowest?{q}")
            t.eq(st, want, f"slowest?{q}")
            t.check(isinstance(body, dict) and body.get("error"), f"slowest?{q} says why")
        out = subprocess.run([cli, "--socket", d.sock, "slow", "nosuch", "--pid", str(prog.pid)],
                             capture_output=True, text=True, timeout=60)
        t.eq(out.returncode, 1, "qprof-cli slow of an unknown scope fails")
        out = subprocess.run([cli, "--socket", d.sock, "slow", "tick", "-n", "0"],
                             capture_output=True, text=True, timeout=60)
        t.eq(out.returncode, 2, "qprof-cli slow -n 0 is a usage error")
        prog.finish()
    finally:
        print(d.logtext()[-2000:] if t.failed else "", end="")
        d.stop()


def ring_part():
    """The same workload timed by the ring collector: the slowest and the
    off-CPU profile work alike, and so do the scope's kernel figures."""
    prog = Target([target, "slow", "500"])
    d = Daemon(qprofd, ["--collector", "ring", "--pid", str(prog.pid), "--frequency", "1999"])
    try:
        st, status = d.get("/api/status")
        tg = [x for x in status["targets"] if x["pid"] == prog.pid]
        t.check(tg and tg[0].get("collector") == "ring", f"ring collector: {tg}")
        prog.start()
        res = prog.result()
        r = wait_for(lambda: (lambda x: x if x and x["count"] == 500 else None)(row(d, prog.pid, "tick")))
        t.check(r is not None, "ring: tick row with 500 instances")
        if r:
            # the kernel figures of a ring thread's scope, from its ring header
            t.near(r["off_cpu_ns"], res["sleep_ns"], 0.10, "ring: tick off_cpu_ns against the measured sleeps")
            t.check(r["voluntary_switches"] >= 10, f"ring: voluntary switches {r['voluntary_switches']} >= 10")
        inst = []

        def slow20():
            st, body = d.get(f"/api/scopes/slowest?pid={prog.pid}&name=tick&n=20")
            return body["instances"] if st == 200 and len(body["instances"]) == 20 else None
        inst = wait_for(slow20) or []
        t.eq(len(inst), 20, "ring: 20 slowest")
        sleepers = sum(1 for i in inst if any(w["reason"] == "blocked" and "sleep_2ms" in w["stack"]
                                              for w in i["off_cpu"]) and i["off_cpu_ns"] >= 1800000)
        spinners = sum(1 for i in inst if any("spin_2ms" in x["stack"].split(";") for x in i["samples"]))
        t.eq(sleepers, 10, "ring: sleepers among the 20 slowest")
        # a spin whose samples were all lost is known only if the loss was
        # counted: then it may show no sample at all, never a wrong one
        cpu = d.get("/api/status")[1]["cpu"]
        unseen = sum(1 for i in inst if i["sample_count"] == 0 and i["dur_ns"] >= 1900000
                     and not any(w["reason"] == "blocked" for w in i["off_cpu"]))
        if cpu["lost"] and unseen:
            print(f"ring: {unseen} spins without samples, {cpu['lost']} samples counted lost", flush=True)
            t.eq(spinners + unseen, 10, "ring: spinners among the 20 slowest (some unseen, counted lost)")
        else:
            t.eq(spinners, 10, "ring: spinners among the 20 slowest")
        if sleepers != 10 or spinners != 10:
            print(f"ring: status cpu {cpu}", flush=True)
            for k, i in enumerate(inst):
                print(f"ring instance {k}: dur {i['dur_ns']} start {i['start_ns']} off {i['off_cpu_ns']} "
                      f"samples {[(x['count'], x['stack'][-70:]) for x in i['samples']]} "
                      f"waits {[(w['reason'], w['ns']) for w in i['off_cpu']]} "
                      f"{ {k2: v for k2, v in i.items() if k2 not in ('samples', 'off_cpu')} }", flush=True)
        # known since kev_ring (test_slow_kernel.py checks their values)
        t.check(all(isinstance(i["migrations"], int) and isinstance(i["page_faults"], int) and
                    isinstance(i["irq_ns"], int) for i in inst), "ring: per-instance kernel figures known")
        st, _, body = d.request("GET", f"/api/offcpu/folded?pid={prog.pid}")
        t.near(folded_weight(body.decode(), "sleep_2ms"), res["sleep_ns"], 0.10, "ring: sleep_2ms off-CPU weight")
        # the waits carry the ring header's open scopes: scope= keeps them
        st, _, body = d.request("GET", f"/api/offcpu/folded?pid={prog.pid}&scope=tick")
        t.eq(st, 200, "ring: off-CPU folded of scope tick")
        t.near(folded_weight(body.decode(), "sleep_2ms"), res["sleep_ns"], 0.10,
               "ring: sleep_2ms off-CPU weight inside scope tick")
        prog.finish()
    finally:
        d.stop()


def report_part(d, pid, rows):
    """The exit report's table of kernel figures: the rows' exact figures."""
    got = wait_for(lambda: (lambda a: a if a[0] == 200 else None)(d.request("GET", f"/api/report?pid={pid}")),
                   timeout=10)
    if not t.check(got, "the exit report is written"):
        return
    summary = got[2].decode()
    title = "Scopes by off-CPU time (kernel events in the innermost open scope)\n"
    part = summary.split(title, 1)
    if not t.check(len(part) == 2, "the summary has the kernel figures' table"):
        return
    lines = part[1].split("\n")
    t.eq(lines[0].split(), ["SCOPE", "PARENT", "OFF", "ms", "VOL-SW", "INV-SW", "MIGR", "FAULTS", "IRQ", "ms"],
         "kernel table header")
    table = {}
    for line in lines[1:]:
        if not line.startswith("  "):
            break
        c = line.split()
        table[c[0]] = c
    print(f"report: {table}", flush=True)
    for name, r in rows.items():
        c = table.get(name)
        if not t.check(c is not None, f"report row {name}"):
            continue
        t.eq(c[1:8], ["-", f"{r['off_cpu_ns'] / 1e6:.2f}", str(r["voluntary_switches"]),
                      str(r["involuntary_switches"]), str(r["migrations"]), str(r["page_faults"]),
                      f"{r['irq_ns'] / 1e6:.2f}"], f"report figures of {name} = the row's")
    t.check(len(summary.splitlines()[0]) <= 80 and
            all(len(x) <= 80 for x in [title] + lines[:len(table) + 1]), "the kernel table fits 80 columns")


def contend_part(ring):
    prog = Target([target, "contend", "1500"])
    d = Daemon(qprofd, ["--collector", "ring" if ring else "bpf", "--pid", str(prog.pid)])
    try:
        if ring:
            st, status = d.get("/api/status")
            tg = [x for x in status["targets"] if x["pid"] == prog.pid]
            t.check(tg and tg[0].get("collector") == "ring", f"contend: ring collector: {tg}")
        prog.start()
        res = prog.result()
        print(f"contend ({'ring' if ring else 'bpf'}): {res}", flush=True)
        r = wait_for(lambda: row(d, prog.pid, "contended"))
        f = wait_for(lambda: row(d, prog.pid, "faults"))
        t.check(r is not None and f is not None, "contended and faults rows")
        if r:
            print(f"row: {r}", flush=True)
            if ring:
                print(f"faults row: {f}", flush=True)
            t.check(res["involuntary"] >= 50, f"the workload was preempted ({res['involuntary']})")
            t.near(r["involuntary_switches"], res["involuntary"], 0.05, "involuntary switches vs /proc")
            t.near(r["voluntary_switches"], res["voluntary"], 0.05, "voluntary switches vs /proc")
            t.near(r["migrations"], res["migrations"], 0.05, "migrations vs /proc/TID/sched")
            t.check(r["off_cpu_ns"] > 0, "contended waited off the CPU")
        if f:
            t.near(f["page_faults"], res["minflt"], 0.05, "page faults vs getrusage")
            t.check(f["page_faults"] >= res["pages"], f"at least a fault per page ({f['page_faults']})")
        prog.finish()
        if r and f:
            report_part(d, prog.pid, {"contended": r, "faults": f})
    finally:
        d.stop()


def bounds_part():
    os.environ["QPROF_OFF_RB_BYTES"] = "4096"
    try:
        prog = Target([target, "pingpong", "20000"])
        d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
    finally:
        del os.environ["QPROF_OFF_RB_BYTES"]
    try:
        prog.start()
        res = prog.result()
        # /api/status shows the figures of the collector's last drain (every
        # 50 ms; a status request never waits for one): the last intervals
        # of the burst are in them within a drain or two
        oc = {}

        def covered():
            nonlocal oc
            oc = d.get("/api/status")[1]["offcpu"]
            return oc["intervals"] + oc["lost"] >= res["switches"]
        wait_for(covered, timeout=5)
        print(f"bounds: {oc}, threads: {res}", flush=True)
        t.check(res["switches"] >= 40000, f"the burst switched ({res['switches']})")
        t.check(oc["lost"] > 0, "a 4 KiB off-CPU ring loses intervals, counted")
        t.check(oc["intervals"] + oc["lost"] >= res["switches"],
                f"kept + lost {oc['intervals'] + oc['lost']} covers the threads' {res['switches']} switches")
        st, _, body = d.request("GET", f"/api/offcpu/folded?pid={prog.pid}")
        t.eq(st, 200, "folded of what was kept")
        prog.finish()
    finally:
        d.stop()


slow_part()
ring_part()
contend_part(False)
contend_part(True)
bounds_part()
sys.exit(t.done())
