#!/usr/bin/env bash
# bench/unwind.sh - user stacks without frame pointers: the cost
# per sample and the accuracy of qprofd's CFI unwinding against perf, in the
# same run.
#
#   bench/unwind.sh [BUILD_DIR]          (default: build)
#
# The workload is bench/unwind_work (tests/integration/qsort_target.c built
# -O2 -g -fomit-frame-pointer): three callers burning CPU 1:2:3 inside
# glibc's qsort (Debian's glibc has no frame pointers), a fixed number of
# rounds, one thread. It reports each caller's thread CPU time (the truth).
#
# Configurations, run one after the other in each of REPS rounds
# (interleaved), figures are medians over the rounds:
#   none            unprofiled
#   q_dwarf_HZ      qprofd --pid --unwind dwarf --frequency HZ (stacks walked in the kernel by CFI tables)
#   q_copy_HZ       qprofd --pid --unwind dwarf-copy (every sample's 16 KiB stack copied, unwound in qprofd)
#   q_fp_HZ         qprofd --pid --unwind fp
#   b_dwarf_HZ ...  the same with QPROFD_B (another build, e.g. the one
#                   before a change: an A/B comparison in the same run)
#   p_dwarf_HZ      perf record -e cpu-clock -c 1e9/HZ --call-graph dwarf -m 32M -p
#   p_fp_HZ         perf record -e cpu-clock -c 1e9/HZ -g -m 8M -p
# HZ is HIGH_HZ (default 4999): the cost of one sample is a few µs against
# a workload whose own CPU time varies by about ±4 % from run to run on a
# loaded VM, so the rate is raised to make the cost stand above that noise.
#
#   1. cost per sample = (the target's CPU time profiled - unprofiled, same
#      round) + the profiler's CPU time, divided by the target's samples.
#      The target's CPU time is its thread CPU clock over the three callers:
#      without CONFIG_IRQ_TIME_ACCOUNTING the sampling interrupt (perf's
#      stack copy, qprofd's BPF program and its copy) is charged to the task
#      it interrupts, so this includes it. The profiler's CPU time (all
#      its threads, /proc/PID/stat, to 1/CLK_TCK s) is from SIGUSR1 to the
#      workload printing its figures: qprofd's unwinding, perf record's
#      writing. What each does once at the end (qprofd's export of the
#      profile, perf record's build-id pass) is shown apart (column "end":
#      the rusage of the whole process, bench/rusage_run.py, less the CPU
#      time up to then). Not counted: perf's own unwinding,
#      done later by perf script/report (measured apart, column "offline"),
#      and qprofd's sampler running on the other CPUs for other processes
#      (it samples per CPU and returns at once for a non-target: section 3).
#      Then the overhead at 99 and 999 Hz = cost per sample x rate, as a
#      share of the target's CPU.
#   2. accuracy, from the last round: each caller's share (samples with it
#      on the stack / samples under any caller) for each profiler, against
#      the program's own CPU time split.
#   3. qprofd's sampler: the BPF program's run time over the run (kernel BPF
#      statistics, held on by bpf_stats_hold.py), all its runs on all CPUs,
#      per target sample: an upper bound of the in-kernel part.
#
# Environment: QPROFD=PATH (default BUILD_DIR/daemon/qprofd), QPROFD_B=PATH
# (the b_* configurations), REPS=N (5),
# HIGH_HZ=N (4999; qprofd takes 1..10000), CONFIGS="q_dwarf_999 ..." (a
# subset or other rates), ROUNDS=N rounds of the workload per run (default:
# about 4 s of CPU), ATTACH_TIMEOUT=S (60).
# Figures only: the exit status does not depend on them.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
work=$build/bench/unwind_work
QPROFD=${QPROFD:-$build/daemon/qprofd}
REPS=${REPS:-5}
HIGH_HZ=${HIGH_HZ:-4999}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}

[ -x "$work" ] || { echo "missing $work: cmake --build $build --target benchmarks" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (qprofd and perf attach to the workload)" >&2; exit 2; }
[ -x "$QPROFD" ] || { echo "no qprofd at $QPROFD" >&2; exit 2; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 2; }
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 2; }
have_perf=0
perf version >/dev/null 2>&1 && have_perf=1

tmp=$(mktemp -d /tmp/qprof-unwind-bench.XXXXXX)
. "$here/lib.sh"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
json_field() { sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p" "$1" | tail -1; }
hz_tck=$(getconf CLK_TCK)

# start_work TAG ROUNDS: the workload, waiting for SIGUSR1. Sets work_pid.
start_work() {
	"$work" "$2" >"$tmp/$1.out" 2>&1 &
	work_pid=$!
	started_pids+=("$work_pid")
	wait_for_line "$tmp/$1.out" '"pid"' 10 "$work_pid"
}
finish_work() { # TAG: run it to its end (SIGUSR1 sent); sets w_ns to the thread CPU time its three callers took
	wait "$work_pid" 2>/dev/null
	forget "$work_pid"
	w_ns=$(( $(json_field "$tmp/$1.out" caller_one) + $(json_field "$tmp/$1.out" caller_two) \
		+ $(json_field "$tmp/$1.out" caller_three) ))
}

# calibration: rounds in about 4 s of one CPU
if [ -z "${ROUNDS:-}" ]; then
	start_work calib 200
	kill -USR1 "$work_pid"
	finish_work calib
	ROUNDS=$(awk -v ns="$w_ns" 'BEGIN { r = int(200 * 4e9 / ns); print r < 50 ? 50 : r }')
fi
say "unwind_work: $ROUNDS rounds per run, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

has_perf_fd() {
	local f
	for f in /proc/"$1"/fd/*; do
		[[ $(readlink "$f" 2>/dev/null) == *perf_event* ]] && return 0
	done
	return 1
}
# cpu_ns PID: the process's CPU time so far (all threads, the exited ones
# too), from /proc/PID/stat: clock ticks, so to 1/CLK_TCK s
cpu_ns() { awk -v t="$hz_tck" '{ sub(/.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e9 / t }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# shares FILE: "one two three under total" from perf script text or folded
# lines: a sample counts for the caller on its stack
perf_shares() {
	awk 'function flush() { if (insample) { total++; if (c != "") n[c]++ } insample = 0; c = "" }
	/^[^ \t]/ { flush(); insample = 1; next }
	/^[ \t]*$/ { flush(); next }
	{ s = $2; sub(/\+0x[0-9a-f]+$/, "", s); if (s ~ /^caller_(one|two|three)$/ && c == "") c = s }
	END { flush(); u = n["caller_one"] + n["caller_two"] + n["caller_three"];
	      printf "%d %d %d %d %d\n", n["caller_one"], n["caller_two"], n["caller_three"], u, total }' "$1"
}
folded_shares() {
	awk '{ k = $NF; total += k; s = $0; sub(/ [0-9]+$/, "", s); m = split(s, f, ";");
	       for (i = 1; i <= m; i++) { g = f[i]; sub(/ .*/, "", g); if (g ~ /^caller_(one|two|three)$/) { n[g] += k; break } } }
	END { u = n["caller_one"] + n["caller_two"] + n["caller_three"];
	      printf "%d %d %d %d %d\n", n["caller_one"], n["caller_two"], n["caller_three"], u, total }' "$1"
}

# bpf_ns PID: run_time_ns and run_cnt of the sampler: of the perf_event
# programs (prog_type 7) PID holds, the one run most (the other one,
# /api/threads' thread_sample, runs only while that route is answered)
bpf_ns() {
	local f t=0 c=0 ft fc
	for f in /proc/"$1"/fdinfo/*; do
		grep -q '^prog_type:[[:space:]]*7$' "$f" 2>/dev/null || continue
		read -r ft fc < <(awk '/^run_time_ns:/ { t = $2 } /^run_cnt:/ { c = $2 } END { print t + 0, c + 0 }' "$f")
		[ "$fc" -ge "$c" ] && { t=$ft; c=$fc; }
	done
	echo "$t $c"
}

# start_profiler TAG CMD...: CMD under rusage_run.py; sets w_pid (the
# wrapper, to signal and wait for) and p_pid (the profiler itself)
start_profiler() {
	local tag=$1 i
	shift
	"$here/rusage_run.py" "$tmp/$tag.rusage" "$@" >"$tmp/$tag.prof" 2>&1 &
	w_pid=$!
	started_pids+=("$w_pid")
	p_pid=
	for ((i = 0; i < 500; i++)); do
		p_pid=$(cat "$tmp/$tag.rusage.pid" 2>/dev/null)
		[ -n "$p_pid" ] && break
		kill -0 "$w_pid" 2>/dev/null || break
		sleep 0.01
	done
	[ -n "$p_pid" ]
}
stop_profiler() { # the wrapper passes SIGINT on and writes the CPU time once the profiler exited
	kill -INT "$w_pid" 2>/dev/null
	wait "$w_pid" 2>/dev/null
	forget "$w_pid"
}

# run CONFIG TAG: one run of the workload under CONFIG. Appends to
# w_CONFIG (the target's CPU ns), c_CONFIG (the profiler's CPU ns from the
# workload's start), n_CONFIG (the target's samples), o_CONFIG (perf
# script's CPU ns: the offline unwind), b_CONFIG (BPF ns); leaves the
# shares in $tmp/CONFIG.shares.
run() {
	local cfg=$1 tag=$2 freq mode i c0=0 c1=0 b0 b1 bc0 bc1 off
	start_work "$tag" "$ROUNDS" || { say "  $cfg: the workload did not start"; return 1; }
	freq=${cfg##*_}; mode=${cfg#?_}; mode=${mode%_*}
	[ "$mode" = copy ] && mode=dwarf-copy
	sock=$tmp/$tag.sock
	case $cfg in
	none) ;;
	q_* | b_*)
		qd=$QPROFD
		[ "${cfg%%_*}" = b ] && qd=${QPROFD_B:?b_ configurations need QPROFD_B}
		start_profiler "$tag" "$qd" --pid "$work_pid" --socket "$sock" --frequency "$freq" \
			--unwind "$mode" --no-calibrate || return 1
		# attached, and its CPU sampler loaded (it loads while qprofd serves)
		if ! wait_for_line "$tmp/$tag.prof" "$(cpu_ready_re "$qd")" "$ATTACH_TIMEOUT" "$w_pid"; then
			say "  qprofd did not attach: $(tail -3 "$tmp/$tag.prof")"
			stop_profiler
			return 1
		fi
		read -r b0 bc0 < <(bpf_ns "$p_pid") ;;
	p_*)
		# ring buffers of qprofd's sizes (32 MiB with stack copies, 8 MiB
		# without): perf's default (512 KiB) loses chunks at 4999 Hz
		if [ "$mode" = dwarf ]; then set -- --call-graph dwarf -m 32M; else set -- -g -m 8M; fi
		# a fixed period (-c, ns of cpu-clock), not -F: the frequency mode
		# starts from a short period and adapts, a burst of samples at first
		start_profiler "$tag" perf record -e cpu-clock -c "$((1000000000 / freq))" "$@" -p "$work_pid" \
			-o "$tmp/$tag.data" || return 1
		for ((i = 0; i < ATTACH_TIMEOUT * 20; i++)); do
			has_perf_fd "$p_pid" && break
			sleep 0.05
		done
		has_perf_fd "$p_pid" || { say "  perf did not attach: $(tail -3 "$tmp/$tag.prof")"; stop_profiler; return 1; } ;;
	esac
	[ "$cfg" = none ] || c0=$(cpu_ns "$p_pid")
	kill -USR1 "$work_pid"
	# the profiler's CPU over the workload's run: read as the workload
	# prints its figures, before it exits (perf record ends with it)
	wait_for_line "$tmp/$tag.out" '"caller_one"' 600 "$work_pid"
	[ "$cfg" = none ] || c1=$(cpu_ns "$p_pid")
	finish_work "$tag"
	eval "w_$cfg+=(\"$w_ns\")"
	case $cfg in
	q_* | b_*)
		read -r b1 bc1 < <(bpf_ns "$p_pid")
		curl -s --max-time 120 --unix-socket "$sock" -o "$tmp/$tag.folded" \
			"http://localhost/api/cpu/folded?pid=$work_pid"
		curl -s --max-time 10 --unix-socket "$sock" -o "$tmp/$cfg.status" "http://localhost/api/status"
		stop_profiler
		folded_shares "$tmp/$tag.folded" >"$tmp/$cfg.shares"
		eval "b_$cfg+=(\"$((b1 - b0))\")"
		echo "$((bc1 - bc0))" >"$tmp/$cfg.bpfruns" ;;
	p_*)
		# perf record ends by itself when the workload exits; SIGINT if not
		for ((i = 0; i < 600; i++)); do
			[ -s "$tmp/$tag.rusage" ] && break
			sleep 0.05
		done
		stop_profiler
		TIMEFORMAT='%3U %3S'
		{ time perf script -i "$tmp/$tag.data" -F comm,ip,sym --no-inline >"$tmp/$tag.script" 2>/dev/null; } 2>"$tmp/$tag.time"
		off=$(awk '{ printf "%.0f\n", ($1 + $2) * 1e9 }' "$tmp/$tag.time")
		eval "o_$cfg+=(\"$off\")"
		perf_shares "$tmp/$tag.script" >"$tmp/$cfg.shares"
		grep -o 'Processed [0-9]* events and lost [0-9]* chunks' "$tmp/$tag.prof" >"$tmp/$cfg.lost"
		rm -f "$tmp/$tag.data" "$tmp/$tag.script" ;;
	esac
	if [ "$cfg" != none ]; then
		read -r _ _ _ _ n <"$tmp/$cfg.shares"
		eval "c_$cfg+=(\"$((c1 - c0))\")"
		eval "e_$cfg+=(\"$(($(cat "$tmp/$tag.rusage" 2>/dev/null || echo 0) - c1))\")"
		eval "n_$cfg+=(\"$n\")"
	fi
	cp "$tmp/$tag.out" "$tmp/$cfg.truth"
}

"$here/bpf_stats_hold.py" >"$tmp/stats.out" 2>&1 &
started_pids+=("$!")
wait_for_line "$tmp/stats.out" '^held' 10 "$!" || say "BPF statistics unavailable: $(cat "$tmp/stats.out")"

configs=(none "q_dwarf_$HIGH_HZ" "q_copy_$HIGH_HZ" "q_fp_$HIGH_HZ")
[ $have_perf = 1 ] && configs+=("p_dwarf_$HIGH_HZ" "p_fp_$HIGH_HZ")
[ -n "${CONFIGS:-}" ] && read -r -a configs <<<"none $CONFIGS"
[ $have_perf = 0 ] && say "perf is not installed (Debian: linux-perf): its columns are skipped"
for c in "${configs[@]}"; do eval "w_$c=() c_$c=() e_$c=() n_$c=() o_$c=() b_$c=() k_$c=()"; done
for ((r = 1; r <= REPS; r++)); do
	for c in "${configs[@]}"; do
		run "$c" "$c.$r" || continue
		# this round's cost per sample: target's CPU against this round's unprofiled run
		[ "$c" = none ] && { base_r=$w_ns; continue; }
		eval "k_$c+=(\"\$(awk -v w=$w_ns -v b=$base_r -v p=\${c_$c[-1]} -v n=\${n_$c[-1]} 'BEGIN { printf \"%.0f\", n ? (w - b + p) / n : 0 }')\")"
	done
done

say ""
say "1. cost per sample of the target (medians over $REPS rounds of $ROUNDS workload rounds; ns)"
eval "base=\$(median \"\${w_none[@]}\")"
say "   unprofiled: the target's CPU $base ns"
printf '  %-16s %8s %11s %11s %9s %9s %9s %8s %8s %11s\n' config samples "target+" profiler \
	"per smpl" "target/s" "prof/s" "at 99Hz" "at 999Hz" "end"
for c in "${configs[@]}"; do
	[ "$c" = none ] && continue
	eval "n=\$(median \"\${n_$c[@]}\"); w=\$(median \"\${w_$c[@]}\"); p=\$(median \"\${c_$c[@]}\")"
	eval "k=\$(median \"\${k_$c[@]}\"); e=\$(median \"\${e_$c[@]}\")"
	[ "${n:-0}" -gt 0 ] || { say "  $c: no samples"; continue; }
	printf '  %-16s %8d %11d %11d %9d %9d %9d %7.2f%% %7.2f%% %11d\n' "$c" "$n" "$((w - base))" "$p" "$k" \
		"$(((w - base) / n))" "$((p / n))" "$(calc "$k * 99 / 1e7")" "$(calc "$k * 999 / 1e7")" "$e"
done
say "   (target+: median target CPU over unprofiled; per sample: median over rounds of"
say "    (target CPU - that round's unprofiled + profiler CPU) / samples; at 99/999 Hz:"
say "    per sample x rate as a share of the target's CPU; end: the profiler's CPU after the"
say "    workload, once per session: qprofd's export of the profile, perf record's build-id pass)"
for c in "${configs[@]}"; do
	case $c in p_*) ;; *) continue ;; esac
	eval "o=\$(median \"\${o_$c[@]}\"); n=\$(median \"\${n_$c[@]}\")"
	[ "${n:-0}" -gt 0 ] && printf '  %-16s offline: perf script %d ns per sample (%s)\n' "$c" "$((o / n))" \
		"$(cat "$tmp/$c.lost" 2>/dev/null)"
done

say ""
say "2. shares of each caller (samples with it on the stack), last round"
t=$tmp/none.truth
c1=$(json_field "$t" caller_one); c2=$(json_field "$t" caller_two); c3=$(json_field "$t" caller_three)
printf '  %-16s %7s %7s %7s %9s %8s\n' profiler one two three "under(%)" samples
printf '  %-16s %7.3f %7.3f %7.3f\n' "truth (CPU)" "$(calc "$c1 / ($c1 + $c2 + $c3)")" \
	"$(calc "$c2 / ($c1 + $c2 + $c3)")" "$(calc "$c3 / ($c1 + $c2 + $c3)")"
for c in "${configs[@]}"; do
	[ "$c" != none ] && [ -s "$tmp/$c.shares" ] || continue
	read -r a b d u n <"$tmp/$c.shares"
	if [ "$u" -gt 0 ]; then
		printf '  %-16s %7.3f %7.3f %7.3f %9.1f %8d\n' "$c" "$(calc "$a / $u")" "$(calc "$b / $u")" \
			"$(calc "$d / $u")" "$(calc "$u * 100 / $n")" "$n"
	else
		printf '  %-16s %7s %7s %7s %9.1f %8d\n' "$c" - - - 0 "$n"
	fi
done

say ""
say "3. qprofd's sampler: BPF run time per target sample, all runs on all CPUs (upper bound), medians"
for c in "${configs[@]}"; do
	case $c in q_* | b_*) ;; *) continue ;; esac
	eval "b=\$(median \"\${b_$c[@]}\"); n=\$(median \"\${n_$c[@]}\")"
	[ "${n:-0}" -gt 0 ] || continue
	printf '  %-16s BPF %7d ns/sample (last round: %s runs)\n' "$c" "$((b / n))" "$(cat "$tmp/$c.bpfruns")"
	[ -s "$tmp/$c.status" ] && say "    $(grep -o '"cpu":{[^{]*' "$tmp/$c.status") $(grep -o '"unwind":{[^}]*}' "$tmp/$c.status")"
done
exit 0
