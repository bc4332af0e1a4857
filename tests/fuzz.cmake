# Fuzz targets (libFuzzer). The project builds with the default C compiler;
# these are built by clang (the one that compiles the BPF objects) with
# -fsanitize=fuzzer,address,undefined. ctest runs each for a fixed number of
# inputs from a seed corpus as a smoke test; run them longer by hand:
#   build/tests/fuzz_elf_probes -max_total_time=600 build/tests/fuzz_corpus_elf
set(QP_FUZZ_SRC ${PROJECT_SOURCE_DIR}/daemon/elf_probes.c ${PROJECT_SOURCE_DIR}/daemon/elf_file.c ${PROJECT_SOURCE_DIR}/daemon/elf_sites.c ${PROJECT_SOURCE_DIR}/daemon/procfs.c
  ${PROJECT_SOURCE_DIR}/daemon/usdt_spec.c ${PROJECT_SOURCE_DIR}/daemon/http_query.c
  ${PROJECT_SOURCE_DIR}/daemon/util.c)
execute_process(COMMAND ${BPF_CLANG} -fsanitize=fuzzer -x c - -o /dev/null
  INPUT_FILE /dev/null RESULT_VARIABLE _qp_nofuzz OUTPUT_QUIET ERROR_QUIET)
# an empty program fails only for lack of main: test the runtime with a target
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c
  "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n")
execute_process(COMMAND ${BPF_CLANG} -fsanitize=fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c
  -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe RESULT_VARIABLE _qp_nofuzz OUTPUT_QUIET ERROR_QUIET)
if(_qp_nofuzz EQUAL 0)
  foreach(f fuzz_elf_probes fuzz_parsers)
    add_custom_command(
      OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${f}
      COMMAND ${BPF_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
              -I${PROJECT_SOURCE_DIR}/daemon -I${PROJECT_SOURCE_DIR}/bpf -I${PROJECT_SOURCE_DIR}/include
              ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${f}.c ${QP_FUZZ_SRC}
              -lelf -lz -o ${CMAKE_CURRENT_BINARY_DIR}/${f}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${f}.c ${QP_FUZZ_SRC}
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
  # new inputs go to the first directory: one in the build tree, never the sources
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_elf ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_parsers)
  add_test(NAME fuzz_elf_probes_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_elf_probes -runs=40000 -max_len=65536 -seed=1
            -rss_limit_mb=2048 ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_elf ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_elf)
  add_test(NAME fuzz_parsers_smoke
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/fuzz_parsers -runs=1000000 -seed=1
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_new_parsers ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_parsers)
  set_tests_properties(fuzz_elf_probes_smoke fuzz_parsers_smoke PROPERTIES TIMEOUT 300)
else()
  message(STATUS "libFuzzer not available with ${BPF_CLANG}: fuzz targets not built")
endif()
