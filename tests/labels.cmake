# Every ctest entry's labels (docs/testing.md, "Labels"): one of
#   unit         no root, no BPF, no daemon of its own beyond a fake; seconds
#                each, `ctest -L unit` under a minute on an idle machine
#   integration  root and BPF: a real qprofd on a real target (77 = skipped
#                where BPF cannot be loaded)
#   docs         the docs, the man pages, the install tree and the package
#   slow         no root needed either, but tens of seconds or more: fuzz
#                smoke runs, callgrind counts, sanitizer builds
# and, beside those, `slow` on integration entries of a minute or more and
# `net` on entries that serve or call over loopback TCP (127.0.0.1), not only
# unix sockets. An entry given labels where it is defined keeps them; every
# other one is labelled here by its name, so a new entry needs no edit here
# unless it is slow, talks TCP or is named against its needs.

# Named unit_ but needing root and BPF (they exit 77 without).
set_tests_properties(unit_logs_store PROPERTIES LABELS "integration")
# Named unit_ but tens of seconds: callgrind, builds of many programs,
# ThreadSanitizer, the CFI walk against libdwfl.
foreach(t unit_marker_cost unit_marker_redzone unit_symbolize_threads_tsan unit_cfi_walk
    unit_ring_idle_cost)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES LABELS "slow")
  endif()
endforeach()

set(QP_SLOW_INTEGRATION integration_cpu integration_markers integration_trace_client
  integration_ring integration_ring_more integration_unwind integration_cpu_stacks
  integration_demo bench_soak_smoke install_deb_system)
set(QP_NET_TESTS integration_errors integration_listen integration_otlp integration_prometheus
  integration_http_limits integration_debuginfod)

get_property(_qp_tests DIRECTORY PROPERTY TESTS)
foreach(t ${_qp_tests})
  get_test_property(${t} LABELS _have)
  if(NOT _have)
    if(t MATCHES "^integration_" OR t MATCHES "^bench_")
      set(_l integration)
    elseif(t MATCHES "^docs_" OR t MATCHES "^install_")
      set(_l docs)
    elseif(t MATCHES "^fuzz_")
      set(_l slow)
    elseif(t MATCHES "^unit_" OR t MATCHES "^check_" OR t MATCHES "^test_instrument")
      set(_l unit)
    else()
      message(FATAL_ERROR "tests/labels.cmake: no label for ctest entry ${t}: name it unit_, "
        "integration_, docs_, install_, fuzz_ or bench_, or give it LABELS where it is added")
    endif()
    set_tests_properties(${t} PROPERTIES LABELS "${_l}")
  endif()
endforeach()
foreach(t ${QP_SLOW_INTEGRATION})
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY LABELS slow)
  endif()
endforeach()
foreach(t ${QP_NET_TESTS})
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY LABELS net)
  endif()
endforeach()
# install_deb_system installs the package for real: root.
if(TEST install_deb_system)
  set_property(TEST install_deb_system APPEND PROPERTY LABELS integration)
endif()
