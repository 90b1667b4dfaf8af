#include "external_support.hpp"

#include "external_handle.hpp"
#include "vk_error.hpp"

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

result<VkSemaphore> create_timeline(const context_state& s, std::uint64_t initial_value,
                                    const VkExportSemaphoreCreateInfo* export_info) {
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.pNext = export_info;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = initial_value;
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sci.pNext = &type;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  if (const VkResult rc = s.table.vkCreateSemaphore(s.device, &sci, nullptr, &semaphore); rc != VK_SUCCESS)
    return make_error(rc, "vkCreateSemaphore", "a timeline semaphore");
  return semaphore;
}

}  // namespace membridge::vulkan::detail
