# install.cmake - run by `cmake --install`: puts the package a2a where the prefix's Python
# finds it. The directory is chosen at install time, for the prefix actually used (--prefix):
# python/site_dir.py says where (the prefix's site-packages or dist-packages that the Python
# of the build searches; else PREFIX/lib/python3.X/site-packages, then give PYTHONPATH).
# -DA2A_PYTHON_INSTALL_DIR=DIR (relative: to the prefix) overrides it.
if(A2A_PY_DIR)
  set(dir "${A2A_PY_DIR}")
  if(NOT IS_ABSOLUTE "${dir}")
    set(dir "${CMAKE_INSTALL_PREFIX}/${dir}")
  endif()
  set(found 1)
else()
  execute_process(COMMAND "${A2A_PYTHON}" "${CMAKE_CURRENT_LIST_DIR}/site_dir.py"
    "${CMAKE_INSTALL_PREFIX}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "a2a: ${A2A_PYTHON} cannot say where packages go")
  endif()
  separate_arguments(out UNIX_COMMAND "${out}")
  list(GET out 0 dir)
  list(GET out 1 found)
endif()
file(INSTALL ${A2A_PY_FILES} "${A2A_PY_CORE}" DESTINATION "${dir}/a2a")
if(NOT found)
  message(STATUS "a2a: the Python package is in ${dir}, which ${A2A_PYTHON} does not search: "
    "add it to PYTHONPATH")
endif()
