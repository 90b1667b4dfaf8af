cmake_minimum_required(VERSION 3.25)
# Fails if a module's headers or sources include a membridge module to its right in the graph
#   core <- os <- { cuda, vulkan, gl, ipc } <- sync
# (cuda, vulkan, gl and ipc do not include each other; ipc carries no GPU types), or reach into
# another module's private parts:
#   - an include, <membridge/Y/...> or "relative/path" (resolved against the including file), of
#     another module's detail/ headers, or of anything under another module's src/ directory;
#   - a public header under include/membridge/X/ naming a `Y::detail::` type of another module Y
#     (a public type that stores one ties X's users to Y's private layout).
# Run as: cmake -DSOURCE_DIR=<repo> -P check_layering.cmake (SOURCE_DIR may be a fixture tree with
# the same layout: tests/unit/layering_fixture).
set(modules core os cuda vulkan gl ipc sync)
set(allowed_core "core")
set(allowed_os "core;os")
set(allowed_cuda "core;os;cuda")
set(allowed_vulkan "core;os;vulkan")
set(allowed_gl "core;os;gl")
set(allowed_ipc "core;os;ipc")
set(allowed_sync "core;os;cuda;vulkan;gl;ipc;sync")

get_filename_component(root "${SOURCE_DIR}" ABSOLUTE)
set(violations "")

# Checks one include of `module`'s file `f`: `used` is the module it names, `private` is true when
# the target is private to `used` (a detail/ header or a file under src/).
function(check_use f module used private what)
  if(NOT used IN_LIST allowed_${module})
    set(violations "${violations};${f}: the ${module} module includes ${used} (${what})" PARENT_SCOPE)
  elseif(private AND NOT used STREQUAL module)
    set(violations "${violations};${f}: the ${module} module reaches into ${used}'s private headers (${what})"
        PARENT_SCOPE)
  endif()
endfunction()

foreach(module IN LISTS modules)
  file(GLOB_RECURSE files
    "${root}/include/membridge/${module}/*.hpp"
    "${root}/src/${module}/*.hpp" "${root}/src/${module}/*.cpp")
  foreach(f IN LISTS files)
    get_filename_component(dir "${f}" DIRECTORY)
    file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line IN LISTS includes)
      if(line MATCHES "<membridge/([a-z_]+)/([^>]*)>")
        set(used "${CMAKE_MATCH_1}")
        set(rest "${CMAKE_MATCH_2}")
        set(private FALSE)
        if(rest MATCHES "(^|/)detail/")
          set(private TRUE)
        endif()
        check_use("${f}" "${module}" "${used}" "${private}" "<membridge/${used}/${rest}>")
      elseif(line MATCHES "\"([^\"]+)\"")
        set(spelled "${CMAKE_MATCH_1}")
        get_filename_component(target "${spelled}" ABSOLUTE BASE_DIR "${dir}")
        string(LENGTH "${root}/" root_length)
        string(SUBSTRING "${target}" 0 ${root_length} head)
        string(SUBSTRING "${target}" ${root_length} -1 tail)
        if(NOT head STREQUAL "${root}/")
          continue()  # outside the tree
        elseif(tail MATCHES "^src/([a-z_]+)/")
          set(used "${CMAKE_MATCH_1}")
          set(private TRUE)  # every file under src/ is private to its module
        elseif(tail MATCHES "^include/membridge/([a-z_]+)/(.*)$")
          set(used "${CMAKE_MATCH_1}")
          set(private FALSE)
          if(CMAKE_MATCH_2 MATCHES "(^|/)detail/")
            set(private TRUE)
          endif()
        else()
          continue()  # outside the modules (a generated or third-party file)
        endif()
        if(used IN_LIST modules)
          check_use("${f}" "${module}" "${used}" "${private}" "\"${spelled}\"")
        endif()
      endif()
    endforeach()
  endforeach()

  # A public header naming another module's detail type.
  file(GLOB_RECURSE public_files "${root}/include/membridge/${module}/*.hpp")
  foreach(f IN LISTS public_files)
    file(STRINGS "${f}" lines REGEX "(core|os|cuda|vulkan|gl|ipc|sync)::detail::")
    foreach(line IN LISTS lines)
      string(REGEX MATCHALL "(^|[^A-Za-z0-9_])(core|os|cuda|vulkan|gl|ipc|sync)::detail::" uses "${line}")
      foreach(use IN LISTS uses)
        string(REGEX REPLACE ".*(core|os|cuda|vulkan|gl|ipc|sync)::detail::$" "\\1" other "${use}")
        if(NOT other STREQUAL module)
          string(STRIP "${line}" shown)
          list(APPEND violations "${f}: the public ${module} header names ${other}'s detail type: ${shown}")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
# core has no OS or GPU headers.
file(GLOB_RECURSE core_files "${root}/include/membridge/core/*.hpp")
foreach(f IN LISTS core_files)
  file(STRINGS "${f}" bad REGEX "#[ \t]*include[ \t]*<(cuda|vulkan/|GL/|EGL/|unistd|sys/|dlfcn)")
  if(bad)
    list(APPEND violations "${f}: core includes an OS or GPU header: ${bad}")
  endif()
endforeach()

list(REMOVE_ITEM violations "")
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "module layering violated:\n  ${text}")
endif()
message(STATUS "module layering: ok")
