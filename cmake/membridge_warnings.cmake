# Warning flags for membridge's own targets (never forced on consumers).
set(MEMBRIDGE_CXX_WARNINGS
    -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wdouble-promotion
    -Wformat=2 -Wimplicit-fallthrough -Wmisleading-indentation -Wduplicated-cond -Wlogical-op
    # Vulkan code sets sType and leaves the rest zero: `VkFooInfo info{VK_STRUCTURE_TYPE_FOO_INFO};`
    -Wno-missing-field-initializers
    # GCC 12 at -O3 reports std::string concatenation as overlapping memcpy (GCC bug 105329).
    -Wno-restrict)
# Host-compiler warnings for .cu files: nvcc's generated code trips -Wpedantic/-Wold-style-cast, so a
# smaller set is passed through.
set(MEMBRIDGE_CUDA_HOST_WARNINGS -Wall -Wextra -Wshadow)

function(membridge_target_warnings target)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  set(_cxx ${MEMBRIDGE_CXX_WARNINGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    list(REMOVE_ITEM _cxx -Wduplicated-cond -Wlogical-op -Wno-restrict)
  endif()
  string(REPLACE ";" "," _cuda_host "${MEMBRIDGE_CUDA_HOST_WARNINGS}")
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${_cxx}>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_cuda_host}>)
  if(MEMBRIDGE_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Werror>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endfunction()
