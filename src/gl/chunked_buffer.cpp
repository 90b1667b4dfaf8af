#include <membridge/gl/chunked_buffer.hpp>

#include <membridge/core/chunk_append.hpp>

#include "detail/functions.hpp"
#include "detail/handles.hpp"

#include <limits>
#include <string>
#include <utility>

namespace membridge::gl {

namespace {

constexpr const char* create_call = "gl::chunked_buffer::create";
constexpr const char* append_call = "gl::chunked_buffer::append";
constexpr std::size_t max_gl_size = static_cast<std::size_t>(std::numeric_limits<GLsizeiptr>::max());

std::string range_text(std::size_t offset, std::size_t size) {
  return "bytes " + std::to_string(offset) + ".." + std::to_string(offset + size);
}

// Commits (memory != 0) or decommits `size` bytes at `offset` of the sparse buffer `name`.
result<void> commit(const detail::functions& fn, GLuint name, std::size_t offset, std::size_t size, GLuint memory,
                    bool on) {
  fn.NamedBufferPageCommitmentMemNV(name, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(size), memory, 0,
                                    on ? GL_TRUE : GL_FALSE);
  return detail::check_gl_error(fn, "glNamedBufferPageCommitmentMemNV",
                                std::string(on ? "committing " : "decommitting ") + range_text(offset, size));
}

// The sparse buffer over `reserved_size` bytes: storage reserved, nothing committed.
result<GLuint> make_sparse_buffer(const detail::functions& fn, std::size_t reserved_size) {
  GLuint name = 0;
  fn.CreateBuffers(1, &name);
  MEMBRIDGE_TRY(detail::check_gl_error(fn, "glCreateBuffers"));
  fn.NamedBufferStorage(name, static_cast<GLsizeiptr>(reserved_size), nullptr,
                        GL_SPARSE_STORAGE_BIT_ARB | GL_DYNAMIC_STORAGE_BIT);
  if (auto made = detail::check_gl_error(fn, "glNamedBufferStorage",
                                         "a sparse buffer of " + std::to_string(reserved_size) + " bytes");
      !made) {
    fn.DeleteBuffers(1, &name);
    return std::move(made).error();
  }
  return name;
}

}  // namespace

result<chunked_buffer> chunked_buffer::create(const context& context, std::size_t reserved_size, growth_mode mode) {
  if (!context.valid()) return error(errc::invalid_argument, create_call, "the GL context is empty");
  if (reserved_size == 0) return error(errc::invalid_argument, create_call, "reserved_size is 0");
  if (reserved_size > max_gl_size) return error(errc::invalid_argument, create_call, "reserved_size exceeds GLsizeiptr");
  const auto& caps = context.capabilities();
  const bool can_sparse = caps.sparse_growth() && caps.sparse_page_size > 0;
  if (mode == growth_mode::sparse && !can_sparse) {
    if (!caps.sparse_growth_blocked.empty())
      return error(errc::unsupported, create_call,
                   caps.sparse_growth_blocked + "; use growth_mode::automatic (one buffer per chunk)");
    return error(errc::unsupported, create_call,
                 "sparse growth needs GL_ARB_sparse_buffer and GL_NV_memory_object_sparse (" + caps.renderer +
                     " lacks one); use growth_mode::automatic to fall back to one buffer per chunk");
  }
  chunked_buffer out;
  out.state_ = context.state();
  out.reserved_size_ = reserved_size;
  // automatic is per-chunk: the only driver seen with both sparse extensions (NVIDIA's) loses the
  // context at the first commit of imported memory (context_capabilities::sparse_growth_blocked).
  if (mode != growth_mode::sparse) return out;

  MEMBRIDGE_TRY_ASSIGN(out.sparse_name_, make_sparse_buffer(out.state_->fn, reserved_size));
  out.page_size_ = caps.sparse_page_size;
  return out;
}

result<void> chunked_buffer::append(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size) {
  if (!valid()) return error(errc::invalid_argument, append_call, "the chunked_buffer is empty");
  MEMBRIDGE_TRY(check_chunk_append(append_call, size_, reserved_size_, offset, size));
  const context ctx(state_);
  const memory_import_info info{.size = size, .dedicated = false};
  detail::view_chunk added{{}, {}, offset, size};
  if (is_sparse()) {
    const bool ends_buffer = offset + size == reserved_size_;
    if (offset % page_size_ != 0 || (size % page_size_ != 0 && !ends_buffer))
      return error(errc::invalid_argument, append_call,
                   "sparse chunks must be multiples of the sparse page size (" + std::to_string(page_size_) + " bytes)");
    MEMBRIDGE_TRY_ASSIGN(os::shareable_handle copy, detail::duplicate(handle));
    MEMBRIDGE_TRY_ASSIGN(auto memory, memory_object::import(ctx, std::move(copy), info));
    MEMBRIDGE_TRY(commit(state_->fn, sparse_name_, offset, size, memory.name(), true));
    added.memory = std::make_shared<const memory_object>(std::move(memory));
  } else {
    MEMBRIDGE_TRY_ASSIGN(added.buffer, buffer::import(ctx, handle, info, size));
  }
  add_chunk(std::move(added));
  return ok();
}

result<void> chunked_buffer::drop_sparse_chunk(const detail::view_chunk& c) const {
  return commit(state_->fn, sparse_name_, c.offset, c.size, c.memory->name(), false);
}

unsigned int chunked_buffer::name() const noexcept {
  if (is_sparse()) return sparse_name_;
  return chunks_.size() == 1 ? chunks_.front().buffer.name() : 0;
}

chunked_buffer::chunked_buffer(chunked_buffer&& other) noexcept
    : chunked_view(std::move(other)),
      state_(std::move(other.state_)),
      sparse_name_(std::exchange(other.sparse_name_, 0)) {}

chunked_buffer& chunked_buffer::operator=(chunked_buffer&& other) noexcept {
  if (this != &other) {
    reset();
    chunked_view::operator=(std::move(other));
    state_ = std::move(other.state_);
    sparse_name_ = std::exchange(other.sparse_name_, 0);
  }
  return *this;
}

chunked_buffer::~chunked_buffer() { reset(); }

// The context must be current. The sparse buffer goes first, then the memory committed to it.
void chunked_buffer::reset() noexcept {
  if (sparse_name_ != 0 && state_) state_->fn.DeleteBuffers(1, &sparse_name_);
  sparse_name_ = 0;
  clear_chunks();
  state_.reset();
}

}  // namespace membridge::gl
