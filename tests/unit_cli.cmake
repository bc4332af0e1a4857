# Unit tests of the JSON writer and of qprof-cli. No root, no daemon: the CLI
# tests run the real qprof-cli binary against a fake HTTP server on a
# temporary unix socket and against a small probe fixture built here.

add_executable(test_json_writer unit/test_json_writer.c)
target_include_directories(test_json_writer PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_json_writer PRIVATE qprof_common PkgConfig::JANSSON m)
add_test(NAME unit_json_writer COMMAND test_json_writer)
