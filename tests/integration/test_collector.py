#!/usr/bin/env python3
"""Which scope collector a target gets, and what the status says about it.

- No collector flag: an ABI-2 program attached by --pid, by POST {"pid"}
  and by --binary runs on the ring ("ring (default)"): its scopes are
  counted exactly from ring records (records read = what it wrote), the
  ring semaphore is raised; the text status says "ring (default)".
- The same build of that program with markers of ABI 1
  (tests/fixtures/abi1) falls back to BPF: "bpf: markers of ABI 1", the
  note names the file, its scopes counted exactly by BPF.
- POST "collector": "bpf" -> "bpf (asked)", semaphore 0, counted by BPF;
  bad "collector" values -> 400.
- qprofd --collector bpf: new targets on BPF ("bpf (asked)"), POST
  "collector": "ring" still takes the ring ("ring (asked)"); --ring is
  --collector ring ("ring (asked)"); --collector with a bad value, or
  --ring with --collector bpf: exit 2; --help states the default.

usage: test_collector.py QPROFD SCOPE_TARGET SCOPE_TARGET_ABI1 QPROF_CLI"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, abi2_bin, abi1_bin, cli = sys.argv[1:5]
abi2_bin, abi1_bin = os.path.realpath(abi2_bin), os.path.realpath(abi1_bin)
require_root()
t = Failures("integration_collector")
ITERS = 50  # scope_target --mode nested: 2 threads x ITERS outer { inner }, a FUNC every 10th


def semaphore(pid, exe):
    """qprof_ring_semaphore of PID, read from /proc/PID/mem (nm gives its
    offset in EXE; the load base from the first mapping of EXE)."""
    out = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
    off = next((int(ln.split()[0], 16) for ln in out.splitlines()
                if ln.split()[-1:] == ["qprof_ring_semaphore"]), None)
    if off is None:
        return None
    with open(f"/proc/{pid}/maps") as f:
        base = next(int(ln.split("-")[0], 16) for ln in f if ln.rstrip().endswith(exe))
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(base + off)
        return int.from_bytes(f.read(2), "little")


def target_of(d, pid):
    _, s = d.get("/api/status")
    return next((x for x in s["targets"] if x["pid"] == pid), None), s


def counts(d, pid):
    _, body = d.get(f"/api/scopes?pid={pid}")
    return {(r["name"], r["parent"]): r["count"] for r in body["scopes"]}


def want_counts(d, pid, tag):
    """The nested workload's rows, exact (the ring drains a few ms late)."""
    want = {("outer", None): 2 * ITERS, ("inner", "outer"): 2 * ITERS}
    got = wait_for(lambda: (lambda c: c if all(c.get(k, 0) >= v for k, v in want.items()) else None)(
        counts(d, pid)), 20, 0.05) or counts(d, pid)
    for k, v in want.items():
        t.eq(got.get(k), v, f"{tag}: {k[0]} count exact")


def status_line(d, pid):
    """The target's row of the text status."""
    out = subprocess.run([cli, "--socket", d.sock, "status"], capture_output=True, text=True, timeout=60)
    t.eq(out.returncode, 0, "qprof-cli status")
    return next((ln for ln in out.stdout.splitlines() if ln.lstrip().startswith(f"{pid} ")), "")


def run_nested(exe):
    return Target([exe, "--mode", "nested", "--iters", str(ITERS)])


# --- 1. the default: the ring for ABI 2, BPF for ABI 1 -------------------------------
prog = run_nested(abi2_bin)
d = Daemon(qprofd, ["--pid", str(prog.pid)])
progs = [prog]
try:
    tg, status = target_of(d, prog.pid)
    t.eq(tg and tg["collector"], "ring", "--pid, no flag: the ring")
    t.eq(tg and tg["collector_reason"], "ring (default)", "--pid, no flag: why")
    t.eq(tg and tg["collector_note"], None, "no note for an ABI-2 program")
    t.eq(status["ring"]["default"], True, "status: the ring is the default")
    t.check((semaphore(prog.pid, abi2_bin) or 0) > 0, "the ring semaphore is raised")
    prog.start()
    prog.result()
    want_counts(d, prog.pid, "default ring")
    tg, _ = target_of(d, prog.pid)
    ring = (tg or {}).get("ring") or {}
    # 2 x ITERS x (outer + inner) enters and exits, a FUNC every 10th, a
    # BEGIN/END span (2 records each end) per iteration
    t.eq(ring.get("records"), 2 * ITERS * (4 + 4) + 2 * (ITERS // 10) * 2,
         f"every scope came through the ring: {ring}")
    t.eq(ring.get("lost"), 0, "no record lost")
    line = status_line(d, prog.pid)
    t.check("ring (default)" in line, f"text status says ring (default): {line!r}")

    # POST {"pid"} without "collector": the default too
    p2 = run_nested(abi2_bin)
    progs.append(p2)
    st, body = d.post("/api/targets", {"pid": p2.pid})
    t.eq(st, 201, "POST pid")
    t.eq(body.get("collector_reason"), "ring (default)", "POST without collector: ring (default)")

    # an ABI-1 build of the same program: BPF, with the reason
    old = run_nested(abi1_bin)
    progs.append(old)
    st, body = d.post("/api/targets", {"pid": old.pid})
    t.eq(st, 201, "ABI-1 program attached")
    t.eq(body.get("collector"), "bpf", "ABI 1: the BPF collector")
    t.eq(body.get("collector_reason"), "bpf: markers of ABI 1", "ABI 1: why")
    t.check(abi1_bin in (body.get("collector_note") or "") and "ABI 1" in body["collector_note"],
            f"the note names the file: {body.get('collector_note')}")
    old.start()
    old.result()
    want_counts(d, old.pid, "ABI 1 on bpf")
    tg, _ = target_of(d, old.pid)
    t.check(tg is not None and "ring" not in tg, "an ABI-1 target has no ring figures")
    line = status_line(d, old.pid)
    t.check("bpf: markers of ABI 1" in line, f"text status says why: {line!r}")

    # POST "collector": "bpf", and bad values
    p3 = run_nested(abi2_bin)
    progs.append(p3)
    for bad in ("fast", "", 1, None, ["ring"]):
        st, body = d.post("/api/targets", {"pid": p3.pid, "collector": bad})
        t.eq(st, 400, f"collector {bad!r} refused")
        t.check("collector" in body.get("error", ""), f"the error names the key: {body}")
    st, body = d.post("/api/targets", {"pid": p3.pid, "collector": "bpf"})
    t.eq(st, 201, "POST collector bpf")
    t.eq(body.get("collector_reason"), "bpf (asked)", "POST bpf: why")
    t.eq(semaphore(p3.pid, abi2_bin), 0, "asked for bpf: the ring semaphore stays 0")
    p3.start()
    p3.result()
    want_counts(d, p3.pid, "asked bpf")
    line = status_line(d, p3.pid)
    t.check("bpf (asked)" in line, f"text status says bpf (asked): {line!r}")
    t.eq(d.proc.poll(), None, "daemon alive")
finally:
    d.stop()
    for p in progs:
        p.kill()

# --- 2. --binary, no flag: the ring ---------------------------------------------------
d = Daemon(qprofd, ["--binary", abi2_bin])
prog = None
try:
    _, s = d.get("/api/status")
    bv = next((b for b in s.get("binaries", []) if b["binary"] == abi2_bin), {})
    t.eq(bv.get("collector"), "ring", "--binary, no flag: the ring")
    t.eq(bv.get("collector_reason"), "ring (default)", "--binary: why")
    prog = run_nested(abi2_bin)
    wait_for(lambda: target_of(d, prog.pid)[0], 10)
    tg, _ = target_of(d, prog.pid)
    t.eq(tg and tg["collector_reason"], "ring (default)", "a process of the binary: ring (default)")
    prog.start()
    prog.result()
    want_counts(d, prog.pid, "--binary ring")
    st, body = d.post("/api/targets", {"binary": abi1_bin})
    t.eq(st, 201, "an ABI-1 binary attached")
    t.eq(body.get("collector_reason"), "bpf: markers of ABI 1", "ABI-1 binary: why")
    t.check("ABI 1" in (body.get("collector_note") or ""), f"ABI-1 binary: note {body.get('collector_note')}")
finally:
    d.stop()
    if prog:
        prog.kill()

# --- 3. qprofd --collector bpf, --ring ------------------------------------------------
prog = run_nested(abi2_bin)
d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid)])
p2 = run_nested(abi2_bin)
try:
    tg, status = target_of(d, prog.pid)
    t.eq(tg and tg["collector_reason"], "bpf (asked)", "--collector bpf: bpf (asked)")
    t.eq(status["ring"]["default"], False, "status: the ring is not the default")
    t.eq(semaphore(prog.pid, abi2_bin), 0, "--collector bpf: the ring semaphore stays 0")
    prog.start()
    prog.result()
    want_counts(d, prog.pid, "--collector bpf")
    st, body = d.post("/api/targets", {"pid": p2.pid, "collector": "ring"})
    t.eq(body.get("collector_reason"), "ring (asked)", "POST ring on a bpf daemon: ring (asked)")
    p2.start()
    p2.result()
    want_counts(d, p2.pid, "POST ring")
finally:
    d.stop()
    prog.kill()
    p2.kill()

prog = run_nested(abi2_bin)
d = Daemon(qprofd, ["--ring", "--pid", str(prog.pid)])
try:
    tg, _ = target_of(d, prog.pid)
    t.eq(tg and tg["collector_reason"], "ring (asked)", "--ring: ring (asked)")
finally:
    d.stop()
    prog.kill()

for args, msg in ((["--collector", "fast"], "--collector wants ring or bpf"),
                  (["--collector"], "requires an argument"),
                  (["--ring", "--collector", "bpf"], "--collector wants ring or bpf"),
                  (["--collector", "bpf", "--collector", "ring"], "--collector wants ring or bpf")):
    p = subprocess.run([qprofd, "--socket", "/nonexistent/x.sock", *args], capture_output=True, text=True,
                       timeout=30)
    t.eq(p.returncode, 2, f"qprofd {' '.join(args)}: exit 2")
    t.check(msg in p.stderr, f"qprofd {' '.join(args)}: says {msg!r}: {p.stderr.strip()!r}")
p = subprocess.run([qprofd, "--help"], capture_output=True, text=True, timeout=30)
t.check("--collector ring|bpf" in p.stdout and "default" in p.stdout, "--help states the default collector")
sys.exit(t.done())
