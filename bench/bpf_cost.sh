#!/usr/bin/env bash
# bench/bpf_cost.sh - what the BPF collector costs a scope, against the
# uprobe floor, in one run: bench/scope_threads (one thread, one scope site,
# timed in thread CPU time, which the probes and their BPF are charged to
# and other load on the machine is not) detached, under bpftrace counting
# the same two USDT sites (`count()`: the least a uprobe pair can cost),
# and under qprofd's BPF collector, one or two qprofd builds interleaved
# round by round (A, B, A, B, ...) so that both see the same load.
#
# For each qprofd run it prints the attached cost per scope (attached less
# detached ns/iteration), the BPF run time per scope of each of qprofd's
# programs that ran during the loop (kernel BPF statistics, held on by
# bench/bpf_stats_hold.py for the run; they add two clock reads to every
# program run, so the attached figures include those), and the probe cost
# calibration qprofd measured at start. Then the medians.
#
#   sudo bench/bpf_cost.sh [BUILD_DIR]     (default: the repository's build)
#   QPROFD=path      the qprofd to measure (default BUILD_DIR/daemon/qprofd)
#   QPROFD_B=path    a second qprofd, interleaved with the first
#   ROUNDS=N         (default 5)      N_ATTACHED=N iterations a run (default 1000000)
#
# Not a test: timings on a shared machine; read the medians, not one run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
bin=$build/bench
qa=${QPROFD:-$build/daemon/qprofd}
qb=${QPROFD_B:-}
rounds=${ROUNDS:-5}
N=${N_ATTACHED:-1000000}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}
[ -x "$bin/scope_threads" ] || { echo "missing $bin/scope_threads: cmake --build $build --target benchmarks" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (qprofd, bpftrace, BPF statistics)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/qprof-bpfcost.XXXXXX)
. "$here/lib.sh"

ns_of() { awk '/ns_per_iter/ && !done { for (i = 1; i <= NF; i++) if ($i == "ns_per_iter") { print $(i + 1); done = 1; break } }' "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# the BPF collector by name where qprofd has a choice of collectors
coll_args() { case "$("$1" --help 2>&1)" in *--collector*) echo "--collector bpf" ;; esac; }

# start_loop TAG: scope_threads waiting for its start file (and, after its
# report, for its end file); sets loop_pid
start_loop() {
	rm -f "$tmp/go.$1" "$tmp/end.$1" "$tmp/$1.out"
	"$bin/scope_threads" 1 "$N" --start-file "$tmp/go.$1" --end-file "$tmp/end.$1" >"$tmp/$1.out" 2>&1 &
	loop_pid=$!
	started_pids+=("$loop_pid")
	wait_for_line "$tmp/$1.out" '^ready ' 10 "$loop_pid" || { say "scope_threads did not start"; exit 1; }
}
# run_loop TAG [HOOK]: the loop run; HOOK runs once it has reported, before
# it exits (bpftrace's programs end with the process)
run_loop() {
	touch "$tmp/go.$1"
	wait_for_line "$tmp/$1.out" '^done' 600 "$loop_pid" || say "scope_threads did not report"
	[ -n "${2:-}" ] && "$2"
	touch "$tmp/end.$1"
	wait "$loop_pid"
	forget "$loop_pid"
	ns=$(ns_of "$tmp/$1.out")
}

# under_qprofd TAG QPROFD: sets ns, calib and the per-program lines in
# $tmp/TAG.progs ("NAME NS_PER_SCOPE RUNS_PER_SCOPE")
under_qprofd() {
	local tag=$1
	QPROFD=$2
	start_loop "$tag"
	# shellcheck disable=SC2046
	start_qprofd "$tag" "$loop_pid" $(coll_args "$2") || { kill "$loop_pid"; wait "$loop_pid"; forget "$loop_pid"; ns=; return 1; }
	"$here/bpf_progs.py" "$q_pid" >"$tmp/$tag.p0"
	run_loop "$tag"
	"$here/bpf_progs.py" "$q_pid" >"$tmp/$tag.p1"
	calib=$(curl -s --max-time 10 --unix-socket "$sock" http://qprofd/api/status |
		python3 -c 'import json, sys
c = json.load(sys.stdin).get("calibration") or {}
print(c.get("correction_ns", c.get("ns", "?")))' 2>/dev/null)
	stop_qprofd
	awk -v n="$N" 'FILENAME == ARGV[1] { c[$1] = $2; t[$1] = $3; next }
		{ d = $3 - t[$1]; r = $2 - c[$1]; if (r > 0) printf "%s %.1f %.3f\n", $1, d / n, r / n }' \
		"$tmp/$tag.p0" "$tmp/$tag.p1" >"$tmp/$tag.progs"
}

bt_after() { "$here/bpf_progs.py" "$bt_pid" >"$tmp/bt.p1"; }

"$here/bpf_stats_hold.py" >"$tmp/stats.out" 2>&1 &
started_pids+=("$!")
wait_for_line "$tmp/stats.out" '^held' 10 "$!" || { say "BPF statistics unavailable: $(cat "$tmp/stats.out")"; exit 1; }

exe=$bin/scope_threads
bt_prog="usdt:$exe:qprof:scope_enter { @e = count(); } usdt:$exe:qprof:scope_exit { @x = count(); } BEGIN { printf(\"READY\\n\"); }"
names=(A)
[ -n "$qb" ] && names+=(B)
say "== BPF collector: cost per scope (enter + exit), scope_threads 1 $N, $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
say "   A = $qa${qb:+, B = $qb}"
declare -A res
others=
for r in $(seq "$rounds"); do
	start_loop det
	run_loop det
	det=$ns
	line="round $r: detached $det ns/iteration"
	if command -v bpftrace >/dev/null; then
		start_loop bt
		bpftrace -p "$loop_pid" -e "$bt_prog" >"$tmp/bt.tracer" 2>&1 &
		bt_pid=$!
		started_pids+=("$bt_pid")
		if wait_for_line "$tmp/bt.tracer" '^READY' "$ATTACH_TIMEOUT" "$bt_pid"; then
			"$here/bpf_progs.py" "$bt_pid" >"$tmp/bt.p0"
			run_loop bt bt_after
			b=$(calc "$ns - $det")
			res[bt]+="$b "
			# bpftrace's own two programs' run time (both count() probes)
			bt_run=$(awk -v n="$N" 'FILENAME == ARGV[1] { t[$1] = $3; next } { d += $3 - t[$1] } END { printf "%.1f", d / n }' \
				"$tmp/bt.p0" "$tmp/bt.p1")
			res[bt.run]+="$bt_run "
			line="$line; bpftrace count() +$b (BPF run time $bt_run)"
		else
			kill "$loop_pid"; wait "$loop_pid"; forget "$loop_pid"
			line="$line; bpftrace did not attach"
		fi
		kill -INT "$bt_pid" 2>/dev/null; wait "$bt_pid" 2>/dev/null; forget "$bt_pid"
	fi
	for x in "${names[@]}"; do
		q=$qa
		[ "$x" = B ] && q=$qb
		under_qprofd "q$x" "$q" || continue
		c=$(calc "$ns - $det")
		res[$x]+="$c "
		res[$x.calib]+="$calib "
		line="$line; $x +$c (calibration $calib)"
		while read -r name pns runs; do
			res[$x.p.$name]+="$pns "
			res[$x.r.$name]+="$runs "
		done <"$tmp/q$x.progs"
		say "$line"
		line="         $x BPF run time per scope:$(awk '{ printf " %s %s", $1, $2 }' "$tmp/q$x.progs") ns"
	done
	say "$line"
done
say ""
say "== medians (ns per scope, enter + exit; load now $(cut -d' ' -f1-3 /proc/loadavg))"
m_bt=$(echo "${res[bt]:-}" | tr ' ' '\n' | grep . | median)
m_btrun=$(echo "${res[bt.run]:-}" | tr ' ' '\n' | grep . | median)
[ -n "$m_bt" ] && say "  bpftrace count() on the same two sites (the uprobe floor): $m_bt; its BPF run time $m_btrun"
for x in "${names[@]}"; do
	m=$(echo "${res[$x]:-}" | tr ' ' '\n' | grep . | median)
	[ -n "$m" ] || continue
	cal=$(echo "${res[$x.calib]:-}" | tr ' ' '\n' | grep . | median)
	say "  qprofd $x (BPF collector): $m${m_bt:+, $(calc "$m - $m_bt") over bpftrace}; calibration $cal ns"
	# the USDT programs run in the loop's thread, once a hit; the others
	# (tracepoints) are machine-wide: their runs during the loop are shown
	# per scope for scale, not charged to it
	tot=0
	for k in $(printf '%s\n' "${!res[@]}" | sort); do
		case $k in "$x.p."*) ;; *) continue ;; esac
		name=${k#"$x.p."}
		p=$(echo "${res[$k]}" | tr ' ' '\n' | grep . | median)
		rr=$(echo "${res[$x.r.$name]}" | tr ' ' '\n' | grep . | median)
		case $name in
		scope_enter | scope_exit)
			say "    $(printf '%-18s' "$name") $p ns BPF run time per scope ($rr runs per scope)"
			tot=$(calc "$tot + $p") ;;
		*) others+=" $name $p" ;;
		esac
	done
	say "    scope_enter + scope_exit: $tot ns BPF run time per scope${m_btrun:+, $(calc "$tot - $m_btrun") over bpftrace count()}"
	say "    (machine-wide programs during the loop, ns per scope, all processes:${others:-})"
	others=
done
exit 0
