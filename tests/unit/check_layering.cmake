cmake_minimum_required(VERSION 3.25)
# Fails if a module's headers or sources include a membridge module to its right in the graph
#   core <- os <- { cuda, vulkan, gl, ipc } <- sync
# (cuda, vulkan, gl and ipc do not include each other; ipc carries no GPU types).
# Run as: cmake -DSOURCE_DIR=<repo> -P check_layering.cmake
set(allowed_core "core")
set(allowed_os "core;os")
set(allowed_cuda "core;os;cuda")
set(allowed_vulkan "core;os;vulkan")
set(allowed_gl "core;os;gl")
set(allowed_ipc "core;os;ipc")
set(allowed_sync "core;os;cuda;vulkan;gl;ipc;sync")

set(violations "")
foreach(module core os cuda vulkan gl ipc sync)
  file(GLOB_RECURSE files
    "${SOURCE_DIR}/include/membridge/${module}/*.hpp"
    "${SOURCE_DIR}/src/${module}/*.hpp" "${SOURCE_DIR}/src/${module}/*.cpp")
  foreach(f IN LISTS files)
    file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*<membridge/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE ".*<membridge/([a-z_]+)/.*" "\\1" used "${line}")
      if(used STREQUAL line)
        continue()  # a top-level header such as <membridge/config.hpp>
      endif()
      if(NOT used IN_LIST allowed_${module})
        list(APPEND violations "${f}: the ${module} module includes ${used}")
      endif()
    endforeach()
  endforeach()
endforeach()
# core has no OS or GPU headers.
file(GLOB_RECURSE core_files "${SOURCE_DIR}/include/membridge/core/*.hpp")
foreach(f IN LISTS core_files)
  file(STRINGS "${f}" bad REGEX "#[ \t]*include[ \t]*<(cuda|vulkan/|GL/|EGL/|unistd|sys/|dlfcn)")
  if(bad)
    list(APPEND violations "${f}: core includes an OS or GPU header: ${bad}")
  endif()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "module layering violated:\n  ${text}")
endif()
message(STATUS "module layering: ok")
