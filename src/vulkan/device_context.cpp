#include <membridge/vulkan/device_context.hpp>

#include "detail/context_state.hpp"
#include "detail/external_handle.hpp"
#include "detail/vk_error.hpp"

#include <membridge/core/log.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace membridge::vulkan {

namespace detail {

context_state::~context_state() {
  if (!owns) return;
  if (device != VK_NULL_HANDLE) {
    if (table.vkDeviceWaitIdle != nullptr) {
      if (const VkResult rc = table.vkDeviceWaitIdle(device); rc != VK_SUCCESS)
        log(log_level::warning, "vkDeviceWaitIdle failed while destroying membridge's Vulkan device");
    }
    if (table.vkDestroyDevice != nullptr) table.vkDestroyDevice(device, nullptr);
  }
  if (messenger != VK_NULL_HANDLE && destroy_messenger != nullptr) destroy_messenger(instance, messenger, nullptr);
  if (instance != VK_NULL_HANDLE && instance_fns.vkDestroyInstance != nullptr)
    instance_fns.vkDestroyInstance(instance, nullptr);
}

void read_device_facts(context_state& s, const std::vector<std::string>& enabled, const enabled_features& features) {
  const auto& fn = s.instance_fns;
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  id.pNext = &driver;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &id;
  fn.vkGetPhysicalDeviceProperties2(s.physical_device, &props);
  s.properties = props.properties;
  s.uuid = device_uuid::from_bytes(id.deviceUUID);
  s.name = props.properties.deviceName;
  s.driver_info = std::string(driver.driverName) + (driver.driverInfo[0] != '\0' ? " " : "") + driver.driverInfo;
  s.api_version = std::min(s.api_version, props.properties.apiVersion);
  fn.vkGetPhysicalDeviceMemoryProperties(s.physical_device, &s.memory);

  const auto has = [&](std::string_view name) { return std::find(enabled.begin(), enabled.end(), name) != enabled.end(); };
  s.caps.external_memory = has(memory_extension);
  s.caps.external_semaphore = has(semaphore_extension);
  s.caps.external_memory_fd = has(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  s.caps.external_semaphore_fd = has(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  s.caps.timeline_semaphore = features.timeline_semaphore && s.api_version >= VK_API_VERSION_1_2;
  s.caps.sparse_binding = features.sparse_binding && features.sparse_residency_buffer && s.sparse.valid();
  s.caps.dedicated_allocation = true;  // core since Vulkan 1.1
  s.missing_extensions.clear();
  for (const auto& name : required_device_extensions())
    if (!has(name)) s.missing_extensions.push_back(name);
}

}  // namespace detail

const std::vector<std::string>& required_device_extensions() {
  static const std::vector<std::string> names{detail::memory_extension, detail::semaphore_extension};
  return names;
}

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

result<device_context> device_context::adopt(const adopt_info& info) {
  constexpr const char* call = "device_context::adopt";
  if (info.get_instance_proc_addr == nullptr)
    return error(errc::invalid_argument, call, "get_instance_proc_addr is null");
  if (info.instance == VK_NULL_HANDLE || info.physical_device == VK_NULL_HANDLE || info.device == VK_NULL_HANDLE)
    return error(errc::invalid_argument, call, "the instance, physical device and device must all be set");
  if (!info.graphics.valid()) return error(errc::invalid_argument, call, "a graphics queue is required");
  if (info.api_version < VK_API_VERSION_1_2)
    return error(errc::unsupported, call, "membridge needs an instance created with apiVersion 1.2 or later");

  auto state = std::make_shared<detail::context_state>();
  state->get_instance_proc_addr = info.get_instance_proc_addr;
  MEMBRIDGE_TRY_ASSIGN(state->instance_fns, instance_api::load(info.get_instance_proc_addr, info.instance));
  state->instance = info.instance;
  state->physical_device = info.physical_device;
  state->device = info.device;
  state->api_version = info.api_version;
  state->graphics = info.graphics;
  state->transfer = info.transfer.valid() ? info.transfer : info.graphics;
  state->sparse = info.sparse;
  detail::load_device_table(state->table, info.device, state->instance_fns.vkGetDeviceProcAddr);
  if (state->table.vkCreateBuffer == nullptr)
    return error(errc::invalid_argument, call, "vkGetDeviceProcAddr returned nothing for the device (wrong VkDevice?)");
  std::vector<std::string> names_from_span;
  for (const char* name : info.enabled_extension_names) {
    if (name == nullptr) return error(errc::invalid_argument, call, "enabled_extension_names has a null entry");
    names_from_span.emplace_back(name);
  }
  const auto& enabled = info.enabled_extension_names.empty() ? info.enabled_extensions : names_from_span;
  detail::read_device_facts(*state, enabled, info.features);
  if (!state->caps.external_memory)
    return error(errc::unsupported, call,
                 "the engine's device must enable " + std::string(detail::memory_extension) +
                     "; missing: " + join(state->missing_extensions));
  if (!state->missing_extensions.empty() && !info.allow_missing_extensions)
    return error(errc::unsupported, call,
                 "the engine's device lacks extensions membridge needs: " + join(state->missing_extensions) +
                     " (enable them, or set adopt_info::allow_missing_extensions to go on without "
                     "semaphore sharing with CUDA or GL)");
  if (!state->missing_extensions.empty())
    log(log_level::info, "membridge: adopted Vulkan device lacks " + join(state->missing_extensions) +
                             " (no semaphore sharing with CUDA or GL)");
  return device_context(std::move(state));
}

bool device_context::owns_device() const noexcept { return state_->owns; }
VkInstance device_context::instance() const noexcept { return state_->instance; }
VkPhysicalDevice device_context::physical_device() const noexcept { return state_->physical_device; }
VkDevice device_context::device() const noexcept { return state_->device; }
const queue_info& device_context::graphics_queue() const noexcept { return state_->graphics; }
const queue_info& device_context::transfer_queue() const noexcept { return state_->transfer; }
const queue_info& device_context::sparse_queue() const noexcept { return state_->sparse; }
const VolkDeviceTable& device_context::functions() const noexcept { return state_->table; }
const instance_api& device_context::instance_functions() const noexcept { return state_->instance_fns; }
PFN_vkGetInstanceProcAddr device_context::get_instance_proc_addr() const noexcept {
  return state_->get_instance_proc_addr;
}
const device_uuid& device_context::uuid() const noexcept { return state_->uuid; }
const std::string& device_context::name() const noexcept { return state_->name; }
const std::string& device_context::driver_info() const noexcept { return state_->driver_info; }
std::uint32_t device_context::api_version() const noexcept { return state_->api_version; }
const context_capabilities& device_context::capabilities() const noexcept { return state_->caps; }
const std::vector<std::string>& device_context::missing_extensions() const noexcept {
  return state_->missing_extensions;
}
const VkPhysicalDeviceMemoryProperties& device_context::memory_properties() const noexcept { return state_->memory; }
const VkPhysicalDeviceProperties& device_context::properties() const noexcept { return state_->properties; }

result<std::uint32_t> device_context::find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                                       VkMemoryPropertyFlags avoided) const {
  const auto& mem = state_->memory;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
      if ((type_bits & (1U << i)) == 0) continue;
      const VkMemoryPropertyFlags flags = mem.memoryTypes[i].propertyFlags;
      if ((flags & required) != required) continue;
      if (pass == 0 && (flags & avoided) != 0) continue;
      return i;
    }
  }
  return error(errc::unsupported, "device_context::find_memory_type",
               "no memory type in bits 0x" + [&] {
                 char buf[16];
                 std::snprintf(buf, sizeof buf, "%x", type_bits);
                 return std::string(buf);
               }() + " has the required property flags 0x" + std::to_string(required));
}

std::uint64_t device_context::validation_message_count() const noexcept {
  return state_->validation ? state_->validation->count.load() : 0;
}

error make_vulkan_error(VkResult result, std::string call, std::string context, std::source_location where) {
  return detail::make_error(result, std::move(call), std::move(context), where);
}

}  // namespace membridge::vulkan
