#!/usr/bin/env python3
"""Thread stacks by the CFI for GET /api/threads: threads_target
built -O2 without frame pointers, like glibc. Before, such a program's
threads got `scan` (every word of the copied stack that looks like a return
address, stale ones included); now each thread's copy goes through the
same libdwfl unwinder as the CPU samples. Checked: `unwind` is `dwarf` for
every thread, and each user stack is exactly the frames it is in, leaf
first, from the libc call it blocks in (or the spinner's loop) down to
`clone3` (`_start` for the main thread): no frame missing, none stale.
Ten requests back to back, the same frames each time (each makes its
own Dwfl: the CPU sampler's limit of 8 new ones a second left the later
ones with the scan).

usage: test_threads_cfi.py QPROFD THREADS_TARGET_NOFP"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, require_root  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
t = Failures("integration_threads_cfi")

# the user frames of each thread, leaf first, as the program and Debian
# 12's glibc 2.36 (x86-64) lay them out; the spinner's are the same whether
# it was sampled at a tick or read from its saved registers
WANT = {
    "qt-sleeper": ["clock_nanosleep@@GLIBC_2.17", "__nanosleep", "qt_sleeping_here", "sleeper",
                   "start_thread", "__GI___clone3"],
    "qt-waiter": ["__futex_abstimed_wait_common", "pthread_cond_wait@@GLIBC_2.3.2", "qt_waiting_here", "waiter",
                  "start_thread", "__GI___clone3"],
    "qt-spinner": ["qt_spinning_here", "spinner", "start_thread", "__GI___clone3"],
    "threads_target_": ["__read", "_IO_file_underflow@@GLIBC_2.2.5", "_IO_default_uflow", "_IO_getline_info",
                        "_IO_fgets", "main", "__libc_start_call_main", "__libc_start_main@@GLIBC_2.34", "_start"],
}

prog = subprocess.Popen([target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
pid = prog.pid
d = None
try:
    t.eq(prog.stdout.readline().strip(), "ready", "target ready")
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(pid)])
    time.sleep(0.3)  # the sleeper and the waiter are in their calls
    for n in range(10):  # back to back: a Dwfl is made for each
        st, body = d.get(f"/api/threads?pid={pid}")
        t.eq(st, 200, "threads answers 200")
        rows = {r["name"]: r for r in body["threads"]}
        t.eq(sorted(rows), sorted(WANT), f"answer {n}: the four threads")
        for name, want in WANT.items():
            r = rows.get(name, {})
            user = [f["name"] for f in r.get("stack", []) if not f["kernel"]]
            if n == 0:
                print(f"{name} ({r.get('unwind')}): {user}", flush=True)
            t.eq(r.get("unwind"), "dwarf", f"answer {n}: {name} unwound by the CFI")
            t.eq(user, want, f"answer {n}: {name}'s user frames")

    prog.stdin.close()
    prog.wait(timeout=30)
finally:
    if prog.poll() is None:
        prog.kill()
        prog.wait()
    if d:
        t.eq(d.stop(), 0, "qprofd exits 0")
sys.exit(t.done())
