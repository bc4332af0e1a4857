#!/usr/bin/env bash
# bench/soak.sh - the soak: a workload running nested qprof scopes
# flat out on several threads (bench/soak_work.c), qprofd --pid on it, every
# route of the API polled in a loop, qprofd's RSS sampled; at the end the
# event rate, the RSS drift and every counter, with the workload's own counts
# set against qprofd's, and PASS or FAIL.
#
#   bench/soak.sh [BUILD_DIR]              (default: build; needs root and BPF)
#
# Environment:
#   SOAK_SECONDS=S     how long the workload runs under qprofd (default 1800)
#   SOAK_THREADS=N     workload threads (default 4: an attached scope costs about
#                      0.85 us, so 1 M events/s needs most of both cores here)
#   SOAK_RATE=R        whole scopes/s over all threads, paced (each thread
#                      R / N, in 1 ms steps); unset or 0: flat out
#   SOAK_WARMUP=S      RSS reference: the first sample at or after S s (default 620:
#                      the CPU table keeps an idle key 600 s, so it fills until then)
#   SOAK_RSS_EVERY=S   seconds between RSS samples (default 10)
#   SOAK_RSS_TOL=P     allowed RSS drift from the reference, % (default 5)
#   SOAK_MIN_RATE=R    scope events/s to reach; 0: print the rate, no goal
#                      (default 1000000). A scope event is one hit of a scope
#                      marker, enter or exit (what the BPF collector handles):
#                      a measured scope is two of them. Whole scopes/s are
#                      printed beside it.
#   SOAK_LOG=FILE      keep the timeline (every RSS sample with the counters)
#   QPROFD=PATH        qprofd to test (default BUILD_DIR/daemon/qprofd)
#   SOAK_COLLECTOR=C   qprofd --collector C (ring or bpf; default: qprofd's
#                      own default, the ring).
#   SOAK_EST_TOL=P     on the ring, how far (% of the true loss, plus 16) an
#                      estimated loss may be from the workload's own count of
#                      what qprofd missed (default 10; see below)
#
# PASS needs all of: every poll answered 200; after the warm-up every RSS
# sample within +-SOAK_RSS_TOL % of the reference; for scopes, values, marks
# and logs, qprofd measured no more than the workload did and measured plus
# counted-as-lost is at least what the workload did (nothing lost silently);
# CPU samples were kept and at most 1 % of them were lost (a workload that
# writes flat out must still get its CPU profile);
# the rate at least SOAK_MIN_RATE. Exit 0 PASS, 1 FAIL, 2 bad setup, 77 no BPF.
#
# On the ring, a lapped stretch is counted in records, exactly (per ring:
# base + read + lost == head, nothing unread at the end: checked); the
# events in it are counted one by one only for scopes open across it, and
# are otherwise the lost records shared out by the mix of records read
# (status ring.lost_scopes, lost_marks, lost_values, flagged
# lost_estimated, printed with "~" by qprof-cli). Where a kind's loss is
# such an estimate, the check is: measured <= done, and the counted loss
# within SOAK_EST_TOL % (+16) of done - measured. Logs lost on the ring are
# in its lost_other_records, records not messages: measured <= done, and a
# loss there whenever messages are missing.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
QPROFD=${QPROFD:-$build/daemon/qprofd}
WORK=$build/bench/soak_work
SOAK_SECONDS=${SOAK_SECONDS:-1800}
SOAK_THREADS=${SOAK_THREADS:-4}
SOAK_WARMUP=${SOAK_WARMUP:-620}
SOAK_RSS_EVERY=${SOAK_RSS_EVERY:-10}
SOAK_RSS_TOL=${SOAK_RSS_TOL:-5}
SOAK_MIN_RATE=${SOAK_MIN_RATE:-1000000}

for t in "$QPROFD" "$WORK"; do
	[ -x "$t" ] || { echo "missing $t: cmake --build $build" >&2; exit 2; }
done
for c in curl jq; do
	command -v "$c" >/dev/null || { echo "soak.sh needs $c (apt-get install $c)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "soak.sh needs root (BPF)"; exit 77; }

tmp=$(mktemp -d /tmp/qprof-soak.XXXXXX)
. "$here/lib.sh"

fail=0
verdict() { # NAME OK(0/1) TEXT
	if [ "$2" = 1 ]; then
		say "  PASS $1: $3"
	else
		say "  FAIL $1: $3"
		fail=1
	fi
}

# api ROUTE [OUT]: GET over the socket; prints the HTTP status
api() {
	curl -s --max-time 60 --unix-socket "$sock" -o "${2:-/dev/null}" -w '%{http_code}' "http://qprofd$1"
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$q_pid/status" 2>/dev/null; }

# --- the workload, waiting for its start file ---------------------------------
pace=()
[ "${SOAK_RATE:-0}" -gt 0 ] && pace=(--rate "$((SOAK_RATE / SOAK_THREADS))")
"$WORK" "$SOAK_THREADS" --start-file "$tmp/start" --stop-file "$tmp/stop" "${pace[@]}" >"$tmp/work.out" 2>&1 &
w_pid=$!
started_pids+=("$w_pid")
wait_for_line "$tmp/work.out" '^ready ' 30 "$w_pid" || { say "soak_work did not start"; exit 2; }

ATTACH_TIMEOUT=${ATTACH_TIMEOUT:-60}
if ! start_qprofd soak "$w_pid" --report-dir "$tmp/reports" ${SOAK_COLLECTOR:+--collector "$SOAK_COLLECTOR"}; then
	grep -q 'BPF' "$tmp/soak.qprofd" && exit 77
	exit 2
fi
say "soak: $SOAK_THREADS workload threads (pid $w_pid, $([ ${#pace[@]} -gt 0 ] && echo "paced at ${pace[1]} scopes/s each" || echo "flat out")), qprofd pid $q_pid, $SOAK_SECONDS s," \
	"RSS every $SOAK_RSS_EVERY s; load $(cut -d' ' -f1-3 /proc/loadavg)"

events() { api /api/status "$tmp/st.json" >/dev/null && jq -r '.scopes.events' "$tmp/st.json"; }
ev0=$(events)
t0=$(date +%s.%N)
touch "$tmp/start"

routes=(/api/status /api/scopes "/api/scopes?pid=$w_pid" "/api/scopes/slowest?pid=$w_pid&name=soak_inner" /api/values
	"/api/logs?since=0" /api/cpu/folded /pprof/profile /api/cpu/flamegraph /metrics /api/report /api/targets
	"/api/threads?pid=$w_pid" "/api/thread/stacks?pid=$w_pid")
# the flight recorder's trace (/api/trace) too, every SOAK_TRACE_EVERY s (120): a trace of a
# workload this fast takes long to build (it is not in the loop above)
trace_every=${SOAK_TRACE_EVERY:-120}
next_trace=$(($(date +%s) + 30))
traces=0
polls=0
bad=0
rss=()
next_rss=0
start_s=$(date +%s)
end_s=$((start_s + SOAK_SECONDS))
while :; do
	now=$(date +%s)
	if [ "$now" -ge "$next_rss" ]; then
		r=$(rss_kb)
		[ -n "$r" ] || { say "qprofd (pid $q_pid) is gone"; exit 1; }
		rss+=("$((now - start_s)) $r")
		# the counters beside it: events, CPU samples and losses over time
		if api /api/status "$tmp/tick.json" >/dev/null; then
			jq -r --arg t "$((now - start_s))" --arg r "$r" --argjson p "$w_pid" \
				'"\($t) \($r) \(.scopes.events) \(.cpu.samples) \(.cpu.lost) \(.scopes.dropped) \(.cpu.table_bytes // 0) \(.cpu.aged // 0) \([.targets[] | select(.pid == $p) | .ring.bytes // 0] | add // 0)"' \
				"$tmp/tick.json" >>"$tmp/timeline.txt"
		fi
		next_rss=$((now + SOAK_RSS_EVERY))
	fi
	[ "$now" -ge "$end_s" ] && break
	if [ "$trace_every" -gt 0 ] && [ "$now" -ge "$next_trace" ]; then
		code=$(curl -s --max-time 120 --unix-socket "$sock" -o /dev/null -w '%{http_code}' \
			"http://qprofd/api/trace?pid=$w_pid&max_mb=8")
		traces=$((traces + 1))
		polls=$((polls + 1))
		if [ "$code" != 200 ]; then
			bad=$((bad + 1))
			[ "$bad" -le 5 ] && say "  poll /api/trace answered $code"
		fi
		next_trace=$(($(date +%s) + trace_every))
	fi
	for r in "${routes[@]}"; do
		code=$(api "$r")
		polls=$((polls + 1))
		if [ "$code" != 200 ]; then
			bad=$((bad + 1))
			[ "$bad" -le 5 ] && say "  poll $r answered $code"
		fi
	done
done
ev1=$(events)
t1=$(date +%s.%N)
rate=$(calc "($ev1 - $ev0) / ($t1 - $t0)")	# whole scopes/s
hits=$(calc "2 * $rate")			# scope events (enter + exit hits)/s

# --- stop the workload, then read every counter ----------------------------------
touch "$tmp/stop"
wait_for_line "$tmp/work.out" '^soak_work scopes' 60 "$w_pid" || { say "soak_work did not stop"; exit 1; }
sleep 2	# the log consumer drains the ring buffer
# on the ring: quiescent once the drain has read up to every head
for _ in $(seq 300); do
	api /api/status "$tmp/status.json" >/dev/null
	[ "$(jq --argjson p "$w_pid" '[.targets[] | select(.pid == $p) | .ring.unread // 0] | add // 0' \
		"$tmp/status.json")" = 0 ] && break
	sleep 0.1
done
read -r _ _ w_scopes _ w_values _ w_marks _ w_logs < <(grep '^soak_work scopes' "$tmp/work.out")
api /api/status "$tmp/status.json" >/dev/null
api "/api/scopes?pid=$w_pid" "$tmp/scopes.json" >/dev/null
api "/api/values?pid=$w_pid" "$tmp/values.json" >/dev/null
st() { jq -r "$1" "$tmp/status.json"; }
q_scopes=$(jq '[.scopes[] | select(.kind == "scope") | .count] | add // 0' "$tmp/scopes.json")
q_marks=$(jq '[.scopes[] | select(.kind == "mark") | .count] | add // 0' "$tmp/scopes.json")
q_values=$(jq '[.values[] | .count] | add // 0' "$tmp/values.json")
q_logs=$(st .logs.received)
d_noenter=$(st .scopes.dropped_by_reason.exit_without_enter)
d_order=$(st .scopes.dropped_by_reason.out_of_order)
d_deep=$(st .scopes.dropped_by_reason.too_deep)
d_texit=$(st .scopes.dropped_by_reason.thread_exit)
d_full=$(st .scopes.dropped_by_reason.map_full)
d_stack=$(st .scopes.dropped_by_reason.stack_unavailable)
l_logs=$(st .logs.lost)
l_values=$(st .values.lost)
l_marks=$(st .marks.lost)
cpu_samples=$(st .cpu.samples)
cpu_lost=$(st .cpu.lost)
cpu_aged=$(st '.cpu.aged // 0')
cpu_bytes=$(st '.cpu.table_bytes // 0')
# every reason qprofd counts a scope drop by (new ones included), and which
scope_drops=$(st '[.scopes.dropped_by_reason[]] | add // 0')
# the ring's figures of the workload (none on the BPF collector)
rg() { jq -r --argjson p "$w_pid" "[.targets[] | select(.pid == \$p) | .ring | select(. != null) | $1] | first // empty" \
	"$tmp/status.json"; }
on_ring=$(rg 'true')
if [ -n "$on_ring" ]; then
	r_est=$(rg .lost_estimated)
	r_marks=$(rg .lost_marks)
	r_values=$(rg .lost_values)
	r_other=$(rg .lost_other_records)
	r_sum="$(rg '"\(.head) \(.base) \(.read) \(.lost) \(.unread)"')"
	r_bad=$(rg '[.list[] | select(.base + .read + .lost != .head)] | length')
	l_marks=$((l_marks + r_marks))
	l_values=$((l_values + r_values))
fi
all_reasons=$(st '.scopes.dropped_by_reason | to_entries | map("\(.key) \(.value)") | join(", ")')

say ""
say "== figures"
say "  scope events/s (enter + exit hits): $(printf '%.0f' "$hits");" \
	"whole scopes/s (qprofd's status, polled window): $(printf '%.0f' "$rate");" \
	"workload's own count over its whole run: $(printf '%.0f' "$(calc "$w_scopes / ($t1 - $t0)")")"
say "  polls: $polls requests ($traces of them traces), $bad not answered 200"
ref="" ref_t=""
min="" max="" first="" last=""
for s in "${rss[@]}"; do
	set -- $s
	[ -z "$first" ] && first=$2
	last=$2
	if [ -z "$ref" ] && [ "$1" -ge "$SOAK_WARMUP" ]; then ref=$2; ref_t=$1; fi
	if [ -n "$ref" ]; then
		{ [ -z "$min" ] || [ "$2" -lt "$min" ]; } && min=$2
		{ [ -z "$max" ] || [ "$2" -gt "$max" ]; } && max=$2
	fi
done
say "  RSS samples: ${#rss[@]}; first ${first} kB, reference (at ${ref_t:-?} s) ${ref:-?} kB," \
	"after it min ${min:-?} max ${max:-?}, last ${last} kB"
# CPU samples lost in the first and in the second half of the run: a share
# that grows says the loss is not steady
awk -v half="$((SOAK_SECONDS / 2))" '
	{ t[NR] = $1; s[NR] = $4; l[NR] = $5; if ($1 <= half) m = NR }
	END {
		if (NR < 3 || !m || m == NR) exit
		ds1 = s[m] - s[1]; dl1 = l[m] - l[1]; ds2 = s[NR] - s[m]; dl2 = l[NR] - l[m]
		printf "  CPU samples lost, first half %.3f %% (%d of %d), second half %.3f %% (%d of %d)\n",
			ds1 ? 100 * dl1 / ds1 : 0, dl1, ds1, ds2 ? 100 * dl2 / ds2 : 0, dl2, ds2
	}' "$tmp/timeline.txt"
# the target's ring memory (status targets[].ring.bytes) over the run
read -r rb_min rb_max rb_last < <(awk '{ b = $9 + 0; if (NR == 1 || b < mn) mn = b; if (b > mx) mx = b; l = b }
	END { print mn + 0, mx + 0, l + 0 }' "$tmp/timeline.txt")
# SOAK_LOG=FILE keeps the timeline: seconds, RSS kB, scope events, CPU
# samples, CPU lost, scope drops, CPU table bytes, CPU samples aged out,
# the target's ring bytes
[ -n "${SOAK_LOG:-}" ] && cp "$tmp/timeline.txt" "$SOAK_LOG"
say "  workload: scopes $w_scopes values $w_values marks $w_marks logs $w_logs"
say "  qprofd:   scopes $q_scopes values $q_values marks $q_marks logs $q_logs"
say "  scope drops by reason: $all_reasons"
say "  lost: logs $l_logs, values $l_values, marks $l_marks; CPU samples $cpu_samples," \
	"lost $cpu_lost ($(calc "100 * $cpu_lost / ($cpu_samples > 0 ? $cpu_samples : 1)") %)," \
	"stacks unavailable $d_stack"
say "  CPU table: $cpu_bytes bytes at the end; samples aged out of the since-attach views $cpu_aged"
if [ -n "$on_ring" ]; then
	read -r r_head r_base r_read r_lost r_unread <<<"$r_sum"
	say "  ring memory of the target (status ring.bytes, every RSS sample): min $rb_min, max $rb_max," \
		"last $rb_last bytes ($(rg .rings) rings now)"
	say "  ring: head $r_head = base $r_base + read $r_read + lost $r_lost (+ unread $r_unread) records;" \
		"lost events $([ "$r_est" = true ] && echo "estimated (~)" || echo "counted"): scopes" \
		"$(st '.scopes.dropped_by_reason.ring_lost // 0'), marks $r_marks, values $r_values, other records $r_other"
fi

say ""
say "== verdict"
verdict polls "$([ "$bad" = 0 ] && echo 1 || echo 0)" "$bad of $polls polls not answered 200"
if [ -n "$ref" ]; then
	up=$(calc "100 * ($max - $ref) / $ref")
	down=$(calc "100 * ($ref - $min) / $ref")
	ok=$(awk -v u="$up" -v d="$down" -v t="$SOAK_RSS_TOL" 'BEGIN { print (u <= t && d <= t) ? 1 : 0 }')
	verdict rss "$ok" "drift after warm-up +$up % / -$down % (limit +-$SOAK_RSS_TOL %)"
else
	verdict rss 0 "no RSS sample after the $SOAK_WARMUP s warm-up"
fi
# measured <= done, and measured + counted losses >= done
account() { # NAME DONE MEASURED LOST
	local ok=0
	[ "$3" -le "$2" ] && [ $(($3 + $4)) -ge "$2" ] && ok=1
	verdict "$1" "$ok" "done $2, measured $3, counted lost $4, not accounted for $(($2 - $3 - $4 > 0 ? $2 - $3 - $4 : 0))"
}
# an estimated loss: measured <= done, the estimate near what was missed
account_est() { # NAME DONE MEASURED LOST
	local miss=$(($2 - $3)) ok=0
	awk -v m="$miss" -v l="$4" -v t="${SOAK_EST_TOL:-10}" -v q="$3" -v d="$2" \
		'BEGIN { e = l - m; if (e < 0) e = -e; exit !(q <= d && e <= m * t / 100 + 16) }' && ok=1
	verdict "$1" "$ok" "done $2, measured $3, missed $miss, counted lost ~$4 (an estimate: $(calc \
		"($miss > 0 ? 100 * ($4 - $miss) / $miss : 0)") % off; limit +-${SOAK_EST_TOL:-10} % + 16)"
}
if [ -n "$on_ring" ]; then
	# one ring a thread of the workload (and its main thread's), each of
	# the size qprofd asks: bounded by that, whatever the run's length
	verdict ring_memory "$([ "$rb_max" -gt 0 ] && [ "$rb_max" -le $(((SOAK_THREADS + 1) * $(st '.ring.ring_records') * 16 + (SOAK_THREADS + 1) * 4096)) ] && echo 1 || echo 0)" \
		"the rings' memory at most $rb_max bytes over the run (bound: $((SOAK_THREADS + 1)) rings of $(st '.ring.ring_records') records)"
	verdict ring_records "$([ "$r_unread" = 0 ] && [ $((r_base + r_read + r_lost)) = "$r_head" ] &&
		[ "$r_bad" = 0 ] && echo 1 || echo 0)" \
		"base + read + lost == head on every ring ($r_bad rings off), unread $r_unread"
fi
if [ "${r_est:-false}" = true ]; then
	account_est scopes "$w_scopes" "$q_scopes" "$scope_drops"
	account_est values "$w_values" "$q_values" "$l_values"
	account_est marks "$w_marks" "$q_marks" "$l_marks"
	ok=0
	[ "$q_logs" -le "$w_logs" ] && { [ "$q_logs" = "$w_logs" ] || [ $((l_logs + r_other)) -gt 0 ]; } && ok=1
	verdict logs "$ok" "done $w_logs, measured $q_logs, missed $((w_logs - q_logs)); lost: $l_logs messages, $r_other records of other kinds on the ring (logs among them)"
else
	account scopes "$w_scopes" "$q_scopes" "$scope_drops"
	account values "$w_values" "$q_values" "$l_values"
	account marks "$w_marks" "$q_marks" "$l_marks"
	account logs "$w_logs" "$q_logs" "$((l_logs + ${r_other:-0}))"
fi
verdict cpu_samples "$(awk -v k="$cpu_samples" -v l="$cpu_lost" 'BEGIN { print (k > 0 && 100 * l <= k + l) ? 1 : 0 }')" \
	"$cpu_samples kept, $cpu_lost lost (limit 1 % of all)"
if [ "$SOAK_MIN_RATE" -gt 0 ]; then
	verdict rate "$(awk -v r="$hits" -v g="$SOAK_MIN_RATE" 'BEGIN { print (r >= g) ? 1 : 0 }')" \
		"$(printf '%.0f' "$hits") scope events/s, enter and exit hits (goal >= $SOAK_MIN_RATE); $(printf '%.0f' "$rate") whole scopes/s"
else
	say "  (rate not judged: SOAK_MIN_RATE=0)"
fi
kill "$w_pid" 2>/dev/null
wait "$w_pid" 2>/dev/null
forget "$w_pid"
stop_qprofd
if [ "$fail" = 0 ]; then say "soak: PASS"; exit 0; fi
say "soak: FAIL"
exit 1
