// samples/common/vk_image.hpp: the create-info of the apps' 2D colour images (the renderers' frame
// images, the window relay's staging image).
#pragma once

#include <vulkan/vulkan_core.h>

namespace apps {

/// A 2D, single-level, single-sample, optimally tiled, exclusive image of `format` and `extent` for
/// `usage`, starting in VK_IMAGE_LAYOUT_UNDEFINED.
[[nodiscard]] inline VkImageCreateInfo colour_image_info(VkFormat format, VkExtent2D extent,
                                                         VkImageUsageFlags usage) noexcept {
  VkImageCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO;
  info.imageType = VK_IMAGE_TYPE_2D;
  info.format = format;
  info.extent = {extent.width, extent.height, 1};
  info.mipLevels = 1;
  info.arrayLayers = 1;
  info.samples = VK_SAMPLE_COUNT_1_BIT;
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  return info;
}

}  // namespace apps
