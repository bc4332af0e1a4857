# bpf_object(NAME SOURCE): compile SOURCE (a *.bpf.c) with clang -target bpf
# against a vmlinux.h generated from the running kernel's BTF, then generate
# its libbpf skeleton. Defines the INTERFACE target NAME_skel whose include
# directory holds NAME.skel.h; link it and libbpf to use the skeleton.
find_program(BPF_CLANG NAMES clang-14 clang REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

set(QPROF_VMLINUX_BTF "/sys/kernel/btf/vmlinux" CACHE FILEPATH "kernel BTF used to generate vmlinux.h")
set(BPF_GEN_DIR ${CMAKE_BINARY_DIR}/bpfgen)
file(MAKE_DIRECTORY ${BPF_GEN_DIR})

# bpf_vmlinux_h(): the rule that makes vmlinux.h; call it once, in the same
# directory as the bpf_object() calls (custom command outputs are per directory).
macro(bpf_vmlinux_h)
  add_custom_command(
    OUTPUT ${BPF_GEN_DIR}/vmlinux.h
    COMMAND ${BPFTOOL} btf dump file ${QPROF_VMLINUX_BTF} format c > ${BPF_GEN_DIR}/vmlinux.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${BPF_GEN_DIR}/vmlinux.h.tmp ${BPF_GEN_DIR}/vmlinux.h
    COMMENT "Generating vmlinux.h from ${QPROF_VMLINUX_BTF}"
    VERBATIM)
  add_custom_target(vmlinux_h DEPENDS ${BPF_GEN_DIR}/vmlinux.h)
endmacro()

execute_process(COMMAND uname -m OUTPUT_VARIABLE _bpf_uname OUTPUT_STRIP_TRAILING_WHITESPACE)
# <asm/errno.h> and friends live in the multiarch include directory.
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE _bpf_multiarch
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(BPF_SYS_INCLUDES)
if(_bpf_multiarch AND EXISTS /usr/include/${_bpf_multiarch})
  set(BPF_SYS_INCLUDES -idirafter /usr/include/${_bpf_multiarch})
endif()
if(_bpf_uname STREQUAL "x86_64")
  set(BPF_TARGET_ARCH x86)
elseif(_bpf_uname STREQUAL "aarch64")
  set(BPF_TARGET_ARCH arm64)
else()
  set(BPF_TARGET_ARCH ${_bpf_uname})
endif()

macro(bpf_object name source)
  set(_src ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  set(_obj ${BPF_GEN_DIR}/${name}.bpf.o)
  set(_skel ${BPF_GEN_DIR}/${name}.skel.h)
  file(GLOB _bpf_headers ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  add_custom_command(
    OUTPUT ${_obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            -I${BPF_GEN_DIR} -I${CMAKE_CURRENT_SOURCE_DIR} ${BPF_SYS_INCLUDES} -Wall -Wno-unused-function
            ${BPF_FLAGS_${name}}
            -c ${_src} -o ${_obj}
    DEPENDS ${_src} ${_bpf_headers} ${BPF_GEN_DIR}/vmlinux.h
    COMMENT "BPF ${source}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${_skel}
    COMMAND ${BPFTOOL} gen skeleton ${_obj} name ${name} > ${_skel}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${_skel}.tmp ${_skel}
    DEPENDS ${_obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${_skel})
  # vmlinux.h is made once, by its own target, before any object needs it
  # (two objects built in parallel would otherwise both generate it)
  add_dependencies(${name}_skel_gen vmlinux_h)
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${BPF_GEN_DIR})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endmacro()

# bpf_headers_check(NAME HEADER...): each HEADER (of the current source
# folder) compiled alone, as the first and only include of a file, so that a
# BPF header that needs another include or a map declared elsewhere fails the
# build. Target NAME, part of ALL.
macro(bpf_headers_check name)
  set(_stamps)
  foreach(_h ${ARGN})
    set(_stamp ${BPF_GEN_DIR}/${_h}.alone)
    add_custom_command(
      OUTPUT ${_stamp}
      COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${BPF_TARGET_ARCH}
              -I${BPF_GEN_DIR} -I${CMAKE_CURRENT_SOURCE_DIR} ${BPF_SYS_INCLUDES} -Wall -Werror
              -Wno-unused-function -mcpu=v3 -fsyntax-only -x c ${CMAKE_CURRENT_SOURCE_DIR}/${_h}
      COMMAND ${CMAKE_COMMAND} -E touch ${_stamp}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${_h} ${_bpf_headers} ${BPF_GEN_DIR}/vmlinux.h
      COMMENT "BPF header ${_h} alone"
      VERBATIM)
    list(APPEND _stamps ${_stamp})
  endforeach()
  add_custom_target(${name} ALL DEPENDS ${_stamps})
  add_dependencies(${name} vmlinux_h)
endmacro()
