#!/usr/bin/env python3
"""Fork and exec of targets.

Fork: kernel 6.18 turns a hit uprobe on a nop5 into a call to a per-mm
trampoline that fork does not copy; without qprofd's repair every child that
runs a marked site dies of SIGSEGV (reproduced: 20 of 20 children, status 11).
Here 200 children of a --pid target and 50 of a --binary target must all exit
0, the --binary children counted exactly. vfork children share the mm and are
left alone.

Exec: a target that runs "before_exec" N times then execs itself and runs
"after_exec" M times: the report of the first image says N, the live data of
the second says M, names resolved, state running with a fresh attach time.

usage: test_lifecycle.py QPROFD SCOPE_TARGET QPROF_CLI LIFECYCLE_TARGET [all|fork|exec [QPROFD_ARG...]]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qptest import Daemon, Failures, Target, require_root, wait_for  # noqa: E402

qprofd, _, cli, lt = sys.argv[1:5]
lt = os.path.realpath(lt)
def exec_unmarked(n):
    """exec of a program without markers: the old image is reported, the
    process runs on, no longer a target."""
    prog = Target([lt, "--mode", "exec_sleep", "-n", str(n)])
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), *extra])
    try:
        prog.start()
        t.eq(prog.result(), {"before_exec": n}, "first image ran")

        def reported():
            s, r = d.get(f"/api/report?pid={prog.pid}&format=json")
            return r if s == 200 else None

        rep = wait_for(reported, timeout=10)
        t.check(rep is not None, "exec of an unmarked program: a report of the first image")
        if rep:
            dropped = d.get("/api/status")[1]["scopes"]["dropped_by_reason"]["map_full"]
            got = [(r["name"], r["count"]) for r in rep["scopes"]["by_total"]]
            t.eq(got[0][0] if got else None, "before_exec", "the report names the first image's scope")
            t.eq(sum(c for _, c in got) + dropped, n, "the report counts the first image's scopes")
        st = d.get("/api/status")[1]
        t.eq([x["pid"] for x in st["targets"] if x["state"] == "running"], [],
             "the process running an unmarked program is no target")
        t.eq(prog.proc.poll(), None, "the process runs on (resumed after its exec)")
        with open(f"/proc/{prog.pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        t.check(state in ("S", "R"), f"not left stopped: state {state}")
    finally:
        prog.kill()
        t.eq(d.stop(), 0, "qprofd exits 0")


only = sys.argv[5] if len(sys.argv) > 5 else "all"  # one half, e.g. against another qprofd
extra = sys.argv[6:]  # more qprofd arguments
require_root()
t = Failures("integration_lifecycle")


def lifecycle(d):
    return d.get("/api/status")[1].get("lifecycle") or {}  # absent in a qprofd without it


def counts_by_pid(d, name):
    st, body = d.get("/api/scopes")
    c = {}
    for r in body["scopes"]:
        if r["name"] == name:
            c[r["pid"]] = c.get(r["pid"], 0) + r["count"]
    return c


def fork_pid(mode, n, m):
    prog = Target([lt, "--mode", mode, "-n", str(n), "-m", str(m)])
    d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), *extra])
    try:
        prog.start()
        res = prog.result()
        t.eq(res["exit_0"], n, f"{mode}, --pid: children that exited 0 (first failure status "
             f"{res['first_failed_status']})")
        lc = lifecycle(d)
        print(f"{mode} --pid: {lc}", flush=True)
        if mode == "fork":
            t.eq(lc.get("forks"), n, "forks seen")
            t.eq(lc.get("children_stopped"), n, "children stopped (the parent's sites were optimized)")
            t.eq(lc.get("children_resumed"), n, "children resumed")
            t.eq(lc.get("sites_restored_nop"), 2 * n, "two optimized sites restored to nop5 per child")
            t.eq(lc.get("sites_restored_int3"), 0, "no int3: the children of a --pid target are no targets")
        elif mode == "grandchild":
            # each child's own sites get optimized in its own mm: its fork is
            # protected too (the children of watched processes are watched)
            t.eq(lc.get("forks"), 2 * n, "forks seen: children and grandchildren")
            # with uprobe-multi links the kernel optimizes the child's hits though
            # the link filters them out; a perf-event uprobe removes its int3
            # from a process it filters out, so nothing gets optimized there
            want = n if "--no-uprobe-multi" in extra else 2 * n
            t.eq(lc.get("children_stopped"), want, "children (and grandchildren) stopped")
            t.eq(lc.get("children_resumed"), lc.get("children_stopped"), "every stopped one resumed")
        else:
            t.eq(lc.get("shared_mm_children"), n, "vfork children share the mm: seen")
            t.eq(lc.get("children_stopped"), 0, "vfork children never stopped")
        t.eq(lc.get("site_rewrites_failed"), 0, "no failed rewrite")
        t.eq(lc.get("stop_failed"), 0, "no failed SIGSTOP")
        t.eq(counts_by_pid(d, "work"), {prog.pid: 1000}, "only the target's own 1000 scopes")
    finally:
        prog.finish()
        t.eq(d.stop(), 0, "qprofd exits 0")


def fork_binary(n, m):
    d = Daemon(qprofd, ["--collector", "bpf", "--binary", lt, *extra])
    prog = Target([lt, "--mode", "fork", "-n", str(n), "-m", str(m)])
    try:
        ok = wait_for(lambda: prog.pid in [x["pid"] for x in d.get("/api/status")[1]["targets"]], timeout=10)
        t.check(ok, "the forking program is a target of its binary")
        prog.start()
        res = prog.result()
        t.eq(res["exit_0"], n, f"fork, --binary: children that exited 0 (first failure status "
             f"{res['first_failed_status']})")
        lc = lifecycle(d)
        print(f"fork --binary: {lc}", flush=True)
        t.eq(lc.get("children_stopped"), n, "children stopped")
        t.eq(lc.get("sites_restored_int3"), 2 * n, "two optimized sites per child: int3 (still probed)")
        t.eq(lc.get("site_rewrites_failed"), 0, "no failed rewrite")

        def all_in():
            st = d.get("/api/status")[1]
            kids = [x for x in st["targets"] if x["pid"] != prog.pid]
            return kids if len(kids) == n else None

        kids = wait_for(all_in, timeout=20)
        t.check(kids is not None, "every child became a target of the binary")
        if kids:
            t.eq({x["attached_by"] for x in kids}, {"binary"}, "children attached by binary")
        c = counts_by_pid(d, "work")
        st = d.get("/api/status")[1]["scopes"]
        lost = st["dropped"]
        print(f"fork --binary: {len(c)} pids counted, {sum(c.values())} scopes, "
              f"dropped {st['dropped_by_reason']}", flush=True)
        t.eq(len(c), n + 1, "scopes of the parent and of every child")
        t.check(all(v <= 1000 for v in c.values()), "no process counted more than it ran")
        # every scope run is counted, or counted as dropped (the kernel's
        # per-CPU allocator can refuse a new aggregate in a burst of new processes)
        t.eq(sum(c.values()) + lost, 1000 * (n + 1), "scopes counted + dropped = scopes run")
    finally:
        prog.finish()
        t.eq(d.stop(), 0, "qprofd exits 0")


def fork_binary_lib(n, m):
    """--binary on a library: the process that maps it is adopted by the
    /proc rescan only, so it forks before it is a target. The BPF side finds
    the library among its mappings and protects the children all the same."""
    lib = os.path.realpath(os.environ["QPROF_TEST_LIFECYCLE_LIB"])
    d = Daemon(qprofd, ["--collector", "bpf", "--binary", lib, *extra])
    prog = Target([lt, "--mode", "libfork", "-n", str(n), "-m", str(m)])
    try:
        prog.start()
        res = prog.result()
        t.eq(res["exit_0"], n, f"fork, --binary library: children that exited 0 (first failure status "
             f"{res['first_failed_status']})")
        lc = lifecycle(d)
        print(f"fork --binary library: {lc}", flush=True)
        t.eq(lc.get("children_stopped"), n, "children stopped")
        t.eq(lc.get("sites_restored_int3"), 2 * n, "two optimized library sites per child: int3")
        t.eq(lc.get("site_rewrites_failed"), 0, "no failed rewrite")
    finally:
        prog.finish()
        t.eq(d.stop(), 0, "qprofd exits 0")


def exec_case(by_binary, n, m):
    what = "--binary" if by_binary else "--pid"
    if by_binary:
        d = Daemon(qprofd, ["--collector", "bpf", "--binary", lt, *extra])
        prog = Target([lt, "--mode", "exec", "-n", str(n), "-m", str(m)])
        wait_for(lambda: prog.pid in [x["pid"] for x in d.get("/api/status")[1]["targets"]], timeout=10)
    else:
        prog = Target([lt, "--mode", "exec", "-n", str(n), "-m", str(m)])
        d = Daemon(qprofd, ["--collector", "bpf", "--pid", str(prog.pid), *extra])
    try:
        before = [x for x in d.get("/api/status")[1]["targets"] if x["pid"] == prog.pid]
        t.eq(len(before), 1, f"exec {what}: the program is a target")
        prog.start()
        t.eq(prog.result(), {"before_exec": n}, "first image ran")
        t.eq(prog.result(), {"after_exec": m, "pid": prog.pid}, "second image ran")
        now = [x for x in d.get("/api/status")[1]["targets"] if x["pid"] == prog.pid]
        t.eq(len(now), 1, f"exec {what}: still one target for the pid")
        if before and now:
            t.eq(now[0]["state"], "running", "state after exec")
            t.eq(now[0]["exe"], lt, "exe after exec")
            t.eq(now[0]["attached_by"], "binary" if by_binary else "pid", "attached_by kept")
            t.check(now[0]["attached_ms"] > before[0]["attached_ms"], "a fresh attach time")
        # a scope the kernel's per-CPU allocator refused is counted as map_full:
        # exact figures are "counted + dropped = run" (dropped is 0 in most runs)
        dropped = d.get("/api/status")[1]["scopes"]["dropped_by_reason"]["map_full"]
        st, body = d.get(f"/api/scopes?pid={prog.pid}")
        # by --pid, the library the old image had probes in is attached again
        # for the new one, which maps it only once its loader has run; by
        # --binary, the new image's loader reports the library at its
        # rendezvous and it is probed for the process
        rows = sorted((r["name"], r["site_kind"]) for r in body["scopes"])
        want = [("after_exec", "scope"), ("lib_work", "scope")]
        live = sum(r["count"] for r in body["scopes"])
        t.eq(rows, want, f"exec {what}: live data is the second image's")
        m_all = m * len(want)
        st, rep = d.get(f"/api/report?pid={prog.pid}&format=json")
        t.eq(st, 200, f"exec {what}: a report of the first image")
        if st == 200:
            got = [(r["name"], r["kind"]) for r in rep["scopes"]["by_total"]]
            old = sum(r["count"] for r in rep["scopes"]["by_total"])
            t.eq(got, [("before_exec", "scope")], "the report holds the first image, names resolved")
            print(f"exec {what}: {old} before, {live} after, {dropped} dropped (map_full)", flush=True)
            t.check(old <= n and live <= m_all, f"no image counted more than it ran: {old}/{n}, {live}/{m_all}")
            t.eq(old + live + dropped, n + m_all, "first image + second image + dropped = scopes run")
            if before:
                t.eq(rep["attached_ms"], before[0]["attached_ms"],
                     "the report's attach time is the first image's")
        lc = lifecycle(d)
        print(f"exec {what}: {lc}", flush=True)
        for line in d.logtext().splitlines():
            if "exec'd" in line:
                print(f"exec {what}: qprofd: {line}", flush=True)
        t.eq(lc.get("execs"), 1, "one exec seen")
        prog.finish()
        ok = wait_for(lambda: [x for x in d.get("/api/status")[1]["targets"]
                               if x["pid"] == prog.pid and x["state"] == "exited"], timeout=10)
        t.check(ok, "the second image's exit is seen")

        def second_report():
            s, r = d.get(f"/api/report?pid={prog.pid}&format=json")
            return r if s == 200 and r.get("exited_ms") and \
                "after_exec" in [x["name"] for x in r["scopes"]["by_total"]] else None

        r2 = wait_for(second_report, timeout=10)
        t.check(r2 is not None, "a report of the second image once it exits")
        if r2:
            t.eq(sorted(x["name"] for x in r2["scopes"]["by_total"]), [w[0] for w in want],
                 "the second report holds only the second image")
            t.eq(sum(x["count"] for x in r2["scopes"]["by_total"]), live, "the second report's count")
    finally:
        prog.kill()
        t.eq(d.stop(), 0, "qprofd exits 0")


if only in ("all", "fork"):
    fork_pid("fork", 200, 1000)
    fork_pid("vfork", 50, 1000)
    fork_pid("grandchild", 20, 100)
    fork_binary(50, 1000)
    fork_binary_lib(20, 1000)
if only in ("all", "exec"):
    exec_case(False, 300, 500)
    exec_case(True, 300, 500)
    exec_unmarked(300)
sys.exit(t.done())
