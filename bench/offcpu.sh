#!/usr/bin/env bash
# bench/offcpu.sh - the cost per context switch of qprofd's kernel events
# (sched_switch and friends, bpf/offcpu.bpf.h), against an unprofiled run in
# the same run (docs/guide/offcpu.md, costs).
#
#   bench/offcpu.sh [BUILD_DIR]          (default: build)
#
# bench/pingpong: two threads pinned to CPU 0 hand a byte back and forth,
# ROUNDS round trips, two context switches each; it prints ns per switch.
# Four configurations, interleaved REPS times, medians:
#   none     no qprofd
#   target   qprofd --pid on the ping-pong process: every switch is a
#            target's switch-out and a target's switch-in (stacks taken, an
#            interval sent, the scope's kernel figures raised); the user
#            stack walked in the kernel by the CFI tables (--unwind dwarf)
#   fpwalk   the same with --unwind dwarf-copy: the user stack of a
#            switch-out walked by frame pointers (no CFI walk in the kernel);
#            target - fpwalk is what the CFI walk adds to a switch
#   ring     the same under --ring: the scope's kernel figures found from
#            the thread's ring header (two user-memory reads a switch-out)
#   others   qprofd --pid on another (idle) process: the ping-pong threads
#            pay only the filter
# Environment: QPROFD=PATH, REPS=N (default 5), ROUNDS=N (default 200000).
# Needs root; the exit status does not depend on the figures.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
pp=$build/bench/pingpong
QPROFD=${QPROFD:-$build/daemon/qprofd}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-200000}

[ -x "$pp" ] || { echo "missing $pp: cmake --build $build --target benchmarks" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/offcpu.sh needs root (qprofd loads BPF programs)" >&2; exit 2; }
[ -x "$QPROFD" ] || { echo "no qprofd at $QPROFD" >&2; exit 2; }

tmp=$(mktemp -d /tmp/qprof-offcpu-bench.XXXXXX)
. "$here/lib.sh"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run_pp TAG [ATTACH]: one ping-pong run; ATTACH: "target" or "others"
run_pp() {
	local tag=$1 mode=${2:-none} pid idle_pid out
	out=$tmp/$tag.out
	"$pp" "$ROUNDS" >"$out" &
	pid=$!
	started_pids+=("$pid")
	wait_for_line "$out" '^pid ' 10 "$pid" || { say "  pingpong did not start"; return 1; }
	if [ "$mode" = target ]; then
		start_qprofd "$tag" "$pid" --no-calibrate --collector bpf || return 1
	elif [ "$mode" = fpwalk ]; then
		start_qprofd "$tag" "$pid" --no-calibrate --collector bpf --unwind dwarf-copy || return 1
	elif [ "$mode" = ring ]; then
		start_qprofd "$tag" "$pid" --no-calibrate --ring || return 1
	elif [ "$mode" = others ]; then
		"$pp" idle >"$tmp/$tag.idle" &
		idle_pid=$!
		started_pids+=("$idle_pid")
		wait_for_line "$tmp/$tag.idle" '^pid ' 10 "$idle_pid" || return 1
		start_qprofd "$tag" "$idle_pid" --no-calibrate --collector bpf || return 1
	fi
	kill -USR1 "$pid"
	wait "$pid"
	forget "$pid"
	if [ "$mode" != none ]; then
		stop_qprofd
	fi
	if [ "$mode" = others ]; then
		kill "$idle_pid" 2>/dev/null
		wait "$idle_pid" 2>/dev/null
		forget "$idle_pid"
	fi
	awk '/^ns_per_switch/ { print $2 }' "$out"
}

none=() target=() fpwalk=() ring=() others=()
for r in $(seq 1 "$REPS"); do
	none+=("$(run_pp "none$r")")
	target+=("$(run_pp "target$r" target)")
	fpwalk+=("$(run_pp "fpwalk$r" fpwalk)")
	ring+=("$(run_pp "ring$r" ring)")
	others+=("$(run_pp "others$r" others)")
	say "rep $r: none ${none[-1]} ns, target ${target[-1]} ns, fpwalk ${fpwalk[-1]} ns, ring ${ring[-1]} ns, others ${others[-1]} ns per switch"
done
mn=$(median "${none[@]}")
mt=$(median "${target[@]}")
mf=$(median "${fpwalk[@]}")
mr=$(median "${ring[@]}")
mo=$(median "${others[@]}")
say ""
say "context switch, median of $REPS runs of $ROUNDS round trips (2 switches each), CPU 0:"
say "  unprofiled:                  $mn ns"
say "  target threads (traced):     $mt ns   extra $(calc "$mt - $mn") ns per switch"
say "  ... frame pointers, no CFI walk: $mf ns   the CFI walk adds $(calc "$mt - $mf") ns per switch"
say "  target threads, --ring:      $mr ns   extra $(calc "$mr - $mn") ns per switch"
say "  other processes (filtered):  $mo ns   extra $(calc "$mo - $mn") ns per switch"
