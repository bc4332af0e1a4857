#!/usr/bin/env python3
"""The report directory against planted symlinks: qprofd
refuses a report directory that is a symlink, owned by someone else, or
writable by group or others; it never follows a symlink planted inside it,
neither when it writes a report nor when GET /api/report reads one, and reads
only regular files with one name. Victim files stay unchanged and no secret
reaches an answer.

usage: test_report_fs.py QPROFD SCOPE_TARGET QPROF_CLI"""
import grp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, target_bin, cli = sys.argv[1:4]
require_root()
t = Failures("integration_report_fs")
top = tempfile.mkdtemp(prefix="qprof-reportfs-")
SECRET = "secret-7f3a91c2-do-not-leak\n"


def mk(path, mode=0o700, uid=0):
    os.makedirs(path)
    os.chown(path, uid, 0)
    os.chmod(path, mode)
    return path


def start_refused(report_dir, want, what):
    """qprofd must exit 2 at once, saying WANT, and write nothing."""
    sock = os.path.join(top, "refused.sock")
    try:
        p = subprocess.run([qprofd, "--socket", sock, "--report-dir", report_dir],
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        t.check(False, f"{what}: qprofd exits at once (it is still running after 30 s)")
        return
    t.eq(p.returncode, 2, f"{what}: qprofd refuses to start (exit 2)")
    t.check(want in p.stderr and "report directory" in p.stderr,
            f"{what}: the message says {want!r}: {p.stderr.strip()!r}")
    t.check(not os.path.exists(sock), f"{what}: no socket left")


try:
    victim = mk(os.path.join(top, "victim"))          # root's, empty: must stay so
    secret = os.path.join(top, "secret.txt")
    with open(secret, "w") as f:
        f.write(SECRET)
    os.chmod(secret, 0o600)

    # ---- the report directory itself -------------------------------------
    link = os.path.join(top, "link")
    os.symlink(victim, link)
    start_refused(link, "symlink", "report dir is a symlink")
    start_refused(link + "/", "symlink", "report dir is a symlink, given with a trailing /")
    start_refused(link + "//", "symlink", "report dir is a symlink, given with two trailing /")
    start_refused(mk(os.path.join(top, "world"), 0o777), "writable by others", "mode 0777")
    start_refused(mk(os.path.join(top, "sticky"), 0o1777), "writable by others", "mode 1777 (as /tmp)")
    start_refused(mk(os.path.join(top, "groupw"), 0o770), "writable by its group", "mode 0770")
    start_refused(mk(os.path.join(top, "nobody"), 0o700, uid=65534), "owned by uid 65534",
                  "owned by nobody")
    start_refused(secret, "not a directory", "a regular file")
    t.eq(os.listdir(victim), [], "nothing written into the symlink's target")

    # ---- a missing one is created, private ---------------------------------
    rdir = os.path.join(top, "new", "reports")
    try:
        qprof_gid = grp.getgrnam("qprof").gr_gid
    except KeyError:
        qprof_gid = None
    prog = Target([target_bin, "--mode", "nested", "--iters", "20"])
    # the report directory name the write will use: PID-COMM-STAMP, stamp of
    # the exit second in local time. Plant a symlink for every second of the
    # next two minutes, each to the victim directory.
    now = int(time.time())
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), "--report-dir", rdir])
    st = os.stat(rdir)
    want_mode = 0o750 if qprof_gid is not None else 0o700
    t.eq((st.st_uid, st.st_mode & 0o7777), (0, want_mode), "a missing report dir is created root-owned, "
         f"{want_mode:04o}")
    if qprof_gid is not None:
        t.eq(st.st_gid, qprof_gid, "group qprof")
    planted = 0
    for s in range(now - 2, now + 120):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(s))
        os.symlink(victim, os.path.join(rdir, f"{prog.pid}-scope_target-{stamp}"))
        planted += 1

    # ---- writing: a planted name is never written through ------------------
    prog.start()
    prog.result()
    t.eq(prog.finish(), 0, "program exit code")
    logged = wait_for(lambda: "written to" in d.logtext(), timeout=20)
    t.check(logged, "the report is written (elsewhere)")
    t.check(f"report of pid {prog.pid}: " in d.logtext() and "exists already: not written into" in d.logtext(),
            "the planted name is not written into, and that is logged")
    t.eq(os.listdir(victim), [], "no report file written into the symlink's target")
    st_, _, body = d.request("GET", f"/api/report?pid={prog.pid}")
    t.eq(st_, 200, "the report is served from its own directory")
    t.check(b"scope_target" in body, "the served report is the program's summary")
    mine = [n for n in os.listdir(rdir) if not os.path.islink(os.path.join(rdir, n))]
    t.eq(len(mine), 1, f"one real directory beside the planted names: {mine}")
    t.check(mine and "~" in mine[0], f"under PID-COMM~N-STAMP: {mine}")
    t.eq(len(os.listdir(rdir)), planted + 1, "the planted names and the report")

    # ---- a report where nothing is planted: written, private ---------------
    prog2 = Target([target_bin, "--mode", "nested", "--iters", "20"])
    st_, _ = d.post("/api/targets", {"pid": prog2.pid})
    t.eq(st_, 201, "attach a second program")
    prog2.start()
    prog2.result()
    t.eq(prog2.finish(), 0, "second program exit code")
    got = wait_for(lambda: d.request("GET", f"/api/report?pid={prog2.pid}")[0] == 200, timeout=20)
    t.check(got, "the second program's report is written and served")
    subs = [n for n in os.listdir(rdir) if n.startswith(f"{prog2.pid}-")]
    t.eq(len(subs), 1, "one report directory for it")
    if subs:
        sub = os.path.join(rdir, subs[0])
        dmode, fmode = (0o750, 0o640) if qprof_gid is not None else (0o700, 0o600)
        t.eq(os.lstat(sub).st_mode & 0o7777, dmode, f"its directory is {dmode:04o}")
        files = sorted(os.listdir(sub))
        t.eq(files, ["cpu.folded", "cpu.svg", "report.json", "scopes.json", "summary.txt"], "its files")
        t.eq({f: os.lstat(os.path.join(sub, f)).st_mode & 0o7777 for f in files},
             {f: fmode for f in files}, f"its files are {fmode:04o}")

    # ---- reading: only regular files, never through a symlink --------------
    stamp = "20990101T000000"

    def plant(pid, kind):
        sub = os.path.join(rdir, f"{pid}-evil-{stamp}")
        if kind == "dirlink":        # the report directory a symlink to a dir of the test
            other = mk(os.path.join(top, f"other{pid}"))
            with open(os.path.join(other, "summary.txt"), "w") as f:
                f.write(SECRET)
            os.symlink(other, sub)
            return
        os.mkdir(sub, 0o700)
        path = os.path.join(sub, "summary.txt")
        if kind == "filelink":       # summary.txt a symlink to the secret
            os.symlink(secret, path)
            os.symlink("/etc/shadow", os.path.join(sub, "report.json"))
        elif kind == "fifo":         # must not hang the route
            os.mkfifo(path)
        elif kind == "hardlink":     # a second name of the secret
            os.link(secret, path)
        elif kind == "real":
            with open(path, "w") as f:
                f.write("the real summary\n")

    cases = {991001: "dirlink", 991002: "filelink", 991003: "fifo", 991004: "hardlink"}
    for pid, kind in cases.items():
        plant(pid, kind)
    plant(991005, "real")
    with open("/etc/shadow") as f:
        shadow = f.read()
    for pid, kind in cases.items():
        for fmt in ("text", "json"):
            t0 = time.monotonic()
            try:
                st_, _, body = d.request("GET", f"/api/report?pid={pid}&format={fmt}", timeout=15)
            except OSError as e:
                t.check(False, f"{kind} ({fmt}): the route answers within 15 s: {e}")
                continue
            t.eq(st_, 404, f"{kind} ({fmt}): 404")
            text = body.decode(errors="replace")
            t.check(SECRET.strip() not in text, f"{kind} ({fmt}): no secret in the answer")
            t.check(not shadow or shadow[:40] not in text, f"{kind} ({fmt}): no /etc/shadow in the answer")
            t.check("error" in json.loads(body), f"{kind} ({fmt}): a JSON error: {text!r}")
            t.check(time.monotonic() - t0 < 15, f"{kind} ({fmt}): no hang")
    st_, _, body = d.request("GET", "/api/report?pid=991005")
    t.eq((st_, body), (200, b"the real summary\n"), "a real report is read (the route works)")
    with open(secret) as f:
        t.eq(f.read(), SECRET, "the secret file is unchanged")
    t.eq(os.listdir(victim), [], "the victim directory is still empty")
    t.eq(d.stop(), 0, "qprofd exits 0 on SIGTERM")
    if t.failed:
        print(d.logtext(), file=sys.stderr)
finally:
    shutil.rmtree(top, ignore_errors=True)
sys.exit(t.done())
