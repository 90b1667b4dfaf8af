cmake_minimum_required(VERSION 3.25)
# Runs the gpu tier once without and once with MEMBRIDGE_REQUIRE_GPU=1 and checks what each must do:
#  - no GPU:  plain run exits 0 with every test skipped and the reason printed;
#             required run exits non-zero and says why (a skip became a failure).
#  - a GPU:   both runs exit 0 and nothing is skipped.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=MEMBRIDGE_REQUIRE_GPU ${BINARY} --gtest_filter=gpu_test.device_*
  RESULT_VARIABLE plain_rc OUTPUT_VARIABLE plain_out ERROR_VARIABLE plain_err)
execute_process(COMMAND ${CMAKE_COMMAND} -E env MEMBRIDGE_REQUIRE_GPU=1 ${BINARY} --gtest_filter=gpu_test.device_*
  RESULT_VARIABLE req_rc OUTPUT_VARIABLE req_out ERROR_VARIABLE req_err)
if(plain_out MATCHES "SKIPPED")
  if(NOT plain_rc EQUAL 0 OR NOT plain_out MATCHES "no usable CUDA device")
    message(FATAL_ERROR "without a GPU the plain run must skip with the reason:\n${plain_out}${plain_err}")
  endif()
  if(req_rc EQUAL 0 OR NOT req_out MATCHES "MEMBRIDGE_REQUIRE_GPU=1: a GPU test that cannot run fails")
    message(FATAL_ERROR "MEMBRIDGE_REQUIRE_GPU=1 must turn skips into failures:\n${req_out}${req_err}")
  endif()
  message(STATUS "no GPU here: skips without the switch, fails with it")
else()
  if(NOT plain_rc EQUAL 0 OR NOT req_rc EQUAL 0 OR req_out MATCHES "SKIPPED")
    message(FATAL_ERROR "with a GPU both runs must pass without skips:\n${plain_out}\n${req_out}")
  endif()
  message(STATUS "GPU present: both runs passed")
endif()
