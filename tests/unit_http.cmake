# HTTP unit tests (no root): the query-string checks of the API.
add_executable(test_http_query ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_http_query.c)
target_include_directories(test_http_query PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_http_query qprof_common)
add_test(NAME unit_http_query COMMAND test_http_query)
