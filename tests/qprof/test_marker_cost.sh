#!/usr/bin/env bash
# test_marker_cost.sh - the detached cost of every marker, counted by
# callgrind, with gcc and with clang (-O2, linked statically: valgrind then
# runs no ld.so, on which another tracer may hold a uprobe):
#   - small functions (tests/qprof/cost_small.c, C and C++): the instructions
#     of a non-inlined function that only adds to a global, with its marker
#     less without (-DQPROF_DISABLE), per marker: at most 4;
#   - loops (bench/marker_loop.c): per marker at most 4, as
#     unit_ring_idle_cost checks for the build's own compiler.
# Exceptions, each today's figure as its ceiling: gcc's small span 5 (it
# copies the id into another register: was 10 before the ring's cold calls
# went through the thunk); clang's QPROF_LOG 6 small and 4.5 in the loop
# (the message buffer's frame: the log marker calls snprintf anyway) and its
# QPROF_VALUE 6.5 in the loop (the double's conversion, kept apart by the
# two semaphore tests).
# At least 1 instruction a marker (the nop5 is there). 77 (skipped) without
# valgrind or a compiler.
#   test_marker_cost.sh SOURCE_DIR
set -u
src=$1
n=20000
command -v valgrind >/dev/null || { echo "valgrind not installed: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/qprof-cost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

ir() { # BINARY TOGGLE MODE
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" --toggle-collect="$2" \
		"$1" "$3" "$n" >"$tmp/stdout" 2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; return 1; }
	awk '/^summary:/ { print $2; exit }' "$tmp/out"
}

fail=0 built=0
limit() { # LABEL: the ceiling in hundredths of an instruction a marker
	case $1 in
	"gcc c small span" | "gcc c++ small span") echo 500 ;;
	"clang c small log" | "clang c++ small log") echo 600 ;;
	"clang loop value") echo 650 ;;
	"clang loop log") echo 450 ;;
	*) echo 400 ;;
	esac
}
check() { # LABEL ON OFF MARKERS_PER_ITERATION
	local per100=$(( ($2 - $3) * 100 / (n * $4) )) lim
	lim=$(limit "$1")
	printf '%s: Ir %s with markers, %s without: %d.%02d instructions per marker (at most %d.%02d)\n' \
		"$1" "$2" "$3" $((per100 / 100)) $((per100 % 100)) $((lim / 100)) $((lim % 100))
	[ "$per100" -le "$lim" ] || { echo "FAIL: $1 costs more than its ceiling"; fail=1; }
	[ "$per100" -ge 100 ] || { echo "FAIL: $1 costs under 1 instruction: the markers are gone"; fail=1; }
}
for cc in gcc clang; do
	command -v $cc >/dev/null || { echo "$cc not installed: not checked"; continue; }
	for lang in c c++; do
		cxx=$cc
		[ $lang = c++ ] && { [ $cc = gcc ] && cxx=g++ || cxx=clang++; }
		command -v $cxx >/dev/null || continue
		for d in on off; do
			def=; [ $d = off ] && def=-DQPROF_DISABLE
			$cxx -x $lang -O2 -g0 -static $def -I"$src/include" "$src/tests/qprof/cost_small.c" \
				-o "$tmp/small_$d" || { echo "FAIL: $cxx cannot build cost_small.c"; fail=1; continue 2; }
		done
		built=1
		for mode in scope:2 func:2 mark:1 value:1 span:1 log:1; do
			m=${mode%:*} k=${mode#*:}
			on=$(ir "$tmp/small_on" 'small_*' $m) && off=$(ir "$tmp/small_off" 'small_*' $m) || {
				echo "FAIL: callgrind"; exit 1; }
			check "$cc $lang small $m" "$on" "$off" "$k"
		done
	done
	for d in on off; do
		def=; [ $d = off ] && def=-DQPROF_DISABLE
		$cc -O2 -g0 -static $def -I"$src/include" -I"$src/bench" "$src/bench/marker_loop.c" \
			-o "$tmp/loop_$d" || { echo "FAIL: $cc cannot build marker_loop.c"; fail=1; continue 2; }
	done
	for mode in scope:3 value:1 span:3 log:1; do
		m=${mode%:*} k=${mode#*:}
		on=$(ir "$tmp/loop_on" 'loop_*' $m) && off=$(ir "$tmp/loop_off" 'loop_*' $m) || {
			echo "FAIL: callgrind"; exit 1; }
		check "$cc loop $m" "$on" "$off" "$k"
	done
done
[ $built = 1 ] || { echo "no compiler: skipped"; exit 77; }
exit $fail
