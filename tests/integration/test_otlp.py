#!/usr/bin/env python3
"""OTLP export: qprofd --otlp-endpoint pushes to a receiver of this test on
loopback, which keeps every body and answers as the test says. Every body
must decode with `protoc --decode` against the official schema
(tests/otlp). fleet_target's worker thread spins 1:2:3 in work_one,
work_two, work_three (the third inside scope on_tick, all inside session):
the decoded CPU profiles must give that split within 3 points, thread.name
fl_worker, qprof.scope on_tick and qprof.scopes [on_tick, session] on the
samples of work_three; the samples of work_two (inside a span "order" of
id 0x51ab000000000000 + n) the attribute qprof.span order and a Link whose
span_id is that id (trace_id 16 zero bytes), those of work_one and
work_three neither; the off-CPU profile the sleeper inside wait_io, about
half of it (every other sleep) inside span "io" with its Link; the
resource its attributes. Then the receiver answers 500, then 429, then
too slowly, then is down: qprofd keeps answering, counts failures,
retries and drops, and once the receiver is back and the target stopped,
every sample built was either pushed or counted dropped. Every body comes
gzipped (Content-Encoding: gzip) and is decoded after gunzip. Last, with
the target stopped and one push queued, the receiver answers 429 with
Retry-After: 3: the next tries come at least 3 s apart (the back-off alone
would be 1, 2 s), counted as throttled and honoured in status.

usage: test_otlp.py QPROFD FLEET_TARGET"""
import gzip
import http.server
import os
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402
from otlp_decode import Request, protoc_decode  # noqa: E402

qprofd, target = sys.argv[1:3]
require_root()
t = Failures("integration_otlp")
if not shutil.which("protoc"):
    print("SKIP: protoc is not installed (protobuf-compiler)", flush=True)
    sys.exit(77)
FUNCS = ("work_one", "work_two", "work_three")


class Receiver:
    def __init__(self):
        self.mode = "ok"
        self.bodies = []  # (mode, path, headers, body gunzipped)
        self.times = []  # (mode, monotonic time of arrival)
        self.lock = threading.Lock()
        rx = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                if self.headers.get("Content-Encoding") == "gzip":
                    try:
                        body = gzip.decompress(body)
                    except OSError:
                        body = b"not gzip: " + body
                with rx.lock:
                    mode = rx.mode
                    rx.bodies.append((mode, self.path, dict(self.headers), body))
                    rx.times.append((mode, time.monotonic()))
                if mode == "slow":
                    time.sleep(3)
                code = {"ok": 200, "500": 500, "429": 429, "slow": 200, "throttle": 429}[mode]
                self.send_response(code)
                if mode == "throttle":
                    self.send_header("Retry-After", "3")
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def down(self):
        self.srv.shutdown()
        self.srv.server_close()

    def up(self):
        # the same port again (SO_REUSEADDR is set by http.server)
        port = self.port
        rx = self
        Handler = self.srv.RequestHandlerClass
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.srv.daemon_threads = True
        self.th = threading.Thread(target=rx.srv.serve_forever, daemon=True)
        self.th.start()


rx = Receiver()
prog = Target([target])
env_attrs = "deployment.environment=test,team=q%20desk"
os.environ["OTEL_RESOURCE_ATTRIBUTES"] = env_attrs
d = Daemon(qprofd, ["--pid", str(prog.pid), "--frequency", "999",
                    "--otlp-endpoint", f"http://127.0.0.1:{rx.port}/", "--otlp-interval", "1",
                    "--otlp-timeout-ms", "1000", "--otlp-queue", "3", "--otlp-service-name", "fleet-test",
                    "--otlp-header", "X-Scope-OrgID=qprof-test"])


def status():
    st, s = d.get("/api/status", timeout=20)
    t.eq(st, 200, "GET /api/status answers")
    return s["otlp"]


try:
    prog.start()
    st = status()
    t.eq(st["enabled"], True, "status: otlp enabled")
    t.eq(st["url"], f"http://127.0.0.1:{rx.port}/v1development/profiles", "status: the push URL")
    wait_for(lambda: len(rx.bodies) >= 5, timeout=30, step=0.2)
    with rx.lock:
        ok_bodies = [b for b in rx.bodies if b[0] == "ok"]
    t.check(len(ok_bodies) >= 5, f"pushes received: {len(ok_bodies)}")
    t.eq({b[1] for b in ok_bodies}, {"/v1development/profiles"}, "POSTed to /v1development/profiles")
    t.check(all(b[2].get("Content-Type") == "application/x-protobuf" for b in ok_bodies),
            "Content-Type application/x-protobuf")
    t.check(all(b[2].get("X-Scope-OrgID") == "qprof-test" for b in ok_bodies), "--otlp-header sent")
    t.check(all(b[2].get("Content-Encoding") == "gzip" for b in ok_bodies), "Content-Encoding: gzip")
    st0 = status()
    t.check(st0["compression"] == "gzip" and 0 < st0["gzipped_bytes"] < st0["built_bytes"],
            f"gzipped {st0['gzipped_bytes']} of {st0['built_bytes']} bytes built")

    counts, n_worker, scoped3, n3, scoped1, n1 = {}, 0, 0, 0, 0, 0
    n2, spanned2, n_out, linked_out, span_ids, bad_links = 0, 0, 0, 0, set(), []
    off_wait, off_sleeper, res_ok, off_io, off_io_bad = 0, 0, 0, 0, 0
    types = set()
    for mode, _, _, body in ok_bodies[1:]:  # the first may cover the target's start
        rc, text, err = protoc_decode(body)
        if not t.eq(rc, 0, f"protoc --decode reads a push ({err[-300:]})"):
            continue
        req = Request(text)
        t.eq(req.strings[:1], [""], "string_table[0] is \"\"")
        for tab in ("attrs", "stacks", "locs", "funcs", "maps", "links"):
            t.check(len(getattr(req, tab)) >= 1, f"dictionary {tab} has its zero element")
        for attrs, profiles in req.resources():
            if attrs.get("process.pid") != prog.pid:
                continue
            res_ok += attrs.get("service.name") == "fleet-test" and attrs.get("host.name") == socket.gethostname() \
                and attrs.get("process.executable.name") == "fleet_target" \
                and attrs.get("deployment.environment") == "test" and attrs.get("team") == "q desk"
            for p in profiles:
                types.add((p["type"], p["unit"]))
                t.eq(p["scope"], "qprof", "instrumentation scope qprof")
                for s in p["samples"]:
                    a = s["attrs"]
                    if p["type"] == "samples" and a.get("thread.name") == "fl_worker":
                        leaf = next((f for f in s["frames"] if f in FUNCS), None)
                        if leaf:
                            counts[leaf] = counts.get(leaf, 0) + s["value"]
                        n_worker += s["value"]
                        if "work_three" in s["frames"]:
                            n3 += s["value"]
                            scoped3 += s["value"] * (a.get("qprof.scope") == "on_tick" and
                                                     a.get("qprof.scopes") == ["on_tick", "session"])
                        elif leaf == "work_one":
                            n1 += s["value"]
                            scoped1 += s["value"] * (a.get("qprof.scope") == "session")
                        ln = s["link"]
                        if leaf == "work_two":
                            n2 += s["value"]
                            ok = (ln is not None and ln[0] == bytes(16) and len(ln[1]) == 8 and
                                  int.from_bytes(ln[1], "big") >> 32 == 0x51ab0000 and
                                  a.get("qprof.span") == "order")
                            spanned2 += s["value"] * ok
                            if ok:
                                span_ids.add(int.from_bytes(ln[1], "big"))
                            elif len(bad_links) < 3:
                                bad_links.append((ln, a.get("qprof.span"), s["frames"][:4]))
                        elif leaf in ("work_one", "work_three"):
                            n_out += s["value"]
                            linked_out += s["value"] * (ln is not None or "qprof.span" in a)
                    if p["type"] == "off_cpu" and a.get("qprof.scope") == "wait_io":
                        off_wait += s["value"]
                        off_sleeper += s["value"] * (a.get("thread.name") == "fl_sleeper")
                        ln = s["link"]
                        if a.get("qprof.span") == "io":
                            io_ok = (ln is not None and ln[0] == bytes(16) and len(ln[1]) == 8 and
                                     int.from_bytes(ln[1], "big") >> 48 == 0x10b0)
                            off_io += s["value"] * io_ok
                            off_io_bad += s["value"] * (not io_ok)
                        elif ln is not None or "qprof.span" in a:
                            off_io_bad += s["value"]
    t.check(res_ok >= 3, f"resource attributes (service, host, exe, OTEL_RESOURCE_ATTRIBUTES) in {res_ok} pushes")
    t.check(("samples", "count") in types, f"a CPU profile samples/count: {types}")
    t.check(("off_cpu", "nanoseconds") in types, f"an off-CPU profile off_cpu/nanoseconds: {types}")
    total = sum(counts.values())
    t.check(total >= 300, f"worker samples in the three functions: {total} of {n_worker}")
    for f, want in zip(FUNCS, (1 / 6, 2 / 6, 3 / 6)):
        got = counts.get(f, 0) / total if total else 0
        t.check(abs(got - want) <= 0.03, f"OTLP {f} share {got:.3f}, want {want:.3f} +- 0.03")
    t.check(n3 and scoped3 >= 0.97 * n3, f"work_three samples with qprof.scope on_tick: {scoped3}/{n3}")
    t.check(n1 and scoped1 >= 0.97 * n1, f"work_one samples with qprof.scope session: {scoped1}/{n1}")
    # the span: every work_two sample carries its span's id, no other one any
    t.check(n2 >= 50 and spanned2 == n2,
            f"work_two samples linked to span order 0x51ab....: {spanned2}/{n2} (not: {bad_links})")
    t.check(len(span_ids) >= 10, f"distinct span ids seen: {len(span_ids)}")
    t.check(n_out >= 100 and linked_out == 0, f"work_one/work_three samples with a span: {linked_out}/{n_out}")
    t.check(off_wait > 0 and off_sleeper == off_wait, f"off-CPU ns in wait_io, all fl_sleeper's: {off_sleeper}/{off_wait}")
    # every other sleep in wait_io is inside span io: about half its time,
    # each linked to its span's id
    t.check(off_wait and off_io_bad == 0 and 0.35 <= off_io / off_wait <= 0.65,
            f"off-CPU ns in wait_io inside span io, linked: {off_io} of {off_wait} (wrong: {off_io_bad})")

    # a receiver that fails: qprofd answers, counts, retries, drops
    before = status()
    for mode in ("500", "429", "slow"):
        with rx.lock:
            rx.mode = mode
        time.sleep(3)
        st, _ = d.get("/api/status", timeout=20)
        t.eq(st, 200, f"qprofd answers while the receiver answers {mode}")
        st, _, body = d.request("GET", f"/api/cpu/folded?pid={prog.pid}", timeout=20)
        t.check(st == 200 and b"work_three" in body, f"profiles still built while the receiver answers {mode}")
    with rx.lock:
        got_modes = {b[0] for b in rx.bodies}
    t.check({"500", "429", "slow"} <= got_modes, f"the receiver saw pushes in each failing mode: {got_modes}")
    rx.down()
    time.sleep(4)
    mid = status()
    t.check(mid["failed_attempts"] > before["failed_attempts"], f"failed attempts counted: {mid['failed_attempts']}")
    t.check(mid["retries"] > before["retries"], f"retries counted: {mid['retries']}")
    t.check(mid["dropped"] > 0 and mid["dropped_samples"] > 0,
            f"drops counted: {mid['dropped']} pushes, {mid['dropped_samples']} samples")
    t.check(mid["last_error"], f"last_error says why: {mid['last_error']}")
    t.check(mid["queued"] <= mid["queue_max"], "the queue stays bounded")
    rx.up()
    with rx.lock:
        rx.mode = "ok"
    os.kill(prog.pid, signal.SIGSTOP)  # no new samples: the queue drains to nothing

    def drained():
        a = status()
        time.sleep(2.5)
        b = status()
        return b if (a["queued"] == 0 and b["queued"] == 0 and a["pushes"] == b["pushes"] and
                     a["built_samples"] == b["built_samples"]) else None

    end = wait_for(drained, timeout=60, step=0.5)
    t.check(end, "the queue drains once the receiver is back")
    if end:
        t.check(end["pushes"] > mid["pushes"], "pushes resume after the receiver is back")
        t.eq(end["pushed_samples"] + end["dropped_samples"], end["built_samples"],
             "every sample built was pushed or counted dropped")
        print(f"otlp: {end['builds']} builds, {end['built_samples']} samples, {end['pushes']} pushes, "
              f"{end['dropped']} dropped ({end['dropped_samples']} samples), {end['failed_attempts']} failures, "
              f"{end['retries']} retries, build CPU {end['build_cpu_us']} us", flush=True)
    # Retry-After: one push queued (the target runs 1.5 s), then throttled
    before = status()
    with rx.lock:
        rx.mode = "throttle"
    os.kill(prog.pid, signal.SIGCONT)
    time.sleep(1.5)
    os.kill(prog.pid, signal.SIGSTOP)

    def throttled_times():
        with rx.lock:
            ts = [at for m, at in rx.times if m == "throttle"]
        return ts if len(ts) >= 3 else None

    ts = wait_for(throttled_times, timeout=30, step=0.2)
    with rx.lock:
        rx.mode = "ok"
    t.check(ts, f"three tries answered 429 Retry-After: 3 ({ts})")
    if ts:
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        t.check(all(g >= 2.9 for g in gaps), f"tries after 429 Retry-After: 3 came {gaps} s apart (>= 3 s)")
    end2 = wait_for(lambda: (lambda s: s if s["queued"] == 0 and s["pushes"] > before["pushes"] else None)(status()),
                    timeout=30, step=0.5)
    t.check(end2, "the throttled push goes through once the receiver accepts it")
    if end2:
        t.check(end2["throttled"] - before["throttled"] >= 3, f"throttled answers counted: {end2['throttled']}")
        t.check(end2["retry_after_honoured"] - before["retry_after_honoured"] >= 2,
                f"Retry-After honoured: {end2['retry_after_honoured']}")
        t.eq(end2["last_retry_after_s"], 3, "last Retry-After")
        t.eq(end2["pushed_samples"] + end2["dropped_samples"], end2["built_samples"],
             "every sample built was pushed or counted dropped (after the throttling)")
    os.kill(prog.pid, signal.SIGCONT)
    with rx.lock:
        bodies = list(rx.bodies)
    bad = 0
    for _, _, _, body in bodies:
        rc, _, _ = protoc_decode(body)
        bad += rc != 0
    t.eq(bad, 0, f"every one of the {len(bodies)} bodies decodes")
finally:
    if prog.proc.poll() is None:
        os.kill(prog.pid, signal.SIGCONT)
    prog.finish()
    t.eq(d.stop(), 0, "qprofd stops cleanly")
sys.exit(t.done())
