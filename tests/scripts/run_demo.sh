#!/usr/bin/env bash
# run_demo.sh - runs scripts/demo.sh (the README's first command) on the test
# build tree RUNS times and fails unless every run exits 0 having printed
# every section, the last one included (exit 141 half-way).
#
#   run_demo.sh SOURCE_DIR BUILD_DIR [RUNS] [SECONDS]
set -u
src=${1:?usage: run_demo.sh SOURCE_DIR BUILD_DIR [RUNS] [SECONDS]}
build=${2:?usage: run_demo.sh SOURCE_DIR BUILD_DIR [RUNS] [SECONDS]}
runs=${3:-1} seconds=${4:-2}
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the demo runs qprofd, which needs root"
	exit 77
fi
out=$(mktemp /tmp/qprof-demo-test.XXXXXX)
trap 'rm -f "$out"' EXIT
fail=0
for i in $(seq "$runs"); do
	QPROF_BUILD=$build "$src/scripts/demo.sh" "$seconds" >"$out" 2>&1
	rc=$?
	missing=
	# the status shows the strategy on the default collector, the ring
	for want in "ring (default)" "demo: QPROF_VALUE statistics:" "demo: the hottest stacks" \
		    "demo: flame graph of the strategy:" "demo: the sites of the binary" \
		    "demo: done; stopping qprofd and the strategy"; do
		grep -qF "$want" "$out" || missing="$missing [$want]"
	done
	stacks=$(awk '/^demo: the hottest stacks/ { on = 1; next } on && /^$/ { exit } on' "$out" | wc -l)
	echo "run_demo: run $i: exit $rc, $stacks hottest stack line(s)${missing:+, missing:$missing}"
	if [ "$rc" -ne 0 ] || [ -n "$missing" ] || [ "$stacks" -lt 1 ] || [ "$stacks" -gt 5 ]; then
		fail=1
		cat "$out" >&2
	fi
done
exit $fail
