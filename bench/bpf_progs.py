#!/usr/bin/env python3
"""bench/bpf_progs.py - the kernel's run-time statistics of the BPF programs
a process holds (program ids from /proc/PID/fdinfo and, for programs
attached through perf events, `bpftool perf list`; figures from
`bpftool -j prog show id N`), one line a program with hits:
    NAME RUN_CNT RUN_TIME_NS
Programs of the same name are summed. The statistics count only while
they are on (bench/bpf_stats_hold.py or kernel.bpf_stats_enabled=1).

usage: sudo bench/bpf_progs.py PID"""
import glob
import json
import subprocess
import sys

if len(sys.argv) != 2 or not sys.argv[1].isdigit():
    sys.exit("usage: bpf_progs.py PID")
ids = set()
for f in glob.glob(f"/proc/{sys.argv[1]}/fdinfo/*"):
    try:
        with open(f) as fh:
            for line in fh:
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
    except OSError:
        pass
# programs attached through perf events (bpftrace's uprobes): the perf
# event's fd holds the program, its fdinfo does not name it
r = subprocess.run(["bpftool", "-j", "perf", "list"], capture_output=True, text=True)
if not r.returncode:
    try:
        for e in json.loads(r.stdout or "[]"):
            if e.get("pid") == int(sys.argv[1]) and "prog_id" in e:
                ids.add(int(e["prog_id"]))
    except ValueError:
        pass
tot = {}
for i in sorted(ids):
    r = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(i)],
                       capture_output=True, text=True)
    if r.returncode:
        continue
    p = json.loads(r.stdout)
    name = p.get("name", f"id{i}")
    cnt, ns = tot.get(name, (0, 0))
    tot[name] = (cnt + p.get("run_cnt", 0), ns + p.get("run_time_ns", 0))
for name, (cnt, ns) in sorted(tot.items()):
    if cnt:
        print(name, cnt, ns)
