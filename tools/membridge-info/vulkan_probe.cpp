// Probing Vulkan for membridge-info: dlopen the loader, make an instance of the tool's own, describe
// every physical device through membridge::vulkan::instance_api, destroy the instance. No VkDevice is
// created and no global Vulkan prototype is called (this target defines VK_NO_PROTOTYPES).
#include "vulkan_report.hpp"

#include <membridge/core/log.hpp>
#include <membridge/os/dynamic_library.hpp>
#include <membridge/vulkan/instance_api.hpp>

#include <vulkan/vulkan_core.h>

#include <algorithm>
#include <cstring>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace membridge::info {

// vulkan_report.cpp names the flag bits without the Vulkan headers; these are the values it uses.
static_assert(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT == 0x1 && VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT == 0x2 &&
              VK_MEMORY_PROPERTY_HOST_COHERENT_BIT == 0x4 && VK_MEMORY_PROPERTY_HOST_CACHED_BIT == 0x8 &&
              VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT == 0x10 && VK_MEMORY_PROPERTY_PROTECTED_BIT == 0x20 &&
              VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD == 0x40 && VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD == 0x80 &&
              VK_MEMORY_PROPERTY_RDMA_CAPABLE_BIT_NV == 0x100);
static_assert(VK_MEMORY_HEAP_DEVICE_LOCAL_BIT == 0x1 && VK_MEMORY_HEAP_MULTI_INSTANCE_BIT == 0x2);

namespace {

constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";

// ---------------------------------------------------------------------------------- errors ---

std::string result_name(VkResult rc) {
  switch (rc) {
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    default: return "VkResult " + std::to_string(static_cast<int>(rc));
  }
}

errc category_of(VkResult rc) {
  switch (rc) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return errc::out_of_memory;
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_INCOMPATIBLE_DRIVER: return errc::driver_unavailable;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT: return errc::unsupported;
    case VK_ERROR_DEVICE_LOST: return errc::device_lost;
    default: return errc::internal;
  }
}

error vk_error(VkResult rc, std::string call, std::string context = {},
               std::source_location where = std::source_location::current()) {
  return error::from_native(category_of(rc), error_source::vulkan, rc, result_name(rc), std::move(call),
                            std::move(context), where);
}

// ---------------------------------------------------------------------------------- session ---

// What a failed vkCreateInstance most likely means, for people.
std::string instance_failure_context(VkResult rc, std::uint32_t api_version) {
  std::string text = "creating a Vulkan " + std::to_string(VK_API_VERSION_MAJOR(api_version)) + "." +
                     std::to_string(VK_API_VERSION_MINOR(api_version)) + " instance";
  if (rc == VK_ERROR_INCOMPATIBLE_DRIVER)
    text += ": the loader found no Vulkan driver (ICD); check VK_DRIVER_FILES / VK_ICD_FILENAMES";
  return text;
}

template <class Fn>
Fn load_function(PFN_vkGetInstanceProcAddr gipa, VkInstance instance, const char* name) {
  return reinterpret_cast<Fn>(gipa(instance, name));
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  if ((types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) == 0) return VK_FALSE;
  const std::string text = std::string("Vulkan validation: ") + (data->pMessage != nullptr ? data->pMessage : "");
  const auto* sink = static_cast<const std::function<void(std::string_view)>*>(user);
  if (*sink)
    (*sink)(text);
  else
    log(log_level::warning, text);
  return VK_FALSE;
}

/// The loader and the probe's own instance (with its validation messenger); destroys both, in that
/// order, when it goes. Neither copyable nor movable: the messenger points at on_message_.
class vulkan_session {
 public:
  explicit vulkan_session(const vulkan_probe_options& options) : options_(options) {}
  vulkan_session(const vulkan_session&) = delete;
  vulkan_session& operator=(const vulkan_session&) = delete;
  ~vulkan_session() {
    if (messenger_ != VK_NULL_HANDLE) destroy_messenger_(instance_, messenger_, nullptr);
    if (instance_ != VK_NULL_HANDLE) destroy_instance_(instance_, nullptr);
  }  // then loader_ closes the library

  /// dlopens the loader and finds vkGetInstanceProcAddr.
  result<void> open_loader() {
    MEMBRIDGE_TRY_ASSIGN(loader_, os::dynamic_library::open(options_.library));
    MEMBRIDGE_TRY_ASSIGN(void* symbol, loader_.symbol("vkGetInstanceProcAddr"));
    gipa_ = reinterpret_cast<PFN_vkGetInstanceProcAddr>(symbol);
    return ok();
  }

  /// vkEnumerateInstanceVersion, or 1.0 for a loader without it.
  [[nodiscard]] std::uint32_t loader_version() const {
    std::uint32_t version = VK_API_VERSION_1_0;
    if (auto enumerate = load_function<PFN_vkEnumerateInstanceVersion>(gipa_, nullptr, "vkEnumerateInstanceVersion"))
      if (enumerate(&version) != VK_SUCCESS) version = VK_API_VERSION_1_0;
    return version;
  }

  /// Creates the instance (apiVersion `api_version`), its messenger, and loads instance_api.
  result<void> create_instance(std::uint32_t api_version) {
    if (options_.validation) MEMBRIDGE_TRY(require_validation_layer());
    MEMBRIDGE_TRY(make_instance(api_version));
    if (options_.validation) MEMBRIDGE_TRY(make_messenger());
    MEMBRIDGE_TRY_ASSIGN(api_, vulkan::instance_api::load(gipa_, instance_));
    return ok();
  }

  /// Every physical device, in enumeration order.
  [[nodiscard]] result<std::vector<VkPhysicalDevice>> physical_devices() const {
    std::uint32_t count = 0;
    if (const VkResult rc = api_.vkEnumeratePhysicalDevices(instance_, &count, nullptr); rc != VK_SUCCESS)
      return vk_error(rc, "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devices(count);
    if (const VkResult rc = api_.vkEnumeratePhysicalDevices(instance_, &count, devices.data());
        rc != VK_SUCCESS && rc != VK_INCOMPLETE)
      return vk_error(rc, "vkEnumeratePhysicalDevices");
    devices.resize(count);
    return devices;
  }

  [[nodiscard]] const vulkan::instance_api& api() const noexcept { return api_; }

 private:
  result<void> require_validation_layer() const {
    auto enumerate =
        load_function<PFN_vkEnumerateInstanceLayerProperties>(gipa_, nullptr, "vkEnumerateInstanceLayerProperties");
    std::uint32_t count = 0;
    if (enumerate != nullptr) (void)enumerate(&count, nullptr);
    std::vector<VkLayerProperties> layers(count);
    if (enumerate != nullptr) (void)enumerate(&count, layers.data());
    layers.resize(std::min<std::size_t>(count, layers.size()));
    for (const auto& l : layers)
      if (std::strcmp(l.layerName, validation_layer) == 0) return ok();
    return error(errc::unsupported, "vulkan probe",
                 "validation was asked for but VK_LAYER_KHRONOS_validation is not installed "
                 "(Debian: vulkan-validationlayers)");
  }

  [[nodiscard]] VkDebugUtilsMessengerCreateInfoEXT messenger_info() const {
    VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    info.pfnUserCallback = &on_debug_message;
    info.pUserData = const_cast<std::function<void(std::string_view)>*>(&options_.on_validation_message);
    return info;
  }

  result<void> make_instance(std::uint32_t api_version) {
    auto create = load_function<PFN_vkCreateInstance>(gipa_, nullptr, "vkCreateInstance");
    if (create == nullptr) return error(errc::driver_unavailable, "vkGetInstanceProcAddr", "the loader has no vkCreateInstance");
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "membridge-info";
    app.pEngineName = "membridge";
    app.apiVersion = api_version;
    const char* layers[] = {validation_layer};
    const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    const VkDebugUtilsMessengerCreateInfoEXT messenger = messenger_info();  // also covers vkCreate/DestroyInstance
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    if (options_.validation) {
      info.pNext = &messenger;
      info.enabledLayerCount = 1;
      info.ppEnabledLayerNames = layers;
      info.enabledExtensionCount = 1;
      info.ppEnabledExtensionNames = extensions;
    }
    if (const VkResult rc = create(&info, nullptr, &instance_); rc != VK_SUCCESS) {
      instance_ = VK_NULL_HANDLE;
      return vk_error(rc, "vkCreateInstance", instance_failure_context(rc, api_version));
    }
    destroy_instance_ = load_function<PFN_vkDestroyInstance>(gipa_, instance_, "vkDestroyInstance");
    if (destroy_instance_ == nullptr) {  // cannot happen with a conforming loader; leak rather than crash
      instance_ = VK_NULL_HANDLE;
      return error(errc::internal, "vkGetInstanceProcAddr", "the instance has no vkDestroyInstance");
    }
    return ok();
  }

  result<void> make_messenger() {
    auto create = load_function<PFN_vkCreateDebugUtilsMessengerEXT>(gipa_, instance_, "vkCreateDebugUtilsMessengerEXT");
    auto destroy = load_function<PFN_vkDestroyDebugUtilsMessengerEXT>(gipa_, instance_, "vkDestroyDebugUtilsMessengerEXT");
    if (create == nullptr || destroy == nullptr)
      return error(errc::unsupported, "vkGetInstanceProcAddr", "VK_EXT_debug_utils functions are missing");
    const VkDebugUtilsMessengerCreateInfoEXT info = messenger_info();
    if (const VkResult rc = create(instance_, &info, nullptr, &messenger_); rc != VK_SUCCESS) {
      messenger_ = VK_NULL_HANDLE;
      return vk_error(rc, "vkCreateDebugUtilsMessengerEXT");
    }
    destroy_messenger_ = destroy;
    return ok();
  }

  const vulkan_probe_options& options_;
  os::dynamic_library loader_;
  PFN_vkGetInstanceProcAddr gipa_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  PFN_vkDestroyInstance destroy_instance_ = nullptr;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
  vulkan::instance_api api_{};
};

/// The apiVersion to ask for: the loader's major.minor, at least 1.2 (membridge's floor), at most 1.3.
std::uint32_t instance_version_for(std::uint32_t loader_version) {
  const std::uint32_t major_minor =
      VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(loader_version), VK_API_VERSION_MINOR(loader_version), 0);
  return std::clamp<std::uint32_t>(major_minor, VK_API_VERSION_1_2, VK_API_VERSION_1_3);
}

// ---------------------------------------------------------------------------- one device ---

using extension_list = std::vector<std::string>;

bool has(const extension_list& extensions, const char* name) {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

template <std::size_t N>
std::string text_of(const char (&chars)[N]) {
  return std::string(chars, strnlen(chars, N));
}

result<extension_list> list_extensions(const vulkan::instance_api& api, VkPhysicalDevice pd) {
  std::uint32_t count = 0;
  if (const VkResult rc = api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr); rc != VK_SUCCESS)
    return vk_error(rc, "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> properties(count);
  if (const VkResult rc = api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, properties.data());
      rc != VK_SUCCESS && rc != VK_INCOMPLETE)
    return vk_error(rc, "vkEnumerateDeviceExtensionProperties");
  properties.resize(count);
  extension_list names;
  for (const auto& p : properties) names.push_back(text_of(p.extensionName));
  return names;
}

std::string type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "INTEGRATED_GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "DISCRETE_GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "VIRTUAL_GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "OTHER";
  }
}

// Name, type and API version (Vulkan 1.0 properties): what the other queries depend on.
void read_basics(const vulkan::instance_api& api, VkPhysicalDevice pd, vulkan_device_report& d) {
  VkPhysicalDeviceProperties p{};
  api.vkGetPhysicalDeviceProperties(pd, &p);
  d.name = text_of(p.deviceName);
  d.type = type_name(p.deviceType);
  d.api_version = p.apiVersion;
}

// deviceUUID (Vulkan 1.1), and the driver's name and info (Vulkan 1.2 or VK_KHR_driver_properties).
void read_identity(const vulkan::instance_api& api, VkPhysicalDevice pd, const extension_list& exts,
                   vulkan_device_report& d) {
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &id;
  const bool with_driver = d.api_version >= VK_API_VERSION_1_2 || has(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (with_driver) id.pNext = &driver;
  api.vkGetPhysicalDeviceProperties2(pd, &properties);
  d.uuid = device_uuid::from_bytes(id.deviceUUID);
  if (!with_driver) return;
  d.driver_name = text_of(driver.driverName);
  d.driver_info = text_of(driver.driverInfo);
}

bool has_sparse_queue_family(const vulkan::instance_api& api, VkPhysicalDevice pd) {
  std::uint32_t count = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
  families.resize(count);
  return std::any_of(families.begin(), families.end(),
                     [](const VkQueueFamilyProperties& f) { return (f.queueFlags & VK_QUEUE_SPARSE_BINDING_BIT) != 0; });
}

// timelineSemaphore (Vulkan 1.2 or VK_KHR_timeline_semaphore), sparse features and a sparse queue.
void read_features(const vulkan::instance_api& api, VkPhysicalDevice pd, const extension_list& exts,
                   vulkan_device_report& d) {
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  const bool with_timeline = d.api_version >= VK_API_VERSION_1_2 || has(exts, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  if (with_timeline) features.pNext = &timeline;
  api.vkGetPhysicalDeviceFeatures2(pd, &features);
  d.timeline_semaphore = with_timeline && timeline.timelineSemaphore == VK_TRUE;
  d.sparse.sparse_binding = features.features.sparseBinding == VK_TRUE;
  d.sparse.sparse_residency_buffer = features.features.sparseResidencyBuffer == VK_TRUE;
  d.sparse.sparse_queue_family = has_sparse_queue_family(api, pd);
}

// Can a (non-sparse) buffer be imported from an opaque fd? The usage is what membridge's shared buffers use.
vulkan_external_memory read_external_memory(const vulkan::instance_api& api, VkPhysicalDevice pd,
                                            const extension_list& exts) {
  VkPhysicalDeviceExternalBufferInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO};
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkExternalBufferProperties properties{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  api.vkGetPhysicalDeviceExternalBufferProperties(pd, &info, &properties);
  const VkExternalMemoryFeatureFlags f = properties.externalMemoryProperties.externalMemoryFeatures;
  vulkan_external_memory m;
  m.fd_extension = has(exts, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  m.opaque_fd_buffer_import = (f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) != 0;
  m.dedicated_only = (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) != 0;
  return m;
}

// Can a timeline semaphore be exported / imported as an opaque fd? Asked only when timelines exist.
vulkan_external_semaphore read_external_semaphore(const vulkan::instance_api& api, VkPhysicalDevice pd,
                                                  const extension_list& exts, bool timeline) {
  vulkan_external_semaphore s;
  s.fd_extension = has(exts, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  if (!timeline) return s;
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkPhysicalDeviceExternalSemaphoreInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO};
  info.pNext = &type;
  info.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkExternalSemaphoreProperties properties{VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
  api.vkGetPhysicalDeviceExternalSemaphoreProperties(pd, &info, &properties);
  s.timeline_opaque_fd_export = (properties.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT) != 0;
  s.timeline_opaque_fd_import = (properties.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT) != 0;
  return s;
}

void read_memory(const vulkan::instance_api& api, VkPhysicalDevice pd, vulkan_device_report& d) {
  VkPhysicalDeviceMemoryProperties m{};
  api.vkGetPhysicalDeviceMemoryProperties(pd, &m);
  const std::uint32_t heaps = std::min<std::uint32_t>(m.memoryHeapCount, VK_MAX_MEMORY_HEAPS);
  const std::uint32_t types = std::min<std::uint32_t>(m.memoryTypeCount, VK_MAX_MEMORY_TYPES);
  for (std::uint32_t i = 0; i < heaps; ++i) d.memory_heaps.push_back({m.memoryHeaps[i].size, m.memoryHeaps[i].flags});
  for (std::uint32_t i = 0; i < types; ++i)
    d.memory_types.push_back({m.memoryTypes[i].heapIndex, m.memoryTypes[i].propertyFlags});
}

vulkan_device_report describe_device(const vulkan::instance_api& api, VkPhysicalDevice pd, std::uint32_t index) {
  vulkan_device_report d;
  d.index = index;
  read_basics(api, pd, d);
  auto extensions = list_extensions(api, pd);
  if (!extensions) d.failure = std::move(extensions).error().add_context("listing the extensions of " + d.name);
  const extension_list exts = extensions ? std::move(*extensions) : extension_list{};
  read_identity(api, pd, exts, d);
  read_features(api, pd, exts, d);
  d.external_memory = read_external_memory(api, pd, exts);
  d.external_semaphore = read_external_semaphore(api, pd, exts, d.timeline_semaphore);
  read_memory(api, pd, d);
  return d;
}

result<std::vector<vulkan_device_report>> describe_devices(vulkan_session& session, std::uint32_t loader_version) {
  MEMBRIDGE_TRY(session.create_instance(instance_version_for(loader_version)));
  MEMBRIDGE_TRY_ASSIGN(auto physical_devices, session.physical_devices());
  std::vector<vulkan_device_report> devices;
  for (std::size_t i = 0; i < physical_devices.size(); ++i)
    devices.push_back(describe_device(session.api(), physical_devices[i], static_cast<std::uint32_t>(i)));
  return devices;
}

}  // namespace

vulkan_report probe_vulkan(const vulkan_probe_options& options) {
  vulkan_report r;
  r.library = options.library;
  vulkan_session session(options);
  if (auto opened = session.open_loader(); !opened) {
    r.failure = std::move(opened).error();
    return r;
  }
  r.loader_found = true;
  r.loader_version = session.loader_version();
  auto devices = describe_devices(session, *r.loader_version);
  if (devices) r.devices = std::move(*devices);
  else r.failure = std::move(devices).error();
  return r;
}

}  // namespace membridge::info
