# What every package-tier script run with `cmake -P` shares: the check of its -D inputs.

# Fails with "<script> needs -D<var>=..." for the first of the named variables that is not defined
# (`script`: the calling script's file name, for the message).
function(require_inputs script)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${script} needs -D${var}=...")
    endif()
  endforeach()
endfunction()
