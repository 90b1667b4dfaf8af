cmake_minimum_required(VERSION 3.25)
# Fails if a public header under include/membridge/<module>/ is not included by the umbrella header
# membridge/membridge.hpp (every public header a build contains must reach a user who includes it).
# Run as: cmake -DSOURCE_DIR=<repo> -P check_umbrella.cmake
file(READ "${SOURCE_DIR}/include/membridge/membridge.hpp" umbrella)
file(GLOB_RECURSE headers RELATIVE "${SOURCE_DIR}/include" "${SOURCE_DIR}/include/membridge/*/*.hpp")
set(missing "")
foreach(h IN LISTS headers)
  string(FIND "${umbrella}" "#include <${h}>" at)
  if(at EQUAL -1)
    list(APPEND missing "${h}")
  endif()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "membridge.hpp leaves out these public headers:\n  ${text}")
endif()
list(LENGTH headers count)
message(STATUS "umbrella header: all ${count} public headers included")
