# Model and encoder unit tests (no root, no BPF): windows, scope trees,
# values and status figures from hand-made snapshots (test_model); the JSON
# of /api/scopes, /api/values, /api/status and the /metrics text from
# hand-made models, byte for byte (test_encode; the targets model and the
# log lines: test_encode_targets, test_encode_logs).
add_executable(test_model ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model.c)
target_link_libraries(test_model qprof_model m)
add_test(NAME unit_model COMMAND test_model)

add_executable(test_encode ${CMAKE_CURRENT_SOURCE_DIR}/export/test_encode.c)
target_link_libraries(test_encode qprof_export m)
add_test(NAME unit_encode COMMAND test_encode)

# /metrics from hand-made models: the text with escaping, merging and the
# cap (test_metrics), the protobuf decoded back (test_metrics_pb); and
# promtool's lint of a hostile model's text.
add_executable(test_metrics ${CMAKE_CURRENT_SOURCE_DIR}/export/test_metrics.c)
target_link_libraries(test_metrics qprof_export m)
add_test(NAME unit_metrics COMMAND test_metrics)
add_executable(test_metrics_pb ${CMAKE_CURRENT_SOURCE_DIR}/export/test_metrics_pb.c)
target_link_libraries(test_metrics_pb qprof_export m)
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
add_executable(test_encode_targets ${CMAKE_CURRENT_SOURCE_DIR}/export/test_encode_targets.c)
target_link_libraries(test_encode_targets qprof_export m)
add_test(NAME unit_encode_targets COMMAND test_encode_targets)

# The NDJSON lines of /api/logs from a hand-made batch, byte for byte.
add_executable(test_encode_logs ${CMAKE_CURRENT_SOURCE_DIR}/export/test_encode_logs.c)
target_link_libraries(test_encode_logs qprof_export m)
add_test(NAME unit_encode_logs COMMAND test_encode_logs)

# The log model's reader on a fake store, loss counter and namer (the test
# defines those in place of logs.c's, collect_scopes.c's, target_names.c's).
add_executable(test_model_logs ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model_logs.c
  ${PROJECT_SOURCE_DIR}/daemon/model/model_logs.c)
target_link_libraries(test_model_logs qprof_model Threads::Threads m)
add_test(NAME unit_model_logs COMMAND test_model_logs)

# The scope collector's daemon-side copy of the kernel chunks, and its map
# sizes on simulated hosts of 2, 64 and 256 CPUs.
add_executable(test_scope_store ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_scope_store.c)
target_link_libraries(test_scope_store qprof_collect m)
add_test(NAME unit_scope_store COMMAND test_scope_store)

add_executable(test_scope_sizing ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_scope_sizing.c)
target_link_libraries(test_scope_sizing qprof_collect m)
add_test(NAME unit_scope_sizing COMMAND test_scope_sizing)

# The ring collector's pairing on hand-made records (daemon/collect/ring_pair.c).
add_executable(test_ring_pair ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_ring_pair.c)
target_include_directories(test_ring_pair PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_ring_pair qprof_collect m)
add_test(NAME unit_ring_pair COMMAND test_ring_pair)
# The ring collector's thread names by tid and start time (ring_read.c).
add_executable(test_ring_tnames ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_ring_tnames.c)
target_include_directories(test_ring_tnames PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_ring_tnames qprof_collect m)
add_test(NAME unit_ring_tnames COMMAND test_ring_tnames)
# Spans across threads of the ring collector (daemon/collect/ring_spans.c).
add_executable(test_ring_spans ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_ring_spans.c)
target_include_directories(test_ring_spans PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_ring_spans qprof_collect m)
add_test(NAME unit_ring_spans COMMAND test_ring_spans)

# Thread stacks: the frame-pointer walk over a copied stack and
# the call check of the stack scan (daemon/collect/collect_threads.c).
add_executable(test_thread_unwind ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_thread_unwind.c)
target_link_libraries(test_thread_unwind qprof_collect Threads::Threads m)
add_test(NAME unit_thread_unwind COMMAND test_thread_unwind)

# The counter tables of common/counters.h against the status JSON, the
# targets' JSON and /metrics from a model whose every counter has a value
# of its own; promtool's lint of that /metrics text.
add_executable(test_counters ${CMAKE_CURRENT_SOURCE_DIR}/export/test_counters.c)
target_link_libraries(test_counters qprof_export PkgConfig::JANSSON m)
add_test(NAME unit_counters COMMAND test_counters)
if(PROMTOOL)
  add_test(NAME unit_counters_promtool
    COMMAND bash -c "set -o pipefail; out=$($<TARGET_FILE:test_counters> --print | ${PROMTOOL} check metrics 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 0 ] && [ -z \"$out\" ]")
else()
  add_test(NAME unit_counters_promtool
    COMMAND bash -c "echo 'promtool not found: scripts/install-deps.sh installs Debian package prometheus'; exit 1")
endif()
