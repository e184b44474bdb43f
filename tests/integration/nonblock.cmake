# nonblock.cmake - the non-blocking calls end to end: nonblock_check under a2a-launch.
# Included from tests/integration/CMakeLists.txt.
add_executable(nonblock_check ${CMAKE_CURRENT_LIST_DIR}/nonblock_check.c)
target_link_libraries(nonblock_check PRIVATE a2a Threads::Threads)

# a2a_nonblock_test(NAME SHAPE ENV ARGS...): integration.nonblock.NAME.SHAPE
function(a2a_nonblock_test label shape env)
  string(REPLACE "x" ";" wr ${shape})
  list(GET wr 0 workers)
  list(GET wr 1 rpw)
  set(name integration.nonblock.${label}.${shape})
  add_test(NAME ${name}
    COMMAND $<TARGET_FILE:a2a-launch> --workers ${workers} --ranks-per-worker ${rpw} --
            $<TARGET_FILE:nonblock_check> ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    FAIL_REGULAR_EXPRESSION "FAILED")
  if(NOT env STREQUAL "")
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
endfunction()

foreach(shape 1x3 3x1 2x2)
  a2a_nonblock_test(pipeline ${shape} "" pipeline 3)
endforeach()
a2a_nonblock_test(pipeline.rpc 2x2 "A2A_CHANNEL=0" pipeline 4)
a2a_nonblock_test(pipeline.remote 2x2 "A2A_JOB_MODE=remote" pipeline 5)
a2a_nonblock_test(threads 2x2 "" threads 6)
a2a_nonblock_test(free 2x2 "" free 7)
a2a_nonblock_test(deadline 2x2 "" deadline)
a2a_nonblock_test(close 2x2 "" leave close)
a2a_nonblock_test(exit 2x2 "" leave exit)
a2a_nonblock_test(args 1x2 "" args)
foreach(shape 2x2 3x1)
  a2a_nonblock_test(single ${shape} "" single 8)
endforeach()
a2a_nonblock_test(single.rpc 2x2 "A2A_CHANNEL=0" single 9)

# the README's C examples (examples/c), built and run
foreach(ex discover overlap)
  add_executable(example_${ex} ${PROJECT_SOURCE_DIR}/examples/c/${ex}.c)
  target_link_libraries(example_${ex} PRIVATE a2a)
  add_test(NAME integration.example.${ex}
    COMMAND $<TARGET_FILE:a2a-launch> --workers 2 --ranks-per-worker 2 --
            $<TARGET_FILE:example_${ex}>)
  set_tests_properties(integration.example.${ex} PROPERTIES TIMEOUT 60 LABELS integration)
endforeach()
set_tests_properties(integration.example.discover PROPERTIES
  PASS_REGULAR_EXPRESSION "rank 3 got \\[0 from 0:\\] \\[1 from 1: 1003\\] \\[2 from 2: 2003 2003\\] \\[0 from 3:\\]")
set_tests_properties(integration.example.overlap PROPERTIES
  PASS_REGULAR_EXPRESSION "rank 3: op 3 got 303 \\.\\. 333")

# a worker killed while requests are in flight, and restarted
add_test(NAME integration.nonblock.worker_kill
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_nonblock_kill.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:nonblock_check>)
set_tests_properties(integration.nonblock.worker_kill PROPERTIES TIMEOUT 240
  LABELS "integration;faults")
