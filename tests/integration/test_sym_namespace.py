#!/usr/bin/env python3
"""The symbolizer names a target's own file, never another file at the same
path in qprofd's mount namespace with the same inode number.

The target (cpu_target, copied to DIR/app) runs in a private mount
namespace from a tmpfs of its own on DIR; in qprofd's namespace another
tmpfs on DIR holds another program (scope_target) at DIR/app. Both are the
first file of a fresh tmpfs: the same inode number (checked), other
devices. The CPU profile must name work_one, work_two, work_three (their
share of the samples at least 90 %), no function of the other program, and
/pprof/symbol must name the three addresses the target printed.

About 10 s. usage: test_sym_namespace.py QPROFD CPU_TARGET OTHER_BINARY"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, cpu_bin, other_bin = sys.argv[1:4]
require_root()
if not shutil.which("unshare"):
    print("SKIP: unshare (util-linux) is missing", flush=True)
    sys.exit(77)
t = Failures("integration_sym_namespace")
OURS = ("work_one", "work_two", "work_three")


def defined_functions(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout
    return {line.split()[2] for line in out.splitlines()
            if len(line.split()) == 3 and line.split()[1] in "tT"}


# functions only the other program has: none may be named for the target
foreign = sorted(defined_functions(other_bin) - defined_functions(cpu_bin))
t.check(len(foreign) >= 3, f"the other program has functions of its own: {foreign[:5]}")

top = tempfile.mkdtemp(prefix="qprof-symns-")
app = os.path.join(top, "app")
mounted = False
proc = None
try:
    # the target: its own tmpfs on TOP, in its own mount namespace
    script = f'mount -t tmpfs -o size=16m none "{top}" && cp "{cpu_bin}" "{app}" && exec "{app}"'
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    _started.append(proc)
    info = json.loads(proc.stdout.readline())
    pid = info["pid"]
    t.eq(pid, proc.pid, "the target is the process started (sh exec'd it)")

    # qprofd's namespace: another tmpfs on TOP, another program at TOP/app
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "none", top], check=True)
    mounted = True
    shutil.copy(other_bin, app)
    os.chmod(app, 0o755)
    with open(f"/proc/{pid}/maps") as f:
        line = next(x for x in f if x.rstrip().endswith("/app") and " r-xp " in x)
    dev_t, ino_t = line.split()[3], int(line.split()[4])
    st = os.stat(app)
    dev_q = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    t.eq(st.st_ino, ino_t, "the same inode number in both file systems")
    t.check(dev_q != dev_t, f"other devices ({dev_q} here, {dev_t} for the target)")
    t.check(os.path.samefile(f"/proc/{pid}/root{app}", f"/proc/{pid}/exe"),
            "the target sees its own program at that path")

    d = Daemon(qprofd, ["--pid", str(pid), "--frequency", "999"])
    try:
        os.kill(pid, 10)  # SIGUSR1: spin
        st_, _, body = d.request("GET", f"/api/cpu/folded?pid={pid}&seconds=3", timeout=60)
        text = body.decode()
        total = ours = 0
        named_foreign = set()
        for row in text.splitlines():
            stack, _, n = row.rpartition(" ")
            frames = stack.split(";")
            total += int(n)
            if any(f in OURS for f in frames):
                ours += int(n)
            named_foreign |= {f for f in frames if f in foreign}
        print(f"samples {total}, in work_*: {ours}, foreign names: {sorted(named_foreign)}", flush=True)
        t.eq(st_, 200, "CPU profile answers")
        t.check(total > 0 and ours >= 0.9 * total,
                f"the samples name the target's functions: {ours} of {total}")
        t.eq(sorted(named_foreign), [], "no function of the other program is named")
        addrs = "+".join(info[k] for k in OURS)
        st_, _, body = d.request("POST", "/pprof/symbol", body=addrs)
        names = [x.split("\t")[1] for x in body.decode().splitlines() if "\t" in x]
        t.eq((st_, names), (200, list(OURS)), "/pprof/symbol names the target's addresses")
    finally:
        t.eq(d.stop(), 0, "qprofd exits 0")
finally:
    if proc and proc.poll() is None:
        proc.kill()
        proc.wait()
    if mounted:
        subprocess.run(["umount", "-l", top], check=False)
    shutil.rmtree(top, ignore_errors=True)
sys.exit(t.done())
