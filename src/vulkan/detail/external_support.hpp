// Private: can a buffer with these flags be imported from the platform's handle (opaque fd / NT handle)?
#pragma once

#include "context_state.hpp"

#include <membridge/core/result.hpp>

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

}  // namespace membridge::vulkan::detail
