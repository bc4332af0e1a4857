#!/usr/bin/env python3
"""Deploys under a running qprofd. A second build of the
target whose code sits 301 bytes further on replaces the first:

- in place (same inode, as `cp v2 app` does) and by rename (a new inode);
- for a process attached by --pid and for a --binary target, where the
  process of the new version starts right after the copy.

Probes left at the old version's offsets kill the new one (SIGSEGV/SIGBUS)
or count nothing; so every process must exit 0 and count exactly.

With --no-sys-admin, qprofd runs without CAP_SYS_ADMIN and
CAP_CHECKPOINT_RESTORE: no fanotify and no
/proc/PID/map_files, as a hardened service may run it. --binary then
attaches each process on its own once adopted ("mode": "per_process").

usage: test_deploy.py QPROFD SCOPE_TARGET QPROF_CLI SCOPE_TARGET_V2 [--no-sys-admin]"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, v1, cli, v2 = sys.argv[1:5]
no_sys_admin = "--no-sys-admin" in sys.argv[5:]
require_root()
t = Failures("integration_deploy" + ("_no_sys_admin" if no_sys_admin else ""))
ITERS = 100
WANT = 2 * ITERS * 3 + 2 * (ITERS // 10)  # outer, inner, span per iteration and thread; func every 10th
work = tempfile.mkdtemp(prefix="qprof-deploy-")
app = os.path.join(work, "app")


def copy_in_place(src):
    """cp SRC app: the same inode, new content."""
    ino = os.stat(app).st_ino
    with open(src, "rb") as f, open(app, "r+b") as g:
        g.truncate(0)
        g.write(f.read())
    t.eq(os.stat(app).st_ino, ino, "cp keeps the inode")


def rename_in(src):
    """install-style deploy: a new file renamed over the old name."""
    ino = os.stat(app).st_ino
    shutil.copyfile(src, app + ".new")
    os.chmod(app + ".new", 0o755)
    os.rename(app + ".new", app)
    t.check(os.stat(app).st_ino != ino, "rename gives a new inode")


def events(d, pid):
    st, body = d.get(f"/api/scopes?pid={pid}")
    if st != 200:
        return None
    return sum(r["count"] for r in body["scopes"])


# Drops the kernel refuses under load (a busy map bucket or task storage,
# being fixed apart) are counted: counted + those drops must be exact.
RACE = ("map_full", "stack_unavailable")


def drops(d):
    return d.get("/api/status")[1]["scopes"]["dropped_by_reason"]


NOP5 = b"\x0f\x1f\x44\x00\x00"


def text_changes(pid):
    """Bytes of PID's executable mappings that differ from the file it mapped
    (read through /proc/PID/map_files: the very inode, even when replaced),
    outside the nop5 probe sites, where uprobes write: [(file offset, file
    byte, memory byte)]. A probe at a wrong offset shows here."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read().splitlines()
    for line in maps:
        parts = line.split()
        if len(parts) < 6 or "x" not in parts[1] or not parts[5].startswith(work):
            continue
        a, b = (int(x, 16) for x in parts[0].split("-"))
        off = int(parts[2], 16)
        with open(f"/proc/{pid}/map_files/{parts[0]}", "rb") as f:
            f.seek(off)
            fil = f.read(b - a)
        with open(f"/proc/{pid}/mem", "rb") as m:
            m.seek(a)
            mem = m.read(len(fil))
        sites = set()
        i = fil.find(NOP5)
        while i >= 0:
            sites.update(range(i, i + 5))
            i = fil.find(NOP5, i + 1)
        out += [(off + i, fil[i], mem[i]) for i in range(len(mem)) if mem[i] != fil[i] and i not in sites]
    return out


def run(d, p, what):
    """Let P work, check its own figures, its count and that it exits 0."""
    before = drops(d)
    p.start()
    fig = p.result()
    after = drops(d)
    lost = sum(after[k] - before[k] for k in RACE)
    t.eq(fig["outer_n"], 2 * ITERS, f"{what}: the program ran")
    t.eq(fig["func_n"], 2 * (ITERS // 10), f"{what}: the program's own count of slow_function")
    t.eq(text_changes(p.pid)[:20], [], f"{what}: the code it runs is its file's, but for the probe sites")
    got = events(d, p.pid)
    if not t.eq(got + lost, WANT, f"{what}: events counted (+ {lost} counted drops)"):
        # what was counted where, and every drop: the figures to find an excess by
        st, body = d.get(f"/api/scopes?pid={p.pid}")
        print(f"{what}: rows {[(r['name'], r['parent'], r['count']) for r in body.get('scopes', [])]}", flush=True)
        print(f"{what}: program {fig}; drops {after}", flush=True)
    t.eq({k: after[k] - before[k] for k in after if k not in RACE},
         {k: 0 for k in after if k not in RACE}, f"{what}: no other drop")
    t.eq(p.finish(), 0, f"{what}: exit code")


def adopted(d, pid):
    return pid in [x["pid"] for x in d.get("/api/status")[1]["targets"]]


shutil.copyfile(v1, app)
os.chmod(app, 0o755)
if no_sys_admin:
    wrapper = os.path.join(work, "qprofd-no-sys-admin")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec setpriv --inh-caps=-sys_admin,-checkpoint_restore --bounding-set=-sys_admin,-checkpoint_restore {qprofd} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    qprofd = wrapper
MODE = "per_process" if no_sys_admin else "every_process"

# --pid: the daemon has parsed v1; the same inode then holds v2
d = Daemon(qprofd, ["--collector", "bpf"])
try:
    for how, deploy in (("in place", copy_in_place), ("rename", rename_in)):
        p = Target([app, "--iters", str(ITERS)])
        st, _ = d.post("/api/targets", {"pid": p.pid})
        t.eq(st, 201, f"--pid, before the {how} deploy: attach")
        run(d, p, f"--pid v1 ({how})")
        deploy(v2)
        p = Target([app, "--iters", str(ITERS)])
        st, body = d.post("/api/targets", {"pid": p.pid})
        t.eq(st, 201, f"--pid, after the {how} deploy: attach ({body})")
        run(d, p, f"--pid v2 after the {how} deploy")
        deploy(v1)  # back for the next round
    # a process whose file was renamed over while it ran: it maps "app (deleted)"
    p = Target([app, "--iters", str(ITERS)])
    rename_in(v2)
    st, body = d.post("/api/targets", {"pid": p.pid})
    if no_sys_admin:  # no map_files: the old inode cannot be opened, so it is refused and said so
        t.eq(st, 422, f"--pid on a deleted executable without map_files: {body}")
        t.check("1 mapped file(s) could not be opened" in body.get("error", ""), "the reason given")
        p.kill()
    else:
        t.eq(st, 201, f"--pid on a deleted executable, through map_files: {body}")
        t.eq(body.get("files_unopened"), 0, "every mapping opened")
        run(d, p, "--pid on the old version after a rename")
    deploy_back = rename_in
    deploy_back(v1)
    t.check(d.proc.poll() is None, "qprofd alive")
finally:
    t.eq(d.stop(), 0, "qprofd exits 0")

# --binary: v1 runs, the file is replaced, v2 starts at once
for how, deploy in (("in place", copy_in_place), ("rename", rename_in)):
    d = Daemon(qprofd, ["--collector", "bpf", "--binary", app])
    old = None
    try:
        p = Target([app, "--iters", str(ITERS)])
        t.check(wait_for(lambda: adopted(d, p.pid), timeout=10), f"--binary {how}: v1 adopted")
        run(d, p, f"--binary v1 ({how})")
        if how == "rename":  # a v1 process that keeps running across the deploy
            old = Target([app, "--iters", str(ITERS)])
            t.check(wait_for(lambda: adopted(d, old.pid), timeout=10), "old version adopted")
        deploy(v2)
        p = Target([app, "--iters", str(ITERS)])  # right after the copy: no grace time

        def settled():
            b = d.get("/api/status")[1]["binaries"][0]
            return b if adopted(d, p.pid) and b["versions_replaced"] == 1 and b["state"] == "attached" else None

        b = wait_for(settled, timeout=15)
        t.check(b is not None, f"--binary {how}: new version attached and its process adopted: "
                f"{d.get('/api/status')[1]['binaries']}")
        if b:
            t.eq(b["mode"], MODE, "binary mode")
            t.eq(b["old_versions_running"], 1 if how == "rename" else 0, f"--binary {how}: old versions kept")
        run(d, p, f"--binary v2 after the {how} deploy")
        if old:
            run(d, old, "--binary v1 still running across the rename")
        t.check(d.proc.poll() is None, "qprofd alive")
    finally:
        p.kill()
        if old:
            old.kill()
        t.eq(d.stop(), 0, "qprofd exits 0")
    deploy(v1)

# a process of v1 whose file was replaced before qprofd came: attached to its
# own (deleted) inode through map_files, or refused and counted without it
p = Target([app, "--iters", str(ITERS)])
rename_in(v2)
d = Daemon(qprofd, ["--collector", "bpf", "--binary", app])
try:
    b = d.get("/api/status")[1]["binaries"][0]
    if no_sys_admin:
        t.eq((adopted(d, p.pid), b["processes_refused"]), (False, 1),
             "--binary: an earlier version without map_files is refused and counted")
    else:
        t.check(adopted(d, p.pid), f"--binary: a process of an earlier version is adopted: {b}")
        t.eq(b["old_versions_running"], 1, "its version kept")
        run(d, p, "--binary, a version replaced before attach")
    t.check(d.proc.poll() is None, "qprofd alive")
finally:
    p.kill()
    t.eq(d.stop(), 0, "qprofd exits 0")

shutil.rmtree(work, ignore_errors=True)
sys.exit(t.done())
