#!/usr/bin/env python3
"""Unwinding without frame pointers, and CPU-only targets.

Three programs whose three callers burn CPU 1:2:3 inside a sort: the C one
inside glibc's qsort (no frame pointers in Debian's glibc) calling back into
a comparator, built -O2 -g -fomit-frame-pointer, then the same with frame
pointers, then a C++ one (function templates, std::sort and its comparator
inlined, -O2 -fomit-frame-pointer). None has a qprof marker: each is
attached with POST {"pid"} as a CPU-only target. Sampled at 999 Hz; the
truth is each caller's thread CPU time, measured by the program. For each:
>= 90 % of the process's samples have one of the three callers on the stack,
and each caller's share of those is within 3 points of its share of the
CPU time. Then, under --all --unwind dwarf-all with no target, the same
shares for a process that is no target (?pid= answers for any sampled pid),
and a 404 for a pid with no sample. The figures of the unwinder in
/api/status are checked to have moved (copies made, stacks taken from them).

Two modes. "copy" (integration_unwind): --unwind dwarf-copy, every sample
carries a 16 KiB stack copy unwound in qprofd. "kernel"
(integration_unwind_kernel): the default --unwind dwarf, stacks walked in
the kernel by the compiled CFI tables: >= 95 % of samples under a caller,
the same shares, >= 95 % of the targets' samples walked in the kernel
(the status says so: walks kept, fallbacks to the copy at most 5 %), the
tables of the program, glibc and libstdc++ loaded once each. Then the
differential check: under QPROF_CFI_VERIFY=1 every sample the kernel walks
also carries the 16 KiB copy of the same stack, which qprofd unwinds with
libdwfl and compares frame for frame: no walk differs, and >= 90 % are
the same frames (the rest a prefix: the copy ended first).

usage: test_unwind.py QPROFD QSORT_NOFP QSORT_FP SORT_CXX [copy|kernel]"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, nofp_bin, fp_bin, cxx_bin = sys.argv[1:5]
MODE = sys.argv[5] if len(sys.argv) > 5 else "copy"
KERNEL = MODE == "kernel"
UNDER = 0.95 if KERNEL else 0.90
require_root()
t = Failures("integration_unwind_kernel" if KERNEL else "integration_unwind")
WANT = 4000          # samples of the program per case (about 4 s of its CPU time)
C_NAMES = {"caller_one": 0, "caller_two": 1, "caller_three": 2}
CXX_RE = re.compile(r"caller<([123])>")


def caller_of(frames, cxx):
    """Index of the caller on a folded stack (root first), None when none."""
    for f in frames:
        if cxx:
            m = CXX_RE.search(f)
            if m:
                return int(m.group(1)) - 1
        else:
            name = f.split(" ")[0]
            if name in C_NAMES:
                return C_NAMES[name]
    return None


def shares(folded, cxx):
    counts = [0, 0, 0]
    total = 0
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        n = int(n)
        total += n
        k = caller_of(stack.split(";"), cxx)
        if k is not None:
            counts[k] += n
    return counts, total


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def run_case(d, label, binary, cxx, attach=True):
    prog = subprocess.Popen([binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _started.append(prog)
    try:
        pid = json.loads(prog.stdout.readline())["pid"]
        if attach:
            st, tv = d.post("/api/targets", {"pid": pid})
            t.eq(st, 201, f"{label}: a program without markers is attached")
            t.eq(tv.get("cpu_only") if isinstance(tv, dict) else None, True, f"{label}: cpu_only in the answer")
            st, status = d.get("/api/status")
            mine = [x for x in status["targets"] if x["pid"] == pid]
            t.check(len(mine) == 1 and mine[0]["cpu_only"] is True and mine[0]["probes"] == 0,
                    f"{label}: /api/status says CPU only: {mine}")
        os.kill(pid, signal.SIGUSR1)
        # a generous bound, not a measurement: WANT samples at 999 Hz of the
        # program's CPU time, which a loaded 2-CPU machine may halve
        hz = os.sysconf("SC_CLK_TCK")
        deadline = time.time() + 120
        while time.time() < deadline and cpu_ticks(pid) < (WANT / 999 + 0.5) * hz:
            time.sleep(0.2)
        # read while it runs: a process that is no target is named through
        # its live /proc/PID/maps (the truth covers a little more time, at
        # the same steady split)
        st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid}", timeout=120)
        t.eq(st, 200, f"{label}: folded answers")
        os.kill(pid, signal.SIGUSR2)
        truth = json.loads(prog.stdout.readline())
        prog.wait(timeout=30)
        counts, total = shares(body.decode(), cxx)
        under = sum(counts)
        ns = [truth["caller_one"], truth["caller_two"], truth["caller_three"]]
        print(f"{label}: samples {total}, under a caller {under}, by caller {counts}; "
              f"truth ns {ns}", flush=True)
        t.check(total >= WANT * 0.8, f"{label}: enough samples ({total})")
        t.check(under >= UNDER * total,
                f"{label}: >= {UNDER * 100:.0f} % of samples under a caller ({under}/{total})")
        for k, name in enumerate(("caller_one", "caller_two", "caller_three")):
            got = counts[k] / under if under else 0
            want = ns[k] / sum(ns)
            t.check(abs(got - want) <= 0.03, f"{label}: {name} share {got:.3f}, truth {want:.3f} +- 0.03")
        if t.failed:
            top = sorted(body.decode().splitlines(), key=lambda l: -int(l.rpartition(" ")[2]))[:8]
            print("\n".join(top), file=sys.stderr)
        if attach:
            st, _ = d.delete(f"/api/targets/{pid}")
            t.eq(st, 200, f"{label}: detach")
        return pid
    finally:
        if prog.poll() is None:
            prog.kill()
            prog.wait()


def check_copy_figures(u):
    t.check(u["copied"] >= 3 * WANT * 0.8, f"samples carried stack copies ({u['copied']})")
    t.check(u["dwarf"] >= 0.9 * u["copied"], f"most stacks kept are the CFI ones ({u['dwarf']}/{u['copied']})")
    t.eq(u["copied"], u["dwarf"] + u["fp"], "every copy ends as one kept stack")
    t.eq(u["loops"], 0, "no loop on real stacks")
    walks = u["complete"] + u["partial"] + u["truncated"] + u["loops"]
    t.eq(u["fast"] + u["slow"], walks, "every walk is by the cached rules or by libdwfl")
    t.check(u["fast"] >= 0.9 * walks,
            f"most walks by the cached rules ({u['fast']} fast, {u['slow']} by libdwfl)")
    t.eq(u["kernel"]["running"], False, "dwarf-copy: no walk in the kernel")
    t.eq(u["kernel"]["walks"], 0, "dwarf-copy: no walk in the kernel")


def check_kernel_figures(u):
    k = u["kernel"]
    tb = k["tables"]
    t.eq(k["running"], True, "the kernel walks")
    t.check(k["walked"] >= 2 * WANT * 0.8, f"samples walked in the kernel ({k['walked']})")
    # a target's first samples come before its tables: the copy serves them
    t.check(k["walked"] >= 0.95 * (k["walked"] + u["copied"]),
            f">= 95 % of the targets' samples walked in the kernel ({k['walked']} walked, {u['copied']} copied)")
    # every walk the kernel kept is a sample's stack; the samples still in
    # the ring when a target is removed are dropped with it, unread: at most
    # a drain period's (50 ms, with 10 ms to spare) of each of the two
    # targets' one busy thread at 999 Hz
    t.check(0 <= k["kept"] - k["walked"] <= max(4, k["kept"] // 1000) + 2 * 60,
            f"every walk kept is a sample's stack, but those dropped unread at detach: "
            f"{k['kept']} kept, {k['walked']} read")
    t.eq(k["walks"], k["kept"] + k["fallbacks"], "every walk is kept or falls back")
    t.check(k["fallbacks"] <= 0.05 * k["walks"], f"fallbacks <= 5 % of walks ({k['fallbacks']}/{k['walks']}: "
            f"{k['ends']})")
    t.eq(k["ends"]["loop"], 0, "no loop on real stacks")
    t.eq(k["ends"]["bad_registers"], 0, "user registers always there")
    t.check(k["frames"] >= 8 * k["kept"], f"whole stacks: {k['frames']} frames for {k['kept']} walks")
    # two programs: each its own file; glibc, libstdc++, libm, libgcc_s,
    # ld.so and the vDSO shared by all, compiled once
    t.check(4 <= tb["builds"] <= 12, f"tables compiled once per file ({tb['builds']})")
    t.eq(tb["rows_without_rule"], 0, "every row of ordinary files keeps its rule (far under 65,536 distinct)")
    t.check(tb["hits"] >= 2, f"files shared between the programs ({tb['hits']} found loaded)")
    t.eq(tb["refused"], 0, "no file refused")
    t.eq(tb["no_room"], 0, "room for every table")
    t.check(0 < tb["bytes"] <= tb["bytes_max"], f"table memory {tb['bytes']} of {tb['bytes_max']}")


d = Daemon(qprofd, ["--collector", "bpf", "--frequency", "999"] + ([] if KERNEL else ["--unwind", "dwarf-copy"]))
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    t.eq(status["cpu"]["unwind"]["mode"], "dwarf" if KERNEL else "dwarf-copy", "--unwind as asked")
    run_case(d, "C -O2 -fomit-frame-pointer, qsort", nofp_bin, False)
    if not KERNEL:  # the walk in the kernel needs no frame pointers: the copy path's case
        run_case(d, "C -O2 frame pointers, qsort", fp_bin, False)
    run_case(d, "C++ -O2 -fomit-frame-pointer, std::sort", cxx_bin, True)
    st, status = d.get("/api/status")
    u = status["cpu"]["unwind"]
    print(f"unwind figures: {u}", flush=True)
    if KERNEL:
        check_kernel_figures(u)
    else:
        check_copy_figures(u)
finally:
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
if KERNEL:
    os.environ["QPROF_CFI_VERIFY"] = "1"
    d = Daemon(qprofd, ["--collector", "bpf", "--frequency", "999"])
    del os.environ["QPROF_CFI_VERIFY"]
    try:
        run_case(d, "verify: C qsort", nofp_bin, False)
        run_case(d, "verify: C++ std::sort", cxx_bin, True)
        st, status = d.get("/api/status")
        k = status["cpu"]["unwind"]["kernel"]
        v = k.get("verify", {})
        print(f"the kernel's walks against libdwfl on the same stacks: {v}", flush=True)
        checked = v.get("same", 0) + v.get("prefix", 0) + v.get("differ", 0)
        t.check(checked >= 0.9 * k["walked"] and checked > 2 * WANT * 0.8,
                f"walks checked against libdwfl ({checked} of {k['walked']})")
        t.eq(v.get("differ"), 0, "no walk differs from libdwfl's on the same stack")
        t.check(v.get("same", 0) >= 0.9 * checked, f">= 90 % the very same frames ({v.get('same')}/{checked})")
    finally:
        code = d.stop()
        t.eq(code, 0, "qprofd exits 0 on SIGTERM (verify)")
        if t.failed:
            print(d.logtext()[-3000:], file=sys.stderr)
    sys.exit(t.done())

# --all: any sampled process answers ?pid=, unwound from its copy
d = Daemon(qprofd, ["--collector", "bpf", "--frequency", "999", "--all", "--unwind", "dwarf-all"])
try:
    st, status = d.get("/api/status")
    t.eq(status["cpu"]["unwind"]["mode"], "dwarf-all", "--unwind dwarf-all")
    run_case(d, "--all, not a target", nofp_bin, False, attach=False)
    # a pid that cannot have samples: above the kernel's pid_max
    with open("/proc/sys/kernel/pid_max") as f:
        nopid = int(f.read()) + 1
    st, _, _ = d.request("GET", f"/api/cpu/folded?pid={nopid}")
    t.eq(st, 404, "--all: a pid without samples is 404")
finally:
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM (--all)")
    if t.failed:
        print(d.logtext()[-3000:], file=sys.stderr)
sys.exit(t.done())
