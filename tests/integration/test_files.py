#!/usr/bin/env python3
"""What a client may name as a --binary, and what a bad file gets:

- a FIFO, /dev/zero, a directory: 400 at once (nothing is opened for
  reading), while GET /api/status keeps answering;
- pid 1 and 150 deterministically mutated copies of the test program's
  USDT notes: never a 500, the daemon alive; a mutated copy that attaches
  still runs to exit code 0 under its probes;
- an unprivileged client (uid 65534 on the socket) gets one 404 text for a
  missing file, an unreadable one and an ELF no process maps, and may name
  an executable some process runs.

usage: test_files.py QPROFD SCOPE_TARGET QPROF_CLI SCOPE_TARGET_V2"""
import json
import os
import random
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_files")
work = tempfile.mkdtemp(prefix="qprof-files-")


def note_section(path):
    """(offset, size) of .note.stapsdt in an ELF64 little-endian file."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    def sh(i):
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        name, _, _, _, off, size = sh(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == b".note.stapsdt":
            return data, off, size
    raise RuntimeError("no .note.stapsdt")


def as_nobody(d, method, path, body=None):
    """One request from uid 65534 over the unix socket: (status, body)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(d.sock)
            data = json.dumps(body).encode() if body is not None else b""
            s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
            os.write(w, out)
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    head, _, rest = out.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    try:
        return status, json.loads(rest)
    except ValueError:
        return status, rest


d = Daemon(qprofd, ["--collector", "bpf"])
try:
    # non-regular files: refused before any read, the daemon keeps answering
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    for what, path in (("FIFO", fifo), ("/dev/zero", "/dev/zero"), ("directory", work)):
        results = []
        th = threading.Thread(target=lambda: results.append(d.post("/api/targets", {"binary": path})))
        th.start()
        st, _ = d.get("/api/status", timeout=10)  # generous bound: a hung daemon never answers
        t.eq(st, 200, f"status answers while a {what} is posted")
        th.join(timeout=20)
        t.check(not th.is_alive(), f"POST of a {what} returns")
        if results:
            t.eq(results[0][0], 400, f"{what}: {results[0][1]}")
    big = os.path.join(work, "big")
    with open(big, "wb") as f:
        f.truncate((2 << 30) + 1)  # sparse: 2 GiB + 1 byte
    st, body = d.post("/api/targets", {"binary": big})
    t.eq(st, 413, f"a file over 2 GiB: {body}")
    os.unlink(big)

    st, body = d.post("/api/targets", {"pid": 1})
    t.check(400 <= st < 500, f"pid 1 gets a 4xx: {st} {body}")

    # 150 seeded mutations of the notes: 4xx or 201, never 500
    data, off, size = note_section(target_bin)
    codes = {}
    ran = 0
    for seed in range(150):
        rnd = random.Random(seed)
        m = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            m[off + rnd.randrange(size)] = rnd.randrange(256)
        path = os.path.join(work, f"mut{seed}")
        with open(path, "wb") as f:
            f.write(m)
        os.chmod(path, 0o755)
        st, body = d.post("/api/targets", {"binary": path})
        codes[st] = codes.get(st, 0) + 1
        t.check(st != 500 and (st == 201 or 400 <= st < 500), f"mutation {seed}: {st} {body}")
        if st == 201:
            if ran < 20:  # under its own probes, a mutated copy still runs cleanly
                p = Target([path, "--iters", "5"])
                p.start()
                p.result()
                t.eq(p.finish(), 0, f"mutation {seed} runs attached: exit code")
                ran += 1
            st, _ = d.request("DELETE", "/api/targets?binary=" + path)[:2]
            t.eq(st, 200, f"mutation {seed} detached")
        os.unlink(path)
    print(f"mutations: {sorted(codes.items())}, {ran} run attached", flush=True)
    t.check(d.proc.poll() is None, "qprofd alive after the mutations")

    # an unprivileged client: one answer for missing, unreadable and unmapped
    os.chmod(d.sock, 0o666)
    os.chmod(d.dir, 0o755)
    copy = os.path.join(work, "unmapped")
    shutil.copyfile(target_bin, copy)
    os.chmod(work, 0o755)
    texts = set()
    for what, path in (("missing", "/no/such/file"), ("unreadable", "/etc/shadow"), ("unmapped ELF", copy)):
        st, body = as_nobody(d, "POST", "/api/targets", {"binary": path})
        t.eq(st, 404, f"unprivileged, {what}: {body}")
        texts.add(body.get("error", "").replace(path, "PATH") if isinstance(body, dict) else str(body))
    t.eq(len(texts), 1, f"one text for all three: {texts}")
    runner = Target([target_bin, "--iters", "5"])
    st, body = as_nobody(d, "POST", "/api/targets", {"binary": os.path.realpath(target_bin)})
    t.eq(st, 201, f"unprivileged, an executable a process runs: {body}")
    runner.start()
    runner.result()
    t.eq(runner.finish(), 0, "its process exits 0")
    t.check(d.proc.poll() is None, "qprofd alive")
finally:
    t.eq(d.stop(), 0, "qprofd exits 0")
    shutil.rmtree(work, ignore_errors=True)
sys.exit(t.done())
