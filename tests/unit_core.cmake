# Core unit tests (no root): histogram math.
add_executable(test_hist ${CMAKE_CURRENT_SOURCE_DIR}/model/test_hist.c)
target_link_libraries(test_hist qprof_model m)
add_test(NAME unit_hist COMMAND test_hist)

add_executable(test_usdt_spec ${CMAKE_CURRENT_SOURCE_DIR}/common/test_usdt_spec.c)
target_link_libraries(test_usdt_spec qprof_common)
add_test(NAME unit_usdt_spec COMMAND test_usdt_spec)

add_executable(test_value_math ${CMAKE_CURRENT_SOURCE_DIR}/model/test_value_math.c)
target_link_libraries(test_value_math qprof_model m)
add_test(NAME unit_value_math COMMAND test_value_math)

add_executable(test_cpu_table ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_cpu_table.c)
target_link_libraries(test_cpu_table qprof_collect)
add_test(NAME unit_cpu_table COMMAND test_cpu_table)

add_executable(test_cpu_table_age ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_cpu_table_age.c)
target_link_libraries(test_cpu_table_age qprof_collect)
add_test(NAME unit_cpu_table_age COMMAND test_cpu_table_age)

# The log store's RSS (root: a BPF ring buffer; 77 = skipped without one)
add_executable(test_logs_store ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_logs_store.c)
target_link_libraries(test_logs_store qprof_collect PkgConfig::LIBBPF Threads::Threads)
add_test(NAME unit_logs_store COMMAND test_logs_store)
set_tests_properties(unit_logs_store PROPERTIES SKIP_RETURN_CODE 77)
# The heap sampler's rule and its unbiased estimator (bpf/heap.h).
add_executable(test_heap_math ${CMAKE_CURRENT_SOURCE_DIR}/common/test_heap_math.c)
target_link_libraries(test_heap_math qprof_common m)
add_test(NAME unit_heap_math COMMAND test_heap_math)

# The CFI unwinder on this program's own stack, PIE and not.
foreach(v unwind unwind_nopie)
  add_executable(test_${v} ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_unwind.c
    ${PROJECT_SOURCE_DIR}/daemon/collect/unwind.c ${PROJECT_SOURCE_DIR}/daemon/collect/unwind_fast.c)
  target_compile_options(test_${v} PRIVATE -O2 -fomit-frame-pointer -momit-leaf-frame-pointer)
  target_link_libraries(test_${v} qprof_collect PkgConfig::LIBDW Threads::Threads m)
  add_test(NAME unit_${v} COMMAND test_${v})
endforeach()
target_compile_options(test_unwind_nopie PRIVATE -fno-pie)
target_link_options(test_unwind_nopie PRIVATE -no-pie)
add_executable(test_slow_store ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_slow_store.c)
target_link_libraries(test_slow_store qprof_collect)
add_test(NAME unit_slow_store COMMAND test_slow_store)
add_executable(test_slow_kev ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_slow_kev.c)
target_link_libraries(test_slow_kev qprof_collect)
add_test(NAME unit_slow_kev COMMAND test_slow_kev)
add_executable(test_slow_window ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_slow_window.c)
target_link_libraries(test_slow_window qprof_collect)
add_test(NAME unit_slow_window COMMAND test_slow_window)

# The release process's decision to end a hold at a rendezvous (no root).
add_executable(test_lc_hold ${CMAKE_CURRENT_SOURCE_DIR}/targets/test_lc_hold.c)
target_include_directories(test_lc_hold PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_lc_hold PRIVATE qprof_targets)
add_test(NAME unit_lc_hold COMMAND test_lc_hold)
# The sealed copy of a mapped file's unwinding parts handed to libdwfl.
add_executable(test_elf_snap ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_elf_snap.c)
target_include_directories(test_elf_snap PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_elf_snap qprof_collect PkgConfig::LIBDW PkgConfig::LIBELF)
add_test(NAME unit_elf_snap COMMAND test_elf_snap)
