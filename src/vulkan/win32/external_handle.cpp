// Windows: Vulkan memory and semaphores shared as opaque NT handles (VK_KHR_external_memory_win32,
// VK_KHR_external_semaphore_win32). Unlike an fd, an NT handle import never takes ownership: the
// caller's handle is passed as it is and stays the caller's to close. Exports carry a security
// descriptor that grants the current user alone.
#include "../detail/external_handle.hpp"

#include "../detail/external_support.hpp"
#include "../detail/vk_error.hpp"

#include <membridge/os/current_user_security.hpp>

#include <optional>
#include <utility>

namespace membridge::vulkan::detail {

namespace {

// The access NT handles of exported payloads carry: what the Vulkan specification names as the
// default for opaque Win32 handles (DXGI_SHARED_RESOURCE_READ | DXGI_SHARED_RESOURCE_WRITE).
constexpr DWORD shared_read_write = 0x80000000UL | 0x1UL;

}  // namespace

const char* const memory_extension = VK_KHR_EXTERNAL_MEMORY_WIN32_EXTENSION_NAME;
const char* const semaphore_extension = VK_KHR_EXTERNAL_SEMAPHORE_WIN32_EXTENSION_NAME;
const char* const handle_name = "opaque NT handle";
const VkExternalMemoryHandleTypeFlagBits memory_handle_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_BIT;
const VkExternalSemaphoreHandleTypeFlagBits semaphore_handle_type = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_BIT;

result<VkResult> allocate_imported(const context_state& s, os::borrowed_shareable_handle handle,
                                   VkMemoryAllocateInfo allocate, VkDeviceMemory& memory) {
  VkImportMemoryWin32HandleInfoKHR import_info{VK_STRUCTURE_TYPE_IMPORT_MEMORY_WIN32_HANDLE_INFO_KHR};
  import_info.pNext = allocate.pNext;
  import_info.handleType = memory_handle_type;
  import_info.handle = handle.get();  // not taken by Vulkan: the caller keeps (and closes) it
  allocate.pNext = &import_info;
  return s.table.vkAllocateMemory(s.device, &allocate, nullptr, &memory);
}

result<VkSemaphore> create_timeline_semaphore(const context_state& s, std::uint64_t initial_value, bool exportable) {
  std::optional<os::current_user_security> security;
  if (exportable) {
    MEMBRIDGE_TRY_ASSIGN(auto made, os::current_user_security::create());
    security.emplace(std::move(made));
  }
  VkExportSemaphoreWin32HandleInfoKHR win32_info{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_WIN32_HANDLE_INFO_KHR};
  win32_info.pAttributes =
      security ? static_cast<const SECURITY_ATTRIBUTES*>(security->security_attributes()) : nullptr;
  win32_info.dwAccess = shared_read_write;
  win32_info.name = nullptr;  // unnamed: reached only through handles membridge hands out
  VkExportSemaphoreCreateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO};
  export_info.pNext = &win32_info;
  export_info.handleTypes = semaphore_handle_type;
  return create_timeline(s, initial_value, exportable ? &export_info : nullptr);
}

result<void> import_semaphore(const context_state& s, VkSemaphore semaphore, os::borrowed_shareable_handle handle) {
  VkImportSemaphoreWin32HandleInfoKHR info{VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_WIN32_HANDLE_INFO_KHR};
  info.semaphore = semaphore;
  info.handleType = semaphore_handle_type;
  info.handle = handle.get();  // not taken by Vulkan: the caller keeps (and closes) it
  info.name = nullptr;
  if (const VkResult rc = s.table.vkImportSemaphoreWin32HandleKHR(s.device, &info); rc != VK_SUCCESS)
    return make_error(rc, "vkImportSemaphoreWin32HandleKHR", "importing a timeline semaphore");
  return ok();
}

result<os::shareable_handle> export_semaphore(const context_state& s, VkSemaphore semaphore,
                                              os::shareable_handle& first_export) {
  // Vulkan allows one vkGetSemaphoreWin32HandleKHR per semaphore and NT handle type: the first
  // export is kept, and every caller gets a duplicate of it.
  if (!first_export.valid()) {
    VkSemaphoreGetWin32HandleInfoKHR info{VK_STRUCTURE_TYPE_SEMAPHORE_GET_WIN32_HANDLE_INFO_KHR};
    info.semaphore = semaphore;
    info.handleType = semaphore_handle_type;
    HANDLE raw = nullptr;
    if (const VkResult rc = s.table.vkGetSemaphoreWin32HandleKHR(s.device, &info, &raw); rc != VK_SUCCESS)
      return make_error(rc, "vkGetSemaphoreWin32HandleKHR");
    first_export = os::unique_handle(raw);
    if (!first_export.valid())
      return error(errc::internal, "vkGetSemaphoreWin32HandleKHR", "VK_SUCCESS with no handle");
  }
  return os::unique_handle::duplicate(first_export.borrow());
}

}  // namespace membridge::vulkan::detail
