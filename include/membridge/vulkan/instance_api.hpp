// membridge/vulkan/instance_api.hpp: the instance-level Vulkan functions membridge calls.
#pragma once

#include <membridge/core/result.hpp>

#include <vulkan/vulkan_core.h>

namespace membridge::vulkan {

/// Instance-level (and physical-device) functions, loaded through the caller's vkGetInstanceProcAddr.
/// Every member is loaded or load() fails; none is a global.
struct instance_api {
  PFN_vkGetDeviceProcAddr vkGetDeviceProcAddr = nullptr;                                    ///< Loads device functions.
  PFN_vkEnumeratePhysicalDevices vkEnumeratePhysicalDevices = nullptr;                      ///< Lists GPUs.
  PFN_vkGetPhysicalDeviceProperties vkGetPhysicalDeviceProperties = nullptr;                ///< Limits, name.
  PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2 = nullptr;              ///< UUID, driver.
  PFN_vkGetPhysicalDeviceFeatures2 vkGetPhysicalDeviceFeatures2 = nullptr;                  ///< Features.
  PFN_vkGetPhysicalDeviceMemoryProperties vkGetPhysicalDeviceMemoryProperties = nullptr;    ///< Heaps, types.
  PFN_vkGetPhysicalDeviceQueueFamilyProperties vkGetPhysicalDeviceQueueFamilyProperties = nullptr;  ///< Queues.
  PFN_vkEnumerateDeviceExtensionProperties vkEnumerateDeviceExtensionProperties = nullptr;  ///< Extensions.
  PFN_vkGetPhysicalDeviceExternalBufferProperties vkGetPhysicalDeviceExternalBufferProperties = nullptr;  ///< Import.
  PFN_vkGetPhysicalDeviceExternalSemaphoreProperties vkGetPhysicalDeviceExternalSemaphoreProperties = nullptr;  ///< Export.
  PFN_vkGetPhysicalDeviceImageFormatProperties2 vkGetPhysicalDeviceImageFormatProperties2 = nullptr;  ///< Images.
  PFN_vkGetPhysicalDeviceFormatProperties vkGetPhysicalDeviceFormatProperties = nullptr;    ///< Formats.
  PFN_vkCreateDevice vkCreateDevice = nullptr;                                              ///< create() only.
  PFN_vkDestroyInstance vkDestroyInstance = nullptr;                                        ///< create() only.

  /// Loads every member for `instance`.
  /// Errors: driver_unavailable when `gipa` is null or a function is missing (instance below 1.1).
  [[nodiscard]] static result<instance_api> load(PFN_vkGetInstanceProcAddr gipa, VkInstance instance);
};

}  // namespace membridge::vulkan
