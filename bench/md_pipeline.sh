#!/usr/bin/env bash
# bench/md_pipeline.sh - what qprof costs a market-data program of three
# threads (bench/md_pipeline.cpp: feed -> strategy -> gateway, 9 scopes, a
# value and a log a tick), all in one run. First the cost, FLAT ticks flat
# out (the strategy thread the bottleneck, so CPU a tick is work, not idle
# wake-ups):
#
#   off       built with QPROF_DISABLE (no marker): the baseline
#   detached  the markers, no qprofd
#   timer     each scope timed in process (two clock_gettime and a store)
#   selfring  the markers writing their rings with no qprofd (the program
#             raises its own semaphores): the writers' cost, no drain thread
#   ring      under qprofd with no collector flag (the default, the ring)
#   ring_nolog, ring_scopes  the same without the log, and without the log
#             and the value (md_pipeline_nolog, md_pipeline_scopes): the
#             cost by marker kind
#   bpf       under qprofd --collector bpf (BPF=0 leaves it out)
#
# then the capacity: the ring paced at RATE ticks/s for SECS.
#
# For each it prints the program's CPU time per tick (all threads, user and
# system), and the part of it that is work: without the waits of a thread
# with nothing to do (each a 20 us sleep; how many there are depends on how
# the threads and anything else share the CPUs, not on what a tick costs),
# and, under qprofd, qprofd's own CPU (a share of one core) and the
# accounting: counted + lost == written, for scopes (9 a tick) and values
# (1 a tick), exact unless the ring says its loss is an estimate ("~").
# Then the ratios: each one's added CPU a tick against the timer's (the
# in-process baseline of the same run), and its slowdown against off.
#
#   sudo bench/md_pipeline.sh [BUILD_DIR]
#   FLAT=N ticks flat out (default 500000)
#   RATE=N ticks/s (default 150000: 1.35 M scopes/s)   SECS=S (default 60)
#   BPF=0  skip the BPF collector
#
# Figures are printed, never judged: the exit status is 0 when every run
# ran and every count adds up, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
bin=$build/bench
QPROFD=${QPROFD:-$build/daemon/qprofd}
RATE=${RATE:-150000}
SECS=${SECS:-60}
FLAT=${FLAT:-500000}
ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}
for p in md_pipeline md_pipeline_off md_pipeline_timer md_pipeline_nolog md_pipeline_scopes; do
	[ -x "$bin/$p" ] || { echo "missing $bin/$p: cmake --build $build --target benchmarks" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (qprofd): skipped" >&2; exit 77; }
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
tmp=$(mktemp -d /tmp/qprof-mdbench.XXXXXX)
. "$here/lib.sh"
bad=0

field() { awk -v k="$2" '/^md_pipeline ticks/ { for (i = 1; i <= NF; i++) if ($i == k) print $(i + 1) }' "$1"; }
q_cpu() { awk '{ print $14 + $15 }' "/proc/$q_pid/stat" 2>/dev/null; }	# clock ticks
api() { curl -s --max-time 60 --unix-socket "$sock" "http://qprofd$1"; }

# run TAG PROG TICKS RATE [QPROFD_ARGS...]: sets cpt (ns of CPU a tick) and
# wpt (of work: without the idle waits)
# and, under qprofd (any argument, "-" for none), qcpu (% of a core) and the
# checks
run() {
	local tag=$1 prog=$2 TICKS=$3 RATE=$4 lp self=()
	shift 4
	[ "${1:-}" = --self-ring ] && { self=(--self-ring); shift; }
	rm -f "$tmp/go.$tag" "$tmp/end.$tag"
	"$bin/$prog" "$TICKS" "$RATE" --start-file "$tmp/go.$tag" --end-file "$tmp/end.$tag" "${self[@]}" >"$tmp/$tag.out" 2>&1 &
	lp=$!
	started_pids+=("$lp")
	wait_for_line "$tmp/$tag.out" '^ready ' 10 "$lp" || { say "$tag: did not start"; bad=1; return 1; }
	qcpu=
	if [ $# -gt 0 ]; then
		local a=("$@")
		[ "$1" = - ] && a=()
		start_qprofd "$tag" "$lp" "${a[@]}" || { kill "$lp"; wait "$lp"; forget "$lp"; bad=1; return 1; }
		local c0 w0 c1 w1
		c0=$(q_cpu)
		w0=$(date +%s.%N)
	fi
	touch "$tmp/go.$tag"
	wait_for_line "$tmp/$tag.out" '^done' $((SECS * 4 + 600)) "$lp" || { say "$tag: did not finish"; bad=1; }
	cpt=$(calc "$(field "$tmp/$tag.out" cpu_ns) / $TICKS")
	wpt=$(calc "($(field "$tmp/$tag.out" cpu_ns) - $(field "$tmp/$tag.out" idle_ns)) / $TICKS")
	local line
	line=$(printf '%-11s %9.1f ns of CPU a tick (%7.1f of work, %5.3f idle waits a tick), %6.0f ticks/s' "$tag" \
		"$cpt" "$wpt" "$(calc "$(field "$tmp/$tag.out" idles) / $TICKS")" \
		"$(calc "$TICKS / ($(field "$tmp/$tag.out" wall_ns) / 1e9)")")
	if [ $# -gt 0 ]; then
		c1=$(q_cpu)
		w1=$(date +%s.%N)
		qcpu=$(calc "100 * ($c1 - $c0) / $(getconf CLK_TCK) / ($w1 - $w0)")
		# quiescent: every ring read up to its head
		for _ in $(seq 300); do
			api /api/status >"$tmp/st.json"
			[ "$(jq --argjson p "$lp" '[.targets[] | select(.pid == $p) | .ring.unread // 0] | add // 0' \
				"$tmp/st.json")" = 0 ] && break
			sleep 0.1
		done
		api "/api/scopes?pid=$lp" >"$tmp/sc.json"
		api "/api/values?pid=$lp" >"$tmp/va.json"
		local coll sc ls va lv est w_sc w_va ok
		coll=$(jq -r --argjson p "$lp" '.targets[] | select(.pid == $p) | .collector' "$tmp/st.json")
		sc=$(jq '[.scopes[] | select(.kind == "scope") | .count] | add // 0' "$tmp/sc.json")
		va=$(jq '[.values[] | .count] | add // 0' "$tmp/va.json")
		ls=$(jq --argjson p "$lp" '[.targets[] | select(.pid == $p) | .ring.lost_scopes // 0] | add // 0' "$tmp/st.json")
		lv=$(jq --argjson p "$lp" '[.targets[] | select(.pid == $p) | .ring.lost_values // 0] | add // 0' "$tmp/st.json")
		est=$(jq -r --argjson p "$lp" '[.targets[] | select(.pid == $p) | .ring.lost_estimated // false] | first' \
			"$tmp/st.json")
		if [ "$coll" = bpf ]; then	# counted one by one: every drop reason
			ls=$(jq '[.scopes.dropped_by_reason[]] | add // 0' "$tmp/st.json")
			lv=$(jq '.values.lost // 0' "$tmp/st.json")
		fi
		w_sc=$(field "$tmp/$tag.out" scopes)
		w_va=$(field "$tmp/$tag.out" values)
		ok=1
		if [ "$est" = true ]; then
			[ "$sc" -le "$w_sc" ] && [ "$va" -le "$w_va" ] || ok=0
		else
			[ $((sc + ls)) = "$w_sc" ] && [ $((va + lv)) = "$w_va" ] || ok=0
		fi
		[ "$ok" = 1 ] || bad=1
		line="$line; qprofd ($coll) $qcpu % of a core; scopes $sc + lost $([ "$est" = true ] && echo "~")$ls of $w_sc, values $va + lost $lv of $w_va: $([ "$ok" = 1 ] && echo "adds up" || echo "DOES NOT ADD UP")"
	fi
	say "$line"
	touch "$tmp/end.$tag"
	wait "$lp"
	forget "$lp"
	[ $# -gt 0 ] && stop_qprofd
	return 0
}

say "== md_pipeline: 3 threads, 9 scopes + a value + a log a tick; $FLAT ticks flat out; load $(cut -d' ' -f1-3 /proc/loadavg)"
# ROUNDS rounds of the runs, interleaved, so that a change of the machine's
# load weighs on all of them alike; each figure is the median of its rounds
ROUNDS=${ROUNDS:-1}
kinds=(off detached timer selfring ring ring_nolog ring_scopes)
[ "${BPF:-1}" = 1 ] && kinds+=(bpf)
for k in "${kinds[@]}"; do eval "all_c_$k=(); all_w_$k=()"; done
for round in $(seq "$ROUNDS"); do
	[ "$ROUNDS" -gt 1 ] && say "-- round $round; load $(cut -d' ' -f1-3 /proc/loadavg)"
	for k in "${kinds[@]}"; do
		case $k in
		off) run off md_pipeline_off "$FLAT" 0 ;;
		detached) run detached md_pipeline "$FLAT" 0 ;;
		timer) run timer md_pipeline_timer "$FLAT" 0 ;;
		selfring) run selfring md_pipeline "$FLAT" 0 --self-ring ;;
		ring) run ring md_pipeline "$FLAT" 0 - ;;
		ring_nolog) run ring_nolog md_pipeline_nolog "$FLAT" 0 - ;;
		ring_scopes) run ring_scopes md_pipeline_scopes "$FLAT" 0 - ;;
		bpf) run bpf md_pipeline "$FLAT" 0 --collector bpf ;;
		esac && eval "all_c_$k+=($cpt); all_w_$k+=($wpt)"
	done
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for k in "${kinds[@]}"; do
	eval "c_$k=\$(median \"\${all_c_$k[@]}\"); w_$k=\$(median \"\${all_w_$k[@]}\")"
done
c_det=${c_detached:-}; c_tim=${c_timer:-}; w_det=${w_detached:-}; w_tim=${w_timer:-}
say ""
say "== capacity: the ring at $RATE ticks/s ($(calc "9 * $RATE / 1e6") M scopes/s) for $SECS s"
run paced md_pipeline "$(awk -v r="$RATE" -v s="$SECS" 'BEGIN { printf "%d", r * s }')" "$RATE" -
say ""
say "== ratios (flat out, CPU a tick added over off, medians of $ROUNDS round(s); load now $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "${c_off:-}" ] && [ -n "${c_tim:-}" ]; then
	t_add=$(calc "$c_tim - $c_off")
	tw_add=$(calc "$w_tim - $w_off")
	for x in detached selfring ring ring_nolog ring_scopes bpf; do
		v=$(eval echo "\${c_$x:-}")
		w=$(eval echo "\${w_$x:-}")
		[ -n "$v" ] || continue
		a=$(calc "$v - $c_off")
		aw=$(calc "$w - $w_off")
		say "  $(printf '%-11s' "$x") all CPU +$a ns a tick: $(calc "($t_add > 0 ? $a / $t_add : 0)") x the timer's +$t_add;" \
			"work +$aw ns: $(calc "($tw_add > 0 ? $aw / $tw_add : 0)") x the timer's +$tw_add; slowdown against off $(calc "100 * $a / $c_off") %"
	done
fi
exit "$bad"
