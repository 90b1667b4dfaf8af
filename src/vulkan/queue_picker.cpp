// pick_queues: the queue families and VkDeviceQueueCreateInfo array for an engine-made device.
#include <membridge/vulkan/queue_picker.hpp>

#include <algorithm>
#include <utility>

namespace membridge::vulkan {

result<queue_selection> pick_queues(const instance_api& functions, VkPhysicalDevice physical_device, bool sparse) {
  constexpr const char* call = "vulkan::pick_queues";
  if (physical_device == VK_NULL_HANDLE) return error(errc::invalid_argument, call, "the physical device is null");
  if (functions.vkGetPhysicalDeviceQueueFamilyProperties == nullptr)
    return error(errc::invalid_argument, call, "the instance functions are not loaded (instance_api::load)");
  std::uint32_t n = 0;
  functions.vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  functions.vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &n, families.data());
  families.resize(n);

  queue_selection out;
  for (std::uint32_t i = 0; i < n; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if (families[i].queueCount == 0) continue;
    if ((f & VK_QUEUE_GRAPHICS_BIT) != 0 && (f & VK_QUEUE_COMPUTE_BIT) != 0 &&
        out.graphics_family == VK_QUEUE_FAMILY_IGNORED)
      out.graphics_family = i;
    if ((f & VK_QUEUE_TRANSFER_BIT) != 0 && (f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) == 0 &&
        out.transfer_family == VK_QUEUE_FAMILY_IGNORED)
      out.transfer_family = i;
  }
  if (out.graphics_family == VK_QUEUE_FAMILY_IGNORED)
    return error(errc::unsupported, call, "the device has no queue family with both graphics and compute");

  if (sparse) {
    // Another family first (a sparse-only or transfer+sparse family), then the graphics family.
    for (std::uint32_t i = 0; i < n; ++i)
      if (i != out.graphics_family && families[i].queueCount > 0 &&
          (families[i].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT) != 0) {
        out.sparse_family = i;
        break;
      }
    if (out.sparse_family == VK_QUEUE_FAMILY_IGNORED &&
        (families[out.graphics_family].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT) != 0) {
      out.sparse_family = out.graphics_family;
      out.sparse_index = families[out.graphics_family].queueCount >= 2 ? 1 : 0;
    }
  }

  // One create info per family, with as many queues as the highest index used + 1.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> wanted;  // family, queue count
  const auto want = [&](std::uint32_t family, std::uint32_t count) {
    if (family == VK_QUEUE_FAMILY_IGNORED) return;
    auto it = std::find_if(wanted.begin(), wanted.end(), [&](const auto& w) { return w.first == family; });
    if (it == wanted.end())
      wanted.emplace_back(family, count);
    else
      it->second = std::max(it->second, count);
  };
  want(out.graphics_family, 1);
  want(out.transfer_family, 1);
  want(out.sparse_family, out.sparse_index + 1);
  std::uint32_t most = 0;
  for (const auto& w : wanted) most = std::max(most, w.second);
  out.priorities.assign(most, 1.0F);
  for (const auto& [family, count] : wanted) {
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = count;
    q.pQueuePriorities = out.priorities.data();
    out.queue_create_infos.push_back(q);
  }
  return out;
}

void queue_selection::fill(adopt_info& info, VkDevice device, PFN_vkGetDeviceQueue get_device_queue) const {
  const auto get = [&](std::uint32_t family, std::uint32_t index) {
    queue_info q;
    if (family == VK_QUEUE_FAMILY_IGNORED || device == VK_NULL_HANDLE || get_device_queue == nullptr) return q;
    q.family = family;
    q.index = index;
    get_device_queue(device, family, index, &q.queue);
    return q;
  };
  info.graphics = get(graphics_family, 0);
  info.transfer = get(transfer_family, 0);
  info.sparse = get(sparse_family, sparse_index);
}

}  // namespace membridge::vulkan
