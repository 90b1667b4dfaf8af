// membridge/vulkan/chunked_buffer.hpp: Vulkan's view of memory that grows chunk by chunk (a
// cuda::growable_buffer), kept in step as chunks are added and removed.
#pragma once

#include <membridge/core/chunked_view.hpp>
#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/imported_memory.hpp>
#include <membridge/vulkan/shared_buffer.hpp>

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace membridge::vulkan {

/// How a chunked_buffer presents several chunks to Vulkan.
enum class growth_mode : std::uint8_t {
  automatic = 0,  ///< sparse when the context has sparse binding, else per_chunk.
  sparse,         ///< One sparse VkBuffer over the reserved size; each chunk bound with vkQueueBindSparse.
  per_chunk,      ///< Fallback: one VkBuffer per chunk (segments()); handles of new chunks are new.
};

/// How to create a chunked_buffer.
struct chunked_buffer_info {
  std::size_t reserved_size = 0;  ///< The most bytes it will ever hold (the CUDA buffer's max_size()).
  VkBufferUsageFlags usage = default_buffer_usage;  ///< Usage of every VkBuffer.
  growth_mode mode = growth_mode::automatic;        ///< Sparse or per-chunk.
};

/// A contiguous piece of the view and the VkBuffer that covers it.
using buffer_segment = view_segment<VkBuffer>;

namespace detail {
/// One imported chunk of a chunked_buffer (private to it): the memory bound in sparse mode, the
/// chunk's own buffer in per-chunk mode.
using view_chunk = membridge::detail::view_chunk<imported_memory, shared_buffer>;
}  // namespace detail

/// Vulkan's view of a chunked allocation: chunks are imported in order, contiguous from offset 0.
///
/// Sparse mode (the normal case on NVIDIA): one VkBuffer created with SPARSE_BINDING and
/// SPARSE_RESIDENCY over `reserved_size`; append() imports a chunk and binds it at its offset, so
/// buffer() never changes and shaders index across chunk boundaries as in CUDA. Nothing is copied.
/// Per-chunk mode (no sparse binding, e.g. lavapipe): each chunk gets its own VkBuffer; segments()
/// lists them, and a shader binds one descriptor per segment. buffer() is the single buffer only
/// while there is one chunk. The same calls work in both modes; code that draws from segments()
/// works in both.
///
/// append() waits on the host for the bind to finish (1-2 ms per chunk on an H100, mostly the
/// import): call it off the render thread. It submits to the context's sparse queue, which the caller
/// must not use from another thread meanwhile.
///
/// segments(), size(), reserved_size(), chunk_count(), generation(), page_size() (the sparse page size in
/// sparse mode) and truncate() (sparse: unbinds, waiting on the host as append() does) come from
/// chunked_view.
///
/// Move-only; destruction destroys the buffers and frees the imports. The GPU must be done with them.
class chunked_buffer : public chunked_view<chunked_buffer, detail::view_chunk, buffer_segment> {
 public:
  /// Creates an empty view (the sparse buffer, when sparse).
  /// Errors: invalid_argument for reserved_size 0; unsupported when sparse is asked for but missing.
  [[nodiscard]] static result<chunked_buffer> create(const device_context& context, const chunked_buffer_info& info);

  /// An empty object.
  chunked_buffer() noexcept = default;
  /// Takes over `other`'s buffers; `other` becomes empty.
  chunked_buffer(chunked_buffer&& other) noexcept;
  /// Releases the held buffers, then takes over `other`'s.
  chunked_buffer& operator=(chunked_buffer&& other) noexcept;
  /// Destroys the buffers and frees the imported memory.
  ~chunked_buffer();

  /// Imports the chunk behind `handle` (size `size`) and makes it visible at `offset`, which must equal
  /// size() (chunks are appended in order). On error the view is unchanged.
  /// Ownership: borrows `handle`; the caller keeps it (Linux: a duplicate of the fd is imported;
  /// Windows: the NT handle itself, never taken by Vulkan; see imported_memory::import).
  /// Errors: invalid_argument for a wrong offset, size 0, exceeding reserved_size, or a size/offset
  /// not a multiple of the sparse page size; the import's and bind's errors.
  [[nodiscard]] result<void> append(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size);

  /// The sparse buffer, or the only chunk's buffer; VK_NULL_HANDLE in per-chunk mode with != 1 chunk.
  /// Ownership: owned by this object.
  [[nodiscard]] VkBuffer buffer() const noexcept;
  /// True in sparse mode.
  [[nodiscard]] bool is_sparse() const noexcept { return sparse_buffer_ != VK_NULL_HANDLE; }
  /// True when created.
  [[nodiscard]] bool valid() const noexcept { return context_ != nullptr; }

 private:
  friend chunked_view;
  static constexpr const char* truncate_call = "chunked_buffer::truncate";
  [[nodiscard]] VkBuffer sparse_handle() const noexcept { return sparse_buffer_; }
  [[nodiscard]] static VkBuffer chunk_handle(const detail::view_chunk& c) noexcept { return c.buffer.get(); }
  [[nodiscard]] result<void> drop_sparse_chunk(const detail::view_chunk& c) const {
    return bind_sparse(c.offset, c.size, VK_NULL_HANDLE);
  }
  [[nodiscard]] result<void> append_sparse(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size);
  [[nodiscard]] result<void> append_per_chunk(os::borrowed_shareable_handle handle, std::size_t offset, std::size_t size);
  [[nodiscard]] result<void> bind_sparse(std::size_t offset, std::size_t size, VkDeviceMemory memory) const;
  [[nodiscard]] device_context context_from_state() const { return device_context(context_); }
  void reset() noexcept;

  std::shared_ptr<const detail::context_state> context_;
  VkBuffer sparse_buffer_ = VK_NULL_HANDLE;
  std::uint32_t sparse_type_bits_ = 0;
  VkBufferUsageFlags usage_ = 0;
};

}  // namespace membridge::vulkan
