#!/usr/bin/env python3
"""CPU samples inside the kernel's [uprobes-trampoline] page carry the
program's frames beneath: tramp_nofp (built -O2 without frame pointers)
opens and closes the scope "hot" in a tight loop under the BPF collector,
whose scope probes the kernel turns into calls to the trampoline page, so
a good share of its samples have their user pc there (in the page, or
after its uprobe system call). The kernel's walk has a rule for that page
(the return address the probed site's call pushed, found above what the
trampoline pushed): in a 3 s window taken once the trampoline is mapped,
>= 95 % of the samples with a trampoline frame have main -> hot_path
beneath it, and the trampoline samples are >= 5 % of all. The same with
--unwind dwarf-copy: qprofd's unwinder of the stack copy has the same rule
(the return address found above what the trampoline pushed, pointing
right after a nop5 of a file). Before, such a sample had the trampoline and
nothing of the program (libdwfl and frame pointers cannot go through it).

About 20 s. usage: test_tramp_kernel.py QPROFD TRAMP_NOFP"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
t = Failures("integration_tramp_kernel")
TRAMP = "[uprobes-trampoline]"


def named(frame, name):
    return frame == name or frame.startswith(name + "(")


def beneath(frames):
    """main -> hot_path -> the trampoline, root first."""
    try:
        a = next(i for i, f in enumerate(frames) if named(f, "main"))
        b = next(i for i, f in enumerate(frames) if named(f, "hot_path"))
        c = next(i for i, f in enumerate(frames) if f.startswith(TRAMP))
    except StopIteration:
        return False
    return a < b < c


def part(mode):
    """One run under --unwind MODE: the kernel's walk, or the stack copy
    unwound in qprofd (which goes through the page the same way)."""
    prog = Target([target])
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--frequency", "999", "--unwind", mode])
    try:
        st, status = d.get("/api/status")
        if not status["cpu"]["running"] or (mode == "dwarf" and not status["cpu"]["unwind"]["kernel"]["running"]):
            print("SKIP: CPU sampling or the kernel's walk unavailable here", flush=True)
            sys.exit(77)
        deadline = time.time() + 60
        while mode == "dwarf" and time.time() < deadline and \
                d.get("/api/status")[1]["cpu"]["unwind"]["kernel"]["tables"]["processes"] < 1:
            time.sleep(0.1)
        prog.start()
        # the trampoline page is mapped at the first hit: the process's
        # mappings are read again when a sample finds a pc in none (within
        # a second)
        deadline = time.time() + 30
        while time.time() < deadline and TRAMP not in open(f"/proc/{prog.pid}/maps").read():
            time.sleep(0.1)
        time.sleep(2)
        st, _, body = d.request("GET", f"/api/cpu/folded?pid={prog.pid}&seconds=3", timeout=60)
        t.eq(st, 200, f"{mode}: the 3 s window answers")
        total = tramp = through = 0
        others = []
        for line in body.decode().splitlines():
            stack, _, n = line.rpartition(" ")
            frames, n = stack.split(";"), int(n)
            total += n
            if not any(f.startswith(TRAMP) for f in frames):
                continue
            tramp += n
            if beneath(frames):
                through += n
            else:
                others.append(line)
        print(f"{mode}: samples {total}, in the trampoline {tramp}, with main -> hot_path beneath {through}",
              flush=True)
        t.check(tramp >= 0.05 * total and tramp >= 20, f"{mode}: samples in the trampoline ({tramp}/{total})")
        t.check(through >= 0.95 * tramp, f"{mode}: >= 95 % of them with main -> hot_path beneath "
                f"({through}/{tramp}): {others[:3]}")
        if mode == "dwarf":
            print(f"walks: {d.get('/api/status')[1]['cpu']['unwind']['kernel']['ends']}", flush=True)
    finally:
        prog.kill()
        code = d.stop()
        t.eq(code, 0, f"{mode}: qprofd exits 0 on SIGTERM")
        if t.failed:
            print(d.logtext()[-2000:], file=sys.stderr)


part("dwarf")
part("dwarf-copy")
sys.exit(t.done())
