// membridge/vulkan/device_requirements.hpp: adds membridge's device extensions and features to an
// engine's VkDeviceCreateInfo, so the engine does not rewrite that list.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/vulkan/device_context.hpp>
#include <membridge/vulkan/instance_api.hpp>

#include <vulkan/vulkan_core.h>

#include <memory>
#include <string>
#include <vector>

namespace membridge::vulkan {

/// The device features membridge needs: the timeline semaphore feature always; sparseBinding and
/// sparseResidencyBuffer too when `sparse_growth` (growth that keeps one VkBuffer, see
/// docs/integration.md). The result is what to put in adopt_info::features once they are enabled.
[[nodiscard]] enabled_features required_device_features(bool sparse_growth = false) noexcept;

/// Options for device_requirements::apply().
struct device_requirements_options {
  /// Enable sparseBinding and sparseResidencyBuffer when the device has both (no error when it has
  /// not: features().sparse_binding then stays false).
  bool sparse_growth = false;
  /// Do not fail when the device lacks some of required_device_extensions(): leave them out and list
  /// them in missing_extensions() (adopt() must then be given adopt_info::allow_missing_extensions).
  bool allow_missing_extensions = false;
};

/// The storage of membridge's additions to one VkDeviceCreateInfo: after apply(), the create info
/// points into this object, so it must outlive the vkCreateDevice call (it may be destroyed after it).
///
/// What apply() does to the create info, without duplicating what the engine already has:
/// - ppEnabledExtensionNames becomes the engine's names followed by those of
///   required_device_extensions() the engine did not list (compared by string; the engine's
///   pointers are kept as they are).
/// - The timeline semaphore feature: set to VK_TRUE in the engine's VkPhysicalDeviceVulkan12Features
///   or VkPhysicalDeviceTimelineSemaphoreFeatures when one is chained (that struct is written to, so
///   it must not be a const object); otherwise a VkPhysicalDeviceTimelineSemaphoreFeatures owned by
///   this object is put at the head of pNext (valid next to other Vulkan 1.2 feature structs).
/// - With sparse growth: sparseBinding and sparseResidencyBuffer set in the engine's chained
///   VkPhysicalDeviceFeatures2; or pEnabledFeatures repointed to a copy owned by this object with
///   them set (the engine's VkPhysicalDeviceFeatures is not written to).
/// Nothing else in the create info changes (queues: see pick_queues in queue_picker.hpp).
///
/// Move-only; moving keeps the create info's pointers valid (the storage is on the heap).
class device_requirements {
 public:
  /// Checks what `physical_device` offers (through `functions`, e.g. instance_api::load(gipa, instance))
  /// and adds membridge's extensions and features to `create_info`.
  /// Errors: invalid_argument when `create_info.sType` is not VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO or
  /// `physical_device` is null; unsupported when the device lacks the timeline semaphore feature, or a
  /// required extension and `allow_missing_extensions` is false (the message names them).
  /// Ownership: borrows `functions` and `physical_device` during the call only; `create_info` (and the
  /// engine's structs it points to) stay the engine's, and afterwards point into the returned object.
  [[nodiscard]] static result<device_requirements> apply(const instance_api& functions,
                                                         VkPhysicalDevice physical_device,
                                                         VkDeviceCreateInfo& create_info,
                                                         const device_requirements_options& options = {});

  /// An empty object (owns nothing).
  device_requirements() noexcept;
  device_requirements(const device_requirements&) = delete;
  device_requirements& operator=(const device_requirements&) = delete;
  /// Takes over `other`'s storage (pointers into it stay valid).
  device_requirements(device_requirements&&) noexcept;
  /// Takes over `other`'s storage (pointers into it stay valid).
  device_requirements& operator=(device_requirements&&) noexcept;
  /// Frees the storage; a create info still pointing into it must not be used afterwards.
  ~device_requirements();

  /// Every device extension the create info now enables (the engine's and membridge's), to put in
  /// adopt_info::enabled_extensions. Empty for an empty object.
  [[nodiscard]] const std::vector<std::string>& enabled_extensions() const noexcept;
  /// Required extensions the device lacks (only with allow_missing_extensions).
  [[nodiscard]] const std::vector<std::string>& missing_extensions() const noexcept;
  /// The features the create info now enables that membridge uses, to put in adopt_info::features
  /// (those the engine enabled itself count too).
  [[nodiscard]] enabled_features features() const noexcept;

 private:
  struct storage;
  std::unique_ptr<storage> storage_;
};

}  // namespace membridge::vulkan
