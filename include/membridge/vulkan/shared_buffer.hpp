// membridge/vulkan/shared_buffer.hpp: a VkBuffer over memory another API exported (a CUDA VMM chunk).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/imported_memory.hpp>

#include <vulkan/vulkan_core.h>

#include <cstddef>

namespace membridge::vulkan {

/// The usage every shared buffer gets unless the caller says otherwise: copies, storage, vertex data.
inline constexpr VkBufferUsageFlags default_buffer_usage =
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
    VK_BUFFER_USAGE_VERTEX_BUFFER_BIT;

/// How to import a buffer.
struct buffer_import_info {
  std::size_t allocation_size = 0;  ///< Size of the exported allocation (the chunk's size).
  std::size_t size = 0;             ///< The VkBuffer's size; 0 means allocation_size.
  VkBufferUsageFlags usage = default_buffer_usage;  ///< Buffer usage.
};

/// A VkBuffer bound to imported memory (offset 0): CUDA and Vulkan see the same bytes, no copy.
///
/// Move-only; destruction destroys the buffer, then frees the imported memory. The GPU must be done
/// with the buffer (wait for a fence or timeline value first).
class shared_buffer {
 public:
  /// Creates an external-memory VkBuffer, imports `handle` (dedicated when the driver requires it) and binds.
  /// Ownership: borrows `handle`; the caller keeps it (Linux: a duplicate of the fd is imported;
  /// Windows: the NT handle itself, never taken by Vulkan; see imported_memory::import).
  /// Errors: invalid_argument when size exceeds allocation_size or the handle is rejected; unsupported
  /// when the device cannot import opaque fds / NT handles for this usage; out_of_memory.
  [[nodiscard]] static result<shared_buffer> import(const device_context& context, os::borrowed_shareable_handle handle,
                                                    const buffer_import_info& info);

  /// An empty buffer.
  shared_buffer() noexcept = default;
  shared_buffer(const shared_buffer&) = delete;
  shared_buffer& operator=(const shared_buffer&) = delete;
  /// Takes over `other`'s buffer and memory; `other` becomes empty.
  shared_buffer(shared_buffer&& other) noexcept;
  /// Destroys the held buffer, then takes over `other`'s.
  shared_buffer& operator=(shared_buffer&& other) noexcept;
  /// Destroys the buffer and frees the memory.
  ~shared_buffer();

  /// The buffer. Ownership: owned by this object.
  [[nodiscard]] VkBuffer get() const noexcept { return buffer_; }
  /// The buffer's size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The imported memory behind it.
  [[nodiscard]] const imported_memory& memory() const noexcept { return memory_; }
  /// True when a buffer is held.
  [[nodiscard]] bool valid() const noexcept { return buffer_ != VK_NULL_HANDLE; }

 private:
  void reset() noexcept;

  std::shared_ptr<const detail::context_state> context_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  imported_memory memory_;
  std::size_t size_ = 0;
};

}  // namespace membridge::vulkan
