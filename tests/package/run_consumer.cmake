# Configures, builds and runs the consumer project in one of two modes; fails on any error or if the
# consumer does not print its success line.
include("${CMAKE_CURRENT_LIST_DIR}/consumer_support.cmake")
file(REMOVE_RECURSE "${BINARY}")
if(MODE STREQUAL "find_package")
  set(mode_args -DMEMBRIDGE_CONSUMER_MODE=find_package "-DCMAKE_PREFIX_PATH=${STAGE}")
else()
  set(mode_args -DMEMBRIDGE_CONSUMER_MODE=add_subdirectory "-DMEMBRIDGE_SOURCE_DIR=${REPO}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}" ${mode_args}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer (${MODE}) failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${BINARY}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer (${MODE}) failed")
endif()
expect_consumer_ok("${BINARY}/membridge_consumer" "[0-9.]+" "the consumer (${MODE})")
