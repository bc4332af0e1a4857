#!/usr/bin/env bash
# bench/ring.sh - the ring collector's attached cost per scope (enter + exit),
# against, in the same run: bpftrace timing the same two qprof sites (a
# uprobe each), the tutorial's in-process timer (two clock_gettime calls
# and a store, timer_loop), the floor of any in-thread stamping (two reads
# of the time stamp counter and a store, tsc_loop) and the BPF collector. Costs are the loop's
# ns/iteration less the detached scope_loop's. Needs root (qprofd,
# bpftrace); what cannot run is reported as skipped. Figures are printed,
# never judged by the exit status.
# With two CPUs or more, every loop runs on the last CPU and every tracer
# on the others (taskset): a tracer that shares the loop's CPU adds its own
# time to the loop's wall-clock time (qprofd's drain doubled the ring's
# figure here when the scheduler put the two together), which is a cost to
# the machine, not to the thread. One more ring run, unpinned, shows what
# the scheduler's choice gives.
#
#   bench/ring.sh [BUILD_DIR]      N_ATTACHED=N (default 2000000)
#                                  RING_BPFTRACE=0: no bpftrace run
#                                  RING_PIN=0: no pinning
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
bin=$build/bench
QPROFD=${QPROFD:-$build/daemon/qprofd}
N=${N_ATTACHED:-2000000}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}
ncpu=$(nproc)
loop_pin=() tracer_pin=()
if [ "${RING_PIN:-1}" != 0 ] && [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null; then
	loop_pin=(taskset -c "$((ncpu - 1))")
	tracer_pin=(taskset -c "0-$((ncpu - 2))")
fi
for p in scope_loop timer_loop tsc_loop; do
	[ -x "$bin/$p" ] || { echo "missing $bin/$p: cmake --build $build --target benchmarks" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/qprof-ringbench.XXXXXX)
. "$here/lib.sh"
ns_of() { awk '/ns_per_iter/ { for (i = 1; i <= NF; i++) if ($i == "ns_per_iter") print $(i + 1) }' "$1"; }

# loop_under TAG PROG CMD...: PROG waiting for its start file, CMD started
# with @PID@ replaced by its pid and READY_RE awaited in its output; prints
# the loop's ns/iteration
loop_under() {
	local tag=$1 prog=$2 ready_re=$3 lpid tpid
	shift 3
	rm -f "$tmp/go.$tag"
	"${loop_pin[@]}" "$bin/$prog" "$N" --start-file "$tmp/go.$tag" >"$tmp/$tag.out" 2>&1 &
	lpid=$!
	started_pids+=("$lpid")
	wait_for_line "$tmp/$tag.out" '^ready ' 10 "$lpid" || return 1
	"${tracer_pin[@]}" "${@//@PID@/$lpid}" >"$tmp/$tag.tracer" 2>&1 &
	tpid=$!
	started_pids+=("$tpid")
	if ! wait_for_line "$tmp/$tag.tracer" "$ready_re" "$ATTACH_TIMEOUT" "$tpid"; then
		say "  $tag: the tracer did not attach: $(tail -2 "$tmp/$tag.tracer")"
		kill "$tpid" "$lpid" 2>/dev/null
		return 1
	fi
	touch "$tmp/go.$tag"
	wait "$lpid"
	forget "$lpid"
	kill -INT "$tpid"
	wait "$tpid"
	forget "$tpid"
	ns_of "$tmp/$tag.out"
}

say "== ring collector: attached cost per scope (enter + exit), N=$N, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ${#loop_pin[@]} -gt 0 ]; then
	say "  loops on CPU $((ncpu - 1)), tracers on CPUs 0-$((ncpu - 2)) of $ncpu"
else
	say "  not pinned ($ncpu CPUs${RING_PIN:+, RING_PIN=$RING_PIN})"
fi
"${loop_pin[@]}" "$bin/scope_loop" "$N" >"$tmp/det" && det=$(ns_of "$tmp/det")
"${loop_pin[@]}" "$bin/timer_loop" "$N" >"$tmp/tim" && tim=$(ns_of "$tmp/tim")
timer_cost=$(calc "$tim - $det")
"${loop_pin[@]}" "$bin/tsc_loop" "$N" >"$tmp/tsc" && tsc=$(ns_of "$tmp/tsc")
tsc_cost=$(calc "$tsc - $det")
say "  scope_loop detached:                $det ns/iteration"
say "  timer_loop (2 clock_gettime+store): $tim ns/iteration -> $timer_cost ns per timed block"
say "  tsc_loop (2 rdtsc+store):           $tsc ns/iteration -> $tsc_cost ns per timed block"
if [ "$(id -u)" != 0 ]; then
	say "  attached runs skipped: need root"
	exit 0
fi
ring= bt= bpf=
# the default collector (the ring), then the BPF collector asked for
if r=$(loop_under ring scope_loop "$(cpu_ready_re "$QPROFD")" "$QPROFD" --pid @PID@ --socket "$tmp/ring.sock"); then
	ring=$(calc "$r - $det")
	say "  scope_loop under qprofd (default: ring): $r ns/iteration -> $ring ns per scope"
fi
if [ ${#loop_pin[@]} -gt 0 ]; then
	saved_loop=("${loop_pin[@]}") saved_tracer=("${tracer_pin[@]}")
	loop_pin=() tracer_pin=()
	if r=$(loop_under ring_free scope_loop "$(cpu_ready_re "$QPROFD")" "$QPROFD" --pid @PID@ --socket "$tmp/ringf.sock"); then
		say "  scope_loop under qprofd, not pinned:  $r ns/iteration -> $(calc "$r - $det") ns per scope (the scheduler's choice)"
	fi
	loop_pin=("${saved_loop[@]}") tracer_pin=("${saved_tracer[@]}")
fi
if r=$(loop_under bpf scope_loop "$(cpu_ready_re "$QPROFD")" "$QPROFD" --collector bpf --pid @PID@ --socket "$tmp/bpf.sock"); then
	bpf=$(calc "$r - $det")
	say "  scope_loop under qprofd --collector bpf: $r ns/iteration -> $bpf ns per scope"
fi
if [ "${RING_BPFTRACE:-1}" = 0 ]; then
	say "  bpftrace: not run (RING_BPFTRACE=0)"
elif command -v bpftrace >/dev/null; then
	exe=$bin/scope_loop
	prog="usdt:$exe:qprof:scope_enter { @s[tid] = nsecs; }
usdt:$exe:qprof:scope_exit /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); @n = count(); }
BEGIN { printf(\"READY\\n\"); }"
	if r=$(loop_under bt scope_loop '^READY' bpftrace -p @PID@ -e "$prog"); then
		bt=$(calc "$r - $det")
		say "  scope_loop under bpftrace:          $r ns/iteration -> $bt ns per scope"
	fi
else
	say "  bpftrace: not installed"
fi
say ""
say "== summary (same run)"
[ -n "$ring" ] && [ -n "$bt" ] &&
	say "  ring / bpftrace = $(calc "$ring / $bt") (goal <= 0.02: $(goal "$(calc "$ring / $bt")" "<=" 0.02))"
[ -n "$ring" ] &&
	say "  ring / in-process timer = $(calc "$ring / $timer_cost") (goal <= 0.3: $(goal "$(calc "$ring / $timer_cost")" "<=" 0.3))"
say "  two counter reads / in-process timer = $(calc "$tsc_cost / $timer_cost") (the lowest ratio any in-thread stamping reaches here)"
[ -n "$ring" ] && say "  ring / two counter reads = $(calc "$ring / $tsc_cost")"
[ -n "$ring" ] && [ -n "$bpf" ] && say "  ring / BPF collector = $(calc "$ring / $bpf")"
exit 0
