# volk (Debian libvulkan-volk-dev) supplies VolkDeviceTable and the generated code that fills it.
# membridge uses only the table and that code: volk.c itself defines global function pointers named
# like Vulkan's own functions, which would clash with an engine that links the loader or volk. So the
# body of volkGenLoadDeviceTable is copied out of volk.c at configure time into an include file that
# src/vulkan/device_table.cpp wraps in a function of its own.
find_path(MEMBRIDGE_VOLK_INCLUDE_DIR volk.h REQUIRED)
find_file(MEMBRIDGE_VOLK_SOURCE volk.c HINTS ${MEMBRIDGE_VOLK_INCLUDE_DIR} NO_DEFAULT_PATH REQUIRED)

function(membridge_generate_volk_device_loader output)
  file(READ ${MEMBRIDGE_VOLK_SOURCE} _volk)
  set(_marker "/* VOLK_GENERATE_LOAD_DEVICE_TABLE */")
  string(FIND "${_volk}" "${_marker}" _begin)
  if(_begin LESS 0)
    message(FATAL_ERROR "membridge: ${MEMBRIDGE_VOLK_SOURCE} has no ${_marker} section")
  endif()
  string(LENGTH "${_marker}" _marker_length)
  math(EXPR _body_begin "${_begin} + ${_marker_length}")
  string(SUBSTRING "${_volk}" ${_body_begin} -1 _rest)
  string(FIND "${_rest}" "${_marker}" _end)
  if(_end LESS 0)
    message(FATAL_ERROR "membridge: ${MEMBRIDGE_VOLK_SOURCE}: unterminated ${_marker} section")
  endif()
  string(SUBSTRING "${_rest}" 0 ${_end} _body)
  string(FIND "${_body}" "table->vkCreateBuffer = " _check)
  if(_check LESS 0)
    message(FATAL_ERROR "membridge: the ${_marker} section of ${MEMBRIDGE_VOLK_SOURCE} does not fill a device table")
  endif()
  file(CONFIGURE OUTPUT ${output} CONTENT "// Generated from ${MEMBRIDGE_VOLK_SOURCE} (volk's device table loader).\n${_body}\n" @ONLY)
endfunction()
