#include <membridge/gl/memory_object.hpp>

#include "detail/functions.hpp"
#include "detail/handles.hpp"

#include <string>
#include <utility>

namespace membridge::gl {

namespace {

constexpr const char* import_call = "gl::memory_object::import";

// What import() refuses before any GL call: an empty context, an invalid handle, size 0, and a context
// without GL_EXT_memory_object and the platform's handle extension.
result<void> check_import(const context& context, const os::shareable_handle& handle, const memory_import_info& info) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the GL context is empty");
  if (!handle.valid())
    return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_name + " is invalid");
  if (info.size == 0) return error(errc::invalid_argument, import_call, "size is 0");
  const auto& caps = context.capabilities();
  if (!caps.memory_object || !caps.memory_object_handle)
    return error(errc::unsupported, import_call,
                 "importing memory needs GL_EXT_memory_object and " + std::string(detail::memory_handle_extension) +
                     " (" + caps.renderer + " lacks one)");
  return ok();
}

}  // namespace

result<memory_object> memory_object::import(const context& context, os::shareable_handle handle,
                                            const memory_import_info& info) {
  MEMBRIDGE_TRY(check_import(context, handle, info));
  const auto& state = context.state();
  const auto& fn = state->fn;
  MEMBRIDGE_TRY(detail::check_gl_error(fn, import_call, "a GL error was pending before the import"));

  memory_object out;
  out.state_ = state;
  out.size_ = info.size;
  fn.CreateMemoryObjectsEXT(1, &out.name_);
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glCreateMemoryObjectsEXT"));
  if (info.dedicated) {
    const GLint dedicated = GL_TRUE;
    fn.MemoryObjectParameterivEXT(out.name_, GL_DEDICATED_MEMORY_OBJECT_EXT, &dedicated);
    MEMBRIDGE_TRY(detail::check_gl_error(fn, "glMemoryObjectParameterivEXT", "GL_DEDICATED_MEMORY_OBJECT_EXT"));
  }
  // On failure `out` deletes the name; the handle is GL's or closed (see detail::import_memory).
  MEMBRIDGE_TRY(detail::import_memory(fn, out.name_, info.size, std::move(handle)));
  if (fn.IsMemoryObjectEXT != nullptr && fn.IsMemoryObjectEXT(out.name_) != GL_TRUE)
    return error(errc::internal, "glIsMemoryObjectEXT",
                 "memory object " + std::to_string(out.name_) + " does not exist after a successful import");
  return out;
}

memory_object::memory_object(memory_object&& other) noexcept
    : state_(std::move(other.state_)), name_(std::exchange(other.name_, 0)), size_(std::exchange(other.size_, 0)) {}

memory_object& memory_object::operator=(memory_object&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    name_ = std::exchange(other.name_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

memory_object::~memory_object() { reset(); }

// The context must be current: the name is deleted in it. GL keeps the memory while buffers and
// textures made from it live.
void memory_object::reset() noexcept {
  if (name_ != 0 && state_ && state_->fn.DeleteMemoryObjectsEXT != nullptr)
    state_->fn.DeleteMemoryObjectsEXT(1, &name_);
  name_ = 0;
  size_ = 0;
  state_.reset();
}

}  // namespace membridge::gl
