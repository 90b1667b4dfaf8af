// samples/common/vk_error.hpp: membridge errors from VkResult codes for the apps (the library's
// vulkan module has its own), and a render-pass dependency the renderers share.
#pragma once

#include <membridge/core/error.hpp>

#include <vulkan/vulkan_core.h>

#include <source_location>
#include <string>
#include <string_view>

namespace apps {

/// The enumerant name of `result`, e.g. "VK_ERROR_OUT_OF_DEVICE_MEMORY"; "VkResult <n>" for others.
[[nodiscard]] std::string vk_result_name(VkResult result);

/// The category of a failed VkResult: out_of_memory, device_lost, timeout, unsupported,
/// driver_unavailable (VK_ERROR_INITIALIZATION_FAILED, VK_ERROR_INCOMPATIBLE_DRIVER) or internal.
[[nodiscard]] membridge::errc vk_category(VkResult result) noexcept;

/// The render-pass dependency that makes subpass 0's colour writes visible to transfer reads after
/// the pass (a blit into a window or a read-back), for renderers whose images end TRANSFER_SRC.
inline constexpr VkSubpassDependency colour_writes_before_transfer{
    0, VK_SUBPASS_EXTERNAL, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
    VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT, 0};

/// An error with source vulkan for the failed call `call` (e.g. "vkCreateImage") and its `context`.
[[nodiscard]] membridge::error vk_error(VkResult result, std::string call, std::string context = {},
                                        std::source_location where = std::source_location::current());

}  // namespace apps

namespace particles {
// The names sample 01's renderer and bench/frame_loop use (they lived in sample 01 before the apps layer).
using apps::vk_category;
using apps::vk_error;
using apps::vk_result_name;
}  // namespace particles
