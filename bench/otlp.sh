#!/usr/bin/env bash
# bench/otlp.sh - the cost of qprofd's OTLP push (--otlp-endpoint) and the
# size of what it sends, against the same interval as pprof, in one run.
#
#   bench/otlp.sh [BUILD_DIR]          (default: build)
#
# fleet_target (tests/integration) spins on one thread and sleeps on
# another; qprofd samples it at 999 Hz and pushes every INTERVAL s to a
# receiver on loopback (this script's). Figures:
#   - the builder thread's CPU per 10,000 CPU samples (/api/status
#     otlp.build_cpu_us over otlp.built_samples): snapshots, symbolizing,
#     encoding; and qprofd's whole CPU per 10,000 samples with the push,
#     against a run of the same length without it (the sender's libcurl
#     included);
#   - the mean request body (uncompressed protobuf, and gzipped as qprofd
#     sends it) against /pprof/profile?seconds=INTERVAL of the same
#     process (gzipped as served, and gunzipped).
# Environment: QPROFD=PATH, SECONDS_RUN=N (default 30), INTERVAL=N (default 5).
# Needs root; the exit status does not depend on the figures.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
QPROFD=${QPROFD:-$build/daemon/qprofd}
target=$build/tests/fleet_target
[ "$(id -u)" = 0 ] || { echo "bench/otlp.sh needs root (qprofd loads BPF programs)" >&2; exit 2; }
[ -x "$QPROFD" ] && [ -x "$target" ] || { echo "build qprofd and fleet_target first" >&2; exit 2; }

exec python3 - "$QPROFD" "$target" "${SECONDS_RUN:-30}" "${INTERVAL:-5}" <<'EOF'
import gzip, http.client, http.server, json, os, signal, socket, subprocess, sys, tempfile, threading, time

qprofd, target, run_s, interval = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tmp = tempfile.mkdtemp(prefix="qprof-otlp-bench-")
procs = []


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=120)
        self.p = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.p)


def get(sock, path):
    c = Unix(sock)
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read()


bodies = []
wire = []


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        # qprofd gzips its pushes: kept as sent (wire) and gunzipped (protobuf)
        wire.append(len(body))
        bodies.append(gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rpartition(")")[2].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def run(otlp):
    tp = subprocess.Popen([target], stdout=subprocess.PIPE, text=True)
    procs.append(tp)
    pid = json.loads(tp.stdout.readline())["pid"]
    sock = os.path.join(tmp, f"q{int(otlp)}.sock")
    args = [qprofd, "--socket", sock, "--pid", str(pid), "--frequency", "999", "--report-dir",
            os.path.join(tmp, "rep")]
    if otlp:
        args += ["--otlp-endpoint", f"http://127.0.0.1:{srv.server_address[1]}", "--otlp-interval", str(interval)]
    q = subprocess.Popen(args, stderr=subprocess.DEVNULL)
    procs.append(q)
    while not os.path.exists(sock):
        time.sleep(0.05)
    time.sleep(0.5)
    os.kill(pid, signal.SIGUSR1)
    # warm up alike (the symbolizer's first reads): a profile, and with the push its first push
    time.sleep(1)
    get(sock, f"/pprof/profile?pid={pid}")
    n0 = len(bodies)
    while otlp and len(bodies) == n0:
        time.sleep(0.1)
    st0 = json.loads(get(sock, "/api/status")[1])
    c0 = cpu_of(q.pid)
    time.sleep(run_s)
    c1 = cpu_of(q.pid)
    st = json.loads(get(sock, "/api/status")[1])
    if otlp:
        for k in ("build_cpu_us", "built_samples", "pushes", "pushed_bytes", "dropped"):
            st["otlp"][k] -= st0["otlp"][k]
    bodies[:] = bodies[n0 + 1:] if otlp else bodies
    pp = get(sock, f"/pprof/profile?pid={pid}&seconds={interval}")[1] if otlp else b""
    q.send_signal(signal.SIGTERM)
    q.wait()
    tp.send_signal(signal.SIGUSR2)
    tp.wait()
    return c1 - c0, st, pp


base_cpu, base_st, _ = run(False)
cpu, st, pp = run(True)
o = st["otlp"]
samples = o["built_samples"]
per10k = lambda v: v / samples * 10000 if samples else float("nan")
print(f"run {run_s} s at 999 Hz, push every {interval} s; load {os.getloadavg()[0]:.1f}")
print(f"pushes {o['pushes']}, samples built {samples}, dropped {o['dropped']}")
print(f"builder CPU: {o['build_cpu_us'] / 1000:.1f} ms in all, {per10k(o['build_cpu_us'] / 1000):.1f} ms per 10,000 samples")
print(f"qprofd CPU: {cpu * 1000:.0f} ms with the push, {base_cpu * 1000:.0f} ms without "
      f"(difference {per10k((cpu - base_cpu) * 1000):.1f} ms per 10,000 samples)")
if bodies:
    full = bodies
    mean = sum(map(len, full)) / len(full)
    gz = sum(wire) / len(wire)
    print(f"OTLP body: {mean / 1024:.1f} KiB mean ({gz / 1024:.1f} KiB gzipped, as sent) per {interval} s push")
    if pp:
        print(f"pprof of {interval} s: {len(pp) / 1024:.1f} KiB gzipped ({len(gzip.decompress(pp)) / 1024:.1f} KiB raw): "
              f"OTLP/pprof raw {mean / len(gzip.decompress(pp)):.2f}, gzipped {gz / len(pp):.2f}")
for p in procs:
    if p.poll() is None:
        p.kill()
EOF
