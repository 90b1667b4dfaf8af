// device_context::create(): an instance and device of membridge's own, for samples, tests and tools.
#include <membridge/vulkan/device_context.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/vk_error.hpp"

#include <membridge/core/log.hpp>

#include <algorithm>
#include <cstring>
#include <set>

namespace membridge::vulkan {

namespace {

constexpr const char* create_call = "device_context::create";
constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* sink = static_cast<detail::validation_sink*>(user);
  if ((types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) == 0) return VK_FALSE;
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  sink->count.fetch_add(1);
  const std::string text = std::string("Vulkan validation: ") + (data->pMessage != nullptr ? data->pMessage : "");
  if (sink->callback)
    sink->callback(text);
  else
    log(log_level::warning, text);
  return VK_FALSE;
}

template <class Fn>
Fn load_global(PFN_vkGetInstanceProcAddr gipa, VkInstance instance, const char* name) {
  return reinterpret_cast<Fn>(gipa(instance, name));
}

// Loader, instance (and messenger) into `s`.
result<void> make_instance(detail::context_state& s, const create_options& options) {
  MEMBRIDGE_TRY_ASSIGN(s.loader, os::dynamic_library::open(options.loader_path));
  MEMBRIDGE_TRY_ASSIGN(void* sym, s.loader.symbol("vkGetInstanceProcAddr"));
  s.get_instance_proc_addr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(sym);
  const auto gipa = s.get_instance_proc_addr;

  std::uint32_t loader_version = VK_API_VERSION_1_0;
  if (auto enumerate_version = load_global<PFN_vkEnumerateInstanceVersion>(gipa, nullptr, "vkEnumerateInstanceVersion"))
    enumerate_version(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    return error(errc::driver_unavailable, create_call, "the Vulkan loader offers only Vulkan 1." +
                                                            std::to_string(VK_API_VERSION_MINOR(loader_version)) +
                                                            "; membridge needs 1.2");
  s.api_version = std::min<std::uint32_t>(loader_version, VK_API_VERSION_1_3);

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  for (const auto& e : options.instance_extensions) extensions.push_back(e.c_str());
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  if (options.validation) {
    auto enumerate_layers =
        load_global<PFN_vkEnumerateInstanceLayerProperties>(gipa, nullptr, "vkEnumerateInstanceLayerProperties");
    std::uint32_t count = 0;
    enumerate_layers(&count, nullptr);
    std::vector<VkLayerProperties> available(count);
    enumerate_layers(&count, available.data());
    const bool found = std::any_of(available.begin(), available.end(),
                                   [](const VkLayerProperties& l) { return std::strcmp(l.layerName, validation_layer) == 0; });
    if (!found)
      return error(errc::unsupported, create_call,
                   "validation was asked for but VK_LAYER_KHRONOS_validation is not installed "
                   "(Debian: vulkan-validationlayers)");
    layers.push_back(validation_layer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    s.validation = std::make_unique<detail::validation_sink>();
    s.validation->callback = options.on_validation_message;
    messenger_info.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = &on_debug_message;
    messenger_info.pUserData = s.validation.get();
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "membridge";
  app.pEngineName = "membridge";
  app.apiVersion = s.api_version;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pNext = options.validation ? &messenger_info : nullptr;
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  auto create_instance = load_global<PFN_vkCreateInstance>(gipa, nullptr, "vkCreateInstance");
  if (create_instance == nullptr)
    return error(errc::driver_unavailable, create_call, "the loader has no vkCreateInstance");
  if (const VkResult rc = create_instance(&ici, nullptr, &s.instance); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkCreateInstance", "creating membridge's Vulkan instance");
  MEMBRIDGE_TRY_ASSIGN(s.instance_fns, instance_api::load(gipa, s.instance));

  if (options.validation) {
    auto create_messenger =
        load_global<PFN_vkCreateDebugUtilsMessengerEXT>(gipa, s.instance, "vkCreateDebugUtilsMessengerEXT");
    s.destroy_messenger =
        load_global<PFN_vkDestroyDebugUtilsMessengerEXT>(gipa, s.instance, "vkDestroyDebugUtilsMessengerEXT");
    if (create_messenger == nullptr || s.destroy_messenger == nullptr)
      return error(errc::unsupported, create_call, "VK_EXT_debug_utils functions are missing");
    if (const VkResult rc = create_messenger(s.instance, &messenger_info, nullptr, &s.messenger); rc != VK_SUCCESS)
      return vulkan::detail::make_error(rc, "vkCreateDebugUtilsMessengerEXT");
  }
  return ok();
}

struct candidate {
  VkPhysicalDevice device = VK_NULL_HANDLE;
  device_uuid uuid;
  std::string name;
  std::vector<std::string> extensions;
};

result<std::vector<candidate>> list_devices(const detail::context_state& s) {
  const auto& fn = s.instance_fns;
  std::uint32_t count = 0;
  if (const VkResult rc = fn.vkEnumeratePhysicalDevices(s.instance, &count, nullptr); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  if (const VkResult rc = fn.vkEnumeratePhysicalDevices(s.instance, &count, devices.data()); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkEnumeratePhysicalDevices");
  std::vector<candidate> out;
  for (VkPhysicalDevice pd : devices) {
    candidate c;
    c.device = pd;
    VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &id;
    fn.vkGetPhysicalDeviceProperties2(pd, &props);
    c.uuid = device_uuid::from_bytes(id.deviceUUID);
    c.name = props.properties.deviceName;
    std::uint32_t n = 0;
    fn.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    fn.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
    for (const auto& e : exts) c.extensions.emplace_back(e.extensionName);
    out.push_back(std::move(c));
  }
  if (out.empty())
    return error(errc::driver_unavailable, create_call,
                 "the Vulkan loader found no physical device (no ICD? set VK_DRIVER_FILES)");
  return out;
}

bool has(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

result<candidate> pick_device(const detail::context_state& s, const create_options& options) {
  MEMBRIDGE_TRY_ASSIGN(auto devices, list_devices(s));
  if (options.uuid) {
    for (auto& c : devices)
      if (c.uuid == *options.uuid) return std::move(c);
    std::string found;
    for (const auto& c : devices) found += (found.empty() ? "" : "; ") + c.name + " " + c.uuid.to_string();
    return error(errc::invalid_argument, create_call,
                 "no Vulkan device has UUID " + options.uuid->to_string() +
                     " (the CUDA device): Vulkan and CUDA must run on the same GPU; Vulkan devices found: " + found);
  }
  for (auto& c : devices)
    if (has(c.extensions, detail::memory_extension)) return std::move(c);
  if (options.allow_missing_extensions) return std::move(devices.front());
  return error(errc::unsupported, create_call, "no Vulkan device offers " +
                                                   std::string(detail::memory_extension));
}

struct queue_plan {
  std::uint32_t graphics = VK_QUEUE_FAMILY_IGNORED;
  std::uint32_t transfer = VK_QUEUE_FAMILY_IGNORED;
  std::uint32_t sparse = VK_QUEUE_FAMILY_IGNORED;
  std::uint32_t graphics_queue_count = 0;  // queues the graphics family offers
};

queue_plan plan_queues(const detail::context_state& s, bool want_sparse) {
  std::uint32_t n = 0;
  s.instance_fns.vkGetPhysicalDeviceQueueFamilyProperties(s.physical_device, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  s.instance_fns.vkGetPhysicalDeviceQueueFamilyProperties(s.physical_device, &n, families.data());
  queue_plan plan;
  for (std::uint32_t i = 0; i < n; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    const bool graphics = (f & VK_QUEUE_GRAPHICS_BIT) != 0 && (f & VK_QUEUE_COMPUTE_BIT) != 0;
    if (graphics && plan.graphics == VK_QUEUE_FAMILY_IGNORED) plan.graphics = i;
    if ((f & VK_QUEUE_TRANSFER_BIT) != 0 && (f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) == 0 &&
        plan.transfer == VK_QUEUE_FAMILY_IGNORED)
      plan.transfer = i;
  }
  if (plan.graphics != VK_QUEUE_FAMILY_IGNORED) plan.graphics_queue_count = families[plan.graphics].queueCount;
  if (want_sparse && plan.graphics != VK_QUEUE_FAMILY_IGNORED) {
    if ((families[plan.graphics].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT) != 0) {
      plan.sparse = plan.graphics;
    } else {
      for (std::uint32_t i = 0; i < n; ++i)
        if ((families[i].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT) != 0) {
          plan.sparse = i;
          break;
        }
    }
  }
  return plan;
}

result<void> make_device(detail::context_state& s, const create_options& options, const candidate& chosen) {
  std::vector<std::string> enabled;
  std::vector<std::string> unavailable;
  for (const auto& name : required_device_extensions()) {
    if (has(chosen.extensions, name))
      enabled.push_back(name);
    else
      unavailable.push_back(name);
  }
  if (!has(enabled, detail::memory_extension) && !options.allow_missing_extensions)
    return error(errc::unsupported, create_call, chosen.name + " lacks " + std::string(detail::memory_extension));
  for (const auto& name : options.device_extensions) {
    if (!has(chosen.extensions, name))
      return error(errc::unsupported, create_call, chosen.name + " lacks the requested extension " + name);
    if (!has(enabled, name)) enabled.push_back(name);
  }

  VkPhysicalDeviceVulkan12Features supported12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &supported12;
  s.instance_fns.vkGetPhysicalDeviceFeatures2(s.physical_device, &supported);

  const queue_plan plan = plan_queues(s, options.sparse);
  if (plan.graphics == VK_QUEUE_FAMILY_IGNORED)
    return error(errc::unsupported, create_call, chosen.name + " has no graphics+compute queue family");
  enabled_features features;
  features.timeline_semaphore = supported12.timelineSemaphore == VK_TRUE;
  features.sparse_binding = options.sparse && supported.features.sparseBinding == VK_TRUE &&
                            plan.sparse != VK_QUEUE_FAMILY_IGNORED;
  features.sparse_residency_buffer = features.sparse_binding && supported.features.sparseResidencyBuffer == VK_TRUE;

  VkPhysicalDeviceVulkan12Features enable12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  enable12.timelineSemaphore = features.timeline_semaphore ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enable.pNext = &enable12;
  enable.features.sparseBinding = features.sparse_binding ? VK_TRUE : VK_FALSE;
  enable.features.sparseResidencyBuffer = features.sparse_residency_buffer ? VK_TRUE : VK_FALSE;

  std::set<std::uint32_t> families{plan.graphics};
  if (plan.transfer != VK_QUEUE_FAMILY_IGNORED) families.insert(plan.transfer);
  if (features.sparse_binding) families.insert(plan.sparse);
  // Sparse binds go to a queue of their own when the family has two, so growth can run off the
  // render thread without sharing its queue.
  const bool second_graphics_queue = features.sparse_binding && plan.sparse == plan.graphics &&
                                     plan.graphics_queue_count >= 2;
  const float priorities[2] = {1.0F, 1.0F};
  std::vector<VkDeviceQueueCreateInfo> queues;
  for (std::uint32_t family : families) {
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = (second_graphics_queue && family == plan.graphics) ? 2 : 1;
    q.pQueuePriorities = priorities;
    queues.push_back(q);
  }
  std::vector<const char*> names;
  for (const auto& e : enabled) names.push_back(e.c_str());
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &enable;
  dci.queueCreateInfoCount = static_cast<std::uint32_t>(queues.size());
  dci.pQueueCreateInfos = queues.data();
  dci.enabledExtensionCount = static_cast<std::uint32_t>(names.size());
  dci.ppEnabledExtensionNames = names.data();
  if (const VkResult rc = s.instance_fns.vkCreateDevice(s.physical_device, &dci, nullptr, &s.device); rc != VK_SUCCESS)
    return vulkan::detail::make_error(rc, "vkCreateDevice", "creating a device on " + chosen.name);
  detail::load_device_table(s.table, s.device, s.instance_fns.vkGetDeviceProcAddr);

  const auto get_queue = [&](std::uint32_t family, std::uint32_t index = 0) {
    queue_info q;
    q.family = family;
    q.index = index;
    s.table.vkGetDeviceQueue(s.device, family, index, &q.queue);
    return q;
  };
  s.graphics = get_queue(plan.graphics);
  s.transfer = plan.transfer != VK_QUEUE_FAMILY_IGNORED ? get_queue(plan.transfer) : s.graphics;
  if (features.sparse_binding) s.sparse = get_queue(plan.sparse, second_graphics_queue ? 1 : 0);
  detail::read_device_facts(s, enabled, features);
  if (!unavailable.empty()) {
    std::string list;
    for (const auto& u : unavailable) list += (list.empty() ? "" : ", ") + u;
    log(log_level::info, "membridge: " + chosen.name + " lacks " + list);
  }
  return ok();
}

}  // namespace

result<device_context> device_context::create(const create_options& options) {
  auto state = std::make_shared<detail::context_state>();
  state->owns = true;
  MEMBRIDGE_TRY(make_instance(*state, options));
  MEMBRIDGE_TRY_ASSIGN(auto chosen, pick_device(*state, options));
  state->physical_device = chosen.device;
  MEMBRIDGE_TRY(make_device(*state, options, chosen));
  return device_context(std::move(state));
}

}  // namespace membridge::vulkan
