# QprofInstall.cmake - what `cmake --install` puts where, and the Debian
# package CPack builds from it (docs/install.md). Paths follow
# GNUInstallDirs; files whose content names an installed path (the systemd
# unit's ExecStart, qprof.pc's prefix) are written at install time from the
# prefix the install really uses, so a `cmake --install --prefix P` and
# CPack's /usr both get their own.
include(GNUInstallDirs)
# the package's Maintainer and its changelog's signature: whoever builds
# a package to hand on sets their own (-DQPROF_DEB_MAINTAINER="Name <mail>")
set(QPROF_DEB_MAINTAINER "qprof maintainers <maintainers@users.noreply.a-seed-30209c12.example>"
  CACHE STRING "Maintainer of the Debian package: Name <address>")
include(CMakePackageConfigHelpers)

# The installed programs hardened as Debian builds its own (lintian's
# hardening checks): immediate binding, a read-only GOT, and glibc's
# checked string and memory functions where the build optimises.
foreach(_t qprofd qprof-cli qprof_common)
  target_compile_definitions(${_t} PRIVATE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:_FORTIFY_SOURCE=2>)
endforeach()
foreach(_t qprofd qprof-cli)
  target_link_options(${_t} PRIVATE -Wl,-z,relro -Wl,-z,now)
endforeach()

# The markers as an interface target: the include directory, nothing to link.
add_library(qprof_markers INTERFACE)
target_include_directories(qprof_markers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(qprof_markers PROPERTIES EXPORT_NAME markers)
add_library(qprof::markers ALIAS qprof_markers)
install(TARGETS qprof_markers EXPORT qprofTargets)

# header-only, so the CMake package and the .pc file are arch-independent
set(QPROF_CMAKEDIR ${CMAKE_INSTALL_DATADIR}/cmake/qprof)
install(EXPORT qprofTargets NAMESPACE qprof:: DESTINATION ${QPROF_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qprofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/qprofConfig.cmake INSTALL_DESTINATION ${QPROF_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/qprofConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/cmake/qprofConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/qprofConfigVersion.cmake DESTINATION ${QPROF_CMAKEDIR})

# qprof.pc, written at install time with the prefix in use
set(QPROF_PREFIX "@QPROF_PREFIX@")  # kept for the install-time step
configure_file(${PROJECT_SOURCE_DIR}/cmake/qprof.pc.in ${PROJECT_BINARY_DIR}/qprof.pc.in @ONLY)
install(CODE "
  file(READ \"${PROJECT_BINARY_DIR}/qprof.pc.in\" _pc)
  string(REPLACE \"@QPROF_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _pc \"\${_pc}\")
  set(_d \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/pkgconfig\")
  file(MAKE_DIRECTORY \"\${_d}\")
  file(WRITE \"\${_d}/qprof.pc\" \"\${_pc}\")
  message(STATUS \"Installing: \${_d}/qprof.pc\")
")

# The systemd unit, its ExecStart naming the installed qprofd. The unit in
# the source tree names /usr/local/sbin/qprofd; the install rewrites that
# (and the Documentation= line) for the prefix in use.
set(QPROF_UNIT_SRC ${PROJECT_SOURCE_DIR}/systemd/qprofd.service)
install(CODE "
  set(_p \"\${CMAKE_INSTALL_PREFIX}\")
  file(READ \"${QPROF_UNIT_SRC}\" _u)
  string(REPLACE \"/usr/local/sbin/qprofd\" \"\${_p}/${CMAKE_INSTALL_SBINDIR}/qprofd\" _u \"\${_u}\")
  string(REPLACE \"file:///usr/local/share/doc/qprof/README.md\" \"man:qprofd(8) file://\${_p}/${CMAKE_INSTALL_DATADIR}/doc/qprof/README.md\" _u \"\${_u}\")
  set(_d \"\$ENV{DESTDIR}\${_p}/lib/systemd/system\")
  file(MAKE_DIRECTORY \"\${_d}\")
  file(WRITE \"\${_d}/qprofd.service\" \"\${_u}\")
  message(STATUS \"Installing: \${_d}/qprofd.service\")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_p}/lib/systemd/system/qprofd.service\")
")

# bash completion, docs
install(FILES ${PROJECT_SOURCE_DIR}/cli/qprof-cli.bash-completion
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME qprof-cli)
install(FILES README.md CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# the licences, in Debian's machine-readable form (the source tree's LICENSE
# explains them; /usr/share/common-licenses holds the GPL's text)
install(FILES cmake/deb/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# the Debian changelog (a native package's changelog.gz), made from
# CHANGELOG.md's released versions
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(QPROF_DEB_CHANGELOG ${PROJECT_BINARY_DIR}/deb/changelog.gz)
add_custom_command(OUTPUT ${QPROF_DEB_CHANGELOG}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/deb
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/cmake/deb/changelog.py
          ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_VERSION} "${QPROF_DEB_MAINTAINER}" ${QPROF_DEB_CHANGELOG}
  DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/cmake/deb/changelog.py
  COMMENT "Writing the Debian changelog from CHANGELOG.md"
  VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${QPROF_DEB_CHANGELOG})
install(FILES ${QPROF_DEB_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# ---- the Debian package: cmake --build build --target package ----
# `install` and `package` do not rebuild the whole tree (tests, fuzzers)
# first: build, then package. Without this the package step walks every
# target's dependencies again (40 s on a loaded 2-vCPU machine).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME qprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "qprof")
set(CPACK_PACKAGE_CONTACT "${QPROF_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "eBPF profiler for latency-critical C/C++ programs")
set(CPACK_PACKAGE_DESCRIPTION "qprofd attaches to running processes from outside: it times the scopes
marked with the header-only qprof markers (count, percentiles, max),
samples the CPU with stacks tagged by scope, and serves flame graphs,
pprof, traces and Prometheus metrics over a unix socket. qprof-cli reads
them. Includes the marker headers, pkg-config and CMake files, the
systemd unit, man pages and documentation.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: the runtime libraries the two binaries really link, found by
# dpkg-shlibdeps (dpkg-dev)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/cmake/deb/postinst
  ${PROJECT_SOURCE_DIR}/cmake/deb/prerm
  ${PROJECT_SOURCE_DIR}/cmake/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# only the files the install rules name (not the tests' or the fuzzers')
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};qprof;ALL;/")
# stripped, as Debian ships binaries (qprofd needs no symbol of its own:
# its calibration finds its scope through the .note.stapsdt note, which
# strip keeps)
set(CPACK_STRIP_FILES ON)
include(CPack)
