// Private: the platform's shareable handle in GL, in one place for the module: opaque fds on Linux
// (GL_EXT_memory_object_fd, GL_EXT_semaphore_fd; src/gl/posix/handles.cpp) and opaque NT handles on
// Windows (GL_EXT_memory_object_win32, GL_EXT_semaphore_win32; src/gl/win32/handles.cpp).
#pragma once

#include "functions.hpp"

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <string>

namespace membridge::gl::detail {

/// "GL_EXT_memory_object_fd" (Linux) or "GL_EXT_memory_object_win32" (Windows).
extern const char* const memory_handle_extension;
/// "GL_EXT_semaphore_fd" (Linux) or "GL_EXT_semaphore_win32" (Windows).
extern const char* const semaphore_handle_extension;
/// How errors name the handle: "opaque fd" or "opaque NT handle".
extern const char* const handle_name;

/// True when the platform's memory import entry point is loaded (glImportMemoryFdEXT / glImportMemoryWin32HandleEXT).
[[nodiscard]] bool has_memory_import(const functions& fn) noexcept;
/// True when the platform's semaphore import entry point is loaded (glImportSemaphoreFdEXT / ...Win32HandleEXT).
[[nodiscard]] bool has_semaphore_import(const functions& fn) noexcept;

/// A new handle to what `handle` refers to (dup with close-on-exec / DuplicateHandle).
/// Ownership: borrows `handle`; the caller owns the result.
[[nodiscard]] result<os::shareable_handle> duplicate(os::borrowed_shareable_handle handle);

/// Imports `handle` into the memory object `memory` of `size` bytes and checks the GL error.
/// Ownership: consumes `handle`. Linux: GL takes the fd when the import raised no error (it is
/// closed here otherwise). Windows: GL never takes an NT handle, so it is closed here after the call.
[[nodiscard]] result<void> import_memory(const functions& fn, GLuint memory, std::size_t size,
                                         os::shareable_handle handle);

/// Imports `handle` into the semaphore `semaphore` and checks the GL error; `what` names it in errors.
/// Ownership: borrows `handle`. Linux: GL takes a duplicate of the fd (closed here on error).
/// Windows: the NT handle itself is imported and GL does not take it: the caller keeps it.
[[nodiscard]] result<void> import_semaphore(const functions& fn, GLuint semaphore, os::borrowed_shareable_handle handle,
                                            const std::string& what);

}  // namespace membridge::gl::detail
