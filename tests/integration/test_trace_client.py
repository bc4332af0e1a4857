#!/usr/bin/env python3
"""A trace recorded by qprof-cli trace, opened by a real client: speedscope
(from the npm registry, kept in a cache directory of the build) running in
headless Chromium (Debian's). speedscope's own command line loads a file the
same way: a script calling speedscope.loadFileFromBase64(name, data). The
import succeeded when the page's title became "NAME - speedscope" and the
toolbar names the process and a thread as the trace's metadata does; a file
speedscope cannot import leaves the title alone and raises an alert (caught). Exit 77 (skipped) only when
the npm registry cannot be reached and speedscope is not cached.

Then spans across threads, on the BPF collector and on the ring collector:
500 round trips of spans_target recorded by qprof-cli trace, exactly 500
"b", "n" and "e" events of order_rt paired by id in the file, and the file
imported by speedscope (which draws the threads' X events and leaves the
async ones to Perfetto and chrome://tracing).

usage: test_trace_client.py QPROFD TRACE_TARGET QPROF_CLI CACHE_DIR SPANS_TARGET"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import SKIP, Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin, cli, cache, spans_bin = sys.argv[1:6]
require_root()
t = Failures("integration_trace_client")
SPEEDSCOPE = "speedscope@1.25.0"


def speedscope_dir():
    """speedscope's release folder, installed into CACHE with npm once."""
    rel = os.path.join(cache, "node_modules", "speedscope", "dist", "release")
    if os.path.exists(os.path.join(rel, "index.html")):
        return rel
    if not shutil.which("npm"):
        print("FAIL: npm is not installed (scripts/install-deps.sh installs it)", file=sys.stderr)
        sys.exit(1)
    os.makedirs(cache, exist_ok=True)
    r = subprocess.run(["npm", "install", "--prefix", cache, "--no-audit", "--no-fund", "--ignore-scripts",
                        SPEEDSCOPE], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=120)
        if ping.returncode != 0:
            print(f"SKIP: the npm registry cannot be reached:\n{ping.stderr[-500:]}", flush=True)
            sys.exit(SKIP)
        print(f"FAIL: npm install {SPEEDSCOPE}:\n{r.stderr[-2000:]}", file=sys.stderr)
        sys.exit(1)
    return rel


def open_in_speedscope(rel, path, tmp):
    """The DOM of speedscope after it loaded PATH in headless Chromium."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    js = os.path.join(tmp, "profile.js")
    with open(js, "w") as f:
        # an alert() would block the headless page: its message goes to the title
        f.write("window.alert = function (m) { document.title = 'alert: ' + m; };\n")
        f.write(f"speedscope.loadFileFromBase64({json.dumps(name)}, {json.dumps(data)})")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("FAIL: chromium is not installed (scripts/install-deps.sh installs it)", file=sys.stderr)
        sys.exit(1)
    url = f"file://{rel}/index.html#localProfilePath={js}"
    r = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--allow-file-access-from-files", f"--user-data-dir={tmp}/chromium",
                        "--virtual-time-budget=10000", "--dump-dom", url],
                       capture_output=True, text=True, timeout=180)
    return r.stdout


rel = speedscope_dir()
prog = Target([target_bin, "--mode", "trace", "--iters", "300"])
d = Daemon(qprofd, ["--pid", str(prog.pid)])
try:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        cmd = subprocess.Popen([cli, "--socket", d.sock, "trace", "-o", path, "--pid", str(prog.pid),
                                "--seconds", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t.check(wait_for(lambda: d.get("/api/status")[1]["trace"]["active"] == 1, timeout=20),
                "the trace is being recorded")
        prog.start()
        prog.result()
        _, err = cmd.communicate(timeout=120)
        t.eq(cmd.returncode, 0, f"qprof-cli trace ({err.strip()})")
        with open(path) as f:
            doc = json.load(f)
        n = sum(1 for e in doc["traceEvents"] if e["ph"] == "X")
        t.eq(n, 4 * 300, "X events in the file")
        dom = open_in_speedscope(rel, path, tmp)
        t.check("<title>trace.json - speedscope</title>" in dom,
                f"speedscope imported the trace (title): {dom[:300]!r}")
        t.check(f"trace_target (pid {prog.pid})" in dom, "speedscope shows the process name")
        t.check("worker0 (tid" in dom or "worker1 (tid" in dom, "speedscope shows a thread name")
        # the check can fail: a file speedscope cannot import keeps the title
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"traceEvents": [{"ph": "X", "na')
        dom = open_in_speedscope(rel, bad, tmp)
        t.check("<title>bad.json - speedscope</title>" not in dom and "<title>alert: " in dom,
                f"a broken file is not imported, and speedscope says so: {dom[:300]!r}")
finally:
    prog.kill()
    d.stop()
    if t.failed:
        print(d.logtext(), file=sys.stderr)

for collector in ("bpf", "ring"):
    prog = Target([spans_bin, "--mode", "roundtrip", "--n", "500"])
    d = Daemon(qprofd, ["--pid", str(prog.pid)] + (["--ring"] if collector == "ring" else []))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"spans-{collector}.json")
            cmd = subprocess.Popen([cli, "--socket", d.sock, "trace", "-o", path, "--pid", str(prog.pid),
                                    "--seconds", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            t.check(wait_for(lambda: d.get("/api/status")[1]["trace"]["active"] == 1, timeout=20),
                    f"{collector}: the trace is being recorded")
            prog.start()
            prog.result()
            _, err = cmd.communicate(timeout=120)
            t.eq(cmd.returncode, 0, f"{collector}: qprof-cli trace ({err.strip()})")
            with open(path) as f:
                doc = json.load(f)
            t.eq(doc["otherData"]["collector"], collector, f"{collector}: the trace's collector")
            sp = [e for e in doc["traceEvents"] if e.get("cat") == "span"]
            for ph in ("b", "n", "e"):
                t.eq(sum(1 for e in sp if e["ph"] == ph and e["name"] == "order_rt"), 500,
                     f"{collector}: {ph} events of order_rt")
            t.eq(len(sp), 1500, f"{collector}: no other async event")
            b = {e["id2"]["local"] for e in sp if e["ph"] == "b"}
            e_ = {e["id2"]["local"] for e in sp if e["ph"] == "e"}
            t.check(len(b) == 500 and b == e_, f"{collector}: every b has its e, by id")
            t.eq(sum(1 for e in doc["traceEvents"] if e["ph"] == "X"), 1000,
                 f"{collector}: X events of strat_work and gw_work")
            dom = open_in_speedscope(rel, path, tmp)
            t.check(f"<title>spans-{collector}.json - speedscope</title>" in dom,
                    f"{collector}: speedscope imported the trace with spans: {dom[:300]!r}")
    finally:
        prog.finish()
        prog.kill()
        d.stop()
        if t.failed:
            print(d.logtext(), file=sys.stderr)
sys.exit(t.done())
