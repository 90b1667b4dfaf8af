// Private: the platform's external handle for Vulkan memory and semaphores, in one place for the
// module: an opaque POSIX fd on Linux (src/vulkan/posix/), an opaque NT HANDLE on Windows
// (src/vulkan/win32/). Extension names, handle-type bits, and the calls that import and export.
#pragma once

#include "context_state.hpp"

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>

namespace membridge::vulkan::detail {

/// VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT (Linux) or ..._OPAQUE_WIN32_BIT (Windows).
extern const VkExternalMemoryHandleTypeFlagBits memory_handle_type;
/// VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT (Linux) or ..._OPAQUE_WIN32_BIT (Windows).
extern const VkExternalSemaphoreHandleTypeFlagBits semaphore_handle_type;
/// VK_KHR_external_memory_fd (Linux) or VK_KHR_external_memory_win32 (Windows).
extern const char* const memory_extension;
/// VK_KHR_external_semaphore_fd (Linux) or VK_KHR_external_semaphore_win32 (Windows).
extern const char* const semaphore_extension;
/// How errors name the handle: "opaque fd" or "opaque NT handle".
extern const char* const handle_name;

/// vkAllocateMemory of `allocate` with the platform's import struct for `handle` chained in front
/// of `allocate.pNext`; `memory` receives the allocation on VK_SUCCESS.
/// Returns the VkResult of vkAllocateMemory (an error only when the fd could not be duplicated).
/// Ownership: Linux: imports a close-on-exec duplicate of the fd, which Vulkan takes on success and
/// which is closed here on failure. Windows: passes the caller's NT handle itself: an NT handle
/// import never takes ownership, so the caller keeps its handle and closes it when it wants.
[[nodiscard]] result<VkResult> allocate_imported(const context_state& s, os::borrowed_shareable_handle handle,
                                                 VkMemoryAllocateInfo allocate, VkDeviceMemory& memory);

/// Creates a timeline semaphore with `initial_value`, exportable as the platform's handle when
/// `exportable`. Windows: the export info carries a security descriptor that grants the current
/// user alone (SDDL "D:P(A;;GA;;;<user SID>)"), never Everyone.
[[nodiscard]] result<VkSemaphore> create_timeline_semaphore(const context_state& s, std::uint64_t initial_value,
                                                            bool exportable);

/// Imports `handle` into `semaphore` (vkImportSemaphoreFdKHR / vkImportSemaphoreWin32HandleKHR).
/// Ownership: Linux: a duplicate of the fd, taken by Vulkan on success (closed here on failure).
/// Windows: the caller's NT handle itself, not taken (the caller closes it when it wants).
[[nodiscard]] result<void> import_semaphore(const context_state& s, VkSemaphore semaphore,
                                            os::borrowed_shareable_handle handle);

/// Exports a new handle of `semaphore` (vkGetSemaphoreFdKHR / vkGetSemaphoreWin32HandleKHR).
/// `first_export` is the semaphore's owner's slot for the first NT handle: Vulkan allows one
/// vkGetSemaphoreWin32HandleKHR per semaphore, so Windows keeps that one there and returns
/// duplicates of it (Linux leaves it empty: each call exports a new fd).
/// Ownership: the caller owns the result (a close-on-exec fd, or an NT handle); `first_export`
/// stays with the semaphore's owner.
[[nodiscard]] result<os::shareable_handle> export_semaphore(const context_state& s, VkSemaphore semaphore,
                                                            os::shareable_handle& first_export);

}  // namespace membridge::vulkan::detail
