# package.version_requests: find_package honours the installed package's version file. A consumer that
# asks for this release's major.minor (and the exact version) configures and sees membridge_VERSION;
# one that asks for the next minor, the next major or the previous minor fails to configure, naming the
# version it found. Before 1.0 a minor version may break the API (SameMinorVersion).
# Inputs (-D): STAGE (install prefix), SOURCE (tests/package/version_consumer), BINARY, GENERATOR, CXX,
# VERSION (the project's version, x.y.z).
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/script_inputs.cmake")
require_inputs(check_version_requests.cmake STAGE SOURCE BINARY GENERATOR CXX VERSION)
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$" _ "${VERSION}")
set(major ${CMAKE_MATCH_1})
set(minor ${CMAKE_MATCH_2})
math(EXPR next_minor "${minor} + 1")
math(EXPR next_major "${major} + 1")

# request -> expected outcome
set(accepted "${major}.${minor}" "${VERSION}")
set(refused "${major}.${next_minor}" "${next_major}.0")
if(minor GREATER 0)
  math(EXPR previous_minor "${minor} - 1")
  list(APPEND refused "${major}.${previous_minor}")
endif()

function(configure_with request languages)
  string(REPLACE "." "_" dir "${request}")
  file(REMOVE_RECURSE "${BINARY}/${dir}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}/${dir}" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}"
            "-DCMAKE_PREFIX_PATH=${STAGE}" "-DMEMBRIDGE_REQUEST=${request}" "-DMEMBRIDGE_LANGUAGES=${languages}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

set(failures "")
foreach(request IN LISTS accepted)
  configure_with(${request} CXX)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "membridge_VERSION=${VERSION}")
    string(APPEND failures "find_package(membridge ${request}) should find ${VERSION} (exit ${rc}):\n${out}\n")
  else()
    message(STATUS "find_package(membridge ${request}): found ${VERSION}, as it should")
  endif()
endforeach()
foreach(request IN LISTS refused)
  configure_with(${request} NONE)
  if(rc EQUAL 0)
    string(APPEND failures "find_package(membridge ${request}) should fail against ${VERSION}, it configured:\n${out}\n")
  elseif(NOT out MATCHES "version: ${VERSION}")  # CMake lists the unsuitable version it considered
    string(APPEND failures "find_package(membridge ${request}) failed, but not for the version (exit ${rc}):\n${out}\n")
  else()
    message(STATUS "find_package(membridge ${request}): refused (${VERSION} installed), as it should")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
