#!/usr/bin/env bash
# bench/heap.sh - the cost of heap profiling per malloc/free pair, against
# the same program unprofiled and against bcc memleak's approach (every
# allocation traced: a uprobe and a uretprobe on malloc, a uprobe on free,
# the live allocations with their stacks in BPF maps) written for bpftrace,
# all in the same run (docs/guide/heap.md, bench/README.md).
#
#   bench/heap.sh [BUILD_DIR]          (default: build)
#
# bench/heap_loop times PAIRS malloc(16..4096)+free pairs, REPS times in
# each mode, interleaved; the median ns per pair of each mode is printed
# with its ratio to the unprofiled one:
#   none         nobody attached
#   qprofd       qprofd --heap (one sample per 512 KiB, the default)
#   qprofd-all   qprofd --heap --heap-interval 1 (every allocation sampled)
#   bpftrace     the memleak-like bpftrace script below
#
# Environment: QPROFD=PATH, PAIRS (default 1000000), REPS (default 3),
# ATTACH_TIMEOUT (default 60). What cannot run (not root, no bpftrace) is
# reported as skipped. The exit status does not depend on the figures.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
loop=$build/bench/heap_loop
QPROFD=${QPROFD:-$build/daemon/qprofd}
PAIRS=${PAIRS:-1000000}
REPS=${REPS:-3}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}

[ -x "$loop" ] || { echo "missing $loop: cmake --build $build --target benchmarks" >&2; exit 2; }
tmp=$(mktemp -d /tmp/qprof-heap-bench.XXXXXX)
. "$here/lib.sh"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

root_ok=1
[ "$(id -u)" = 0 ] || root_ok=0
have_bt=0
command -v bpftrace >/dev/null && have_bt=1

# the libc the loop maps, for bpftrace's probes
libc=$(ldd "$loop" | awk '/libc\.so/ { print $3 }')

# run_loop TAG: start heap_loop waiting for its start file; sets loop_pid
start_loop() {
	rm -f "$tmp/go"
	"$loop" "$PAIRS" "$tmp/go" >"$tmp/$1.out" 2>&1 &
	loop_pid=$!
	started_pids+=("$loop_pid")
	wait_for_line "$tmp/$1.out" '^ready ' 10 "$loop_pid"
}
finish_loop() { # TAG: start it, wait for it (in this shell: it is our child)
	touch "$tmp/go"
	wait "$loop_pid" 2>/dev/null
	forget "$loop_pid"
}
ns_of() { awk '/^heap_loop/ { print $NF }' "$tmp/$1.out"; }

cat >"$tmp/memleak.bt" <<BT
uprobe:$libc:malloc { @size[tid] = arg0; }
uretprobe:$libc:malloc /@size[tid]/ { @bytes[retval] = @size[tid]; @stack[retval] = ustack; delete(@size[tid]); }
uprobe:$libc:free { delete(@bytes[arg0]); delete(@stack[arg0]); }
BEGIN { printf("attached\n"); }
BT

declare -A res
modes="none"
[ $root_ok = 1 ] && [ -x "$QPROFD" ] && modes="$modes qprofd qprofd-all"
[ $root_ok = 1 ] && [ $have_bt = 1 ] && modes="$modes bpftrace"
say "heap_loop: $PAIRS malloc(16..4096)+free pairs per run, $REPS runs per mode, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
for ((r = 0; r < REPS; r++)); do
	for m in $modes; do
		start_loop "$m.$r" || { say "  heap_loop did not start"; continue; }
		case $m in
		qprofd) start_qprofd "q$r" "$loop_pid" --heap || continue ;;
		qprofd-all) start_qprofd "qa$r" "$loop_pid" --heap --heap-interval 1 || continue ;;
		bpftrace)
			bpftrace -p "$loop_pid" "$tmp/memleak.bt" >"$tmp/bt$r.out" 2>&1 &
			bt_pid=$!
			started_pids+=("$bt_pid")
			wait_for_line "$tmp/bt$r.out" '^attached' "$ATTACH_TIMEOUT" "$bt_pid" ||
				{ say "  bpftrace did not attach: $(tail -2 "$tmp/bt$r.out")"; continue; }
			;;
		esac
		finish_loop
		v=$(ns_of "$m.$r")
		[ -n "$v" ] && res[$m]="${res[$m]:-} $v"
		case $m in
		qprofd | qprofd-all) stop_qprofd ;;
		bpftrace) kill -INT "$bt_pid" 2>/dev/null; wait "$bt_pid" 2>/dev/null; forget "$bt_pid" ;;
		esac
	done
done
base=$(median ${res[none]})
say "mode         ns/pair (median)  x unprofiled   runs"
for m in none qprofd qprofd-all bpftrace; do
	if [ -z "${res[$m]:-}" ]; then
		why="not root"
		[ $m = bpftrace ] && [ $have_bt = 0 ] && why="bpftrace is not installed"
		say "$(printf '%-12s skipped: %s' "$m" "$why")"
		continue
	fi
	v=$(median ${res[$m]})
	say "$(printf '%-12s %16s  %12s  %s' "$m" "$v" "$(calc "$v / $base")" "${res[$m]}")"
done
