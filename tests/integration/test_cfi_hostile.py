#!/usr/bin/env python3
"""Hostile CFI in a file a target maps, at run time: the test writes four
copies of cfi_hostile_lib.so, three with their .eh_frame rewritten --
truncated (the section ends inside its CIE), cyclic (every FDE's CIE
pointer points at the FDE itself), hostile rules (every FDE's program says
CFA = rbx + 8, a rule the tables do not hold) and a loop (CFA = rsp: the
return address below the stack pointer, a caller whose sp does not rise)
-- and one left alone (each hostile copy with a build-id of its own: a
table is shared by build-id). cfi_hostile_host loads the five and spins in each while qprofd
samples it with the walk in the kernel (--unwind dwarf). Checked: the
truncated and the cyclic files are refused (tables.refused), samples in
them are counted as walks that found no table and samples in the rules'
file as walks that fell back, in the loop's file as walks ended by the
loop check (sp did not rise); samples keep coming (the leaf is the spin
function, each library's share there); the clean copy's samples have the
host's frames beneath (main -> spin_round -> hostile_spin); qprofd logs no
BPF or verifier error, answers to the end and exits 0.

About 10 s. usage: test_cfi_hostile.py QPROFD HOST LIB"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, _started, require_root  # noqa: E402

qprofd, host, lib = sys.argv[1:4]
require_root()
t = Failures("integration_cfi_hostile")
ROUNDS = 3


def section(data, want):
    """(offset, size, the section header's offset) of section WANT in an ELF64 LE image."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)

    def sh(i):
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        name, _, _, _, off, size = sh(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == want:
            return off, size, shoff + i * shentsize
    raise SystemExit(f"no {want}")


def records(data, off, size):
    """(start, length, is_cie) of each record of the section."""
    p, out = off, []
    while p + 8 <= off + size:
        length, cid = struct.unpack_from("<II", data, p)
        if length == 0:
            break
        out.append((p, length, cid == 0))
        p += 4 + length
    return out


def rewrite(kind, k):
    data = bytearray(open(lib, "rb").read())
    # a build-id of its own: tables are shared by build-id, and these
    # copies are not the same file
    noff, nsize, _ = section(data, b".note.gnu.build-id")
    data[noff + nsize - 1] ^= k + 1
    off, size, hdr = section(data, b".eh_frame")
    recs = records(data, off, size)
    fdes = [r for r in recs if not r[2]]
    if kind == "truncated":
        struct.pack_into("<Q", data, hdr + 0x20, 12)  # sh_size: inside the CIE
    elif kind == "cyclic":
        for start, _, _ in fdes:
            struct.pack_into("<I", data, start + 4, 4)  # the CIE pointer: this very record
    elif kind in ("rules", "loop"):
        for start, length, _ in fdes:
            # after the length, CIE pointer, pc begin and range (4 bytes
            # each, zR's sdata4) and the empty augmentation data
            ins, end = start + 17, start + 4 + length
            prog = b"\x0c\x03\x08" if kind == "rules" else b"\x0e\x00"  # def_cfa rbx+8 / def_cfa_offset 0
            data[ins:end] = prog + b"\0" * (end - ins - len(prog))
    return bytes(data)


def named(frame, name):
    return frame == name or frame.startswith(name + "(")


tmp = tempfile.mkdtemp(prefix="qp-cfi-hostile-")
paths = []
for k, kind in enumerate(("truncated", "cyclic", "rules", "loop", "clean")):
    p = os.path.join(tmp, f"libhostile_{kind}.so")
    with open(p, "wb") as f:
        f.write(rewrite(kind, k) if kind != "clean" else open(lib, "rb").read())
    paths.append(p)
d = Daemon(qprofd, ["--collector", "bpf", "--frequency", "499"])
prog = None
try:
    st, status = d.get("/api/status")
    if not status["cpu"]["running"]:
        print("SKIP: CPU sampling unavailable here", flush=True)
        sys.exit(77)
    t.eq(status["cpu"]["unwind"]["kernel"]["running"], True, "the kernel walks (--unwind dwarf, the default)")
    refused0 = status["cpu"]["unwind"]["kernel"]["tables"]["refused"]
    prog = subprocess.Popen([host] + paths, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    _started.append(prog)
    pid = json.loads(prog.stdout.readline())["pid"]
    st, body = d.post("/api/targets", {"pid": pid})
    t.eq(st, 201, f"attached: {body}")
    deadline = time.time() + 60
    while time.time() < deadline:
        st, status = d.get("/api/status")
        if status["cpu"]["unwind"]["kernel"]["tables"]["processes"] >= 1:
            break
        time.sleep(0.1)
    for _ in range(ROUNDS):
        prog.stdin.write("spin\n")
        prog.stdin.flush()
        t.eq(prog.stdout.readline().strip(), "ok", "a round of spins")
    st, _, body = d.request("GET", f"/api/cpu/folded?pid={pid}", timeout=120)
    t.eq(st, 200, "CPU folded answers")
    lines = [x for x in body.decode().splitlines() if x.strip()]
    total = spin = through = 0
    for line in lines:
        stack, _, n = line.rpartition(" ")
        frames, n = stack.split(";"), int(n)
        total += n
        if named(frames[-1], "hostile_spin") or (len(frames) > 1 and named(frames[-2], "hostile_spin")):
            spin += n
        try:
            a = next(i for i, f in enumerate(frames) if named(f, "main"))
            b = next(i for i, f in enumerate(frames) if named(f, "spin_round"))
            c = next(i for i, f in enumerate(frames) if named(f, "hostile_spin"))
            if a < b < c:
                through += n
        except StopIteration:
            pass
    print(f"samples {total}, in hostile_spin {spin}, under main -> spin_round -> hostile_spin {through}", flush=True)
    t.check(total >= 200, f"samples kept coming ({total})")
    t.check(spin >= 0.8 * total, f"the spin function is the leaf of most ({spin}/{total})")
    t.check(through >= 0.1 * total, f"the clean copy's samples have the host's frames ({through}/{total})")
    st, status = d.get("/api/status")
    t.eq(st, 200, "status answers after the hostile files")
    k = status["cpu"]["unwind"]["kernel"]
    print(f"walks: {k['ends']}; tables: {k['tables']}", flush=True)
    t.check(k["tables"]["refused"] - refused0 >= 2,
            f"the truncated and the cyclic files refused ({k['tables']['refused'] - refused0})")
    t.check(k["ends"]["no_table"] >= 10, f"samples in refused files: walks that found no table ({k['ends']})")
    t.check(k["ends"]["fallback"] >= 10, f"samples under the hostile rules: walks that fell back ({k['ends']})")
    t.check(k["ends"]["loop"] >= 10, f"samples under the loop's rule: walks ended as a loop ({k['ends']})")
    prog.stdin.close()
    prog.wait(timeout=30)
finally:
    if prog is not None and prog.poll() is None:
        prog.kill()
        prog.wait()
    code = d.stop()
    t.eq(code, 0, "qprofd exits 0 on SIGTERM")
    log = d.logtext()
    bad = [x for x in log.splitlines() if "verifier" in x.lower() or "libbpf:" in x]
    t.check(not bad, f"no BPF or verifier error logged: {bad[:3]}")
    if t.failed:
        print(log[-3000:], file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(t.done())
