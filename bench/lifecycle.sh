#!/usr/bin/env bash
# bench/lifecycle.sh - qprofd's start-up, shutdown and idle memory, against
# baselines measured in the same run: the start of the same binary that
# only prints its version (exec and dynamic linking: the floor), and, when
# BASE_QPROFD names another qprofd (e.g. a build of main), that one. For
# each of RUNS runs: the time from the start of `qprofd --pid PID` to its
# "ready" line (serving, its target attached), from SIGTERM to its exit,
# the time `qprofd --pid <no such process>` takes to fail, and the RSS of
# the idle daemon with its target; then the median, and qprofd's own log of
# where the time went (its "started in" and "stopped in" lines, of the
# median run). Needs root. Figures are printed, never judged by the exit
# status (one run on a shared machine is no pass/fail criterion).
#
#   bench/lifecycle.sh [BUILD_DIR]     RUNS=N (default 5)  BASE_QPROFD=PATH
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
QPROFD=${QPROFD:-$build/daemon/qprofd}
RUNS=${RUNS:-5}
target=$build/tests/edge_target
[ -x "$QPROFD" ] || { echo "missing $QPROFD" >&2; exit 2; }
[ -x "$target" ] || { echo "missing $target: cmake --build $build --target edge_target" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/lifecycle.sh needs root (qprofd loads BPF)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/qprof-lifebench.XXXXXX)
. "$here/lib.sh"

ns() { date +%s%N; }
ms_since() { awk -v a="$1" -v b="$(ns)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the target: one process with markers, waiting on a pipe of ours
mkfifo "$tmp/hold"
"$target" --mode hold <"$tmp/hold" >"$tmp/target.out" 2>/dev/null &
tpid=$!
started_pids+=("$tpid")
exec 9>"$tmp/hold"	# held open: the target waits until this script ends

# one_run QPROFD TAG: prints "start_ms stop_ms rss_kb" of one run
one_run() {
	local q=$1 tag=$2 t0 s_ms p_ms rss
	rm -f "$tmp/$tag.log" "$tmp/$tag.sock"
	t0=$(ns)
	"$q" --pid "$tpid" --socket "$tmp/$tag.sock" --report-dir "$tmp/reports-$tag" -v >"$tmp/$tag.log" 2>&1 &
	q_pid=$!
	started_pids+=("$q_pid")
	if ! wait_for_line "$tmp/$tag.log" '^qprofd: ready on' 60 "$q_pid"; then
		say "  $tag: qprofd did not start: $(tail -3 "$tmp/$tag.log")"
		stop_qprofd
		return 1
	fi
	s_ms=$(ms_since "$t0")
	sleep 1	# idle, its target attached
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$q_pid/status")
	t0=$(ns)
	kill -TERM "$q_pid"
	wait "$q_pid" 2>/dev/null
	p_ms=$(ms_since "$t0")
	forget "$q_pid"
	echo "$s_ms $p_ms $rss"
}

# fail_ms QPROFD: how long `--pid <none>` takes to fail, and its exit code
fail_ms() {
	local t0 code
	t0=$(ns)
	"$1" --pid 999999999 --socket "$tmp/fail.sock" --report-dir "$tmp/reports-fail" >"$tmp/fail.log" 2>&1
	code=$?
	echo "$(ms_since "$t0") $code"
}

measure() {
	local q=$1 tag=$2 i r
	: >"$tmp/$tag.runs"
	for i in $(seq "$RUNS"); do
		r=$(one_run "$q" "$tag-$i") || continue
		echo "$r $i" >>"$tmp/$tag.runs"
	done
	[ -s "$tmp/$tag.runs" ] || return 1
	start=$(awk '{ print $1 }' "$tmp/$tag.runs" | median)
	stop=$(awk '{ print $2 }' "$tmp/$tag.runs" | median)
	rss=$(awk '{ print $3 }' "$tmp/$tag.runs" | median)
	mid=$(sort -n "$tmp/$tag.runs" | awk -v n="$(wc -l <"$tmp/$tag.runs")" 'NR == int((n + 1) / 2) { print $4 }')
	read -r fail fcode < <(fail_ms "$q")
}

floor_t0=$(ns)
for i in $(seq "$RUNS"); do "$QPROFD" --version >/dev/null; done
floor=$(awk -v t="$(ms_since "$floor_t0")" -v n="$RUNS" 'BEGIN { printf "%.1f", t / n }')
say "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $RUNS runs each"
say "floor: qprofd --version in $floor ms"
if measure "$QPROFD" new; then
	say "qprofd ($QPROFD):"
	say "  serving, target attached: $start ms median ($(calc "$start / $floor") x the floor); goal 300 ms: $(goal "$start" '<=' 300)"
	say "  stopped after SIGTERM:    $stop ms median; goal 300 ms: $(goal "$stop" '<=' 300)"
	say "  --pid of no process:      $fail ms, exit $fcode"
	say "  idle RSS with 1 target:   $(calc "$rss / 1024") MiB median"
	say "  its log, median run:"
	grep -hE 'started in|stopped in' "$tmp/new-$mid.log" | sed 's/^/    /'
	new_start=$start new_stop=$stop new_rss=$rss new_fail=$fail
fi
if [ -n "${BASE_QPROFD:-}" ] && measure "$BASE_QPROFD" base; then
	say "baseline qprofd ($BASE_QPROFD):"
	say "  serving $start ms, stopped $stop ms, --pid of no process $fail ms (exit $fcode), RSS $(calc "$rss / 1024") MiB"
	if [ -n "${new_start:-}" ]; then
		say "  ratios new/baseline: start $(calc "$new_start / $start"), stop $(calc "$new_stop / $stop"), fail $(calc "$new_fail / $fail"), RSS $(calc "$new_rss / $rss")"
	fi
fi
