#!/usr/bin/env bash
# bench/scope_ab.sh - the attached cost of a scope under two qprofd builds,
# interleaved in one run (A, B, A, B, ...), so that both see the same load:
# scope_threads with 1 and 2 threads on the same scope site (two CPUs on one
# aggregate at once), timed in thread CPU time, which the probes' BPF is
# charged to and other load on the machine is not. Prints each run and the
# medians of the attached cost (ns per scope = attached - detached).
#
#   sudo bench/scope_ab.sh BUILD_DIR QPROFD_A QPROFD_B [ROUNDS]   (default 5)
#   N_ATTACHED=N iterations per run (default 2000000)
#   COLLECTOR_ARGS=... qprofd's collector flags (default --collector bpf, the
#   collector this measures; empty for a build older than that flag)
#
# Not a test: timings on a shared VM; read the medians, not one run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?BUILD_DIR}" && pwd)
qa=${2:?QPROFD_A}
qb=${3:?QPROFD_B}
rounds=${4:-5}
N=${N_ATTACHED:-2000000}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}
COLLECTOR_ARGS=${COLLECTOR_ARGS---collector bpf}
bin=$build/bench
tmp=$(mktemp -d /tmp/qprof-ab.XXXXXX)
. "$here/lib.sh"

ns_of() { awk '/ns_per_iter/ { for (i = 1; i <= NF; i++) if ($i == "ns_per_iter") print $(i + 1) }' "$1"; }

# one QPROFD TAG PROG ARGS...: PROG under QPROFD (or none: "-"); sets ns
# (ns/iteration), or exits
one() {
	local q=$1 tag=$2
	shift 2
	rm -f "$tmp/go.$tag" "$tmp/$tag.out"	# no stale "ready" line from the last round
	"$@" --start-file "$tmp/go.$tag" >"$tmp/$tag.out" 2>&1 &
	loop_pid=$!
	started_pids+=("$loop_pid")
	wait_for_line "$tmp/$tag.out" '^ready ' 10 "$loop_pid" || { say "$1 did not start"; exit 1; }
	if [ "$q" != - ]; then
		QPROFD=$q
		rm -f "$tmp/$tag.qprofd"	# nor a stale "ready on" line
		start_qprofd "$tag" "$loop_pid" $COLLECTOR_ARGS || exit 1
	fi
	touch "$tmp/go.$tag"
	wait "$loop_pid"
	forget "$loop_pid"
	bpf_exit=
	if [ "$q" != - ]; then
		bpf_exit=$(prog_ns "$q_pid" scope_exit)
		stop_qprofd
	fi
	ns=$(ns_of "$tmp/$tag.out")
}

# prog_ns PID NAME: mean BPF run time (ns) of PID's program NAME (kernel stats)
prog_ns() {
	local id
	for id in $(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u); do
		bpftool -j prog show id "$id" 2>/dev/null
		echo
	done | python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        p = json.loads(line)
        if p.get("name") == sys.argv[1] and p.get("run_cnt"):
            print("%.1f" % (p["run_time_ns"] / p["run_cnt"]))
            break' "$2"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the kernel's BPF run-time statistics, on while this script runs
"$here/bpf_stats_hold.py" >"$tmp/stats.out" 2>&1 &
started_pids+=("$!")
wait_for_line "$tmp/stats.out" '^held' 10 "$!" || say "BPF statistics unavailable: $(cat "$tmp/stats.out")"

declare -A res
for r in $(seq "$rounds"); do
	for prog in t1 t2; do
		case $prog in
		t1) cmd=("$bin/scope_threads" 1 "$N") ;;
		t2) cmd=("$bin/scope_threads" 2 "$N") ;;
		esac
		one - "d$prog" "${cmd[@]}"
		det=$ns
		one "$qa" "a$prog" "${cmd[@]}"
		a=$ns
		xa=$bpf_exit
		one "$qb" "b$prog" "${cmd[@]}"
		b=$ns
		xb=$bpf_exit
		ca=$(calc "$a - $det")
		cb=$(calc "$b - $det")
		say "round $r $prog: detached $det, A $a (+$ca), B $b (+$cb) ns/iteration; scope_exit BPF run time A ${xa:-?} ns, B ${xb:-?} ns"
		res[$prog.a]+="$ca "
		res[$prog.b]+="$cb "
		res[$prog.xa]+="$xa "
		res[$prog.xb]+="$xb "
	done
done
say ""
for prog in t1 t2; do
	ma=$(echo "${res[$prog.a]}" | tr ' ' '\n' | grep . | median)
	mb=$(echo "${res[$prog.b]}" | tr ' ' '\n' | grep . | median)
	say "median attached cost, $prog: A $ma ns, B $mb ns per scope (B/A $(calc "$mb / $ma"))"
	xa=$(echo "${res[$prog.xa]}" | tr ' ' '\n' | grep . | median)
	xb=$(echo "${res[$prog.xb]}" | tr ' ' '\n' | grep . | median)
	[ -n "$xa" ] && [ -n "$xb" ] &&
		say "median scope_exit BPF run time, $prog: A $xa ns, B $xb ns (B/A $(calc "$xb / $xa"))"
done
