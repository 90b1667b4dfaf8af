// membridge/gl/chunked_buffer.hpp: GL's view of memory that grows chunk by chunk (a
// cuda::growable_buffer), kept in step as chunks are added and removed.
#pragma once

#include <membridge/core/chunked_view.hpp>
#include <membridge/core/result.hpp>
#include <membridge/gl/buffer.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/memory_object.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace membridge::gl {

/// How a chunked_buffer presents several chunks to GL.
enum class growth_mode : std::uint8_t {
  automatic = 0,  ///< per_chunk (sparse commits of imported memory lost the context on NVIDIA's GL; see docs/synchronization.md).
  sparse,         ///< One sparse buffer over the reserved size; each chunk committed with glNamedBufferPageCommitmentMemNV.
  per_chunk,      ///< The re-import path: one GL buffer per imported chunk (segments()); new chunks get new names.
};

/// A contiguous piece of the view and the GL buffer (its name) that covers it.
using buffer_segment = view_segment<unsigned int>;

namespace detail {
/// One imported chunk of a chunked_buffer (private to it): the memory object in sparse mode, the
/// chunk's own buffer in per-chunk mode.
using view_chunk = membridge::detail::view_chunk<std::shared_ptr<const memory_object>, buffer>;
}  // namespace detail

/// GL's view of a chunked allocation: chunks are imported in order, contiguous from offset 0.
///
/// Sparse mode (GL_ARB_sparse_buffer + GL_NV_memory_object_sparse): one buffer made with
/// GL_SPARSE_STORAGE_BIT_ARB over `reserved_size`; append() imports a chunk and commits it at its
/// offset, so name() never changes and shaders index across chunks as CUDA does. Nothing is copied.
/// Per-chunk mode (the re-import path, e.g. Mesa): each imported chunk gets its own GL buffer;
/// segments() lists them and a renderer binds one range per segment. The same calls work in both
/// modes; code that draws from segments() works in both.
///
/// segments(), size(), reserved_size(), chunk_count(), generation(), page_size() (GL_SPARSE_BUFFER_PAGE_SIZE_ARB
/// in sparse mode) and truncate() (sparse: decommits) come from chunked_view.
///
/// Every call needs the context current. Move-only; destruction deletes the buffers and memory objects.
class chunked_buffer : public chunked_view<chunked_buffer, detail::view_chunk, buffer_segment> {
 public:
  /// Creates an empty view (the sparse buffer, when sparse).
  /// Errors: invalid_argument for reserved_size 0; unsupported when sparse is asked for but missing
  /// or blocked (context_capabilities::sparse_growth_blocked says why).
  [[nodiscard]] static result<chunked_buffer> create(const context& context, std::size_t reserved_size,
                                                     growth_mode mode = growth_mode::automatic);

  /// An empty object.
  chunked_buffer() noexcept = default;
  /// Takes over `other`'s buffers; `other` becomes empty.
  chunked_buffer(chunked_buffer&& other) noexcept;
  /// Releases the held buffers, then takes over `other`'s.
  chunked_buffer& operator=(chunked_buffer&& other) noexcept;
  /// Deletes the buffers and memory objects.
  ~chunked_buffer();

  /// Imports the chunk behind `handle` (size `size`) and makes it visible at `offset`, which must equal
  /// size(). On error the view is unchanged.
  /// Ownership: borrows `handle` (a duplicate is imported: DuplicateHandle on Windows, which
  /// membridge closes after the import since GL never takes NT handles); the caller keeps its handle.
  /// Errors: invalid_argument for a wrong offset, size 0, exceeding reserved_size, or (sparse) a size
  /// or offset not a multiple of page_size(); the import's and commit's GL errors.
  [[nodiscard]] result<void> append(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size);

  /// The sparse buffer, or the only chunk's buffer; 0 in per-chunk mode with != 1 chunk.
  /// Ownership: owned by this object.
  [[nodiscard]] unsigned int name() const noexcept;
  /// True in sparse mode.
  [[nodiscard]] bool is_sparse() const noexcept { return sparse_name_ != 0; }
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  friend chunked_view;
  static constexpr const char* truncate_call = "gl::chunked_buffer::truncate";
  [[nodiscard]] unsigned int sparse_handle() const noexcept { return sparse_name_; }
  [[nodiscard]] static unsigned int chunk_handle(const detail::view_chunk& c) noexcept { return c.buffer.name(); }
  [[nodiscard]] result<void> drop_sparse_chunk(const detail::view_chunk& c) const;
  void reset() noexcept;

  std::shared_ptr<const detail::context_state> state_;
  unsigned int sparse_name_ = 0;
};

}  // namespace membridge::gl
