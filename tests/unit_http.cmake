# HTTP unit tests (no root): the query-string checks of the API.
add_executable(test_http_query ${CMAKE_CURRENT_SOURCE_DIR}/http/test_http_query.c)
target_include_directories(test_http_query PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_http_query qprof_http)
add_test(NAME unit_http_query COMMAND test_http_query)

# Who may talk to qprofd: Host/Origin/token/Content-Type decisions, the
# token file's rules, kernel addresses hidden (http_auth.c).
add_executable(test_http_auth ${CMAKE_CURRENT_SOURCE_DIR}/http/test_http_auth.c)
target_include_directories(test_http_auth PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_http_auth qprof_http)
add_test(NAME unit_http_auth COMMAND test_http_auth)
