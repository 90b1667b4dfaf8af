// membridge/cuda/external_semaphore.hpp: a Vulkan or GL timeline semaphore imported into CUDA.
#pragma once

#include <membridge/core/result.hpp>
#include <membridge/cuda/device.hpp>
#include <membridge/os/shareable_handle.hpp>

#include <cstdint>
#include <memory>
#include <span>

namespace membridge::cuda {

/// A timeline semaphore another API exported as an opaque fd (Vulkan's vkGetSemaphoreFdKHR) or, on
/// Windows, an NT handle (vkGetSemaphoreWin32HandleKHR), imported with cuImportExternalSemaphore. CUDA streams signal and wait on it; the counter is the one Vulkan
/// (and GL) see.
///
/// A stream that waits on an external semaphore makes later kernel launches on the host block until
/// the wait is resolved (measured ~140 us on an H100): enqueue from a thread that may block, not the
/// render thread (see docs/synchronization.md).
///
/// Move-only; destruction destroys the import (cuDestroyExternalSemaphore). Pending stream work that
/// uses it must be finished first.
class external_semaphore {
 public:
  /// Imports a timeline semaphore's opaque fd (Windows: NT handle) into the device's primary context.
  /// Ownership: `fd` is borrowed and never closed by membridge. Linux: duplicated (close-on-exec);
  /// CUDA takes the duplicate on success, a failure closes it. Windows: CUDA never takes ownership of
  /// an NT handle; the caller's handle is passed as it is.
  /// Errors: invalid_argument for an invalid fd or one CUDA rejects; unsupported when the device has no
  /// timeline semaphore interop.
  [[nodiscard]] static result<external_semaphore> import_timeline(const device& dev,
                                                                     os::borrowed_shareable_handle fd);

  /// An empty object.
  external_semaphore() noexcept = default;
  external_semaphore(const external_semaphore&) = delete;
  external_semaphore& operator=(const external_semaphore&) = delete;
  /// Takes over `other`'s import; `other` becomes empty.
  external_semaphore(external_semaphore&& other) noexcept;
  /// Destroys the held import, then takes over `other`'s.
  external_semaphore& operator=(external_semaphore&& other) noexcept;
  /// Destroys the import.
  ~external_semaphore();

  /// Enqueues on `stream`: set the counter to `value` once earlier work on the stream is done.
  [[nodiscard]] result<void> signal(CUstream stream, std::uint64_t value) const;
  /// Enqueues on `stream`: later work waits until the counter reaches `value`.
  [[nodiscard]] result<void> wait(CUstream stream, std::uint64_t value) const;
  /// Enqueues on `stream` ONE wait (one cuWaitExternalSemaphoresAsync call) until every
  /// `semaphores[i]` reaches `values[i]`. Nothing is enqueued when `semaphores` is empty.
  /// Errors: invalid_argument for sizes that differ, an empty semaphore, or semaphores of different
  /// devices; the driver's errors.
  /// Ownership: borrows the semaphores (they must outlive the enqueued wait).
  [[nodiscard]] static result<void> wait_all(CUstream stream, std::span<const external_semaphore* const> semaphores,
                                             std::span<const std::uint64_t> values);

  /// The CUDA handle. Ownership: owned by this object.
  [[nodiscard]] CUexternalSemaphore native() const noexcept { return semaphore_; }
  /// True when an import is held.
  [[nodiscard]] bool valid() const noexcept { return semaphore_ != nullptr; }

 private:
  void reset() noexcept;

  std::shared_ptr<const detail::device_state> device_;
  CUexternalSemaphore semaphore_ = nullptr;
};

}  // namespace membridge::cuda
