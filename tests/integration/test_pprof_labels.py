#!/usr/bin/env python3
"""Labels of the pprof profiles: every sample of /pprof/profile and
/pprof/offcpu carries thread and, inside a scope, qprof_scope (innermost)
and qprof_scopes (all open ones). fleet_target's worker spins 1:2:3 in
work_one, work_two, work_three inside scope "session", the third inside
"on_tick" too; its sleeper sleeps inside "wait_io". With the target stopped
(SIGSTOP: the samples stand still) `go tool pprof -tagfocus` on each scope
must give the share of the profile, and the split of functions, of
/api/cpu/folded?scope= within 2 points; -tags must list the labels with
the threads' names. Every other sleep of the sleeper is inside a span
"io" of id 0x10b0000000000000 + n: about half of wait_io's off-CPU time
must carry qprof_span io and its span_id; no sample but those (and the
worker's, preempted inside "order") a span; the blocks it allocated
inside the span (3 or 4 in use) carry qprof_span io in /pprof/heap, with
no span_id (heap stacks keep the span's name, not its id).
/pprof/heap (qprofd --heap) carries the same labels:
the sleeper keeps 7 or 8 blocks of 600,000 bytes live from inside wait_io
(each above the sampling interval: sampled, weighed exactly), the main
thread one of 700,000 outside any scope; the decoded profile must hold
exactly those in-use bytes under thread fl_sleeper with qprof_scope and
qprof_scopes wait_io, and the main block under the main thread's name with
no scope label; -tagfocus=qprof_scope=wait_io must give the same.
Each work_two runs inside a span "order" of id 0x51ab000000000000 + n: the
CPU samples inside it carry qprof_span order and span_id (16 hex digits),
-tagfocus=qprof_span=order must give work_two's samples and share of the
folded profile within 2 points, and the others carry no span label.

With COLLECTOR "bpf" the target is timed by the BPF collector (its open
scopes come from the BPF stacks, not the ring's header).

usage: test_pprof_labels.py QPROFD FLEET_TARGET [ring|bpf]"""
import os
import re
import gzip
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, collector_args, require_root  # noqa: E402
from pbwire import fields, packed  # noqa: E402

qprofd, target = sys.argv[1:3]
collector = sys.argv[3] if len(sys.argv) > 3 else "ring"
require_root()
t = Failures("integration_pprof_labels" + ("_bpf" if collector == "bpf" else ""))
go = shutil.which("go")
if not go:
    print("SKIP: go is not installed (go tool pprof reads the labels)", flush=True)
    sys.exit(77)
FUNCS = ("work_one", "work_two", "work_three")


def folded_split(text):
    """Total samples and, per function of FUNCS, those whose innermost of FUNCS it is."""
    total, by = 0, {}
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        n = int(n)
        total += n
        for f in reversed(stack.split(";")):
            if f in FUNCS:
                by[f] = by.get(f, 0) + n
                break
    return total, by


def pprof(path, *args):
    env = {**os.environ, "HOME": d.dir, "GOCACHE": os.path.join(d.dir, "gocache")}
    out = subprocess.run([go, "tool", "pprof", *args, path], capture_output=True, text=True,
                         timeout=300, env=env)
    t.eq(out.returncode, 0, f"go tool pprof {' '.join(args)} ({out.stderr[-300:]})")
    return out.stdout


def traces_split(text):
    """The same from `go tool pprof -traces` (frames leaf first)."""
    total, by = 0, {}
    for block in text.split("-----------+")[1:]:
        count, frames = None, []
        for line in block.splitlines():
            m = re.match(r"^\s+(\d+)\s+(\S.*)$", line)
            if count is None and m and ":" not in line.split()[0]:
                count = int(m.group(1))
                frames.append(m.group(2).strip())
            elif count is not None and line.strip():
                frames.append(line.strip())
        if count is None:
            continue
        total += count
        for f in frames:
            f = f.replace(" (inline)", "")
            if f in FUNCS:
                by[f] = by.get(f, 0) + count
                break
    return total, by


def heap_samples(gz):
    """[(values, {label: str or num})] of a gzipped pprof, and the sample types."""
    strings, raw, types = [], [], []
    for f, w, v in fields(gzip.decompress(gz)):
        if f == 6:
            strings.append(v.decode())
        elif f == 2:
            raw.append(v)
        elif f == 1:
            types.append(dict((ff, vv) for ff, _, vv in fields(v)))
    out = []
    for smp in raw:
        vals, labels = [], {}
        for f, w, v in fields(smp):
            if f == 2:
                vals += packed(v)
            elif f == 3:
                lab = dict((ff, vv) for ff, _, vv in fields(v))
                labels[strings[lab.get(1, 0)]] = strings[lab[2]] if lab.get(2) else lab.get(3, 0)
        out.append((vals, labels))
    return out, [strings[ty.get(1, 0)] for ty in types]


prog = Target([target])
d = Daemon(qprofd, ["--pid", str(prog.pid), "--frequency", "999", "--heap",
                    *(collector_args(qprofd, "bpf") if collector == "bpf" else [])])
try:
    prog.start()
    time.sleep(5)
    os.kill(prog.pid, signal.SIGSTOP)
    time.sleep(1)  # the last samples drained
    st, _, body = d.request("GET", f"/pprof/profile?pid={prog.pid}")
    t.eq(st, 200, "/pprof/profile answers")
    cpu = os.path.join(d.dir, "cpu.pb.gz")
    open(cpu, "wb").write(body)
    folded = {}
    for scope in (None, "on_tick", "session"):
        q = f"/api/cpu/folded?pid={prog.pid}" + (f"&scope={scope}" if scope else "")
        st, _, body = d.request("GET", q)
        t.eq(st, 200, f"GET {q}")
        folded[scope] = folded_split(body.decode())
    st, _, body = d.request("GET", f"/pprof/offcpu?pid={prog.pid}")
    t.eq(st, 200, "/pprof/offcpu answers")
    off = os.path.join(d.dir, "off.pb.gz")
    open(off, "wb").write(body)
    st, _, body = d.request("GET", f"/api/offcpu/folded?pid={prog.pid}&scope=wait_io")
    t.eq(st, 200, "/api/offcpu/folded?scope=wait_io answers")
    off_wait_folded = sum(int(l.rpartition(" ")[2]) for l in body.decode().splitlines())
    st, _, heap_body = d.request("GET", f"/pprof/heap?pid={prog.pid}")
    t.eq(st, 200, "/pprof/heap answers")
    heap = os.path.join(d.dir, "heap.pb.gz")
    open(heap, "wb").write(heap_body)
    os.kill(prog.pid, signal.SIGCONT)

    # heap: every sample labelled; the blocks of known sizes where they belong
    samples, types = heap_samples(heap_body)
    t.check("inuse_space" in types and "inuse_objects" in types, f"heap sample types {types}")
    isp, iob = types.index("inuse_space"), types.index("inuse_objects")
    wait = [(v, lab) for v, lab in samples if lab.get("qprof_scope") == "wait_io"]
    wait_bytes = sum(v[isp] for v, _ in wait)
    wait_objs = sum(v[iob] for v, _ in wait)
    print(f"heap: {len(samples)} samples, wait_io in use {wait_bytes} bytes in {wait_objs} blocks", flush=True)
    t.check(wait_bytes in (7 * 600000, 8 * 600000) and wait_bytes == wait_objs * 600000,
            f"in use inside wait_io: {wait_bytes} bytes, {wait_objs} blocks (7 or 8 of 600000)")
    t.check(wait and all(lab.get("thread") == "fl_sleeper" and lab.get("qprof_scopes") == "wait_io" and
                         lab.get("tid", 0) > 0 for _, lab in wait),
            f"wait_io samples: thread fl_sleeper, qprof_scopes wait_io, a tid: {[l for _, l in wait][:3]}")
    main = [lab for v, lab in samples if v[isp] == 700000]
    t.check(len(main) == 1 and "qprof_scope" not in main[0] and main[0].get("thread") == "fleet_target",
            f"the main block: thread fleet_target, no scope: {main}")
    t.check(all("thread" in lab and lab.get("tid", 0) > 0 for v, lab in samples if v[isp] or v[iob]),
            "every heap sample has thread and tid")
    raw = pprof(heap, "-raw", "-sample_index=inuse_space", "-tagfocus=qprof_scope=^wait_io$")
    tagged = 0
    in_samples = False
    for line in raw.splitlines():
        if line.startswith("Samples:"):
            in_samples = True
            continue
        if in_samples and line.startswith("Locations"):
            break
        if in_samples and re.match(r"^\s+\d", line) and ":" in line:
            nums = [int(x) for x in line.split(":")[0].split()]
            tagged += nums[isp] if len(nums) > isp else 0
    t.eq(tagged, wait_bytes, "go tool pprof -tagfocus=qprof_scope=wait_io: the in-use bytes of wait_io")
    # the blocks of the even slots were allocated inside span io: its name,
    # no id (heap stacks keep none); the others outside any span
    io_bytes = sum(v[isp] for v, lab in wait if lab.get("qprof_span") == "io")
    t.check(io_bytes in (3 * 600000, 4 * 600000) and wait_bytes - io_bytes in (3 * 600000, 4 * 600000),
            f"in use inside span io: {io_bytes} of {wait_bytes} bytes (3 or 4 blocks of 600000 each side)")
    t.check(all("span_id" not in lab for _, lab in samples), "no heap sample has a span_id")
    t.check(all(lab.get("qprof_span") in (None, "io") for _, lab in samples), "heap spans: io only")

    tags = pprof(cpu, "-tags")
    for key in ("thread:", "qprof_scope:", "qprof_scopes:", "tid:"):
        t.check(key in tags, f"-tags lists {key} {tags[:600]}")
    t.check("fl_worker" in tags, "-tags: thread fl_worker")
    t.check(re.search(r"\bon_tick\b", tags) and re.search(r"on_tick;session", tags),
            f"-tags: qprof_scope on_tick, qprof_scopes on_tick;session: {tags}")

    all_total, _ = folded[None]
    t.check(all_total >= 300, f"samples in the profile: {all_total}")
    ptotal, _ = traces_split(pprof(cpu, "-traces", "-sample_index=samples"))
    t.eq(ptotal, all_total, "pprof and folded hold the same samples (target stopped)")
    # innermost on_tick, and qprof_scopes holding session, against scope=
    for label, scope in (("qprof_scope=^on_tick$", "on_tick"), ("qprof_scopes=(^|;)session(;|$)", "session")):
        ftotal, fby = folded[scope]
        gtotal, gby = traces_split(pprof(cpu, "-traces", "-sample_index=samples", f"-tagfocus={label}"))
        fshare, gshare = ftotal / all_total, gtotal / all_total
        print(f"{scope}: folded {ftotal} ({fshare:.3f}), pprof -tagfocus {gtotal} ({gshare:.3f})", flush=True)
        t.check(abs(fshare - gshare) <= 0.02, f"{scope}: share of the profile {gshare:.3f} vs {fshare:.3f} +- 0.02")
        for f in FUNCS:
            a = fby.get(f, 0) / ftotal if ftotal else 0
            b = gby.get(f, 0) / gtotal if gtotal else 0
            t.check(abs(a - b) <= 0.02, f"{scope}: {f} share {b:.3f} vs folded {a:.3f} +- 0.02")
    # the worker's split (all its samples are in session): 1:2:3 within 3 points
    _, sby = folded["session"]
    n = sum(sby.values())
    for f, want in zip(FUNCS, (1 / 6, 2 / 6, 3 / 6)):
        got = sby.get(f, 0) / n if n else 0
        t.check(abs(got - want) <= 0.03, f"worker {f} share {got:.3f} vs {want:.3f}")
    # on_tick is work_three's only
    ftotal, fby = folded["on_tick"]
    t.check(ftotal and fby.get("work_three", 0) >= 0.95 * ftotal, f"on_tick is work_three: {fby} of {ftotal}")
    # the span open on the thread: work_two's samples, and only those
    t.check("qprof_span:" in tags and "span_id:" in tags and re.search(r"\border\b", tags),
            f"-tags lists qprof_span order and span_id: {tags[:800]}")
    csamples, _ = heap_samples(open(cpu, "rb").read())
    # (the worker's spans are all order; the sleeper's few CPU samples may
    # fall inside its spans io, and only there)
    spans = [lab for _, lab in csamples if "qprof_span" in lab and lab.get("thread") == "fl_worker"]
    ids = {lab.get("span_id") for lab in spans}
    t.check(spans and all(lab["qprof_span"] == "order" and re.match(r"^51ab[0-9a-f]{12}$", str(lab.get("span_id")))
                          for lab in spans), f"span labels: order, span_id 51ab...: {spans[:3]}")
    other = [lab for _, lab in csamples if "qprof_span" in lab and lab.get("thread") != "fl_worker"
             and not (lab.get("thread") == "fl_sleeper" and lab["qprof_span"] == "io")]
    t.check(not other, f"no CPU sample carries a span outside the two: {other[:3]}")
    t.check(len(ids) >= 10, f"distinct span ids: {len(ids)}")
    _, wby = folded[None]
    stotal, sby = traces_split(pprof(cpu, "-traces", "-sample_index=samples", "-tagfocus=qprof_span=^order$"))
    print(f"span order: pprof -tagfocus {stotal}, work_two in folded {wby.get('work_two', 0)}", flush=True)
    # inside the span: work_two, or worker_loop between the markers (with the
    # BPF collector, mostly the span probes' own time); never work_one/three
    t.check(stotal and sby.get("work_two", 0) >= 0.95 * stotal and not sby.get("work_one") and not sby.get("work_three"),
            f"samples in span order are work_two's: {sby} of {stotal}")
    t.check(abs(stotal - wby.get("work_two", 0)) <= 0.02 * all_total,
            f"span order {stotal} samples vs work_two {wby.get('work_two', 0)} +- 2 points of {all_total}")
    gtotal, _ = traces_split(pprof(cpu, "-traces", "-sample_index=samples", "-tagfocus=thread=fl_worker"))
    t.check(gtotal >= 0.9 * all_total, f"thread=fl_worker holds the CPU samples: {gtotal} of {all_total}")

    # off-CPU: the sleeper's time inside wait_io
    tags = pprof(off, "-tags")
    t.check("fl_sleeper" in tags and re.search(r"\bwait_io\b", tags), f"offcpu -tags: fl_sleeper, wait_io: {tags[:800]}")
    gtotal, _ = traces_split(pprof(off, "-traces", "-tagfocus=qprof_scope=^wait_io$"))
    t.check(off_wait_folded > 0, f"off-CPU ns inside wait_io: {off_wait_folded}")
    # -traces prints times (ms) for nanosecond samples: compare through -raw instead
    raw = pprof(off, "-raw", "-tagfocus=qprof_scope=^wait_io$")
    vals = []
    in_samples = False
    for line in raw.splitlines():
        if line.startswith("Samples:"):
            in_samples = True
            continue
        if in_samples and line.startswith("Locations"):
            break
        m = re.match(r"^\s+(\d+):\s", line)
        if in_samples and m:
            vals.append(int(m.group(1)))
    got = sum(vals)
    t.check(off_wait_folded and abs(got - off_wait_folded) <= 0.02 * off_wait_folded,
            f"off-CPU ns in wait_io: pprof -tagfocus {got} vs folded {off_wait_folded}")
    # every other sleep is inside span "io": about half of wait_io's
    # off-CPU time carries it and its id; nothing outside wait_io does
    osamples, otypes = heap_samples(open(off, "rb").read())
    in_wait = sum(v[-1] for v, lab in osamples if lab.get("qprof_scope") == "wait_io")
    in_io = [(v[-1], lab) for v, lab in osamples if lab.get("qprof_span") == "io"]
    io_ns = sum(v for v, _ in in_io)
    io_ids = {lab.get("span_id") for _, lab in in_io}
    print(f"off-CPU: {io_ns} of {in_wait} ns in wait_io inside span io, {len(io_ids)} ids ({otypes})", flush=True)
    t.check(in_io and all(lab.get("qprof_scope") == "wait_io" and re.match(r"^10b0[0-9a-f]{12}$", str(lab.get("span_id")))
                          for _, lab in in_io), f"off-CPU span labels: io, span_id 10b0..., in wait_io: {in_io[:3]}")
    t.check(len(io_ids) >= 10, f"distinct io span ids in off-CPU samples: {len(io_ids)}")
    t.check(in_wait and 0.35 <= io_ns / in_wait <= 0.65,
            f"span io holds about half of wait_io's off-CPU time: {io_ns} of {in_wait}")
    stray = [lab for _, lab in osamples if "qprof_span" in lab and lab.get("qprof_scope") != "wait_io"
             and not (lab.get("thread") == "fl_worker" and lab["qprof_span"] == "order")]
    t.check(not stray, f"no off-CPU sample carries a span but in wait_io (io) or the worker's (order): {stray[:3]}")
finally:
    if prog.proc.poll() is None:
        os.kill(prog.pid, signal.SIGCONT)
    prog.finish()
    d.stop()
sys.exit(t.done())
