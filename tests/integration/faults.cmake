# faults.cmake - the exchange engine under faults, with the real binaries
# (issue 9): never an OK call with another operation's data, and recovery.
#   integration.restart_race  a worker killed and restarted between operations
#   integration.lockstep      ranks that retry in lockstep through faults
#   integration.trickle       a fake peer trickling a slice past the deadline
#   integration.flood         a fake peer flooding READY frames of unknown groups
#   integration.misplace      a fake peer placing its slice for a discoverer out of place
#   integration.link_loop     a fake peer's link stopping mid-frame while other workers exchange
# seqcheck is the job (every element encodes sender, receiver and call
# index), fakepeer the misbehaving peer worker. Included from
# tests/integration/CMakeLists.txt. Label "faults" as well as "integration": about 6 min
# together on 2 cores (ctest -L faults; -LE faults leaves them out).
add_executable(seqcheck ${CMAKE_CURRENT_LIST_DIR}/seqcheck.c)
target_link_libraries(seqcheck PRIVATE a2a)
add_executable(fakepeer ${CMAKE_CURRENT_LIST_DIR}/fakepeer.c)
target_link_libraries(fakepeer PRIVATE a2a_common nng::nng Threads::Threads)

add_test(NAME integration.restart_race
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_restart_race.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.restart_race PROPERTIES TIMEOUT 420 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")

add_test(NAME integration.lockstep
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_lockstep.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
# a fault after which no round recovers fails it again (stop 11, RELIABILITY finding 6; the
# sanitized stages only report it: SANITIZED_FAULTS in scripts/test.sh), as do wrong data,
# hangs, slow recovery and relapses
set_tests_properties(integration.lockstep PROPERTIES TIMEOUT 420 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")

# a rank that made a call alone before its peer's worker started, then both in lockstep: the
# peer's new job asks where the group is (FRAME_WHERE) and the two meet at once
add_test(NAME integration.resync
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_resync.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.resync PROPERTIES TIMEOUT 120 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")

# the worker's state file (SOCKET.ranks): a new job of a rank that had one on the group before
# the worker restarted replaces it, although nobody heard of it (test_state_file.sh's header)
add_test(NAME integration.state_file
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_state_file.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.state_file PROPERTIES TIMEOUT 120 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")

# a job killed in the middle of a call: its operation fails for every member at once, naming
# the rank (not OK with the dead job's slices), and its replacement joins the next call
add_test(NAME integration.job_death
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_job_death.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.job_death PROPERTIES TIMEOUT 120 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")
add_test(NAME integration.job_death.remote
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_job_death.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.job_death.remote PROPERTIES TIMEOUT 120 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL" ENVIRONMENT "A2A_JOB_MODE=remote")

# a call that arrives after another member's call timed out, whose ABORT cannot come (its
# worker stopped): DEADLINE_EXCEEDED at once naming it, never OK with its slices
add_test(NAME integration.late_arrival
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_late_arrival.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.late_arrival PROPERTIES TIMEOUT 120 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")

# every path from a job to its worker (channel, socket, TCP) carries the job's operation
# numbers both ways (the socket and TCP replies lost them before)
add_test(NAME integration.opnum
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_opnum.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.opnum PROPERTIES TIMEOUT 120 LABELS integration
  FAIL_REGULAR_EXPRESSION "FAIL")

# a worker's keep_awake_us: a SCHED_IDLE thread that spins while calls run and sleeps when idle
add_test(NAME integration.keep_awake
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_keep_awake.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.keep_awake PROPERTIES TIMEOUT 120 LABELS integration
  FAIL_REGULAR_EXPRESSION "FAIL")

# a fake peer worker (fakepeer) that trickles a slice past the deadline, one that floods, and
# one that streams its slice to a discovering rank at the wrong place, and one whose slice comes
# just after the deadline of a call that every member joined (test_flight_grace.sh), and one whose
# link stops in the middle of a frame while two other workers exchange (test_link_loop.sh)
foreach(t trickle flood misplace flight_grace link_loop)
  add_test(NAME integration.${t}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_${t}.sh
            $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>
            $<TARGET_FILE:fakepeer>)
  set_tests_properties(integration.${t} PROPERTIES TIMEOUT 180 LABELS "integration;faults"
    FAIL_REGULAR_EXPRESSION "FAIL")
endforeach()

# the same race with slices over the eager limit (4100 uint64, 32800 bytes > FRAME_EAGER_MAX: READY,
# then SLICE and DATA)
add_test(NAME integration.restart_race.rendezvous
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_restart_race.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.restart_race.rendezvous PROPERTIES TIMEOUT 300
  LABELS "integration;faults" FAIL_REGULAR_EXPRESSION "FAIL"
  ENVIRONMENT "RACE_COUNT=4100;RACE_ROUNDS=30;RACE_PERSISTENT_ROUNDS=15;RACE_BUDGET_S=220")

# the same with count discovery: every call's counts differ (seqcheck --discover), the slices stream
# to their discovered place (4098-4100 uint64, over the eager limit), and an OK call must hold its
# own operation's counts and data (20 + 10 rounds: 27 s plain, 92 s under TSan at 30 + 15)
add_test(NAME integration.restart_race.discover
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_restart_race.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.restart_race.discover PROPERTIES TIMEOUT 300
  LABELS "integration;faults" FAIL_REGULAR_EXPRESSION "FAIL"
  ENVIRONMENT "RACE_DISCOVER=1;RACE_COUNT=4100;RACE_ROUNDS=20;RACE_PERSISTENT_ROUNDS=10;RACE_BUDGET_S=150")

# The fault campaign (campaign.sh): every rank loops verified exchanges while
# 50 random faults (CAMPAIGN_FAULTS) come one after another: kill -9 and
# restart of workers, of the coordinator and of jobs, SIGSTOP of a worker,
# random bytes and slow connections at every port. FAIL on wrong data, a hang,
# a group stuck for 30 s, or no recovery after the last fault. About 3 min on
# 2 cores; the sanitized stages run fewer faults (SANITIZED_FAULTS in
# scripts/test.sh). The netns variant adds link cuts and 1 Mbit/s links
# between 3 emulated hosts (root and ip netns, otherwise it says SKIP and passes).
add_test(NAME faults.campaign
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/campaign.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>
          $<TARGET_FILE:preauth_check>)
# A stuck group (no round OK on every rank for 30 s) or no recovery after the last fault fails
# it again (stop 11: 0 in 1,590 faults by hand after the fixes of RELIABILITY finding 6; the
# sanitized stages, whose slow workers time out more, still only report it: SANITIZED_FAULTS
# in scripts/test.sh). CAMPAIGN_LATE_FATAL=0: a late error is reported, not failed, until
# finding 3 is found.
set_tests_properties(faults.campaign PROPERTIES TIMEOUT 330 LABELS "faults"
  ENVIRONMENT "CAMPAIGN_GAP_MS=500;CAMPAIGN_LATE_FATAL=0")
add_test(NAME faults.campaign.netns
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/campaign.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>
          $<TARGET_FILE:preauth_check>)
set_tests_properties(faults.campaign.netns PROPERTIES TIMEOUT 240 LABELS "faults;netns"
  RUN_SERIAL TRUE ENVIRONMENT "CAMPAIGN_MODE=netns;CAMPAIGN_FAULTS=25;CAMPAIGN_GAP_MS=500;CAMPAIGN_STUCK_FATAL=0;CAMPAIGN_LATE_FATAL=0")

# a peer worker that stops reading its links while our ranks call: no call returns later than
# its deadline + 500 ms (RELIABILITY finding 3: the call's thread waited up to 3 s writing its
# READY and eager slices into the full link; 5,151 ms before the fix, 156 ms after)
add_test(NAME integration.stalled_peer
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_stalled_peer.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.stalled_peer PROPERTIES TIMEOUT 200 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL:")

# failures say what happened, naming the peer (issue 11, item 2): a worker
# never started, a job without its worker, a worker killed, a worker stopped
add_test(NAME integration.messages
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_messages.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.messages PROPERTIES TIMEOUT 150 LABELS integration
  FAIL_REGULAR_EXPRESSION "FAIL")

# outgoing links are checked for liveness (issue 11, item 2): a peer worker stopped before it
# ever linked to us, or a data port that accepts and never answers, is UNAVAILABLE within
# seconds, naming it; with a token and without
add_test(NAME integration.outgoing_liveness
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_outgoing_liveness.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.outgoing_liveness PROPERTIES TIMEOUT 120 LABELS integration
  FAIL_REGULAR_EXPRESSION "FAIL:")

# a caller with the token is never told PERMISSION_DENIED because its connection was replaced
# between the client's check that it proved the token and the call's send (a2a-ctl held there
# under gdb while the coordinator restarts); SKIP without gdb
add_test(NAME integration.auth_race
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_auth_race.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-ctl>)
set_tests_properties(integration.auth_race PROPERTIES TIMEOUT 90 LABELS integration
  FAIL_REGULAR_EXPRESSION "FAIL:")

# a host added to a running cluster and the last one removed, the other workers never restarted:
# w2 appended to the coordinator's file and SIGHUP, the running w0 and w1 learn of it from the
# coordinator and 6 ranks exchange on hccl_world_group; a reload that would move world ranks is
# refused; w2 removed, the world shrinks back and w0 and w1 stop speaking of it
add_test(NAME integration.add_host
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_add_host.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:a2a-ctl>
          $<TARGET_FILE:exchange_check>)
set_tests_properties(integration.add_host PROPERTIES TIMEOUT 200 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL:")

# the first operation of 64 ranks on 4 workers whose last worker's ranks call 1.5 s late: the
# world group is installed ahead of its calls (no frame dropped, all OK); a group of the YAML
# that lost frames to the early store's bound fails at once at every rank, not at its deadline
add_test(NAME integration.large_group
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_large_group.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:seqcheck>)
set_tests_properties(integration.large_group PROPERTIES TIMEOUT 180 LABELS "integration;faults"
  FAIL_REGULAR_EXPRESSION "FAIL")
