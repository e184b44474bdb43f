# a2a_internal_library(NAME SOURCES... LINK libs...): an internal object
# library; every target that uses it links it directly.
function(a2a_internal_library name)
  cmake_parse_arguments(A "" "" "SOURCES;LINK" ${ARGN})
  add_library(${name} OBJECT ${A_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
    ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${A_LINK})
endfunction()

# a2a_tool(NAME SOURCES... LINK libs...): an installed command-line tool, linked from build/bin/.
function(a2a_tool name)
  cmake_parse_arguments(A "" "" "SOURCES;LINK" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LINK})
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # build/bin/NAME: every tool in one folder, for PATH after a build
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/bin
    COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE:${name}> ${PROJECT_BINARY_DIR}/bin/${name})
endfunction()

# a2a_unit_test(NAME SOURCES... LINK libs... [TIMEOUT s]): a CUnit suite run
# by ctest as "unit.NAME".
function(a2a_unit_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LINK" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  add_executable(test_${name} ${A_SOURCES})
  target_link_libraries(test_${name} PRIVATE ${A_LINK} PkgConfig::CUNIT)
  add_test(NAME unit.${name} COMMAND test_${name})
  set_tests_properties(unit.${name} PROPERTIES TIMEOUT ${A_TIMEOUT})
endfunction()
