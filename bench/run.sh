#!/usr/bin/env bash
# bench/run.sh - run the qprof benchmarks once and print ratios (README.md).
#
#   bench/run.sh [BUILD_DIR]          (default: build)
#
# Environment:
#   QPROFD=PATH        qprofd to test (default BUILD_DIR/daemon/qprofd)
#   N_CALLGRIND=N      iterations under callgrind          (default 1000000)
#   N_DETACHED=N       iterations of the detached timing   (default 20000000)
#   N_ATTACHED=N       iterations of the attached timing   (default 1000000)
#   ATTACH_TIMEOUT=S   seconds to wait for a tracer to attach (default 60)
#
# Benchmarks that cannot run here (no valgrind, no root, no bpftrace, no
# qprofd) are reported as skipped; the others still run. Goals are printed
# next to the figures; the exit status does not depend on them (timings from
# one run on a shared machine are not a pass/fail criterion).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
bin=$build/bench
QPROFD=${QPROFD:-$build/daemon/qprofd}
N_CALLGRIND=${N_CALLGRIND:-1000000}
N_DETACHED=${N_DETACHED:-20000000}
N_ATTACHED=${N_ATTACHED:-1000000}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}

for p in marker_loop marker_loop_disabled scope_loop; do
	[ -x "$bin/$p" ] || { echo "missing $bin/$p: cmake --build $build --target benchmarks" >&2; exit 2; }
done

tmp=$(mktemp -d /tmp/qprof-bench.XXXXXX)
. "$here/lib.sh"


# ---------------------------------------------------------------------------
say "== a) detached cost: instructions per marker (callgrind, N=$N_CALLGRIND)"
if command -v valgrind >/dev/null; then
	cg_ir() { # BINARY MODE -> Ir of the loop_* functions
		local out=$tmp/cg.$RANDOM
		valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='loop_*' \
			"$1" "$2" "$N_CALLGRIND" >"$out.stdout" 2>"$out.stderr" || {
			echo "valgrind $1 $2 failed: $(tail -3 "$out.stderr")" >&2
			return 1
		}
		awk '/^summary:/ { print $2; exit }' "$out"
	}
	for mode in scope value log; do
		case $mode in
		scope) markers=3 what="QPROF_SCOPE enter+exit + QPROF_MARK" ;;
		value) markers=1 what="QPROF_VALUE, untraced (semaphore check)" ;;
		log) markers=1 what="QPROF_LOG, untraced (semaphore check)" ;;
		esac
		on=$(cg_ir "$bin/marker_loop" $mode) && off=$(cg_ir "$bin/marker_loop_disabled" $mode) || {
			say "  $mode: callgrind failed"
			continue
		}
		per=$(calc "($on - $off) / ($N_CALLGRIND * $markers)")
		verdict=$(goal "$per" "<=" 4)
		say "  $what: Ir enabled $on, disabled $off -> $per instructions per marker (goal <= 4: $verdict)"
		add_summary "detached $mode: $per instructions/marker (goal <= 4: $verdict)"
	done
else
	say "  skipped: valgrind not installed"
	add_summary "detached: skipped (no valgrind)"
fi

# ---------------------------------------------------------------------------
say ""
say "== b) attached cost: ns per scope (enter + exit)"

ns_of() { awk '/ns_per_iter/ { for (i = 1; i <= NF; i++) if ($i == "ns_per_iter") print $(i + 1) }' "$1"; }

have_sdt=0
[ -x "$bin/sdt_loop" ] && have_sdt=1
"$bin/scope_loop" "$N_DETACHED" >"$tmp/scope_detached" && scope_det=$(ns_of "$tmp/scope_detached")
say "  scope_loop detached: $scope_det ns/iteration (N=$N_DETACHED)"
if [ $have_sdt = 1 ]; then
	"$bin/sdt_loop" "$N_DETACHED" >"$tmp/sdt_detached" && sdt_det=$(ns_of "$tmp/sdt_detached")
	say "  sdt_loop   detached: $sdt_det ns/iteration (N=$N_DETACHED)"
else
	say "  sdt_loop not built (no <sys/sdt.h>)"
fi

is_root=0
[ "$(id -u)" = 0 ] && is_root=1

# start_loop PROG TAG: the loop program waiting for its start file
start_loop() {
	local prog=$1 tag=$2
	rm -f "$tmp/go.$tag"
	"$bin/$prog" "$N_ATTACHED" --start-file "$tmp/go.$tag" >"$tmp/$tag.out" 2>&1 &
	loop_pid=$!
	started_pids+=("$loop_pid")
	wait_for_line "$tmp/$tag.out" '^ready ' 10 "$loop_pid"
}
# run_loop TAG: start the timed part, wait for the end
run_loop() {
	touch "$tmp/go.$1"
	wait "$loop_pid"
	forget "$loop_pid"
}

# bt_run PROG PROVIDER ENTER EXIT TAG: PROG under bpftrace with the
# reference program; sets bt_ns (ns/iteration) and bt_hits, or fails.
bt_run() {
	local exe=$bin/$1 prov=$2 enter=$3 exit_=$4 tag=$5 bt_pid
	local prog="usdt:$exe:$prov:$enter { @s[tid] = nsecs; }
usdt:$exe:$prov:$exit_ /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); @n = count(); }
BEGIN { printf(\"READY\\n\"); }"
	bt_ns= bt_hits=
	start_loop "$1" "$tag" || { say "  $1 did not start"; return 1; }
	bpftrace -e "$prog" >"$tmp/$tag.bpftrace" 2>&1 &
	bt_pid=$!
	started_pids+=("$bt_pid")
	# "Attaching N probes..." comes first, BEGIN fires once all are attached
	if wait_for_line "$tmp/$tag.bpftrace" 'Attaching' "$ATTACH_TIMEOUT" "$bt_pid" &&
		wait_for_line "$tmp/$tag.bpftrace" '^READY' "$ATTACH_TIMEOUT" "$bt_pid"; then
		run_loop "$tag"
		kill -INT "$bt_pid"
		wait "$bt_pid"
		forget "$bt_pid"
		bt_ns=$(ns_of "$tmp/$tag.out")
		bt_hits=$(awk '/^@n:/ { print $2 }' "$tmp/$tag.bpftrace")
		if [ "${bt_hits:-0}" != "$N_ATTACHED" ]; then
			say "  warning: bpftrace counted ${bt_hits:-0} of $N_ATTACHED scopes on $1"
		fi
		return 0
	fi
	say "  bpftrace did not attach: $(grep -v RLIMIT "$tmp/$tag.bpftrace" | tail -3)"
	kill "$bt_pid" "$loop_pid" 2>/dev/null
	wait "$bt_pid" "$loop_pid" 2>/dev/null
	forget "$bt_pid"
	forget "$loop_pid"
	return 1
}

# --- bpftrace on sdt_loop: the baseline ---
bt_cost=
if [ $have_sdt = 0 ]; then
	say "  bpftrace: skipped (no sdt_loop)"
elif [ $is_root = 0 ]; then
	say "  bpftrace: skipped (needs root)"
elif ! command -v bpftrace >/dev/null; then
	say "  bpftrace: skipped (not installed)"
else
	if bt_run sdt_loop bench enter exit bt; then
		bt_cost=$(calc "$bt_ns - $sdt_det")
		say "  sdt_loop under bpftrace: $bt_ns ns/iteration (N=$N_ATTACHED, bpftrace counted ${bt_hits:-?} scopes)"
		say "  -> bpftrace attached cost: $bt_cost ns per scope (2 <sys/sdt.h> sites, int3)"
		add_summary "bpftrace on sdt probes: $bt_cost ns per scope (enter+exit)"
	fi
	# Reference: the same bpftrace program on the qprof sites of scope_loop.
	# Same BPF work, only the probe site differs (nop5 -> uprobe trampoline).
	if bt_run scope_loop qprof scope_enter scope_exit bt5; then
		bt5_cost=$(calc "$bt_ns - $scope_det")
		say "  reference: scope_loop under the same bpftrace program: $bt_ns ns/iteration -> $bt5_cost ns per scope (2 qprof nop5 sites)"
		add_summary "bpftrace on qprof sites (reference): $bt5_cost ns per scope"
		if [ -n "$bt_cost" ]; then
			say "  -> probe-site effect alone, nop5/int3 with identical BPF work: $(calc "$bt5_cost / $bt_cost")"
			add_summary "site effect nop5/int3 (same bpftrace program): $(calc "$bt5_cost / $bt_cost")"
		fi
	fi
fi

# --- qprofd on scope_loop ---
q_cost=
if [ ! -x "$QPROFD" ]; then
	say "  qprofd: skipped (not available at $QPROFD; set QPROFD=PATH)"
elif [ $is_root = 0 ]; then
	say "  qprofd: skipped (needs root)"
elif ! command -v curl >/dev/null; then
	say "  qprofd: skipped (curl is needed to see when it has attached)"
else
	api() { curl -s --max-time 5 --unix-socket "$sock" "http://localhost$1"; }
	if start_loop scope_loop q; then
		attached=0
		start_qprofd q "$loop_pid" --collector bpf && attached=1
		if [ $attached = 1 ]; then
			run_loop q
			scope_att=$(ns_of "$tmp/q.out")
			count=
			if command -v jq >/dev/null; then
				count=$(api "/api/scopes?pid=$loop_pid" |
					jq -r '[.scopes[]? | select(.name == "bench_scope") | .count] | add // empty' 2>/dev/null)
			fi
			q_cost=$(calc "$scope_att - $scope_det")
			say "  scope_loop under qprofd: $scope_att ns/iteration (N=$N_ATTACHED, qprofd counted ${count:-?} scopes)"
			if [ -n "$count" ] && [ "$count" != "$N_ATTACHED" ]; then
				say "  warning: qprofd counted $count of $N_ATTACHED scopes: the attach was not complete, the cost below is not meaningful"
			fi
			say "  -> qprof attached cost: $q_cost ns per scope (2 nop5 probes)"
			if [ "$(awk -v c="$q_cost" 'BEGIN { print (c < 10) }')" = 1 ]; then
				say "  warning: that is less than a probe hit can cost: did qprofd attach its probes?"
			fi
			add_summary "qprof: $q_cost ns per scope (enter+exit)"
			stop_qprofd
		else
			kill "$loop_pid" 2>/dev/null
			wait "$loop_pid" 2>/dev/null
		fi
	else
		say "  scope_loop did not start"
	fi
fi

if [ -n "$q_cost" ] && [ -n "$bt_cost" ]; then
	ratio=$(calc "$q_cost / $bt_cost")
	verdict=$(goal "$ratio" "<=" 0.6)
	say "  qprof / bpftrace = $ratio (goal <= 0.6: $verdict)"
	add_summary "attached qprof/bpftrace: $ratio (goal <= 0.6: $verdict)"
else
	add_summary "attached qprof/bpftrace: not measured"
fi

say ""
say "== summary"
for s in "${summary[@]}"; do say "  $s"; done
exit 0
