# Compiles every C++ block of the documentation against the installed package, so the examples cannot
# rot: each ```cpp (or ```c++) block of README.md, docs/*.md and the samples', benchmarks' and tools'
# READMEs becomes one translation unit of a consumer project that finds membridge with find_package
# (tests/package/snippets). Fails when a block does not compile; compiler messages point at the
# Markdown file and line (#line).
#
# A block is a translation unit at namespace scope after tests/package/snippets/prelude.hpp (the
# umbrella header, common standard headers, `namespace mb = membridge;`, the byte-size literals).
# An HTML comment on the last non-blank line before the opening fence changes that:
#   <!-- snippet: function -->       the block is the body of a function returning result<void>, with
#                                    dev/cu, vk, buf, view, tl, stream, queue, cmd and n in scope
#                                    (prelude.hpp lists their types)
#   <!-- snippet: cuda -->           compiled by nvcc as a .cu file (kernels, <<<...>>> launches);
#                                    combines with function: <!-- snippet: cuda function -->
#   <!-- snippet: skip REASON -->    not compiled; REASON is required and printed. Keep these rare and
#                                    never for a block a user would copy.
#
# Inputs (-D): REPO (source root), STAGE (install prefix), BINARY (scratch folder), GENERATOR, CXX,
# NVCC (nvcc; required when a block is marked cuda), PENDING (|-separated repository-relative files
# whose blocks are listed but not compiled, with the reason in PENDING_WHY; for a file another change
# is fixing).
cmake_minimum_required(VERSION 3.25)

include("${CMAKE_CURRENT_LIST_DIR}/script_inputs.cmake")
require_inputs(compile_doc_snippets.cmake REPO STAGE BINARY GENERATOR CXX)
string(REPLACE "|" ";" pending_files "${PENDING}")

file(REMOVE_RECURSE "${BINARY}")
file(MAKE_DIRECTORY "${BINARY}/src")

file(GLOB markdown RELATIVE "${REPO}"
  "${REPO}/*.md" "${REPO}/docs/*.md" "${REPO}/samples/*.md" "${REPO}/samples/*/*.md"
  "${REPO}/bench/*.md" "${REPO}/bench/*/*.md" "${REPO}/tools/*/*.md")
list(SORT markdown)

set(function_open [=[
[[maybe_unused]] static membridge::result<void> snippet_body(
    [[maybe_unused]] const mb::cuda::device& dev, [[maybe_unused]] const mb::vulkan::device_context& vk,
    [[maybe_unused]] mb::cuda::growable_buffer& buf, [[maybe_unused]] mb::vulkan::chunked_buffer& view,
    [[maybe_unused]] mb::sync::frame_timeline& tl, [[maybe_unused]] CUstream stream,
    [[maybe_unused]] VkQueue queue, [[maybe_unused]] VkCommandBuffer cmd, [[maybe_unused]] std::uint64_t n) {
  [[maybe_unused]] const mb::cuda::device& cu = dev;
  {
]=])
set(function_close "\n  }\n  return membridge::ok();\n}\n")

set(cxx_sources "")
set(cuda_sources "")
set(compiled 0)
set(skipped 0)
set(pending 0)
set(readme_blocks 0)
set(report "")

foreach(md IN LISTS markdown)
  file(READ "${REPO}/${md}" content)
  string(REGEX REPLACE "[^\n]$" "\\0\n" content "${content}")  # a last line without a newline
  string(REPLACE "/" "_" stem "${md}")
  set(line_number 0)
  set(fence "")          # the open fence's language ("" outside any fence)
  set(in_fence FALSE)
  set(previous "")       # the last non-blank line outside fences
  set(block "")
  set(block_line 0)
  set(block_marker "")
  while(NOT content STREQUAL "")
    string(FIND "${content}" "\n" nl)
    string(SUBSTRING "${content}" 0 ${nl} line)
    math(EXPR rest "${nl} + 1")
    string(SUBSTRING "${content}" ${rest} -1 content)
    math(EXPR line_number "${line_number} + 1")

    if(NOT in_fence)
      if("${line}" MATCHES "^[ ]*```[ ]*([A-Za-z0-9+_-]*)")
        set(in_fence TRUE)
        string(TOLOWER "${CMAKE_MATCH_1}" fence)
        set(block "")
        math(EXPR block_line "${line_number} + 1")
        set(block_marker "")
        if("${previous}" MATCHES "^[ ]*<!--[ ]*snippet:[ ]*(.*[^ ])[ ]*-->[ ]*$")
          set(block_marker "${CMAKE_MATCH_1}")
        endif()
      elseif(NOT "${line}" MATCHES "^[ \t]*$")
        set(previous "${line}")
      endif()
      continue()
    endif()

    if(NOT "${line}" MATCHES "^[ ]*```[ ]*$")
      string(APPEND block "${line}\n")
      continue()
    endif()

    # The fence closes.
    set(in_fence FALSE)
    set(previous "")
    if(NOT fence STREQUAL "cpp" AND NOT fence STREQUAL "c++")
      continue()
    endif()
    set(where "${md}:${block_line}")
    set(as_function FALSE)
    set(as_cuda FALSE)
    if(block_marker MATCHES "^skip( (.*))?$")
      if(CMAKE_MATCH_2 STREQUAL "")
        message(FATAL_ERROR "${where}: <!-- snippet: skip --> needs a reason")
      endif()
      string(APPEND report "  skipped  ${where}: ${CMAKE_MATCH_2}\n")
      math(EXPR skipped "${skipped} + 1")
      continue()
    elseif(NOT block_marker STREQUAL "")
      string(REPLACE " " ";" words "${block_marker}")
      foreach(word IN LISTS words)
        if(word STREQUAL "function")
          set(as_function TRUE)
        elseif(word STREQUAL "cuda")
          set(as_cuda TRUE)
        elseif(NOT word STREQUAL "file")
          message(FATAL_ERROR "${where}: unknown snippet marker '${word}' (file, function, cuda, skip REASON)")
        endif()
      endforeach()
    endif()
    if(md IN_LIST pending_files)
      string(APPEND report "  pending  ${where}: ${PENDING_WHY}\n")
      math(EXPR pending "${pending} + 1")
      continue()
    endif()

    set(text "// ${where} (extracted by tests/package/compile_doc_snippets.cmake)\n#include \"prelude.hpp\"\n")
    if(as_function)
      string(APPEND text "${function_open}")
    endif()
    string(APPEND text "#line ${block_line} \"${md}\"\n${block}")
    if(as_function)
      string(APPEND text "${function_close}")
    endif()
    if(as_cuda)
      set(source "${BINARY}/src/${stem}_L${block_line}.cu")
      list(APPEND cuda_sources "${source}")
    else()
      set(source "${BINARY}/src/${stem}_L${block_line}.cpp")
      list(APPEND cxx_sources "${source}")
    endif()
    file(WRITE "${source}" "${text}")
    set(mode "")
    if(as_cuda)
      string(APPEND mode " cuda")
    endif()
    if(as_function)
      string(APPEND mode " function")
    endif()
    string(APPEND report "  compiled ${where}${mode}\n")
    math(EXPR compiled "${compiled} + 1")
    if(md STREQUAL "README.md")
      math(EXPR readme_blocks "${readme_blocks} + 1")
    endif()
  endwhile()
  if(in_fence)
    message(FATAL_ERROR "${md}: a code fence opened at line ${block_line} is never closed")
  endif()
endforeach()

list(LENGTH markdown file_count)
message(STATUS "documentation C++ blocks in ${file_count} Markdown files: ${compiled} compiled, ${skipped} skipped, "
               "${pending} pending\n${report}")
if(compiled EQUAL 0 OR readme_blocks EQUAL 0)
  message(FATAL_ERROR "no C++ block found in README.md: the extraction is broken")
endif()

# The consumer project: one object library per language over the extracted blocks.
file(WRITE "${BINARY}/sources.cmake"
  "set(SNIPPET_CXX_SOURCES \"${cxx_sources}\")\nset(SNIPPET_CUDA_SOURCES \"${cuda_sources}\")\n")
set(cuda_args "")
if(NOT cuda_sources STREQUAL "")
  if(NOT NVCC OR NOT EXISTS "${NVCC}")
    message(FATAL_ERROR "blocks marked cuda need nvcc, and none was given (NVCC='${NVCC}')")
  endif()
  set(cuda_args "-DCMAKE_CUDA_COMPILER=${NVCC}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${REPO}/tests/package/snippets" -B "${BINARY}/build" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX}" ${cuda_args} "-DCMAKE_PREFIX_PATH=${STAGE}"
    "-DSNIPPET_LIST=${BINARY}/sources.cmake"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the documentation-snippet project failed")
endif()
set(keep_going "")
if(GENERATOR STREQUAL "Ninja")
  set(keep_going -- -k 0)
elseif(GENERATOR MATCHES "Makefiles")
  set(keep_going -- -k)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${BINARY}/build" ${keep_going}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  # Name each block that failed (its object's name is the Markdown file's with / as _, and the line).
  string(REGEX MATCHALL "FAILED: [^\n]*/src/[^/\n]*_L[0-9]+\\.(cpp|cu)\\.o" failed "${out}${err}")
  set(names "")
  foreach(f IN LISTS failed)
    string(REGEX REPLACE "^.*/src/([^/]*)_L([0-9]+)\\.(cpp|cu)\\.o$" "\\1 (block at line \\2)" f "${f}")
    list(APPEND names "${f}")
  endforeach()
  list(REMOVE_DUPLICATES names)
  string(REPLACE ";" "\n  " names "${names}")
  message(FATAL_ERROR "documentation C++ blocks do not compile against the installed package (the compiler's "
                      "messages above give file.md:line):\n  ${names}")
endif()
message(STATUS "all ${compiled} documentation C++ blocks compile against the installed package")
