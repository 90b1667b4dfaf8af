#include <membridge/gl/buffer.hpp>

#include "detail/functions.hpp"
#include "detail/handles.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace membridge::gl {

namespace {

constexpr const char* import_call = "gl::buffer::import";
constexpr const char* create_call = "gl::buffer::create";
constexpr std::size_t max_gl_size = static_cast<std::size_t>(std::numeric_limits<GLsizeiptr>::max());

// True when [offset, offset + bytes) lies inside [0, total), without overflow.
bool inside(std::size_t offset, std::size_t bytes, std::size_t total) noexcept {
  return offset <= total && bytes <= total - offset;
}

std::string range_text(std::size_t offset, std::size_t bytes) {
  return "bytes " + std::to_string(offset) + ".." + std::to_string(offset + bytes);
}

// The function table of the context `memory` was made in (alive while `memory` is).
const detail::functions& functions_of(const memory_object& memory) { return memory.gl_context().state()->fn; }

}  // namespace

result<buffer> buffer::import(const context& context, os::borrowed_shareable_handle handle, const memory_import_info& info,
                              std::size_t size, std::size_t memory_offset) {
  if (!context.valid()) return error(errc::invalid_argument, import_call, "the GL context is empty");
  if (!handle.valid())
    return error(errc::invalid_argument, import_call, std::string("the ") + detail::handle_name + " is invalid");
  if (size == 0) return error(errc::invalid_argument, import_call, "buffer size is 0");
  if (info.size == 0) return error(errc::invalid_argument, import_call, "the allocation size is 0");
  if (!inside(memory_offset, size, info.size))
    return error(errc::invalid_argument, import_call,
                 "the buffer (" + range_text(memory_offset, size) + ") exceeds the allocation (" +
                     std::to_string(info.size) + " bytes)");
  MEMBRIDGE_TRY_ASSIGN(os::shareable_handle copy, detail::duplicate(handle));
  MEMBRIDGE_TRY_ASSIGN(auto memory, memory_object::import(context, std::move(copy), info));
  return create(std::make_shared<const memory_object>(std::move(memory)), size, memory_offset);
}

result<buffer> buffer::create(std::shared_ptr<const memory_object> memory, std::size_t size, std::size_t memory_offset) {
  if (!memory || !memory->valid()) return error(errc::invalid_argument, create_call, "the memory object is empty");
  if (size == 0) return error(errc::invalid_argument, create_call, "buffer size is 0");
  if (!inside(memory_offset, size, memory->size()) || size > max_gl_size)
    return error(errc::invalid_argument, create_call,
                 "the buffer (" + range_text(memory_offset, size) + ") exceeds the memory object (" +
                     std::to_string(memory->size()) + " bytes)");
  const auto ctx = memory->gl_context();
  if (memory_offset != 0 && detail::ignores_memory_offset(ctx.capabilities()))
    return error(errc::unsupported, create_call,
                 ctx.capabilities().renderer +
                     " binds memory objects at offset 0 whatever offset is given (a Mesa bug): a buffer at offset " +
                     std::to_string(memory_offset) + " would show the wrong bytes");
  const auto& fn = ctx.state()->fn;
  buffer out;
  out.memory_ = std::move(memory);
  out.size_ = size;
  fn.CreateBuffers(1, &out.name_);
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glCreateBuffers"));
  fn.NamedBufferStorageMemEXT(out.name_, static_cast<GLsizeiptr>(size), out.memory_->name(),
                              static_cast<GLuint64>(memory_offset));
  // Mesa accepts any fd at import and reports a refused one only here (the memory object has no
  // memory); llvmpipe also wants 48 bytes of the memory past the buffer's end.
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glNamedBufferStorageMemEXT",
                                       range_text(memory_offset, size) + " of memory object " +
                                           std::to_string(out.memory_->name()) + " (" +
                                           std::to_string(out.memory_->size()) +
                                           " bytes); Mesa reports here an fd it refused at import, and llvmpipe a "
                                           "buffer that ends within 48 bytes of the memory's end"));
  return out;
}

result<void> buffer::read(std::size_t offset, void* out, std::size_t bytes) const {
  if (!valid()) return error(errc::invalid_argument, "gl::buffer::read", "the buffer is empty");
  if (!inside(offset, bytes, size_))
    return error(errc::invalid_argument, "gl::buffer::read",
                 range_text(offset, bytes) + " are outside the " + std::to_string(size_) + "-byte buffer");
  if (bytes == 0) return ok();
  if (out == nullptr) return error(errc::invalid_argument, "gl::buffer::read", "the destination is null");
  const auto& fn = functions_of(*memory_);
  if (fn.CopyNamedBufferSubData == nullptr) {
    fn.GetNamedBufferSubData(name_, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes), out);
    return detail::check_gl_error(fn, "glGetNamedBufferSubData", range_text(offset, bytes));
  }
  // Through a GL-owned staging buffer: on an H100 (driver 580) glGetNamedBufferSubData on a buffer over
  // imported memory answered a second read with the first read's bytes after CUDA had rewritten the
  // memory; a GPU copy reads the memory itself.
  GLuint staging = 0;
  fn.CreateBuffers(1, &staging);
  fn.NamedBufferStorage(staging, static_cast<GLsizeiptr>(bytes), nullptr, 0);
  fn.CopyNamedBufferSubData(name_, staging, static_cast<GLintptr>(offset), 0, static_cast<GLsizeiptr>(bytes));
  fn.GetNamedBufferSubData(staging, 0, static_cast<GLsizeiptr>(bytes), out);
  auto checked = detail::check_gl_error(fn, "glCopyNamedBufferSubData + glGetNamedBufferSubData", range_text(offset, bytes));
  fn.DeleteBuffers(1, &staging);
  return checked;
}

result<void> buffer::write(std::size_t offset, const void* data, std::size_t bytes) const {
  if (!valid()) return error(errc::invalid_argument, "gl::buffer::write", "the buffer is empty");
  if (!inside(offset, bytes, size_))
    return error(errc::invalid_argument, "gl::buffer::write",
                 range_text(offset, bytes) + " are outside the " + std::to_string(size_) + "-byte buffer");
  if (bytes == 0) return ok();
  if (data == nullptr) return error(errc::invalid_argument, "gl::buffer::write", "the source is null");
  const auto& fn = functions_of(*memory_);
  fn.NamedBufferSubData(name_, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes), data);
  return detail::check_gl_error(fn, "glNamedBufferSubData", range_text(offset, bytes));
}

buffer::buffer(buffer&& other) noexcept
    : memory_(std::move(other.memory_)), name_(std::exchange(other.name_, 0)), size_(std::exchange(other.size_, 0)) {}

buffer& buffer::operator=(buffer&& other) noexcept {
  if (this != &other) {
    reset();
    memory_ = std::move(other.memory_);
    name_ = std::exchange(other.name_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

buffer::~buffer() { reset(); }

// The context must be current. The buffer goes first, then this share of the memory object.
void buffer::reset() noexcept {
  if (name_ != 0 && memory_) functions_of(*memory_).DeleteBuffers(1, &name_);
  name_ = 0;
  size_ = 0;
  memory_.reset();
}

}  // namespace membridge::gl
