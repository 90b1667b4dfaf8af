// Private: VkResult -> membridge::error.
#pragma once

#include <membridge/core/error.hpp>

#include <vulkan/vulkan_core.h>

#include <source_location>
#include <string>
#include <string_view>

namespace membridge::vulkan::detail {

/// The enumerant's name, e.g. "VK_ERROR_OUT_OF_DEVICE_MEMORY".
[[nodiscard]] std::string_view result_name(VkResult result) noexcept;

/// The category a VkResult falls in.
[[nodiscard]] errc category_of(VkResult result) noexcept;

/// An error for a failed Vulkan call.
[[nodiscard]] error make_error(VkResult result, std::string call, std::string context = {},
                               std::source_location where = std::source_location::current());

}  // namespace membridge::vulkan::detail
