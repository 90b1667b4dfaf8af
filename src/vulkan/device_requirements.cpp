// device_requirements: membridge's extensions and features added to an engine's VkDeviceCreateInfo.
#include <membridge/vulkan/device_requirements.hpp>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace membridge::vulkan {

enabled_features required_device_features(bool sparse_growth) noexcept {
  enabled_features f;
  f.timeline_semaphore = true;
  f.sparse_binding = sparse_growth;
  f.sparse_residency_buffer = sparse_growth;
  return f;
}

struct device_requirements::storage {
  std::vector<const char*> names;                  // what ppEnabledExtensionNames points to
  std::vector<std::string> enabled;                // the same names, as strings
  std::vector<std::string> missing;                // required extensions the device lacks
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceFeatures core{};                 // pEnabledFeatures' copy, when sparse features are added
  enabled_features features;
};

device_requirements::device_requirements() noexcept = default;
device_requirements::device_requirements(device_requirements&&) noexcept = default;
device_requirements& device_requirements::operator=(device_requirements&&) noexcept = default;
device_requirements::~device_requirements() = default;

namespace {

constexpr const char* apply_call = "device_requirements::apply";

// The first struct of type `type` in a pNext chain (writable: the engine's structs are not const objects).
VkBaseOutStructure* find_in_chain(const void* head, VkStructureType type) {
  for (auto* s = static_cast<const VkBaseOutStructure*>(head); s != nullptr; s = s->pNext)
    if (s->sType == type) return const_cast<VkBaseOutStructure*>(s);  // NOLINT: the chain's structs are the engine's, writable
  return nullptr;
}

}  // namespace

result<device_requirements> device_requirements::apply(const instance_api& functions, VkPhysicalDevice physical_device,
                                                       VkDeviceCreateInfo& create_info,
                                                       const device_requirements_options& options) {
  if (create_info.sType != VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO)
    return error(errc::invalid_argument, apply_call, "create_info.sType is not VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO");
  if (physical_device == VK_NULL_HANDLE) return error(errc::invalid_argument, apply_call, "the physical device is null");
  if (functions.vkEnumerateDeviceExtensionProperties == nullptr || functions.vkGetPhysicalDeviceFeatures2 == nullptr)
    return error(errc::invalid_argument, apply_call, "the instance functions are not loaded (instance_api::load)");

  // What the device offers.
  std::uint32_t count = 0;
  if (const VkResult rc = functions.vkEnumerateDeviceExtensionProperties(physical_device, nullptr, &count, nullptr);
      rc != VK_SUCCESS)
    return make_vulkan_error(rc, "vkEnumerateDeviceExtensionProperties", apply_call);
  std::vector<VkExtensionProperties> offered(count);
  if (const VkResult rc =
          functions.vkEnumerateDeviceExtensionProperties(physical_device, nullptr, &count, offered.data());
      rc != VK_SUCCESS && rc != VK_INCOMPLETE)
    return make_vulkan_error(rc, "vkEnumerateDeviceExtensionProperties", apply_call);
  offered.resize(count);
  const auto offers = [&](std::string_view name) {
    return std::any_of(offered.begin(), offered.end(),
                       [&](const VkExtensionProperties& e) { return name == e.extensionName; });
  };
  VkPhysicalDeviceTimelineSemaphoreFeatures supported_timeline{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &supported_timeline;
  functions.vkGetPhysicalDeviceFeatures2(physical_device, &supported);
  if (supported_timeline.timelineSemaphore != VK_TRUE)
    return error(errc::unsupported, apply_call, "the device lacks the timelineSemaphore feature membridge needs");

  auto store = std::make_unique<storage>();
  // Extensions: the engine's first, then membridge's that are not listed yet.
  for (std::uint32_t i = 0; i < create_info.enabledExtensionCount; ++i) {
    const char* name = create_info.ppEnabledExtensionNames[i];
    if (name == nullptr) return error(errc::invalid_argument, apply_call, "ppEnabledExtensionNames has a null entry");
    store->names.push_back(name);
    store->enabled.emplace_back(name);
  }
  std::string missing_list;
  for (const auto& name : required_device_extensions()) {
    if (std::find(store->enabled.begin(), store->enabled.end(), name) != store->enabled.end()) continue;
    if (!offers(name)) {
      store->missing.push_back(name);
      missing_list += (missing_list.empty() ? "" : ", ") + name;
      continue;
    }
    store->names.push_back(name.c_str());  // required_device_extensions() is a static list
    store->enabled.push_back(name);
  }
  if (!store->missing.empty() && !options.allow_missing_extensions)
    return error(errc::unsupported, apply_call,
                 "the device lacks extensions membridge needs: " + missing_list +
                     " (set allow_missing_extensions to go on without them)");

  // Timeline semaphores: in the engine's struct when it has one, else in ours at the head of pNext.
  if (auto* v12 = find_in_chain(create_info.pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)) {
    reinterpret_cast<VkPhysicalDeviceVulkan12Features*>(v12)->timelineSemaphore = VK_TRUE;
  } else if (auto* tl = find_in_chain(create_info.pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES)) {
    reinterpret_cast<VkPhysicalDeviceTimelineSemaphoreFeatures*>(tl)->timelineSemaphore = VK_TRUE;
  } else {
    store->timeline.timelineSemaphore = VK_TRUE;
    store->timeline.pNext = const_cast<void*>(create_info.pNext);  // NOLINT: Vulkan's pNext types differ in const only
    create_info.pNext = &store->timeline;
  }
  store->features.timeline_semaphore = true;

  // Sparse: the engine's VkPhysicalDeviceFeatures2, or a copy of pEnabledFeatures (never both: Vulkan forbids it).
  auto* features2 =
      reinterpret_cast<VkPhysicalDeviceFeatures2*>(find_in_chain(create_info.pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2));
  const VkPhysicalDeviceFeatures* engine_core =
      features2 != nullptr ? &features2->features : create_info.pEnabledFeatures;
  const bool sparse = options.sparse_growth && supported.features.sparseBinding == VK_TRUE &&
                      supported.features.sparseResidencyBuffer == VK_TRUE;
  if (sparse) {
    if (features2 != nullptr) {
      features2->features.sparseBinding = VK_TRUE;
      features2->features.sparseResidencyBuffer = VK_TRUE;
    } else {
      if (create_info.pEnabledFeatures != nullptr) store->core = *create_info.pEnabledFeatures;
      store->core.sparseBinding = VK_TRUE;
      store->core.sparseResidencyBuffer = VK_TRUE;
      create_info.pEnabledFeatures = &store->core;
    }
    store->features.sparse_binding = true;
    store->features.sparse_residency_buffer = true;
  } else if (engine_core != nullptr) {
    store->features.sparse_binding = engine_core->sparseBinding == VK_TRUE;
    store->features.sparse_residency_buffer = engine_core->sparseResidencyBuffer == VK_TRUE;
  }

  create_info.enabledExtensionCount = static_cast<std::uint32_t>(store->names.size());
  create_info.ppEnabledExtensionNames = store->names.empty() ? nullptr : store->names.data();
  device_requirements out;
  out.storage_ = std::move(store);
  return out;
}

const std::vector<std::string>& device_requirements::enabled_extensions() const noexcept {
  static const std::vector<std::string> none;
  return storage_ != nullptr ? storage_->enabled : none;
}

const std::vector<std::string>& device_requirements::missing_extensions() const noexcept {
  static const std::vector<std::string> none;
  return storage_ != nullptr ? storage_->missing : none;
}

enabled_features device_requirements::features() const noexcept {
  return storage_ != nullptr ? storage_->features : enabled_features{};
}

}  // namespace membridge::vulkan
