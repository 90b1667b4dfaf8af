// membridge/vulkan/queue_picker.hpp: the queues to ask for when an engine creates a device for membridge.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/instance_api.hpp>

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <vector>

namespace membridge::vulkan {

/// Which queue families and queues to use, and the VkDeviceQueueCreateInfo array that asks for them.
///
/// `queue_create_infos` (and the priorities they point to) are owned by this object: keep it alive
/// until vkCreateDevice returns. Move-only; moving keeps those pointers valid (vector storage moves).
struct queue_selection {
  /// No families chosen, no create infos.
  queue_selection() = default;
  queue_selection(const queue_selection&) = delete;
  queue_selection& operator=(const queue_selection&) = delete;
  /// Takes over `other`'s arrays (the create infos keep pointing at the moved priorities).
  queue_selection(queue_selection&&) noexcept = default;
  /// Takes over `other`'s arrays (the create infos keep pointing at the moved priorities).
  queue_selection& operator=(queue_selection&&) noexcept = default;
  /// Frees the arrays.
  ~queue_selection() = default;

  /// A family with graphics and compute (the first one). Always set.
  std::uint32_t graphics_family = VK_QUEUE_FAMILY_IGNORED;
  /// A transfer family without graphics or compute (a DMA engine), or VK_QUEUE_FAMILY_IGNORED.
  std::uint32_t transfer_family = VK_QUEUE_FAMILY_IGNORED;
  /// A family with sparse binding, or VK_QUEUE_FAMILY_IGNORED (none, or not asked for). A family
  /// other than graphics_family is preferred.
  std::uint32_t sparse_family = VK_QUEUE_FAMILY_IGNORED;
  /// The queue index within sparse_family: 1 when sparse binds share the graphics family and it has a
  /// second queue (so growth does not submit to the render queue), else 0.
  std::uint32_t sparse_index = 0;
  /// True when sparse binds use the graphics queue itself (same family, index 0): the engine must not
  /// submit to it while membridge binds (see device_context's queue note).
  [[nodiscard]] bool sparse_shares_graphics_queue() const noexcept {
    return sparse_family != VK_QUEUE_FAMILY_IGNORED && sparse_family == graphics_family && sparse_index == 0;
  }

  /// One entry per family used, queue counts covering the indices above, all priorities 1.0.
  /// Ownership: pQueuePriorities point into `priorities`, owned by this object.
  std::vector<VkDeviceQueueCreateInfo> queue_create_infos;
  /// The priorities the create infos point to. Ownership: owned by this object.
  std::vector<float> priorities;

  /// Fills `info.graphics`, `info.transfer` and `info.sparse` from `device`'s queues (unused roles stay
  /// empty, so adopt() defaults them), with the engine's `vkGetDeviceQueue`.
  /// Ownership: the queues are owned by `device`; `info` only borrows them.
  void fill(adopt_info& info, VkDevice device, PFN_vkGetDeviceQueue get_device_queue) const;
};

/// Picks the queues membridge would use on `physical_device`: a graphics+compute family, a
/// transfer-only family if any, and (when `sparse`) a sparse-binding family, preferring one that is
/// not the graphics family, else a second queue of the graphics family, else its first queue.
/// Errors: invalid_argument for a null physical device or unloaded `functions`; unsupported when no
/// family has both graphics and compute.
/// Ownership: borrows `functions` and `physical_device` during the call; the result owns its arrays.
[[nodiscard]] result<queue_selection> pick_queues(const instance_api& functions, VkPhysicalDevice physical_device,
                                                  bool sparse = true);

}  // namespace membridge::vulkan
