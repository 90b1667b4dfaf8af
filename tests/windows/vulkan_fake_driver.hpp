// A scripted Vulkan driver for the Windows tests (Wine has no Vulkan driver and no GPU): a
// vkGetInstanceProcAddr that hands out fake instance and device functions, which record the
// external-handle calls membridge makes (memory imports, semaphore creation, export and import with
// NT handles) and model what a real driver does with them: an NT handle import takes a reference of
// its own (DuplicateHandle) and never the caller's handle; an exportable semaphore's payload is a
// kernel object created with the export's SECURITY_ATTRIBUTES. Every semaphore is a timeline whose
// counter lives in its payload, a section (fake_timeline_payload.hpp) that an export hands out and
// an import replaces, so the fake CUDA driver's Win32 timeline imports of the same NT handle share
// the value; queue submits wait for and signal those counters (each submit runs when it is made:
// it returns once its waits are satisfied).
#pragma once

#include "fake_timeline_payload.hpp"

#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan.h>

#include <windows.h>

#include <cstdint>
#include <map>
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

/// One VkSemaphore: its payload (the driver's own reference) and a view of its counter.
struct fake_semaphore {
  HANDLE payload = nullptr;                      ///< A section: fake_timeline_payload.hpp.
  testing::timeline_payload* counter = nullptr;  ///< Mapped from `payload`.
  bool exportable = false;                       ///< Made with VkExportSemaphoreCreateInfo.
};

/// One vkQueueSubmit batch's timeline values (first wait and first signal; 0 when none).
struct fake_submit {
  std::uint64_t wait_value = 0;
  std::uint64_t signal_value = 0;
  std::uint32_t command_buffers = 0;
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
  HANDLE semaphore_payload = nullptr;     ///< The last exportable semaphore's kernel object (made with pAttributes).
  std::map<VkSemaphore, fake_semaphore> semaphores;  ///< Live semaphores (destroy closes and unmaps).
  int get_win32_handle_calls = 0;         ///< vkGetSemaphoreWin32HandleKHR calls.
  std::vector<HANDLE> semaphore_imports;  ///< VkImportSemaphoreWin32HandleInfoKHR::handle as passed.
  VkExternalSemaphoreHandleTypeFlagBits semaphore_import_type{};
  bool semaphore_import_handle_was_open = false;
  std::vector<fake_submit> submits;       ///< vkQueueSubmit batches, in order.
  VkResult submit_result = VK_SUCCESS;    ///< What vkQueueSubmit answers (scripted; nothing runs when not VK_SUCCESS).
  int timeline_misuse = 0;                ///< Signals that do not grow, waits that would never end (10 s).
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

/// The fake device adopted with the Win32 external memory and semaphore extensions, on a reset
/// driver state (a test's SetUp); adds a test failure and returns an empty context when adopt fails.
vulkan::device_context adopt_fake_win32_device();

/// A test's end on the fake driver (the context already gone): no unexpected call and no timeline
/// misuse, then reset().
void expect_fake_vulkan_clean();

}  // namespace membridge::test
