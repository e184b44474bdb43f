# security.cmake - security.token_file and security.tls end to end
# (test_security.sh): tokens on a2a-ctl, jobs and peer links, a job claiming
# another worker's rank, replayed proofs and garbage on the links
# (security_check), then the same cluster over tls+tcp:// with a CA and an
# evil one. Included from tests/integration/CMakeLists.txt.
add_executable(security_check ${CMAKE_CURRENT_LIST_DIR}/security_check.c)
target_link_libraries(security_check PRIVATE a2a_common a2a_server nng::nng)
# attacks on the local socket (the job-to-worker boundary)
add_executable(boundary_check ${CMAKE_CURRENT_LIST_DIR}/boundary_check.c)
target_link_libraries(boundary_check PRIVATE a2a_common a2a_server nng::nng)

add_test(NAME integration.security
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_security.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker> $<TARGET_FILE:a2a-ctl>
          $<TARGET_FILE:exchange_check> $<TARGET_FILE:security_check>
          $<TARGET_FILE:boundary_check>)
set_tests_properties(integration.security PROPERTIES TIMEOUT 180 LABELS integration)

# test_preauth.sh: floods of unauthenticated RPC calls and slow connections at
# every port (preauth_check) while calls and exchanges with the token go on.
add_executable(preauth_check ${CMAKE_CURRENT_LIST_DIR}/preauth_check.c)
target_link_libraries(preauth_check PRIVATE a2a_common a2a_server nng::nng Threads::Threads)
add_test(NAME integration.preauth
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_preauth.sh
          $<TARGET_FILE:a2a-coordinator> $<TARGET_FILE:a2a-worker>
          $<TARGET_FILE:exchange_check> $<TARGET_FILE:preauth_check>)
set_tests_properties(integration.preauth PROPERTIES TIMEOUT 180 LABELS integration)
