// The scripted Vulkan driver of the Windows tests (see vulkan_fake_driver.hpp).
#include "vulkan_fake_driver.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>
#include <type_traits>

namespace membridge::test {

namespace {

// Dispatchable handles are pointers to driver objects: any distinct addresses do.
struct fake_object {
  int tag;
};
fake_object instance_object{1};
fake_object physical_device_object{2};
fake_object device_object{3};
fake_object queue_object{4};
std::uint64_t next_handle = 0x1000;

// A chained structure of type `type` in `next`, or null.
template <class T>
const T* find_in_chain(const void* next, VkStructureType type) {
  for (auto* s = static_cast<const VkBaseInStructure*>(next); s != nullptr; s = s->pNext)
    if (s->sType == type) return reinterpret_cast<const T*>(s);
  return nullptr;
}

bool is_open(HANDLE h) {
  DWORD flags = 0;
  return h != nullptr && ::GetHandleInformation(h, &flags) != 0;
}

// A duplicate that the fake driver owns (as a real driver keeps its own reference to a payload).
HANDLE driver_reference(HANDLE h) {
  HANDLE copy = nullptr;
  const HANDLE self = ::GetCurrentProcess();
  if (::DuplicateHandle(self, h, self, &copy, 0, FALSE, DUPLICATE_SAME_ACCESS) == 0) return nullptr;
  fake_vulkan().driver_references.push_back(copy);
  return copy;
}

// The first bytes of a file-mapping payload, read through `h`.
std::vector<unsigned char> read_payload(HANDLE h, std::size_t bytes) {
  void* view = ::MapViewOfFile(h, FILE_MAP_READ, 0, 0, bytes);
  if (view == nullptr) return {};
  std::vector<unsigned char> out(static_cast<const unsigned char*>(view), static_cast<const unsigned char*>(view) + bytes);
  ::UnmapViewOfFile(view);
  return out;
}

template <class Fn>
struct unexpected;
template <class R, class... A>
struct unexpected<R(VKAPI_PTR*)(A...)> {
  static R VKAPI_CALL call(A...) {
    ++fake_vulkan().unexpected_calls;
    if constexpr (!std::is_void_v<R>) return R{};
  }
};

template <class Pfn>
PFN_vkVoidFunction unexpected_function() {
  return reinterpret_cast<PFN_vkVoidFunction>(&unexpected<Pfn>::call);
}

// ------------------------------------------------------------------------- instance level ---
VKAPI_ATTR void VKAPI_CALL get_properties2(VkPhysicalDevice, VkPhysicalDeviceProperties2* props) {
  props->properties.apiVersion = VK_API_VERSION_1_3;
  std::strcpy(props->properties.deviceName, "membridge fake Vulkan device");
  for (auto* s = static_cast<VkBaseOutStructure*>(props->pNext); s != nullptr; s = s->pNext)
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES) {
      auto* id = reinterpret_cast<VkPhysicalDeviceIDProperties*>(s);
      for (std::uint8_t i = 0; i < VK_UUID_SIZE; ++i) id->deviceUUID[i] = static_cast<std::uint8_t>(0x10 + i);  // fake CUDA device 0
    }
}

VKAPI_ATTR void VKAPI_CALL get_memory_properties(VkPhysicalDevice, VkPhysicalDeviceMemoryProperties* mem) {
  *mem = {};
  mem->memoryTypeCount = 2;
  mem->memoryTypes[0].propertyFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;  // not for imports
  mem->memoryTypes[1].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  mem->memoryHeapCount = 1;
  mem->memoryHeaps[0].size = 1ULL << 30;
}

VKAPI_ATTR void VKAPI_CALL get_external_buffer_properties(VkPhysicalDevice, const VkPhysicalDeviceExternalBufferInfo* info,
                                                          VkExternalBufferProperties* props) {
  const bool win32 = info->handleType == VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_BIT;
  props->externalMemoryProperties.externalMemoryFeatures = win32 ? VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT : 0;
  props->externalMemoryProperties.compatibleHandleTypes =
      win32 ? static_cast<VkExternalMemoryHandleTypeFlags>(info->handleType) : 0U;
}

VKAPI_ATTR void VKAPI_CALL get_external_semaphore_properties(VkPhysicalDevice,
                                                             const VkPhysicalDeviceExternalSemaphoreInfo* info,
                                                             VkExternalSemaphoreProperties* props) {
  const bool win32 = info->handleType == VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_BIT;
  props->externalSemaphoreFeatures =
      win32 ? VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT | VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT : 0;
}

// --------------------------------------------------------------------------- device level ---
VKAPI_ATTR VkResult VKAPI_CALL allocate_memory(VkDevice, const VkMemoryAllocateInfo* info, const VkAllocationCallbacks*,
                                               VkDeviceMemory* memory) {
  auto& f = fake_vulkan();
  const auto* import = find_in_chain<VkImportMemoryWin32HandleInfoKHR>(
      info->pNext, VK_STRUCTURE_TYPE_IMPORT_MEMORY_WIN32_HANDLE_INFO_KHR);
  if (import == nullptr) {
    ++f.unexpected_calls;
    return VK_ERROR_INITIALIZATION_FAILED;
  }
  fake_memory_import record;
  record.handle = import->handle;
  record.handle_was_open = is_open(import->handle);
  record.handle_type = import->handleType;
  record.named = import->name != nullptr;
  record.size = info->allocationSize;
  record.memory_type = info->memoryTypeIndex;
  if (f.allocate_result == VK_SUCCESS && record.handle_was_open) {
    const HANDLE own = driver_reference(import->handle);
    record.first_bytes = read_payload(own, 16);
  }
  f.memory_imports.push_back(record);
  if (f.allocate_result != VK_SUCCESS) return f.allocate_result;
  if (!record.handle_was_open) return VK_ERROR_INVALID_EXTERNAL_HANDLE;
  *memory = reinterpret_cast<VkDeviceMemory>(next_handle++);
  ++f.live_memory;
  return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL free_memory(VkDevice, VkDeviceMemory memory, const VkAllocationCallbacks*) {
  if (memory != VK_NULL_HANDLE) --fake_vulkan().live_memory;
}

VKAPI_ATTR VkResult VKAPI_CALL create_buffer(VkDevice, const VkBufferCreateInfo* info, const VkAllocationCallbacks*,
                                             VkBuffer* buffer) {
  auto& f = fake_vulkan();
  const auto* external = find_in_chain<VkExternalMemoryBufferCreateInfo>(
      info->pNext, VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO);
  f.buffer_handle_types = external != nullptr ? external->handleTypes : 0;
  *buffer = reinterpret_cast<VkBuffer>(next_handle++);
  ++f.live_buffers;
  return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL destroy_buffer(VkDevice, VkBuffer buffer, const VkAllocationCallbacks*) {
  if (buffer != VK_NULL_HANDLE) --fake_vulkan().live_buffers;
}

VKAPI_ATTR void VKAPI_CALL get_buffer_requirements2(VkDevice, const VkBufferMemoryRequirementsInfo2*,
                                                    VkMemoryRequirements2* requirements) {
  requirements->memoryRequirements.size = 4096;
  requirements->memoryRequirements.alignment = 256;
  requirements->memoryRequirements.memoryTypeBits = 0x3;
}

VKAPI_ATTR VkResult VKAPI_CALL bind_buffer_memory(VkDevice, VkBuffer, VkDeviceMemory memory, VkDeviceSize offset) {
  fake_vulkan().buffer_bound = memory != VK_NULL_HANDLE && offset == 0;
  return VK_SUCCESS;
}

// The semaphore records are shared by a test's producer and consumer threads: an SRW lock (no
// kernel object, so nothing for the handle-leak listener to count).
SRWLOCK semaphore_lock = SRWLOCK_INIT;

class exclusive {
 public:
  exclusive() { ::AcquireSRWLockExclusive(&semaphore_lock); }
  ~exclusive() { ::ReleaseSRWLockExclusive(&semaphore_lock); }
  exclusive(const exclusive&) = delete;
  exclusive& operator=(const exclusive&) = delete;
};

constexpr auto stall_limit = std::chrono::seconds(10);  // a wait longer than this would never end

// The counter of `semaphore`, or null (and an unexpected call) for an unknown one. The view stays
// valid until the semaphore is destroyed (a test destroys none while another thread uses it).
testing::timeline_payload* counter_of(VkSemaphore semaphore) {
  const exclusive lock;
  auto& f = fake_vulkan();
  const auto s = f.semaphores.find(semaphore);
  if (s == f.semaphores.end()) {
    ++f.unexpected_calls;
    return nullptr;
  }
  return s->second.counter;
}

// A timeline signal: the value must grow.
void signal_counter(testing::timeline_payload* counter, std::uint64_t value) {
  if (testing::load_timeline_value(counter) >= value) {
    const exclusive lock;
    ++fake_vulkan().timeline_misuse;
  }
  testing::store_timeline_value(counter, value);
}

VKAPI_ATTR VkResult VKAPI_CALL create_semaphore(VkDevice, const VkSemaphoreCreateInfo* info, const VkAllocationCallbacks*,
                                                VkSemaphore* semaphore) {
  auto& f = fake_vulkan();
  const auto* type = find_in_chain<VkSemaphoreTypeCreateInfo>(info->pNext, VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  const std::uint64_t initial = type != nullptr && type->semaphoreType == VK_SEMAPHORE_TYPE_TIMELINE ? type->initialValue : 0;
  SECURITY_ATTRIBUTES* attributes = nullptr;
  const auto* exported = find_in_chain<VkExportSemaphoreCreateInfo>(info->pNext,
                                                                    VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO);
  const exclusive lock;
  if (exported != nullptr) {
    f.export_info_seen = true;
    f.export_handle_types = exported->handleTypes;
    const auto* win32 = find_in_chain<VkExportSemaphoreWin32HandleInfoKHR>(
        info->pNext, VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_WIN32_HANDLE_INFO_KHR);
    f.win32_export_info_seen = win32 != nullptr;
    if (win32 != nullptr) {
      f.export_attributes_given = win32->pAttributes != nullptr;
      f.export_access = win32->dwAccess;
      f.export_named = win32->name != nullptr;
      attributes = const_cast<SECURITY_ATTRIBUTES*>(win32->pAttributes);
    }
  }
  // The payload: a kernel object with the export's security attributes, as a driver makes it.
  fake_semaphore record;
  record.payload = testing::create_timeline_payload(attributes, initial);
  record.counter = testing::map_timeline_payload(record.payload);
  record.exportable = exported != nullptr;
  if (record.counter == nullptr) {
    if (record.payload != nullptr) ::CloseHandle(record.payload);
    return VK_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (record.exportable) f.semaphore_payload = record.payload;
  *semaphore = reinterpret_cast<VkSemaphore>(next_handle++);
  f.semaphores[*semaphore] = record;
  ++f.live_semaphores;
  return VK_SUCCESS;
}

void release(fake_semaphore& record) {
  testing::unmap_timeline_payload(record.counter);
  ::CloseHandle(record.payload);
  record = {};
}

VKAPI_ATTR void VKAPI_CALL destroy_semaphore(VkDevice, VkSemaphore semaphore, const VkAllocationCallbacks*) {
  if (semaphore == VK_NULL_HANDLE) return;
  const exclusive lock;
  auto& f = fake_vulkan();
  const auto s = f.semaphores.find(semaphore);
  if (s == f.semaphores.end()) {
    ++f.unexpected_calls;
    return;
  }
  release(s->second);
  f.semaphores.erase(s);
  --f.live_semaphores;
}

VKAPI_ATTR VkResult VKAPI_CALL get_semaphore_win32_handle(VkDevice, const VkSemaphoreGetWin32HandleInfoKHR* info,
                                                          HANDLE* handle) {
  const exclusive lock;
  auto& f = fake_vulkan();
  ++f.get_win32_handle_calls;
  const auto s = f.semaphores.find(info->semaphore);
  if (info->handleType != VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_BIT || s == f.semaphores.end() ||
      !s->second.exportable)
    return VK_ERROR_INVALID_EXTERNAL_HANDLE;
  const HANDLE self = ::GetCurrentProcess();
  if (::DuplicateHandle(self, s->second.payload, self, handle, 0, FALSE, DUPLICATE_SAME_ACCESS) == 0)
    return VK_ERROR_OUT_OF_HOST_MEMORY;
  return VK_SUCCESS;  // the application owns the new handle
}

// An import replaces the semaphore's payload with the one the handle names (the driver's own
// reference: the caller keeps its handle). A handle naming no timeline payload is refused.
VKAPI_ATTR VkResult VKAPI_CALL import_semaphore_win32_handle(VkDevice, const VkImportSemaphoreWin32HandleInfoKHR* info) {
  const exclusive lock;
  auto& f = fake_vulkan();
  f.semaphore_imports.push_back(info->handle);
  f.semaphore_import_type = info->handleType;
  f.semaphore_import_handle_was_open = is_open(info->handle);
  const auto s = f.semaphores.find(info->semaphore);
  if (s == f.semaphores.end()) {
    ++f.unexpected_calls;
    return VK_ERROR_INVALID_EXTERNAL_HANDLE;
  }
  if (!f.semaphore_import_handle_was_open) return VK_ERROR_INVALID_EXTERNAL_HANDLE;
  testing::timeline_payload* counter = testing::map_timeline_payload(info->handle);
  if (counter == nullptr) return VK_ERROR_INVALID_EXTERNAL_HANDLE;
  HANDLE own = nullptr;
  const HANDLE self = ::GetCurrentProcess();
  if (::DuplicateHandle(self, info->handle, self, &own, 0, FALSE, DUPLICATE_SAME_ACCESS) == 0) {
    testing::unmap_timeline_payload(counter);
    return VK_ERROR_OUT_OF_HOST_MEMORY;
  }
  release(s->second);
  s->second.payload = own;
  s->second.counter = counter;
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL get_semaphore_counter_value(VkDevice, VkSemaphore semaphore, std::uint64_t* value) {
  testing::timeline_payload* counter = counter_of(semaphore);
  if (counter == nullptr) return VK_ERROR_DEVICE_LOST;
  *value = testing::load_timeline_value(counter);
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL signal_semaphore(VkDevice, const VkSemaphoreSignalInfo* info) {
  testing::timeline_payload* counter = counter_of(info->semaphore);
  if (counter == nullptr) return VK_ERROR_DEVICE_LOST;
  signal_counter(counter, info->value);
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL wait_semaphores(VkDevice, const VkSemaphoreWaitInfo* info, std::uint64_t timeout) {
  const bool any = (info->flags & VK_SEMAPHORE_WAIT_ANY_BIT) != 0;
  // UINT64_MAX (wait forever) and other huge timeouts: an hour, so the deadline cannot overflow.
  constexpr std::uint64_t hour_ns = 3600ULL * 1000 * 1000 * 1000;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<std::int64_t>(std::min(timeout, hour_ns)));
  for (;;) {
    std::uint32_t reached = 0;
    for (std::uint32_t i = 0; i < info->semaphoreCount; ++i) {
      testing::timeline_payload* counter = counter_of(info->pSemaphores[i]);
      if (counter == nullptr) return VK_ERROR_DEVICE_LOST;
      if (testing::load_timeline_value(counter) >= info->pValues[i]) ++reached;
    }
    if (any ? reached > 0 : reached == info->semaphoreCount) return VK_SUCCESS;
    if (std::chrono::steady_clock::now() >= deadline) return VK_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// One batch: its timeline waits must be reached within stall_limit (the queue would stall), then its
// signals are set.
VkResult run_batch(const VkSubmitInfo& batch) {
  const auto* values = find_in_chain<VkTimelineSemaphoreSubmitInfo>(batch.pNext,
                                                                   VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  if (values == nullptr || values->waitSemaphoreValueCount != batch.waitSemaphoreCount ||
      values->signalSemaphoreValueCount != batch.signalSemaphoreCount) {
    const exclusive lock;
    ++fake_vulkan().timeline_misuse;
    return VK_ERROR_DEVICE_LOST;
  }
  fake_submit record;
  record.command_buffers = batch.commandBufferCount;
  for (std::uint32_t i = 0; i < batch.waitSemaphoreCount; ++i) {
    testing::timeline_payload* counter = counter_of(batch.pWaitSemaphores[i]);
    if (counter == nullptr) return VK_ERROR_DEVICE_LOST;
    if (!testing::wait_timeline_value(counter, values->pWaitSemaphoreValues[i], stall_limit)) {
      const exclusive lock;
      ++fake_vulkan().timeline_misuse;
      return VK_ERROR_DEVICE_LOST;
    }
    if (i == 0) record.wait_value = values->pWaitSemaphoreValues[i];
  }
  for (std::uint32_t i = 0; i < batch.signalSemaphoreCount; ++i) {
    testing::timeline_payload* counter = counter_of(batch.pSignalSemaphores[i]);
    if (counter == nullptr) return VK_ERROR_DEVICE_LOST;
    signal_counter(counter, values->pSignalSemaphoreValues[i]);
    if (i == 0) record.signal_value = values->pSignalSemaphoreValues[i];
  }
  const exclusive lock;
  fake_vulkan().submits.push_back(record);
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL queue_submit(VkQueue, std::uint32_t count, const VkSubmitInfo* batches, VkFence fence) {
  {
    const exclusive lock;
    auto& f = fake_vulkan();
    if (fence != VK_NULL_HANDLE) ++f.unexpected_calls;  // fences are not modelled
    if (f.submit_result != VK_SUCCESS) return f.submit_result;
  }
  for (std::uint32_t i = 0; i < count; ++i)
    if (const VkResult rc = run_batch(batches[i]); rc != VK_SUCCESS) return rc;
  return VK_SUCCESS;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_device_proc_addr(VkDevice, const char* name) {
  const std::string_view n(name);
  if (n == "vkAllocateMemory") return reinterpret_cast<PFN_vkVoidFunction>(&allocate_memory);
  if (n == "vkFreeMemory") return reinterpret_cast<PFN_vkVoidFunction>(&free_memory);
  if (n == "vkCreateBuffer") return reinterpret_cast<PFN_vkVoidFunction>(&create_buffer);
  if (n == "vkDestroyBuffer") return reinterpret_cast<PFN_vkVoidFunction>(&destroy_buffer);
  if (n == "vkGetBufferMemoryRequirements2") return reinterpret_cast<PFN_vkVoidFunction>(&get_buffer_requirements2);
  if (n == "vkBindBufferMemory") return reinterpret_cast<PFN_vkVoidFunction>(&bind_buffer_memory);
  if (n == "vkCreateSemaphore") return reinterpret_cast<PFN_vkVoidFunction>(&create_semaphore);
  if (n == "vkDestroySemaphore") return reinterpret_cast<PFN_vkVoidFunction>(&destroy_semaphore);
  if (n == "vkGetSemaphoreWin32HandleKHR") return reinterpret_cast<PFN_vkVoidFunction>(&get_semaphore_win32_handle);
  if (n == "vkImportSemaphoreWin32HandleKHR")
    return reinterpret_cast<PFN_vkVoidFunction>(&import_semaphore_win32_handle);
  if (n == "vkGetSemaphoreCounterValue") return reinterpret_cast<PFN_vkVoidFunction>(&get_semaphore_counter_value);
  if (n == "vkSignalSemaphore") return reinterpret_cast<PFN_vkVoidFunction>(&signal_semaphore);
  if (n == "vkWaitSemaphores") return reinterpret_cast<PFN_vkVoidFunction>(&wait_semaphores);
  if (n == "vkQueueSubmit") return reinterpret_cast<PFN_vkVoidFunction>(&queue_submit);
  return nullptr;  // the rest of the device table stays empty
}

}  // namespace

void fake_vulkan_state::reset() {
  const exclusive lock;
  for (HANDLE h : driver_references) ::CloseHandle(h);
  for (auto& [semaphore, record] : semaphores) release(record);
  *this = fake_vulkan_state{};
}

fake_vulkan_state& fake_vulkan() {
  static fake_vulkan_state state;
  return state;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_get_instance_proc_addr(VkInstance, const char* name) {
  const std::string_view n(name);
  if (n == "vkGetDeviceProcAddr") return reinterpret_cast<PFN_vkVoidFunction>(&get_device_proc_addr);
  if (n == "vkGetPhysicalDeviceProperties2") return reinterpret_cast<PFN_vkVoidFunction>(&get_properties2);
  if (n == "vkGetPhysicalDeviceMemoryProperties") return reinterpret_cast<PFN_vkVoidFunction>(&get_memory_properties);
  if (n == "vkGetPhysicalDeviceExternalBufferProperties")
    return reinterpret_cast<PFN_vkVoidFunction>(&get_external_buffer_properties);
  if (n == "vkGetPhysicalDeviceExternalSemaphoreProperties")
    return reinterpret_cast<PFN_vkVoidFunction>(&get_external_semaphore_properties);
  // Loaded by instance_api::load but not called by the code under test.
  if (n == "vkEnumeratePhysicalDevices") return unexpected_function<PFN_vkEnumeratePhysicalDevices>();
  if (n == "vkGetPhysicalDeviceProperties") return unexpected_function<PFN_vkGetPhysicalDeviceProperties>();
  if (n == "vkGetPhysicalDeviceFeatures2") return unexpected_function<PFN_vkGetPhysicalDeviceFeatures2>();
  if (n == "vkGetPhysicalDeviceQueueFamilyProperties")
    return unexpected_function<PFN_vkGetPhysicalDeviceQueueFamilyProperties>();
  if (n == "vkEnumerateDeviceExtensionProperties") return unexpected_function<PFN_vkEnumerateDeviceExtensionProperties>();
  if (n == "vkGetPhysicalDeviceImageFormatProperties2")
    return unexpected_function<PFN_vkGetPhysicalDeviceImageFormatProperties2>();
  if (n == "vkGetPhysicalDeviceFormatProperties") return unexpected_function<PFN_vkGetPhysicalDeviceFormatProperties>();
  if (n == "vkCreateDevice") return unexpected_function<PFN_vkCreateDevice>();
  if (n == "vkDestroyInstance") return unexpected_function<PFN_vkDestroyInstance>();
  return nullptr;
}

vulkan::adopt_info fake_adopt_info(const std::vector<std::string>& extensions) {
  vulkan::adopt_info info;
  info.get_instance_proc_addr = &fake_get_instance_proc_addr;
  info.instance = reinterpret_cast<VkInstance>(&instance_object);
  info.physical_device = reinterpret_cast<VkPhysicalDevice>(&physical_device_object);
  info.device = reinterpret_cast<VkDevice>(&device_object);
  info.api_version = VK_API_VERSION_1_2;
  info.enabled_extensions = extensions;
  info.features.timeline_semaphore = true;
  info.graphics.queue = reinterpret_cast<VkQueue>(&queue_object);
  info.graphics.family = 0;
  return info;
}

vulkan::device_context adopt_fake_win32_device() {
  fake_vulkan().reset();
  auto made = vulkan::device_context::adopt(fake_adopt_info(
      {VK_KHR_EXTERNAL_MEMORY_WIN32_EXTENSION_NAME, VK_KHR_EXTERNAL_SEMAPHORE_WIN32_EXTENSION_NAME}));
  if (!made) {
    ADD_FAILURE() << made.error().message();
    return {};
  }
  return std::move(*made);
}

void expect_fake_vulkan_clean() {
  EXPECT_EQ(fake_vulkan().unexpected_calls, 0);
  EXPECT_EQ(fake_vulkan().timeline_misuse, 0) << "a signal that did not grow or a wait that never ended";
  fake_vulkan().reset();
}

}  // namespace membridge::test
