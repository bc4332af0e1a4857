#!/usr/bin/env python3
"""bench/startup.py - qprofd's start-up as a client sees it: the time from
the exec of `qprofd --pid PID` to the first /api/status that answers with
PID attached (its state "running", its probes counted), against baselines
measured in the same run, interleaved run by run:

  - bpftrace attaching to the same two sites (qprof:scope_enter and
    qprof:scope_exit of the same process), timed from its exec to its BEGIN
    probe, which bpftrace fires once every probe is attached;
  - `qprofd --version` (exec and dynamic linking: the floor);
  - BASE_QPROFD (another build, e.g. of main) when it is set.

Each qprofd is measured on its default collector (the ring: the target's
markers are of ABI 2) and with `--collector bpf`. For each run it prints
the wall-clock time, qprofd's CPU time by then (user + system, which
includes the kernel's verifier), the time until its status shows the CPU
sampler running (that one loads on a thread of its own while qprofd
already answers), the instructions the verifier went through for the
programs qprofd holds once the sampler runs (each program's verified_insns in
/proc/PID/fdinfo), its RSS and the kernel memory of its BPF maps (memlock in fdinfo, each map
once) a second later, the time from SIGTERM to its exit; then the
medians and their ratios to bpftrace. The load average is printed before
and after: on a shared machine the wall-clock figures move with it, the
CPU time and the verifier's count much less. Figures are printed, never
judged by the exit status.

usage: sudo bench/startup.py [BUILD_DIR]    RUNS=N (default 5), BASE_QPROFD=PATH
"""
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build"))
QPROFD = os.environ.get("QPROFD", os.path.join(BUILD, "daemon", "qprofd"))
TARGET = os.path.join(BUILD, "tests", "edge_target")
RUNS = int(os.environ.get("RUNS", "5"))
BASE = os.environ.get("BASE_QPROFD", "")
TIMEOUT_S = float(os.environ.get("ATTACH_TIMEOUT", "60"))
TMP = f"/tmp/qprof-startup.{os.getpid()}"
started = []  # processes this script started, stopped by pid at the end


def status(sock_path):
    """GET /api/status over the unix socket: the JSON, or None."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(sock_path)
        s.sendall(b"GET /api/status HTTP/1.1\r\nHost: qprofd\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
    except OSError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def attached(st, pid):
    for t in (st or {}).get("targets", []):
        if t.get("pid") == pid and t.get("state") == "running" and t.get("probes", 0) > 0:
            return True
    return False


def cpu_ms(pid):
    """user + system time of PID so far, in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fdinfos(pid):
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                yield {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}
        except OSError:
            continue


def verified(pid):
    """programs qprofd holds and the instructions the verifier went through."""
    seen, total = set(), 0
    for d in fdinfos(pid):
        if "prog_id" in d and "verified_insns" in d and d["prog_id"] not in seen:
            seen.add(d["prog_id"])
            total += int(d["verified_insns"])
    return len(seen), total


def memlock_kb(pid):
    """kernel memory of the BPF maps qprofd holds (each map once)."""
    seen, total = set(), 0
    for d in fdinfos(pid):
        if "map_id" in d and "memlock" in d and d["map_id"] not in seen:
            seen.add(d["map_id"])
            total += int(d["memlock"])
    return total // 1024


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in started:
        started.remove(p)


def run_qprofd(exe, tag, pid, extra):
    sock = f"{TMP}/{tag}.sock"
    log = open(f"{TMP}/{tag}.log", "w")
    t0 = time.monotonic()
    p = subprocess.Popen([exe, "--pid", str(pid), "--socket", sock, "--report-dir", f"{TMP}/reports-{tag}"] + extra,
                         stdout=log, stderr=subprocess.STDOUT)
    started.append(p)
    ok = False
    while time.monotonic() - t0 < TIMEOUT_S and p.poll() is None:
        if os.path.exists(sock) and attached(status(sock), pid):
            ok = True
            break
        time.sleep(0.002)
    wall = (time.monotonic() - t0) * 1000
    if not ok:
        stop(p)
        log.close()
        with open(f"{TMP}/{tag}.log") as f:
            print(f"  {tag}: not attached: {f.read()[-300:]}")
        return None
    cpu = cpu_ms(p.pid)
    ready = None  # the CPU sampler loads on after the first answer
    while time.monotonic() - t0 < TIMEOUT_S and p.poll() is None:
        c = (status(sock) or {}).get("cpu", {})
        if c.get("running") or (c and not c.get("starting")):
            ready = (time.monotonic() - t0) * 1000
            break
        time.sleep(0.005)
    nprog, insns = verified(p.pid)
    time.sleep(1)  # idle, its target attached
    rss = rss_kb(p.pid)
    memlock = memlock_kb(p.pid)
    t1 = time.monotonic()
    stop(p)
    stopped = (time.monotonic() - t1) * 1000
    log.close()
    return {"wall": wall, "cpu": cpu, "ready": ready if ready is not None else float("nan"), "progs": nprog, "insns": insns, "rss": rss, "memlock": memlock,
            "stop": stopped}


def run_bpftrace(tag, pid):
    exe = os.readlink(f"/proc/{pid}/exe")
    prog = (f'usdt:{exe}:qprof:scope_enter {{ @e = count(); }} '
            f'usdt:{exe}:qprof:scope_exit {{ @x = count(); }} BEGIN {{ printf("ready\\n"); }}')
    t0 = time.monotonic()
    p = subprocess.Popen(["bpftrace", "-p", str(pid), "-e", prog], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    started.append(p)
    ok = False
    for line in p.stdout:
        if line.strip() == "ready":
            ok = True
            break
    wall = (time.monotonic() - t0) * 1000
    cpu = cpu_ms(p.pid) if ok else 0
    p.send_signal(signal.SIGINT)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    started.remove(p)
    return {"wall": wall, "cpu": cpu} if ok else None


def main():
    if os.geteuid() != 0:
        sys.exit("bench/startup.py needs root (qprofd and bpftrace load BPF)")
    for f in (QPROFD, TARGET):
        if not os.access(f, os.X_OK):
            sys.exit(f"missing {f} (build it: cmake --build {BUILD})")
    have_bpftrace = subprocess.run(["which", "bpftrace"], capture_output=True).returncode == 0
    os.makedirs(TMP, exist_ok=True)
    target = subprocess.Popen([TARGET, "--mode", "hold"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    started.append(target)
    time.sleep(0.3)
    load0 = open("/proc/loadavg").read().split()[:3]
    configs = [("ring", QPROFD, []), ("bpf", QPROFD, ["--collector", "bpf"])]
    if BASE:
        configs += [("base-ring", BASE, []), ("base-bpf", BASE, ["--collector", "bpf"])]
    res = {c[0]: [] for c in configs}
    res["bpftrace"], floor = [], []
    for i in range(RUNS):
        t0 = time.monotonic()
        subprocess.run([QPROFD, "--version"], stdout=subprocess.DEVNULL)
        floor.append((time.monotonic() - t0) * 1000)
        for name, exe, extra in configs:
            r = run_qprofd(exe, f"{name}-{i}", target.pid, extra)
            if r:
                res[name].append(r)
        if have_bpftrace:
            r = run_bpftrace(f"bpftrace-{i}", target.pid)
            if r:
                res["bpftrace"].append(r)
    load1 = open("/proc/loadavg").read().split()[:3]
    print(f"load average {' '.join(load0)} before, {' '.join(load1)} after; {os.cpu_count()} CPUs; {RUNS} runs")
    print(f"floor (qprofd --version): {statistics.median(floor):.1f} ms")
    bt = statistics.median([r["wall"] for r in res["bpftrace"]]) if res["bpftrace"] else None
    if bt:
        print(f"bpftrace, 2 sites, exec to BEGIN: {bt:.0f} ms median (CPU "
              f"{statistics.median([r['cpu'] for r in res['bpftrace']]):.0f} ms)")
    else:
        print("bpftrace: not measured (not installed or did not attach)")
    for name, exe, extra in configs:
        rs = res[name]
        if not rs:
            print(f"{name}: no run attached")
            continue
        m = {k: statistics.median([r[k] for r in rs]) for k in rs[0]}
        walls = ", ".join(f"{r['wall']:.0f}" for r in rs)
        ratio = f", {m['wall'] / bt:.2f} x bpftrace" if bt else ""
        print(f"{name} ({exe}{' ' + ' '.join(extra) if extra else ''}):")
        print(f"  exec to /api/status with the target attached: {m['wall']:.0f} ms median{ratio} "
              f"(runs: {walls}); goal 300 ms: {'met' if m['wall'] <= 300 else 'MISSED'}")
        print(f"  exec to the CPU sampler running (it loads while qprofd serves): {m['ready']:.0f} ms median")
        print(f"  CPU by the first answer {m['cpu']:.0f} ms; {m['progs']:.0f} BPF programs, {m['insns']:.0f} instructions "
              f"verified; SIGTERM to exit {m['stop']:.0f} ms")
        print(f"  idle, 1 s after: VmRSS {m['rss'] / 1024:.1f} MiB, BPF maps' memlock {m['memlock'] / 1024:.1f} MiB")


try:
    main()
finally:
    for p in list(started):
        if p.poll() is None:
            p.kill()
            p.wait()
    subprocess.run(["rm", "-rf", TMP])
