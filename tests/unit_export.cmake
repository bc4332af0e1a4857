# Exporter unit tests (no root): folded, flame graph SVG (checked by a python3
# script when python3 is there), call graph DOT and dot runner, pprof (decoded
# back in C; read by go tool pprof when go is installed).
add_executable(test_export ${CMAKE_CURRENT_SOURCE_DIR}/http/test_export.c)
target_include_directories(test_export PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(test_export PRIVATE
  TEST_EXPORT_SVG_PY="${CMAKE_CURRENT_SOURCE_DIR}/export/test_export_svg.py")
target_link_libraries(test_export qprof_http PkgConfig::ZLIB m)
foreach(t folded flamegraph callgraph pprof pprof_values)
  add_test(NAME unit_export_${t} COMMAND test_export ${t})
  set_tests_properties(unit_export_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# The trace model and its Chrome Trace Event Format JSON, byte for byte.
add_executable(test_export_trace ${CMAKE_CURRENT_SOURCE_DIR}/export/test_export_trace.c)
target_include_directories(test_export_trace PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_export_trace qprof_export m)
add_test(NAME unit_export_trace COMMAND test_export_trace)

# Source lines and inlined frames in folded, flame graph and pprof (decoded).
add_executable(test_export_lines ${CMAKE_CURRENT_SOURCE_DIR}/export/test_export_lines.c)
target_include_directories(test_export_lines PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_export_lines qprof_export PkgConfig::ZLIB m)
add_test(NAME unit_export_lines COMMAND test_export_lines)

# The scope tables of an exit report's summary.txt, byte for byte: a
# duration the BPF collector's calibration took to 0 reads "<N ns".
add_executable(test_report_tables ${CMAKE_CURRENT_SOURCE_DIR}/export/test_report_tables.c)
target_include_directories(test_report_tables PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_report_tables qprof_export m)
add_test(NAME unit_report_tables COMMAND test_report_tables)
