# test_instrument_notes.cmake - counts the qprof USDT notes of one binary.
#
#   cmake -DREADELF=readelf -DBIN=path [-DEXPECT="scope_enter=3;log=2"]
#         [-DNONE=1] -P test_instrument_notes.cmake
#
# EXPECT gives the exact number of `.note.stapsdt` entries of provider qprof
# per probe name; a probe name left out must have none. The binary must then
# also hold the non-allocated section .qprof_refs with exactly one 8-byte
# descriptor address per scope_enter, value, log and mark note (the
# instrument API has no QPROF_SCOPE_BEGIN/END; exits of a block scope list
# no address; the test programs inline no marker, so no address repeats).
# NONE=1 asserts that the binary holds no qprof trace at all: no note and none
# of the sections the markers create (.note.stapsdt, .stapsdt.base,
# .qprof_refs, .probes).
# It also checks that value, log, ring_register and ring_config (ABI 2, one per
# translation unit) probes carry a semaphore and the others
# do not (the semaphore guards the work that only a listener needs).
cmake_minimum_required(VERSION 3.18)

if(NOT READELF OR NOT BIN)
  message(FATAL_ERROR "usage: cmake -DREADELF=... -DBIN=... [-DEXPECT=...] [-DNONE=1] -P ${CMAKE_CURRENT_LIST_FILE}")
endif()

execute_process(COMMAND ${READELF} -n --wide ${BIN}
  OUTPUT_VARIABLE notes RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -n ${BIN} failed (${rc}): ${err}")
endif()

set(probes scope_enter scope_exit value log mark ring_register ring_config)
foreach(p ${probes})
  set(count_${p} 0)
endforeach()
set(others 0)
set(failed 0)

# "Provider: P" is on the header line with --wide, on its own line without.
string(REGEX MATCHALL
  "Provider: [^ \t\n]+[ \t]*\n[ \t]*Name: [^ \t\n]+[ \t]*\n[^\n]*Semaphore: 0x[0-9a-fA-F]+"
  entries "${notes}")
foreach(e ${entries})
  string(REGEX MATCH "Provider: ([^ \t\n]+)" _ "${e}")
  set(prov "${CMAKE_MATCH_1}")
  string(REGEX MATCH "Name: ([^ \t\n]+)" _ "${e}")
  set(name "${CMAKE_MATCH_1}")
  string(REGEX MATCH "Semaphore: 0x0*([0-9a-fA-F]*)" _ "${e}")
  set(sem "${CMAKE_MATCH_1}")
  if(NOT prov STREQUAL "qprof")
    continue()
  endif()
  list(FIND probes "${name}" idx)
  if(idx LESS 0)
    message(SEND_ERROR "unknown qprof probe name '${name}'")
    set(failed 1)
    continue()
  endif()
  math(EXPR count_${name} "${count_${name}} + 1")
  if(name STREQUAL "value" OR name STREQUAL "log" OR name STREQUAL "ring_register" OR name STREQUAL "ring_config")
    if(sem STREQUAL "")
      message(SEND_ERROR "qprof:${name} has no semaphore")
      set(failed 1)
    endif()
  elseif(NOT sem STREQUAL "")
    message(SEND_ERROR "qprof:${name} has a semaphore (0x${sem})")
    set(failed 1)
  endif()
endforeach()

foreach(p ${probes})
  set(want_${p} 0)
endforeach()
foreach(kv ${EXPECT})
  if(NOT kv MATCHES "^([a-z_]+)=([0-9]+)$")
    message(FATAL_ERROR "bad EXPECT entry '${kv}'")
  endif()
  set(want_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()

foreach(p ${probes})
  if(NOT count_${p} EQUAL want_${p})
    message(SEND_ERROR "qprof:${p}: ${count_${p}} notes, expected ${want_${p}}")
    set(failed 1)
  else()
    message(STATUS "qprof:${p}: ${count_${p}} notes (ok)")
  endif()
endforeach()

execute_process(COMMAND ${READELF} -S --wide ${BIN}
  OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -S ${BIN} failed (${rc})")
endif()

if(NOT NONE)
  # [Nr] Name Type Address Off Size ES Flg Lk Inf Al: no A flag.
  if(NOT sections MATCHES " \\.qprof_refs +PROGBITS +([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+) [0-9a-f]+ +([A-Z]*) ")
    message(SEND_ERROR "${BIN} has no .qprof_refs section")
    set(failed 1)
  else()
    set(refs_addr "${CMAKE_MATCH_1}")
    set(refs_size "${CMAKE_MATCH_2}")
    set(refs_flags "${CMAKE_MATCH_3}")
    math(EXPR refs_size "0x${refs_size}")
    math(EXPR want_refs "8 * (${want_scope_enter} + ${want_value} + ${want_log} + ${want_mark})")
    if(NOT refs_size EQUAL want_refs)
      message(SEND_ERROR ".qprof_refs: ${refs_size} bytes, expected ${want_refs}")
      set(failed 1)
    else()
      message(STATUS ".qprof_refs: ${refs_size} bytes (ok)")
    endif()
    if(refs_flags MATCHES "A" OR NOT refs_addr MATCHES "^0+$")
      message(SEND_ERROR ".qprof_refs is allocated (address ${refs_addr}, flags '${refs_flags}')")
      set(failed 1)
    endif()
  endif()
endif()

if(NONE)
  if(notes MATCHES "NT_STAPSDT|stapsdt")
    message(SEND_ERROR "${BIN} has stapsdt notes")
    set(failed 1)
  endif()
  foreach(s "\\.note\\.stapsdt" "\\.stapsdt\\.base" "\\.qprof_refs" "\\.probes")
    if(sections MATCHES " ${s} ")
      message(SEND_ERROR "${BIN} has a section matching ${s}")
      set(failed 1)
    endif()
  endforeach()
endif()

if(failed)
  message(FATAL_ERROR "${BIN}: qprof notes not as expected")
endif()
