# Compiled CFI tables (daemon/collect/cfi_table.c, cfi_fdes.c, cfi_cache.c) and their bounded walker
# (cfi_walk.c), checked against libdwfl on this program's own stacks; built
# -O2 without frame pointers, linked to libstdc++ (a std::thread).
set(QP_CFI_SRC ${PROJECT_SOURCE_DIR}/daemon/collect/cfi_table.c ${PROJECT_SOURCE_DIR}/daemon/collect/cfi_fdes.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/cfi_cache.c ${PROJECT_SOURCE_DIR}/daemon/collect/cfi_pack.c
  ${PROJECT_SOURCE_DIR}/daemon/collect/cfi_walk.c)
add_executable(test_cfi_walk ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_cfi_walk.c
  ${CMAKE_CURRENT_SOURCE_DIR}/collect/cfi_walk_cxx.cpp ${CMAKE_CURRENT_SOURCE_DIR}/collect/cfi_walk_dbg.c ${QP_CFI_SRC}
  ${PROJECT_SOURCE_DIR}/daemon/collect/unwind.c ${PROJECT_SOURCE_DIR}/daemon/collect/unwind_fast.c)
target_compile_options(test_cfi_walk PRIVATE -O2 -fomit-frame-pointer -momit-leaf-frame-pointer)
# its CFI in .debug_frame only: the compiler reads it where .eh_frame has none
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/collect/cfi_walk_dbg.c PROPERTIES
  COMPILE_OPTIONS "-g;-fno-asynchronous-unwind-tables")
target_link_libraries(test_cfi_walk qprof_collect PkgConfig::LIBDW PkgConfig::LIBELF Threads::Threads m stdc++)
add_test(NAME unit_cfi_walk COMMAND test_cfi_walk ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_cfi/libdw-costly-program)
set_tests_properties(unit_cfi_walk PROPERTIES TIMEOUT 120)

# The table compiler's figures on real files (bench/cfi_tables.sh runs it).
add_executable(cfi_tables_bench ${PROJECT_SOURCE_DIR}/bench/cfi_tables.c ${QP_CFI_SRC})
target_compile_options(cfi_tables_bench PRIVATE -O2)
target_link_libraries(cfi_tables_bench qprof_collect PkgConfig::LIBDW PkgConfig::LIBELF Threads::Threads)

# fuzz_cfi_table: the table compiler on hostile ELF files (truncated, cyclic,
# garbage CFI); refusals counted, never a crash or hang.
if(_qp_nofuzz EQUAL 0)
  set(QP_FUZZ_CFI_SRC ${QP_CFI_SRC} ${PROJECT_SOURCE_DIR}/common/elf_build_id.c)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_cfi_table
    COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
            ${QP_FUZZ_INC_COLLECT}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_cfi_table.c ${QP_FUZZ_CFI_SRC}
            -ldw -lelf -lz -lpthread -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_cfi_table
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_cfi_table.c ${QP_FUZZ_CFI_SRC}
    COMMENT "libFuzzer target fuzz_cfi_table"
    VERBATIM)
  add_custom_target(fuzz_cfi_table_build ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_cfi_table)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_cfi)
  # seeds: the unwinder fuzzer's (real programs with CFI), and inputs the
  # long runs found (corpus_cfi: one that made libdw take 1 s of CPU and
  # 1.3 GB for 123 FDEs before the compiler checked the DW_CFA programs;
  # one whose .eh_frame_hdr sends an address range to an FDE the compiler
  # refused, on which libdw took a minute and 1.5 GB before the search
  # table was checked too; the RSS limit catches either again)
  add_test(NAME fuzz_cfi_table_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_cfi_table -runs=5000 -seed=1 -max_len=131072
            -rss_limit_mb=1024 -timeout=20 ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_cfi
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_cfi)
  set_tests_properties(fuzz_cfi_table_smoke PROPERTIES TIMEOUT 300)
endif()

# The packed tables the kernel walks (cfi_pack.c): the same rule as the
# compiled table at every address of real and random tables.
add_executable(test_cfi_pack ${CMAKE_CURRENT_SOURCE_DIR}/collect/test_cfi_pack.c)
target_link_libraries(test_cfi_pack qprof_collect PkgConfig::LIBDW PkgConfig::LIBELF)
add_test(NAME unit_cfi_pack COMMAND test_cfi_pack)
set_tests_properties(unit_cfi_pack PROPERTIES TIMEOUT 120)
