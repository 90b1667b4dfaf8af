# package.deb: builds the Debian package with CPack from this build tree and checks it: its control
# fields (name, version), that it holds each module's static library, the headers (the generated
# config.hpp and version.hpp among them), the CMake package config and version file, membridge.pc and
# membridge-info, that nothing lies outside /usr and no other program (the benchmarks) is in it, and that the packaged membridge-info runs and
# reports this version.
# Inputs (-D): BUILD (the build tree with CPackConfig.cmake), BINARY (scratch folder), CPACK, VERSION,
# LIBDIR (relative, e.g. lib), MODULES (|-separated list of the built modules), TOOLS (ON when membridge-info is built).
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/script_inputs.cmake")
require_inputs(check_deb.cmake BUILD BINARY CPACK VERSION LIBDIR MODULES TOOLS)
string(REPLACE "|" ";" MODULES "${MODULES}")
find_program(DPKG_DEB dpkg-deb REQUIRED)
file(REMOVE_RECURSE "${BINARY}")
file(MAKE_DIRECTORY "${BINARY}")

execute_process(COMMAND "${CPACK}" --config "${BUILD}/CPackConfig.cmake" -G DEB -B "${BINARY}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB failed (exit ${rc}):\n${out}${err}")
endif()
file(GLOB debs "${BINARY}/*.deb")
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one .deb in ${BINARY}, found ${count}: ${debs}\n${out}")
endif()
get_filename_component(deb_name "${debs}" NAME)
if(NOT deb_name MATCHES "^membridge_${VERSION}_[a-z0-9]+\\.deb$")
  message(FATAL_ERROR "the package is named ${deb_name}, expected membridge_${VERSION}_<arch>.deb")
endif()

function(deb_field var field)
  execute_process(COMMAND "${DPKG_DEB}" -f "${debs}" ${field}
    RESULT_VARIABLE rc OUTPUT_VARIABLE value OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb -f ${deb_name} ${field} failed")
  endif()
  set(${var} "${value}" PARENT_SCOPE)
endfunction()
deb_field(package Package)
deb_field(version Version)
if(NOT package STREQUAL "membridge" OR NOT version STREQUAL VERSION)
  message(FATAL_ERROR "${deb_name}: Package '${package}', Version '${version}'; expected membridge ${VERSION}")
endif()

execute_process(COMMAND "${DPKG_DEB}" -c "${debs}" RESULT_VARIABLE rc OUTPUT_VARIABLE listing)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb -c ${deb_name} failed")
endif()
# "-rw-r--r-- root/root  1234 2026-11-27 18:00 ./usr/lib/libmembridge_core.a" -> "/usr/lib/libmembridge_core.a"
string(REGEX REPLACE "[^\n]* \\./([^\n]*)" "/\\1" paths "${listing}")
string(REPLACE "\n" ";" paths "${paths}")

set(expected
  /usr/include/membridge/membridge.hpp /usr/include/membridge/config.hpp /usr/include/membridge/version.hpp
  /usr/include/membridge/core/result.hpp /usr/include/membridge/os/unique_fd.hpp
  /usr/${LIBDIR}/cmake/membridge/membridgeConfig.cmake /usr/${LIBDIR}/cmake/membridge/membridgeConfigVersion.cmake
  /usr/${LIBDIR}/cmake/membridge/membridgeTargets.cmake
  /usr/${LIBDIR}/pkgconfig/membridge.pc
  /usr/share/doc/membridge/CHANGELOG.md)
foreach(m IN LISTS MODULES)
  list(APPEND expected /usr/${LIBDIR}/libmembridge_${m}.a /usr/include/membridge/${m}/)
endforeach()
if(TOOLS)
  list(APPEND expected /usr/bin/membridge-info)
endif()
set(missing "")
foreach(path IN LISTS expected)
  list(FIND paths "${path}" at)
  if(at EQUAL -1)
    list(APPEND missing "${path}")
  endif()
endforeach()
set(outside "")
foreach(path IN LISTS paths)
  if(path AND NOT path MATCHES "^/(usr/.*)?$")
    list(APPEND outside "${path}")
  elseif(path MATCHES "^/usr/bin/.+" AND NOT path STREQUAL "/usr/bin/membridge-info")
    list(APPEND outside "${path} (only membridge-info belongs in /usr/bin)")
  endif()
endforeach()
if(missing OR outside)
  message(FATAL_ERROR "${deb_name}:\n  missing: ${missing}\n  unexpected: ${outside}\ndpkg-deb -c:\n${listing}")
endif()
list(LENGTH paths entries)
message(STATUS "${deb_name}: ${entries} entries, every expected file present")

# The packaged tool runs and names this version (the library it was linked with).
if(TOOLS)
  execute_process(COMMAND "${DPKG_DEB}" -x "${debs}" "${BINARY}/root" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb -x ${deb_name} failed")
  endif()
  execute_process(COMMAND "${BINARY}/root/usr/bin/membridge-info" --version
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT out STREQUAL "membridge-info ${VERSION}")
    message(FATAL_ERROR "the packaged membridge-info --version printed '${out}${err}' (exit ${rc}), expected 'membridge-info ${VERSION}'")
  endif()
  message(STATUS "packaged membridge-info --version: ${out}")
endif()
