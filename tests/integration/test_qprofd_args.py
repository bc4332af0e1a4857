#!/usr/bin/env python3
"""qprofd checks the targets on its command line before it loads anything:
a --pid of no process or a --binary of no regular file fails at once with
exit 2 and one line saying why, before the socket is made, BPF loaded or
the probes calibrated (it used to run the whole start-up, 1.3 to 2 s, and
more under load, then exit 1). So does a debuginfod server that is not
http(s), a cache directory others may write, a bad --debuginfod-timeout.
Needs no root.

usage: test_qprofd_args.py QPROFD"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Failures  # noqa: E402

qprofd = sys.argv[1]
t = Failures("unit_qprofd_args")
tmp = tempfile.mkdtemp(prefix="qprof-args-")
sock = os.path.join(tmp, "q.sock")
base = [qprofd, "--socket", sock, "--report-dir", os.path.join(tmp, "reports")]
gone = 999999999  # above any pid_max: never a process
open_dir = os.path.join(tmp, "open")  # a debuginfod cache others may write: refused
os.mkdir(open_dir)
os.chmod(open_dir, 0o777)

for args, line in (
        (["--pid", str(gone)], f"qprofd: --pid {gone}: no such process"),
        (["--pid", str(os.getpid()), "--pid", str(gone)], f"qprofd: --pid {gone}: no such process"),
        (["--binary", "/nonexistent/qprof-test"],
         "qprofd: --binary /nonexistent/qprof-test: No such file or directory"),
        (["--binary", tmp], f"qprofd: --binary {tmp}: not a regular file"),
        (["--debuginfod", "ftp://x"],
         "qprofd: debuginfod: a server is an http:// or https:// URL of at most 1024 bytes (ftp://x)"),
        (["--debuginfod", "http://127.0.0.1:1", "--debuginfod-cache", open_dir],
         f"qprofd: debuginfod: the cache {open_dir} must be ours and writable by us only"),
        (["--debuginfod-timeout", "0"], "qprofd: --debuginfod-timeout wants seconds in 1..3600, got '0'")):
    what = " ".join(args)
    p = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60)
    t.eq(p.returncode, 2, f"qprofd {what}: exit code")
    t.eq(p.stderr.splitlines(), [line], f"qprofd {what}: one line, nothing loaded before it")
    t.check(not os.path.exists(sock), f"qprofd {what}: no socket made")
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(t.done())
