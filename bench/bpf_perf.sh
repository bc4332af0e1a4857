#!/usr/bin/env bash
# bench/bpf_perf.sh - where a scope's time goes under the BPF collector, by
# kernel function: bench/scope_threads (one thread, one scope site, flat
# out) under qprofd --collector bpf, sampled by `perf record -e cpu-clock`
# for SECONDS (the target's thread only, kernel and user), then the share of
# each function, and the shares summed into what a user can act on: the
# kernel's uprobe entry and exit (not qprof's), and qprof's BPF programs
# with the helpers they call (clock reads, task storage, the attach cookie,
# the aggregate's hash lookup).
#
#   sudo bench/bpf_perf.sh [BUILD_DIR] [SECONDS]     (default build, 6 s)
#   QPROFD=path      the qprofd to sample (default BUILD_DIR/daemon/qprofd)
#
# Not a test. cpu-clock samples (a VM without a PMU has no cycles event)
# land on the instruction after a timer interrupt: shares are approximate,
# and instructions that wait (the fence of a clock read) draw more of them.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
seconds=${2:-6}
QPROFD=${QPROFD:-$build/daemon/qprofd}
[ -x "$build/bench/scope_threads" ] || { echo "missing $build/bench/scope_threads: cmake --build $build --target benchmarks" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (qprofd, perf on the kernel)" >&2; exit 2; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/qprof-bpfperf.XXXXXX)
. "$here/lib.sh"

"$build/bench/scope_threads" 1 1000000000 --start-file "$tmp/go" --end-file "$tmp/end" >"$tmp/loop.out" 2>&1 &
loop_pid=$!
started_pids+=("$loop_pid")
wait_for_line "$tmp/loop.out" '^ready ' 10 "$loop_pid" || { say "scope_threads did not start"; exit 1; }
# shellcheck disable=SC2119
start_qprofd q "$loop_pid" --collector bpf || exit 1
touch "$tmp/go"
sleep 1
say "== scope_threads under qprofd --collector bpf, perf cpu-clock for $seconds s, load $(cut -d' ' -f1-3 /proc/loadavg)"
perf record -q -e cpu-clock -F 4999 -p "$loop_pid" -o "$tmp/perf.data" -- sleep "$seconds" >/dev/null 2>&1
stop_qprofd
perf report -i "$tmp/perf.data" --no-children --sort sym --stdio 2>/dev/null |
	awk '/^#/ || NF < 3 { next } { sub(/%/, "", $1); sym = $3; print $1, sym }' >"$tmp/shares"
awk '
function add(g, v) { grp[g] += v }
{
	p = $1; s = $2
	if (s ~ /^bpf_prog_.*_(scope_enter|scope_exit|record)$/) add("qprof BPF programs (their own instructions)", p)
	else if (s ~ /^(read_tsc|ktime_get_mono_fast_ns|bpf_ktime_get_ns)$/) add("clock reads (bpf_ktime_get_ns)", p)
	else if (s ~ /task_storage|local_storage/) add("thread stack lookups (task storage)", p)
	else if (s ~ /^bpf_get_attach_cookie/) add("attach cookie (the USDT spec id)", p)
	else if (s ~ /^(__htab_map_lookup_elem|lookup_nulls_elem_raw|htab_map_hash|memcmp)$/) add("aggregate hash lookups", p)
	else if (s ~ /^bpf_get_current_task/) add("current task", p)
	else if (s ~ /^(sched_clock|pvclock_clocksource_read_nowd|kvm_sched_clock_read)$/) add("clock reads of the BPF run-time statistics, when on", p)
	else if (s ~ /^(loop|run)$/ || s ~ /^0x/) add("the loop itself (user space)", p)
	else add("the kernel uprobe path and the rest", p)
	if (n < 25) top[++n] = sprintf("  %6.2f%%  %s", p, s)
}
END {
	print "-- top functions:"
	for (i = 1; i <= n; i++) print top[i]
	print "-- summed:"
	for (g in grp) printf "  %6.2f%%  %s\n", grp[g], g | "sort -rn"
}' "$tmp/shares"
touch "$tmp/end"
exit 0
