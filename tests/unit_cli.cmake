# Unit tests of the JSON writer and of qprof-cli. No root, no daemon: the CLI
# tests run the real qprof-cli binary against a fake HTTP server on a
# temporary unix socket and against a small probe fixture built here.

add_executable(test_json_writer common/test_json_writer.c)
target_include_directories(test_json_writer PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_json_writer PRIVATE qprof_common PkgConfig::JANSSON m)
add_test(NAME unit_json_writer COMMAND test_json_writer)

# A program with known qprof sites and a foreign USDT probe, for `probes`.
# Built at -O0 so that each marker stays one probe site.
add_executable(cli_probes_fixture cli/cli_probes_fixture.c)
target_include_directories(cli_probes_fixture PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_options(cli_probes_fixture PRIVATE -O0)

add_executable(test_cli cli/test_cli.c)
target_include_directories(test_cli PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_cli PRIVATE Threads::Threads)
add_dependencies(test_cli qprof-cli cli_probes_fixture)
foreach(mode args http probes)
  add_test(NAME unit_cli_${mode}
    COMMAND test_cli $<TARGET_FILE:qprof-cli> ${mode} $<TARGET_FILE:cli_probes_fixture>)
  set_tests_properties(unit_cli_${mode} PROPERTIES TIMEOUT 120)
endforeach()

# Where answers and errors go: --json errors, "-o -", the empty-profile note.
add_executable(test_cli_output cli/test_cli_output.c)
target_include_directories(test_cli_output PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_cli_output PRIVATE Threads::Threads)
add_dependencies(test_cli_output qprof-cli)
foreach(mode json stdout note)
  add_test(NAME unit_cli_${mode} COMMAND test_cli_output $<TARGET_FILE:qprof-cli> ${mode})
  set_tests_properties(unit_cli_${mode} PROPERTIES TIMEOUT 120)
endforeach()

# `qprof-cli top`'s figures (folded stacks -> self/total, sorting, --json)
# without a daemon: cli/top_figures.c with the CLI's JSON helpers.
add_executable(test_top_figures cli/test_top_figures.c ${PROJECT_SOURCE_DIR}/cli/top_figures.c
  ${PROJECT_SOURCE_DIR}/cli/top_draw.c
  ${PROJECT_SOURCE_DIR}/cli/common.c ${PROJECT_SOURCE_DIR}/cli/http_client.c
  ${PROJECT_SOURCE_DIR}/cli/http_parse.c)
target_include_directories(test_top_figures PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
  ${QP_STAGE_INC}/cli)
target_link_libraries(test_top_figures PRIVATE qprof_common PkgConfig::JANSSON)
add_test(NAME unit_top_figures COMMAND test_top_figures)
