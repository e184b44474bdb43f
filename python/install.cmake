# install.cmake - run by `cmake --install`: puts the package a2a where the prefix's Python
# finds it. The directory is chosen at install time, for the prefix actually used (--prefix):
# the first entry of that Python's sys.path (or user site) under PREFIX/lib*, e.g.
# /usr/lib/python3/dist-packages, /usr/local/lib/python3.11/dist-packages or
# ~/.local/lib/python3.11/site-packages; else PREFIX/lib/python3.X/site-packages (then give
# PYTHONPATH). -DA2A_PYTHON_INSTALL_DIR=DIR (relative: to the prefix) overrides it.
if(A2A_PY_DIR)
  set(dir "${A2A_PY_DIR}")
  if(NOT IS_ABSOLUTE "${dir}")
    set(dir "${CMAKE_INSTALL_PREFIX}/${dir}")
  endif()
  set(found 1)
else()
  execute_process(COMMAND "${A2A_PYTHON}" -c "
import os, site, sys
p = os.path.abspath(sys.argv[1]).rstrip('/')
paths = list(sys.path)
if site.ENABLE_USER_SITE:
    paths.append(site.getusersitepackages())
for d in paths:
    rel = os.path.relpath(d, p)
    if rel.startswith('lib') and d.endswith(('site-packages', 'dist-packages')):
        print(d, 1, end='')
        break
else:
    print(os.path.join(p, 'lib', 'python%d.%d' % sys.version_info[:2], 'site-packages'), 0, end='')
" "${CMAKE_INSTALL_PREFIX}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
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
