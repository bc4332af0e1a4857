# Unit tests of common/'s containers (no root): the hash table, the arena,
# self/total counts over stacks, the growth of arrays (qp_grow).
foreach(t hashtab arena stackstats grow)
  add_executable(test_${t} ${CMAKE_CURRENT_SOURCE_DIR}/common/test_${t}.c)
  target_link_libraries(test_${t} qprof_common)
  target_include_directories(test_${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME unit_${t} COMMAND test_${t})
endforeach()
