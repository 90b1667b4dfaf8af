// membridge/gl/buffer.hpp: a GL buffer object whose storage is imported memory (zero copy).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/memory_object.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <memory>

namespace membridge::gl {

/// A GL buffer bound to (part of) a memory object with glNamedBufferStorageMemEXT: what CUDA writes
/// there, GL reads, and the other way round, with no copy. Ordering between the APIs is the caller's
/// (gl::semaphore, sync::gl_frame_timeline, or a host wait).
///
/// Move-only; the destructor deletes the buffer name, then releases its memory object (context current).
class buffer {
 public:
  /// Imports the allocation behind `handle` (an fd on Linux, an NT handle on Windows; the caller keeps
  /// it) and makes a buffer of `size` bytes over it starting at `memory_offset`.
  /// Errors: invalid_argument for an empty handle, size 0, or memory_offset + size > info.size; the
  /// errors of memory_object::import and of glNamedBufferStorageMemEXT.
  /// Ownership: borrows `handle` (a duplicate is imported: DuplicateHandle on Windows, which
  /// membridge closes after the import since GL never takes NT handles); the buffer owns its memory object and GL name.
  [[nodiscard]] static result<buffer> import(const context& context, os::borrowed_shareable_handle handle,
                                             const memory_import_info& info,
                                             std::size_t size, std::size_t memory_offset = 0);

  /// Makes a buffer over an existing memory object (shared: several buffers may use one object).
  /// Errors: invalid_argument for an invalid memory object, size 0 or a range outside it; unsupported
  /// for a nonzero memory_offset on Mesa llvmpipe (it ignores the offset and would show the bytes at 0);
  /// GL errors (llvmpipe also answers GL_OUT_OF_MEMORY unless the memory holds the buffer plus 48 bytes).
  /// Ownership: shares `memory` (kept alive while this buffer lives).
  [[nodiscard]] static result<buffer> create(std::shared_ptr<const memory_object> memory, std::size_t size,
                                             std::size_t memory_offset = 0);

  /// An empty object.
  buffer() noexcept = default;
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  /// Takes over `other`'s buffer; `other` becomes empty.
  buffer(buffer&& other) noexcept;
  /// Deletes the held buffer, then takes over `other`'s.
  buffer& operator=(buffer&& other) noexcept;
  /// glDeleteBuffers, then the memory object's share is dropped.
  ~buffer();

  /// True when a buffer is held.
  [[nodiscard]] bool valid() const noexcept { return name_ != 0; }
  /// The GL buffer name (bind it as SSBO, vertex buffer, ...). Ownership: owned by this object.
  [[nodiscard]] unsigned int name() const noexcept { return name_; }
  /// Bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The memory object it is bound to.
  [[nodiscard]] const std::shared_ptr<const memory_object>& memory() const noexcept { return memory_; }

  /// Copies the range into a GL-owned staging buffer (glCopyNamedBufferSubData) and reads that back
  /// (glGetNamedBufferSubData) into `out`: tests and tools; it waits for GL work. (Reading the buffer
  /// directly returned stale bytes on NVIDIA once the other API had rewritten the memory.)
  /// Errors: invalid_argument for a range outside the buffer; GL errors.
  [[nodiscard]] result<void> read(std::size_t offset, void* out, std::size_t bytes) const;
  /// glNamedBufferSubData from `data`. Errors: as read().
  [[nodiscard]] result<void> write(std::size_t offset, const void* data, std::size_t bytes) const;

 private:
  void reset() noexcept;
  std::shared_ptr<const memory_object> memory_;
  unsigned int name_ = 0;
  std::size_t size_ = 0;
};

}  // namespace membridge::gl
