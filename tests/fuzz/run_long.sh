#!/bin/sh
# run_long.sh [BUILD_DIR] [RUNS] [FUZZER...] - the long fuzz runs of the
# closing figures: each libFuzzer target for RUNS inputs (default 10 M), one
# after the other or the ones named, from its seed corpus plus what earlier
# long runs found (kept in BUILD_DIR/fuzz_long/NAME/corpus). Prints per
# target: inputs run, seconds, inputs per second, and PASS or FAIL (a crash,
# a leak, a timeout or an out-of-memory stops libFuzzer with a non-zero exit
# and leaves the input as crash-*/leak-*/timeout-*/oom-* in the work dir;
# add it to the seed corpus as a regression input once fixed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
runs=${2:-10000000}
shift 2 2>/dev/null || shift $#
names=${*:-fuzz_parsers fuzz_elf_probes fuzz_http_routes fuzz_symbolize fuzz_dwarf fuzz_unwind fuzz_cfi_table}
bin=$build/tests
status=0

for f in $names; do
	case $f in
	fuzz_parsers) seeds="$here/corpus_parsers"; opts="" ;;
	fuzz_elf_probes) seeds="$bin/fuzz_corpus_elf"; opts="-max_len=65536 -rss_limit_mb=2048" ;;
	fuzz_http_routes) seeds="$here/corpus_http"; opts="-max_len=4096" ;;
	fuzz_symbolize) seeds="$bin/fuzz_corpus_sym $here/corpus_symbolize"
		opts="-max_len=65536 -rss_limit_mb=2048" ;;
	fuzz_dwarf) seeds="$bin/fuzz_corpus_dwarf $here/corpus_dwarf"
		opts="-max_len=262144 -rss_limit_mb=2048 -timeout=30" ;;
	fuzz_unwind) seeds="$bin/fuzz_corpus_unwind"
		opts="-max_len=131072 -rss_limit_mb=2048 -timeout=30" ;;
	fuzz_cfi_table) seeds="$bin/fuzz_corpus_unwind $here/corpus_cfi"
		opts="-max_len=131072 -rss_limit_mb=2048 -timeout=30" ;;
	*) echo "run_long.sh: unknown fuzzer $f" >&2; exit 2 ;;
	esac
	if [ ! -x "$bin/$f" ]; then
		echo "run_long.sh: $bin/$f is not built (cmake --build $build)" >&2
		exit 2
	fi
	work=$build/fuzz_long/$f
	mkdir -p "$work/corpus"
	start=$(date +%s)
	# -jobs=1: one worker, its output in fuzz-0.log; artifacts in $work
	(cd "$work" && "$bin/$f" -runs="$runs" -jobs=1 -workers=1 -seed=0 $opts \
		-artifact_prefix="$work/" corpus $seeds >"$work/run.log" 2>&1)
	rc=$?
	end=$(date +%s)
	secs=$((end - start))
	[ "$secs" -gt 0 ] || secs=1
	done_runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/fuzz-0.log" | tail -n 1)
	# stopped early (a finding, or interrupted): the last input count printed
	[ -n "$done_runs" ] || done_runs=$(sed -n 's/^#\([0-9]*\)[[:space:]].*/\1/p' "$work/fuzz-0.log" | tail -n 1)
	[ -n "$done_runs" ] || done_runs=0
	if [ "$rc" -eq 0 ] && [ "$done_runs" -ge "$runs" ]; then
		verdict=PASS
	else
		verdict=FAIL
		status=1
	fi
	printf '%s: %s runs in %s s (%s exec/s) %s; log %s\n' "$f" "$done_runs" "$secs" \
		"$((done_runs / secs))" "$verdict" "$work/fuzz-0.log"
done
exit $status
