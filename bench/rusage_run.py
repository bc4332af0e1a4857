#!/usr/bin/env python3
"""bench/rusage_run.py - run one command and write the CPU time it took
(user + system of the process and all its threads, from wait4's rusage, in
ns) to a file once it has exited; the command's pid goes to OUT_FILE.pid as
soon as it is started. SIGINT and SIGTERM sent to this process
are passed on to the command, so a script can stop the profiler it measures
as it would stop it directly. Exits with the command's status.
   usage: bench/rusage_run.py OUT_FILE COMMAND [ARGS...]"""
import os
import signal
import sys

if len(sys.argv) < 3:
    sys.exit("usage: rusage_run.py OUT_FILE COMMAND [ARGS...]")
out = sys.argv[1]
child = os.fork()
if child == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)


def forward(sig, _frame):
    try:
        os.kill(child, sig)
    except ProcessLookupError:
        pass


with open(out + ".pid", "w") as f:
    f.write("%d\n" % child)
signal.signal(signal.SIGINT, forward)
signal.signal(signal.SIGTERM, forward)
while True:
    try:
        _, status, ru = os.wait4(child, 0)
        break
    except InterruptedError:
        continue
with open(out, "w") as f:
    f.write("%d\n" % round((ru.ru_utime + ru.ru_stime) * 1e9))
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
