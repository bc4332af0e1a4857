#!/usr/bin/env bash
# The demo: install what is missing for it (the build's packages), build, run the example strategy, attach
# qprofd to it, and print its scopes after a few seconds. Stops everything it
# started, by pid. Run as root:   sudo scripts/demo.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
build=${QPROF_BUILD:-build}	# the test suite runs the demo on its own build tree

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (qprofd loads BPF programs): sudo $0" >&2
	exit 1
fi
scripts/install-deps.sh --demo
echo "demo: building (cmake, $build/)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target qprofd qprof-cli strategy >/dev/null

tmp=$(mktemp -d /tmp/qprof-demo.XXXXXX)
sock=$tmp/qprofd.sock
strategy_pid= qprofd_pid=
cleanup() {
	[ -n "$qprofd_pid" ] && kill -TERM "$qprofd_pid" 2>/dev/null && wait "$qprofd_pid" 2>/dev/null
	[ -n "$strategy_pid" ] && kill -INT "$strategy_pid" 2>/dev/null && wait "$strategy_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "demo: starting the example strategy ($build/examples/strategy --threads 2 --rate 20000)"
"$build/examples/strategy" --threads 2 --rate 20000 >"$tmp/strategy.log" 2>&1 &
strategy_pid=$!

echo "demo: attaching qprofd to pid $strategy_pid (socket $sock), with the default"
echo "      collector, the ring: the markers write records into rings in the"
echo "      strategy's own memory, which qprofd reads every millisecond (the status"
echo "      below says so: COLLECTOR ring (default)). qprofd --collector bpf would"
echo "      put a uprobe on each marker instead: microseconds a scope, not tens of ns"
"$build/daemon/qprofd" --pid "$strategy_pid" --socket "$sock" 2>"$tmp/qprofd.log" &
qprofd_pid=$!
for _ in $(seq 200); do
	[ -S "$sock" ] && break
	if ! kill -0 "$qprofd_pid" 2>/dev/null; then
		echo "demo: qprofd failed to start:" >&2
		cat "$tmp/qprofd.log" >&2
		qprofd_pid=
		exit 1
	fi
	sleep 0.05
done

cli() { "$build/cli/qprof-cli" --socket "$sock" "$@"; }
for i in $(seq "$seconds" -1 1); do
	printf '\rdemo: collecting... %2d s left ' "$i"
	sleep 1
done
printf '\r%40s\r\n' ''
cli status
echo
cli scopes
echo
echo "demo: QPROF_VALUE statistics:"
cli values
echo
echo "demo: the last QPROF_LOG messages:"
cli logs | tail -3
echo
mkdir -p "$build/demo"
svg=$build/demo/strategy-cpu.svg
cli flamegraph --pid "$strategy_pid" -o "$svg"
echo "demo: the hottest stacks (folded, root first):"
# no early-exiting reader (head) in a pipeline: under pipefail the writer's
# SIGPIPE would end the demo (exit 141); awk reads all and prints five
cli folded --pid "$strategy_pid" | awk '{ print $NF "\t" $0 }' | sort -rn | cut -f2- | awk 'NR <= 5' | cut -c1-160
echo
echo "demo: flame graph of the strategy: $(cd "$(dirname "$svg")" && pwd)/$(basename "$svg") (open it in a browser)"
echo
echo "demo: the sites of the binary, read from the ELF file alone (no daemon):"
"$build/cli/qprof-cli" probes "$build/examples/strategy"
echo
echo "demo: done; stopping qprofd and the strategy"
