# exchange.cmake - a2a_all_to_all_v end to end: exchange_check under a2a-launch,
# and a worker killed and restarted under a running job (test_worker_restart.sh).
# Included from tests/integration/CMakeLists.txt.
add_executable(exchange_check ${CMAKE_CURRENT_LIST_DIR}/exchange_check.c)
target_link_libraries(exchange_check PRIVATE a2a Threads::Threads)

# a2a_exchange_test(MODE SHAPE [ARGS...]): integration.exchange.MODE.SHAPE, SHAPE as WxR.
function(a2a_exchange_test mode shape)
  string(REPLACE "x" ";" wr ${shape})
  list(GET wr 0 workers)
  list(GET wr 1 rpw)
  set(name integration.exchange.${mode}.${shape})
  add_test(NAME ${name}
    COMMAND $<TARGET_FILE:a2a-launch> --workers ${workers} --ranks-per-worker ${rpw} --
            $<TARGET_FILE:exchange_check> ${mode} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    FAIL_REGULAR_EXPRESSION "FAILED")
endfunction()

# a2a_exchange_rpc_test(MODE SHAPE [ARGS...]): integration.exchange.MODE.SHAPE.rpc, the same
# over the AllToAllV RPC (A2A_CHANNEL=0); it fails if a worker opens a job channel anyway
# (its debug log, shown by A2A_LAUNCH_VERBOSE).
function(a2a_exchange_rpc_test mode shape)
  string(REPLACE "x" ";" wr ${shape})
  list(GET wr 0 workers)
  list(GET wr 1 rpw)
  set(name integration.exchange.${mode}.${shape}.rpc)
  add_test(NAME ${name}
    COMMAND $<TARGET_FILE:a2a-launch> --workers ${workers} --ranks-per-worker ${rpw} --
            $<TARGET_FILE:exchange_check> ${mode} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    ENVIRONMENT "A2A_CHANNEL=0;A2A_LOG_LEVEL=debug;A2A_LAUNCH_VERBOSE=1"
    FAIL_REGULAR_EXPRESSION "FAILED;channel of process [0-9]+ \\(rank [0-9]+\\) opened")
endfunction()

foreach(shape 1x1 1x4 2x2 4x1 3x2)
  a2a_exchange_test(random ${shape} 1234 6)
endforeach()
# buffers shared with the worker (a2a_buffer_alloc), mixed with private ones
foreach(shape 1x3 2x2 3x2)
  a2a_exchange_test(shared ${shape} 4321 4)
endforeach()
a2a_exchange_test(invalid 2x2)
a2a_exchange_test(mismatch 2x2)
a2a_exchange_test(mismatch 1x3)
# over a link: both small (eager: the slice goes with its SLICE), both large (after READY),
# and each side of the eager limit (32 KiB: 16384 int16; edge: one element over it)
a2a_exchange_test(mismatch 2x1)
function(a2a_mismatch_test label expect sent)
  set(name integration.exchange.mismatch-${label}.3x1)
  add_test(NAME ${name}
    COMMAND $<TARGET_FILE:a2a-launch> --workers 3 --ranks-per-worker 1 --
            $<TARGET_FILE:exchange_check> mismatch ${expect} ${sent})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    FAIL_REGULAR_EXPRESSION "FAILED")
endfunction()
a2a_mismatch_test(eager-large 100 100000)
a2a_mismatch_test(large-eager 100000 100)
a2a_mismatch_test(large 100001 100002)
a2a_mismatch_test(edge-eager 16385 16384)
a2a_mismatch_test(edge-large 16384 16385)
a2a_exchange_test(threads 2x2)
# a job that exits without a2a_job_close: the worker's channel threads end
a2a_exchange_test(orphan 1x1)
a2a_exchange_test(reopen 2x2)
# a worker without futex_waitv (a kernel before 5.16, or a seccomp profile that refuses it):
# each answer from another thread wakes the channel's thread, as before the doorbell; the
# worker says which way it runs at start (the debug log, shown by A2A_LAUNCH_VERBOSE)
foreach(mode random threads)
  set(name integration.exchange.${mode}.2x2.nowaitv)
  add_test(NAME ${name}
    COMMAND bash -c "out=$(\"$@\" 2>&1); rc=$?; printf '%s\\n' \"$out\"; [ $rc -eq 0 ] && grep -q 'channel threads are woken by every answer' <<<\"$out\"" _
            $<TARGET_FILE:a2a-launch> --workers 2 --ranks-per-worker 2 --
            $<TARGET_FILE:exchange_check> ${mode} 1234 6)
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    ENVIRONMENT "A2A_NO_WAITV=1;A2A_LOG_LEVEL=debug;A2A_LAUNCH_VERBOSE=1"
    FAIL_REGULAR_EXPRESSION "FAILED;sleep through answers")
endforeach()
a2a_exchange_rpc_test(random 2x2 1234 6)
a2a_exchange_rpc_test(mismatch 2x2)
a2a_exchange_rpc_test(invalid 2x2)
a2a_exchange_rpc_test(threads 2x2)
a2a_exchange_test(deadline 2x2)
a2a_exchange_test(deadline 3x1)
a2a_exchange_test(big 2x2)
# a slice over 2 GiB, in memory (same worker) and over a link; label "huge":
# too big for the TSan stage's shadow memory
a2a_exchange_test(huge 1x2)
a2a_exchange_test(huge 2x1)
set_tests_properties(integration.exchange.huge.1x2 integration.exchange.huge.2x1
  PROPERTIES LABELS "integration;huge" RUN_SERIAL TRUE)

add_test(NAME integration.worker_restart
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_worker_restart.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:exchange_check>)
set_tests_properties(integration.worker_restart PROPERTIES TIMEOUT 120 LABELS integration)

# a2a_exchange_remote_test(MODE SHAPE [ARGS...]): integration.exchange.MODE.SHAPE.remote, the same
# for jobs in remote mode (A2A_JOB_MODE=remote: no shared kernel assumed, the slices over the
# job's TCP connection); it fails if a job reports local mode (liba2a's debug log).
function(a2a_exchange_remote_test mode shape)
  string(REPLACE "x" ";" wr ${shape})
  list(GET wr 0 workers)
  list(GET wr 1 rpw)
  set(name integration.exchange.${mode}.${shape}.remote)
  add_test(NAME ${name}
    COMMAND $<TARGET_FILE:a2a-launch> --workers ${workers} --ranks-per-worker ${rpw} --
            $<TARGET_FILE:exchange_check> ${mode} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS integration
    ENVIRONMENT "A2A_JOB_MODE=remote;A2A_LOG_LEVEL=debug"
    FAIL_REGULAR_EXPRESSION "FAILED;local mode")
endfunction()

a2a_exchange_remote_test(random 2x2 1234 4)
a2a_exchange_remote_test(random 4x1 1234 4)
a2a_exchange_remote_test(shared 1x3 4321 2)
a2a_exchange_remote_test(mismatch 2x2)
a2a_exchange_remote_test(invalid 2x2)
a2a_exchange_remote_test(threads 2x2)
a2a_exchange_remote_test(deadline 2x2)
a2a_exchange_remote_test(big 2x2)

# a worker killed and restarted under remote jobs
add_test(NAME integration.worker_restart.remote
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_worker_restart.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:exchange_check>)
set_tests_properties(integration.worker_restart.remote PROPERTIES TIMEOUT 300 LABELS integration
  ENVIRONMENT "A2A_JOB_MODE=remote")
