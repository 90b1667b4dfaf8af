// A scripted Vulkan driver for the Windows tests (Wine has no Vulkan driver and no GPU): a
// vkGetInstanceProcAddr that hands out fake instance and device functions, which record the
// external-handle calls membridge makes (memory imports, semaphore creation, export and import with
// NT handles) and model what a real driver does with them: an NT handle import takes a reference of
// its own (DuplicateHandle) and never the caller's handle; an exportable semaphore's payload is a
// kernel object created with the export's SECURITY_ATTRIBUTES.
#pragma once

#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan.h>

#include <windows.h>

#include <cstdint>
#include <string>
#include <vector>

namespace membridge::test {

/// One vkAllocateMemory that imported an NT handle.
struct fake_memory_import {
  HANDLE handle = nullptr;        ///< VkImportMemoryWin32HandleInfoKHR::handle as passed.
  bool handle_was_open = false;   ///< The handle named an open object during the call.
  VkExternalMemoryHandleTypeFlagBits handle_type{};  ///< ::handleType.
  bool named = false;             ///< ::name was not null.
  VkDeviceSize size = 0;          ///< VkMemoryAllocateInfo::allocationSize.
  std::uint32_t memory_type = 0;  ///< VkMemoryAllocateInfo::memoryTypeIndex.
  std::vector<unsigned char> first_bytes;  ///< The payload's first bytes, read through the driver's own reference.
};

/// What the fake driver saw and holds. One instance at a time (reset() between tests).
struct fake_vulkan_state {
  std::vector<fake_memory_import> memory_imports;
  VkResult allocate_result = VK_SUCCESS;  ///< What vkAllocateMemory answers (scripted).
  std::vector<HANDLE> driver_references;  ///< The driver's own duplicates (closed by vkFreeMemory / destroy).
  int live_memory = 0;
  int live_buffers = 0;
  int live_semaphores = 0;
  VkExternalMemoryHandleTypeFlags buffer_handle_types = 0;  ///< VkExternalMemoryBufferCreateInfo::handleTypes.
  bool buffer_bound = false;

  // Semaphores.
  bool export_info_seen = false;          ///< VkExportSemaphoreCreateInfo was chained.
  VkExternalSemaphoreHandleTypeFlags export_handle_types = 0;
  bool win32_export_info_seen = false;    ///< VkExportSemaphoreWin32HandleInfoKHR was chained.
  bool export_attributes_given = false;   ///< ...with pAttributes.
  DWORD export_access = 0;                ///< ...dwAccess.
  bool export_named = false;              ///< ...name was not null.
  HANDLE semaphore_payload = nullptr;     ///< The exportable semaphore's kernel object (made with pAttributes).
  int get_win32_handle_calls = 0;         ///< vkGetSemaphoreWin32HandleKHR calls.
  std::vector<HANDLE> semaphore_imports;  ///< VkImportSemaphoreWin32HandleInfoKHR::handle as passed.
  VkExternalSemaphoreHandleTypeFlagBits semaphore_import_type{};
  bool semaphore_import_handle_was_open = false;
  int unexpected_calls = 0;               ///< Calls of functions the tests do not expect.

  /// Closes what the driver still holds and forgets everything.
  void reset();
};

/// The state of the fake driver.
fake_vulkan_state& fake_vulkan();

/// The fake loader entry point.
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL fake_get_instance_proc_addr(VkInstance instance, const char* name);

/// adopt_info for the fake device with `extensions` enabled (timeline semaphores on).
vulkan::adopt_info fake_adopt_info(const std::vector<std::string>& extensions);

}  // namespace membridge::test
