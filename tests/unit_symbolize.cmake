# unit_symbolize.cmake - unit test of the symbolizer (no root, no BPF). The
# fixture programs of tests/symfix are built here: the same C program PIE
# (with a shared library), non-PIE, stripped with its symbols in a debug
# file found by build-id under a test debug root, stripped with a
# .gnu_debuglink (and no build-id), stripped with -rdynamic (.dynsym only),
# and a C++ program. The test runs them, reads their maps and asserts names.
set(SF_SRC ${CMAKE_CURRENT_SOURCE_DIR}/symfix)
set(SF_OUT ${CMAKE_CURRENT_BINARY_DIR}/symfix)
set(SF_DEBUGROOT ${SF_OUT}/debugroot)

add_library(sf_lib SHARED ${SF_SRC}/sf_lib.c)
target_compile_options(sf_lib PRIVATE -g -O1)
target_link_options(sf_lib PRIVATE -Wl,--build-id=sha1)

# sf_prog(NAME VARIANT PIE(ON/OFF) EXTRA_LINK_OPTIONS...)
function(sf_prog name variant pie)
  add_executable(${name} ${SF_SRC}/sf_prog.c)
  target_compile_definitions(${name} PRIVATE SF_VARIANT=${variant})
  target_compile_options(${name} PRIVATE -g -O1)
  if(pie)
    target_compile_options(${name} PRIVATE -fPIE)
    target_link_options(${name} PRIVATE -pie)
  else()
    target_compile_options(${name} PRIVATE -fno-pie)
    target_link_options(${name} PRIVATE -no-pie)
  endif()
  target_link_options(${name} PRIVATE -Wl,--build-id=sha1 ${ARGN})
endfunction()

sf_prog(sf_pie 1 ON)
target_compile_definitions(sf_pie PRIVATE SF_WITH_LIB)
target_link_libraries(sf_pie PRIVATE sf_lib)
sf_prog(sf_nopie 2 OFF)
sf_prog(sf_bid_full 3 ON)
sf_prog(sf_link_full 4 ON -Wl,--build-id=none)
sf_prog(sf_dyn_full 5 ON -rdynamic)

add_executable(sf_cxx ${SF_SRC}/sf_cxx.cpp)
target_compile_options(sf_cxx PRIVATE -g -O1 -fPIE)
target_link_options(sf_cxx PRIVATE -pie -Wl,--build-id=sha1)

# Stripped copies and their debug files.
set(SF_SPLIT sh ${SF_SRC}/split_debug.sh)
add_custom_command(OUTPUT ${SF_OUT}/bid/sf_bid
  COMMAND ${SF_SPLIT} buildid $<TARGET_FILE:sf_bid_full> ${SF_OUT}/bid/sf_bid ${SF_DEBUGROOT}
  DEPENDS sf_bid_full ${SF_SRC}/split_debug.sh VERBATIM)
add_custom_command(OUTPUT ${SF_OUT}/link/sf_link
  COMMAND ${SF_SPLIT} debuglink $<TARGET_FILE:sf_link_full> ${SF_OUT}/link/sf_link ${SF_DEBUGROOT}
  DEPENDS sf_link_full ${SF_SRC}/split_debug.sh VERBATIM)
add_custom_command(OUTPUT ${SF_OUT}/dyn/sf_dyn
  COMMAND ${SF_SPLIT} strip $<TARGET_FILE:sf_dyn_full> ${SF_OUT}/dyn/sf_dyn ${SF_DEBUGROOT}
  DEPENDS sf_dyn_full ${SF_SRC}/split_debug.sh VERBATIM)
add_custom_target(sf_split DEPENDS ${SF_OUT}/bid/sf_bid ${SF_OUT}/link/sf_link ${SF_OUT}/dyn/sf_dyn)

add_executable(test_symbolize ${CMAKE_CURRENT_SOURCE_DIR}/symbolize/test_symbolize.c)
target_include_directories(test_symbolize PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_symbolize PRIVATE qprof_symbolize)
add_dependencies(test_symbolize sf_split sf_pie sf_nopie sf_cxx)

add_test(NAME unit_symbolize COMMAND test_symbolize
  pie=$<TARGET_FILE:sf_pie>
  nopie=$<TARGET_FILE:sf_nopie>
  bid=${SF_OUT}/bid/sf_bid
  link=${SF_OUT}/link/sf_link
  dyn=${SF_OUT}/dyn/sf_dyn
  cxx=$<TARGET_FILE:sf_cxx>
  debugroot=${SF_DEBUGROOT}
  kallsyms=${SF_SRC}/kallsyms.txt
  tmp=${SF_OUT}/tmp)
set_tests_properties(unit_symbolize PROPERTIES TIMEOUT 120)

# The symbolizer from 4 threads at once against a single-threaded reference.
add_executable(test_symbolize_threads ${CMAKE_CURRENT_SOURCE_DIR}/symbolize/test_symbolize_threads.c)
target_include_directories(test_symbolize_threads PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_symbolize_threads PRIVATE qprof_symbolize Threads::Threads)
add_dependencies(test_symbolize_threads sf_split sf_pie sf_cxx)
set(SF_THREAD_ARGS pie=$<TARGET_FILE:sf_pie> bid=${SF_OUT}/bid/sf_bid cxx=$<TARGET_FILE:sf_cxx>
  debugroot=${SF_DEBUGROOT} kallsyms=${SF_SRC}/kallsyms.txt)
add_test(NAME unit_symbolize_threads COMMAND test_symbolize_threads ${SF_THREAD_ARGS})
set_tests_properties(unit_symbolize_threads PROPERTIES TIMEOUT 120)

# The same test built with ThreadSanitizer (clang, the compiler of the BPF
# objects), when its runtime is there: a data race fails it (exit 66) even
# when the answers happen to come out right.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/tsan_probe.c "int main(void) { return 0; }\n")
execute_process(COMMAND ${BPF_CLANG} -fsanitize=thread ${CMAKE_CURRENT_BINARY_DIR}/tsan_probe.c
  -o ${CMAKE_CURRENT_BINARY_DIR}/tsan_probe RESULT_VARIABLE _qp_notsan OUTPUT_QUIET ERROR_QUIET)
if(_qp_notsan EQUAL 0)
  qp_stage_sources(_sym_src common symbolize)
  set(SF_TSAN_SRC ${CMAKE_CURRENT_SOURCE_DIR}/symbolize/test_symbolize_threads.c ${_sym_src})
  qp_stage_cflags(_sym_inc common symbolize)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/test_symbolize_threads_tsan
    COMMAND ${BPF_CLANG} -fsanitize=thread -g -O1 -pthread ${_sym_inc} -I${CMAKE_CURRENT_SOURCE_DIR} ${SF_TSAN_SRC}
            -ldw -lelf -lz -lcurl -lstdc++ -o ${CMAKE_CURRENT_BINARY_DIR}/test_symbolize_threads_tsan
    DEPENDS ${SF_TSAN_SRC} ${CMAKE_CURRENT_SOURCE_DIR}/symbolize/symfix_child.h
            ${PROJECT_SOURCE_DIR}/daemon/symbolize/sym_internal.h
            ${PROJECT_SOURCE_DIR}/daemon/symbolize/symbolize.h
    COMMENT "test_symbolize_threads with ThreadSanitizer" VERBATIM)
  add_custom_target(test_symbolize_threads_tsan_build ALL
    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/test_symbolize_threads_tsan)
  add_test(NAME unit_symbolize_threads_tsan
    COMMAND ${CMAKE_CURRENT_BINARY_DIR}/test_symbolize_threads_tsan ${SF_THREAD_ARGS})
  set_tests_properties(unit_symbolize_threads_tsan PROPERTIES TIMEOUT 300
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
else()
  message(STATUS "no ThreadSanitizer runtime for ${BPF_CLANG}: unit_symbolize_threads_tsan not built")
endif()

# Source lines and inlined frames (libdw): sf_inline built -O2 -g, and
# stripped with its DWARF in a debug file found by build-id.
add_executable(sf_inline ${SF_SRC}/sf_inline.c)
target_compile_options(sf_inline PRIVATE -g -O2 -fPIE)
target_link_options(sf_inline PRIVATE -pie -Wl,--build-id=sha1)
add_custom_command(OUTPUT ${SF_OUT}/bid/sf_inline
  COMMAND ${SF_SPLIT} buildid $<TARGET_FILE:sf_inline> ${SF_OUT}/bid/sf_inline ${SF_DEBUGROOT}
  DEPENDS sf_inline ${SF_SRC}/split_debug.sh VERBATIM)
add_custom_target(sf_inline_split DEPENDS ${SF_OUT}/bid/sf_inline)
add_executable(test_symbolize_lines ${CMAKE_CURRENT_SOURCE_DIR}/symbolize/test_symbolize_lines.c)
target_include_directories(test_symbolize_lines PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_symbolize_lines PRIVATE qprof_symbolize)
add_dependencies(test_symbolize_lines sf_inline sf_inline_split sf_split)
add_test(NAME unit_symbolize_lines COMMAND test_symbolize_lines
  inline=$<TARGET_FILE:sf_inline> inline_bid=${SF_OUT}/bid/sf_inline debugroot=${SF_DEBUGROOT}
  src=${SF_SRC}/sf_inline.c link=${SF_OUT}/link/sf_link tmp=${SF_OUT}/tmp_lines)
set_tests_properties(unit_symbolize_lines PROPERTIES TIMEOUT 120)

# A maps line or a .gnu_debuglink that names a FIFO (or, from another mount
# namespace, a device): never opened for reading (inotify is the witness).
add_executable(test_symbolize_special ${CMAKE_CURRENT_SOURCE_DIR}/symbolize/test_symbolize_special.c)
target_include_directories(test_symbolize_special PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_symbolize_special PRIVATE qprof_symbolize)
add_dependencies(test_symbolize_special sf_split)
add_test(NAME unit_symbolize_special COMMAND test_symbolize_special
  link=${SF_OUT}/link/sf_link tmp=${SF_OUT}/tmp)
set_tests_properties(unit_symbolize_special PROPERTIES TIMEOUT 60)
