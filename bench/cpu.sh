#!/usr/bin/env bash
# bench/cpu.sh - CPU sampling benchmarks of qprofd, printed as ratios against
# baselines measured in the same run (bench/README.md, "CPU sampling").
#
#   bench/cpu.sh [BUILD_DIR]          (default: build)
#
#   1. overhead: slowdown of bench/cpu_work under qprofd --pid at 99 Hz and
#      999 Hz against the same program unprofiled (interleaved, medians);
#      perf record -F 999 on the same program as a reference;
#   2. accuracy: per-function self share (leaf frame) from qprofd's folded
#      output against perf record -F 999 -g on the same run;
#   3. export cost: GET /api/cpu/folded of a ~100k-sample profile against
#      perf script on perf's samples of the same run.
#
# Environment:
#   QPROFD=PATH          qprofd to test (default BUILD_DIR/daemon/qprofd)
#   REPS=N               runs per configuration in 1.               (default 5)
#   OVERHEAD_SECONDS=S   length of one run in 1. (unprofiled)        (default 3)
#   ACC_SECONDS=S        length of the run in 2.                     (default 10)
#   EXPORT_SECONDS=S     length of the run in 3.                     (default 52)
#   THREADS=T            worker threads in 2. and 3.            (default nproc)
#   EXPORT_REPS=N        timed exports of each kind in 3.            (default 3)
#   ATTACH_TIMEOUT=S     seconds to wait for qprofd/perf to attach   (default 60)
#
# Both profilers sample the software cpu-clock event at the same frequency
# (perf gets -e cpu-clock explicitly). What cannot run (not root, no perf, no
# qprofd, no curl) is reported as skipped; the rest still runs. Goals are
# printed next to the figures; the exit status does not depend on them.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
work=$build/bench/cpu_work
QPROFD=${QPROFD:-$build/daemon/qprofd}
REPS=${REPS:-5}
OVERHEAD_SECONDS=${OVERHEAD_SECONDS:-3}
ACC_SECONDS=${ACC_SECONDS:-10}
EXPORT_SECONDS=${EXPORT_SECONDS:-52}
THREADS=${THREADS:-$(nproc)}
EXPORT_REPS=${EXPORT_REPS:-3}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}

[ -x "$work" ] || { echo "missing $work: cmake --build $build --target benchmarks" >&2; exit 2; }

tmp=$(mktemp -d /tmp/qprof-cpu-bench.XXXXXX)
. "$here/lib.sh"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
now_ns() { local t=$EPOCHREALTIME; echo "${t/./}000"; }


# --- what can run ----------------------------------------------------------
is_root=0
[ "$(id -u)" = 0 ] && is_root=1
have_perf=0
command -v perf >/dev/null && perf version >/dev/null 2>&1 && have_perf=1
q_why=
if [ $is_root = 0 ]; then q_why="needs root (qprofd loads BPF programs)"
elif [ ! -x "$QPROFD" ]; then q_why="no qprofd at $QPROFD; set QPROFD=PATH"
elif ! command -v curl >/dev/null; then q_why="curl is needed to talk to qprofd"
fi
p_why=
[ $have_perf = 0 ] && p_why="perf is not installed (Debian: linux-perf)"

# --- the workload ----------------------------------------------------------
# start_work ROUNDS THREADS TAG [--hold]: cpu_work waiting for its start file
start_work() {
	local rounds=$1 threads=$2 tag=$3
	shift 3
	rm -f "$tmp/go.$tag"
	"$work" "$rounds" --threads "$threads" --start-file "$tmp/go.$tag" "$@" >"$tmp/$tag.out" 2>&1 &
	work_pid=$!
	started_pids+=("$work_pid")
	wait_for_line "$tmp/$tag.out" '^ready ' 10 "$work_pid"
}
elapsed_of() { awk '/elapsed_ns/ { for (i = 1; i <= NF; i++) if ($i == "elapsed_ns") print $(i + 1) }' "$1"; }
stop_work() { # after --hold
	kill "$work_pid" 2>/dev/null
	wait "$work_pid" 2>/dev/null
	forget "$work_pid"
}

# calibration: rounds per second of one thread, nobody attached
"$work" 20000 >"$tmp/calib.out" || { echo "cpu_work failed" >&2; exit 1; }
ns_per_round=$(calc "$(elapsed_of "$tmp/calib.out") / 20000")
rounds_for() { awk -v s="$1" -v n="$ns_per_round" 'BEGIN { printf "%d", s * 1e9 / n }'; }
say "cpu_work: $ns_per_round ns per round (work_a/work_b/work_c = 5000/3000/2000 iterations), $(nproc) CPUs"

# --- qprofd ------------------------------------------------------------------
folded() { # PID OUTFILE: the lifetime profile of PID
	curl -s --max-time 120 --unix-socket "$sock" -o "$2" -w '%{http_code}' "http://localhost/api/cpu/folded?pid=$1"
}
folded_samples() { awk '{ n += $NF } END { print n + 0 }' "$1"; }

# --- perf ----------------------------------------------------------------------
has_perf_fd() { # PID: holds a perf_event file descriptor
	local f
	for f in /proc/"$1"/fd/*; do
		[[ $(readlink "$f" 2>/dev/null) == *perf_event* ]] && return 0
	done
	return 1
}
# start_perf PID TAG: perf record -e cpu-clock -F 999 -g -p PID; waits until
# perf has opened its events. Sets p_pid and p_data.
start_perf() {
	local pid=$1 tag=$2 i
	p_data=$tmp/$tag.perf.data
	perf record -e cpu-clock -F 999 -g -p "$pid" -o "$p_data" >"$tmp/$tag.perf.out" 2>&1 &
	p_pid=$!
	started_pids+=("$p_pid")
	for ((i = 0; i < ATTACH_TIMEOUT * 20; i++)); do
		kill -0 "$p_pid" 2>/dev/null || break
		if has_perf_fd "$p_pid"; then
			sleep 0.3	# the remaining threads' events
			return 0
		fi
		sleep 0.05
	done
	say "  perf record did not start: $(tail -3 "$tmp/$tag.perf.out")"
	kill -INT "$p_pid" 2>/dev/null
	wait "$p_pid" 2>/dev/null
	forget "$p_pid"
	return 1
}
stop_perf() {
	kill -INT "$p_pid" 2>/dev/null
	wait "$p_pid" 2>/dev/null
	forget "$p_pid"
}

# Leaf (self) shares: "NAME COUNT" lines, kernel leaves merged as [kernel],
# symbol versions (@GLIBC_...) dropped so both tools name libc alike.
leaf_qprof() { # FOLDED
	awk '{ c = $NF; $NF = ""; sub(/ +$/, ""); n = split($0, f, ";"); leaf = f[n]
	       if (leaf ~ /_\[k\]$/) leaf = "[kernel]"; sub(/@.*/, "", leaf); s[leaf] += c }
	     END { for (k in s) print k, s[k] }' "$1"
}
leaf_perf() { # PERF_DATA: fold perf script ourselves, one count per sample
	perf script -i "$1" -F comm,ip,sym,dso 2>/dev/null | awk '
		/^[^ \t]/ { want = 1; next }
		/^[ \t]/ && want { want = 0; line = $0; sub(/^[ \t]+/, "", line)
			addr = line; sub(/ .*/, "", addr); sym = line; sub(/^[^ ]+ /, "", sym)
			sub(/ \([^()]*\)$/, "", sym)
			if (line ~ /\[kernel\.kallsyms\]\)$/ || addr ~ /^ffffffff/) sym = "[kernel]"
			sub(/\+0x[0-9a-f]+$/, "", sym); sub(/@.*/, "", sym)
			s[sym]++ }
		END { for (k in s) print k, s[k] }'
}
# compare_shares QPROF_LEAVES PERF_LEAVES: prints the table, sets max_diff
compare_shares() {
	awk -v q="$1" -v p="$2" '
		BEGIN {
			while ((getline l < q) > 0) { c = l; sub(/.* /, "", c); n = l; sub(/ [^ ]*$/, "", n); qs[n] = c; qt += c; all[n] = 1 }
			while ((getline l < p) > 0) { c = l; sub(/.* /, "", c); n = l; sub(/ [^ ]*$/, "", n); ps[n] = c; pt += c; all[n] = 1 }
			if (!qt || !pt) { print "max 0 nodata"; exit }
			printf "    %-24s %9s %9s %8s\n", "function (self)", "qprof %", "perf %", "diff"
			for (n in all) {
				a = 100 * qs[n] / qt; b = 100 * ps[n] / pt; d = a - b; ad = d < 0 ? -d : d
				if (ad > max) { max = ad; maxn = n }
				if (a >= 0.5 || b >= 0.5) printf "    %-24s %9.2f %9.2f %+8.2f\n", n, a, b, d
				else { oq += a; op += b }
			}
			printf "    %-24s %9.2f %9.2f %+8.2f\n", "(others, each < 0.5%)", oq, op, oq - op
			w = qs["work_a"] + qs["work_b"] + qs["work_c"]; v = ps["work_a"] + ps["work_b"] + ps["work_c"]
			if (w && v) printf "    work_a/b/c among themselves (designed 50/30/20): qprof %.1f/%.1f/%.1f, perf %.1f/%.1f/%.1f\n",
				100 * qs["work_a"] / w, 100 * qs["work_b"] / w, 100 * qs["work_c"] / w,
				100 * ps["work_a"] / v, 100 * ps["work_b"] / v, 100 * ps["work_c"] / v
			printf "max %.2f %s\n", max, maxn
		}' </dev/null
}

# ---------------------------------------------------------------------------
say ""
say "== 1) sampling overhead: cpu_work (1 thread, ~${OVERHEAD_SECONDS} s) unprofiled vs qprofd --pid at 99 and 999 Hz ($REPS runs each, interleaved; perf record at 999 Hz as a reference)"
if [ -n "$q_why" ]; then
	say "  skipped ($q_why)"
	add_summary "overhead: skipped ($q_why)"
else
	rounds=$(rounds_for "$OVERHEAD_SECONDS")
	declare -A el=()
	ok=1
	for ((r = 1; r <= REPS && ok; r++)); do
		# rotate the order so that no configuration always runs first
		cfgs=(0 99 999)
		[ -z "$p_why" ] && cfgs+=(perf)
		order=
		for ((k = 0; k < ${#cfgs[@]}; k++)); do order="$order ${cfgs[$(((k + r - 1) % ${#cfgs[@]}))]}"; done
		line="  run $r:"
		for hz in $order; do
			start_work "$rounds" 1 ov || { say "  cpu_work did not start"; ok=0; break; }
			if [ "$hz" = perf ]; then
				start_perf "$work_pid" ov || { stop_work; p_why="perf record did not start"; continue; }
			elif [ "$hz" != 0 ]; then
				start_qprofd ov "$work_pid" --frequency "$hz" || { stop_work; ok=0; break; }
			fi
			touch "$tmp/go.ov"
			wait "$work_pid"
			forget "$work_pid"
			e=$(elapsed_of "$tmp/ov.out")
			el[$hz]="${el[$hz]:-} $e"
			if [ "$hz" = perf ]; then
				stop_perf	# perf record ends with its target anyway
				line="$line  perf-999Hz $(calc "$e / 1e6") ms"
			elif [ "$hz" != 0 ]; then
				code=$(folded "$work_pid" "$tmp/ov.folded")
				n=$(folded_samples "$tmp/ov.folded")
				stop_qprofd
				line="$line  ${hz}Hz $(calc "$e / 1e6") ms ($n samples)"
			else
				line="$line  unprofiled $(calc "$e / 1e6") ms"
			fi
		done
		say "$line"
	done
	if [ $ok = 1 ]; then
		# shellcheck disable=SC2086
		m0=$(median ${el[0]}) m99=$(median ${el[99]}) m999=$(median ${el[999]})
		s99=$(calc "100 * ($m99 / $m0 - 1)")
		s999=$(calc "100 * ($m999 / $m0 - 1)")
		say "  medians: unprofiled $(calc "$m0 / 1e6") ms, 99 Hz $(calc "$m99 / 1e6") ms, 999 Hz $(calc "$m999 / 1e6") ms"
		# shellcheck disable=SC2086
		min0=$(printf '%s\n' ${el[0]} | sort -g | sed -n 1p) max0=$(printf '%s\n' ${el[0]} | sort -g | tail -1)
		# shellcheck disable=SC2086
		min99=$(printf '%s\n' ${el[99]} | sort -g | sed -n 1p) min999=$(printf '%s\n' ${el[999]} | sort -g | sed -n 1p)
		say "  noise: the unprofiled runs spread over $(calc "100 * ($max0 / $min0 - 1)") % (max/min); a slowdown below that is not resolved by this run"
		say "  fastest runs (other load only ever slows a run): 99 Hz $(calc "100 * ($min99 / $min0 - 1)") %, 999 Hz $(calc "100 * ($min999 / $min0 - 1)") %"
		noise=$(calc "100 * ($max0 / $min0 - 1)")
		# a verdict only when the unprofiled runs agree better than the goal
		ovgoal() { # SLOWDOWN LIMIT
			if [ "$(awk -v n="$noise" -v l="$2" 'BEGIN { print (n > l) }')" = 1 ]; then
				echo "not resolved: noise $noise % > goal; $(goal "$1" "<=" "$2") on the medians"
			else
				goal "$1" "<=" "$2"
			fi
		}
		v99=$(ovgoal "$s99" 1) v999=$(ovgoal "$s999" 3)
		say "  slowdown at  99 Hz: $(calc "$m99 / $m0") -> $s99 % (goal <= 1 %: $v99)"
		say "  slowdown at 999 Hz: $(calc "$m999 / $m0") -> $s999 % (goal <= 3 %: $v999)"
		add_summary "overhead 99 Hz: $s99 % (goal <= 1 %: $v99)"
		add_summary "overhead 999 Hz: $s999 % (goal <= 3 %: $v999)"
		if [ -n "${el[perf]:-}" ]; then
			# shellcheck disable=SC2086
			mp=$(median ${el[perf]})
			sp=$(calc "100 * ($mp / $m0 - 1)")
			say "  reference, perf record -e cpu-clock -F 999 -g -p PID: $(calc "$mp / 1e6") ms -> $sp % slowdown"
			add_summary "overhead of perf record at 999 Hz (reference): $sp %"
		fi
	else
		add_summary "overhead: not measured (see above)"
	fi
fi

# ---------------------------------------------------------------------------
say ""
say "== 2) accuracy: per-function self share, qprofd vs perf record -e cpu-clock -F 999 -g, same run (cpu_work, $THREADS threads, ~${ACC_SECONDS} s)"
if [ -n "$q_why" ] || [ -n "$p_why" ]; then
	say "  skipped (${q_why:-$p_why})"
	add_summary "accuracy: skipped (${q_why:-$p_why})"
elif start_work "$(rounds_for "$ACC_SECONDS")" "$THREADS" acc --hold; then
	if start_qprofd acc "$work_pid" --frequency 999; then
		if start_perf "$work_pid" acc; then
			touch "$tmp/go.acc"
			wait_for_line "$tmp/acc.out" '^done' $((ACC_SECONDS * 10 + 60)) "$work_pid"
			stop_perf
			code=$(folded "$work_pid" "$tmp/acc.folded")
			leaf_qprof "$tmp/acc.folded" >"$tmp/acc.qleaf"
			leaf_perf "$p_data" >"$tmp/acc.pleaf"
			nq=$(folded_samples "$tmp/acc.folded")
			np=$(awk '{ n += $NF } END { print n + 0 }' "$tmp/acc.pleaf")
			say "  samples: qprofd $nq (HTTP $code), perf $np; elapsed $(calc "$(elapsed_of "$tmp/acc.out") / 1e6") ms"
			compare_shares "$tmp/acc.qleaf" "$tmp/acc.pleaf" >"$tmp/acc.cmp"
			grep -v '^max ' "$tmp/acc.cmp"
			read -r _ max_diff max_name <<<"$(grep '^max ' "$tmp/acc.cmp")"
			say "  largest per-function share difference: $max_diff points ($max_name) (goal <= 2: $(goal "$max_diff" "<=" 2))"
			add_summary "accuracy: max self-share difference $max_diff points ($max_name) (goal <= 2: $(goal "$max_diff" "<=" 2))"
		else
			add_summary "accuracy: not measured (perf record did not start)"
		fi
		stop_qprofd
	else
		add_summary "accuracy: not measured (qprofd did not attach)"
	fi
	stop_work
else
	say "  cpu_work did not start"
fi

# ---------------------------------------------------------------------------
say ""
say "== 3) export cost: GET /api/cpu/folded vs perf script on the samples of one run (cpu_work, $THREADS threads, ~${EXPORT_SECONDS} s, both at 999 Hz)"
if [ -n "$q_why" ] || [ -n "$p_why" ]; then
	say "  skipped (${q_why:-$p_why})"
	add_summary "export: skipped (${q_why:-$p_why})"
elif start_work "$(rounds_for "$EXPORT_SECONDS")" "$THREADS" ex --hold; then
	if start_qprofd ex "$work_pid" --frequency 999; then
		if start_perf "$work_pid" ex; then
			touch "$tmp/go.ex"
			wait_for_line "$tmp/ex.out" '^done' $((EXPORT_SECONDS * 10 + 60)) "$work_pid"
			stop_perf
			qt=() pt=()
			for ((r = 1; r <= EXPORT_REPS; r++)); do
				t0=$(now_ns)
				code=$(curl -s --max-time 300 --unix-socket "$sock" -o /dev/null -w '%{http_code}' \
					"http://localhost/api/cpu/folded?pid=$work_pid")
				t1=$(now_ns)
				perf script -i "$p_data" >/dev/null 2>&1
				t2=$(now_ns)
				[ "$code" = 200 ] || say "  warning: GET /api/cpu/folded answered HTTP $code"
				qt+=("$((t1 - t0))") pt+=("$((t2 - t1))")
				say "  run $r: qprofd folded $(calc "($t1 - $t0) / 1e6") ms, perf script $(calc "($t2 - $t1) / 1e6") ms"
			done
			# untimed: what each one exported
			folded "$work_pid" "$tmp/ex.folded" >/dev/null
			nq=$(folded_samples "$tmp/ex.folded")
			np=$(perf script -i "$p_data" -F comm 2>/dev/null | wc -l)
			pbytes=$(perf script -i "$p_data" 2>/dev/null | wc -c)
			say "  samples: qprofd $nq ($(wc -l <"$tmp/ex.folded") folded lines, $(wc -c <"$tmp/ex.folded") bytes), perf $np ($pbytes bytes of perf script text, perf.data $(stat -c %s "$p_data") bytes); elapsed $(calc "$(elapsed_of "$tmp/ex.out") / 1e6") ms"
			mq=$(median "${qt[@]}") mp=$(median "${pt[@]}")
			ratio=$(calc "$mq / $mp")
			say "  medians: qprofd folded $(calc "$mq / 1e6") ms, perf script $(calc "$mp / 1e6") ms"
			say "  export ratio qprof / perf script = $ratio (goal < 1: $(goal "$ratio" "<" 1))"
			add_summary "export ($nq qprofd / $np perf samples): qprof/perf script = $ratio (goal < 1: $(goal "$ratio" "<" 1))"
			# the same comparison as 2), on this larger run
			leaf_qprof "$tmp/ex.folded" >"$tmp/ex.qleaf"
			leaf_perf "$p_data" >"$tmp/ex.pleaf"
			read -r _ d n <<<"$(compare_shares "$tmp/ex.qleaf" "$tmp/ex.pleaf" | grep '^max ')"
			say "  (accuracy on this run too: largest self-share difference $d points, $n)"
			add_summary "accuracy on the export run: max self-share difference $d points ($n)"
		else
			add_summary "export: not measured (perf record did not start)"
		fi
		stop_qprofd
	else
		add_summary "export: not measured (qprofd did not attach)"
	fi
	stop_work
else
	say "  cpu_work did not start"
fi

say ""
say "== summary"
for s in "${summary[@]}"; do say "  $s"; done
exit 0
