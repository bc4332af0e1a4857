#!/usr/bin/env python3
"""bench/dlopen_hold.py - what following a target's libraries costs its
dlopen (docs/internals/targets.md). plugin_host loads N
copies of the marked test plugin (each a file of its own: each load is
parsed and attached), calls each once and unloads it; then N loads of one
file (parsed once, attached again each time). First alone, then attached by
qprofd --pid (default hold bound, -vv). Prints the dlopen times' p50, p90,
p99 and max in each case, and qprofd's hold times: from the rendezvous to
the end of its handling (its -vv lines; SIGCONT follows at once).
Not a test: one run on a shared VM, figures to read, no goal.
usage: sudo bench/dlopen_hold.py BUILD_DIR [N]   (N: 100 by default)"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from qptest import Daemon, _started  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else "build"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
host_exe = os.path.join(build, "tests", "plugin_host")
plugin = os.path.join(build, "tests", "libqp_plugin_fast.so")
qprofd = os.environ.get("QPROFD", os.path.join(build, "daemon", "qprofd"))
for f in (host_exe, plugin, qprofd):
    if not os.path.exists(f):
        sys.exit(f"{f}: not built (cmake --build {build})")


class Host:
    def __init__(self):
        self.proc = subprocess.Popen([host_exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        _started.append(self.proc)
        self.pid = json.loads(self.proc.stdout.readline())["pid"]

    def cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def quit(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else 0


def show(what, ns):
    ms = [x / 1e6 for x in ns]
    print(f"  {what:38s} n={len(ms):4d}  p50 {pct(ms, 50):7.3f}  p90 {pct(ms, 90):7.3f}  "
          f"p99 {pct(ms, 99):7.3f}  max {max(ms):7.3f} ms", flush=True)


def run(h, files):
    out = []
    for f in files:
        r = h.cmd(f"open 0 {f}")
        if not r.get("ok"):
            sys.exit(f"dlopen {f} failed")
        out.append(r["ns"])
        h.cmd("call 0 1")
        h.cmd("close 0")
        time.sleep(0.02)	# the unload's links go in the background meanwhile
    return out


tmp = tempfile.mkdtemp(prefix="qprof-dlbench-")
try:
    copies = []
    for i in range(n):
        p = os.path.join(tmp, f"strategy{i}.so")
        shutil.copy(plugin, p)
        copies.append(p)
    print(f"dlopen of {n} distinct marked plugins, then {n} loads of one (load average "
          f"{os.getloadavg()[0]:.1f})", flush=True)
    h = Host()
    alone_new, alone_same = run(h, copies), run(h, [copies[0]] * n)
    h.quit()
    h = Host()
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(h.pid), "-vv"])
    att_new, att_same = run(h, copies), run(h, [copies[0]] * n)
    st = d.get("/api/status")[1]
    lc = st.get("lifecycle") or {}
    h.quit()
    d.stop()
    holds = []
    for line in d.logtext().splitlines():
        m = re.search(r"rendezvous \(held\): (\d+) file\(s\) came or went; handled (\d+) us after it, "
                      r"(\d+) us parsing unlocked, (\d+) us under the lock", line)
        if m:
            holds.append((int(m.group(2)) + int(m.group(3)) + int(m.group(4))) * 1000)
    print("dlopen, alone:", flush=True)
    show("distinct files", alone_new)
    show("one file again", alone_same)
    print("dlopen, attached (qprofd --pid):", flush=True)
    show("distinct files", att_new)
    show("one file again", att_same)
    if holds:
        print("qprofd's holds (rendezvous to handled):", flush=True)
        show("every held load", holds)
    print("lifecycle: " + json.dumps({k: v for k, v in lc.items() if k.startswith("dl_")}), flush=True)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
