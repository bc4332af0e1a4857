# instrument.h, the tutorial's INSTRUMENT_* API on top of the qprof markers.
# Each test program is built with and without -DENABLE_INSTRUMENT; both runs
# must pass (each reads its own executable through elf_probes, as qprofd does:
# the exact site list when enabled, no site when disabled), then
# qprof/test_instrument_notes.cmake counts the qprof notes and the .qprof_refs
# entries of each binary: exact numbers when enabled, nothing when disabled.
find_program(QPROF_READELF NAMES readelf ${CMAKE_READELF})

# qprof_instrument_test(NAME SOURCE EXPECTED...): EXPECTED are probe=count
# pairs for the enabled build.
function(qprof_instrument_test name src)
  foreach(mode on off)
    set(t ${name}_${mode})
    add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/qprof/${src})
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/include)
    # elf_probes, to read /proc/self/exe (no marker in it: QPROF_DISABLE).
    target_link_libraries(${t} PRIVATE qprof_common)
    # The counts assume an optimized build, whatever the build type.
    target_compile_options(${t} PRIVATE -O2)
    if(mode STREQUAL "on")
      target_compile_definitions(${t} PRIVATE ENABLE_INSTRUMENT)
      set(check "-DEXPECT=${ARGN}")
    else()
      set(check -DNONE=1)
    endif()
    add_test(NAME ${t} COMMAND ${t})
    if(QPROF_READELF)
      add_test(NAME ${t}_notes COMMAND ${CMAKE_COMMAND}
        -DREADELF=${QPROF_READELF} -DBIN=$<TARGET_FILE:${t}> "${check}"
        -P ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_instrument_notes.cmake)
    endif()
  endforeach()
endfunction()

qprof_instrument_test(test_instrument test_instrument.c
  scope_enter=3 scope_exit=3 value=3 log=2 ring_register=1 ring_config=1)
qprof_instrument_test(test_instrument_cxx test_instrument_cxx.cpp
  scope_enter=3 scope_exit=3 value=3 log=4 ring_register=1 ring_config=1)
