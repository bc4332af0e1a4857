# The stages of qprofd, one static library each (docs/internals/architecture.md,
# "How the build enforces it"). Each stage has its own include folder under the
# build tree, stage_inc/<stage>, holding one link named after the stage that
# points at the stage's source folder: a library's include path holds its own
# folder and those of the stages it may use, and nothing else, so
#   #include "collect/cpu_table.h"
# compiles in model/ (model may use collect/) and not in collect/ for a model
# header. A header of the includer's own folder is included as "x.h".
# scripts/stage_includes.py writes every include in that form.
set(QP_STAGE_INC ${CMAKE_BINARY_DIR}/stage_inc)

# qp_stage_folder(NAME SOURCE_FOLDER): stage_inc/NAME/NAME -> SOURCE_FOLDER
function(qp_stage_folder name folder)
  file(MAKE_DIRECTORY ${QP_STAGE_INC}/${name})
  file(CREATE_LINK ${folder} ${QP_STAGE_INC}/${name}/${name} SYMBOLIC)
endfunction()

# Below every stage: the BPF contracts ("bpf/scopes.h") and the marker headers
# ("qprof/ring_layout.h").
qp_stage_folder(bpf ${PROJECT_SOURCE_DIR}/bpf)
add_library(qprof_base INTERFACE)
target_include_directories(qprof_base INTERFACE ${QP_STAGE_INC}/bpf ${PROJECT_SOURCE_DIR}/include)

# qp_stage(NAME SOURCE_FOLDER [USES stage...] [LIBS lib...]): the library
# qprof_NAME of every *.c of SOURCE_FOLDER (a new file joins its stage's
# library by being there), its include folder, the stages it may use (their
# libraries and, through them, their include folders) and the libraries it
# needs.
function(qp_stage name folder)
  cmake_parse_arguments(QS "" "" "USES;LIBS" ${ARGN})
  qp_stage_folder(${name} ${folder})
  file(GLOB _src CONFIGURE_DEPENDS ${folder}/*.c)
  add_library(qprof_${name} STATIC ${_src})
  target_include_directories(qprof_${name} PUBLIC ${QP_STAGE_INC}/${name})
  set(_uses qprof_base)
  foreach(u ${QS_USES})
    list(APPEND _uses qprof_${u})
  endforeach()
  target_link_libraries(qprof_${name} PUBLIC ${_uses} ${QS_LIBS})
  set_property(GLOBAL APPEND PROPERTY QP_STAGES ${name})
endfunction()

# qp_stage_cflags(OUT stage...): the -I flags of the given stages and of those
# below them, for the fuzz targets and sanitizer builds that clang compiles
# outside of CMake's targets.
function(qp_stage_cflags out)
  set(_flags -I${QP_STAGE_INC}/bpf -I${PROJECT_SOURCE_DIR}/include)
  foreach(s ${ARGN})
    list(APPEND _flags -I${QP_STAGE_INC}/${s})
  endforeach()
  set(${out} ${_flags} PARENT_SCOPE)
endfunction()

# qp_stage_sources(OUT stage...): the source files of the given stages.
function(qp_stage_sources out)
  set(_all)
  foreach(s ${ARGN})
    get_target_property(_src qprof_${s} SOURCES)
    list(APPEND _all ${_src})
  endforeach()
  set(${out} ${_all} PARENT_SCOPE)
endfunction()
