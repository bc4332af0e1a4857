# The soak of bench/soak.sh, shortened to 25 s for ctest (root + BPF; 77 =
# skipped without BPF). It asserts what the 30-minute run asserts: every
# poll of every route answered 200, every scope, value, mark and log either
# measured or counted as lost. Two things are looser, on purpose: qprofd's RSS
# may move +-25 % after a 5 s warm-up (the full run: +-5 % after 620 s; in
# 25 s the caches and the allocator are still settling), and the event rate
# is printed but not judged (it depends on the machine's load, and CI does
# not gate on wall-clock figures). It soaks the default collector, the ring:
# flat out the drain laps, its record accounting must be exact, and where
# the events of a lapped stretch are estimated (marks, values, most scopes)
# the estimate must be within 10 % of what the workload's own counts say was
# missed (bench/soak.sh). SOAK_COLLECTOR=bpf soaks the BPF collector by
# hand (its losses are counted one by one).
# The RSS reference is taken at 10 s: qprofd's RSS ramps for its first
# 5-8 s (114 to 230 MB seen) before it levels out.
add_test(NAME bench_soak_smoke COMMAND ${PROJECT_SOURCE_DIR}/bench/soak.sh ${PROJECT_BINARY_DIR})
set_tests_properties(bench_soak_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180 RUN_SERIAL TRUE
  ENVIRONMENT "SOAK_SECONDS=25;SOAK_WARMUP=10;SOAK_RSS_EVERY=2;SOAK_RSS_TOL=25;SOAK_MIN_RATE=0")
# bench/md_pipeline.sh, shortened: the 3-thread market-data program off,
# detached, timed in process and on the ring (flat out), then the ring
# paced; passes when every run ran and every count adds up (exact, or
# within what the ring says it lost where it says its loss is an estimate).
# Its timings and ratios are printed, not judged.
add_test(NAME bench_md_pipeline_smoke COMMAND ${PROJECT_SOURCE_DIR}/bench/md_pipeline.sh ${PROJECT_BINARY_DIR})
set_tests_properties(bench_md_pipeline_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240 RUN_SERIAL TRUE
  ENVIRONMENT "FLAT=20000;RATE=20000;SECS=1;BPF=0")
