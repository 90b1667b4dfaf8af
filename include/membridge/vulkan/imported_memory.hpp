// membridge/vulkan/imported_memory.hpp: VkDeviceMemory imported from another API's opaque fd (Linux)
// or opaque NT handle (Windows).
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace membridge::vulkan {

/// What to import and for which resource.
struct memory_import_info {
  std::size_t size = 0;              ///< The allocation's size: what the exporter allocated (e.g. a VMM chunk).
  std::uint32_t memory_type_bits = ~0U;  ///< Types the resource accepts (VkMemoryRequirements::memoryTypeBits).
  bool dedicated = false;            ///< Import as a dedicated allocation of `buffer` or `image`.
  VkBuffer buffer = VK_NULL_HANDLE;  ///< The resource of a dedicated import. Ownership: borrowed.
  VkImage image = VK_NULL_HANDLE;    ///< The resource of a dedicated import. Ownership: borrowed.
};

/// VkDeviceMemory imported from an opaque POSIX fd (VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT) on
/// Linux or an opaque NT handle (VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_BIT) on Windows, such
/// as a CUDA VMM chunk's. The memory type is chosen explicitly: device-local types without host
/// visibility first (a CUDA fd is also offered host-memory types, which would be wrong), then other
/// device-local ones.
///
/// Move-only. Destruction frees the memory (vkFreeMemory); the exporter's memory lives on while its
/// own handle or other imports exist. The caller must make sure the GPU no longer uses it.
class imported_memory {
 public:
  /// Imports the memory behind `handle`.
  /// Ownership: borrows `handle`; the caller's handle is never closed. Linux: imports a close-on-exec
  /// duplicate of the fd, which Vulkan takes on success (a failure closes it). Windows: imports the
  /// NT handle itself, which Vulkan never takes (NT handle imports do not transfer ownership): the
  /// caller may close its handle right after this returns; the memory stays alive.
  /// Errors: invalid_argument for size 0, an invalid handle or one Vulkan rejects
  /// (VK_ERROR_INVALID_EXTERNAL_HANDLE, e.g. another GPU's memory); unsupported without
  /// VK_KHR_external_memory_fd (Linux) / VK_KHR_external_memory_win32 (Windows) or a device-local
  /// type in `memory_type_bits`; out_of_memory.
  [[nodiscard]] static result<imported_memory> import(const device_context& context,
                                                      os::borrowed_shareable_handle handle,
                                                      const memory_import_info& info);

  /// An empty object.
  imported_memory() noexcept = default;
  imported_memory(const imported_memory&) = delete;
  imported_memory& operator=(const imported_memory&) = delete;
  /// Takes over `other`'s memory; `other` becomes empty.
  imported_memory(imported_memory&& other) noexcept;
  /// Frees the held memory, then takes over `other`'s.
  imported_memory& operator=(imported_memory&& other) noexcept;
  /// Frees the memory.
  ~imported_memory();

  /// The memory. Ownership: owned by this object.
  [[nodiscard]] VkDeviceMemory get() const noexcept { return memory_; }
  /// The imported size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The memory type index chosen.
  [[nodiscard]] std::uint32_t memory_type() const noexcept { return type_; }
  /// True for a dedicated import.
  [[nodiscard]] bool dedicated() const noexcept { return dedicated_; }
  /// True when memory is held.
  [[nodiscard]] bool valid() const noexcept { return memory_ != VK_NULL_HANDLE; }

 private:
  void reset() noexcept;

  std::shared_ptr<const detail::context_state> context_;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  std::size_t size_ = 0;
  std::uint32_t type_ = 0;
  bool dedicated_ = false;
};

}  // namespace membridge::vulkan
