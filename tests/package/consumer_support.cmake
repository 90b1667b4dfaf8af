# What the package scripts that run a consumer program share (included by run_consumer.cmake and
# run_pkg_config.cmake).

# Runs the consumer program `exe`, prints its output, and fails with "<what> failed (exit N)" unless it
# exits 0 and prints "membridge <version> consumer ok" (`version`: a regular expression, e.g. [0-9.]+).
function(expect_consumer_ok exe version what)
  execute_process(COMMAND "${exe}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "consumer output:\n${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "membridge ${version} consumer ok")
    message(FATAL_ERROR "${what} failed (exit ${rc})")
  endif()
endfunction()
