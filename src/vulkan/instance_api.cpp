#include <membridge/vulkan/instance_api.hpp>

#include <string>

namespace membridge::vulkan {

result<instance_api> instance_api::load(PFN_vkGetInstanceProcAddr gipa, VkInstance instance) {
  if (gipa == nullptr)
    return error(errc::driver_unavailable, "instance_api::load", "no vkGetInstanceProcAddr was given");
  if (instance == VK_NULL_HANDLE)
    return error(errc::invalid_argument, "instance_api::load", "the VkInstance is null");
  instance_api api;
  std::string missing;
  const auto get = [&](auto& member, const char* name) {
    member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(gipa(instance, name));
    if (member == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  get(api.vkGetDeviceProcAddr, "vkGetDeviceProcAddr");
  get(api.vkEnumeratePhysicalDevices, "vkEnumeratePhysicalDevices");
  get(api.vkGetPhysicalDeviceProperties, "vkGetPhysicalDeviceProperties");
  get(api.vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
  get(api.vkGetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2");
  get(api.vkGetPhysicalDeviceMemoryProperties, "vkGetPhysicalDeviceMemoryProperties");
  get(api.vkGetPhysicalDeviceQueueFamilyProperties, "vkGetPhysicalDeviceQueueFamilyProperties");
  get(api.vkEnumerateDeviceExtensionProperties, "vkEnumerateDeviceExtensionProperties");
  get(api.vkGetPhysicalDeviceExternalBufferProperties, "vkGetPhysicalDeviceExternalBufferProperties");
  get(api.vkGetPhysicalDeviceExternalSemaphoreProperties, "vkGetPhysicalDeviceExternalSemaphoreProperties");
  get(api.vkGetPhysicalDeviceImageFormatProperties2, "vkGetPhysicalDeviceImageFormatProperties2");
  get(api.vkGetPhysicalDeviceFormatProperties, "vkGetPhysicalDeviceFormatProperties");
  get(api.vkCreateDevice, "vkCreateDevice");
  get(api.vkDestroyInstance, "vkDestroyInstance");
  if (!missing.empty())
    return error(errc::driver_unavailable, "vkGetInstanceProcAddr",
                 "the instance lacks " + missing + " (membridge needs Vulkan 1.2)");
  return api;
}

}  // namespace membridge::vulkan
