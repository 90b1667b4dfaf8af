// Private: what a device_context and every object made from it share.
#pragma once

#include <membridge/core/device_uuid.hpp>
#include <membridge/os/dynamic_library.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/instance_api.hpp>

#include <volk.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace membridge::vulkan::detail {

/// Receives validation messages of an owned instance (its address is the messenger's user data).
struct validation_sink {
  std::function<void(std::string_view)> callback;
  std::atomic<std::uint64_t> count{0};
};

/// Fills `table` with the device functions of `device` (volk's generated loader, no globals).
void load_device_table(VolkDeviceTable& table, VkDevice device, PFN_vkGetDeviceProcAddr get_device_proc_addr) noexcept;

struct context_state {
  context_state() = default;
  context_state(const context_state&) = delete;
  context_state& operator=(const context_state&) = delete;
  ~context_state();

  VolkDeviceTable table{};
  instance_api instance_fns{};
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  // Identity: the UUID CUDA reports too, the device name, the driver's own description, the API version.
  device_uuid uuid;
  std::string name;
  std::string driver_info;
  std::uint32_t api_version = 0;
  // The queues membridge submits to (graphics, transfer, sparse binding).
  queue_info graphics;
  queue_info transfer;
  queue_info sparse;
  context_capabilities caps{};
  std::vector<std::string> missing_extensions;
  VkPhysicalDeviceMemoryProperties memory{};
  VkPhysicalDeviceProperties properties{};

  // Only for contexts made by create(): destroyed with the state, in reverse order.
  bool owns = false;
  os::dynamic_library loader;
  std::unique_ptr<validation_sink> validation;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger = nullptr;
};

/// Reads identity, memory properties and capabilities of `s.physical_device` into `s`.
/// `enabled` lists the device extensions that are enabled.
void read_device_facts(context_state& s, const std::vector<std::string>& enabled, const enabled_features& features);

}  // namespace membridge::vulkan::detail
