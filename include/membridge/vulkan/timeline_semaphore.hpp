// membridge/vulkan/timeline_semaphore.hpp: a Vulkan timeline semaphore that CUDA and GL can share.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/os/shareable_handle.hpp>
#include <membridge/vulkan/device_context.hpp>

#include <vulkan/vulkan_core.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace membridge::vulkan {

/// A timeline semaphore (VK_SEMAPHORE_TYPE_TIMELINE). Created exportable as an opaque fd (Linux) or an
/// opaque NT handle (Windows), it is imported by CUDA (cuda::external_semaphore) or GL, and all of them
/// signal and wait on the same 64-bit counter.
///
/// Move-only; destruction destroys the semaphore. Pending GPU waits or signals on it must be done first.
class timeline_semaphore {
 public:
  /// Creates a timeline semaphore with `initial_value`; exportable as the platform's handle when
  /// `exportable` (Windows: NT handles whose security descriptor grants the current user alone).
  /// Errors: unsupported without timeline semaphores, or (exportable) without
  /// VK_KHR_external_semaphore_fd (Linux) / VK_KHR_external_semaphore_win32 (Windows) or when the
  /// driver cannot export timeline semaphores as such handles.
  /// Ownership: the object owns the semaphore.
  [[nodiscard]] static result<timeline_semaphore> create(const device_context& context, std::uint64_t initial_value = 0,
                                                         bool exportable = true);

  /// Imports a timeline semaphore exported by another device or process (its payload is shared).
  /// Ownership: borrows `handle`; the caller keeps it. Linux: Vulkan takes a duplicate of the fd on
  /// success. Windows: the NT handle itself is imported and never taken (NT handle imports do not
  /// transfer ownership): the caller closes it when it wants, e.g. right after this returns.
  /// Errors: unsupported without VK_KHR_external_semaphore_fd / _win32; invalid_argument when Vulkan
  /// rejects the handle.
  [[nodiscard]] static result<timeline_semaphore> import(const device_context& context,
                                                         os::borrowed_shareable_handle handle);

  /// An empty object.
  timeline_semaphore() noexcept = default;
  timeline_semaphore(const timeline_semaphore&) = delete;
  timeline_semaphore& operator=(const timeline_semaphore&) = delete;
  /// Takes over `other`'s semaphore; `other` becomes empty.
  timeline_semaphore(timeline_semaphore&& other) noexcept;
  /// Destroys the held semaphore, then takes over `other`'s.
  timeline_semaphore& operator=(timeline_semaphore&& other) noexcept;
  /// Destroys the semaphore.
  ~timeline_semaphore();

  /// Exports a new handle referring to this semaphore: an opaque fd (Linux) or an NT handle (Windows;
  /// Vulkan exports one per semaphore, so later calls return duplicates of the first, which this
  /// object keeps until it is destroyed). Not to be called from two threads at once on one object.
  /// Ownership: the caller owns the returned handle (a close-on-exec fd, or an NT handle to CloseHandle).
  /// Errors: unsupported when created without `exportable`.
  [[nodiscard]] result<os::shareable_handle> export_handle() const;
#if !defined(_WIN32)
  /// export_handle() under its Linux name. Ownership: the caller owns the returned fd (close-on-exec).
  [[nodiscard]] result<os::unique_fd> export_fd() const { return export_handle(); }
#endif

  /// The counter's current value (vkGetSemaphoreCounterValue).
  [[nodiscard]] result<std::uint64_t> value() const;
  /// Sets the counter to `value` from the host (must be greater than the current value).
  [[nodiscard]] result<void> signal(std::uint64_t value) const;
  /// Waits on the host until the counter reaches `value`: polls it (vkGetSemaphoreCounterValue), a
  /// few times back to back, then every 100 us, so the wait ends at most ~0.1-0.2 ms after the value
  /// is reached (a blocking vkWaitSemaphores woke up to ~10 ms late on NVIDIA's driver for values
  /// signalled by CUDA or another process). Costs a little CPU while it waits.
  /// Errors: timeout when `timeout` passes first; device_lost.
  [[nodiscard]] result<void> wait(std::uint64_t value, std::chrono::nanoseconds timeout) const;

  /// The semaphore. Ownership: owned by this object.
  [[nodiscard]] VkSemaphore get() const noexcept { return semaphore_; }
  /// True when created exportable.
  [[nodiscard]] bool exportable() const noexcept { return exportable_; }
  /// True when a semaphore is held.
  [[nodiscard]] bool valid() const noexcept { return semaphore_ != VK_NULL_HANDLE; }

 private:
  void reset() noexcept;

  std::shared_ptr<const detail::context_state> context_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  bool exportable_ = false;
  mutable os::shareable_handle first_export_;  // Windows: the one NT handle Vulkan exports (duplicated out)
};

}  // namespace membridge::vulkan
