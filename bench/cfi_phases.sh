#!/bin/bash
# bench/cfi_phases.sh - where the in-kernel CFI walk's time goes, from a
# build whose sampler times its own parts (QPROF_CFI_PHASES: configure a
# build directory with -DBPF_FLAGS_profile=-DQPROF_CFI_PHASES and build
# qprofd there; the timing costs a few bpf_ktime_get_ns calls per frame,
# so its totals are a little above a plain build's).
#
#   sudo bench/cfi_phases.sh QPROFD [ROUNDS] [HZ]     (3000 rounds, 999 Hz)
#
# One run of bench/unwind_work (the qsort workload, from the build next to
# this QPROFD or $WORK) under QPROFD --unwind dwarf. Prints: the sampler's
# runs and BPF run time (all runs on all CPUs: BPF statistics must be on,
# bench/bpf_stats_hold.py), walks by how they ended (CPU samples and
# off-CPU switch-outs), and, per frame, the time to find the mapping, to
# find the row and its rule, and to read the return address (and rbp);
# per CPU sample of the target, the time of each part of the sampler.
# Run it for two builds one after the other to compare them (same load).
set -u
Q=${1:?usage: cfi_phases.sh QPROFD [ROUNDS] [HZ]}
R=${2:-3000}
HZ=${3:-999}
here=$(cd "$(dirname "$0")" && pwd)
W=${WORK:-$(dirname "$(dirname "$Q")")/bench/unwind_work}
[ -x "$W" ] || { echo "no workload at $W (set WORK=)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
t=$(mktemp -d /tmp/qprof-cfiphases.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$t"; }
trap cleanup EXIT
"$here/bpf_stats_hold.py" >"$t/stats.out" 2>&1 &
pids+=("$!")
"$W" "$R" >"$t/w.out" 2>&1 &
wp=$!
pids+=("$wp")
for _ in $(seq 100); do grep -q '"pid"' "$t/w.out" && break; sleep 0.1; done
"$Q" --pid "$wp" --socket "$t/s" --frequency "$HZ" --unwind dwarf --no-calibrate >"$t/q.out" 2>&1 &
qp=$!
pids+=("$qp")
# attached, and its CPU sampler loaded (it loads while qprofd serves)
ready='CPU sampler ready|CPU sampling unavailable'
grep -q 'CPU sampler ready' "$Q" || ready='ready on'
for _ in $(seq 600); do grep -qE "$ready" "$t/q.out" && break; sleep 0.1; done
grep -qE "$ready" "$t/q.out" || { echo "qprofd did not start: $(tail -3 "$t/q.out")" >&2; exit 1; }
sleep 1
# the perf_event program run most: the sampler
prog_stats() {
	for f in /proc/$qp/fdinfo/*; do
		grep -q '^prog_type:[[:space:]]*7$' "$f" 2>/dev/null || continue
		awk '/^run_time_ns:/ {t=$2} /^run_cnt:/ {c=$2} END {print t + 0, c + 0}' "$f"
	done | sort -k2 -n | tail -1
}
echo "load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $R rounds at $HZ Hz, $Q"
read -r t0 c0 < <(prog_stats)
kill -USR1 "$wp"
wait "$wp"
read -r t1 c1 < <(prog_stats)
mid=
for id in $(grep -h '^map_id:' /proc/$qp/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u); do
	[[ $(bpftool map show id "$id" 2>/dev/null) == *"name cfi_counts"* ]] && { mid=$id; break; }
done
[ -n "$mid" ] || { echo "no cfi_counts map in qprofd" >&2; exit 1; }
bpftool -j map dump id "$mid" >"$t/counts.json"
curl -s --unix-socket "$t/s" http://localhost/api/status >"$t/status.json"
python3 - "$t/counts.json" "$t/status.json" "$t0" "$c0" "$t1" "$c1" <<'PY'
import json, sys
v = {}
for e in json.load(open(sys.argv[1])):
    k = e["key"] if isinstance(e["key"], int) else int.from_bytes(bytes(int(x, 16) for x in e["key"]), "little")
    s = 0
    for c in e.get("values") or e.get("formatted", {}).get("values") or []:
        x = c["value"]
        s += x if isinstance(x, int) else int.from_bytes(bytes(int(b, 16) for b in x), "little")
    v[k] = s
t0, c0, t1, c1 = map(int, sys.argv[3:7])
names = ["complete", "depth", "loop", "fallback", "no_cfi", "no_mapping", "no_table", "no_process", "stale", "bad"]
for u, who in ((0, "CPU samples"), (1, "off-CPU")):
    print("%-12s walks by end: %s; frames kept %d" % (who, {n: v.get(u * 16 + 1 + i, 0) for i, n in enumerate(names)
                                                          if v.get(u * 16 + 1 + i, 0)}, v.get(64 + u, 0)))
walks = sum(v.get(u * 16 + e, 0) for u in range(4) for e in range(1, 11))
frames = sum(v.get(64 + u, 0) for u in range(4))
print("sampler: %d runs, %.0f ns a run (all CPUs, targets or not)" % (c1 - c0, (t1 - t0) / max(c1 - c0, 1)))
P = 68
if v.get(P + 4):
    steps = v[P + 4]
    print("walk: %.0f ns a walk, %.0f ns a frame; a frame: mapping %.0f, row and rule %.0f, stack reads %.0f ns"
          % (v[P] / max(walks, 1), v[P] / max(frames, 1), v[P + 1] / steps, v[P + 2] / steps, v[P + 3] / steps))
if v.get(P + 8):
    n = v[P + 8]
    parts = [("to the kernel stack", 5), ("walk", 6), ("scopes", 9), ("ring header", 10), ("comm", 11),
             ("ring output", 7)]
    tot = sum(v.get(P + k, 0) for _, k in parts) / n
    print("a CPU sample of the target: %.0f ns: %s" % (tot, ", ".join("%s %.0f" % (a, v.get(P + k, 0) / n)
                                                                     for a, k in parts)))
else:
    print("(no phase figures: QPROFD is not a QPROF_CFI_PHASES build)")
u = json.load(open(sys.argv[2]))["cpu"]["unwind"]
print("samples with a 16 KiB stack copy: %d of %d walked in the kernel" % (u["copied"], u["kernel"]["walked"] + u["copied"]))
PY
