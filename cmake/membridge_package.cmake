# membridge's pkg-config file and Debian package (included by the top-level CMakeLists.txt when
# MEMBRIDGE_INSTALL is on). tests/package checks both: a consumer built through pkg-config, and the
# .deb's contents (package.pkg_config, package.deb).

# ------------------------------------------------------------------------------- membridge.pc ---
# Relocatable: the prefix is found from the .pc file's own directory, so the staged install of the
# package tier, a .deb installed under /usr and a copied tree all work.
file(RELATIVE_PATH MEMBRIDGE_PC_PREFIX_FROM_PCFILEDIR
  ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" MEMBRIDGE_PC_PREFIX_FROM_PCFILEDIR "${MEMBRIDGE_PC_PREFIX_FROM_PCFILEDIR}")
# Link order: every module before the modules it uses (sync first, core last).
set(MEMBRIDGE_PC_LIBS "")
set(_pc_modules ${MEMBRIDGE_MODULES})
list(REVERSE _pc_modules)
foreach(m IN LISTS _pc_modules)
  string(APPEND MEMBRIDGE_PC_LIBS " -lmembridge_${m}")
endforeach()
set(MEMBRIDGE_PC_SYSTEM_LIBS "-lpthread -ldl")  # the ipc publisher's thread; dlopen of the drivers
# cuda.h: the toolkit's include directory, where this build found it (outside the default path).
set(MEMBRIDGE_PC_CFLAGS "")
foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  if(NOT dir STREQUAL "/usr/include")
    string(APPEND MEMBRIDGE_PC_CFLAGS " -I${dir}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/membridge.pc.in ${PROJECT_BINARY_DIR}/membridge.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/membridge.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT membridge)

# ---------------------------------------------------------------------------------------- .deb ---
if(NOT PROJECT_IS_TOP_LEVEL)
  return()  # an engine that adds membridge as a subdirectory packages itself
endif()
# `cpack -G DEB` in the build directory: the static libraries, headers, CMake package config,
# membridge.pc and membridge-info (when built), installed under /usr; nothing else.
set(CPACK_GENERATOR DEB)
# One package of the install component `membridge` (the benchmarks, which install too, stay out).
set(CPACK_COMPONENTS_ALL membridge)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_PACKAGE_NAME membridge)
set(CPACK_PACKAGE_NAME membridge)
set(CPACK_PACKAGE_VENDOR membridge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
  "membridge is a C++20 static library: CUDA virtual-memory allocations exported as file descriptors, imported by Vulkan and OpenGL with no copies, kept in step with timeline semaphores and shared with other processes over Unix sockets. This package holds the static libraries, headers, the CMake package config, membridge.pc and membridge-info (preflight diagnostics).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # membridge_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "membridge maintainers")
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # membridge-info's libc/libstdc++ (dpkg-shlibdeps)
# The headers need the Vulkan headers; CUDA's cuda.h comes from NVIDIA's toolkit (not a Debian package).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libvulkan-dev")
# zstd: about as fast as no compression (the package tier builds the .deb) and smaller than gzip;
# dpkg reads it since 1.21.18 (Debian 12, Ubuntu 21.10).
set(CPACK_DEBIAN_COMPRESSION_TYPE zstd)
set(CPACK_THREADS 0)  # every core
include(CPack)
