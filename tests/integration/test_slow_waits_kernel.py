#!/usr/bin/env python3
"""The slowest instances' waits name the function that waited, on a build
without frame pointers: offcpu_target_nofp (offcpu_target.c built -O2
-fomit-frame-pointer, its sleep_2ms calling glibc's nanosleep) runs 500
instances of scope "tick", every 50th sleeping 2 ms in sleep_2ms(). Under
the BPF collector and under the ring collector, each of the 10 sleeps is
among the 20 slowest instances, with a "blocked" wait of >= 1.8 ms whose
user stack is, leaf first, glibc's nanosleep, then sleep_2ms, then tick,
then main (frame pointers alone stop at glibc's wrapper: no sleep_2ms, no
tick). Those stacks are the kernel's CFI walk at the switch-out.

About 15 s. usage: test_slow_waits_kernel.py QPROFD OFFCPU_TARGET_NOFP"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
t = Failures("integration_slow_waits_kernel")


def named(frame, name):
    return frame == name or frame.startswith(name + "(")


def names_waiter(stack):
    """STACK (leaf first) goes nanosleep -> sleep_2ms -> tick -> main."""
    try:
        a = next(i for i, f in enumerate(stack) if "nanosleep" in f)
        b = next(i for i, f in enumerate(stack) if named(f, "sleep_2ms"))
        c = next(i for i, f in enumerate(stack) if named(f, "tick"))
        e = next(i for i, f in enumerate(stack) if named(f, "main"))
    except StopIteration:
        return False
    return a < b < c < e


def part(collector):
    prog = Target([target, "slow", "500"])
    d = Daemon(qprofd, ["--collector", collector, "--pid", str(prog.pid), "--frequency", "1999"])
    try:
        st, status = d.get("/api/status")
        if not status["offcpu"]["running"] or not status["cpu"]["unwind"]["kernel"]["running"]:
            print("SKIP: off-CPU tracing or the kernel's walk unavailable here", flush=True)
            sys.exit(77)
        deadline = time.time() + 60  # the target's tables loaded before it works
        while time.time() < deadline and \
                d.get("/api/status")[1]["cpu"]["unwind"]["kernel"]["tables"]["processes"] < 1:
            time.sleep(0.1)
        prog.start()
        res = prog.result()
        t.eq(res["sleeps"], 10, f"{collector}: sleeps made")

        def slow20(final=False):
            # the waits join their instances as the drains read them: the
            # 20 slowest are asked again until the 10 sleeps are there
            st, body = d.get(f"/api/scopes/slowest?pid={prog.pid}&name=tick&n=20")
            inst = body["instances"] if st == 200 else []
            if len(inst) == 20 and (final or sum(1 for i in inst if any(
                    w["reason"] == "blocked" and w["ns"] >= 1800000 for w in i["off_cpu"])) >= 10):
                return inst
            return None
        inst = wait_for(slow20, timeout=20) or slow20(True) or []
        t.eq(len(inst), 20, f"{collector}: 20 slowest")
        sleepers = named_ok = 0
        for i in inst:
            waits = [w for w in i["off_cpu"] if w["reason"] == "blocked" and w["ns"] >= 1800000]
            if not waits:
                continue
            sleepers += 1
            if any(names_waiter(w["stack"]) for w in waits):
                named_ok += 1
            else:
                print(f"{collector}: a sleep's wait without its function: {[w['stack'] for w in waits][:1]}",
                      file=sys.stderr, flush=True)
        print(f"{collector}: {sleepers} sleeps among the 20 slowest, {named_ok} naming "
              f"nanosleep -> sleep_2ms -> tick -> main", flush=True)
        if sleepers != 10:
            for i in inst:
                print(f"  {i['dur_ns']} ns, off {i['off_cpu_ns']}: "
                      f"{[(w['reason'], w['ns'], w['stack'][:4]) for w in i['off_cpu']]}", file=sys.stderr)
        t.eq(sleepers, 10, f"{collector}: the 10 sleeps among the 20 slowest")
        t.eq(named_ok, sleepers, f"{collector}: every sleep's wait names sleep_2ms under tick and main")
        k = d.get("/api/status")[1]["cpu"]["unwind"]["kernel"]["offcpu"]
        t.check(k["kept"] > 0, f"{collector}: switch-outs walked in the kernel ({k})")
        prog.finish()
    finally:
        prog.kill()
        code = d.stop()
        t.eq(code, 0, f"{collector}: qprofd exits 0 on SIGTERM")
        if t.failed:
            print(d.logtext()[-2000:], file=sys.stderr)


part("bpf")
part("ring")
sys.exit(t.done())
