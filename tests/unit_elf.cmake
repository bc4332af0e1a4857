# unit_elf.cmake - unit tests of the shared parsers: ELF probes (on fixture
# binaries built in tests/fixtures), the /proc readers and util. No root,
# no BPF. Fixture paths reach the test as key=path arguments.
add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/fixtures)

foreach(t elf_probes elf_file procfs util)
  add_executable(test_${t} ${CMAKE_CURRENT_SOURCE_DIR}/common/test_${t}.c)
  target_include_directories(test_${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_${t} PRIVATE qprof_common m)
endforeach()

# fx_truncated depends on every fixture, so building the test builds them.
add_dependencies(test_elf_probes fx_truncated)
add_test(NAME unit_elf_probes COMMAND test_elf_probes
  pie=$<TARGET_FILE:fx_markers_pie>
  nopie=$<TARGET_FILE:fx_markers_nopie>
  lld=${QP_FX_LLD}
  cxx=$<TARGET_FILE:fx_cxx>
  lib=$<TARGET_FILE:fx_sitelib>
  sdt=$<TARGET_FILE:fx_sdt>
  spans=$<TARGET_FILE:fx_spans>
  spans_cxx=$<TARGET_FILE:fx_spans_cxx>
  spans_off=$<TARGET_FILE:fx_spans_off>
  notelf=${QP_FX_NOT_ELF}
  truncated=${QP_FX_TRUNC})
add_test(NAME unit_procfs COMMAND test_procfs)
add_test(NAME unit_util COMMAND test_util)
add_dependencies(test_elf_file fx_truncated)
add_test(NAME unit_elf_file COMMAND test_elf_file
  pie=$<TARGET_FILE:fx_markers_pie> sdt=$<TARGET_FILE:fx_sdt>)
set_tests_properties(unit_elf_file PROPERTIES TIMEOUT 60)

# The allocator entry points of the heap profiler, found in the libc it runs with.
add_executable(test_elf_syms ${CMAKE_CURRENT_SOURCE_DIR}/common/test_elf_syms.c)
target_include_directories(test_elf_syms PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_elf_syms PRIVATE qprof_common ${CMAKE_DL_LIBS})
add_test(NAME unit_elf_syms COMMAND test_elf_syms)

# What an unloaded library keeps for its names (daemon/targets/lib_ranges.c):
# its mappings from a snapshot that held it whole, on the fx_sitelib fixture.
add_executable(test_lib_ranges ${CMAKE_CURRENT_SOURCE_DIR}/targets/test_lib_ranges.c)
target_include_directories(test_lib_ranges PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_lib_ranges PRIVATE qprof_targets)
add_test(NAME unit_lib_ranges COMMAND test_lib_ranges lib=$<TARGET_FILE:fx_sitelib>)
