# a2a_tools_extra.cmake - what the tools give beyond themselves (build/bin/ is a2a_tool()'s):
#  - man pages (share/man/man1) made from each tool's --help and --version text
#    by cmake/help2man.sh at build time (not in sanitizer builds, whose binaries
#    may not run at build time).
set(A2A_TOOLS a2a-coordinator a2a-worker a2a-ctl a2a-launch a2a-demo a2a-bench)
set(A2A_SUMMARY_a2a-coordinator "serve the groups of an a2a cluster")
set(A2A_SUMMARY_a2a-worker "run one host's ranks of an a2a cluster")
set(A2A_SUMMARY_a2a-ctl "ask an a2a coordinator about groups")
set(A2A_SUMMARY_a2a-launch "run a program as the ranks of a local a2a cluster, like mpirun")
set(A2A_SUMMARY_a2a-demo "the demo job: a verified alltoallv")
set(A2A_SUMMARY_a2a-bench "alltoallv benchmark over liba2a, nccl-tests style")

option(A2A_MAN "Build and install the man pages" ON)
if(A2A_MAN AND NOT A2A_SANITIZE AND NOT A2A_TSAN)
  set(pages)
  foreach(t ${A2A_TOOLS})
    set(page ${PROJECT_BINARY_DIR}/man/man1/${t}.1)
    add_custom_command(OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man/man1
      COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/help2man.sh $<TARGET_FILE:${t}> ${t}
              "${A2A_SUMMARY_${t}}" ${page}
      DEPENDS ${t} ${PROJECT_SOURCE_DIR}/cmake/help2man.sh
      COMMENT "man page ${t}.1 from ${t} --help" VERBATIM)
    list(APPEND pages ${page})
  endforeach()
  add_custom_target(man ALL DEPENDS ${pages})
  install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
