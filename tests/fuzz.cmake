# Fuzz targets (libFuzzer). The project builds with the default C compiler;
# these are built by clang (the one that compiles the BPF objects) with
# -fsanitize=fuzzer,address,undefined. ctest runs each for a fixed number of
# inputs from a seed corpus as a smoke test; tests/fuzz/run_long.sh runs each
# for 10 M inputs (figures in docs/testing.md).
set(QP_FUZZ_SRC ${PROJECT_SOURCE_DIR}/common/elf_probes.c ${PROJECT_SOURCE_DIR}/common/elf_file.c ${PROJECT_SOURCE_DIR}/common/elf_build_id.c ${PROJECT_SOURCE_DIR}/common/elf_sites.c ${PROJECT_SOURCE_DIR}/common/elf_ctx.c ${PROJECT_SOURCE_DIR}/common/procfs.c
  ${PROJECT_SOURCE_DIR}/common/usdt_spec.c ${PROJECT_SOURCE_DIR}/common/util.c)
# Each fuzz target sees the include folders of the stage it fuzzes and of the
# stages below it, as that stage's library does (cmake/QprofStages.cmake).
qp_stage_cflags(QP_FUZZ_INC_COMMON common)
qp_stage_cflags(QP_FUZZ_INC_COLLECT common collect)
qp_stage_cflags(QP_FUZZ_INC_SYMBOLIZE common symbolize)
qp_stage_cflags(QP_FUZZ_INC_HTTP common collect symbolize targets model export http)
execute_process(COMMAND ${BPF_CLANG} -fsanitize=fuzzer -x c - -o /dev/null
  INPUT_FILE /dev/null RESULT_VARIABLE _qp_nofuzz OUTPUT_QUIET ERROR_QUIET)
# an empty program fails only for lack of main: test the runtime with a target
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c
  "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n")
execute_process(COMMAND ${BPF_CLANG} -fsanitize=fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c
  -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe RESULT_VARIABLE _qp_nofuzz OUTPUT_QUIET ERROR_QUIET)
# fuzz_http_routes: the router and its handlers with their model, without
# libmicrohttpd (http.c) and without loading BPF; the link swaps the BPF map
# readers and the attach calls for the fuzzer's own (see the file).
# Its sources: those of every stage's library, less http.c, and qprofd's
# options.c, read from the libraries so that a new daemon file needs no edit here.
qp_stage_sources(_qp_stage_src common symbolize collect targets model export http)
set(QP_FUZZ_HTTP_SRC ${PROJECT_SOURCE_DIR}/daemon/options.c)
foreach(s ${_qp_stage_src})
  get_filename_component(_n ${s} NAME)
  if(NOT _n STREQUAL "http.c")
    list(APPEND QP_FUZZ_HTTP_SRC ${s})
  endif()
endforeach()
set(QP_FUZZ_HTTP_WRAP)
foreach(w qp_scopes_read qp_marks_read qp_probe_counts_read qp_values_read qp_scopes_counter
    qp_spans_figures qp_registry_add_pid qp_registry_add_binary qp_stop_wait)
  list(APPEND QP_FUZZ_HTTP_WRAP -Wl,--wrap=${w})
endforeach()
# the symbolizer's stage and the one below it, as its library links them
qp_stage_sources(QP_FUZZ_SYM_SRC common symbolize)
if(_qp_nofuzz EQUAL 0)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http_routes
    COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
            ${QP_FUZZ_INC_HTTP}
            -I${BPF_GEN_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_http_routes.c ${QP_FUZZ_HTTP_SRC}
            ${QP_FUZZ_HTTP_WRAP} -lbpf -ljansson -ldw -lelf -lz -lcapstone -lcurl -lpthread -lm -lstdc++
            -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http_routes
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_http_routes.c ${QP_FUZZ_HTTP_SRC} scopes_skel_gen
            profile_skel_gen heap_skel_gen
    COMMENT "libFuzzer target fuzz_http_routes"
    VERBATIM)
  add_custom_target(fuzz_http_routes_build ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http_routes)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_symbolize
    COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
            ${QP_FUZZ_INC_SYMBOLIZE}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_symbolize.c ${QP_FUZZ_SYM_SRC}
            -ldw -lelf -lz -lcurl -lpthread -lstdc++ -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_symbolize
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_symbolize.c ${QP_FUZZ_SYM_SRC}
    COMMENT "libFuzzer target fuzz_symbolize"
    VERBATIM)
  add_custom_target(fuzz_symbolize_build ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_symbolize)
  # fuzz_dwarf: the symbolizer's DWARF reading (libdw) on .debug_* sections
  # wrapped in an ELF in memory
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dwarf
    COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
            ${QP_FUZZ_INC_SYMBOLIZE}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_dwarf.c ${QP_FUZZ_SYM_SRC}
            -ldw -lelf -lz -lcurl -lpthread -lstdc++ -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dwarf
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_dwarf.c ${QP_FUZZ_SYM_SRC}
            ${PROJECT_SOURCE_DIR}/daemon/symbolize/sym_internal.h
    COMMENT "libFuzzer target fuzz_dwarf"
    VERBATIM)
  add_custom_target(fuzz_dwarf_build ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dwarf)
  # fuzz_unwind: the CFI unwinder and libdwfl under it, on hostile files and stacks
  set(QP_FUZZ_UNWIND_SRC ${PROJECT_SOURCE_DIR}/daemon/collect/unwind.c ${PROJECT_SOURCE_DIR}/daemon/collect/unwind_fast.c ${PROJECT_SOURCE_DIR}/daemon/collect/elf_snap.c ${PROJECT_SOURCE_DIR}/common/util.c)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_unwind
    COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
            ${QP_FUZZ_INC_COLLECT}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_unwind.c ${QP_FUZZ_UNWIND_SRC}
            -ldw -lelf -lz -lpthread -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_unwind
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_unwind.c ${QP_FUZZ_UNWIND_SRC}
    COMMENT "libFuzzer target fuzz_unwind"
    VERBATIM)
  add_custom_target(fuzz_unwind_build ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_unwind)
  # seeds: programs with real CFI (-O2 without frame pointers, C++, the symfix ones)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind/stamp
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:qsort_nofp> $<TARGET_FILE:sort_cxx>
            $<TARGET_FILE:sf_nopie> ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind/
    COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind/stamp
    DEPENDS qsort_nofp sort_cxx sf_nopie
    VERBATIM)
  add_custom_target(fuzz_corpus_unwind ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind/stamp)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_unwind)
  add_test(NAME fuzz_unwind_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_unwind -runs=5000 -seed=1 -max_len=65536
            -rss_limit_mb=2048 ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_unwind
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_unwind)
  set_tests_properties(fuzz_unwind_smoke PROPERTIES TIMEOUT 300)
  # fuzz_elf_probes: common/'s ELF readers; fuzz_parsers: common/'s text
  # parsers and http/'s query-string checks
  set(QP_FUZZ_INC_fuzz_elf_probes ${QP_FUZZ_INC_COMMON})
  set(QP_FUZZ_SRC_fuzz_elf_probes ${QP_FUZZ_SRC})
  set(QP_FUZZ_INC_fuzz_parsers ${QP_FUZZ_INC_HTTP})
  set(QP_FUZZ_SRC_fuzz_parsers ${QP_FUZZ_SRC} ${PROJECT_SOURCE_DIR}/daemon/http/http_query.c)
  foreach(f fuzz_elf_probes fuzz_parsers)
    add_custom_command(
      OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${f}
      COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
              ${QP_FUZZ_INC_${f}}
              ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${f}.c ${QP_FUZZ_SRC_${f}}
              -lelf -lz -o ${CMAKE_CURRENT_BINARY_DIR}/${f}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${f}.c ${QP_FUZZ_SRC_${f}}
      COMMENT "libFuzzer target ${f}"
      VERBATIM)
    add_custom_target(${f}_build ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${f})
  endforeach()
  # seeds: the fixture binaries the suite builds; a few lines of text
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf/stamp
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:fx_markers_pie> $<TARGET_FILE:fx_cxx>
            $<TARGET_FILE:fx_sdt> ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf/
    COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf/stamp
    DEPENDS fx_markers_pie fx_cxx fx_sdt
    VERBATIM)
  add_custom_target(fuzz_corpus_elf ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf/stamp)
  # symbolizer seeds: the symfix programs, plain and each stripped one
  # followed by its debug file (build-id and .gnu_debuglink variants)
  set(_sym_seeds ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_sym)
  add_custom_command(
    OUTPUT ${_sym_seeds}/stamp
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/sym_seeds.sh ${_sym_seeds} ${SF_OUT} ${SF_DEBUGROOT}
            $<TARGET_FILE:sf_pie> $<TARGET_FILE:sf_nopie> $<TARGET_FILE:sf_cxx> $<TARGET_FILE:sf_lib>
    DEPENDS sf_split sf_pie sf_nopie sf_cxx sf_lib ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/sym_seeds.sh
    VERBATIM)
  add_custom_target(fuzz_corpus_sym ALL DEPENDS ${_sym_seeds}/stamp)
  # DWARF seeds: the .debug_* sections of fixtures built -g (C -O2 with
  # inlining, C -O1, C++)
  set(_dw_seeds ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_dwarf)
  add_custom_command(
    OUTPUT ${_dw_seeds}/stamp
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/dwarf_seeds.sh ${_dw_seeds}
            $<TARGET_FILE:sf_inline> $<TARGET_FILE:sf_nopie> $<TARGET_FILE:sf_cxx>
    DEPENDS sf_inline sf_nopie sf_cxx ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/dwarf_seeds.sh
    VERBATIM)
  add_custom_target(fuzz_corpus_dwarf ALL DEPENDS ${_dw_seeds}/stamp)
  # new inputs go to the first directory: one in the build tree, never the sources
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_elf ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_parsers
    ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_http ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_sym
    ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_dwarf)
  add_test(NAME fuzz_elf_probes_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_elf_probes -runs=40000 -max_len=65536 -seed=1
            -rss_limit_mb=2048 ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_elf ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf)
  add_test(NAME fuzz_parsers_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_parsers -runs=1000000 -seed=1
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_parsers ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_parsers)
  add_test(NAME fuzz_http_routes_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_http_routes -runs=200000 -seed=1 -max_len=4096
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_http ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_http)
  add_test(NAME fuzz_symbolize_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_symbolize -runs=10000 -seed=1 -max_len=65536
            -rss_limit_mb=2048 ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_sym ${_sym_seeds}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_symbolize)
  add_test(NAME fuzz_dwarf_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dwarf -runs=8000 -seed=1 -max_len=262144
            -rss_limit_mb=2048 -timeout=30 ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_dwarf ${_dw_seeds}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_dwarf)
  set_tests_properties(fuzz_elf_probes_smoke fuzz_parsers_smoke fuzz_http_routes_smoke
    fuzz_symbolize_smoke fuzz_dwarf_smoke PROPERTIES TIMEOUT 300)
else()
  message(STATUS "libFuzzer not available with ${BPF_CLANG}: fuzz targets not built")
endif()
