# The project's scripts and its service unit: pipelines that cannot die of
# SIGPIPE, the demo run end to end, and systemd/qprofd.service checked by
# systemd-analyze.
add_test(NAME unit_check_pipelines
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_pipelines.sh ${PROJECT_SOURCE_DIR})
add_test(NAME integration_demo
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_demo.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} 1 2)
set_tests_properties(integration_demo PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
