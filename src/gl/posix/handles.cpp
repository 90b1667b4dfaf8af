// Linux: GL imports opaque fds (GL_EXT_memory_object_fd, GL_EXT_semaphore_fd). GL takes an fd when
// the import raises no error; until then membridge owns it.
#include "../detail/handles.hpp"

namespace membridge::gl::detail {

const char* const memory_handle_extension = "GL_EXT_memory_object_fd";
const char* const semaphore_handle_extension = "GL_EXT_semaphore_fd";
const char* const handle_name = "opaque fd";

bool has_memory_import(const functions& fn) noexcept { return fn.ImportMemoryFdEXT != nullptr; }
bool has_semaphore_import(const functions& fn) noexcept { return fn.ImportSemaphoreFdEXT != nullptr; }

result<os::shareable_handle> duplicate(os::borrowed_shareable_handle handle) { return handle.duplicate(); }

result<void> import_memory(const functions& fn, GLuint memory, std::size_t size, os::shareable_handle handle) {
  fn.ImportMemoryFdEXT(memory, static_cast<GLuint64>(size), GL_HANDLE_TYPE_OPAQUE_FD_EXT, handle.get());
  // GL takes the fd only when the import raised no error; otherwise `handle` closes it on return.
  MEMBRIDGE_TRY(check_gl_error(fn, "glImportMemoryFdEXT", "importing an opaque fd of " + std::to_string(size) + " bytes"));
  static_cast<void>(handle.release());  // GL owns it now (and may already have closed it)
  return ok();
}

result<void> import_semaphore(const functions& fn, GLuint semaphore, os::borrowed_shareable_handle handle,
                              const std::string& what) {
  MEMBRIDGE_TRY_ASSIGN(os::unique_fd copy, handle.duplicate());
  fn.ImportSemaphoreFdEXT(semaphore, GL_HANDLE_TYPE_OPAQUE_FD_EXT, copy.get());
  // GL takes the fd only when the import raised no error; otherwise `copy` closes it on return.
  MEMBRIDGE_TRY(check_gl_error(fn, "glImportSemaphoreFdEXT", what));
  static_cast<void>(copy.release());  // GL owns it now
  return ok();
}

}  // namespace membridge::gl::detail
