#!/usr/bin/env bash
# bench/logs.sh - QPROF_LOG benchmarks of qprofd, printed as figures and ratios
# against baselines measured in the same run (bench/README.md, "Logs").
#
#   bench/logs.sh [BUILD_DIR]          (default: build)
#
#   1. throughput before loss: bench/log_loop emits QPROF_LOG("msg %d", i) at
#      increasing rates for RATE_SECONDS each, under a fresh qprofd --pid;
#      after each run GET /api/status gives logs.received and logs.lost (ring
#      buffer full in the kernel). Prints the highest rate with nothing lost
#      and the flat-out rate with its loss;
#   2. cost per QPROF_LOG while qprofd listens: N_COST messages flat out,
#      timed inside the program, against the same program writing the same
#      message with fprintf to a file (interleaved, medians of REPS).
#   The cost while nobody listens is bench/run.sh's callgrind figure (a).
#
# Environment:
#   QPROFD=PATH          qprofd to test (default BUILD_DIR/daemon/qprofd)
#   RATES="R ..."        messages/s in 1., 0 = flat out
#                        (default "10000 30000 100000 300000 1000000 0")
#   RATE_SECONDS=S       length of each run in 1.                    (default 2)
#   N_COST=N             messages per timed run in 2.          (default 1000000)
#   REPS=N               runs of each kind in 2.                     (default 3)
#   LOG_FILE=PATH        fprintf's file in 2.       (default a file in the tmp dir)
#   ATTACH_TIMEOUT=S     seconds to wait for qprofd to attach       (default 60)
#   DRAIN_TIMEOUT=S      seconds to wait for qprofd to drain a run  (default 10)
#
# What cannot run (not root, no qprofd, no curl) is reported as skipped; the
# rest still runs. The exit status does not depend on the figures (timings
# from one run on a shared machine are not a pass/fail criterion).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
loop=$build/bench/log_loop
QPROFD=${QPROFD:-$build/daemon/qprofd}
RATES=${RATES:-10000 30000 100000 300000 1000000 0}
RATE_SECONDS=${RATE_SECONDS:-2}
N_COST=${N_COST:-1000000}
REPS=${REPS:-3}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-10}

[ -x "$loop" ] || { echo "missing $loop: cmake --build $build --target benchmarks" >&2; exit 2; }

tmp=$(mktemp -d /tmp/qprof-logs-bench.XXXXXX)
LOG_FILE=${LOG_FILE:-$tmp/x.log}
. "$here/lib.sh"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field NAME FILE: the value after NAME on log_loop's report line
field() { awk -v k="$1" '/^log_loop mode/ { for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$2"; }
rate_name() { [ "$1" = 0 ] && echo "flat out" || echo "$1/s"; }


# Why the attached parts cannot run, if they cannot.
q_why=
if [ "$(id -u)" != 0 ]; then
	q_why="not root: qprofd needs root to load BPF"
elif [ ! -x "$QPROFD" ]; then
	q_why="no qprofd at $QPROFD"
elif ! command -v curl >/dev/null; then
	q_why="no curl to read qprofd's socket"
fi

say "qprof log benchmarks: $loop, qprofd $QPROFD, $(nproc) CPUs, kernel $(uname -r)"

# --- processes --------------------------------------------------------------
# start_loop TAG ARGS...: log_loop ARGS --start-file ... --hold, waiting.
# Sets loop_pid.
start_loop() {
	local tag=$1
	shift
	rm -f "$tmp/go.$tag"
	"$loop" "$@" --start-file "$tmp/go.$tag" --hold >"$tmp/$tag.out" 2>&1 &
	loop_pid=$!
	started_pids+=("$loop_pid")
	wait_for_line "$tmp/$tag.out" '^ready' 10 "$loop_pid" || {
		say "  log_loop did not start: $(tail -3 "$tmp/$tag.out")"
		stop_loop
		return 1
	}
}
stop_loop() {
	kill "$loop_pid" 2>/dev/null
	wait "$loop_pid" 2>/dev/null
	forget "$loop_pid"
}

status() { curl -s --max-time 5 --unix-socket "$sock" http://localhost/api/status 2>/dev/null; }
# logs_counts: "RECEIVED LOST" from GET /api/status
logs_counts() {
	local st
	st=$(status) || return 1
	[ -n "$st" ] || return 1
	if command -v jq >/dev/null; then
		jq -r '"\(.logs.received) \(.logs.lost)"' <<<"$st"
	else
		st=$(tr -d ' \n' <<<"$st" | grep -o '"logs":{[^}]*}')
		echo "$(sed 's/.*"received":\([0-9]*\).*/\1/' <<<"$st") $(sed 's/.*"lost":\([0-9]*\).*/\1/' <<<"$st")"
	fi
}
# drain SENT: waits until received + lost reaches SENT, or nothing new for
# 1 s, or DRAIN_TIMEOUT. Sets received, lost, drain_ms.
drain() {
	local sent=$1 i last=-1 same=0 t0=$EPOCHREALTIME
	received=0 lost=0
	for ((i = 0; i < DRAIN_TIMEOUT * 10; i++)); do
		read -r received lost <<<"$(logs_counts)" || { received=0 lost=0; }
		[ $((received + lost)) -ge "$sent" ] && break
		if [ "$received" = "$last" ]; then
			same=$((same + 1))
			[ $same -ge 10 ] && break
		else
			same=0 last=$received
		fi
		sleep 0.1
	done
	drain_ms=$(calc "($EPOCHREALTIME - $t0) * 1000")
}

# ---------------------------------------------------------------------------
say ""
say "== 1) log throughput before loss: QPROF_LOG(\"msg %d\", i) for ~${RATE_SECONDS} s at each rate under a fresh qprofd --pid (kernel ring buffer 4 MiB)"
if [ -n "$q_why" ]; then
	say "  skipped ($q_why)"
	add_summary "throughput: skipped ($q_why)"
else
	best_ok='' best_ok_achieved='' flat=''
	printf '    %-10s %12s %10s %10s %10s %8s %10s\n' "target" "achieved/s" "sent" "received" "lost" "lost %" "drain ms"
	for r in $RATES; do
		args=(log --seconds "$RATE_SECONDS")
		[ "$r" != 0 ] && args+=(--rate "$r")
		start_loop rate "${args[@]}" || continue
		start_qprofd rate "$loop_pid" --collector bpf || { stop_loop; continue; }
		touch "$tmp/go.rate"
		if ! wait_for_line "$tmp/rate.out" '^done' $((RATE_SECONDS + 60)) "$loop_pid"; then
			say "  $(rate_name "$r"): log_loop did not finish: $(tail -3 "$tmp/rate.out")"
			stop_qprofd
			stop_loop
			continue
		fi
		sent=$(field messages "$tmp/rate.out")
		achieved=$(field rate_per_s "$tmp/rate.out")
		sem=$(field semaphore "$tmp/rate.out")
		drain "$sent"
		stop_qprofd
		stop_loop
		pct=$(calc "100 * $lost / $sent")
		printf '    %-10s %12s %10s %10s %10s %8s %10s\n' "$(rate_name "$r")" "$achieved" "$sent" "$received" "$lost" "$pct" "$drain_ms"
		[ "$sem" = 0 ] && say "    (the log semaphore was 0 at the start: nobody listened, nothing was emitted)"
		[ $((received + lost)) -ne "$sent" ] &&
			say "    (received + lost = $((received + lost)), not $sent: $((sent - received - lost)) unaccounted after ${DRAIN_TIMEOUT} s)"
		if [ "$r" = 0 ]; then
			flat="$achieved messages/s flat out, $lost of $sent lost ($pct %)"
		elif [ "$lost" = 0 ] && [ "$received" = "$sent" ] && [ "$sem" != 0 ]; then
			if [ -z "$best_ok" ] || [ "$r" -gt "$best_ok" ]; then
				best_ok=$r best_ok_achieved=$achieved
			fi
		fi
	done
	if [ -n "$best_ok" ]; then
		say "  highest rate with nothing lost: $best_ok/s target ($best_ok_achieved/s achieved)"
		[ "$(awk -v a="$best_ok_achieved" -v t="$best_ok" 'BEGIN { print (a < 0.95 * t) }')" = 1 ] &&
			say "  (the program could not reach $best_ok/s: each attached QPROF_LOG costs what 2) measures)"
		add_summary "throughput: highest rate with 0 lost $best_ok/s (achieved $best_ok_achieved/s)"
	else
		say "  no paced rate ran without loss"
		add_summary "throughput: no paced rate without loss"
	fi
	if [ -n "$flat" ]; then
		say "  $flat"
		add_summary "throughput: $flat"
	fi
fi

# ---------------------------------------------------------------------------
say ""
say "== 2) cost per message: QPROF_LOG with qprofd attached vs fprintf(\"msg %d\\n\") to $LOG_FILE, $N_COST messages flat out, timed in the program ($REPS runs each, interleaved)"
f_ns=() l_ns=() d_ns=() b_ns=()
for ((k = 1; k <= REPS; k++)); do
	line="  run $k:"
	if "$loop" fprintf "$LOG_FILE" --count "$N_COST" >"$tmp/f.out" 2>&1; then
		v=$(field ns_per_msg "$tmp/f.out")
		f_ns+=("$v")
		line="$line  fprintf $v ns"
	else
		line="$line  fprintf failed ($(tail -1 "$tmp/f.out"))"
	fi
	# reference: QPROF_LOG while nobody listens (10x the messages: ~1 ns each)
	"$loop" log --count $((N_COST * 10)) >"$tmp/d.out" 2>&1 && {
		v=$(field ns_per_msg "$tmp/d.out")
		d_ns+=("$v")
		line="$line  QPROF_LOG detached $v ns"
	}
	# reference: the same probe under bpftrace with a trivial program (count)
	if [ -z "$q_why" ] && command -v bpftrace >/dev/null && start_loop bt log --count "$N_COST"; then
		bpftrace -e "usdt:$loop:qprof:log { @n = count(); } BEGIN { printf(\"READY\\n\"); }" \
			-p "$loop_pid" >"$tmp/bt.bpftrace" 2>&1 &
		bt_pid=$!
		started_pids+=("$bt_pid")
		if wait_for_line "$tmp/bt.bpftrace" '^READY' "$ATTACH_TIMEOUT" "$bt_pid"; then
			touch "$tmp/go.bt"
			if wait_for_line "$tmp/bt.out" '^done' 300 "$loop_pid"; then
				v=$(field ns_per_msg "$tmp/bt.out")
				[ "$(field semaphore "$tmp/bt.out")" != 0 ] && b_ns+=("$v") && line="$line  bpftrace-count $v ns"
			fi
		else
			line="$line  bpftrace did not attach ($(grep -v RLIMIT "$tmp/bt.bpftrace" | tail -1))"
		fi
		kill -INT "$bt_pid" 2>/dev/null
		wait "$bt_pid" 2>/dev/null
		forget "$bt_pid"
		stop_loop
	fi
	if [ -z "$q_why" ] && start_loop cost log --count "$N_COST"; then
		if start_qprofd cost "$loop_pid" --collector bpf; then
			touch "$tmp/go.cost"
			if wait_for_line "$tmp/cost.out" '^done' 300 "$loop_pid"; then
				v=$(field ns_per_msg "$tmp/cost.out")
				sem=$(field semaphore "$tmp/cost.out")
				drain "$N_COST"
				if [ "$sem" = 0 ]; then
					line="$line  QPROF_LOG attached: not measured (semaphore 0)"
				else
					l_ns+=("$v")
					line="$line  QPROF_LOG attached $v ns ($received received, $lost lost)"
				fi
			else
				line="$line  QPROF_LOG attached: log_loop did not finish"
			fi
			stop_qprofd
		fi
		stop_loop
	fi
	say "$line"
done
rm -f "$LOG_FILE"
if [ ${#f_ns[@]} -gt 0 ]; then
	mf=$(median "${f_ns[@]}")
	say "  fprintf to a file: $mf ns/message (median)"
	add_summary "cost: fprintf to a file $mf ns/message"
fi
if [ ${#d_ns[@]} -gt 0 ]; then
	md=$(median "${d_ns[@]}")
	say "  (reference: QPROF_LOG while nobody listens: $md ns/message, loop included; bench/run.sh a) counts its instructions)"
fi
if [ -n "$q_why" ]; then
	say "  QPROF_LOG attached: skipped ($q_why)"
	add_summary "cost: QPROF_LOG attached skipped ($q_why)"
elif [ ${#l_ns[@]} -gt 0 ]; then
	ml=$(median "${l_ns[@]}")
	say "  QPROF_LOG with qprofd attached: $ml ns/message (median)"
	if [ ${#b_ns[@]} -gt 0 ]; then
		mb=$(median "${b_ns[@]}")
		say "  (reference: the same probe under bpftrace 'usdt:...:qprof:log { @n = count(); }': $mb ns/message:"
		say "   the probe hit and snprintf; qprofd's BPF program and ring buffer add $(calc "$ml - $mb") ns)"
		add_summary "cost reference: QPROF_LOG under a counting bpftrace program $mb ns/message"
	fi
	if [ ${#f_ns[@]} -gt 0 ]; then
		ratio=$(calc "$ml / $mf")
		say "  QPROF_LOG attached / fprintf = $ratio"
		add_summary "cost: QPROF_LOG attached $ml ns/message, $ratio x fprintf"
	else
		add_summary "cost: QPROF_LOG attached $ml ns/message"
	fi
else
	add_summary "cost: QPROF_LOG attached not measured (see above)"
fi

say ""
say "== summary"
for s in "${summary[@]}"; do say "  $s"; done
exit 0
