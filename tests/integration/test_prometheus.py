#!/usr/bin/env python3
"""Past one machine: the real Prometheus (Debian's 2.42) scrapes
two qprofd over their read-only --listen on loopback, every second. Two
Prometheus servers run side by side: one reads the text format (classic
histograms), one runs with --enable-feature=native-histograms and so
negotiates the protobuf format (native histograms, schema 5).

Each qprofd watches one prom_target (SCHED_FIFO, one after the other, so
that preemptions do not put durations of milliseconds in the top 1 %): A
busy-waits 5 us 19 times in 20 and 75 us once (10,000 scopes), B 420 us 9
times in 10 and 1.95 ms once (400 scopes). Each p99 lies inside a cluster of
equal durations (a sparse tail would let Prometheus's rank, q * n, and
qprofd's nearest rank pick neighbours far apart); over both, the p99 lies
in B's 420 us cluster, neither A's nor B's own. Every series exists before
the bulk of the work (one warm-up scope each, scraped first), so rate()
over [1m] sees the bulk exactly.

Checked: promtool lints a live /metrics clean; an odd scope name (quotes,
backslash, newline, UTF-8, a byte that is not UTF-8) comes out of
Prometheus's parsers, text and protobuf, as the one label value the
exposition documents; no pid label by default;
histogram_quantile(0.99, sum by (le) (rate(..._bucket{scope="work"}[1m])))
per instance agrees with qprofd's own p99 within one classic bucket's
width, and over both instances with the merged distribution (computed
here from the two expositions' exact bucket counts), whose bucket is
neither A's nor B's; the native histograms' p99 agree with qprofd's
within 8 % (two schema-5 buckets and a kernel bucket).

usage: test_prometheus.py QPROFD PROM_TARGET"""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qptest  # noqa: E402
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin = sys.argv[1:3]
require_root()
t = Failures("integration_prometheus")
T0 = time.time()
PROM, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
if not PROM or not PROMTOOL:
    print("FAIL: prometheus or promtool missing (scripts/install-deps.sh installs Debian's "
          "prometheus package)", file=sys.stderr)
    sys.exit(1)

# The classic bounds, as daemon/export/metrics_writer.h documents them:
# kernel edges E = m * 2^(k-2) ns (m = 4..7, k = 6..32) and 2^33 ns, le = E - 1 ns.
EDGES = [(4 + i % 4) << (6 + i // 4 - 2) for i in range(109)]
LE = [(e - 1) / 1e9 for e in EDGES]
ODD = "odd \"q\" back\\slash\nline \u00fc \ufffd"   # the target's odd name, as exported
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bucket_of(x):
    """(lo, hi] of the classic bucket that holds x seconds."""
    lo = 0.0
    for hi in LE:
        if x <= hi:
            return lo, hi
        lo = hi
    return lo, math.inf


class Prom:
    """A Prometheus of our own on loopback, scraping TARGETS every second."""

    def __init__(self, targets, native):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="qprof-prom-")
        qptest._dirs.append(self.dir)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: qprofd\n    static_configs:\n"
                    f"      - targets: [{', '.join(repr(x) for x in targets)}]\n")
        args = [PROM, f"--config.file={cfg}", f"--storage.tsdb.path={self.dir}/data",
                f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"]
        if native:
            args.append("--enable-feature=native-histograms")
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        qptest._started.append(self.proc)

    def ready(self):
        try:
            with NO_PROXY.open(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, q):
        """[(labels, value)] of an instant query now."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        with NO_PROXY.open(url, timeout=20) as r:
            doc = json.load(r)
        if doc.get("status") != "success":
            raise RuntimeError(f"{q}: {doc}")
        return [(s["metric"], float(s["value"][1])) for s in doc["data"]["result"]]

    def logtext(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def buckets(text, scope):
    """{le: count} of the classic buckets of SCOPE (kind scope) in an exposition."""
    out = {}
    pat = re.compile(r'^qprof_scope_duration_seconds_bucket\{exe="prom_target",scope="' + re.escape(scope)
                     + r'",parent="",kind="scope",le="([^"]+)"\} (\d+)$', re.M)
    for le, n in pat.findall(text):
        out[float(le)] = int(n)
    return out


def prom_quantile(q, cum):
    """histogram_quantile as Prometheus computes it on cumulative buckets {le: n}."""
    bs = sorted(cum.items())
    total = bs[-1][1]
    if total == 0:
        return math.nan
    rank = q * total
    prev_le, prev_n = 0.0, 0
    for le, n in bs:
        if n >= rank:
            if math.isinf(le):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_n) / (n - prev_n)
        prev_le, prev_n = le, n
    return prev_le


def diff(end, start):
    return {le: n - start.get(le, 0) for le, n in end.items()}


def add(a, b):
    return {le: a.get(le, 0) + b.get(le, 0) for le in set(a) | set(b)}


def metrics_text(d):
    st, _, body = d.request("GET", "/metrics")
    t.eq(st, 200, "/metrics answers")
    return body.decode()


def own_row(d, name):
    st, doc = d.get("/api/scopes")
    t.eq(st, 200, "/api/scopes")
    rows = [r for r in doc["scopes"] if r["name"] == name and r["kind"] == "scope"]
    return rows[0] if rows else None


pa, pb = free_port(), free_port()
ia, ib = f"127.0.0.1:{pa}", f"127.0.0.1:{pb}"
da = Daemon(qprofd, ["--collector", "bpf", "--listen", ia])
db = Daemon(qprofd, ["--collector", "bpf", "--listen", ib])
classic = Prom([ia, ib], native=False)
native = Prom([ia, ib], native=True)
A_US, A_ROUNDS = [5] * 19 + [75], 500          # 10,000 scopes: 9,500 of 5 us, 500 of 75 us
B_US, B_ROUNDS = [420] * 9 + [1950], 40         # 400 scopes: 360 of 420 us, 40 of 1.95 ms
ta = Target([target_bin, ",".join(map(str, A_US)), str(A_ROUNDS), "--rt"])
tb = Target([target_bin, ",".join(map(str, B_US)), str(B_ROUNDS), "--rt"])
try:
    for d, tg in ((da, ta), (db, tb)):
        st, _ = d.post("/api/targets", {"pid": tg.pid})
        t.eq(st, 201, "attach")
    t.check(wait_for(lambda: classic.ready() and native.ready(), timeout=120),
            "both Prometheus servers ready")
    ta.start()
    tb.start()
    t.eq(ta.result(), {"phase": 1}, "A warmed up")
    t.eq(tb.result(), {"phase": 1}, "B warmed up")

    # every series scraped with its warm-up count before the bulk
    def warm():
        c = classic.query('qprof_scope_duration_seconds_count{scope="work"} == 1')
        n = native.query('histogram_count(qprof_scope_duration_seconds{scope="work"}) == 1')
        return len(c) == 2 and len(n) == 2
    t.check(wait_for(warm, timeout=60, step=0.25), "warm-up series scraped by both servers")
    start_a, start_b = buckets(metrics_text(da), "work"), buckets(metrics_text(db), "work")
    t.check(len(start_a) == 110 and start_a.get(math.inf) == 1, "A's warm-up exposition")
    ta.start()  # one after the other: one CPU busy at a time
    t.eq(ta.result(), {"done": len(A_US) * A_ROUNDS}, "A's work done")
    tb.start()
    t.eq(tb.result(), {"done": len(B_US) * B_ROUNDS}, "B's work done")

    # qprofd's own figures, and the exposition they come with
    t.check(wait_for(lambda: (own_row(da, "work") or {}).get("count") == 1 + len(A_US) * A_ROUNDS
                     and (own_row(db, "work") or {}).get("count") == 1 + len(B_US) * B_ROUNDS, timeout=20),
            "qprofd counted every scope")
    row_a, row_b = own_row(da, "work"), own_row(db, "work")
    text_a, text_b = metrics_text(da), metrics_text(db)
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text_a.encode(), capture_output=True)
    t.check(lint.returncode == 0 and not lint.stdout and not lint.stderr,
            f"promtool check metrics: rc {lint.returncode} {lint.stdout!r} {lint.stderr!r}")
    odd_text = ODD.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    t.check(f'qprof_scope_duration_seconds_count{{exe="prom_target",scope="{odd_text}",parent="",'
            f'kind="scope"}} 1\n' in text_a, "the odd name escaped in the text exposition")
    end_a, end_b = buckets(text_a, "work"), buckets(text_b, "work")
    t.eq(end_a.get(math.inf), row_a["count"], "A: +Inf bucket is qprofd's count")

    def scraped():
        c = classic.query('qprof_scope_duration_seconds_count{scope="work"}')
        n = native.query('histogram_count(qprof_scope_duration_seconds{scope="work"})')
        want = {ia: row_a["count"], ib: row_b["count"]}
        return ({m["instance"]: v for m, v in c} == want and {m["instance"]: v for m, v in n} == want)
    t.check(wait_for(scraped, timeout=60, step=0.25), "final counts scraped by both servers")

    # classic: per instance, against qprofd's own p99
    Q = 'histogram_quantile(0.99, sum by (le) (rate(qprof_scope_duration_seconds_bucket{{scope="work"{}}}[1m])))'
    for inst, row, what in ((ia, row_a, "A"), (ib, row_b, "B")):
        r = classic.query(Q.format(f',instance="{inst}"'))
        own = row["p99_ns"] / 1e9
        lo, hi = bucket_of(own)
        t.check(len(r) == 1 and abs(r[0][1] - own) <= hi - lo,
                f"{what}: classic p99 {r} vs qprofd's {own:.9f} within one bucket ({hi - lo:.9f})")
        print(f"{what}: qprofd p99 {own * 1e6:.2f} us, Prometheus classic "
              f"{r[0][1] * 1e6 if r else float('nan'):.2f} us, bucket ({lo * 1e6:.3f}, {hi * 1e6:.3f}] us")
    # classic: summed over both instances, against the merged distribution
    inc_a, inc_b = diff(end_a, start_a), diff(end_b, start_b)
    truth, truth_a, truth_b = (prom_quantile(0.99, add(inc_a, inc_b)), prom_quantile(0.99, inc_a),
                               prom_quantile(0.99, inc_b))
    r = classic.query(Q.format(""))
    lo, hi = bucket_of(truth)
    t.check(len(r) == 1 and abs(r[0][1] - truth) <= hi - lo,
            f"merged: classic p99 {r} vs the merged buckets' {truth:.9f} within one bucket ({hi - lo:.9f})")
    t.check(bucket_of(truth) != bucket_of(truth_a) and bucket_of(truth) != bucket_of(truth_b),
            f"the merged p99 ({truth:.9f}) is neither A's ({truth_a:.9f}) nor B's ({truth_b:.9f})")
    print(f"merged: p99 of the summed buckets {truth * 1e6:.2f} us (A alone {truth_a * 1e6:.2f}, "
          f"B alone {truth_b * 1e6:.2f}), Prometheus {r[0][1] * 1e6 if r else float('nan'):.2f} us")

    # native: per instance and merged
    N = 'histogram_quantile(0.99, sum(rate(qprof_scope_duration_seconds{{scope="work"{}}}[1m])))'
    for inst, row, what in ((ia, row_a, "A"), (ib, row_b, "B")):
        r = native.query(N.format(f',instance="{inst}"'))
        own = row["p99_ns"] / 1e9
        t.check(len(r) == 1 and abs(r[0][1] - own) <= 0.08 * own,
                f"{what}: native p99 {r} vs qprofd's {own:.9f} within 8 %")
        print(f"{what}: Prometheus native p99 {r[0][1] * 1e6 if r else float('nan'):.2f} us")
    r = native.query(N.format(""))
    lo, hi = bucket_of(truth)
    t.check(len(r) == 1 and abs(r[0][1] - truth) <= hi - lo + 0.08 * truth,
            f"merged: native p99 {r} vs {truth:.9f}")
    print(f"merged: Prometheus native p99 {r[0][1] * 1e6 if r else float('nan'):.2f} us")

    # the odd name through both parsers, and no pid label unless asked for
    lit = json.dumps(ODD)
    for srv, q in ((classic, f"qprof_scope_duration_seconds_count{{scope={lit}}}"),
                   (native, f"histogram_count(qprof_scope_duration_seconds{{scope={lit}}})")):
        r = srv.query(q)
        t.check(len(r) == 2 and all(m.get("scope") == ODD and v == 1 for m, v in r),
                f"odd scope name read back: {r}")
    t.eq(classic.query('qprof_scope_duration_seconds_count{pid!=""}'), [], "no pid label by default")
    t.eq(classic.query('count(up == 1)')[0][1] if classic.query('count(up == 1)') else 0, 2.0,
         "both qprofd scraped up")
finally:
    for p in (classic, native):
        if t.failed:
            print(f"--- prometheus log:\n{p.logtext()[-3000:]}", file=sys.stderr)
        p.stop()
    ta.finish()
    tb.finish()
    da.stop()
    db.stop()
print(f"integration_prometheus: {time.time() - T0:.1f} s")
sys.exit(t.done())
