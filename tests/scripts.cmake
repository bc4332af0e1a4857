# The project's scripts and its service unit: pipelines that cannot die of
# SIGPIPE, the demo run end to end, and systemd/qprofd.service checked by
# systemd-analyze; qprofd's sd_notify.
add_test(NAME unit_check_pipelines
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_pipelines.sh ${PROJECT_SOURCE_DIR})
add_test(NAME integration_demo
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_demo.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} 1 2)
set_tests_properties(integration_demo PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
add_test(NAME unit_service
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_service.sh
          ${PROJECT_SOURCE_DIR}/systemd/qprofd.service $<TARGET_FILE:qprofd> 3.5)
add_test(NAME integration_sd_notify
  COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_sd_notify.py
          $<TARGET_FILE:qprofd> $<TARGET_FILE:scope_target> $<TARGET_FILE:qprof-cli>)
set_tests_properties(integration_sd_notify PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 RUN_SERIAL TRUE)
# The rule of dependencies between the tree's folders (docs/internals/architecture.md, "The tree"):
# the real tree passes, broken copies of it fail.
# check_deps reads the build too (BUILD/qprof_targets.txt and the stage
# archives), so it runs after the build: the stage libraries link down, tests
# link one stage, no circle of calls between the files of a stage.
add_test(NAME check_deps
  COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/check_deps.py ${PROJECT_SOURCE_DIR}
          --build ${PROJECT_BINARY_DIR})
add_test(NAME unit_check_deps_selftest
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_deps_selftest.sh ${PROJECT_SOURCE_DIR}
          ${PROJECT_BINARY_DIR})
# Every include in its stage form (scripts/stage_includes.py --check changes nothing).
add_test(NAME check_stage_includes
  COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/stage_includes.py --check ${PROJECT_SOURCE_DIR})
