"""qptest - helpers for qprof's integration tests: start qprofd and test
programs (and stop them by pid), talk HTTP over the daemon's unix socket,
assert with messages. Exit 77 (skipped) only when BPF cannot be loaded."""
import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
_started = []  # every process a test started: stopped by pid at exit, whatever happens
_dirs = []     # temporary directories of the daemons: removed at exit


@atexit.register
def _stop_all():
    for p in _started:
        if p.poll() is None:
            p.kill()
            p.wait()
    for d in _dirs:
        shutil.rmtree(d, ignore_errors=True)


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class Failures:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", file=sys.stderr, flush=True)
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, f"{what}: got {got!r}, want {want!r}")

    def near(self, got, want, tol, what):
        ok = want != 0 and abs(got - want) <= tol * abs(want)
        return self.check(ok, f"{what}: got {got}, want {want} within {tol * 100:.0f}%")

    def done(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed", flush=True)
        return 1 if self.failed else 0


class Daemon:
    """A qprofd of our own on a socket in a temporary directory."""

    def __init__(self, qprofd, args=(), sock=None, wait_cpu=True):
        self.dir = tempfile.mkdtemp(prefix="qprof-test-")
        _dirs.append(self.dir)
        self.sock = sock or os.path.join(self.dir, "qprofd.sock")
        self.log = open(os.path.join(self.dir, "qprofd.log"), "w+")
        if "--report-dir" not in args:  # never the system's /var/lib/qprof
            args = [*args, "--report-dir", os.path.join(self.dir, "reports")]
        self.proc = subprocess.Popen([qprofd, "--socket", self.sock, "-v", *args],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        _started.append(self.proc)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            if os.path.exists(self.sock):
                try:
                    st, status = self.get("/api/status")
                    # the CPU sampler is published while qprofd serves
                    # (about a second on): the tests that read it wait
                    cpu = status.get("cpu", {}) if isinstance(status, dict) else {}
                    if not wait_cpu or st != 200 or not cpu.get("starting"):
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        code = self.proc.poll()
        text = self.logtext()
        if code == 3:
            print(f"SKIP: BPF cannot be loaded here:\n{text}", flush=True)
            sys.exit(SKIP)
        self.stop()
        raise RuntimeError(f"qprofd did not start (exit {code}):\n{text}")

    def logtext(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = UnixHTTPConnection(self.sock, timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, dict(r.getheaders()), data
        finally:
            c.close()

    def get(self, path, timeout=60):
        st, _, data = self.request("GET", path, timeout=timeout)
        return st, json.loads(data) if data else None

    def post(self, path, obj):
        body = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
        st, _, data = self.request("POST", path, body=body,
                                   headers={"Content-Type": "application/json"})
        return st, json.loads(data) if data else None

    def delete(self, path):
        st, _, data = self.request("DELETE", path)
        return st, json.loads(data) if data else None

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Target:
    """A test program that prints {"pid": N}, waits for SIGUSR1, works,
    prints its own figures as JSON, waits for SIGUSR2."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        _started.append(self.proc)
        self.pid = json.loads(self.proc.stdout.readline())["pid"]

    def start(self):
        os.kill(self.pid, signal.SIGUSR1)

    def result(self):
        return json.loads(self.proc.stdout.readline())

    def finish(self):
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGUSR2)
            self.proc.wait(timeout=30)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_for(pred, timeout=10, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def collector_args(qprofd, collector):
    """qprofd's flags for COLLECTOR: --ring, or --collector bpf where qprofd
    has --collector (the BPF collector is the default where it has not)."""
    if collector == "ring":
        return ["--ring"]
    out = subprocess.run([qprofd, "--help"], stdout=subprocess.PIPE, text=True).stdout
    return ["--collector", "bpf"] if "--collector" in out else []


def require_root():
    if os.geteuid() != 0:
        print("SKIP: integration tests need root to load BPF", flush=True)
        sys.exit(SKIP)
