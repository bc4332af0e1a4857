#!/usr/bin/env python3
"""bench/scope_maps.py - kernel memory and poll cost of the scope
aggregates, for one or more qprofd binaries in one run.

For each qprofd: burst_target makes 1000 (scope, parent) pairs (3000 exits);
then
  memory: bytes_memlock of each of qprofd's BPF maps (map ids from
          /proc/PID/fdinfo, sizes from `bpftool -j map show`), the scope
          aggregate maps apart, per pair and per pair per possible CPU;
  poll:   qprofd's CPU time (utime + stime of /proc/PID/stat) per
          GET /api/status (each reads the scope maps), with the 1000 pairs
          idle, and after K pairs were hit again before each request
          (burst_target --touch K); for a qprofd that reports it, also the
          poll's own CPU time (status scopes.poll.cpu_us).

usage: sudo bench/scope_maps.py BURST_TARGET NAME=QPROFD [NAME=QPROFD...]
       (REQUESTS=N requests per figure, default 200)"""
import glob
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "integration"))
from qptest import Daemon, Target  # noqa: E402

# the scope aggregate maps (names cut to 15 characters by the kernel)
AGG = ("scope_stats", "scope_chunks", "scope_dirty")
REQUESTS = int(os.environ.get("REQUESTS", "200"))
TICK = os.sysconf("SC_CLK_TCK")
NCPUS = os.sysconf("SC_NPROCESSORS_CONF")


def map_ids(pid):
    ids = set()
    for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            with open(f) as fh:
                for line in fh:
                    if line.startswith("map_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def memory(pid):
    ids = map_ids(pid)
    maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                                     text=True, check=True).stdout)
    return {m.get("name", "?"): m["bytes_memlock"] for m in maps if m["id"] in ids}


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / TICK


def poll_us(d):
    p = d.get("/api/status")[1]["scopes"].get("poll")
    return (p["cpu_us"], p["polls"], p["chunks_read"]) if p else None


def measure(d, prog, touch):
    """qprofd CPU ms per status request, poll us per poll, chunks read per poll"""
    c0, p0 = cpu_s(d.proc.pid), poll_us(d)
    for _ in range(REQUESTS):
        if touch:
            prog.start()
            prog.result()	# {"touched": K}
        st, _ = d.get("/api/status")
        assert st == 200
    c1, p1 = cpu_s(d.proc.pid), poll_us(d)
    per_req = (c1 - c0) * 1000 / REQUESTS
    if p0 and p1:
        n = p1[1] - p0[1]
        return per_req, (p1[0] - p0[0]) / n, (p1[2] - p0[2]) / n
    return per_req, None, None


def run(name, qprofd, target, touches):
    prog = Target([target])
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
    out = {"name": name}
    try:
        prog.start()
        prog.result()
        st, sc = d.get(f"/api/scopes?pid={prog.pid}")
        pairs = sum(1 for r in sc["scopes"] if r["name"].startswith("s"))
        mem = memory(d.proc.pid)
        agg = sum(v for k, v in mem.items() if k.startswith(AGG))
        out.update(pairs=pairs, total=sum(mem.values()), agg=agg, maps=mem)
        d.get("/api/status")
        out["idle"] = measure(d, prog, 0)
        out["touch"] = {}
        prog.finish()
    finally:
        prog.kill()
        d.stop()
    for k in touches:	# a fresh pair of processes per K: the same 1000 pairs, K hit again
        prog = Target([target, "--touch", str(k)])
        d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
        try:
            prog.start()
            prog.result()
            d.get("/api/status")
            out["touch"][k] = measure(d, prog, k)
            prog.finish()
        finally:
            prog.kill()
            d.stop()
    return out


def main():
    if len(sys.argv) < 3 or os.geteuid() != 0:
        sys.exit(__doc__)
    target = sys.argv[1]
    touches = [10, 100, 500]
    print(f"{NCPUS} possible CPUs, {REQUESTS} status requests per figure", flush=True)
    for arg in sys.argv[2:]:
        name, qprofd = arg.split("=", 1)
        r = run(name, qprofd, target, touches)
        print(f"\n== {name} ({qprofd})")
        print(f"  pairs with rows: {r['pairs']}")
        print(f"  all maps: {r['total'] / 2**20:.2f} MiB memlock; scope aggregates: "
              f"{r['agg'] / 2**20:.2f} MiB = {r['agg'] / 1000:.0f} B per pair of 1000 = "
              f"{r['agg'] / 1000 / NCPUS:.0f} B per pair per possible CPU")
        for k, v in sorted(r["maps"].items(), key=lambda kv: -kv[1]):
            print(f"    {k:20s} {v:>12d}")
        for label, v in [("idle", r["idle"])] + [(f"{k} pairs hit", r["touch"][k]) for k in touches]:
            extra = f", poll {v[1]:.1f} us and {v[2]:.1f} chunks read per poll" if v[1] is not None else ""
            print(f"  {label:14s}: qprofd {v[0]:.3f} ms CPU per status request{extra}")
        sys.stdout.flush()


main()
