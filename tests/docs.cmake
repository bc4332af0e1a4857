# The docs, the man pages, the install tree and the Debian package
# (docs/install.md). No file cites a path outside the repository; every
# qprofd / qprof-cli command the README, the guide, the references and the
# man pages show exists and parses; the man pages are what --help says now;
# an install into a staging root holds the expected files and builds a
# marked program through qprof.pc and find_package(qprof); the .deb's
# metadata and files, then (as root) a real apt install, a profile and a
# removal.
add_test(NAME docs_no_outside_paths
  COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/check_paths.py ${PROJECT_SOURCE_DIR})
add_test(NAME docs_no_outside_paths_selftest
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_docs_selftest.sh ${PROJECT_SOURCE_DIR}
          $<TARGET_FILE:qprofd> $<TARGET_FILE:qprof-cli>)
add_test(NAME docs_commands
  COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/check_doc_commands.py
          $<TARGET_FILE:qprofd> $<TARGET_FILE:qprof-cli> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/man)
add_test(NAME docs_man_pages
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_man.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
          $<TARGET_FILE:qprofd> $<TARGET_FILE:qprof-cli> ${PROJECT_VERSION})
add_test(NAME install_staging
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_install.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${PROJECT_VERSION})
add_test(NAME install_deb
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_deb.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${PROJECT_VERSION} build)
set_tests_properties(install_deb PROPERTIES FIXTURES_SETUP qprof_deb TIMEOUT 300)
add_test(NAME install_deb_system
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_deb.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${PROJECT_VERSION} system)
set_tests_properties(install_deb_system PROPERTIES FIXTURES_REQUIRED qprof_deb
  SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
# The architecture page's table of routes is what the router's table and the
# handlers say (scripts/gen_routes_doc.py writes it).
add_test(NAME docs_routes_table
  COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/gen_routes_doc.py --check ${PROJECT_SOURCE_DIR})
