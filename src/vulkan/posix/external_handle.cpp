// Linux: Vulkan memory and semaphores shared as opaque POSIX fds (VK_KHR_external_memory_fd,
// VK_KHR_external_semaphore_fd). An fd import takes the fd: membridge imports a duplicate and
// releases it only after success.
#include "../detail/external_handle.hpp"

#include "../detail/external_support.hpp"
#include "../detail/vk_error.hpp"

namespace membridge::vulkan::detail {

const VkExternalMemoryHandleTypeFlagBits memory_handle_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
const VkExternalSemaphoreHandleTypeFlagBits semaphore_handle_type = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
const char* const memory_extension = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
const char* const semaphore_extension = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
const char* const handle_name = "opaque fd";

result<VkResult> allocate_imported(const context_state& s, os::borrowed_shareable_handle handle,
                                   VkMemoryAllocateInfo allocate, VkDeviceMemory& memory) {
  // Vulkan owns the fd after a successful import; a failure leaves it to us (the unique_fd closes it).
  MEMBRIDGE_TRY_ASSIGN(os::unique_fd copy, handle.duplicate());
  VkImportMemoryFdInfoKHR import_info{VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR};
  import_info.pNext = allocate.pNext;
  import_info.handleType = memory_handle_type;
  import_info.fd = copy.get();
  allocate.pNext = &import_info;
  const VkResult rc = s.table.vkAllocateMemory(s.device, &allocate, nullptr, &memory);
  if (rc == VK_SUCCESS) static_cast<void>(copy.release());  // Vulkan owns it now
  return rc;
}

result<VkSemaphore> create_timeline_semaphore(const context_state& s, std::uint64_t initial_value, bool exportable) {
  VkExportSemaphoreCreateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO};
  export_info.handleTypes = semaphore_handle_type;
  return create_timeline(s, initial_value, exportable ? &export_info : nullptr);
}

result<void> import_semaphore(const context_state& s, VkSemaphore semaphore, os::borrowed_shareable_handle handle) {
  MEMBRIDGE_TRY_ASSIGN(os::unique_fd copy, handle.duplicate());
  VkImportSemaphoreFdInfoKHR info{VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR};
  info.semaphore = semaphore;
  info.handleType = semaphore_handle_type;
  info.fd = copy.get();
  if (const VkResult rc = s.table.vkImportSemaphoreFdKHR(s.device, &info); rc != VK_SUCCESS)
    return make_error(rc, "vkImportSemaphoreFdKHR", "importing a timeline semaphore");
  static_cast<void>(copy.release());  // Vulkan owns it now
  return ok();
}

result<os::shareable_handle> export_semaphore(const context_state& s, VkSemaphore semaphore,
                                              os::shareable_handle& /*first_export: unused, fds export freely*/) {
  VkSemaphoreGetFdInfoKHR info{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR};
  info.semaphore = semaphore;
  info.handleType = semaphore_handle_type;
  int raw = -1;
  if (const VkResult rc = s.table.vkGetSemaphoreFdKHR(s.device, &info, &raw); rc != VK_SUCCESS)
    return make_error(rc, "vkGetSemaphoreFdKHR");
  auto fd = os::unique_fd::from_native(raw);
  MEMBRIDGE_TRY(os::set_close_on_exec(fd));
  return fd;
}

}  // namespace membridge::vulkan::detail
