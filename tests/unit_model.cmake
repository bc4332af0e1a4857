# Model and encoder unit tests (no root, no BPF): windows, scope trees,
# values and status figures from hand-made snapshots (test_model); the JSON
# of /api/scopes, /api/values, /api/status and the /metrics text from
# hand-made models, byte for byte (test_encode; the targets model and the
# log lines: test_encode_targets, test_encode_logs).
add_executable(test_model ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_model.c)
target_link_libraries(test_model qprof_common m)
add_test(NAME unit_model COMMAND test_model)

add_executable(test_encode ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_encode.c)
target_link_libraries(test_encode qprof_common m)
add_test(NAME unit_encode COMMAND test_encode)

# /metrics from hand-made models: the text with escaping, merging and the
# cap (test_metrics), the protobuf decoded back (test_metrics_pb); and
# promtool's lint of a hostile model's text.
add_executable(test_metrics ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_metrics.c)
target_link_libraries(test_metrics qprof_common m)
add_test(NAME unit_metrics COMMAND test_metrics)
add_executable(test_metrics_pb ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_metrics_pb.c)
target_link_libraries(test_metrics_pb qprof_common m)
add_test(NAME unit_metrics_pb COMMAND test_metrics_pb)
find_program(PROMTOOL promtool)
if(PROMTOOL)
  add_test(NAME unit_metrics_promtool
    COMMAND bash -c "set -o pipefail; out=$($<TARGET_FILE:test_metrics> --print | ${PROMTOOL} check metrics 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 0 ] && [ -z \"$out\" ]")
else()
  add_test(NAME unit_metrics_promtool
    COMMAND bash -c "echo 'promtool not found: scripts/install-deps.sh installs Debian package prometheus'; exit 1")
endif()

# The targets model's JSON (/api/targets, /api/status, POST answers) from a
# hand-made view, byte for byte.
add_executable(test_encode_targets ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_encode_targets.c)
target_link_libraries(test_encode_targets qprof_common m)
add_test(NAME unit_encode_targets COMMAND test_encode_targets)

# The NDJSON lines of /api/logs from a hand-made batch, byte for byte.
add_executable(test_encode_logs ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_encode_logs.c)
target_link_libraries(test_encode_logs qprof_common m)
add_test(NAME unit_encode_logs COMMAND test_encode_logs)

# The log model's reader on a fake store, loss counter and namer (the test
# defines those in place of logs.c's, collect_scopes.c's, target_names.c's).
add_executable(test_model_logs ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_model_logs.c
  ${PROJECT_SOURCE_DIR}/daemon/model/model_logs.c)
target_link_libraries(test_model_logs qprof_common Threads::Threads m)
add_test(NAME unit_model_logs COMMAND test_model_logs)

# The scope collector's daemon-side copy of the kernel chunks, and its map
# sizes on simulated hosts of 2, 64 and 256 CPUs (issue 14).
add_executable(test_scope_store ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_scope_store.c)
target_link_libraries(test_scope_store qprof_common m)
add_test(NAME unit_scope_store COMMAND test_scope_store)

add_executable(test_scope_sizing ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_scope_sizing.c)
target_link_libraries(test_scope_sizing qprof_common m)
add_test(NAME unit_scope_sizing COMMAND test_scope_sizing)

# The ring collector's pairing on hand-made records (daemon/collect/ring_pair.c).
add_executable(test_ring_pair ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ring_pair.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_pair.c ${PROJECT_SOURCE_DIR}/daemon/collect/ring_rows.c ${PROJECT_SOURCE_DIR}/daemon/collect/ring_spans.c)
target_include_directories(test_ring_pair PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_ring_pair qprof_common m)
add_test(NAME unit_ring_pair COMMAND test_ring_pair)
# Spans across threads of the ring collector (daemon/collect/ring_spans.c).
add_executable(test_ring_spans ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ring_spans.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_pair.c ${PROJECT_SOURCE_DIR}/daemon/collect/ring_rows.c ${PROJECT_SOURCE_DIR}/daemon/collect/ring_spans.c)
target_include_directories(test_ring_spans PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_ring_spans qprof_common m)
add_test(NAME unit_ring_spans COMMAND test_ring_spans)

# The poll's race of issue 14, placed exactly: the real record() run by
# BPF_PROG_TEST_RUN between a poll's generation change and its drain, the
# real poll (scope_poll.c). Needs root and BPF (77 without).
add_executable(test_scope_poll_race ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_scope_poll_race.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/collect_scopes.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/dirty_keys.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/scope_poll.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/value_poll.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/collect_spans.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_collect.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_query.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_watch.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_read.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_pair.c ${PROJECT_SOURCE_DIR}/daemon/collect/ring_rows.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/ring_spans.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/logs.c ${PROJECT_SOURCE_DIR}/daemon/collect/rb_drain.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/collect_attach.c ${PROJECT_SOURCE_DIR}/daemon/collect/redzone.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/scope_progs.c)
target_link_libraries(test_scope_poll_race qprof_common scopes_skel PkgConfig::LIBBPF PkgConfig::CAPSTONE
  Threads::Threads m)
add_test(NAME integration_scope_poll_race COMMAND test_scope_poll_race)
set_tests_properties(integration_scope_poll_race PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
# The full map read both polls fall back on (daemon/collect/dirty_keys.c):
# batches, the key-by-key walk, on maps made by the test. Needs root (77 without).
add_executable(test_map_scan ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_map_scan.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/dirty_keys.c)
target_link_libraries(test_map_scan qprof_common scopes_skel PkgConfig::LIBBPF)
add_test(NAME integration_map_scan COMMAND test_map_scan)
set_tests_properties(integration_map_scan PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)

# Thread stacks (issue 12): the frame-pointer walk over a copied stack and
# the call check of the stack scan (daemon/collect/collect_threads.c).
add_executable(test_thread_unwind ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_thread_unwind.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/collect_threads.c ${PROJECT_SOURCE_DIR}/daemon/collect/unwind.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/unwind_fast.c)
target_link_libraries(test_thread_unwind qprof_common threads_skel PkgConfig::LIBBPF PkgConfig::LIBDW Threads::Threads m)
add_test(NAME unit_thread_unwind COMMAND test_thread_unwind)

# The counter tables of common/counters.h against the status JSON, the
# targets' JSON and /metrics from a model whose every counter has a value
# of its own; promtool's lint of that /metrics text.
add_executable(test_counters ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_counters.c)
target_link_libraries(test_counters qprof_common PkgConfig::JANSSON m)
add_test(NAME unit_counters COMMAND test_counters)
if(PROMTOOL)
  add_test(NAME unit_counters_promtool
    COMMAND bash -c "set -o pipefail; out=$($<TARGET_FILE:test_counters> --print | ${PROMTOOL} check metrics 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 0 ] && [ -z \"$out\" ]")
else()
  add_test(NAME unit_counters_promtool
    COMMAND bash -c "echo 'promtool not found: scripts/install-deps.sh installs Debian package prometheus'; exit 1")
endif()
