# package.pkg_config: builds tests/package/consumer/main.cpp with nothing but the compiler and
# `pkg-config --cflags --libs membridge` against the staged install (as a Makefile-based engine would),
# runs it, and checks what the .pc file says: the version, a prefix that resolves to the install (the
# file is relocatable), and the link order (a module before the modules it uses).
# Inputs (-D): STAGE (install prefix), LIBDIR (relative, e.g. lib), SOURCE (the consumer's main.cpp),
# BINARY (scratch folder), CXX, VERSION, MODULES (|-separated list of the built modules, core first).
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/script_inputs.cmake")
require_inputs(run_pkg_config.cmake STAGE LIBDIR SOURCE BINARY CXX VERSION MODULES)
string(REPLACE "|" ";" MODULES "${MODULES}")
include("${CMAKE_CURRENT_LIST_DIR}/consumer_support.cmake")
find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
file(REMOVE_RECURSE "${BINARY}")
file(MAKE_DIRECTORY "${BINARY}")
set(ENV{PKG_CONFIG_PATH} "${STAGE}/${LIBDIR}/pkgconfig")

function(pkg_config var)
  execute_process(COMMAND "${PKG_CONFIG}" ${ARGN} membridge
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} membridge failed (exit ${rc}): ${err}")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

pkg_config(version --modversion)
if(NOT version STREQUAL VERSION)
  message(FATAL_ERROR "membridge.pc says version ${version}, the project is ${VERSION}")
endif()
pkg_config(prefix --variable=prefix)
file(REAL_PATH "${prefix}" prefix)
file(REAL_PATH "${STAGE}" stage)
if(NOT prefix STREQUAL stage)
  message(FATAL_ERROR "membridge.pc's prefix resolves to ${prefix}, not the install prefix ${stage}")
endif()
pkg_config(cflags --cflags)
pkg_config(libs --libs)
pkg_config(static_libs --libs --static)
message(STATUS "pkg-config --cflags: ${cflags}\npkg-config --libs: ${libs}\npkg-config --libs --static: ${static_libs}")

# Link order: the archive of each module comes before the archives of the modules to its left.
set(expected_order ${MODULES})
list(REVERSE expected_order)
set(last -1)
foreach(m IN LISTS expected_order)
  string(FIND "${libs}" "-lmembridge_${m} " at)
  if(at EQUAL -1)
    string(FIND "${libs}" "-lmembridge_${m}" at REVERSE)
  endif()
  if(at EQUAL -1 OR at LESS last)
    message(FATAL_ERROR "pkg-config --libs must list -lmembridge_${m} after the modules that use it: ${libs}")
  endif()
  set(last ${at})
endforeach()
foreach(lib -lpthread -ldl)
  if(NOT libs MATCHES "${lib}")
    message(FATAL_ERROR "pkg-config --libs lacks ${lib}: ${libs}")
  endif()
endforeach()

separate_arguments(cflags_list UNIX_COMMAND "${cflags}")
separate_arguments(libs_list UNIX_COMMAND "${libs}")
set(exe "${BINARY}/membridge_consumer")
execute_process(COMMAND "${CXX}" -std=c++20 ${cflags_list} "${SOURCE}" -o "${exe}" ${libs_list}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer with pkg-config's flags failed (exit ${rc}):\n${out}${err}")
endif()
expect_consumer_ok("${exe}" "${VERSION}" "the pkg-config consumer")
