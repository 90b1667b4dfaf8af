// Private: can a buffer with these flags be imported from the platform's handle (opaque fd / NT handle)?
// And the timeline semaphore both platforms' exportable semaphores are made from.
#pragma once

#include "context_state.hpp"

#include <membridge/core/result.hpp>

#include <cstdint>

namespace membridge::vulkan::detail {

/// What the driver says about importing the platform's handle for a buffer.
struct external_buffer_support {
  bool importable = false;      ///< IMPORTABLE is set.
  bool dedicated_only = false;  ///< DEDICATED_ONLY is set.
};

/// Asks vkGetPhysicalDeviceExternalBufferProperties for OPAQUE_FD (Linux) / OPAQUE_WIN32 (Windows)
/// with `flags` and `usage`.
[[nodiscard]] external_buffer_support query_external_buffer(const context_state& s, VkBufferCreateFlags flags,
                                                            VkBufferUsageFlags usage) noexcept;

/// vkCreateSemaphore of a timeline semaphore with `initial_value`, exportable when `export_info` is
/// not null (the platform's export info with its own pNext chain, from src/vulkan/posix or win32).
/// Ownership: the caller owns the semaphore (vkDestroySemaphore); `export_info` stays the caller's.
[[nodiscard]] result<VkSemaphore> create_timeline(const context_state& s, std::uint64_t initial_value,
                                                  const VkExportSemaphoreCreateInfo* export_info);

}  // namespace membridge::vulkan::detail
