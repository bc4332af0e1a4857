# Marker ABI 2, the ring fast path (include/qprof/ring.h), in process: the
# records a known sequence writes, rings reused across 10 000 threads (C and
# C++), and the detached cost counted by callgrind.
foreach(lang c cxx)
  if(lang STREQUAL "c")
    set(src ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_ring_abi.c)
  else()
    set(src ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_ring_abi_cxx.cpp)
  endif()
  add_executable(test_ring_abi_${lang} ${src})
  target_include_directories(test_ring_abi_${lang} PRIVATE ${PROJECT_SOURCE_DIR}/include
    ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(test_ring_abi_${lang} PRIVATE -O2)
  target_link_libraries(test_ring_abi_${lang} Threads::Threads m)
  add_test(NAME unit_ring_abi_${lang} COMMAND test_ring_abi_${lang})
endforeach()

add_test(NAME unit_ring_idle_cost COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_ring_idle.sh
  ${PROJECT_BINARY_DIR}/bench)
set_tests_properties(unit_ring_idle_cost PROPERTIES SKIP_RETURN_CODE 77)

# A marked plugin (ABI 2) loaded and unloaded without end: 10 copies, 100
# cycles (the ring pointer's TLS model in a shared library).
add_executable(test_plugin_tls ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_plugin_tls.c)
target_include_directories(test_plugin_tls PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_plugin_tls ${CMAKE_DL_LIBS})
add_dependencies(test_plugin_tls qp_plugin_fast)
add_test(NAME unit_plugin_tls COMMAND test_plugin_tls $<TARGET_FILE:qp_plugin_fast>
  ${CMAKE_CURRENT_BINARY_DIR}/plugin-tls)

# The detached cost with gcc and clang, small functions and loops, counted by
# callgrind (static builds); and no function holding a marker keeps data in
# the red zone (gcc and clang, -O2 -O3 -Os, C and C++).
add_test(NAME unit_marker_cost COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_marker_cost.sh
  ${PROJECT_SOURCE_DIR})
set_tests_properties(unit_marker_cost PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME unit_marker_redzone COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_redzone.sh
  ${PROJECT_SOURCE_DIR})
set_tests_properties(unit_marker_redzone PROPERTIES SKIP_RETURN_CODE 77)

# The ring's cold calls through the thunk keep the caller's registers.
foreach(v plain avx2)
  add_executable(test_ring_thunk_${v} ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_ring_thunk.c)
  target_include_directories(test_ring_thunk_${v} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(test_ring_thunk_${v} PRIVATE -O2 $<$<STREQUAL:${v},avx2>:-mavx2>)
  target_link_libraries(test_ring_thunk_${v} Threads::Threads)
  add_test(NAME unit_ring_thunk_${v} COMMAND test_ring_thunk_${v})
  set_tests_properties(unit_ring_thunk_${v} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# QPROF_LOG's own formatter against snprintf, byte for byte (C and C++).
add_executable(test_log_fmt_c ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_log_fmt.c)
add_executable(test_log_fmt_cxx ${CMAKE_CURRENT_SOURCE_DIR}/qprof/test_log_fmt_cxx.cpp)
foreach(lang c cxx)
  target_include_directories(test_log_fmt_${lang} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(test_log_fmt_${lang} PRIVATE -O2)
  add_test(NAME unit_log_fmt_${lang} COMMAND test_log_fmt_${lang})
endforeach()
