# discover.cmake - count discovery (recv_counts NULL) end to end: discover_check under
# a2a-launch, over job channels, the AllToAllV RPC (A2A_CHANNEL=0) and remote jobs.
# Included from tests/integration/CMakeLists.txt.
add_executable(discover_check ${CMAKE_CURRENT_LIST_DIR}/discover_check.c)
target_link_libraries(discover_check PRIVATE a2a)

# a2a_discover_test(MODE SHAPE SUFFIX ENV [ARGS...]): integration.discover.MODE.SHAPE[SUFFIX]
function(a2a_discover_test mode shape suffix env)
  string(REPLACE "x" ";" wr ${shape})
  list(GET wr 0 workers)
  list(GET wr 1 rpw)
  set(name integration.discover.${mode}.${shape}${suffix})
  add_test(NAME ${name}
    COMMAND $<TARGET_FILE:a2a-launch> --workers ${workers} --ranks-per-worker ${rpw} --
            $<TARGET_FILE:discover_check> ${mode} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    FAIL_REGULAR_EXPRESSION "FAILED")
  if(NOT env STREQUAL "")
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
endfunction()

# self only, local pairs, remote pairs, both
foreach(shape 1x1 1x3 3x1 2x2)
  a2a_discover_test(random ${shape} "" "" 7 2)
  a2a_discover_test(small ${shape} "" "" 11 1)
endforeach()
# through the non-blocking calls (small calls sent by the start itself, ended by the waiter)
foreach(shape 3x1 2x2)
  a2a_discover_test(random ${shape} .nb "" 17 2 nb)
  a2a_discover_test(small ${shape} .nb "" 19 2 nb)
endforeach()
a2a_discover_test(random 2x2 .rpc "A2A_CHANNEL=0" 8 1)
a2a_discover_test(small 2x2 .rpc "A2A_CHANNEL=0" 12 1)
a2a_discover_test(random 2x2 .remote "A2A_JOB_MODE=remote" 9 1)
a2a_discover_test(small 2x2 .remote "A2A_JOB_MODE=remote" 13 1)
# an eager slice of another dtype kept for a late receiver (a remote pair, and a local one)
a2a_discover_test(dtypes 2x1 "" "")
a2a_discover_test(dtypes 1x2 "" "")
