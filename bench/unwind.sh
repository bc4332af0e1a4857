#!/usr/bin/env bash
# bench/unwind.sh - user stacks without frame pointers (issue 11): the cost
# and the accuracy of qprofd's CFI unwinding against perf in the same run.
#
#   bench/unwind.sh [BUILD_DIR]          (default: build)
#
# The workload is bench/unwind_work (tests/integration/qsort_target.c built
# -O2 -g -fomit-frame-pointer): three callers burning CPU 1:2:3 inside
# glibc's qsort (Debian's glibc has no frame pointers), a fixed number of
# rounds, one thread. It measures its own wall time and each caller's thread
# CPU time (the truth).
#
#   1. overhead: the workload's CPU time (its own thread CPU clock: on a
#      shared, loaded VM wall time measures the neighbours) unprofiled, under qprofd --pid
#      (--unwind dwarf at 99 and 999 Hz, --unwind fp at 999 Hz), under perf
#      record --call-graph dwarf (99 and 999 Hz) and perf record -g (999 Hz);
#      REPS rounds, the configurations interleaved, medians; slowdown against
#      the unprofiled median.
#   2. accuracy, from the 999 Hz runs of the last round: each caller's share
#      (samples with it on the stack / samples of the process) for each
#      profiler, against the program's own CPU time split.
#   3. qprofd's costs per sample in the qprofd runs of the last round: the
#      sampler's BPF run time (kernel BPF statistics, held on by
#      bpf_stats_hold.py; divided by the target's samples, so an upper
#      bound: the program also runs for other processes' samples and returns
#      early) and qprofd's own CPU time (the CFI unwinding is there).
#
# Environment: QPROFD=PATH (default BUILD_DIR/daemon/qprofd), REPS=N (5),
# CONFIGS="q_dwarf_999 ..." (a subset of the configurations),
# ROUNDS=N rounds of the workload per run (default: about 4 s), ATTACH_TIMEOUT=S (60).
# Figures only: the exit status does not depend on them.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
work=$build/bench/unwind_work
QPROFD=${QPROFD:-$build/daemon/qprofd}
REPS=${REPS:-5}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}

[ -x "$work" ] || { echo "missing $work: cmake --build $build --target benchmarks" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (qprofd and perf attach to the workload)" >&2; exit 2; }
[ -x "$QPROFD" ] || { echo "no qprofd at $QPROFD" >&2; exit 2; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 2; }
have_perf=0
perf version >/dev/null 2>&1 && have_perf=1

tmp=$(mktemp -d /tmp/qprof-unwind-bench.XXXXXX)
. "$here/lib.sh"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
json_field() { sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p" "$1" | tail -1; }

# start_work TAG ROUNDS: the workload, waiting for SIGUSR1. Sets work_pid.
start_work() {
	"$work" "$2" >"$tmp/$1.out" 2>&1 &
	work_pid=$!
	started_pids+=("$work_pid")
	wait_for_line "$tmp/$1.out" '"pid"' 10 "$work_pid"
}
finish_work() { # TAG: run it to its end; sets w_ns to the thread CPU time its three callers took
	kill -USR1 "$work_pid"
	wait "$work_pid" 2>/dev/null
	forget "$work_pid"
	w_ns=$(( $(json_field "$tmp/$1.out" caller_one) + $(json_field "$tmp/$1.out" caller_two) \
		+ $(json_field "$tmp/$1.out" caller_three) ))
}

# calibration: rounds in about 4 s of one CPU
if [ -z "${ROUNDS:-}" ]; then
	start_work calib 200
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

cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# bpf_ns PID: run_time_ns and run_cnt of the sampler, the one perf_event
# program (prog_type 7) PID holds, from its fd's fdinfo
bpf_ns() {
	local f t=0 c=0
	for f in /proc/"$1"/fdinfo/*; do
		grep -q '^prog_type:[[:space:]]*7$' "$f" 2>/dev/null || continue
		t=$(awk '/^run_time_ns:/ { print $2 }' "$f")
		c=$(awk '/^run_cnt:/ { print $2 }' "$f")
		break
	done
	echo "${t:-0} ${c:-0}"
}

# run CONFIG TAG: one run of the workload under CONFIG; appends its wall
# time to t_CONFIG and leaves the profile's shares in $tmp/TAG.shares
run() {
	local cfg=$1 tag=$2 freq mode p_pid i ns
	start_work "$tag" "$ROUNDS" || { say "  $cfg: the workload did not start"; return 1; }
	case $cfg in
	none) ;;
	q_*)
		freq=${cfg##*_}; mode=${cfg#q_}; mode=${mode%_*}
		start_qprofd "$tag" "$work_pid" --frequency "$freq" --unwind "$mode" --no-calibrate || return 1
		q_t0=$(cpu_ticks "$q_pid")
		read -r b_ns0 b_cnt0 < <(bpf_ns "$q_pid") ;;
	p_*)
		freq=${cfg##*_}; mode=${cfg#p_}; mode=${mode%_*}
		if [ "$mode" = dwarf ]; then set -- --call-graph dwarf; else set -- -g; fi
		perf record -e cpu-clock -F "$freq" "$@" -p "$work_pid" -o "$tmp/$tag.data" >"$tmp/$tag.perf" 2>&1 &
		p_pid=$!
		started_pids+=("$p_pid")
		for ((i = 0; i < ATTACH_TIMEOUT * 20; i++)); do
			has_perf_fd "$p_pid" && break
			sleep 0.05
		done ;;
	esac
	finish_work "$tag"
	eval "t_$cfg+=(\"$w_ns\")"
	case $cfg in
	q_*)
		read -r b_ns1 b_cnt1 < <(bpf_ns "$q_pid")
		echo "$((b_ns1 - b_ns0)) $((b_cnt1 - b_cnt0)) $(($(cpu_ticks "$q_pid") - q_t0))" >"$tmp/$cfg.cost"
		curl -s --max-time 120 --unix-socket "$sock" -o "$tmp/$tag.folded" \
			"http://localhost/api/cpu/folded?pid=$work_pid"
		curl -s --max-time 10 --unix-socket "$sock" -o "$tmp/$tag.status" "http://localhost/api/status"
		stop_qprofd
		folded_shares "$tmp/$tag.folded" >"$tmp/$tag.shares" ;;
	p_*)
		kill -INT "$p_pid" 2>/dev/null
		wait "$p_pid" 2>/dev/null
		forget "$p_pid"
		perf script -i "$tmp/$tag.data" -F comm,ip,sym --no-inline >"$tmp/$tag.script" 2>/dev/null
		perf_shares "$tmp/$tag.script" >"$tmp/$tag.shares" ;;
	esac
	cp "$tmp/$tag.out" "$tmp/$cfg.truth"
}

"$here/bpf_stats_hold.py" >"$tmp/stats.out" 2>&1 &
started_pids+=("$!")
wait_for_line "$tmp/stats.out" '^held' 10 "$!" || say "BPF statistics unavailable: $(cat "$tmp/stats.out")"

configs=(none q_dwarf_99 q_dwarf_999 q_fp_999)
[ $have_perf = 1 ] && configs+=(p_dwarf_99 p_dwarf_999 p_fp_999)
[ -n "${CONFIGS:-}" ] && read -r -a configs <<<"none $CONFIGS"
[ $have_perf = 0 ] && say "perf is not installed (Debian: linux-perf): its columns are skipped"
for c in "${configs[@]}"; do eval "t_$c=()"; done
for ((r = 1; r <= REPS; r++)); do
	for c in "${configs[@]}"; do
		run "$c" "$c.$r"
		[ "$c" != none ] && cp "$tmp/$c.$r.shares" "$tmp/$c.shares" 2>/dev/null
	done
done

say ""
say "1. overhead: median thread CPU time of $ROUNDS rounds over $REPS runs, slowdown against unprofiled"
eval "base=\$(median \"\${t_none[@]}\")"
printf '  %-26s %12s ns\n' "unprofiled" "$base"
for c in "${configs[@]}"; do
	[ "$c" = none ] && continue
	eval "m=\$(median \"\${t_$c[@]}\")"
	printf '  %-26s %12s ns  %+6.2f %%\n' "$c" "$m" "$(calc "($m - $base) * 100 / $base")"
done

say ""
say "2. shares of each caller (samples with it on the stack), 999 Hz runs of the last round"
t=$tmp/none.truth
c1=$(json_field "$t" caller_one); c2=$(json_field "$t" caller_two); c3=$(json_field "$t" caller_three)
printf '  %-14s %7s %7s %7s %9s %8s\n' profiler one two three "under(%)" samples
printf '  %-14s %7.3f %7.3f %7.3f\n' "truth (CPU)" "$(calc "$c1 / ($c1 + $c2 + $c3)")" \
	"$(calc "$c2 / ($c1 + $c2 + $c3)")" "$(calc "$c3 / ($c1 + $c2 + $c3)")"
for c in q_dwarf_999 q_fp_999 p_dwarf_999 p_fp_999; do
	[ -s "$tmp/$c.shares" ] || continue
	read -r a b d u n <"$tmp/$c.shares"
	if [ "$u" -gt 0 ]; then
		printf '  %-14s %7.3f %7.3f %7.3f %9.1f %8d\n' "$c" "$(calc "$a / $u")" "$(calc "$b / $u")" \
			"$(calc "$d / $u")" "$(calc "$u * 100 / $n")" "$n"
	else
		printf '  %-14s %7s %7s %7s %9.1f %8d\n' "$c" - - - 0 "$n"
	fi
done
say ""
say "3. qprofd per sample of the target (last round): BPF sampler ns (upper bound), qprofd CPU us"
hz=$(getconf CLK_TCK)
for c in q_dwarf_99 q_dwarf_999 q_fp_999; do
	[ -s "$tmp/$c.cost" ] && [ -s "$tmp/$c.shares" ] || continue
	read -r bns bcnt ticks <"$tmp/$c.cost"
	read -r a b d u n <"$tmp/$c.shares"
	[ "$n" -gt 0 ] || continue
	printf '  %-14s BPF %8.0f ns/sample (%d runs, %d samples)   qprofd %7.1f us/sample\n' "$c" \
		"$(calc "$bns / $n")" "$bcnt" "$n" "$(calc "$ticks * 1e6 / $hz / $n")"
done
[ -s "$tmp/q_dwarf_999.$REPS.status" ] && say "" && say "qprofd's unwinder (q_dwarf_999): $(grep -o '"unwind":{[^}]*}' "$tmp/q_dwarf_999.$REPS.status")"
exit 0
