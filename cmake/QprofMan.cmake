# QprofMan.cmake - the man pages, generated at build time from the built
# programs' --help texts plus the prose in man/*.in (scripts/gen_man.py), so
# a flag added to a usage text is in its page at the next build. Installed
# under share/man; `ctest -R docs_man_pages` checks them against --help.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(QPROF_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(QPROF_MAN_ARGS --qprofd $<TARGET_FILE:qprofd> --cli $<TARGET_FILE:qprof-cli>
  --src ${PROJECT_SOURCE_DIR}/man --out ${QPROF_MAN_DIR} --version ${PROJECT_VERSION})
add_custom_command(OUTPUT ${QPROF_MAN_DIR}/.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${QPROF_MAN_DIR}/man1 ${QPROF_MAN_DIR}/man8
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/gen_man.py ${QPROF_MAN_ARGS}
          --stamp ${QPROF_MAN_DIR}/.stamp
  DEPENDS qprofd qprof-cli ${PROJECT_SOURCE_DIR}/scripts/gen_man.py
          ${PROJECT_SOURCE_DIR}/man/qprofd.8.in ${PROJECT_SOURCE_DIR}/man/qprof-cli.1.in
  COMMENT "Generating the man pages from --help"
  VERBATIM)
add_custom_target(man ALL DEPENDS ${QPROF_MAN_DIR}/.stamp)
# installed compressed, as Debian keeps man pages (gzip -9n: no name, no
# time stamp, so the package is the same at every build)
install(CODE "
  file(GLOB _pages \"${QPROF_MAN_DIR}/man1/*.1\" \"${QPROF_MAN_DIR}/man8/*.8\")
  foreach(_p \${_pages})
    get_filename_component(_n \"\${_p}\" NAME)
    string(REGEX REPLACE \"^.*\\\\.\" \"\" _s \"\${_n}\")
    set(_d \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man\${_s}\")
    file(MAKE_DIRECTORY \"\${_d}\")
    execute_process(COMMAND gzip -9nc \"\${_p}\" OUTPUT_FILE \"\${_d}/\${_n}.gz\" RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR \"gzip \${_p}: \${_rc}\")
    endif()
    message(STATUS \"Installing: \${_d}/\${_n}.gz\")
  endforeach()
")
