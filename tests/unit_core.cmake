# Core unit tests (no root): histogram math.
add_executable(test_hist ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_hist.c)
target_link_libraries(test_hist qprof_common m)
add_test(NAME unit_hist COMMAND test_hist)

add_executable(test_usdt_spec ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_usdt_spec.c)
target_link_libraries(test_usdt_spec qprof_common)
add_test(NAME unit_usdt_spec COMMAND test_usdt_spec)

add_executable(test_value_math ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_value_math.c)
target_link_libraries(test_value_math qprof_common m)
add_test(NAME unit_value_math COMMAND test_value_math)

add_executable(test_cpu_table ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cpu_table.c)
target_link_libraries(test_cpu_table qprof_common)
add_test(NAME unit_cpu_table COMMAND test_cpu_table)
