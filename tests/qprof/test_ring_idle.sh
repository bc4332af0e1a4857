#!/usr/bin/env bash
# test_ring_idle.sh - the detached cost of marker ABI 2, counted by callgrind:
# bench/marker_loop against the same loop built with -DQPROF_DISABLE, the
# instructions of the loop_* functions. Every marker (its nop5, the test of
# qprof_ring_semaphore and, for QPROF_VALUE, of its own semaphore; spans
# across threads too) must cost
# at most 4 instructions. 77 (skipped) without valgrind.
#   test_ring_idle.sh BENCH_DIR
set -u
bin=$1
n=100000
command -v valgrind >/dev/null || { echo "valgrind not installed: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/qprof-ringidle.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# A uprobe that someone holds on ld.so (qprofd watching dlopen, a
# bpftrace) is an int3 in the page cache, which valgrind executes as a
# SIGTRAP: tried again for a while, then skipped, never judged.
ir() { # BINARY MODE
	local try
	for try in 1 2 3 4; do
		if valgrind --tool=callgrind --callgrind-out-file="$tmp/out" --toggle-collect='loop_*' \
			"$1" "$2" "$n" >"$tmp/stdout" 2>"$tmp/stderr"; then
			awk '/^summary:/ { print $2; exit }' "$tmp/out"
			return 0
		fi
		grep -q SIGTRAP "$tmp/stderr" || { cat "$tmp/stderr" >&2; return 1; }
		sleep 5
	done
	echo "valgrind meets a breakpoint (a uprobe held on a library by another tracer): skipped"
	return 77
}
fail=0
for mode in scope:3 value:1 span:3 log:1; do
	m=${mode%:*} markers=${mode#*:} on= off=
	on=$(ir "$bin/marker_loop" "$m") && off=$(ir "$bin/marker_loop_disabled" "$m") || {
		rc=$?
		[ $rc = 77 ] && { echo "$on$off"; exit 77; }
		exit 1
	}
	# the loop's instructions with markers less without, per marker (x100)
	per100=$(( (on - off) * 100 / (n * markers) ))
	printf '%s: Ir %s enabled, %s disabled: %d.%02d instructions per marker\n' \
		"$m" "$on" "$off" $((per100 / 100)) $((per100 % 100))
	[ "$per100" -le 400 ] || { echo "FAIL: $m costs more than 4 instructions per marker"; fail=1; }
	[ "$per100" -ge 100 ] || { echo "FAIL: $m costs under 1 instruction: the markers are gone"; fail=1; }
done
exit $fail
