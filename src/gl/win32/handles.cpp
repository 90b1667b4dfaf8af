// Windows: GL imports opaque NT handles (GL_EXT_memory_object_win32, GL_EXT_semaphore_win32). Unlike
// an fd, an NT handle is never taken by GL: whoever owns it closes it after the import.
#include "../detail/handles.hpp"

namespace membridge::gl::detail {

const char* const memory_handle_extension = "GL_EXT_memory_object_win32";
const char* const semaphore_handle_extension = "GL_EXT_semaphore_win32";
const char* const handle_name = "opaque NT handle";

bool has_memory_import(const functions& fn) noexcept { return fn.ImportMemoryWin32HandleEXT != nullptr; }
bool has_semaphore_import(const functions& fn) noexcept { return fn.ImportSemaphoreWin32HandleEXT != nullptr; }

result<os::shareable_handle> duplicate(os::borrowed_shareable_handle handle) {
  return os::unique_handle::duplicate(handle);
}

result<void> import_memory(const functions& fn, GLuint memory, std::size_t size, os::shareable_handle handle) {
  fn.ImportMemoryWin32HandleEXT(memory, static_cast<GLuint64>(size), GL_HANDLE_TYPE_OPAQUE_WIN32_EXT, handle.get());
  // GL keeps its own reference to the payload; `handle` is closed on return, whatever the outcome.
  return check_gl_error(fn, "glImportMemoryWin32HandleEXT",
                        "importing an opaque NT handle of " + std::to_string(size) + " bytes");
}

result<void> import_semaphore(const functions& fn, GLuint semaphore, os::borrowed_shareable_handle handle,
                              const std::string& what) {
  fn.ImportSemaphoreWin32HandleEXT(semaphore, GL_HANDLE_TYPE_OPAQUE_WIN32_EXT, handle.get());
  return check_gl_error(fn, "glImportSemaphoreWin32HandleEXT", what);  // the caller keeps its handle
}

}  // namespace membridge::gl::detail
