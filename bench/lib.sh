# bench/lib.sh - what the benchmark scripts share; sourced after they set
# `tmp` (their temporary directory). Processes a script starts go into
# started_pids and are stopped by pid at exit, with the directory removed.
started_pids=()
cleanup() {
	# only what this script started, by pid
	for p in "${started_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# forget PID: it has been reaped, never signal it again
forget() {
	local keep=() p
	for p in "${started_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	started_pids=("${keep[@]}")
}

summary=()
say() { printf '%s\n' "$*"; }
add_summary() { summary+=("$*"); }
# calc EXPR: floating-point arithmetic through awk, 3 decimals
calc() { awk "BEGIN { printf \"%.3f\", $* }"; }
# goal VALUE OP LIMIT -> "meets goal" / "MISSES goal" (OP: <=, <, >=)
goal() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? (v <= l) : (op == "<") ? (v < l) : (v >= l); print ok ? "meets goal" : "MISSES goal" }'; }

# wait_for_line FILE REGEX TIMEOUT_S PID: until FILE has a line matching
# REGEX; fails if PID dies or the time runs out.
wait_for_line() {
	local file=$1 re=$2 t=$3 pid=$4 i=0
	while ! grep -qE "$re" "$file" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || return 1
		i=$((i + 1))
		[ "$i" -gt $((t * 20)) ] && return 1
		sleep 0.05
	done
}

# cpu_ready_re QPROFD: the line that qprofd logs once its CPU sampler,
# loaded while it already serves, is ready (or has failed); for an older
# build, which loaded it before it served, its "ready on" line
cpu_ready_re() {
	if grep -q 'CPU sampler ready' "$1" 2>/dev/null; then
		echo 'CPU sampler ready|CPU sampling unavailable'
	else
		echo '^qprofd: ready on'
	fi
}

# start_qprofd TAG PID [QPROFD_ARGS...]: qprofd --pid PID on $tmp/TAG.sock,
# waiting for its "ready on" line (printed once the target is attached and
# qprofd serves) and then for its CPU sampler, so that what a bench
# measures is a qprofd at rest. Sets q_pid and sock; fails (and says why)
# if qprofd exits or takes longer than ATTACH_TIMEOUT.
start_qprofd() {
	local tag=$1 pid=$2
	shift 2
	sock=$tmp/$tag.sock
	"$QPROFD" --pid "$pid" --socket "$sock" "$@" >"$tmp/$tag.qprofd" 2>&1 &
	q_pid=$!
	started_pids+=("$q_pid")
	if wait_for_line "$tmp/$tag.qprofd" '^qprofd: ready on' "${ATTACH_TIMEOUT:-60}" "$q_pid" &&
		wait_for_line "$tmp/$tag.qprofd" "$(cpu_ready_re "$QPROFD")" "${ATTACH_TIMEOUT:-60}" "$q_pid"; then
		return 0
	fi
	say "  qprofd did not attach to pid $pid: $(tail -3 "$tmp/$tag.qprofd")"
	stop_qprofd
	return 1
}
stop_qprofd() {
	kill -INT "$q_pid" 2>/dev/null
	wait "$q_pid" 2>/dev/null
	forget "$q_pid"
}
