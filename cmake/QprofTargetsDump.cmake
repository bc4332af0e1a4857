# qp_dump_targets(FILE): at generate time, one line per fact about every
# compiled target of the tree, for scripts/check_deps.py --build:
#   <target> TYPE <type>
#   <target> DIR <its CMakeLists folder>
#   <target> SOURCES <list>          (as given, relative to DIR or absolute)
#   <target> LINKS <list>            (LINK_LIBRARIES: what it links directly)
#   <target> INCLUDES <list>         (its include path, with what it links)
#   <target> FILE <path>             (the archive or program built)
# Lists are ';'-separated; two first lines give the source and build folders
# ("@ SOURCE_DIR ...", "@ BINARY_DIR ..."). Written on every configure, the
# first one too (cmake's file API answers only from the second).
function(_qp_dir_targets dir out)
  get_property(_t DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${_subs})
    _qp_dir_targets(${s} _st)
    list(APPEND _t ${_st})
  endforeach()
  set(${out} ${_t} PARENT_SCOPE)
endfunction()

function(qp_dump_targets file)
  _qp_dir_targets(${PROJECT_SOURCE_DIR} _all)
  set(_c "@ SOURCE_DIR ${PROJECT_SOURCE_DIR}\n@ BINARY_DIR ${CMAKE_BINARY_DIR}\n")
  foreach(t ${_all})
    get_target_property(_type ${t} TYPE)
    if(NOT _type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY)$")
      continue()
    endif()
    get_target_property(_dir ${t} SOURCE_DIR)
    string(APPEND _c "${t} TYPE ${_type}\n${t} DIR ${_dir}\n")
    string(APPEND _c "${t} SOURCES $<JOIN:$<TARGET_PROPERTY:${t},SOURCES>,;>\n")
    string(APPEND _c "${t} LINKS $<JOIN:$<TARGET_PROPERTY:${t},LINK_LIBRARIES>,;>\n")
    string(APPEND _c "${t} INCLUDES $<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>,;>\n")
    string(APPEND _c "${t} FILE $<TARGET_FILE:${t}>\n")
  endforeach()
  file(GENERATE OUTPUT ${file} CONTENT "${_c}")
endfunction()
