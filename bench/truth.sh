#!/usr/bin/env bash
# bench/truth.sh - the truth of the calibrated BPF collector:
# 1 us and 20 us scopes on 2 threads, qprof's means against the program's
# own clock, before and after the calibration's correction. A timing goal,
# so run by hand, not by ctest: the probe cost moves between runs here.
#
#   bench/truth.sh [BUILD_DIR] [RUNS]     (default: build, 3 runs; root + BPF)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" 2>/dev/null && pwd) || { echo "no build directory '${1:-$root/build}'" >&2; exit 2; }
runs=${2:-3}
case "$runs" in ''|*[!0-9]*) echo "RUNS must be a number, not '$runs'" >&2; exit 2 ;; esac
for t in "$build/daemon/qprofd" "$build/tests/trace_target"; do
	[ -x "$t" ] || { echo "missing $t: cmake --build $build" >&2; exit 2; }
done
fail=0
for i in $(seq "$runs"); do
	echo "== run $i of $runs"
	python3 "$root/tests/integration/test_truth.py" "$build/daemon/qprofd" "$build/tests/trace_target" || fail=1
done
exit $fail
