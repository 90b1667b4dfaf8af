#include "external_support.hpp"

#include "external_handle.hpp"

namespace membridge::vulkan::detail {

external_buffer_support query_external_buffer(const context_state& s, VkBufferCreateFlags flags,
                                              VkBufferUsageFlags usage) noexcept {
  VkPhysicalDeviceExternalBufferInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO};
  info.flags = flags;
  info.usage = usage;
  info.handleType = memory_handle_type;
  VkExternalBufferProperties props{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  s.instance_fns.vkGetPhysicalDeviceExternalBufferProperties(s.physical_device, &info, &props);
  const VkExternalMemoryFeatureFlags f = props.externalMemoryProperties.externalMemoryFeatures;
  return {(f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) != 0, (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) != 0};
}

}  // namespace membridge::vulkan::detail
