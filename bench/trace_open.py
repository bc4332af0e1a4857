#!/usr/bin/env python3
"""How fast a real client opens a trace of the demo strategy, in each format.

Runs examples/strategy (2 threads at 20,000 ticks a second, as the demo
does), attaches a qprofd of its own on a private socket, records SECONDS
(default 10) with qprof-cli trace in Chrome JSON and in speedscope's format
(one after the other, the same settings), then opens each file in
speedscope (from the npm cache of the build, as integration_trace_client
installs it) in headless Chromium, and prints per format: the file's size,
the bytes per event, the wall time to open it, and the ratio of the two
times (measured in the same run, so that it means the same on any machine).
The goal is speedscope's format opened within 30 s; the exit status does
not depend on it. Stops only the processes it started, by pid.

usage (as root): bench/trace_open.py BUILD_DIR [SECONDS [TIMEOUT_S]]"""
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
timeout = int(sys.argv[3]) if len(sys.argv) > 3 else 240
qprofd = os.path.join(build, "daemon", "qprofd")
cli = os.path.join(build, "cli", "qprof-cli")
strategy = os.path.join(build, "examples", "strategy")
rel = os.path.join(build, "npm-cache", "node_modules", "speedscope", "dist", "release")
browser = shutil.which("chromium") or shutil.which("chromium-browser")
for need, what in ((qprofd, "qprofd"), (cli, "qprof-cli"), (strategy, "examples/strategy"),
                   (os.path.join(rel, "index.html"), "speedscope (run ctest -R integration_trace_client once)")):
    if not os.path.exists(need):
        sys.exit(f"trace_open: {what} not found at {need}")
if not browser:
    sys.exit("trace_open: chromium is not installed")
if os.geteuid() != 0:
    sys.exit("trace_open: run as root (qprofd attaches BPF probes)")


def open_time(path, tmp):
    """Seconds for speedscope in headless Chromium to import PATH; None when
    it did not within the timeout, or did not import it."""
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    os.makedirs(tmp, exist_ok=True)
    js = os.path.join(tmp, "profile.js")
    with open(js, "w") as f:
        f.write("window.alert = function (m) { document.title = 'alert: ' + m; };\n")
        f.write(f"speedscope.loadFileFromBase64({json.dumps(os.path.basename(path))}, {json.dumps(data)})")
    del data
    t0 = time.monotonic()
    try:
        r = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                            "--allow-file-access-from-files", f"--user-data-dir={tmp}/chromium",
                            "--virtual-time-budget=10000", "--dump-dom",
                            f"file://{rel}/index.html#localProfilePath={js}"],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    took = time.monotonic() - t0
    title = re.search(r"<title>(.*?)</title>", r.stdout)
    return took if title and title.group(1).endswith(" - speedscope") and "alert" not in title.group(1) else None


started = []
tmp = tempfile.mkdtemp(prefix="qprof-trace-open-")
try:
    prog = subprocess.Popen([strategy, "--threads", "2", "--rate", "20000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(prog)
    sock = os.path.join(tmp, "qprofd.sock")
    d = subprocess.Popen([qprofd, "--socket", sock, "--pid", str(prog.pid),
                          "--report-dir", os.path.join(tmp, "reports")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(d)
    for _ in range(600):
        if os.path.exists(sock):
            break
        time.sleep(0.1)
    time.sleep(2)
    files = {}
    for fmt in ("chrome", "speedscope"):
        path = os.path.join(tmp, f"strategy-{fmt}.json")
        r = subprocess.run([cli, "--socket", sock, "trace", "-o", path, "--seconds", str(seconds),
                            "--format", fmt], capture_output=True, text=True, timeout=seconds + 300)
        if r.returncode:
            sys.exit(f"trace_open: qprof-cli trace --format {fmt}: {r.stderr.strip()}")
        with open(path) as f:
            doc = json.load(f)
        events = doc["otherData"]["events"] if fmt == "chrome" else \
            sum(len(p["events"]) for p in doc["profiles"])
        del doc
        files[fmt] = (path, events)
        for line in r.stderr.splitlines():
            if line.startswith(("wrote ", "note: ")):
                print(f"{fmt}: {line}", flush=True)
    for p in reversed(started):
        p.send_signal(signal.SIGINT if p is prog else signal.SIGTERM)
        p.wait(timeout=60)
    started.clear()
    times = {}
    for fmt, (path, events) in files.items():
        size = os.path.getsize(path)
        times[fmt] = open_time(path, os.path.join(tmp, fmt))
        shown = f"{times[fmt]:.1f} s" if times[fmt] is not None else f"not within {timeout} s"
        print(f"{fmt}: {size} bytes, {events} events, {size / max(events, 1):.1f} bytes an event; "
              f"opened by speedscope in {shown} (load {os.getloadavg()[0]:.1f})", flush=True)
    c, s = times.get("chrome"), times.get("speedscope")
    if c and s:
        print(f"ratio: speedscope's format opens {c / s:.1f} x faster than Chrome JSON")
    elif s:
        print(f"ratio: Chrome JSON did not open within {timeout} s; speedscope's format in {s:.1f} s")
    print(f"goal: speedscope's format of {seconds} s opened within 30 s: "
          f"{'meets goal' if s is not None and s <= 30 else 'MISSES goal'}")
finally:
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
