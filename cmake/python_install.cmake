# The install of the Python packages gpu_profile and gpufl (docs/python.md,
# "Installed with the library"), included by the top CMakeLists.txt and by
# tests/python/pth/ (which installs them alone).  Promises:
#
# - Every python3 of the first python3's minor version finds the packages:
#   the interpreters looked at are GP_PYTHON3 (the first python3 on PATH)
#   and each `python3` and `python3.X` in GP_PYTHON3_SEARCH's directories
#   ("PATH" stands for every directory of $PATH; default PATH, /usr/bin,
#   /usr/local/bin), told apart by their site directory (purelib).
# - The packages go to the first of those site directories under the
#   install prefix (Debian's python3 with /usr/local:
#   lib/python3.X/dist-packages), else to <prefix>/lib/python3.X/site-packages;
#   -DGP_PYTHON_SITEDIR=DIR (relative to the prefix, or absolute: a venv)
#   chooses instead, and then no other interpreter is touched.
# - Every other site directory of that version gets a gpu-profile.pth
#   naming the packages' directory (a pyenv python3 first on PATH and
#   /usr/bin/python3 both import gpu_profile), written only by an install
#   to the configured prefix (not `--prefix DIR`, not DESTDIR staging).
#   An interpreter of another version is named at configure time and left
#   alone (the packages are installed for one version).
# - gpu_profile/_install.py records the installed library directory; it and
#   every .pth are in install_manifest.txt, so scripts/uninstall.sh removes
#   them too.
#
# Inputs: GP_PY_SOURCE_DIR (the repository's python/ folder), GNUInstallDirs.

find_program(GP_PYTHON3 python3)
set(GP_PYTHON_SITEDIR "" CACHE STRING
  "Where cmake --install puts the Python packages (relative to the prefix or absolute; empty: see docs/python.md)")
set(GP_PYTHON3_SEARCH "PATH;/usr/bin;/usr/local/bin" CACHE STRING
  "Directories whose python3 / python3.X of GP_PYTHON3's version also get the packages (PATH: every $PATH directory)")

# gp_py_query(EXE OUT_PURELIB OUT_VERSION): the interpreter's site directory
# and major.minor; both empty when it does not run.
function(gp_py_query exe out_purelib out_version)
  execute_process(COMMAND ${exe} -c
    "import sys, sysconfig; print(sysconfig.get_path('purelib')); print('%d.%d' % sys.version_info[:2])"
    OUTPUT_VARIABLE info OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  set(purelib "")
  set(version "")
  if(rc EQUAL 0)
    string(REPLACE "\n" ";" info "${info}")
    list(LENGTH info n)
    if(n EQUAL 2)
      list(GET info 0 purelib)
      list(GET info 1 version)
    endif()
  endif()
  set(${out_purelib} "${purelib}" PARENT_SCOPE)
  set(${out_version} "${version}" PARENT_SCOPE)
endfunction()

set(GP_PY_DEST "${GP_PYTHON_SITEDIR}")
set(GP_PY_SITES "")      # the site directories of GP_PYTHON3's version, in order
set(GP_PY_SITE_EXES "")  # an interpreter of each, for the messages
if(GP_PYTHON3)
  gp_py_query(${GP_PYTHON3} GP_PY_PURELIB GP_PY_VERSION)
endif()
if(GP_PY_VERSION)
  list(APPEND GP_PY_SITES "${GP_PY_PURELIB}")
  list(APPEND GP_PY_SITE_EXES "${GP_PYTHON3}")
  set(dirs "")
  foreach(d IN LISTS GP_PYTHON3_SEARCH)
    if(d STREQUAL "PATH")
      string(REPLACE ":" ";" path_dirs "$ENV{PATH}")
      list(APPEND dirs ${path_dirs})
    else()
      list(APPEND dirs "${d}")
    endif()
  endforeach()
  foreach(d IN LISTS dirs)
    foreach(name python3 python${GP_PY_VERSION})
      if(NOT d OR NOT EXISTS "${d}/${name}" OR IS_DIRECTORY "${d}/${name}")
        continue()
      endif()
      gp_py_query("${d}/${name}" purelib version)
      if(NOT version)
        continue()
      endif()
      list(FIND GP_PY_SITES "${purelib}" seen)
      if(NOT version STREQUAL GP_PY_VERSION)
        message(STATUS "Python packages: not for ${d}/${name} (Python ${version}; they are installed for ${GP_PY_VERSION}: -DGP_PYTHON3=${d}/${name} to choose it)")
      elseif(seen EQUAL -1)
        list(APPEND GP_PY_SITES "${purelib}")
        list(APPEND GP_PY_SITE_EXES "${d}/${name}")
      endif()
    endforeach()
  endforeach()
  if(GP_PY_DEST STREQUAL "")
    string(LENGTH "${CMAKE_INSTALL_PREFIX}/" prefix_len)
    foreach(site IN LISTS GP_PY_SITES)
      string(SUBSTRING "${site}" 0 ${prefix_len} head)
      if(head STREQUAL "${CMAKE_INSTALL_PREFIX}/")
        string(SUBSTRING "${site}" ${prefix_len} -1 GP_PY_DEST)
        break()
      endif()
    endforeach()
    if(GP_PY_DEST STREQUAL "")
      set(GP_PY_DEST "lib/python${GP_PY_VERSION}/site-packages")
    endif()
    set(GP_PY_AUTO ON)
  endif()
endif()
if(GP_PY_DEST STREQUAL "")
  set(GP_PY_DEST "lib/python3/site-packages")
endif()
if(IS_ABSOLUTE "${GP_PY_DEST}")
  set(GP_PY_DEST_FULL "${GP_PY_DEST}")
else()
  set(GP_PY_DEST_FULL "${CMAKE_INSTALL_PREFIX}/${GP_PY_DEST}")
endif()
message(STATUS "Python packages install to: ${GP_PY_DEST}")

install(DIRECTORY ${GP_PY_SOURCE_DIR}/gpu_profile ${GP_PY_SOURCE_DIR}/gpufl DESTINATION ${GP_PY_DEST}
  PATTERN __pycache__ EXCLUDE PATTERN _install.py EXCLUDE)
if(IS_ABSOLUTE "${GP_PY_DEST}")
  set(GP_PY_INSTALL_FILE "${GP_PY_DEST}/gpu_profile/_install.py")
else()
  set(GP_PY_INSTALL_FILE "\${CMAKE_INSTALL_PREFIX}/${GP_PY_DEST}/gpu_profile/_install.py")
endif()
install(CODE "file(WRITE \"\$ENV{DESTDIR}${GP_PY_INSTALL_FILE}\"
  \"# Written by cmake --install: where libgpuprofile.so.0 was installed.\\nLIBDIR = r'\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}'\\n\")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\$ENV{DESTDIR}${GP_PY_INSTALL_FILE}\")")

if(GP_PY_AUTO)
  list(LENGTH GP_PY_SITES n_sites)
  math(EXPR last "${n_sites} - 1")
  foreach(i RANGE ${last})
    list(GET GP_PY_SITES ${i} site)
    list(GET GP_PY_SITE_EXES ${i} exe)
    if(site STREQUAL GP_PY_DEST_FULL)
      message(STATUS "Python packages: for ${exe} (its own site directory)")
      continue()
    endif()
    message(STATUS "Python packages: for ${exe} too (${site}/gpu-profile.pth)")
    install(CODE "if(\"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"${CMAKE_INSTALL_PREFIX}\" AND \"\$ENV{DESTDIR}\" STREQUAL \"\")
    file(WRITE \"${site}/gpu-profile.pth\" \"${GP_PY_DEST_FULL}\\n\")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"${site}/gpu-profile.pth\")
    message(STATUS \"Installing: ${site}/gpu-profile.pth (puts ${GP_PY_DEST_FULL} on ${exe}'s path)\")
  endif()")
  endforeach()
endif()
