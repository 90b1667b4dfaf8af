# Windows (mingw-w64 cross build): the Vulkan, volk and Khronos GL headers for the vulkan and gl modules.
# The headers of Debian's libvulkan-dev, libvulkan-volk-dev and libgl-dev are platform-independent
# (vulkan_win32.h with VK_USE_PLATFORM_WIN32_KHR, glext.h's GL_EXT_memory_object_win32), but the
# cross build searches only the mingw sysroot, and adding /usr/include to a mingw build would let
# glibc's headers shadow mingw's. So the few header folders needed are copied at configure time into
# the build tree, and that folder alone is added. The mingw sysroot's own glext.h (2019) lacks
# GL_NV_timeline_semaphore and GL_NV_memory_object_sparse; Debian's (2022) has them.
# Nothing is linked: Vulkan comes from vulkan-1.dll through the caller's vkGetInstanceProcAddr, GL
# from the caller's get_proc_address (or opengl32.dll's wglGetProcAddress).
set(MEMBRIDGE_HOST_INCLUDE_DIR /usr/include CACHE PATH "Where Debian's Vulkan, volk and GL headers are (Windows build)")
set(_staged ${PROJECT_BINARY_DIR}/windows-headers)
foreach(_header vulkan/vulkan_core.h vk_video KHR/khrplatform.h GL/glext.h volk.h volk.c)
  if(NOT EXISTS ${MEMBRIDGE_HOST_INCLUDE_DIR}/${_header})
    message(FATAL_ERROR "membridge (Windows): ${MEMBRIDGE_HOST_INCLUDE_DIR}/${_header} is missing "
                        "(apt-get install libvulkan-dev libvulkan-volk-dev libgl-dev)")
  endif()
endforeach()
file(COPY ${MEMBRIDGE_HOST_INCLUDE_DIR}/vulkan ${MEMBRIDGE_HOST_INCLUDE_DIR}/vk_video ${MEMBRIDGE_HOST_INCLUDE_DIR}/KHR
     DESTINATION ${_staged})
file(COPY ${MEMBRIDGE_HOST_INCLUDE_DIR}/GL/glext.h DESTINATION ${_staged}/GL)
file(COPY ${MEMBRIDGE_HOST_INCLUDE_DIR}/volk.h ${MEMBRIDGE_HOST_INCLUDE_DIR}/volk.c DESTINATION ${_staged}/volk)

# What find_package(Vulkan) gives on Linux, and what membridge_volk.cmake and the gl module look for.
add_library(membridge_windows_vulkan_headers INTERFACE)
target_include_directories(membridge_windows_vulkan_headers SYSTEM INTERFACE $<BUILD_INTERFACE:${_staged}>)
target_compile_definitions(membridge_windows_vulkan_headers INTERFACE VK_USE_PLATFORM_WIN32_KHR)
add_library(Vulkan::Headers ALIAS membridge_windows_vulkan_headers)
set(MEMBRIDGE_VOLK_INCLUDE_DIR ${_staged}/volk CACHE PATH "" FORCE)
set(MEMBRIDGE_VOLK_SOURCE ${_staged}/volk/volk.c CACHE FILEPATH "" FORCE)
# GL/gl.h comes from the mingw sysroot (it includes <windows.h>), GL/glext.h from here (first on the path).
set(MEMBRIDGE_GL_INCLUDE_DIR ${_staged} CACHE PATH "" FORCE)
set(MEMBRIDGE_EGL_INCLUDE_DIR "" CACHE PATH "" FORCE)
